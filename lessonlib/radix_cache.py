"""SGLang's radix-tree prefix cache for hybrid models (notebook 11, the second design beside
``lessonlib.paged``'s vLLM block pool): one tree of token ids whose nodes hold the KV slots of
both the full-attention layers and the sliding-window (SWA) layers, two LRU lists over the same
nodes, SWA tombstones, and the two lock counts of requests in flight.

Every rule here is SGLang's, read in its source on the main branch (no release tag names that
snapshot): ``python/sglang/srt/mem_cache/swa_radix_cache.py`` at commit
019cfc0f9617007e17cbb0bcff2545ce3e0aea45, ``mem_cache/allocator/swa.py`` at
0019020ab3cd450a4f8fba13dff2dfb6dd7801af and ``mem_cache/allocator/token.py`` at
0be0ba5414c3fe09e08b5d90e5b20efdfa33b9db; ``base_prefix_cache.py``'s ``EvictParams``
(``num_tokens``, ``swa_num_tokens``). No engine can run SGLang here: the tests hold this model
to the rules as stated from that source, not to a run of SGLang. The file and function each
rule follows::

    SWATokenAllocator       allocator/swa.py, SWATokenToKVPoolAllocator (page_size 1): two
                            TokenToKVPoolAllocator free lists (allocator/token.py, slot 0 kept
                            back for padded tokens), full_to_swa_index_mapping, alloc, free,
                            free_swa, translate_loc_from_full_to_swa
    SWARadixCache           swa_radix_cache.py, SWARadixCache and its TreeNode and LRUList
      match_prefix            match_prefix, _match_prefix_helper, _match_post_processor
      insert                  insert, _insert_helper (its three tombstone branches),
                              _recover_tombstone_keeping_locked_full, _add_new_node
      (node split)            _split_node
      inc_lock_ref, dec_lock_ref, dec_swa_lock_only
                              the functions of those names
      evict                   evict: full eviction (leaves, LRU first), then SWA eviction
                              (any node, LRU first), _iteratively_delete_tombstone_leaf
      sanity_check            LRUList.sanity_check and the TreeNode invariants in comments

The tree stores full-attention slot indices only (a node's ``value``); a slot's SWA slot is
``full_to_swa_index_mapping[slot]`` (0: none). A node whose SWA slots were freed but whose
full slots remain is a tombstone (``swa_tombstone``): full attention could reuse it, the
window layers cannot. Matching therefore stops where the last ``sliding_window_size`` tokens
of the match would cross a tombstone. Each node carries ``full_lock_ref`` and
``swa_lock_ref``; ``inc_lock_ref`` locks full KV from a node up to the root but SWA KV only for
the first ``sliding_window_size`` tokens of that path, the top node of that stretch marked
with a ``swa_uuid`` that ``dec_lock_ref`` stops at. Invariant: ``full_lock_ref >=
swa_lock_ref`` on every node; a node whose lock count is above 0 is never evicted from the
list of that count.

Where lessonlib departs from SGLang, it says so: page_size 1 (one token per slot, the
allocator SGLang uses then), no EAGLE bigram keys, extra keys, host (HiCache) tier, KV events
or metrics; the optional ``SGLANG_OPT_SWA_RADIX_CACHE_COMPACT`` chain compaction (off by
default, marked FIXME there) and ``SGLANG_OPT_SWA_SPLIT_LEAF_ON_INSERT`` leaf split are left
out; node ids and swa uuids count per cache (SGLang's counters are class-wide, shared by its LRU
lists' dummy nodes); LRU lists are Python lists, most recently used first, not linked lists;
``last_access_time`` (SGLang keeps it for its sanity check only) is not kept. Where SGLang
asserts, this raises ValueError naming the argument, before anything changes.
"""
from dataclasses import dataclass

import numpy as np

from . import _validate as check

__all__ = ["SWATokenAllocator", "SWARadixCache", "MatchResult", "EvictResult", "TreeNodeView"]


# --------------------------------------------------------------------------- arguments

def _ints(name, values, *, minimum=0, maximum=None, allow_empty=True):
    """A 1-D sequence of ints in [minimum, maximum] as a list of Python ints."""
    if isinstance(values, (list, tuple)) and not values:
        if not allow_empty:
            raise ValueError(f"{name} must hold at least one value, got none")
        return []
    a = check.array(name, values, kind="int", ndim=1)
    if a.size == 0:
        if not allow_empty:
            raise ValueError(f"{name} must hold at least one value, got none")
        return []
    bad = (a < minimum) | ((a > maximum) if maximum is not None else False)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name} must hold values >= {minimum}{upper}, got {a[at]} at index "
                         f"{at}")
    return [int(v) for v in a]


def _distinct(name, values):
    seen = set()
    for i, v in enumerate(values):
        if v in seen:
            raise ValueError(f"{name}[{i}] = {v} appears twice")
        seen.add(v)


# --------------------------------------------------------------------------- the allocator

