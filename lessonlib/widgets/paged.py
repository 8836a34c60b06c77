"""Widget for notebook 11: vLLM's paged KV cache, step by step through a chat server's stream.

The factory replays ``lessonlib.paged.chat_stream`` (three requests sharing a system prompt)
through one of ``lessonlib.paged``'s managers on a fresh ``BlockPool``, draws the cache after
the chosen step with ``lessonlib.plots.paged`` and returns an ``Explorer`` with ``axes``,
``artists`` (updated in place) and ``data`` (what the last redraw showed). Every number the
figure and the readout show is read from the replay's ``StreamStep``: tables, free queue,
cached blocks, the step's ``Allocation``. ``explorer.readout`` is the text a test reads.
"""
import ipywidgets as widgets

from .. import _validate as check
from ..paged import (NULL_BLOCK, BlockPool, FullAttentionManager, SinkFullAttentionManager,
                     SlidingWindowManager, chat_stream, replay, with_sink_blocks)
from ..plots import FIGURE_WIDTH
from ..plots import paged as plots
from ..plots.kv_cache import medium_titles, pin_legend
from ._base import Explorer, freeze_layout, new_figure, slider_int, slider_layout

__all__ = ["stream_explorer"]

FULL, WINDOW, SINK = "full attention", "sliding window", "full + sink block"
LAYERS = (FULL, WINDOW, SINK)
_LABELS = {FULL: "full", WINDOW: "window", SINK: "sinks"}  # the slider's short labels (72 px)
# Each kind of layer's manager on a fresh pool (vLLM's default retention 0 for the window).
_MANAGERS = {
    FULL: lambda pool, W, B, S: FullAttentionManager(pool, B),
    WINDOW: lambda pool, W, B, S: SlidingWindowManager(pool, W, B),
    SINK: lambda pool, W, B, S: SinkFullAttentionManager(pool, S, B),
}
MAX_WINDOW = 16  # tokens: the window slider's end
MAX_BLOCKS = 32  # the pool row stays readable up to this many squares
FIGSIZE = (FIGURE_WIDTH, 3.9)  # inches: 920 x 390 px at 100 dpi (a laptop's output area)


def _replays(num_blocks, block_size, sink_tokens):
    """{(layers, window or None): (steps, sink block ids)} of every setting the controls reach;
    a pool too small for the stream is an error naming num_blocks."""
    ops = chat_stream(block_size)
    settings = [(FULL, None), (SINK, None)] + [(WINDOW, w) for w in range(1, MAX_WINDOW + 1)]
    out = {}
    for layers, window in settings:
        try:
            manager = _MANAGERS[layers](BlockPool(num_blocks), window, block_size, sink_tokens)
        except ValueError as err:  # the sink blocks take more of the pool than it has
            raise ValueError(f"sink_tokens: {sink_tokens} sink tokens do not fit a pool of "
                             f"num_blocks = {num_blocks}: {err}") from None
        try:
            steps = replay(manager, ops)
        except ValueError as err:
            raise ValueError(f"num_blocks: {num_blocks} blocks are too few for the stream "
                             f"({layers}): {err}") from None
        out[(layers, window)] = (steps, tuple(getattr(manager, "sink_blocks", ())))
    return out


