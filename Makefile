# Two commands for a fresh machine: `make run` and `make test`.
# Prefer Debian's python3.11 (libpython linked into the executable): a whole Inspector request
# took 3.6 ms in it against 4.8-5.3 ms in pyenv's shared-library build on the CI machine.
# Any Python 3.11 works.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3.11) python3.11)
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test bench chromium bubblewrap

PACKS := $(wildcard packs/*/pyproject.toml)

# The lesson packs under packs/ are distributions of their own, installed beside the product.
$(VENV)/.base: pyproject.toml $(PACKS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e . $(foreach p,$(PACKS),-e $(dir $(p)))
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PY) -m pip install -q -e '.[test]'
	touch $@

run: $(VENV)/.base
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ensureadmin
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) -m codefyui.serve --host $(HOST) --port $(PORT)

# The browser tests drive Debian's Chromium (never a downloaded one); CI runs as root.
chromium:
	test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# Script nodes run inside bubblewrap (apps/runs/sandbox.py); without it they refuse to run.
bubblewrap:
	test -x /usr/bin/bwrap || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap)

test: $(VENV)/.test chromium bubblewrap
	$(PY) -m pytest

bench: $(VENV)/.base
	for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
