"""`make present NB=08_rope_scaling`: Voila serves the notebook as an app for a live demo.

The server is started exactly as the make target starts it (scripts/present.py, which prints the
URL). The page shows the widgets and nothing else (no code, no prose, no printed output), in type
large enough for the back of a room, and a slider moved with the keyboard redraws the figure
and the readout.
"""
import json
import re
import secrets
import shutil
import sys

import pytest
from lessonlib.rope import yarn_mscale

from browser_support import (REDRAW_LIMIT_MS, ROOT, Explorer, Server, free_port, kernel_env,
                             summary)

NOTEBOOK, SLIDER = "08_rope_scaling", "factor"
PROJECTOR = {"width": 1920, "height": 1080}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def widget_cells(path):
    """Code cells whose stored outputs hold a widget view, and the notebook's first heading."""
    nb = json.loads(path.read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"
             and any(WIDGET_VIEW in o.get("data", {}) for o in c.get("outputs", []))]
    first = "".join(nb["cells"][0]["source"]) if nb["cells"] else ""
    title = first.splitlines()[0].lstrip("#").strip() if first.startswith("#") else None
    return len(cells), title


@pytest.fixture(scope="module")
def presenter(chromium, tmp_path_factory):
    """scripts/present.py (what `make present` runs) on a copy of the notebook; its URL."""
    source = ROOT / "notebooks" / f"{NOTEBOOK}.ipynb"
    assert source.is_file(), f"notebooks/{NOTEBOOK}.ipynb does not exist"
    base = tmp_path_factory.mktemp("present")
    notebook = base / source.name
    shutil.copy(source, notebook)
    port, token = free_port(), secrets.token_hex(16)
    cmd = [sys.executable, str(ROOT / "scripts" / "present.py"), str(notebook),
           "--port", str(port), "--token", token]
    server = Server("scripts/present.py (Voila)", cmd, kernel_env(), base / "present.log")
    printed = re.compile(r"^\s+(http://\S+)$", re.MULTILINE)  # the URL line it prints
    try:
        server.wait_until(lambda: printed.search(server.log()), 60, "printing its URL")
        server.wait_for_presenter(port)
        url = printed.search(server.log()).group(1)
        assert url == f"http://127.0.0.1:{port}/?token={token}", url
        yield url, source
    finally:
        server.stop()


def test_presenter_shows_only_widgets_and_a_slider_redraws(page, presenter, screenshots):
    url, source = presenter
    page.set_viewport_size(PROJECTOR)
    page.goto(url)
    explorer = Explorer(page, SLIDER)  # Voila shows the cells once all of them have run
    explorer.wait_for_figure()
    page.screenshot(path=screenshots / f"{NOTEBOOK}-present.png", full_page=True)

    n_widget_cells, title = widget_cells(source)
    errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    assert errors.count() == 0, errors.all_inner_texts()
    assert page.locator(".jp-InputArea, .jp-CodeMirrorEditor, .cm-editor").count() == 0, "code"
    assert page.locator(".jp-MarkdownCell, .jp-RenderedMarkdown").count() == 0, "prose"
    assert page.locator(".jp-RenderedText, .jp-RenderedHTML, .jp-RenderedImage").count() == 0, \
        "printed output or a static figure"
    assert page.locator(".jp-CodeCell").count() == n_widget_cells >= 1
    if title:
        assert page.locator(".presenter-title h1").inner_text().strip() == title

    # readable from the back of a room (the lab defaults are 13 px for both)
    px = "(e) => parseFloat(getComputedStyle(e).fontSize)"
    assert explorer.readout_area.locator("pre").evaluate(px) >= 24
    assert explorer.slider(SLIDER).locator(".widget-label").evaluate(px) >= 22

    move = explorer.press(SLIDER, "ArrowRight")
    page.screenshot(path=screenshots / f"{NOTEBOOK}-present-after-{SLIDER}.png", full_page=True)
    summary(f"present {NOTEBOOK}: ArrowRight on '{SLIDER}' {move.value_before:g} -> "
            f"{move.value_after:g}: figure redrawn {move.figure_ms:.0f} ms, readout "
            f"{move.readout_ms:.0f} ms after the key press")
    assert move.value_after > move.value_before
    assert move.url_after != move.url_before, "the figure's pixels did not change"
    s = move.value_after
    assert f"factor s = {s:g} " in move.readout_after
    assert f"μ = 1 + 0.1·ln s = {yarn_mscale(s):.4f}" in move.readout_after
    assert move.figure_ms <= REDRAW_LIMIT_MS, f"{move.figure_ms:.0f} ms"


def test_a_reload_gets_a_fresh_kernel_that_has_run_the_notebook(page, presenter):
    """The page takes the pre-heated kernel; Voila heats the next at once, so a reload (after the
    first page, as an instructor reloads a frozen demo) gets a kernel of its own, with the
    slider back at its start and redrawing."""
    url, _ = presenter
    page.set_viewport_size(PROJECTOR)
    page.goto(url)
    first = Explorer(page, SLIDER)
    first.wait_for_figure()
    start = first.value(SLIDER)
    first.press(SLIDER, "ArrowRight")
    page.reload()
    again = Explorer(page, SLIDER)
    again.wait_for_figure(timeout_ms=120_000)
    assert again.value(SLIDER) == start
    move = again.press(SLIDER, "ArrowRight")
    assert move.value_after > move.value_before and move.url_after != move.url_before
