"""Widgets for notebooks 01-03: score-matrix memory and FLOPs, online softmax, tiled attention.

Each factory computes with lessonlib (traffic, kv_cache, softmax, attention), draws with
``lessonlib.plots.attention`` and returns an ``Explorer`` with three more attributes:
``axes``, ``artists`` (updated in place by every slider move) and ``data`` (what the last
redraw computed, for tests and curious students). ``explorer.readout`` is the text a test reads.

Each figure is ``plots.FIGURE_WIDTH`` inches wide (920 px in JupyterLab's output area beside the
file browser, about 930 px; 1,196 px at the presenter's 130 dpi): nothing is scaled down on a
laptop. Keys and
titles sit above or beside the axes, never on the data, and the smallest type is 9 pt. Readout
lines stay under ``READOUT_WIDTH`` characters at every slider setting; what never changes is
said in the notebook's prose instead.
"""
from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from ..attention import TILE_MASKED, TILE_SKIPPED, block_map
from ..kv_cache import kv_bytes_per_token
from ..plots import FIGURE_WIDTH
from ..plots import attention as plots
from ..softmax import online_attention_row, online_attention_trace, sink_share
from ..traffic import (GIB, MIB, crossover_length, long_context_cost,
                       naive_traffic, score_matrix_table, score_slice_bytes, tiled_traffic)
from ._base import (Explorer, checkbox, freeze_layout, int_list, model_arg, new_figure,
                    option, slider_int, slider_layout, slider_real)

__all__ = ["memory_explorer", "online_softmax_explorer", "tiled_explorer",
           "EXAMPLE_SCORES", "EXAMPLE_VALUES", "FIGURE_WIDTH",
           "READOUT_WIDTH"]

READOUT_WIDTH = 100  # characters: one line of the readout, laptop (~109) and presenter (~112)
"""100 characters: one line of these widgets' readouts (a laptop's output area fits ~109)."""

EXAMPLE_SCORES = (1.0, 3.0, 2.0, 5.0, 0.5, 4.0)  # notebook 02's six scores
"""Notebook 02's six scores, ``online_softmax_explorer``'s default."""
EXAMPLE_VALUES = ((1, 0), (0, 1), (1, 1), (2, 0), (0, 2), (1, -1))  # and their 2-D values
"""The 2-D value vectors of notebook 02's six keys."""


# ------------------------------------------------------------------ notebook 01

def _memory_data(lengths, heads, cfg):
    """Curves (GiB and TFLOP per length) and the rows the readout quotes."""
    layers, head_dim = cfg["shape"].layers, cfg["shape"].head_dim
    rows = score_matrix_table(lengths, heads=heads, layers=layers, bytes_per_score=4)
    costs = long_context_cost(lengths, params=cfg["params"], layers=layers,
                              q_dim=heads * head_dim, kv_bytes_per_token=cfg["kv_bytes"])
    ub = cfg["n_ubatch"]
    memory = {
        "S, whole prompt": [r.layer_bytes / GIB for r in rows],  # one layer, n x n
        f"S, -ub {ub} slice": [score_slice_bytes(min(ub, n), n, heads=heads) / GIB
                               for n in lengths],
        "S, decode row": [score_slice_bytes(1, n, heads=heads) / GIB for n in lengths],
        "KV cache (F16)": [c.kv_bytes / GIB for c in costs],  # all layers
    }
    flops = {"weights": [c.weight_flops / 1e12 for c in costs],
             "attention (causal)": [c.attention_flops / 1e12 for c in costs]}
    return memory, flops, rows, costs


