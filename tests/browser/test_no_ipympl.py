"""A widget where ipympl's front end is missing, in a real browser (lessonlib.widgets._render,
contract point 4).

JupyterLab without the jupyter-matplotlib extension (a JupyterLab of its own, its
JUPYTER_CONFIG_DIR a temporary folder where ``jupyter labextension disable`` turned it off) is
what a student has in a JupyterLab where the extension is not installed, in VS Code offline
or on a hosted notebook: the kernel has ipympl, the page cannot draw its canvas. Disabling the
package name alone (``jupyter labextension disable jupyter-matplotlib``) leaves ipympl 0.10's
plugin running, measured: its plugin's id is ``matplotlib-jupyter:main``, which the package name
does not match, so that id is disabled too (``IPYMPL_PLUGINS``). There the
Explorer's core ipywidgets.Image shows the figure, and a key press on a slider replaces its
picture (a new src, other pixels) and the readout. In the usual JupyterLab (the session's, with
the extension) the Image stays hidden and is not updated: ipympl's canvas shows the frames.
"""
import json
import os
import subprocess
import sys
import time

import nbformat
import pytest
from playwright.sync_api import expect

from browser_support import Explorer, cell_problems, jupyterlab, open_notebook, run_all, summary

NOTEBOOK = "zz_window_widget"
SOURCE = ('%matplotlib widget\nfrom lessonlib import widgets\n\n'
          'w = widgets.windows.window_explorer("gpt-oss-20b")\nw')
SLIDER = "window"
FRAME = "img.lessonlib-frame"
IPYMPL_PLUGINS = {"jupyter-matplotlib": True, "matplotlib-jupyter:main": True}
EXPLORER = ".lessonlib-explorer"
SETTINGS = {  # as the session's JupyterLab (conftest.py): no news, no update check, no autosave
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        '{"fetchNews": "false", "checkForUpdates": false}',
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": '{"autosave": false}',
}

# The frame Image's pixels, kept on the page (ipywidgets revokes an Image's old blob URL).
_KEEP_PIXELS = """(img) => {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const ctx = c.getContext('2d');
  ctx.drawImage(img, 0, 0);
  window.__lessonFrame = {src: img.src,
                          pixels: ctx.getImageData(0, 0, c.width, c.height).data};
  return {src: img.src, width: c.width, height: c.height};
}"""
_CHANGED_PIXELS = """(img) => {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const ctx = c.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const now = ctx.getImageData(0, 0, c.width, c.height).data, before = window.__lessonFrame.pixels;
  if (now.length !== before.length) return -1;
  let n = 0;
  for (let i = 0; i < now.length; i += 4)
    if (now[i] !== before[i] || now[i + 1] !== before[i + 1] || now[i + 2] !== before[i + 2]) n++;
  return n;
}"""
_LOADED_NEW = """([img, src]) => img.src !== src && img.complete && img.naturalWidth > 0"""


class _Lab:
    def __init__(self, port, token, root):
        self.port, self.token, self.root = port, token, root

    def url(self, path="lab", reset=True):
        query = ("reset&" if reset else "") + f"token={self.token}"
        return f"http://127.0.0.1:{self.port}/{path}?{query}"


def _write_notebook(folder):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SOURCE)], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                       "language": "python"}})
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


