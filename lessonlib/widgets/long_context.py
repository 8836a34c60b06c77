"""Widgets for notebook 09: long-context cost curves, and the needle grid's heatmap.

``cost_explorer`` computes with ``lessonlib.traffic.long_context_cost`` and
``lessonlib.kv_cache.kv_cache_bytes``, draws with ``lessonlib.plots.kv_cache`` and returns an
``Explorer`` with ``axes``, ``artists`` (updated in place) and ``data``. ``needle_heatmap``
shows a finished ``needles.NeedleGrid`` with ``lessonlib.plots.long_context``; its readout is the
grid's text table. ``explorer.readout`` is the text a test reads.
"""
import ipywidgets as widgets
from matplotlib.transforms import blended_transform_factory

from .. import _validate as check
from ..kv_cache import ENGINES
from ..kv_cache import GIB, kv_bytes_per_token, kv_cache_bytes
from ..plots import FIGURE_WIDTH
from ..plots import kv_cache as plots
from ..plots.long_context import draw_needle_heatmap
from ..traffic import long_context_cost
from ._base import Explorer, config_dict, freeze_layout, int_list, model_arg, new_figure, option

__all__ = ["cost_explorer", "needle_heatmap"]

_KV_DTYPES = (("F32 (4 B)", 4), ("F16/BF16 (2 B)", 2), ("FP8 (1 B)", 1))
"""The KV-dtype switch's choices: (label, bytes per value)."""
DEFAULT_MODELS = ("Llama-3.1-8B", "DeepSeek-V3", "Gemma-3-27B", "gpt-oss-20b")
DEFAULT_LENGTHS = tuple(2 ** k for k in range(12, 18))  # 4K .. 128K tokens
FIGSIZE = (FIGURE_WIDTH, 4.6)  # inches: unscaled in JupyterLab beside the file browser
LEGEND_BAND = 0.75  # inches under the panels for their legends
LEGEND_FONT = 9  # points: the figure's smallest text (9 px on a laptop, 12 in the presenter)
KV_YLIM_MARGIN = (2.5, 2.5)  # the KV panel's y range: lowest / 2.5 to highest x 2.5


def _kv_gib(configs, lengths, dtype_bytes, engine):
    return {name: [kv_cache_bytes(cfg, n, engine=engine, dtype_bytes=dtype_bytes).total_bytes / GIB
                   for n in lengths] for name, cfg in configs.items()}


def cost_explorer(config, *, params=None, n=131072,
                  models=DEFAULT_MODELS, dtype_bytes=2, engine="llama.cpp",
                  lengths=DEFAULT_LENGTHS):
    """A context-length slider and a KV-dtype switch redraw notebook 09's two costs.

    Left: prefill TFLOP of ``config``'s shape, weights (2 N_param n) against causal attention
    (2 n^2 q_dim L). Right: the KV cache (GiB) that every decode step reads, for real models'
    configs sized by ``engine``'s rule (hybrid models keep small sliding-window caches), beside
    the weights of ``config`` in 8 bits. ``config``: the ``models.Model`` the notebook built (or
    a shipped name or a config.json dict), named in the legend and readout by its name.
    ``params`` (N_param) is its count as the published checkpoint stores it (``Model.params``)
    unless given: Llama 3.1 8B's 8,030,261,248, the count notebooks 01 and 09 print.
    """
    model = model_arg(config)
    cfg, shape, config = model, model.shape, model.name  # the readout and legend say its name
    if params is None:
        if model.params is None:
            raise ValueError(f"params: {model.name}'s parameters are not counted "
                             f"({model.params_note}); give params")
        params = float(model.params)
    params = check.real("params", params, above=0.0)
    lengths = int_list("lengths", lengths)
    n = option("n", n, lengths)
    dtype_bytes = option("dtype_bytes", dtype_bytes, [b for _, b in _KV_DTYPES])
    engine = check.choice("engine", engine, tuple(ENGINES))
    if isinstance(models, str) or not models:
        raise ValueError(f"models must be a list of config names, got {check.describe(models)}")
    configs = {check.text("models", name): config_dict(name, "models") for name in models}
    costs = long_context_cost(lengths, params=params, layers=shape.layers, q_dim=shape.q_dim,
                              kv_bytes_per_token=kv_bytes_per_token(cfg))
    flops = {"weights: 2 N_param n": [c.weight_flops / 1e12 for c in costs],
             "attention, causal: 2 n² q_dim L": [c.attention_flops / 1e12 for c in costs],
             "total": [c.total_flops / 1e12 for c in costs]}
    weights_label = f"{config} weights in 8 bits"
    weights_gib = params / GIB
    controls = {
        "n": widgets.SelectionSlider(options=[(plots.token_label(x), x) for x in lengths],
                                     value=n, description="context n (tokens)",
                                     layout=widgets.Layout(width="330px"),
                                     style={"description_width": "initial"}),
        # each button as wide as its label ("F16/BF16 (2 B)" was cut at a fixed 110 px)
        "dtype_bytes": widgets.ToggleButtons(options=list(_KV_DTYPES), value=dtype_bytes,
                                             description="KV cache",
                                             style={"button_width": "auto",
                                                    "description_width": "initial"}),
    }
    fig, (ax_flops, ax_kv) = new_figure(figsize=FIGSIZE, ncols=2)
    fig.get_layout_engine().set(rect=(0, LEGEND_BAND / FIGSIZE[1], 1, 1 - LEGEND_BAND / FIGSIZE[1]))
    artists = {
        "flops": plots.draw_size_curves(ax_flops, lengths, flops, marker_n=n,
                                        ylabel="prefill compute (TFLOP, log scale)",
                                        title=f"{config} prefill: attention grows with n²"),
        "kv": plots.draw_size_curves(ax_kv, lengths, _kv_gib(configs, lengths, dtype_bytes, engine),
                                     marker_n=n, ylabel="KV cache read per decode step (GiB, log)",
                                     title=f"KV cache grows with n ({engine} sizing)",
                                     hlines={weights_label: weights_gib}),
    }
    # One y range for every KV number format: switching it moves the curves, not the axis (and
    # the axis, drawn once, stays in the blitted background).
    every_kv = [_kv_gib(configs, lengths, b, engine) for _, b in _KV_DTYPES]
    plots.fit_log_ylim(ax_kv, [v for kv in every_kv for v in kv.values()], extra=[weights_gib],
                       margin=KV_YLIM_MARGIN)
    kv_ylim = ax_kv.get_ylim()

    def redraw(n, dtype_bytes):
        kv = _kv_gib(configs, lengths, dtype_bytes, engine)
        plots.update_size_curves(ax_flops, artists["flops"], {}, marker_n=n)
        plots.update_size_curves(ax_kv, artists["kv"], kv, marker_n=n)
        ax_kv.set_ylim(*kv_ylim)
        data = dict(flops=flops, kv_gib=kv, cost=costs[lengths.index(n)],
                    at_n={name: v[lengths.index(n)] for name, v in kv.items()})
        return _readout(config, n, dtype_bytes, data, weights_gib), data

    artists["legends"] = _legends_under(fig, (ax_flops, ax_kv))
    freeze_layout(fig)
    return Explorer(controls, fig, redraw, axes=(ax_flops, ax_kv), artists=artists)


