"""lessonlib.kvtask, the task the tiny model learns (numpy only, no torch): documents are pure
functions of their seeds, the needles and queries sit where the Document says, the filler
follows its skip-bigram table, and every argument is checked."""
import numpy as np
import pytest
from hypothesis import strategies as st

from lessonlib import kvtask, needles
from lessonlib.tinylm_results import DEFAULT_CONFIG


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


# --------------------------------------------------------------------------- issue 13 examples

@pytest.mark.parametrize("tokens, says", [
    ([-1], r"^tokens\[0\] must be an integer >= 0 and <= 130, got -1"),  # was the last word
    ([5, 131], r"^tokens\[1\] must be an integer >= 0 and <= 130, got 131"),
    ([2.0], r"^tokens\[0\] must be an integer, got the float 2.0"),
    ([True], r"^tokens\[0\] must be an integer, got True \(a bool\)"),
    (np.array([1.0, 2.0]), r"^tokens\[0\] must be an integer, got the float"),
    ("pass: v01", r"^tokens must be a list \(or 1-D array\) of token ids"),
    (7, r"^tokens must be a list"),
    (np.zeros((2, 2), dtype=int), r"^tokens must be a list \(or 1-D array\)"),
])
def test_decode_takes_only_ids_in_range(tokens, says):
    with pytest.raises(ValueError, match=says):
        kvtask.KVTokenizer().decode(tokens)


def test_decode_takes_every_form_of_an_id():
    tok = kvtask.KVTokenizer()
    assert tok.decode(np.array([0, 2, 131 - 1])) == "<bos> pass: f63"
    assert tok.decode([np.int64(1), np.array(2)]) == "? pass:"
    assert tok.decode(range(3)) == "<bos> ? pass:" and tok.decode([]) == ""


def test_encode_names_the_unknown_word():
    with pytest.raises(ValueError, match=r"^text holds 'w7', which is not a word of the task's "
                                         r"vocabulary"):
        kvtask.KVTokenizer().encode("k01: w7 v02")
    with pytest.raises(ValueError, match=r"^text must be a string, got \[1, 2\]"):
        kvtask.KVTokenizer().encode([1, 2])


@pytest.mark.parametrize("call, says", [
    # numpy's own messages ("negative dimensions are not allowed", "Cannot take a larger sample
    # than population when replace is False", "high <= 0") named nothing
    (lambda: kvtask.retrieval_document(1, -5), r"^length must be an integer >= 1, got -5"),
    (lambda: kvtask.retrieval_document(1, 200, n_distractors=40),
     r"^n_distractors must be an integer >= 0 and <= 32, got 40"),
    (lambda: kvtask.retrieval_document(1, 60, depth=1.5),
     r"^depth must be a number >= 0.0 and <= 1.0, got 1.5"),
    (lambda: kvtask.retrieval_document(1, 60, depth=True), r"^depth must be a real number"),
    (lambda: kvtask.retrieval_document(1, 10, n_distractors=4),
     r"^length 10 is too short for 4 distractors \(n_distractors\)"),
    (lambda: kvtask.training_document(1, 256, max_queries=0),
     r"^max_queries must be an integer >= 1, got 0"),
    (lambda: kvtask.training_document(1, 256, max_distractors=33),
     r"^max_distractors must be an integer >= 0 and <= 32"),
    (lambda: kvtask.training_batch(1, 0), r"^batch must be an integer >= 1, got 0"),
    (lambda: kvtask.retrieval_batch(1, 64, 2.0), r"^batch must be an integer"),
    (lambda: kvtask.filler_tokens(np.random.default_rng(0), -3), r"^n must be an integer >= 0"),
    (lambda: kvtask.filler_tokens(0, 3), r"^rng must be a numpy Generator"),
    (lambda: kvtask.stream_document(1, 0), r"^length must be an integer >= 1"),
    (lambda: kvtask.stream_document(1, 2000, block=100), r"^block must be an integer >= 307"),
    (lambda: kvtask.needle_haystack(1, -1), r"^n_filler must be an integer >= 0"),
    (lambda: kvtask.needle_haystack(1, 100, n_distractors=-1), r"^n_distractors must be"),
    (lambda: kvtask.skip_bigram_table(-1), r"^seed must be an integer >= 0"),
])
def test_sampling_arguments_are_named(call, says):
    with pytest.raises(ValueError, match=says):
        call()


