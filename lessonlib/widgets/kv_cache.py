"""Widget for notebook 05: KV-cache size against context length and KV heads (MHA/GQA/MQA/MLA).

The factory computes with ``lessonlib.kv_cache``, draws with ``lessonlib.plots.kv_cache`` and
returns an ``Explorer`` with three more attributes: ``axes``, ``artists`` (updated in place by
every slider move) and ``data`` (what the last redraw computed, for tests and curious students).
``explorer.readout`` is the text a test reads.
"""
import ipywidgets as widgets

from .. import _validate as check
from ..models.configs import config_from_text
from ..kv_cache import (GIB, KV_TYPES, VLLM_GPU_MEMORY_UTILIZATION, cache_room, gqa_head_map,
                        kv_bytes_per_token, kv_cache_bytes, sequence_bytes,
                        vllm_serve_in_flight_tokens)
from ..models import load_model
from ..plots import kv_cache as plots
from ..plots import FIGURE_WIDTH
from ._base import (Explorer, config_dict, freeze_layout, int_list, model_arg, new_figure, option,
                    slider_layout)

__all__ = ["kv_cache_explorer", "kv_head_options", "with_kv_heads", "head_map_text",
           "model_budget_explorer"]

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


def kv_cache_explorer(config, *, mla_config, n=32768, kv_heads=None, dtype_bytes=2,
                      lengths=DEFAULT_LENGTHS):
    """Sliders for context length n and the number of KV heads redraw the cache size.

    Left: the whole cache (GiB, exact tokens) against n for the model as MHA, with the slider's
    KV heads, as MQA, and a real MLA model (``mla_config``) for scale. Right: which KV head
    each query head reads (``h // (hq / h_kv)``). ``config`` and ``mla_config``: the
    ``models.Model`` the notebook built (or a shipped name or a config.json dict), named in the
    legend and the readout.
    """
    model = model_arg(config)
    if model.mla:
        raise ValueError("config is an MLA model: it has no KV heads to vary; give a GQA config")
    cfg = dict(model)
    dtype_bytes = check.positive_int("dtype_bytes", dtype_bytes)
    shape = model.shape
    hq = shape.heads
    if kv_heads is None:
        kv_heads = shape.kv_heads
    options = kv_head_options(hq)
    kv_heads = check.integer("kv_heads", kv_heads, minimum=1)
    if kv_heads not in options:
        raise ValueError(f"kv_heads must divide the {hq} query heads: one of {options}")
    lengths = int_list("lengths", lengths)
    n = option("n", n, lengths)
    mla = model_arg(mla_config, "mla_config")
    name, mla_name = model.name, mla.name
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


FIGSIZE = (FIGURE_WIDTH, 3.8)  # inches: 920 px at 100 dpi (a laptop's output area), 1196 px at 130


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


# ------------------------------------------------------------------ your own model (notebook 05)

YOUR_CONFIG = "your config.json (paste or upload)"
BUDGET_FIGSIZE = (FIGURE_WIDTH, 3.4)  # inches: lower than FIGSIZE, room for two rows of controls
BUDGET_LENGTHS = tuple(2 ** k for k in range(10, 21))  # 1K .. 1M tokens
GPU_GIB = (8, 12, 16, 24, 32, 40, 48, 80, 96, 141, 192)  # common cards' memory, GiB
BUDGET_KV_TYPES = ("f16", "q8_0", "fp8")
_ENGINE_LABELS = {"llama.cpp": "llama.cpp + compute buffer", "vllm": "vLLM (blocks of 16)",
                  "ideal": "exact tokens"}
_ROOM = "GPU memory - weights"
_ROOM_VLLM = f"vLLM: {VLLM_GPU_MEMORY_UTILIZATION} x GPU - weights"


def _uploaded(value):
    """(name, text) of the last file a FileUpload holds, or None."""
    files = list(value or ())
    if not files:
        return None
    f = files[-1]
    return f.get("name", "config.json"), bytes(f["content"]).decode("utf-8", "replace")


def _budget_models():
    """The shipped configs the budget offers: the released models whose weights
    ``lessonlib.models.weights`` counts (the tiny test models and the hypothetical hybrid, which has no
    checkpoint, are left out: without weights there is no room to draw)."""
    from ..models import weights
    from ..models.configs import config_names
    from ..models.shape import model_type
    return [c for c in config_names()
            if not c.startswith("tiny-") and model_type(config_dict(c)) in weights.MODEL_TYPES]


