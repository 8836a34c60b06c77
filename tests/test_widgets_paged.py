"""lessonlib.widgets.paged, driven headlessly: the figure and readout follow the replay of notebook
11's stream through each kind of layers, step by step."""
import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_rgba

from lessonlib import paged as pg
from lessonlib.plots import paged as plots
from lessonlib.plots._style import contrast_ratio
from lessonlib.widgets import paged as pw

IDS = ["a", "b", "c"]
COLOURS = plots.request_colours(IDS)
KINDS = pw.LAYERS
STEPS = len(pg.chat_stream(4))


@pytest.fixture
def w():
    return pw.stream_explorer()  # closed by conftest's close_figures


def oracle(layers, k, window=8):
    """The manager after the stream's first k ops, driven here (``replay`` on a fresh pool):
    its pool's reference counts, hashes and queue are the truth the figure must show."""
    pool = pg.BlockPool(16)
    manager = {pw.FULL: lambda: pg.FullAttentionManager(pool, 4),
               pw.WINDOW: lambda: pg.SlidingWindowManager(pool, window, 4),
               pw.SINK: lambda: pg.SinkFullAttentionManager(pool, 4, 4)}[layers]()
    pg.replay(manager, pg.chat_stream(4)[:k])
    return pool, manager


def faces(cell):
    return [to_rgba(p.get_facecolor()) for p in cell["stripes"] if p.get_visible()]


def shown(row):
    return [c for c in row["cells"] if c["edge"].get_visible()]


def move(w, **values):
    for key, value in values.items():
        w.controls[key].value = value


# ------------------------------------------------------------------ controls


def test_controls_are_named_sliders_over_the_stream(w):
    step, layers, window = (w.controls[k] for k in ("step", "layers", "window"))
    assert list(w.controls) == ["step", "window", "layers"]
    assert isinstance(step, ipywidgets.IntSlider) and (step.min, step.max) == (1, STEPS)
    assert isinstance(layers, ipywidgets.SelectionSlider)
    assert [o[1] for o in layers.options] == list(KINDS) == [
        "full attention", "sliding window", "full + sink block"]
    assert all(len(o[0]) <= 6 for o in layers.options)  # a slider's readout box holds the label
    assert isinstance(window, ipywidgets.IntSlider) and (window.min, window.max) == (1, 16)
    assert (step.value, layers.value, window.value) == (10, pw.WINDOW, 8)


@pytest.mark.parametrize("layers", KINDS)
def test_the_window_slider_is_disabled_exactly_when_the_layers_have_no_window(w, layers):
    move(w, layers=layers)
    assert w.controls["window"].disabled == (layers != pw.WINDOW)
    assert not w.controls["step"].disabled and not w.controls["layers"].disabled
    if layers != pw.WINDOW:  # a disabled control changes nothing
        before = w.readout
        move(w, window=3)
        assert w.readout == before


# ------------------------------------------------------------------ the figure is the replay


@pytest.mark.parametrize("layers,window", [(pw.FULL, 8), (pw.WINDOW, 8), (pw.WINDOW, 3),
                                           (pw.WINDOW, 16), (pw.SINK, 8)])
