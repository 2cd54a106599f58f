"""Filter, prioritize and bind for TAS-managed pods; everything else passes through.

Filter and prioritize are side-effect free (the scheduler calls them again on every
retry and never tells the extender that a filtered pod went elsewhere). Bind is the
enforcement point: under a per-workload lock it re-reads the pod, the Workload and a
fresh list of the PodSet's pods from the API, re-checks the domain's remaining count and
only then creates the Binding. When the Workload names an unhealthy node, a replacement
pod may only go to the nodes the queue manager's replacement rule plans; binding it there
writes the rewritten assignment with the Workload's resourceVersion first (a 409 restarts
the whole decision from fresh reads), then binds the pod.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import itertools
import logging
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pykueue.api import keys
from pykueue.api.wire import JSON
from pykueue.extender.claims import Claim, encode_claims, pending_claims, read_claims
from pykueue.extender.domains import (
    Leaf,
    assigned_counts,
    bound_node,
    is_terminated,
    is_terminating,
    leaf_of,
    live_counts,
    node_labels,
    pod_uid,
    priority_scores,
    remaining_counts,
)
from pykueue.extender.feasibility import rejection
from pykueue.extender.managed import PodSetPlacement, PodSetRef, managed_podset, podset_placement
from pykueue.extender.node_cache import NodeCache
from pykueue.extender.port import ClusterPort, ConflictError, PortError
from pykueue.extender.replacement_plan import load_plan_inputs, plan_replacement
from pykueue.extender.wire import BindingArgs, ExtenderArgs, FilterVerdict
from pykueue.manager.core.tas.assignment import AssignmentError, encode_v1beta2
from pykueue.manager.core.tas.replacement import NoReplacement, Replacement

log = logging.getLogger(__name__)

_RETRY: Final = object()
# How many pod UIDs filter recently saw as unmanaged (see TasExtender.bind).
UNMANAGED_MEMO_SIZE: Final = 16384


@dataclass(frozen=True)
class PodSetState:
    """One consistent read of a managed PodSet: Workload, its pods and their leaves."""

    ref: PodSetRef
    workload: JSON
    placement: PodSetPlacement
    pods: list[JSON]
    nodes: Mapping[str, JSON]  # read-only view of every known node
    leaf_by_node: Mapping[str, Leaf | None]
    remaining: dict[Leaf, int]
    claims: dict[str, Claim]  # other pods' binds in flight, each holding a slot

    @property
    def failed_node(self) -> str | None:
        # Kueue replaces one unhealthy node at a time: the first listed.
        return self.placement.unhealthy_nodes[0] if self.placement.unhealthy_nodes else None

    def failed_leaf(self) -> Leaf | None:
        node = self.failed_node
        if node is None:
            return None
        leaf = self.leaf_by_node.get(node)
        if leaf is None:
            # The node may be gone; Kueue matches the marker against the hostname value.
            leaf = next((d.values for d in self.placement.assignment.domains if d.values[-1] == node), None)
        return leaf if leaf is not None and self.remaining.get(leaf, 0) > 0 else None

    def failed_node_drained(self) -> bool:
        node = self.failed_node
        return not any(
            bound_node(p) == node and not is_terminated(p) and not is_terminating(p) for p in self.pods
        )


class TasExtender:
    def __init__(
        self,
        port: ClusterPort,
        nodes: NodeCache,
        *,
        max_bind_attempts: int = 8,
        claim_ttl_s: float = 30.0,
        clock: Callable[[], float] = time.time,
        scheduler_name: str | None = None,
    ) -> None:
        self._port = port
        # Binds only pods of this scheduler profile (None: any; in-process tests).
        self._scheduler_name = scheduler_name
        self._nodes = nodes
        self._max_attempts = max_bind_attempts
        self._claim_ttl = claim_ttl_s
        self._clock = clock  # wall clock: claim expiry is compared across replicas
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        # UIDs of pods that filter found unmanaged (no PodSet label / Workload annotation /
        # TAS marker). kube-scheduler binds right after filtering, and those markers are set
        # when the pod is created, so bind can skip re-reading such a pod: the Binding
        # carries the UID, so the API still refuses a recreated pod. Halves the API calls
        # per unmanaged pod; bounded, oldest first out. The pod is kept for bind's checks.
        self._unmanaged: collections.OrderedDict[str, Mapping[str, Any]] = collections.OrderedDict()

    def _remember_unmanaged(self, pod: Mapping[str, Any]) -> None:
        uid = pod_uid(pod)
        if not uid:
            return
        self._unmanaged[uid] = pod
        if len(self._unmanaged) > UNMANAGED_MEMO_SIZE:
            self._unmanaged.popitem(last=False)

    # -- shared reads -------------------------------------------------------------------
    async def _state(self, ref: PodSetRef, pod: Mapping[str, Any], candidates: Iterable[str]) -> (
        PodSetState | str | None
    ):
        """None: not ours to enforce (pass through). str: fail closed with this reason."""
        workload = await self._port.get_workload(ref.namespace, ref.workload)
        if workload is None:
            log.info("pod %s names unknown workload %s; passing through", _pod_key(pod), ref)
            return None
        try:
            placement = podset_placement(workload, ref.podset)
        except (AssignmentError, ValueError, TypeError) as exc:
            return f"workload {ref.namespace}/{ref.workload}: invalid topologyAssignment: {exc}"
        if placement is None:
            log.info("podset %s has no topology assignment; passing through", ref)
            return None
        pods = await self._port.list_podset_pods(ref.namespace, ref.workload, ref.podset)
        claims = pending_claims(read_claims(workload), pods, self._clock(), exclude_uid=pod_uid(pod))
        referenced = {bound_node(p) for p in pods if bound_node(p)}
        referenced.update(c.node for c in claims.values())
        referenced.update(placement.unhealthy_nodes)
        nodes = await self._nodes.lookup(itertools.chain(candidates, referenced))
        levels = tuple(placement.assignment.levels)
        known = self._nodes.leaves(levels)
        leaf_by_node: Mapping[str, Leaf | None] = known
        if levels == (keys.HOSTNAME_LABEL,):
            # A deleted node still holds its pods' slots: Kueue takes name == hostname.
            gone: dict[str, Leaf | None] = {name: (name,) for name in referenced if name not in known}
            if gone:
                leaf_by_node = collections.ChainMap(gone, dict(known))
        live = live_counts(
            pods, leaf_by_node, exclude_uid=pod_uid(pod), released_nodes=placement.unhealthy_nodes
        )
        for claim in claims.values():
            claimed_leaf = leaf_by_node.get(claim.node)
            if claimed_leaf is not None:
                live[claimed_leaf] += 1
        remaining = remaining_counts(assigned_counts(placement.assignment), live)
        return PodSetState(ref, workload, placement, pods, nodes, leaf_by_node, remaining, claims)

    async def _claim(self, state: PodSetState, pod: Mapping[str, Any], node: str) -> JSON | None:
        """Record this pod's bind on the Workload; None when another writer got there first."""
        claims = dict(state.claims)
        claims[pod_uid(pod)] = Claim(node, self._clock() + self._claim_ttl)
        meta = state.workload["metadata"]
        try:
            return await self._port.patch_workload_annotations(
                state.ref.namespace, state.ref.workload, str(meta.get("resourceVersion") or ""),
                {keys.TAS_BIND_CLAIMS: encode_claims(claims)},
            )
        except ConflictError:
            log.info("workload %s changed while claiming a slot for %s; re-reading", state.ref, _pod_key(pod))
            return None

    async def _plan(self, state: PodSetState) -> Replacement | NoReplacement:
        failed = state.failed_node or ""
        inputs = await load_plan_inputs(self._port, state.workload, state.placement.index)
        if isinstance(inputs, str):
            return NoReplacement(failed, inputs)
        return plan_replacement(
            inputs, state.workload, state.ref.podset, state.placement.assignment, failed
        )

    @staticmethod
    def _planned(plan: Replacement, node: Mapping[str, Any]) -> bool:
        targets = {d.values for d in plan.added}
        return leaf_of(node_labels(node), plan.assignment.levels) in targets

    # -- filter / prioritize ------------------------------------------------------------
    async def filter(self, args: ExtenderArgs) -> FilterVerdict:
        names = args.candidate_names()
        if not args.node_cache_capable:
            self._nodes.remember(args.nodes)
        ref = managed_podset(args.pod)
        if ref is None:
            self._remember_unmanaged(args.pod)
            return FilterVerdict(passed=list(names))
        state = await self._state(ref, args.pod, names)
        if state is None:
            return FilterVerdict(passed=list(names))
        if isinstance(state, str):
            return FilterVerdict(unresolvable={n: state for n in names})
        verdict = FilterVerdict()
        unhealthy = set(state.placement.unhealthy_nodes)
        outside: list[str] = []
        # Reasons are built once: a filter call carries thousands of rejected nodes.
        not_assigned = f"node is not in the TAS assignment of {ref}"
        unknown = "node unknown to the TAS extender"
        passed, unresolvable = verdict.passed, verdict.unresolvable
        leaf_by_node, remaining, nodes = state.leaf_by_node, state.remaining, state.nodes
        for name in names:
            leaf = leaf_by_node.get(name)
            if name in unhealthy:
                unresolvable[name] = f"node is being replaced in the TAS assignment of {ref}"
            elif leaf is not None and leaf not in remaining and name in nodes:
                unresolvable[name] = not_assigned  # the common case, checked early
                outside.append(name)
            elif name not in nodes:
                unresolvable[name] = unknown
            elif leaf is None:
                unresolvable[name] = "node lacks a topology level label of the assignment"
            elif remaining[leaf] <= 0:
                unresolvable[name] = f"topology domain {','.join(leaf)} of {ref} is full"
                outside.append(name)
            else:
                passed.append(name)
        if not passed and state.failed_leaf() is not None and state.failed_node_drained():
            plan = await self._plan(state)
            if isinstance(plan, NoReplacement):
                log.info("no replacement for node %s of %s: %s", state.failed_node, ref, plan.detail)
            else:
                for name in outside:
                    if self._planned(plan, nodes[name]):
                        del unresolvable[name]
                        passed.append(name)
        return verdict

    async def prioritize(self, args: ExtenderArgs) -> dict[str, int]:
        names = args.candidate_names()
        neutral = dict.fromkeys(names, 0)
        ref = managed_podset(args.pod)
        if ref is None:
            return neutral
        state = await self._state(ref, args.pod, names)
        if state is None or isinstance(state, str):
            return neutral
        return priority_scores(state.remaining, {n: state.leaf_by_node.get(n) for n in names})

    # -- bind ---------------------------------------------------------------------------
    def _lock_for(self, ref: PodSetRef) -> asyncio.Lock:
        key = (ref.namespace, ref.workload)
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock

    async def bind(self, args: BindingArgs) -> str:
        """"" on success, else the reason (the scheduler then requeues the pod)."""
        try:
            if args.pod_uid and args.pod_uid in self._unmanaged:
                filtered = self._unmanaged.pop(args.pod_uid)  # a retry filters (and remembers) again
                refusal = await self._refusal(filtered, args)
                return refusal or await self._post_binding(args)
            for _ in range(self._max_attempts):
                pod = await self._port.get_pod(args.pod_namespace, args.pod_name)
                if pod is None:
                    return f"pod {args.pod_namespace}/{args.pod_name} not found"
                if args.pod_uid and pod_uid(pod) != args.pod_uid:
                    return f"pod {args.pod_namespace}/{args.pod_name} was recreated (uid {pod_uid(pod)})"
                current = bound_node(pod)
                if current == args.node:
                    return ""  # a retried bind that already happened
                if current:
                    return f"pod {args.pod_namespace}/{args.pod_name} is already bound to {current}"
                refusal = await self._refusal(pod, args)
                if refusal:
                    return refusal
                ref = managed_podset(pod)
                if ref is None:
                    return await self._post_binding(args)
                lock = self._lock_for(ref)
                async with lock:
                    outcome = await self._bind_managed(ref, pod, args)
                if isinstance(outcome, str):
                    return outcome
            return f"gave up binding after {self._max_attempts} conflicting Workload updates"
        except PortError as exc:
            return f"API error while binding: {exc}"

    async def _refusal(self, pod: Mapping[str, Any], args: BindingArgs) -> str | None:
        """Why this bind must not happen whatever the topology says: a pod of another
        scheduler, or a node the pod's own constraints exclude."""
        who = f"pod {args.pod_namespace}/{args.pod_name}"
        scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        if self._scheduler_name is not None and scheduler != self._scheduler_name:
            return f"{who} is for scheduler {scheduler!r}, not {self._scheduler_name!r}"
        node = (await self._nodes.lookup([args.node])).get(args.node)
        if node is None:
            return f"node {args.node} not found"
        reason = rejection(pod, node)
        return None if reason is None else f"{who}: {reason}"

    async def _bind_managed(self, ref: PodSetRef, pod: JSON, args: BindingArgs) -> str | object:
        state = await self._state(ref, pod, [args.node])
        if state is None:
            return await self._post_binding(args)
        if isinstance(state, str):
            return state
        if args.node in state.placement.unhealthy_nodes:
            return f"node {args.node} is being replaced in the TAS assignment of {ref}"
        leaf = state.leaf_by_node.get(args.node)
        if leaf is not None and state.remaining.get(leaf, 0) > 0:
            if await self._claim(state, pod, args.node) is None:
                return _RETRY
            return await self._bind_claimed(ref, pod, args)
        not_allowed = (
            f"node {args.node} is not in the TAS assignment of {ref}"
            if leaf not in state.remaining
            else f"topology domain {','.join(leaf or ())} of {ref} is full"
        )
        if state.failed_leaf() is None or not state.failed_node_drained():
            return not_allowed
        return await self._replace_and_bind(state, pod, args, not_allowed)

    async def _replace_and_bind(
        self, state: PodSetState, pod: JSON, args: BindingArgs, not_allowed: str
    ) -> str | object:
        node = await self._port.get_node(args.node)
        if node is None:
            return f"node {args.node} not found"
        plan = await self._plan(state)
        if isinstance(plan, NoReplacement):
            return f"{not_allowed}: no replacement for node {state.failed_node}: {plan.detail}"
        if not self._planned(plan, node):
            planned = ", ".join(",".join(d.values) for d in plan.added)
            return f"{not_allowed}: node {state.failed_node} is to be replaced by {planned}"
        claimed = await self._claim(state, pod, args.node)
        if claimed is None:
            return _RETRY
        # The claim write succeeded at the version we decided on, so the status is unchanged;
        # the status update must carry the new resourceVersion.
        updated = copy.deepcopy(state.workload)
        updated["metadata"]["resourceVersion"] = claimed["metadata"]["resourceVersion"]
        status = updated["status"]
        psa = status["admission"]["podSetAssignments"][state.placement.index]
        psa["topologyAssignment"] = encode_v1beta2(plan.assignment)
        # The plan moved the failed node's whole count, so it leaves the marker list.
        left = [u for u in status.get("unhealthyNodes") or [] if u.get("name") != state.failed_node]
        if left:
            status["unhealthyNodes"] = left
        else:
            status.pop("unhealthyNodes", None)  # Kueue clears the list to nil
        try:
            await self._port.update_workload_status(updated)
        except ConflictError:
            log.info("workload %s changed while replacing %s; re-reading", state.ref, state.failed_node)
            return _RETRY
        log.info("moved one pod of %s from failed node %s to %s", state.ref, state.failed_node, args.node)
        # A failed Binding after the rewrite leaves a valid assignment (the slot just moved).
        return await self._bind_claimed(state.ref, pod, args)

    async def _bind_claimed(self, ref: PodSetRef, pod: Mapping[str, Any], args: BindingArgs) -> str:
        try:
            error = await self._post_binding(args)
        except PortError as exc:
            error = f"API error while binding: {exc}"
        if error:
            await self._release_claim(ref, pod_uid(pod))
        return error

    async def _release_claim(self, ref: PodSetRef, uid: str) -> None:
        """Best effort: free the slot now rather than when the claim expires."""
        for _ in range(2):
            try:
                workload = await self._port.get_workload(ref.namespace, ref.workload)
                if workload is None:
                    return
                claims = read_claims(workload)
                if claims.pop(uid, None) is None:
                    return
                rv = str(workload["metadata"].get("resourceVersion") or "")
                value = encode_claims(claims) if claims else None
                await self._port.patch_workload_annotations(
                    ref.namespace, ref.workload, rv, {keys.TAS_BIND_CLAIMS: value}
                )
                return
            except ConflictError:
                continue
            except PortError as exc:
                log.warning("could not release the bind claim of %s on %s: %s", uid, ref, exc)
                return

    async def _post_binding(self, args: BindingArgs) -> str:
        try:
            await self._port.post_binding(args.pod_namespace, args.pod_name, args.pod_uid, args.node)
            return ""
        except ConflictError:
            pod = await self._port.get_pod(args.pod_namespace, args.pod_name)
            if pod is not None and bound_node(pod) == args.node:
                return ""
            if pod is not None and args.pod_uid and pod_uid(pod) != args.pod_uid:
                return f"pod {args.pod_namespace}/{args.pod_name} was recreated (uid {pod_uid(pod)})"
            where = bound_node(pod) if pod is not None else "nowhere (deleted)"
            return f"pod {args.pod_namespace}/{args.pod_name} is already bound to {where}"


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"
