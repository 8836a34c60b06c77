"""Reference solutions for notebooks/08_rope_scaling.ipynb (for instructors, not students)."""
import math

# Exercise 1: NTK-aware base for base 500,000, d = 128, s = 8: base * s^(d/(d-2)).
ntk_base = 500_000.0 * 8.0 ** (128 / 126)  # about 4,134,231


# Exercise 2: YaRN's band for DeepSeek-V3: rotary dim r = qk_rope_head_dim = 64, base 10,000,
# L0 = original_max_position_embeddings = 4,096, beta_fast 32, beta_slow 1; floor low, ceil high.
def _correction_dim(n_turns, r=64, base=10_000.0, L0=4096):
    return r * math.log(L0 / (2 * math.pi * n_turns)) / (2 * math.log(base))


yarn_band = (max(math.floor(_correction_dim(32)), 0), min(math.ceil(_correction_dim(1)), 64 - 1))

# Exercise 3: gpt-oss-20b, s = 32: mscale = 0.1 ln 32 + 1 multiplies cos and sin, so q and k
# both carry it and the rotary score carries mscale squared.
yarn_score_factor = (0.1 * math.log(32.0) + 1.0) ** 2  # about 1.8133

# Exercise 4: PI at s = 8: position 32,767 is turned as 32767 / 8 = 4095.875, 0.875 positions
# past the last trained one; pair 4 turns theta_4 = 10000^(-8/128) rad per position.
theta_4 = 10_000.0 ** (-8 / 128)
pi_overshoot = (32767 / 8 - 4095) * theta_4  # about 0.492 rad
