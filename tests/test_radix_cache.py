"""lessonlib.radix_cache: SGLang's SWA radix cache (swa_radix_cache.py) and its SWA allocator
(allocator/swa.py), held to the rules as read in SGLang's source at the commits the module
docstring names. No engine runs SGLang here: the expected trees below are worked by hand from
those rules (each test names the functions it follows), not recorded from SGLang.

A tree is written as {node id: (parent id, key, full slots, tombstone)}, root left out.
"""
import numpy as np
import pytest
from hypothesis import strategies as st

from _bad import Case, bad_input_tests, flags, ints
from lessonlib import radix_cache as rc


def tree(cache):
    return {n.id: (n.parent, n.key, n.value, n.swa_tombstone) for n in cache.nodes() if n.id}


def locks(cache):
    return {n.id: (n.full_lock_ref, n.swa_lock_ref) for n in cache.nodes() if n.id}


def serve(cache, tokens, swa_freed=0):
    """One request as SGLang's scheduler runs it: match, lock, allocate the rest, (free the
    SWA KV of its first ``swa_freed`` tokens past the prefix), insert, unlock. The insert's
    prefix length."""
    m = cache.match_prefix(tokens)
    uuid = cache.inc_lock_ref(m.last_node)
    kv = m.device_indices + cache.allocator.alloc(len(tokens) - m.prefix_len)
    if swa_freed:
        cache.allocator.free_swa(kv[m.prefix_len:swa_freed])
    n = cache.insert(tokens, kv, prev_prefix_len=m.prefix_len, swa_evicted_seqlen=swa_freed)
    cache.dec_lock_ref(m.last_node, uuid)
    cache.sanity_check()
    return n


# --------------------------------------------------------------------------- the allocator

def test_the_allocator_hands_out_from_the_front_and_takes_back_at_the_end():
    """allocator/token.py: free lists start at 1 (slot 0 is the padded slot) and freed slots
    are appended (need_sort off); allocator/swa.py: alloc maps each full slot to an SWA slot,
    free gives back both, free_swa the SWA slot only, and alloc refuses when either pool is
    short."""
    a = rc.SWATokenAllocator(6, 4)
    assert a.alloc(3) == (1, 2, 3) and a.translate([1, 2, 3, 4]) == (1, 2, 3, 0)
    a.free_swa([2])
    assert a.translate([2]) == (0,) and a.swa_free_slots == (4, 2)
    a.free([2, 1])
    assert a.full_free_slots == (4, 5, 6, 2, 1) and a.swa_free_slots == (4, 2, 1)
    assert a.alloc(4) is None and a.full_available_size == 5  # 3 SWA slots: nothing taken
    assert a.alloc(3) == (4, 5, 6) and a.translate([4, 5, 6]) == (4, 2, 1)
    assert a.available_size == 0 and a.held_slots == (3, 4, 5, 6)
    for call, match in ((lambda: a.free([1]), "free full slot"),
                        (lambda: a.free([3, 3]), "appears twice"),
                        (lambda: a.free_swa([7]), "<= 6")):
        with pytest.raises(ValueError, match=match):
            call()


# --------------------------------------------------------------------------- match and insert

def _shared():
    """Requests A = 1 2 3 4 5 and B = 1 2 3 7 8 9 served in turn, window 3."""
    cache = rc.SWARadixCache(rc.SWATokenAllocator(16, 16), 3)
    assert serve(cache, [1, 2, 3, 4, 5]) == 0
    assert serve(cache, [1, 2, 3, 7, 8, 9]) == 3
    return cache


