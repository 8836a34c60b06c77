"""The exercise checks of notebooks 07-08: the stub is "not attempted", the instructors'
reference solution is correct, and each typical mistake gets the hint that names it."""
import math
import re

import numpy as np
import pytest

from lessonlib import rope as R
from lessonlib.checks import NOT_ATTEMPTED
from lessonlib.checks import rope as checks
from _support import assert_wrong, needs, optional, solutions


S7, S8 = solutions("07_rope"), solutions("08_rope_scaling")
ALL = {
    "inv_freq": S7.inv_freq,
    "rotate_pairs": S7.rotate_pairs,
    "never_turning": S7.never_turning,
    "chunk_position": S7.chunk_position,
    "product_rounding": S7.product_rounding,
    "ntk_base": S8.ntk_base,
    "yarn_inv_freq": S8.yarn_inv_freq,
    "vllm_length": S8.vllm_length,
    "yarn_band": S8.yarn_band,
    "yarn_score_factor": S8.yarn_score_factor,
    "pi_overshoot": S8.pi_overshoot,
}


def test_every_check_is_listed_and_exported():
    assert set(ALL) == set(checks.__all__) - {"QUESTIONS"}


# ------------------------------------------------------------------ notebook 07

def test_inv_freq_values_and_hints():
    b, d = 150_000.0, 64  # gpt-oss-20b's head
    i = np.arange(d // 2)
    assert checks.inv_freq(list(b ** (-2 * i / d))).ok is True  # a list is fine too
    assert "32 pairs" in checks.inv_freq(S7.inv_freq).message
    np.testing.assert_allclose(S7.inv_freq, R.rope_frequencies(
        {"head_dim": 64, "rope_theta": 150_000.0})[0])
    j = np.arange(d)
    assert_wrong(checks.inv_freq(b ** (-2 * j / d)), "64 entries", "d/2 = 32 pairs")
    assert_wrong(checks.inv_freq(b ** (-j / d)), "64 entries")
    assert_wrong(checks.inv_freq(b ** (-i / d)), "exponent is 2i/d, not i/d")
    assert_wrong(checks.inv_freq(b ** (2 * i / d)), "upside down")
    assert_wrong(checks.inv_freq(2 * np.pi / S7.inv_freq), "wavelengths")
    assert_wrong(checks.inv_freq(b ** (-2 * i / (d // 2))), "not by the number of pairs")
    assert_wrong(checks.inv_freq(b ** (-2 * (i + 1) / d)), "start at i = 0")
    assert_wrong(checks.inv_freq(S7.inv_freq / (2 * np.pi)), "turns per position")
    assert_wrong(checks.inv_freq(1e4 ** (-2 * i / d)), "pair 1 is off")  # the wrong base
    off = S7.inv_freq.copy()
    off[5] *= 1.01
    assert_wrong(checks.inv_freq(off), "pair 5 is off")
    assert_wrong(checks.inv_freq(S7.inv_freq[:10]), "give 32 numbers")
    assert_wrong(checks.inv_freq("theta"), "32 numbers")


def _apply(x, m, theta, layout, sign=1.0):
    return R.apply_rope(np.asarray(x, dtype=float)[None], [sign * m], theta, style=layout)[0]


def test_rotate_pairs_hints():
    other = {"neox": "gptj", "gptj": "neox"}

    def overwrites(x, m, theta, layout):  # the in-place slip: x1 overwritten before x2 uses it
        x = np.array(x, dtype=float)
        h = len(theta)
        i, j = (slice(0, h), slice(h, 2 * h)) if layout == "neox" else \
            (slice(0, 2 * h, 2), slice(1, 2 * h, 2))
        c, s = np.cos(m * theta), np.sin(m * theta)
        x[i] = x[i] * c - x[j] * s
        x[j] = x[j] * c + x[i] * s
        return x

    def half_of_x(x, m, theta, layout):  # NeoX partner i + len(x)/2: wrong with a tail
        if layout == "gptj":
            return _apply(x, m, theta, layout)
        x = np.array(x, dtype=float)
        h, half = len(theta), len(x) // 2
        c, s = np.cos(m * theta), np.sin(m * theta)
        x1, x2 = x[:h].copy(), x[half:half + h].copy()
        x[:h], x[half:half + h] = x1 * c - x2 * s, x2 * c + x1 * s
        return x

    def tail_zeroed(x, m, theta, layout):
        out = _apply(x, m, theta, layout)
        out[2 * len(theta):] = 0
        return out

    def crashes(x, m, theta, layout):
        raise IndexError("boom")

    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: _apply(x, m, t, other[lay])),
                 "layouts are swapped")
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: _apply(x, m, t, "neox")),
                 "right for 'neox'", "(x[2i], x[2i + 1])")
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: _apply(x, m, t, "gptj")),
                 "right for 'gptj'", "(x[i], x[i + half])")
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: _apply(x, m, t, lay, -1.0)),
                 "backwards")
    assert_wrong(checks.rotate_pairs(half_of_x), "partial rotary", "not i + len(x)/2")
    assert_wrong(checks.rotate_pairs(tail_zeroed), "the tail is lost")
    assert_wrong(checks.rotate_pairs(overwrites), "length changed", "overwriting x1")
    assert_wrong(checks.rotate_pairs(crashes), "raised IndexError: boom")
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: _apply(x, m, t, lay)[:2 * len(t)]),
                 "shaped like x", "tail passes")
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: np.asarray(x)[::-1]),
                 "is not the rotation")
    assert_wrong(checks.rotate_pairs(3.0), "give a function")
    # GPT-J right, NeoX backwards: named by the layout that is wrong
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: _apply(x, m, t, lay, 1.0 if lay ==
                                                                   "gptj" else -1.0)),
                 "right for 'gptj', wrong for 'neox'")


