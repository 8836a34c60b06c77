"""What notebook 10 says about the tiny model's committed results, one test per statement.

The notebook prints the results as tables (lessonlib.tinylm_results) and states them in words;
each test below reads the committed files through lessonlib.tinylm_results and checks one of
those statements, quoted in its docstring, so an edit to the results that breaks a sentence
fails here. (nbval checks the printed numbers; these check the words.) The last tests rerun the
live cells' measurements behind the window-cache explanation (they need torch).
"""
import math

import numpy as np
import pytest
from _support import needs, optional

from lessonlib import kvtask, rope, tinylm_results as R

L0 = 256
LN64 = math.log(64)  # the uniform guess over the 64 filler words, in nats
EXT = R.load_results("extension")
NEEDLES = R.load_results("needles")
SINKS = R.load_results("sinks")
STREAMING = R.load_results("streaming")
ROWS, LOG = R.load_training_log()


def cell(model, variant, n):
    return R.extension_cell(EXT, model, variant, n)


def spans(model, variant, n=2048):
    """Mean loss per 256 positions, as the notebook's second table prints them."""
    return [m for _, m in R.loss_spans(EXT, model, variant, n)]


def needle_cell(model, variant):
    return next(c for c in NEEDLES["cells"] if (c["model"], c["variant"]) == (model, variant))


def test_the_sweep_is_the_one_described():
    """"64 documents per cell, lengths 256 to 2,048, seven RoPE variants on the base model and
    the PI fine-tune (120 steps at 512 tokens with linear factor 2)"; "trained at L0 = 256"."""
    assert EXT["trained_length"] == R.trained_config()["max_position_embeddings"] == L0
    assert EXT["lengths"] == [256, 512, 1024, 2048]
    assert {c["n_docs"] for c in EXT["cells"]} == {64}
    base = {c["variant"] for c in EXT["cells"] if c["model"] == "base"}
    assert len(base) == 7
    assert LOG["settings"]["ft_steps"] == 120 and LOG["pi2x"]["eval_length"] == 512
    assert cell("pi2x", "as_trained", 512)["rope_scaling"] == {"rope_type": "linear",
                                                              "factor": 2.0}
    assert EXT["chance_accuracy"] == 1 / 32  # "one of 32, so guessing scores 1/32"


def test_training_ran_the_curriculum_and_retrieval_formed_short():
    """"300 steps on 64-token documents, then 700 at 256"; "from step 130 on, the model
    answers at least 94% of the questions in every 64-token training batch, and at the first
    evaluation after the switch (step 350) its held-out retrieval at 256 tokens is 1.00"."""
    s = LOG["settings"]
    assert (s["warm_steps"], s["warm_length"], s["steps"] - s["warm_steps"]) == (300, 64, 700)
    base = [r for r in ROWS if r["phase"] == "base"]
    warm = [float(r["train_answer_acc"]) for r in base if 130 <= int(r["step"]) <= 300]
    assert len(warm) == 171 and min(warm) >= 0.94
    assert max(float(r["train_answer_acc"]) for r in base if int(r["step"]) <= 50) < 0.2
    evals = [(int(r["step"]), float(r["eval_acc"])) for r in base if r["eval_acc"]]
    assert next(a for step, a in evals if step > 300) == 1.0
    assert dict(evals)[350] == 1.0


def test_pairs_7_to_15_never_turn_in_training():
    """"pairs 7 to 15, nine of the sixteen, never completed a turn in training"."""
    inv_freq, _ = rope.rope_frequencies(R.trained_config())
    never = rope.pairs_never_turning(inv_freq, L0)
    assert never.tolist() == list(range(7, 16)) and len(inv_freq) == 16
    i = np.arange(16)
    assert (2 * np.pi * 10000.0 ** (2 * i / 32) > L0).tolist() == [k >= 7 for k in i]


# --------------------------------------------------------------- plain RoPE