def test_two_requests_sharing_a_prefix_split_a_node():
    """_match_prefix_helper and _split_node: B's match splits A's node after 1 2 3; the upper
    part is a new node (id 2), the lower part keeps id 1; B's own tokens become a new leaf and
    its duplicate of the shared prefix is never allocated (B allocated 3 slots)."""
    cache = rc.SWARadixCache(rc.SWATokenAllocator(16, 16), 3)
    serve(cache, [1, 2, 3, 4, 5])
    assert tree(cache) == {1: (0, (1, 2, 3, 4, 5), (1, 2, 3, 4, 5), False)}
    m = cache.match_prefix([1, 2, 3, 7, 8, 9])
    assert m == rc.MatchResult((1, 2, 3), 2) and m.prefix_len == 3
    assert tree(cache) == {2: (0, (1, 2, 3), (1, 2, 3), False), 1: (2, (4, 5), (4, 5), False)}
    assert cache.full_lru_list == (2, 1) == cache.swa_lru_list  # the matched node first
    cache = _shared()
    assert tree(cache) == {2: (0, (1, 2, 3), (1, 2, 3), False), 1: (2, (4, 5), (4, 5), False),
                           3: (2, (7, 8, 9), (6, 7, 8), False)}
    assert cache.full_lru_list == (3, 2, 1) == cache.swa_lru_list
    assert cache.match_prefix([1, 2, 3, 4, 9]) == rc.MatchResult((1, 2, 3, 4), 4)
    assert tree(cache)[4] == (2, (4,), (4,), False) and tree(cache)[1] == (4, (5,), (5,), False)
    assert cache.full_evictable_size == 8 == cache.swa_evictable_size
    assert cache.total_size() == (8, 8)


def test_swa_eviction_tombstones_an_internal_node_and_match_stops_before_it():
    """evict (the SWA phase): the LRU node of the SWA list goes first; a leaf is deleted with
    its full KV, an internal node keeps its full KV as a tombstone. _match_prefix_helper: past
    a tombstone a match counts only if ``sliding_window_size`` tokens with SWA KV follow it."""
    cache = _shared()
    assert cache.evict(swa_num_tokens=3) == rc.EvictResult(2, 5)  # leaf 1, then node 2's SWA
    assert tree(cache) == {2: (0, (1, 2, 3), (1, 2, 3), True),
                           3: (2, (7, 8, 9), (6, 7, 8), False)}
    assert cache.node(2).swa_value == (0, 0, 0) and cache.swa_lru_list == (3,)
    assert cache.total_size() == (6, 3) and cache.swa_evictable_size == 3
    # three tokens with SWA KV after the tombstone: the window is whole, all six match
    assert cache.match_prefix([1, 2, 3, 7, 8, 9]) == rc.MatchResult((1, 2, 3, 6, 7, 8), 3)
    # two: not enough, and the root side is a tombstone: nothing matches (the split stays)
    assert cache.match_prefix([1, 2, 3, 7, 8]) == rc.MatchResult((), 0)
    assert tree(cache)[4] == (2, (7, 8), (6, 7), False) and tree(cache)[3][0] == 4
    assert cache.match_prefix([1, 2, 3]) == rc.MatchResult((), 0)
    cache.sanity_check()


def _tombstoned():
    cache = _shared()
    cache.evict(swa_num_tokens=3)
    return cache


