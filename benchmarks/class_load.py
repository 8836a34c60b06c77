"""A class on one hub: N students log in, start their servers at once, Run All a notebook and
press its sliders at a student's pace; what it costs the machine (as root, loopback only).

    .venv/bin/python benchmarks/class_load.py [--students 1,5,10,20,30] [--notebooks 10,06,11]
        [--press-seconds 20] [--pace 0.5,2.0] [--seed 0] [--deadline-s 2700]
        [--browsers 2] [--overlap] [--out benchmarks/class_load_results.json]
    .venv/bin/python benchmarks/class_load.py --small     # N = 1, notebook 11: a smoke run
    .venv/bin/python benchmarks/class_load.py --dry-run   # no hub, no root: the plan, the cells
    .venv/bin/python benchmarks/class_load.py --cells-memory 10  # one local kernel, per cell

What it does, bounded in count (the sizes given) and in time (every wait has a limit; the whole
run stops starting new sizes past --deadline-s):

1. makes max(N) student accounts with deploy/hub/add-students.sh (known random passwords) and
   removes them at the end, whatever happened (tests/hub_support.py's ``students``);
2. starts the course's hub (deploy/hub/jupyterhub_config.py from .venv-hub, as make hub does) on
   free 127.0.0.1 ports with a temporary state folder;
3. for each N, smallest first: logs N students in through the hub's login form (PAM), starts
   their servers all at once ("thirty students press Run All at once") and opens JupyterLab's
   page (the OAuth round trip a browser makes); then for each notebook: every student opens it
   through the Jupyter server's REST API (POST /api/sessions: the kernel starts, as the student)
   and its websocket (/api/kernels/<id>/channels), and runs its code cells in order, each after
   the last one's reply (Run All); once all have, each presses sliders for --press-seconds at
   their own pace (a key press every 0.5-2 s, seeded): one ipywidgets comm message
   ``{"method": "update", "state": {"value": v}}`` (``index`` for a selection slider) to the
   slider's model, a step along the track as an arrow key makes, timed until the kernel's answer
   (the first frame, a comm message carrying the PNG, and the kernel's idle status). A small
   stand-in for ipympl's front end answers the canvas as the page does (refresh, image mode,
   initialized; a draw when asked), so the kernel sends frames as it does to a browser; like
   ipywidgets' page, it keeps one update in flight per student and sends the latest value when
   the kernel is idle again (a coalesced press). The browser's decode and paint are not measured
   there (benchmarks/RESULTS.md has them: 10-15 ms). With --overlap each student presses as
   soon as their own Run All is done, while classmates may still be in theirs, and each press
   notes how many are; the table splits those presses out;
3b. with --browsers K, K students of each class (never all: one simulated student at least) are
   real headless Chromiums at a laptop's size (class_load_browser.py): the hub's login page, the
   "server starting" page, the notebook opened by its URL, Run All from JupyterLab's menu, arrow
   keys on the first widget's sliders timed in the page from the keydown to the figure's new
   pixels. They run on the hub's machine, taking CPU a class's laptops would not;
4. meanwhile, every second, reads /proc: each kernel's and each server's resident memory (the
   processes run as the students; VmRSS and VmHWM, the kernel's peak; PSS, which shares each
   library page among the processes mapping it, every few seconds), the hub's and the proxy's,
   MemAvailable and the load average. A memory guard stops a size when MemAvailable falls under
   --min-available-gib (other people use this machine: the OOM killer is not a measurement).

Prints a table and writes JSON (--out) with the machine (cores, memory, CPU model), the command
and every figure; benchmarks/RESULTS.md and instructors/README.md record a run. Only the Python
standard library, requests and tornado (both in .venv) are used, and Playwright with Debian's
Chromium for --browsers (as the browser tests).
"""
import argparse
import asyncio
import concurrent.futures
import json
import math
import os
import platform
import random
import re
import secrets
import shlex
import signal
import statistics
import struct
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

NOTEBOOKS = ROOT / "notebooks"
SLIDER_MODELS = {"IntSliderModel", "FloatSliderModel", "FloatLogSliderModel",
                 "SelectionSliderModel"}
CANVAS_MODEL = "MPLCanvasModel"  # ipympl's canvas
KERNEL_FILE = re.compile(rb"kernel-([0-9a-f-]{36})\.json")
MIB, GIB = 2**20, 2**30


# ------------------------------------------------------------------ pure parts (unit-tested)


def parse_status(text):
    """/proc/<pid>/status: {"uid", "rss", "hwm"} (bytes; rss and hwm absent for a kernel
    thread or a zombie)."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "Uid":
            out["uid"] = int(value.split()[0])  # the real uid
        elif key in ("VmRSS", "VmHWM"):
            out["rss" if key == "VmRSS" else "hwm"] = int(value.split()[0]) * 1024
    return out


def parse_kb_fields(text):
    """/proc/meminfo or /proc/<pid>/smaps_rollup: {"Field": bytes} for every "Field: N kB"."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\w+):\s+(\d+) kB", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * 1024
    return out


def classify(cmdline):
    """What a student's process is, from /proc/<pid>/cmdline's bytes: ("kernel", kernel id),
    ("server", None) for jupyterhub-singleuser, or (None, None)."""
    m = KERNEL_FILE.search(cmdline)
    if m and b"ipykernel" in cmdline:
        return "kernel", m.group(1).decode()
    if b"jupyterhub-singleuser" in cmdline:
        return "server", None
    return None, None


