"""Properties over random clusters: capacity is never exceeded and counts always add up."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.api import keys
from pykueue.manager.core.tas import Placed, PodSetRequest

from .fixtures import BLOCK, HOST, RACK, node, pod, podset, snapshot

KINDS = [
    {keys.PODSET_REQUIRED_TOPOLOGY: RACK},
    {keys.PODSET_REQUIRED_TOPOLOGY: BLOCK},
    {keys.PODSET_PREFERRED_TOPOLOGY: RACK},
    {keys.PODSET_PREFERRED_TOPOLOGY: HOST},
    {keys.PODSET_UNCONSTRAINED_TOPOLOGY: "true"},
    {keys.PODSET_SLICE_REQUIRED_TOPOLOGY: RACK, keys.PODSET_SLICE_SIZE: "2"},
    {
        keys.PODSET_SLICE_REQUIRED_TOPOLOGY: HOST,
        keys.PODSET_SLICE_SIZE: "2",
        keys.PODSET_REQUIRED_TOPOLOGY: BLOCK,
    },
]

used_cpu = st.lists(st.integers(0, 8), min_size=8, max_size=8)
ready = st.lists(st.booleans(), min_size=8, max_size=8)
podset_spec = st.tuples(st.integers(1, 12), st.sampled_from([1, 2, 3, 4]), st.integers(0, len(KINDS) - 1))


@settings(max_examples=150, deadline=None)
@given(used_cpu, ready, st.lists(podset_spec, min_size=1, max_size=3))
def test_capacity_never_exceeded_and_counts_add_up(
    used: list[int], up: list[bool], specs: list[tuple[int, int, int]]
) -> None:
    node_list = [node(i, ready="True" if ok else "False") for i, ok in enumerate(up)]
    pods = [pod(f"p{i}", f"kwok-node-{i}", cpu=str(c)) for i, c in enumerate(used) if c]
    snap = snapshot(node_list, pods=pods)
    requests: list[PodSetRequest] = []
    for n, (count, cpu, kind) in enumerate(specs):
        ann = KINDS[kind]
        if keys.PODSET_SLICE_SIZE in ann and count % 2:
            count += 1
        requests.append(podset(name=f"ps{n}", count=count, cpu=str(cpu), annotations=ann))
    result = snap.place(requests)
    if not isinstance(result, Placed):
        return
    load: dict[str, int] = {}
    for req in requests:
        ta = result.assignments[req.name]
        assert ta.total == req.count
        assert all(d.count >= 1 for d in ta.domains)
        for host, n in ta.leaf_values():
            load[host] = load.get(host, 0) + n * req.per_pod["cpu"]
        if req.topology.required:
            level = [BLOCK, RACK, HOST].index(req.topology.required)
            idx = [int(h.rsplit("-", 1)[1]) for h, _ in ta.leaf_values()]
            group = {i // (4, 2, 1)[level] for i in idx}
            assert len(group) <= 1
    for host, cpu in load.items():
        i = int(host.rsplit("-", 1)[1])
        assert up[i], "placed on a NotReady node"
        assert cpu <= (8 - used[i]) * 1000


@settings(max_examples=100, deadline=None)
@given(used_cpu, st.integers(1, 20), st.sampled_from([1, 2, 3]), st.integers(0, len(KINDS) - 1))
def test_placement_then_usage_keeps_free_capacity_non_negative(
    used: list[int], count: int, cpu: int, kind: int
) -> None:
    pods = [pod(f"p{i}", f"kwok-node-{i}", cpu=str(c)) for i, c in enumerate(used) if c]
    snap = snapshot(pods=pods)
    ann = KINDS[kind]
    if keys.PODSET_SLICE_SIZE in ann and count % 2:
        count += 1
    request = podset(count=count, cpu=str(cpu), annotations=ann)
    # Keep admitting the same podset until it no longer fits.
    for _ in range(10):
        result = snap.place([request])
        if not isinstance(result, Placed):
            break
        snap.add_usage(result.assignments["main"], request.per_pod)
        assert all(leaf.free.get("cpu", 0) >= 0 for leaf in snap.leaves())


@settings(max_examples=150, deadline=None)
@given(
    used_cpu,
    st.integers(1, 8),
    st.integers(1, 16),
    st.integers(1, 8),
    st.sampled_from([RACK, BLOCK, HOST]),
    st.sampled_from([keys.PODSET_REQUIRED_TOPOLOGY, keys.PODSET_PREFERRED_TOPOLOGY]),
)
def test_leader_and_workers_never_overcommit(
    used: list[int], leader_cpu: int, workers: int, worker_cpu: int, level: str, kind: str
) -> None:
    pods = [pod(f"p{i}", f"kwok-node-{i}", cpu=str(c)) for i, c in enumerate(used) if c]
    ann = {keys.PODSET_GROUP_NAME: "g", kind: level}
    requests = [
        podset(name="leader", count=1, cpu=str(leader_cpu), annotations=ann),
        podset(name="workers", count=workers, cpu=str(worker_cpu), annotations=ann),
    ]
    result = snapshot(pods=pods).place(requests)
    if not isinstance(result, Placed):
        return
    leader = result.assignments["leader"]
    assert leader.total == 1
    assert result.assignments["workers"].total == workers
    load: dict[str, int] = {}
    for host, n in leader.leaf_values():
        load[host] = load.get(host, 0) + n * leader_cpu
    for host, n in result.assignments["workers"].leaf_values():
        load[host] = load.get(host, 0) + n * worker_cpu
    for host, cpu in load.items():
        assert cpu <= 8 - used[int(host.rsplit("-", 1)[1])]
    if kind == keys.PODSET_REQUIRED_TOPOLOGY:
        span = {BLOCK: 4, RACK: 2, HOST: 1}[level]
        assert len({int(h.rsplit("-", 1)[1]) // span for h in load}) == 1


@settings(max_examples=150, deadline=None)
@given(used_cpu, st.integers(1, 24), st.sampled_from([1, 2, 3, 5]), st.sampled_from([RACK, BLOCK, HOST]))
def test_required_placement_succeeds_whenever_one_domain_has_room(
    used: list[int], count: int, cpu: int, level: str
) -> None:
    pods = [pod(f"p{i}", f"kwok-node-{i}", cpu=str(c)) for i, c in enumerate(used) if c]
    result = snapshot(pods=pods).place(
        [podset(count=count, cpu=str(cpu), annotations={keys.PODSET_REQUIRED_TOPOLOGY: level})]
    )
    span = {BLOCK: 4, RACK: 2, HOST: 1}[level]
    room = [sum((8 - used[i]) // cpu for i in range(d * span, (d + 1) * span)) for d in range(8 // span)]
    assert isinstance(result, Placed) == (max(room) >= count)
