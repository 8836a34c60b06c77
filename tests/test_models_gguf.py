"""lessonlib.models.gguf: a GGUF written as llama.cpp's converter writes it reads back as the config
llama.cpp runs, and gives the report the config gives (for llama.cpp)."""
import math
import os
import sys
import tempfile

import gguf
import numpy as np
import pytest
from hypothesis import strategies as st

from lessonlib.models import gguf as gf
from lessonlib import inspect_model as im
from lessonlib import kv_cache as kc
from lessonlib import rope
from lessonlib.models.configs import load_config

from _bad import Case, DELETE, bad_input_tests, ints

MODELS = ["Llama-3.1-8B", "Llama-3.2-1B", "Mistral-7B", "Qwen2.5-7B-Instruct", "Gemma-3-27B",
          "gpt-oss-20b", "DeepSeek-V3", "Phi-3.5-mini-instruct"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf")
    return {n: gf.read_gguf(gf.write_gguf(str(d / f"{n}.gguf"), load_config(n))) for n in MODELS}


@pytest.mark.parametrize("name", MODELS)
def test_gguf_and_config_agree_for_llama_cpp(files, name):
    cfg, model = load_config(name), files[name]
    contexts = [1000, 4096, 32768, 131072]
    a = im.report(cfg, contexts, engines=["llama.cpp"], kv_types=["f16", "q8_0"])
    b = im.report(model.config, contexts, engines=["llama.cpp"], kv_types=["f16", "q8_0"])
    assert a["shape"] == b["shape"]
    assert a["caches"] == b["caches"]
    assert b["limits"]["llamacpp_n_ctx_train"] == cfg["max_position_embeddings"]
    assert a["layers"]["sinks"] == b["layers"]["sinks"] == (name == "gpt-oss-20b")
    assert kc.llamacpp_layer_windows(cfg) == kc.layer_windows(model.config)
    assert model.architecture == gf.MODEL_TYPES[cfg["model_type"]]


def _by_hand_llama3(cfg):
    """llama.cpp's converter (LlamaModel.generate_extra_tensors), written out: wavelengths
    shorter than L0 / high_freq_factor keep 1, longer than L0 / low_freq_factor get the factor,
    the rest 1 / ((1 - smooth) / factor + smooth)."""
    rs, base, dim = cfg["rope_scaling"], cfg["rope_theta"], cfg.get("head_dim", 128)
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], \
        rs["original_max_position_embeddings"]
    out = []
    for i in range(0, dim, 2):
        wavelen = 2 * math.pi / base ** (-i / dim)
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out)


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Llama-3.2-1B"])
def test_llama3_travels_as_rope_freqs(files, name):
    cfg, got = load_config(name), files[name].config
    assert "rope_scaling" not in got  # the converter writes no rope.scaling key for llama3
    factors = np.array(got["_gguf_rope_freqs"])
    np.testing.assert_allclose(factors, _by_hand_llama3(cfg), rtol=1e-6)  # float32 in the file
    inv, _ = rope.rope_frequencies(cfg)
    plain = cfg["rope_theta"] ** (-np.arange(0, len(inv) * 2, 2) / (len(inv) * 2))
    np.testing.assert_allclose(plain / factors, inv, rtol=1e-6)
    words = " ".join(im.report(got, [4096])["rope"][0]["words"])
    labels = [str(x) for x in rope.llama3_regimes(cfg)]
    assert (f"{labels.count('high')} pairs keep their frequency, {labels.count('low')} are "
            f"divided by {cfg['rope_scaling']['factor']:g}") in words