def test_plain_rope_loss_climbs_past_256_and_keeps_climbing():
    """"The loss climbs from the first span past the trained length (1.15, then 1.58) and
    keeps climbing with the position, to 7.62 in the last"; summary: "the model's loss rises
    as soon as positions pass 256"."""
    s = spans("base", "plain")
    assert [f"{m:.2f}" for m in (s[0], s[1], s[-1])] == ["1.15", "1.58", "7.62"]
    assert all(b > a for a, b in zip(s, s[1:]))  # every span worse than the one before
    bins = np.array(cell("base", "plain", 2048)["loss_by_position"])
    b = EXT["loss_bin"]
    assert bins[L0 // b:].mean() > bins[:L0 // b].mean() + 1
    fine = [m for _, m in R.loss_spans(EXT, "base", "plain", 512, span=64)]
    assert fine[4] > max(fine[:4]) + 0.5  # already in the first 64 positions past 256


def test_plain_rope_retrieval_holds_at_2x_mostly_at_4x_near_chance_at_8x():
    """"Retrieval holds at 2x (1.00), mostly at 4x (0.88), and is near chance at 8x (0.05,
    against 0.031)"; summary: "retrieval fails by 8x"."""
    acc = [cell("base", "plain", n)["accuracy"] for n in (512, 1024, 2048)]
    assert acc[0] == 1.0 and 0.8 <= acc[1] < 0.95 and acc[2] < 2 * EXT["chance_accuracy"]


def test_plain_rope_retrieval_outlives_the_loss():
    """"Retrieval outlives the loss": at 512 the loss has risen, retrieval has not."""
    at256, at512 = cell("base", "plain", 256), cell("base", "plain", 512)
    assert at512["mean_loss"] > at256["mean_loss"] + 0.5 and at512["accuracy"] == 1.0


# --------------------------------------------------------------- position interpolation

def test_pi_without_fine_tune_has_the_highest_loss_at_every_length():
    """"PI without fine-tuning (s = 8) has the highest loss at every length, even at 256 ...
    the loss goes above the uniform guess (ln 64 = 4.16)"."""
    for n in EXT["lengths"]:
        losses = {(c["model"], c["variant"]): c["mean_loss"] for c in EXT["cells"]
                  if c["length"] == n}
        assert max(losses, key=losses.get) == ("base", "pi"), n
    assert min(cell("base", "pi", n)["mean_loss"] for n in EXT["lengths"]) > LN64
    assert f"{LN64:.2f}" == "4.16"


def test_pi_retrieval_survives_to_4x_and_halves_at_8x():
    """"Retrieval survives to 4x (0.86 to 0.98) and halves at 8x (0.50)"; summary: "though
    retrieval mostly survives" (both PI factors, without a fine-tune)."""
    acc = [cell("base", "pi", n)["accuracy"] for n in EXT["lengths"]]
    assert min(acc[:3]) >= 0.85 and max(acc[:3]) <= 0.99 and acc[3] == 0.5
    assert min(cell("base", "pi_s2", n)["accuracy"] for n in (256, 512, 1024)) >= 0.95


def test_a_short_pi_fine_tune_serves_2x_as_the_base_serves_1x():
    """"PI plus a short fine-tune (120 steps at 512, s = 2) brings the loss at 512 (1.18)
    below the base model's at 256 (1.26), with retrieval 1.00"; summary: "after a 120-step
    fine-tune it serves 2x as well as the base serves 1x"."""
    ft, base = cell("pi2x", "as_trained", 512), cell("base", "plain", 256)
    assert ft["mean_loss"] < base["mean_loss"] and ft["accuracy"] >= base["accuracy"] == 1.0
    assert (f"{ft['mean_loss']:.2f}", f"{base['mean_loss']:.2f}") == ("1.18", "1.26")


def test_pi_s2_without_its_fine_tune_still_retrieves_but_its_loss_is_ruined():
    """"Without that fine-tune the same s = 2 still retrieves at 512 (1.00), but its loss
    there is 6.61 nats, above the uniform guess"."""
    no_ft = cell("base", "pi_s2", 512)
    assert no_ft["accuracy"] == 1.0 and f"{no_ft['mean_loss']:.2f}" == "6.61"
    assert no_ft["mean_loss"] > LN64
    assert no_ft["rope_scaling"] == cell("pi2x", "as_trained", 512)["rope_scaling"]  # same s


def test_the_fine_tune_moved_the_cliff_not_removed_it():
    """"Past its new length the fine-tuned model degrades as plain RoPE does past 256, only
    later: its loss climbs from the span at 512 on, and retrieval falls from 0.98 at 1,024 to
    0.36 at 2,048"."""
    s = spans("pi2x", "as_trained")
    assert max(s[:2]) < s[2] < s[3] < s[4] and s[-1] > s[0] + 3
    assert all(b > a for a, b in zip(s[1:], s[2:]))
    acc = [cell("pi2x", "as_trained", n)["accuracy"] for n in (1024, 2048)]
    assert [f"{a:.2f}" for a in acc] == ["0.98", "0.36"]
    plain = spans("base", "plain")
    assert s[1] < plain[1]  # "only later": at 256..511 the fine-tune is still at its level


# --------------------------------------------------------------- NTK-aware and dynamic NTK

def test_ntk_keeps_the_mean_loss_near_its_trained_level_to_4x():
    """"NTK-aware (s = 8) keeps the mean loss near its trained level to 4x (1.33 at 1,024)
    with no fine-tuning, though per position it starts to climb from 512 on"."""
    ntk = cell("base", "ntk", 1024)
    assert ntk["mean_loss"] < cell("base", "plain", 256)["mean_loss"] + 0.15
    assert f"{ntk['mean_loss']:.2f}" == "1.33"
    s = spans("base", "ntk")
    assert abs(s[1] - s[0]) < 0.05 and s[2] > s[0] + 0.1 and s[3] > s[2]


def test_dynamic_ntk_sits_between_ntk_and_plain_rope():
    """"dynamic NTK ... sits between it and plain RoPE (1.54 and 1.74 at 512 and 1,024)"."""
    for n in (512, 1024):
        ntk, dyn, plain = (cell("base", v, n)["mean_loss"] for v in ("ntk", "dynamic", "plain"))
        assert ntk < dyn < plain, n
    assert [f"{cell('base', 'dynamic', n)['mean_loss']:.2f}" for n in (512, 1024)] == ["1.54",
                                                                                      "1.74"]


def test_both_ntk_variants_keep_retrieval_to_4x_and_meet_at_8x():
    """"Both keep retrieval to 4x (0.98) and slip at 8x (0.59), where they use the same base
    and give the same numbers"; summary: "stretch to about 4x untrained"."""
    for v in ("ntk", "dynamic"):
        assert min(cell("base", v, n)["accuracy"] for n in (256, 512, 1024)) >= 0.95
        assert cell("base", v, 2048)["accuracy"] < 0.95
    ntk, dyn = cell("base", "ntk", 2048), cell("base", "dynamic", 2048)
    assert (ntk["accuracy"], ntk["mean_loss"]) == (dyn["accuracy"], dyn["mean_loss"])
    assert EXT["variants"]["ntk"]["factor"] == 2048 / L0  # dynamic's s = n / L0 at 2,048


# --------------------------------------------------------------- YaRN

def test_yarn_keeps_retrieval_and_loss_to_8x_but_the_last_span():
    """"YaRN with s = 8 keeps retrieval at 0.98 or more out to 8x with no fine-tuning at all,
    and the loss at its trained level in every span but the last of the 2,048-token documents
    (2.05 there)"; summary: "YaRN, with its attention factor, to 8x on this model"."""
    assert min(cell("base", "yarn", n)["accuracy"] for n in EXT["lengths"]) >= 0.98
    s = spans("base", "yarn")
    assert max(s[:-1]) - min(s[:-1]) < 0.05 and s[-1] > s[0] + 0.5
    assert f"{s[-1]:.2f}" == "2.05"
    assert all(cell("base", "yarn", n)["mean_loss"] <= cell("base", "yarn", 256)["mean_loss"]
               for n in EXT["lengths"])
    assert cell("base", "yarn", 2048)["accuracy"] >= 0.95 > cell("base", "ntk", 2048)["accuracy"]


def test_yarn_without_its_attention_factor_loses_retrieval_at_8x():
    """"Without the attention factor mu (attention_factor: 1.0) retrieval at 8x drops to
    0.77"."""
    assert EXT["variants"]["yarn_no_mscale"] == dict(EXT["variants"]["yarn"],
                                                    attention_factor=1.0)
    no_mu, yarn = cell("base", "yarn_no_mscale", 2048), cell("base", "yarn", 2048)
    assert no_mu["accuracy"] < yarn["accuracy"] and f"{no_mu['accuracy']:.2f}" == "0.77"


# --------------------------------------------------------------- the needle grid

def test_plain_rope_needles_fine_to_512_patchy_at_1024_blind_at_2048():
    """"plain RoPE is fine at 256 and 512, patchy at 1,024 and blind at 2,048"."""
    means = [m for _, m, _ in R.needle_rows(NEEDLES, needle_cell("base", "plain"))]
    assert min(means[:2]) >= 0.95 and 0.3 < means[2] < 0.9 and means[3] < 0.1


def test_yarn_finds_nearly_every_needle_and_misses_only_at_depth_0():
    """"YaRN finds nearly every needle out to 2,048, and its only misses are at depth 0, the
    needle right after <bos>"; summary: "here YaRN's only misses are needles right after the
    sink token, not in the middle"."""
    yarn = needle_cell("base", "yarn")
    assert np.mean(yarn["found_fraction"]) > 0.95
    misses = R.needle_misses(NEEDLES, yarn)
    assert misses and {d for _, d, _ in misses} == {0} == {NEEDLES["depths"][0]}


def test_the_live_needle_row_is_the_plain_256_row():
    """"a cell runs one row again live (256 tokens, 8 trials, 11 depths)"."""
    assert NEEDLES["trials"] == 8 and len(NEEDLES["depths"]) == 11
    assert NEEDLES["lengths"][0] == L0


# --------------------------------------------------------------- attention sinks

def test_one_layers_heads_put_most_of_their_weight_on_bos():
    """Summary: "Attention sinks emerge on their own: one layer's heads put most of their
    weight on <bos>"; the heaviest head holds far less of it at 8x."""
    short, long = (next(c for c in SINKS["cells"] if c["length"] == n) for n in (L0, 8 * L0))
    mass = np.array(short["mass_first1"])  # (layer, head)
    heavy = [layer for layer in range(mass.shape[0]) if (mass[layer] > 0.5).all()]
    assert len(heavy) == 1 and (np.delete(mass, heavy, axis=0) < 0.5).all()
    layer, head, m = R.sink_heads(short, top=1)[0]
    assert layer == heavy[0] and m > 20 / (short["query_from"] + 1)  # 1/33: the even spread
    assert np.array(long["mass_first1"])[layer, head] < m / 2


def test_the_sink_heatmap_shows_no_answer_to_exercise_2():
    """Exercise 2's answer (the uniform baseline) is not in the heatmap's titles or readout."""
    import matplotlib.pyplot as plt

    from lessonlib.widgets import tinylm as W

    w = W.sink_view(SINKS)
    try:
        shown = w.readout + "\n".join(ax.get_title() for ax in w.axes)
        assert "uniform" not in shown
        for c in SINKS["cells"]:
            for k in (3, 4, 5):
                assert f"{c['uniform_first1']:.{k}f}" not in shown
    finally:
        plt.close(w.fig)


# --------------------------------------------------------------- a window cache

def _window_bins():
    b = STREAMING["bin"]
    early = R.stream_summary(STREAMING, STREAMING["cache_tokens"])["window"]["early_loss"]
    return b, early, np.array(STREAMING["caches"]["window"]["loss_by_position"])


def test_the_stream_is_the_one_described():
    """"Eight streams of 4,096 tokens ... a window of the latest 256 tokens, and StreamingLLM's
    4 sink tokens + 252 recent ... the answer 136 to 243 tokens after the needle"."""
    assert (STREAMING["n_streams"], STREAMING["length"], STREAMING["cache_tokens"]) == (8, 4096,
                                                                                        256)
    caches = STREAMING["caches"]
    assert (caches["window"]["n_sink"], caches["window"]["n_recent"]) == (0, 256)
    assert (caches["sinks"]["n_sink"], caches["sinks"]["n_recent"]) == (4, 252)
    for i in range(STREAMING["n_streams"]):
        d = kvtask.stream_document((STREAMING["seed"], i), STREAMING["length"])
        gap = d.answer_at - d.needle_at
        assert gap.min() >= 136 and gap.max() <= 243 < 252  # inside every cache


def test_evicting_bos_doubles_the_window_loss_and_four_sinks_restore_it():
    """"after position 256, where <bos> is evicted, the plain window's mean loss is more than
    twice what it was before (2.86 against 1.23), and four sink tokens bring it back to the
    trained level (1.17)"; summary: "keep four sink tokens (StreamingLLM) and a 256-token cache
    streams 4,096 tokens at the trained loss"."""
    after = R.stream_summary(STREAMING, STREAMING["cache_tokens"])
    w, s = after["window"], after["sinks"]
    assert w["loss"] > 2 * w["early_loss"] and s["loss"] < s["early_loss"] + 0.1
    assert [f"{x:.2f}" for x in (w["loss"], w["early_loss"], s["loss"])] == ["2.86", "1.23",
                                                                           "1.17"]
    assert abs(w["early_loss"] - cell("base", "plain", 256)["mean_loss"]) < 0.1  # trained level


def test_the_whole_cache_loses_its_answers_and_both_windows_keep_them():
    """"it answers only 0.09 of the queries after 256, where both windows answer all"."""
    after = R.stream_summary(STREAMING, STREAMING["cache_tokens"])
    assert f"{after['dense']['answer_acc']:.2f}" == "0.09"
    assert after["window"]["answer_acc"] == after["sinks"]["answer_acc"] == 1.0


def test_the_window_loss_jumps_once_per_block_not_at_eviction():
    """"the plain window's loss does not jump at eviction: it stays at the trained level to
    position 511, then rises and falls once in each block that follows, with its needle"."""
    b, early, y = _window_bins()
    per_block = 512 // b
    assert y[L0 // b:512 // b].max() < early + 0.15  # 256..511: evicted, and no jump
    n_blocks = (STREAMING["length"] - 1) // 512  # blocks with a needle; then plain filler
    for k in range(1, n_blocks):
        block = y[k * per_block:(k + 1) * per_block]
        assert block.max() > early + 2 and block.min() < early + 0.3, k
    assert y[n_blocks * per_block:].max() < early + 0.3  # the needle-free tail: no jump


# --------------------------------------------------------------- the live explanation (torch)

torch = optional("torch")


def _stream():
    d = kvtask.stream_document((0, 0), 1025)
    return d, int(d.needle_at[1]), int(d.answer_at[1])


@pytest.fixture(scope="module")
def model():
    from lessonlib.tinylm import load_tinylm
    return load_tinylm("tinylm.pt")


@pytest.fixture(scope="module")
def sink_weights(model):
    """Notebook 10's live cell, its cheap half: the sink head's heaviest weight over the window
    just before the needle and over one between the needle and its query (two forwards)."""
    d, needle, answer = _stream()
    layer, head, _ = R.sink_heads(next(c for c in SINKS["cells"] if c["length"] == L0),
                                  top=1)[0]
    top = {}
    with torch.no_grad():
        for p in (needle - 1, (needle + answer) // 2):
            window = d.tokens[p - 255:p + 1]
            _, weights = model(torch.from_numpy(window)[None], need_weights=True)
            w = weights[layer][0, head, -1]
            j = int(w.argmax())
            top[p] = (float(w[j]), int(window[j]), p - 255 + j)
    return d, needle, answer, top


@pytest.fixture(scope="module")
def window_losses(model):
    """Notebook 10's live cell, its costly half: one stream of 1,025 tokens decoded through the
    window cache without sinks and with four."""
    from lessonlib.tinylm import decode, token_losses
    d, needle, answer = _stream()
    stream = torch.from_numpy(d.tokens)[None]
    with torch.no_grad():
        losses = {k: token_losses(decode(model, stream, n_sink=k, n_recent=256 - k),
                                  stream)[0].numpy() for k in (0, 4)}
    return needle, answer, losses


@needs("torch")
def test_without_bos_the_sink_head_parks_on_the_needles_pass(sink_weights):
    """"they moved it to the most <bos>-like token left in the window: the needle's pass:";
    "In windows of plain filler the same heads spread their weight thinly"."""
    d, needle, answer, top = sink_weights
    weight, token, at = top[(needle + answer) // 2]
    assert weight > 0.9 and token == kvtask.PASS and at == needle
    weight, token, _ = top[needle - 1]
    assert weight < 0.2 and token >= kvtask.FILLER0


@needs("torch")
def test_the_loss_stays_high_from_the_needle_to_its_query_without_sinks(window_losses):
    """"the loss stays high until the needle's query has come ... do little harm"; four sinks
    keep both spans at the trained level."""
    needle, answer, losses = window_losses
    span, rest = slice(needle, answer), np.r_[L0:needle, answer:1024]
    window, sinks = losses[0], losses[4]
    assert window[span].mean() > 3 * window[rest].mean()
    assert window[rest].mean() < 1.4 and max(sinks[span].mean(), sinks[rest].mean()) < 1.4
