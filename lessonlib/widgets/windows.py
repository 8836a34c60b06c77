"""Widget for notebook 06: the sliding-window mask with sinks, and what each layer keeps.

The factory computes with ``lessonlib.attention`` (the mask's codes, ``mask_codes``) and
``lessonlib.kv_cache`` (each engine's sizing rule), draws with ``lessonlib.plots.windows`` and
returns an ``Explorer`` with ``axes``, ``artists`` (updated in place) and ``data`` (what the
last redraw computed). ``explorer.readout`` is the text a test reads.
"""
import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from ..attention import MASK_HIDDEN, mask_codes
from ..kv_cache import MIB, kv_bytes_per_token_per_layer, kv_cache_bytes, layer_windows
from ..plots import windows as plots
from ..plots.kv_cache import medium_titles, pin_legend
from ..plots import FIGURE_WIDTH
from ._base import (Explorer, config_dict, freeze_layout, model_arg, new_figure, slider_int,
                    slider_layout)

__all__ = ["window_explorer"]


def _with_window(config, window):
    """A copy of ``config`` whose sliding-window layers use window ``window``."""
    return dict(config_dict(config), sliding_window=check.integer("window", window, minimum=1))


def _data(cfg, n, window, sinks, n_ubatch, block_size):
    codes = mask_codes(n, window, sinks)
    keep = int((codes[-1] != MASK_HIDDEN).sum())  # keys the newest query reads
    cfg_w = _with_window(cfg, window)
    local = np.array([w is not None for w in layer_windows(cfg_w)])
    sizes = {e: kv_cache_bytes(cfg_w, n, engine=e, n_ubatch=n_ubatch, block_size=block_size)
             for e in ("ideal", "llama.cpp", "vllm")}
    full = kv_cache_bytes(cfg_w, n, engine="ideal", swa_full=True)
    per_cell = kv_bytes_per_token_per_layer(cfg_w)
    entries = np.where(local, keep, n)  # per layer: sinks + window, or every token
    return dict(codes=codes, keep=keep, local=local, entries=entries, sizes=sizes, full=full,
                per_cell=per_cell, kept_bytes=int(entries.sum()) * per_cell,
                levels={"llama.cpp cells": sizes["llama.cpp"].sliding_layers.cells,
                        "vLLM block slots": sizes["vllm"].sliding_layers.cells})


WINDOW_STEP = 16  # vLLM's block: each press adds one block of slots per sliding layer
FIGSIZE = (FIGURE_WIDTH, 3.9)  # inches: 920 px at 100 dpi (a laptop's output area), 1196 px at 130


