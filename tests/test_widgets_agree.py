"""The figure and the readout of every notebook widget tell one story at every slider extreme.

Each notebook's widget is built as the notebook builds it (``_support.notebook_explorers``),
once, and its controls are moved through every combination of {low end, starting value, high
end} (every option of a row of toggle buttons, a checkbox both ways): each control at each
end on its own, all of them at their ends together, and the moves between. At every setting
the numbers the readout prints are read back from the text and compared with what the
figure's artists draw (a marker's y, a curve at the cursor, a room line's level, a band's
ends, a heat map's cells, a text's position), to the readout's printed precision
(``agree``). Each widget has at least one such tie that a readout computed by another rule
than its figure would break.

Two rules hold for every widget at every setting: nothing the readout prints a number for is
drawn as NaN (``agree`` checks the drawn value is finite, and every drawn line, patch and
image is finite except the gaps a widget draws on purpose, ``gaps``); and the readout says
"nan" or "inf" only where the figure shows the same gap.
"""
import itertools
import math
import re

import ipywidgets as widgets
import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, StepPatch
from matplotlib.text import Text

from _support import notebook_explorers
from lessonlib.attention import TILE_FULL, TILE_MASKED, TILE_SKIPPED
from lessonlib.kv_cache import kv_cache_bytes
from lessonlib.models import load_model
from lessonlib.plots.kv_cache import _cells_filled, _head_map_centres
from lessonlib.plots.paged import request_colours
from lessonlib.plots.windows import bar_heights
from lessonlib.traffic import GIB, MIB
from lessonlib.widgets import kv_cache as kvw

TWO_PI = 2.0 * math.pi
NUM = r"-?[\d,]*\.?\d+(?:e[-+]?\d+)?"  # a number as the readouts print it: 1,234.5, 8.84e-05


# ------------------------------------------------------------------ reading the readout


def _num(s):
    return float(s.replace(",", "").replace("−", "-"))


def _half_unit(s):
    """Half the last printed digit of ``s``: how far the value may be from what is printed."""
    mantissa, _, exponent = s.replace(",", "").lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def agree(printed, drawn, what):
    """The readout's ``printed`` number is the figure's ``drawn`` value at the printed
    precision (and the figure draws a number there, not a gap)."""
    drawn = float(drawn)
    assert np.isfinite(drawn), f"{what}: the readout prints {printed}, the figure draws {drawn}"
    gap = abs(_num(printed) - drawn)
    assert gap <= _half_unit(printed) * (1 + 1e-9) + 1e-12 * abs(drawn), (
        f"{what}: the readout prints {printed}, the figure draws {drawn!r}")


def agree_angle(printed, drawn, what):
    """``agree`` for an angle on a clock face: equal modulo 2 pi."""
    drawn = float(drawn)
    assert np.isfinite(drawn), f"{what}: the readout prints {printed}, the figure draws {drawn}"
    gap = abs((_num(printed) - drawn + math.pi) % TWO_PI - math.pi)
    assert gap <= _half_unit(printed) * (1 + 1e-9) + 1e-12, (
        f"{what}: the readout prints {printed} rad, the figure draws {drawn!r} rad")


def find(pattern, text, what):
    """The match of ``pattern`` (multiline) in the readout ``text``; none is a failure."""
    m = re.search(pattern, text, re.M)
    assert m, f"{what}: no match for {pattern!r} in the readout:\n{text}"
    return m


def marker(artists, label):
    """(x, y) of the one marker a ``draw_log_curves`` curve carries."""
    assert label in artists["markers"], f"the figure has no curve {label!r}"
    line = artists["markers"][label]
    x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    assert x.size == y.size == 1, f"{label}: {x.size} markers"
    return x[0], y[0]


def at_cursor(artists, n, what):
    """The cursor and every curve's marker stand at ``n``."""
    assert set(np.asarray(artists["cursor"].get_xdata(), float)) == {float(n)}, (
        f"{what}: the readout says {n:,}, the cursor is at {artists['cursor'].get_xdata()}")
    for label in artists["markers"]:
        assert marker(artists, label)[0] == n, f"{what}: the {label!r} marker is not at {n:,}"


def curve_at(line, x, what):
    """A curve's y at one of its x values."""
    xs, ys = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    hit = np.flatnonzero(xs == x)
    assert hit.size == 1, f"{what}: the curve has no point at {x}"
    return ys[hit[0]]


def pair_list(text):
    """'46, 48, 50-52' -> [46, 48, 50, 51, 52]; 'none' -> []."""
    if text.strip() == "none":
        return []
    out = []
    for part in text.split(", "):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


# ------------------------------------------------------------------ notebook 01: memory


def check_memory(w):
    text = w.readout
    mem, flops = w.artists["memory"], w.artists["flops"]
    h = find(r"^n = ([\d,]+) tokens, (\d+) query heads x d = (\d+) \(q_dim = ([\d,]+)\)$",
             text, "n")
    n, heads = int(_num(h[1])), int(h[2])
    assert int(_num(h[4])) == heads * int(h[3]), "q_dim = heads x d"
    at_cursor(mem, n, "memory panel")
    at_cursor(flops, n, "FLOP panel")
    m = find(rf"whole prompt ({NUM}) GiB, -ub (\d+) slice ({NUM}) GiB, decode row ({NUM}) MiB",
             text, "S")
    agree(m[1], marker(mem, "S, whole prompt")[1], "S, whole prompt (GiB)")
    agree(m[3], marker(mem, f"S, -ub {m[2]} slice")[1], f"S, -ub {m[2]} slice (GiB)")
    agree(m[4], marker(mem, "S, decode row")[1] * 1024, "S, decode row (MiB)")
    # The heads the readout names are the figure's: one FP32 score per head and key
    assert marker(mem, "S, decode row")[1] * GIB == pytest.approx(4 * heads * n, rel=1e-12), (
        f"{heads} heads x {n:,} keys x 4 bytes: the decode-row marker is at "
        f"{marker(mem, 'S, decode row')[1] * GIB:,.0f} bytes")
    kv = find(rf"KV cache, all layers: ({NUM}) GiB", text, "KV cache")
    agree(kv[1], marker(mem, "KV cache (F16)")[1], "KV cache (GiB)")
    p = find(rf"prefill: weights ({NUM}) TFLOP, attention ({NUM}) TFLOP = ({NUM})% of the total",
             text, "prefill")
    wy, ay = marker(flops, "weights")[1], marker(flops, "attention (causal)")[1]
    agree(p[1], wy, "weights (TFLOP)")
    agree(p[2], ay, "attention (TFLOP)")
    agree(p[3], 100 * ay / (wy + ay), "attention share (%)")
    # The crossover the readout names is where the drawn attention curve rises above the
    # weights curve: above it at every drawn n past the crossover, below it before.
    cross = _num(find(rf"overtakes the weights at n = .* = ({NUM})$", text, "crossover")[1])
    lines = flops["lines"]
    for x, wv, av in zip(lines["weights"].get_xdata(), lines["weights"].get_ydata(),
                         lines["attention (causal)"].get_ydata()):
        assert (av > wv) == (x > cross), (
            f"crossover: the readout says {cross:,.0f}, at n = {x:,.0f} the figure draws "
            f"attention {av} TFLOP against weights {wv}")


