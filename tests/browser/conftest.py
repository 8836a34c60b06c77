"""Real-browser tests: Playwright drives Debian's Chromium (headless) against servers the session
starts itself: JupyterLab on a temporary copy of notebooks/ (test_lab.py) and the Voila
presenter of `make present` (test_present.py).

Chromium is /usr/bin/chromium from apt; when it is missing the session installs it
(``apt-get update && apt-get install -y chromium``, as root). Where that is impossible the tests
skip with the command to run, except under CI=true, where they fail: CI never skips them.
Never ``playwright install``: it downloads a browser; these tests use Debian's.

Screenshots go to a fresh folder under the system temp dir; its path and each key-press-to-
redraw time are printed in a "browser tests" section at the end of the run.
"""
import importlib.util
import tempfile
from pathlib import Path

import pytest

from browser_support import (CHROMIUM, CHROMIUM_ARGS, IN_CI, INSTALL_HINT, ROOT, SUMMARY,
                             install_chromium, jupyterlab, summary)

_spec = importlib.util.spec_from_file_location("workspace", ROOT / "scripts" / "workspace.py")
workspace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(workspace)

VIEWPORT = {"width": 1920, "height": 1080}
LAB_SETTINGS = {  # no news, no update check, no autosave: the copy of the notebooks stays as run
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        '{"fetchNews": "false", "checkForUpdates": false}',
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": '{"autosave": false}',
}


def pytest_terminal_summary(terminalreporter):
    if SUMMARY:
        terminalreporter.section("browser tests")
        for line in SUMMARY:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def chromium():
    why = install_chromium()
    if why is not None:
        message = (f"Debian's Chromium is needed at {CHROMIUM} and could not be installed "
                   f"({why}). Install it with: {INSTALL_HINT}")
        if IN_CI:
            pytest.fail(message + " (CI=true: the browser tests never skip)", pytrace=False)
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture(scope="session")
def browser(chromium, tmp_path_factory):
    """One headless Chromium for the session, with a fresh profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=chromium,
            headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT)
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser):
    """A new tab; ``page.console_errors`` collects what the page logs as errors."""
    tab = browser.new_page()
    tab.console_errors = []
    tab.on("console", lambda m: tab.console_errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: tab.console_errors.append(f"uncaught: {e}"))
    tab.on("requestfailed", lambda r: tab.console_errors.append(
        f"request failed: {r.url[:120]} ({r.failure})"))
    try:
        yield tab
    finally:
        tab.close()


@pytest.fixture(scope="session")
def screenshots():
    """A folder kept after the run for a person to look at (its path is in the summary)."""
    folder = Path(tempfile.mkdtemp(prefix="lessonlib-browser-screenshots-"))
    summary(f"screenshots: {folder}")
    return folder


class Lab:
    """A running JupyterLab; ``root`` is the working copy of notebooks/ it serves."""

    def __init__(self, port, token, root, server):
        self.port, self.token, self.root, self.server = port, token, root, server

    def url(self, path="lab", reset=True):
        query = ("reset&" if reset else "") + f"token={self.token}"
        return f"http://127.0.0.1:{self.port}/{path}?{query}"


@pytest.fixture(scope="session")
def lab(chromium, tmp_path_factory):
    """JupyterLab on a free 127.0.0.1 port with a token, serving a working copy of notebooks/
    made as make lab makes it (scripts/workspace.py sync, into a temporary folder),
    with its own settings (no news, no update check, no autosave) and workspaces. Stopped when
    the session ends, passed or failed."""
    base = tmp_path_factory.mktemp("lab")
    root = base / "my-notebooks"  # what make lab serves: the student's working copies
    workspace.sync(ROOT / "notebooks", root)
    settings = base / "settings"
    for rel, text in LAB_SETTINGS.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(text)
    with jupyterlab(base, root, settings) as (port, token, server):
        yield Lab(port, token, root, server)
