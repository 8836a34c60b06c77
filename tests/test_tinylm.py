"""lessonlib.tinylm: the model against a numpy reference built from lessonlib.rope.apply_rope and
lessonlib.attention.naive_attention, the KV-cache paths against the full forward and
lessonlib.streaming.StreamingCache, the committed checkpoints, and the committed result files
against a rerun of scripts/tinylm_experiments.py --reduced. The task it learns (lessonlib.kvtask)
is tested in tests/test_kvtask.py."""
import json
import os

import numpy as np
import pytest
from _support import load_file, needs, optional, skip_module_without

from lessonlib import kvtask, needles, tinylm_results
from lessonlib.attention import attention_mask, naive_attention
from lessonlib.rope import apply_rope, rope_frequencies
from lessonlib.streaming import StreamingCache
from lessonlib.tinylm_results import DEFAULT_CONFIG
from lessonlib.models import tiny

skip_module_without("torch")  # every test here runs the model (kvtask's: tests/test_kvtask.py)
torch = optional("torch")
from lessonlib.tinylm import (NeedleModel, StreamingKVCache, TinyLM, answer_accuracy,  # noqa: E402
                              export_gguf, export_hf_checkpoint, hf_config,
                              neox_to_adjacent_pairs,
                              attention_to_first_tokens, check_tokens, data_path, decode,
                              load_tinylm, mask_tensor, rope_tables, rotate, save_tinylm,
                              token_losses, with_rope_scaling)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "lessonlib", "data")
RESULTS = os.path.join(DATA, "tinylm_results")
SNAPSHOT = os.path.join(ROOT, "tests", "data", "tinylm_logits_snapshot.npz")

VARIANTS = [None, {"rope_type": "linear", "factor": 4.0}, {"rope_type": "ntk", "factor": 8.0},
            {"rope_type": "dynamic", "factor": 1.0}, {"rope_type": "yarn", "factor": 8.0},
            {"rope_type": "yarn", "factor": 8.0, "attention_factor": 1.0}]


@pytest.fixture(scope="module", autouse=True)
def _threads():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(old)


def small_model(seed=0):
    torch.manual_seed(seed)
    cfg = dict(DEFAULT_CONFIG, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
               head_dim=8, vocab_size=kvtask.VOCAB_SIZE)
    model = TinyLM(cfg).eval()
    with torch.no_grad():  # weights of a realistic scale, so scores are not all near zero
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(0.0, 0.3)
    return model


# --------------------------------------------------------------------------- RoPE and masks

@needs("torch")
@pytest.mark.parametrize("rope_scaling", VARIANTS)
def test_rotation_equals_lessonlib_apply_rope(rope_scaling):
    cfg = with_rope_scaling(DEFAULT_CONFIG, rope_scaling)
    n = 700
    x = np.random.default_rng(1).normal(size=(2, 3, n, DEFAULT_CONFIG["head_dim"])).astype(np.float32)
    cos, sin = rope_tables(cfg, n)
    ours = rotate(torch.from_numpy(x), cos, sin).numpy()
    inv_freq, af = rope_frequencies(cfg, seq_len=n)
    ref = apply_rope(x, np.arange(n), inv_freq, attention_factor=af)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


@needs("torch")
@pytest.mark.parametrize("n,window,sink", [(9, None, 0), (9, 3, 0), (12, 4, 2), (5, 1, 1)])
def test_mask_tensor_is_the_project_mask(n, window, sink):
    np.testing.assert_array_equal(mask_tensor(n, n, window=window, sink_tokens=sink).numpy(),
                                  attention_mask(n, n, causal=True, window=window, sink_tokens=sink))
    m = mask_tensor(3, n, window=window, sink_tokens=sink).numpy()  # queries = the last 3
    p, j = np.arange(n - 3, n)[:, None], np.arange(n)[None, :]
    want = (j <= p) & ((p - j < window) | (j < sink) if window else True)
    np.testing.assert_array_equal(m, want)


def reference_logits(model, tokens, rope_cfg, window=None, sink_tokens=0):
    """The model written again in numpy (float64) with lessonlib.rope.apply_rope and
    lessonlib.attention.naive_attention doing RoPE, GQA and the mask."""
    c = model.config
    W = {k: v.detach().double().numpy() for k, v in model.state_dict().items()}
    n = len(tokens)
    inv_freq, af = rope_frequencies(rope_cfg, seq_len=n)
    hq, hkv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]

    def rms(x, w):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + c["rms_norm_eps"]) * w

    x = W["embed.weight"][tokens]  # (n, d)
    for i in range(c["num_hidden_layers"]):
        p = f"layers.{i}."
        h = rms(x, W[p + "attn_norm.weight"])
        q = (h @ W[p + "attn.q_proj.weight"].T).reshape(n, hq, hd).transpose(1, 0, 2)
        k = (h @ W[p + "attn.k_proj.weight"].T).reshape(n, hkv, hd).transpose(1, 0, 2)
        v = (h @ W[p + "attn.v_proj.weight"].T).reshape(n, hkv, hd).transpose(1, 0, 2)
        q = apply_rope(q, np.arange(n), inv_freq, attention_factor=af).astype(np.float64)
        k = apply_rope(k, np.arange(n), inv_freq, attention_factor=af).astype(np.float64)
        o = naive_attention(q, k, v, causal=True, window=window, sink_tokens=sink_tokens)
        x = x + o.transpose(1, 0, 2).reshape(n, hq * hd) @ W[p + "attn.o_proj.weight"].T
        h = rms(x, W[p + "mlp_norm.weight"])
        g = h @ W[p + "gate.weight"].T
        x = x + (g / (1 + np.exp(-g)) * (h @ W[p + "up.weight"].T)) @ W[p + "down.weight"].T
    return rms(x, W["norm.weight"]) @ W["embed.weight"].T


