"""PendingQueue against a plain model of its rules, over random operation sequences.

The queue keeps parked workloads in per-shape groups and puts a group back as one heap
item; the model keeps two dicts and scans. Both must agree on every pop, peek, count
and membership, whatever the order of pushes, parks, shape verdicts, requeues, removals
and resorts."""

from __future__ import annotations

import random

import pytest

from pykueue.manager.core.queues import PendingQueue, SortKey, sort_key


class Model:
    def __init__(self) -> None:
        self.live: dict[str, tuple[SortKey, int | None]] = {}
        self.parked: dict[str, tuple[SortKey, int | None]] = {}
        self.no_fit: set[int] = set()

    def push(self, key: str, skey: SortKey, shape: int | None) -> None:
        self.parked.pop(key, None)
        self.live[key] = (skey, shape)

    def offer(self, key: str, skey: SortKey, shape: int | None) -> None:
        if shape is not None and shape in self.no_fit and key not in self.live:
            self.park(key, skey, shape)
        else:
            self.push(key, skey, shape)

    def park(self, key: str, skey: SortKey, shape: int | None) -> None:
        self.live.pop(key, None)
        self.parked[key] = (skey, shape)

    def park_shape(self, shape: int) -> int:
        self.no_fit.add(shape)
        same = [k for k, (_, sh) in self.live.items() if sh == shape]
        for key in same:
            self.park(key, *self.live[key])
        return len(same)

    def remove(self, key: str) -> None:
        self.live.pop(key, None)
        self.parked.pop(key, None)

    def peek(self) -> str | None:
        return min(self.live, key=lambda k: self.live[k][0], default=None)

    def pop(self) -> str | None:
        key = self.peek()
        if key is not None:
            del self.live[key]
        return key

    def requeue(self) -> int:
        self.no_fit.clear()
        moved = len(self.parked)
        self.live.update(self.parked)
        self.parked = {}
        return moved

    def resort(self, bump: dict[str, float]) -> None:
        for d in (self.live, self.parked):
            for k, (skey, sh) in list(d.items()):
                d[k] = (_bumped(skey, bump), sh)


def _bumped(skey: SortKey, bump: dict[str, float]) -> SortKey:
    return (skey[0], bump.get(skey[4], 0.0), skey[2], skey[3], skey[4])


@pytest.mark.parametrize("seed", range(40))
def test_the_queue_agrees_with_the_model(seed: int) -> None:
    rng = random.Random(seed)
    q, m = PendingQueue(), Model()
    keys = [f"w{i}" for i in range(rng.choice((5, 30, 120)))]
    shapes: list[int | None] = [1, 2, 3, None]
    usage: dict[str, float] = {}

    def skey_of(key: str) -> SortKey:
        return sort_key(rng.randrange(3), float(rng.randrange(50)), key, sticky=rng.random() < 0.05,
                        lq_usage=usage.get(key, 0.0))

    for step in range(600):
        op = rng.random()
        key = rng.choice(keys)
        shape = rng.choice(shapes)
        if op < 0.25:
            sk = skey_of(key)
            q.push(key, sk, shape)
            m.push(key, sk, shape)
        elif op < 0.4:
            sk = skey_of(key)
            q.offer(key, sk, shape)
            m.offer(key, sk, shape)
        elif op < 0.5:
            sk = skey_of(key)
            q.park(key, sk, shape)
            m.park(key, sk, shape)
        elif op < 0.57 and shape is not None:
            assert q.park_shape(shape) == m.park_shape(shape)
        elif op < 0.65:
            assert q.requeue_parked() == m.requeue()
        elif op < 0.72:
            q.remove(key)
            m.remove(key)
        elif op < 0.74:
            usage = {k: float(rng.randrange(3)) for k in keys}
            q.resort(lambda k, u=usage: _bumped(_key_in(m, k), u))
            m.resort(usage)
        elif op < 0.87:
            assert q.pop() == m.pop(), step
        else:
            assert q.peek() == m.peek(), step
        assert len(q) == len(m.live) + len(m.parked)
        assert q.parked_count == len(m.parked) and q.active_count == len(m.live)
        assert set(q.parked_keys()) == set(m.parked)
        assert set(q.keys()) == set(m.live) | set(m.parked)
        for k in keys:
            assert (k in q) == (k in m.live or k in m.parked)
            assert q.is_parked(k) == (k in m.parked)
        assert q.heap_size <= 2 * len(q) + 64 + 2 * 4
    drained = [q.pop() for _ in range(len(m.live) + 1)]
    assert drained == [m.pop() for _ in range(len(drained))]


def _key_in(m: Model, key: str) -> SortKey:
    return (m.live.get(key) or m.parked[key])[0]


def test_a_parked_backlog_moves_as_one_group() -> None:
    # 5,000 equivalent workloads, parked and put back a thousand times (one requeue per
    # finished workload in the cohort): each round trip touches the group, not every member.
    q = PendingQueue()
    for i in range(5000):
        q.push(f"w{i:05}", sort_key(0, float(i), f"w{i:05}"), shape=1)
    assert q.pop() == "w00000"
    q.park("w00000", sort_key(0, 0.0, "w00000"), 1)
    assert q.park_shape(1) == 4999
    for _ in range(1000):
        assert q.requeue_parked() == 5000
        assert q.peek() == "w00000"
        assert q.park_shape(1) == 5000
    assert q.heap_size <= 64 and q.parked_count == 5000
    q.requeue_parked()
    assert [q.pop() for _ in range(3)] == ["w00000", "w00001", "w00002"] and len(q) == 4997
