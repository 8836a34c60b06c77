# Two commands a newcomer needs: `make lab` and `make test`. Both create or update .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JOBS ?= 2
NOTEBOOKS := $(wildcard notebooks/[0-9]*.ipynb)
# Jupyter refuses to run as root unless told; containers and CI machines often are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab test unit nbval browser bench bench-gpu tinylm clean-venv venv

venv: $(STAMP)

# Re-install whenever the pins or the package metadata change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $(STAMP)

# JupyterLab on notebooks/, bound to loopback, protected by Jupyter's token (it prints the URL).
lab: $(STAMP)
	@echo "Starting JupyterLab on 127.0.0.1; open the http://127.0.0.1:...?token=... URL printed below."
	$(PY) -m jupyterlab --no-browser --ip=127.0.0.1 --ServerApp.root_dir=notebooks \
	  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate $(ALLOW_ROOT)

test: unit nbval browser

# Unit tests: headless matplotlib, Triton in interpreter mode (no GPU here).
unit: $(STAMP)
	MPLBACKEND=Agg TRITON_INTERPRET=1 $(PY) -m pytest tests -n $(JOBS) --ignore=tests/browser -q

# Every notebook, strictly, against its committed outputs. MPLBACKEND is not exported to kernels.
nbval: $(STAMP)
ifeq ($(strip $(NOTEBOOKS)),)
	@echo "nbval: no notebooks in notebooks/ yet, nothing to compare"
else
	TRITON_INTERPRET=1 $(PY) -m pytest --nbval --nbval-current-env \
	  --nbval-sanitize-with nbval_sanitize.cfg -n $(JOBS) --dist loadfile -q $(NOTEBOOKS)
endif

# JupyterLab and the presenter in Debian's Chromium, headless (installed with apt if missing;
# skipped with the command to run where it cannot be, never under CI=true). -rs: say why.
browser: $(STAMP)
	@if [ -d tests/browser ]; then $(PY) -m pytest tests/browser -q -rs; \
	 else echo "browser: no browser tests yet"; fi

# One notebook as an app for a live demo (Voila): widgets only, large type, 127.0.0.1 and a
# token; prints the URL. make present NB=08_rope_scaling
present: $(STAMP)
	@test -n "$(NB)" || { echo "usage: make present NB=08_rope_scaling"; exit 2; }
	$(PY) scripts/present.py $(NB)

bench: $(STAMP)
	$(PY) benchmarks/attention_cpu.py
	$(PY) benchmarks/rope_tables.py

# Needs a CUDA GPU (H100/H200 class for the targets in benchmarks/RESULTS.md).
bench-gpu: $(STAMP)
	$(PY) benchmarks/flash_attention_gpu.py

# Notebook 10's model: retrain it (about 9 minutes on 2 cores, fixed seeds; rewrites
# lessonlib/data/tinylm*.pt and the log), then rerun the experiments into
# lessonlib/data/tinylm_results/ (about 4 minutes). After a retrain, refresh the logits snapshot
# (python tests/test_tinylm.py) and notebook 10's outputs (scripts/run_notebooks.py).
tinylm: $(STAMP)
	$(PY) scripts/train_tinylm.py
	$(PY) scripts/tinylm_experiments.py

clean-venv:
	rm -rf $(VENV)
