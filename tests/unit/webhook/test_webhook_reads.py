"""The webhook reads on a rate limit of its own, never the manager's."""

from __future__ import annotations

from pykueue.kube.client import KubeClient
from pykueue.kube.ratelimit import TokenBucket
from pykueue.webhook.server import LOOKUP_BURST, LOOKUP_QPS, webhook_reads


def test_the_webhook_reads_with_its_own_budget_on_the_managers_connections() -> None:
    api = object()  # never called: only the wiring is looked at
    manager = KubeClient(api, TokenBucket(300, 500))
    reads = webhook_reads(manager)
    assert reads.limiter is not manager.limiter
    assert (reads.limiter.qps, reads.limiter.burst) == (LOOKUP_QPS, LOOKUP_BURST)
    assert reads._api is manager._api  # one pool
    assert reads.fence is manager.fence  # a fenced replica's webhook writes nothing either

