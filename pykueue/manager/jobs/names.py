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


def _byte_len(value: str) -> int:
    return len(value.encode())


def _regex_error(message: str, regex: str, *examples: str) -> str:
    """The apiserver's wording of a failed format (its RegexError), examples and all."""
    if not examples:
        return f"{message} (regex used for validation is '{regex}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{regex}')"


_SUBDOMAIN_FULL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_KEY_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                  "with an alphanumeric character")
_KEY_EXAMPLES = ("MyName", "my.name", "123-abc")


def subdomain_problems(value: str, unit: str = "characters") -> list[str]:
    """Why ``value`` is no lowercase RFC 1123 subdomain, as the apiserver says it (its
    IsDNS1123Subdomain; ``unit`` is "bytes" in the label-key checks' copy of it)."""
    problems = []
    if _byte_len(value) > 253:
        problems.append(f"must be no more than 253 {unit}")
    if not _SUBDOMAIN_FULL.fullmatch(value):
        problems.append(DNS1123_SUBDOMAIN_MSG)
    return problems


def label_key_errors(value: str, path: str) -> list[FieldError]:
    """The apiserver's label-name check (ValidateLabelName): one error per problem found."""
    parts = value.split("/")
    problems: list[str] = []
    if len(parts) > 2:
        problems.append("a valid label key " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FORMAT, *_KEY_EXAMPLES)
                        + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
    else:
        name = parts[-1]
        if len(parts) == 2:
            if not parts[0]:
                problems.append("prefix part must be non-empty")
            else:
                problems += ["prefix part " + p for p in subdomain_problems(parts[0], "bytes")]
        if not name:
            problems.append("name part must be non-empty")
        elif _byte_len(name) > 63:
            problems.append("name part must be no more than 63 bytes")
        if not re.fullmatch(_LABEL_KEY_FORMAT, name):
            problems.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FORMAT, *_KEY_EXAMPLES))
    return [invalid(path, value, p) for p in problems]


def dns_subdomain_errors(value: str, path: str) -> list[FieldError]:
    """Kueue's check of a name that must be a CRD object's (ValidateLabelAsCRDName): one
    error, the apiserver's problems joined by ","."""
    problems = subdomain_problems(value)
    return [invalid(path, value, ",".join(problems))] if problems else []