def window_explorer(config, *, n=256, window=128, sinks=4, max_n=512,
                    n_ubatch=512, block_size=16):
    """Sliders for the window W, the number of sink tokens and the context n.

    Left: the causal mask of n tokens with window W and the sinks. Right: the KV entries each
    layer of ``config``'s layer pattern must keep at n (its sliding layers use the slider's W;
    the StreamingLLM sinks count for them), with what llama.cpp and vLLM allocate for one
    sliding layer. The readout adds the whole cache in MiB by each rule. The window moves in
    steps of 16 tokens, one vLLM block (any value from 16 can be typed); the sinks slider is
    disabled while the window covers the whole context (no key is outside it, so sinks change
    nothing). Each panel's key is a legend under it, drawn once. ``config``: the
    ``models.Model`` the notebook built (or a shipped name or a config.json dict); a model
    without sliding-window layers is an error.
    """
    model = model_arg(config)  # the Model the cell names (or a shipped name or a config dict)
    cfg, name = dict(model), model.name
    if not any(w is not None for w in layer_windows(cfg)):
        raise ValueError(f"config {name!r} has no sliding-window layers")
    max_n = check.integer("max_n", max_n, minimum=WINDOW_STEP)
    window = slider_int("window", window, WINDOW_STEP, max_n)
    sinks = slider_int("sinks", sinks, 0, 16)
    n = slider_int("n", n, 16, max_n)
    n_ubatch = check.integer("n_ubatch", n_ubatch, minimum=1)
    block_size = check.integer("block_size", block_size, minimum=1)
    controls = {
        "window": widgets.IntSlider(value=window, min=WINDOW_STEP, max=max_n, step=WINDOW_STEP,
                                    description="window", **slider_layout("300px")),
        "sinks": widgets.IntSlider(value=sinks, min=0, max=16, description="sinks",
                                   **slider_layout("220px")),
        "context": widgets.IntSlider(value=n, min=16, max=max_n, step=16,
                                     description="context n", **slider_layout("300px")),
    }
    fig, (ax_mask, ax_bars) = new_figure(figsize=FIGSIZE, ncols=2,
                                         gridspec_kw={"width_ratios": [1.0, 1.5]})
    d = _data(cfg, n, window, sinks, n_ubatch, block_size)
    # The bars' y range: the most any setting reaches (a global layer at max_n tokens, or an
    # engine's allocation at the widest window), so no slider step moves the axes.
    widest = _data(cfg, max_n, max_n, 16, n_ubatch, block_size)
    bars_title = f"{name}: KV entries kept per layer"
    top = max([max_n] + list(widest["levels"].values()))
    artists = {"mask": plots.draw_window_mask(ax_mask, d["codes"],
                                              title=_mask_title(window, sinks, n)),
               "bars": plots.draw_layer_cache(ax_bars, d["entries"], d["local"],
                                              levels=d["levels"], ylim=(0, 1.08 * top),
                                              title=bars_title)}
    medium_titles(ax_mask, ax_bars)
    freeze_layout(fig)
    medium_titles(ax_mask, ax_bars)  # freeze_layout set them again, at the default size
    pin_legend(ax_mask)  # the keys under both panels, off the data: drawn once
    pin_legend(ax_bars)

    def redraw(window, sinks, context):
        d = _data(cfg, context, window, sinks, n_ubatch, block_size)
        plots.update_window_mask(ax_mask, artists["mask"], d["codes"],
                                 title=_mask_title(window, sinks, context))
        plots.update_layer_cache(ax_bars, artists["bars"], d["entries"], levels=d["levels"],
                                 title=bars_title)
        return _readout(name, context, window, sinks, n_ubatch, block_size, d), d

    return Explorer(controls, fig, redraw, axes=(ax_mask, ax_bars), artists=artists,
                    disabled_when={"sinks": lambda v: v["window"] >= v["context"]})


def _mask_title(window, sinks, n):
    return f"causal mask: W = {window}, {sinks} sinks, n = {n}"


def _readout(name, n, W, sinks, n_ubatch, block_size, d):
    """What the sliders change; the model's fixed facts (its sliding and global layers, the
    bytes per token per layer) are the notebook's prose."""
    first = max(0, n - W)  # the oldest key inside the newest query's window
    extra = min(sinks, first)  # sinks that lie outside the window
    llama, vllm = d["sizes"]["llama.cpp"].sliding_layers, d["sizes"]["vllm"].sliding_layers
    seen = f"keys {first}..{n - 1} ({n - first} in the window)"
    seen += f" + sinks 0..{extra - 1} = {d['keep']} of {n} keys" if extra else \
        f" = {d['keep']} of {n} keys" + (", sinks inside it" if sinks else "")
    sizes = d["sizes"]
    return "\n".join([
        f"window W = {W}, {sinks} sinks, context n = {n}; a sliding layer keeps {d['keep']} "
        f"entries, a global one {n}",
        f"newest query (p = {n - 1}) sees {seen}",
        f"llama.cpp allocates pad(min({n}, {W} + {n_ubatch}), 256) = {llama.cells} cells, "
        f"vLLM {vllm.blocks} blocks x {block_size} = {vllm.cells} slots",
        f"whole cache: sinks + window {d['kept_bytes'] / MIB:.2f} MiB, llama.cpp "
        f"{sizes['llama.cpp'].total_mib:.2f} MiB, vLLM {sizes['vllm'].total_mib:.2f} MiB, every "
        f"layer global {d['full'].total_mib:.2f} MiB",
    ])