@needs("torch")
@pytest.mark.parametrize("rope_scaling,window,sink", [
    (None, None, 0), (None, 7, 0), (None, 7, 3), ({"rope_type": "yarn", "factor": 8.0}, None, 0),
    ({"rope_type": "linear", "factor": 2.0}, 5, 2), ({"rope_type": "dynamic", "factor": 1.0}, None, 0)])
def test_model_equals_numpy_reference(rope_scaling, window, sink):
    model = small_model()
    tokens = kvtask.retrieval_document((3, 40, 0), 40).tokens
    cfg = with_rope_scaling(model.config, rope_scaling)
    with torch.no_grad():
        ours = model(torch.from_numpy(tokens)[None], rope=cfg, window=window, sink_tokens=sink)[0]
        explicit, weights = model(torch.from_numpy(tokens)[None], rope=cfg, window=window,
                                  sink_tokens=sink, need_weights=True)
    ref = reference_logits(model, tokens, cfg, window, sink)
    np.testing.assert_allclose(ours.numpy(), ref, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(explicit[0].numpy(), ref, rtol=2e-4, atol=2e-4)
    visible = attention_mask(40, 40, causal=True, window=window, sink_tokens=sink)
    for w in weights:  # hidden keys get exactly zero weight
        assert torch.all(w[0][:, ~torch.from_numpy(visible)] == 0)


@needs("torch")
def test_bad_tokens_are_named():
    model = small_model()
    for bad, hint in [(np.zeros((1, 4), dtype=np.int64), "torch tensor"),
                      (torch.zeros(1, 4), "int64"), (torch.zeros(4, dtype=torch.long), "shape"),
                      (torch.zeros((1, 0), dtype=torch.long), "n >= 1"),
                      (torch.tensor([[0, 131]]), r"\[0, 131\)"), (torch.tensor([[-1, 3]]), "-1")]:
        with pytest.raises(ValueError, match=hint):
            model(bad)
    with pytest.raises(ValueError, match="tokens"):
        decode(model, torch.tensor([[5, 200]]))


@needs("torch")
def test_a_malformed_rope_scaling_names_its_key():
    model = small_model()
    tokens = torch.from_numpy(kvtask.retrieval_document((1, 20, 0), 20).tokens)[None]
    for rope_scaling, key in [({"rope_type": "yarn", "factor": 0.5}, "factor"),
                              ({"rope_type": "linear"}, "factor"),
                              ({"rope_type": "yarn", "factor": 4.0, "beta_fast": float("nan")},
                               "beta_fast")]:
        with pytest.raises(ValueError, match=key):
            model(tokens, rope=with_rope_scaling(model.config, rope_scaling))


def _documents_through(model, n_docs):
    """(tokens, logits, weights) of ``n_docs`` 30-token retrieval documents."""
    tokens = torch.from_numpy(np.stack([kvtask.retrieval_document((6, 30, i), 30).tokens
                                        for i in range(n_docs)]))
    with torch.no_grad():
        logits, weights = model(tokens, need_weights=True)
    return tokens, logits, weights


@needs("torch")
def test_measurements_against_hand_computation():
    model = small_model(2)
    tokens, logits, weights = _documents_through(model, 3)
    lg = logits.double().numpy()
    logp = lg - np.log(np.exp(lg - lg.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - lg.max(-1, keepdims=True)
    t = tokens.numpy()
    want = -np.take_along_axis(logp[:, :-1], t[:, 1:, None], -1)[..., 0]  # position t predicts t+1
    np.testing.assert_allclose(token_losses(logits, tokens).numpy(), want, rtol=1e-4, atol=1e-5)
    hits = [lg[b, 28].argmax() == t[b, 29] for b in range(3)]
    assert answer_accuracy(logits, tokens, torch.full((3, 1), 29)) == pytest.approx(np.mean(hits))
    w = [x.numpy() for x in weights]  # per layer (B, hq, n, n)
    mass = attention_to_first_tokens(weights, n_first=2, query_from=5).numpy()
    want = np.stack([x[:, :, 5:, :2].sum(-1).mean(axis=(0, 2)) for x in w])
    np.testing.assert_allclose(mass, want, rtol=1e-5)
    assert mass.shape == (2, 4) and np.all((0 <= mass) & (mass <= 1))


@needs("torch")
def test_needle_model_answers_with_the_argmax_after_the_question():
    model = small_model(3)
    tok = kvtask.KVTokenizer()
    needle, filler = kvtask.needle_haystack((9, 0, 60), 60)
    prompt = needles.build_needle_prompt(60, 50, needle=needle, filler=filler, tokenizer=tok,
                                         question="? pass:")
    ids = [kvtask.BOS] + list(prompt.tokens) + tok.encode("? pass:")
    with torch.no_grad():
        want = int(model(torch.tensor([ids]))[0, -1].argmax())
    assert NeedleModel(model)(prompt) == "pass: " + kvtask.VOCAB[want]
    grid = needles.run_needle_grid(NeedleModel(model), [60], [0, 50], needle=needle,
                                   question="? pass:", filler=filler, tokenizer=tok,
                                   pass_prompt=True, progress=False)
    assert grid.found.shape == (1, 2)


# --------------------------------------------------------------------------- KV cache

@needs("torch")
def test_streaming_cache_evicts_like_lessonlib_streaming():
    for n_sink, n_recent in [(0, 5), (4, 3), (2, 1)]:
        ours, ref = StreamingKVCache(n_sink, n_recent), StreamingCache(n_sink, n_recent)
        for t in range(20):
            ours.append(torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2), t)
            ref.append()
            assert ours.positions.tolist() == ref.positions.tolist()


@needs("torch")
def test_full_cache_decode_equals_forward():
    model = small_model(1)
    tokens = torch.from_numpy(np.stack([kvtask.retrieval_document((2, 48, i), 48).tokens
                                        for i in range(2)]))
    with torch.no_grad():
        full = model(tokens)
    for positions in ("cache", "original"):  # nothing evicted: cache slot = position
        np.testing.assert_allclose(decode(model, tokens, positions=positions).numpy(),
                                   full.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(decode(model, tokens, n_sink=4, n_recent=44).numpy(),
                               full.numpy(), rtol=1e-4, atol=1e-4)


@needs("torch")
def test_window_decode_equals_a_fresh_forward_over_what_the_first_layer_sees():
    """With one layer, the streaming step's output depends only on the cached tokens: it equals
    a forward over [sinks + recent] tokens at positions 0 .. size - 1 (StreamingLLM's slots)."""
    torch.manual_seed(0)
    cfg = dict(DEFAULT_CONFIG, num_hidden_layers=1, hidden_size=32, intermediate_size=48, head_dim=8)
    model = TinyLM(cfg).eval()
    tokens = torch.from_numpy(kvtask.retrieval_document((5, 30, 0), 30).tokens)[None]
    out = decode(model, tokens, n_sink=2, n_recent=6)
    for t in (10, 29):
        kept = torch.cat([tokens[:, :2], tokens[:, t - 5:t + 1]], dim=1)
        with torch.no_grad():
            fresh = model(kept)[0, -1]
        np.testing.assert_allclose(out[0, t].numpy(), fresh.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="positions"):
        decode(model, tokens, positions="slots")


# --------------------------------------------------------------------------- the trained model

@pytest.fixture(scope="module")
def base():
    return load_tinylm("tinylm.pt")


@needs("torch")
def test_checkpoints_load_and_are_small(base):
    names = ("tinylm.pt", "tinylm_pi2x.pt")
    assert sum(os.path.getsize(os.path.join(DATA, n)) for n in names) <= 5 * 2 ** 20
    for name in names:
        blob = torch.load(os.path.join(DATA, name), map_location="cpu", weights_only=True)
        assert blob["dtype"] == "float16"
        assert all(v.dtype == torch.float16 for v in blob["state_dict"].values())
    assert all(p.dtype == torch.float32 for p in base.parameters())  # widened on load
    ft = load_tinylm("tinylm_pi2x.pt")
    assert base.config["max_position_embeddings"] == 256 and "rope_scaling" not in base.config
    assert ft.config["rope_scaling"] == {"rope_type": "linear", "factor": 2.0}
    assert not base.training


@needs("torch")
def test_the_numpy_side_config_is_the_committed_models(base):
    """Notebook 10 reads the model's shape from tinylm_results where torch is absent."""
    assert base.config == tinylm_results.trained_config()
    n_params = sum(p.numel() for p in base.parameters())
    assert n_params == tinylm_results.load_training_log()[1]["parameters"]
    copy = tinylm_results.trained_config()
    copy["head_dim"] = 0  # a fresh copy each call: editing it changes nothing
    assert tinylm_results.trained_config()["head_dim"] == 32


def write_snapshot():
    """Refresh the snapshot after retraining: ``.venv/bin/python tests/test_tinylm.py``."""
    tokens = kvtask.retrieval_batch(4242, 64, 2)
    with torch.no_grad():
        logits = load_tinylm("tinylm.pt")(torch.from_numpy(tokens)).numpy()
    os.makedirs(os.path.dirname(SNAPSHOT), exist_ok=True)
    np.savez_compressed(SNAPSHOT, tokens=tokens, logits=logits)


@needs("torch")
def test_logits_match_the_committed_snapshot(base):
    snap = np.load(SNAPSHOT)
    with torch.no_grad():
        logits = base(torch.from_numpy(snap["tokens"]))
    np.testing.assert_allclose(logits.numpy(), snap["logits"], rtol=1e-4, atol=1e-4)


@needs("torch")
def test_retrieval_at_the_trained_length_is_far_above_chance(base):
    n = 64
    tokens = torch.from_numpy(kvtask.retrieval_batch(31337, 256, n))  # unseen seeds
    with torch.no_grad():
        logits = base(tokens)
    acc = answer_accuracy(logits, tokens, torch.full((n, 1), 255))
    assert acc >= 0.9, f"retrieval accuracy {acc:.2f} (chance {1 / kvtask.N_VALUES:.2f})"
    filler_loss = token_losses(logits, tokens)[:, 1:200].mean().item()
    assert filler_loss < 2.5  # uniform over 64 filler words would be ln 64 = 4.16


# --------------------------------------------------------------------------- result files

def load_experiments():
    return load_file("scripts", "tinylm_experiments.py")


def _close(a, b, what, rtol=2e-3, atol=2e-3):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=rtol, atol=atol, err_msg=what)


@needs("torch")
@pytest.mark.slow
def test_committed_results_are_reproduced_by_the_reduced_grid(tmp_path):
    exp = load_experiments()
    exp.main(["--reduced", "--out", str(tmp_path)])
    committed = {n: json.load(open(os.path.join(RESULTS, f"{n}.json"))) for n in exp.EXPERIMENTS}
    fresh = {n: json.load(open(tmp_path / f"{n}.json")) for n in exp.EXPERIMENTS}
    assert all(committed[n]["grid"] == "full" and fresh[n]["grid"] == "reduced" for n in fresh)

    full_cells = {(c["model"], c["variant"], c["length"]): c for c in committed["extension"]["cells"]}
    for c in fresh["extension"]["cells"]:
        ref = full_cells[(c["model"], c["variant"], c["length"])]
        # one document may flip on a near-tie between two values; the rest must agree
        assert abs(c["accuracy"] - ref["accuracy"]) <= 1 / c["n_docs"] + 1e-9, c
        _close(c["loss_by_position"], ref["loss_by_position"], f"extension {c['variant']}")

    n_full, n_red = committed["needles"], fresh["needles"]
    for c in n_red["cells"]:
        ref = next(r for r in n_full["cells"] if (r["model"], r["variant"]) == (c["model"], c["variant"]))
        rows = [n_full["lengths"].index(n) for n in n_red["lengths"]]
        cols = [n_full["depths"].index(d) for d in n_red["depths"]]
        got, want = np.array(c["found_fraction"]), np.array(ref["found_fraction"])[np.ix_(rows, cols)]
        assert np.abs(got - want).max() <= 1 / n_red["trials"] + 1e-9

    for c in fresh["sinks"]["cells"]:
        ref = next(r for r in committed["sinks"]["cells"] if r["length"] == c["length"])
        _close(c["mass_first1"], ref["mass_first1"], "sink mass", atol=1e-3)
        _close(c["mass_first4"], ref["mass_first4"], "sink mass", atol=1e-3)

    s_full, s_red = committed["streaming"], fresh["streaming"]
    for name, c in s_red["caches"].items():
        k = len(c["loss_by_position"]) - 1  # the last bin of the reduced run is partial
        _close(c["loss_by_position"][:k], s_full["caches"][name]["loss_by_position"][:k],
               f"streaming {name}")


# --------------------------------------------------------------------------- issue 13 examples

def _small_config(**changes):
    return dict(DEFAULT_CONFIG, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                head_dim=8) | changes


def test_a_rope_config_with_another_head_dim_is_named(base):
    """Half the dims rotated, logits off by 14: now the key that disagrees is named."""
    tokens = torch.from_numpy(kvtask.retrieval_document((1, 40, 0), 40).tokens)[None]
    for rope in (dict(DEFAULT_CONFIG, head_dim=16),
                 with_rope_scaling(dict(DEFAULT_CONFIG, head_dim=64), {"rope_type": "linear",
                                                                       "factor": 2.0})):
        with pytest.raises(ValueError, match=r"^rope.head_dim: the rope config's head dim .* is "
                                             r"not the model's head_dim 32"):
            base(tokens, rope=rope)
        with pytest.raises(ValueError, match=r"^rope.head_dim"):
            decode(base, tokens[:, :4], rope=rope)
        with pytest.raises(ValueError, match=r"^rope.head_dim"):
            NeedleModel(base, rope)
    # a partial rotary factor is a rope choice, not a shape mismatch: it runs
    with torch.no_grad():
        partial = base(tokens, rope=dict(DEFAULT_CONFIG, partial_rotary_factor=0.5))
    assert torch.isfinite(partial).all()


# TinyLM reads its config with models.tiny.read_tiny_config (every rule: test_models_tiny.py);
# these show a model refusing one through it
@pytest.mark.parametrize("changes, says", [
    (dict(num_key_value_heads=3), r"^num_attention_heads 4 must be a multiple of "
                                  r"num_key_value_heads 3"),
    (dict(rope_scaling={"rope_type": "linear", "factor": 0.5}), r"rope_scaling.factor"),
])
def test_a_config_that_builds_another_model_is_named(changes, says):
    with pytest.raises(ValueError, match=says):
        TinyLM(_small_config(**changes))


@pytest.mark.parametrize("key", ["hidden_size", "vocab_size", "num_key_value_heads", "head_dim",
                                 "rms_norm_eps"])
def test_a_missing_config_key_is_named(key):
    cfg = _small_config()
    del cfg[key]  # was KeyError: 'hidden_size'
    with pytest.raises(ValueError, match=rf"^config.{key} is missing"):
        TinyLM(cfg)


def test_with_rope_scaling_is_the_tiny_configs_reader():
    # its rules and errors are tested in test_models_tiny.py
    assert with_rope_scaling is tiny.with_rope_scaling


def test_decode_arguments_are_named():
    model = small_model()
    doc = kvtask.retrieval_document((2, 12, 0), 12, n_distractors=1)
    tokens = torch.from_numpy(doc.tokens)[None]
    for kwargs, says in [(dict(n_sink=True), r"^n_sink must be an integer, got True \(a bool\)"),
                         (dict(n_sink=-1), r"^n_sink must be an integer >= 0"),
                         (dict(n_recent=0), r"^n_recent must be an integer >= 1"),
                         (dict(n_recent=4.0), r"^n_recent must be an integer, got the float"),
                         (dict(positions="slots"),
                          r"^positions must be one of 'cache', 'original'"),
                         (dict(positions="Cache"), r"^positions must be one of"),
                         (dict(rope="yarn"), r"^rope must be a config dict")]:
        with pytest.raises(ValueError, match=says):
            decode(model, tokens, **kwargs)
    with pytest.raises(ValueError, match=r"^model must be a TinyLM"):
        decode(lambda t: t, tokens)


def test_measurement_indices_are_named():
    model = small_model(2)
    tokens, logits, weights = _documents_through(model, 2)
    with torch.no_grad():
        plain = model(tokens)
    for answer_at, says in [(torch.full((2, 1), 0), r"^answer_at must be positions in \[1, n - 1\] "
                                                    r"= \[1, 29\] .* got values 0\.\.0"),
                            (torch.full((2, 1), 30), r"got values 30\.\.30"),  # was an IndexError
                            (torch.full((2, 1), 29.0), r"^answer_at must hold integer positions"),
                            ([[True], [False]], r"^answer_at must hold integers"),
                            (torch.full((3, 1), 29), r"^answer_at must have one row per document"),
                            (torch.tensor([29, 28, 27]), r"^answer_at must hold k positions per "
                                                         r"document \(B = 2\)"),
                            (torch.zeros(0, dtype=torch.long), r"at least one position")]:
        with pytest.raises(ValueError, match=says):
            answer_accuracy(logits, tokens, answer_at)
    # a flat array of B entries is one position per row, as before
    assert answer_accuracy(logits, tokens, torch.tensor([29, 29])) == \
        answer_accuracy(logits, tokens, torch.full((2, 1), 29))
    assert answer_accuracy(logits, tokens, np.array([[29], [29]])) == \
        answer_accuracy(logits, tokens, [[29], [29]])
    for kwargs, says in [(dict(n_first=0), r"^n_first must be an integer >= 1 and <= 30"),
                         (dict(n_first=31), r"^n_first must be"),
                         (dict(query_from=30), r"^query_from must be an integer >= 0 and <= 29"),
                         (dict(query_from=-1), r"^query_from must be")]:
        with pytest.raises(ValueError, match=says):  # query_from=30 was a NaN mean
            attention_to_first_tokens(weights, **kwargs)
    with pytest.raises(ValueError, match=r"^weights\[0\] is None: run forward\(\.\.\., "
                                         r"need_weights=True\)"):
        attention_to_first_tokens(model(tokens, need_weights=True)[1] and [None, None])
    with pytest.raises(ValueError, match=r"^tokens must be \(B, n\) = \(2, 30\) like logits"):
        token_losses(plain, tokens[:, :-1])
    with pytest.raises(ValueError, match=r"^logits must be 3-D"):
        token_losses(plain[0], tokens)
    nan = plain.clone()
    nan[1, 3, 7] = float("nan")
    with pytest.raises(ValueError, match=r"^logits holds non-finite values \(1 of .* at index "
                                         r"\(1, 3, 7\)"):
        token_losses(nan, tokens)


def test_the_streaming_cache_checks_what_it_holds():
    with pytest.raises(ValueError, match=r"^n_sink must be an integer >= 0, got -1"):
        StreamingKVCache(-1, 4)
    with pytest.raises(ValueError, match=r"^n_recent must be an integer >= 1"):
        StreamingKVCache(1, 0)
    cache = StreamingKVCache(1, 2)
    cache.append(torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4), 0)
    for args, says in [((torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4), 0),
                        r"^position must be an integer >= 1, got 0"),
                       ((torch.zeros(1, 3, 1, 4), torch.zeros(1, 3, 1, 4), 1),
                        r"^k must match the cached k"),
                       ((torch.zeros(1, 2, 2, 4), torch.zeros(1, 2, 2, 4), 1),
                        r"^k must be one token's keys"),
                       ((torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4, dtype=torch.int64), 1),
                        r"^v must hold floating-point numbers"),
                       ((torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4), 1.5),
                        r"^position must be an integer")]:
        with pytest.raises(ValueError, match=says):
            cache.append(*args)
    assert cache.positions.tolist() == [0]  # nothing was added by the refused calls


