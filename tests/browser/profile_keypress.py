"""One slider key press in JupyterLab, end to end: where its time goes (make profile-keypress).

Not part of the test suite (its name does not start with test_): run it on a quiet machine,
    .venv/bin/python -m pytest tests/browser/profile_keypress.py -q -s -p no:cacheprovider
with PROFILE="notebook:slider,..." (default: 04's tokens n and 08's factor, the slowest
sliders of the suite's latency table; "notebook:slider@k" for the slider of that name in the
notebook's widget k, counted from 0, as the latency table does: 05 has two context n sliders)
and PRESSES=n (default 12). For every press it joins two
clocks (both epoch milliseconds on this one machine):

- the browser's, from an init script: the keydown, the websocket message carrying the new
  value, every websocket message back (the frame is the one over 3 kB), and the drawImage that
  puts the frame on the figure's canvas;
- the kernel's, from a sitecustomize module on the kernel's PYTHONPATH: when the comm message
  arrived, when its handling ended, and the handling's CPU time (the main thread's).

and prints the median and range of each segment: key press to kernel, kernel wall time and CPU
time (their difference is time the kernel waited for a core), the end of the kernel's handling
to the frame's arrival (the frame is sent inside the handling, so this can be slightly negative),
frame decode and paint, and the whole. With TRACE=1 it also records a Chromium trace of the presses and
prints how busy the renderer's main thread was in the 150 ms after each key press (the trace
itself adds to that); TRACE_OUT=path also writes the trace's events there (chrome://tracing
and Perfetto open it). With CPUPROFILE=path the page's JavaScript is sampled every 100 us over
the presses, the profile written there (DevTools' Performance panel loads it): it shows whose
code the page's main thread ran, JupyterLab's, ipywidgets', ipympl's, ours or the test
driver's. With LESSONLIB_KEYPRESS_CPROFILE=path the kernel's handling of every comm
message that moves a control runs under cProfile (Run All's draws and ipympl's own messages are
left out), its statistics written to that path (read them with pstats; the profiler about
doubles the kernel's times). benchmarks/RESULTS.md records a run.
"""
import json
import os
import statistics
import textwrap

import pytest

from browser_support import open_notebook, run_all, summary
from test_fit import LAPTOP, _explorers

PROFILE = os.environ.get("PROFILE", "04_flash_attention_triton:tokens n,08_rope_scaling:factor")
CASES = [tuple(case.split(":", 1)) for case in PROFILE.split(",")]


def _pick(explorers, slider):
    """The widget whose slider is named ``slider`` ("name@k": in widget k, else the first)."""
    name, _, k = slider.rpartition("@")
    if name and k.isdigit():
        return explorers[int(k)], name
    return next(e for e in explorers if slider in dict(e.sliders())), slider

# The kernel's side: comm messages in and out, timed where ipykernel hands them to the comm.
SITECUSTOMIZE = textwrap.dedent("""\
    import json, os, time
    if os.environ.get("LESSONLIB_KEYPRESS_LOG") and \\
            b"ipykernel" in open("/proc/self/cmdline", "rb").read():
        import comm.base_comm as _bc
        _log = open(os.environ["LESSONLIB_KEYPRESS_LOG"], "a", buffering=1)
        _handle = _bc.BaseComm.handle_msg

        _profile = None
        if os.environ.get("LESSONLIB_KEYPRESS_CPROFILE"):
            import cProfile
            _profile = cProfile.Profile()

        def _moves_a_control(msg):  # a control's new value (not ipympl's own messages)
            data = msg.get("content", {}).get("data", {})
            return data.get("method") == "update" and "value" in data.get("state", {})

        def _timed_handle(self, msg):
            t, cpu = time.time() * 1e3, time.thread_time()
            profiled = _profile is not None and _moves_a_control(msg)
            if profiled:
                _profile.enable()
            try:
                return _handle(self, msg)
            finally:
                if profiled:
                    _profile.disable()
                    _profile.dump_stats(os.environ["LESSONLIB_KEYPRESS_CPROFILE"])
                _log.write(json.dumps({"recv": t, "handled": time.time() * 1e3,
                                       "cpu": 1e3 * (time.thread_time() - cpu)}) + "\\n")

        _bc.BaseComm.handle_msg = _timed_handle
    """)

# The browser's side, installed before JupyterLab's own scripts run.
INIT = """(() => {
  const now = () => performance.timeOrigin + performance.now();
  const log = window.__keypressLog = [];
  const NativeWebSocket = window.WebSocket;
  const size = (d) => typeof d === 'string' ? d.length : (d.byteLength || d.size || 0);
  window.WebSocket = function (...args) {
    const ws = new NativeWebSocket(...args);
    ws.addEventListener('message', (e) => log.push([now(), 'recv', size(e.data)]));
    const send = ws.send.bind(ws);
    ws.send = (d) => { log.push([now(), 'send', size(d)]); return send(d); };
    return ws;
  };
  window.WebSocket.prototype = NativeWebSocket.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  const drawImage = CanvasRenderingContext2D.prototype.drawImage;
  CanvasRenderingContext2D.prototype.drawImage = function (...args) {
    const t = now(), result = drawImage.apply(this, args);
    if (this.canvas.isConnected) log.push([t, 'draw', now() - t]);
    return result;
  };
  document.addEventListener('keydown', () => log.push([now(), 'keydown']), {capture: true});
})();"""