def test_every_step_shows_the_pool_and_tables_the_manager_holds(w, layers, window):
    move(w, layers=layers, window=window)
    for k in range(1, STEPS + 1):
        move(w, step=k)
        pool, manager = oracle(layers, k, window)
        sinks = getattr(manager, "sink_blocks", ())
        tables = {r: s.block_table for r, s in manager.requests.items()}
        assert w.axes[0].get_title().startswith(f"block pool after step {k} of {STEPS}: ")
        for b, cell in enumerate(w.artists["pool"]["cells"]):
            where = f"{layers} W={window} step {k} block {b}"
            assert cell["label"].get_text() == str(b), where
            ref = pool.ref_counts[b]
            if b == pg.NULL_BLOCK:
                assert faces(cell) == [to_rgba(plots.NULL_COLOUR)], where
            elif b in sinks:
                assert faces(cell) == [to_rgba(plots.SINK_COLOUR)], where
            elif ref:  # held: one part per holder, each in its request's colour
                holders = [r for r in IDS if b in tables.get(r, ())]
                assert len(holders) == ref, where
                assert faces(cell) == [to_rgba(COLOURS[r]) for r in holders], where
                assert cell["edge"].get_linestyle() == "-", where
            else:  # free: pale and dashed while cached, white and dashed when not
                assert b in pool.free_queue, where
                cached = pool.block_hashes[b] is not None
                assert cell["kind"] == ("cached" if cached else "free"), where
                assert (faces(cell) == [to_rgba(plots.FREE_COLOUR)]) != cached, where
                assert cell["edge"].get_linestyle() == "--", where
        next_up = [b for b, t in enumerate(w.artists["pool"]["notes"]) if "next" in t.get_text()]
        assert next_up == list(pool.free_queue[:1])
        for r, row in w.artists["tables"]["rows"].items():
            cells = shown(row)
            if r not in tables:
                assert not cells and row["status"].get_text() in ("not arrived", "finished")
                continue
            drawn = [c["label"].get_text().split("→")[-1] for c in cells]
            assert drawn == [str(b) for b in tuple(sinks) + tuple(tables[r])], (k, r)
            for c, b in zip(cells[len(sinks):], tables[r]):
                if b != pg.NULL_BLOCK:
                    assert faces(c) == faces(w.artists["pool"]["cells"][b]), (k, r, b)
            assert row["tokens"].get_text() == f"{manager.requests[r].num_computed} tokens"


def test_finished_and_waiting_rows_say_so(w):
    move(w, layers=pw.FULL, step=9)  # a finished, b live, c not yet arrived
    rows = w.artists["tables"]["rows"]
    assert rows["a"]["status"].get_text() == "finished"
    assert rows["c"]["status"].get_text() == "not arrived"
    assert rows["b"]["status"].get_text() == ""


@pytest.mark.parametrize("layers,step,rid,hit", [
    (pw.FULL, 6, "b", ["1", "2"]),  # b's system prompt: a's first two blocks
    (pw.FULL, 10, "c", ["1", "2", "3"]),  # c re-sends a's prompt: three blocks back from the queue
    (pw.WINDOW, 10, "c", ["0", "2", "3"]),  # the window's hit: a null, then the cached run
    (pw.SINK, 6, "b", ["2", "3"]),
    (pw.SINK, 10, "c", ["2", "3", "4"]),
])
def test_a_prefix_hit_outlines_the_slots_it_gave(w, layers, step, rid, hit):
    move(w, layers=layers, step=step)
    for r, row in w.artists["tables"]["rows"].items():
        outlined = [c["label"].get_text() for c in shown(row) if c["hit"]]
        assert outlined == (hit if r == rid else []), r
        for c in shown(row):
            assert (c["edge"].get_linewidth() > 2) == c["hit"]
    moved = dict(w.data)
    move(w, step=step + 1)  # the next step is no arrival: no outline
    assert not any(c["hit"] for row in w.artists["tables"]["rows"].values() for c in shown(row))
    assert moved["hit_tokens"] == 4 * len(hit)


def test_the_window_frees_blocks_into_null_slots_and_the_pool_notes_it(w):
    move(w, layers=pw.WINDOW, window=8, step=2)
    a = shown(w.artists["tables"]["rows"]["a"])
    assert [c["label"].get_text() for c in a] == ["1→0", "2→0", "3", "4"]
    assert [faces(c) for c in a[:2]] == [[to_rgba(plots.NULL_COLOUR)]] * 2
    notes = [t.get_text() for t in w.artists["pool"]["notes"]]
    assert notes[1] == "freed\nnext" and notes[2] == "freed"
    # block 2 was cached: free, still cached (pale); block 1 was not: white, next in the queue
    assert w.artists["pool"]["cells"][2]["kind"] == "cached"
    assert w.artists["pool"]["cells"][1]["kind"] == "free"
    move(w, step=3)  # the next decode fills the next slot with the queue's front, block 1
    assert [c["label"].get_text() for c in shown(w.artists["tables"]["rows"]["a"])] == \
        ["0", "0", "3", "4", "1"]
    assert w.artists["pool"]["notes"][1].get_text() == "new"


