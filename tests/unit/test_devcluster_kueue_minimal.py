"""minimalkueue at other client limits: the two-number patch, the generated module, the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykueue.devcluster import kueue_build, kueue_minimal
from pykueue.devcluster.build import BuildError
from pykueue.devcluster.paths import GO_DIR
from pykueue.devcluster.versions import GoBinary

# The shape of the lines the patch touches (not Kueue's file: a stand-in with the same form).
MAIN = """package main

import (
\t"fmt"
)

func run() int {
\tcfg := load()

\t// limits
\tkubeConfig.QPS = 50
\tkubeConfig.Burst = 100
\tlog.Info("client", "qps", kubeConfig.QPS, "burst", kubeConfig.Burst)
\treturn 0
}
"""


def test_patch_changes_only_the_two_numbers() -> None:
    patched = kueue_minimal.patch_main(MAIN, 300, 500)
    assert "\tkubeConfig.QPS = 300\n\tkubeConfig.Burst = 500\n" in patched
    before, after = MAIN.splitlines(), patched.splitlines()
    assert len(before) == len(after)
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [10, 11]
    assert kueue_minimal.patch_main(MAIN, 37.5, 80).count("kubeConfig.QPS = 37.5\n") == 1


def test_a_shared_limiter_is_one_token_bucket_set_after_the_limits() -> None:
    patched = kueue_minimal.patch_main(MAIN, 50, 100, kueue_minimal.SHARED)
    assert "\tkubeConfig.QPS = 50\n\tkubeConfig.Burst = 100\n\tkubeConfig.RateLimiter = " \
           "flowcontrol.NewTokenBucketRateLimiter(kubeConfig.QPS, kubeConfig.Burst)\n\tlog.Info(" in patched
    assert patched.count("kubeConfig.RateLimiter") == 1
    assert 'import (\n\t"k8s.io/client-go/util/flowcontrol"\n\t"fmt"\n)' in patched
    assert kueue_minimal.patch_main(MAIN, 300, 500) == kueue_minimal.patch_main(
        MAIN, 300, 500, kueue_minimal.PER_RESOURCE)
    assert "RateLimiter" not in kueue_minimal.patch_main(MAIN, 300, 500)


def test_a_shared_limiter_needs_one_import_block_and_no_limiter_yet() -> None:
    burst = "\tkubeConfig.Burst = 100\n"
    already = MAIN.replace(burst, f"{burst}\tkubeConfig.RateLimiter = x\n")
    no_imports = MAIN.replace("import (\n\t\"fmt\"\n)\n", "")
    for source in (no_imports, already):
        with pytest.raises(BuildError, match="rate limiter already or no single import block"):
            kueue_minimal.patch_main(source, 50, 100, kueue_minimal.SHARED)
    with pytest.raises(BuildError, match="unknown client limiter 'one'"):
        kueue_minimal.patch_main(MAIN, 50, 100, "one")


def test_go_numbers() -> None:
    assert kueue_minimal.go_number(300.0) == "300"
    assert kueue_minimal.go_number(12.5) == "12.5"


@pytest.mark.parametrize("source", [MAIN.replace("\tkubeConfig.Burst = 100\n", ""),
                                    MAIN.replace("\tkubeConfig.QPS = 50\n", "\tkubeConfig.QPS = 50\n" * 2)])
def test_patch_refuses_a_main_go_of_another_shape(source: str) -> None:
    with pytest.raises(BuildError, match="no single"):
        kueue_minimal.patch_main(source, 300, 500)


@pytest.mark.parametrize(("qps", "burst"), [(0, 100), (-1, 100), (50, 0)])
def test_limits_must_be_positive(qps: float, burst: int) -> None:
    with pytest.raises(BuildError, match="positive"):
        kueue_minimal.patch_main(MAIN, qps, burst)


def test_generated_go_mod_keeps_every_requirement_of_the_pinned_module() -> None:
    base = (GO_DIR / "kueue" / "go.mod").read_text()
    text = kueue_minimal.generated_go_mod(base, "minimalkueue-qps300-burst500")
    assert text.startswith("module pykueue.dev/devcluster/minimalkueue-qps300-burst500\n")
    assert "\ntool" not in text and "scheduler/minimalkueue" not in text
    assert f"\t{kueue_build.MODULE} {kueue_build.pinned()}\n" in text  # a direct requirement now

    def requirements(mod: str) -> set[str]:
        return {line.split()[0] for line in mod.splitlines()
                if line.startswith("\t") and "." in line.split()[0]}

    assert requirements(text) == requirements(base) - {kueue_build.MANAGER, kueue_build.MINIMAL}


def test_harness_limits_use_the_unpatched_build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[str, str | None]] = []

    def fake_binary(package: str, version: str | None = None, **_: object) -> Path:
        calls.append((package, version))
        return tmp_path / "minimalkueue"

    monkeypatch.setattr(kueue_build, "binary", fake_binary)
    assert kueue_minimal.binary("v0.19.2", 50, 100) == tmp_path / "minimalkueue"
    assert calls == [(kueue_build.MINIMAL, "v0.19.2")]
    per_resource = kueue_minimal.binary("v0.19.2", 50, 100, limiter=kueue_minimal.PER_RESOURCE)
    assert per_resource == tmp_path / "minimalkueue"
    assert len(calls) == 2


def test_other_limits_build_a_generated_module_once_per_pair(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE", str(tmp_path / "cache"))
    base = tmp_path / "base"
    base.mkdir()
    (base / "go.mod").write_text("module pykueue.dev/devcluster/kueue\n\ngo 1.26.0\n\n"
                                 "require sigs.k8s.io/kueue v0.19.2 // indirect\n\n"
                                 "tool sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue\n")
    (base / "go.sum").write_text("sigs.k8s.io/kueue v0.19.2 h1:x=\n")
    source = tmp_path / "kueue-src"
    (source / Path(kueue_minimal.MAIN_GO).parent).mkdir(parents=True)
    (source / kueue_minimal.MAIN_GO).write_text(MAIN)
    pinned = kueue_build.KueueModule("v0.19.2", base, "kueue-k")
    monkeypatch.setattr(kueue_build, "module", lambda version=None, report=print: pinned)
    monkeypatch.setattr(kueue_build, "source_dir", lambda version=None, report=print: source)
    built: list[tuple[GoBinary, Path, Path | None]] = []

    def fake_build(binary: GoBinary, target: Path, *, module_dir: Path | None = None, **_: object) -> bool:
        if target.is_file():
            return False
        built.append((binary, target, module_dir))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("binary")
        return True

    monkeypatch.setattr(kueue_minimal, "build_one", fake_build)
    first = kueue_minimal.binary("v0.19.2", 300, 500, report=lambda _: None)
    again = kueue_minimal.binary("v0.19.2", 300, 500, report=lambda _: None)
    other = kueue_minimal.binary("v0.19.2", 100, 200, report=lambda _: None)
    shared = kueue_minimal.binary("v0.19.2", 300, 500, limiter=kueue_minimal.SHARED, report=lambda _: None)
    assert first == again != other
    assert shared.name.startswith("minimalkueue-qps300-burst500-shared_")
    assert first.parent == tmp_path / "cache" / "bin" / "kueue-k"
    assert first.name.startswith("minimalkueue-qps300-burst500_")
    assert len(built) == 3
    # Fair sharing is a variant of its own, even at the harness limits (no unpatched build).
    (source / kueue_minimal.MAIN_GO).write_text(WIRING)
    fair = kueue_minimal.binary("v0.19.2", 50, 100, fair_sharing=True, report=lambda _: None)
    plain = kueue_minimal.binary("v0.19.2", 300, 500, limiter=kueue_minimal.SHARED, report=lambda _: None)
    fair_shared = kueue_minimal.binary("v0.19.2", 300, 500, limiter=kueue_minimal.SHARED, fair_sharing=True,
                                       report=lambda _: None)
    assert fair.name.startswith("minimalkueue-qps50-burst100-fairsharing_")
    assert fair_shared.name.startswith("minimalkueue-qps300-burst500-shared-fairsharing_")
    assert len({fair, plain, fair_shared, shared}) == 4 and len(built) == 6
    assert "scheduler.WithFairSharing(fairSharing)" in (built[5][2] / "main.go").read_text()  # type: ignore[operator]
    assert "WithFairSharing" not in (built[4][2] / "main.go").read_text()  # type: ignore[operator]
    assert "RateLimiter" in (built[2][2] / "main.go").read_text()  # type: ignore[operator]
    binary, _, module_dir = built[0]
    assert binary.package == "." and module_dir is not None
    assert "kubeConfig.QPS = 300\n" in (module_dir / "main.go").read_text()
    assert (module_dir / "go.sum").read_text() == (base / "go.sum").read_text()
    assert (module_dir / "go.mod").read_text().startswith(
        "module pykueue.dev/devcluster/minimalkueue-qps300-burst500\n")


# The lines the fair-sharing patch touches, in the form of minimalkueue's main.go.
WIRING = """package main

