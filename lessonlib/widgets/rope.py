"""Widgets for notebooks 07 (RoPE as clocks) and 08 (RoPE scaling).

Each factory computes with ``lessonlib.rope``, draws with ``lessonlib.plots.rope`` and returns
an ``Explorer`` with three more attributes: ``axes``, ``artists`` (updated in place by every
slider move) and ``data`` (what the last redraw computed, for tests and curious students).
``explorer.readout`` is the text a test reads.
"""
import functools
import math

import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from ..plots import rope as plots
from ..rope import (YARN_BETA_FAST, YARN_BETA_SLOW, angle_at, clock_angle, frequency_ratio,
                    largest_overshoot, largest_trained_angle, ntk_base, outside_trained_arc,
                    pairs_never_turning, rope_frequencies, rotary_score_scale, slowdown,
                    target_length, trained_arc_overshoot, turns_within, wavelengths,
                    yarn_correction_range, yarn_mscale, yarn_pair_sets, yarn_ramp)
from ._base import (Explorer, freeze_layout, int_list, new_figure, rope_arg, slider_int,
                    slider_layout, slider_real)

__all__ = ["clock_explorer", "scaling_explorer"]

# Real models' bases: Llama 2 / Mistral / DeepSeek / Phi-3 (1e4), gpt-oss (1.5e5),
# Llama 3 (5e5), Qwen2.5 (1e6), and a few in between.
_BASES = (10_000, 20_000, 50_000, 100_000, 150_000, 500_000, 1_000_000, 5_000_000, 10_000_000)
"""The base slider's stops (a model's own base joins them)."""
_TRAINED_LENGTHS = (2048, 4096, 8192, 16384, 32768, 65536)
"""The trained-length slider's stops (a model's own length joins them)."""
_CLOCK_PAIRS = (0, 16, 32, 46, 52, 63)  # notebook 07's fast, middle and slow hands
"""The pairs whose clock hands ``clock_explorer`` draws by default: notebook 07's fast, middle
and slow hands."""
LLAMA3_FACTORS = dict(low_freq_factor=1.0, high_freq_factor=4.0)  # Llama 3.1's published values


def _choices(values, extra, *, compact=False):
    """Slider options: ``values`` and ``extra`` (a model's own value), sorted, (label, value).
    ``compact`` labels round thousands and millions 10k, 500k, 10M: a slider's readout box
    (72 px in JupyterLab) then always holds its label, and the readout spells the value out."""
    vals = sorted(set(int(v) for v in values) | {extra})
    return [(_compact(v) if compact else f"{v:,}", v) for v in vals]


def _compact(v):
    """10k, 150k, 1.5M for a number with at most three significant digits; else 1,234,567."""
    if v >= 1000 and v % 10 ** (len(str(v)) - 3) == 0:
        return f"{v / 1e6:g}M" if v >= 1_000_000 else f"{v / 1e3:g}k"
    return f"{v:,}"


def _base(b):
    """A base for the base slider: a real number > 1 that is whole (every model's is); a
    fractional one would be shown, and computed, as the slider's nearest whole base."""
    x = check.real("b", b, above=1.0)
    if x != int(x):
        raise ValueError(f"b must be a whole number for the base slider, got {b!r}")
    return int(x)


def _rotary(r):
    r = check.integer("r", r, minimum=2)
    if r % 2:
        raise ValueError(f"r must be even (dims pair up), got {r}")
    return r


def _pair_ranges(indices):
    """'46-63' or '0, 3-5' for a sorted list of pair indices ('none' when empty)."""
    if isinstance(indices, (str, bytes, dict)) or not hasattr(indices, "__iter__"):
        raise ValueError(f"indices must be a list of pair indices, got {check.describe(indices)}")
    idx = [check.integer(f"indices[{j}]", i, minimum=0) for j, i in enumerate(indices)]
    if any(b <= a for a, b in zip(idx, idx[1:])):
        raise ValueError(f"indices must be sorted and distinct, got {idx}")
    if not idx:
        return "none"
    parts, start = [], idx[0]
    for prev, cur in zip(idx, idx[1:] + [None]):
        if cur != prev + 1:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = cur
    return ", ".join(parts)


# ------------------------------------------------------------------ notebook 07: clocks

