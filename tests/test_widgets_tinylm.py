"""lessonlib.widgets.tinylm: the committed results' views refuse what is not a result, and the
extension slider a length or a cell the sweep does not hold (tests/_bad.py). What each view
draws is tested in test_plots_tinylm.py."""
import numpy as np
from _bad import Case, bad_input_tests, choices, ints
from hypothesis import strategies as st

from lessonlib import tinylm_results as R
from lessonlib.widgets import tinylm as W

EXTENSION, NEEDLES, SINKS, STREAMING = (R.load_results(n) for n in R.RESULT_NAMES)
ROWS, SUMMARY = R.load_training_log()
_NOT_RESULTS = st.sampled_from([None, [], {}, "extension", np.zeros(3)])

BAD_INPUTS = [
    Case(W.extension_explorer, args=(EXTENSION,), kwargs=dict(length=512),
         bad=dict(extension=_NOT_RESULTS, length=ints(minimum=1) | st.just(300),
                  cells=st.sampled_from([[("nobody", "plain")], [("base", "nothing")]]))),
    Case(W.training_view, args=(ROWS, SUMMARY),
         bad=dict(rows=st.sampled_from([None, [], "log", {}]), summary=_NOT_RESULTS)),
    Case(W.needle_view, args=(NEEDLES,), bad=dict(needles=_NOT_RESULTS)),
    Case(W.sink_view, args=(SINKS,), bad=dict(sinks=_NOT_RESULTS,
                                              key=choices(["mass_first1", "mass_first4"]))),
    Case(W.stream_view, args=(STREAMING,), bad=dict(streaming=_NOT_RESULTS)),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


# ------------------------------------------------------------------ what people see
# Each view fits JupyterLab's output area beside the file browser unscaled (9.2 in, 920 px at
# 100 dpi) with text of at least 10 pt, numbers on heatmap cells contrast with their cell
# (WCAG AA, 4.5:1), and legends sit off the data. tests/browser/test_fit.py checks the pages.
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from lessonlib.plots._style import contrast_ratio  # noqa: E402

VIEWS = {"training": lambda: W.training_view(ROWS, SUMMARY),
         "extension": lambda: W.extension_explorer(EXTENSION, length=2048),
         "needles": lambda: W.needle_view(NEEDLES), "sinks": lambda: W.sink_view(SINKS),
         "streaming": lambda: W.stream_view(STREAMING)}


def _drawn(name):
    v = VIEWS[name]()
    v.fig.canvas.draw()
    return name, v


@pytest.fixture(params=list(VIEWS))
def view(request):
    name, v = _drawn(request.param)
    yield name, v
    plt.close(v.fig)


@pytest.fixture(params=["needles", "sinks"])
def heatmap_view(request):
    """The views that print numbers on coloured cells."""
    name, v = _drawn(request.param)
    yield name, v
    plt.close(v.fig)


@pytest.fixture(params=["extension", "streaming"])
def shared_legend_view(request):
    """The views with one legend under their panels (the others keep theirs in a free corner
    of each axes: test_training_legends_are_off_the_curves)."""
    name, v = _drawn(request.param)
    yield name, v
    plt.close(v.fig)


def _boxes(v):
    renderer = v.fig.canvas.get_renderer()
    return renderer, [ax.get_window_extent(renderer) for ax in v.axes]


def test_every_view_fits_a_laptop_with_readable_text(view):
    _, v = view
    assert v.fig.get_size_inches()[0] <= W.FIGURE_WIDTH + 1e-9
    assert v.smallest_text_px() >= W._MIN_FONT * v.fig.dpi / 72 - 1e-9


def test_numbers_on_cells_contrast_with_their_cell(heatmap_view):
    _, v = heatmap_view
    for ax, (image, _) in zip(v.axes, v.artists["heatmaps"]):
        values = np.asarray(image.get_array())
        assert len(ax.texts) == values.size
        for text in ax.texts:
            j, i = (round(c) for c in text.get_position())
            cell = image.cmap(image.norm(values[i, j]))
            assert contrast_ratio(text.get_color(), cell) >= 4.5, (text.get_text(), i, j)


def test_needle_panels_are_stacked_with_one_colorbar():
    v = W.needle_view(NEEDLES)
    try:
        x0 = {round(ax.get_position().x0, 3) for ax in v.axes}
        assert len(v.axes) == len(NEEDLES["cells"]) and len(x0) == 1  # one column
        assert len({id(bar) for _, bar in v.artists["heatmaps"]}) == 1
        labelled = [ax for ax in v.axes if ax.get_xlabel()]
        assert labelled == [v.axes[-1]]  # depth labelled once, under the stack
    finally:
        plt.close(v.fig)


def test_shared_legends_sit_under_the_panels(shared_legend_view):
    name, v = shared_legend_view
    renderer, axes = _boxes(v)
    assert len(v.fig.legends) == 1 and all(ax.get_legend() is None for ax in v.axes)
    box = v.fig.legends[0].get_window_extent(renderer)
    assert all(not box.overlaps(a) for a in axes)
    assert box.y1 < min(a.y0 for a in axes)  # under the panels
    if name == "extension":  # every curve is named, the chance level too
        labels = [t.get_text() for t in v.fig.legends[0].get_texts()]
        assert len(labels) == len(v.artists["accuracy"]) + 1 and "chance (1/32)" in labels


def test_training_legends_are_off_the_curves():
    v = W.training_view(ROWS, SUMMARY)
    try:
        renderer = v.fig.canvas.draw() or v.fig.canvas.get_renderer()
        for ax in v.axes:
            box = ax.get_legend().get_window_extent(renderer)
            for line in ax.lines:
                xy = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
                if line.get_label().startswith("_"):
                    continue  # the curriculum's dashed mark
                assert not box.count_contains(xy), (ax.get_title(), line.get_label())
    finally:
        plt.close(v.fig)


def test_extension_slider_keeps_the_legend_in_the_background():
    """A slider step redraws the lines and the cursor, not the legend (it is the figure's)."""
    v = W.extension_explorer(EXTENSION, length=256)
    try:
        v.controls["length"].value = 2048
        changing = [a for _, a in v._changing_artists()]
        assert v.artists["legend"] not in changing and v.artists["cursor"] in changing
        assert "2048 tokens (8x the trained 256)" in v.readout
        assert v.axes[1].get_title() == "Loss over position (n = 2,048)"
    finally:
        plt.close(v.fig)


@pytest.mark.parametrize("rc", [{}, {"figure.dpi": 130, "font.size": 11}],
                         ids=["lab", "presenter"])  # presenter/matplotlibrc
def test_no_text_leaves_the_extension_figure_at_any_length(rc):
    """The layout is frozen at the first length; a longer title later must still fit."""
    with plt.rc_context(rc):  # for the whole test: titles set later read it too
        v = W.extension_explorer(EXTENSION, length=256)
        try:
            for n in EXTENSION["lengths"]:
                v.controls["length"].value = n
                renderer = v.fig.canvas.get_renderer()
                texts = [t for ax in v.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label)]
                texts += [t for legend in v.fig.legends for t in legend.get_texts()]
                for t in texts:
                    box = t.get_window_extent(renderer)
                    assert v.fig.bbox.x0 - 1 <= box.x0 and box.x1 <= v.fig.bbox.x1 + 1, \
                        (n, t.get_text())
        finally:
            plt.close(v.fig)


def test_readouts_are_short_and_do_not_wrap(view):
    """In the presenter the figure gets the height its readout leaves: no line wraps (at most
    105 monospace characters: JupyterLab's output area holds about 108, the presenter about
    112) and the extension table's length heads its model column (one line, not two)."""
    name, v = view
    lines = v.readout.splitlines()
    assert max(map(len, lines)) <= 105, lines
    if name == "extension":
        assert lines[0].startswith("2048 tokens (8x the trained 256) ") and "retrieval" in lines[0]
        assert len(lines) == 1 + len({(c["model"], c["variant"]) for c in EXTENSION["cells"]})


def test_extension_slider_first_moves_need_no_full_draw(monkeypatch):
    """The loss title names the length: rehearsed at construction, so no first move of the
    slider (a student's first key press) draws the whole background again."""
    import lessonlib.widgets._base as base
    w = W.extension_explorer(R.load_results("extension"), length=256)
    assert w.values == {"length": 256} and "256" in w.readout
    full_draws = []
    monkeypatch.setattr(base.FigureCanvasAgg, "draw", lambda canvas: full_draws.append(canvas))
    for n in (512, 1024, 2048, 256):
        before = w.readout
        w.controls["length"].value = n
        assert w.readout != before and not full_draws, n