# ------------------------------------------------------------------ notebook 02: online softmax


def check_online_softmax(w):
    text = w.readout
    bars = list(w.artists["terms"])
    n = len(bars) - 1  # the keys' bars, then the sink's
    heights = np.array([b.get_height() for b in bars], float)
    keys_h, sink_h = heights[:n], heights[n]
    labels = [t.get_text() for t in w.axes[0].get_xticklabels()]
    scores = [_num(re.search(r"\((.+)\)", lab)[1]) for lab in labels[:n]]
    m = find(rf"^after key (\d+) \(x = ({NUM})\): m = ({NUM}), l = ({NUM}), "
             rf"acc = \(({NUM}), ({NUM})\)", text, "state")
    k = int(m[1])
    assert np.count_nonzero(keys_h) == k + 1 and keys_h[k] > 0 and not keys_h[k + 1:].any(), (
        f"the readout has read keys 0..{k}, the figure draws bars {heights}")
    agree(m[2], scores[k], f"score of key {k} (its bar's label)")
    plane = w.artists["plane"]
    out = find(rf"output acc / l = \(({NUM}), ({NUM})\)", text, "output")
    current = np.column_stack([plane["current"].get_xdata(), plane["current"].get_ydata()])
    path = np.column_stack([plane["path"].get_xdata(), plane["path"].get_ydata()])
    assert current.shape == (1, 2) and len(path) == k + 1, "one output, one point per key read"
    for i in range(2):
        agree(out[i + 1], current[0, i], f"output[{i}] (the output marker)")
        agree(out[i + 1], path[-1, i], f"output[{i}] (the path's end)")
    with_sink = re.search(rf"with the sink \(({NUM}), ({NUM})\)", text)
    sink_xy = np.column_stack([plane["sink"].get_xdata(), plane["sink"].get_ydata()])
    line = re.search(rf"^sink z = ({NUM}): m = ({NUM}), l = ({NUM}) e\^({NUM}) \+ e\^({NUM}) = "
                     rf"({NUM}); the sink takes ({NUM})% of the weight$", text, re.M)
    if with_sink is None:
        assert "no sink" in text and line is None
        assert sink_xy.size == 0, f"no sink in the readout, the figure draws it at {sink_xy}"
        assert sink_h == 0, f"no sink in the readout, its bar is {sink_h} high"
        agree(m[4], keys_h.sum(), "l (the sum of the key bars)")
        m_top, l_keys = m[3], keys_h.sum()
    else:
        assert line is not None and sink_xy.shape == (1, 2)
        for i in range(2):
            agree(with_sink[i + 1], sink_xy[0, i], f"output with the sink[{i}] (its star)")
        # The bars are exp(x_j - m_s) and exp(z - m_s): the keys' sum is l e^(m - m_s), the
        # sink's bar e^(z - m_s), their total the new l, the sink's share of it its weight.
        agree(line[3], keys_h.sum() * math.exp(-_num(line[4])), "l (the key bars x e^(m_s - m))")
        agree(line[5], math.log(sink_h), "z - m_s (the sink bar's log)")
        agree(line[6], heights.sum(), "l with the sink (the sum of every bar)")
        agree(line[7], 100 * sink_h / heights.sum(), "the sink's share (%)")
        m_top, l_keys = line[2], keys_h.sum() * math.exp(-_num(line[4]))
        if np.isclose(sink_h, 1.0, rtol=1e-12, atol=0):
            agree(m_top, _num(line[1]), "m_s (the sink's bar is the one at 1)")
    top = np.flatnonzero(np.isclose(keys_h, 1.0, rtol=1e-12, atol=0))  # w_j x l: rounded
    assert top.size or np.isclose(sink_h, 1.0, rtol=1e-12), f"no bar at exp(0) = 1: {heights}"
    for j in top:  # a bar at exp(0) is a key at the running max
        agree(m_top, scores[j], f"m (key {j}'s bar is at 1)")
    agree(m[4], l_keys, "l (the key bars, before the sink)")
    for i in range(2):  # acc = l x output, from the bars and the output marker
        agree(m[5 + i], l_keys * current[0, i], f"acc[{i}] (l from the bars x the output)")


# ------------------------------------------------------------------ notebook 03: tiles


def _poly_area(path):
    area = 0.0
    for poly in path.to_polygons(closed_only=False):
        x, y = poly[:, 0], poly[:, 1]
        area += abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2
    return area


def check_tiled(w):
    text = w.readout
    ax_map = w.axes[0]
    g = find(r"^n = ([\d,]+), B = (\d+): ceil\(n / B\) = (\d+) query blocks?"
             r"(?: \(the last holds (\d+) rows\))? x (\d+) key blocks?$", text, "grid")
    n, block, t = int(_num(g[1])), int(g[2]), int(g[3])
    assert int(g[5]) == t, "as many key blocks as query blocks"
    title = re.fullmatch(r"(\d+) x (\d+) tiles \(B = (\d+)\)", ax_map.get_title())
    assert title and (int(title[1]), int(title[2]), int(title[3])) == (t, t, block), (
        f"title {ax_map.get_title()!r}, readout t = {t}, B = {block}")
    # The tiles the map draws, read at the centre of each tile the readout counts (t x t
    # blocks of B tokens, the last one ragged), and the area each kind of tile covers.
    edges = np.minimum(np.arange(t + 1) * block, n) / n
    mid = (edges[:-1] + edges[1:]) / 2
    size = np.diff(edges)
    qy, kx = np.meshgrid(mid, mid, indexing="ij")
    centres = np.column_stack([kx.ravel(), qy.ravel()])
    cell_area = np.outer(size, size).ravel()
    drawn = np.full(t * t, -1)
    for code, patch in w.artists["map"]["tiles"].items():
        inside = patch.get_path().contains_points(centres)
        assert not (inside & (drawn >= 0)).any(), "two kinds of tile on one cell"
        drawn[inside] = code
        assert _poly_area(patch.get_path()) == pytest.approx(cell_area[inside].sum(), abs=1e-9), (
            f"tiles of code {code}: the drawn area is not that of the {inside.sum()} tiles")
    assert (drawn >= 0).all(), "a tile the readout counts is not drawn"
    c = find(rf"^(causal|no mask): ([\d,]+) of ([\d,]+) tiles computed \(([\d,]+) of them need "
             rf"the mask\), ([\d,]+) skipped \(({NUM})%\)", text, "tiles")
    skipped, masked = int((drawn == TILE_SKIPPED).sum()), int((drawn == TILE_MASKED).sum())
    assert [int(_num(c[i])) for i in (2, 3, 4, 5)] == [t * t - skipped, t * t, masked, skipped], (
        f"the map draws {t * t - skipped} computed, {masked} masked, {skipped} skipped tiles")
    agree(c[6], 100 * skipped / (t * t), "skipped (%)")
    causal = c[1] == "causal"
    ratio = w.artists["ratio"]
    at_cursor(ratio, block, "ratio panel")
    f = find(r"^floats moved per head: naive ([\d,]+), tiled ([\d,]+)", text, "floats")
    mine = "causal" if causal else "no mask"
    assert marker(ratio, mine)[1] == pytest.approx(_num(f[1]) / _num(f[2]), rel=1e-12), (
        f"naive / tiled = {f[1]} / {f[2]}, the {mine!r} marker is at {marker(ratio, mine)[1]}")
    if causal:
        r = find(rf"naive / tiled: causal ({NUM}) \(4B/d = ({NUM})\), no mask ({NUM}) "
                 rf"\(2B/d = ({NUM})\)", text, "ratio")
        agree(r[1], marker(ratio, "causal")[1], "causal ratio")
        agree(r[2], 2 * marker(ratio, "2B/d")[1], "4B/d (twice the 2B/d marker)")
        agree(r[3], marker(ratio, "no mask")[1], "no-mask ratio")
        agree(r[4], marker(ratio, "2B/d")[1], "2B/d")
    else:
        r = find(rf"naive / tiled = ({NUM}) \(2B/d = ({NUM})\)", text, "ratio")
        agree(r[1], marker(ratio, "no mask")[1], "no-mask ratio")
        agree(r[2], marker(ratio, "2B/d")[1], "2B/d")
    more = "tiling moves MORE floats" in text
    assert more == (marker(ratio, mine)[1] < 1), "MORE floats: the marker under break-even"