@pytest.mark.parametrize("swa_freed, expected, full_freed", [
    # branch 1: all of the request's tokens have SWA KV: node 2 takes its slots, the tree's
    # old full slots are freed
    (0, {2: (0, (1, 2, 3), (9, 10, 11), False), 4: (2, (5,), (12,), False)}, (1, 2, 3)),
    # branch 2: its first two tokens' SWA KV was freed: node 2 splits, the upper part stays a
    # tombstone, the lower part is revived with the request's slot
    (2, {4: (0, (1, 2), (1, 2), True), 2: (4, (3,), (11,), False),
         5: (2, (5,), (12,), False)}, (3, 9, 10)),
    # branch 3: no SWA KV left for the shared part: the request's duplicates are freed
    (3, {2: (0, (1, 2, 3), (1, 2, 3), True), 4: (2, (5,), (12,), False)}, (9, 10, 11)),
    # nothing has SWA KV: no node is made (a leaf is never a tombstone), its slot is freed
    (4, {2: (0, (1, 2, 3), (1, 2, 3), True)}, (9, 10, 11, 12)),
])
def test_insert_over_a_tombstone_follows_its_three_branches(swa_freed, expected, full_freed):
    """_insert_helper: past ``prev_prefix_len`` a tombstone is revived where the request
    still holds SWA KV (``swa_evicted_seqlen``, the tokens whose SWA KV the request freed as
    its window moved on)."""
    cache = _tombstoned()
    before = cache.allocator.full_free_slots
    assert serve(cache, [1, 2, 3, 5], swa_freed=swa_freed) == 3
    assert {k: v for k, v in tree(cache).items() if k != 3} == expected
    assert cache.allocator.full_free_slots == before[4:] + full_freed
    if swa_freed == 0:
        assert cache.node(2).swa_value == (9, 10, 11)


def test_a_locked_tombstone_keeps_its_full_slots_and_takes_the_new_swa_slots():
    """_recover_tombstone_keeping_locked_full: a running request holds node 2's full KV, so
    the insert maps node 2's full slots to the incoming SWA slots and frees the incoming full
    slots only."""
    cache, uuid = _locked_path()
    cache.evict(swa_num_tokens=20)  # node 2 (swa_lock_ref 0) becomes a tombstone
    assert cache.node(2).swa_tombstone and cache.node(2).full_lock_ref == 1
    assert serve(cache, [1, 2, 3, 7]) == 3
    node = cache.node(2)
    assert not node.swa_tombstone and node.value == (1, 2, 3)
    assert node.swa_value == cache.allocator.translate([1, 2, 3]) != (0, 0, 0)
    assert tree(cache)[6][1:] == ((7,), (12,), False)
    assert cache.allocator.full_free_slots[-3:] == (9, 10, 11)


# --------------------------------------------------------------------------- locks and eviction

def _locked_path():
    """root - 2 (1 2 3) - 4 (4 5) - 1 (6), with leaves 3 (9) and 5 (8); window 3; a request
    holds the lock of 1 2 3 4 5 6."""
    cache = rc.SWARadixCache(rc.SWATokenAllocator(16, 16), 3)
    serve(cache, [1, 2, 3, 4, 5, 6])
    serve(cache, [1, 2, 3, 9])
    serve(cache, [1, 2, 3, 4, 5, 8])
    m = cache.match_prefix([1, 2, 3, 4, 5, 6])
    assert m == rc.MatchResult((1, 2, 3, 4, 5, 6), 1)
    return cache, cache.inc_lock_ref(m.last_node)


def test_a_lock_covers_the_whole_path_for_full_kv_and_the_window_tail_for_swa_kv():
    """inc_lock_ref: full_lock_ref on every node up to the root, swa_lock_ref until the window
    (3 tokens: node 1's one and node 4's two) is covered; node 4 gets a new swa_uuid."""
    cache, uuid = _locked_path()
    assert tree(cache) == {2: (0, (1, 2, 3), (1, 2, 3), False), 4: (2, (4, 5), (4, 5), False),
                           1: (4, (6,), (6,), False), 5: (4, (8,), (8,), False),
                           3: (2, (9,), (7,), False)}
    assert locks(cache) == {2: (1, 0), 4: (1, 1), 1: (1, 1), 5: (0, 0), 3: (0, 0)}
    # node 2 keeps the uuid an earlier request's lock gave it: SGLang never clears one
    assert uuid == cache.node(4).swa_uuid == 2 and cache.node(2).swa_uuid == 1
    assert (cache.full_protected_size, cache.full_evictable_size) == (6, 2)
    assert (cache.swa_protected_size, cache.swa_evictable_size) == (3, 5)
    cache.dec_lock_ref(1, uuid)
    assert set(locks(cache).values()) == {(0, 0)} and cache.full_evictable_size == 8
    cache.sanity_check()