def test_rotate_pairs_a_lookup_table_of_its_cases_fails_the_hidden_test():
    """The graded version also runs the student's function through assignments.HIDDEN: turned
    to m - 3, then 3 more. A table of the check's own cases fails there."""
    from lessonlib.checks.rope import _rotate_cases
    table = {(x.tobytes(), m, lay): _apply(x, m, t, lay) for x, m, t, lay in _rotate_cases()}

    def lookup(x, m, theta, layout):
        return table[(np.asarray(x, dtype=float).tobytes(), m, layout)]

    assert checks.rotate_pairs(lookup).ok is True

    def unseen(x, m, theta, layout, k=3):
        return lookup(lookup(x, m - k, theta, layout), k, theta, layout)

    assert checks.rotate_pairs(unseen).ok is False

    def unseen_right(x, m, theta, layout, k=3):
        f = S7.rotate_pairs
        return f(f(x, m - k, theta, layout), k, theta, layout)

    assert checks.rotate_pairs(unseen_right).ok is True


def test_never_turning_hints():
    assert checks.never_turning(29).ok is True and checks.never_turning(29.0).ok is True
    assert_wrong(checks.never_turning(35), "do turn")
    assert_wrong(checks.never_turning(14), "base 10,000")
    assert_wrong(checks.never_turning(15), "max_position_embeddings = 131,072")
    assert_wrong(checks.never_turning(93), "d = 128 entries")
    assert_wrong(checks.never_turning(58), "base^(-i/d)")
    assert_wrong(checks.never_turning(32), "llama3-scaled")
    assert_wrong(checks.never_turning(7), "wavelength")


def test_never_turning_names_4096_positions_as_a_cause_of_32():
    """32 pairs is the count over 4,096 positions (notebook 07's worked length) as well as with
    the llama3-scaled frequencies; the hint once named only the second."""
    from lessonlib import rope
    theta = rope.rope_frequencies({"head_dim": 128, "rope_theta": 500_000.0})[0]
    assert rope.pairs_never_turning(theta, 4096).size == 32
    assert_wrong(checks.never_turning(32), "4,096 positions", "llama3-scaled", "8,192")
    assert_wrong(checks.never_turning("29"), "one whole number")


# ------------------------------------------------------------------ notebook 08

def ntk_base_by_hand(b, s, d):
    """The fixed NTK-aware base from its defining property, not from R.ntk_base (the function
    the check itself uses): pair i turns at b'^(-2i/d), and the last pair (2i = d - 2) must turn
    exactly s times slower than before, b'^(-(d-2)/d) = b^(-(d-2)/d) / s, so b' = b s^(d/(d-2))."""
    return b * s ** (d / (d - 2))


def test_ntk_base_answer_is_computed_independently():
    b, s, d = 500_000.0, 8.0, 128
    want = ntk_base_by_hand(b, s, d)
    assert want == pytest.approx(4_134_231.132, abs=1e-3)  # 500,000 x 8^(128/126)
    assert want ** (-(d - 2) / d) == pytest.approx(b ** (-(d - 2) / d) / s, rel=1e-12)
    assert checks.ntk_base(want).ok is True and checks.ntk_base(S8.ntk_base).ok is True
    assert checks.ntk_base(4_134_231).ok is True  # rounded as a student might write it
    assert checks.ntk_base(4_130_000).ok is True  # 3 significant digits, as the cell asks
    for off in (1 + 5e-3, 1 - 5e-3):  # past half a unit in the third digit: not accepted
        assert checks.ntk_base(want * off).ok is False


