"""Widget for notebook 05: KV-cache size against context length and KV heads (MHA/GQA/MQA/MLA).

The factory computes with ``lessonlib.kv_cache``, draws with ``lessonlib.plots.kv_cache`` and
returns an ``Explorer`` with three more attributes: ``axes``, ``artists`` (updated in place by
every slider move) and ``data`` (what the last redraw computed, for tests and curious students).
``explorer.readout`` is the text a test reads.
"""
import ipywidgets as widgets

from .. import _validate as check
from ..kv_cache import GIB, gqa_head_map, kv_bytes_per_token, kv_cache_bytes, model_shape
from ..plots import kv_cache as plots
from ._base import Explorer, config_dict, freeze_layout, int_list, new_figure, option, slider_layout

__all__ = ["kv_cache_explorer", "kv_head_options", "with_kv_heads", "head_map_text"]

DEFAULT_LENGTHS = tuple(2 ** k for k in range(10, 18))  # 1K .. 128K tokens


def kv_head_options(n_heads):
    """The KV-head counts a model with ``n_heads`` query heads can have: the divisors."""
    n_heads = check.integer("n_heads", n_heads, minimum=1)
    return [h for h in range(1, n_heads + 1) if n_heads % h == 0]


def with_kv_heads(config, kv_heads):
    """A copy of ``config`` with ``num_key_value_heads`` replaced (the same model as MHA/MQA)."""
    return dict(config_dict(config), num_key_value_heads=check.integer("kv_heads", kv_heads,
                                                                         minimum=1))


def _kind(kv_heads, n_heads):
    return "MHA" if kv_heads == n_heads else "MQA" if kv_heads == 1 else "GQA"


def head_map_text(head_map, *, show=3):
    """``0-3 -> 0, 4-7 -> 1, ..., 28-31 -> 7``: the groups of a head map, shortened."""
    head_map = check.array("head_map", head_map, kind="int", ndim=1)
    show = check.integer("show", show, minimum=1)
    if head_map.size == 0 or head_map.min() < 0:
        raise ValueError(f"head_map must list a KV head >= 0 per query head, got {head_map}")
    groups = []
    for g in range(int(max(head_map)) + 1):
        heads = [h for h, k in enumerate(head_map) if k == g]
        groups.append(f"{heads[0]}-{heads[-1]} -> {g}" if len(heads) > 1 else f"{heads[0]} -> {g}")
    if len(groups) > show + 1:
        groups = groups[:show] + ["..."] + groups[-1:]
    return ", ".join(groups)


def _sizes_gib(config, lengths, dtype_bytes):
    return [kv_cache_bytes(config, n, engine="ideal", dtype_bytes=dtype_bytes).total_bytes / GIB
            for n in lengths]


