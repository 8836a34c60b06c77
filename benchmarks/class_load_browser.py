"""A real browser among class_load.py's simulated students (--browsers K).

Each browser student is a headless Chromium (Debian's, as the browser tests use) at a laptop's
size, driven by Playwright from a thread of its own: it logs in through the hub's login page
(PAM), waits on the hub's "server starting" page until JupyterLab loads, opens the notebook from
the file's URL, runs Run All from JupyterLab's Run menu, and presses the first widget's sliders
with the arrow keys at a student's pace, each press timed in the page from the keydown to the
first draw that changes the figure's pixels (tests/browser/browser_support.py's Explorer.press,
the same probe as the browser tests). What the simulated students measure up to the kernel's
first frame, this measures up to the pixels on the student's screen.

The browsers run on the hub's own machine here, so they take CPU from the kernels that a class's
laptops would not: their figures are an upper bound on what a student sees.
"""
import concurrent.futures
import queue
import re
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

VIEWPORT = {"width": 1366, "height": 768}  # a laptop's
WIDGET = ".widget-vbox"  # a lessonlib widget: a box holding sliders and the ipympl canvas


class BrowserStudent:
    """One student's Chromium, on a thread that owns it (Playwright's sync objects stay on the
    thread that made them): ``await run(method, *args)`` runs ``method(page, *args)`` there."""

    def __init__(self, name, password, url, profile, rng):
        self.name, self.password, self.url, self.rng = name, password, url, rng
        self.profile = Path(profile)
        self.jobs = queue.Queue()
        self.ready = concurrent.futures.Future()
        self.thread = threading.Thread(target=self._loop, name=f"browser-{name}", daemon=True)
        self.thread.start()

    def _loop(self):
        from browser_support import CHROMIUM, CHROMIUM_ARGS, install_chromium
        from playwright.sync_api import sync_playwright
        try:
            why = install_chromium()
            if why is not None:
                raise RuntimeError(f"no Chromium at {CHROMIUM}: {why}")
            pw = sync_playwright().start()
            context = pw.chromium.launch_persistent_context(
                str(self.profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport=VIEWPORT)
            context.set_default_timeout(60_000)
            page = context.new_page()
        except BaseException as e:  # noqa: BLE001 - said to whoever waits on it
            self.ready.set_exception(e)
            return
        self.ready.set_result(True)
        try:
            while True:
                job = self.jobs.get()
                if job is None:
                    return
                fut, method, args = job
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    fut.set_result(method(page, *args))
                except BaseException as e:  # noqa: BLE001
                    fut.set_exception(e)
        finally:
            context.close()
            pw.stop()

    async def run(self, method, *args):
        import asyncio
        fut = concurrent.futures.Future()
        self.jobs.put((fut, method, args))
        return await asyncio.wrap_future(fut)

    def close(self, timeout_s=60):
        self.jobs.put(None)
        self.thread.join(timeout_s)

    # ---- on the browser's thread
    def login(self, page, timeout_s):
        """The hub's login form, then the "server starting" page until JupyterLab is up."""
        from playwright.sync_api import expect
        t0 = time.perf_counter()
        page.goto(f"{self.url}/hub/login")
        page.fill("#username_input", self.name)
        page.fill("#password_input", self.password)
        page.click("#login_submit")
        page.wait_for_url(re.compile(rf"/user/{self.name}/lab"), timeout=timeout_s * 1e3)
        expect(page.locator("#jp-main-dock-panel")).to_be_visible(timeout=timeout_s * 1e3)
        return {"login_and_lab_s": time.perf_counter() - t0}

    def open_and_run(self, page, notebook, timeout_s):
        """Open my-notebooks/<notebook> in a fresh workspace, Run All, wait for the kernel."""
        from browser_support import ACTIVE_NOTEBOOK, cell_problems, run_all, wait_kernel_idle
        from playwright.sync_api import expect
        t0 = time.perf_counter()
        page.goto(f"{self.url}/user/{self.name}/lab/tree/my-notebooks/{notebook}?reset")
        panel = page.locator(ACTIVE_NOTEBOOK)
        expect(panel).to_be_visible(timeout=timeout_s * 1e3)
        wait_kernel_idle(page, timeout_ms=timeout_s * 1e3)
        t1 = time.perf_counter()
        run_all(page, panel, timeout_ms=timeout_s * 1e3)
        return {"kernel_s": t1 - t0, "run_all_s": time.perf_counter() - t0,
                "problems": cell_problems(panel)}

    def press_for(self, page, seconds, pace, running):
        """Arrow keys on the first widget's enabled sliders for ``seconds``, a press every
        pace[0]-pace[1] s after the last one's frame: [{"figure_ms", "slider",
        "others_running"}] (figure_ms None: no new frame within 15 s)."""
        from browser_support import CANVAS, Explorer
        box = page.locator(WIDGET).filter(has=page.locator(CANVAS)).filter(
            has=page.locator(".widget-slider")).first
        explorer = Explorer(page, box=box)
        explorer.wait_for_figure(timeout_ms=60_000)
        presses, key, slider = [], "ArrowRight", None
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            enabled = [d for d, on in explorer.sliders() if on]
            if slider not in enabled or self.rng.random() < 0.2:
                slider, key = self.rng.choice(enabled), self.rng.choice(("ArrowRight",
                                                                         "ArrowLeft"))
            key = explorer.sweep_key(slider, key)
            others = running["n"]
            try:
                move = explorer.press(slider, key)
                figure_ms = move.figure_ms
            except AssertionError:
                figure_ms = None
            presses.append({"figure_ms": figure_ms, "slider": slider, "others_running": others})
            time.sleep(self.rng.uniform(*pace))
        return presses

    def leave(self, page):
        page.goto("about:blank")