@needs("torch")
def test_ntk_base_answer_is_hf_dynamic_ntk_at_twice_its_trained_length():
    """transformers has no fixed NTK-aware rope; its dynamic one sets the base to
    b (f L / Lmax - (f - 1))^(d/(d-2)), which at L = 2 Lmax and f = s - 1 is b s^(d/(d-2))."""
    from transformers import LlamaConfig
    from transformers import logging as hf_logging
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    hf_logging.set_verbosity_error()
    b, s, d, l_max = 500_000.0, 8.0, 128, 8192
    hf = LlamaConfig(hidden_size=4 * d, num_attention_heads=4, head_dim=d, max_position_embeddings=l_max,
                     rope_parameters={"rope_type": "dynamic", "factor": s - 1, "rope_theta": b})
    inv, _ = ROPE_INIT_FUNCTIONS["dynamic"](hf, None, seq_len=2 * l_max)
    base = float(inv.double()[-1]) ** (-d / (d - 2))  # the last pair turns at base^(-(d-2)/d)
    assert base == pytest.approx(ntk_base_by_hand(b, s, d), rel=1e-6)  # float32 inv_freq
    assert checks.ntk_base(base).ok is True


def test_ntk_base_hints():
    b, s = 500_000.0, 8.0
    assert_wrong(checks.ntk_base(b * s), "forgot the exponent d/(d-2)")
    assert_wrong(checks.ntk_base(b * s ** (126 / 128)), "upside down")
    assert_wrong(checks.ntk_base(b * s ** (64 / 62)), "not the number of pairs")
    assert_wrong(checks.ntk_base(b / s), "must grow")
    assert_wrong(checks.ntk_base(b * s ** 2), "just above 1")
    assert_wrong(checks.ntk_base(12_345.0), "base' = base * s^(d/(d-2))")
    assert_wrong(checks.ntk_base(float("nan")), "one finite number")


def test_yarn_band_hints():
    assert S8.yarn_band == (10, 23) == R.yarn_correction_range(32, 1, 64, 10_000, 4096)
    assert checks.yarn_band(np.array([10, 23])).ok is True
    assert_wrong(checks.yarn_band((23, 10)), "swapped")
    assert_wrong(checks.yarn_band((22, 11)), "swapped")
    low, high = (R.yarn_correction_dim(n, 64, 10_000, 4096) for n in (32, 1))
    assert_wrong(checks.yarn_band((low, high)), "floors low and ceils high")
    assert_wrong(checks.yarn_band((11, 22)), "round outward")
    assert_wrong(checks.yarn_band((20, 46)), "qk_rope_head_dim = 64")
    assert_wrong(checks.yarn_band(R.yarn_correction_range(32, 1, 192, 10_000, 4096)),
                 "qk_rope_head_dim")
    assert_wrong(checks.yarn_band(R.yarn_correction_range(32, 1, 64, 10_000, 163840)),
                 "original_max_position_embeddings = 4,096")
    assert_wrong(checks.yarn_band(R.yarn_correction_range(32, 1, 32, 10_000, 4096)),
                 "not the number of pairs")
    assert_wrong(checks.yarn_band((1, 2)), "floor(")
    assert_wrong(checks.yarn_band(10), "two numbers")


def test_yarn_score_factor_hints():
    mscale = 0.1 * math.log(32) + 1
    assert checks.yarn_score_factor(mscale ** 2).ok is True
    assert "1.8133" in checks.yarn_score_factor(mscale ** 2).message
    assert_wrong(checks.yarn_score_factor(mscale), "mu squared", "instead of to q and k")
    assert_wrong(checks.yarn_score_factor((0.1 * math.log10(32) + 1) ** 2), "natural log")
    assert_wrong(checks.yarn_score_factor((0.1 * math.log2(32) + 1) ** 2), "not log2")
    assert_wrong(checks.yarn_score_factor(0.1 * math.log10(32) + 1), "and squared")
    assert_wrong(checks.yarn_score_factor(math.sqrt(mscale)), "not square-rooted")
    assert_wrong(checks.yarn_score_factor(1 / mscale ** 2), "do not shrink")
    assert_wrong(checks.yarn_score_factor(3.0), "twice")