import (
\t"fmt"

\tconfigapi "sigs.k8s.io/kueue/apis/config/v1beta2"
)

func run() int {
\tkubeConfig.QPS = 50
\tkubeConfig.Burst = 100
\tcCache := schdcache.New(mgr.GetClient())
\tqueues := qcache.NewManager(mgr.GetClient(), cCache, requeuer, qcache.WithPreemptionExpectations(p))
\tif _, err := core.SetupControllers(mgr, queues, cCache, &configapi.Configuration{}, opts); err != nil {
\t\treturn 1
\t}
\tif *enableTAS {
\t\tif _, err := tas.SetupControllers(mgr, queues, cCache, &configapi.Configuration{}, nil); err != nil {
\t\t\treturn 1
\t\t}
\t}
\tsched := scheduler.New(
\t\tqueues,
\t\tcCache,
\t\tscheduler.WithPreemptionExpectations(preemptionExpectations),
\t)
\treturn 0
}
"""


def test_fair_sharing_is_wired_into_the_cache_the_controllers_and_the_scheduler() -> None:
    patched = kueue_minimal.patch_main(WIRING, 50, 100, fair_sharing=True)
    section = ("\tfairSharing := &configapi.FairSharing{PreemptionStrategies: []configapi.PreemptionStrategy{"
               "configapi.LessThanOrEqualToFinalShare, configapi.LessThanInitialShare}}\n")
    cache = "\tcCache := schdcache.New(mgr.GetClient(), schdcache.WithFairSharing(true))\n"
    assert section + cache in patched
    assert patched.count("&configapi.Configuration{FairSharing: fairSharing}") == 2
    assert "&configapi.Configuration{}" not in patched
    assert "\t\tscheduler.WithPreemptionExpectations(preemptionExpectations),\n" \
           "\t\tscheduler.WithFairSharing(fairSharing),\n\t)\n" in patched
    assert "qcache.WithPreemptionExpectations(p))\n" in patched  # the queue manager's option untouched
    assert "WithFairSharing" not in kueue_minimal.patch_main(WIRING, 50, 100)
    both = kueue_minimal.patch_main(WIRING, 300, 500, kueue_minimal.SHARED, fair_sharing=True)
    assert "kubeConfig.RateLimiter" in both and "scheduler.WithFairSharing(fairSharing)" in both


@pytest.mark.parametrize("source", [
    MAIN,
    WIRING.replace("\tcCache := schdcache.New(mgr.GetClient())\n", ""),
    WIRING.replace("\t\tscheduler.WithPreemptionExpectations(preemptionExpectations),\n", ""),
    WIRING.replace("&configapi.Configuration{}", "cfg"),
    WIRING.replace('\tconfigapi "sigs.k8s.io/kueue/apis/config/v1beta2"\n', ""),
])
def test_fair_sharing_refuses_a_main_go_of_another_shape(source: str) -> None:
    with pytest.raises(BuildError, match="turn fair sharing on in"):
        kueue_minimal.patch_main(source, 50, 100, fair_sharing=True)
