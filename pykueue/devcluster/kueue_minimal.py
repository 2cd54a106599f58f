"""Kueue's scheduler benchmark manager (``minimalkueue``), at the client limits asked for.

``minimalkueue`` sets its client's QPS and burst in code (50 and 100, Kueue's harness
setting) and has no flag for them. It sets no shared rate limiter either, so each REST
client controller-runtime derives from that config (one per API kind: Workloads,
ClusterQueues, LocalQueues, ...; and the event recorder's) gets a token bucket of its own
at those limits. Kueue's own manager (``cmd/kueue``) sets one ``RateLimiter`` on the config
so that every kind shares one budget, and so does pykueue's client.

Limiters: ``per-resource`` is the release's file as it is (only the two numbers changed
when they are not 50/100); ``shared`` also gives the config one token bucket at those
limits, as ``cmd/kueue`` does (one added assignment and its import). The unpatched build
of :func:`devcluster.kueue_build.binary` serves 50/100 per resource. Any other build gets
a module of its own: the patched ``main.go`` is copied into a generated module under the
binary cache whose ``go.mod`` and ``go.sum`` are the Kueue module's (so the build resolves
exactly the same dependencies, offline). Each variant is built once and reused; the
generated sources are part of the cache key, so a change of the patch rebuilds.

Fair sharing: ``minimalkueue`` runs Kueue's default Configuration, without fair sharing,
and takes no Configuration. With ``fair_sharing`` the patch wires it in as ``cmd/kueue``
does for a Configuration with a ``fairSharing`` section (Kueue's default preemption
strategies): the scheduler cache gets ``WithFairSharing(true)``, the core controllers (and
the TAS ones) get a Configuration carrying that section (the Cohort and ClusterQueue
reconcilers read it), and the scheduler ``WithFairSharing`` (its fair-sharing iterator and
preemption). Such a build is a variant of its own (``-fairsharing`` in its name, so in its
cache key), even at the harness limits.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from pykueue.devcluster import kueue_build
from pykueue.devcluster.build import BuildError, Report, build_one
from pykueue.devcluster.paths import bin_root
from pykueue.devcluster.versions import GoBinary, source_digest

HARNESS_QPS, HARNESS_BURST = 50.0, 100
SHARED, PER_RESOURCE = "shared", "per-resource"
LIMITERS = (SHARED, PER_RESOURCE)
FLOWCONTROL = "k8s.io/client-go/util/flowcontrol"
MAIN_GO = "test/performance/scheduler/minimalkueue/main.go"
# Groups: 1 the text before the number (2 its indent), 3 what follows it on the line.
_QPS_LINE = re.compile(r"^(([ \t]*)kubeConfig\.QPS[ \t]*=[ \t]*)\S+([ \t]*)$", re.MULTILINE)
_BURST_LINE = re.compile(r"^(([ \t]*)kubeConfig\.Burst[ \t]*=[ \t]*)\S+([ \t]*)$", re.MULTILINE)
_IMPORT_BLOCK = re.compile(r"^import \($", re.MULTILINE)
# The lines the fair-sharing patch touches: the scheduler cache's creation (group 1 its
# indent), the controllers' empty Configuration, and the scheduler's last option.
_CACHE_LINE = re.compile(r"^([ \t]*)cCache := schdcache\.New\(mgr\.GetClient\(\)\)[ \t]*$", re.MULTILINE)
_EMPTY_CONFIGURATION = "&configapi.Configuration{}"
_SCHEDULER_OPTION = re.compile(
    r"^([ \t]*)scheduler\.WithPreemptionExpectations\(preemptionExpectations\),[ \t]*$", re.MULTILINE)
FAIR_SHARING_VAR = "fairSharing"
FAIR_SHARING_SECTION = (f"{FAIR_SHARING_VAR} := &configapi.FairSharing{{PreemptionStrategies: "
                        "[]configapi.PreemptionStrategy{configapi.LessThanOrEqualToFinalShare, "
                        "configapi.LessThanInitialShare}}")
_MODULE_LINE = re.compile(r"^module\s+\S+\s*$", re.MULTILINE)
_TOOL_BLOCK = re.compile(r"^tool\s*\(.*?^\)\s*$\n?|^tool\s+\S+\s*$\n?", re.MULTILINE | re.DOTALL)
_KUEUE_REQUIRE = re.compile(
    rf"^(\s*(?:require\s+)?{re.escape(kueue_build.MODULE)}\s+v\S+)\s*//\s*indirect\s*$", re.MULTILINE)


def go_number(qps: float) -> str:
    """``qps`` as a Go constant: ``50`` or ``37.5``."""
    return str(int(qps)) if float(qps).is_integer() else repr(float(qps))


def check_limits(qps: float, burst: int, limiter: str = PER_RESOURCE) -> None:
    if not qps > 0 or burst < 1:
        raise BuildError(f"client limits must be positive (QPS {qps}, burst {burst})")
    if limiter not in LIMITERS:
        raise BuildError(f"unknown client limiter {limiter!r} (one of: {', '.join(LIMITERS)})")


def patch_fair_sharing(source: str) -> str:
    """``main.go`` with Kueue's fair sharing on (see the module's docstring)."""
    if len(_CACHE_LINE.findall(source)) != 1 or len(_SCHEDULER_OPTION.findall(source)) != 1 \
            or _EMPTY_CONFIGURATION not in source or '\tconfigapi "' not in source:
        raise BuildError("minimalkueue's main.go has no single scheduler cache, scheduler options or "
                         "controller Configuration to turn fair sharing on in")
    cache = r"\g<1>cCache := schdcache.New(mgr.GetClient(), schdcache.WithFairSharing(true))"
    out = _CACHE_LINE.sub(rf"\g<1>{FAIR_SHARING_SECTION}\n{cache}", source)
    out = out.replace(_EMPTY_CONFIGURATION, f"&configapi.Configuration{{FairSharing: {FAIR_SHARING_VAR}}}")
    return _SCHEDULER_OPTION.sub(rf"\g<0>\n\g<1>scheduler.WithFairSharing({FAIR_SHARING_VAR}),", out)


def patch_main(source: str, qps: float, burst: int, limiter: str = PER_RESOURCE, *,
               fair_sharing: bool = False) -> str:
    """``main.go`` with its client QPS and burst assignments set to ``qps`` and ``burst``,
    with ``limiter`` shared: one token bucket on the config, set right after them, and with
    ``fair_sharing``, Kueue's fair sharing on."""
    check_limits(qps, burst, limiter)
    out = source
    for pattern, value, what in ((_QPS_LINE, go_number(qps), "QPS"), (_BURST_LINE, str(burst), "Burst")):
        if len(pattern.findall(out)) != 1:
            raise BuildError(f"minimalkueue's main.go has no single `kubeConfig.{what} = ...` line to patch")
        out = pattern.sub(rf"\g<1>{value}\g<3>", out)
    if limiter == SHARED:
        if "kubeConfig.RateLimiter" in out or len(_IMPORT_BLOCK.findall(out)) != 1:
            raise BuildError("minimalkueue's main.go has a rate limiter already or no single import block")
        out = _BURST_LINE.sub(
            r"\g<0>\n\g<2>kubeConfig.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(kubeConfig.QPS, "
            r"kubeConfig.Burst)", out, count=1)
        out = _IMPORT_BLOCK.sub(f'import (\n\t"{FLOWCONTROL}"', out, count=1)
    return patch_fair_sharing(out) if fair_sharing else out