def test_sinks_are_read_before_slot_0(w):
    move(w, layers=pw.SINK, step=6)
    for r in ("a", "b"):
        first = shown(w.artists["tables"]["rows"][r])[0]
        assert first["label"].get_text() == "1" and first["kind"] == "sink"
        assert first["edge"].get_x() < 0  # left of slot 0
    assert w.artists["tables"]["headers"][0].get_text() == "sink"
    move(w, layers=pw.FULL)
    assert w.artists["tables"]["headers"][0].get_text() == ""
    assert all(c["edge"].get_x() > 0 for c in shown(w.artists["tables"]["rows"]["a"]))


# ------------------------------------------------------------------ the readout


def test_the_readout_at_the_first_state(w):
    assert w.readout == "\n".join([
        "step 10 of 16: c arrives with 15 tokens (sliding window W = 8; 16 blocks of 4 tokens)",
        "prefix hit 12 tokens = blocks 0, 2, 3; new blocks 1; freed none",
        "a: finished",
        "b: table 0, 6, 7, 8 (13 tokens computed)",
        "c: table 0, 2, 3, 1 (15 tokens computed)",
        "free queue, next first: 4, 9, 10, 11, 12, 13, 14, 15, 5",
        "cached (a prefix hit can take them): 2, 3, 5, 6; free among them: 5",
    ])


@pytest.mark.parametrize("layers", KINDS)
def test_the_readout_is_the_replay_at_every_step(w, layers):
    move(w, layers=layers)
    steps = pg.replay(oracle(layers, 0)[1], pg.chat_stream(4))
    for k, s in enumerate(steps, 1):
        move(w, step=k)
        lines = w.readout.splitlines()
        assert 3 <= len(lines) <= 12
        assert lines[0].startswith(f"step {k} of {STEPS}: {s.op.request_id} ")
        assert f"free queue, next first: {', '.join(map(str, s.free_queue)) or 'none'}" in lines
        cached = ", ".join(map(str, sorted(s.cached))) or "none"
        assert lines[-1].startswith(f"cached (a prefix hit can take them): {cached};")
        for r in IDS:
            line = next(x for x in lines if x.startswith(f"{r}: "))
            if r in s.tables:
                assert ", ".join(map(str, s.tables[r])) in line
                assert f"({s.num_computed[r]} tokens computed)" in line
            else:
                assert line in (f"{r}: finished", f"{r}: not arrived")
        if s.allocation is not None:
            freed = ", ".join(map(str, s.allocation.freed_blocks)) or "none"
            assert f"freed {freed}" in lines[1]
            assert f"new blocks {', '.join(map(str, s.allocation.new_blocks)) or 'none'}" \
                in lines[1]
        if s.op.kind == "arrive":
            assert f"prefix hit {s.allocation.hit_tokens} tokens" in lines[1]
        if layers == pw.SINK:
            assert all("sink 1 | " in x for x in lines if x.startswith(tuple(f"{r}: " for r in s.tables)))


def test_a_finish_says_which_blocks_went_free_and_which_another_request_keeps(w):
    move(w, layers=pw.FULL, step=9)
    assert w.readout.splitlines()[1] == \
        "its blocks go back to the pool: freed 5, 4, 3; 1, 2 still held by b"
    notes = [t.get_text() for t in w.artists["pool"]["notes"]]
    assert [b for b, n in enumerate(notes) if "freed" in n] == [3, 4, 5]


def test_the_window_slider_changes_the_window_tables(w):
    move(w, layers=pw.WINDOW, window=16, step=6)
    assert "sliding window W = 16" in w.readout
    assert "prefix hit 8 tokens" in w.readout  # a longer window keeps a's system prompt
    move(w, window=8)
    assert "prefix hit 0 tokens" in w.readout


# ------------------------------------------------------------------ drawing in place, fitting