class SWATokenAllocator:
    """SGLang's ``SWATokenToKVPoolAllocator`` with page_size 1 (allocator/swa.py): a full pool
    of ``size`` slots and an SWA pool of ``size_swa`` slots, each a ``TokenToKVPoolAllocator``
    free list (allocator/token.py) that starts as 1, 2, ..., n (slot 0 is the padded slot,
    never handed out), hands out from its front and takes freed slots back at its end
    (``need_sort`` off). A request's KV indices are full slots; ``full_to_swa_index_mapping``
    gives each held full slot its SWA slot, 0 once the SWA slot is freed.

    ``alloc`` takes one full and one SWA slot per token, or returns None when either pool is
    short (SGLang's scheduler then asks the tree cache to evict). ``free`` gives back full slots
    and their SWA slots, ``free_swa`` only the SWA slots (a window layer no longer needs them).
    Freeing a slot no one holds is a ValueError here (SGLang: "the API is not idempotent")."""

    def __init__(self, size, size_swa):
        self._size = check.integer("size", size, minimum=1)
        self._size_swa = check.integer("size_swa", size_swa, minimum=1)
        self._full_free = list(range(1, self._size + 1))
        self._swa_free = list(range(1, self._size_swa + 1))
        self._to_swa = [0] * (self._size + 1)
        self._held = [False] * (self._size + 1)

    @property
    def size(self):
        """Full-attention slots (the padded slot 0 not counted)."""
        return self._size

    @property
    def size_swa(self):
        """Sliding-window slots (the padded slot 0 not counted)."""
        return self._size_swa

    @property
    def full_free_slots(self):
        """The free full slots in list order, the next ``alloc`` takes from the front."""
        return tuple(self._full_free)

    @property
    def swa_free_slots(self):
        """The free SWA slots in list order, the next ``alloc`` takes from the front."""
        return tuple(self._swa_free)

    @property
    def full_available_size(self):
        """Free full slots (SGLang's ``full_available_size``)."""
        return len(self._full_free)

    @property
    def swa_available_size(self):
        """Free SWA slots (SGLang's ``swa_available_size``)."""
        return len(self._swa_free)

    @property
    def available_size(self):
        """Tokens ``alloc`` can give now: the smaller of the two free counts."""
        return min(len(self._full_free), len(self._swa_free))

    @property
    def held_slots(self):
        """The full slots handed out and not freed, in id order."""
        return tuple(i for i, h in enumerate(self._held) if h)

    def _slots(self, name, indices):
        ids = _ints(name, indices, minimum=1, maximum=self._size)
        for i, s in enumerate(ids):
            if not self._held[s]:
                raise ValueError(f"{name}[{i}] = {s} is a free full slot: no one holds it")
        _distinct(name, ids)
        return ids

    def alloc(self, need_size):
        """Take ``need_size`` full slots and as many SWA slots, each from the front of its free
        list, and map each full slot to its SWA slot (SGLang's ``alloc``): a tuple of full
        slots, or None when either pool has fewer free slots (nothing is taken then)."""
        n = check.integer("need_size", need_size, minimum=0)
        if n > len(self._full_free) or n > len(self._swa_free):
            return None
        full, self._full_free = self._full_free[:n], self._full_free[n:]
        swa, self._swa_free = self._swa_free[:n], self._swa_free[n:]
        for f, s in zip(full, swa):
            self._held[f] = True
            self._to_swa[f] = s
        return tuple(full)

    def free(self, indices):
        """Give back held full slots: the full slots to the end of the full free list, in the
        order given, then their SWA slots as ``free_swa`` does (SGLang's ``free``)."""
        ids = self._slots("indices", indices)
        for f in ids:
            self._held[f] = False
        self._full_free.extend(ids)
        self._free_swa(ids)

    def free_swa(self, indices):
        """Give back the SWA slots of held full slots, to the end of the SWA free list, and map
        those full slots to 0 (SGLang's ``free_swa``). A full slot already mapped to 0 is passed
        over, as SGLang passes over its 0 entries."""
        self._free_swa(self._slots("indices", indices))

    def _free_swa(self, ids):
        for f in ids:
            if self._to_swa[f]:
                self._swa_free.append(self._to_swa[f])
                self._to_swa[f] = 0

    def translate(self, indices):
        """Each full slot's SWA slot, 0 where it has none (SGLang's
        ``translate_loc_from_full_to_swa``): a tuple."""
        ids = _ints("indices", indices, minimum=0, maximum=self._size)
        return tuple(self._to_swa[f] for f in ids)

    def _adopt_swa(self, node_full, incoming_full):
        """``_recover_tombstone_keeping_locked_full``'s allocator steps: ``node_full`` takes the
        SWA slots of ``incoming_full``, whose full slots alone are freed."""
        for f, g in zip(node_full, incoming_full):
            self._to_swa[f], self._to_swa[g] = self._to_swa[g], 0
            self._held[g] = False
        self._full_free.extend(incoming_full)


# --------------------------------------------------------------------------- results

