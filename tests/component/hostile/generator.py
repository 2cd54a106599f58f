"""Seeded hostile requests for each endpoint: truncated, deep, huge, mistyped, mislabelled,
badly encoded, and broken at the HTTP level.

Every endpoint gets requests built from what it really receives (an AdmissionReview, a
ConversionReview, the scheduler's ExtenderArgs, the aggregator's GETs, a browser's sign-in,
a scraper's GET), damaged in one way each, so most of them get past HTTP and into the parsing
and rules where a 500 would come from. The same seed gives the same requests.
"""

from __future__ import annotations

import copy
import json
import random
import string
from collections.abc import Callable
from typing import Any

from pykueue.manager.jobs.registry import webhook_path
from pykueue.webhook.app import routes
from tests.component.extender.scenario import N11, N12, N21, names_args, pod

MiB = 1024 * 1024
Raw = tuple[str, bytes, int]
"""A probe as generated: its kind, the bytes sent, and how many declared body bytes are withheld."""
DEEP = (200, 990, 1000, 1100, 3000, 20_000, 100_000)
WRONG_VALUES: tuple[Any, ...] = (None, True, 0, -1, 2**70, 1e308, -0.0, "", "x" * 300, "\u0000\ud7ff",
                                 [], [1, "a", None], {}, {"kind": []}, [[[]]], {"": {"": {}}})
WRONG_CONTENT_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                       "application/xml", "application/octet-stream", "", "application/json-patch+jso",
                       "\x00", "application/json\x7f")