def test_pi_overshoot_hints():
    theta_4 = 10_000.0 ** (-8 / 128)
    assert checks.pi_overshoot(0.875 * theta_4).ok is True
    assert "0.492" in checks.pi_overshoot(S8.pi_overshoot).message
    assert_wrong(checks.pi_overshoot(0), "does not keep every angle inside", "4,095.88")
    assert_wrong(checks.pi_overshoot(theta_4 / 8), "new step")
    assert_wrong(checks.pi_overshoot(7 * theta_4), "after dividing the position by s")
    assert_wrong(checks.pi_overshoot(7), "in positions, and before dividing")
    assert_wrong(checks.pi_overshoot(0.875), "multiply by pair 4's speed")
    assert_wrong(checks.pi_overshoot((32767 - 4095) * theta_4), "without pi")
    assert_wrong(checks.pi_overshoot(-0.875 * theta_4), "sign")
    assert_wrong(checks.pi_overshoot(1.5), "(m / s) * theta_4")


# ------------------------------------------------------------------ answers in every form

torch = optional("torch")


def test_never_turning_is_an_exact_count():
    assert checks.never_turning(np.float32(29)).ok is True
    assert checks.never_turning(np.array(29)).ok is True
    for near in (29.4, 28.6, 29.000001):  # within 0.5 was accepted before
        assert_wrong(checks.never_turning(near), "not a whole number")
    assert_wrong(checks.never_turning(29 + 1j), "complex number")


def _rotate32(x, m, theta, layout="neox"):
    x, theta = np.asarray(x, dtype=np.float32), np.asarray(theta, dtype=np.float32)
    h = len(theta)
    idx = np.arange(2 * h) if layout == "neox" else np.r_[0:2 * h:2, 1:2 * h:2]
    y = x[idx]
    angle = np.float32(m) * theta
    c, s = np.cos(angle), np.sin(angle)
    out = x.copy()
    out[idx] = np.concatenate([y[:h] * c - y[h:] * s, y[h:] * c + y[:h] * s])
    return out


def test_a_float32_rotation_is_correct_and_float32_slips_keep_their_hints():
    assert checks.rotate_pairs(_rotate32).ok is True
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: _rotate32(x, -m, t, lay)), "backwards")
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: _rotate32(x, m, t, "neox")),
                 "right for 'neox'")


@needs("torch")
def test_a_torch_rotation_and_a_tensor_inv_freq_are_correct():
    def rotate(x, m, theta, layout):
        x, theta = torch.tensor(x, dtype=torch.float32), torch.tensor(theta, dtype=torch.float32)
        h = len(theta)
        out = x.clone()
        a, b = (out[:h], out[h:2 * h]) if layout == "neox" else (out[0:2 * h:2], out[1:2 * h:2])
        x1, x2 = a.clone(), b.clone()
        c, s = torch.cos(m * theta), torch.sin(m * theta)
        a.copy_(x1 * c - x2 * s)
        b.copy_(x2 * c + x1 * s)
        return out

    assert checks.rotate_pairs(rotate).ok is True
    assert checks.inv_freq(torch.tensor(S7.inv_freq, dtype=torch.float32)).ok is True


def test_rotate_pairs_in_place_iterators_and_stubs():
    def in_place(x, m, theta, layout):  # writes into x and theta: the check's own stay intact
        out = S7.rotate_pairs(x, m, theta, layout)
        x[:] = out
        theta *= 0
        return x

    assert checks.rotate_pairs(in_place).ok is True
    assert checks.rotate_pairs(lambda x, m, t, lay: map(float, S7.rotate_pairs(x, m, t, lay))).ok
    assert checks.rotate_pairs(lambda x, m, t, lay: None).message == NOT_ATTEMPTED
    assert_wrong(checks.rotate_pairs(lambda x, m, t, lay: S7.rotate_pairs(x, m, t, lay) + 1j),
                 "complex number")


def test_inv_freq_forms():
    assert checks.inv_freq(S7.inv_freq.astype(np.float32)).ok is True
    assert checks.inv_freq(map(float, S7.inv_freq)).ok is True
    assert_wrong(checks.inv_freq([str(t) for t in S7.inv_freq]), "without quotes")
    off = S7.inv_freq.copy()
    off[5] *= 1 + 2e-5  # just outside the tolerance: the two numbers shown must differ
    verdict = checks.inv_freq(off)
    got, want = re.search(r"expected (\S+), got (\S+)\.", verdict.message).groups()
    assert verdict.ok is False and got != want, verdict


