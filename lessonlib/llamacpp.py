"""llama.cpp itself, asked what it allocates and what it computes (the engine profile).

Everything here needs llama-cpp-python (``make engine`` builds it into ``.venv-engine``; the
students' environment does not have it): ``available()`` says whether it can run and why not.

``allocations(path, n_ctx, ...)`` loads a GGUF file (``gguf.write_model_gguf`` writes one
with a real model's attention shape and zero weights) and creates a context exactly as
llama.cpp's C API does, with the settings named (context, sequences, micro-batch, unified
cache, full-size sliding-window cache, cache element types, flash attention), then frees it.
What it returns is what the engine logged: each KV cache's cells, layers, streams and MiB
(``llama_kv_cache: size = ...``; with sliding-window layers, the non-SWA cache first, then the
SWA one) and each backend's compute buffer (``CPU compute buffer size = ...``). ``parse_log``
reads those lines from any llama.cpp log, so a log saved elsewhere can be compared too.

The engine prints MiB with two decimals; cells and layers are exact. ``EngineCache.bytes``
recomputes the bytes from the cells, layers and the element type's row size, and
``EngineCache.matches`` checks that the engine's rounded MiB agree with them.
"""
import contextlib
import ctypes
import re
from dataclasses import dataclass, field

from . import _validate as check
from . import kv_cache as kc
from .models.rope import llama_cpp_rope_arguments as rope_arguments

__all__ = ["available", "allocations", "logits", "parse_log", "lessonlib_caches", "load_results",
           "rope_arguments", "Session", "EngineCache",
           "EngineMemory", "GGML_TYPES", "ROPE_ARGUMENTS"]

# ggml's type ids for the cache types llama.cpp accepts for K and V (ggml.h, enum ggml_type)
GGML_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "bf16": 30}
"""{name: ggml type id} of the cache types llama.cpp takes for K and V: f32, f16, q4_0, q8_0,
bf16."""