def http(method: str, path: str, body: bytes = b"", headers: tuple[tuple[str, str], ...] = (),
         content_type: str | None = "application/json", length: int | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    if content_type is not None and (body or method in ("POST", "PUT", "PATCH")):
        lines.append(f"Content-Type: {content_type}")
    lines += [f"{k}: {v}" for k, v in headers]
    if body or method in ("POST", "PUT", "PATCH") or length is not None:
        lines.append(f"Content-Length: {len(body) if length is None else length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body


class Hostile:
    """Damages documents and requests, reproducibly."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._sent_whole: dict[tuple[str, int], bytes] = {}

    def pick(self, options: Any) -> Any:
        return self.rng.choice(tuple(options))

    # -- bodies -------------------------------------------------------------------------
    def truncated(self, doc: Any) -> bytes:
        raw = json.dumps(doc).encode()
        return raw[:self.rng.randrange(0, len(raw))]

    def deep(self, doc: Any) -> bytes:
        """A document with one value replaced by an array or object nested thousands deep."""
        depth = self.pick(DEEP)
        arrays = self.rng.random() < 0.5
        nested = "[" * depth + "]" * depth if arrays else '{"a":' * depth + "1" + "}" * depth
        if self.rng.random() < 0.3:
            return nested.encode()
        marker = "\u2603deep\u2603"
        return json.dumps(self._replaced(doc, marker)).replace(json.dumps(marker), nested).encode()

    def mistyped(self, doc: Any) -> bytes:
        """The document with one to three values (anywhere in it) of the wrong type."""
        for _ in range(self.rng.randint(1, 3)):
            doc = self._replaced(doc, self.pick(WRONG_VALUES))
        return json.dumps(doc).encode()

    def misencoded(self, doc: Any) -> bytes:
        raw = json.dumps(doc, ensure_ascii=False).encode()
        choice = self.rng.randrange(5)
        if choice == 0:  # invalid UTF-8 inside a string
            at = raw.find(b'"', self.rng.randrange(0, max(1, len(raw) - 1)))
            at = at + 1 if at >= 0 else len(raw) // 2
            return raw[:at] + self.pick((b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"))\
                + raw[at:]
        if choice == 1:
            return json.dumps(doc).encode("utf-16")
        if choice == 2:
            return b"\xef\xbb\xbf" + raw  # a byte order mark
        if choice == 3:
            return raw.replace(b'"', b"\x00", 1)
        return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(1, 200)))

    def odd_json(self) -> bytes:
        return self.pick((b"null", b"[]", b"{}", b"1e99999", b"-", b'"', b"[1,]", b'{"a":1,}', b"NaN",
                          b"Infinity", b'{"a":1}{"b":2}', b"   ", b'{"\\ud800":1}', b'"\\u00"',
                          b"9" * 5000, b'{"a":' + b"1" * 5000 + b"}", b"{" * 5, b"tru", b"\x00"))

    def _replaced(self, doc: Any, value: Any) -> Any:
        """A copy of ``doc`` with one value, anywhere in it (the whole included), replaced."""
        doc = copy.deepcopy(doc)
        paths: list[tuple[Any, Any]] = []

        def walk(node: Any) -> None:
            items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) \
                else ()
            for key, child in items:
                paths.append((node, key))
                walk(child)

        walk(doc)
        if not paths or self.rng.random() < 0.05:
            return value
        parent, key = self.pick(paths)
        parent[key] = value
        return doc

    # -- HTTP ---------------------------------------------------------------------------
    def broken_http(self, path: str) -> bytes:
        """A request HTTP itself does not allow (or a server must refuse)."""
        rng = self.rng
        cases: tuple[Callable[[], bytes], ...] = (
            lambda: b"GARBAGE\r\n\r\n",
            lambda: f"GET {path} HTTP/9.9\r\nHost: x\r\n\r\n".encode(),
            lambda: f"GET {path} HTTP/1.1\r\nHost x\r\n\r\n".encode(),
            lambda: b"GET /" + b"a" * rng.randint(9000, 70000) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            lambda: f"GET {path} HTTP/1.1\r\nHost: x\r\nX-Big: {'b' * rng.randint(17000, 70000)}\r\n\r\n"
            .encode(),
            lambda: (f"GET {path} HTTP/1.1\r\nHost: x\r\n" + "".join(f"X-{i}: y\r\n" for i in range(300))
                     + "\r\n").encode(),
            lambda: f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{{}}".encode(),
            lambda: f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".encode(),
            lambda: f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}"
            .encode(),
            lambda: (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n").encode(),
            lambda: (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n2\r\n{}\r\n0\r\n\r\n").encode(),
            lambda: f"GET {path} HTTP/1.1\r\nHost: x\r\nX-Nul: a\x00b\r\n\r\n".encode(),
            lambda: f"GET {path} HTTP/1.1\r\nHost: x\r\nX-\xe9: 1\r\n\r\n".encode("latin-1"),
            lambda: f"\r\n\r\nGET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode(),  # empty lines first
            lambda: b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"  # a TLS hello, inside TLS or not
            + bytes(rng.getrandbits(8) for _ in range(64)),
            lambda: f"GET {path}\r\n\r\n".encode(),
            lambda: f"G\u00e9T {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode(),
            lambda: (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Encoding: gzip\r\nContent-Length: 10\r\n\r\n0123456789").encode(),
        )
        return self.pick(cases)()

    def huge(self, path: str, limit: int, kind: str = "huge") -> Raw:
        """A body declared over ``limit``: (kind, what is sent, what is withheld). Most send a
        little of it; some send it all."""
        if self.rng.random() < 0.05:
            # Sent whole: one such request per path and limit, reused (it is megabytes).
            key = (path, limit)
            if key not in self._sent_whole:
                self._sent_whole[key] = http("POST", path, b"[" + b"1," * (limit // 2 + 1024) + b"1]")
            return f"{kind}-sent", self._sent_whole[key], 0
        declared = limit + self.rng.randint(1, 8 * MiB)
        start = b'{"apiVersion":"' + b"x" * self.rng.randint(0, 2000)
        return f"{kind}-declared", http("POST", path, length=declared) + start, declared - len(start)

    def token(self, alphabet: str = string.ascii_letters + string.digits + "-_.") -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(1, 60)))


# -- what each endpoint really receives ---------------------------------------------------
def admission_review(obj: dict[str, Any], gvk: tuple[str, str, str],
                     operation: str = "CREATE") -> dict[str, Any]:
    group, version, kind = gvk
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "2f5e7b8a-0000-4000-8000-000000000001",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "operation": operation, "namespace": "team-a", "name": obj["metadata"].get("name", ""),
        "object": obj, "oldObject": copy.deepcopy(obj) if operation == "UPDATE" else None,
        "userInfo": {"username": "alice"}}}


JOB = {"apiVersion": "batch/v1", "kind": "Job",
       "metadata": {"name": "sample", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
       "spec": {"parallelism": 2, "completions": 2, "suspend": False, "template": {"spec": {
           "restartPolicy": "Never",
           "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
CLUSTER_QUEUE = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
                 "spec": {"namespaceSelector": {}, "resourceGroups": [{
                     "coveredResources": ["cpu"],
                     "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "9"}]}]}]}}
WORKLOAD_V1BETA1 = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
                    "metadata": {"name": "w", "namespace": "team-a"},
                    "spec": {"queueName": "lq", "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                             "priorityClassName": "high",
                             "podSets": [{"name": "main", "count": 1, "template": {
                                 "spec": {"containers": [{"name": "c", "image": "x"}]}}}]}}


def conversion_review(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "c0", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": objects}}


JOB_GVK = ("batch", "v1", "Job")
CQ_GVK = ("kueue.x-k8s.io", "v1beta2", "ClusterQueue")


def _json_probes(h: Hostile, count: int, bases: list[tuple[str, Any]], limit_of: Callable[[str], int],
                 all_paths: list[str], headers: tuple[tuple[str, str], ...] = ()) -> list[Raw]:
    """``count`` damaged POSTs of JSON documents to their paths."""
    out: list[Raw] = []
    for _ in range(count):
        path, doc = h.pick(bases)
        roll = h.rng.random()
        if roll < 0.30:
            out.append(("mistyped", http("POST", path, h.mistyped(doc), headers), 0))
        elif roll < 0.45:
            out.append(("truncated", http("POST", path, h.truncated(doc), headers), 0))
        elif roll < 0.53:
            out.append(("deep", http("POST", path, h.deep(doc), headers), 0))
        elif roll < 0.61:
            body = json.dumps(doc).encode()
            wrong = h.pick(WRONG_CONTENT_TYPES)
            out.append(("content-type", http("POST", path, body, headers, content_type=wrong), 0))
        elif roll < 0.70:
            out.append(("encoding", http("POST", path, h.misencoded(doc), headers), 0))
        elif roll < 0.76:
            out.append(("odd-json", http("POST", path, h.odd_json(), headers), 0))
        elif roll < 0.82:
            value = h.pick(WRONG_VALUES)
            body = json.dumps(value if h.rng.random() < 0.5 else {"request": value}).encode()
            out.append(("wrong-envelope", http("POST", path, body, headers), 0))
        elif roll < 0.88:
            out.append(("http", h.broken_http(path), 0))
        elif roll < 0.91:
            out.append(h.huge(path, limit_of(path)))
        elif roll < 0.95:
            method = h.pick(("GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "FOO"))
            out.append(("method", http(method, path, json.dumps(doc).encode() if method != "HEAD" else b"",
                                       headers), 0))
        else:
            weird = h.pick(all_paths) + h.pick(("", "x", "/..", "/%00", "/%ff", "?" + "a=" * 500, "//",
                                                "/\u00e9"))
            out.append(("path", http("POST", weird, json.dumps(doc).encode(), headers), 0))
    return out


def webhook_probes(seed: int, count: int, review_limit: int, conversion_limit: int) -> list[Raw]:
    h = Hostile(seed)
    job_mutate, job_validate = webhook_path("mutate", JOB_GVK), webhook_path("validate", JOB_GVK)
    cq_validate = webhook_path("validate", CQ_GVK)
    bases: list[tuple[str, Any]] = [
        (job_mutate, admission_review(JOB, JOB_GVK)),
        (job_validate, admission_review(JOB, JOB_GVK, "UPDATE")),
        (cq_validate, admission_review(CLUSTER_QUEUE, CQ_GVK)),
        (job_mutate, admission_review(CLUSTER_QUEUE, CQ_GVK)),  # the wrong kind for its path
        ("/convert", conversion_review([WORKLOAD_V1BETA1, CLUSTER_QUEUE])),
        ("/convert", conversion_review([WORKLOAD_V1BETA1])),
    ]
    probes = _json_probes(h, count, bases, lambda p: conversion_limit if p == "/convert" else review_limit,
                          [*routes(), "/convert", "/healthz"])
    # Large but allowed: an UPDATE of a Job carrying megabytes of annotations, a long list to convert.
    padded = copy.deepcopy(JOB)
    padded["metadata"]["annotations"] = {f"a{i}": "v" * 1000 for i in range(1500)}
    update = json.dumps(admission_review(padded, JOB_GVK, "UPDATE")).encode()
    probes += [("large-allowed", http("POST", job_mutate, update), 0)] * 4
    many = [dict(WORKLOAD_V1BETA1, metadata={"name": f"w{i}", "namespace": "team-a"}) for i in range(20_000)]
    conversion = json.dumps(conversion_review(many)).encode()
    probes += [("large-allowed", http("POST", "/convert", conversion), 0)] * 2
    h.rng.shuffle(probes)
    return probes


def extender_probes(seed: int, count: int, limit: int) -> list[Raw]:
    h = Hostile(seed)
    filter_args = names_args(pod(0), [N11, N12, N21])
    bind = {"PodName": "sample-job-1-mz7kq", "PodNamespace": "team-a", "PodUID": "uid-pod-1", "Node": N12}
    bases: list[tuple[str, Any]] = [("/filter", filter_args), ("/prioritize", filter_args), ("/bind", bind)]
    probes = _json_probes(h, count, bases, lambda _: limit, ["/filter", "/prioritize", "/bind", "/healthz"])
    h.rng.shuffle(probes)
    return probes


VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"


def visibility_probes(seed: int, count: int) -> list[Raw]:
    h = Hostile(seed)
    paths = [f"{VISIBILITY}/clusterqueues/cq/pendingworkloads",
             f"{VISIBILITY}/clusterqueues/none/pendingworkloads",
             f"{VISIBILITY}/namespaces/team-a/localqueues/lq/pendingworkloads", "/apis", VISIBILITY,
             "/apis/visibility.kueue.x-k8s.io", "/openapi/v2", "/openapi/v3", f"{VISIBILITY}/clusterqueues",
             "/healthz", "/nothing", f"{VISIBILITY}/clusterqueues/%ff/pendingworkloads"]
    queries = ["", "?limit=abc", "?limit=-1", "?offset=-5", "?limit=" + "9" * 40, "?offset=" + "9" * 5000,
               "?limit=1&limit=2", "?limit=%ff", "?" + "&".join(f"p{i}=1" for i in range(1000)), "?limit=1e3",
               "?offset=0x10", "?limit=\u0661"]
    out: list[Raw] = []
    for _ in range(count):
        roll = h.rng.random()
        headers = [("X-Remote-User", "alice"), ("X-Remote-Group", "pykueue-hostile-viewers")]
        if roll < 0.15:
            names = ("X-Remote-User", "X-Remote-Group", "X-Remote-Extra-%zz", "X-Remote-Extra-a%2")
            values = ("", "\u00e9" * 50, "a" * 8000, "system:masters", "x,y", " ")
            headers = [(h.pick(names), h.pick(values)) for _ in range(h.rng.randint(1, 40))]
        path = h.pick(paths) + h.pick(queries)
        if roll < 0.75:
            out.append(("query", http("GET", path, headers=tuple(headers)), 0))
        elif roll < 0.85:
            method = h.pick(("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "FOO"))
            out.append(("method", http(method, path, h.mistyped({"a": [1]}), tuple(headers)), 0))
        elif roll < 0.93:
            out.append(("http", h.broken_http(h.pick(paths)), 0))
        else:
            out.append(h.huge(h.pick(paths), 16 * 1024))
    return out


def dashboard_probes(seed: int, count: int, good_token: str) -> list[Raw]:
    h = Hostile(seed)
    gets = ["/api/workloads", "/api/overview", "/api/clusterqueues", "/api/localqueues", "/api/topology",
            "/api/whoami", "/api/workloads/ns-a/big", "/api/workloads/%ff/%00", "/api/workloads/a/b/c",
            "/static/app.js", "/static/../server.py", "/static/%2e%2e%2fserver.py", "/", "/login", "/healthz"]
    queries = ["", "?state=pending", "?state=%ff", "?state=" + "x" * 3000, "?page=abc", "?page=-1",
               "?page=" + "9" * 5000, "?page=" + "9" * 30, "?namespace=%00", "?namespace=" + "n" * 5000,
               "?clusterQueue=\u00e9", "?token=" + "t" * 100, "?page=1&page=2", "?state=admitted&page=0"]
    out: list[Raw] = []
    for _ in range(count):
        roll = h.rng.random()
        auth: tuple[tuple[str, str], ...] = (("Authorization", f"Bearer {good_token}"),)
        if roll < 0.1:
            auth = (h.pick((("Authorization", "Bearer"), ("Authorization", "Basic YTpi"),
                            ("Authorization", "Bearer \u00e9\u00e9"),
                            ("Cookie", "pykueue-dashboard-session=" + h.token()),
                            ("Cookie", "pykueue-dashboard-session=" + "s" * 15000), ("Cookie", "=;;;=\x7f"),
                            ("Authorization", f"bearer {good_token} extra"))),)
        if roll < 0.60:
            out.append(("query", http("GET", h.pick(gets) + h.pick(queries), headers=auth), 0))
        elif roll < 0.80:
            origin = h.pick(("http://127.0.0.1", "null", "", "http://evil.example", "\u00e9"))
            body = h.pick((f"token={h.token()}&csrf={h.token()}".encode(), b"token=%ff%fe", b"&&&===",
                           b"token=" + b"x" * 20000, "token=\u00e9".encode("latin-1"), b"\xff\xfe",
                           json.dumps({"token": h.token()}).encode(), b"a=1&" * 50))
            media = h.pick(("application/x-www-form-urlencoded", "text/plain", "application/json", ""))
            out.append(("sign-in", http("POST", h.pick(("/login", "/logout")), body, (("Origin", origin),),
                                        content_type=media), 0))
        elif roll < 0.88:
            method = h.pick(("POST", "PUT", "DELETE", "PATCH", "FOO"))
            out.append(("method", http(method, h.pick(gets), h.mistyped({"a": 1}), auth), 0))
        elif roll < 0.96:
            out.append(("http", h.broken_http(h.pick(gets)), 0))
        else:
            out.append(h.huge(h.pick(("/login", "/api/workloads")), 16 * 1024))
    return out


def metrics_probes(seed: int, count: int, good_token: str, path: str = "/metrics") -> list[Raw]:
    """For the metrics endpoint, and (with ``/healthz``) the probes."""
    h = Hostile(seed)
    paths = [path, path + "?verbose", path + "?" + "x" * 5000, "/", "/nothing", path + "/%ff", "/readyz"]
    out: list[Raw] = []
    for _ in range(count):
        roll = h.rng.random()
        header = h.pick((("Authorization", f"Bearer {good_token}"), ("Authorization", "Bearer"),
                         ("Authorization", "Basic YTpi"), ("Authorization", "Bearer \u00e9"),
                         ("Authorization", "Bearer " + "t" * 15000), ("Authorization", ""),
                         ("Authorization", "Negotiate x"), ("X-Other", "1")))
        if roll < 0.70:
            out.append(("auth", http("GET", h.pick(paths), headers=(header,)), 0))
        elif roll < 0.82:
            method = h.pick(("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "FOO"))
            out.append(("method", http(method, h.pick(paths), h.mistyped({"a": 1}), (header,)), 0))
        elif roll < 0.92:
            out.append(("http", h.broken_http(h.pick(paths)), 0))
        elif roll < 0.96:
            out.append(("body-on-get", http("GET", h.pick(paths), h.misencoded({"a": 1}), (header,)), 0))
        else:
            out.append(h.huge(h.pick(paths), 4 * 1024))
    return out


def bad_token_probes(seed: int, count: int, path: str, pool: int, unique_share: float) -> list[Raw]:
    """``count`` requests with invalid bearer tokens: most drawn from ``pool`` made-up tokens (a
    client repeating itself), the rest each new (a client guessing)."""
    h = Hostile(seed)
    tokens = [f"hostile-bad-{i}-{h.token()}" for i in range(pool)]
    out = []
    for i in range(count):
        token = f"hostile-bad-new-{i}" if h.rng.random() < unique_share else h.pick(tokens)
        out.append(("bad-token", http("GET", path, headers=(("Authorization", f"Bearer {token}"),)), 0))
    return out
