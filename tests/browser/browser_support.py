"""What the browser tests share: Chromium from apt, server processes, JupyterLab actions, and a
lessonlib widget on a page (sliders, ipympl canvas, readout) moved with the keyboard and timed.

Selectors and flags were measured with JupyterLab 4.6, ipywidgets 8.1, ipympl 0.10, Voila 0.5
and Debian's Chromium 156; each is explained where it is used.
"""
import contextlib
import importlib.util
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("present", ROOT / "scripts" / "present.py")
_PRESENT = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_PRESENT)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
INSTALL_HINT = "sudo apt-get update && sudo apt-get install -y chromium"
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
REDRAW_LIMIT_MS = 1000.0  # key press to redrawn figure (the benchmark target is 100 ms)

SUMMARY = []  # printed by conftest.pytest_terminal_summary after the run, passed or failed


def summary(line):
    """Print ``line`` now (seen with -s, or on failure) and in the end-of-run summary."""
    SUMMARY.append(line)
    print(line)


# ---------------------------------------------------------------------------------- Chromium

def _chromium_runs():
    try:
        return subprocess.run([CHROMIUM, "--version"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def install_chromium():
    """Make /usr/bin/chromium run (apt-get, as root); None when it does, else why not."""
    if _chromium_runs():
        return None
    if shutil.which("apt-get") is None:
        return "apt-get is not available on this machine"
    if os.geteuid() != 0:
        return "installing it needs root"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        print(f"browser tests: {CHROMIUM} is missing; running {' '.join(cmd)}", file=sys.stderr)
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(cmd)}` ran for more than 15 minutes"
        if done.returncode != 0:
            return f"`{' '.join(cmd)}` failed: {done.stderr.strip()[-400:]}"
    return None if _chromium_runs() else f"apt-get installed chromium but {CHROMIUM} does not run"


# ----------------------------------------------------------------------------------- servers

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kernel_env(extra=None):
    """The environment a server runs in; its kernels inherit it."""
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # kernels keep their own backend (ipympl)
    env["TRITON_INTERPRET"] = "1"  # as for nbval: Triton runs without a GPU
    env.update(extra or {})
    return env


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _cpu_ticks_below(pid):
    """User and system CPU ticks of every process below ``pid`` (Linux /proc), or None while
    there is none."""
    parent, ticks = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        child = int(stat.parent.name)
        parent[child], ticks[child] = int(fields[1]), int(fields[11]) + int(fields[12])
    below, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p and c not in below]
        below.update(kids)
        todo += kids
    return sum(ticks[c] for c in below) if below else None


@contextlib.contextmanager
def jupyterlab(base, root, settings, name="JupyterLab", env=None):
    """A JupyterLab serving ``root`` on 127.0.0.1 with a fresh token and the lab settings in
    ``settings`` (``env`` adds variables, a JUPYTER_CONFIG_DIR say), its workspaces and runtime
    files under ``base``: yields (port, token, server) once it answers, stops it afterwards."""
    port, token = free_port(), secrets.token_hex(16)
    env = kernel_env({"JUPYTERLAB_SETTINGS_DIR": str(settings),
                      "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
                      "JUPYTER_RUNTIME_DIR": str(base / "runtime"), **(env or {})})
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
           "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.extension_manager=readonly",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    server = Server(name, cmd, env, base / "jupyterlab.log")
    try:
        server.wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/api/status?token={token}"),
                          60, "serving")
        yield port, token, server
    finally:
        server.stop()


class Server:
    """A server process this session starts: waited for, then stopped with SIGTERM (JupyterLab
    and Voila both shut their kernels down on it), SIGKILL to its process group if it hangs."""

    def __init__(self, name, cmd, env, log_path, cwd=ROOT):
        self.name, self.log_path = name, Path(log_path)
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def log(self):
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_until(self, ready, timeout_s, what):
        deadline = time.monotonic() + timeout_s
        while not ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}) before {what}; "
                                   f"its log:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not {what} after {timeout_s} s; its log:\n"
                                   f"{self.log()[-3000:]}")
            time.sleep(0.2)

    def wait_for_presenter(self, port, timeout_s=180, quiet_s=1.5):
        """scripts/present.py's Voila: serving on ``port`` with its first kernel started
        (``PREHEATED`` in the log), and that kernel done running the notebook: its CPU time
        unchanged for ``quiet_s``, as an instructor waits for the server before the class.
        Returns the seconds from the call to the kernel's last CPU tick."""
        t0 = time.monotonic()
        self.wait_until(lambda: port_open(port) and _PRESENT.PREHEATED in self.log(), timeout_s,
                        "serving with a kernel started")
        last, since = None, time.monotonic()

        def quiet():
            nonlocal last, since
            ticks = _cpu_ticks_below(self.proc.pid)
            if ticks != last:
                last, since = ticks, time.monotonic()
            return ticks is not None and time.monotonic() - since >= quiet_s
        self.wait_until(quiet, timeout_s, "done running the notebook in its kernel")
        return since - t0  # when the kernel last ran

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group started for this server
                self.proc.wait(timeout=10)
        self._log.close()


# -------------------------------------------------------------------------------- JupyterLab

ACTIVE_NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"
KERNEL_IDLE = re.compile(r"\| Idle$")  # the status bar: "Python 3 (ipykernel) | Idle"

# Run All has finished (or stopped at an error) when no code cell waits ("[*]:") and at least
# one has run: prompts were emptied by "Clear Outputs of All Cells" first.
_RUN_FINISHED = """(sel) => {
  const panel = document.querySelector(sel);
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
    .map(p => p.textContent.replace(/\\s/g, ''));
  return prompts.length > 0 && !prompts.some(t => t.includes('*'))
    && prompts.some(t => /\\d/.test(t));
}"""

_CELL_PROBLEMS = """(panel) => [...panel.querySelectorAll('.jp-Notebook-cell')].flatMap((cell, i) => {
  const found = [];
  const prompt = cell.querySelector('.jp-InputArea-prompt');
  const text = prompt ? prompt.textContent.replace(/\\s/g, '') : '';
  if (cell.classList.contains('jp-CodeCell') && !/\\d/.test(text))
    found.push(`cell ${i}: not run (prompt '${text}')`);
  for (const out of cell.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
    found.push(`cell ${i}: ${out.textContent.trim().slice(0, 600)}`);
  for (const w of cell.querySelectorAll('.jupyter-widgets-error-widget, .jupyter-widgets'))
    if (/^Error displaying widget/.test(w.textContent.trim()) || w.matches('.jupyter-widgets-error-widget'))
      found.push(`cell ${i}: ${w.textContent.trim().slice(0, 300)}`);
  return found;
})"""


def menu(page, top, item):
    page.locator(f".lm-MenuBar-itemLabel:text-is('{top}')").click()
    page.locator(f".lm-Menu-itemLabel:text-is('{item}')").click()


def wait_kernel_idle(page, timeout_ms=60_000):
    expect(page.locator(".jp-StatusBar-TextItem").filter(has_text=KERNEL_IDLE)).to_be_visible(
        timeout=timeout_ms)


def open_notebook(page, lab, name):
    """Open notebooks/<name>.ipynb (the session's copy) in a fresh workspace; wait for its kernel."""
    assert (lab.root / f"{name}.ipynb").is_file(), f"notebooks/{name}.ipynb does not exist"
    page.goto(lab.url(f"lab/tree/{name}.ipynb"))
    panel = page.locator(ACTIVE_NOTEBOOK)
    expect(panel).to_be_visible(timeout=60_000)
    expect(panel.locator(".jp-Notebook-cell").first).to_be_visible()
    wait_kernel_idle(page)
    return panel


def run_all(page, panel, timeout_ms=120_000):
    """Clear every output, Run All Cells, wait until nothing is queued and the kernel is idle."""
    menu(page, "Edit", "Clear Outputs of All Cells")
    expect(panel.locator(".jp-OutputArea-output")).to_have_count(0)
    menu(page, "Run", "Run All Cells")
    page.wait_for_function(_RUN_FINISHED, arg=ACTIVE_NOTEBOOK, timeout=timeout_ms)
    wait_kernel_idle(page)


def cell_problems(panel):
    """Cells not run, error or stderr outputs, widgets that failed to display: one line each."""
    return panel.evaluate(_CELL_PROBLEMS)


# ------------------------------------------------------------- a lessonlib widget on a page

CANVAS = ".jupyter-matplotlib-canvas-div canvas"  # the first of two is the figure
READOUT = ".widget-html-content"  # Explorer's readout (an HTML widget holding a <pre>)

# Before the key press: remember the figure's pixels and the readout; time stamps of the first
# keydown, of the first draw onto the canvas that changes its pixels (ipympl draws each new
# frame with drawImage) and of the readout's change.
_ARM = """(box) => {
  const canvas = box.querySelector('.jupyter-matplotlib-canvas-div canvas');
  const readout = box.querySelector('.widget-html-content');
  const ctx = canvas.getContext('2d');
  const pixels = () => new Uint32Array(ctx.getImageData(0, 0, canvas.width, canvas.height).data.buffer);
  const probe = {url: canvas.toDataURL(), before: pixels(), text: readout.textContent,
                 t0: null, figure_ms: null, readout_ms: null, draws: 0};
  window.__lessonProbe = probe;
  document.addEventListener('keydown', () => { probe.t0 = performance.now(); },
                            {capture: true, once: true});
  const draw = ctx.drawImage;
  ctx.drawImage = function (...args) {
    const result = draw.apply(this, args);
    if (probe.t0 !== null && probe.figure_ms === null) {
      const t = performance.now() - probe.t0;
      probe.draws += 1;
      const now = pixels();
      if (now.length !== probe.before.length || now.some((v, i) => v !== probe.before[i]))
        probe.figure_ms = t;
    }
    return result;
  };
  new MutationObserver((_, obs) => {
    if (probe.t0 !== null && readout.textContent !== probe.text) {
      probe.readout_ms = performance.now() - probe.t0;
      obs.disconnect();
    }
  }).observe(readout, {childList: true, subtree: true, characterData: true});
  return {width: canvas.width, height: canvas.height};
}"""

# Which of n vertical strips of the figure differ from the armed snapshot (e.g. mask | bars).
_STRIPS_CHANGED = """([box, n]) => {
  const canvas = box.querySelector('.jupyter-matplotlib-canvas-div canvas');
  const before = window.__lessonProbe.before;
  const now = new Uint32Array(canvas.getContext('2d')
    .getImageData(0, 0, canvas.width, canvas.height).data.buffer);
  const w = canvas.width, h = canvas.height, changed = new Array(n).fill(false);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      if (now[y * w + x] !== before[y * w + x]) changed[Math.min(n - 1, Math.floor(x * n / w))] = true;
  return changed;
}"""


@dataclass
class Move:
    """What one key press on a slider did."""

    value_before: float
    value_after: float
    readout_before: str
    readout_after: str
    figure_ms: float  # key press to the first draw that changed the figure's pixels
    readout_ms: float  # key press to the readout's new text
    url_before: str  # the canvas as toDataURL() before and after
    url_after: str
    strips: list  # per vertical strip of the figure (left to right): did its pixels change


# A canvas with a frame painted: sized, and some sampled pixel neither transparent nor white.
_DRAWN = """(c) => {
  if (!(c.width > 0 && c.height > 0)) return false;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  for (let i = 0; i < d.length; i += 4 * 61)
    if (d[i + 3] > 0 && (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)) return true;
  return false;
}"""


class Explorer:
    """A lessonlib widget (``lessonlib.widgets._base.Explorer``) on a page, found by one of its
    sliders: the sliders in a row, the ipympl figure, the readout under it."""

    def __init__(self, scope, slider=None, box=None):
        page = scope.page if hasattr(scope, "page") else scope
        self.page = page
        self.box = box if box is not None else (
            scope.locator(".widget-vbox").filter(has=self._slider(page, slider, page))
            .filter(has=page.locator(CANVAS)).last)
        expect(self.box).to_be_visible(timeout=30_000)
        self.canvas = self.box.locator(CANVAS).first
        self.readout_area = self.box.locator(READOUT).first

    @staticmethod
    def _slider(scope, description, page):
        return scope.locator(".widget-slider").filter(
            has=page.locator(f".widget-label:text-is('{description}')"))

    def slider(self, description):
        return self._slider(self.box, description, self.page)

    def value(self, description):
        """The slider's readout as shown: a number (``4.5``, ``10,000``) -> float; a label that
        is not a number (``4K``) -> the handle's position (``aria-valuenow``)."""
        text = self.slider(description).locator(".widget-readout").inner_text()
        try:
            return float(text.replace(",", "").strip())
        except ValueError:
            return self.position(description)

    def position(self, description):
        """The handle's position on its track (noUiSlider's aria-valuenow)."""
        return float(self.slider(description).locator(".noUi-handle").get_attribute(
            "aria-valuenow"))

    def sweep_key(self, description, key="ArrowRight"):
        """``key`` again, or the other arrow where the slider has reached that end: presses in a
        row visit new values (a press back and forth between two would find them cached)."""
        handle = self.slider(description).locator(".noUi-handle")
        now = float(handle.get_attribute("aria-valuenow"))
        if key == "ArrowRight" and now >= float(handle.get_attribute("aria-valuemax")):
            return "ArrowLeft"
        if key == "ArrowLeft" and now <= float(handle.get_attribute("aria-valuemin")):
            return "ArrowRight"
        return key

    def readout(self):
        return self.readout_area.inner_text()

    def sliders(self):
        """The descriptions of the box's sliders, in order, and whether each is enabled."""
        return self.box.evaluate("""(box) => [...box.querySelectorAll('.widget-slider')].map(s =>
            [s.querySelector('.widget-label').textContent.trim(),
             !s.classList.contains('mod-disabled') && !s.querySelector('[disabled]')])""")

    def wait_for_figure(self, timeout_ms=20_000):
        """Wait until ipympl has drawn the figure: its canvas has the figure's size and pixels
        that are not blank (a canvas is sized before its first frame is painted)."""
        try:
            self.page.wait_for_function(_DRAWN, arg=self.canvas.element_handle(),
                                        timeout=timeout_ms, polling=100)
        except PlaywrightTimeoutError:
            size = self.canvas.evaluate("(c) => `${c.width} x ${c.height}`")
            errors = getattr(self.page, "console_errors", [])
            raise AssertionError(
                f"the figure was never drawn: its canvas is {size} px after {timeout_ms} ms. "
                f"Console errors: {errors}") from None

    def press(self, description, key="ArrowRight", strips=1, timeout_ms=15_000):
        """Focus the slider's handle, press ``key``, wait for the redrawn figure and readout."""
        self.wait_for_figure()
        self.box.scroll_into_view_if_needed()
        handle = self.slider(description).locator(".noUi-handle")
        value_before = self.value(description)
        box = self.box.element_handle()
        self.box.evaluate(_ARM)
        readout_before = self.readout()
        handle.focus()
        handle.press(key)
        try:
            self.page.wait_for_function(
                "() => window.__lessonProbe.figure_ms !== null"
                " && window.__lessonProbe.readout_ms !== null", timeout=timeout_ms)
        except PlaywrightTimeoutError:
            pass  # the assertions below say what did not change
        probe = self.page.evaluate("() => { const p = window.__lessonProbe; return {url: p.url,"
                                   " figure_ms: p.figure_ms, readout_ms: p.readout_ms,"
                                   " draws: p.draws, pressed: p.t0 !== null}; }")
        assert probe["pressed"], f"no keydown reached the page for {key} on {description!r}"
        assert probe["figure_ms"] is not None, (
            f"{key} on {description!r}: the figure's pixels did not change within "
            f"{timeout_ms} ms ({probe['draws']} draws onto the canvas)")
        assert probe["readout_ms"] is not None, (
            f"{key} on {description!r}: the readout did not change within {timeout_ms} ms")
        changed = self.page.evaluate(_STRIPS_CHANGED, [box, strips])
        return Move(value_before, self.value(description), readout_before, self.readout(),
                    probe["figure_ms"], probe["readout_ms"], probe["url"],
                    self.canvas.evaluate("(c) => c.toDataURL()"), changed)