def generated_go_mod(base: str, name: str) -> str:
    """The Kueue module's ``go.mod`` renamed, its tool list dropped (the build names ``.``)."""
    if _MODULE_LINE.search(base) is None:
        raise BuildError("the Kueue module's go.mod has no module line")
    text = _MODULE_LINE.sub(f"module pykueue.dev/devcluster/{name}", base, count=1)
    text = _TOOL_BLOCK.sub("", text)
    return _KUEUE_REQUIRE.sub(r"\1", text).rstrip("\n") + "\n"


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def binary(version: str | None = None, qps: float = HARNESS_QPS, burst: int = HARNESS_BURST, *,
           limiter: str = PER_RESOURCE, fair_sharing: bool = False, report: Report = print) -> Path:
    """Build (once) and return ``minimalkueue`` of Kueue ``version`` with these client limits,
    its limiter shared by every API kind or one per kind, with fair sharing on or not."""
    check_limits(qps, burst, limiter)
    if (float(qps), burst, limiter, fair_sharing) == (HARNESS_QPS, HARNESS_BURST, PER_RESOURCE, False):
        return kueue_build.binary(kueue_build.MINIMAL, version, report=report)
    mod = kueue_build.module(version, report)
    main_go = kueue_build.source_dir(mod.version, report) / MAIN_GO
    try:
        source = main_go.read_text()
    except OSError as exc:
        raise BuildError(f"Kueue {mod.version} has no minimalkueue ({exc.strerror}: {main_go})") from None
    limits = f"qps{go_number(qps)}-burst{burst}" + ("-shared" if limiter == SHARED else "") \
        + ("-fairsharing" if fair_sharing else "")
    name = f"minimalkueue-{limits}"
    directory = bin_root() / "src" / f"{name}-{mod.key}"
    directory.mkdir(parents=True, exist_ok=True)
    _write_if_changed(directory / "go.mod", generated_go_mod((mod.directory / "go.mod").read_text(), name))
    sum_file = directory / "go.sum"
    if not sum_file.is_file() or sum_file.read_bytes() != (mod.directory / "go.sum").read_bytes():
        shutil.copyfile(mod.directory / "go.sum", sum_file)
    patched = patch_main(source, qps, burst, limiter, fair_sharing=fair_sharing)
    _write_if_changed(directory / "main.go", patched)
    target = bin_root() / mod.key / f"{name}_{source_digest(directory)[:12]}"
    if not target.is_file():
        report(f"building minimalkueue {mod.version} with client QPS {go_number(qps)} and burst {burst}, "
               f"limiter {limiter}{', fair sharing' if fair_sharing else ''} (once; later runs reuse it) ...")
    build_one(GoBinary("minimalkueue", kueue_build.PINNED_DIR, ".", dev_cluster=False), target,
              module_dir=directory, report=report)
    return target