def _memory_readout(n, heads, cfg, row, cost):
    """Five lines, each what a slider changes (layers, FP32 scores and the KV cache's bytes per
    token are fixed: the notebook says them)."""
    ub = cfg["n_ubatch"]
    shape = cfg["shape"]
    q_dim = heads * shape.head_dim  # the slider's query heads, of the model's head dim
    crossover = crossover_length(cfg["params"], layers=shape.layers, q_dim=q_dim)
    return "\n".join([
        f"n = {n:,} tokens, {heads} query heads x d = {shape.head_dim} (q_dim = {q_dim:,})",
        f"S, one layer: whole prompt {row.layer_bytes / GIB:,.2f} GiB, -ub {ub} slice "
        f"{score_slice_bytes(min(ub, n), n, heads=heads) / GIB:,.3f} GiB, decode row "
        f"{score_slice_bytes(1, n, heads=heads) / MIB:,.3f} MiB",
        f"S and P written and read: {row.traffic_bytes / GIB:,.2f} GiB per layer; "
        f"KV cache, all layers: {cost.kv_bytes / GIB:,.2f} GiB",
        f"prefill: weights {cost.weight_flops / 1e12:,.1f} TFLOP, attention "
        f"{cost.attention_flops / 1e12:,.1f} TFLOP = {100 * cost.attention_share:.1f}% "
        "of the total",
        f"attention overtakes the weights at n = params / (q_dim x layers) = {crossover:,.0f}",
    ])


def memory_explorer(config, *, params=None, n=32768, heads=None,
                    n_ubatch=512, lengths=tuple(2 ** k for k in range(10, 18))):
    """Sliders for context length n and query heads redraw memory (GiB) and FLOP curves.

    The model shape (layers, head dim, KV bytes per token) comes from ``config``: the
    ``models.Model`` the notebook built (or a shipped name or a config.json dict); ``params``,
    the parameter count N_param, is its count as the published checkpoint stores it
    (``Model.params``) unless given: where the Model has no count, leaving ``params`` out is an
    error naming it. The heads slider changes the number of query heads of head dim d
    (q_dim = heads x d): the score matrix and attention FLOPs scale with it, the weights and the
    KV cache do not. ``FIGURE_WIDTH`` is ``lessonlib.plots.FIGURE_WIDTH``, re-exported.
    """
    model = model_arg(config)
    kv_bytes = kv_bytes_per_token(model)
    shape = model.shape
    if params is None:
        if model.params is None:
            raise ValueError(f"params: {model.name}'s parameters are not counted "
                             f"({model.params_note}); give params")
        params = model.params
    cfg = dict(shape=shape, params=check.real("params", params, above=0.0),
               n_ubatch=check.integer("n_ubatch", n_ubatch, minimum=1), kv_bytes=kv_bytes)
    lengths = int_list("lengths", lengths)
    n = option("n", n, lengths)
    heads = shape.heads if heads is None else heads
    controls = {
        "n": widgets.SelectionSlider(options=[(f"{x:,}", x) for x in lengths], value=n,
                                     description="context n (tokens)", **slider_layout("330px")),
        "heads": widgets.IntSlider(value=slider_int("heads", heads, 4, 128), min=4, max=128, step=4,
                                   description="query heads", **slider_layout("330px")),
    }
    fig, (ax_mem, ax_flop) = new_figure(figsize=(FIGURE_WIDTH, 3.8), ncols=2)
    memory, flops, _, _ = _memory_data(lengths, controls["heads"].value, cfg)
    artists = {"memory": plots.draw_memory_curves(ax_mem, lengths, memory, marker_n=n),
               "flops": plots.draw_flop_curves(ax_flop, lengths, flops, marker_n=n)}
    lo, hi = (_memory_data(lengths, h, cfg) for h in (controls["heads"].min,
                                                      controls["heads"].max))
    plots.fit_log_ylim(ax_mem, list(lo[0].values()) + list(hi[0].values()))
    plots.fit_log_ylim(ax_flop, list(lo[1].values()) + list(hi[1].values()))
    freeze_layout(fig)
    plots.legends_to_figure(fig)
    plots.fix_ticks(fig)  # limits stay: the same ticks every step
    data = lru_cache(maxsize=None)(lambda heads: _memory_data(lengths, heads, cfg))

    def redraw(n, heads):
        memory, flops, rows, costs = data(heads)
        plots.update_curves(ax_mem, artists["memory"], memory, marker_x=n, rescale=False)
        plots.update_curves(ax_flop, artists["flops"], flops, marker_x=n, rescale=False)
        i = lengths.index(n)
        return (_memory_readout(n, heads, cfg, rows[i], costs[i]),
                dict(memory=memory, flops=flops, row=rows[i], cost=costs[i]))

    return Explorer(controls, fig, redraw, axes=(ax_mem, ax_flop), artists=artists)


