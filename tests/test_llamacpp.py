"""lessonlib against llama.cpp itself (lessonlib/llamacpp.py; the engine profile, make engine).

The tests marked ``engine`` load GGUF files into llama-cpp-python's llama.cpp and compare what
the engine allocates and computes with lessonlib: every KV cache, to the cell, over a grid of
contexts, sequences, micro-batches, unified and full-size sliding-window caches and cache
types, for five real attention shapes; the compute buffer against lessonlib's lower bound;
the tiny model's logits exported with its real weights, within and past its trained length,
with plain RoPE, linear scaling and YaRN set through llama.cpp's own parameters; and the
committed results file the notebooks print (lessonlib/data/llamacpp_results.json) against a
fresh run. Elsewhere they skip, saying why; ``make engine`` (LESSONLIB_ENGINE=1) fails instead
of skipping when the engine is missing. The rest (the log reader, bad input) runs everywhere.
"""
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

from _bad import Case, bad_input_tests, choices, flags, ints, reals, texts
from lessonlib.models import gguf as gf
from lessonlib import kv_cache as kc
from lessonlib import llamacpp as L
from lessonlib.models.configs import load_config

DATA = Path(__file__).parent / "data" / "llamacpp"
WHY = L.available()
if WHY is not None and os.environ.get("LESSONLIB_ENGINE") == "1":
    raise ImportError(f"make engine runs these tests with the engine, and it is missing: {WHY}")
engine = pytest.mark.skipif(WHY is not None, reason=f"needs llama-cpp-python (make engine): {WHY}")
MIB = 1024 * 1024

# ------------------------------------------------------------------ the log (no engine needed)


def test_the_log_reader_reads_both_caches_and_the_compute_buffer():
    m = L.parse_log((DATA / "gemma3-27b-shape.log").read_text())
    glob, swa = m.cache("global"), m.cache("sliding")
    assert (glob.cells, glob.layers, glob.seqs, glob.streams) == (1536, 10, 3, 3)
    assert (swa.cells, swa.layers, swa.streams, swa.type_k, swa.type_v) == (1280, 52, 3, "q8_0",
                                                                           "q8_0")
    assert (glob.mib, swa.mib, swa.k_mib) == (191.25, 828.75, 414.38)
    assert m.compute_mib == {"CPU": 9.2432} and m.n_ctx == 4608
    llama = L.parse_log((DATA / "llama-3.1-8b-shape.log").read_text())
    assert [c.kind for c in llama.caches] == ["global"] and llama.cache("sliding") is None
    assert llama.caches[0].cells == 1024 and llama.compute_mib == {"CPU": 86.3848}


def test_the_logged_caches_are_lessonlibs_for_those_settings():
    """The two recorded logs (Gemma-3-27B's shape at -c 4097, 3 sequences, -ub 200, q8_0; and
    Llama-3.1-8B's at -c 1000) against kv_cache_bytes for the same settings."""
    m = L.parse_log((DATA / "gemma3-27b-shape.log").read_text())
    ours = L.lessonlib_caches(load_config("Gemma-3-27B"), 4097, n_seq=3, n_ubatch=200,
                              kv_type="q8_0")
    for cache, group in ((m.cache("global"), ours.global_layers),
                         (m.cache("sliding"), ours.sliding_layers)):
        assert cache.cells * cache.streams == group.cells and cache.layers == group.n_layers
        assert cache.matches(group.bytes) and cache.bytes(group.bytes_per_cell) == group.bytes
    assert not m.cache("global").matches(ours.global_layers.bytes + 10_000)


def test_a_log_without_caches_reads_as_empty():
    m = L.parse_log("llama_model_loader: loaded meta data\n")
    assert m.caches == () and m.compute_mib == {} and m.n_ctx is None


# ------------------------------------------------------------------ the engine itself

SHAPES = ["Llama-3.1-8B", "Mistral-7B", "Qwen2.5-7B-Instruct", "Gemma-3-27B", "gpt-oss-20b"]
# Contexts that are not multiples of 256 or of a window, several sequences (unified or one
# stream each), micro-batches, full-size SWA caches, three cache types.
SETTINGS = [dict(n_ctx=1000), dict(n_ctx=4097, n_ubatch=200), dict(n_ctx=3000, swa_full=True),
            dict(n_ctx=5000, n_seq=3), dict(n_ctx=5000, n_seq=3, kv_unified=True),
            dict(n_ctx=2500, n_seq=2, kv_unified=True, n_ubatch=256),
            dict(n_ctx=4096, kv_type="q8_0"), dict(n_ctx=1500, n_seq=2, kv_type="q8_0"),
            dict(n_ctx=700, kv_type="f32")]


