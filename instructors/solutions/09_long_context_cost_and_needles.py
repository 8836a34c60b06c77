"""Reference solutions for notebooks/09_long_context_cost_and_needles.ipynb (for instructors).

tests/test_checks_long_context.py proves every check accepts these. Exercise 3 (the needle
grid runner) and the going-deeper exercise (found) are functions: the notebook's cells pass
them to ``checks.long_context.needle_grid(run_grid)`` and ``needle_found(found)``; a stub that
returns None is "not attempted". True/False, numpy bools and 0/1 are all read as predictions.
"""
import math

from lessonlib import needles

# Exercise 1: the Llama 3.2 1B shape, N_param = 1,235,814,400 (its embedding shared with the
# output layer), L = 16, q_dim = 32 x 64 = 2048. Weights 2 N_param n; causal attention
# 2 n^2 q_dim L. Equal when n = N_param / (q_dim L): sooner than the notebook's Llama 3.1 8B,
# whose N_param / L is larger.
crossover_tokens = 1_235_814_400 / (2048 * 16)  # 37,714 tokens


# Exercise 2: total prefill FLOPs at 131,072 over 4,096 tokens, same shape.
def total_flops(n, N_param=1_235_814_400, q_dim=2048, L=16):
    return 2 * N_param * n + 2 * n * n * q_dim * L


prompt_cost_ratio = total_flops(131072) / total_flops(4096)  # about 129.2


# Exercise 3: a needle grid runner. The needle is inserted (the context is length + 1 words) at
# word floor(length x depth / 100); the prompt is the context, a blank line, the question; the
# reply must contain the needle (real models answer in a sentence); a reply that holds the
# whole context is an echo, an error and not a find.
def run_grid(model, lengths, depths):
    found = []
    for length in lengths:
        row = []
        for depth in depths:
            words = needles.lesson_filler(length)
            words.insert(math.floor(length * depth / 100), needles.DEFAULT_NEEDLE)
            context = " ".join(words)
            answer = model(context + "\n\n" + needles.DEFAULT_QUESTION)
            if context in answer:
                raise ValueError("the model echoes its prompt")
            row.append(needles.DEFAULT_NEEDLE in answer)
        found.append(row)
    return found


needle_grid = run_grid


# Going deeper: EdgeHeavyModel finds the needle when it sits among the first 64 words, or when
# at most 3,000 words run from the needle (itself included) to the end of the context.
def needle_found(length, depth):
    at = math.floor(length * depth / 100)   # the needle's word index (needles.needle_index)
    words_to_end = length + 1 - at          # the context holds length filler words + the needle
    return at < 64 or words_to_end <= 3000