# ------------------------------------------------------------------ notebook 02

def _softmax_state(scores, values, k, sink_logit):
    """Everything the figure and readout show after reading the first k keys (and the sink)."""
    trace = online_attention_trace(scores[:k], values[:k])
    last = trace[-1]
    # One-hot values turn the attention row into the weight each key (and the sink) gets.
    weights = online_attention_row(scores[:k], np.eye(k))
    path = [np.asarray(st.acc) / st.l for st in trace]
    state = dict(trace=trace, terms=list(weights * last.l), path=path, sink=None,
                 rescale=last.rescale)
    if sink_logit is not None:
        with_sink = online_attention_trace(scores[:k], values[:k], sink_logit)[-1]
        w = online_attention_row(scores[:k], np.eye(k), sink_logit)
        share = sink_share(scores[:k], sink_logit)
        state["sink"] = dict(step=with_sink, weights=w, share=share,
                             output=online_attention_row(scores[:k], values[:k], sink_logit),
                             terms=list(w * with_sink.l) + [share * with_sink.l])
    return state


def _vector(v, digits=6):
    return f"({', '.join(f'{x:.{digits}f}' for x in v)})"


def _softmax_readout(scores, k, st, sink_logit):
    """Four lines whatever the controls: the state after key k-1, the rescale, the output(s),
    and the sink (or its absence)."""
    last = st["trace"][-1]
    lines = [f"after key {k - 1} (x = {scores[k - 1]:g}): m = {last.m:g}, l = {last.l:.6f}, "
             f"acc = {_vector(last.acc, 4)}"]
    if st["rescale"] is None:
        lines.append("first key: l starts from 0, so nothing to rescale")
    elif st["rescale"] < 1.0:
        lines.append(f"the max rose: old l and acc were multiplied by exp(m_old - m_new) = "
                     f"{st['rescale']:.6f}")
    else:
        lines.append("the max did not change: the new term was simply added")
    output = f"output acc / l = {_vector(st['path'][-1])}"
    if st["sink"] is not None:
        sk = st["sink"]
        lines.append(f"{output}; with the sink {_vector(sk['output'])}")
        m_s = sk["step"].m  # the max with the sink: the old l is rescaled to it, e^z added
        lines.append(f"sink z = {sink_logit:g}: m = {m_s:g}, l = {last.l:.6f} e^{last.m - m_s:g} "
                     f"+ e^{sink_logit - m_s:g} = {sk['step'].l:.6f}; the sink takes "
                     f"{100 * sk['share']:.1f}% of the weight")
    else:
        lines.append(output)
        lines.append("no sink: the weights of the keys add up to 1")
    return "\n".join(lines)


def _spaced(box):
    """A checkbox set apart from the sliders around it (its label would read as theirs)."""
    box.layout.margin = "0 24px 0 16px"
    return box