@pytest.fixture(scope="module")
def shaped(tmp_path_factory):
    """One zero-weight GGUF file per shape (holes: no disk), and the config it describes."""
    d = tmp_path_factory.mktemp("shapes")
    files = {n: gf.write_model_gguf(str(d / f"{n}.gguf"), load_config(n)) for n in SHAPES}
    return {n: (p, gf.read_gguf(p).config) for n, p in files.items()}


def _engine_caches(path, s):
    kv_type = s.get("kv_type", "f16")
    kw = {k: v for k, v in s.items() if k != "kv_type"}
    return L.allocations(path, type_k=kv_type, type_v=kv_type,
                         flash_attn=kv_type not in ("f16", "f32"), **kw)


@engine
@pytest.mark.parametrize("name", SHAPES)
def test_kv_caches_are_the_engines_to_the_cell(shaped, name):
    path, cfg = shaped[name]
    for s in SETTINGS:
        m = _engine_caches(path, s)
        ours = L.lessonlib_caches(cfg, s["n_ctx"], **{k: v for k, v in s.items() if k != "n_ctx"})
        for group in (ours.global_layers, ours.sliding_layers):
            cache = m.cache(group.kind)
            if group.n_layers == 0:
                assert cache is None, (name, s, group.kind)
                continue
            assert (cache.cells * cache.streams, cache.layers) == (group.cells, group.n_layers), \
                (name, s, group.kind, cache)
            assert cache.matches(group.bytes), (name, s, cache.mib, group.bytes / MIB)
        padded, n_seq = kc._pad(s["n_ctx"], 256), s.get("n_seq", 1)
        assert m.n_ctx == (padded if s.get("kv_unified") or n_seq == 1
                           else n_seq * kc._pad(padded // n_seq, 256))


def _llama(heads, kv_heads, head_dim, vocab, hidden, ff):
    return dict(model_type="llama", num_hidden_layers=2, num_attention_heads=heads,
                num_key_value_heads=kv_heads, head_dim=head_dim, hidden_size=hidden,
                intermediate_size=ff, vocab_size=vocab, max_position_embeddings=8192,
                rope_theta=10000.0, rms_norm_eps=1e-5)


COMPUTE_GRID = [_llama(h, kvh, hd, v, hid, ff) for h, kvh, hd in ((8, 2, 32), (32, 8, 128))
                for v in (256, 32000) for hid, ff in ((64, 128), (1024, 4096))]


@engine
def test_compute_buffer_is_never_below_lessonlibs_lower_bound(tmp_path):
    """ComputePhases names what must be alive at once; the engine's buffer is at least the
    largest phase, and where the unfused scores dominate (n_ctx 4096) within 3% of it."""
    for i, cfg in enumerate(COMPUTE_GRID):
        path = gf.write_model_gguf(str(tmp_path / f"c{i}.gguf"), cfg,
                                   hidden_size=cfg["hidden_size"],
                                   intermediate_size=cfg["intermediate_size"],
                                   vocab_size=cfg["vocab_size"])
        for n_ctx in (1024, 4096):
            for ub in (128, 512):
                for fa in (False, True):
                    engine_mib = L.allocations(path, n_ctx, n_ubatch=ub,
                                               flash_attn=fa).compute_mib["CPU"]
                    p = kc.llamacpp_compute_phases(cfg, n_ctx, ub, flash_attn=fa)
                    low = p.lower_bound_bytes / MIB
                    assert low <= engine_mib + 1e-4, (cfg, n_ctx, ub, fa, engine_mib, low)
                    assert kc.llamacpp_compute_buffer(cfg, n_ctx, ub, flash_attn=fa) \
                        .estimate_bytes / MIB <= engine_mib + 1e-4
                    if not fa and n_ctx == 4096 and p.attention_bytes == p.lower_bound_bytes:
                        assert engine_mib - low < 0.03 * engine_mib, (cfg, ub, engine_mib, low)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    torch = pytest.importorskip("torch", reason="needs torch: the tiny model runs in torch")
    from lessonlib import kvtask, tinylm
    model = tinylm.load_tinylm()
    path = tinylm.export_gguf(model, str(tmp_path_factory.mktemp("tiny") / "tinylm.gguf"))
    tokens = [int(t) for t in kvtask.retrieval_document(3, 512).tokens]

    def reference(n, rope=None):
        with torch.no_grad():
            return model(torch.tensor([tokens[:n]]), rope=rope)[0].double().numpy()
    return model, path, tokens, reference


@engine
def test_the_exported_tiny_model_gives_the_same_logits(tiny):
    """256 positions (its trained length): float32 sums in another order leave ~1e-5 with an
    F32 cache; an F16 cache rounds every K and V to 11 significant bits (a few 1e-3 here)."""
    model, path, tokens, reference = tiny
    ref = reference(256)
    for kv_type, tol in (("f32", 1e-3), ("f16", 3e-2)):
        out, _ = L.logits(path, tokens[:256], kv_type=kv_type)
        assert out.shape == ref.shape
        assert np.abs(out - ref).max() < tol, kv_type
        assert (out.argmax(1) == ref.argmax(1)).all()


@engine
def test_past_the_trained_length_with_llama_cpps_own_rope_settings(tiny):
    from lessonlib import tinylm
    model, path, tokens, reference = tiny
    cfg = model.config
    cases = [(None, {}),
             ({"rope_type": "linear", "factor": 2.0}, dict(rope_freq_scale=0.5)),
             ({"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 256},
              dict(rope_scaling_type=2, rope_freq_scale=0.5, yarn_orig_ctx=256)),
             ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256},
              dict(rope_scaling_type=2, rope_freq_scale=0.25, yarn_orig_ctx=256))]
    for scaling, engine_rope in cases:
        rope = None if scaling is None else tinylm.with_rope_scaling(cfg, scaling)
        out, _ = L.logits(path, tokens, **engine_rope)
        assert np.abs(out - reference(512, rope)).max() < 1e-3, scaling


@engine
def test_yarn_without_truncation_is_not_what_llama_cpp_runs(tiny):
    """HF's truncate: false (gpt-oss) keeps the band's ends fractional; llama.cpp rounds them
    (here (0.42, 6.44) becomes (0, 7)): the same settings give other logits."""
    from lessonlib import tinylm
    model, path, tokens, reference = tiny
    rope = tinylm.with_rope_scaling(model.config, {
        "rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 256,
        "truncate": False})
    out, _ = L.logits(path, tokens, rope_scaling_type=2, rope_freq_scale=0.5, yarn_orig_ctx=256)
    assert np.abs(out - reference(512, rope)).max() > 0.5


@engine
def test_without_the_pair_permutation_the_engine_runs_another_model(tiny, tmp_path,
                                                                    monkeypatch):
    from lessonlib import tinylm
    model, path, tokens, reference = tiny
    monkeypatch.setattr(tinylm, "neox_to_adjacent_pairs", lambda w, n: np.asarray(w))
    unpermuted = tinylm.export_gguf(model, str(tmp_path / "unpermuted.gguf"))
    out, _ = L.logits(unpermuted, tokens[:256])
    ref = reference(256)
    assert np.abs(out - ref).max() > 1.0 and (out.argmax(1) == ref.argmax(1)).mean() < 0.5


def test_rope_arguments_are_llama_cpps_names_for_a_rope_scaling_block():
    assert L.rope_arguments(None) == {}
    assert L.rope_arguments({"rope_type": "linear", "factor": 4.0}) == {"rope_freq_scale": 0.25}
    yarn = L.rope_arguments({"rope_type": "yarn", "factor": 8.0,
                             "original_max_position_embeddings": 256, "beta_fast": 16})
    assert yarn == {"rope_scaling_type": 2, "rope_freq_scale": 0.125, "yarn_orig_ctx": 256,
                    "yarn_beta_fast": 16.0}
    # llama.cpp multiplies its own 0.1 ln s + 1 by yarn_attn_factor: an explicit factor of 1
    # (YaRN without mscale) is 1 / (0.1 ln 8 + 1) there
    plain = L.rope_arguments({"type": "yarn", "factor": 8.0, "attention_factor": 1.0},
                             original_max_position_embeddings=4096)
    assert plain["yarn_orig_ctx"] == 4096
    assert plain["yarn_attn_factor"] == pytest.approx(1 / (0.1 * np.log(8.0) + 1))
    with pytest.raises(ValueError, match="'dynamic' has no llama.cpp context parameter"):
        L.rope_arguments({"rope_type": "dynamic", "factor": 2.0})
    with pytest.raises(ValueError, match="original_max_position_embeddings"):
        L.rope_arguments({"rope_type": "yarn", "factor": 2.0})


@engine
def test_a_session_answers_as_one_shot_logits_do(tiny):
    model, path, tokens, reference = tiny
    with L.Session(path, 512) as session:
        for n in (256, 100, 512):  # the cache is cleared between prompts
            last = session.last_logits(tokens[:n])
            assert np.abs(last - reference(n)[-1]).max() < 1e-3
        with pytest.raises(ValueError, match="1 to n_ctx = 512 ids"):
            session.last_logits(tokens + tokens)


@engine
def test_the_committed_results_are_what_the_engine_says_now():
    """lessonlib/data/llamacpp_results.json (what notebooks 01, 05, 06 and 10 print) against a
    fresh run of scripts/llamacpp_results.py's measurements."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "llamacpp_results", Path(__file__).parents[1] / "scripts" / "llamacpp_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = json.loads(module.RESULTS.read_text())
    with tempfile.TemporaryDirectory() as d:
        fresh = module.measure(d)
    assert fresh["caches"] == committed["caches"]
    assert fresh["compute"] == committed["compute"]
    for a, b in zip(fresh["needles"]["cells"], committed["needles"]["cells"]):
        # the same haystacks answered again: at most one answer in a hundred may flip
        # where the top two logits of a prompt are within float32 rounding of each other
        diff = np.abs(np.array(a["found_fraction"]) - np.array(b["found_fraction"]))
        assert diff.sum() * fresh["needles"]["trials"] <= 0.01 * diff.size * \
            fresh["needles"]["trials"] + 1e-9, (a["model"], a["variant"])
    for a, b in zip(fresh["logits"], committed["logits"]):
        assert a["name"] == b["name"] and abs(a["argmax_agree"] - b["argmax_agree"]) <= 0.01
        assert abs(a["max_abs_diff"] - b["max_abs_diff"]) <= 0.1 * b["max_abs_diff"] + 1e-4


# ------------------------------------------------------------------ bad input

_LOG = (DATA / "llama-3.1-8b-shape.log").read_text()
BAD_INPUTS = [
    Case(L.parse_log, args=(_LOG,), bad=dict(text=texts())),
    Case(L.lessonlib_caches, args=(load_config("Gemma-3-27B"), 4097),
         kwargs=dict(n_seq=3, n_ubatch=200, kv_unified=False, swa_full=False, kv_type="q8_0"),
         bad=dict(n_ctx=ints(minimum=1), n_seq=ints(minimum=1), n_ubatch=ints(minimum=1),
                  kv_unified=flags(), swa_full=flags(),
                  kv_type=choices(kc.KV_TYPES, none_ok=True))),
]
if WHY is None:  # the valid calls need the engine
    _TINY = gf.write_model_gguf(os.path.join(tempfile.mkdtemp(prefix="lessonlib-llamacpp-"),
                                             "t.gguf"), _llama(8, 2, 32, 256, 64, 128),
                                hidden_size=64, intermediate_size=128, vocab_size=256)
    BAD_INPUTS += [
        Case(L.allocations, args=(_TINY, 1000),
             kwargs=dict(n_seq=2, n_batch=512, n_ubatch=256, kv_unified=True, swa_full=False,
                         type_k="q8_0", type_v="q8_0", flash_attn=True),
             bad=dict(path=st.sampled_from([None, 3, "/nonexistent.gguf"]), n_ctx=ints(minimum=1),
                      n_seq=ints(minimum=1), n_batch=ints(minimum=256, none_ok=True),
                      n_ubatch=ints(minimum=1),
                      kv_unified=flags(), swa_full=flags(), type_k=choices(L.GGML_TYPES),
                      type_v=choices(L.GGML_TYPES), flash_attn=flags())),
        Case(L.logits, args=(_TINY, [5, 6, 7]), kwargs=dict(n_ctx=16, kv_type="f16",
                                                            flash_attn=False, rope_freq_scale=0.5),
             bad=dict(path=st.sampled_from([None, 3, "/nonexistent.gguf"]),
                      tokens=st.sampled_from([[], [1.5], ["a"], [-1], [300], None]),
                      n_ctx=ints(minimum=3, none_ok=True), kv_type=choices(L.GGML_TYPES),
                      flash_attn=flags(), **{"rope.rope_freq_scale": reals()}),
             names={"tokens": "tokens"}),
    ]
BAD_INPUTS += [
    Case(L.rope_arguments, args=({"rope_type": "yarn", "factor": 4.0},),
         kwargs=dict(original_max_position_embeddings=256),
         bad={"rope_scaling": st.sampled_from(["yarn", 4.0, ["yarn"]]),
              "rope_scaling.factor": reals(minimum=1.0),
              "rope_scaling.rope_type": st.sampled_from(["ntk", "YARN", None, 3]),
              "original_max_position_embeddings": ints(minimum=1)},
         names={"rope_scaling.factor": "rope_scaling.factor",
                "rope_scaling.rope_type": "rope_type",
                "original_max_position_embeddings": "rope_scaling.original_max_position_embeddings"}),
]
if WHY is None:
    BAD_INPUTS += [
        Case(L.Session, args=(_TINY, 64), kwargs=dict(kv_type="f16", rope_freq_scale=0.5),
             bad={"path": st.sampled_from([None, 3, "/nonexistent.gguf"]),
                  "n_ctx": ints(minimum=1), "kv_type": choices(L.GGML_TYPES),
                  "rope.rope_freq_scale": reals()}),
        Case(L.Session.last_logits, args=([5, 6, 7],),
             call=lambda tokens: L.Session(_TINY, 16).last_logits(tokens),
             bad=dict(tokens=st.sampled_from([[], [1.5], ["a"], [-1], [300], None, "abc",
                                              list(range(17))]))),
    ]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
