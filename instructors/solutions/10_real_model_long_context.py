"""Reference solutions for notebooks/10_real_model_long_context.ipynb (for instructors).

tests/test_checks.py runs each answer through its check in lessonlib.checks.tinylm;
tests/test_checks_tinylm.py tests the hints for wrong answers.
"""
import numpy as np

# Exercise 1: PI serving 1024 tokens on a model trained at 256 reads position m as m / s with
# s = L' / L = 4: every pair slowed by the same factor (rope_type "linear").
pi_config = {"rope_type": "linear", "factor": 1024 / 256}

# Exercise 2: a causal query at position p sees keys 0..p, so uniform attention gives <bos>
# 1 / (p + 1); averaged over the queries at 32..255.
p = np.arange(32, 256)
uniform_bos_weight = float(np.mean(1.0 / (p + 1)))  # about 0.009223

# Exercise 3: after tokens 0..1000 a cache of 4 sinks + 252 recent tokens holds 0..3 and
# 749..1000; keys are cached before RoPE and rotated by their slot, so the newest is at 255.
held = np.concatenate([np.arange(4), np.arange(1001 - 252, 1001)])
streaming_positions = (held, len(held) - 1)

if __name__ == "__main__":
    from lessonlib.checks import tinylm as checks

    print(checks.pi_config(pi_config))
    print(checks.uniform_bos_weight(uniform_bos_weight))
    print(checks.streaming_positions(streaming_positions))