def online_softmax_explorer(scores=EXAMPLE_SCORES, values=EXAMPLE_VALUES, *, sink_logit=4.5):
    """Step through the one-pass rule key by key; switch a learned sink on and off.

    Left: the terms exp(x_j - m) that make up l (they shrink when the max rises). Right: the
    running output acc / l among the 2-D value vectors, and where the sink pulls it. The sink
    logit slider is disabled while the sink is off (it would change nothing).
    """
    scores = check.array("scores", scores, kind="real", ndim=1).astype(float)
    values = check.array("values", values, kind="real").astype(float)
    sink_logit = slider_real("sink_logit", sink_logit, -2.0, 8.0)
    n = len(scores)
    if n == 0:
        raise ValueError("scores must hold at least one score")
    if values.shape != (n, 2):
        raise ValueError(f"values must have shape ({n}, 2) to draw them, got {values.shape}")
    controls = {
        "keys": widgets.IntSlider(value=n, min=1, max=n, description="keys read",
                                  **slider_layout("260px")),
        "sink": _spaced(checkbox("learned sink", False)),
        "sink_logit": widgets.FloatSlider(value=sink_logit, min=-2.0, max=8.0, step=0.5,
                                          description="sink logit", **slider_layout("260px")),
    }
    fig, (ax_terms, ax_plane) = new_figure(figsize=(FIGURE_WIDTH, 3.8), ncols=2,
                                           width_ratios=[1.35, 1.0])
    labels = [f"{j}\n({x:g})" for j, x in enumerate(scores)] + ["sink"]
    artists = {"terms": plots.draw_softmax_terms(ax_terms, labels, np.zeros(n + 1),
                                                 seen=[False] * (n + 1), sink_index=n),
               "plane": plots.draw_value_plane(ax_plane, values, values[:1])}
    freeze_layout(fig)
    plots.legends_to_figure(fig)
    plots.fix_ticks(fig)  # limits stay: the same ticks every step

    def redraw(keys, sink, sink_logit):
        st = _softmax_state(scores, values, keys, sink_logit if sink else None)
        terms = st["sink"]["terms"] if sink else st["terms"] + [0.0]
        terms = list(terms[:keys]) + [0.0] * (n - keys) + [terms[-1] if sink else 0.0]
        seen = [j < keys for j in range(n)] + [bool(sink)]
        plots.update_softmax_terms(artists["terms"], terms, seen=seen, sink_index=n)
        plots.update_value_plane(artists["plane"], st["path"],
                                 sink_output=st["sink"]["output"] if sink else None)
        return _softmax_readout(scores, keys, st, sink_logit), dict(st, bar_heights=terms)

    return Explorer(controls, fig, redraw, axes=(ax_terms, ax_plane), artists=artists,
                    disabled_when={"sink_logit": lambda values: not values["sink"]})


# ------------------------------------------------------------------ notebook 03

@lru_cache(maxsize=1024)
def _block_map(n, block, causal):
    """``attention.block_map``, remembered and read-only: the redraws at these settings share it."""
    codes = block_map(n, block, causal=causal)
    codes.setflags(write=False)
    return codes


@lru_cache(maxsize=4096)
def _tiled(n, d, block, causal):
    """``tiled_traffic``, remembered: a slider revisits the same few hundred settings."""
    return tiled_traffic(n, d, block, causal=causal)


@lru_cache(maxsize=512)  # every n the slider reaches (64 to 2048 by 4)
def _ratio_curves(n, d, blocks):
    """naive / tiled floats per block size, with and without the causal mask, beside 2B/d."""
    naive = naive_traffic(n, d).total
    return {"no mask": [naive / _tiled(n, d, b, False).total for b in blocks],
            "causal": [naive / _tiled(n, d, b, True).total for b in blocks],
            "2B/d": [2 * b / d for b in blocks]}


def _tiled_data(n, d, block, causal, blocks):
    naive = naive_traffic(n, d).total
    tiled = _tiled(n, d, block, causal)
    return dict(codes=_block_map(n, block, causal), curves=_ratio_curves(n, d, tuple(blocks)),
                naive=naive, tiled=tiled, ratio=naive / tiled.total)


def _blocks(t):
    return "block" if t == 1 else "blocks"