def model_budget_explorer(model, *, n=32768, gpu_gib=24, kv_type="f16",
                          lengths=BUDGET_LENGTHS):
    """A shipped model, or a pasted or uploaded config.json, against a GPU's memory. ``model``
    starts the dropdown: a shipped config's name, or the ``models.Model`` of one.

    The figure: what one sequence needs beside the weights against context n (log-log), by
    each engine's rule (``kv_cache.sequence_bytes``: llama.cpp's cache plus its compute buffer's
    reserve, vLLM's blocks for one request plus its null block, the exact cache), and the room
    the weights (``weights.weight_bytes``) leave each engine (``kv_cache.cache_room``: vLLM takes
    0.92 of the GPU). The readout is ``inspect_model``'s, from the same ``kv_cache.gpu_budget``:
    each engine's cache at n, the longest sequence and how many of n tokens fit, the limits the
    file derives and its warnings. Each curve crosses its room line where the readout's longest
    sequence ends (tested at every slider extreme). A config that cannot be read is named in the
    readout ("cannot read it: ..."), its curves cleared. The text box and the upload button are
    shown and enabled for "your config.json" only.

    ``model`` is one of the shipped released models (not the tiny ones, nor the hypothetical
    hybrid, which has no checkpoint to weigh); ``n`` one of ``lengths`` (default 1K to 1M
    tokens); ``gpu_gib`` one of the common cards' 8, 12, 16, 24, 32, 40, 48, 80, 96, 141 and 192
    GiB; ``kv_type`` one of f16, q8_0, fp8.
    """
    from .. import inspect_model as im
    names = _budget_models()
    if not isinstance(model, str):  # the Model (or config dict) a cell built: its shipped name
        model = model_arg(model, "model").name
    if model not in names:
        raise ValueError(f"model must be one of {names}, got {model!r}")
    lengths = int_list("lengths", lengths)
    n = option("n", n, lengths)
    gpu_gib = option("gpu_gib", gpu_gib, GPU_GIB)
    kv_type = check.choice("kv_type", kv_type, BUDGET_KV_TYPES)
    controls = {
        "model": widgets.Dropdown(options=names + [YOUR_CONFIG], value=model,
                                  description="model", layout=widgets.Layout(width="380px"),
                                  style={"description_width": "initial"}),
        "upload": widgets.FileUpload(accept=".json", multiple=False,
                                     description="upload config.json",
                                     layout=widgets.Layout(width="190px")),
        "kv_type": widgets.ToggleButtons(options=list(BUDGET_KV_TYPES), value=kv_type,
                                         description="KV cache",
                                         style={"button_width": "auto",
                                                "description_width": "initial"}),
        "pasted": widgets.Textarea(value="", placeholder="paste a config.json here",
                                   description="config.json", continuous_update=False,
                                   layout=widgets.Layout(width="600px", height="60px"),
                                   style={"description_width": "initial"}),
        "n": widgets.SelectionSlider(options=[(plots.token_label(x), x) for x in lengths],
                                     value=n, description="context n (tokens)",
                                     **slider_layout("330px")),
        "gpu_gib": widgets.SelectionSlider(options=list(GPU_GIB), value=gpu_gib,
                                           description="GPU memory (GiB)",
                                           **slider_layout("330px")),
    }
    fig, ax = new_figure(figsize=BUDGET_FIGSIZE)
    empty = [float("nan")] * len(lengths)
    labels = list(_ENGINE_LABELS.values())
    artists = {"sizes": plots.draw_budget(
        ax, lengths, {label: empty for label in labels}, marker_n=n,
        room={_ROOM: 1.0, _ROOM_VLLM: VLLM_GPU_MEMORY_UTILIZATION},
        title="what one sequence needs beside the weights, and the room they leave")}
    ax.set_ylim(1e-3, 1e3)
    plots.medium_titles(ax)
    freeze_layout(fig)
    plots.medium_titles(ax)
    plots.pin_legend(ax)  # the key under the axes, off the data: drawn once, not every step
    cache = {}

    models = {}  # each shipped model read once (a Model), not at every slider step

    def read(model, pasted, upload):
        if model != YOUR_CONFIG:
            if model not in models:
                models[model] = load_model(model)
            return model, models[model]
        up = _uploaded(upload)
        name, text = up if up is not None else ("config.json", pasted)
        return name, load_model(config_from_text(text, name), name=name)

    def limits(key, cfg, weights_bytes):
        """Y limits for this model: every cache type's curves and every GPU's room, so moving n,
        the GPU or the cache type moves lines, never the axes (only a new model re-fits)."""
        if limits.key == key:
            return
        limits.key = key
        every = [y for t in BUDGET_KV_TYPES for y in curves_for(key, cfg, t, 4096).values()]
        rooms = [cache_room(g * GIB, weights_bytes, engine=e) / GIB for g in GPU_GIB
                 for e in ("llama.cpp", "vllm")]
        plots.fit_log_ylim(ax, every, extra=[r for r in rooms if r > 0], margin=(2.0, 2.0))

    limits.key = None

    def curves_for(key, cfg, kv_type, in_flight):
        """Each engine's curve: ``kv_cache.sequence_bytes`` for one sequence of each length, the
        rule the readout's ``kv_cache.gpu_budget`` fits against ``cache_room``, so a curve
        crosses its room line where the readout's longest sequence ends."""
        if (key, kv_type, in_flight) not in cache:
            out = {}
            for engine, label in _ENGINE_LABELS.items():
                if engine in KV_TYPES[kv_type].engines:
                    out[label] = [sequence_bytes(cfg, x, engine=engine, kv_type=kv_type,
                                                 max_in_flight_tokens=in_flight) / GIB
                                  for x in lengths]
                else:
                    out[label] = empty
            cache[(key, kv_type, in_flight)] = out
        return cache[(key, kv_type, in_flight)]

    def redraw(model, pasted, upload, n, gpu_gib, kv_type):
        try:
            name, cfg = read(model, pasted, upload)
            key = name if model != YOUR_CONFIG else (name, pasted, id(upload))
            gpu = gpu_gib * GIB
            sizes = curves_for(key, cfg, kv_type, vllm_serve_in_flight_tokens(gpu))
            weights = _weights(cfg)
            rep = im.report(cfg, [n], kv_types=[kv_type], gpu_memory=gpu,
                            weights_bytes=weights[0] if weights[0] is not None else 0,
                            weights_source=weights[1], source={"name": name})
        except ValueError as err:
            plots.update_budget(ax, artists["sizes"], {k: empty for k in labels}, marker_n=n,
                                room={_ROOM: float("nan"), _ROOM_VLLM: float("nan")})
            return f"cannot read it: {err}", {"error": str(err)}
        rooms = {label: cache_room(gpu, weights[0] or 0, engine=engine) / GIB
                 for label, engine in ((_ROOM, "llama.cpp"), (_ROOM_VLLM, "vllm"))}
        levels = {label: r if r > 0 else float("nan") for label, r in rooms.items()}
        limits(key, cfg, weights[0] or 0)
        plots.update_budget(ax, artists["sizes"], sizes, marker_n=n, room=levels)
        return _budget_readout(name, cfg.shape, rep, n, weights), {
            "report": rep, "sizes_gib": sizes, "room_gib": levels}

    own = ("pasted", "upload")

    def show_own(change=None):  # the paste box and the upload button only for your own config
        for name in own:
            controls[name].layout.display = None if controls["model"].value == YOUR_CONFIG \
                else "none"

    show_own()
    controls["model"].observe(show_own, names="value")
    return Explorer(controls, fig, redraw, axes=(ax,), artists=artists, wrap=True,
                    disabled_when={name: (lambda v: v["model"] != YOUR_CONFIG) for name in own})


