"""Kueue's TAS placement search for one PodSet (or a leader+workers PodSet group).

Phase 1 counts bottom-up how many pods (and slices, and whether a leader) fit in every
domain. Phase 2a picks the level and domains: BestFit (required / preferred) takes the
tightest domain that fits, climbing levels for preferred; LeastFreeCapacity (unconstrained,
implied, slice-only) takes the first fitting domain in ascending order; when no single
domain fits, a greedy walk takes whole domains. Phase 2b descends, splitting counts over
children so that as few domains as possible are used at every level.

With Kueue's TASBalancedPlacement gate (alpha, off by default) a preferred request first
tries a balanced placement: among the requested level's sibling groups (the children of
each domain one level up), the one whose greedy fit leaves the largest minimum of slices per
domain (the threshold) wins, its domains below the threshold are pruned, a smallest set of
domains is picked (fewest domains, then least spare capacity) and every chosen domain gets
the threshold plus its share of the rest; when that fails the search falls back to BestFit.

The search reuses the scratch counters of the tree's domains, so it is not reentrant;
it never changes capacity.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from . import nodes as nodepred
from .assignment import DomainAssignment, TopologyAssignment
from .request import PodSetRequest
from .resources import PODS, Resources, fits, fits_or_short, nonzero
from .tree import LEAF_FITS, Domain, TopologyTree

Requirement = tuple[tuple[str, int], ...]


@dataclass
class ExclusionStats:
    """Why leaves could not take a pod; appended to no-fit messages like Kueue does."""

    total_nodes: int = 0
    taints: Counter[str] = field(default_factory=Counter)
    node_selector: int = 0
    affinity: int = 0
    resources: Counter[str] = field(default_factory=Counter)
    topology_domain: int = 0

    def has_exclusions(self) -> bool:
        return bool(
            self.taints or self.node_selector or self.affinity or self.resources or self.topology_domain
        )

    def describe(self) -> str:
        """Kueue's wording: "kind: n" entries (quoted names), sorted as strings, comma-joined."""
        parts = [f"taint {json.dumps(taint)}: {n}" for taint, n in self.taints.items()]
        if self.node_selector:
            parts.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            parts.append(f"affinity: {self.affinity}")
        parts += [f"resource {json.dumps(res)}: {n}" for res, n in self.resources.items()]
        if self.topology_domain:
            parts.append(f"topologyDomain: {self.topology_domain}")
        return ", ".join(sorted(parts))


@dataclass
class SearchInput:
    """The parts of a search that do not depend on capacity."""

    request: PodSetRequest
    leader: PodSetRequest | None = None
    assumed: Mapping[str, Resources] = field(default_factory=dict)
    simulate_empty: bool = False
    required_domain: tuple[str, ...] | None = None
    excluded_leaves: frozenset[str] = frozenset()
    # (size, level key) replacing the slice constraint, used for node replacement.
    slice_override: tuple[int, str] | None = None
    count: int | None = None
    # Kueue's TASBalancedPlacement gate (preferred requests only).
    balanced: bool = False


def _with_pod(per_pod: Mapping[str, int]) -> Requirement:
    req = dict(per_pod)
    req[PODS] = req.get(PODS, 0) + 1
    return nonzero(req)