def _clock_data(m, b, n_train, r=128):
    """What the clock figure and its readout show at position ``m``: the angles
    (``rope.angle_at``; ``on_clock``, ``rope.clock_angle``), the trained arcs, the pairs never
    turning and the turns. The arrays that do not depend on m (theta, trained, never, turns)
    are computed once per (b, n_train, r) and kept, read-only: a step of the position sliders
    computes only the angles at m."""
    m, n_train = check.integer("m", m, minimum=0), check.integer("n_train", n_train, minimum=1)
    d = dict(_trained_data(_rotary(r), check.real("b", b, above=1.0), n_train))
    theta = d["theta"]
    d.update(angles=angle_at(theta, m), on_clock=clock_angle(theta, m),
             outside=outside_trained_arc(theta, m, n_train))
    return d


@functools.lru_cache(maxsize=16)
def _trained_data(r, b, n_train):
    """``_clock_data``'s arrays for one head and trained length, read-only (they are shared)."""
    theta, _ = rope_frequencies({"head_dim": r, "rope_theta": b})
    d = dict(theta=theta, trained=largest_trained_angle(theta, n_train),
             never=pairs_never_turning(theta, n_train), turns=turns_within(theta, n_train))
    for a in d.values():
        a.flags.writeable = False
    return d


def _clock_readout(m, b, n_train, d, coarse=None, fine=None):
    n_pairs = d["theta"].size
    slow = n_pairs - 1
    if coarse is None or fine == 0 or coarse + fine != m:
        where = f"position m = {m:,}"
    else:
        where = f"position m = {coarse:,} {'+' if fine > 0 else '−'} {abs(fine):,} = {m:,}"
    lines = [f"{where} · base b = {b:,} · trained on positions 0 to {n_train - 1:,} · "
             f"{n_pairs} pairs",
             f"pairs that never complete a turn in training: {d['never'].size} of {n_pairs} "
             f"(pairs {_pair_ranges(d['never'])})"]
    outside = np.flatnonzero(d["outside"])
    if m < n_train:
        lines.append("m is inside the trained range: every pair shows an angle it was trained on")
    else:
        lines.append(f"pairs whose angle at m was never seen in training: {outside.size} "
                     f"(pairs {_pair_ranges(outside)})")
    lines.append(f"pair 0: {d['angles'][0]:,.2f} rad = {d['on_clock'][0]:.2f} "
                 f"rad after whole turns; it turned {d['turns'][0]:,.1f} times in training")
    lines.append(f"slowest pair {slow}: {d['angles'][slow]:.2f} rad at m; training reached "
                 f"{d['trained'][slow]:.2f} rad")
    return "\n".join(lines)


_COARSE_STEP = 1024  # notebook 07's coarse position slider: 64 stops over 65,536 positions
"""1,024 positions, the coarse position slider's step (64 stops over 65,536 positions)."""


def _split_position(m, coarse_step=_COARSE_STEP, max_coarse=None):
    """``m`` as (coarse, fine) for a coarse slider in steps of ``coarse_step`` and a fine one
    of -coarse_step/2 .. +coarse_step/2: the coarse stop nearest m (4,095 -> 4,096 and -1)."""
    m = check.integer("m", m, minimum=0)
    coarse_step = check.integer("coarse_step", coarse_step, minimum=2)
    coarse = int(math.floor(m / coarse_step + 0.5)) * coarse_step
    if max_coarse is not None:
        coarse = min(coarse, max_coarse)
    return coarse, m - coarse


