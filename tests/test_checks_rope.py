"""The exercise checks of notebooks 07-08: the stub is "not attempted", the instructors'
reference solution is correct, and each typical mistake gets the hint that names it."""
import math

import numpy as np

from lessonlib import rope as R
from lessonlib.checks import rope as checks
from _support import assert_wrong, solutions


S7, S8 = solutions("07_rope"), solutions("08_rope_scaling")
ALL = {
    "inv_freq": S7.inv_freq,
    "rotate_neox": S7.rotate_neox,
    "never_turning": S7.never_turning,
    "ntk_base": S8.ntk_base,
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


def test_rotate_neox_hints():
    def gptj(x, m, theta):
        return R.apply_rope(np.asarray(x)[None], [m], theta, style="gptj")[0]

    def backwards(x, m, theta):
        return S7.rotate_neox(x, -m, theta)

    def gptj_backwards(x, m, theta):
        return gptj(x, -m, theta)

    def overwrites(x, m, theta):  # the in-place slip: x1 overwritten before x2 uses it
        x = np.array(x, dtype=float)
        h = len(theta)
        c, s = np.cos(m * theta), np.sin(m * theta)
        x[:h] = x[:h] * c - x[h:] * s
        x[h:] = x[h:] * c + x[:h] * s
        return x

    def crashes(x, m, theta):
        raise IndexError("boom")

    assert_wrong(checks.rotate_neox(gptj), "gpt-j pairing", "fluent garbage")
    assert_wrong(checks.rotate_neox(backwards), "backwards")
    assert_wrong(checks.rotate_neox(gptj_backwards), "two slips")
    assert_wrong(checks.rotate_neox(overwrites), "length changed", "overwriting x1")
    assert_wrong(checks.rotate_neox(crashes), "raised IndexError: boom")
    assert_wrong(checks.rotate_neox(lambda x, m, theta: x[:4]), "shaped like x")
    assert_wrong(checks.rotate_neox(lambda x, m, theta: x[::-1]), "not a neox rotation")
    assert_wrong(checks.rotate_neox(3.0), "give a function")


def test_never_turning_hints():
    assert checks.never_turning(29).ok is True and checks.never_turning(29.0).ok is True
    assert_wrong(checks.never_turning(35), "do turn")
    assert_wrong(checks.never_turning(14), "base 10,000")
    assert_wrong(checks.never_turning(15), "max_position_embeddings = 131,072")
    assert_wrong(checks.never_turning(93), "d = 128 entries")
    assert_wrong(checks.never_turning(58), "base^(-i/d)")
    assert_wrong(checks.never_turning(32), "llama3-scaled")
    assert_wrong(checks.never_turning(7), "wavelength")
    assert_wrong(checks.never_turning("29"), "one finite number")


# ------------------------------------------------------------------ notebook 08

def test_ntk_base_hints():
    b, s = 500_000.0, 8.0
    assert checks.ntk_base(R.ntk_base(b, s, 128)).ok is True
    assert_wrong(checks.ntk_base(b * s), "forgot the exponent d/(d-2)")
    assert_wrong(checks.ntk_base(b * s ** (126 / 128)), "upside down")
    assert_wrong(checks.ntk_base(b * s ** (64 / 62)), "not the number of pairs")
    assert_wrong(checks.ntk_base(b / s), "must grow")
    assert_wrong(checks.ntk_base(b * s ** 2), "just above 1")
    assert_wrong(checks.ntk_base(1.0), "base' = base * s^(d/(d-2))")
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
    assert_wrong(checks.yarn_score_factor(mscale), "mscale squared", "instead of to q and k")
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