FRAME_BYTES = 3000  # a frame message is a PNG; status, echo and readout messages are smaller
SEGMENTS = ("key press to kernel", "kernel wall", "kernel CPU", "kernel end to frame",
            "decode and paint", "key press to pixels", "frame kB")


@pytest.fixture(scope="session")
def kernel_log(tmp_path_factory):
    """Before JupyterLab starts: its kernels load the timing sitecustomize."""
    folder = tmp_path_factory.mktemp("keypress")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = folder / "kernel.jsonl"
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    os.environ["LESSONLIB_KEYPRESS_LOG"] = str(log)
    return log


def segments(browser, kernel):
    """Per key press: each segment's milliseconds (and the frame's size), joined by time."""
    keys = [e[0] for e in browser if e[1] == "keydown"]
    rows = []
    for i, t0 in enumerate(keys):
        t1 = keys[i + 1] if i + 1 < len(keys) else float("inf")
        handled = next(k for k in kernel if t0 <= k["recv"] < t1)
        frame = next(e for e in browser if handled["recv"] <= e[0] < t1
                     and e[1] == "recv" and e[2] > FRAME_BYTES)
        draw = next(e for e in browser if e[0] >= frame[0] and e[1] == "draw")
        painted = draw[0] + draw[2]
        rows.append(dict(zip(SEGMENTS, (
            handled["recv"] - t0, handled["handled"] - handled["recv"], handled["cpu"],
            frame[0] - handled["handled"], painted - frame[0], painted - t0, frame[2] / 1e3))))
    return rows


def main_thread_busy(events, window_us=150_000):
    """ms the renderer's main thread ran tasks in the window after each keydown."""
    main = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M"
            and e.get("name") == "thread_name" and e["args"]["name"] == "CrRendererMain"}
    keys = sorted(e["ts"] for e in events if e.get("name") == "EventDispatch"
                  and e.get("args", {}).get("data", {}).get("type") == "keydown")
    tasks = [e for e in events if e.get("ph") == "X" and e.get("name") == "RunTask"
             and (e["pid"], e["tid"]) in main]
    return [sum(e.get("dur", 0) for e in tasks if t <= e["ts"] < t + window_us) / 1e3
            for t in keys]


@pytest.mark.parametrize("name,slider", CASES)
def test_keypress_profile(kernel_log, page, lab, name, slider):
    page.add_init_script(INIT)
    page.set_viewport_size(LAPTOP)
    panel = open_notebook(page, lab, name)
    run_all(page, panel)
    explorer, slider = _pick(_explorers(panel), slider)
    explorer.wait_for_figure()
    explorer.box.scroll_into_view_if_needed()
    page.wait_for_timeout(1500)  # let the page settle after Run All
    trace = os.environ.get("TRACE") == "1"
    if trace:
        cdp, events, done = page.context.new_cdp_session(page), [], []
        cdp.on("Tracing.dataCollected", lambda e: events.extend(e["value"]))
        cdp.on("Tracing.tracingComplete", lambda e: done.append(True))
        cdp.send("Tracing.start", {"categories": "devtools.timeline,disabled-by-default-devtools.timeline",
                                   "transferMode": "ReportEvents"})
    cpuprofile = os.environ.get("CPUPROFILE")
    if cpuprofile:  # the page's JavaScript, sampled every 100 us, over all the presses
        js = page.context.new_cdp_session(page)
        js.send("Profiler.enable")
        js.send("Profiler.setSamplingInterval", {"interval": 100})
        js.send("Profiler.start")
    page.evaluate("() => { window.__keypressLog.length = 0; }")
    start = len(kernel_log.read_text().splitlines()) if kernel_log.exists() else 0
    measured = []
    key = "ArrowRight"
    for _ in range(int(os.environ.get("PRESSES", "12"))):
        key = explorer.sweep_key(slider, key)
        measured.append(explorer.press(slider, key).figure_ms)
        page.wait_for_timeout(300)  # one press at a time: the next starts on a quiet page
    if cpuprofile:
        with open(cpuprofile, "w") as out:  # DevTools' Performance panel loads a .cpuprofile
            json.dump(js.send("Profiler.stop")["profile"], out)
    browser = page.evaluate("() => window.__keypressLog")
    kernel = [json.loads(line) for line in kernel_log.read_text().splitlines()[start:]]
    rows = segments(browser, kernel)
    assert len(rows) == len(measured), "every key press should be found in both logs"
    summary(f"{name} / {slider}: {len(rows)} presses (the suite's own measure: median "
            f"{statistics.median(measured):.0f} ms)")
    for s in SEGMENTS:
        values = [r[s] for r in rows]
        summary(f"  {s:20s} median {statistics.median(values):6.1f}   "
                f"range {min(values):6.1f} - {max(values):6.1f}")
    if trace:
        cdp.send("Tracing.end")
        while not done:
            page.wait_for_timeout(100)
        if os.environ.get("TRACE_OUT"):  # the raw events, for chrome://tracing or a script
            with open(os.environ["TRACE_OUT"], "w") as out:
                json.dump({"traceEvents": events}, out)
        busy = main_thread_busy(events)
        summary(f"  renderer main thread busy in the 150 ms after a key press (traced): median "
                f"{statistics.median(busy):.0f} ms, range {min(busy):.0f} - {max(busy):.0f}")