# ------------------------------------------------------------------ notebook 04: tile map


def check_tile_map(w):
    text = w.readout
    codes = np.asarray(w.artists["map"]["image"].get_array())
    g = find(r"^grid axis 0 = cdiv\(([\d,]+), (\d+)\) = (\d+) programs, (\d+) key blocks of "
             r"(\d+)", text, "grid")
    n, t_q, t_k = int(_num(g[1])), int(g[3]), int(g[4])
    assert int(g[2]) == int(g[5]) and -(-n // int(g[2])) == t_q == t_k
    assert codes.shape == (t_q, t_k), f"the readout's {t_q} x {t_k} grid, the map {codes.shape}"
    c = find(rf"^(.*): ([\d,]+) of ([\d,]+) tiles computed \(({NUM})%\)$", text, "tiles")
    title = re.fullmatch(r"(\d+) x (\d+) tiles: (.*)", w.axes[0].get_title())
    assert title and (int(title[1]), int(title[2]), title[3]) == (t_q, t_k, c[1]), (
        f"title {w.axes[0].get_title()!r} against the readout's {t_q} x {t_k}, {c[1]!r}")
    computed, dense = int((codes != TILE_SKIPPED).sum()), codes.size
    assert (int(_num(c[2])), int(_num(c[3]))) == (computed, dense), (
        f"the readout's {c[2]} of {c[3]}, the map's {computed} of {dense}")
    agree(c[4], 100 * computed / dense, "computed (%)")
    k = find(r"^([\d,]+) of them with the mask, ([\d,]+) without", text, "kinds")
    assert (int(_num(k[1])), int(_num(k[2]))) == (int((codes == TILE_MASKED).sum()),
                                                  int((codes == TILE_FULL).sum()))
    # The last program's stretches are its row of the map: interior blocks unmasked, the
    # other named blocks masked, the rest skipped.
    v = find(r"^pid_m = (\d+) \(the last\) visits: (.*)$", text, "last program")
    last = int(v[1])
    assert last == t_q - 1
    row = np.full(t_k, TILE_SKIPPED)
    if v[2] != "nothing":
        for part in v[2].split(" | "):
            s = re.fullmatch(r"(.+) (\d+)(?:\.\.(\d+))?", part)
            a, b = int(s[2]), int(s[3] or s[2])
            assert 0 <= a <= b < t_k, f"pid_m = {last} visits blocks {a}..{b} of {t_k}"
            assert (row[a:b + 1] == TILE_SKIPPED).all(), f"pid_m = {last}: block named twice"
            row[a:b + 1] = TILE_FULL if s[1] == "interior" else TILE_MASKED
    assert (codes[last] == row).all(), (
        f"pid_m = {last} visits {v[2]!r}, its row of the map is {codes[last].tolist()}")
    if c[1].startswith("causal"):  # the diagonal's edge runs to key n of t_k x B tokens
        block = int(g[5])
        ex, ey = w.artists["map"]["edges"].get_data()
        assert (ex[0], ex[1], ey[1]) == pytest.approx(
            (0.5 / (t_k * block), n / (t_k * block), (n - 0.5) / (t_k * block)), rel=1e-12), (
            f"the diagonal edge is not that of n = {n:,} in blocks of {block}")
    marks, texts = w.artists["map"]["index"]["y"]
    assert texts[len(marks.get_ydata()) - 1].get_text() == str(last)
    assert marks.get_ydata()[-1] == pytest.approx((last + 0.5) / t_q)
    work = w.artists["work"]
    at_cursor(work, n, "work panel")
    agree(c[2], marker(work, "current settings")[1], "tiles computed (the current marker)")
    agree(c[3], marker(work, "no mask (dense)")[1], "dense tiles (the dense marker)")
    d = find(rf"^doubling n to ([\d,]+): dense x({NUM}), causal x({NUM}), current settings "
             rf"x({NUM})", text, "doubling")
    two_n = _num(d[1])
    assert two_n == 2 * n
    for label, printed in (("no mask (dense)", d[2]), ("causal only", d[3]),
                           ("current settings", d[4])):
        line = work["lines"][label]
        if two_n in line.get_xdata():  # the figure draws 2n: the curve climbs by the factor
            agree(printed, curve_at(line, two_n, label) / curve_at(line, n, label),
                  f"{label}: growth from n to 2n")


# ------------------------------------------------------------------ notebook 05: KV cache


def _line_named(lines, prefix):
    (label,) = [k for k in lines if k.startswith(prefix)]
    return label


def check_kv_cache(w):
    text = w.readout
    sizes = w.artists["sizes"]
    h = find(r"^h_kv = (\d+) KV heads \(\w+, (.*)\): (.*) = ([\d,]+) bytes/token "
             rf"\(({NUM}) KiB\)$", text, "h_kv")
    h_kv, per_token = int(h[1]), int(_num(h[4]))
    widths = eval(h[3].replace("x", "*"), {"__builtins__": {}})  # 2 x 32 x 8 x 128 x 2
    assert widths == per_token, f"{h[3]} = {widths:,}, not {per_token:,} bytes/token"
    agree(h[5], per_token / 1024, "bytes/token in KiB")
    a = find(rf"^at n = ([\d,]+) tokens: ({NUM}) GiB   \(MHA ({NUM}) GiB, MQA ({NUM}) GiB, .+ MLA "
             rf"({NUM}) GiB\)$", text, "sizes")
    n = int(_num(a[1]))
    at_cursor(sizes, n, "size panel")
    lines = sizes["lines"]
    slider = marker(sizes, "h_kv from the slider")[1]
    agree(a[2], slider, "the slider's cache (GiB)")
    agree(a[3], marker(sizes, _line_named(lines, "MHA"))[1], "MHA (GiB)")
    agree(a[4], marker(sizes, _line_named(lines, "MQA"))[1], "MQA (GiB)")
    agree(a[5], marker(sizes, _line_named(lines, "MLA"))[1], "MLA (GiB)")
    assert slider == pytest.approx(per_token * n / GIB, rel=1e-12), (
        f"{per_token:,} bytes/token x {n:,} tokens, the slider's curve at n: {slider} GiB")
    # The head map: query head h filled in row h // group, and nowhere else.
    ax_map = w.axes[1]
    hq = int(round(ax_map.get_xlim()[1] + 0.5))
    group = int(find(r"^query head h reads KV head h // (\d+): (.*)$", text, "map")[1])
    filled = _cells_filled(w.artists["map"]["cells"],
                          _head_map_centres(hq, h_kv)).reshape(h_kv, hq)
    expected = np.arange(h_kv)[:, None] == (np.arange(hq) // group)[None, :]
    assert (filled == expected).all(), f"h // {group} over {h_kv} rows: the map is {filled}"
    for a_, b_, kv in re.findall(r"(\d+)(?:-(\d+))? -> (\d+)", text.splitlines()[-1]):
        heads = list(range(int(a_), int(b_ or a_) + 1))
        assert np.flatnonzero(filled[int(kv)]).tolist() == heads, (
            f"the readout's {a_}-{b_} -> {kv}, row {kv} of the map fills "
            f"{np.flatnonzero(filled[int(kv)]).tolist()}")
    share = h[2]
    size = 1 if share == "one per query head" else int(re.search(r"(\d+) query heads", share)[1])
    assert (filled.sum(axis=1) == size).all(), f"{share!r}: the map's rows {filled.sum(axis=1)}"
    title = re.fullmatch(r"(\d+) query heads, (\d+) KV heads?: groups of (\d+)",
                         ax_map.get_title())
    assert title and (int(title[1]), int(title[2]), int(title[3])) == (hq, h_kv, group)


def check_budget(w):
    text = w.readout
    sizes = w.artists["sizes"]
    lines, rooms = sizes["lines"], sizes["hlines"]
    if text.startswith("cannot read it"):  # nothing to size: every curve and room a gap
        for line in [*lines.values(), *rooms.values()]:
            assert np.isnan(np.asarray(line.get_ydata(), float)).all(), (
                f"{line.get_label()}: drawn while the readout cannot read the config")
        return
    n = int(_num(find(r"^at n = ([\d,]+)", text, "n")[1]))
    assert set(np.asarray(sizes["cursor"].get_xdata(), float)) == {float(n)}
    head = find(rf"^.*: (?:weights ({NUM}) ([KMGT]?i?B)|weights not counted), GPU ({NUM}) "
                r"([KMGT]?i?B)$", text, "weights")
    unit = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}
    weights = _num(head[1]) * unit[head[2]] if head[1] else 0.0
    gpu = _num(head[3]) * unit[head[4]]
    # The room lines are the GPU less the weights the readout prints (vLLM: 0.92 of the GPU).
    for label, share in ((kvw._ROOM, 1.0), (kvw._ROOM_VLLM, kvw.VLLM_GPU_MEMORY_UTILIZATION)):
        want = (share * gpu - weights) / GIB
        slack = ((_half_unit(head[1]) * unit[head[2]] if head[1] else 0)
                 + share * _half_unit(head[3]) * unit[head[4]]) / GIB * (1 + 1e-9)
        level = float(rooms[label].get_ydata()[0])
        if want > slack:
            assert abs(level - want) <= slack, (
                f"{label}: the readout's GPU {head[3]} {head[4]} and weights "
                f"{head[1]} {head[2]} leave {want:.2f} GiB, the line is at {level}")
        elif want < -slack:
            assert np.isnan(level), f"{label}: no room in the readout, a line at {level}"
    room_of = {"llama.cpp": kvw._ROOM, "vLLM": kvw._ROOM_VLLM, "exact tokens": kvw._ROOM}
    engine_of = {"llama.cpp": "llama.cpp", "vLLM": "vllm", "exact tokens": "ideal"}
    rows = re.findall(r"^  (llama\.cpp|vLLM|exact tokens)\s+(" + NUM + r") ([KMGT]?i?B)\s+"
                      r"([\d,]+)\s+(?:([\d,]+) tokens|any length)$", text, re.M)
    assert rows, f"no engine rows in:\n{text}"
    shown = {r[0] for r in rows}
    for name, engine in engine_of.items():  # an engine without this cache type: a gap
        ys = np.asarray(lines[kvw._ENGINE_LABELS[engine]].get_ydata(), float)
        if name in shown:
            assert np.isfinite(ys).all(), f"{name}: a row in the readout, gaps in its curve"
        else:
            assert np.isnan(ys).all(), f"{name}: no row in the readout, a curve drawn"
    for name, cache, cache_unit, seqs, longest in rows:
        line = lines[kvw._ENGINE_LABELS[engine_of[name]]]
        y = marker(sizes, line.get_label())[1]
        room = float(rooms[room_of[name]].get_ydata()[0])
        if name == "exact tokens":  # the exact cache is all one sequence needs
            agree(cache, y * GIB / unit[cache_unit], f"{name}: its cache at n")
            k = int(_num(seqs))  # k sequences take k times the marker: k fit, k + 1 do not
            if np.isfinite(room):
                assert k * y <= room * (1 + 1e-12) < (k + 1) * y, (
                    f"{name}: {k} sequences of n fit, the room line {room} GiB holds "
                    f"{room / y:.3f} markers of {y} GiB")
        else:  # the cache, and what the engine reserves beside it
            assert _num(cache) - _half_unit(cache) <= y * GIB / unit[cache_unit], (
                f"{name}: a cache of {cache} {cache_unit} at n, the curve at {y} GiB")
        if np.isnan(room):  # the weights leave no room: nothing fits
            assert int(_num(seqs)) == 0 and longest and int(_num(longest)) == 0, (
                f"{name}: no room line, the readout fits {seqs} sequences of {longest}")
            continue
        # The curve crosses the room line where the readout's longest sequence ends.
        most = _num(longest) if longest else math.inf
        for x, yx in zip(line.get_xdata(), line.get_ydata()):
            assert (yx <= room) == (x <= most), (
                f"{name}: the readout's longest sequence is {longest or 'any length'}, the "
                f"curve is at {yx:.4g} GiB against the room's {room:.4g} at n = {x:,.0f}")
        assert (int(_num(seqs)) >= 1) == (y <= room), (
            f"{name}: {seqs} sequences of n fit, the marker is at {y} against {room}")


# ------------------------------------------------------------------ notebook 06: windows


def check_window(w):
    text = w.readout
    a = find(r"^window W = (\d+), (\d+) sinks, context n = (\d+); a sliding layer keeps (\d+) "
             r"entries, a global one (\d+)$", text, "line 1")
    window, sinks, n, keep, full = (int(a[i]) for i in range(1, 6))
    title = re.fullmatch(r"causal mask: W = (\d+), (\d+) sinks, n = (\d+)", w.axes[0].get_title())
    assert title and tuple(int(x) for x in title.groups()) == (window, sinks, n)
    bars = w.artists["bars"]
    heights = np.array(bar_heights(bars))
    local = np.asarray(bars["is_local"], bool)
    assert (heights[local] == keep).all(), f"sliding layers keep {keep}, bars {heights[local]}"
    assert (heights[~local] == full).all(), f"global layers keep {full}, bars {heights[~local]}"
    # The newest query's row of the mask: the keys in its window and the sinks outside it.
    s = find(r"^newest query \(p = (\d+)\) sees keys (\d+)\.\.(\d+) \((\d+) in the window\)"
             r"(?: \+ sinks 0\.\.(\d+))? = (\d+) of (\d+) keys", text, "line 2")
    p, first, last, inside = int(s[1]), int(s[2]), int(s[3]), int(s[4])
    j = np.arange(n)
    centres = np.column_stack([(j + 0.5) / n, np.full(n, (p + 0.5) / n)])
    seen_w = w.artists["mask"]["window"].get_path().contains_points(centres)
    seen_s = w.artists["mask"]["sinks"].get_path().contains_points(centres)
    assert np.flatnonzero(seen_w).tolist() == list(range(first, last + 1)) \
        and seen_w.sum() == inside, (
        f"row {p}: the readout's keys {first}..{last}, the mask's {np.flatnonzero(seen_w)}")
    sink_end = int(s[5]) + 1 if s[5] else 0
    assert (seen_s == (j < sink_end)).all(), (
        f"row {p}: the readout's sinks 0..{sink_end - 1}, the mask's {np.flatnonzero(seen_s)}")
    assert int(s[6]) == (seen_w | seen_s).sum() == keep and int(s[7]) == n
    marks, texts = w.artists["mask"]["ticks"]["y"]
    assert texts[len(marks.get_ydata()) - 1].get_text() == str(p)
    assert marks.get_ydata()[-1] == pytest.approx((p + 0.5) / n)
    c = find(r"= (\d+) cells, vLLM (\d+) blocks x (\d+) = (\d+) slots$", text, "line 3")
    assert int(c[2]) * int(c[3]) == int(c[4]), "blocks x block size = slots"
    pad = find(r"pad\(min\((\d+), (\d+) \+ (\d+)\), (\d+)\) = (\d+) cells", text, "pad")
    a_, b_, u_, q_, cells = (int(x) for x in pad.groups())
    assert (a_, b_) == (n, window) and -(-min(a_, b_ + u_) // q_) * q_ == cells
    levels = bars["levels"]
    agree(c[1], levels["llama.cpp cells"].get_ydata()[0], "llama.cpp cells (its line)")
    agree(c[4], levels["vLLM block slots"].get_ydata()[0], "vLLM slots (its line)")
    m = find(rf"^whole cache: sinks \+ window ({NUM}) MiB, llama\.cpp ({NUM}) MiB, vLLM ({NUM}) "
             rf"MiB, every layer global ({NUM}) MiB$", text, "line 4")
    per_cell = w.data["per_cell"]  # bytes of one token's K and V in one layer
    agree(m[1], heights.sum() * per_cell / MIB, "sinks + window (the bars' sum, MiB)")
    agree(m[4], heights.size * n * per_cell / MIB, "every layer global (n per bar, MiB)")
    for printed, level, engine in ((m[2], levels["llama.cpp cells"], "llama.cpp"),
                                   (m[3], levels["vLLM block slots"], "vLLM")):
        least = (local.sum() * level.get_ydata()[0] + (~local).sum() * n) * per_cell / MIB
        assert _num(printed) + _half_unit(printed) >= least, (
            f"{engine}: {printed} MiB in all, its line and the global bars draw {least:.2f}")


# ------------------------------------------------------------------ notebook 07: clocks


def _hand_angle(line):
    x, y = line.get_xdata()[-1], line.get_ydata()[-1]
    return math.atan2(y, x) % TWO_PI


def _arc_angle(line):
    x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    return float(np.unwrap(np.arctan2(y, x))[-1] - math.atan2(y[0], x[0]))


def check_clock(w):
    text = w.readout
    cov, clock = w.artists["coverage"], w.artists["clock"]
    dots = np.asarray(cov["dots"].get_ydata(), float)
    stairs = np.asarray(cov["trained"].get_data().values, float)
    n_pairs = int(find(r"· (\d+) pairs$", text, "pairs")[1])
    assert dots.size == stairs.size == n_pairs
    never = find(r"^pairs that never complete a turn in training: (\d+) of (\d+) \(pairs (.*)\)$",
                 text, "never")
    partial = np.flatnonzero(stairs < TWO_PI)  # the pairs whose arc is not a full ring
    assert int(never[2]) == n_pairs
    assert partial.tolist() == pair_list(never[3]) and partial.size == int(never[1]), (
        f"never a full turn: the readout's pairs {never[3]}, the figure's partial arcs "
        f"{partial.tolist()}")
    crosses = np.asarray(cov["outside"].get_xdata(), float)
    if "m is inside the trained range" in text:
        assert crosses.size == 0, f"inside the trained range, X marks at {crosses}"
    else:
        out = find(r"^pairs whose angle at m was never seen in training: (\d+) \(pairs (.*)\)$",
                   text, "outside")
        assert crosses.astype(int).tolist() == pair_list(out[2]) and crosses.size == int(out[1]), (
            f"never seen: the readout's pairs {out[2]}, the X marks at {crosses.tolist()}")
    # X marks sit on the dots above their pairs' arcs
    xs = crosses.astype(int)
    assert np.array_equal(np.asarray(cov["outside"].get_ydata(), float), dots[xs])
    assert (dots[xs] > stairs[xs]).all()
    pairs = list(w.pairs)
    head = find(r"^position m = (?:[^·]* = )?([\d,]+) · base b = ([\d,]+) · trained on "
                r"positions 0 to ([\d,]+) ·", text, "line 1")
    m, b, top = (int(_num(head[i])) for i in (1, 2, 3))
    # theta_i = b^(-i / pairs): the dots are m theta_i mod 2 pi, the steps (n_train - 1) theta_i
    theta = float(b) ** (-np.arange(n_pairs) / n_pairs)
    gap = np.abs((np.mod(m * theta, TWO_PI) - dots + math.pi) % TWO_PI - math.pi)
    assert gap.max() < 1e-6, f"the dots are not m = {m:,} at base {b:,} (off by {gap.max()})"
    assert np.allclose(stairs, np.minimum(top * theta, TWO_PI), rtol=1e-9, atol=0), (
        f"the steps are not positions 0 to {top:,} at base {b:,}")
    p0 = find(rf"^pair 0: ({NUM}) rad = ({NUM}) rad after whole turns; it turned ({NUM}) times",
              text, "pair 0")
    agree_angle(p0[2], dots[0], "pair 0's angle (its dot)")
    agree_angle(p0[1], dots[0], "pair 0's angle at m, mod 2 pi (its dot)")
    # a pair that turned in training saw every angle: its step reaches 2 pi
    assert (_num(p0[3]) >= 1) == (stairs[0] == TWO_PI), (
        f"pair 0 turned {p0[3]} times in training, its step reaches {stairs[0]} rad")
    slow = find(rf"^slowest pair (\d+): ({NUM}) rad at m; training reached ({NUM}) rad$",
                text, "slowest")
    last = int(slow[1])
    assert last == n_pairs - 1
    agree_angle(slow[2], dots[last], f"pair {last}'s angle (its dot)")
    reached = _num(slow[3])
    if reached < TWO_PI:
        agree(slow[3], stairs[last], f"pair {last}'s trained arc (its step)")
    else:
        assert stairs[last] == TWO_PI
    for i, pair in enumerate(pairs):  # the clock's hands and arcs for the pairs it shows
        agree_angle(f"{dots[pair]:.9f}", _hand_angle(clock["hands"][i]), f"pair {pair}'s hand")
        assert _arc_angle(clock["arcs"][i]) == pytest.approx(min(stairs[pair], TWO_PI), abs=1e-9)
        if pair == 0:
            agree_angle(p0[2], _hand_angle(clock["hands"][i]), "pair 0's hand")
        if pair == last:
            agree_angle(slow[2], _hand_angle(clock["hands"][i]), f"pair {last}'s hand")
            if reached < TWO_PI:
                agree(slow[3], _arc_angle(clock["arcs"][i]), f"pair {last}'s trained arc")


# ------------------------------------------------------------------ notebook 08: scaling


def _band(rect):
    return rect.get_x(), rect.get_x() + rect.get_width()


def check_scaling(w):
    text = w.readout
    a = find(rf"^factor s = ({NUM}) · base b = ([\d,]+) · L0 = ([\d,]+) → target s·L0 = "
             rf"([\d,]+) positions · rotary dim (\d+)$", text, "line 1")
    s, b, r = _num(a[1]), _num(a[2]), int(a[5])
    waves, ratios, ramp = w.artists["wavelengths"], w.artists["ratios"], w.artists["ramp"]
    band = find(rf"^YaRN band \(low, high\) = \(({NUM}), ({NUM})\): kept (.*) \(≥ ({NUM}) turns "
                rf"in L0\) · ramp (.*) · θ/s (.*) \(≤ ({NUM}) turn\)$", text, "band")
    beta_fast = _num(band[4])
    agree(a[4], waves["target"].get_ydata()[0], "s·L0 (its line)")
    agree(a[3], waves["trained"].get_ydata()[0], "L0 (its line)")
    agree(a[3], waves["fast"].get_ydata()[0] * beta_fast, f"L0/{band[4]} (its line) x beta_fast")
    for key in ("target", "trained", "fast"):
        assert waves["labels"][key].get_position()[1] == waves[key].get_ydata()[0]
    for name, rect in (("frequency", ratios["band"]), ("wavelength", waves["band"]),
                       ("ramp", ramp["band"])):
        lo, hi = _band(rect)
        agree(band[1], lo, f"the band's low end ({name} panel)")
        agree(band[2], hi, f"the band's high end ({name} panel)")
    agree(band[1], ramp["low"].get_xdata()[0], "low (its line)")
    agree(band[2], ramp["high"].get_xdata()[0], "high (its line)")
    # The pairs the readout names kept, ramped and divided are where the drawn ramp is 1,
    # between, and 0; YaRN's frequency curve keeps 1 and 1/s there.
    y = np.asarray(ramp["ramp"].get_ydata(), float)
    pairs = np.arange(y.size)
    assert np.isfinite(y).all()
    for printed, where, what in ((band[3], y == 1.0, "kept"), (band[5], (y > 0) & (y < 1), "ramp"),
                                 (band[6], y == 0.0, "θ/s")):
        assert pair_list(printed) == pairs[where].tolist(), (
            f"{what}: the readout's pairs {printed}, the ramp's {pairs[where].tolist()}")
    yarn = np.asarray(ratios["lines"]["YaRN"].get_ydata(), float)
    assert np.allclose(yarn[y == 1.0], 1.0, rtol=1e-12)
    assert np.allclose(yarn[y == 0.0], 1 / s, rtol=1e-12)
    p = find(rf"^PI: pair 0 turns ({NUM}) rad per token · NTK-aware: base ([\d,]+) → ([\d,]+), "
             rf"pair (\d+) slowed ({NUM})×$", text, "line 4")
    agree(p[1], ratios["lines"]["PI (linear)"].get_ydata()[0], "PI's pair 0 (θ0 = 1: its ratio)")
    agree(p[1], TWO_PI / waves["lines"]["PI (linear)"].get_ydata()[0], "PI's pair 0 (2π / λ)")
    assert _num(p[2]) == b, "the base b"
    last = int(p[4])
    ntk = np.asarray(ratios["lines"]["NTK-aware"].get_ydata(), float)
    agree(p[5], 1 / ntk[last], f"NTK-aware: pair {last} slowed (1 / its ratio)")
    # NTK-aware's ratio per pair is (b / b')^(2i / r): the new base, read off the curve
    drawn_base = b * ntk[last] ** (-r / (2 * last))
    assert abs(drawn_base - _num(p[3])) <= max(0.5, 1e-9 * drawn_base), (
        f"NTK-aware base: the readout's {p[3]}, the curve's {drawn_base:,.1f}")


# ------------------------------------------------------------------ notebook 09: costs


def check_cost(w):
    text = w.readout
    flops, kv = w.artists["flops"], w.artists["kv"]
    m = find(rf"^n = ([\d,]+): prefill weights ({NUM}) TFLOP \+ attention ({NUM}) TFLOP = "
             rf"({NUM}) TFLOP; attention is ({NUM})%$", text, "line 1")
    n = int(_num(m[1]))
    at_cursor(flops, n, "FLOP panel")
    at_cursor(kv, n, "KV panel")
    wy = marker(flops, _line_named(flops["lines"], "weights"))[1]
    ay = marker(flops, _line_named(flops["lines"], "attention"))[1]
    ty = marker(flops, "total")[1]
    agree(m[2], wy, "weights (TFLOP)")
    agree(m[3], ay, "attention (TFLOP)")
    agree(m[4], ty, "total (TFLOP)")
    agree(m[5], 100 * ay / ty, "attention share (%)")
    at_n = find(r"^KV cache at n: (.*)$", text, "line 2")[1]
    named = re.findall(rf"(\S+) ({NUM}) GiB", at_n)
    assert [name for name, _ in named] == [k for k in kv["lines"]]
    for name, gib in named:
        agree(gib, marker(kv, name)[1], f"{name}'s KV cache (GiB)")
    own = find(rf"^in .*, (.+)'s cache is ({NUM}) x its weights in 8 bits \(({NUM}) GiB\)$",
               text, "line 3")
    engine = re.search(r"\((.+) sizing\)", w.axes[1].get_title())[1]
    dtype = int(find(r"^in .* \((\d) B\)", text, "dtype")[1])
    model = own[1]
    cache = kv_cache_bytes(load_model(model), n, engine=engine, dtype_bytes=dtype).total_bytes
    assert marker(kv, model)[1] == pytest.approx(cache / GIB, rel=1e-12), (
        f"{model}'s KV curve at n is not its {engine} cache in {dtype}-byte numbers")
    (label,) = kv["hlines"]
    level = kv["hlines"][label].get_ydata()[0]
    agree(own[3], level, "weights in 8 bits (its line)")
    agree(own[2], marker(kv, own[1])[1] / level, f"{own[1]}'s cache / weights (marker / line)")


# ------------------------------------------------------------------ notebook 10: extension


def check_extension(w):
    text = w.readout
    head = find(r"^(\d+) tokens \((\d+)x the trained (\d+)\)", text, "head")
    length, trained = int(head[1]), int(head[3])
    assert int(head[2]) * trained == length
    assert int(find(r"loss past (\d+)$", text, "column")[1]) == trained
    for ax in w.axes:  # the dashed line at the trained length, in both panels
        assert any(list(line.get_xdata()) == [trained, trained] for line in ax.get_lines())
    assert set(np.asarray(w.artists["cursor"].get_xdata(), float)) == {float(length)}
    acc = {line.get_label(): line for line in w.artists["accuracy"].values()}
    loss = {line.get_label(): line for line in w.artists["loss"].values()}
    rows = re.findall(rf"^(.+?)\s+({NUM})\s+({NUM})\s+({NUM}|-)$", text, re.M)
    assert [r[0] for r in rows] == list(loss) == list(acc)
    for name, retrieval, _mean, past in rows:
        agree(retrieval, curve_at(acc[name], length, name), f"{name}: retrieval at {length}")
        x, y = (np.asarray(v, float) for v in loss[name].get_data())
        bin_ = x[1] - x[0]
        assert x[-1] + bin_ / 2 == length, (
            f"{name}: the loss panel shows documents of {x[-1] + bin_ / 2:g} tokens, the readout "
            f"{length}")
        beyond = y[x > trained]
        if past == "-":
            assert beyond.size == 0, f"{name}: '-' past {trained}, the curve goes on"
        else:  # the mean of the drawn loss past the trained length
            agree(past, beyond.mean(), f"{name}: loss past {trained}")


# ------------------------------------------------------------------ notebook 11: paged cache


def _blocks(text):
    """'4, 9, 10' -> [4, 9, 10]; 'none' -> []."""
    return [] if text.strip() == "none" else [int(b) for b in text.split(", ")]


def _faces(cell):
    return [to_rgba(p.get_facecolor()) for p in cell["stripes"] if p.get_visible()]


def check_stream(w):
    """The readout's tables, free queue, cached blocks and this step's hit, new and freed
    blocks are what the pool's squares and the tables' slots draw."""
    text = w.readout
    head = find(r"^step (\d+) of (\d+): (\w+) (arrives|decodes|finishes)\b.* \((full attention"
                r"|sliding window W = \d+|full attention, sink blocks [\d, ]+); (\d+) blocks of "
                r"(\d+) tokens\)$", text, "step")
    k, total, rid, kind = int(head[1]), int(head[2]), head[3], head[4]
    num_blocks, B = int(head[6]), int(head[7])
    assert w.axes[0].get_title().startswith(f"block pool after step {k} of {total}: {rid} "), (
        f"the readout's step {k}, the pool's title {w.axes[0].get_title()!r}")
    pool, rows = w.artists["pool"]["cells"], w.artists["tables"]["rows"]
    notes = [t.get_text().split("\n") for t in w.artists["pool"]["notes"]]
    assert [c["label"].get_text() for c in pool] == [str(b) for b in range(num_blocks)]
    lines = re.findall(r"^(\w): (finished|not arrived|table (?:sink ([\d, ]+) \| )?([\d, ]+) "
                       r"\((\d+) tokens computed\))$", text, re.M)
    assert [r[0] for r in lines] == list(rows), f"rows {list(rows)}, readout {lines}"
    colours = request_colours(list(rows))
    tables = {}
    for r, status, sinks, table, n in lines:
        row = rows[r]
        cells = [c for c in row["cells"] if c["edge"].get_visible()]
        if not table:
            assert row["status"].get_text() == status and not cells, f"{r}: {status}"
            continue
        tables[r] = _blocks(table)
        drawn = [int(c["label"].get_text().split("→")[-1]) for c in cells]
        assert drawn == _blocks(sinks or "none") + tables[r], (
            f"{r}: the readout's table {sinks or ''} | {table}, the row draws {drawn}")
        assert row["tokens"].get_text() == f"{n} tokens"
        bar = row["bar"]
        agree(n, (bar.get_x() + bar.get_width()) * B, f"{r}: tokens computed (its bar's end)")
    held = {}
    for r, table in tables.items():
        for b in table:
            if b:
                held.setdefault(b, []).append(r)
    sinks = [b for b, c in enumerate(pool) if c["kind"] == "sink"]
    queue = _blocks(find(r"^free queue, next first: (.+)$", text, "queue")[1])
    c = find(r"^cached \(a prefix hit can take them\): (.+); free among them: (.+)$", text,
             "cached")
    cached, free_cached = _blocks(c[1]), _blocks(c[2])
    assert free_cached == [b for b in queue if b in cached]
    for b, cell in enumerate(pool):
        if b == 0:
            assert cell["kind"] == "null"
        elif b in held:  # the readout's holders, each in its colour, split where they share
            assert _faces(cell) == [to_rgba(colours[r]) for r in held[b]], (
                f"block {b}: held by {held[b]} in the readout, the pool draws {_faces(cell)}")
            for r in held[b]:
                slot = next(s for s in rows[r]["cells"] if s["edge"].get_visible()
                            and s["label"].get_text() == str(b))
                assert _faces(slot) == _faces(cell), f"block {b} in {r}'s table"
        elif b in queue:
            assert cell["kind"] == ("cached" if b in cached else "free"), f"block {b}"
            assert cell["edge"].get_linestyle() == "--"
        else:
            assert b in sinks, f"block {b}: neither held, free nor a sink"
        assert ("next" in notes[b]) == (queue[:1] == [b]), f"block {b}: next"
    if kind == "finishes":
        freed = _blocks(find(r"^its blocks go back to the pool: freed ([\d, ]+|none)", text,
                             "freed")[1])
        new, hit = [], None
    else:
        line = find(r"^(?:prefix hit (\d+) tokens(?: = blocks ([\d, ]+))?; )?new blocks "
                    r"([\d, ]+|none); freed ([\d, ]+|none)$", text, "new and freed")
        new, freed = _blocks(line[3]), _blocks(line[4])
        hit = (int(line[1]), _blocks(line[2] or "none")) if line[1] is not None else None
        assert (hit is not None) == (kind == "arrives")
        mine = [s for s in rows[rid]["cells"] if s["edge"].get_visible()]
        nulled = [int(s["label"].get_text().split("→")[0]) for s in mine
                  if "→" in s["label"].get_text()]
        assert sorted(nulled) == sorted(freed), (
            f"freed {freed}: {rid}'s row labels {nulled} as freed")
    for b in range(num_blocks):
        assert ("new" in notes[b]) == (b in new), f"block {b}: new"
        assert ("freed" in notes[b]) == (b in freed), f"block {b}: freed"
    outlined = {r: [s["label"].get_text() for s in row["cells"]
                    if s["edge"].get_visible() and s["hit"]] for r, row in rows.items()}
    if hit is None:
        assert not any(outlined.values()), f"no arrival, outlined slots {outlined}"
    else:
        assert outlined[rid] == [str(b) for b in hit[1]], (
            f"{rid}'s hit blocks {hit[1]}, outlined {outlined[rid]}")
        assert hit[0] == B * len(hit[1]), f"hit {hit[0]} tokens, {len(hit[1])} slots of {B}"
        assert not any(v for r, v in outlined.items() if r != rid)


CHECKS = {"memory": check_memory, "online_softmax": check_online_softmax, "tiled": check_tiled,
          "tile_map": check_tile_map, "kv_cache": check_kv_cache, "budget": check_budget,
          "window": check_window, "clock": check_clock, "scaling": check_scaling,
          "cost": check_cost, "extension": check_extension, "stream": check_stream}


# ------------------------------------------------------------------ the gaps a figure may draw


def gaps(name, w):
    """The artists that may hold NaN on purpose, by id: ``"pieces"`` where NaN separates a
    line's pieces (the tile map's mask edges), ``"gap"`` where the figure leaves something
    out (an engine without the cache type, a room line where the weights leave none).
    Everything else must be finite."""
    if name == "tile_map":
        return {id(w.artists["map"]["edges"]): "pieces"}
    if name == "budget":
        sizes = w.artists["sizes"]
        return {id(a): "gap" for group in ("lines", "hlines", "markers")
                for a in sizes[group].values()}
    return {}


def drawn_numbers(w):
    """(artist, array) of everything the figure draws from numbers."""
    for ax in w.fig.axes:
        for a in ax.get_children():
            if isinstance(a, Line2D):
                yield a, np.concatenate([np.asarray(a.get_xdata(), float).ravel(),
                                         np.asarray(a.get_ydata(), float).ravel()])
            elif isinstance(a, StepPatch):
                yield a, np.asarray(a.get_data().values, float)
            elif isinstance(a, Patch):
                yield a, np.asarray(a.get_path().vertices, float)
            elif isinstance(a, AxesImage):
                yield a, np.asarray(a.get_array(), float)
            elif isinstance(a, Text) and a.get_visible() and a.get_text():
                yield a, np.asarray(a.get_position(), float)


def check_gaps(name, w):
    """Only the artists ``gaps`` names hold NaN; the readout says nan or inf only where the
    figure leaves a gap."""
    allowed = gaps(name, w)
    shows_gap = False
    for artist, values in drawn_numbers(w):
        if np.isfinite(values).all():
            continue
        assert id(artist) in allowed, f"{type(artist).__name__} {artist.get_label()!r} draws NaN"
        shows_gap |= allowed[id(artist)] == "gap"
    said = re.findall(r"\b(?:nan|inf|infinity)\b", w.readout, re.I)
    assert not said or shows_gap, f"the readout says {said}, the figure shows no gap"


# ------------------------------------------------------------------ every setting at the ends


def _options(control):
    return [o[1] if isinstance(o, tuple) else o for o in control.options]


def stops(control):
    """A control's values to visit: its two ends and its starting value (every option of a
    row of toggle buttons, a checkbox both ways); None for a control that takes text."""
    if isinstance(control, widgets.Checkbox):
        return [False, True]
    if isinstance(control, widgets.ToggleButtons):
        return _options(control)
    if isinstance(control, (widgets.SelectionSlider, widgets.Dropdown)):
        ends = _options(control)
        ends = [ends[0], ends[-1]]
    elif isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        ends = [control.min, control.max]
    else:
        return None
    return list(dict.fromkeys([ends[0], control.value, ends[1]]))


def settings(w):
    """Every combination of each control's stops (``stops``): each control at each end on its
    own, all at their ends together, and the moves between them."""
    names = [k for k, c in w.controls.items() if stops(c) is not None]
    for combo in itertools.product(*(stops(w.controls[k]) for k in names)):
        yield dict(zip(names, combo))


@pytest.fixture(scope="module")
def factories():
    return notebook_explorers()


@pytest.mark.parametrize("name", list(CHECKS))
def test_figure_and_readout_agree_at_every_extreme(name, factories):
    w = factories[name]()
    failures = []
    count = 0
    for setting in settings(w):
        for k, v in setting.items():
            w.controls[k].value = v
        count += 1
        try:
            CHECKS[name](w)
            check_gaps(name, w)
        except Exception as err:  # noqa: BLE001 (a readout the checks cannot parse, too)
            failures.append(f"at {setting}: {type(err).__name__}: {err}\n"
                            f"readout:\n{w.readout}")
    assert count >= 2
    assert not failures, f"{name}: {len(failures)} of {count} settings disagree\n\n" + \
        "\n\n".join(failures[:5])


def test_every_notebook_widget_is_checked(factories):
    assert set(factories) == set(CHECKS)
