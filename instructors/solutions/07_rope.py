"""Reference solutions for notebooks/07_rope.ipynb (for instructors, not students)."""
import numpy as np

# Exercise 1: theta_i = base^(-2i/d) for the d/2 = 32 pairs of gpt-oss-20b's head.
d, base = 64, 150_000.0
inv_freq = base ** (-np.arange(0, d, 2) / d)  # exponents 0, 2/d, ..., (d-2)/d


def rotate_pairs(x, m, theta, layout):
    """Exercise 2: pair i turned by m * theta[i]; "neox" pairs (i, i + half), "gptj" (2i, 2i + 1),
    half = len(theta); the dims past 2 half (partial rotary) pass unchanged."""
    x = np.array(x, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    half = len(theta)
    first, second = (slice(0, half), slice(half, 2 * half)) if layout == "neox" else \
        (slice(0, 2 * half, 2), slice(1, 2 * half, 2))
    x1, x2 = x[first].copy(), x[second].copy()
    c, s = np.cos(m * theta), np.sin(m * theta)
    x[first], x[second] = x1 * c - x2 * s, x2 * c + x1 * s
    return x


# Exercise 3: Llama-3.1-8B's base 500,000, d = 128, trained on 8,192 positions: a pair never
# completes a turn when its wavelength 2 pi / theta_i is longer than 8,192 positions.
theta_llama = 500_000.0 ** (-np.arange(0, 128, 2) / 128)
never_turning = int(np.sum(2 * np.pi / theta_llama > 8192))  # 29 of 64

# Going deeper, positions: the third chunk of 8,192 starts after 2 x 8,192 tokens are cached;
# offset 100 inside it.
chunk_position = 2 * 8192 + 100  # 16,484

# Going deeper, float32: every angle of a 32,768-position table is below 2^15; float32 numbers
# in [2^14, 2^15) are 2^14 x 2^-23 = 1/512 apart, and rounding to the nearest costs half that.
product_rounding = 2.0 ** 14 * 2.0 ** -23 / 2  # 1/1024, about 0.000977 rad
