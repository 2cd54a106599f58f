"""Name and key formats the apiserver enforces (DNS-1123 labels and subdomains, qualified
label keys), and the paths that denials name labels and annotations by.
"""

from __future__ import annotations

import re

from pykueue.api.field_errors import invalid
from pykueue.api.fields import FieldError


def label_path(key: str, base: str = "metadata") -> str:
    return f"{base}.labels[{key}]"


def annotation_path(key: str, base: str = "metadata") -> str:
    return f"{base}.annotations[{key}]"


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


# With the example and the regex, as the apiserver's IsDNS1123Subdomain words it.
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    r"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and bool(_DNS1123_LABEL.match(value))


def is_dns1123_subdomain(value: str) -> bool:
    return 0 < len(value) <= 253 and all(is_dns1123_label(p) for p in value.split("."))


def label_key_problems(key: str) -> list[str]:
    """Why ``key`` is not a qualified name (``[prefix/]name``); empty when it is."""
    prefix, slash, name = key.rpartition("/")
    problems = []
    if slash and not is_dns1123_subdomain(prefix):
        problems.append("prefix part " + DNS1123_SUBDOMAIN_MSG)
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character, at most 63 characters"
        )
    return problems


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def dns_subdomain_errors(value: str, path: str) -> list[FieldError]:
    return [] if is_dns1123_subdomain(value) else [invalid(path, value, DNS1123_SUBDOMAIN_MSG)]
