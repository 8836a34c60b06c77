"""Reference solutions for notebooks/07_rope.ipynb (for instructors, not students)."""
import numpy as np

# Exercise 1: theta_i = base^(-2i/d) for the d/2 = 32 pairs of gpt-oss-20b's head.
d, base = 64, 150_000.0
inv_freq = base ** (-np.arange(0, d, 2) / d)  # exponents 0, 2/d, ..., (d-2)/d


def rotate_neox(x, m, theta):
    """Exercise 2: NeoX pairs (i, i + d/2), pair i turned by m * theta[i]; the tail passes."""
    x = np.asarray(x, dtype=np.float64)
    h = len(theta)
    x1, x2 = x[:h], x[h:2 * h]
    c, s = np.cos(m * np.asarray(theta)), np.sin(m * np.asarray(theta))
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s, x[2 * h:]])


# Exercise 3: Llama-3.1-8B's base 500,000, d = 128, trained on 8,192 positions: a pair never
# completes a turn when its wavelength 2 pi / theta_i is longer than 8,192 positions.
theta_llama = 500_000.0 ** (-np.arange(0, 128, 2) / 128)
never_turning = int(np.sum(2 * np.pi / theta_llama > 8192))  # 29 of 64