def test_yarn_band_forms():
    assert checks.yarn_band([10.0, 23.0]).ok and checks.yarn_band(np.array([10, 23])).ok
    assert checks.yarn_band(iter((10, 23))).ok
    assert_wrong(checks.yarn_band(("10", "23")), "without quotes")
    assert_wrong(checks.yarn_band((10.5, 23)), "whole pair indices")
    assert_wrong(checks.yarn_band((10 + 1j, 23)), "complex number")


NTK_D, NTK_B, NTK_S = 128, 500_000.0, 8.0


@pytest.mark.parametrize("answer, hint", [
    (10_000.0 * NTK_S ** (NTK_D / (NTK_D - 2)), "base 10,000, the worked example's"),
    (NTK_B * 4.0 ** (NTK_D / (NTK_D - 2)), "s = 4, the worked example's factor"),
    (40_889.9, "worked example's base'"),
    ((NTK_B * NTK_S) ** (NTK_D / (NTK_D - 2)), "applies to s alone"),
    (NTK_B * NTK_S ** NTK_D / (NTK_D - 2), "Mind the parentheses"),
    (NTK_S ** (NTK_D / (NTK_D - 2)), "alone: multiply the base"),
])
def test_ntk_base_slips_from_the_notebook(answer, hint):
    assert_wrong(checks.ntk_base(answer), hint)


THETA_4 = 10_000.0 ** (-8 / 128)
OVER = 32767 / 8 - 4095  # 0.875 positions


@pytest.mark.parametrize("answer, hint", [
    (0.75, "s = 4 case"),                              # the notebook's s = 4 overshoot, copied
    (0.75 * THETA_4, "uses the s = 4 overshoot"),
    (OVER, "in positions (1 - 1/s)"),                  # the overshoot given in positions
    (OVER * THETA_4 * 180 / math.pi, "degrees"),
    (OVER * THETA_4 / (2 * math.pi), "turns"),
    ((32768 / 8 - 4095) * THETA_4, "last position served is 32,767"),
    ((32767 / 8 - 4096) * THETA_4, "trained positions are 0..4,095"),
    (OVER * 10_000.0 ** (-4 / 128), "base^(-4/128)"),
    (OVER * 10_000.0 ** (-6 / 128), "count from 0"),
    (OVER * 10_000.0 ** (-10 / 128), "count from 0"),
])
def test_pi_overshoot_unit_and_index_slips(answer, hint):
    assert_wrong(checks.pi_overshoot(answer), hint)


def test_pi_overshoot_rounded_answer_is_close():
    assert_wrong(checks.pi_overshoot(0.49), "close:", "more digits")
    assert checks.pi_overshoot(np.float32(OVER * THETA_4)).ok is True


# ------------------------------------------------------------------ 07, going deeper

def test_chunk_position_hints():
    assert checks.chunk_position(16_484).ok is True
    assert_wrong(checks.chunk_position(3 * 8192 + 100), "after two full chunks")
    assert_wrong(checks.chunk_position(100), "offset inside the chunk alone")
    assert_wrong(checks.chunk_position(16_485), "count from 0")
    assert_wrong(checks.chunk_position(16_483), "count from 0")
    assert_wrong(checks.chunk_position(16_000), "position = tokens")


def test_product_rounding_hints():
    assert checks.product_rounding(0.000977).ok is True and checks.product_rounding(1 / 1024).ok
    assert_wrong(checks.product_rounding(1 / 512), "half of it")
    assert_wrong(checks.product_rounding(1 / 256), "worked table's 1/256")
    assert_wrong(checks.product_rounding(1 / 2048), "one power of two lower")
    assert_wrong(checks.product_rounding(2.0 ** -23), "relative precision")
    assert_wrong(checks.product_rounding(180 / math.pi / 1024), "degrees")
    assert_wrong(checks.product_rounding(0.00098), "close:", "more digits")
    assert_wrong(checks.product_rounding(0.0015), "take half of it")


# ------------------------------------------------------------------ 08: YaRN's table, built

def _yarn_slip(**slip):
    from lessonlib.checks.rope import _yarn_table
    return lambda config: _yarn_table(config, **slip)


