"""lessonlib.rope against HuggingFace transformers' ROPE_INIT_FUNCTIONS, naive formulas written
here, and every number notebooks 07 and 08 print (the d = 128, b = 10,000 head and its PI, NTK and
YaRN tables; the real models' configs; the engines' rules)."""
import copy
import dataclasses
import math

import numpy as np
import pytest
from _support import needs, optional
from hypothesis import assume, given
from hypothesis import strategies as st

from lessonlib import rope as R
from lessonlib.models import rope as MR
from lessonlib.models.configs import load_config

torch = optional("torch")  # the HuggingFace oracle runs on torch: those tests need it
if torch is not None:
    from transformers import AutoConfig
    from transformers import logging as hf_logging
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding

    hf_logging.set_verbosity_error()  # HF warns about the configs we feed it on purpose

MODELS = ["Llama-3.1-8B", "Llama-3.2-1B", "Qwen2.5-7B-Instruct", "DeepSeek-V3", "gpt-oss-20b",
          "Phi-3.5-mini-instruct", "Gemma-3-27B", "Mistral-7B"]
F32 = dict(rtol=1e-6, atol=0)  # HF builds inv_freq in float32; we build it in float64


def naive_theta(b, r):
    """theta_i = b^(-2i/r), written out pair by pair."""
    return np.array([b ** (-2.0 * i / r) for i in range(r // 2)])


# ---------------------------------------------------------------------------------------------
# The HuggingFace reference
# ---------------------------------------------------------------------------------------------

def hf_frequencies(config, seq_len=None, layer_type=None):
    """transformers' (inv_freq float64, attention_factor) for a config.json dict."""
    c = {k: v for k, v in copy.deepcopy(config).items() if not k.startswith("_")}
    hf = AutoConfig.for_model(c.pop("model_type", "llama"), **c)
    rp = hf.rope_parameters[layer_type] if layer_type else hf.rope_parameters
    if rp["rope_type"] == "default":  # not in ROPE_INIT_FUNCTIONS: each model class has its own
        if layer_type:
            inv, af = Gemma3RotaryEmbedding.compute_default_rope_parameters(hf, None, layer_type=layer_type)
        else:
            inv, af = Phi3RotaryEmbedding.compute_default_rope_parameters(hf)  # reads partial_rotary_factor
    else:
        kwargs = {"layer_type": layer_type} if layer_type else {}
        inv, af = ROPE_INIT_FUNCTIONS[rp["rope_type"]](hf, None, seq_len=seq_len, **kwargs)
    return inv.double().numpy(), float(af)


def assert_matches_hf(config, seq_len=None, layer_type=None):
    ours, ours_af = R.rope_frequencies(config, seq_len, layer_type=layer_type)
    ref, ref_af = hf_frequencies(config, seq_len, layer_type)
    assert ours.dtype == np.float64 and ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, **F32)
    assert ours_af == pytest.approx(ref_af, rel=1e-12)
    return ours, ours_af


@needs("torch")
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("seq_len", [None, 2048, 200_000])
def test_real_configs_match_hf(name, seq_len):
    config = load_config(name)
    layers = ["full_attention", "sliding_attention"] if name == "Gemma-3-27B" else [None]
    for layer_type in layers:
        assert_matches_hf(config, seq_len, layer_type)


@needs("torch")
@pytest.mark.parametrize("name", MODELS)
def test_transformers5_layout_reads_the_same(name):
    """HF 5's to_dict() writes rope_parameters (with rope_theta inside, per layer type for Gemma 3)."""
    legacy = load_config(name)
    c = {k: v for k, v in legacy.items() if not k.startswith("_")}
    v5 = AutoConfig.for_model(c.pop("model_type"), **c).to_dict()
    assert "rope_parameters" in v5 and not v5.get("rope_scaling")
    for layer_type in (["full_attention", "sliding_attention"] if name == "Gemma-3-27B" else [None]):
        a, af_a = R.rope_frequencies(v5, layer_type=layer_type)
        b, af_b = R.rope_frequencies(legacy, layer_type=layer_type)
        np.testing.assert_array_equal(a, b)
        assert af_a == af_b


def synthetic(rope, *, head_dim=128, theta=10_000.0, max_pos=4096, prf=None):
    """A config.json in the transformers-4 layout: rope_theta top level, scaling in rope_scaling."""
    c = {"model_type": "llama", "hidden_size": head_dim * 4, "num_attention_heads": 4,
         "head_dim": head_dim, "max_position_embeddings": max_pos, "rope_theta": theta}
    if rope is not None:
        c["rope_scaling"] = dict(rope)
    if prf is not None:
        c["partial_rotary_factor"] = prf
    return c


def as_v5(config):
    """The same config in the transformers-5 layout: rope_parameters holds rope_theta (and prf)."""
    c = copy.deepcopy(config)
    rp = c.pop("rope_scaling", None) or {"rope_type": "default"}
    rp["rope_theta"] = c.pop("rope_theta")
    if "partial_rotary_factor" in c:
        rp["partial_rotary_factor"] = c.pop("partial_rotary_factor")
    c["rope_parameters"] = rp
    return c


LONG48 = [1.0 + 0.9 * j for j in range(48)]
SHORT48 = [1.0 + 0.02 * j for j in range(48)]
LONG64 = [1.0 + 0.5 * j for j in range(64)]
SHORT64 = [1.0 + 0.01 * j for j in range(64)]
CASES = [  # (id, config, seq_len)
    ("default", synthetic(None), None),
    ("default-b5e5-d64-partial", synthetic(None, head_dim=64, theta=5e5, prf=0.5), None),
    ("linear-2", synthetic({"rope_type": "linear", "factor": 2.0}), None),
    ("linear-8-partial", synthetic({"rope_type": "linear", "factor": 8.0}, prf=0.25), None),
    ("linear-legacy-type", synthetic({"type": "linear", "factor": 4.0}), None),
    ("dynamic-none", synthetic({"rope_type": "dynamic", "factor": 4.0}), None),
    ("dynamic-below", synthetic({"rope_type": "dynamic", "factor": 4.0}), 1000),
    ("dynamic-at", synthetic({"rope_type": "dynamic", "factor": 4.0}), 4096),
    ("dynamic-above", synthetic({"rope_type": "dynamic", "factor": 4.0}), 8192),
    ("dynamic-far-above-partial", synthetic({"rope_type": "dynamic", "factor": 2.0}, prf=0.5), 50_000),
    ("yarn-truncate", synthetic({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096},
                                max_pos=16384), None),
    ("yarn-no-truncate", synthetic({"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096,
                                    "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False},
                                   head_dim=64, theta=150_000.0, max_pos=131072), None),
    ("yarn-mscale-equal", synthetic({"rope_type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                     "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1},
                                    head_dim=64, max_pos=163840), None),
    ("yarn-mscale-0.707", synthetic({"rope_type": "yarn", "factor": 40, "mscale": 0.707, "mscale_all_dim": 1.0,
                                     "original_max_position_embeddings": 4096},
                                    head_dim=64, max_pos=163840), None),
    ("yarn-mscale-only", synthetic({"rope_type": "yarn", "factor": 8.0, "mscale": 0.5,
                                    "original_max_position_embeddings": 4096}, max_pos=32768), None),
    ("yarn-attention-factor", synthetic({"rope_type": "yarn", "factor": 8.0, "attention_factor": 0.8,
                                         "original_max_position_embeddings": 4096}, max_pos=32768), None),
    ("yarn-betas", synthetic({"rope_type": "yarn", "factor": 16.0, "beta_fast": 16, "beta_slow": 2,
                              "original_max_position_embeddings": 2048}, theta=5e5, max_pos=32768), None),
    ("yarn-factor-null", synthetic({"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 4096},
                                   max_pos=32768), None),
    ("yarn-partial", synthetic({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096,
                                "truncate": False}, prf=0.5, max_pos=16384), None),
    ("longrope-short-none", synthetic({"rope_type": "longrope", "long_factor": LONG64, "short_factor": SHORT64,
                                       "original_max_position_embeddings": 4096}, max_pos=131072), None),
    ("longrope-short-at-L0", synthetic({"rope_type": "longrope", "long_factor": LONG64, "short_factor": SHORT64,
                                        "original_max_position_embeddings": 4096}, max_pos=131072), 4096),
    ("longrope-long", synthetic({"rope_type": "longrope", "long_factor": LONG64, "short_factor": SHORT64,
                                 "original_max_position_embeddings": 4096}, max_pos=131072), 4097),
    ("longrope-factor-af", synthetic({"rope_type": "longrope", "long_factor": LONG64, "short_factor": SHORT64,
                                      "factor": 16.0, "attention_factor": 1.1,
                                      "original_max_position_embeddings": 8192}, max_pos=131072), 100_000),
    ("longrope-partial-0.75", synthetic({"rope_type": "longrope", "long_factor": LONG48, "short_factor": SHORT48,
                                         "original_max_position_embeddings": 4096}, prf=0.75, max_pos=131072),
     8000),
    ("longrope-no-extension", synthetic({"rope_type": "longrope", "long_factor": LONG64, "short_factor": SHORT64,
                                         "original_max_position_embeddings": 4096}), 5000),
    ("llama3-8", synthetic({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 8192}, theta=5e5, max_pos=131072), None),
    ("llama3-32-d64", synthetic({"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                                head_dim=64, theta=5e5, max_pos=131072), None),
    ("llama3-other-bands", synthetic({"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 2.0,
                                      "high_freq_factor": 8.0, "original_max_position_embeddings": 4096},
                                     max_pos=65536), None),
    ("llama3-partial", synthetic({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                                 theta=5e5, prf=0.5, max_pos=131072), None),
]


@needs("torch")
@pytest.mark.parametrize("config, seq_len", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_synthetic_configs_match_hf_in_both_layouts(config, seq_len):
    inv, af = assert_matches_hf(config, seq_len)
    inv5, af5 = assert_matches_hf(as_v5(config), seq_len)
    np.testing.assert_array_equal(inv, inv5)
    assert af == af5


@needs("torch")
def test_every_hf_rope_type_is_covered():
    covered = {R.rope_parameters(c[1])["rope_type"] for c in CASES}
    assert set(ROPE_INIT_FUNCTIONS) - {"proportional"} <= covered  # proportional: Gemma 4 only
    assert set(R.ROPE_TYPES) - {"ntk"} <= covered  # ntk is not in HF: tested against its formula


def test_regimes_really_differ():
    """The cases above would be weak if the regimes coincided: check they do not."""
    c = {name: config for name, config, _ in CASES}
    short, _ = R.rope_frequencies(c["longrope-short-none"])
    long, _ = R.rope_frequencies(c["longrope-long"], seq_len=4097)
    assert not np.allclose(short, long)
    below, _ = R.rope_frequencies(c["dynamic-below"], 1000)
    above, _ = R.rope_frequencies(c["dynamic-above"], 8192)
    np.testing.assert_array_equal(below, R.rope_frequencies(c["dynamic-none"])[0])
    assert np.all(above[1:] < below[1:])
    t, _ = R.rope_frequencies(c["yarn-no-truncate"])
    c2 = copy.deepcopy(c["yarn-no-truncate"])
    c2["rope_scaling"]["truncate"] = True
    assert not np.allclose(t, R.rope_frequencies(c2)[0])


def test_ntk_matches_its_formula():
    for b, s, r in [(1e4, 4.0, 128), (5e5, 8.0, 64), (1e6, 2.0, 96)]:
        inv, af = R.rope_frequencies(synthetic({"rope_type": "ntk", "factor": s}, head_dim=r, theta=b))
        b_new = b * s ** (r / (r - 2))
        np.testing.assert_allclose(inv, naive_theta(b_new, r), rtol=1e-13)
        assert af == 1.0
        np.testing.assert_allclose(inv[0], 1.0)
        np.testing.assert_allclose(naive_theta(b, r)[-1] / inv[-1], s, rtol=1e-12)  # last pair: exactly s


def test_deepseek_rotary_dim_is_the_rope_slice():
    c = load_config("DeepSeek-V3")
    assert R.rotary_dim(c) == c["qk_rope_head_dim"] == 64
    assert R.rotary_dim(load_config("Phi-3.5-mini-instruct")) == 3072 // 32


# ---------------------------------------------------------------------------------------------
# The course's numbers
# ---------------------------------------------------------------------------------------------

def near(value, printed, decimals):
    """``value`` rounds to the printed number (half a unit of the last printed digit)."""
    return abs(value - printed) <= 0.5 * 10.0 ** -decimals + 1e-9


def default_inv(b=1e4, r=128):
    inv, _ = R.rope_frequencies({"head_dim": r, "rope_theta": b})
    np.testing.assert_allclose(inv, naive_theta(b, r), rtol=1e-14)
    return inv


def test_example_12_table_and_18_of_64():
    inv = default_inv()
    table = {  # pair: theta, wavelength, turns in 4096, max angle trained, angle at 16383
        0: (1.000e+00, 6.3, 651.90, 4095.00, 16383.00), 8: (3.162e-01, 19.9, 206.15, 1294.95, 5180.76),
        16: (1.000e-01, 62.8, 65.19, 409.50, 1638.30), 32: (1.000e-02, 628.3, 6.52, 40.95, 163.83),
        45: (1.540e-03, 4080.2, 1.00, 6.31, 25.23), 46: (1.334e-03, 4711.7, 0.87, 5.46, 21.85),
        52: (5.623e-04, 11173.3, 0.37, 2.30, 9.21), 63: (1.155e-04, 54410.1, 0.08, 0.47, 1.89)}
    wl, turns = R.wavelengths(inv), R.turns_within(inv, 4096)
    trained, target = R.largest_trained_angle(inv, 4096), R.angle_at(inv, 16383)
    for i, (theta, w, n, a_train, a_target) in table.items():
        assert float(f"{inv[i]:.3e}") == theta
        assert near(wl[i], w, 1) and near(turns[i], n, 2)
        assert near(trained[i], a_train, 2) and near(target[i], a_target, 2)
    naive_count = sum(2 * math.pi / 1e4 ** (-2 * i / 128) > 4096 for i in range(64))
    assert R.pairs_never_turning(inv, 4096).size == naive_count == 18
    assert list(R.pairs_never_turning(inv, 4096)) == list(range(46, 64))
    assert near(16383 % (2 * math.pi), 2.74, 2)  # "2.74 radians after removing whole turns"


def test_example_13_position_interpolation_table():
    inv = default_inv()
    s = 16384 / 4096
    pi, _ = R.rope_frequencies({"head_dim": 128, "rope_theta": 1e4,
                                "rope_scaling": {"rope_type": "linear", "factor": s}})
    assert s == 4 and near((16384 - 1) / s, 4095.75, 2)
    rows = {0: (1.000000, 0.250000, 4095.75, 4095.00), 16: (0.100000, 0.025000, 409.58, 409.50),
            46: (0.001334, 0.000333, 5.46, 5.46), 63: (0.000115, 0.000029, 0.47, 0.47)}
    for i, (before, after, at_target, at_train) in rows.items():
        assert near(inv[i], before, 6) and near(pi[i], after, 6)
        assert near(R.angle_at(pi, 16383)[i], at_target, 2)
        assert near(R.largest_trained_angle(inv, 4096)[i], at_train, 2)
    assert near(R.angle_at(pi, 1)[0], 0.25, 2)  # neighbours now differ by 0.25 rad, not 1.00
    # A figure that circulates says every pair's largest angle is now "within a quarter radian" of
    # its trained maximum. It is within 0.75 * theta_i (position 4095.75 against 4095): 0.75 rad for pair 0,
    # and under a quarter radian only from pair 8 on.
    excess = R.angle_at(pi, 16383) - R.largest_trained_angle(inv, 4096)
    np.testing.assert_allclose(excess, 0.75 * inv, rtol=1e-9)
    assert near(excess.max(), 0.75, 2) and np.flatnonzero(excess < 0.25)[0] == 8


def test_example_14_ntk_base_and_slowdowns():
    inv = default_inv()
    assert near(R.ntk_base(1e4, 4, 128), 40889.9, 1)
    ntk, _ = R.rope_frequencies({"head_dim": 128, "rope_theta": 1e4,
                                 "rope_scaling": {"rope_type": "ntk", "factor": 4}})
    rows = {0: (1.0000e+00, 1.000, 16383.00, 4095.00), 16: (7.0323e-02, 1.422, 1152.10, 409.50),
            32: (4.9453e-03, 2.022, 81.02, 40.95), 46: (4.8462e-04, 2.752, 7.94, 5.46),
            56: (9.2222e-05, 3.429, 1.51, 1.29), 63: (2.8870e-05, 4.000, 0.47, 0.47)}
    for i, (theta_new, slowdown, at_target, trained) in rows.items():
        assert float(f"{ntk[i]:.4e}") == theta_new
        assert near(inv[i] / ntk[i], slowdown, 3)
        np.testing.assert_allclose(inv[i] / ntk[i], 4 ** (2 * i / 126), rtol=1e-12)  # s^(2i/(d-2))
        assert near(R.angle_at(ntk, 16383)[i], at_target, 2)
        assert near(R.largest_trained_angle(inv, 4096)[i], trained, 2)


def test_example_15_yarn_table():
    low, high = R.yarn_correction_range(32, 1, 128, 1e4, 4096)
    assert (low, high) == (20, 46)
    yarn, af = R.rope_frequencies({"head_dim": 128, "rope_theta": 1e4, "max_position_embeddings": 16384,
                                   "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                    "original_max_position_embeddings": 4096}})
    inv = default_inv()
    ramp = R.yarn_ramp(low, high, 64)
    rows = {0: (1.000, 1.0000, 6.3), 10: (1.000, 1.0000, 26.5), 20: (1.000, 1.0000, 111.7),
            25: (0.808, 0.8558, 229.4), 30: (0.615, 0.7115, 471.2), 35: (0.423, 0.5673, 967.6),
            40: (0.231, 0.4231, 1986.9), 46: (0.000, 0.2500, 4711.7), 55: (0.000, 0.2500, 17206.0),
            63: (0.000, 0.2500, 54410.1)}
    for i, (r, ratio, wl) in rows.items():
        y = (i - 20) / max(0.001, 46 - 20)  # ggml's rope_yarn_ramp, written out
        naive_ramp = 1 - min(1.0, max(0.0, y))
        assert ramp[i] == pytest.approx(naive_ramp, abs=1e-15) and near(ramp[i], r, 3)
        assert near(yarn[i] / inv[i], ratio, 4)
        np.testing.assert_allclose(yarn[i] / inv[i], 0.25 * (1 - naive_ramp) + naive_ramp, rtol=1e-12)
        assert near(R.wavelengths(inv)[i], wl, 1)
    assert near(af, 1.1386, 4) and near(af ** 2, 1.2965, 4)  # mscale at s = 4, scores x mscale^2


def test_yarn_band_numbers_from_the_vllm_chapter():
    d = lambda n, b=1e4, L0=4096: 128 * math.log(L0 / (n * 2 * math.pi)) / (2 * math.log(b))  # noqa: E731
    assert near(R.yarn_correction_dim(32, 128, 1e4, 4096), 20.94, 2) and near(d(32), 20.94, 2)
    assert near(R.yarn_correction_dim(1, 128, 1e4, 4096), 45.03, 2)
    assert R.yarn_correction_range(32, 1, 128, 1e4, 4096) == (20, 46) == (math.floor(d(32)), math.ceil(d(1)))
    turns = R.turns_within(default_inv(), 4096)
    for i, printed in zip((20, 21, 45, 46), (36.66, 31.75, 1.00, 0.87)):
        assert near(turns[i], printed, 2)
    assert near(R.wavelengths(default_inv())[21], 129, 0) and near(R.wavelengths(default_inv())[45], 4080, 0)
    # gpt-oss ships truncate: false, keeping the fractional ends
    lo, hi = R.yarn_correction_range(32, 1, 64, 150_000, 4096, truncate=False)
    d64 = lambda n: 64 * math.log(4096 / (n * 2 * math.pi)) / (2 * math.log(150_000))  # noqa: E731
    assert (lo, hi) == pytest.approx((d64(32), d64(1)), rel=1e-14) and lo != int(lo)
    assert R.yarn_correction_range(32, 1, 64, 150_000, 4096) == (math.floor(lo), math.ceil(hi))
    ramp = R.yarn_ramp(lo, hi, 32)
    np.testing.assert_allclose(ramp, 1 - np.clip((np.arange(32) - lo) / (hi - lo), 0, 1), rtol=1e-15)
    assert R.yarn_correction_range(32, 1, 128, 5e5, 4096) == (14, 32)
    assert R.yarn_correction_range(32, 1, 128, 5e5, 8192) == (18, 35)


def test_mscale_numbers():
    assert near(R.yarn_mscale(8), 1.2079, 4) and near(R.yarn_mscale(8) ** 2, 1.459, 3)
    assert near(R.yarn_mscale(4), 1.1386, 4) and near(R.yarn_mscale(4) ** 2, 1.2965, 4)
    assert near(1 / R.yarn_mscale(8) ** 2, 0.685, 3)  # effective temperature 31.5% lower
    assert R.yarn_mscale(1) == R.yarn_mscale(0.5) == 1.0
    # DeepSeek-V3: mscale == mscale_all_dim -> cos/sin factor 1; its attention instead scales
    # the softmax by yarn_mscale(40, mscale_all_dim)^2
    assert R.rope_frequencies(load_config("DeepSeek-V3"))[1] == 1.0
    assert R.yarn_mscale(40, 1.0) == pytest.approx(0.1 * math.log(40) + 1)
    # Phi-3.5 longrope: sqrt(1 + ln 32 / ln 4096) ~ 1.19, ~1.42 on the score
    af = R.rope_frequencies(load_config("Phi-3.5-mini-instruct"))[1]
    assert af == pytest.approx(math.sqrt(1 + math.log(131072 / 4096) / math.log(4096)), rel=1e-15)
    assert near(af, 1.19, 2) and near(af ** 2, 1.42, 2)


def test_slowest_pair_at_base_5e5():
    inv = default_inv(5e5)
    assert float(f"{R.wavelengths(inv)[63]:.3g}") == 2.56e6
    assert near(R.turns_within(inv, 8192)[63], 0.0032, 4)
    assert near(360 * R.turns_within(inv, 8192)[63], 1.15, 2)  # degrees
    assert abs(R.turns_within(inv, 8192)[0] - 1300) < 5  # pair 0: "about 1300" turns


def test_pair_16_worked_number_and_relative_score():
    inv = default_inv()
    assert inv[16] == pytest.approx(0.1, rel=1e-14)
    q = np.zeros(128)
    q[16] = 1.0  # pair 16 (NeoX): dims 16 and 80; q = k = (1, 0) before rotation
    scores = []
    for m, n in [(5, 3), (105, 103)]:
        qm = R.apply_rope(q[None], [m], inv)[0]
        kn = R.apply_rope(q[None], [n], inv)[0]
        scores.append(float(qm @ kn))
    assert scores[0] == pytest.approx(math.cos(0.2), abs=1e-7) == pytest.approx(scores[1], abs=1e-7)
    assert round(scores[0], 7) == 0.9800666
    assert not np.allclose(R.apply_rope(q[None], [5], inv), R.apply_rope(q[None], [105], inv))


def test_llama3_regimes_match_naive_bands():
    for name in ("Llama-3.1-8B", "Llama-3.2-1B"):
        c = load_config(name)
        rs = c["rope_scaling"]
        inv = naive_theta(c["rope_theta"], R.rotary_dim(c))
        wl = 2 * math.pi / inv
        L0 = rs["original_max_position_embeddings"]
        naive = ["high" if w < L0 / rs["high_freq_factor"] else "low" if w > L0 / rs["low_freq_factor"]
                 else "medium" for w in wl]
        labels = R.llama3_regimes(c)
        assert list(labels) == naive and {"high", "medium", "low"} <= set(labels)
        scaled, _ = R.rope_frequencies(c)
        np.testing.assert_allclose(scaled[labels == "high"], inv[labels == "high"], rtol=1e-14)
        np.testing.assert_allclose(scaled[labels == "low"], inv[labels == "low"] / rs["factor"], rtol=1e-14)
        mid = labels == "medium"
        assert np.all((scaled[mid] < inv[mid]) & (scaled[mid] > inv[mid] / rs["factor"]))
    with pytest.raises(ValueError, match="rope_type"):
        R.llama3_regimes(load_config("Mistral-7B"))


def vllm_rule(config):
    """vLLM 0.32's _get_and_verify_max_len, transcribed from vllm/config/model.py (rope_parameters
    possibly nested per layer type, as transformers 5 writes them); no Gemma 3 exception here.
    tests/test_vllm.py asks the engine itself."""
    keys = ["max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
            "max_sequence_length", "max_seq_length", "seq_len"]
    derived = min(config[k] for k in keys if config.get(k) is not None)
    rope_parameters = config.get("rope_scaling") or config.get("rope_parameters")
    if rope_parameters and not all(isinstance(v, dict) for v in rope_parameters.values()):
        rope_parameters = {"": rope_parameters}
    if rope_parameters is not None:
        scaling_factor = 1.0
        for rp in rope_parameters.values():
            rope_type = rp.get("rope_type", rp.get("type", "default"))  # vLLM patches type -> rope_type
            if rope_type not in ("su", "longrope", "llama3", "yarn", "deepseek_yarn",
                                 "deepseek_llama_scaling"):
                scaling_factor = rp.get("factor", scaling_factor)
        if scaling_factor is None:
            scaling_factor = 1.0
        derived *= scaling_factor
    return int(derived)


def test_derived_max_model_len_follows_vllm():
    expected = {"Llama-3.1-8B": 131072, "Llama-3.2-1B": 131072, "Qwen2.5-7B-Instruct": 32768,
                "DeepSeek-V3": 163840, "gpt-oss-20b": 131072, "Phi-3.5-mini-instruct": 131072,
                "Gemma-3-27B": 131072, "Mistral-7B": 32768}
    for name, n in expected.items():
        c = load_config(name)
        assert R.derived_max_model_len(c) == n
        if name != "Gemma-3-27B":  # vLLM skips Gemma 3 (its 128K is already scaled)
            assert vllm_rule(c) == n
    assert vllm_rule(load_config("Gemma-3-27B")) == 8 * 131072  # what the rule alone would say
    for config, _ in [c[1:] for c in CASES]:
        assert R.derived_max_model_len(config) == vllm_rule(config)
        assert R.derived_max_model_len(as_v5(config)) == vllm_rule(config)
    nested = {"max_position_embeddings": 4096, "head_dim": 64, "rope_parameters": {
        "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4},
        "full_attention": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048}}}
    assert R.derived_max_model_len(nested) == vllm_rule(nested) == 8192
    qwen = load_config("Qwen2.5-7B-Instruct")  # YaRN: max_position_embeddings is the length served
    qwen["max_position_embeddings"] = 131072
    assert R.derived_max_model_len(qwen) == 131072


def test_vllm_max_model_len_default_request_and_refusal():
    """vLLM 0.32 serves longrope at L0 unless asked (Phi-3.5-mini: 4,096 of 131,072); a request
    past the derived length is refused (the old YaRN rule said Qwen2.5's 131,072 was fine)."""
    phi, qwen = load_config("Phi-3.5-mini-instruct"), load_config("Qwen2.5-7B-Instruct")
    assert R.vllm_max_model_len(phi) == 4096 and R.derived_max_model_len(phi) == 131072
    assert R.vllm_max_model_len(phi, 131072) == 131072
    assert R.vllm_max_model_len(qwen) == 32768 and R.vllm_max_model_len(qwen, 32768) == 32768
    raises_naming(lambda: R.vllm_max_model_len(qwen, 131072), "VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    assert R.vllm_max_model_len(qwen, 131072, allow_long=True) == 131072
    assert R.vllm_max_model_len({"max_position_embeddings": 4096, "model_max_length": 8192},
                                6000) == 6000
    linear = {"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "linear", "factor": 4}}
    assert R.vllm_max_model_len(linear) == 16384
    raises_naming(lambda: R.vllm_max_model_len(linear, 0), "requested")
    raises_naming(lambda: R.vllm_max_model_len(linear, 2.5), "requested")
    for name in ("Llama-3.1-8B", "Mistral-7B", "DeepSeek-V3", "gpt-oss-20b"):
        c = load_config(name)
        assert R.vllm_max_model_len(c) == R.derived_max_model_len(c)


# ---------------------------------------------------------------------------------------------
# apply_rope
# ---------------------------------------------------------------------------------------------

def naive_rope(x, positions, inv, style, af=1.0):
    """Rotate each pair by a 2x2 matrix, one position and one pair at a time."""
    out = np.array(x, dtype=np.float64)
    h = len(inv)
    for j, m in enumerate(positions):
        for i in range(h):
            a, b = (i, i + h) if style == "neox" else (2 * i, 2 * i + 1)
            c, s = math.cos(m * inv[i]), math.sin(m * inv[i])
            xa, xb = x[..., j, a], x[..., j, b]
            out[..., j, a], out[..., j, b] = af * (c * xa - s * xb), af * (s * xa + c * xb)
    return out


@pytest.mark.parametrize("style", ["neox", "gptj"])
def test_apply_rope_matches_naive_rotation(style):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 7, 16))
    positions = [0, 1, 5, 17, 100, 4095, 131071]
    for inv, af in [(naive_theta(1e4, 16), 1.0), (naive_theta(5e5, 10), 1.3)]:  # full, partial (10 of 16)
        got = R.apply_rope(x, positions, inv, style=style, attention_factor=af)
        np.testing.assert_allclose(got, naive_rope(x, positions, inv, style, af), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got[..., 2 * len(inv):], x[..., 2 * len(inv):])  # tail passes
    x32 = x.astype(np.float32)
    assert R.apply_rope(x32, positions, naive_theta(1e4, 16)).dtype == np.float32


@given(st.integers(0, 200_000), st.integers(0, 200_000), st.integers(-50_000, 50_000))
def test_score_depends_only_on_distance(m, n, shift):
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((1, 64)), rng.standard_normal((1, 64))
    inv = naive_theta(1e4, 64)
    score = lambda a, b: float(R.apply_rope(q, [a], inv)[0] @ R.apply_rope(k, [b], inv)[0])  # noqa: E731
    m2, n2 = m + abs(shift), n + abs(shift)
    assert score(m, n) == pytest.approx(score(m2, n2), abs=1e-9)


def test_neox_and_gptj_agree_after_permuting_weight_rows():
    rng = np.random.default_rng(1)
    d_model, d, r, n = 32, 24, 16, 9
    hidden = rng.standard_normal((n, d_model))
    w_q, w_k = rng.standard_normal((d, d_model)), rng.standard_normal((d, d_model))
    inv = naive_theta(1e4, r)
    positions = np.arange(n) * 37
    # a NeoX checkpoint and the same model converted to GPT-J: q/k weight rows permuted
    order = np.array([v for i in range(r // 2) for v in (i, i + r // 2)] + list(range(r, d)))
    np.testing.assert_array_equal(order, R.neox_to_gptj_order(r, d))
    q_neox = R.apply_rope(hidden @ w_q.T, positions, inv, style="neox")
    k_neox = R.apply_rope(hidden @ w_k.T, positions, inv, style="neox")
    q_gptj = R.apply_rope(hidden @ w_q[order].T, positions, inv, style="gptj")
    k_gptj = R.apply_rope(hidden @ w_k[order].T, positions, inv, style="gptj")
    np.testing.assert_allclose(q_gptj, q_neox[:, order], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(q_gptj @ k_gptj.T, q_neox @ k_neox.T, rtol=1e-10, atol=1e-10)


def test_mixing_up_the_pairing_breaks_things():
    rng = np.random.default_rng(2)
    q, k = rng.standard_normal((1, 64)), rng.standard_normal((1, 64))
    inv = naive_theta(1e4, 64)

    def score(m, n, q_style, k_style):
        return float(R.apply_rope(q, [m], inv, style=q_style)[0] @ R.apply_rope(k, [n], inv, style=k_style)[0])

    # keys cached under one pairing, queries rotated under the other: the score now depends on
    # absolute positions, not only on m - n
    mixed = [score(m, m - 3, "neox", "gptj") for m in (3, 50, 1000, 20000)]
    assert np.ptp(mixed) > 0.5
    same = [score(m, m - 3, "neox", "neox") for m in (3, 50, 1000, 20000)]
    assert np.ptp(same) < 1e-9
    # GPT-J-laid-out weights run with the NeoX pairing: every score is still relative, but the
    # frequencies land on the wrong dimensions, so the scores are not the model's ("fluent garbage")
    order = R.neox_to_gptj_order(64)
    true = [score(m, 0, "neox", "neox") for m in range(0, 64)]
    q_g, k_g = q[:, order], k[:, order]
    wrong = [float(R.apply_rope(q_g, [m], inv)[0] @ R.apply_rope(k_g, [0], inv)[0]) for m in range(0, 64)]
    assert wrong[0] == pytest.approx(true[0])  # at distance 0 nothing has turned
    assert np.max(np.abs(np.subtract(wrong, true))) > 1.0


def test_apply_rope_rejects_bad_input():
    inv = naive_theta(1e4, 8)
    x = np.ones((3, 8))
    with pytest.raises(ValueError, match="positions"):
        R.apply_rope(x, [0, 1], inv)
    with pytest.raises(ValueError, match="inv_freq"):
        R.apply_rope(x, [0, 1, 2], naive_theta(1e4, 16))
    with pytest.raises(ValueError, match="style"):
        R.apply_rope(x, [0, 1, 2], inv, style="gpt-j")
    with pytest.raises(ValueError, match="attention_factor"):
        R.apply_rope(x, [0, 1, 2], inv, attention_factor=-1.0)
    with pytest.raises(ValueError, match="x must"):
        R.apply_rope(np.ones(8), [0], inv)
    with pytest.raises(ValueError, match="positions"):
        R.apply_rope(x, [0, np.nan, 2], inv)


# ---------------------------------------------------------------------------------------------
# cos/sin tables
# ---------------------------------------------------------------------------------------------

@needs("torch")
def test_table_131072_within_1e6_of_float64_and_float32_angles_are_not():
    inv = default_inv(5e5)
    n = 131072
    cos, sin = R.cos_sin_table(inv, n)
    assert cos.dtype == sin.dtype == np.float32 and cos.shape == (n, 64)
    ref = np.multiply.outer(np.arange(n, dtype=np.float64), inv)
    assert np.abs(cos - np.cos(ref)).max() <= 1e-6
    assert np.abs(sin - np.sin(ref)).max() <= 1e-6
    # the engines' float32 table (HF: inv_freq.float() @ position_ids.float()), near position 131072
    tail = np.arange(n - 2048, n)
    angles32 = np.multiply.outer(tail.astype(np.float32), inv.astype(np.float32))
    err32 = max(np.abs(np.cos(angles32) - np.cos(ref[tail])).max(),
                np.abs(np.sin(angles32) - np.sin(ref[tail])).max())
    assert 3e-3 < err32 < 5e-2  # about 1e-2
    torch_angles = torch.outer(torch.from_numpy(tail).float(), torch.from_numpy(inv).float())
    assert torch.cos(torch_angles).double().sub(torch.from_numpy(np.cos(ref[tail]))).abs().max() > 3e-3


def test_table_applies_attention_factor_and_agrees_with_apply_rope():
    config = load_config("gpt-oss-20b")
    inv, af = R.rope_frequencies(config, seq_len=300)
    cos, sin = R.cos_sin_table(inv, 300, af)
    ref = np.multiply.outer(np.arange(300.0), inv)
    np.testing.assert_allclose(cos, af * np.cos(ref), atol=2e-6)
    x = np.random.default_rng(3).standard_normal((300, 64))
    h = 32
    via_table = np.concatenate([x[:, :h] * cos - x[:, h:] * sin, x[:, h:] * cos + x[:, :h] * sin], axis=1)
    np.testing.assert_allclose(via_table, R.apply_rope(x, np.arange(300), inv, attention_factor=af), atol=1e-5)


def test_rope_cos_sin_is_cached_read_only_and_follows_seq_len():
    config = load_config("Phi-3.5-mini-instruct")
    a = R.rope_cos_sin(config, 5000)
    assert R.rope_cos_sin(copy.deepcopy(config), 5000) is a  # cached per (config, length)
    with pytest.raises(ValueError):
        a[0][0, 0] = 1.0  # read-only
    inv_long, af = R.rope_frequencies(config, seq_len=5000)  # > L0 = 4096: long factors
    np.testing.assert_array_equal(a[0], R.cos_sin_table(inv_long, 5000, af)[0])
    short = R.rope_cos_sin(config, 100)
    inv_short, _ = R.rope_frequencies(config, seq_len=100)
    np.testing.assert_array_equal(short[1], R.cos_sin_table(inv_short, 100, af)[1])
    assert R.rope_cos_sin(config, 5000, layer_type=None) is a
    g = load_config("Gemma-3-27B")
    assert not np.array_equal(R.rope_cos_sin(g, 64)[0], R.rope_cos_sin(g, 64, layer_type="sliding_attention")[0])


# ---------------------------------------------------------------------------------------------
# Malformed configs fail loudly; no table ever holds NaN or Inf
# ---------------------------------------------------------------------------------------------

def cfg(rope, **top):
    c = {"head_dim": 128, "rope_theta": 1e4, "max_position_embeddings": 32768}
    c.update(top)
    if rope is not None:
        c["rope_scaling"] = rope
    return c


YARN = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096}
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}
LONGROPE = {"rope_type": "longrope", "long_factor": LONG64, "short_factor": SHORT64,
            "original_max_position_embeddings": 4096}
MALFORMED = [  # (id, config, the key the message must name)
    ("unknown type", cfg({"rope_type": "ntk-by-parts", "factor": 2.0}), "rope_type"),
    ("type and rope_type disagree", cfg({"rope_type": "linear", "type": "yarn", "factor": 2.0}), "rope_type"),
    ("linear without factor", cfg({"rope_type": "linear"}), "factor"),
    ("dynamic without factor", cfg({"type": "dynamic"}), "factor"),
    ("ntk without factor", cfg({"rope_type": "ntk"}), "factor"),
    ("llama3 without factor", cfg({k: v for k, v in LLAMA3.items() if k != "factor"}), "factor"),
    ("yarn without factor", cfg({k: v for k, v in YARN.items() if k != "factor"}), "factor"),
    ("factor < 1", cfg({"rope_type": "linear", "factor": 0.5}), "factor"),
    ("yarn factor < 1", cfg({**YARN, "factor": 0.25}), "factor"),
    ("factor is a string", cfg({"rope_type": "linear", "factor": "8"}), "factor"),
    ("factor is a bool", cfg({"rope_type": "dynamic", "factor": True}), "factor"),
    ("factor is NaN", cfg({"rope_type": "linear", "factor": float("nan")}), "factor"),
    ("factor is inf", cfg({**YARN, "factor": float("inf")}), "factor"),
    ("llama3 low >= high", cfg({**LLAMA3, "low_freq_factor": 4.0, "high_freq_factor": 4.0}), "low_freq_factor"),
    ("llama3 low > high", cfg({**LLAMA3, "low_freq_factor": 8.0}), "high_freq_factor"),
    ("llama3 missing low", cfg({k: v for k, v in LLAMA3.items() if k != "low_freq_factor"}), "low_freq_factor"),
    ("llama3 missing high", cfg({k: v for k, v in LLAMA3.items() if k != "high_freq_factor"}), "high_freq_factor"),
    ("llama3 low_freq_factor 0", cfg({**LLAMA3, "low_freq_factor": 0}), "low_freq_factor"),
    ("llama3 missing L0", cfg({k: v for k, v in LLAMA3.items() if k != "original_max_position_embeddings"}),
     "original_max_position_embeddings"),
    ("yarn missing L0", cfg({k: v for k, v in YARN.items() if k != "original_max_position_embeddings"}),
     "original_max_position_embeddings"),
    ("yarn L0 not an integer", cfg({**YARN, "original_max_position_embeddings": 4096.5}),
     "original_max_position_embeddings"),
    ("beta_fast < beta_slow", cfg({**YARN, "beta_fast": 1.0, "beta_slow": 32.0}), "beta_fast"),
    ("negative beta", cfg({**YARN, "beta_slow": -1.0}), "beta_slow"),
    ("negative attention_factor", cfg({**YARN, "attention_factor": -0.5}), "attention_factor"),
    ("longrope negative attention_factor", cfg({**LONGROPE, "attention_factor": -1.0}), "attention_factor"),
    ("yarn truncate not a bool", cfg({**YARN, "truncate": "false"}), "truncate"),
    ("longrope long list too short", cfg({**LONGROPE, "long_factor": LONG64[:-1]}), "long_factor"),
    ("longrope short list too long", cfg({**LONGROPE, "short_factor": SHORT64 + [1.0]}), "short_factor"),
    ("longrope missing long list", cfg({k: v for k, v in LONGROPE.items() if k != "long_factor"}), "long_factor"),
    ("longrope list entry not a number", cfg({**LONGROPE, "long_factor": LONG64[:-1] + ["x"]}), "long_factor"),
    ("longrope list entry zero", cfg({**LONGROPE, "short_factor": SHORT64[:-1] + [0.0]}), "short_factor"),
    ("longrope list is a number", cfg({**LONGROPE, "short_factor": 1.0}), "short_factor"),
    ("odd rotary dim (partial)", cfg(None, head_dim=10, partial_rotary_factor=0.5), "partial_rotary_factor"),
    ("odd head_dim", cfg(None, head_dim=63), "head_dim"),
    ("partial_rotary_factor > 1", cfg(None, partial_rotary_factor=1.5), "partial_rotary_factor"),
    ("partial_rotary_factor 0", cfg(None, partial_rotary_factor=0.0), "partial_rotary_factor"),
    ("no head dims", {"rope_theta": 1e4}, "head_dim"),
    ("hidden not divisible", {"hidden_size": 100, "num_attention_heads": 3}, "hidden_size"),
    ("rope_theta a string", cfg(None, rope_theta="10000"), "rope_theta"),
    ("rope_theta <= 1", cfg(None, rope_theta=1.0), "rope_theta"),
    ("v5 rope_theta negative", {"head_dim": 64, "rope_parameters": {"rope_type": "default", "rope_theta": -5.0}},
     "rope_parameters.rope_theta"),
    ("rope_scaling not a dict", cfg("yarn"), "rope_scaling"),
    ("rope_type not a string", cfg({"rope_type": 3, "factor": 2.0}), "rope_type"),
    ("dynamic without max_position_embeddings",
     {"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
     "max_position_embeddings"),
    ("both layouts disagree", {**cfg({"rope_type": "linear", "factor": 2.0}),
                               "rope_parameters": {"rope_type": "linear", "factor": 4.0}}, "factor"),
    ("ntk at rotary dim 2", cfg({"rope_type": "ntk", "factor": 2.0}, head_dim=2), "rotary dim"),
]


@pytest.mark.parametrize("config, key", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_config_raises_naming_the_key(config, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        R.rope_frequencies(config)


def test_per_layer_rope_parameters_need_a_known_layer_type():
    config = {"head_dim": 64, "rope_parameters": {"full_attention": {"rope_type": "default"},
                                                  "sliding_attention": None}}
    assert R.rope_frequencies(config)[0].shape == (32,)  # full_attention is the default
    with pytest.raises(ValueError, match="layer_type"):
        R.rope_frequencies(config, layer_type="chunked_attention")
    with pytest.raises(ValueError, match="sliding_attention"):
        R.rope_frequencies(config, layer_type="sliding_attention")  # null: a NoPE layer


def test_other_bad_arguments_raise():
    with pytest.raises(ValueError, match="config"):
        R.rope_frequencies([("rope_theta", 1e4)])
    with pytest.raises(ValueError, match="seq_len"):
        R.rope_frequencies(cfg(None), seq_len=0)
    with pytest.raises(ValueError, match="seq_len"):
        R.rope_frequencies(cfg(None), seq_len=1.5)
    with pytest.raises(ValueError, match="n_positions"):
        R.cos_sin_table(naive_theta(1e4, 8), 0)
    with pytest.raises(ValueError, match="rope_theta must be finite"):  # the key, not just "config"
        R.rope_cos_sin({"head_dim": 8, "rope_theta": float("nan")}, 4)
    with pytest.raises(ValueError, match="factor"):
        R.ntk_base(1e4, 0.5, 128)
    with pytest.raises(ValueError, match="truncate"):
        R.yarn_correction_range(32, 1, 128, 1e4, 4096, truncate=1)


NUMBERS = st.floats(allow_nan=False, allow_infinity=False, min_value=1.0, max_value=1e4)
ANYTHING = st.one_of(st.none(), st.booleans(), st.text(max_size=3),
                     st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**5))


# The keys each rope type reads (HF 5.23's _validate_<type>_rope_parameters, plus our "ntk"); a
# config carrying another type's keys is an error now (test_hf_warns_exactly_where_we_raise).
READS = {"default": set(), "linear": {"factor"}, "ntk": {"factor"}, "dynamic": {"factor"},
         "yarn": {"factor", "original_max_position_embeddings", "attention_factor", "beta_fast",
                  "beta_slow", "mscale", "mscale_all_dim", "truncate"},
         "llama3": {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"},
         "longrope": {"short_factor", "long_factor", "original_max_position_embeddings",
                      "attention_factor", "factor"}}


def hf_yarn_band(beta_fast, beta_slow, r, b, L0, truncate=True):
    """HF's find_correction_range, transcribed from _compute_yarn_parameters (no checks)."""
    corr = lambda n: r * math.log(L0 / (n * 2 * math.pi)) / (2 * math.log(b))  # noqa: E731
    low, high = corr(beta_fast), corr(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, r - 1)


@st.composite
def valid_configs(draw):
    rope_type = draw(st.sampled_from(R.ROPE_TYPES))
    head_dim = draw(st.sampled_from([4, 8, 32, 64, 96, 128, 256]))
    prf = draw(st.sampled_from([None, 1.0, 0.5, 0.25]))
    r = int(head_dim * (prf or 1.0))
    if r < 4 or r % 2:
        prf, r = None, head_dim
    L0 = draw(st.integers(2, 65536))
    rope = {"rope_type": rope_type, "factor": draw(NUMBERS),
            "original_max_position_embeddings": L0,
            "low_freq_factor": 1.0, "high_freq_factor": draw(st.floats(1.001, 64.0)),
            "long_factor": draw(st.lists(st.floats(1e-3, 1e3), min_size=r // 2, max_size=r // 2)),
            "short_factor": draw(st.lists(st.floats(1e-3, 1e3), min_size=r // 2, max_size=r // 2)),
            "beta_fast": draw(st.floats(1.0, 128.0)), "beta_slow": draw(st.floats(0.01, 1.0)),
            "truncate": draw(st.booleans())}
    if draw(st.booleans()):
        rope["mscale"], rope["mscale_all_dim"] = draw(st.floats(0.0, 2.0)), draw(st.floats(0.0, 2.0))
    rope = {k: v for k, v in rope.items() if k == "rope_type" or k in READS[rope_type]}
    config = {"head_dim": head_dim, "rope_theta": draw(st.floats(1.0001, 1e9)),
              "max_position_embeddings": draw(st.integers(1, 10**7)), "rope_scaling": rope}
    if rope_type == "yarn":  # an empty band (L0 too short or too long for the base) is an error
        low, high = hf_yarn_band(rope["beta_fast"], rope["beta_slow"], r, config["rope_theta"], L0,
                                 rope["truncate"])
        assume(low <= high)
    if prf is not None:
        config["partial_rotary_factor"] = prf
    return config


@given(valid_configs(), st.one_of(st.none(), st.integers(1, 10**7)))
def test_property_valid_configs_give_finite_tables(config, seq_len):
    inv, af = R.rope_frequencies(config, seq_len)
    assert inv.shape == (R.rotary_dim(config) // 2,)
    assert np.all(np.isfinite(inv)) and np.all(inv > 0) and math.isfinite(af) and af >= 0
    cos, sin = R.cos_sin_table(inv, 64, af)
    assert np.all(np.isfinite(cos)) and np.all(np.isfinite(sin))
    x = R.apply_rope(np.ones((3, R.rotary_dim(config))), [0, 1000, 10**6], inv, attention_factor=af)
    assert np.all(np.isfinite(x))


@given(valid_configs(), st.sampled_from(["factor", "original_max_position_embeddings", "low_freq_factor",
                                         "high_freq_factor", "beta_fast", "beta_slow", "mscale",
                                         "attention_factor", "long_factor", "rope_theta", "head_dim",
                                         "partial_rotary_factor", "max_position_embeddings"]), ANYTHING)
def test_property_corrupted_configs_raise_or_stay_finite(config, key, value):
    if key in ("rope_theta", "head_dim", "partial_rotary_factor", "max_position_embeddings"):
        config[key] = value
    else:
        config["rope_scaling"][key] = value
    try:
        inv, af = R.rope_frequencies(config, seq_len=8192)
    except ValueError:
        return  # loud, as intended
    assert np.all(np.isfinite(inv)) and np.all(inv > 0) and math.isfinite(af)
    cos, sin = R.cos_sin_table(inv, 16, af)
    assert np.all(np.isfinite(cos)) and np.all(np.isfinite(sin))


def test_layouts_and_legacy_type_agree():
    base = cfg(dict(YARN, mscale=0.8, mscale_all_dim=1.0))
    legacy = cfg({("type" if k == "rope_type" else k): v for k, v in base["rope_scaling"].items()})
    v5 = as_v5(base)
    both = {**base, "rope_parameters": dict(base["rope_scaling"])}  # both keys, agreeing
    results = [R.rope_frequencies(c) for c in (base, legacy, v5, both)]
    for inv, af in results[1:]:
        np.testing.assert_array_equal(inv, results[0][0])
        assert af == results[0][1]
    assert R.rope_parameters(legacy)["rope_type"] == "yarn"
    su = cfg({**LONGROPE, "type": "su", "rope_type": None})
    np.testing.assert_array_equal(R.rope_frequencies(su)[0], R.rope_frequencies(cfg(LONGROPE))[0])
    assert R.rope_frequencies({"head_dim": 16})[0][1] == pytest.approx(1e4 ** (-2 / 16))  # HF default theta


# ---------------------------------------------------------------------------------------------
# Notebook helpers added for notebooks 07/08: trained arcs and float32 angle tables
# ---------------------------------------------------------------------------------------------

def test_outside_trained_arc_matches_a_loop_over_pairs():
    inv = naive_theta(10_000.0, 128)
    for m in (0, 4095, 5000, 16383, 40000):
        expected = []
        for theta in inv:
            turned = 2 * math.pi / theta <= 4096  # completed a turn: every angle seen
            expected.append(not turned and math.fmod(m * theta, 2 * math.pi) > 4095 * theta)
        np.testing.assert_array_equal(R.outside_trained_arc(inv, m, 4096), expected)
    assert not R.outside_trained_arc(inv, 4095, 4096).any()  # the trained range itself
    # notebook 07 at 16383: pair 46 has wrapped back inside (21.85 - 2 pi * 3 = 3.0 < 5.46)
    out = R.outside_trained_arc(inv, 16383, 4096)
    assert not out[46] and out[52] and out[63] and not out[:46].any()


def test_trained_arc_overshoot_pi_ntk_and_unscaled():
    inv = naive_theta(10_000.0, 128)
    # unscaled at 16383: pair 63 passes 0.47 by 16383 - 4095 = 12288 ticks; turning pairs: 0
    over = R.trained_arc_overshoot(inv, 16383, 4096)
    assert over[63] == pytest.approx(12288 * inv[63]) and np.all(over[:46] == 0)
    # PI at s = 4: 16383 / 4 = 4095.75, 0.75 ticks beyond for every never-turning pair
    pi = R.trained_arc_overshoot(inv / 4, 16383, 4096, trained_inv_freq=inv)
    np.testing.assert_allclose(pi[46:], 0.75 * inv[46:])
    # NTK-aware (notebook 08): pair 46 reaches 7.94 against 5.46 trained
    ntk = naive_theta(R.ntk_base(10_000.0, 4, 128), 128)
    over = R.trained_arc_overshoot(ntk, 16383, 4096, trained_inv_freq=inv)
    assert over[46] == pytest.approx(16383 * ntk[46] - 4095 * inv[46])
    assert round(16383 * ntk[46], 2) == 7.94 and round(4095 * inv[46], 2) == 5.46
    with pytest.raises(ValueError, match="trained_inv_freq"):
        R.trained_arc_overshoot(inv, 1, 4096, trained_inv_freq=inv[:3])


# The numbers the notebook 07-08 widgets show, each computed here once (issue 31): checked by
# hand and against HuggingFace's YaRN frequencies

def test_clock_angle_is_the_angle_less_its_whole_turns():
    inv = naive_theta(10_000.0, 128)
    for m in (0, 1, 4095, 16383, 65535, 2.5):
        got = R.clock_angle(inv, m)
        np.testing.assert_array_equal(got, [math.fmod(m * t, 2 * math.pi) for t in inv])
        assert np.all((got >= 0) & (got < 2 * math.pi))
    assert f"{R.clock_angle(inv, 16383)[0]:.2f}" == "2.74"  # notebook 07: pair 0 at m = 16,383
    # pair 46 has wrapped back inside its trained arc (21.85 - 3 turns = 3.00 < 5.46)
    assert R.clock_angle(inv, 16383)[46] == pytest.approx(16383 * inv[46] - 6 * math.pi)


def test_frequency_ratio_and_slowdown_of_pi_and_ntk():
    inv = naive_theta(10_000.0, 128)
    head = {"head_dim": 128, "rope_theta": 1e4}
    pi, _ = R.rope_frequencies({**head, "rope_scaling": {"rope_type": "linear", "factor": 4.0}})
    np.testing.assert_allclose(R.frequency_ratio(pi, inv), 0.25, rtol=1e-15)
    np.testing.assert_allclose(R.slowdown(pi, inv), 4.0, rtol=1e-15)
    ntk, _ = R.rope_frequencies({**head, "rope_scaling": {"rope_type": "ntk", "factor": 4.0}})
    i = np.arange(64)
    np.testing.assert_allclose(R.slowdown(ntk, inv), 4.0 ** (2 * i / 126), rtol=1e-12)  # s^(2i/(r-2))
    np.testing.assert_allclose(R.frequency_ratio(ntk, inv), 4.0 ** (-2 * i / 126), rtol=1e-12)
    assert R.slowdown(ntk, inv)[0] == 1.0 and f"{R.slowdown(ntk, inv)[63]:.2f}" == "4.00"
    with pytest.raises(ValueError, match=r"^original_inv_freq has shape \(3,\), inv_freq \(64,\)"):
        R.frequency_ratio(ntk, inv[:3])


YARN_SETTINGS = [  # (s, b, L0, r, truncate): notebook 08, gpt-oss, Llama 3's base, no pair divided
    (4.0, 1e4, 4096, 128, True), (32.0, 150_000, 4096, 64, False), (8.0, 5e5, 8192, 128, True),
    (4.0, 1e4, 65536, 128, True), (40.0, 1e4, 4096, 64, True), (2.0, 1e6, 32768, 128, False)]


@pytest.mark.parametrize("s, b, L0, r, truncate", YARN_SETTINGS)
def test_yarn_pair_sets_by_hand(s, b, L0, r, truncate):
    low, high = R.yarn_correction_range(32, 1, r, b, L0, truncate)
    sets = R.yarn_pair_sets(low, high, r // 2)
    pairs = range(r // 2)
    assert sets.kept.tolist() == [i for i in pairs if i <= low]
    assert sets.divided.tolist() == [i for i in pairs if i >= high]
    assert sets.ramped.tolist() == [i for i in pairs if low < i < high]
    assert all(a.dtype.kind == "i" for a in (sets.kept, sets.ramped, sets.divided))
    if (s, b, L0) == (4.0, 1e4, 4096):  # notebook 08's readout: kept 0-20, ramp 21-45, 46-63 / s
        assert (sets.kept[-1], sets.ramped[0], sets.ramped[-1], sets.divided[0]) == (20, 21, 45, 46)
    equal = R.yarn_pair_sets(3, 3, 8)  # HF's +0.001 on equal ends: nothing ramped
    assert (equal.kept.tolist(), equal.ramped.size, equal.divided.tolist()) == ([0, 1, 2, 3], 0, [4, 5, 6, 7])


@needs("torch")
@pytest.mark.parametrize("s, b, L0, r, truncate", YARN_SETTINGS)
def test_yarn_pair_sets_are_the_pairs_hf_keeps_and_divides(s, b, L0, r, truncate):
    """HF's YaRN frequencies: a kept pair turns at theta_i, a divided one at theta_i / s."""
    config = {"head_dim": r, "rope_theta": b, "max_position_embeddings": int(s * L0),
              "rope_scaling": {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": L0,
                               "truncate": truncate}}
    hf, _ = hf_frequencies(config)
    theta = naive_theta(b, r)
    sets = R.yarn_pair_sets(*R.yarn_correction_range(32, 1, r, b, L0, truncate), r // 2)
    kept = np.flatnonzero(np.isclose(hf, theta, rtol=1e-6, atol=0))
    divided = np.flatnonzero(np.isclose(hf, theta / s, rtol=1e-6, atol=0))
    np.testing.assert_array_equal(sets.kept, kept)
    np.testing.assert_array_equal(sets.divided, divided)
    np.testing.assert_array_equal(sets.ramped, np.setdiff1d(np.arange(r // 2), np.union1d(kept, divided)))


def test_largest_overshoot_is_the_worst_pair():
    inv = naive_theta(10_000.0, 128)
    ntk = naive_theta(R.ntk_base(10_000.0, 4, 128), 128)
    # by hand: pairs that never turn in 4,096 positions, how far past 4,095 theta_i they reach
    by_hand = [max(16383 * t - 4095 * t0, 0.0) if 2 * math.pi / t0 > 4096 else 0.0
               for t, t0 in zip(ntk, inv)]
    worst = by_hand.index(max(by_hand))
    largest, pair = R.largest_overshoot(ntk, 16383, 4096, trained_inv_freq=inv)
    assert pair == worst == 46 and largest == pytest.approx(by_hand[46], rel=1e-12)
    assert f"{largest:.3g}" == "2.48"  # notebook 08: 7.94 - 5.46
    pi = R.largest_overshoot(inv / 4, 16383, 4096, trained_inv_freq=inv)
    assert pi == (pytest.approx(0.75 * inv[46]), 46)  # 0.75 ticks past, largest at the fastest never-turning pair
    assert R.largest_overshoot(inv, 4095, 4096) == (0.0, None)  # the trained range itself


def test_rotary_score_scale_is_what_a_scaled_table_does_to_q_dot_k():
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal(2), rng.standard_normal(2)

    def rotate(x, angle, factor):  # one pair turned by a cos/sin table that carries factor
        c, s_ = factor * math.cos(angle), factor * math.sin(angle)
        return np.array([c * x[0] - s_ * x[1], s_ * x[0] + c * x[1]])

    for mu in (R.yarn_mscale(4.0), R.yarn_mscale(8.0), 0.5):
        ratio = (rotate(q, 1.3, mu) @ rotate(k, 0.4, mu)) / (rotate(q, 1.3, 1) @ rotate(k, 0.4, 1))
        assert R.rotary_score_scale(mu) == pytest.approx(ratio, rel=1e-12)
    assert f"{R.rotary_score_scale(R.yarn_mscale(4.0)):.4f}" == "1.2965"  # notebook 08
    assert f"{R.rotary_score_scale(R.yarn_mscale(8.0)):.3f}" == "1.459"


def test_target_length():
    assert R.target_length(4.0, 4096) == 16384 and R.target_length(4.5, 4096) == 18432
    assert R.target_length(1, 4096) == 4096 and isinstance(R.target_length(4.0, 4096), int)
    for name in ("gpt-oss-20b", "DeepSeek-V3", "Phi-3.5-mini-instruct"):  # s L0 is their length
        sp = R.scaling_parameters(load_config(name))
        assert R.target_length(sp.factor, sp.original_max) == load_config(name)["max_position_embeddings"]
    with pytest.raises(ValueError, match=r"^factor x original_max_position_embeddings = 1e\+300"):
        R.target_length(1e300, 4096)


def test_float32_angle_table_carries_the_float32_angle_error():
    inv, af = R.rope_frequencies(load_config("Mistral-7B"))
    cos32, sin32 = R.float32_angle_table(inv, 131072, af)
    assert cos32.dtype == np.float32 and cos32.shape == (131072, 64)
    exact = np.multiply.outer(np.arange(131072, dtype=np.float64), inv)
    err = np.abs(cos32 - np.cos(exact)).max()
    assert 5e-3 < err < 1.1e-2  # up to 1/128 rad from float32 spacing 1/64 near 131072
    cos, _ = R.cos_sin_table(inv, 131072, af)
    assert np.abs(cos - np.cos(exact)).max() < 5e-7
    np.testing.assert_allclose(cos32[:64], np.cos(exact[:64]), atol=1e-5)  # small m: fine
    c, s = R.float32_angle_table(inv, 4, 2.0)
    np.testing.assert_allclose(c[1], 2 * np.cos(inv), rtol=1e-6)


def test_float32_angle_error_splits_the_two_roundings():
    """Notebook 07's float32 table: below 2^17 the grid is 1/128, so the product's rounding is at
    most 1/256; pair 0 (theta = 1) has no error; pair 1 carries the largest, about 0.0078 rad,
    half of it from theta_1 rounded to float32 before the multiply."""
    n = 131072
    inv, _ = R.rope_frequencies(load_config("Mistral-7B"))
    e = R.float32_angle_error(inv, n)
    m = np.arange(n, dtype=np.float64)
    angle32 = np.multiply.outer(m.astype(np.float32), inv.astype(np.float32)).astype(np.float64)
    err = np.abs(angle32 - np.multiply.outer(m, inv))  # written out: the whole table at once
    np.testing.assert_array_equal(e.total, err.max(axis=0))
    np.testing.assert_array_equal(e.at_position, err.argmax(axis=0))
    np.testing.assert_array_equal(e.from_theta, (n - 1) * np.abs(inv.astype(np.float32) - inv))
    assert np.spacing(np.float32(n - 1)) == 1 / 128 and np.spacing(np.float32(n)) == 1 / 64
    assert np.all(e.from_product <= e.product_bound) and e.product_bound.max() == 1 / 256
    assert np.all(e.total <= e.from_theta + e.from_product + 1e-12)
    assert e.total[0] == e.from_theta[0] == e.from_product[0] == 0.0  # theta_0 = 1: exact
    assert e.total.argmax() == 1 and near(e.total[1], 0.0078, 4) and e.at_position[1] == 131056
    assert near(e.from_theta[1], 0.0039, 4) and e.from_theta[1] > 0.99 / 256
    llama, _ = R.rope_frequencies(load_config("Llama-3.1-8B"), seq_len=n)
    e31 = R.float32_angle_error(llama, n)
    assert e31.total.argmax() == 2 and near(e31.total.max(), 0.0063, 4) and e31.total[0] == 0.0
    small = R.float32_angle_error(inv, 64)  # short tables: errors far below a milliradian
    assert small.total.max() < 1e-4 and small.at_position.dtype.kind == "i"


@needs("torch")
def test_float32_angle_error_is_what_hf_tables_carry():
    """HuggingFace's rotary embedding forms inv_freq and m * theta in float32: its cos at pair 1
    is off by the angle error float32_angle_error reports (cos moves at most as far as its angle)."""
    from transformers.models.mistral.modeling_mistral import MistralRotaryEmbedding
    c = {k: v for k, v in load_config("Mistral-7B").items() if not k.startswith("_")}
    emb = MistralRotaryEmbedding(AutoConfig.for_model(c.pop("model_type"), **c))
    n = 131072
    cos, _ = emb(torch.zeros(1, 1, 128), torch.arange(n)[None])
    inv, _ = R.rope_frequencies(load_config("Mistral-7B"))
    hf_err = np.abs(cos[0, :, :64].double().numpy()
                    - np.cos(np.multiply.outer(np.arange(n, dtype=np.float64), inv))).max(axis=0)
    e = R.float32_angle_error(inv, n)
    assert emb.inv_freq[1].item() == np.float32(inv[1])  # the same float32 theta_1
    assert hf_err.argmax() == 1 and hf_err[1] <= e.total[1] + 1e-7
    assert hf_err[1] == pytest.approx(e.total[1], rel=0.01) and hf_err[0] < 1e-7


def _ggml_frequencies(flags, d):
    """What llama.cpp builds from its RoPE flags, written out from ggml's rope_yarn: theta_i =
    base^(-2i/d), freq_scale = 1/rope-scale, YaRN's ramp over ggml_rope_yarn_corr_dims (floor,
    ceil, clamp), mscale 1 + 0.1 ln(1/freq_scale) where YaRN extrapolates."""
    f = {flag: value for flag, value, _ in flags}
    base, scale = f["--rope-freq-base"], 1.0 / f.get("--rope-scale", 1.0)
    theta = base ** (-np.arange(0, d, 2) / d)
    if f["--rope-scaling"] == "none":
        return theta, 1.0
    if f["--rope-scaling"] == "linear":
        return theta * scale, 1.0
    corr = lambda n_rot: d * math.log(f["--yarn-orig-ctx"] / (n_rot * 2 * math.pi)) / (2 * math.log(base))  # noqa: E731
    low = max(0, math.floor(corr(f.get("--yarn-beta-fast", 32.0))))
    high = min(d - 1, math.ceil(corr(f.get("--yarn-beta-slow", 1.0))))
    ramp = 1 - np.clip((np.arange(d // 2) - low) / max(0.001, high - low), 0, 1)
    return theta * scale * (1 - ramp) + theta * ramp, 1.0 + 0.1 * math.log(1.0 / scale)


def test_llama_cpp_rope_flags_rebuild_the_configs_rope():
    qwen = load_config("Qwen2.5-7B-Instruct")  # with the model card's YaRN block
    flags = R.llama_cpp_rope_flags(qwen)
    assert flags == [("--rope-scaling", "yarn", "rope_scaling.rope_type"),
                     ("--rope-freq-base", 1e6, "rope_theta"),
                     ("--rope-scale", 4.0, "rope_scaling.factor"),
                     ("--yarn-orig-ctx", 32768, "rope_scaling.original_max_position_embeddings")]
    stock = {k: v for k, v in qwen.items() if k != "rope_scaling"}  # the published config.json
    assert R.llama_cpp_rope_flags(stock) == [("--rope-scaling", "none", "rope_scaling.rope_type"),
                                             ("--rope-freq-base", 1e6, "rope_theta")]
    head = {"head_dim": 128, "rope_theta": 1e4, "max_position_embeddings": 16384}
    configs = [qwen, stock, load_config("Mistral-7B"),
               {**head, "rope_scaling": {"rope_type": "linear", "factor": 4.0}},
               {**head, "rope_scaling": {"rope_type": "ntk", "factor": 4.0}},
               {**head, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "beta_fast": 16.0,
                                         "beta_slow": 2.0, "original_max_position_embeddings": 4096}},
               {**head, "rope_scaling": {"rope_type": "yarn", "factor": None,
                                         "original_max_position_embeddings": 4096}}]
    for config in configs:
        inv, af = R.rope_frequencies(config)
        ggml_inv, ggml_af = _ggml_frequencies(R.llama_cpp_rope_flags(config), R.rotary_dim(config))
        np.testing.assert_allclose(ggml_inv, inv, rtol=1e-12)
        assert ggml_af == pytest.approx(af, rel=1e-12)
    ntk = R.llama_cpp_rope_flags(configs[4])
    assert ntk[1][0] == "--rope-freq-base" and ntk[1][1] == R.ntk_base(1e4, 4.0, 128)
    assert near(ntk[1][1], 40889.9, 1)
    assert dict((f, v) for f, v, _ in R.llama_cpp_rope_flags(configs[6]))["--rope-scale"] == 4.0


@pytest.mark.parametrize("config, key", [
    (load_config("Llama-3.1-8B"), "rope_type"), (load_config("Phi-3.5-mini-instruct"), "rope_type"),
    ({"head_dim": 64, "max_position_embeddings": 4096,
      "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, "rope_type"),
    (load_config("DeepSeek-V3"), "mscale"), (load_config("gpt-oss-20b"), "truncate"),
    ({"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "attention_factor": 1.1,
                                       "original_max_position_embeddings": 4096}}, "attention_factor")])
def test_llama_cpp_rope_flags_name_what_no_flag_expresses(config, key):
    with pytest.raises(ValueError, match=rf"rope_scaling\.{key}"):
        R.llama_cpp_rope_flags(config)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_apply_rope_rejects_non_finite_input(bad):
    inv_freq = R.rope_frequencies(load_config("Llama-3.2-1B"))[0]
    x = np.ones((3, 2 * len(inv_freq)))
    x[2, 7] = bad
    with pytest.raises(ValueError, match=r"^x holds non-finite values \(1 of"):
        R.apply_rope(x, np.arange(3), inv_freq)


@pytest.mark.parametrize("call, name", [
    (lambda: R.yarn_correction_range(1, 32, 128, 10000.0, 4096), "beta_fast must be >= beta_slow"),
    (lambda: R.yarn_correction_range(32, 0, 128, 10000.0, 4096), "beta_slow"),
    (lambda: R.yarn_mscale(0), "factor"),
    (lambda: R.yarn_mscale(-2.0), "factor"),
    (lambda: R.ntk_base(10000.0, 8.0, 127), "rotary_dim must be even"),
    (lambda: R.wavelengths([0.0]), "inv_freq"),
    (lambda: R.wavelengths([1.0, -0.5]), "inv_freq"),
    (lambda: R.wavelengths([]), "inv_freq"),
    (lambda: R.pairs_never_turning([1.0, 1e-4], -1), "n_positions"),
    (lambda: R.pairs_never_turning([1.0, 1e-4], True), "n_positions"),
    (lambda: R.turns_within([1.0], -5), "n_positions"),
])
def test_helpers_reject_what_has_no_meaning(call, name):
    """Each of these used to return a number: an inverted band, mu = 1, a base for half a pair,
    an infinite wavelength, every pair 'never turning'."""
    with pytest.raises(ValueError, match=name):
        call()


def test_helpers_still_give_the_lessons_numbers():
    assert R.yarn_correction_range(32, 1, 128, 10000.0, 4096) == (20, 46)
    assert R.yarn_mscale(1.0) == 1.0 and R.yarn_mscale(0.5) == 1.0
    assert R.pairs_never_turning(naive_theta(10000.0, 32), 256).tolist() == list(range(7, 16))


def test_attention_factor_that_overflows_the_tables_is_named():
    """Found by the corrupted-config property test: attention_factor = 3.4e38 made inf tables."""
    inv = naive_theta(10000.0, 32)
    for call in (lambda af: R.cos_sin_table(inv, 16, af),
                 lambda af: R.float32_angle_table(inv, 16, af),
                 lambda af: R.apply_rope(np.ones((2, 32)), [0, 1], inv, attention_factor=af)):
        with pytest.raises(ValueError, match="attention_factor must be below"):
            call(3.4028235677973366e38)
    with pytest.raises(ValueError, match="overflowed float32"):
        R.apply_rope(np.full((2, 32), 1e38, np.float32), [0, 1], inv, attention_factor=1e10)


# ---------------------------------------------------------------------------------------------
# Issue 13: every bad input is a ValueError naming the argument or the config key
# ---------------------------------------------------------------------------------------------

def raises_naming(call, *names):
    """The ValueError ``call`` raises, after checking that its message names every one of
    ``names`` as a whole word (dotted keys allowed)."""
    from _bad import names_argument
    with pytest.raises(ValueError) as err:
        call()
    for name in names:
        assert names_argument(str(err.value), name), f"{name!r} not named in: {err.value}"
    return str(err.value)


def test_every_shipped_config_loads():
    """All of lessonlib/configs (both layer types for Gemma 3) in both layouts, and every config
    the notebooks build, still load under the stricter rules."""
    from lessonlib.models.configs import config_names
    for name in config_names():
        c = load_config(name)
        layers = ["full_attention", "sliding_attention"] if "gemma3" in c.get("model_type", "") else [None]
        for layer_type in layers:
            inv, af = R.rope_frequencies(c, layer_type=layer_type)
            assert np.all(inv > 0) and af > 0
            R.rope_parameters(c, layer_type=layer_type)
            R.rope_cos_sin(c, 8, layer_type=layer_type)
        if any(c.get(k) for k in MR._MAX_LEN_KEYS):
            assert R.derived_max_model_len(c) >= c.get("max_position_embeddings", 0) // 8
    head = {"head_dim": 128, "rope_theta": 10_000.0}
    notebook_08 = [{"rope_type": "linear", "factor": 4.0}, {"rope_type": "ntk", "factor": 4.0},
                   {"rope_type": "dynamic", "factor": 4.0},
                   {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}]
    for rs in notebook_08:
        R.rope_frequencies({**head, "max_position_embeddings": 4096, "rope_scaling": rs}, 16384)
    R.rope_frequencies({**load_config("Llama-3.1-8B"), "rope_scaling": None})


@needs("torch")
@pytest.mark.parametrize("rope_type", sorted(set(READS) - {"ntk"}))
def test_hf_warns_exactly_where_we_raise(rope_type):
    """The key table is HF's: every key we accept draws no 'Unrecognized keys' warning from
    transformers, and the one we reject ("facter", a stray factor) is the one HF names."""
    import transformers.modeling_rope_utils as hf_rope
    values = {"factor": 8.0, "original_max_position_embeddings": 4096, "attention_factor": 1.1,
              "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
              "truncate": True, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "short_factor": SHORT64, "long_factor": LONG64}
    rope = {"rope_type": rope_type, "partial_rotary_factor": 1.0,
            **{k: values[k] for k in READS[rope_type]}}
    stray = "facter" if "factor" in rope else "factor"
    config = cfg(rope, max_position_embeddings=32768, hidden_size=512, num_attention_heads=4)
    seen = []
    original = hf_rope.logger.warning
    hf_rope.logger.warning = lambda msg, *a, **k: seen.append(str(msg))
    try:
        AutoConfig.for_model("llama", **copy.deepcopy(config))
        assert not [m for m in seen if "Unrecognized keys" in m], seen
        R.rope_frequencies(config)  # accepted here too
        seen.clear()
        bad = copy.deepcopy(config)
        bad["rope_scaling"][stray] = 2.0
        AutoConfig.for_model("llama", **copy.deepcopy(bad))
        assert any("Unrecognized keys" in m and stray in m for m in seen), seen
    finally:
        hf_rope.logger.warning = original
    message = raises_naming(lambda: R.rope_frequencies(bad), f"rope_scaling.{stray}")
    assert f"rope_type {rope_type!r}" in message


def test_a_typo_beside_factor_is_named_with_the_near_miss():
    """`"facter"` beside `"factor"` was dropped silently (HF only warns)."""
    config = cfg({"rope_type": "linear", "factor": 2.0, "facter": 3.0})
    for call in (lambda: R.rope_frequencies(config), lambda: R.rope_parameters(config),
                 lambda: R.rotary_dim(config), lambda: R.rope_cos_sin(config, 8),
                 lambda: R.derived_max_model_len(config)):
        message = raises_naming(call, "rope_scaling.facter")
        assert "did you mean 'factor'?" in message


def test_a_stray_factor_under_default_is_an_error():
    """A factor under rope_type default scaled nothing (inv_freq unchanged, silently)."""
    raises_naming(lambda: R.rope_frequencies(cfg({"rope_type": "default", "factor": 2.0})),
                  "rope_scaling.factor")
    raises_naming(lambda: R.rope_frequencies(cfg({"factor": 4.0})), "rope_scaling.factor")  # no type
    per_layer = {"head_dim": 128, "rope_parameters": {  # Gemma 3 in the transformers-5 layout
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    assert R.rope_frequencies(per_layer, layer_type="sliding_attention")[1] == 1.0
    per_layer["rope_parameters"]["sliding_attention"]["factor"] = 8.0
    raises_naming(lambda: R.rope_frequencies(per_layer, layer_type="sliding_attention"),
                  "rope_parameters.sliding_attention.factor")
    # another type's key is as stray: llama3's band under yarn, yarn's betas under llama3
    raises_naming(lambda: R.rope_frequencies(cfg({**YARN, "low_freq_factor": 1.0})),
                  "rope_scaling.low_freq_factor")
    raises_naming(lambda: R.rope_frequencies(cfg({**LLAMA3, "beta_fast": 32.0})),
                  "rope_scaling.beta_fast")


@pytest.mark.parametrize("top, key", [
    (dict(max_position_embeddings=32768.0), "max_position_embeddings"),
    (dict(head_dim=128.0), "head_dim"),
    (dict(original_max_position_embeddings=4096.0), "original_max_position_embeddings"),
    (dict(rope_theta=True), "rope_theta"),
    (dict(rope_theta="10000"), "rope_theta"),
    (dict(rope_theta=1e4 + 0j), "rope_theta"),
    (dict(partial_rotary_factor="0.5"), "partial_rotary_factor"),
])
def test_integer_keys_are_ints_and_reals_are_real(top, key):
    """Counts and lengths written as floats (4096.0) were truncated to ints; now they are errors,
    as bools, strings and complex numbers are where a real number is meant."""
    config = {**cfg({"rope_type": "dynamic", "factor": 2.0}), **top}
    if "original_max_position_embeddings" in top:
        config["rope_scaling"] = dict(YARN)
    raises_naming(lambda: R.rope_frequencies(config, 8192), key)


def test_lengths_written_as_floats_are_errors():
    raises_naming(lambda: R.rope_frequencies(cfg(None), seq_len=2048.0), "seq_len")
    raises_naming(lambda: R.rope_frequencies(cfg({**YARN, "original_max_position_embeddings": 4096.0})),
                  "rope_scaling.original_max_position_embeddings")
    raises_naming(lambda: R.rope_frequencies(cfg(LONGROPE, original_max_position_embeddings=4096.0)),
                  "original_max_position_embeddings")


def test_layer_type_must_be_a_string():
    for call in (R.rotary_dim, R.rope_parameters, R.rope_frequencies):
        raises_naming(lambda: call(cfg(None), layer_type=3), "layer_type")
    raises_naming(lambda: R.rope_cos_sin(cfg(None), 8, layer_type=["sliding_attention"]), "layer_type")


# derived_max_model_len: the rule against vLLM, and its bad inputs

def test_derived_max_model_len_rejects_what_vllm_would_multiply():
    """A negative factor gave -16,384 and an unknown rope_type multiplied anyway."""
    base = {"max_position_embeddings": 32768, "head_dim": 128}
    for factor in (-0.5, 0, 0.5, "4", True, float("nan"), [4.0]):
        raises_naming(lambda: R.derived_max_model_len(
            {**base, "rope_scaling": {"rope_type": "linear", "factor": factor}}), "rope_scaling.factor")
    raises_naming(lambda: R.derived_max_model_len(
        {**base, "rope_scaling": {"rope_type": "yarn", "factor": -0.5,
                                  "original_max_position_embeddings": 4096}}), "rope_scaling.factor")
    raises_naming(lambda: R.derived_max_model_len(
        {**base, "rope_scaling": {"rope_type": "ntk-by-parts", "factor": 4.0}}), "rope_scaling.rope_type")
    raises_naming(lambda: R.derived_max_model_len(
        {**base, "rope_scaling": {"rope_type": "linear"}}), "rope_scaling.factor")
    raises_naming(lambda: R.derived_max_model_len(
        {**base, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}),
        "rope_scaling.original_max_position_embeddings")
    raises_naming(lambda: R.derived_max_model_len({**base, "max_position_embeddings": 32768.0}),
                  "max_position_embeddings")
    raises_naming(lambda: R.derived_max_model_len({**base, "max_position_embeddings": -1}),
                  "max_position_embeddings")
    raises_naming(lambda: R.derived_max_model_len({"head_dim": 64}), "max_position_embeddings")
    raises_naming(lambda: R.derived_max_model_len([("max_position_embeddings", 4096)]), "config")
    nested = {"max_position_embeddings": 4096, "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "factor": 4.0},
        "full_attention": {"rope_type": "linear", "factor": 4.0}}}
    raises_naming(lambda: R.derived_max_model_len(nested), "rope_parameters.sliding_attention.factor")
    assert R.derived_max_model_len({**base, "rope_scaling": {"rope_type": "linear", "factor": 4}}) == 131072


def test_derived_max_model_len_follows_vllm_model_max_length_and_whisper_keys():
    """vLLM's current rule (vllm/config/model.py, _get_and_verify_max_len): max_target_positions
    is a length key, and model_max_length, when given, replaces the minimum (Command-R)."""
    def current_vllm(config):
        keys = ["max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_target_positions", "max_sequence_length",
                "max_seq_length", "seq_len"]
        derived = min(config[k] for k in keys if config.get(k) is not None)
        if config.get("model_max_length"):
            derived = config["model_max_length"]
        return int(derived * (config.get("rope_scaling") or {}).get("factor", 1.0))
    for extra in ({"model_max_length": 131072}, {"model_max_length": 2048},
                  {"max_target_positions": 448}, {"n_positions": 1024, "seq_length": 8192}):
        c = {"max_position_embeddings": 4096, **extra}
        assert R.derived_max_model_len(c) == current_vllm(c)
        c["rope_scaling"] = {"rope_type": "linear", "factor": 2.0}
        assert R.derived_max_model_len(c) == current_vllm(c)
    assert R.derived_max_model_len({"max_position_embeddings": 4096, "model_max_length": 131072}) == 131072


# The YaRN band and ramp

def test_yarn_correction_range_order_and_equal_betas():
    """beta_fast < beta_slow gave (22, 11); equal betas are HF-legal (a step, not a ramp)."""
    raises_naming(lambda: R.yarn_correction_range(1, 32, 128, 10000.0, 4096), "beta_fast", "beta_slow")
    assert R.yarn_correction_range(8, 8, 128, 10000.0, 4096) == hf_yarn_band(8, 8, 128, 1e4, 4096) == (30, 31)
    raises_naming(lambda: R.rope_frequencies(cfg({**YARN, "beta_fast": 1.0, "beta_slow": 32.0})),
                  "rope_scaling.beta_fast", "rope_scaling.beta_slow")


@needs("torch")
def test_equal_betas_match_hf():
    for truncate in (True, False):
        assert_matches_hf(synthetic({**YARN, "beta_fast": 8.0, "beta_slow": 8.0, "truncate": truncate},
                                    max_pos=32768))


def test_yarn_ramp_rejects_an_inverted_band():
    """yarn_ramp(30, 10, 8) returned zeros: every pair 'divided by s', silently."""
    raises_naming(lambda: R.yarn_ramp(30, 10, 8), "low", "high")
    np.testing.assert_array_equal(R.yarn_ramp(10, 10, 12)[9:], [1.0, 1.0, 0.0])  # HF's +0.001
    raises_naming(lambda: R.yarn_ramp(np.nan, 10, 8), "low")
    raises_naming(lambda: R.yarn_ramp(2, 10, 8.0), "n_pairs")


# (r, b, beta_fast, beta_slow, truncate, L0 accepted, L0 rejected): the integer boundary of an
# empty band, both sides. Case A: high < 0, L0 <= 2 pi beta_slow b^(-2/r) (truncate) or
# < 2 pi beta_slow; case B: low > r - 1, L0 >= 2 pi beta_fast b^2 (truncate) or
# > 2 pi beta_fast b^(2(r-1)/r).
BAND_EDGES = [
    ("short, truncate", 128, 1e4, 32.0, 1.0, True, 6, 5),       # 2 pi 1e4^(-1/64) = 5.441
    ("short, no truncate", 128, 1e4, 32.0, 1.0, False, 7, 6),   # 2 pi = 6.283
    ("short, beta_slow 2", 64, 5e5, 32.0, 2.0, True, 9, 8),     # 4 pi 5e5^(-1/32) = 8.335
    ("long, truncate", 8, 10.0, 32.0, 1.0, True, 20106, 20107),  # 2 pi 32 10^2 = 20106.19
    ("long, no truncate", 8, 10.0, 32.0, 1.0, False, 11306, 11307),  # 2 pi 32 10^1.75 = 11306.5
]


@pytest.mark.parametrize("r, b, fast, slow, truncate, ok, empty", [e[1:] for e in BAND_EDGES],
                         ids=[e[0] for e in BAND_EDGES])
def test_empty_yarn_band_is_rejected_on_one_side_of_the_boundary_only(r, b, fast, slow, truncate, ok, empty):
    assert hf_yarn_band(fast, slow, r, b, ok, truncate)[0] <= hf_yarn_band(fast, slow, r, b, ok, truncate)[1]
    low, high = hf_yarn_band(fast, slow, r, b, empty, truncate)
    assert low > high  # what HF computes there: an inverted band
    assert R.yarn_correction_range(fast, slow, r, b, ok, truncate) == hf_yarn_band(fast, slow, r, b, ok, truncate)
    message = raises_naming(lambda: R.yarn_correction_range(fast, slow, r, b, empty, truncate),
                            "original_max_position_embeddings", "beta_fast", "beta_slow")
    assert "band is empty" in message
    rope = {"rope_type": "yarn", "factor": 4.0, "beta_fast": fast, "beta_slow": slow, "truncate": truncate}
    config = synthetic({**rope, "original_max_position_embeddings": ok}, head_dim=r, theta=b)
    R.rope_frequencies(config)
    config["rope_scaling"]["original_max_position_embeddings"] = empty
    message = raises_naming(lambda: R.rope_frequencies(config), "rope_scaling.original_max_position_embeddings",
                            "rope_scaling.beta_fast", "rope_scaling.beta_slow")
    assert "YaRN's band is empty" in message and "inverted" in message
    top = synthetic(rope, head_dim=r, theta=b)  # L0 at the top level (Phi-3 style) is named so
    top["original_max_position_embeddings"] = empty
    raises_naming(lambda: R.rope_frequencies(top), "original_max_position_embeddings")


@needs("torch")
@pytest.mark.parametrize("r, b, fast, slow, truncate, ok, empty", [e[1:] for e in BAND_EDGES],
                         ids=[e[0] for e in BAND_EDGES])
def test_hf_inverted_ramp_flips_every_pair_across_the_boundary(r, b, fast, slow, truncate, ok, empty):
    """The evidence for rejecting: one position of L0 across the boundary, HF's (and vLLM's,
    the same code) inverted ramp flips every pair but one from 'divided by s' to 'kept' (short
    L0) or every pair from 'kept' to 'divided by s' (long L0), the opposite of YaRN's rule on
    that side. llama.cpp clamps the ramp's denominator to 0.001 instead, a third answer."""
    def slowdown(L0):
        rope = {"rope_type": "yarn", "factor": 4.0, "beta_fast": fast, "beta_slow": slow,
                "truncate": truncate, "original_max_position_embeddings": L0}
        config = synthetic(rope, head_dim=r, theta=b, max_pos=4 * L0)
        hf, _ = hf_frequencies(config)
        return naive_theta(b, r) / hf
    accepted, inverted = slowdown(ok), slowdown(empty)
    assert_matches_hf(synthetic({"rope_type": "yarn", "factor": 4.0, "beta_fast": fast, "beta_slow": slow,
                                 "truncate": truncate, "original_max_position_embeddings": ok},
                                head_dim=r, theta=b, max_pos=4 * ok))
    if ok < empty:  # L0 too long: every pair turns > beta_fast times, YaRN keeps them all
        np.testing.assert_allclose(accepted, 1.0, rtol=1e-6)
        np.testing.assert_allclose(inverted, 4.0, rtol=1e-6)  # HF divides them all by s
    else:  # L0 too short: every pair turns < beta_slow times, YaRN divides them all
        np.testing.assert_allclose(accepted[1:], 4.0, rtol=1e-6)  # pair 0 kept by ceil's rounding
        np.testing.assert_allclose(inverted, 1.0, rtol=1e-6)  # HF keeps them all


def test_yarn_numbers_out_of_range_name_the_key():
    """beta_fast = 1e308 and L0 = 0 were `math domain error`."""
    raises_naming(lambda: R.rope_frequencies(cfg({**YARN, "beta_fast": 1e308})), "rope_scaling.beta_fast")
    raises_naming(lambda: R.rope_frequencies(cfg({**YARN, "beta_slow": 5e-324})), "rope_scaling.beta_slow")
    for rope in (YARN, LLAMA3, LONGROPE):
        raises_naming(lambda: R.rope_frequencies(cfg({**rope, "original_max_position_embeddings": 0})),
                      "rope_scaling.original_max_position_embeddings")
        raises_naming(lambda: R.rope_frequencies(cfg(rope, original_max_position_embeddings=0)),
                      "original_max_position_embeddings")
    raises_naming(lambda: R.yarn_correction_dim(32, 128, 1e4, 0), "original_max_position_embeddings")
    raises_naming(lambda: R.yarn_correction_dim(1e308, 128, 1e4, 4096), "n_rotations")
    raises_naming(lambda: R.yarn_correction_dim(32, 127, 1e4, 4096), "rotary_dim")
    raises_naming(lambda: R.yarn_correction_range(1e308, 1, 128, 1e4, 4096), "beta_fast")
    raises_naming(lambda: R.yarn_correction_range(32, 1, 128, 1e4, 4096, truncate="no"), "truncate")
    # mscale_all_dim = -10 at factor e makes 0.1 * mscale_all_dim * ln(factor) + 1 exactly 0
    raises_naming(lambda: R.rope_frequencies(cfg({**YARN, "factor": math.e, "mscale": 1.0,
                                                  "mscale_all_dim": -10.0})), "rope_scaling.mscale_all_dim")


def test_ntk_base_odd_dim_and_overflow():
    """An odd dim gave a base for half a pair; an overflow was inf or an OverflowError."""
    raises_naming(lambda: R.ntk_base(10000.0, 8.0, 127), "rotary_dim")
    raises_naming(lambda: R.ntk_base(1e300, 1e10, 4), "rope_theta", "factor")  # was inf
    raises_naming(lambda: R.ntk_base(1e4, 1e300, 4), "rope_theta", "factor")  # was OverflowError
    raises_naming(lambda: R.ntk_base(1e4, 8.0, 128.0), "rotary_dim")
    raises_naming(lambda: R.rope_frequencies(cfg({"rope_type": "ntk", "factor": 1e300}, head_dim=4)),
                  "factor")
    raises_naming(lambda: R.rope_frequencies(
        cfg({"rope_type": "dynamic", "factor": 1e300}, head_dim=4), seq_len=10**9), "factor")
    assert R.ntk_base(1e4, 4, 128) == pytest.approx(40889.9, abs=0.05)


def test_helpers_on_inv_freq_name_it():
    """wavelengths([0]) returned inf; largest_trained_angle / angle_at took anything."""
    raises_naming(lambda: R.wavelengths([0]), "inv_freq")
    raises_naming(lambda: R.wavelengths(["1.0"]), "inv_freq")
    raises_naming(lambda: R.largest_trained_angle([0.1, -1.0], 4096), "inv_freq")
    raises_naming(lambda: R.largest_trained_angle([0.1], 4096.0), "n_train")
    raises_naming(lambda: R.largest_trained_angle([0.1], "5"), "n_train")
    raises_naming(lambda: R.angle_at([np.nan], 5), "inv_freq")
    raises_naming(lambda: R.angle_at([0.1], -3), "position")
    raises_naming(lambda: R.pairs_never_turning([1.0, 1e-4], -1), "n_positions")  # was every pair
    raises_naming(lambda: R.pairs_never_turning([1.0, 1e-4], 4096.0), "n_positions")
    raises_naming(lambda: R.turns_within([1.0], 10**400), "n_positions")
    raises_naming(lambda: R.outside_trained_arc([1.0, 1e-4], "16383", 4096), "position")
    raises_naming(lambda: R.trained_arc_overshoot([1.0], 10, 4096, trained_inv_freq=[0.0]),
                  "trained_inv_freq")
    raises_naming(lambda: R.yarn_mscale(0), "factor")  # was 1.0
    raises_naming(lambda: R.yarn_mscale(8, "1"), "mscale")


def test_apply_rope_positions_of_another_shape_are_named():
    """x (2, 5, 8) with positions (3, 5) failed with numpy's broadcast message."""
    inv = naive_theta(1e4, 8)
    x = np.random.default_rng(5).standard_normal((2, 5, 8))
    message = raises_naming(lambda: R.apply_rope(x, np.zeros((3, 5)), inv), "positions")
    assert "broadcast" in message and "(2, 5)" in message
    raises_naming(lambda: R.apply_rope(x, np.zeros((2, 1, 5)), inv), "positions")
    raises_naming(lambda: R.apply_rope(x, np.array(3), inv), "positions")
    raises_naming(lambda: R.apply_rope(x, ["0", "1", "2", "3", "4"], inv), "positions")
    raises_naming(lambda: R.apply_rope(x + 0j, np.arange(5), inv), "x")
    raises_naming(lambda: R.apply_rope(x, np.arange(5), inv, style="NEOX"), "style")
    raises_naming(lambda: R.apply_rope(x, np.arange(5), inv, attention_factor=True), "attention_factor")
    # shapes that do broadcast are as before: one position vector, one per row, a leading 1
    per_row = np.stack([np.arange(5), 100 + np.arange(5)])
    out = R.apply_rope(x, per_row, inv)
    for b in range(2):
        np.testing.assert_array_equal(out[b], R.apply_rope(x[b], per_row[b], inv))
    np.testing.assert_array_equal(R.apply_rope(x, np.arange(5)[None], inv), R.apply_rope(x, np.arange(5), inv))
    np.testing.assert_array_equal(R.apply_rope(x[0], np.arange(5)[None], inv), R.apply_rope(x[0], np.arange(5), inv))


def test_tables_and_orders_name_their_arguments():
    inv = naive_theta(1e4, 8)
    raises_naming(lambda: R.cos_sin_table(["a"], 4), "inv_freq")
    raises_naming(lambda: R.cos_sin_table(inv, 4.0), "n_positions")
    raises_naming(lambda: R.float32_angle_table(inv, True), "n_positions")
    raises_naming(lambda: R.float32_angle_table(inv[None], 4), "inv_freq")
    raises_naming(lambda: R.neox_to_gptj_order(8.0), "r")
    raises_naming(lambda: R.neox_to_gptj_order(8, 6), "d")
    raises_naming(lambda: R.rope_cos_sin(cfg(None), 0), "n_positions")
    raises_naming(lambda: R.rope_cos_sin({**cfg(None), "extra": object()}, 4), "config")
    raises_naming(lambda: R.llama3_regimes(cfg({**LLAMA3, "high_freq_factor": 0.5})),
                  "rope_scaling.high_freq_factor")


# ---------------------------------------------------------------------------------------------
# scaling_parameters: what each rope type reads, the one place upper layers take L0 and s from
# ---------------------------------------------------------------------------------------------

def _band_by_hand(r, b, L0, truncate=True):
    return hf_yarn_band(32.0, 1.0, r, b, L0, truncate)  # both shipped YaRN configs use 32 and 1


# name: the fields, written out from the shipped config.json (the keys, and HF's rules by hand)
SCALING = {
    "Llama-3.1-8B": dict(rope_type="llama3", base=500_000.0, rotary_dim=4096 // 32, factor=8.0,
                         original_max=8192,
                         original_max_key="rope_scaling.original_max_position_embeddings",
                         low_freq_factor=1.0, high_freq_factor=4.0, attention_factor=1.0),
    "Llama-3.2-1B": dict(rope_type="llama3", base=500_000.0, rotary_dim=64, factor=32.0,
                         original_max=8192, low_freq_factor=1.0, high_freq_factor=4.0),
    "Qwen2.5-7B-Instruct": dict(  # the card's block: legacy "type", betas and truncate left out
        rope_type="yarn", base=1e6, rotary_dim=3584 // 28, factor=4.0, original_max=32768,
        attention_factor=0.1 * math.log(4.0) + 1.0, beta_fast=32.0, beta_slow=1.0, truncate=True,
        yarn_band=(23, 40), mscale=None, mscale_all_dim=None, max_position_embeddings=None),
    "DeepSeek-V3": dict(  # MLA: r is qk_rope_head_dim; equal mscales give no attention factor
        rope_type="yarn", base=10_000.0, rotary_dim=64, factor=40.0, original_max=4096,
        attention_factor=1.0, beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0,
        truncate=True, yarn_band=(10, 23)),
    "gpt-oss-20b": dict(rope_type="yarn", base=150_000.0, rotary_dim=64, factor=32.0,
                        original_max=4096, attention_factor=0.1 * math.log(32.0) + 1.0,
                        truncate=False, yarn_band=_band_by_hand(64, 150_000.0, 4096, False)),
    "Phi-3.5-mini-instruct": dict(  # no factor: HF reads 131,072 / 4,096; L0 at the top level
        rope_type="longrope", base=10_000.0, rotary_dim=3072 // 32, factor=131072 / 4096,
        original_max=4096, original_max_key="original_max_position_embeddings",
        max_position_embeddings=131072,
        attention_factor=math.sqrt(1 + math.log(32.0) / math.log(4096.0)),  # 1.1902
        beta_fast=None, yarn_band=None, low_freq_factor=None),
    "Mistral-7B": dict(rope_type="default", base=10_000.0, rotary_dim=128, factor=1.0,
                       original_max=None, max_position_embeddings=None, attention_factor=1.0,
                       beta_fast=None, truncate=None, short_factor=None),
    "Gemma-3-27B": dict(rope_type="linear", base=1e6, rotary_dim=128, factor=8.0,
                        original_max=None, attention_factor=1.0),
}


@pytest.mark.parametrize("name", sorted(SCALING))
def test_scaling_parameters_of_the_shipped_configs(name):
    sp = R.scaling_parameters(load_config(name))
    for field, want in SCALING[name].items():
        got = getattr(sp, field)
        if isinstance(want, float):
            assert got == pytest.approx(want, rel=1e-12), field
        else:
            assert got == want, field


def test_scaling_parameters_of_the_shipped_longrope_lists_and_gemma_local_layers():
    phi = load_config("Phi-3.5-mini-instruct")
    sp = R.scaling_parameters(phi)
    assert sp.short_factor == tuple(phi["rope_scaling"]["short_factor"]) and len(sp.short_factor) == 48
    assert sp.long_factor == tuple(phi["rope_scaling"]["long_factor"])
    local = R.scaling_parameters(load_config("Gemma-3-27B"), layer_type="sliding_attention")
    assert (local.rope_type, local.base, local.factor, local.section) == \
        ("default", 10_000.0, 1.0, "rope_local_base_freq")
    with pytest.raises(dataclasses.FrozenInstanceError):
        sp.factor = 2.0


def test_scaling_parameters_resolve_hf_defaults_and_null_factors():
    yarn = R.scaling_parameters(cfg({"rope_type": "yarn", "factor": None,
                                     "original_max_position_embeddings": 4096}))
    assert (yarn.factor, yarn.max_position_embeddings) == (32768 / 4096, 32768)  # HF: max / L0
    assert (yarn.beta_fast, yarn.beta_slow, yarn.truncate) == (32.0, 1.0, True)  # `or 32`, `or 1`
    assert yarn.attention_factor == pytest.approx(0.1 * math.log(8.0) + 1)
    assert yarn.yarn_band == hf_yarn_band(32, 1, 128, 1e4, 4096)
    deepseek = R.scaling_parameters(cfg({**YARN, "factor": 40, "mscale": 0.707,
                                         "mscale_all_dim": 1.0}, head_dim=64))
    mu = lambda s, m: 0.1 * m * math.log(s) + 1  # noqa: E731
    assert deepseek.attention_factor == pytest.approx(mu(40, 0.707) / mu(40, 1.0))
    dynamic = R.scaling_parameters(cfg({"rope_type": "dynamic", "factor": 4.0}))
    assert (dynamic.original_max, dynamic.original_max_key) == (32768, "max_position_embeddings")
    v5 = R.scaling_parameters(as_v5(cfg(LLAMA3, rope_theta=5e5)))
    assert (v5.base, v5.theta_key, v5.section) == (5e5, "rope_parameters.rope_theta", "rope_parameters")
    assert R.scaling_parameters({"head_dim": 16}).base == 10_000.0  # HF's default_theta


def _raised(f, *args, **kwargs):
    try:
        f(*args, **kwargs)
    except ValueError as err:
        return str(err)
    return None


@pytest.mark.parametrize("config, key", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_scaling_parameters_raise_what_rope_frequencies_raises(config, key):
    message = _raised(R.scaling_parameters, config)
    assert message is not None and message == _raised(R.rope_frequencies, config)


@given(valid_configs(), st.sampled_from(["factor", "original_max_position_embeddings", "low_freq_factor",
                                         "high_freq_factor", "beta_fast", "beta_slow", "mscale",
                                         "attention_factor", "short_factor", "rope_theta", "head_dim",
                                         "truncate", "max_position_embeddings"]), ANYTHING)
def test_property_scaling_parameters_fail_exactly_where_rope_frequencies_fails(config, key, value):
    if key in ("rope_theta", "head_dim", "max_position_embeddings"):
        config[key] = value
    else:
        config["rope_scaling"][key] = value
    message = _raised(R.scaling_parameters, config)
    assert message == _raised(R.rope_frequencies, config)
    if message is None:  # the fields are what the frequencies are built from
        sp = R.scaling_parameters(config)
        assert sp.attention_factor == R.rope_frequencies(config)[1]
        assert sp.rotary_dim == R.rotary_dim(config)  # (longrope's s = max / L0 may be < 1)


@needs("torch")
@pytest.mark.parametrize("config, seq_len", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_scaling_parameters_rebuild_hf_frequencies_by_hand(config, seq_len):
    """The fields alone, through the naive formulas written here, give HF's inv_freq."""
    sp = R.scaling_parameters(config)
    theta, s = naive_theta(sp.base, sp.rotary_dim), sp.factor
    i = np.arange(sp.rotary_dim // 2)
    if sp.rope_type == "yarn":
        low, high = sp.yarn_band
        keep = 1 - np.clip((i - low) / ((high - low) or 0.001), 0, 1)
        ours = theta * keep + theta / s * (1 - keep)
    elif sp.rope_type == "llama3":
        L0, lo, hi = sp.original_max, sp.low_freq_factor, sp.high_freq_factor
        wl = 2 * np.pi / theta
        smooth = np.clip((L0 / wl - lo) / (hi - lo), 0, 1)
        ours = np.where(wl < L0 / hi, theta, np.where(wl > L0 / lo, theta / s,
                                                      (1 - smooth) * theta / s + smooth * theta))
    elif sp.rope_type == "longrope":
        long = seq_len is not None and seq_len > sp.original_max
        ours = theta / np.array(sp.long_factor if long else sp.short_factor)
    elif sp.rope_type == "dynamic":
        L = max(seq_len or 0, sp.max_position_embeddings)
        r = sp.rotary_dim
        ours = naive_theta(sp.base * (s * L / sp.max_position_embeddings - (s - 1)) ** (r / (r - 2)), r)
    else:
        ours = theta / s
    ref, ref_af = hf_frequencies(config, seq_len)
    np.testing.assert_allclose(ours, ref, **F32)
    assert sp.attention_factor == pytest.approx(ref_af, rel=1e-12)


def test_a_yarn_config_without_its_trained_length_is_refused_by_name():
    config = {"head_dim": 128, "max_position_embeddings": 16384,
              "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    with pytest.raises(ValueError, match=r"rope_scaling\.original_max_position_embeddings is required"):
        R.scaling_parameters(config)


# --------------------------------------------------------------------------- issue 31's probes

def test_an_attention_factor_that_zeroes_the_table_is_refused_by_name():
    """Issue 31: a YaRN attention_factor of 0 gave a cos/sin table of zeros (every rotary score
    0), silently; so did longrope's, a factor too small for float32, and mscales whose ratio is 0."""
    probe = {"head_dim": 128, "rope_theta": 1e4, "max_position_embeddings": 16384,
             "rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 4096,
                              "attention_factor": 0}}
    with pytest.raises(ValueError) as err:
        R.rope_frequencies(probe)
    assert str(err.value) == "rope_scaling.attention_factor must be a number > 0.0, got 0"
    for call in (R.scaling_parameters, lambda c: R.rope_cos_sin(c, 16)):
        raises_naming(lambda: call(probe), "rope_scaling.attention_factor")
    for rope in (YARN, LONGROPE):
        for bad in (0, 0.0, -1.0, math.inf, math.nan):
            raises_naming(lambda: R.rope_frequencies(cfg({**rope, "attention_factor": bad})),
                          "rope_scaling.attention_factor")
        message = raises_naming(lambda: R.rope_frequencies(cfg({**rope, "attention_factor": 1e-300})),
                                "rope_scaling.attention_factor")
        assert "below float32's smallest normal number" in message
        assert R.rope_frequencies(cfg({**rope, "attention_factor": 1e-30}))[1] == 1e-30  # small, held
    # 0.1 mscale ln s + 1 = 0 at s = e, mscale = -10: the ratio was 0 and passed
    message = raises_naming(lambda: R.rope_frequencies(cfg({**YARN, "factor": math.e, "mscale": -10.0,
                                                            "mscale_all_dim": 1.0})),
                            "rope_scaling.mscale", "rope_scaling.mscale_all_dim")
    assert "give an attention factor of 0 =" in message and "must be > 0" in message
    assert R.rope_frequencies(cfg({**YARN, "mscale": -5.0, "mscale_all_dim": -5.0}))[1] == 1.0  # as HF
    for f in (lambda af: R.cos_sin_table(naive_theta(1e4, 8), 4, af),
              lambda af: R.float32_angle_table(naive_theta(1e4, 8), 4, af),
              lambda af: R.apply_rope(np.ones((4, 8)), np.arange(4), naive_theta(1e4, 8),
                                      attention_factor=af)):
        for bad in (0, 0.0, 1e-39):
            raises_naming(lambda: f(bad), "attention_factor")
        assert np.abs(f(1e-30)[0]).max() > 0


def test_tables_past_the_size_limit_are_refused_before_anything_is_allocated():
    """Issue 31: a cos/sin table of 10**12 rows ended in numpy's MemoryError (233 TiB)."""
    import tracemalloc
    inv = naive_theta(1e4, 128)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as err:
            R.cos_sin_table(inv, 10**12)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value) == (
        "n_positions x r/2 = 1,000,000,000,000 x 64 = 64,000,000,000,000 entries (232.8 TiB as "
        "float32, for each of cos and sin) is more than lessonlib.rope builds in one table (at most "
        "2^31 = 2,147,483,648 entries); a table needs the positions served and no more (vLLM builds "
        "max_model_len rows)")
    assert peak < 2**20
    for call in (lambda n: R.float32_angle_table(inv, n), lambda n: R.float32_angle_error(inv, n),
                 lambda n: R.rope_cos_sin(cfg(None), n)):
        raises_naming(lambda: call(10**12), "n_positions")
        raises_naming(lambda: call(2**25 + 1), "n_positions")  # 64 pairs: one row past 2^31
    assert R._MAX_TABLE_ENTRIES == 2**31
    R._check_table(2**25, 64)  # exactly at the limit: allowed


def test_an_unknown_layer_type_on_a_flat_config_is_an_error():
    """Issue 31: a config whose one rope serves every layer read any layer_type ('slidng_attention',
    'bogus') as that rope, silently; now only its layer types are, by name."""
    flat = cfg(dict(YARN))
    for call in (R.rope_frequencies, R.scaling_parameters, R.rope_parameters, R.rotary_dim,
                 R.llama_cpp_rope_flags, lambda c, layer_type: R.rope_cos_sin(c, 8, layer_type=layer_type)):
        message = raises_naming(lambda: call(flat, layer_type="slidng_attention"), "layer_type")
        assert message.startswith("layer_type 'slidng_attention' is not a layer type of this config")
        call(flat, layer_type="sliding_attention")  # one rope for every layer: each name reads it
        call(flat, layer_type="full_attention")
    listed = {**flat, "layer_types": ["linear_attention", "full_attention"]}  # Qwen3-Next's names
    assert R.rope_frequencies(listed, layer_type="linear_attention")[1] == R.rope_frequencies(flat)[1]
    assert "'linear_attention'" in raises_naming(lambda: R.rope_frequencies(listed, layer_type="conv"),
                                                 "layer_type")


# --------------------------------------------------------------------------- bad inputs
# Every argument of the public functions, fed what a careful user might pass by mistake: each
# must be a ValueError naming the argument or the config key (tests/_bad.py; coverage in
# test_validate.py).
from _bad import DELETE, Case, arrays_with, bad_input_tests, choices, flags, ints, reals, texts  # noqa: E402

_MAXPOS = 2 ** 53  # lengths past it are refused (float64 positions stop being distinct)
_TYPES = R.ROPE_TYPES + ("su",)
_HEAD = {"hidden_size": 512, "num_attention_heads": 4, "head_dim": 128, "rope_theta": 1e4,
         "max_position_embeddings": 32768}
_YARN_CFG = {**_HEAD, "rope_scaling": {**YARN, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.8,
                                       "mscale_all_dim": 1.0, "truncate": True}}
_LONGROPE_CFG = {**_HEAD, "original_max_position_embeddings": 4096, "max_position_embeddings": 131072,
                 "rope_scaling": {k: v for k, v in LONGROPE.items() if k != "original_max_position_embeddings"}}
_LLAMA3_CFG = {**_HEAD, "rope_theta": 5e5, "max_position_embeddings": 131072, "rope_scaling": dict(LLAMA3)}
_DYNAMIC_CFG = {**_HEAD, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
_FLAGS_CFG = {**_HEAD, "rope_scaling": {**YARN, "beta_fast": 32.0, "beta_slow": 1.0}}
_GEMMA_V5 = {"head_dim": 128, "rope_parameters": {
    "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
    "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
_NOT_A_DICT = st.sampled_from([None, "config.json", 3, [("rope_theta", 1e4)]])
_NOT_A_ROPE_DICT = st.sampled_from(["yarn", 3, [1.0], True])
_LENGTH = ints(minimum=1, maximum=_MAXPOS)
_BAD_LIST = st.sampled_from([LONG64[:-1], LONG64 + [1.0], "1.0", 1.0, np.array(LONG64),
                             LONG64[:-1] + ["x"], LONG64[:-1] + [0.0], LONG64[:-1] + [float("nan")],
                             LONG64[:-1] + [True]]) | st.none()
_INV = naive_theta(1e4, 16)
_FREQS = arrays_with(_INV, kind="real", ranks=(1,)) | st.sampled_from(
    [[], [0.0], [1.0, -0.5], np.zeros(0)])
_TABLE_FREQS = arrays_with(_INV, kind="real", ranks=(1,)) | st.just([])
_X = np.random.default_rng(11).standard_normal((3, 5, 16))
_ROPE_CFG = {"config": _NOT_A_DICT, "config.rope_theta": reals(above=1.0, none_ok=True),
             "config.partial_rotary_factor": reals(above=0.0, maximum=1.0, none_ok=True),
             "config.rope_scaling": _NOT_A_ROPE_DICT,
             "config.rope_scaling.rope_type": choices(_TYPES, none_ok=True),
             "config.rope_scaling.facter": st.just(2.0) | reals(),
             "layer_type": texts(none_ok=True) | st.just("slidng_attention")}
_COMMON_CFG = {**_ROPE_CFG,  # what rope_frequencies reads beyond the rope dict: the head
               "config.head_dim": ints(minimum=1, maximum=R._MAX_HEAD_DIM, none_ok=True) | st.just(63),
               "config.partial_rotary_factor": reals(above=0.0, maximum=1.0, none_ok=True) | st.just(69 / 128)}

_YARN_BAD = dict(_COMMON_CFG, **{
             "config.rope_scaling.factor": reals(minimum=1.0, none_ok=True),
             "config.rope_scaling.original_max_position_embeddings": _LENGTH | st.sampled_from([2, 5]),
             "config.rope_scaling.beta_fast": reals(minimum=0.0, none_ok=True) | st.sampled_from([0.5, 1e308]),
             "config.rope_scaling.beta_slow": reals(minimum=0.0, none_ok=True) | st.sampled_from([64.0, 5e-324]),
             "config.rope_scaling.attention_factor": reals(above=0.0, none_ok=True)
             | st.sampled_from([3.5e38, 1e-300]),
             "config.rope_scaling.mscale": reals(none_ok=True) | st.just(-10.0),
             "config.rope_scaling.mscale_all_dim": reals(none_ok=True) | st.just(-10.0),
             "config.rope_scaling.truncate": flags(),
             "config.rope_scaling.low_freq_factor": st.just(1.0)})
_YARN_NAMES = {"config.rope_scaling.beta_slow": "rope_scaling.beta_slow"}
_LONGROPE_BAD = {"config.rope_scaling.long_factor": _BAD_LIST, "config.rope_scaling.short_factor": _BAD_LIST,
                 "config.rope_scaling.factor": reals(minimum=1.0, none_ok=True),
                 "config.rope_scaling.attention_factor": reals(above=0.0, none_ok=True) | st.just(1e-39),
                 "config.original_max_position_embeddings": _LENGTH | st.just(1),
                 "config.max_position_embeddings": _LENGTH,
                 "config.rope_scaling.beta_fast": st.just(32.0)}
_LLAMA3_BAD = {"config.rope_scaling.factor": reals(minimum=1.0),
               "config.rope_scaling.low_freq_factor": reals(above=0.0) | st.just(4.0),
               "config.rope_scaling.high_freq_factor": reals(above=0.0) | st.just(0.5),
               "config.rope_scaling.original_max_position_embeddings": _LENGTH | st.just(DELETE),
               "config.rope_scaling.mscale": st.just(1.0)}
_DYNAMIC_BAD = {"config.max_position_embeddings": _LENGTH | st.just(DELETE),
                "config.rope_scaling.factor": reals(minimum=1.0) | st.just(DELETE),
                "config.head_dim": st.just(2)}  # r = 2: b * s^(r/(r-2)) has no meaning
_V5_LAYER_BAD = {"config.rope_parameters.sliding_attention.factor": st.just(2.0) | reals(),
                 "config.rope_parameters.sliding_attention.rope_theta": reals(above=1.0, none_ok=True),
                 "config.rope_parameters.sliding_attention.rope_type": choices(_TYPES, none_ok=True),
                 "layer_type": texts(none_ok=True) | st.just("chunked_attention")}
_SEQ_LEN = ints(minimum=1, maximum=_MAXPOS, none_ok=True)

BAD_INPUTS = [
    Case(R.rope_frequencies, args=(_YARN_CFG, 8192), id="rope_frequencies[yarn]",
         bad=dict(_YARN_BAD, seq_len=_SEQ_LEN), names=_YARN_NAMES),
    Case(R.rope_frequencies, args=(_LONGROPE_CFG, 8192), id="rope_frequencies[longrope]",
         bad=_LONGROPE_BAD),
    Case(R.rope_frequencies, args=(_LLAMA3_CFG,), id="rope_frequencies[llama3]", bad=_LLAMA3_BAD),
    Case(R.rope_frequencies, args=(_DYNAMIC_CFG, 65536), id="rope_frequencies[dynamic]",
         bad=dict(_DYNAMIC_BAD, seq_len=_SEQ_LEN)),
    Case(R.rope_frequencies, args=(_GEMMA_V5,), kwargs=dict(layer_type="sliding_attention"),
         id="rope_frequencies[v5 per layer]", bad=_V5_LAYER_BAD),
    # scaling_parameters reads every key rope_frequencies reads, with the same errors
    Case(R.scaling_parameters, args=(_YARN_CFG,), id="scaling_parameters[yarn]", bad=_YARN_BAD,
         names=_YARN_NAMES),
    Case(R.scaling_parameters, args=(_LONGROPE_CFG,), id="scaling_parameters[longrope]",
         bad=_LONGROPE_BAD),
    Case(R.scaling_parameters, args=(_LLAMA3_CFG,), id="scaling_parameters[llama3]", bad=_LLAMA3_BAD),
    Case(R.scaling_parameters, args=(_DYNAMIC_CFG,), id="scaling_parameters[dynamic]",
         bad=_DYNAMIC_BAD),
    Case(R.scaling_parameters, args=(_GEMMA_V5,), kwargs=dict(layer_type="sliding_attention"),
         id="scaling_parameters[v5 per layer]", bad=_V5_LAYER_BAD),
    Case(R.rope_parameters, args=(_YARN_CFG,), bad=_ROPE_CFG),
    Case(MR.rope_theta, args=(_YARN_CFG,), bad=_ROPE_CFG),
    Case(MR.max_position_embeddings, args=(_YARN_CFG,),
         bad={"config": _NOT_A_DICT, "config.max_position_embeddings": _LENGTH | st.just(DELETE)}),
    Case(R.rotary_dim, args=({k: v for k, v in _HEAD.items() if k != "head_dim"},),
         bad={"config": _NOT_A_DICT,
              "config.hidden_size": ints(minimum=1) | st.just(100),
              "config.num_attention_heads": ints(minimum=1) | st.just(3),
              "config.qk_rope_head_dim": ints(minimum=1, maximum=R._MAX_HEAD_DIM, none_ok=True) | st.just(63),
              "config.partial_rotary_factor": reals(above=0.0, maximum=1.0, none_ok=True),
              "layer_type": texts(none_ok=True) | st.just("slidng_attention")}),
    Case(R.apply_rope, args=(_X, np.arange(5), _INV), kwargs=dict(style="gptj", attention_factor=1.2),
         bad=dict(x=arrays_with(_X, kind="real", ranks=(2, 3, 4)),
                  positions=arrays_with(np.arange(5.0), kind="real", ranks=(1, 2))
                  | st.sampled_from([np.zeros((2, 5)), np.zeros((3, 1, 5)), [0, 1]]),
                  inv_freq=_TABLE_FREQS | st.just(naive_theta(1e4, 64)),
                  style=choices(["neox", "gptj"]),
                  attention_factor=reals(above=0.0) | st.sampled_from([3.5e38, 1e-39]))),
    Case(R.neox_to_gptj_order, args=(16, 24),
         bad=dict(r=ints(minimum=2, maximum=R._MAX_HEAD_DIM) | st.just(15),
                  d=ints(minimum=16, maximum=R._MAX_HEAD_DIM, none_ok=True))),
    Case(R.cos_sin_table, args=(_INV, 16, 1.2),
         bad=dict(inv_freq=_TABLE_FREQS, n_positions=ints(minimum=1, maximum=_MAXPOS) | st.just(10**12),
                  attention_factor=reals(above=0.0) | st.sampled_from([3.5e38, 1e-39]))),
    Case(R.rope_cos_sin, args=(_YARN_CFG, 16),
         bad={"config": _NOT_A_DICT, "config.rope_theta": reals(above=1.0, none_ok=True),
              "config.rope_scaling.facter": st.just(2.0),
              "config.rope_scaling.factor": reals(minimum=1.0, none_ok=True),
              "n_positions": ints(minimum=1, maximum=_MAXPOS) | st.just(10**12),
              "layer_type": texts(none_ok=True) | st.just("slidng_attention")}),
    Case(R.wavelengths, args=(_INV,), bad=dict(inv_freq=_FREQS)),
    Case(R.turns_within, args=(_INV, 4096),
         bad=dict(inv_freq=_FREQS, n_positions=ints(minimum=0, maximum=_MAXPOS))),
    Case(R.largest_trained_angle, args=(_INV, 4096),
         bad=dict(inv_freq=_FREQS, n_train=ints(minimum=1, maximum=_MAXPOS))),
    Case(R.angle_at, args=(_INV, 16383), bad=dict(inv_freq=_FREQS, position=reals(minimum=0.0))),
    Case(R.pairs_never_turning, args=(_INV, 4096),
         bad=dict(inv_freq=_FREQS, n_positions=ints(minimum=1, maximum=_MAXPOS))),
    Case(R.outside_trained_arc, args=(_INV, 16383, 4096),
         bad=dict(inv_freq=_FREQS, position=reals(minimum=0.0), n_train=ints(minimum=1, maximum=_MAXPOS))),
    Case(R.trained_arc_overshoot, args=(_INV / 4, 16383, 4096), kwargs=dict(trained_inv_freq=_INV),
         bad=dict(inv_freq=_FREQS, position=reals(minimum=0.0), n_train=ints(minimum=1, maximum=_MAXPOS),
                  trained_inv_freq=arrays_with(_INV, kind="real", ranks=(1,), none_ok=True)
                  | st.sampled_from([_INV[:3], [0.0] * 8]))),
    Case(R.ntk_base, args=(10_000.0, 4.0, 128),
         bad=dict(b=reals(above=1.0) | st.just(1e308), s=reals(minimum=1.0) | st.just(1e300),
                  r=ints(minimum=4, maximum=R._MAX_HEAD_DIM) | st.just(127)),
         names=dict(b="rope_theta", s="factor", r="rotary_dim")),
    Case(R.yarn_correction_dim, args=(32, 128, 10_000.0, 4096),
         bad=dict(n_rotations=reals(above=0.0) | st.sampled_from([1e308, 5e-324]),
                  r=ints(minimum=2, maximum=R._MAX_HEAD_DIM) | st.just(127), b=reals(above=1.0),
                  L0=_LENGTH),
         names=dict(r="rotary_dim", b="rope_theta", L0="original_max_position_embeddings")),
    Case(R.yarn_correction_range, args=(32, 1, 128, 10_000.0, 4096), kwargs=dict(truncate=True),
         bad=dict(beta_fast=reals(above=0.0) | st.sampled_from([0.5, 1e308]),
                  beta_slow=reals(above=0.0) | st.sampled_from([64.0, 1000.0]),
                  r=ints(minimum=2, maximum=R._MAX_HEAD_DIM) | st.just(127), b=reals(above=1.0),
                  L0=_LENGTH | st.sampled_from([2, 5]), truncate=flags()),
         names=dict(r="rotary_dim", b="rope_theta", L0="original_max_position_embeddings")),
    Case(R.yarn_ramp, args=(20, 46, 64),
         bad=dict(low=reals() | st.just(50.0), high=reals() | st.just(10.0),
                  n_pairs=ints(minimum=1, maximum=R._MAX_HEAD_DIM))),
    Case(R.yarn_mscale, args=(8.0, 0.707), bad=dict(s=reals(above=0.0), mscale=reals()),
         names=dict(s="factor")),
    Case(R.rotary_score_scale, args=(1.1386,),
         bad=dict(attention_factor=reals(above=0.0) | st.sampled_from([3.5e38, 1e-39]))),
    Case(R.yarn_pair_sets, args=(20, 46, 64),
         bad=dict(low=reals() | st.just(50.0), high=reals() | st.just(10.0),
                  n_pairs=ints(minimum=1, maximum=R._MAX_HEAD_DIM))),
    Case(R.clock_angle, args=(_INV, 16383), bad=dict(inv_freq=_FREQS, position=reals(minimum=0.0))),
    Case(R.frequency_ratio, args=(_INV / 4, _INV),
         bad=dict(inv_freq=_FREQS, original_inv_freq=_FREQS | st.just(_INV[:3]))),
    Case(R.slowdown, args=(_INV / 4, _INV),
         bad=dict(inv_freq=_FREQS, original_inv_freq=_FREQS | st.just(_INV[:3]))),
    Case(R.largest_overshoot, args=(_INV / 4, 16383, 4096), kwargs=dict(trained_inv_freq=_INV),
         bad=dict(inv_freq=_FREQS, position=reals(minimum=0.0), n_train=ints(minimum=1, maximum=_MAXPOS),
                  trained_inv_freq=arrays_with(_INV, kind="real", ranks=(1,), none_ok=True)
                  | st.sampled_from([_INV[:3], [0.0] * 8]))),
    Case(R.target_length, args=(4.0, 4096),
         bad=dict(s=reals(minimum=1.0) | st.just(1e300), L0=_LENGTH),
         names=dict(s="factor", L0="original_max_position_embeddings")),
    Case(R.llama3_regimes, args=(_LLAMA3_CFG,),
         bad={"config": _NOT_A_DICT, "config.rope_scaling.factor": reals(minimum=1.0),
              "config.rope_scaling.low_freq_factor": reals(above=0.0) | st.just(8.0),
              "config.rope_scaling.high_freq_factor": reals(above=0.0),
              "config.rope_scaling.original_max_position_embeddings": _LENGTH | st.just(DELETE),
              "config.rope_scaling.rope_type": choices(_TYPES, none_ok=True),
              "config.rope_scaling.facter": st.just(8.0),
              "config.rope_theta": reals(above=1.0, none_ok=True)}),
    Case(R.float32_angle_table, args=(_INV, 16, 1.2),
         bad=dict(inv_freq=_TABLE_FREQS, n_positions=ints(minimum=1, maximum=_MAXPOS) | st.just(10**12),
                  attention_factor=reals(above=0.0) | st.sampled_from([3.5e38, 1e-39]))),
    Case(R.float32_angle_error, args=(_INV, 16),
         bad=dict(inv_freq=_TABLE_FREQS,
                  n_positions=ints(minimum=1, maximum=_MAXPOS) | st.just(10**12))),
    Case(R.llama_cpp_rope_flags, args=(_FLAGS_CFG,),
         bad={"config": _NOT_A_DICT, "config.rope_theta": reals(above=1.0, none_ok=True),
              "config.rope_scaling": _NOT_A_ROPE_DICT,
              "config.rope_scaling.rope_type": choices(_TYPES, none_ok=True),
              "config.rope_scaling.factor": reals(minimum=1.0, none_ok=True),
              "config.rope_scaling.original_max_position_embeddings": _LENGTH | st.just(DELETE),
              "config.rope_scaling.beta_fast": reals(minimum=0.0, none_ok=True) | st.just(0.5),
              "config.rope_scaling.mscale": reals(none_ok=True) | st.just(1.0),
              "config.rope_scaling.attention_factor": reals(above=0.0, none_ok=True) | st.just(1.1),
              "config.rope_scaling.truncate": flags() | st.just(False),
              "config.rope_scaling.facter": st.just(4.0),
              "layer_type": texts(none_ok=True) | st.just("slidng_attention")}),
    Case(R.vllm_max_model_len, args=(_YARN_CFG, 4096), kwargs=dict(allow_long=False),
         bad={"config": _NOT_A_DICT, "requested": ints(minimum=1, none_ok=True),
              "allow_long": flags(),
              "config.max_position_embeddings": _LENGTH | st.just(DELETE),
              "config.rope_scaling.factor": reals(minimum=1.0, none_ok=True),
              "config.rope_scaling.rope_type": choices(_TYPES, none_ok=True)}),
    Case(R.derived_max_model_len, args=(_YARN_CFG,),
         bad={"config": _NOT_A_DICT,
              "config.max_position_embeddings": _LENGTH | st.just(DELETE),
              "config.model_max_length": ints(minimum=1, maximum=_MAXPOS, none_ok=True),
              "config.rope_scaling": _NOT_A_ROPE_DICT,
              "config.rope_scaling.factor": reals(minimum=1.0, none_ok=True) | st.sampled_from([-0.5, 0]),
              "config.rope_scaling.original_max_position_embeddings": _LENGTH,
              "config.rope_scaling.rope_type": choices(_TYPES, none_ok=True),
              "config.rope_scaling.facter": st.just(4.0)}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