@dataclass(frozen=True)
class MatchResult:
    """What ``match_prefix`` found.

    device_indices  the full slots of the usable cached prefix, one per token
    last_node       the id of the node that prefix ends at (0, the root, for none); the node
                    a request passes to ``inc_lock_ref``
    """
    device_indices: tuple
    last_node: int

    @property
    def prefix_len(self):
        """Tokens the match gives: ``len(device_indices)``."""
        return len(self.device_indices)


@dataclass(frozen=True)
class EvictResult:
    """What ``evict`` freed: full-attention and SWA tokens (SGLang's ``EvictResult``
    ``num_tokens_evicted`` and ``swa_num_tokens_evicted``)."""
    full_num_evicted: int
    swa_num_evicted: int


@dataclass(frozen=True)
class TreeNodeView:
    """One node of the tree as it is now.

    id              the node's id (0 is the root; a split gives the upper part a new id and
                    the lower part keeps the old one)
    parent          the parent's id (None for the root)
    key             the token ids on the edge into this node
    value           their full slots
    swa_value       their SWA slots (0 where freed: all 0 on a tombstone)
    children        the children's ids, by first token
    swa_tombstone, full_lock_ref, swa_lock_ref, swa_uuid
                    SGLang's fields of those names
    """
    id: int
    parent: object
    key: tuple
    value: tuple
    swa_value: tuple
    children: tuple
    swa_tombstone: bool
    full_lock_ref: int
    swa_lock_ref: int
    swa_uuid: object


# --------------------------------------------------------------------------- the tree

class _Node:
    __slots__ = ("id", "parent", "key", "value", "children", "swa_tombstone", "full_lock_ref",
                 "swa_lock_ref", "swa_uuid")

    def __init__(self, node_id):
        self.id = node_id
        self.parent = None
        self.key = []
        self.value = []
        self.children = {}
        self.swa_tombstone = False
        self.full_lock_ref = 0
        self.swa_lock_ref = 0
        self.swa_uuid = None


class _LRUList:
    """swa_radix_cache.py's ``LRUList``: most recently used first. The SWA list never holds a
    tombstone; neither holds the root."""

    def __init__(self, is_swa):
        self.is_swa = is_swa
        self.order = []
        self.members = set()

    def lock(self, node):
        return node.swa_lock_ref if self.is_swa else node.full_lock_ref

    def _at(self, node):
        for i, x in enumerate(self.order):
            if x is node:
                return i
        raise AssertionError(f"node {node.id} is not in the {self.name} list")

    @property
    def name(self):
        return "SWA LRU" if self.is_swa else "full LRU"

    def in_list(self, node):
        return node is not None and node.id in self.members

    def insert_mru(self, node):
        assert not (self.is_swa and node.swa_tombstone) and node.id not in self.members
        self.members.add(node.id)
        self.order.insert(0, node)

    def remove_node(self, node):
        assert not (self.is_swa and node.swa_tombstone)
        del self.order[self._at(node)]
        self.members.discard(node.id)

    def reset_node_mru(self, node):
        assert not (self.is_swa and node.swa_tombstone)
        del self.order[self._at(node)]
        self.order.insert(0, node)

    def reset_node_and_parents_mru(self, node, root):
        """The node first, then its parents after it, nearest first; the SWA list passes over
        tombstones."""
        at = 0
        while node is not root:
            if not self.is_swa or not node.swa_tombstone:
                del self.order[self._at(node)]
                self.order.insert(at, node)
                at += 1
            node = node.parent

    def _scan(self, start, leaf):
        for x in reversed(self.order[:start]):
            if self.lock(x) == 0 and not (leaf and x.children):
                return x
        return None

    def get_lru_no_lock(self):
        return self._scan(len(self.order), leaf=False)

    def get_leaf_lru_no_lock(self):
        return self._scan(len(self.order), leaf=True)

    def get_prev_no_lock(self, node):
        return self._scan(self._at(node), leaf=False)

    def get_prev_leaf_no_lock(self, node):
        return self._scan(self._at(node), leaf=True)