def percentile(values, q):
    """The q-th percentile (0-100) with linear interpolation between ranks (numpy's default);
    None for no values."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(values):
    """{"n", "median", "p90", "max"} of the values (None where there are none)."""
    xs = [v for v in values if v is not None]
    return {"n": len(xs), "median": percentile(xs, 50), "p90": percentile(xs, 90),
            "max": max(xs) if xs else None}


def deserialize_ws(data):
    """A kernel websocket message as jupyter_server's default protocol sends it: a text frame is
    the JSON message; a binary frame is a 4-byte count, the parts' offsets, the JSON, then the
    buffers (jupyter_server's serialize_binary_message)."""
    if isinstance(data, str):
        msg = json.loads(data)
        msg.setdefault("buffers", [])
    else:
        n = struct.unpack("!I", data[:4])[0]
        offsets = list(struct.unpack("!" + "I" * n, data[4:4 * (n + 1)])) + [len(data)]
        parts = [data[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
        msg = json.loads(parts[0].decode())
        msg["buffers"] = parts[1:]
    msg.setdefault("msg_type", msg.get("header", {}).get("msg_type"))
    return msg


def step_slider(state, direction):
    """One arrow-key step of a slider from its widget state: (the state key sent, the new value,
    the direction taken). At the end of the track the step goes the other way; None when the
    slider cannot move (disabled, or a track of one value)."""
    if state.get("disabled"):
        return None
    model = state.get("_model_name")
    if model == "SelectionSliderModel":
        n, i = len(state.get("_options_labels", ())), state.get("index")
        if n < 2 or i is None:
            return None
        if not 0 <= i + direction < n:
            direction = -direction
        return "index", i + direction, direction
    lo, hi, step = state["min"], state["max"], state.get("step") or 1
    if model == "FloatLogSliderModel":  # min, max and step are exponents of base
        base = state.get("base", 10)
        e = math.log(state["value"], base)
        if not lo - 1e-9 <= e + direction * step <= hi + 1e-9:
            direction = -direction
        e = min(max(e + direction * step, lo), hi)
        return "value", base ** e, direction
    if hi <= lo:
        return None
    value = state["value"]
    if not lo <= value + direction * step <= hi:
        direction = -direction
    value = min(max(value + direction * step, lo), hi)
    if model == "IntSliderModel":
        value = int(value)
    else:
        value = round(value, 12)
    return "value", value, direction


def press_times(rng, seconds, pace):
    """When a student presses keys (seconds from the start): gaps drawn uniformly in pace."""
    times, t = [], rng.uniform(*pace)
    while t < seconds:
        times.append(t)
        t += rng.uniform(*pace)
    return times


def front_end_replies(msg):
    """What ipympl's page sends a canvas for one message from the kernel: a list of the
    ``content`` dicts of its custom messages (jupyter-matplotlib 0.12: a new canvas gets
    refresh, send_image_mode and initialized; a "draw" request a draw; a "resize" a refresh)."""
    if msg["msg_type"] == "comm_open":
        state = msg["content"].get("data", {}).get("state", {})
        if state.get("_model_name") == CANVAS_MODEL:
            return [{"type": "refresh"}, {"type": "send_image_mode"}, {"type": "initialized"}]
        return []
    if msg["msg_type"] != "comm_msg":
        return []
    data = msg["content"].get("data", {})
    if data.get("method") != "custom":
        return []
    inner = data.get("content", {}).get("data")
    try:
        kind = json.loads(inner).get("type") if isinstance(inner, str) else None
    except ValueError:
        return []
    return {"draw": [{"type": "draw"}], "resize": [{"type": "refresh"}]}.get(kind, [])


def is_frame(msg):
    """A message that carries a picture to the page: a comm message with a binary buffer (the
    canvas's PNG, or the fallback Image's value)."""
    return msg["msg_type"] == "comm_msg" and bool(msg.get("buffers"))


def machine(cpuinfo, meminfo, cores):
    """The machine a run was measured on."""
    models = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo, flags=re.M)
    return {"cores": cores, "cpu_model": models[0].strip() if models else platform.processor(),
            "memory_gib": round(parse_kb_fields(meminfo).get("MemTotal", 0) / GIB, 1),
            "kernel": platform.release(), "python": platform.python_version()}


def _mib(x):
    return None if x is None else x / MIB


def _fmt(x, digits=0):
    return "-" if x is None else f"{x:,.{digits}f}"


COLUMNS = ("notebook", "N", "Run All s median / max", "kernel peak MiB median / max",
           "kernel steady RSS / PSS MiB", "server MiB", "GiB per student", "hub / proxy MiB",
           "presses", "press ms p50 / p90 (while others Run All)", "browser ms p50 / p90",
           "broke")


def table_rows(runs):
    """One row of strings per (notebook, N) run, in COLUMNS' order."""
    rows = []
    for r in runs:
        ra, peak = r["run_all_s"], r["kernel_hwm_mib"]
        lat = r["latency_ms"]
        during = r.get("latency_during_run_all_ms") or summary([])  # (runs before --overlap)
        seen = r.get("browser_ms") or summary([])
        rows.append([
            r["notebook"], str(r["students"]),
            f"{_fmt(ra['median'], 1)} / {_fmt(ra['max'], 1)}",
            f"{_fmt(peak['median'])} / {_fmt(peak['max'])}",
            f"{_fmt(r['kernel_rss_mib']['median'])} / {_fmt(r['kernel_pss_mib']['median'])}",
            _fmt(r["server_rss_mib"]["median"]),
            _fmt(r["gib_per_student"], 2),
            f"{_fmt(r['hub_rss_mib'])} / {_fmt(r['proxy_rss_mib'])}",
            f"{lat['n']}" + (f" ({r['coalesced']} coalesced)" if r.get("coalesced") else ""),
            f"{_fmt(lat['median'])} / {_fmt(lat['p90'])}" + (
                f" ({_fmt(during['median'])} / {_fmt(during['p90'])})" if during["n"] else ""),
            f"{_fmt(seen['median'])} / {_fmt(seen['p90'])} ({r['browsers']} browsers, "
            f"{seen['n']} presses)" if seen["n"] else "-",
            "; ".join(r["broke"]) or "-"])
    return rows


def table(runs):
    """The runs as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(runs)]
    return "\n".join(lines)


def sizing(runs, cores, target_p90_ms=200.0):
    """Per notebook, what an instructor sizes a hub by: the largest N whose Run All all finished
    without a timeout, whose key presses all got an answer and whose p90 stayed under the
    target ("served"), students per core from it, and the memory per student (the rise of the
    machine's used memory per student at the largest N run, and the per-student peak: the
    kernel's peak RSS plus its server's)."""
    out = {}
    for nb in sorted({r["notebook"] for r in runs}):
        mine = sorted((r for r in runs if r["notebook"] == nb), key=lambda r: r["students"])
        ok = [r for r in mine if not r["broke"] and r["latency_ms"]["p90"] is not None
              and r["latency_ms"]["p90"] <= target_p90_ms]
        served = max((r["students"] for r in ok), default=0)
        largest = mine[-1]
        tested_all = served == largest["students"]
        peak = [r["kernel_hwm_mib"]["max"] for r in mine if r["kernel_hwm_mib"]["max"]]
        server = [r["server_rss_mib"]["max"] for r in mine if r["server_rss_mib"]["max"]]
        per_user_peak = (max(peak) + max(server)) / 1024 if peak and server else None
        out[nb] = {
            "served_students": served, "largest_tested": largest["students"],
            "served_is_lower_bound": tested_all,
            "students_per_core": served / cores if served else 0,
            "gib_per_student_measured": largest["gib_per_student"],
            "gib_per_student_peak": per_user_peak,
            "run_all_s_median_at_served": next((r["run_all_s"]["median"] for r in ok
                                                if r["students"] == served), None),
            "p90_ms_at_served": next((r["latency_ms"]["p90"] for r in ok
                                      if r["students"] == served), None),
        }
    return out


# ------------------------------------------------------------------ /proc, sampled


def _read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


class Sampler(threading.Thread):
    """Every ``every_s``: each process of the students' uids (kernels by id, servers), the hub's
    and the proxy's resident memory, MemAvailable and the load average. Phases are marked by
    name; each sample is kept with the phase it fell in."""

    def __init__(self, uids, hub_pid, proxy_pid, every_s=1.0, pss_every=3, min_available=0):
        super().__init__(daemon=True)
        self.uids, self.hub_pid, self.proxy_pid = set(uids), hub_pid, proxy_pid
        self.every_s, self.pss_every, self.min_available = every_s, pss_every, min_available
        self.phase, self.samples, self.stop_event = None, [], threading.Event()
        self.guard_tripped = None  # MemAvailable (bytes) when it fell under min_available

    def one(self, with_pss):
        mem = parse_kb_fields(_read("/proc/meminfo") or "")
        procs = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            status = _read(f"/proc/{entry.name}/status")
            if status is None:
                continue
            st = parse_status(status)
            if st.get("uid") not in self.uids or "rss" not in st:
                continue
            kind, kid = classify(_read(f"/proc/{entry.name}/cmdline", "rb") or b"")
            if kind is None:
                continue
            p = {"kind": kind, "kernel": kid, "uid": st["uid"], "rss": st["rss"],
                 "hwm": st["hwm"]}
            if with_pss and kind == "kernel":
                p["pss"] = parse_kb_fields(_read(f"/proc/{entry.name}/smaps_rollup") or "") \
                    .get("Pss")
            procs[int(entry.name)] = p
        own = {}
        for name, pid in (("hub", self.hub_pid), ("proxy", self.proxy_pid)):
            st = parse_status(_read(f"/proc/{pid}/status") or "") if pid else {}
            own[name] = st.get("rss")
        load = (_read("/proc/loadavg") or "0 0 0").split()[:3]
        return {"t": time.time(), "phase": self.phase, "available": mem.get("MemAvailable"),
                "procs": procs, "hub": own["hub"], "proxy": own["proxy"],
                "load1": float(load[0])}

    def run(self):
        i = 0
        while not self.stop_event.is_set():
            s = self.one(with_pss=i % self.pss_every == 0)
            self.samples.append(s)
            if self.min_available and s["available"] and s["available"] < self.min_available \
                    and self.guard_tripped is None:
                self.guard_tripped = s["available"]
            i += 1
            self.stop_event.wait(self.every_s)

    def of(self, phase):
        return [s for s in self.samples if s["phase"] == phase]


# ------------------------------------------------------------------ one student, async


class Student:
    """One student's browser, reduced to what this test sends: the hub session (requests), one
    kernel websocket (tornado) at a time, the sliders and canvases its notebook opened."""

    def __init__(self, name, password, url, index, seed):
        import requests
        self.name, self.password, self.url, self.index = name, password, url, index
        self.session = requests.Session()
        self.rng = random.Random(seed * 1_000_003 + index)
        self.uid = None
        self.browser = None  # a BrowserStudent (class_load_browser.py) drives this one's page
        self.reset()

    def reset(self):
        self.ws = self.kernel_id = self.session_id = None
        self.replies, self.idle = {}, {}  # msg_id -> future (execute/kernel_info reply, idle)
        self.sliders, self.canvases = {}, set()  # comm id -> widget state
        self.current = None  # the press whose answer is awaited
        self.presses, self.coalesced, self.errors = [], 0, []
        self.cell_errors = []
        self.outputs = {}  # msg_id -> the stream text an execute_request printed
        self.statuses = []  # every "restarting" / "dead" the server said, in order
        self.class_running = None  # {"n": classmates still in Run All}, read at each press
        self.browser_presses = []
        self.reader = None
        self.client_session = uuid.uuid4().hex

    # ---- the hub (blocking: run in threads)
    def login_and_spawn(self, spawn_timeout_s):
        from hub_support import login, spawn_and_wait
        t0 = time.perf_counter()
        r = login(self.session, self.url, self.name, self.password)
        if r.status_code != 302:
            raise RuntimeError(f"login answered {r.status_code}")
        t1 = time.perf_counter()
        spawn_and_wait(self.session, self.url, self.name, timeout_s=spawn_timeout_s, every_s=1.0)
        t2 = time.perf_counter()
        lab = self.session.get(f"{self.url}/user/{self.name}/lab", timeout=120)
        if lab.status_code != 200:
            raise RuntimeError(f"/user/{self.name}/lab answered {lab.status_code}")
        return {"login_s": t1 - t0, "spawn_s": t2 - t1, "lab_s": time.perf_counter() - t2}

    def login_to_running_server(self):
        """The hub's login and the server's cookie (a browser started the server): what closing
        the notebook's session and stopping the server need."""
        from hub_support import login
        r = login(self.session, self.url, self.name, self.password)
        if r.status_code != 302:
            raise RuntimeError(f"login answered {r.status_code}")
        lab = self.session.get(f"{self.url}/user/{self.name}/lab", timeout=120)
        if lab.status_code != 200:
            raise RuntimeError(f"/user/{self.name}/lab answered {lab.status_code}")

    def find_session(self, notebook):
        """The session (and kernel) a browser opened for my-notebooks/<notebook>."""
        from hub_support import xsrf
        r = self.session.get(f"{self.url}/user/{self.name}/api/sessions", timeout=60,
                             headers=xsrf(self.session, f"/user/{self.name}/"))
        for sess in r.json():
            if sess["path"].endswith(notebook):
                self.session_id, self.kernel_id = sess["id"], sess["kernel"]["id"]

    def stop_server(self):
        from hub_support import xsrf
        r = self.session.delete(f"{self.url}/hub/api/users/{self.name}/server",
                                headers=xsrf(self.session, "/hub/"), timeout=120)
        return r.status_code

    def _start_session(self, notebook):
        from hub_support import xsrf
        r = self.session.post(
            f"{self.url}/user/{self.name}/api/sessions", timeout=120,
            headers=xsrf(self.session, f"/user/{self.name}/"),
            json={"path": f"my-notebooks/{notebook}", "name": notebook, "type": "notebook",
                  "kernel": {"name": "python3"}})
        if r.status_code != 201:
            raise RuntimeError(f"POST /api/sessions answered {r.status_code}: {r.text[:200]}")
        return r.json()

    def _end_session(self):
        from hub_support import xsrf
        if self.session_id:
            self.session.delete(f"{self.url}/user/{self.name}/api/sessions/{self.session_id}",
                                headers=xsrf(self.session, f"/user/{self.name}/"), timeout=120)

    # ---- the kernel (async)
    def _msg(self, msg_type, content, channel="shell"):
        return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type,
                           "username": self.name, "session": self.client_session,
                           "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "channel": channel, "content": content,
                "buffers": []}

    async def _send(self, msg):
        wire = dict(msg)
        wire.pop("buffers", None)
        await self.ws.write_message(json.dumps(wire))
        return msg["header"]["msg_id"]

    async def _request(self, msg, timeout_s):
        """Send a shell request; its reply and the idle status after it, within timeout_s."""
        loop = asyncio.get_running_loop()
        mid = msg["header"]["msg_id"]
        self.replies[mid], self.idle[mid] = loop.create_future(), loop.create_future()
        await self._send(msg)
        reply = await asyncio.wait_for(self.replies[mid], timeout_s)
        await asyncio.wait_for(self.idle[mid], timeout_s)
        return reply

    async def open(self, notebook, timeout_s):
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect
        from hub_support import server_cookies, xsrf
        sess = await asyncio.to_thread(self._start_session, notebook)
        self.session_id, self.kernel_id = sess["id"], sess["kernel"]["id"]
        base = f"{self.url}/user/{self.name}".replace("http", "ws", 1)
        request = HTTPRequest(
            f"{base}/api/kernels/{self.kernel_id}/channels?session_id={self.client_session}",
            headers={"Cookie": server_cookies(self.session, self.name),
                     **xsrf(self.session, f"/user/{self.name}/")},
            connect_timeout=timeout_s, request_timeout=timeout_s)
        self.ws = await websocket_connect(request, max_message_size=256 * MIB)
        self.reader = asyncio.ensure_future(self._read())
        # the kernel answers once it is up (the page asks the same)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                await self._request(self._msg("kernel_info_request", {}), 10)
                return
            except asyncio.TimeoutError:
                if time.monotonic() > deadline:
                    raise

    async def _read(self):
        while True:
            data = await self.ws.read_message()
            if data is None:
                return
            try:
                self._handle(deserialize_ws(data))
            except Exception as e:  # noqa: BLE001 - keep reading; say what went wrong
                self.errors.append(f"reading a message: {type(e).__name__}: {e}")

    def _handle(self, msg):
        now, kind = time.perf_counter(), msg["msg_type"]
        parent = msg.get("parent_header", {}).get("msg_id")
        if kind.endswith("_reply") and parent in self.replies:
            if not self.replies[parent].done():
                self.replies[parent].set_result(msg)
        elif kind == "stream" and parent in self.outputs:
            self.outputs[parent].append(msg["content"]["text"])
        elif kind == "status" and msg["content"].get("execution_state") in ("restarting", "dead"):
            # the server saw the kernel die (killed, out of memory) and says so to the page,
            # which shows "Kernel Restarting: the kernel ... appears to have died"
            state = msg["content"]["execution_state"]
            self.errors.append(f"kernel {state}")
            self.statuses.append(state)
            for fut in [*self.replies.values(), *self.idle.values()]:
                if not fut.done():
                    fut.set_exception(RuntimeError(f"the kernel died ({state})"))
                    if fut in self.idle.values():
                        fut.exception()  # the reply raises it; its idle never comes
        elif kind == "status" and msg["content"].get("execution_state") == "idle":
            if parent in self.idle and not self.idle[parent].done():
                self.idle[parent].set_result(now)
            if self.current and parent == self.current["msg_id"]:
                self.current["idle"] = now
                self._next_after_idle()
        elif kind == "comm_open":
            data = msg["content"].get("data", {})
            state = data.get("state", {})
            if state.get("_model_name") in SLIDER_MODELS:
                self.sliders[msg["content"]["comm_id"]] = dict(state)
            elif state.get("_model_name") == CANVAS_MODEL:
                self.canvases.add(msg["content"]["comm_id"])
        elif kind == "comm_msg":
            data = msg["content"].get("data", {})
            cid = msg["content"].get("comm_id")
            if data.get("method") in ("update", "echo_update") and cid in self.sliders:
                self.sliders[cid].update(data.get("state", {}))
            if is_frame(msg) and self.current and "frame" not in self.current:
                self.current["frame"] = now
                self.current["frame_bytes"] = sum(len(b) for b in msg["buffers"])
                # ipympl's canvas (a custom message) or the fallback Image's value (an update)
                self.current["frame_kind"] = "canvas" if data.get("method") == "custom" \
                    else "image"
        elif kind == "comm_close":
            self.sliders.pop(msg["content"].get("comm_id"), None)
        elif kind == "error":
            self.cell_errors.append(msg["content"].get("ename"))
        for content in front_end_replies(msg):
            cid = msg["content"].get("comm_id")
            asyncio.ensure_future(self._send_quietly(self._msg(
                "comm_msg", {"comm_id": cid, "data": {"method": "custom", "content": content}})))

    async def _send_quietly(self, msg):
        try:
            await self._send(msg)
        except Exception as e:  # noqa: BLE001 - the socket closed meanwhile
            self.errors.append(f"sending to the canvas: {type(e).__name__}")

    async def execute(self, code, timeout_s):
        """Run code in the kernel as a cell: (its reply's content, what it printed). Raises
        RuntimeError if the kernel dies meanwhile (the server says "restarting")."""
        msg = self._msg("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        self.outputs[msg["header"]["msg_id"]] = []
        reply = await self._request(msg, timeout_s)
        return reply["content"], "".join(self.outputs.pop(msg["header"]["msg_id"]))

    async def run_all(self, cells, timeout_s):
        for code in cells:
            reply = await self._request(self._msg("execute_request", {
                "code": code, "silent": False, "store_history": True, "user_expressions": {},
                "allow_stdin": False, "stop_on_error": False}), timeout_s)
            if reply["content"].get("status") != "ok":
                self.cell_errors.append(reply["content"].get("ename", "error"))

    # ---- key presses
    def _pick(self):
        """The slider and direction of the next press: a student keeps to one slider and
        direction for a while, then changes."""
        movable = [c for c, s in self.sliders.items() if step_slider(s, 1) is not None]
        if not movable:
            return None
        if getattr(self, "_target", None) not in movable or self.rng.random() < 0.2:
            self._target, self._direction = self.rng.choice(movable), self.rng.choice((-1, 1))
        return self._target

    async def press(self, t_key):
        cid = self._pick()
        if cid is None:
            self.errors.append("no slider to press")
            return
        key, value, self._direction = step_slider(self.sliders[cid], self._direction)
        self.sliders[cid][key] = value  # the page moves the slider at once
        if self.current and "idle" not in self.current:  # one update in flight (ipywidgets)
            self.current["pending"] = (cid, key, value, t_key)
            self.coalesced += 1
            return
        await self._send_press(cid, key, value, t_key)

    async def _send_press(self, cid, key, value, t_key):
        msg = self._msg("comm_msg", {"comm_id": cid, "data": {
            "method": "update", "state": {key: value}, "buffer_paths": []}})
        self.current = {"msg_id": msg["header"]["msg_id"], "key": t_key,
                        "sent": time.perf_counter(), "slider": self.sliders[cid].get(
                            "description", cid),
                        "others_running": self.class_running["n"] if self.class_running else 0}
        self.presses.append(self.current)
        await self._send(msg)

    def _next_after_idle(self):
        pending = self.current.pop("pending", None)
        if pending:
            asyncio.ensure_future(self._send_press(*pending))  # the page's buffered update

    async def press_for(self, seconds, pace, answer_timeout_s):
        start = time.perf_counter()
        for t in press_times(self.rng, seconds, pace):
            await asyncio.sleep(max(0.0, start + t - time.perf_counter()))
            await self.press(time.perf_counter())
        deadline = time.perf_counter() + answer_timeout_s  # the last answers
        while self.current and ("idle" not in self.current or "pending" in self.current) \
                and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        if self.current and "frame" not in self.current and "idle" in self.current:
            await asyncio.sleep(0.5)  # a frame after idle: the page's draw round trip

    def latencies_ms(self):
        """Per press: key to first frame (else to idle), key to idle; None where none came."""
        out = []
        for p in self.presses:
            end = p.get("frame", p.get("idle"))
            out.append({"answer": None if end is None else 1e3 * (end - p["key"]),
                        "idle": None if "idle" not in p else 1e3 * (p["idle"] - p["key"]),
                        "frame": p.get("frame_kind"), "frame_kb": p.get("frame_bytes", 0) / 1e3,
                        "slider": p["slider"], "others_running": p["others_running"]})
        return out

    async def close(self):
        if self.browser:
            try:
                await self.browser.run(self.browser.leave)
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"leaving the page: {type(e).__name__}: {e}")
        if self.reader:
            self.reader.cancel()
        if self.ws:
            self.ws.close()
        try:
            await asyncio.to_thread(self._end_session)
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"closing the session: {type(e).__name__}: {e}")