def test_rotate_mask_tokens_checkpoints_and_the_needle_model_name_their_arguments(tmp_path):
    x = torch.zeros(1, 2, 5, 8)
    cos, sin = rope_tables(DEFAULT_CONFIG, 5)
    with pytest.raises(ValueError, match=r"^cos must have one row per position of x \(n = 4\)"):
        rotate(x[:, :, :4], cos, sin)
    with pytest.raises(ValueError, match=r"^cos must have 1 .. d/2 = 4 columns"):
        rotate(x, cos, sin)  # the model's 16 pairs on an 8-dim x
    with pytest.raises(ValueError, match=r"^x must be a torch tensor"):
        rotate(np.zeros((5, 32)), cos, sin)
    with pytest.raises(ValueError, match=r"^n_positions must be an integer >= 1"):
        rope_tables(DEFAULT_CONFIG, 0)
    with pytest.raises(ValueError, match=r"^seq_len must be an integer >= 1, got 0"):
        rope_tables(DEFAULT_CONFIG, 5, seq_len=0)  # was read as "not given"
    with pytest.raises(ValueError, match=r"window"):
        mask_tensor(4, 4, window=0)
    with pytest.raises(ValueError, match=r"^ids must be ids in \[0, 131\)"):
        check_tokens(torch.tensor([[0, 131]]), 131, name="ids")
    with pytest.raises(ValueError, match=r"^name_or_path 'nope.pt' is neither a file nor a "
                                         r"checkpoint in lessonlib/data \(there: tinylm.pt, "
                                         r"tinylm_pi2x.pt\)"):
        load_tinylm("nope.pt")
    (tmp_path / "x.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match=r"^name_or_path .* is not a save_tinylm checkpoint"):
        load_tinylm(tmp_path / "x.pt")
    model = small_model()
    save_tinylm(model, tmp_path / "m.pt", note="kept")
    assert torch.load(tmp_path / "m.pt", weights_only=True)["note"] == "kept"
    assert load_tinylm(str(tmp_path / "m.pt")).config == model.config
    with pytest.raises(ValueError, match=r"^config is one of the checkpoint's own entries"):
        save_tinylm(model, tmp_path / "m.pt", config={})  # would replace the model's config
    with pytest.raises(ValueError, match=r"^name must be a file name"):
        data_path("")
    prompt = needles.build_needle_prompt(20, 50, needle="pass: v03", question="? pass:",
                                         filler=list(range(kvtask.FILLER0, kvtask.FILLER0 + 5)),
                                         tokenizer=kvtask.KVTokenizer())
    assert NeedleModel(model)(prompt).startswith("pass: ")
    with pytest.raises(ValueError, match=r"^prompt must be a NeedlePrompt \(run_needle_grid"
                                         r"\(\.\.\., pass_prompt=True"):
        NeedleModel(model)(prompt.text)
    with pytest.raises(ValueError, match=r"^prompt.tokens\[0\] must be an integer"):
        NeedleModel(model)(needles.build_needle_prompt(20, 50))  # built with words, not ids
    with pytest.raises(ValueError, match=r"^prompt.question must be words of the task"):
        NeedleModel(model)(needles.build_needle_prompt(20, 50, needle="pass: v03",
                                                       tokenizer=kvtask.KVTokenizer(),
                                                       filler=[kvtask.FILLER0]))


def test_forward_flags_and_masks_are_named():
    model = small_model()
    tokens = torch.zeros(1, 6, dtype=torch.long)
    for kwargs, says in [(dict(need_weights="yes"), r"^need_weights must be True or False"),
                         (dict(window=2.0), r"^window must be an integer, got the float"),
                         (dict(window=3, sink_tokens=True), r"^sink_tokens must be an integer"),
                         (dict(sink_tokens=-1), r"^sink_tokens must be an integer >= 0")]:
        with pytest.raises(ValueError, match=says):
            model(tokens, **kwargs)


# --------------------------------------------------------------------------- bad inputs
# Every argument of the public functions, fed what a careful user might pass by mistake: each
# must be a ValueError naming the argument (tests/_bad.py; coverage in test_validate.py).
def test_adjacent_pair_rotation_of_permuted_rows_gives_the_neox_scores():
    """Q and K rows reordered by neox_to_adjacent_pairs, rotated pair (2j, 2j+1) by angle
    theta_j as llama.cpp's llama graph does, score exactly as the model's NeoX rotation of
    (j, j + d/2) does; unpermuted, they do not."""
    rng = np.random.default_rng(0)
    hq, hkv, hd, d, n = 4, 2, 8, 16, 6
    Wq, Wk = rng.standard_normal((hq * hd, d)), rng.standard_normal((hkv * hd, d))
    x = rng.standard_normal((n, d))
    cos, sin = rope_tables(dict(_CFG, head_dim=hd), n)
    cos, sin = cos.double().numpy(), sin.double().numpy()  # (n, hd): NeoX layout, halves equal
    theta_cos, theta_sin = cos[:, :hd // 2], sin[:, :hd // 2]

    def neox(W, h):
        v = (x @ W.T).reshape(n, h, hd)
        a, b = v[..., :hd // 2], v[..., hd // 2:]
        c, s_ = theta_cos[:, None], theta_sin[:, None]
        return np.concatenate([a * c - b * s_, b * c + a * s_], -1)

    def adjacent(W, h):
        v = (x @ W.T).reshape(n, h, hd)
        a, b = v[..., 0::2], v[..., 1::2]
        c, s_ = theta_cos[:, None], theta_sin[:, None]
        out = np.empty_like(v)
        out[..., 0::2], out[..., 1::2] = a * c - b * s_, b * c + a * s_
        return out

    def scores(q, k):
        return np.einsum("ihd,jhd->hij", q, np.repeat(k, hq // hkv, axis=1))

    want = scores(neox(Wq, hq), neox(Wk, hkv))
    got = scores(adjacent(neox_to_adjacent_pairs(Wq, hq), hq),
                 adjacent(neox_to_adjacent_pairs(Wk, hkv), hkv))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.abs(scores(adjacent(Wq, hq), adjacent(Wk, hkv)) - want).max() > 1.0
    assert (neox_to_adjacent_pairs(np.arange(8.0)[:, None], 1).ravel() ==
            [0, 4, 1, 5, 2, 6, 3, 7]).all()


def test_export_writes_what_llama_cpp_reads(tmp_path):
    from lessonlib.models import gguf
    model = load_tinylm()
    m = gguf.read_gguf(export_gguf(model, str(tmp_path / "tiny.gguf")))
    c = model.config
    assert m.architecture == "llama" and m.n_tensors == 2 + 9 * c["num_hidden_layers"]
    for key in ("hidden_size", "intermediate_size", "vocab_size", "num_hidden_layers",
                "num_attention_heads", "num_key_value_heads", "head_dim", "rope_theta"):
        assert m.config[key] == c[key], key
    pi = gguf.read_gguf(export_gguf(load_tinylm("tinylm_pi2x.pt"), str(tmp_path / "pi.gguf")))
    assert pi.config["rope_scaling"] == {"rope_type": "linear", "factor": 2.0}


@pytest.mark.parametrize("rope_scaling,mpe,n", [
    (None, None, 200), ({"rope_type": "linear", "factor": 2.0}, None, 400),
    ({"rope_type": "yarn", "factor": 4.0}, 1024, 600)])
def test_the_hf_checkpoint_is_this_model_in_transformers(tmp_path, rope_scaling, mpe, n):
    """transformers' own LlamaForCausalLM, loaded from the exported folder, gives this model's
    logits (no pair permutation: both rotate NeoX halves), within and past the trained 256."""
    from transformers import LlamaForCausalLM
    model = load_tinylm()
    folder = export_hf_checkpoint(model, str(tmp_path / "hf"), rope_scaling, mpe)
    with open(os.path.join(folder, "config.json")) as f:
        written = json.load(f)
    assert written["architectures"] == ["LlamaForCausalLM"] and written.get("rope_scaling") == (
        None if rope_scaling is None else hf_config(model, rope_scaling)["rope_scaling"])
    hf = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
    tokens = torch.tensor([np.random.default_rng(1).integers(0, 131, n).tolist()])
    rope = hf_config(model, rope_scaling, mpe) if rope_scaling else None
    with torch.no_grad():
        ours, theirs = model(tokens, rope=rope), hf(tokens).logits
    assert (ours - theirs).abs().max().item() < 1e-3
    assert (ours.argmax(-1) == theirs.argmax(-1)).float().mean().item() == 1.0


def test_the_hf_config_checks_its_arguments():
    model = load_tinylm()
    with pytest.raises(ValueError, match="rope_scaling.factor"):
        hf_config(model, {"rope_type": "linear", "factor": 0.5})
    with pytest.raises(ValueError, match="max_position_embeddings"):
        hf_config(model, None, 0)
    with pytest.raises(ValueError, match="model"):
        hf_config("tinylm.pt")


import io  # noqa: E402

from _bad import (DELETE, Case, arrays_with, bad_input_tests, choices, flags, ints,  # noqa: E402
                  reals, texts)
import tempfile  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lessonlib.tinylm import StreamingKVCache as _Cache  # noqa: E402


def tensors_with(valid, *, floating=True, more_dims_ok=False):
    """Bad versions of the tensor ``valid``: NaN or inf at a drawn index (floating), the wrong
    dtype, the wrong rank (one more dim too, unless ``more_dims_ok``), the numpy array, a list,
    a string, None."""
    @st.composite
    def non_finite(draw):
        t = valid.clone()
        at = tuple(draw(st.integers(0, n - 1)) for n in t.shape)
        t[at] = draw(st.sampled_from([float("nan"), float("inf"), -float("inf")]))
        return t

    parts = [st.sampled_from([valid.numpy(), valid.tolist(), "tensor", None, valid.bool(),
                              valid.to(torch.complex64), valid.reshape(-1)]
                             + ([] if more_dims_ok else [valid[None]]))]
    if floating:
        parts += [non_finite(), st.just(valid.long())]
    return st.one_of(parts)


_DELETE = st.just(DELETE)
_NOT_A_DICT = st.sampled_from([None, [], "config", 3])
_CFG = _small_config()
torch.manual_seed(0)
_M = TinyLM(_CFG).eval()
_TOKENS = torch.from_numpy(kvtask.retrieval_document((3, 8, 0), 8, n_distractors=1).tokens)[None]
_BAD_TOKENS = st.sampled_from([
    torch.tensor([[0, 131]]), torch.tensor([[-1, 3]]), torch.zeros(1, 8), torch.zeros(1, 8).bool(),
    torch.zeros(8, dtype=torch.long), torch.zeros(1, 1, 8, dtype=torch.long),
    torch.zeros(1, 0, dtype=torch.long), torch.zeros(1, 8, dtype=torch.uint8),
    np.zeros((1, 8), dtype=np.int64), [[0, 1]], None, "tokens"])
_ROPE_BAD = st.sampled_from(["yarn", 3, [("rope_type", "yarn")]]) | st.just(dict(_CFG, head_dim=4))
with torch.no_grad():
    _LOGITS, _WEIGHTS = _M(_TOKENS, need_weights=True)
_TOKENS2 = torch.cat([_TOKENS, _TOKENS.flip(1)])
with torch.no_grad():
    _LOGITS2 = _M(_TOKENS2)
_X, (_COS, _SIN) = torch.randn(1, 2, 4, 8), rope_tables(_CFG, 4)
_K1 = torch.randn(1, 2, 1, 4)


def _cache_holding_position_0():
    cache = _Cache(1, 2)
    cache.append(torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4), 0)
    return cache


_PROMPT = needles.build_needle_prompt(10, 50, needle="pass: v03", question="? pass:",
                                      filler=[kvtask.FILLER0 + 1], tokenizer=kvtask.KVTokenizer())

BAD_INPUTS = [
    Case(TinyLM, args=(_CFG,),
         # TinyLM reads its config with models.tiny.read_tiny_config, whose cases cover every
         # key (test_models_tiny.py); here, that the model reads it at all
         bad={"config": st.sampled_from([[], "config", 3]),  # None: DEFAULT_CONFIG
              "config.hidden_size": _DELETE | ints(minimum=1),
              "config.num_key_value_heads": _DELETE | ints(minimum=1) | st.just(3)}),
    Case(TinyLM, id="TinyLM(PI config)",
         args=(_small_config(rope_scaling={"rope_type": "linear", "factor": 2.0}),),
         bad={"config.rope_scaling.factor": reals(minimum=1.0)},
         names={"config.rope_scaling.factor": "rope_scaling.factor"}),
    Case(TinyLM.forward, call=lambda tokens, rope=None, window=None, sink_tokens=0,
         need_weights=False: _M(tokens, rope=rope, window=window, sink_tokens=sink_tokens,
                                need_weights=need_weights),
         args=(_TOKENS,),
         kwargs=dict(rope=with_rope_scaling(_CFG, {"rope_type": "yarn", "factor": 4.0}),
                     window=4, sink_tokens=1, need_weights=True),
         bad={"tokens": _BAD_TOKENS, "rope": _ROPE_BAD,
              "rope.head_dim": ints(minimum=2, none_ok=True) | st.just(4),
              "rope.rope_scaling.factor": reals(minimum=1.0, none_ok=True),  # None: HF's L / L0
              "window": ints(minimum=1, none_ok=True), "sink_tokens": ints(minimum=0),
              "need_weights": flags()},
         names={"rope.rope_scaling.factor": "rope_scaling.factor"}),
    # with_rope_scaling is models.tiny's: its cases are in test_models_tiny.py
    Case(rope_tables, args=(_CFG, 16), kwargs=dict(seq_len=32),
         bad=dict(config=_NOT_A_DICT, n_positions=ints(minimum=1),
                  seq_len=ints(minimum=1, none_ok=True))),
    Case(rotate, args=(_X, _COS, _SIN),
         bad=dict(x=tensors_with(_X, more_dims_ok=True) | st.just(_X[:, :, :3]),
                  cos=tensors_with(_COS) | st.sampled_from([_COS[:3], torch.zeros(4, 5)]),
                  sin=tensors_with(_SIN) | st.just(_SIN[:, :3]))),
    Case(mask_tensor, args=(5, 9), kwargs=dict(window=3, sink_tokens=1),
         bad=dict(nq=ints(minimum=1) | st.just(10), nk=ints(minimum=1),
                  window=ints(minimum=1, none_ok=True), sink_tokens=ints(minimum=0))),
    Case(check_tokens, args=(_TOKENS, 131), kwargs=dict(name="ids"),
         bad=dict(tokens=_BAD_TOKENS, vocab_size=ints(minimum=1), name=texts()),
         names=dict(tokens="ids")),
    Case(load_tinylm, args=("tinylm_pi2x.pt",),
         bad=dict(name_or_path=texts() | st.sampled_from(["nope.pt", "", "tinylm_results",
                                                          "tinylm_train_log.csv"]))),
    Case(save_tinylm, args=(_M, io.BytesIO()), kwargs=dict(note="x"),
         bad=dict(model=st.sampled_from([None, "model", {}, lambda t: t]),
                  path=st.sampled_from([None, 3, ["m.pt"], 2.5]),
                  extra=st.sampled_from([{"config": {}}, {"state_dict": {}}, {"dtype": "fp32"}])),
         names=dict(extra="state_dict")),
    Case(data_path, args=("tinylm.pt",), bad=dict(name=texts() | st.just(""))),
    Case(neox_to_adjacent_pairs, args=(np.arange(64.0).reshape(8, 8), 2),
         bad=dict(weight=arrays_with(np.arange(64.0).reshape(8, 8), kind="real", ranks=(2,))
                  | st.just(np.zeros((6, 8))),
                  n_heads=ints(minimum=1) | st.just(3))),
    Case(export_gguf, args=(_M, os.path.join(tempfile.mkdtemp(), "tiny.gguf")),
         bad=dict(model=st.sampled_from([None, "model", {}]), path=texts())),
    Case(decode, args=(_M, _TOKENS), kwargs=dict(n_sink=1, n_recent=4, positions="cache"),
         bad=dict(model=st.sampled_from([None, "model", lambda t: t]), tokens=_BAD_TOKENS,
                  n_sink=ints(minimum=0), n_recent=ints(minimum=1, none_ok=True),
                  positions=choices(["cache", "original"]), rope=_ROPE_BAD)),
    Case(StreamingKVCache, kwargs=dict(n_sink=1, n_recent=3),
         bad=dict(n_sink=ints(minimum=0), n_recent=ints(minimum=1, none_ok=True))),
    Case(StreamingKVCache.append, args=(_K1, _K1, 1),
         call=lambda k, v, position: _cache_holding_position_0().append(k, v, position),
         bad=dict(k=tensors_with(_K1) | st.sampled_from([torch.zeros(1, 2, 2, 4),
                                                         torch.zeros(1, 3, 1, 4)]),
                  v=tensors_with(_K1) | st.just(torch.zeros(1, 3, 1, 4)),
                  position=ints(minimum=1) | st.just(0))),
    Case(token_losses, args=(_LOGITS, _TOKENS),
         bad=dict(logits=tensors_with(_LOGITS) | st.just(_LOGITS[:, :5]),
                  tokens=_BAD_TOKENS | st.just(_TOKENS[:, :5]))),
    Case(answer_accuracy, args=(_LOGITS2, _TOKENS2, torch.tensor([[7], [6]])),
         bad=dict(logits=tensors_with(_LOGITS2), tokens=_BAD_TOKENS,
                  answer_at=st.sampled_from([
                      torch.tensor([[0], [7]]), torch.tensor([[8], [7]]),
                      torch.tensor([[7.0], [6.0]]),
                      torch.tensor([[True], [True]]), [[2.5], [3.0]], "7", None,
                      torch.full((3, 1), 7), torch.zeros(0, dtype=torch.long),
                      torch.tensor([7, 6, 5]), np.array([[7], [6]], dtype=float)]))),
    Case(attention_to_first_tokens, args=(_WEIGHTS, 2, 3),
         bad=dict(weights=st.sampled_from([[], None, [None, None], "w", [_WEIGHTS[0][0]],
                                           [_WEIGHTS[0], _WEIGHTS[1][..., :7]],
                                           [_WEIGHTS[0], _WEIGHTS[1] * float("nan")]]),
                  n_first=ints(minimum=1, maximum=8), query_from=ints(minimum=0, maximum=7))),
    Case(hf_config, args=(_M, {"rope_type": "linear", "factor": 2.0}, 1024),
         bad=dict(model=st.sampled_from([None, "model", _CFG]), rope_scaling=_ROPE_BAD,
                  max_position_embeddings=ints(minimum=1, none_ok=True))),
    Case(export_hf_checkpoint, args=(_M, tempfile.mkdtemp()),
         kwargs=dict(rope_scaling=None, max_position_embeddings=None),
         bad=dict(model=st.sampled_from([None, "model", _CFG]), folder=texts(),
                  rope_scaling=_ROPE_BAD,
                  max_position_embeddings=ints(minimum=1, none_ok=True))),
    Case(NeedleModel, args=(_M,), kwargs=dict(rope=with_rope_scaling(_CFG, None)),
         bad=dict(model=st.sampled_from([None, "model", lambda t: t]), rope=_ROPE_BAD)),
    Case(NeedleModel.__call__, args=(_PROMPT,), call=lambda prompt: NeedleModel(_M)(prompt),
         bad=dict(prompt=st.sampled_from([
             _PROMPT.text, None, needles.build_needle_prompt(10, 50),
             needles.build_needle_prompt(10, 50, needle="pass: v03", question="What?",
                                         filler=[kvtask.FILLER0], tokenizer=kvtask.KVTokenizer())
         ]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


if __name__ == "__main__":
    write_snapshot()