def test_locked_nodes_are_never_evicted_and_the_swa_lock_keeps_the_request_matchable():
    """evict: full eviction passes over locked leaves, SWA eviction over swa-locked nodes;
    node 2, above the window, is full-locked only: it loses its SWA KV. The locked window
    still lets the request's whole prefix match."""
    cache, uuid = _locked_path()
    assert cache.evict(full_num_tokens=100, swa_num_tokens=100) == rc.EvictResult(2, 5)
    assert tree(cache) == {2: (0, (1, 2, 3), (1, 2, 3), True), 4: (2, (4, 5), (4, 5), False),
                           1: (4, (6,), (6,), False)}
    assert cache.match_prefix([1, 2, 3, 4, 5, 6]).prefix_len == 6
    cache.dec_lock_ref(1, uuid)
    # node 1 (1 token), then node 4 (a leaf once 1 is gone), then tombstone 2, left a leaf
    assert cache.evict(full_num_tokens=4) == rc.EvictResult(6, 3)
    assert tree(cache) == {} and cache.allocator.full_available_size == 16
    assert cache.allocator.swa_available_size == 16


def test_full_eviction_takes_unlocked_leaves_least_recently_used_first():
    """evict (the full phase): only leaves, LRU first; a parent becomes a candidate once its
    last child is gone; freed slots go to the end of the free lists in eviction order."""
    cache = rc.SWARadixCache(rc.SWATokenAllocator(8, 8), 3)
    serve(cache, [1, 2])
    serve(cache, [3, 4, 5])
    serve(cache, [1, 2, 6])
    assert tree(cache) == {1: (0, (1, 2), (1, 2), False), 3: (1, (6,), (6,), False),
                           2: (0, (3, 4, 5), (3, 4, 5), False)}
    assert cache.full_lru_list == (3, 1, 2)
    assert cache.evict(full_num_tokens=4) == rc.EvictResult(4, 4)
    assert tree(cache) == {1: (0, (1, 2), (1, 2), False)}
    assert cache.allocator.full_free_slots == (7, 8, 3, 4, 5, 6)
    assert cache.evict(full_num_tokens=1) == rc.EvictResult(2, 2) and tree(cache) == {}


def test_a_tombstone_left_as_a_leaf_is_deleted_with_the_leaf_below_it():
    """_iteratively_delete_tombstone_leaf: leaves are not tombstones, so deleting node 3
    deletes its tombstone parent too; its full tokens count in the full phase."""
    cache = _tombstoned()
    assert cache.evict(full_num_tokens=1) == rc.EvictResult(6, 3)
    assert tree(cache) == {} and cache.full_evictable_size == 0 == cache.swa_evictable_size


def test_releasing_the_swa_lock_early_tombstones_the_locked_leaf():
    """dec_swa_lock_only: the leaf's SWA KV is freed at once (the SWA list may not hold a
    leaf whose full KV is locked); node 4 becomes SWA-evictable; matching stops before the
    tombstone; then the full lock is released with skip_swa."""
    cache, uuid = _locked_path()
    with pytest.raises(ValueError, match="skip_swa: releasing the full lock of node 1"):
        cache.dec_lock_ref(1, uuid, skip_swa=True)  # would leave full_lock_ref < swa_lock_ref
    cache.dec_swa_lock_only(1, uuid)
    assert locks(cache)[1] == (1, 0) and locks(cache)[4] == (1, 0)
    assert cache.node(1).swa_tombstone and cache.node(1).swa_value == (0,)
    assert (cache.swa_protected_size, cache.swa_evictable_size) == (0, 7)
    assert cache.match_prefix([1, 2, 3, 4, 5, 6]) == rc.MatchResult((1, 2, 3, 4, 5), 4)
    cache.dec_lock_ref(1, uuid, skip_swa=True)
    assert set(locks(cache).values()) == {(0, 0)}
    cache.sanity_check()
    with pytest.raises(ValueError, match="node_id: node 1 .* is not locked"):
        cache.dec_lock_ref(1, uuid)