def _legends_under(fig, axes):
    """Each panel's legend in the band under it (``LEGEND_BAND`` inches, left free by the
    layout): inside, the curves ran under it (at F32, the KV panel's upper left is full). A
    figure's legends are drawn once, with the blitted background."""
    legends = []
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        under = blended_transform_factory(ax.transAxes, fig.transFigure)  # x: the panel's
        legends.append(fig.legend(handles, labels, loc="upper center", ncol=2,
                                  bbox_to_anchor=(0.5, LEGEND_BAND / FIGSIZE[1]),
                                  bbox_transform=under,
                                  fontsize=LEGEND_FONT, frameon=False, columnspacing=1.0,
                                  handlelength=2.4, borderaxespad=0.1))
    return legends


def _readout(config, n, dtype_bytes, st, weights_gib):
    c = st["cost"]
    dtype = dict((b, label) for label, b in _KV_DTYPES)[dtype_bytes]
    kv = ", ".join(f"{name} {gib:.2f} GiB" for name, gib in st["at_n"].items())
    own = st["at_n"].get(config)
    # Three short lines (none wraps in the presenter, so the figure keeps the height): the shape,
    # the crossover n = N_param / (q_dim L) and the sizing engine never change, so the notebook's
    # text and the panel titles say them; the number format is named with its ratio.
    lines = [
        f"n = {n:,}: prefill weights {c.weight_flops / 1e12:,.1f} TFLOP + attention "
        f"{c.attention_flops / 1e12:,.1f} TFLOP = {c.total_flops / 1e12:,.1f} TFLOP; "
        f"attention is {100 * c.attention_share:.1f}%",
        f"KV cache at n: {kv}",
    ]
    if own is not None:
        lines.append(f"in {dtype}, {config}'s cache is {own / weights_gib:.2f} x its weights "
                     f"in 8 bits ({weights_gib:.2f} GiB)")
    else:
        lines.append(f"KV cache in {dtype}")
    return "\n".join(lines)


def needle_heatmap(grid, *, title="Needle in a haystack: found (1) or missed (0)",
                   unit="words"):
    """A finished ``NeedleGrid`` as a heatmap (length down, depth across); the readout is the
    grid's table. No sliders: re-run the grid to change it. ``unit``: what the lengths count,
    "words" without a tokenizer (the default), "tokens" with one."""
    if not (hasattr(grid, "found") and hasattr(grid, "table")):
        raise ValueError(f"grid must be a NeedleGrid (from needles.run_needle_grid), got "
                         f"{check.describe(grid)}")
    title = check.text("title", title)
    fig, ax = new_figure(figsize=(8, 4.2))
    if unit not in ("words", "tokens"):
        raise ValueError(f"unit must be 'words' or 'tokens', got {unit!r}")
    image, colorbar = draw_needle_heatmap(ax, grid, title=title, unit=unit)
    return Explorer({}, fig, lambda: (grid.table(), {"found": grid.found}), axes=(ax,),
                    artists={"image": image, "colorbar": colorbar})