# ------------------------------------------------------------------ the run


def code_cells(path):
    """A notebook's code cells' sources, in order."""
    nb = json.loads(Path(path).read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def notebook_path(spec):
    """'10' or '10_real_model_long_context' -> notebooks/10_real_model_long_context.ipynb."""
    found = sorted(NOTEBOOKS.glob(f"{spec}*.ipynb"))
    if not found:
        raise SystemExit(f"no notebook notebooks/{spec}*.ipynb")
    return found[0]


def cells_memory(nb_path, timeout_s=600):
    """One local kernel (jupyter_client, this user, no hub) runs the notebook's code cells in
    order; after each, the kernel's VmRSS and VmHWM: what each cell adds to a kernel's memory.
    A list of (cell index, status, seconds, rss MiB, hwm MiB, first line)."""
    from jupyter_client.manager import start_new_kernel
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(nb_path.parent))
    pid = km.provisioner.process.pid
    rows = []

    def mem():
        st = parse_status(_read(f"/proc/{pid}/status") or "")
        return _mib(st.get("rss")), _mib(st.get("hwm"))
    try:
        rows.append((None, "started", 0.0, *mem(), "(the kernel, before any cell)"))
        for i, code in enumerate(code_cells(nb_path)):
            t0 = time.perf_counter()
            reply = kc.execute_interactive(code, timeout=timeout_s, output_hook=lambda m: None)
            rows.append((i, reply["content"]["status"], time.perf_counter() - t0, *mem(),
                         code.splitlines()[0][:60] if code.strip() else ""))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return rows


