"""Where no kernel runs (GitHub, nbviewer, `jupyter nbconvert --to html`), every widget of every
committed notebook still shows its figure: the picture lessonlib.widgets displays just before the
live widget (nbval does not compare images, so this test does)."""
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
        before = nb.cells[i].outputs[j - 1] if j else {}
        assert "image/png" in before.get("data", {}), f"cell {i}: widget without a picture"
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
        picture = nb.cells[i].outputs[j - 1]["data"]["image/png"].replace("\n", "")[:400]
        assert re.search(rf'<img[^>]+src="data:image/png;base64,{re.escape(picture)}', html), (
            f"cell {i}: the HTML does not show the widget's picture")
