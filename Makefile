# One entry point for developers and CI. `make test` is the README's test command and
# exactly what .ci/run executes: it installs everything it needs, lints, then runs the suite.
PY ?= python3

.PHONY: install lint test crds

install:
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'

lint:
	$(PY) -m ruff check .
	$(PY) -m mypy

crds:
	$(PY) -m pykueue crds --out manifests/crds

test: install lint
	$(PY) -m pytest -q -p no:cacheprovider