def _weights(model):
    """(bytes, where from) of a ``models.Model``'s weights, or (None, why not) when its model
    type is one lessonlib.models.weights does not count."""
    w = model.weights
    if w is None:
        return None, f"not counted ({model.params_note}); the room lines leave them out"
    return w.bytes, f"{w.params / 1e9:.2f}B parameters, as published"


READOUT_WIDTH = 88  # columns: the readout's monospace lines fit the output area unwrapped


def _budget_readout(name, shape, rep, n, weights):
    import textwrap
    from ..traffic import format_bytes as _fmt_bytes
    s, b = shape, rep["budget"]
    lines = [f"{name} ({s.layers} layers, {s.kv_heads} KV heads of {s.head_dim}): "
             + (f"weights {_fmt_bytes(weights[0])}" if weights[0] is not None
                else "weights not counted") + f", GPU {_fmt_bytes(b['gpu_memory'])}",
             f"{'at n = ' + format(n, ','):<18}{'cache':>11}  {'sequences of n':>14}  "
             f"{'longest sequence':>18}"]
    by_engine = {e["engine"]: e for e in b["engines"]}
    for row in rep["caches"]:
        if row["swa_full"]:
            continue
        e = by_engine[row["engine"]]
        label = {"llama.cpp": "llama.cpp", "vllm": "vLLM", "ideal": "exact tokens"}[row["engine"]]
        lines.append(f"  {label:<16}{_fmt_bytes(row['bytes']):>11}  "
                     f"{e['sequences'][str(n)]:>14,}  " + (f"{e['max_tokens']:>11,} tokens"
                                                           if e["max_tokens"] is not None
                                                           else f"{'any length':>18}"))
    lim = rep["limits"]
    show = lambda v: "-" if v is None else f"{v:,}"
    lines.append(f"longest context: HF {show(lim['hf_max_position_embeddings'])}, vLLM "
                 f"{show(lim['vllm_max_model_len'])}, llama.cpp "
                 f"{show(lim['llamacpp_n_ctx_train'])}")
    if weights[0] is None:
        lines += textwrap.wrap(f"weights: {weights[1]}", READOUT_WIDTH, subsequent_indent="  ")
    for x in rep["notes"] + rep["warnings"]:
        lines += textwrap.wrap(f"note: {x}", READOUT_WIDTH, subsequent_indent="  ",
                               break_long_words=False)
    return "\n".join(lines)