def stream_explorer(*, step=10, layers=WINDOW, window=8, block_size=4, num_blocks=16,
                    sink_tokens=4):
    """Sliders for the step of the request stream, the kind of layers and the window W.

    Top: the pool's blocks 0 .. num_blocks - 1, each in the colour of the requests holding it
    (split between two that share it), pale while free but cached (a prefix hit can take it
    back), white while free; under a square, what this step did to it ("new", "freed") and the
    free queue's next block. Below: each request's block table, entry j holding tokens
    [B j, B j + B), null slots grey, the sink blocks before slot 0 as attention reads them
    (``paged.with_sink_blocks``), the slots this step's prefix hit gave outlined, a slot the
    window freed this step labelled "2→0"; under each row a bar of the tokens computed. The
    stream is ``paged.chat_stream(block_size)``, replayed on a fresh pool of ``num_blocks``
    through ``FullAttentionManager``, ``SlidingWindowManager`` (window W, vLLM's default
    retention) or ``SinkFullAttentionManager`` (``sink_tokens``, a multiple of
    ``block_size``); ``layers`` is one of ``LAYERS``. The window slider is disabled unless the
    layers are a sliding window. The key is drawn once, beside the tables.
    """
    layers = check.choice("layers", layers, LAYERS)
    window = slider_int("window", window, 1, MAX_WINDOW)
    block_size = check.integer("block_size", block_size, minimum=1, maximum=16)
    num_blocks = check.integer("num_blocks", num_blocks, minimum=2, maximum=MAX_BLOCKS)
    sink_tokens = check.integer("sink_tokens", sink_tokens, minimum=1)
    with_sink_blocks((), 0, sink_tokens, block_size)  # a multiple of block_size, or an error
    runs = _replays(num_blocks, block_size, sink_tokens)
    total = len(runs[(FULL, None)][0])
    step = slider_int("step", step, 1, total)
    ids = list(dict.fromkeys(s.op.request_id for s in runs[(FULL, None)][0]))  # arrival order
    colours = plots.request_colours(ids)
    slots = max(len(t) for steps, _ in runs.values() for s in steps for t in s.tables.values())
    sink_slots = len(runs[(SINK, None)][1])

    controls = {
        "step": widgets.IntSlider(value=step, min=1, max=total, description="step",
                                  **slider_layout("300px")),
        "window": widgets.IntSlider(value=window, min=1, max=MAX_WINDOW, description="window W",
                                    **slider_layout("300px")),
        "layers": widgets.SelectionSlider(options=[(_LABELS[k], k) for k in LAYERS],
                                          value=layers, description="layers",
                                          **slider_layout("230px")),
    }
    fig, grid = new_figure(figsize=FIGSIZE, nrows=2, ncols=2,
                           gridspec_kw={"height_ratios": [0.85, 2.1], "width_ratios": [2.75, 1.0]})
    spec = grid[0, 0].get_subplotspec().get_gridspec()
    grid[0, 0].remove()
    grid[0, 1].remove()
    ax_pool, ax_tables, ax_key = fig.add_subplot(spec[0, :]), grid[1, 0], grid[1, 1]
    artists = {"pool": plots.draw_pool(ax_pool, num_blocks),
               "tables": plots.draw_tables(ax_tables, ids, slots=slots, sink_slots=sink_slots,
                                           block_size=block_size)}
    plots.draw_key(ax_key, ids, colours)
    entries = f"entry j holds tokens {block_size}j .. {block_size}j + {block_size - 1}"
    ax_tables.set_title(f"block tables: {entries}")

    def redraw(step, layers, window):
        key = (layers, window if layers == WINDOW else None)
        steps, sinks = runs[key]
        view = _view(steps, step, ids, sinks, num_blocks, sink_tokens, block_size)
        ax_pool.title.set_text(f"block pool after step {step} of {len(steps)}: {view['event']}")
        kind = f"sliding window W = {window}" if layers == WINDOW else layers
        ax_tables.title.set_text(f"block tables, {kind}: {entries}")
        plots.update_pool(artists["pool"], view["looks"], view["notes"], colours)
        plots.update_tables(artists["tables"], view["rows"], colours, sinks_shown=bool(sinks))
        text = _readout(steps, step, layers, window, ids, sinks, num_blocks, block_size, view)
        return text, view["data"]

    redraw(step, layers, window)
    medium_titles(ax_pool, ax_tables)
    freeze_layout(fig)
    medium_titles(ax_pool, ax_tables)  # freeze_layout set them again, at the default size
    pin_legend(ax_key)  # the key beside the tables, off the data: drawn once
    return Explorer(controls, fig, redraw, axes=(ax_pool, ax_tables), artists=artists,
                    disabled_when={"window": lambda v: v["layers"] != WINDOW})


# ------------------------------------------------------------------ reading one step


def _ids(blocks):
    return ", ".join(str(b) for b in blocks) if len(blocks) else "none"


def _event(op):
    if op.kind == "arrive":
        return f"{op.request_id} arrives with {len(op.token_ids)} tokens"
    if op.kind == "decode":
        return f"{op.request_id} decodes its sampled token {op.token_ids[0]}"
    return f"{op.request_id} finishes"