@pytest.mark.parametrize("seed", [1.0, True, -1, "7", None, (1, 2.5), (1, (2, -3)), [None]])
def test_seeds_must_be_non_negative_ints(seed):
    for call in (lambda: kvtask.training_document(seed),
                 lambda: kvtask.retrieval_document(seed, 40),
                 lambda: kvtask.stream_document(seed, 40), lambda: kvtask.needle_haystack(seed, 40),
                 lambda: kvtask.training_batch(seed, 2, 64),
                 lambda: kvtask.retrieval_batch(seed, 40, 2)):
        with pytest.raises(ValueError, match=r"^seed must be a non-negative integer or a tuple"):
            call()


def test_valid_numpy_seeds_lengths_and_depths_give_the_same_documents():
    a = kvtask.retrieval_document((np.int64(3), 40, 0), np.int64(40), depth=np.float32(0.5))
    b = kvtask.retrieval_document((3, 40, 0), 40, depth=np.float32(0.5))
    np.testing.assert_array_equal(a.tokens, b.tokens)
    c = kvtask.retrieval_document((3, 40, 0), 40, depth=np.array(0.5))
    d = kvtask.retrieval_document((3, 40, 0), 40, depth=0.5)
    np.testing.assert_array_equal(c.tokens, d.tokens)
    assert kvtask.MIN_STREAM_BLOCK == 307
    s = kvtask.stream_document(5, 1 + 2 * 307, block=307)  # the smallest block keeps its layout
    assert np.all(s.tokens[s.answer_at] == s.tokens[s.needle_at + 1])


# --------------------------------------------------------------------------- bad inputs
# Every argument of the public functions, fed what a careful user might pass by mistake: each
# must be a ValueError naming the argument (tests/_bad.py; coverage in test_validate.py).
from _bad import Case, bad_input_tests, ints, reals, texts  # noqa: E402

_SEEDS = ints(minimum=0).filter(lambda s: not isinstance(s, (list, tuple))) | st.sampled_from(
    [(1, 2.5), (1, (2, -3)), (None,), ("1",), [True]])
_IDS = st.sampled_from([[-1], [131], [2.0], [True], [None], "v01", 7, np.array([[1]]),
                        np.array([0.5]), [1 + 0j], np.array(3)])
_N_KEYS = ints(minimum=0, maximum=kvtask.N_KEYS)

BAD_INPUTS = [
    Case(kvtask.KVTokenizer.encode, call=lambda text: kvtask.KVTokenizer().encode(text),
         args=("<bos> k03: v17 f63",), bad=dict(text=texts() | st.just("k01: w7"))),
    Case(kvtask.KVTokenizer.decode, call=lambda tokens: kvtask.KVTokenizer().decode(tokens),
         args=([0, 3, 40],), bad=dict(tokens=_IDS)),
    Case(kvtask.skip_bigram_table, args=(7,), bad=dict(seed=ints(minimum=0))),
    Case(kvtask.filler_tokens, args=(np.random.default_rng(0), 5),
         bad=dict(rng=st.sampled_from([0, None, "rng", np.random.SeedSequence(0)]),
                  n=ints(minimum=0))),
    Case(kvtask.training_document, args=((1, 2), 64), kwargs=dict(max_distractors=2, max_queries=2),
         bad=dict(seed=_SEEDS, length=ints(minimum=1), max_distractors=_N_KEYS,
                  max_queries=ints(minimum=1))),
    Case(kvtask.retrieval_document, args=(3, 40), kwargs=dict(n_distractors=2, depth=0.5),
         bad=dict(seed=_SEEDS, length=ints(minimum=1) | st.just(8), n_distractors=_N_KEYS,
                  depth=reals(minimum=0.0, maximum=1.0, none_ok=True))),
    Case(kvtask.stream_document, args=(3, 400), kwargs=dict(block=330),
         bad=dict(seed=_SEEDS, length=ints(minimum=1),
                  block=ints(minimum=kvtask.MIN_STREAM_BLOCK))),
    Case(kvtask.training_batch, args=(5, 2, 64), kwargs=dict(max_distractors=2, max_queries=2),
         bad=dict(seed=_SEEDS, batch=ints(minimum=1), length=ints(minimum=1),
                  max_distractors=_N_KEYS, max_queries=ints(minimum=1))),
    Case(kvtask.retrieval_batch, args=(5, 40, 2), kwargs=dict(n_distractors=2),
         bad=dict(seed=_SEEDS, length=ints(minimum=1), batch=ints(minimum=1),
                  n_distractors=_N_KEYS)),
    Case(kvtask.needle_haystack, args=(3, 60), kwargs=dict(n_distractors=2),
         bad=dict(seed=_SEEDS, n_filler=ints(minimum=0) | st.just(3), n_distractors=_N_KEYS)),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
