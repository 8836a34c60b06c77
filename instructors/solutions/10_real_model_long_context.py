"""Reference solutions for notebooks/10_real_model_long_context.ipynb (for instructors).

tests/test_checks.py runs each answer through its check in lessonlib.checks.tinylm;
tests/test_checks_tinylm.py tests the hints for wrong answers.
"""
import numpy as np

# Exercise 1: PI serving 1024 tokens on a model trained at 256 reads position m as m / s with
# s = L' / L = 4: every pair slowed by the same factor (rope_type "linear").
pi_config = {"rope_type": "linear", "factor": 1024 / 256}

# Exercise 2: reading the extension sweep. Group the cells by (model, variant), sort each
# method's cells by length (the file promises no order), and walk them: the reach is the last
# length before retrieval first drops below the threshold (at or above counts), 0 if the
# shortest already fails. A dip that recovers later does not extend the reach.
def sweep_reach(extension, threshold):
    from lessonlib import tinylm_results
    methods = {}
    for c in extension["cells"]:
        methods.setdefault((c["model"], c["variant"]), []).append((c["length"], c["accuracy"]))
    out = {}
    for (model, variant), cells in methods.items():
        reach = 0
        for length, accuracy in sorted(cells):
            if accuracy < threshold:
                break
            reach = length
        out[tinylm_results.label(model, variant)] = reach
    return out



# Going deeper (the training): perplexity is e to the loss in nats; at the filler's entropy
# floor, 1.055 nats, that is e^1.055 = 2.87 equally likely words (of the 4 successors a word has).
floor_perplexity = float(np.exp(1.0547443575996556))

# Going deeper (llama.cpp): the export pairs rows (2j, 2j + 1) where the model pairs j with
# j + 16 (d = 32). Row 20 is the partner of row 4, so it goes to 2 x 4 + 1 = 9.
export_row = 2 * (20 - 16) + 1

# Going deeper (sinks), exercise: a causal query at position p sees keys 0..p, so uniform attention gives <bos>
# 1 / (p + 1); averaged over the queries at 32..255.
p = np.arange(32, 256)
uniform_bos_weight = float(np.mean(1.0 / (p + 1)))  # about 0.009223

# Going deeper (window caches), exercise: after tokens 0..1000 a cache of 4 sinks + 252 recent tokens holds 0..3 and
# 749..1000; keys are cached before RoPE and rotated by their slot, so the newest is at 255.
held = np.concatenate([np.arange(4), np.arange(1001 - 252, 1001)])
streaming_positions = (held, len(held) - 1)

if __name__ == "__main__":
    from lessonlib.checks import tinylm as checks

    print(checks.pi_config(pi_config))
    print(checks.uniform_bos_weight(uniform_bos_weight))
    print(checks.streaming_positions(streaming_positions))
    print(checks.sweep_reach(sweep_reach))
    print(checks.floor_perplexity(floor_perplexity))
    print(checks.export_row(export_row))