def _view(steps, k, ids, sinks, num_blocks, sink_tokens, block_size):
    """What step k (1-based) shows: each block's look and note, each request's row, the
    step's event and the blocks it took, hit and freed, read from the replay."""
    now, before = steps[k - 1], steps[k - 2] if k > 1 else None
    op, a = now.op, now.allocation

    def holders(b, step):
        return tuple(r for r in ids if b in step.tables.get(r, ()))

    def last_holders(b):
        return next((h for s in reversed(steps[:k]) if (h := holders(b, s))), ())

    if a is not None:
        new, freed = tuple(a.new_blocks), tuple(a.freed_blocks)
        hit = tuple(a.block_table[:len(a.block_table) - len(a.new_blocks)]) \
            if op.kind == "arrive" else ()
    else:  # a finish: its blocks that joined the free queue, in queue order
        gone = before.tables[op.request_id]
        new, hit = (), ()
        freed = tuple(b for b in now.free_queue if b in gone)
    looks, notes = [], []
    for b in range(num_blocks):
        if b == NULL_BLOCK:
            looks.append(("null", ()))
        elif b in sinks:
            looks.append(("sink", ()))
        elif holders(b, now):
            looks.append(("held", holders(b, now)))
        elif b in now.cached:
            looks.append(("cached", last_holders(b)))
        else:
            looks.append(("free", ()))
        note = [w for w, on in (("new", b in new), ("freed", b in freed),
                                ("next", now.free_queue[:1] == (b,))) if on]
        notes.append("\n".join(note))
    rows = {}
    for r in ids:
        if r not in now.tables:
            seen = any(r in s.tables for s in steps[:k])
            rows[r] = "finished" if seen else "not arrived"
            continue
        table, n = now.tables[r], now.num_computed[r]
        drawn, tokens = with_sink_blocks(table, n, sink_tokens, block_size) if sinks \
            else (table, n)
        mine = op.request_id == r
        was = before.tables.get(r, ()) if before is not None else ()
        cells = [("sink", (), str(b), False) for b in drawn[:len(sinks)]]
        for j, b in enumerate(table):
            label = str(b)
            if b == NULL_BLOCK and mine and j < len(was) and was[j] in freed:
                label = f"{was[j]}→0"  # the window freed it this step
            look = ("null", ()) if b == NULL_BLOCK else ("held", holders(b, now))
            cells.append(look + (label, mine and j < len(hit)))
        rows[r] = {"first": -len(sinks), "slots": cells, "tokens": tokens, "computed": n}
    data = {"step": k, "tables": dict(now.tables), "num_computed": dict(now.num_computed),
            "free_queue": now.free_queue, "cached": tuple(sorted(now.cached)), "new": new,
            "freed": freed, "hit": hit, "hit_tokens": a.hit_tokens if a else 0}
    return {"event": _event(op), "looks": looks, "notes": notes, "rows": rows,
            "new": new, "freed": freed, "hit": hit, "data": data}


def _readout(steps, k, layers, window, ids, sinks, num_blocks, block_size, view):
    """The step, what it did, each request's table, the free queue and the cached blocks, all
    read from the replay (``view`` is ``_view``'s reading of it)."""
    now = steps[k - 1]
    op, a = now.op, now.allocation
    new, freed, hit = view["new"], view["freed"], view["hit"]
    setting = {FULL: "full attention", WINDOW: f"sliding window W = {window}",
               SINK: f"full attention, sink blocks {_ids(sinks)}"}[layers]
    lines = [f"step {k} of {len(steps)}: {view['event']} ({setting}; {num_blocks} blocks of "
             f"{block_size} tokens)"]
    if op.kind == "arrive":
        got = f" = blocks {_ids(hit)}" if hit else ""
        lines.append(f"prefix hit {a.hit_tokens} tokens{got}; new blocks {_ids(new)}; "
                     f"freed {_ids(freed)}")
    elif op.kind == "decode":
        lines.append(f"new blocks {_ids(new)}; freed {_ids(freed)}")
    else:
        kept = {}
        for b in steps[k - 2].tables[op.request_id]:
            if b != NULL_BLOCK and b not in freed:
                kept.setdefault(tuple(r for r in ids if b in now.tables.get(r, ())), []).append(b)
        held = "".join(f"; {_ids(blocks)} still held by {' and '.join(who)}"
                       for who, blocks in kept.items())
        lines.append(f"its blocks go back to the pool: freed {_ids(freed)}{held}")
    for r in ids:
        row = view["rows"][r]
        if isinstance(row, str):
            lines.append(f"{r}: {row}")
            continue
        table = f"sink {_ids(sinks)} | {_ids(now.tables[r])}" if sinks else _ids(now.tables[r])
        lines.append(f"{r}: table {table} ({now.num_computed[r]} tokens computed)")
    lines.append(f"free queue, next first: {_ids(now.free_queue)}")
    cached = sorted(now.cached)
    lines.append(f"cached (a prefix hit can take them): {_ids(cached)}; free among them: "
                 f"{_ids([b for b in now.free_queue if b in now.cached])}")
    return "\n".join(lines)
