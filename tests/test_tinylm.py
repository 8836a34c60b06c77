"""lessonlib.tinylm and lessonlib.kvtask: the task, the model against a numpy reference built from
lessonlib.rope.apply_rope and lessonlib.attention.naive_attention, the KV-cache paths against
the full forward and lessonlib.streaming.StreamingCache, the committed checkpoints, and the
committed result files against a rerun of scripts/tinylm_experiments.py --reduced."""
import importlib.util
import json
import os

import numpy as np
import pytest
from _support import needs, optional

from lessonlib import kvtask, needles, tinylm_results
from lessonlib.attention import attention_mask, naive_attention
from lessonlib.rope import apply_rope, rope_frequencies
from lessonlib.streaming import StreamingCache
from lessonlib.tinylm_results import DEFAULT_CONFIG

torch = optional("torch")  # the task's tests (kvtask) run without it; the model's need it
if torch is not None:
    from lessonlib.tinylm import (NeedleModel, StreamingKVCache, TinyLM, answer_accuracy,
                                 attention_to_first_tokens, decode, load_tinylm, mask_tensor,
                                 rope_tables, rotate, token_losses, with_rope_scaling)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "lessonlib", "data")
RESULTS = os.path.join(DATA, "tinylm_results")
SNAPSHOT = os.path.join(ROOT, "tests", "data", "tinylm_logits_snapshot.npz")

VARIANTS = [None, {"rope_type": "linear", "factor": 4.0}, {"rope_type": "ntk", "factor": 8.0},
            {"rope_type": "dynamic", "factor": 1.0}, {"rope_type": "yarn", "factor": 8.0},
            {"rope_type": "yarn", "factor": 8.0, "attention_factor": 1.0}]


@pytest.fixture(scope="module", autouse=True)
def _threads():
    if torch is None:
        yield
        return
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


# --------------------------------------------------------------------------- the task

def test_documents_are_deterministic_and_well_formed():
    a, b = kvtask.training_document((5, 3)), kvtask.training_document((5, 3))
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert not np.array_equal(a.tokens, kvtask.training_document((5, 4)).tokens)
    for seed in range(40):
        d = kvtask.training_document((seed,), 256)
        t = d.tokens
        assert t.shape == (256,) and t[0] == kvtask.BOS and len(d.answer_at) >= 1
        assert np.sum(t == kvtask.PASS) == 1 + len(d.answer_at)  # one needle, then the queries
        for ans, at in zip(d.answer_at, d.needle_at):
            # the query "? pass:" asks for the needle "pass: v", and the answer is v
            assert t[ans - 2] == kvtask.QUERY and t[ans - 1] == kvtask.PASS == t[at]
            assert t[ans] == t[at + 1] and kvtask.VALUE0 <= t[ans] < kvtask.FILLER0
            assert at < ans - 2
        keys = t[(t >= kvtask.KEY0) & (t < kvtask.VALUE0)]
        assert len(set(keys)) == len(keys)  # distractor keys are distinct
        after_key = np.flatnonzero((t[:-1] >= kvtask.KEY0) & (t[:-1] < kvtask.VALUE0)) + 1
        assert np.all((t[after_key] >= kvtask.VALUE0) & (t[after_key] < kvtask.FILLER0))


@pytest.mark.parametrize("length", [64, 256, 1000])
def test_retrieval_document_ends_with_its_answer(length):
    for i in range(10):
        d = kvtask.retrieval_document((1, length, i), length)
        t = d.tokens
        assert t.shape == (length,) and t[0] == kvtask.BOS and d.answer_at.tolist() == [length - 1]
        at = d.needle_at[0]
        assert t[at] == kvtask.PASS and t[-1] == t[at + 1] and t[-3] == kvtask.QUERY
        assert np.sum(t == kvtask.PASS) == 2
        assert np.sum((t >= kvtask.KEY0) & (t < kvtask.VALUE0)) == 4  # the distractors
    assert kvtask.retrieval_document((1, length, 0), length, depth=0.0).needle_at[0] == 1
    end = kvtask.retrieval_document((1, length, 0), length, depth=1.0, n_distractors=0)
    assert end.needle_at[0] == length - 5  # "pass: v ? pass: v" closes the document
    with pytest.raises(ValueError, match="depth"):
        kvtask.retrieval_document(1, length, depth=1.5)


