"""Reference solutions for notebooks/08_rope_scaling.ipynb (for instructors, not students)."""
import math

import numpy as np

# Exercise 1: NTK-aware base for base 500,000, d = 128, s = 8: base * s^(d/(d-2)).
ntk_base = 500_000.0 * 8.0 ** (128 / 126)  # about 4,134,231


def yarn_inv_freq(config):
    """Exercise 2: YaRN's speeds for the r/2 rotated pairs of a config.json dict."""
    r = int(config["head_dim"] * config.get("partial_rotary_factor", 1.0))
    b = config["rope_theta"]
    rs = config["rope_scaling"]
    s, L0 = rs["factor"], rs["original_max_position_embeddings"]
    fast, slow = rs.get("beta_fast", 32.0), rs.get("beta_slow", 1.0)

    def i_of(n_turns):  # the (fractional) pair that turns n times in L0
        return r * math.log(L0 / (2 * math.pi * n_turns)) / (2 * math.log(b))

    low, high = i_of(fast), i_of(slow)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, r - 1)
    if low == high:
        high += 0.001
    theta = b ** (-np.arange(0, r, 2) / r)
    keep = 1 - np.clip((np.arange(r // 2) - low) / (high - low), 0, 1)  # 1 below low, 0 above high
    return theta * keep + theta / s * (1 - keep)


# Going deeper, engines: vLLM multiplies max_position_embeddings (32,768) by the factor for
# linear and dynamic scaling.
vllm_length = 32_768 * 3  # 98,304

# Going deeper, engines: YaRN's band for DeepSeek-V3: rotary dim r = qk_rope_head_dim = 64,
# base 10,000, L0 = original_max_position_embeddings = 4,096, beta_fast 32, beta_slow 1; floor
# low, ceil high.
def _correction_dim(n_turns, r=64, base=10_000.0, L0=4096):
    return r * math.log(L0 / (2 * math.pi * n_turns)) / (2 * math.log(base))


yarn_band = (max(math.floor(_correction_dim(32)), 0), min(math.ceil(_correction_dim(1)), 64 - 1))

# Going deeper, engines: gpt-oss-20b, s = 32: mu = 0.1 ln 32 + 1 multiplies cos and sin, so q
# and k both carry it and the rotary score carries mu squared.
yarn_score_factor = (0.1 * math.log(32.0) + 1.0) ** 2  # about 1.8133

# Going deeper, training: PI at s = 8: position 32,767 is turned as 32767 / 8 = 4095.875, 0.875
# positions past the last trained one; pair 4 turns theta_4 = 10000^(-8/128) rad per position.
theta_4 = 10_000.0 ** (-8 / 128)
pi_overshoot = (32767 / 8 - 4095) * theta_4  # about 0.492 rad
