"""Reference solutions for notebooks/09_long_context_cost_and_needles.ipynb (for instructors).

tests/test_checks_long_context.py proves every check accepts these. Exercise 3 is a function:
the notebook's cell passes it to ``checks.long_context.needle_found(found)``; the stub, which
returns None, is "not attempted". True/False, numpy bools and 0/1 are all read as predictions.
"""
import math

# Exercise 1: Llama 3 8B shape, P = 8.03e9, L = 32, q_dim = 32 x 128 = 4096.
# Weights 2 P n; causal attention 2 n^2 q_dim L. Equal when n = P / (q_dim L).
crossover_tokens = 8.03e9 / (4096 * 32)  # 61,264 tokens


# Exercise 2: total prefill FLOPs at 131,072 over 4,096 tokens.
def total_flops(n, P=8.03e9, q_dim=4096, L=32):
    return 2 * P * n + 2 * n * n * q_dim * L


prompt_cost_ratio = total_flops(131072) / total_flops(4096)  # about 94.2


# Exercise 3: EdgeHeavyModel finds the needle when it sits among the first 64 words, or when
# at most 3,000 words run from the needle (itself included) to the end of the context.
def needle_found(length, depth):
    at = math.floor(length * depth / 100)   # the needle's word index (needles.needle_index)
    words_to_end = length + 1 - at          # the context holds length filler words + the needle
    return at < 64 or words_to_end <= 3000
