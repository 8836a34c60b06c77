"""Reference solutions for notebooks/11_paged_cache.ipynb (for instructors).

Each value is worked from the question's inputs by the rule the notebook teaches;
tests/test_checks_paged.py proves every check accepts it.
"""
import math

import numpy as np

from lessonlib import paged

# Exercise 1: gpt-oss-20b's sliding layers (W = 128) in blocks of 16, a 1,000-token prompt
# prefilled in one step, then one token per decode step. Decode step k has c = 1000 + k - 1
# tokens settled before it (its own token is not settled yet); the window, which counts the
# query itself, still sees tokens c - W + 1 onwards, so the table's first (c - W + 1) // 16
# entries hold the null block. The prefill step freed nothing (no token settled before it).
c = 1000 + 103 - 1                         # 1,102 settled before step 103
window_null_entries = (c - 128 + 1) // 16    # 975 // 16 = 60 (the table's other 9 entries are live)


# Exercise 2: the tokens vLLM's full-attention prefix lookup hits. Hash the prompt's full blocks
# in a chain (each block's hash from its parent's, None for block 0) and count them while each
# hash is cached, at most (len - 1) // block_size blocks: the last token's logits are computed.
def prefix_hit(token_ids, cached, block_size):
    parent, blocks = None, 0
    for i in range((len(token_ids) - 1) // block_size):
        parent = paged.block_hash(parent, token_ids[i * block_size:(i + 1) * block_size])
        if parent not in cached:
            break  # chained hashes: no later block can hit either
        blocks += 1
    return blocks * block_size


# Exercise 3 (going deeper, split-KV decode): merge one head's splits. Each split's l and acc
# are measured against its own max m; rescale both by exp(m - M), M the largest m, and sum.
# A split that saw no key (m = -inf, l = 0, acc = 0) adds nothing.
def merge_splits(states):
    M = max(m for m, _, _ in states)
    l_total, acc_total = 0.0, 0.0
    for m, l, acc in states:
        if m == -math.inf:
            continue
        w = math.exp(m - M)
        l_total += w * l
        acc_total = acc_total + w * np.asarray(acc, dtype=np.float64)
    return acc_total / l_total


# Exercise 4 (going deeper, SGLang's radix cache): the window lock of a request matched through
# the tree the cell left (W = 4). The cell's last match, of system + [20, 21, 30], ended inside
# the node 20 ... 26 and split it into (20, 21) and (22, ..., 26). The new request matches all 15
# tokens of system + [20, ..., 26] (7 >= W tokens with window KV after the tombstone), and
# inc_lock_ref locks window KV node by node from its last node up until W tokens are covered:
# the last node, (22, ..., 26), already holds 5 >= 4.
split_tail = [22, 23, 24, 25, 26]  # the path's last node since the split
radix_window_lock = len(split_tail) if len(split_tail) >= 4 else None  # 5: covers W = 4 alone
