"""lessonlib.plots.paged: the pool's squares and the tables' slots draw the looks they are given,
in place, with labels that read on every colour."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_rgba

from lessonlib.plots import paged as plots
from lessonlib.plots._style import contrast_ratio

IDS = ["a", "b", "c"]
COLOURS = plots.request_colours(IDS)


@pytest.fixture
def axes():
    fig, ax = plt.subplots(figsize=(9.2, 3.9))
    yield ax
    plt.close(fig)


def faces(cell):
    return [to_rgba(p.get_facecolor()) for p in cell["stripes"] if p.get_visible()]


def test_request_colours_are_distinct_and_named_in_order():
    assert list(COLOURS) == IDS and len(set(COLOURS.values())) == 3
    assert {plots.NULL_COLOUR, plots.SINK_COLOUR, plots.FREE_COLOUR}.isdisjoint(COLOURS.values())
    with pytest.raises(ValueError, match="request_ids"):
        plots.request_colours("abcde")


def test_block_colours_by_kind():
    assert plots.block_colours("held", ("a", "b"), COLOURS) == [COLOURS["a"], COLOURS["b"]]
    assert plots.block_colours("null", (), COLOURS) == [plots.NULL_COLOUR]
    assert plots.block_colours("sink", (), COLOURS) == [plots.SINK_COLOUR]
    assert plots.block_colours("free", (), COLOURS) == [plots.FREE_COLOUR]
    pale = plots.block_colours("cached", ("a",), COLOURS)
    assert len(pale) == 1 and pale[0] != to_rgba(COLOURS["a"])[:3]
    # the tint is the holder's colour, lighter: the same hue, nearer white
    a, p = np.array(to_rgba(COLOURS["a"])[:3]), np.array(pale[0])
    assert (p >= a - 1e-12).all() and np.argmax(a) == np.argmax(p)
    with pytest.raises(ValueError, match="kind"):
        plots.block_colours("busy", (), COLOURS)


def test_every_label_reads_on_every_face_it_can_have():
    """A label is black or white; on a split cell it must read on both halves (WCAG AA)."""
    looks = [("null", ()), ("sink", ()), ("free", ())] + \
        [(k, h) for k in ("held", "cached") for h in (("a",), ("b",), ("c",), ("a", "b"),
                                                     ("b", "c"), ("a", "c"), ("a", "b", "c"))]
    fig, ax = plt.subplots()
    art = plots.draw_pool(ax, len(looks))
    plots.update_pool(art, looks, [""] * len(looks), COLOURS)
    for cell in art["cells"]:
        for face in faces(cell):
            assert contrast_ratio(cell["label"].get_color(), face) >= 4.5, (cell["kind"], face)
    plt.close(fig)


def test_pool_squares_show_each_look_and_note(axes):
    looks = [("null", ()), ("sink", ()), ("held", ("a",)), ("held", ("a", "b")),
             ("cached", ("c",)), ("free", ())]
    notes = ["", "", "new", "", "freed", "next"]
    art = plots.draw_pool(axes, 6)
    plots.update_pool(art, looks, notes, COLOURS)
    cells = art["cells"]
    assert [c["label"].get_text() for c in cells] == [str(b) for b in range(6)]
    assert faces(cells[0]) == [to_rgba(plots.NULL_COLOUR)]
    assert faces(cells[1]) == [to_rgba(plots.SINK_COLOUR)]
    assert faces(cells[2]) == [to_rgba(COLOURS["a"])]
    assert faces(cells[3]) == [to_rgba(COLOURS["a"]), to_rgba(COLOURS["b"])]
    left, right = cells[3]["stripes"][:2]  # the two halves side by side, covering the square
    assert left.get_x() + left.get_width() == pytest.approx(right.get_x())
    assert left.get_width() + right.get_width() == pytest.approx(cells[3]["edge"].get_width())
    assert faces(cells[5]) == [to_rgba(plots.FREE_COLOUR)]
    assert [c["edge"].get_linestyle() for c in cells] == ["-", "-", "-", "-", "--", "--"]
    assert [t.get_text() for t in art["notes"]] == notes
    assert axes.get_xlim() == (-0.5, 5.5)


def test_pool_updates_in_place(axes):
    art = plots.draw_pool(axes, 4)
    patches, texts = list(axes.patches), list(axes.texts)
    plots.update_pool(art, [("null", ())] + [("held", ("a",))] * 3, [""] * 4, COLOURS)
    plots.update_pool(art, [("null", ())] + [("free", ())] * 3, ["next", "", "", ""], COLOURS)
    assert list(axes.patches) == patches and list(axes.texts) == texts
    assert faces(art["cells"][1]) == [to_rgba(plots.FREE_COLOUR)]


def _table_artists(ax, sink_slots=1):
    return plots.draw_tables(ax, IDS, slots=5, sink_slots=sink_slots, block_size=4)


def test_tables_draw_each_row_its_slots_the_sink_before_slot_0_and_the_bar(axes):
    art = _table_artists(axes)
    rows = {"a": {"first": -1, "slots": [("sink", (), "1", False), ("held", ("a", "b"), "2", True),
                                         ("null", (), "3→0", False), ("held", ("a",), "4", False)],
                  "tokens": 15, "computed": 11},
            "b": "not arrived", "c": "finished"}
    plots.update_tables(art, rows, COLOURS, sinks_shown=True)
    a = art["rows"]["a"]
    shown = [c for c in a["cells"] if c["edge"].get_visible()]
    assert [c["label"].get_text() for c in shown] == ["1", "2", "3→0", "4"]
    assert shown[0]["edge"].get_x() < 0 < shown[1]["edge"].get_x()  # the sink before slot 0
    assert faces(shown[0]) == [to_rgba(plots.SINK_COLOUR)]
    assert faces(shown[2]) == [to_rgba(plots.NULL_COLOUR)]
    assert [c["edge"].get_linewidth() > 2 for c in shown] == [False, True, False, False]
    assert a["bar"].get_x() == -1 and a["bar"].get_width() == 15 / 4  # tokens in slot units
    assert a["track"].get_width() == 4
    assert a["tokens"].get_text() == "11 tokens" and a["status"].get_text() == ""
    for r, status in (("b", "not arrived"), ("c", "finished")):
        row = art["rows"][r]
        assert row["status"].get_text() == status and row["tokens"].get_text() == ""
        assert not any(c["edge"].get_visible() for c in row["cells"])
        assert row["bar"].get_width() == 0
    assert [h.get_text() for h in art["headers"]] == ["sink", "0-3", "4-7", "8-11", "12-15",
                                                      "16-19"]
    plots.update_tables(art, {r: "finished" for r in IDS}, COLOURS, sinks_shown=False)
    assert art["headers"][0].get_text() == ""


def test_tables_update_in_place_and_keep_their_limits(axes):
    art = _table_artists(axes, sink_slots=0)
    limits, patches, texts = (axes.get_xlim(), axes.get_ylim()), list(axes.patches), \
        list(axes.texts)
    for n in (1, 3, 5):
        rows = {r: {"first": 0, "slots": [("held", (r,), str(j + 1), False) for j in range(n)],
                    "tokens": 4 * n - 1, "computed": 4 * n - 1} for r in IDS}
        plots.update_tables(art, rows, COLOURS, sinks_shown=False)
        assert sum(c["edge"].get_visible() for c in art["rows"]["c"]["cells"]) == n
    assert (axes.get_xlim(), axes.get_ylim()) == limits
    assert list(axes.patches) == patches and list(axes.texts) == texts


def test_the_key_names_every_request_and_look_in_readable_type(axes):
    legend = plots.draw_key(axes, IDS, COLOURS)
    labels = [t.get_text() for t in legend.get_texts()]
    for r in IDS:
        assert f"held by {r}" in labels
    for words in ("shared", "cached", "free", "null", "sink", "prefix hit", "tokens computed"):
        assert any(words in lab for lab in labels), words
    assert min(t.get_fontsize() for t in legend.get_texts()) >= plots.MIN_FONT
    assert not axes.axison