def clock_explorer(config, *, n_train, m=16383, pairs=_CLOCK_PAIRS, max_position=65535,
                   coarse_step=_COARSE_STEP):
    """Move the position m, the base b and the trained length: the clock hands of a few pairs
    turn, and the right panel shows, for all pairs, the angle at m against the angles training
    showed them. ``config``: the head (a config.json dict, a shipped name or a ``models.Model``)
    whose base b and rotary dim r start the sliders; ``n_train`` the trained length.

    m is two sliders: "coarse m" moves in steps of ``coarse_step`` over 0..``max_position``
    and "fine" adds -coarse_step/2 .. +coarse_step/2 one position at a time, so any position,
    4,095 say, is one coarse stop and a few fine steps away (4,096 and -1); m = coarse + fine,
    kept inside 0..max_position. ``explorer.set_position(m)`` sets both;
    ``explorer.data["m"]`` is the position shown.
    """
    _, sp = rope_arg(config)
    r, b = _rotary(sp.rotary_dim), sp.base
    pairs = int_list("pairs", pairs, minimum=0)
    if any(p >= r // 2 for p in pairs):
        raise ValueError(f"pairs must be in 0..{r // 2 - 1}, got {pairs}")
    max_position = check.integer("max_position", max_position, minimum=1)
    m, b = slider_int("m", m, 0, max_position), _base(b)
    n_train = check.integer("n_train", n_train, minimum=2)
    coarse_step = check.integer("coarse_step", coarse_step, minimum=2)
    half = coarse_step // 2
    max_coarse = -(-max_position // coarse_step) * coarse_step  # the stop at or past the end
    coarse, fine = _split_position(m, coarse_step, max_coarse)
    controls = {
        "coarse": widgets.IntSlider(value=coarse, min=0, max=max_coarse, step=coarse_step,
                                    description="coarse m", **_slider_layout("240px")),
        "fine": widgets.IntSlider(value=fine, min=-half, max=half, step=1,
                                  description="fine", **_slider_layout("190px")),
        "b": widgets.SelectionSlider(options=_choices(_BASES, b, compact=True), value=b,
                                     description="base b", **_slider_layout("220px")),
        "n_train": widgets.SelectionSlider(options=_choices(_TRAINED_LENGTHS[:-1], n_train),
                                           value=n_train, description="trained length",
                                           **_slider_layout("225px")),
    }
    fig, (ax_clock, ax_cov) = new_figure(figsize=(9.2, 4.2), ncols=2,
                                         gridspec_kw=dict(width_ratios=(1, 1.45)))
    d = _clock_data(m, b, n_train, r)
    artists = {
        "clock": plots.draw_clock_hands(ax_clock, pairs, d["angles"][pairs],
                                        d["trained"][pairs]),
        "coverage": plots.draw_angle_coverage(ax_cov, np.arange(r // 2), d["trained"],
                                              d["on_clock"], d["outside"]),
    }
    freeze_layout(fig)

    def redraw(coarse, fine, b, n_train):
        m = min(max(coarse + fine, 0), max_position)
        d = _clock_data(m, b, n_train, r)
        plots.update_clock_hands(artists["clock"], d["angles"][pairs], d["trained"][pairs])
        plots.update_angle_coverage(artists["coverage"], d["trained"], d["on_clock"],
                                    d["outside"])
        return _clock_readout(m, b, n_train, d, coarse, fine), dict(d, m=m)

    explorer = Explorer(controls, fig, redraw, axes=(ax_clock, ax_cov), artists=artists)
    explorer.pairs = pairs

    def set_position(m):
        """Show position ``m``: the nearest coarse stop, then the fine offset."""
        c, f = _split_position(slider_int("m", m, 0, max_position), coarse_step, max_coarse)
        controls["fine"].value = 0  # m stays on the track while the coarse stop moves
        controls["coarse"].value = c
        controls["fine"].value = f

    explorer.set_position = set_position
    return explorer


def _slider_layout(width):
    """A slider of ``width`` with a gap after it: a long readout (10,000,000) never runs into
    the next slider's label."""
    kw = slider_layout(width)
    kw["layout"].margin = "2px 10px 2px 0"
    return kw


# ------------------------------------------------------------------ notebook 08: scaling


def _scaling_data(s, b, L0, r=128, beta_fast=YARN_BETA_FAST, beta_slow=YARN_BETA_SLOW,
                 truncate=True):
    """Per-pair frequencies of each scaling method for factor ``s``, base ``b``, trained length
    ``L0``, rotary dim ``r``; YaRN's band, ramp, pair sets and attention factor μ (and μ², its
    factor on the scores); each method's frequency ratio, slow-down and overshoot past the
    trained arc at the last target position s * L0 - 1 (per pair, and the largest). Every
    number of the readout, computed by ``lessonlib.rope``: ``yarn_pair_sets``, ``yarn_mscale``,
    ``rotary_score_scale``, ``frequency_ratio``, ``slowdown``, ``target_length``,
    ``trained_arc_overshoot`` and ``largest_overshoot``."""
    s, b = check.real("s", s, minimum=1.0), check.real("b", b, above=1.0)
    L0, r = check.integer("L0", L0, minimum=1), _rotary(r)
    truncate = check.flag("truncate", truncate)
    head = {"head_dim": r, "rope_theta": b}
    theta, _ = rope_frequencies(head)
    scaling = {
        "PI (linear)": {"rope_type": "linear", "factor": s},
        "NTK-aware": {"rope_type": "ntk", "factor": s},
        "YaRN": {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": L0,
                 "beta_fast": beta_fast, "beta_slow": beta_slow, "truncate": truncate},
        "llama3": {"rope_type": "llama3", "factor": s, "original_max_position_embeddings": L0,
                   **LLAMA3_FACTORS},
    }
    inv = {name: rope_frequencies({**head, "rope_scaling": rs}) for name, rs in scaling.items()}
    band = yarn_correction_range(beta_fast, beta_slow, r, b, L0, truncate)
    target = target_length(s, L0)
    mu = yarn_mscale(s)  # the attention factor of inv["YaRN"]: no mscale keys given
    return dict(
        theta=theta, inv={k: v[0] for k, v in inv.items()}, band=band,
        ramp=yarn_ramp(band[0], band[1], r // 2), pairs=yarn_pair_sets(band[0], band[1], r // 2),
        mu=mu, score_scale=rotary_score_scale(mu),
        target=target, never=pairs_never_turning(theta, L0),
        ntk_base=ntk_base(b, s, r),
        overshoot={k: trained_arc_overshoot(v[0], target - 1, L0, trained_inv_freq=theta)
                   for k, v in inv.items()},
        largest_overshoot={k: largest_overshoot(v[0], target - 1, L0, trained_inv_freq=theta)
                           for k, v in inv.items()},
        ratios={k: frequency_ratio(v[0], theta) for k, v in inv.items()},
        slowdown={k: slowdown(v[0], theta) for k, v in inv.items()},
        wavelengths={"original": wavelengths(theta),
                     **{k: wavelengths(v[0]) for k, v in inv.items() if k != "llama3"}},
    )


def _band_text(band):
    return f"({band[0]:g}, {band[1]:g})" if all(float(x).is_integer() for x in band) else \
        f"({band[0]:.2f}, {band[1]:.2f})"


def _scaling_readout(s, b, L0, r, d, beta_fast, beta_slow):
    """Five lines, each under about 100 characters (one line on a laptop and a projector); what
    never changes (how to read the panels, that the band ignores s) is the notebook's prose."""
    last = r // 2 - 1
    p = d["pairs"]
    names = {"PI (linear)": "PI", "NTK-aware": "NTK-aware", "YaRN": "YaRN", "llama3": "llama3"}
    lines = [
        f"factor s = {s:g} · base b = {b:,} · L0 = {L0:,} → target s·L0 = {d['target']:,} "
        f"positions · rotary dim {r}",
        f"YaRN band (low, high) = {_band_text(d['band'])}: kept {_pair_ranges(p.kept)} "
        f"(≥ {beta_fast:g} turns in L0) · ramp {_pair_ranges(p.ramped)} · "
        f"θ/s {_pair_ranges(p.divided)} (≤ {beta_slow:g} turn)",
        f"YaRN μ = 1 + 0.1·ln s = {d['mu']:.4f} on cos and sin: rotary scores "
        f"× μ² = {d['score_scale']:.4f}",
        f"PI: pair 0 turns {d['inv']['PI (linear)'][0]:.3f} rad per token · NTK-aware: base "
        f"{b:,} → {d['ntk_base']:,.0f}, pair {last} slowed "
        f"{d['slowdown']['NTK-aware'][last]:.2f}×",
        f"overshoot at {d['target'] - 1:,}: " + " · ".join(
            f"{names.get(k, k)} {v:.3g}" + (f" (pair {pair})" if k == "NTK-aware" and
                                            pair is not None else "")
            for k, (v, pair) in d["largest_overshoot"].items()) + " rad",
    ]
    return "\n".join(lines)


def _elsewhere(factor, b, n_train):
    """A setting of the 08 sliders (factor, b, n_train) away from their values: every slider at
    another stop (the factor at its other end, the base and L0 at their farthest option)."""
    other = factor.max if factor.value < (factor.min + factor.max) / 2 else factor.min

    def farthest(slider):
        values = [v for _, v in slider.options]
        return max(values, key=lambda v: abs(math.log(v / slider.value)))

    return other, farthest(b), farthest(n_train)


def _ratio_floor(max_factor):
    """The frequency panel's lower limit: under 1/max_factor (PI's ratio at the largest s) and
    under the power of ten below it, so that tick (0.01 for s up to 100) labels the bottom."""
    return min(1 / (1.5 * max_factor), 0.8 * 10.0 ** math.floor(math.log10(1 / max_factor)))


def scaling_explorer(config, *, factor=None, n_train=None, max_factor=64.0):
    """Sliders for the scale factor s, the base b and the trained length L0 redraw the per-pair
    frequency kept by PI, NTK-aware, YaRN and llama3 (top left), YaRN's ramp under it, and the
    wavelengths (right); the readout states the YaRN band. ``config``: the ``models.Model`` (or
    a shipped name or a config.json dict) whose RoPE starts the sliders: its base b and rotary
    dim r, and, where its rope_scaling gives them, s and L0 (YaRN's betas too); ``factor`` and
    ``n_train`` give s and L0 where it does not (a plain RoPE head), or start elsewhere; where
    neither does, the error says to give both.
    """
    name, sp = rope_arg(config)
    beta_fast, beta_slow, truncate = YARN_BETA_FAST, YARN_BETA_SLOW, True
    if sp.rope_type == "yarn":
        beta_fast, beta_slow, truncate = sp.beta_fast, sp.beta_slow, sp.truncate
    if factor is None:
        factor = sp.factor if sp.original_max is not None else None
    if n_train is None:
        n_train = sp.original_max
    if factor is None or n_train is None:
        raise ValueError(f"config {name!r} has rope_type {sp.rope_type!r}, which reads no "
                         "trained length L0 (original_max_position_embeddings) and factor to "
                         "start the explorer from: give factor and n_train")
    b, r, L0 = sp.base, sp.rotary_dim, n_train
    max_factor = check.real("max_factor", max_factor, minimum=1.0)
    factor = slider_real("factor", factor, 1.0, max_factor)
    r, b, L0 = _rotary(r), _base(b), check.integer("n_train", L0, minimum=2)
    controls = {
        "factor": widgets.FloatSlider(value=factor, min=1.0, max=max_factor,
                                      step=0.5, readout_format=".1f", description="factor",
                                      **_slider_layout("280px")),
        "b": widgets.SelectionSlider(options=_choices(_BASES, b), value=b,
                                     description="base b", **_slider_layout("290px")),
        "n_train": widgets.SelectionSlider(options=_choices(_TRAINED_LENGTHS, L0), value=L0,
                                      description="trained length L0", **_slider_layout("310px")),
    }
    # Two columns that fit a laptop's output area (9.2 in at 100 dpi): the frequency kept over
    # YaRN's ramp (same pairs, the band one above the other), the wavelengths on the right;
    # one key row above both.
    fig, grid = new_figure(figsize=(9.2, 4.4), ncols=2, nrows=2,
                           gridspec_kw=dict(height_ratios=(2.1, 1), width_ratios=(1, 1.05)))
    ax_ratio, ax_ramp = grid[0, 0], grid[1, 0]
    spec = grid[0, 1].get_subplotspec().get_gridspec()
    grid[0, 1].remove()
    grid[1, 1].remove()
    ax_wave = fig.add_subplot(spec[:, 1])
    pairs = np.arange(r // 2)
    d = _scaling_data(factor, b, L0, r, beta_fast, beta_slow, truncate)
    # Fixed y limits for every slider setting: the slowest wavelength at the largest b and s
    widest = _scaling_data(max_factor, max(v for _, v in controls["b"].options),
                          max(v for _, v in controls["n_train"].options), r, beta_fast, beta_slow,
                          truncate)
    top = max(max(w.max() for w in widest["wavelengths"].values()), widest["target"])
    artists = {
        "ratios": plots.draw_frequency_ratios(ax_ratio, pairs, d["ratios"], d["band"],
                                              xlabel=False, ylim=(_ratio_floor(max_factor), 1.6)),
        "wavelengths": plots.draw_wavelengths(ax_wave, pairs, d["wavelengths"], L0, d["target"],
                                              beta_fast, d["band"], ylim=(2.0, 3.0 * top)),
        "ramp": plots.draw_yarn_ramp(ax_ramp, pairs, d["ramp"], d["band"], title=None),
    }
    ax_ratio.tick_params(labelbottom=False)  # the ramp under it names the pairs
    freeze_layout(fig)

    def redraw(factor, b, n_train):
        L0 = n_train
        d = _scaling_data(factor, b, L0, r, beta_fast, beta_slow, truncate)
        plots.update_frequency_ratios(artists["ratios"], d["ratios"], d["band"])
        plots.update_wavelengths(artists["wavelengths"], d["wavelengths"], L0, d["target"],
                                 beta_fast, d["band"])
        plots.update_yarn_ramp(artists["ramp"], d["ramp"], d["band"])
        return _scaling_readout(factor, b, L0, r, d, beta_fast, beta_slow), d

    explorer = Explorer(controls, fig, redraw, axes=(ax_ratio, ax_wave, ax_ramp),
                        artists=artists)
    # The band's ends and the levels' names move with the sliders: a rehearsal at another
    # setting, where every one of them moves, saves each slider's first move a full draw.
    explorer.rehearse(**dict(zip(("factor", "b", "n_train"), _elsewhere(*controls.values()))))
    explorer.betas = (beta_fast, beta_slow)
    return explorer
