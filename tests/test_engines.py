"""lessonlib.engines: vLLM's attention-backend choice and llama-server's context shift, each held
against an independent statement of the engine's rule."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib import engines, rope, streaming
from lessonlib.models.configs import load_config

# --------------------------------------------------------------------------- vLLM

# Worked out by hand from vLLM 0.33.0 (vllm/platforms/cuda.py _get_backend_priorities;
# flash_attn.py, flashinfer.py, triton_attn.py supports_*): the backend it logs as "Using ...".
GPUS = {"T4": (7, 5), "A100": (8, 0), "L4": (8, 9), "H100": (9, 0), "B200": (10, 0),
        "RTX 5090": (12, 0)}
EXPECTED = {  # (head_size, sinks): one backend per GPU above, in order
    (64, False): ["TRITON_ATTN", "FLASH_ATTN", "FLASH_ATTN", "FLASH_ATTN", "FLASHINFER",
                  "FLASH_ATTN"],
    (80, False): ["TRITON_ATTN", "FLASH_ATTN", "FLASH_ATTN", "FLASH_ATTN", "FLASH_ATTN",
                  "FLASH_ATTN"],
    (128, False): ["TRITON_ATTN", "FLASH_ATTN", "FLASH_ATTN", "FLASH_ATTN", "FLASHINFER",
                   "FLASH_ATTN"],
    (256, False): ["TRITON_ATTN", "FLASH_ATTN", "FLASH_ATTN", "FLASH_ATTN", "FLASHINFER",
                   "FLASH_ATTN"],
    (512, False): ["TRITON_ATTN", "FLASHINFER", "FLASHINFER", "FLASH_ATTN", "FLASHINFER",
                   "FLASHINFER"],
    (96, True): ["TRITON_ATTN", "TRITON_ATTN", "TRITON_ATTN", "FLASH_ATTN", "FLASH_ATTN",
                 "TRITON_ATTN"],
    (64, True): ["TRITON_ATTN", "TRITON_ATTN", "TRITON_ATTN", "FLASH_ATTN", "FLASHINFER",
                 "FLASHINFER"],
    (20, False): ["FLEX_ATTENTION", "FLEX_ATTENTION", "FLEX_ATTENTION", "FLEX_ATTENTION",
                  "FLEX_ATTENTION", "FLEX_ATTENTION"],
    (20, True): [None] * 6,  # every backend refuses: "No valid attention backend found"
}


@pytest.mark.parametrize("head_size, sinks", list(EXPECTED))
def test_the_backend_vllm_picks(head_size, sinks):
    got = [engines.vllm_attention_backend(cap, head_size, sinks=sinks).backend
           for cap in GPUS.values()]
    assert got == EXPECTED[head_size, sinks]


def test_the_rules_the_issue_names():
    """FLASH_ATTN needs 8.0 and a head size that is a multiple of 8 up to 256; learned sinks
    need 9.0; FlashInfer comes first on 10.x."""
    assert "compute capability not supported" in dict(
        engines.vllm_attention_backend((7, 5), 128).rejected)["FLASH_ATTN"]
    for head in (72, 88, 136, 200, 248, 256):
        assert engines.vllm_attention_backend((8, 0), head).backend == "FLASH_ATTN"
    for head in (60, 100, 130, 264):  # not a multiple of 8, or past 256 without FA4
        assert "FLASH_ATTN" not in engines.vllm_attention_backend((8, 0), head).valid
    a100 = engines.vllm_attention_backend((8, 0), 64, sinks=True)
    assert "sink not supported on compute capability < 9.0" in dict(a100.rejected)["FLASH_ATTN"]
    assert engines.vllm_attention_backend((9, 0), 64, sinks=True).backend == "FLASH_ATTN"
    assert engines.vllm_backend_priority((10, 0))[0] == "FLASHINFER"
    assert engines.vllm_backend_priority((9, 0))[0] == "FLASH_ATTN"
    assert engines.vllm_backend_priority((12, 0))[0] == "FLASH_ATTN"


def test_why_names_the_refusals_before_the_choice():
    a100 = engines.vllm_attention_backend((8, 0), 96, sinks=True)
    assert a100.backend == "TRITON_ATTN" and a100.valid == ("TRITON_ATTN",)
    assert a100.why == ("FLASH_ATTN: attention sinks not supported, sink not supported on "
                        "compute capability < 9.0; FLASHINFER: head_size not supported, "
                        "attention sinks not supported")
    assert engines.vllm_attention_backend((9, 0), 128).why == ""  # the first one ran
    b200 = engines.vllm_attention_backend((10, 0), 80)
    assert b200.backend == "FLASH_ATTN" and b200.why == "FLASHINFER: head_size not supported"
    assert engines.vllm_attention_backend((8, 0), 20, sinks=True).backend is None


@given(st.integers(5, 12), st.integers(0, 9), st.integers(1, 600), st.booleans())
def test_the_choice_is_the_first_backend_that_passes_its_own_checks(major, minor, head, sinks):
    choice = engines.vllm_attention_backend((major, minor), head, sinks=sinks)
    order = engines.vllm_backend_priority((major, minor))
    refused = dict(choice.rejected)
    assert set(refused) | set(choice.valid) == set(order) and not set(refused) & set(choice.valid)
    assert all(refused[name] for name in refused)  # a refusal always says why
    assert list(choice.valid) == [name for name in order if name in choice.valid]
    assert choice.backend == (choice.valid[0] if choice.valid else None)
    if choice.backend == "FLASH_ATTN":
        assert (major, minor) >= (8, 0) and head % 8 == 0 and (not sinks or major in (9, 10))
    if sinks:
        assert choice.backend not in ("FLEX_ATTENTION", "TURBOQUANT")
    assert "TURBOQUANT" not in choice.valid  # the default KV cache dtype "auto"


def test_capability_is_a_pair_of_integers():
    for bad in (8.0, "8.0", (8,), (8, 0, 1), (8.0, 0), (True, 0), (8, 10), (0, 0), None):
        with pytest.raises(ValueError, match="capability"):
            engines.vllm_attention_backend(bad, 128)
    assert engines.vllm_attention_backend([9, 0], 128).capability == (9, 0)


# --------------------------------------------------------------------------- llama.cpp

def _server_shift(cells, n_ctx, n_keep, n_discard, add_bos, n_prompt):
    """llama-server's update_slots, statement by statement, on cells of (token, position):
    seq_rm(n_keep, n_keep + n_discard), then seq_add(n_keep + n_discard, n_tokens, -n_discard)."""
    keep = n_prompt if n_keep < 0 else n_keep
    if add_bos:
        keep += 1
    keep = min(n_ctx - 4, keep)
    n_left = len(cells) - keep
    discard = n_discard if n_discard else n_left // 2
    cells = [(t, p) for t, p in cells if not keep <= p < keep + discard]
    return [(t, p - discard if p >= keep + discard else p) for t, p in cells]


def _server(n_arrived, n_ctx, n_keep, n_discard, add_bos, n_prompt):
    cells = []
    for token in range(n_arrived):
        if len(cells) + 1 >= n_ctx:
            cells = _server_shift(cells, n_ctx, n_keep, n_discard, add_bos, n_prompt)
        cells.append((token, cells[-1][1] + 1 if cells else 0))  # pos_next()
    return cells


@given(st.integers(0, 90), st.integers(5, 24), st.integers(0, 30), st.booleans(),
       st.integers(0, 3))
def test_cached_tokens_follow_the_server(n_arrived, n_ctx, n_keep, add_bos, discard_share):
    n_left = n_ctx - 1 - min(n_ctx - 4, n_keep + add_bos)
    n_discard = n_left * discard_share // 3  # 0: the server's default, half
    held = engines.llamacpp_cached_tokens(n_arrived, n_ctx, n_keep=n_keep, n_discard=n_discard,
                                          add_bos=add_bos)
    cells = _server(n_arrived, n_ctx, n_keep, n_discard, add_bos, None)
    assert held.tokens.tolist() == [t for t, _ in cells]
    assert [p for _, p in cells] == list(range(len(cells)))  # positions stay 0 .. size - 1
    assert len(held.tokens) <= n_ctx - 1


def test_keep_minus_one_keeps_the_whole_prompt():
    held = engines.llamacpp_cached_tokens(40, 16, n_keep=-1, n_prompt=6)
    cells = _server(40, 16, -1, 0, True, 6)
    assert held.tokens.tolist() == [t for t, _ in cells]
    assert held.tokens[:7].tolist() == list(range(7))  # BOS + the 6 prompt tokens


def test_one_shift_by_hand():
    """-c 13 --keep 3 with a BOS: keep 4, n_left = 12 - 4 = 8, discard 4, move 8..11 to 4..7."""
    shift = engines.llamacpp_context_shift(13, n_keep=3)
    assert (shift.n_tokens, shift.n_keep, shift.n_left, shift.n_discard) == (12, 4, 8, 4)
    assert list(shift.discarded) == [4, 5, 6, 7] and list(shift.moved) == [8, 9, 10, 11]
    assert shift.delta == -4
    assert engines.llamacpp_context_shift(13).n_keep == 1  # --keep 0: the BOS alone
    assert engines.llamacpp_context_shift(13, add_bos=False).n_discard == 6
    assert engines.llamacpp_context_shift(13, n_keep=100).n_keep == 9  # at most n_ctx - 4


def test_shift_against_streamingllm():
    """Same 12 entries (-c 13 --keep 3 + BOS against 4 sinks + 8 recent): llama.cpp drops 4 at
    once and refills; StreamingLLM drops one per token. They agree right before each shift."""
    stream = streaming.StreamingCache(n_sink=4, n_recent=8)
    for t in range(40):
        stream.append()
        held = engines.llamacpp_cached_tokens(t + 1, 13, n_keep=3)
        assert held.tokens[:4].tolist() == list(range(min(t + 1, 4)))
        assert held.tokens[-1] == t
        if len(held.tokens) == 12:
            assert held.tokens.tolist() == stream.positions.tolist()
    assert engines.llamacpp_cached_tokens(17, 13, n_keep=3).tokens.tolist() == \
        [0, 1, 2, 3, 12, 13, 14, 15, 16]


def test_re_rotating_a_rotated_key_is_rotating_it_at_the_new_position():
    """The K-shift: a key cached at position p and rotated by -d is the key at p - d."""
    inv_freq, _ = rope.rope_frequencies(load_config("Llama-3.1-8B"))
    k = np.random.default_rng(0).standard_normal((5, 128))
    p, d = np.arange(100, 105), 37
    shifted = rope.apply_rope(rope.apply_rope(k, p, inv_freq), np.full(5, -d), inv_freq)
    np.testing.assert_allclose(shifted, rope.apply_rope(k, p - d, inv_freq), atol=1e-12)


def test_bad_shift_arguments():
    with pytest.raises(ValueError, match="n_prompt"):
        engines.llamacpp_context_shift(16, n_keep=-1)
    with pytest.raises(ValueError, match="n_discard must be <= 8"):
        engines.llamacpp_context_shift(13, n_keep=3, n_discard=9)
    with pytest.raises(ValueError, match="n_ctx"):
        engines.llamacpp_context_shift(4)


# --------------------------------------------------------------------------- bad inputs
# Every public function: a wrong type or an out-of-range value is a ValueError naming the
# argument (tests/_bad.py).
from _bad import Case, bad_input_tests, flags, ints  # noqa: E402

_CAPS = st.sampled_from([8.0, "8.0", (8,), (8, 0, 1), (8.0, 0), (True, 0), (8, 10), (0, 0),
                         (8, -1), None, {}, "80"])

BAD_INPUTS = [
    Case(engines.vllm_backend_priority, args=((9, 0),), bad=dict(capability=_CAPS)),
    Case(engines.vllm_attention_backend, args=((9, 0), 128), kwargs=dict(sinks=True),
         bad=dict(capability=_CAPS, head_size=ints(minimum=1), sinks=flags())),
    Case(engines.llamacpp_context_shift, args=(16,), kwargs=dict(n_keep=3, n_discard=2),
         bad=dict(n_ctx=ints(minimum=5), n_keep=ints(minimum=-1), n_discard=ints(minimum=0)
                  | st.just(13), add_bos=flags(), n_prompt=ints(minimum=1, maximum=15,
                                                                none_ok=True))),
    Case(engines.llamacpp_cached_tokens, args=(30, 16), kwargs=dict(n_keep=-1, n_prompt=5),
         bad=dict(n_arrived=ints(minimum=0), n_ctx=ints(minimum=5), n_keep=ints(minimum=-1),
                  n_prompt=ints(minimum=1, maximum=15), add_bos=flags())),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