_KV_LINE = re.compile(
    r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
    r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB")
_ISWA_LINE = re.compile(r"creating +(non-SWA|SWA) KV cache, size = (\d+) cells")
_COMPUTE_LINE = re.compile(r"(\S+) compute buffer size = +([\d.]+) MiB")
# printed when the context is freed, with four decimals: preferred where present
_COMPUTE_EXACT = re.compile(r"(\S+) compute buffer size is +([\d.]+) MiB")
_MIB = 1024 * 1024


@dataclass(frozen=True)
class EngineCache:
    """One ``llama_kv_cache: size`` line: ``kind`` is "global" (the only cache, or iSWA's
    non-SWA one) or "sliding" (iSWA's SWA cache); ``cells`` per stream, ``streams`` = 1 for a
    unified cache, else one per sequence. ``bytes(bytes_per_cell)`` is cells x streams x layers
    x bytes_per_cell; ``matches(nbytes)`` is True when the engine's two-decimal MiB is
    ``nbytes`` rounded."""
    kind: str
    cells: int
    layers: int
    seqs: int
    streams: int
    type_k: str
    type_v: str
    mib: float
    k_mib: float
    v_mib: float

    def bytes(self, bytes_per_cell):
        """The cache's bytes from its cells, streams and layers, at ``bytes_per_cell`` (K and V
        of one token in one layer)."""
        return self.cells * self.streams * self.layers * bytes_per_cell

    def matches(self, nbytes):
        """True when the engine's printed MiB (two decimals) is ``nbytes`` rounded."""
        return abs(self.mib - nbytes / _MIB) <= 0.005 + 1e-9


@dataclass(frozen=True)
class EngineMemory:
    """What llama.cpp logged while creating one context: its ``caches`` (``EngineCache``), each
    backend's ``compute_mib``, the ``n_ctx`` it settled on and the whole ``log``;
    ``cache(kind)`` is the cache of that kind or None."""
    caches: tuple
    compute_mib: dict  # backend name -> MiB ("CPU"), four decimals where the log has them
    n_ctx: int | None  # the context llama.cpp settled on (-c rounded up)
    log: str = field(repr=False)

    def cache(self, kind):
        """The cache of ``kind`` ("global" or "sliding"), or None when the model has none."""
        return next((c for c in self.caches if c.kind == kind), None)


def parse_log(text):
    """The caches and compute buffers a llama.cpp log reports (``EngineMemory``): every
    ``llama_kv_cache: size`` line (the iSWA cache's non-SWA one as "global", its SWA one as
    "sliding"), each backend's compute buffer (the four-decimal line printed when a context is
    freed, where present) and the context llama.cpp settled on."""
    text = check.text("text", text)
    caches, kind = [], "global"
    for line in text.splitlines():
        iswa = _ISWA_LINE.search(line)
        if iswa:
            kind = "global" if iswa.group(1) == "non-SWA" else "sliding"
            continue
        m = _KV_LINE.search(line)
        if m:
            size, cells, layers, seqs, streams, tk, k_mib, tv, v_mib = m.groups()
            caches.append(EngineCache(kind, int(cells), int(layers), int(seqs), int(streams),
                                      tk, tv, float(size), float(k_mib), float(v_mib)))
    compute = {m.group(1): float(m.group(2)) for m in _COMPUTE_LINE.finditer(text)}
    compute.update({m.group(1): float(m.group(2)) for m in _COMPUTE_EXACT.finditer(text)})
    n_ctx = re.findall(r"llama_context: n_ctx += (\d+)", text)
    return EngineMemory(tuple(caches), compute, int(n_ctx[-1]) if n_ctx else None, text)


def available():
    """None when llama-cpp-python imports, else why not (one line)."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as err:
        return (f"llama-cpp-python is not installed here ({err}); make engine builds it into "
                f".venv-engine")
    return None


def _llama_cpp():
    """llama_cpp, with a quiet log callback ready for ``_captured_log`` to put back."""
    global _quiet
    why = available()
    if why is not None:
        raise RuntimeError(why)
    import llama_cpp
    if _quiet is None:
        _quiet = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
    return llama_cpp


@contextlib.contextmanager
def _captured_log(llama_cpp):
    """Every line llama.cpp logs inside the block, collected (the engine's own callback, not
    stderr); the callback is put back afterwards."""
    lines = []

    @llama_cpp.llama_log_callback
    def collect(level, text, user_data):
        lines.append(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(collect, ctypes.c_void_p(0))
    try:
        yield lines
    finally:
        llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))


_quiet = None  # set on first use: a callback that drops everything


def _cache_type(name, value):
    return GGML_TYPES[check.choice(name, value, GGML_TYPES)]


def _rope_kwargs(rope):
    """``**rope`` checked: names from ``ROPE_ARGUMENTS``, whole numbers for the scaling type and
    the original context, real numbers for the rest."""
    out = {}
    for name, value in rope.items():
        if name not in ROPE_ARGUMENTS:
            raise ValueError(f"{name!r} is not a RoPE argument of llama.cpp (they are "
                             f"{', '.join(ROPE_ARGUMENTS)})")
        out[name] = (check.integer(name, value, minimum=-1)
                     if name in ("rope_scaling_type", "yarn_orig_ctx") else check.real(name, value))
    return out


def _gguf_path(path):
    """A GGUF file's path, and its vocabulary size (token ids must stay below it; None where the
    file gives none: no vocab_size key, tokenizer or token_embd tensor)."""
    import os
    from .models import as_model, gguf
    path = check.text("path", path)
    if not os.path.isfile(path):
        raise ValueError(f"path {path!r} is not a file")
    model = as_model(gguf.read_gguf(path).config)
    try:
        return path, model.vocab_size
    except ValueError:  # Model.vocab_size: the config has none
        return path, None


def allocations(path, n_ctx, *, n_seq=1, n_batch=None, n_ubatch=512, kv_unified=False,
                swa_full=False, type_k="f16", type_v="f16", flash_attn=False):
    """Load ``path`` and create one llama.cpp context with these settings; return what the
    engine logged (``EngineMemory``). Defaults are the C API's (``llama_context_default_params``:
    no unified cache, and ``swa_full`` passed explicitly); ``n_batch`` defaults to
    ``max(n_ubatch, 2048)`` as in llama.cpp's own default of 2048; cache types are names of
    ``GGML_TYPES``. Nothing is computed.

    Errors: the argument checks (ValueError naming the argument, before the engine is
    touched); a file llama.cpp cannot load or a context it cannot create (ValueError with the
    engine's last log lines); without the engine, RuntimeError with ``available()``'s reason."""
    path, _ = _gguf_path(path)
    n_ctx = check.integer("n_ctx", n_ctx, minimum=1)
    n_seq = check.integer("n_seq", n_seq, minimum=1)
    n_ubatch = check.integer("n_ubatch", n_ubatch, minimum=1)
    n_batch = max(n_ubatch, 2048) if n_batch is None else check.integer(
        "n_batch", n_batch, minimum=n_ubatch)
    kv_unified, swa_full = check.flag("kv_unified", kv_unified), check.flag("swa_full", swa_full)
    flash_attn = check.flag("flash_attn", flash_attn)
    tk, tv = _cache_type("type_k", type_k), _cache_type("type_v", type_v)
    llama_cpp = _llama_cpp()
    with _captured_log(llama_cpp) as lines:
        mp = llama_cpp.llama_model_default_params()
        mp.use_mmap = True
        model = llama_cpp.llama_model_load_from_file(path.encode(), mp)
        if not model:
            raise ValueError(f"llama.cpp could not load {path!r}: "
                             + "".join(lines[-3:]).strip())
        try:
            cp = llama_cpp.llama_context_default_params()
            cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = n_ctx, n_batch, n_ubatch, n_seq
            cp.kv_unified, cp.swa_full = kv_unified, swa_full
            cp.type_k, cp.type_v = tk, tv
            cp.flash_attn_type = (llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn
                                  else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED)
            cp.n_threads = cp.n_threads_batch = 1
            ctx = llama_cpp.llama_init_from_model(model, cp)
            if not ctx:
                raise ValueError(f"llama.cpp could not create a context for {path!r} at "
                                 f"n_ctx={n_ctx}: " + "".join(lines[-3:]).strip())
            llama_cpp.llama_free(ctx)
        finally:
            llama_cpp.llama_model_free(model)
    return parse_log("".join(lines))


def lessonlib_caches(config, n_ctx, *, n_seq=1, n_ubatch=512, kv_unified=False, swa_full=False,
                     kv_type="f16"):
    """``kv_cache.kv_cache_bytes(engine="llama.cpp")`` for the same settings as
    ``allocations``: the numbers to hold against the engine's."""
    return kc.kv_cache_bytes(config, n_ctx, engine="llama.cpp", n_seq=n_seq, n_ubatch=n_ubatch,
                             kv_unified=kv_unified, swa_full=swa_full, kv_type=kv_type)


# llama-cpp-python's Llama(...) RoPE arguments (llama.cpp's context parameters), with their
# meaning: 0 / -1 / LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED = "what the GGUF file says".
ROPE_ARGUMENTS = ("rope_scaling_type", "rope_freq_base", "rope_freq_scale", "yarn_ext_factor",
                  "yarn_attn_factor", "yarn_beta_fast", "yarn_beta_slow", "yarn_orig_ctx")
"""The RoPE settings ``logits`` and ``Session`` pass on to llama.cpp as context parameters, by
name; 0, -1 or unspecified means what the GGUF file says."""


def logits(path, tokens, *, n_ctx=None, kv_type="f32", flash_attn=False, **rope):
    """Next-token logits (len(tokens), vocab) float32 of the GGUF model at ``path`` for token
    ids ``tokens`` (one sequence from position 0), every position, with llama.cpp's CPU
    backend on one thread. ``kv_type``: the cache's element type for K and V (f32 keeps the
    cache exact; f16 is llama.cpp's default). ``rope``: any of ``ROPE_ARGUMENTS``, passed to
    llama.cpp as its context parameters (``rope_freq_scale=0.5`` is linear scaling by 2;
    ``rope_scaling_type=2`` with ``yarn_*`` is YaRN). Returns (logits, EngineMemory).

    Errors: token ids outside the file's vocabulary, an empty list, ``n_ctx`` below the number
    of tokens, an unknown RoPE argument; without the engine, RuntimeError."""
    import numpy as np
    path, vocab = _gguf_path(path)
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise ValueError(f"tokens must be a sequence of token ids, got {check.describe(tokens)}")
    tokens = [check.integer("tokens", t, minimum=0, maximum=None if vocab is None else vocab - 1)
              for t in tokens]
    if not tokens:
        raise ValueError("tokens must hold at least one token id")
    n_ctx = len(tokens) if n_ctx is None else check.integer("n_ctx", n_ctx, minimum=len(tokens))
    rope = _rope_kwargs(rope)
    flash_attn = check.flag("flash_attn", flash_attn)
    t = _cache_type("kv_type", kv_type)
    llama_cpp = _llama_cpp()
    with _captured_log(llama_cpp) as lines:
        llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx,
                              n_threads=1, n_threads_batch=1, logits_all=True, type_k=t,
                              type_v=t, flash_attn=flash_attn, verbose=False, **rope)
        try:
            llm.eval(tokens)
            out = np.array(llm.scores[:len(tokens)], dtype=np.float32)
        finally:
            llm.close()
    return out, parse_log("".join(lines))


