# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test bench

$(VENV)/.base: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PY) -m pip install -q -e '.[test]'
	touch $@

run: $(VENV)/.base
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ensureadmin
	$(PY) manage.py collectstatic --noinput -v0
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) codefyui.asgi:application

test: $(VENV)/.test
	$(PY) -m pytest

bench: $(VENV)/.base
	$(PY) bench/capture_overhead.py