def test_redraws_update_the_same_artists_in_place(w):
    fig, axes, figures = w.fig, w.axes, plt.get_fignums()
    counts = [(len(ax.patches), len(ax.texts)) for ax in fig.axes]
    cells = w.artists["pool"]["cells"][3]["stripes"][0]
    for layers in KINDS:
        for k in (1, 6, 9, 16):
            move(w, layers=layers, step=k)
    assert w.fig is fig and w.axes == axes and plt.get_fignums() == figures  # no new figure
    assert [(len(ax.patches), len(ax.texts)) for ax in fig.axes] == counts
    assert w.artists["pool"]["cells"][3]["stripes"][0] is cells and cells.axes is axes[0]


def test_the_figure_fits_a_laptop_and_its_text_reads(w):
    width, height = w.fig.get_size_inches() * w.fig.dpi
    assert width <= 930 and height <= 400
    assert w.smallest_text_px() >= plots.MIN_FONT * w.fig.dpi / 72 - 1e-9
    for layers, k in ((pw.FULL, 9), (pw.WINDOW, 2), (pw.SINK, 10)):
        move(w, layers=layers, step=k)
        w.fig.canvas.draw()
        renderer = w.fig.canvas.get_renderer()
        (legend,) = w.fig.legends
        key = legend.get_window_extent()
        assert key.x1 <= width and key.y0 >= 0 and key.y1 <= height
        for ax in w.axes:
            assert not key.overlaps(ax.get_window_extent())  # the key is off the data
            tight = ax.get_tightbbox(renderer)
            assert tight.x0 >= 0 and tight.x1 <= width and tight.y0 >= 0 and tight.y1 <= height
        texts = [t for ax in w.axes for t in ax.texts if t.get_visible() and t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in texts]
        for i, (t, box) in enumerate(zip(texts, boxes)):
            assert not box.overlaps(key), t.get_text()
            assert box.x0 >= 0 and box.x1 <= width, t.get_text()
            for u, other in zip(texts[i + 1:], boxes[i + 1:]):
                assert not box.overlaps(other), (t.get_text(), u.get_text())
        pool_bottom = min(b.y0 for t, b in zip(texts, boxes) if t.axes is w.axes[0])
        assert pool_bottom > w.axes[1].title.get_window_extent(renderer).y1


def test_every_text_reads_at_wcag_aa_on_what_is_under_it(w):
    """Labels on a block: on each of its colours; everything else on the white figure."""
    for layers, k in ((pw.FULL, 6), (pw.WINDOW, 10), (pw.SINK, 12)):
        move(w, layers=layers, step=k)
        on_cells = set()
        cells = w.artists["pool"]["cells"] + [c for row in w.artists["tables"]["rows"].values()
                                              for c in row["cells"]]
        for c in cells:
            on_cells.add(id(c["label"]))
            for face in faces(c):
                assert contrast_ratio(c["label"].get_color(), face) >= 4.5, c["label"].get_text()
        texts = [t for t in w.fig.findobj(plt.Text) if t.get_visible() and t.get_text().strip()]
        for t in texts:
            if id(t) not in on_cells:
                assert contrast_ratio(t.get_color(), "white") >= 4.5, t.get_text()


# ------------------------------------------------------------------ bad inputs
# The factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py).
from _bad import Case, bad_input_tests, choices, ints  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BAD_INPUTS = [
    Case(pw.stream_explorer, kwargs=dict(step=3, layers=pw.SINK, window=5),
         bad=dict(step=ints(minimum=1, maximum=STEPS), layers=choices(KINDS),
                  window=ints(minimum=1, maximum=16), block_size=ints(minimum=1, maximum=16),
                  num_blocks=ints(minimum=2, maximum=32) | st.sampled_from([2, 5, 8]),
                  sink_tokens=ints(minimum=1) | st.sampled_from([2, 3, 6, 400]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


def test_a_pool_too_small_for_the_stream_names_num_blocks():
    with pytest.raises(ValueError, match=r"^num_blocks: 8 blocks are too few"):
        pw.stream_explorer(num_blocks=8)
