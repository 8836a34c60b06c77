"""Where no kernel runs (GitHub, nbviewer, `jupyter nbconvert --to html`), every widget of every
committed notebook still shows its figure and its readout: the picture and the text
lessonlib.widgets displays just before the live widget (nbval compares the text, not images, so
this test checks the pictures are there). A picture says "run the notebook to move its controls"
only where there are controls, and no progress bar is committed (frozen at its first count)."""
import glob
import os
import re

import nbformat
import pytest
from _support import ROOT

from lessonlib.widgets._base import LIVE_TEXT

WIDGET = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9]*.ipynb")))


def widget_outputs(nb):
    """(cell index, output index) of every lessonlib widget in the notebook (a progress bar is
    a widget too, but has no figure)."""
    return [(i, j) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for j, out in enumerate(cell.outputs) if WIDGET in out.get("data", {})
            and out["data"].get("text/plain") == LIVE_TEXT]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_every_widget_output_follows_its_picture(path):
    nb = nbformat.read(path, as_version=4)
    found = widget_outputs(nb)
    for i, j in found:
        outs = nb.cells[i].outputs
        picture = outs[j - 2] if j >= 2 else {}
        readout = outs[j - 1].get("data", {}) if j else {}
        assert "image/png" in picture.get("data", {}), f"cell {i}: widget without a picture"
        assert set(readout) == {"text/plain"} and readout["text/plain"].startswith("[readout"), (
            f"cell {i}: widget without its readout as text")
    assert found or "widgets." not in "".join(c.source for c in nb.cells), "no widget found"
    assert "widgets" not in nb.metadata, ("widget state is saved: viewers would try to draw the "
                                          "widgets (blank without a kernel) instead of the picture")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_nbconvert_html_shows_a_picture_for_every_widget(path):
    """With no widget state saved, nbconvert leaves the live widget out and shows its picture."""
    from nbconvert import HTMLExporter
    nb = nbformat.read(path, as_version=4)
    html, _ = HTMLExporter().from_notebook_node(nb)
    assert "jupyter-widgets/html-manager" not in html, "nbconvert would load the widget manager"
    for i, j in widget_outputs(nb):
        picture = nb.cells[i].outputs[j - 2]["data"]["image/png"].replace("\n", "")[:400]
        assert re.search(rf'<img[^>]+src="data:image/png;base64,{re.escape(picture)}', html), (
            f"cell {i}: the HTML does not show the widget's picture")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_pictures_invite_moving_controls_only_where_there_are_some_and_no_frozen_bars(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            data = out.get("data", {})
            text = data.get("text/plain", "")
            if "image/png" in data and "move its controls" in text:
                # the widget right after it has controls: its readout names their settings
                k = cell.outputs.index(out)
                assert cell.outputs[k + 1]["data"]["text/plain"].startswith("[readout at "), (
                    f"cell {i}: a picture without controls invites moving them")
            widget = data.get("application/vnd.jupyter.widget-view+json")
            assert not (widget and text != LIVE_TEXT), (
                f"cell {i}: a committed widget that is not a lessonlib figure (a progress "
                f"bar?): {text[:80]!r}")
            assert "it/s]" not in "".join(out.get("text", "")), f"cell {i}: a progress bar"