def test_the_cache_refuses_what_would_corrupt_it():
    cache, uuid = _locked_path()
    with pytest.raises(ValueError, match="swa_uuid_for_lock: no node from 3"):
        cache.dec_lock_ref(3, uuid)
    with pytest.raises(ValueError, match="node_id: node 2 on the path of node 4 holds no SWA"):
        cache.dec_lock_ref(4)  # without its uuid the release would go past the window
    cache.evict(swa_num_tokens=20)
    with pytest.raises(ValueError, match="node_id: node 2, within the window of node 2"):
        cache.inc_lock_ref(2)
    with pytest.raises(ValueError, match="prev_prefix_len = 2"):
        cache.insert([1, 2, 7], [1, 2, 9], prev_prefix_len=2)
    with pytest.raises(ValueError, match="kv_indices must hold one slot per token"):
        cache.insert([1, 2, 7], [1, 2])
    assert locks(cache)[1] == (1, 1)  # nothing changed
    cache.sanity_check()


# --------------------------------------------------------------------------- the property

def _stream(seed, ops=300, window=3):
    """A seeded stream of requests (start, slide the window, release the SWA lock, finish),
    evictions and probes over prompts that share prefixes; after every step the cache's
    invariants, the lock-ref invariant and the slot bookkeeping are checked. Counts of what
    happened."""
    rng = np.random.default_rng(seed)
    alloc = rc.SWATokenAllocator(40, 20)
    cache = rc.SWARadixCache(alloc, window)
    stems = [[1, 2, 3, 4], [1, 2, 5], [6, 7, 8, 9, 10], [6, 7], [1, 2, 3, 4, 11, 12]]
    running, seen = [], dict(tombstones=0, revived_or_split=0, swa_freed=0, refused=0,
                             released=0, finished=0)
    kinds = ["start", "slide", "release", "finish", "evict", "probe"]
    for _ in range(ops):
        kind = kinds[rng.choice(6, p=[0.3, 0.15, 0.05, 0.25, 0.15, 0.1])]
        if kind == "start":
            stem = stems[rng.integers(len(stems))]
            tokens = stem + [int(t) for t in rng.integers(1, 13, rng.integers(0, 5))]
            m = cache.match_prefix(tokens)
            uuid = cache.inc_lock_ref(m.last_node)
            need = len(tokens) - m.prefix_len
            kv = alloc.alloc(need)
            if kv is None:
                cache.evict(full_num_tokens=max(0, need - alloc.full_available_size),
                            swa_num_tokens=max(0, need - alloc.swa_available_size))
                kv = alloc.alloc(need)
            if kv is None:
                cache.dec_lock_ref(m.last_node, uuid)
                seen["refused"] += 1
            else:
                running.append(dict(tokens=tokens, kv=m.device_indices + kv, node=m.last_node,
                                    prefix=m.prefix_len, uuid=uuid, swa_ev=0, released=False))
        elif kind in ("slide", "release", "finish") and running:
            r = running[rng.integers(len(running))]
            if kind == "slide":  # schedule_batch.py, _evict_swa (page_size 1)
                r["swa_ev"] = max(r["swa_ev"], r["prefix"])
                new = max(r["swa_ev"], len(r["tokens"]) - window - 1)
                if new > r["swa_ev"]:
                    alloc.free_swa(r["kv"][r["swa_ev"]:new])
                    r["swa_ev"] = new
                    seen["swa_freed"] += 1
            elif kind == "release" and not r["released"]:
                cache.dec_swa_lock_only(r["node"], r["uuid"])
                r["released"] = True
                seen["released"] += 1
            elif kind == "finish":
                before = {n.id: n.swa_tombstone for n in cache.nodes()}
                cache.insert(r["tokens"], r["kv"], prev_prefix_len=r["prefix"],
                             swa_evicted_seqlen=r["swa_ev"])
                after = {n.id: n.swa_tombstone for n in cache.nodes()}
                seen["revived_or_split"] += any(before.get(i) and not t
                                                for i, t in after.items())
                cache.dec_lock_ref(r["node"], r["uuid"], skip_swa=r["released"])
                running.remove(r)
                seen["finished"] += 1
        elif kind == "evict":
            cache.evict(full_num_tokens=int(rng.integers(0, 8)),
                        swa_num_tokens=int(rng.integers(0, 8)))
        elif kind == "probe":
            cache.match_prefix([int(t) for t in rng.integers(1, 13, rng.integers(1, 8))])
        # the properties
        cache.sanity_check()
        views = cache.nodes()
        assert all(n.full_lock_ref >= n.swa_lock_ref >= 0 for n in views)
        seen["tombstones"] += sum(n.swa_tombstone and bool(n.children) for n in views)
        tree_slots = [s for n in views for s in n.value]
        own = [s for r in running for s in r["kv"][r["prefix"]:]]
        assert len(set(tree_slots + own)) == len(tree_slots) + len(own)
        assert set(alloc.held_slots) == set(tree_slots) | set(own)
        swa_held = sum(1 for s in alloc.translate(alloc.held_slots) if s)
        assert swa_held + alloc.swa_available_size == alloc.size_swa
    return seen


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_random_stream_keeps_every_invariant(seed):
    seen = _stream(seed)
    assert seen["finished"] > 30 and seen["tombstones"] > 0 and seen["swa_freed"] > 0
    assert seen["released"] > 0 and seen["revived_or_split"] > 0