def _uid(name):
    import pwd
    return pwd.getpwnam(name).pw_uid


async def _gather_timed(coros, timeout_s, stop=None):
    """Run the coroutines together, at most timeout_s, and until stop() (checked every half
    second) says to stop: each one's result or exception (asyncio.TimeoutError for those
    still running then)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    deadline = time.monotonic() + timeout_s
    pending = set(tasks)
    while pending and time.monotonic() < deadline and not (stop and stop()):
        _, pending = await asyncio.wait(pending, timeout=min(0.5, deadline - time.monotonic()))
    stopped = bool(pending) and stop is not None and stop()
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.wait(pending, timeout=5)
    out = []
    for t in tasks:
        if t in pending:
            out.append(asyncio.TimeoutError("stopped by the memory guard" if stopped else
                                            f"not within {timeout_s:g} s"))
        elif t.exception() is not None:
            out.append(t.exception())
        else:
            out.append(t.result())
    return out


def kill_kernels(sampler):
    """SIGKILL every kernel of the students' (the memory guard's way out): how many."""
    n = 0
    for pid, p in sampler.one(False)["procs"].items():
        if p["kind"] == "kernel":
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except ProcessLookupError:
                pass
    return n


def _err(e):
    return f"{type(e).__name__}: {e}"[:300]


async def run_notebook(students, nb_path, args, sampler, spawn=False):
    """Every student opens the notebook and runs all of it at once, then all press sliders.
    With spawn, each student first logs in and starts their server (all at once), and runs
    the notebook as soon as their own server is up, as a class does at the start."""
    cells, name = code_cells(nb_path), nb_path.name
    broke = []
    for s in students:
        s.reset()
    sampler.guard_tripped = None  # the guard watches each notebook's run on its own
    base = sampler.samples[-1]["available"] if sampler.samples else None
    sampler.phase = f"{len(students)}:{name}:run"

    running = {"n": len(students)}  # students still in their Run All

    async def press(s):
        if s.browser:
            s.browser_presses = await s.browser.run(s.browser.press_for, args.press_seconds,
                                                    args.pace, running)
        else:
            await s.press_for(args.press_seconds, args.pace, args.answer_timeout_s)

    async def run_one(s):
        s.class_running = running
        try:
            if spawn and s.browser:  # the browser logs in and waits for its server
                try:
                    t0 = time.perf_counter()
                    took = await s.browser.run(s.browser.login, args.spawn_timeout_s)
                    await asyncio.to_thread(s.login_to_running_server)
                    s.spawn = {"login_s": None, "spawn_s": took["login_and_lab_s"],
                               "lab_s": time.perf_counter() - t0 - took["login_and_lab_s"]}
                except Exception as e:
                    s.spawn = e
                    raise
            elif spawn:
                try:
                    s.spawn = await asyncio.to_thread(s.login_and_spawn, args.spawn_timeout_s)
                except Exception as e:
                    s.spawn = e
                    raise
            if s.browser:
                r = await s.browser.run(s.browser.open_and_run, name, args.run_all_timeout_s)
                await asyncio.to_thread(s.find_session, name)
                s.cell_errors.extend(r["problems"])
                done = {"kernel_s": r["kernel_s"], "run_all_s": r["run_all_s"]}
            else:
                t0 = time.perf_counter()
                await s.open(name, args.kernel_timeout_s)
                t1 = time.perf_counter()
                await s.run_all(cells, args.cell_timeout_s)
                done = {"kernel_s": t1 - t0, "run_all_s": time.perf_counter() - t0}
        finally:
            running["n"] -= 1
        if args.overlap:  # presses at once, while classmates may still be in their Run All
            await press(s)
        return done

    def guard():
        return sampler.guard_tripped is not None
    results = await _gather_timed([run_one(s) for s in students],
                                  args.run_all_timeout_s + (args.spawn_timeout_s if spawn else 0)
                                  + (args.press_seconds + args.answer_timeout_s + 30
                                     if args.overlap else 0), guard)
    ok = [r for r in results if isinstance(r, dict)]
    failed = [(s.name, r) for s, r in zip(students, results) if not isinstance(r, dict)]
    if failed:
        kinds = sorted({_err(r) for _, r in failed})
        broke.append(f"Run All failed for {len(failed)} of {len(students)}: {kinds[0]}")
    if sampler.guard_tripped:
        killed = kill_kernels(sampler)  # at once: the machine is short of memory
        broke.append(f"memory guard: MemAvailable fell to {sampler.guard_tripped / GIB:.1f} GiB "
                     f"with {len(ok)} of {len(students)} Run Alls done (kernels killed: "
                     f"{killed})")
    press_ok = [s for s, r in zip(students, results) if isinstance(r, dict)]
    sampler.phase = f"{len(students)}:{name}:press"
    if press_ok and not sampler.guard_tripped and not args.overlap:
        presses = await _gather_timed(
            [press(s) for s in press_ok], args.press_seconds + args.answer_timeout_s + 30, guard)
        bad = [r for r in presses if isinstance(r, BaseException)]
        if bad:
            broke.append(f"pressing failed for {len(bad)}: {_err(bad[0])}")
    sampler.phase = f"{len(students)}:{name}:end"
    await asyncio.sleep(args.sample_every_s * 1.5)  # one more sample with the kernels up
    final = sampler.samples[-1]
    lat = [x for s in press_ok if not s.browser for x in s.latencies_ms()]
    seen = [x for s in press_ok if s.browser for x in s.browser_presses]
    no_answer = sum(1 for x in lat if x["answer"] is None)
    if no_answer:
        broke.append(f"{no_answer} key presses got no answer within {args.answer_timeout_s} s")
    unseen = sum(1 for x in seen if x["figure_ms"] is None)
    if unseen:
        broke.append(f"{unseen} key presses in a browser showed no new frame within 15 s")
    errors = sorted({e for s in students for e in s.errors})
    cell_errors = {}
    for s in students:
        for e in s.cell_errors:
            cell_errors[e] = cell_errors.get(e, 0) + 1
    # memory: kernel processes of this run, by kernel id
    kernel_ids = {s.kernel_id for s in students if s.kernel_id}
    runs = sampler.of(f"{len(students)}:{name}:run")
    press = sampler.of(f"{len(students)}:{name}:press") or runs
    everything = runs + press + sampler.of(f"{len(students)}:{name}:end")

    def per_kernel(samples, field):
        got = {}
        for smp in samples:
            for p in smp["procs"].values():
                if p["kind"] == "kernel" and p["kernel"] in kernel_ids and p.get(field):
                    got.setdefault(p["kernel"], []).append(p[field])
        return got
    hwm = {k: max(v) for k, v in per_kernel(everything, "hwm").items()}
    rss = {k: statistics.median(v) for k, v in per_kernel(press, "rss").items()}
    pss = {k: statistics.median(v) for k, v in per_kernel(press, "pss").items()}
    servers = [p["rss"] for smp in everything for p in smp["procs"].values()
               if p["kind"] == "server"]
    lowest = min((smp["available"] for smp in everything if smp["available"]), default=None)
    used = (args.baseline_available - lowest) if lowest and args.baseline_available else None
    dead = [s.name for s in students if s.kernel_id and not any(
        p["kernel"] == s.kernel_id for p in final["procs"].values())]
    if dead and not failed:
        broke.append(f"{len(dead)} kernels gone before the end (killed? out of memory?)")
    for s in students:
        await s.close()
    return {
        "notebook": nb_path.stem, "students": len(students), "cells": len(cells),
        "kernel_start_s": summary(r["kernel_s"] for r in ok),
        "run_all_s": summary(r["run_all_s"] for r in ok), "run_all_finished": len(ok),
        "cell_errors": cell_errors, "errors": errors[:10],
        "kernel_hwm_mib": summary(_mib(v) for v in hwm.values()),
        "kernel_rss_mib": summary(_mib(v) for v in rss.values()),
        "kernel_pss_mib": summary(_mib(v) for v in pss.values()),
        "server_rss_mib": summary(_mib(v) for v in servers),
        "hub_rss_mib": _mib(max((smp["hub"] or 0 for smp in everything), default=None)),
        "proxy_rss_mib": _mib(max((smp["proxy"] or 0 for smp in everything), default=None)),
        "available_before_gib": None if base is None else base / GIB,
        "available_lowest_gib": None if lowest is None else lowest / GIB,
        "gib_per_student": None if used is None else used / GIB / len(students),
        "load1_max": max((smp["load1"] for smp in everything), default=None),
        "latency_ms": summary(x["answer"] for x in lat),
        # presses while classmates were still in their Run All (--overlap), and after
        "latency_during_run_all_ms": summary(x["answer"] for x in lat if x["others_running"]),
        "latency_after_run_all_ms": summary(x["answer"] for x in lat
                                            if not x["others_running"]),
        # real browsers (--browsers): key down to the figure's new pixels, in the page
        "browsers": sum(1 for s in students if s.browser),
        "browser_ms": summary(x["figure_ms"] for x in seen),
        "browser_ms_during_run_all": summary(x["figure_ms"] for x in seen
                                             if x["others_running"]),
        "browser_presses_without_frame": sum(1 for x in seen if x["figure_ms"] is None),
        "idle_ms": summary(x["idle"] for x in lat),
        "presses_with_frame": {kind: sum(1 for x in lat if x["frame"] == kind)
                               for kind in ("canvas", "image")},
        "frame_kb": summary(x["frame_kb"] for x in lat if x["frame"]),
        "coalesced": sum(s.coalesced for s in press_ok),
        "sliders": sorted({x["slider"] for x in lat}),
        "broke": broke,
    }


async def run_size(n, names, passwords, url, nb_paths, args, sampler, seed):
    """One class size: login and spawn all at once, each notebook in turn, servers stopped."""
    students = [Student(nm, passwords[nm], url, i, seed) for i, nm in enumerate(names[:n])]
    args.baseline_available = sampler.samples[-1]["available"] if sampler.samples else None
    browsers = []
    if args.browsers:  # the first few students are real browsers (class_load_browser.py)
        from class_load_browser import BrowserStudent
        for s in students[:min(args.browsers, n - 1)]:  # one simulated student at least
            s.browser = BrowserStudent(s.name, s.password, url,
                                       Path(args.tmp) / f"chromium-{n}-{s.index}",
                                       random.Random(seed * 1_000_003 + s.index))
            browsers.append(s.browser)
        for b in browsers:
            await asyncio.wrap_future(b.ready)
    try:
        return await _run_size(n, students, nb_paths, args, sampler)
    finally:
        for b in browsers:
            await asyncio.to_thread(b.close)


async def _run_size(n, students, nb_paths, args, sampler):
    for s in students:
        s.spawn = None
    size = {"students": n, "broke": []}
    runs, up = [], students
    for nb in nb_paths:
        if nb.stem in args.out_of_memory:
            size["broke"].append(f"{nb.stem} not run: the memory guard stopped it at "
                                 f"N = {args.out_of_memory[nb.stem]}")
    nb_paths = [nb for nb in nb_paths if nb.stem not in args.out_of_memory]
    for i, nb in enumerate(nb_paths):
        if time.monotonic() > args.deadline:
            size["broke"].append(f"deadline: {nb.stem} not run")
            continue
        print(f"# N={n} {nb.stem}: " + ("login, spawn and Run All" if i == 0 else
                                       f"Run All on {len(up)} servers"), flush=True)
        run = await run_notebook(up, nb, args, sampler, spawn=i == 0)
        if i == 0:
            spawned = [s.spawn for s in students if isinstance(s.spawn, dict)]
            size.update({"login_s": summary(r["login_s"] for r in spawned),
                         "spawn_s": summary(r["spawn_s"] for r in spawned),
                         "lab_page_s": summary(r["lab_s"] for r in spawned),
                         "spawned": len(spawned)})
            bad = [s.spawn for s in students if not isinstance(s.spawn, dict)]
            if bad:
                size["broke"].append(f"{len(bad)} of {n} servers did not start: "
                                     f"{_err(bad[0]) if bad[0] else 'stopped unfinished'}")
            up = [s for s in students if isinstance(s.spawn, dict)]
        run["spawned"] = len(up)
        runs.append(run)
        print(table([run]).splitlines()[-1], flush=True)
        args.on_run(size, run)
        if sampler.guard_tripped:
            args.out_of_memory.setdefault(nb.stem, n)
        if not up:
            break
        # the kernels gone (and their memory back) before the next notebook
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
                p["kind"] == "kernel" for p in sampler.one(False)["procs"].values()):
            await asyncio.sleep(1)
    sampler.phase = f"{n}:stop"
    for s in students:
        try:
            await asyncio.to_thread(s.stop_server)
        except Exception as e:  # noqa: BLE001
            size["broke"].append(f"stopping {s.name}'s server: {_err(e)}")
    # every student process gone before the next size (kernels and servers)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and any(
            p for p in sampler.one(False)["procs"].values()):
        await asyncio.sleep(1)
    return size, runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", default="1,5,10,20,30", help="class sizes, comma-separated")
    ap.add_argument("--notebooks", default="10,06,11", help="notebook numbers, comma-separated")
    ap.add_argument("--press-seconds", type=float, default=20.0)
    ap.add_argument("--pace", default="0.5,2.0", help="seconds between a student's key presses")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deadline-s", type=float, default=2700,
                    help="no new class size or notebook starts past this many seconds")
    ap.add_argument("--spawn-timeout-s", type=float, default=240)
    ap.add_argument("--kernel-timeout-s", type=float, default=240)
    ap.add_argument("--cell-timeout-s", type=float, default=600)
    ap.add_argument("--run-all-timeout-s", type=float, default=900)
    ap.add_argument("--answer-timeout-s", type=float, default=30)
    ap.add_argument("--sample-every-s", type=float, default=1.0)
    ap.add_argument("--min-available-gib", type=float, default=4.0,
                    help="memory guard: stop a size when MemAvailable falls under this")
    ap.add_argument("--browsers", type=int, default=0,
                    help="this many of each class are real browsers (headless Chromium)")
    ap.add_argument("--overlap", action="store_true",
                    help="each student presses as soon as their own Run All is done, while "
                         "classmates may still be in theirs (else all press once all are done)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "class_load_results.json"))
    ap.add_argument("--small", action="store_true",
                    help="a smoke run: N = 1, notebook 11, 5 s of presses")
    ap.add_argument("--dry-run", action="store_true",
                    help="no hub, no root: print the plan, each notebook's cells and the machine")
    ap.add_argument("--cells-memory", metavar="NB",
                    help="no hub, no root: one local kernel runs notebook NB; its memory after "
                         "each cell")
    args = ap.parse_args(argv)
    if args.cells_memory:
        print("| cell | status | s | RSS MiB | peak (VmHWM) MiB | first line |")
        print("| --- | --- | --- | --- | --- | --- |")
        for i, status, s, rss, hwm, line in cells_memory(notebook_path(args.cells_memory)):
            print(f"| {'-' if i is None else i} | {status} | {s:.1f} | {_fmt(rss)} | "
                  f"{_fmt(hwm)} | `{line}` |")
        return 0
    if args.small:
        args.students, args.notebooks, args.press_seconds = "1", "11", 5.0
    sizes = sorted({int(x) for x in args.students.split(",")})
    args.pace = tuple(float(x) for x in args.pace.split(","))
    nb_paths = [notebook_path(x.strip()) for x in args.notebooks.split(",")]
    info = machine(_read("/proc/cpuinfo") or "", _read("/proc/meminfo") or "", os.cpu_count())
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "benchmarks/class_load.py",
                                                *(sys.argv[1:] if argv is None else argv)])
    print(f"# {command}")
    print(f"# machine: {info}")
    print(f"# sizes {sizes}, notebooks {[p.stem for p in nb_paths]}, {args.press_seconds:g} s "
          f"of presses every {args.pace[0]:g}-{args.pace[1]:g} s, seed {args.seed}")
    for p in nb_paths:
        cells = code_cells(p)
        print(f"# {p.stem}: {len(cells)} code cells")
    if args.dry_run:
        rng = random.Random(args.seed)
        print(f"# student 0 presses at (s): "
              f"{[round(t, 2) for t in press_times(rng, args.press_seconds, args.pace)]}")
        return 0

    from hub_support import PROXY, HUB_VENV, Hub, students
    if os.geteuid() != 0:
        raise SystemExit("class_load.py runs as root: it makes UNIX accounts (add-students.sh) "
                         "and the hub starts each student's server as them")
    if not (HUB_VENV / ".installed").exists() or not PROXY.exists():
        raise SystemExit("needs .venv-hub and the proxy: make hub-env")

    started = time.monotonic()
    args.deadline = started + args.deadline_s
    result = {"machine": info, "command": command, "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                         time.gmtime()),
              "config": {k: v for k, v in vars(args).items()
                         if k not in ("deadline", "on_run", "out_of_memory", "tmp")},
              "sizes": [], "runs": [], "notes": []}

    def save():
        result["sizing"] = sizing(result["runs"], info["cores"])
        Path(args.out).write_text(json.dumps(result, indent=1, default=str) + "\n")

    def on_run(size, run):
        result["runs"].append(run)
        save()
    args.on_run = on_run
    args.out_of_memory = {}  # notebook -> the class size at which the memory guard stopped it

    # SIGTERM, SIGHUP: unwind, so that the accounts are removed and the hub stopped
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda n, f: sys.exit(128 + n))
    prefix = f"llload{secrets.token_hex(2)}"
    names = [f"{prefix}{i:02d}" for i in range(max(sizes))]
    with tempfile.TemporaryDirectory(prefix="class-load-") as tmp:
        args.tmp = tmp
        t0 = time.perf_counter()
        with students(Path(tmp) / "accounts", names, comment="class_load.py") as made:
            result["notes"].append(f"{len(names)} accounts made by add-students.sh in "
                                   f"{time.perf_counter() - t0:.0f} s")
            hub = Hub(Path(tmp) / "state")
            try:
                hub.start()
                sampler = Sampler([_uid(n) for n in names], hub.proc.pid, hub.proxy_pid(),
                                  every_s=args.sample_every_s,
                                  min_available=args.min_available_gib * GIB)
                sampler.start()
                time.sleep(2 * args.sample_every_s)
                loop = asyncio.new_event_loop()
                loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(
                    max_workers=max(8, 2 * max(sizes) + 4)))
                try:
                    for n in sizes:
                        if time.monotonic() > args.deadline:
                            result["notes"].append(f"deadline: N = {n} not run")
                            continue
                        print(f"# N = {n}: login and spawn", flush=True)
                        size, _ = loop.run_until_complete(run_size(
                            n, names, made["passwords"], hub.url, nb_paths, args, sampler,
                            args.seed))
                        result["sizes"].append(size)
                        print(f"# N = {n}: spawn s {size['spawn_s']}; broke: {size['broke']}",
                              flush=True)
                        save()
                finally:
                    loop.close()
                    sampler.stop_event.set()
            finally:
                code = hub.stop()
                result["notes"].append(f"hub stopped (exit {code})")
                hub_log = hub.tail(20000)
                errors = [ln for ln in hub_log.splitlines()
                          if ln.startswith("[E ") or "Traceback" in ln]
                result["hub_log_errors"] = errors[-20:]
                save()
    print()
    print(table(result["runs"]))
    print()
    for size in result["sizes"]:
        print(f"N = {size['students']}: login s {_fmt(size['login_s']['median'], 1)}, spawn s "
              f"median {_fmt(size['spawn_s']['median'], 1)} max {_fmt(size['spawn_s']['max'], 1)}"
              f", spawned {size['spawned']}; broke: {'; '.join(size['broke']) or '-'}")
    print(json.dumps(result["sizing"], indent=1))
    print(f"# written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