def load_results():
    """What llama.cpp said, as scripts/llamacpp_results.py recorded it
    (lessonlib/data/llamacpp_results.json): the dict the notebooks print beside lessonlib's
    numbers. Needs no engine. Its entries: ``engine``; ``caches``, rows of model, settings and
    the logged caches; ``compute``, rows of model, ``n_ctx``, ``n_ubatch``, ``flash_attn`` and
    the compute buffer's ``mib``; ``logits``, rows of name, tokens, ``max_abs_diff`` and
    ``argmax_agree``; ``needles``, notebook 10's grid answered by llama.cpp, each cell's
    ``found_fraction`` beside the torch run's ``torch_found_fraction``."""
    import json
    from importlib import resources
    return json.loads(resources.files("lessonlib").joinpath(
        "data", "llamacpp_results.json").read_text())


class Session:
    """One llama.cpp context kept open for many prompts: ``last_logits(tokens)`` evaluates a
    sequence from position 0 (the cache cleared first) and returns the float32 logits of its
    last token. ``n_ctx`` bounds the prompts; ``kv_type`` and ``**rope`` as in ``logits``. Use
    it as a context manager, or call ``close()``. Errors as ``logits``', and more than
    ``n_ctx`` ids."""

    def __init__(self, path, n_ctx, *, kv_type="f32", **rope):
        path, self.vocab = _gguf_path(path)
        self.n_ctx = check.integer("n_ctx", n_ctx, minimum=1)
        rope = _rope_kwargs(rope)
        t = _cache_type("kv_type", kv_type)
        llama_cpp = _llama_cpp()
        with _captured_log(llama_cpp):
            self._llm = llama_cpp.Llama(model_path=path, n_ctx=self.n_ctx, n_batch=self.n_ctx,
                                        n_ubatch=self.n_ctx, n_threads=1, n_threads_batch=1,
                                        logits_all=True,  # else llama-cpp-python keeps none
                                        type_k=t, type_v=t, verbose=False, **rope)

    def last_logits(self, tokens):
        import numpy as np
        if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
            raise ValueError(f"tokens must be a sequence of token ids, got "
                             f"{check.describe(tokens)}")
        tokens = [check.integer("tokens", t, minimum=0, maximum=self.vocab - 1) for t in tokens]
        if not 1 <= len(tokens) <= self.n_ctx:
            raise ValueError(f"tokens must hold 1 to n_ctx = {self.n_ctx} ids, got {len(tokens)}")
        self._llm.reset()
        self._llm.eval(tokens)
        return np.array(self._llm.scores[len(tokens) - 1], dtype=np.float32)

    def close(self):
        if self._llm is not None:
            self._llm.close()
            self._llm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