def kv_cache_explorer(config="Llama-3.1-8B", *, n=32768, kv_heads=None, mla_config="DeepSeek-V3",
                      dtype_bytes=2, lengths=DEFAULT_LENGTHS):
    """Sliders for context length n and the number of KV heads redraw the cache size.

    Left: the whole cache (GiB, exact tokens) against n for the model as MHA, with the slider's
    KV heads, as MQA, and a real MLA model (``mla_config``) for scale. Right: which KV head
    each query head reads (``h // (hq / h_kv)``).
    """
    cfg = config_dict(config)
    if cfg.get("kv_lora_rank") is not None:
        raise ValueError("config is an MLA model: it has no KV heads to vary; give a GQA config")
    kv_bytes_per_token(cfg, dtype_bytes)  # validates the shape keys and dtype_bytes
    shape = model_shape(cfg)
    hq = shape.heads
    if kv_heads is None:
        kv_heads = shape.kv_heads
    options = kv_head_options(hq)
    kv_heads = check.integer("kv_heads", kv_heads, minimum=1)
    if kv_heads not in options:
        raise ValueError(f"kv_heads must divide the {hq} query heads: one of {options}")
    lengths = int_list("lengths", lengths)
    n = option("n", n, lengths)
    mla = config_dict(mla_config, "mla_config")
    name = config if isinstance(config, str) else cfg.get("model_type", "model")
    mla_name = mla_config if isinstance(mla_config, str) else "MLA model"
    labels = {"mha": f"MHA ({hq} KV heads)", "slider": "h_kv from the slider",
              "mqa": "MQA (1 KV head)",
              "mla": f"MLA: {mla_name}"}
    fixed = {labels["mha"]: _sizes_gib(with_kv_heads(cfg, hq), lengths, dtype_bytes),
             labels["mqa"]: _sizes_gib(with_kv_heads(cfg, 1), lengths, dtype_bytes),
             labels["mla"]: _sizes_gib(mla, lengths, dtype_bytes)}
    controls = {
        "n": widgets.SelectionSlider(options=[(plots.token_label(x), x) for x in lengths],
                                     value=n, description="context n (tokens)",
                                     **slider_layout("330px")),
        "kv_heads": widgets.SelectionSlider(options=options, value=kv_heads,
                                            description="KV heads h_kv", **slider_layout("330px")),
    }
    fig, (ax_size, ax_map) = new_figure(figsize=FIGSIZE, ncols=2)
    curves = {labels["mha"]: fixed[labels["mha"]],
              labels["slider"]: _sizes_gib(with_kv_heads(cfg, kv_heads), lengths, dtype_bytes),
              labels["mqa"]: fixed[labels["mqa"]], labels["mla"]: fixed[labels["mla"]]}
    artists = {
        "sizes": plots.draw_size_curves(ax_size, lengths, curves, marker_n=n,
                                        ylabel="KV cache, all layers (GiB, log scale)",
                                        title=f"{name}: KV cache against n",
                                        legend_loc="upper left",  # above every curve
                                        ylim_pad=(2.5, 6.0), cursor="drop"),
        "map": plots.draw_head_map(ax_map, gqa_head_map(hq, kv_heads), kv_heads),
    }
    plots.medium_titles(ax_size, ax_map)
    # The y range holds every curve the slider can draw (MHA above, MQA below): fixed, so a
    # slider step redraws only lines, markers and the head map's cells (layout, ticks stay).
    plots.update_size_curves(ax_size, artists["sizes"], {}, marker_n=n)
    freeze_layout(fig)
    plots.medium_titles(ax_size, ax_map)  # freeze_layout set them again, at the default size
    plots.pin_legend(ax_size)  # upper left, above every curve and the cursor: drawn once

    def redraw(n, kv_heads):
        variant = with_kv_heads(cfg, kv_heads)
        sizes = sizes_for(kv_heads)
        head_map = gqa_head_map(hq, kv_heads)
        plots.update_size_curves(ax_size, artists["sizes"], {labels["slider"]: sizes}, marker_n=n)
        plots.update_head_map(ax_map, artists["map"], head_map, kv_heads)
        data = dict(sizes_gib=sizes, head_map=head_map,
                    per_token=kv_bytes_per_token(variant, dtype_bytes),
                    total_bytes=kv_cache_bytes(variant, n, engine="ideal",
                                               dtype_bytes=dtype_bytes).total_bytes,
                    fixed_gib={k: v[lengths.index(n)] for k, v in fixed.items()})
        return _readout(name, shape, n, kv_heads, dtype_bytes, data, labels, mla_name), data

    sizes_by_heads = {}

    def sizes_for(kv_heads):  # each setting's curve once: the slider has a handful of them
        if kv_heads not in sizes_by_heads:
            sizes_by_heads[kv_heads] = _sizes_gib(with_kv_heads(cfg, kv_heads), lengths,
                                                  dtype_bytes)
        return sizes_by_heads[kv_heads]

    return Explorer(controls, fig, redraw, axes=(ax_size, ax_map), artists=artists)


FIGSIZE = (9.2, 3.8)  # inches: 920 px at 100 dpi (a laptop's output area), 1196 px at 130


def _readout(name, shape, n, kv_heads, dtype_bytes, st, labels, mla_name):
    layers, hq, d_k, d_v = shape.layers, shape.heads, shape.head_dim, shape.v_head_dim
    # K and V of one width (2 x d_h), or MLA's widths run without the latent (d_k + d_v)
    widths = f"2 x {layers} x {kv_heads} x {d_k}" if d_k == d_v else \
        f"{layers} x {kv_heads} x ({d_k} + {d_v})"
    group = hq // kv_heads
    per_token = st["per_token"]
    share = "one per query head" if group == 1 else \
        f"{group} query heads share each" if kv_heads > 1 else f"all {hq} query heads share it"
    fixed = st["fixed_gib"]
    # The model's fixed shape (layers, query heads, d_h, bytes per entry) is the notebook's
    # prose: the readout holds what the sliders change.
    return "\n".join([
        f"h_kv = {kv_heads} KV heads ({_kind(kv_heads, hq)}, {share}): {widths}"
        f" x {dtype_bytes} = {per_token:,} bytes/token ({per_token / 1024:g} KiB)",
        f"at n = {n:,} tokens: {st['total_bytes'] / GIB:.2f} GiB"
        f"   (MHA {fixed[labels['mha']]:.2f} GiB, MQA {fixed[labels['mqa']]:.2f} GiB, "
        f"{mla_name} MLA {fixed[labels['mla']]:.2f} GiB)",
        f"query head h reads KV head h // {group}: {head_map_text(st['head_map'])}",
    ])