@pytest.mark.parametrize("slip, hint", [
    (dict(reverse=True), "ramp runs the wrong way"),
    (dict(factor_mode="none"), "factor is missing"),
    (dict(factor_mode="multiply"), "not theta x s"),
    (dict(rounding="never"), "floors low and ceils high"),
    (dict(rounding="always"), "truncate: false"),
    (dict(rounding="inward"), "round outward"),
    (dict(swap_betas=True), "swapped"),
    (dict(default_betas=True), "when it gives them"),
    (dict(L0_key="max_position_embeddings"), "original_max_position_embeddings"),
    (dict(use_head_dim=True), "partial rotary"),
    (dict(mu=True), "not the speeds"),
])
def test_yarn_inv_freq_names_each_slip(slip, hint):
    assert_wrong(checks.yarn_inv_freq(_yarn_slip(**slip)), hint)


def test_yarn_inv_freq_right_forms_and_other_wrong_answers():
    assert checks.yarn_inv_freq(_yarn_slip()).ok is True  # the slip table without a slip
    assert checks.yarn_inv_freq(lambda c: list(S8.yarn_inv_freq(c))).ok is True
    assert checks.yarn_inv_freq(lambda c: S8.yarn_inv_freq(c).astype(np.float32)).ok is True
    assert checks.yarn_inv_freq(lambda c: R.rope_frequencies(c)[0]).ok is True

    def pi(config):
        return R.rope_frequencies({**config, "rope_scaling": {
            "rope_type": "linear", "factor": config["rope_scaling"]["factor"]}})[0]

    assert_wrong(checks.yarn_inv_freq(pi), "that is pi")

    def whole_head(config):  # head_dim/2 entries where only part of the head turns
        return S8.yarn_inv_freq({**config, "partial_rotary_factor": 1.0})

    assert_wrong(checks.yarn_inv_freq(whole_head), "r/2 =", "partial_rotary_factor")

    def one_pair_off(config):
        out = S8.yarn_inv_freq(config)
        out[3] *= 1.01
        return out

    assert_wrong(checks.yarn_inv_freq(one_pair_off), "pair 3 should turn")
    assert_wrong(checks.yarn_inv_freq(lambda c: 1 / 0), "raised ZeroDivisionError")
    assert checks.yarn_inv_freq(lambda c: None).message == NOT_ATTEMPTED
    assert_wrong(checks.yarn_inv_freq(42), "give a function yarn_inv_freq(config)")


def test_yarn_inv_freq_cases_span_the_brief():
    """Factors 2-64, bases 1e4-1e6, partial rotary, betas given, both truncate settings, and
    the notebook's worked head among them; each read the same by lessonlib and the check."""
    from lessonlib.checks.rope import _yarn_cases
    cases = _yarn_cases()
    assert len(cases) >= 25
    factors = {c["rope_scaling"]["factor"] for c in cases}
    bases = [c["rope_theta"] for c in cases]
    assert min(factors) == 2 and max(factors) == 64
    assert min(bases) == 10_000 and max(bases) == 1_000_000
    assert any("partial_rotary_factor" in c for c in cases)
    assert any(c["rope_scaling"].get("truncate") is False for c in cases)
    assert any("beta_fast" in c["rope_scaling"] and c["rope_scaling"]["beta_fast"] != 32
               for c in cases)
    assert R.scaling_parameters(cases[0]).yarn_band == (20, 46)


def test_yarn_inv_freq_a_lookup_table_fails_the_hidden_test():
    """assignments.HIDDEN runs the function on each config with head_dim doubled and
    partial_rotary_factor halved (the same rotated dims): a table of the check's configs fails."""
    import json
    from lessonlib.checks.rope import _yarn_cases
    table = {json.dumps(c, sort_keys=True): R.rope_frequencies(c)[0] for c in _yarn_cases()}

    def lookup(config):
        return table[json.dumps(config, sort_keys=True)]

    assert checks.yarn_inv_freq(lookup).ok is True

    def seen_through(f):
        def unseen(config):
            config = {**config, "head_dim": 2 * config["head_dim"],
                      "partial_rotary_factor": config.get("partial_rotary_factor", 1.0) / 2}
            return f(config)
        return unseen

    assert checks.yarn_inv_freq(seen_through(lookup)).ok is False
    assert checks.yarn_inv_freq(seen_through(S8.yarn_inv_freq)).ok is True


def test_vllm_length_hints():
    assert checks.vllm_length(98_304).ok is True
    assert_wrong(checks.vllm_length(32_768), "multiplies it by the factor")
    assert_wrong(checks.vllm_length(294_912), "one factor")
    assert_wrong(checks.vllm_length(65_536), "linear and dynamic scaling only")
    assert_wrong(checks.vllm_length(10_922.5), "not a whole number")