@pytest.mark.parametrize("n_filler", [40, 60, 251, 507, 2043])
def test_needle_haystack_never_splits_a_distractor(n_filler):
    """Wherever a 0, 10, ..., 100 % needle goes, "kNN:" keeps its value right after it."""
    tok = kvtask.KVTokenizer()
    for trial in range(6):
        needle, filler = kvtask.needle_haystack((3, trial, n_filler), n_filler)
        assert (needle, filler) == kvtask.needle_haystack((3, trial, n_filler), n_filler)
        assert len(filler) == n_filler and needle.startswith("pass: v")
        assert sum(kvtask.KEY0 <= x < kvtask.VALUE0 for x in filler) == 4
        for depth in kvtask.HAYSTACK_DEPTHS:
            p = needles.build_needle_prompt(n_filler, depth, needle=needle, filler=filler,
                                            tokenizer=tok, question="? pass:")
            t = list(p.tokens)
            assert t[p.needle_index:p.needle_index + 2] == tok.encode(needle)
            keys = [i for i, x in enumerate(t) if kvtask.KEY0 <= x < kvtask.VALUE0]
            assert all(kvtask.VALUE0 <= t[i + 1] < kvtask.FILLER0 for i in keys), (trial, depth)
    with pytest.raises(ValueError, match="n_filler 7 is too short for 4"):
        kvtask.needle_haystack(1, 7)
    with pytest.raises(ValueError, match="n_filler 9 is too short to keep"):
        kvtask.needle_haystack(1, 9)  # every position of 9 tokens is some depth's needle slot


def test_stream_queries_are_answerable_in_a_window_of_256():
    d = kvtask.stream_document((4, 0), 4096)
    t = d.tokens
    assert t.shape == (4096,) and len(d.answer_at) == 4095 // 512
    gap = d.answer_at - d.needle_at
    # needle cut + 128..235 filler words, + the needle, 2 distractors and "? pass:" before it
    assert gap.min() >= 128 + 2 + 4 + 2 and gap.max() <= 235 + 2 + 4 + 2
    assert np.all(t[d.answer_at] == t[d.needle_at + 1]) and np.all(t[d.needle_at] == kvtask.PASS)
    passes = np.flatnonzero(t == kvtask.PASS)  # needles and queries
    for a, at in zip(d.answer_at, d.needle_at):  # nothing else about the pass key in the window
        recent = passes[(passes > a - 256) & (passes < a - 1)]
        assert recent.tolist() == [at]
    assert np.all(d.needle_at >= 5)  # the first 4 tokens (sinks) never hold a needle
    np.testing.assert_array_equal(kvtask.stream_document((4, 0), 4096).tokens, t)


def test_skip_bigram_filler_follows_its_table():
    table = kvtask.skip_bigram_table()
    np.testing.assert_allclose(table.sum(1), 1.0)
    assert np.all((table > 0).sum(1) == kvtask.SUCCESSORS)
    f = kvtask.filler_tokens(np.random.default_rng(0), 20000) - kvtask.FILLER0
    counts = np.zeros_like(table)
    np.add.at(counts, (f[:-2], f[2:]), 1)
    assert np.all(counts[table == 0] == 0)  # never an impossible successor
    seen = counts.sum(1) >= 300  # rows seen often enough to compare frequencies
    assert seen.sum() >= 20
    emp = counts[seen] / counts[seen].sum(1, keepdims=True)
    np.testing.assert_allclose(emp, table[seen], atol=0.1)


def test_tokenizer_round_trip_and_rejects_unknown_words():
    tok = kvtask.KVTokenizer()
    assert tok.encode("<bos> k03: v17 f63") == [kvtask.BOS, kvtask.KEY0 + 3, kvtask.VALUE0 + 17,
                                                kvtask.FILLER0 + 63]
    assert tok.decode(tok.encode("? pass: v00")) == "? pass: v00"
    with pytest.raises(ValueError, match="w7"):
        tok.encode("k01: w7")
    assert len(kvtask.VOCAB) == kvtask.VOCAB_SIZE == DEFAULT_CONFIG["vocab_size"]


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


@needs("torch")
def test_measurements_against_hand_computation():
    model = small_model(2)
    tokens = torch.from_numpy(np.stack([kvtask.retrieval_document((6, 30, i), 30).tokens
                                        for i in range(3)]))
    with torch.no_grad():
        logits, weights = model(tokens, need_weights=True)
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


def test_training_batch_marks_exactly_the_answers():
    tokens, answers = kvtask.training_batch(5, 6, 128)
    assert tokens.shape == answers.shape == (6, 128) and np.all(tokens[:, 0] == kvtask.BOS)
    for b in range(6):
        at = np.flatnonzero(answers[b])
        assert len(at) >= 1
        assert np.all(tokens[b, at - 2] == kvtask.QUERY) and np.all(tokens[b, at - 1] == kvtask.PASS)
        queries = np.flatnonzero(tokens[b] == kvtask.QUERY)
        np.testing.assert_array_equal(queries + 2, at)  # every query is answered, nothing else
    assert answers[1].sum() == 1 and answers[1, -1]  # odd rows: the evaluation's shape
    np.testing.assert_array_equal(kvtask.training_batch(5, 6, 128)[0], tokens)


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
    path = os.path.join(ROOT, "scripts", "tinylm_experiments.py")
    spec = importlib.util.spec_from_file_location("tinylm_experiments", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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


if __name__ == "__main__":
    write_snapshot()