class SWARadixCache:
    """SGLang's ``SWARadixCache`` (swa_radix_cache.py) over an ``SWATokenAllocator``, for a
    model whose window layers see the last ``sliding_window_size`` tokens.

    A request's life, as SGLang's scheduler drives it: ``match_prefix`` its tokens, then
    ``inc_lock_ref(result.last_node)`` (keep the returned ``swa_uuid_for_lock``), allocate the
    rest of its tokens, run; at the end ``insert`` all its tokens and KV indices with
    ``prev_prefix_len`` = the matched length (the cache takes the indices over and frees those
    it already had), then ``dec_lock_ref(last_node, swa_uuid_for_lock)``. ``evict`` makes room.

    Read-only views: ``nodes()`` and ``node(id)`` (``TreeNodeView``), ``full_lru_list`` and
    ``swa_lru_list`` (node ids, most recently used first), the four size counters, and
    ``sanity_check()``, which raises AssertionError when an invariant is broken."""

    def __init__(self, allocator, sliding_window_size):
        if not isinstance(allocator, SWATokenAllocator):
            raise ValueError(f"allocator must be a lessonlib.radix_cache.SWATokenAllocator, "
                             f"got {check.describe(allocator)}")
        self._alloc = allocator
        self._window = check.integer("sliding_window_size", sliding_window_size, minimum=1)
        self._next_id = 1
        self._uuid = 0
        self._root = _Node(0)
        self._root.full_lock_ref = 1  # SGLang's reset(): the root is locked, never evicted
        self._root.swa_lock_ref = 1
        self._nodes = {0: self._root}
        self._full_evictable_size = 0
        self._swa_evictable_size = 0
        self._full_protected_size = 0
        self._swa_protected_size = 0
        self._full_lru = _LRUList(is_swa=False)
        self._swa_lru = _LRUList(is_swa=True)

    # ----------------------------------------------------------------- views
    @property
    def allocator(self):
        """The ``SWATokenAllocator`` the cache frees slots into."""
        return self._alloc

    @property
    def sliding_window_size(self):
        """Tokens the window layers see (SGLang's ``sliding_window_size``)."""
        return self._window

    @property
    def full_evictable_size(self):
        """Full-attention tokens in nodes whose ``full_lock_ref`` is 0: what ``evict`` could
        free."""
        return self._full_evictable_size

    @property
    def full_protected_size(self):
        """Full-attention tokens in nodes a running request has locked."""
        return self._full_protected_size

    @property
    def swa_evictable_size(self):
        """SWA tokens in non-tombstone nodes whose ``swa_lock_ref`` is 0."""
        return self._swa_evictable_size

    @property
    def swa_protected_size(self):
        """SWA tokens in non-tombstone nodes a running request's window has locked."""
        return self._swa_protected_size

    @property
    def full_lru_list(self):
        """Ids of the nodes in the full-attention LRU list, most recently used first: every
        node but the root."""
        return tuple(x.id for x in self._full_lru.order)

    @property
    def swa_lru_list(self):
        """Ids of the nodes in the SWA LRU list, most recently used first: every node but the
        root and the tombstones."""
        return tuple(x.id for x in self._swa_lru.order)

    def _view(self, n):
        return TreeNodeView(n.id, None if n.parent is None else n.parent.id, tuple(n.key),
                            tuple(n.value), self._alloc.translate(n.value),
                            tuple(c.id for _, c in sorted(n.children.items())),
                            n.swa_tombstone, n.full_lock_ref, n.swa_lock_ref, n.swa_uuid)

    def _node(self, node_id):
        i = check.integer("node_id", node_id, minimum=0)
        if i not in self._nodes:
            raise ValueError(f"node_id: no node {i} in the tree (evicted, or never made)")
        return self._nodes[i]

    def node(self, node_id):
        """The node ``node_id`` as a ``TreeNodeView``."""
        return self._view(self._node(node_id))

    def _walk(self):
        stack = [self._root]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(c for _, c in sorted(n.children.items(), reverse=True))

    def nodes(self):
        """Every node, the root first, depth first, children by first token: a tuple of
        ``TreeNodeView``."""
        return tuple(self._view(n) for n in self._walk())

    def total_size(self):
        """(full tokens, SWA tokens) the tree holds (SGLang's ``total_size``): tombstones count
        in the first only."""
        nodes = list(self._walk())
        return (sum(len(n.value) for n in nodes),
                sum(len(n.value) for n in nodes if not n.swa_tombstone))

    # ----------------------------------------------------------------- matching
    def match_prefix(self, token_ids):
        """The longest cached prefix of ``token_ids`` whose window layers' KV is there
        (SGLang's ``match_prefix``): a ``MatchResult``.

        Walking down, the match is cut back to the last point from which either the path to
        the root holds no tombstone, or at least ``sliding_window_size`` non-tombstone tokens
        were matched since the last tombstone (``_match_prefix_helper``): a request resumes
        there with its window complete. A partly matched node is split first (the split
        stays). The nodes from the result's node up to the root become the most recently
        used of both lists, the deepest first (``reset_node_and_parents_mru``), so that nodes
        nearer the root are evicted and tombstoned first. No token ids: the root, nothing
        moved."""
        key = _ints("token_ids", token_ids)
        if not key:
            return MatchResult((), 0)
        value, last, best_len = self._match_helper(key)
        self._full_lru.reset_node_and_parents_mru(last, self._root)
        self._swa_lru.reset_node_and_parents_mru(last, self._root)
        return MatchResult(tuple(i for v in value[:best_len] for i in v), last.id)

    def _match_helper(self, key):
        node, value = self._root, []
        since = float("inf")  # tokens matched since the last tombstone; none yet: always ok
        best_len, best = 0, node
        while key and key[0] in node.children:
            child = node.children[key[0]]
            if child.swa_tombstone:
                if since >= self._window:
                    best_len, best = len(value), node
                since = 0
            n = _common(child.key, key)
            if n < len(child.key):
                new = self._split(child, n)
                value.append(new.value)
                if not new.swa_tombstone:
                    since += len(new.value)
                node = new
                break
            value.append(child.value)
            if not child.swa_tombstone:
                since += len(child.value)
            node, key = child, key[n:]
        if since >= self._window:
            best_len, best = len(value), node
        return value, best, best_len

    def _split(self, child, at):
        """``_split_node``: the first ``at`` tokens of ``child`` become a new parent node,
        which takes the child's tombstone flag, lock counts and swa_uuid; both go to the
        front of the lists, the child first."""
        new = _Node(self._next_id)
        self._next_id += 1
        self._nodes[new.id] = new
        new.children = {child.key[at]: child}
        new.parent = child.parent
        new.swa_tombstone = child.swa_tombstone
        new.full_lock_ref, new.swa_lock_ref = child.full_lock_ref, child.swa_lock_ref
        new.key, new.value = child.key[:at], child.value[:at]
        new.swa_uuid, child.swa_uuid = child.swa_uuid, None
        self._full_lru.remove_node(child)
        if not new.swa_tombstone:
            self._swa_lru.remove_node(child)
        child.parent = new
        child.key, child.value = child.key[at:], child.value[at:]
        new.parent.children[new.key[0]] = new
        self._full_lru.insert_mru(new)
        self._full_lru.insert_mru(child)
        if not new.swa_tombstone:
            self._swa_lru.insert_mru(new)
            self._swa_lru.insert_mru(child)
        return new

    # ----------------------------------------------------------------- inserting
    def _check_insert(self, key, kv, prev, swa_evicted):
        node, done = self._root, 0
        while done < prev:
            child = node.children.get(key[done])
            if child is None or _common(child.key, key[done:]) < len(child.key) \
                    or done + len(child.key) > prev:
                raise ValueError(f"prev_prefix_len = {prev}: the tree does not hold the first "
                                 f"{prev} tokens as whole nodes (pass the length "
                                 f"match_prefix gave, while the request holds its lock)")
            if child.value != kv[done:done + len(child.key)]:
                raise ValueError(f"kv_indices[:{done + len(child.key)}] are not the slots the "
                                 f"tree holds for that prefix (the request's matched prefix)")
            node, done = child, done + len(child.key)
        owned = {i for n in self._walk() for i in n.value}
        held = set(self._alloc.held_slots)
        rest = kv[prev:]
        for j, s in enumerate(rest, start=prev):
            if s not in held:
                raise ValueError(f"kv_indices[{j}] = {s} is a free full slot (allocate the "
                                 f"request's slots first)")
            if s in owned:
                raise ValueError(f"kv_indices[{j}] = {s} is a slot the tree already holds")
        _distinct("kv_indices", rest)
        swa = self._alloc.translate(rest)
        for j, t in enumerate(swa, start=prev):
            if (t == 0) != (j < swa_evicted):
                raise ValueError(
                    f"swa_evicted_seqlen = {swa_evicted}: token {j}'s SWA slot is "
                    f"{'freed' if t == 0 else 'held'}; the tokens after prev_prefix_len and "
                    f"before swa_evicted_seqlen, and those only, have theirs freed")

    def insert(self, token_ids, kv_indices, *, prev_prefix_len=0, swa_evicted_seqlen=0):
        """Cache a request's tokens and their full slots (SGLang's ``insert``, as
        ``cache_finished_req`` calls it): the number of leading tokens the tree already held.

        ``kv_indices[:prev_prefix_len]`` are the slots the request's match gave (the tree's
        own); the rest are the request's, held from the allocator, and the cache takes them
        over. The tokens from ``prev_prefix_len`` to ``swa_evicted_seqlen`` had their SWA slots
        freed by the request as its window moved on (SGLang's ``req.swa_evicted_seqlen``; 0:
        none). Walking the match (``_insert_helper``), each node becomes the most recently
        used; a partly matched node is split; where the tree already holds a token after
        ``prev_prefix_len``, the request's duplicate slot is freed, except on a tombstone,
        which is revived with the request's slots if they still have SWA KV (the tree's old
        full slots freed; those of a node a running request has locked are kept and take the
        request's SWA slots), or split where the request's SWA KV starts. The unmatched rest
        becomes a new leaf, preceded by a tombstone node for its tokens without SWA KV; when
        none of the rest has SWA KV, no node is made (a leaf is never a tombstone) and its
        slots are freed."""
        key = _ints("token_ids", token_ids, allow_empty=False)
        kv = _ints("kv_indices", kv_indices, minimum=1, maximum=self._alloc.size)
        if len(kv) != len(key):
            raise ValueError(f"kv_indices must hold one slot per token: {len(kv)} for "
                             f"{len(key)} token ids")
        prev = check.integer("prev_prefix_len", prev_prefix_len, minimum=0, maximum=len(key))
        swa_ev = check.integer("swa_evicted_seqlen", swa_evicted_seqlen, minimum=0,
                               maximum=len(key))
        self._check_insert(key, kv, prev, swa_ev)
        return self._insert(key, kv, prev, swa_ev)

    def _touch(self, node):
        self._full_lru.reset_node_mru(node)
        if not node.swa_tombstone:
            self._swa_lru.reset_node_mru(node)

    def _insert(self, key, value, update_after, swa_ev):
        node, total = self._root, 0
        free = self._alloc.free
        while key and key[0] in node.children:
            node = node.children[key[0]]
            self._touch(node)
            n = _common(node.key, key)
            if n < len(node.key):
                node = self._split(node, n)
            if update_after < total + n:
                if node.swa_tombstone:
                    assert node.swa_lock_ref == 0
                    if swa_ev <= total:  # branch 1: all of value[:n] has SWA KV
                        if node.full_lock_ref > 0:
                            self._recover_locked(node, value[:n])
                        else:
                            free(node.value[:n])
                            node.value = value[:n]
                            self._revive(node)
                    elif swa_ev < total + n:  # branch 2: the SWA KV starts inside
                        start = swa_ev - total
                        if node.full_lock_ref > 0:
                            self._split(node, start)
                            self._recover_locked(node, value[start:n])
                            free(value[:start])
                        else:
                            free(node.value[start:n])
                            self._split(node, start)
                            node.value = value[start:n]
                            free(value[:start])
                            self._revive(node)
                    else:  # branch 3: none of value[:n] has SWA KV
                        free(value[:n])
                else:
                    free(value[:n])
            total += n
            key, value = key[n:], value[n:]
        if key:
            if swa_ev == total + len(key):
                free(value)
                return total
            if total < swa_ev < total + len(key):
                t = swa_ev - total
                node = self._add_node(node, key[:t], value[:t], tombstone=True)
                key, value = key[t:], value[t:]
            self._add_node(node, key, value, tombstone=False)
        return total

    def _revive(self, node):
        node.swa_tombstone = False
        self._swa_lru.insert_mru(node)
        self._swa_evictable_size += len(node.value)

    def _recover_locked(self, node, incoming):
        """``_recover_tombstone_keeping_locked_full``: keep the locked full slots, map them to
        the incoming SWA slots, free the incoming full slots."""
        self._alloc._adopt_swa(node.value, incoming)
        self._revive(node)

    def _add_node(self, parent, key, value, *, tombstone):
        new = _Node(self._next_id)
        self._next_id += 1
        self._nodes[new.id] = new
        new.parent, new.key, new.value, new.swa_tombstone = parent, key, value, tombstone
        parent.children[key[0]] = new
        self._full_lru.insert_mru(new)
        self._full_evictable_size += len(value)
        if not tombstone:
            self._swa_lru.insert_mru(new)
            self._swa_evictable_size += len(value)
        return new

    # ----------------------------------------------------------------- locks
    def inc_lock_ref(self, node_id):
        """Lock the path of a running request (SGLang's ``inc_lock_ref``): ``full_lock_ref``
        rises on every node from ``node_id`` up to the root (exclusive), ``swa_lock_ref`` only
        on the nodes from ``node_id`` up until ``sliding_window_size`` tokens are covered; the
        node where they are gets a ``swa_uuid`` (if it has none), which is returned as
        ``swa_uuid_for_lock`` for ``dec_lock_ref`` (None when the path is shorter than the
        window). A node's count rising from 0 moves its tokens from the evictable to the
        protected size. The window stretch must hold no tombstone (a ``match_prefix`` result
        never does)."""
        node = self._node(node_id)
        covered, n = 0, node
        while n is not self._root and covered < self._window:
            if n.swa_tombstone:
                raise ValueError(f"node_id: node {n.id}, within the window of node {node.id}, "
                                 f"is an SWA tombstone: its window KV is gone")
            covered += len(n.value)
            n = n.parent
        covered, uuid = 0, None
        while node is not self._root:
            if node.full_lock_ref == 0:
                self._full_evictable_size -= len(node.value)
                self._full_protected_size += len(node.value)
            node.full_lock_ref += 1
            if covered < self._window:
                if node.swa_lock_ref == 0:
                    self._swa_evictable_size -= len(node.value)
                    self._swa_protected_size += len(node.value)
                node.swa_lock_ref += 1
                covered += len(node.value)
                if covered >= self._window:
                    if node.swa_uuid is None:
                        self._uuid += 1
                        node.swa_uuid = self._uuid
                    uuid = node.swa_uuid
            node = node.parent
        return uuid

    def _uuid_arg(self, node, swa_uuid_for_lock, swa):
        if swa_uuid_for_lock is None:
            return None
        u = check.integer("swa_uuid_for_lock", swa_uuid_for_lock, minimum=1)
        n = node
        while n is not self._root and n.swa_uuid != u:
            n = n.parent
        if swa and n is self._root:
            raise ValueError(f"swa_uuid_for_lock: no node from {node.id} up to the root "
                             f"carries swa_uuid {u} (pass what inc_lock_ref returned)")
        return u

    def _check_dec(self, node, uuid, dec_full, dec_swa):
        n = node
        while n is not self._root:
            full = n.full_lock_ref - dec_full
            if full < 0:
                raise ValueError(f"node_id: node {n.id} on the path of node {node.id} is not "
                                 f"locked (full_lock_ref 0)")
            if dec_swa:
                if n.swa_tombstone or n.swa_lock_ref == 0:
                    raise ValueError(f"node_id: node {n.id} on the path of node {node.id} "
                                     f"holds no SWA lock to release (swa_lock_ref "
                                     f"{n.swa_lock_ref}, tombstone {n.swa_tombstone})")
                swa = n.swa_lock_ref - 1
                if uuid is not None and n.swa_uuid == uuid:
                    dec_swa = False
            else:
                swa = n.swa_lock_ref
            if full < swa:
                raise ValueError(f"skip_swa: releasing the full lock of node {n.id} would "
                                 f"leave full_lock_ref {full} < swa_lock_ref {swa}; release "
                                 f"the SWA lock first (dec_swa_lock_only)")
            n = n.parent

    def dec_lock_ref(self, node_id, swa_uuid_for_lock=None, *, skip_swa=False):
        """Unlock what ``inc_lock_ref(node_id)`` locked (SGLang's ``dec_lock_ref``):
        ``full_lock_ref`` falls on every node up to the root, ``swa_lock_ref`` on the nodes up
        to and including the one carrying ``swa_uuid_for_lock`` (None: up to the root). With
        ``skip_swa`` only the full counts fall: the request released its SWA lock before, with
        ``dec_swa_lock_only``. A count falling to 0 moves the node's tokens back to the
        evictable size."""
        node = self._node(node_id)
        skip = check.flag("skip_swa", skip_swa)
        uuid = self._uuid_arg(node, swa_uuid_for_lock, not skip)
        self._check_dec(node, uuid, 1, not skip)
        dec_swa = not skip
        while node is not self._root:
            if node.full_lock_ref == 1:
                self._full_evictable_size += len(node.value)
                self._full_protected_size -= len(node.value)
            node.full_lock_ref -= 1
            if dec_swa:
                if node.swa_lock_ref == 1:
                    self._swa_evictable_size += len(node.value)
                    self._swa_protected_size -= len(node.value)
                node.swa_lock_ref -= 1
                if uuid is not None and node.swa_uuid == uuid:
                    dec_swa = False
            node = node.parent

    def dec_swa_lock_only(self, node_id, swa_uuid_for_lock=None):
        """Release only the SWA part of a request's lock, once its decoding has moved past the
        window (SGLang's ``dec_swa_lock_only``); the full lock stays until ``dec_lock_ref(...,
        skip_swa=True)``. An internal node whose SWA count falls to 0 becomes SWA-evictable; a
        leaf has its SWA slots freed at once and becomes a tombstone (the SWA list may not hold
        a leaf whose full KV is locked)."""
        node = self._node(node_id)
        uuid = self._uuid_arg(node, swa_uuid_for_lock, True)
        self._check_dec(node, uuid, 0, True)
        while node is not self._root:
            if node.swa_lock_ref == 1:
                self._swa_protected_size -= len(node.value)
                if not node.children:
                    self._alloc.free_swa(node.value)
                    self._swa_lru.remove_node(node)
                    node.swa_tombstone = True
                else:
                    self._swa_evictable_size += len(node.value)
            node.swa_lock_ref -= 1
            if uuid is not None and node.swa_uuid == uuid:
                break
            node = node.parent

    # ----------------------------------------------------------------- eviction
    def evict(self, full_num_tokens=0, swa_num_tokens=0):
        """Free at least the asked tokens where unlocked nodes allow (SGLang's ``evict``): an
        ``EvictResult``.

        First, while fewer than ``full_num_tokens`` full tokens are freed: the least recently
        used unlocked leaf is deleted, its full and SWA slots freed, then every tombstone it
        leaves as an unlocked leaf above it (``_iteratively_delete_tombstone_leaf``). Then,
        while fewer than ``swa_num_tokens`` SWA tokens are freed (those of the first phase
        count): the least recently used node of the SWA list whose ``swa_lock_ref`` is 0 loses
        its SWA slots; an internal node (or a leaf whose full KV is locked) stays as a
        tombstone, an unlocked leaf is deleted with its full slots, as above. The full tokens
        of tombstones deleted in this second phase are freed but not counted in the result, as
        in SGLang."""
        want_full = check.integer("full_num_tokens", full_num_tokens, minimum=0)
        want_swa = check.integer("swa_num_tokens", swa_num_tokens, minimum=0)
        full_done = swa_done = 0
        full, swa, free = self._full_lru, self._swa_lru, self._alloc.free
        if want_full > 0:
            x = full.get_leaf_lru_no_lock()
            while full_done < want_full and full.in_list(x):
                free(x.value)
                full_done += len(x.value)
                if not x.swa_tombstone:
                    swa_done += len(x.value)
                x_next = full.get_prev_leaf_no_lock(x)
                full.remove_node(x)
                if not x.swa_tombstone:
                    swa.remove_node(x)
                self._delete_leaf(x)
                x, more = self._delete_tombstone_leaves(x)
                full_done += more
                if not x.parent.children:
                    x_next = full.get_leaf_lru_no_lock()
                x = x_next
        if swa_done < want_swa:
            x = swa.get_lru_no_lock()
            while swa_done < want_swa and swa.in_list(x):
                if x.children or x.full_lock_ref > 0:
                    self._alloc.free_swa(x.value)
                    swa_done += len(x.value)
                    x_next = swa.get_prev_no_lock(x)
                    swa.remove_node(x)
                    self._swa_evictable_size -= len(x.value)
                    x.swa_tombstone = True
                else:
                    free(x.value)
                    full_done += len(x.value)
                    swa_done += len(x.value)
                    x_next = swa.get_prev_no_lock(x)
                    full.remove_node(x)
                    swa.remove_node(x)
                    self._delete_leaf(x)
                    self._delete_tombstone_leaves(x)
                x = x_next
        return EvictResult(full_done, swa_done)

    def _delete_leaf(self, node):
        del node.parent.children[node.key[0]]
        del self._nodes[node.id]
        self._full_evictable_size -= len(node.key)
        if not node.swa_tombstone:
            self._swa_evictable_size -= len(node.key)

    def _delete_tombstone_leaves(self, node):
        freed = 0
        while node.parent.swa_tombstone and not node.parent.children:
            p = node.parent
            if p is self._root or p.full_lock_ref > 0:
                break
            assert p.swa_lock_ref == 0
            self._alloc.free(p.value)
            freed += len(p.value)
            self._full_lru.remove_node(p)
            self._delete_leaf(p)
            node = p
        return node, freed

    # ----------------------------------------------------------------- invariants
    def sanity_check(self):
        """Raise AssertionError naming the first broken invariant: on every node
        ``full_lock_ref >= swa_lock_ref >= 0`` and a tombstone's ``swa_lock_ref`` is 0; the
        full list holds every node but the root, the SWA list every one that is no tombstone;
        a node's SWA slots are all held, or (a tombstone) all freed; the tree's full slots are
        distinct and held; the four size counters equal their sums over the nodes."""
        nodes = [n for n in self._walk() if n is not self._root]
        sizes = dict(full_evictable_size=0, full_protected_size=0, swa_evictable_size=0,
                     swa_protected_size=0)
        slots = []
        for n in nodes:
            _require(n.full_lock_ref >= n.swa_lock_ref >= 0,
                     f"node {n.id}: full_lock_ref {n.full_lock_ref} < swa_lock_ref "
                     f"{n.swa_lock_ref} (or a count below 0)")
            _require(not (n.swa_tombstone and n.swa_lock_ref),
                     f"node {n.id}: a tombstone with swa_lock_ref {n.swa_lock_ref}")
            _require(len(n.key) == len(n.value) > 0 and n.parent.children.get(n.key[0]) is n,
                     f"node {n.id}: key and value disagree with the tree")
            _require(self._full_lru.in_list(n), f"node {n.id} is not in the full LRU list")
            _require(self._swa_lru.in_list(n) != n.swa_tombstone,
                     f"node {n.id}: tombstone {n.swa_tombstone}, yet in the SWA LRU list: "
                     f"{self._swa_lru.in_list(n)}")
            swa = self._alloc.translate(n.value)
            _require(all((s == 0) == n.swa_tombstone for s in swa),
                     f"node {n.id}: SWA slots {swa} with tombstone {n.swa_tombstone}")
            slots += n.value
            sizes["full_protected_size" if n.full_lock_ref else "full_evictable_size"] += \
                len(n.value)
            if not n.swa_tombstone:
                sizes["swa_protected_size" if n.swa_lock_ref else "swa_evictable_size"] += \
                    len(n.value)
        _require(len(self._full_lru.order) == len(nodes)
                 and len(self._swa_lru.order) == sum(not n.swa_tombstone for n in nodes)
                 and set(self._nodes) == {n.id for n in nodes} | {0},
                 "an LRU list or the id map holds a node that is not in the tree")
        _require(len(set(slots)) == len(slots), "a full slot is held by two nodes")
        held = set(self._alloc.held_slots)
        _require(all(s in held for s in slots), "the tree holds a freed full slot")
        for name, want in sizes.items():
            _require(getattr(self, name) == want,
                     f"{name} is {getattr(self, name)}, the nodes sum to {want}")


def _require(ok, message):
    if not ok:
        raise AssertionError(message)


def _common(a, b):
    """Leading tokens ``a`` and ``b`` share (radix_cache.py's key match, page_size 1)."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