def _ratio_line(n, d, block, causal, data):
    """naive / tiled beside its large-n estimate: 2B/d without the mask; a causal kernel streams
    about half of K and V (naive still computes all of S), so about 4B/d. Both hold for n much
    larger than d and B (the 4nd floats of Q, K, V and O count at small n: the prose says so)."""
    more = "; tiling moves MORE floats" if data["ratio"] < 1 else ""
    if not causal:
        return f"naive / tiled = {data['ratio']:.2f} (2B/d = {2 * block / d:.2f}){more}"
    unmasked = data["naive"] / _tiled(n, d, block, False).total
    return (f"naive / tiled: causal {data['ratio']:.2f} (4B/d = {4 * block / d:.2f}), no mask "
            f"{unmasked:.2f} (2B/d = {2 * block / d:.2f}){more}")


def _tiled_readout(n, d, block, causal, data):
    """Five lines; d (fixed) and what a tile is are in the notebook's prose."""
    codes = data["codes"]
    t = codes.shape[0]
    skipped = int((codes == TILE_SKIPPED).sum())
    masked = int((codes == TILE_MASKED).sum())
    rest = n - (t - 1) * block
    return "\n".join([
        f"n = {n:,}, B = {block}: ceil(n / B) = {t} query {_blocks(t)}"
        + (f" (the last holds {rest} rows)" if 1 < t and rest != block else "")
        + f" x {t} key {_blocks(t)}",
        f"{'causal' if causal else 'no mask'}: {t * t - skipped:,} of {t * t:,} tiles computed "
        f"({masked:,} of them need the mask), {skipped:,} skipped "
        f"({100 * skipped / (t * t):.1f}%)",
        f"floats moved per head: naive {data['naive']:,}, tiled {data['tiled'].total:,} "
        f"(reads {data['tiled'].reads:,}, writes {data['tiled'].writes:,})",
        _ratio_line(n, d, block, causal, data),
        f"score buffer n^2 = {n * n:,} floats; one tile B^2 = {block * block:,} floats",
    ])


def tiled_explorer(*, n=512, d=128, block=64, causal=True,
                   blocks=(16, 32, 64, 128, 256, 512)):
    """A block-size slider: which (query, key) tiles run or are skipped, and the traffic ratio.

    Left: the tile grid of one head (skipped / masked / full) over token positions 0 to n.
    Right: naive / tiled floats against B for the current n and d, with and without the
    causal mask, beside 2B/d.
    """
    blocks = int_list("blocks", blocks)
    d = check.integer("d", d, minimum=1)
    controls = {
        "block": widgets.SelectionSlider(options=blocks, value=option("block", block, blocks),
                                         description="block size B", **slider_layout("280px")),
        "n": widgets.IntSlider(value=slider_int("n", n, 64, 2048), min=64, max=2048, step=4,
                               description="tokens n", **slider_layout("280px")),
        "causal": _spaced(checkbox("causal mask", check.flag("causal", causal))),
    }
    fig, (ax_map, ax_ratio) = new_figure(figsize=(FIGURE_WIDTH, 3.8), ncols=2,
                                         width_ratios=[1.0, 1.15])
    data = _tiled_data(n, d, block, causal, blocks)
    artists = {"map": plots.draw_block_map(ax_map, data["codes"], block=block, n=n),
               "ratio": plots.draw_ratio_curves(ax_ratio, blocks, data["curves"],
                                                marker_block=block, d=d)}
    envelope = [c for size in (controls["n"].min, controls["n"].max)
                for c in _tiled_data(size, d, block, causal, blocks)["curves"].values()]
    plots.fit_log_ylim(ax_ratio, envelope)
    freeze_layout(fig)
    plots.legends_to_figure(fig)
    plots.fix_ticks(fig)  # limits stay: the same ticks every step

    def redraw(block, n, causal):
        data = _tiled_data(n, d, block, causal, blocks)
        plots.update_block_map(ax_map, artists["map"], data["codes"], block=block, n=n)
        plots.update_ratio_curves(ax_ratio, artists["ratio"], data["curves"], marker_block=block,
                                  rescale=False)
        return _tiled_readout(n, d, block, causal, data), data

    return Explorer(controls, fig, redraw, axes=(ax_map, ax_ratio), artists=artists)
