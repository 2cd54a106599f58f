# One entry point for developers and CI. `make test` is the README's test command and
# exactly what .ci/run executes: it installs everything it needs, lints, then runs the suite.
PY ?= python3

.PHONY: install lock lint test test-fast crds manifests devcluster-bin

# Runtime dependencies at the versions requirements.lock pins (the image installs exactly those,
# hash-checked), so the suite tests what ships; the test tools come unpinned.
PINS := $(or $(TMPDIR),/tmp)/pykueue-pins.txt

install:
	sed -n 's/^\([A-Za-z0-9_.-]*==[^ ;\\]*\).*/\1/p' requirements.lock > $(PINS)
	$(PY) -m pip install --quiet --disable-pip-version-check -c $(PINS) -e '.[test]'

# Re-pins requirements.lock (with hashes) from pyproject.toml's dependencies; needs pip-tools.
lock:
	$(PY) -m piptools compile --quiet --generate-hashes --strip-extras --allow-unsafe \
		--no-emit-index-url --no-emit-find-links -o requirements.lock pyproject.toml

# ruff and mypy --strict, then the import contract of pyproject.toml ([tool.importlinter]):
# an upward import or one process importing another fails the build.
lint:
	$(PY) -m ruff check .
	$(PY) -m mypy
	lint-imports --no-cache

# Regenerates manifests/crds/ from the API models, then the install bundle of all CRDs
# and the Helm chart's copies.
crds:
	$(PY) -m pykueue crds --out manifests/crds
	$(PY) -m tests.unit.deploy.crd_bundle --write
	$(PY) -m tests.unit.deploy.chart_crds --write

# Regenerates what the job kind registry decides in manifests/: the webhook configurations.
# (RBAC and the frameworks list are checked against the registry by unit tests.)
manifests:
	$(PY) -m pykueue.webhook.configurations > manifests/06-webhooks.yaml

# Builds (once, then reuses from ~/.cache/pykueue) the real Kubernetes binaries the e2e tests run.
devcluster-bin:
	$(PY) -m pykueue.devcluster build

test: install lint devcluster-bin
	$(PY) -m pytest -q -p no:cacheprovider

# The fast path: every test but the e2e ones, as the code stands (no install, no binaries,
# no cluster; tests/e2e is marked e2e by its conftest). Lint separately: `make lint test-fast`.
test-fast:
	$(PY) -m pytest -q -p no:cacheprovider -m "not e2e"