def test_the_stream_catches_a_split_that_forgets_the_swa_lock(monkeypatch):
    """The property test is not vacuous: a _split_node that does not copy swa_lock_ref to the
    new upper node breaks the counters or the lock invariant, and the stream fails."""
    split = rc.SWARadixCache._split

    def broken(self, child, at):
        new = split(self, child, at)
        new.swa_lock_ref = 0
        return new

    monkeypatch.setattr(rc.SWARadixCache, "_split", broken)
    with pytest.raises((AssertionError, ValueError)):
        for seed in range(3):
            _stream(seed)


def test_sanity_check_names_a_broken_lock_invariant():
    cache, _ = _locked_path()
    cache._nodes[2].swa_lock_ref = 2  # full_lock_ref is 1
    with pytest.raises(AssertionError, match="node 2: full_lock_ref 1 < swa_lock_ref 2"):
        cache.sanity_check()


# --------------------------------------------------------------------------- bad inputs

def _held(n=3):
    a = rc.SWATokenAllocator(8, 8)
    a.alloc(n)
    return a


def _request():
    """A cache holding 1 2 3 (slots 1 2 3), window 2, and a request 1 2 3 4 that matched them
    and holds slot 4."""
    cache = rc.SWARadixCache(rc.SWATokenAllocator(16, 16), 2)
    serve(cache, [1, 2, 3])
    m = cache.match_prefix([1, 2, 3, 4])
    cache.allocator.alloc(1)
    return cache, m


def _locked():
    cache, m = _request()
    assert cache.inc_lock_ref(m.last_node) == 1 and m.last_node == 1
    return cache


_SLOTS = st.sampled_from([None, "ab", [1.5], [True], [[1]], [0], [9], [4], [1, 1], 3.0])
_TOKENS = st.sampled_from([None, "ab", [1.5], [True], [[1, 2]], [-1], [1, -2]])