def test_yarn_longrope_linear_and_mla_keys(files):
    qwen = files["Qwen2.5-7B-Instruct"].config["rope_scaling"]
    assert qwen == {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    ds = files["DeepSeek-V3"].config
    assert ds["rope_scaling"]["mscale_all_dim"] == pytest.approx(1.0)  # 0.1 x 1.0 in the file
    assert (ds["kv_lora_rank"], ds["qk_rope_head_dim"], ds["qk_nope_head_dim"], ds["v_head_dim"],
            ds["q_lora_rank"], ds["model_type"]) == (512, 64, 128, 128, 1536, "deepseek_v3")
    phi = files["Phi-3.5-mini-instruct"].config
    src = load_config("Phi-3.5-mini-instruct")["rope_scaling"]
    np.testing.assert_allclose(phi["rope_scaling"]["long_factor"], src["long_factor"], rtol=1e-6)
    assert phi["original_max_position_embeddings"] == 4096 and "sliding_window" not in phi
    gemma = files["Gemma-3-27B"].config
    assert gemma["rope_scaling"] == {"rope_type": "linear", "factor": 8.0}
    assert gemma["rope_local_base_freq"] == 10_000.0
    assert gemma["layer_types"] == load_config("Gemma-3-27B")["layer_types"]


def test_gpt_oss_band_is_rounded_as_llama_cpp_does(files):
    """HF's gpt-oss config says truncate: false; llama.cpp's YaRN floors and ceils the band."""
    hf = rope.scaling_parameters(load_config("gpt-oss-20b")).yarn_band
    ll = rope.scaling_parameters(files["gpt-oss-20b"].config).yarn_band
    assert ll == (math.floor(hf[0]), math.ceil(hf[1])) == (8, 18)


@pytest.mark.parametrize("name", MODELS)
def test_the_walk_reads_what_ggufs_own_reader_reads(files, name):
    """gguf's GGUFReader (slow on a real tokenizer, exact) as the oracle of the fast walk."""
    meta, tensors, data, mm = gf._walk(files[name].path)
    reader = gguf.GGUFReader(files[name].path)
    assert data == reader.data_offset
    expected = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert meta.keys() == expected.keys()
    for k, v in expected.items():
        assert meta[k] == pytest.approx(v) if isinstance(v, float) else meta[k] == v, k
    assert [(t.name, t.ne, t.n_bytes, t.offset) for t in tensors] == [
        (t.name, tuple(int(x) for x in t.shape), int(t.n_bytes), int(t.data_offset - data))
        for t in reader.tensors]
    mm.close()


def test_long_arrays_are_stepped_over(tmp_path):
    tokens = [f"t{i}" for i in range(gf.MAX_ARRAY_READ + 5)]
    path = _write(str(tmp_path / "v.gguf"), "llama", BASE + [("add_token_list", tokens)])
    assert gf.read_gguf(path).config["vocab_size"] == len(tokens)
    meta = gf._walk(path)[0]
    assert meta["tokenizer.ggml.tokens"].count == len(tokens)


def test_weights_are_the_tensor_bytes(files, tmp_path):
    m = files["Llama-3.1-8B"]
    reader = gguf.GGUFReader(m.path)
    assert m.tensor_bytes == sum(int(t.n_bytes) for t in reader.tensors) > 128256 * 8 * 2
    assert m.n_tensors == len(reader.tensors)


def _write(path, arch, keys, tensors=()):
    w = gguf.GGUFWriter(path, arch)
    for add, value in keys:
        getattr(w, add)(value)
    return gf.finish(w, tensors)


BASE = [("add_block_count", 4), ("add_context_length", 4096), ("add_embedding_length", 256),
        ("add_head_count", 8)]


def test_defaults_as_llama_cpp_reads_them(tmp_path):
    """head_count_kv defaults to head_count, key_length to embedding_length / head_count."""
    cfg = gf.read_gguf(_write(str(tmp_path / "a.gguf"), "llama", BASE)).config
    assert (cfg["num_key_value_heads"], cfg["head_dim"], cfg["rope_theta"]) == (8, 32, 10_000.0)
    # no pattern key (the converters write none): llama.cpp's own periods, 2 and 6
    o = gf.read_gguf(_write(str(tmp_path / "o.gguf"), "gpt-oss", BASE + [("add_sliding_window", 128)],
                            [("blk.0.attn_sinks.weight", np.zeros(8, np.float32))])).config
    assert o["layer_types"] == ["sliding_attention", "full_attention"] * 2 and o["_gguf_sinks"]
    six = [("add_block_count", 12)] + BASE[1:] + [("add_sliding_window", 64)]
    g6 = gf.read_gguf(_write(str(tmp_path / "g6.gguf"), "gemma3", six)).config
    assert [i for i, t in enumerate(g6["layer_types"]) if t == "full_attention"] == [5, 11]
    for name in ("gpt-oss-20b", "Gemma-3-27B"):  # and the writer, like the converter, writes none
        path = gf.write_gguf(str(tmp_path / f"{name}.gguf"), load_config(name))
        fields = gguf.GGUFReader(path).fields
        assert not any(k.endswith("sliding_window_pattern") for k in fields)
    # a pattern key overrides gemma3's period of 6
    g = gf.read_gguf(_write(str(tmp_path / "g.gguf"), "gemma3", BASE + [
        ("add_sliding_window", 64), ("add_sliding_window_pattern", 2)])).config
    assert g["layer_types"] == ["sliding_attention", "full_attention"] * 2


@pytest.mark.parametrize("keys, says", [
    (BASE[:-1], "'llama.attention.head_count' is missing"),
    (BASE + [("add_rope_scaling_type", gguf.RopeScalingType.YARN)], "'llama.rope.scaling.factor' is missing"),
    ([k for k in BASE if k[0] != "add_head_count"] + [("add_head_count", [8, 8, 4, 8])], "varies per layer"),
    (BASE + [("add_key_length", 32), ("add_value_length", 16)], "differ"),
])
def test_bad_files_are_named(tmp_path, keys, says):
    path = _write(str(tmp_path / "bad.gguf"), "llama", keys)
    with pytest.raises(ValueError, match=says) as err:
        gf.read_gguf(path)
    assert path in str(err.value)


def test_write_refuses_what_has_no_gguf_form(tmp_path):
    cfg = load_config("Llama-3.1-8B")
    cfg["model_type"] = "mamba"
    with pytest.raises(ValueError, match="model_type 'mamba' has no GGUF architecture"):
        gf.write_gguf(str(tmp_path / "x.gguf"), cfg)
    dyn = load_config("Mistral-7B")
    dyn["rope_scaling"] = {"rope_type": "dynamic", "factor": 2.0}
    with pytest.raises(ValueError, match="'dynamic' has no GGUF form"):
        gf.write_gguf(str(tmp_path / "y.gguf"), dyn)


# Files llama.cpp loads (tests/test_llamacpp.py loads them): the five architectures it runs.
LOADABLE = ["Llama-3.1-8B", "Mistral-7B", "Qwen2.5-7B-Instruct", "Gemma-3-27B", "gpt-oss-20b"]


@pytest.mark.parametrize("name", LOADABLE)
def test_model_files_keep_the_attention_shape_and_take_no_disk(tmp_path, name):
    if name.startswith("Qwen") and sys.platform == "win32":
        pytest.skip("needs a file system that keeps holes: NTFS would write Qwen2.5-7B's 3.3 GB "
                    "of zero weights")
    cfg = load_config(name)
    path = gf.write_model_gguf(str(tmp_path / "m.gguf"), cfg)
    m = gf.read_gguf(path)
    assert kc.model_shape(m.config) == kc.model_shape(cfg)
    assert kc.llamacpp_layer_windows(m.config) == kc.llamacpp_layer_windows(cfg)
    keys = gf.read_gguf(gf.write_gguf(str(tmp_path / "keys.gguf"), cfg)).config
    assert rope.scaling_parameters(m.config) == rope.scaling_parameters(keys)
    for n_ctx in (1000, 32768):
        assert kc.kv_cache_bytes(m.config, n_ctx) == kc.kv_cache_bytes(cfg, n_ctx)
    reader = gguf.GGUFReader(path)
    shapes = {t.name: tuple(int(x) for x in t.shape) for t in reader.tensors}
    assert all(t.tensor_type == gguf.GGMLQuantizationType.F32 for t in reader.tensors)
    hidden = m.config["hidden_size"]
    assert hidden == (kc.model_shape(cfg).heads * kc.model_shape(cfg).head_dim
                      if name.startswith("Qwen") else 64)
    assert shapes["token_embd.weight"] == (hidden, 256)  # gguf's order: ne0 first
    layers = kc.model_shape(cfg).layers
    assert sum(n.endswith("attn_q.weight") for n in shapes) == layers
    assert ("output.weight" in shapes) == (name in ("Llama-3.1-8B", "Mistral-7B", "gpt-oss-20b",
                                                    "Qwen2.5-7B-Instruct"))
    st_ = os.stat(path)
    end = max(t.data_offset + t.n_bytes for t in reader.tensors)
    assert st_.st_size == end + (-end) % 32  # the real length ...
    if hasattr(st_, "st_blocks"):  # POSIX: only the metadata's blocks are written
        assert st_.st_blocks * 512 < 2 * 1024 * 1024
    weights = [t for t in reader.tensors if not t.name.startswith(("rope_", "blk.0.attn_sinks"))
               and "attn_sinks" not in t.name]
    assert not any(np.asarray(t.data).any() for t in weights[:3] + weights[-3:])  # zeros


def test_model_file_weights_are_written_where_llama_cpp_reads_them(tmp_path):
    rng = np.random.default_rng(0)
    cfg = load_config("Llama-3.2-1B")
    q = rng.standard_normal((32 * 64, 64)).astype(np.float32)
    norm = rng.standard_normal(64).astype(np.float32)
    path = gf.write_model_gguf(str(tmp_path / "w.gguf"), cfg,
                               weights={"blk.3.attn_q.weight": q, "output_norm.weight": norm})
    tensors = {t.name: t for t in gguf.GGUFReader(path).tensors}
    np.testing.assert_array_equal(np.asarray(tensors["blk.3.attn_q.weight"].data), q)
    np.testing.assert_array_equal(np.asarray(tensors["output_norm.weight"].data), norm)
    assert not np.asarray(tensors["blk.2.attn_q.weight"].data).any()
    freqs = np.asarray(tensors["rope_freqs.weight"].data)  # settings travel as before
    np.testing.assert_array_equal(freqs, gf._llama3_factors(cfg).astype(np.float32))


def test_model_files_refuse_what_llama_cpp_would_not_load(tmp_path):
    with pytest.raises(ValueError, match="hidden_size must be heads x head_dim = 3584"):
        gf.write_model_gguf(str(tmp_path / "q.gguf"), load_config("Qwen2.5-7B-Instruct"),
                            hidden_size=64)
    with pytest.raises(ValueError, match="writing a loadable deepseek2 file is not supported"):
        gf.write_model_gguf(str(tmp_path / "d.gguf"), load_config("DeepSeek-V3"))
    with pytest.raises(ValueError, match=r"weights\['blk.0.attn_q.weight'\] must have shape"):
        gf.write_model_gguf(str(tmp_path / "s.gguf"), load_config("Mistral-7B"),
                            weights={"blk.0.attn_q.weight": np.zeros((4, 4))})


_DIR = tempfile.mkdtemp(prefix="lessonlib-gguf-")
_VALID = gf.write_gguf(os.path.join(_DIR, "valid.gguf"), load_config("Mistral-7B"))
BAD_INPUTS = [
    Case(gf.read_gguf, args=(_VALID,),
         bad=dict(path=st.sampled_from([None, 3, ["a"], "/nonexistent.gguf", _DIR]))),
    Case(gf.write_gguf, args=(os.path.join(_DIR, "w.gguf"), load_config("Mistral-7B")),
         kwargs=dict(hidden_size=8, seed=1),
         bad=dict(path=st.sampled_from([None, 3]), hidden_size=ints(minimum=1), seed=ints(minimum=0),
                  **{"config.model_type": st.sampled_from(["mamba", None, 3]),
                     "config.vocab_size": ints(minimum=1) | st.just(DELETE)}),
         names={"config.model_type": "model_type"}),
    Case(gf.write_model_gguf, args=(os.path.join(_DIR, "m.gguf"), load_config("Mistral-7B")),
         kwargs=dict(hidden_size=64, intermediate_size=128, vocab_size=256,
                     weights={"output_norm.weight": np.ones(64, np.float32)}),
         bad=dict(path=st.sampled_from([None, 3]), hidden_size=ints(minimum=1, none_ok=True),
                  intermediate_size=ints(minimum=1), vocab_size=ints(minimum=4),
                  weights=st.sampled_from([3, "w", [np.ones(64)], {"nope.weight": np.ones(64)},
                                           {"output_norm.weight": np.ones(63)},
                                           {"output_norm.weight": np.full(64, np.nan)}]),
                  **{"config.model_type": st.sampled_from(["mamba", None, 3, "deepseek_v3"])}),
         names={"config.model_type": "model_type"}),
    Case(gf.finish, args=(gguf.GGUFWriter(os.path.join(_DIR, "f.gguf"), "llama"),),
         bad=dict(writer=st.sampled_from([None, 3, "f.gguf", object()]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


def test_write_gguf_names_a_missing_max_position_embeddings(tmp_path):
    """It was a KeyError; the context length GGUF stores must come from the config."""
    cfg = load_config("Llama-3.1-8B")
    del cfg["max_position_embeddings"]
    with pytest.raises(ValueError, match="config is missing 'max_position_embeddings'"):
        gf.write_gguf(str(tmp_path / "m.gguf"), cfg)