@pytest.fixture(scope="module")
def lab_without_ipympl(chromium, tmp_path_factory):
    """JupyterLab (127.0.0.1, a token) with the jupyter-matplotlib extension disabled by
    ``jupyter labextension disable`` in its own config folder; stopped when the module ends."""
    base = tmp_path_factory.mktemp("lab-without-ipympl")
    root, config, settings = base / "notebooks", base / "config", base / "settings"
    root.mkdir()
    _write_notebook(root)
    done = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "disable",
                           "--level=user", *IPYMPL_PLUGINS],
                          env=dict(os.environ, JUPYTER_CONFIG_DIR=str(config)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page_config = json.loads((config / "labconfig" / "page_config.json").read_text())
    assert page_config["disabledExtensions"] == IPYMPL_PLUGINS, page_config
    for rel, text in SETTINGS.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(text)
    with jupyterlab(base, root, settings, "JupyterLab without ipympl",
                    env={"JUPYTER_CONFIG_DIR": str(config)}) as (port, token, _):
        yield _Lab(port, token, root)


def _page_disables(page):
    """The extensions this JupyterLab page was told to leave off (its page config)."""
    return page.evaluate("() => JSON.parse(document.getElementById('jupyter-config-data')"
                         ".textContent).disabledExtensions || []")


def test_without_ipympls_front_end_a_key_press_moves_the_frame_image(page, lab_without_ipympl,
                                                                     screenshots):
    panel = open_notebook(page, lab_without_ipympl, NOTEBOOK)
    assert set(IPYMPL_PLUGINS) <= set(_page_disables(page))
    run_all(page, panel)
    box = panel.locator(EXPLORER)
    expect(box).to_have_count(1)
    expect(box).to_be_visible()
    # The page has no ipympl: no canvas; ipywidgets puts an error placeholder where it would
    # be ("No version of module jupyter-matplotlib is registered" in the console), which the
    # page helper's CSS hides: the Image after it stands in. Nothing else is wrong.
    assert box.locator(".jupyter-matplotlib-canvas-div").count() == 0
    placeholder = box.locator(".jupyter-widgets-error-widget")
    expect(placeholder).to_have_count(1)
    expect(placeholder).to_be_hidden()
    assert any("module jupyter-matplotlib is registered" in e for e in page.console_errors), \
        page.console_errors
    problems = cell_problems(panel)
    assert len(problems) == 1 and "javascript error" in problems[0], problems
    frame = box.locator(FRAME)
    expect(frame).to_be_visible()
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 0",
                           arg=frame.element_handle(), timeout=20_000)
    figure_px = box.locator(".lessonlib-figure-info").get_attribute("data-figure-px")
    kept = frame.evaluate(_KEEP_PIXELS)
    assert f"{kept['width']}x{kept['height']}" == figure_px, (kept, figure_px)
    shown = frame.evaluate("(img) => img.getBoundingClientRect().width")
    assert shown <= kept["width"] + 1, f"the {figure_px} picture is stretched to {shown:.0f} px"
    assert frame.get_attribute("alt")  # the page helper's text alternative
    explorer = Explorer(page, box=box)
    value, readout = explorer.value(SLIDER), explorer.readout()
    box.screenshot(path=screenshots / "no-ipympl-0.png")
    handle = explorer.slider(SLIDER).locator(".noUi-handle")
    handle.focus()
    t0 = time.perf_counter()
    handle.press("ArrowRight")
    page.wait_for_function(_LOADED_NEW, arg=[frame.element_handle(), kept["src"]],
                           timeout=15_000, polling=20)
    ms = 1e3 * (time.perf_counter() - t0)
    expect(explorer.readout_area).not_to_have_text(readout)
    box.screenshot(path=screenshots / "no-ipympl-1.png")
    now = explorer.value(SLIDER)
    changed = frame.evaluate(_CHANGED_PIXELS)
    summary(f"no ipympl: ArrowRight on '{SLIDER}' {value:g} -> {now:g}: the frame Image's "
            f"picture replaced {ms:.0f} ms after the key press, {changed} pixels changed")
    assert now > value, "ArrowRight did not move the slider"
    assert changed > 0, "the Image's src changed but its picture did not"
    assert f"window W = {int(now)}," in explorer.readout()


def test_with_ipympls_front_end_the_frame_image_stays_hidden(page, lab, screenshots):
    """The session's JupyterLab has the extension: ipympl's canvas draws, the Image is hidden
    (the page's CSS, then the kernel's layout) and a key press does not replace it."""
    _write_notebook(lab.root)
    panel = open_notebook(page, lab, NOTEBOOK)
    run_all(page, panel)
    problems = cell_problems(panel)
    assert not problems, problems
    box = panel.locator(EXPLORER)
    explorer = Explorer(page, box=box)
    explorer.wait_for_figure()
    frame = box.locator(FRAME)
    expect(frame).to_have_count(1)
    expect(frame).to_be_hidden()
    page.wait_for_function("(img) => img.style.display === 'none'", arg=frame.element_handle(),
                           timeout=10_000)  # the kernel heard ipympl's front end
    src = frame.get_attribute("src")
    move = explorer.press(SLIDER)
    assert move.url_after != move.url_before and move.readout_after != move.readout_before
    page.wait_for_timeout(500)  # an Image update, were there one, would have come by now
    assert frame.get_attribute("src") == src, "the hidden Image was updated"
    expect(frame).to_be_hidden()
    box.screenshot(path=screenshots / "with-ipympl-frame-hidden.png")