BAD_INPUTS = [
    Case(rc.SWATokenAllocator, args=(8, 4), bad=dict(size=ints(minimum=1),
                                                     size_swa=ints(minimum=1))),
    Case(rc.SWATokenAllocator.alloc, args=(2,),
         call=lambda need_size: _held().alloc(need_size), bad=dict(need_size=ints(minimum=0))),
    Case(rc.SWATokenAllocator.free, args=([2, 1],), call=lambda indices: _held().free(indices),
         bad=dict(indices=_SLOTS)),
    Case(rc.SWATokenAllocator.free_swa, args=([2, 1],),
         call=lambda indices: _held().free_swa(indices), bad=dict(indices=_SLOTS)),
    Case(rc.SWATokenAllocator.translate, args=([2, 0, 5],),
         call=lambda indices: _held().translate(indices),
         bad=dict(indices=st.sampled_from([None, "ab", [1.5], [True], [[1]], [-1], [9]]))),
    Case(rc.SWARadixCache, args=(rc.SWATokenAllocator(4, 4), 2),
         bad=dict(allocator=st.sampled_from([None, 4, "allocator", object()]),
                  sliding_window_size=ints(minimum=1))),
    Case(rc.SWARadixCache.match_prefix, args=([1, 2, 5],),
         call=lambda token_ids: _request()[0].match_prefix(token_ids),
         bad=dict(token_ids=_TOKENS)),
    Case(rc.SWARadixCache.insert, args=([1, 2, 3, 4], [1, 2, 3, 4]),
         kwargs=dict(prev_prefix_len=3, swa_evicted_seqlen=0),
         call=lambda token_ids, kv_indices, prev_prefix_len=0, swa_evicted_seqlen=0:
         _request()[0].insert(token_ids, kv_indices, prev_prefix_len=prev_prefix_len,
                              swa_evicted_seqlen=swa_evicted_seqlen),
         bad=dict(token_ids=_TOKENS | st.just([]),
                  kv_indices=st.sampled_from([None, "ab", [1.5], [True], [[1]], [0, 1, 2, 4],
                                              [1, 2, 3], [1, 2, 3, 99], [1, 2, 3, 9],
                                              [1, 2, 3, 3], [4, 2, 3, 1]]),
                  prev_prefix_len=ints(minimum=0, maximum=4) | st.sampled_from([1, 2]),
                  swa_evicted_seqlen=ints(minimum=0, maximum=4) | st.just(4))),
    Case(rc.SWARadixCache.inc_lock_ref, args=(1,),
         call=lambda node_id: _request()[0].inc_lock_ref(node_id),
         bad=dict(node_id=ints(minimum=0) | st.just(9))),
    Case(rc.SWARadixCache.dec_lock_ref, args=(1, 1), kwargs=dict(skip_swa=False),
         call=lambda node_id, swa_uuid_for_lock=None, skip_swa=False: _locked().dec_lock_ref(
             node_id, swa_uuid_for_lock, skip_swa=skip_swa),
         bad=dict(node_id=ints(minimum=0) | st.just(9),
                  swa_uuid_for_lock=ints(minimum=1).filter(lambda v: v is not None)
                  | st.just(7),
                  skip_swa=flags() | st.just(True))),
    Case(rc.SWARadixCache.dec_swa_lock_only, args=(1, 1),
         call=lambda node_id, swa_uuid_for_lock=None: _locked().dec_swa_lock_only(
             node_id, swa_uuid_for_lock),
         bad=dict(node_id=ints(minimum=0) | st.just(9),
                  swa_uuid_for_lock=ints(minimum=1).filter(lambda v: v is not None)
                  | st.just(7))),
    Case(rc.SWARadixCache.evict, args=(), kwargs=dict(full_num_tokens=2, swa_num_tokens=1),
         call=lambda full_num_tokens=0, swa_num_tokens=0: _request()[0].evict(
             full_num_tokens, swa_num_tokens),
         bad=dict(full_num_tokens=ints(minimum=0), swa_num_tokens=ints(minimum=0))),
    Case(rc.SWARadixCache.node, args=(1,), call=lambda node_id: _request()[0].node(node_id),
         bad=dict(node_id=ints(minimum=0) | st.just(9))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