class PlacementSearch:
    """One run of the algorithm over a tree; ``run`` returns assignments or a reason."""

    def __init__(
        self,
        tree: TopologyTree,
        topology_name: str,
        flavor_tolerations: Sequence[Mapping[str, object]],
        inp: SearchInput,
    ) -> None:
        self.tree = tree
        self.topology_name = topology_name
        self.flavor_tolerations = flavor_tolerations
        self.inp = inp
        self.stats = ExclusionStats()
        self.lfc = False
        self.required = False
        self.count = inp.request.count if inp.count is None else inp.count
        self.slice_size = 1
        self.slice_level = tree.lowest
        self.slice_size_at_level: dict[int, int] = {}
        self.multi_layer = False
        self.leader_count = 1 if inp.leader is not None else 0

    # -- request interpretation ------------------------------------------------------------
    def _level_index(self, key: str) -> int | None:
        try:
            return self.tree.level_keys.index(key)
        except ValueError:
            return None

    def _resolve(self) -> tuple[int, str]:
        """(requested level index, "") or (-1, reason)."""
        tr = self.inp.request.topology
        tree = self.tree
        if tr.slice_layers:
            self.slice_size = tr.slice_layers[0].size
        elif tr.slice_level_without_size:
            return -1, "slice topology requested, but slice size not provided"
        override = self.inp.slice_override
        if override is not None:
            self.slice_size = override[0]
        self.required = tr.required is not None
        unconstrained = tr.unconstrained or self.inp.request.implied or tr.slice_only
        # Kueue's default profile mix: LeastFreeCapacity for unconstrained-like requests.
        self.lfc = unconstrained
        if tr.required:
            key = tr.required
        elif tr.preferred:
            key = tr.preferred
        elif tr.slice_only:
            key = tree.level_keys[0]
        elif unconstrained:
            key = tree.level_keys[-1]
        else:
            return -1, "topology level not specified"
        level = self._level_index(key)
        if level is None:
            return -1, f"no requested topology level: {key}"
        slice_key = tr.slice_layers[0].level if tr.slice_layers else tree.level_keys[-1]
        if override is not None:
            slice_key = override[1]
        slice_level = self._level_index(slice_key)
        if slice_level is None:
            return -1, f"no requested topology level for slices: {slice_key}"
        if level > slice_level:
            return -1, f"podset slice topology {slice_key} is above the podset topology {key}"
        self.slice_level = slice_level
        if override is None and len(tr.slice_layers) > 1:
            prev_size, prev_level = self.slice_size, slice_level
            for layer in tr.slice_layers[1:]:
                inner = self._level_index(layer.level)
                if inner is None:
                    return -1, f"no requested topology level for additional slice layer: {layer.level}"
                if inner <= prev_level:
                    return -1, (
                        f"additional slice layer topology {layer.level} must be at a lower level "
                        f"than {tree.level_keys[prev_level]}"
                    )
                if layer.size <= 0 or prev_size % layer.size:
                    return -1, (
                        f"additional slice layer size {layer.size} must evenly divide "
                        f"parent layer size {prev_size}"
                    )
                for lvl in range(prev_level + 1, inner + 1):
                    self.slice_size_at_level[lvl] = layer.size
                prev_size, prev_level = layer.size, inner
            self.multi_layer = True
        if self.slice_size <= 0:
            return -1, f"invalid podset slice size {self.slice_size}"
        return level, ""

    # -- phase 1 ---------------------------------------------------------------------------
    def _exclusions(self, tolerations: Sequence[Mapping[str, object]]) -> dict[str, tuple[str, str]]:
        """Leaves the podset's tolerations, nodeSelector and required affinity rule out."""
        if not self.tree.hostname_leaves:
            return {}
        req = self.inp.request
        key = json.dumps([tolerations, req.node_selector, req.affinity], sort_keys=True, default=str)
        cached = self.tree.exclusion_cache.get(key)
        if cached is not None:
            return cached
        out: dict[str, tuple[str, str]] = {}
        for leaf in self.tree.leaves.values():
            node = leaf.node
            if node is None:
                continue
            taint = nodepred.untolerated_taint(leaf.taints, tolerations)
            if taint is not None:
                out[leaf.id] = ("taint", nodepred.taint_string(taint))
            elif not nodepred.matches_node_selector(nodepred.node_labels(node), req.node_selector):
                out[leaf.id] = ("nodeSelector", "")
            elif not nodepred.matches_required_affinity(req.affinity, node):
                out[leaf.id] = ("affinity", "")
        if len(self.tree.exclusion_cache) > 256:
            self.tree.exclusion_cache.clear()
        self.tree.exclusion_cache[key] = out
        return out

    def _record_exclusion(self, kind: str, detail: str) -> None:
        if kind == "taint":
            self.stats.taints[detail] += 1
        elif kind == "nodeSelector":
            self.stats.node_selector += 1
        else:
            self.stats.affinity += 1

    def _fill_in_counts(self) -> None:
        tree = self.tree
        for level in tree.levels:
            for dom in level.values():
                dom.state = dom.state_wl = dom.slice = dom.slice_wl = dom.leader = 0
        req = _with_pod(self.inp.request.per_pod)
        leader_req = _with_pod(self.inp.leader.per_pod) if self.inp.leader is not None else None
        tolerations = tuple(self.inp.request.tolerations) + tuple(self.flavor_tolerations)
        exclusions = self._exclusions(tolerations)
        inp = self.inp
        self.stats.total_nodes = len(tree.leaves)
        if not (exclusions or inp.excluded_leaves or inp.assumed or inp.simulate_empty
                or leader_req is not None or inp.required_domain is not None):
            self._fill_leaves_plain(req)
        else:
            self._fill_leaves(req, leader_req, exclusions)
        size = self.slice_size
        if tree.lowest == self.slice_level:
            for leaf in tree.leaves.values():
                leaf.slice = leaf.state // size
                leaf.slice_wl = leaf.state_wl // size
        leader_required = self.leader_count > 0
        for lvl in range(tree.lowest - 1, -1, -1):
            inner = self.slice_size_at_level.get(lvl + 1)
            for dom in tree.levels[lvl].values():
                self._fill_parent(dom, inner, leader_required, lvl == self.slice_level)

    def _fill_leaves_plain(self, req: Requirement) -> None:
        """Every leaf on its free capacity: the common case (no exclusion, nothing assumed,
        no leader), kept to the fit itself because it runs over every node per placement."""
        short = self.stats.resources
        rid = self.tree.requirement_id(req)
        for leaf in self.tree.leaves.values():
            fits_memo = leaf.fits
            got = fits_memo.get(rid)
            if got is None:
                if len(fits_memo) >= LEAF_FITS:
                    fits_memo.clear()
                got = fits_memo[rid] = fits_or_short(req, leaf.free)
            n, limiting = got
            leaf.state = leaf.state_wl = n
            if limiting:
                short[limiting] += 1

    def _fill_leaves(self, req: Requirement, leader_req: Requirement | None,
                     exclusions: Mapping[str, tuple[str, str]]) -> None:
        assumed = self.inp.assumed
        excluded = self.inp.excluded_leaves
        simulate_empty = self.inp.simulate_empty
        required_domain = self.inp.required_domain
        for leaf in self.tree.leaves.values():
            if exclusions:
                why = exclusions.get(leaf.id)
                if why is not None:
                    self._record_exclusion(*why)
                    continue
            if (excluded and leaf.id in excluded) or (
                required_domain is not None and leaf.values[: len(required_domain)] != required_domain
            ):
                self.stats.topology_domain += 1
                continue
            cap: Mapping[str, int] = leaf.free
            extra = assumed.get(leaf.id) if assumed else None
            if simulate_empty or extra:
                base = dict(leaf.allocatable) if self.inp.simulate_empty else dict(leaf.free)
                if self.inp.simulate_empty:
                    for name, amount in leaf.non_tas.items():
                        base[name] = base.get(name, 0) - amount
                for name, amount in (extra or {}).items():
                    base[name] = base.get(name, 0) - amount
                cap = base
            n, limiting = fits_or_short(req, cap)
            leaf.state = leaf.state_wl = n
            if limiting:
                self.stats.resources[limiting] += 1
            if leader_req is not None and fits(leader_req, cap) > 0:
                leaf.leader = 1
                rest = dict(cap)
                for name, amount in leader_req:
                    rest[name] = rest.get(name, 0) - amount
                leaf.state_wl = fits(req, rest)

    def _fill_parent(
        self, dom: Domain, inner: int | None, leader_required: bool, at_slice_level: bool
    ) -> None:
        if not leader_required and not inner:
            # Without a leader "with leader" counts equal the plain ones: plain sums suffice.
            total = 0
            total_slices = 0
            for child in dom.children:
                total += child.state
                total_slices += child.slice
            dom.state = dom.state_wl = total
            dom.leader = 0
            if at_slice_level:
                total_slices = total // self.slice_size
            dom.slice = dom.slice_wl = total_slices
            return
        cap = slices = leader = 0
        contributor = False
        min_diff = min_slice_diff = 1 << 62
        for child in dom.children:
            cs, cs_wl = child.state, child.state_wl
            if inner:
                cs, cs_wl = cs // inner * inner, cs_wl // inner * inner
            cap += cs
            slices += child.slice
            if not leader_required or child.leader > 0:
                contributor = True
                min_diff = min(min_diff, cs - cs_wl)
                min_slice_diff = min(min_slice_diff, child.slice - child.slice_wl)
            leader = max(leader, child.leader)
        dom.state = cap
        slices_wl = 0
        if contributor:
            dom.state_wl = cap - min_diff
            slices_wl = slices - min_slice_diff
        else:
            dom.state_wl = 0
        dom.leader = leader
        if at_slice_level:
            slices = dom.state // self.slice_size
            slices_wl = dom.state_wl // self.slice_size
        dom.slice = slices
        dom.slice_wl = slices_wl

    # -- ordering --------------------------------------------------------------------------
    def _sorted(self, domains: Sequence[Domain]) -> list[Domain]:
        if self.lfc:
            return sorted(domains, key=lambda d: (d.slice, d.state, d.values))
        return sorted(domains, key=lambda d: (-d.slice, d.state, d.values))

    def _sorted_with_leader(self, domains: Sequence[Domain]) -> list[Domain]:
        if self.lfc:
            return sorted(domains, key=lambda d: (-d.leader, d.slice_wl, d.state_wl, d.values))
        return sorted(domains, key=lambda d: (-d.leader, -d.slice_wl, d.state_wl, d.values))

    @staticmethod
    def _best_fit(domains: Sequence[Domain], needed: int, state: Callable[[Domain], int]) -> Domain:
        """First domain with the smallest state that still covers ``needed``, else the first."""
        best = domains[0]
        best_state = state(best)
        for dom in domains:
            s = state(dom)
            if needed <= s < best_state:
                best, best_state = dom, s
        return best

    def _best_fit_slices(self, domains: Sequence[Domain], needed: int, leaders: int) -> Domain:
        if leaders:
            # Only domains that can still host the leaders may replace the current one.
            return self._best_fit([d for d in domains if d.leader >= leaders], needed, lambda d: d.slice_wl)
        return self._best_fit(domains, needed, lambda d: d.slice)

    def _best_fit_pods(self, domains: Sequence[Domain], needed: int, leaders: int) -> Domain:
        if leaders:
            return self._best_fit([d for d in domains if d.leader >= leaders], needed, lambda d: d.state_wl)
        return self._best_fit(domains, needed, lambda d: d.state)

    # -- phase 2a --------------------------------------------------------------------------
    def _not_fit(self, fit: int, total: int, level: int) -> str:
        if self.multi_layer:
            return self._multi_layer_not_fit(level)
        unit = "pod" if self.slice_size == 1 else "slice"
        if fit <= 0:
            msg = f'topology "{self.topology_name}" doesn\'t allow to fit any of {total} {unit}(s)'
        else:
            msg = f'topology "{self.topology_name}" allows to fit only {fit} out of {total} {unit}(s)'
        if self.stats.has_exclusions():
            msg += f". Total nodes: {self.stats.total_nodes}; excluded: {self.stats.describe()}"
        return msg

    def _multi_layer_not_fit(self, level: int) -> str:
        msg = f'topology "{self.topology_name}" doesn\'t allow to fit'
        candidates = sorted(self.tree.levels[level].values(), key=lambda d: (-d.slice, d.id))
        if candidates:
            best = candidates[0]
            for layer in self.inp.request.topology.slice_layers:
                target = self._level_index(layer.level)
                if target is None:
                    continue
                fit = self._slices_in_subtree(best, target, layer.size)
                msg += f"; {fit}/{self.count // layer.size} slice(s) fit on level {layer.level}"
        if self.stats.has_exclusions():
            msg += f". Total nodes: {self.stats.total_nodes}; excluded: {self.stats.describe()}"
        return msg

    def _slices_in_subtree(self, dom: Domain, target: int, size: int) -> int:
        if dom.level == target:
            return dom.state // size
        return sum(self._slices_in_subtree(c, target, size) for c in dom.children)

    def _find_fit_level(self, level: int) -> tuple[int, list[Domain], str]:
        domains = list(self.tree.levels[level].values())
        if not domains:
            return 0, [], f"no topology domains at level: {self.tree.level_keys[level]}"
        ordered = self._sorted_with_leader(domains)
        top = ordered[0]
        needed = self.count // self.slice_size
        leaders = self.leader_count
        if not self.lfc and top.slice_wl >= needed and top.leader >= leaders:
            top = self._best_fit_slices(ordered, needed, leaders)
        if self.lfc:
            for dom in ordered:
                if dom.slice >= needed and dom.leader >= leaders:
                    return level, [dom], ""
        if top.slice_wl < needed or top.leader < leaders:
            if self.required:
                return 0, [], self._not_fit(top.slice_wl, needed, level)
            if level > 0 and not self.lfc:
                return self._find_fit_level(level - 1)
            return self._greedy(level, ordered, needed)
        return level, [top], ""

    def _leader_first(self, domains: list[Domain], count: int, leaders: int, by_slices: bool) -> list[Domain]:
        """Kueue v0.19: the first domain able to host the leaders whose cost in worker
        capacity (capacity without the leader less capacity with it) the other domains can
        still make up goes first, so placing the leader never loses the workers' room."""
        if leaders == 0 or len(domains) < 2:
            return domains
        available = sum(d.slice if by_slices else d.state for d in domains)
        for i, dom in enumerate(domains):
            if dom.leader < leaders:
                continue
            penalty = dom.slice - dom.slice_wl if by_slices else dom.state - dom.state_wl
            if available - penalty < count:
                continue
            return domains if i == 0 else [dom, *domains[:i], *domains[i + 1:]]
        return domains

    def _greedy(self, level: int, ordered: list[Domain], needed: int) -> tuple[int, list[Domain], str]:
        ordered = self._leader_first(ordered, needed, self.leader_count, True)
        results: list[Domain] = []
        remaining = needed
        remaining_leaders = self.leader_count
        idx = 0
        while remaining_leaders > 0 and idx < len(ordered) and ordered[idx].leader > 0:
            dom = ordered[idx]
            if not self.lfc and dom.slice_wl >= remaining:
                dom = self._best_fit_slices(ordered[idx:], remaining, remaining_leaders)
            results.append(dom)
            remaining_leaders -= dom.leader
            remaining -= dom.slice_wl
            idx += 1
        if remaining_leaders > 0:
            return 0, [], self._not_fit(self.leader_count - remaining_leaders, needed, level)
        chosen = {id(d) for d in results}
        rest = self._sorted([d for d in ordered[idx:] if id(d) not in chosen])
        i = 0
        while remaining > 0 and i < len(rest):
            dom = rest[i]
            if not self.lfc and dom.slice >= remaining:
                dom = self._best_fit_slices(rest[i:], remaining, 0)
            results.append(dom)
            remaining -= dom.slice
            i += 1
        if remaining > 0:
            return 0, [], self._not_fit(needed - remaining, needed, level)
        return level, results, ""

    # -- phase 2b --------------------------------------------------------------------------
    def _distribute(
        self, domains: list[Domain], count: int, leaders: int, size: int, by_slices: bool
    ) -> list[Domain] | None:
        """Give ``count`` pods (in units of ``size`` when by_slices) to the domains in order.

        Every domain taken gets its assigned pods in ``state`` (and ``leader``); the last
        one is swapped for the tightest fitting domain under BestFit. None if they run out.
        """
        result: list[Domain] = []
        remaining = count // size if by_slices else count
        remaining_leaders = leaders
        domains = self._leader_first(domains, remaining, leaders, by_slices)
        for i, dom in enumerate(domains):
            if remaining_leaders > 0:
                wl = dom.slice_wl if by_slices else dom.state_wl
                if not self.lfc and wl >= remaining and dom.leader >= remaining_leaders:
                    dom = (
                        self._best_fit_slices(domains[i:], remaining, remaining_leaders)
                        if by_slices
                        else self._best_fit_pods(domains[i:], remaining, remaining_leaders)
                    )
                    wl = dom.slice_wl if by_slices else dom.state_wl
                if wl >= remaining and dom.leader >= remaining_leaders:
                    dom.leader = remaining_leaders
                    dom.state = remaining * (size if by_slices else 1)
                    if by_slices:
                        dom.slice = remaining
                    result.append(dom)
                    return result
                take = min(wl, remaining)
                dom.leader = min(dom.leader, remaining_leaders)
                # Only the capacity left beside the leader may take workers here.
                dom.state = take * (size if by_slices else 1)
                if by_slices:
                    dom.slice = take
                remaining_leaders -= dom.leader
                remaining -= take
                result.append(dom)
                continue
            have = dom.slice if by_slices else dom.state
            if not self.lfc and have >= remaining:
                dom = (
                    self._best_fit_slices(domains[i:], remaining, 0)
                    if by_slices
                    else self._best_fit_pods(domains[i:], remaining, 0)
                )
                have = dom.slice if by_slices else dom.state
            dom.leader = 0
            take = min(have, remaining)
            dom.state = take * (size if by_slices else 1)
            if by_slices:
                dom.slice = take
            remaining -= take
            result.append(dom)
            if remaining == 0:
                return result
        if remaining == 0 and remaining_leaders == 0:
            return result
        return None

    def _descend(self, fit_level: int, fit: list[Domain], balanced: bool = False) -> list[Domain] | str:
        tree = self.tree
        current = self._distribute(fit, self.count, self.leader_count, self.slice_size, True)
        level = fit_level
        while current is not None and level < min(tree.lowest, self.slice_level) and not balanced:
            pooled = [child for dom in current for child in dom.children]
            current = self._distribute(
                self._sorted(pooled), self.count, self.leader_count, self.slice_size, True
            )
            level += 1
        while current is not None and level < tree.lowest:
            size = self.slice_size  # above the slice level (balanced placement only): whole slices
            if level >= self.slice_level:
                size = self.slice_size_at_level.get(level + 1, 1)
            nxt: list[Domain] = []
            for dom in current:
                if dom.state == 0 and dom.leader == 0:
                    continue
                children = (
                    self._sorted_with_leader(dom.children) if dom.leader else self._sorted(dom.children)
                )
                if size > 1:
                    for child in children:
                        child.slice = child.state // size
                        child.slice_wl = child.state_wl // size
                part = self._distribute(children, dom.state, dom.leader, size, size > 1)
                if part is None:
                    return "internal error: topology capacity changed during the search"
                nxt.extend(part)
            current = nxt
            level += 1
        if current is None:
            return "internal error: topology capacity changed during the search"
        return current

    # -- balanced placement (TASBalancedPlacement) ------------------------------------------
    def _greedy_eval(
        self, domains: Sequence[Domain], slices: int, leaders: int
    ) -> tuple[bool, int, Domain | None, Domain | None]:
        """Whether whole domains, taken greedily, hold ``slices`` (and ``leaders``): the count
        taken and the last domain taken with a leader and without."""
        taken = 0
        last_wl: Domain | None = None
        last: Domain | None = None
        remaining, remaining_leaders = slices, leaders
        if leaders > 0:
            with_leader = self._sorted_with_leader(domains)
            idx = 0
            while remaining_leaders > 0 and idx < len(with_leader) and with_leader[idx].leader > 0:
                dom = with_leader[idx]
                taken += 1
                last_wl = dom
                remaining_leaders -= dom.leader
                remaining -= dom.slice_wl
                idx += 1
            rest = self._sorted(with_leader[idx:])
        else:
            rest = self._sorted(domains)
        if remaining_leaders > 0:
            return False, 0, None, None
        for dom in rest:
            if remaining <= 0 or dom.slice <= 0:
                break
            taken += 1
            last = dom
            remaining -= dom.slice
        if remaining > 0:
            return False, 0, None, None
        return True, taken, last_wl, last

    @staticmethod
    def _threshold(slices: int, taken: int, last_wl: Domain | None, last: Domain | None) -> int:
        """The largest minimum of slices per domain a balanced placement could give."""
        threshold = slices // taken
        if last_wl is not None:
            threshold = min(threshold, last_wl.slice_wl)
        if last is not None:
            threshold = min(threshold, last.slice)
        return threshold

    @staticmethod
    def _entropy(domains: Sequence[Domain]) -> float:
        total = sum(d.state for d in domains)
        if total == 0:
            return 0.0
        return sum(-(d.state / total) * math.log2(d.state / total) for d in domains if d.state > 0)

    def _optimal_set(self, domains: Sequence[Domain], slices: int, leaders: int,
                     by_entropy: bool) -> list[Domain] | None:
        """As few domains as the greedy fit takes, holding the request with the least spare
        pods (a knapsack over (leaders left, pods left)); None when they do not hold it."""
        fit, n, _, _ = self._greedy_eval(domains, slices, leaders)
        if not fit:
            return None
        if by_entropy:
            ordered = sorted(domains, key=lambda d: (-d.leader, -d.slice_wl, -self._entropy(d.children),
                                                     d.values))
        else:
            ordered = sorted(domains, key=lambda d: d.values)
        # placements[i][leaders left][pods left]: the first set of i domains reaching it.
        placements: list[dict[int, dict[int, list[Domain]]]] = [{} for _ in range(n + 1)]
        placements[0][leaders] = {slices * self.slice_size: []}
        for dom in ordered:
            for i in range(n, 0, -1):
                below = placements[i - 1]
                here = placements[i]
                for before_leaders in sorted(below):
                    for before_pods in sorted(below[before_leaders]):
                        if before_leaders <= 0 and before_pods <= 0:
                            continue
                        chosen = [*below[before_leaders][before_pods], dom]
                        if before_leaders > 0 and dom.leader > 0:
                            here.setdefault(before_leaders - dom.leader, {}).setdefault(
                                before_pods - dom.state_wl, chosen)
                        if dom.slice > 0:
                            here.setdefault(before_leaders, {}).setdefault(before_pods - dom.state, chosen)
        done = placements[n].get(0, {})
        left = [k for k in done if k <= 0]
        return done[max(left)] if left else None

    def _place_balanced(self, domains: Sequence[Domain], slices: int, leaders: int,
                        threshold: int) -> tuple[list[Domain], str]:
        chosen = self._optimal_set(domains, slices, leaders, False)
        if chosen is None:
            return [], "TAS Balanced Placement: Cannot find optimal domain set to fit the request"
        if slices < len(chosen) * threshold:
            return [], "TAS Balanced Placement: Not enough slices to meet the threshold"
        chosen = self._sorted_with_leader(chosen)
        extra = slices - len(chosen) * threshold
        leaders_left = leaders
        for dom in chosen:
            if leaders_left > 0:
                take = min(dom.slice_wl - threshold, extra)
                dom.leader = 1
                leaders_left -= 1
            elif extra > 0:
                take = min(dom.slice - threshold, extra)
                dom.leader = 0
            else:
                dom.leader, take = 0, 0
            dom.slice = dom.slice_wl = threshold + take
            dom.state = dom.slice * self.slice_size
            dom.state_wl = dom.state - dom.leader
            extra -= take
        if extra > 0 or leaders_left > 0:
            return [], "TAS Balanced Placement: Not all slices or leaders could be placed"
        return chosen, ""

    def _clone(self, dom: Domain, parent: Domain | None) -> Domain:
        """A copy of the subtree with its counts, to prune without touching the tree."""
        copy = Domain(dom.values, dom.level, dom.id)
        copy.parent = parent
        copy.state, copy.state_wl, copy.slice, copy.slice_wl, copy.leader = (
            dom.state, dom.state_wl, dom.slice, dom.slice_wl, dom.leader)
        copy.children = [self._clone(child, copy) for child in dom.children]
        return copy

    def _clear(self, dom: Domain, leader_only: bool = False) -> None:
        if not leader_only:
            dom.state = dom.slice = 0
        dom.state_wl = dom.slice_wl = dom.leader = 0
        for child in dom.children:
            self._clear(child, leader_only)

    def _prune_one(self, dom: Domain, threshold: int, leader_required: bool) -> None:
        if dom.slice < threshold:
            self._clear(dom)
        elif leader_required and dom.leader > 0 and dom.slice_wl < threshold:
            self._clear(dom, leader_only=True)  # still for workers, no longer for the leader

    def _refill(self, dom: Domain, level: int, leader_required: bool) -> None:
        """Recount a (pruned) subtree bottom-up, as phase 1 does."""
        size = self.slice_size
        if not dom.children:
            if level == self.slice_level:
                dom.slice, dom.slice_wl = dom.state // size, dom.state_wl // size
            return
        for child in dom.children:
            self._refill(child, level + 1, leader_required)
        self._fill_parent(dom, None, leader_required, level == self.slice_level)

    def _prune(self, domains: Sequence[Domain], threshold: int, level: int, leader_required: bool) -> None:
        for dom in domains:
            for child in dom.children:
                self._prune_one(child, threshold, leader_required)
        for dom in domains:
            self._refill(dom, level, leader_required)
            self._prune_one(dom, threshold, leader_required)

    def _balanced_domains(self, level: int) -> tuple[list[Domain], int]:
        """The best sibling group of the requested level for a balanced placement (copies,
        pruned below its threshold) and that threshold (0: no balanced placement)."""
        tree = self.tree
        slices = self.count // self.slice_size
        leaders = self.leader_count
        if level == 0:
            groups = [list(tree.levels[0].values())]
        else:
            groups = [d.children for d in sorted(tree.levels[level - 1].values(), key=lambda d: d.values)]
        best_threshold = best_count = 0
        best: list[Domain] = []
        for siblings in groups:
            candidates = [self._clone(d, None) for d in siblings]
            lower = [c for d in candidates for c in d.children] if level < self.slice_level else candidates
            fits_, taken, last_wl, last = self._greedy_eval(lower, slices, leaders)
            if not fits_:
                continue
            threshold = self._threshold(slices, taken, last_wl, last)
            with_leader = threshold
            if leaders > 0 and last is not None:
                with_leader = min(threshold, last.slice_wl)
            if threshold < best_threshold:
                continue
            self._prune(candidates, threshold, level, leaders > 0)
            ok, count, _, _ = self._greedy_eval(candidates, slices, leaders)
            if not ok and with_leader < threshold:
                # Again with a lower threshold that leaves room for the leader.
                if with_leader <= 0 or with_leader < best_threshold:
                    continue
                threshold = with_leader
                candidates = [self._clone(d, None) for d in siblings]
                self._prune(candidates, threshold, level, leaders > 0)
                ok, count, _, _ = self._greedy_eval(candidates, slices, leaders)
            if not ok:
                continue
            if threshold > best_threshold or (threshold == best_threshold and count < best_count):
                best_threshold, best_count, best = threshold, count, candidates
        return best, best_threshold

    def _apply_balanced(self, level: int, threshold: int,
                        candidates: list[Domain]) -> tuple[list[Domain], int, str]:
        slices = self.count // self.slice_size
        fit_level = level
        if level < self.slice_level:
            chosen = self._optimal_set(candidates, slices, self.leader_count, True)
            if chosen is None:
                return [], 0, "TAS Balanced Placement: Cannot find optimal domain set to fit the request"
            candidates = [c for d in chosen for c in d.children]
            fit_level = level + 1
        placed, why = self._place_balanced(candidates, slices, self.leader_count, threshold)
        if why:
            return [], 0, why
        return placed, fit_level, ""

    # -- entry point -----------------------------------------------------------------------
    def closest(self, limit: int) -> list[tuple[tuple[str, ...], int]]:
        """The domains of the requested level that take the most of the pod set's pods now,
        best first, as (domain values, pods that fit); empty when the request is unusable."""
        level, reason = self._resolve()
        if reason or level < 0:
            return []
        self._fill_in_counts()
        domains = sorted(self.tree.levels[level].values(), key=lambda d: (-d.state, d.values))
        return [(d.values, d.state) for d in domains[:limit]]

    def run(self) -> dict[str, TopologyAssignment] | str:
        level, reason = self._resolve()
        if reason:
            return reason
        req = self.inp.request
        if self.count % self.slice_size:
            return f"podset count {self.count} is not a multiple of the slice size {self.slice_size}"
        if self.count == 0:
            empty = TopologyAssignment(self._output_levels(), ())
            out = {req.name: empty}
            if self.inp.leader is not None:
                out[self.inp.leader.name] = empty
            return out
        self._fill_in_counts()
        balanced = False
        if self.inp.balanced and not self.required and not self.lfc:
            candidates, threshold = self._balanced_domains(level)
            if threshold > 0:
                placed, fit_level, why = self._apply_balanced(level, threshold, candidates)
                balanced = not why  # otherwise BestFit, as Kueue falls back
                fit = placed
        if not balanced:
            fit_level, fit, reason = self._find_fit_level(level)
            if reason:
                return reason
        leaves = self._descend(fit_level, fit, balanced)
        if isinstance(leaves, str):
            return leaves
        workers = [d for d in leaves if d.state > 0]
        result = {req.name: self._build(workers, lambda d: d.state)}
        if result[req.name].total != self.count:
            return f"internal error: placed {result[req.name].total} of {self.count} pod(s)"
        if self.inp.leader is not None:
            leader_doms = [d for d in leaves if d.leader > 0]
            result[self.inp.leader.name] = self._build(leader_doms, lambda d: d.leader)
        return result

    def _output_levels(self) -> tuple[str, ...]:
        keys_ = self.tree.level_keys
        return keys_[-1:] if self.tree.hostname_leaves else keys_

    def _build(self, leaves: list[Domain], count: Callable[[Domain], int]) -> TopologyAssignment:
        start = self.tree.lowest if self.tree.hostname_leaves else 0
        ordered = sorted(leaves, key=lambda d: d.values)
        merged: list[DomainAssignment] = []
        for dom in ordered:
            values = dom.values[start:]
            if merged and merged[-1].values == values:
                merged[-1] = DomainAssignment(values, merged[-1].count + count(dom))
            else:
                merged.append(DomainAssignment(values, count(dom)))
        return TopologyAssignment(self._output_levels(), tuple(merged))
