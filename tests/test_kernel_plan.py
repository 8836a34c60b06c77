"""The plain-Python copy of the kernel's loop bounds must record exactly the tiles the kernel
records when it runs (``kernel_tile_map``, under Triton's interpreter), and compute a tile iff
the mask lets some query of it see some key."""
import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (make test exports it too)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402

from _support import needs, optional  # noqa: E402

from lessonlib import kernel_plan as KP  # noqa: E402
from lessonlib.attention import (TILE_FULL, TILE_MASKED, TILE_SKIPPED,  # noqa: E402
                                 attention_mask, block_map, key_blocks)

# The plan needs no triton; comparing it with the kernel's own record does.
if optional("triton") is not None:
    from lessonlib import triton_attention as ta  # noqa: E402


# ------------------------------------------------------------------ one set of tile codes
# The kernel stores literal 1 and 2 into its tile record; lessonlib.attention defines the codes
# (TILE_MASKED, TILE_FULL) that the numpy plan, this plan and every figure use.

@given(t=st.integers(1, 12), block=st.sampled_from([1, 3, 16, 32, 64]),
       short=st.integers(0, 63), causal=st.booleans())
def test_the_kernels_plan_and_the_numpy_plan_agree_tile_by_tile(t, block, short, causal):
    """kernel_tile_plan (the kernel's loop bounds) and attention.block_map (tiled_attention's
    plan) give every tile the same code, but one kind: the kernel applies the mask to a ragged
    last key block (its loads run past nk), which numpy, slicing the keys, computes without."""
    n = max(1, t * block - short % block)
    expected = block_map(n, block, causal=causal)
    if n % block:
        expected[:, -1] = np.where(expected[:, -1] == TILE_FULL, TILE_MASKED, expected[:, -1])
    np.testing.assert_array_equal(KP.kernel_tile_plan(n, n, causal=causal, block_m=block,
                                                      block_n=block), expected)


@needs("triton")
@pytest.mark.parametrize("n, block, causal", [(64, 16, True), (50, 16, True), (48, 16, False)])
def test_the_kernel_records_the_codes_of_lessonlib_attention(n, block, causal):
    """Run the kernel (TRITON_INTERPRET=1): the tiles it visits, and the codes it stores for
    them, are attention.block_map's, whose codes are lessonlib.attention's."""
    np.testing.assert_array_equal(ta.kernel_tile_map(n, n, causal=causal, block_m=block,
                                                     block_n=block),
                                  block_map(n, block, causal=causal))


# ------------------------------------------------------------------ the plan is the kernel's

# (nq, nk, options): ragged ends, nq < nk, BLOCK_M != BLOCK_N, sinks beyond the window's start,
# a window wider than n, a window without the causal mask. About 60 tile visits or fewer each.
PLAN_CASES = [
    (256, 256, dict(causal=True, window=64, sink_tokens=4, block_m=32, block_n=32)),
    (200, 200, dict(causal=True, window=45, sink_tokens=20, block_m=32, block_n=16)),
    (96, 300, dict(causal=True, window=70, sink_tokens=3, block_m=16, block_n=32)),
    (1, 300, dict(causal=True, window=64, sink_tokens=40, block_m=16, block_n=32)),
    (150, 150, dict(causal=False, window=40, sink_tokens=0, block_m=32, block_n=32)),
    (130, 130, dict(causal=True, window=1000, sink_tokens=5, block_m=32, block_n=32)),
    (100, 100, dict(causal=True, block_m=16, block_n=32)),
    (100, 100, dict(block_m=32, block_n=64)),
    (512, 512, dict(causal=True, window=100, sink_tokens=70, block_m=64, block_n=64)),
]


@needs("triton")
@pytest.mark.parametrize("nq, nk, opts", PLAN_CASES)
def test_plan_matches_the_tiles_the_kernel_records(nq, nk, opts):
    np.testing.assert_array_equal(KP.kernel_tile_plan(nq, nk, **opts),
                                  ta.kernel_tile_map(nq, nk, **opts))


@given(n=st.integers(1, 300), nq_frac=st.floats(0.01, 1.0), causal=st.booleans(),
       window=st.one_of(st.none(), st.integers(1, 320)), sinks=st.integers(0, 80),
       bm=st.sampled_from([16, 32, 64]), bn=st.sampled_from([16, 32, 64]))
def test_plan_skips_exactly_the_hidden_tiles(n, nq_frac, causal, window, sinks, bm, bn):
    """The plan (like the kernel) computes a tile iff some query sees some key of it, skips the
    mask only where every pair is visible, and agrees with the numpy kernel's key_blocks."""
    nq = max(1, round(n * nq_frac))
    opts = dict(causal=causal, window=window, sink_tokens=sinks)
    codes = KP.kernel_tile_plan(nq, n, block_m=bm, block_n=bn, **opts)
    vis = attention_mask(nq, n, **opts)
    for i in range(codes.shape[0]):
        rows = vis[i * bm:(i + 1) * bm]
        for j in range(codes.shape[1]):
            tile = rows[:, j * bn:(j + 1) * bn]
            assert (codes[i, j] != TILE_SKIPPED) == tile.any(), (i, j)
            if codes[i, j] == TILE_FULL:
                assert tile.all() and (j + 1) * bn <= n, (i, j)
        q_lo = n - nq + i * bm
        plan = key_blocks(q_lo, min(q_lo + bm, n), n, bn, **opts)
        assert [j0 // bn for j0 in plan] == list(np.flatnonzero(codes[i])), i
    masked, full = KP.kernel_tile_counts(nq, n, block_m=bm, block_n=bn, **opts)
    assert (masked, full) == (int((codes == TILE_MASKED).sum()),
                              int((codes == TILE_FULL).sum()))


def test_stretches_of_a_windowed_program_in_the_kernels_order():
    # n = 1024, BLOCK_M = 128, BLOCK_N = 64, W = 193, 4 sinks: program 5 holds queries
    # 640..767; its band starts at key 640 - 193 + 1 = 448 (block 7) and ends at 767.
    s = KP.kernel_key_stretches(5, 1024, 1024, causal=True, window=193, sink_tokens=4,
                               block_m=128, block_n=64)
    assert [x.name for x in s] == list(KP.STRETCH_NAMES)
    assert [(x.start, x.end, x.masked) for x in s] == [
        (0, 64, True),  # the sink block
        (448, 576, True),  # blocks 7, 8: some queries' windows start inside them
        (576, 640, False),  # block 9: keys 576..639, seen by queries 640..767 (767 - 193 + 1
                            # = 575) and all before the first query: no mask
        (640, 768, True),  # blocks 10, 11: the diagonal
    ]


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(pid_m=0, nq=10, nk=5), "nq must be <= nk"),
    (dict(pid_m=4, nq=64, nk=64, block_m=16), "pid_m must be 0..3"),
    (dict(pid_m=0, nq=8, nk=8, window=0), "window"),
    (dict(pid_m=0, nq=8, nk=8, sink_tokens=-1), "sink_tokens"),
    (dict(pid_m=0, nq=8, nk=8, block_n=0), "block_n"),
])
def test_bad_input_raises_value_error_naming_the_argument(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        KP.kernel_key_stretches(**kwargs)


# ------------------------------------------------------------------ read without triton

def test_block_d_is_the_next_power_of_two_at_least_16():
    assert [KP.block_d(d) for d in (1, 16, 17, 40, 64, 65, 128, 129, 256)] == \
        [16, 16, 32, 64, 64, 128, 128, 256, 256]
    for bad in (0, -3, 1.5, True, "64"):
        with pytest.raises(ValueError, match="d must be"):
            KP.block_d(bad)


@needs("triton")
def test_block_d_and_log2e_are_what_the_kernel_uses():
    import triton
    assert all(KP.block_d(d) == max(16, triton.next_power_of_2(d)) for d in range(1, 300))
    assert ta._block_d is KP.block_d and ta.LOG2_E == KP.LOG2_E
    assert KP.LOG2_E == pytest.approx(1 / np.log(2), rel=1e-15)


def test_kernel_source_reads_the_kernel_file_from_marker_to_marker():
    text = KP.kernel_source("_flash_attention_fwd_kernel", "# -- Who am I?", "h_kv = h //")
    lines = text.splitlines()
    assert "# -- Who am I?" in lines[0] and "h_kv = h //" in lines[-1]
    assert "pid_m = tl.program_id(0)" in text and len(lines) < 10
    one = KP.kernel_source("flash_attention", "def flash_attention", "def flash_attention")
    assert one.startswith("def flash_attention(")
    for kw, name in [(dict(function="nope"), "function"), (dict(first="no such line"), "first"),
                     (dict(last="no such line"), "last")]:
        args = dict(function="_attend_to_key_blocks", first="for start in range", last="m = m_new")
        with pytest.raises(ValueError, match=name):
            KP.kernel_source(**{**args, **kw})


@needs("triton")
def test_kernel_source_is_the_imported_kernels_source():
    import inspect
    for fn in (ta._flash_attention_fwd_kernel.fn, ta._attend_to_key_blocks.fn):
        src = inspect.getsource(fn).splitlines()
        first, last = src[1].strip(), src[-1].strip()
        assert KP.kernel_source(fn.__name__, first, last).splitlines() == src[1:]


# ------------------------------------------------------------------ issue 13's examples

@pytest.mark.parametrize("f", [
    lambda **kw: KP.kernel_key_stretches(0, 64, 64, **kw),
    lambda **kw: KP.kernel_tile_plan(64, 64, **kw),
    lambda **kw: KP.kernel_tile_counts(64, 64, **kw)])
@pytest.mark.parametrize("kw, name", [
    (dict(causal="no"), "causal"),  # counted as causal before
    (dict(causal=1), "causal"), (dict(window=0), "window"), (dict(window=-8), "window"),
    (dict(window=16.0), "window"), (dict(sink_tokens=-1), "sink_tokens"),
    (dict(sink_tokens=True), "sink_tokens"), (dict(block_m=0), "block_m"),
    (dict(block_m=32.0), "block_m"), (dict(block_n="64"), "block_n")])
def test_every_plan_function_names_a_bad_option(f, kw, name):
    with pytest.raises(ValueError, match=f"^{name} must be"):
        f(**kw)


def test_pid_m_is_an_integer_program_index():
    with pytest.raises(ValueError, match="^pid_m must be an integer, got the float 0.5"):
        KP.kernel_key_stretches(0.5, 64, 64, block_m=16)  # was four stretches of float bounds
    with pytest.raises(ValueError, match="^pid_m must be an integer"):
        KP.kernel_key_stretches(True, 64, 64, block_m=16)
    assert KP.kernel_key_stretches(np.int64(3), 64, 64, block_m=16) == \
        KP.kernel_key_stretches(3, 64, 64, block_m=16)


def test_kernel_tile_counts_takes_only_the_plans_options():
    """**options used to drop a misspelt option silently (block=32 counted at 64)."""
    with pytest.raises(TypeError, match="block"):
        KP.kernel_tile_counts(64, 64, block=32)
    opts = dict(causal=True, window=40, sink_tokens=4, block_m=16, block_n=32)
    codes = KP.kernel_tile_plan(100, 100, **opts)
    counts = (int((codes == TILE_MASKED).sum()), int((codes == TILE_FULL).sum()))
    assert KP.kernel_tile_counts(100, 100, **opts) == counts == (15, 1)


def test_stretch_blocks_names_its_arguments():
    s = KP.kernel_key_stretches(5, 1024, 1024, causal=True, window=193, sink_tokens=4,
                                block_m=128, block_n=64)
    assert list(KP.stretch_blocks(s[1], 64)) == [7, 8]
    with pytest.raises(ValueError, match="^block_n must be an integer >= 1"):
        KP.stretch_blocks(s[1], 0)  # was ZeroDivisionError
    for bad in ((0, 64), "sink blocks", None, 3):
        with pytest.raises(ValueError, match="^stretch must be a Stretch"):
            KP.stretch_blocks(bad, 64)
    with pytest.raises(ValueError, match=r"^stretch\.end must be an integer"):
        KP.stretch_blocks(KP.Stretch("x", 0, 64.0, True), 64)


@pytest.mark.parametrize("args, name", [
    ((3, "# -- Who am I?", "h_kv = h //"), "function"),
    (("_flash_attention_fwd_kernel", None, "h_kv = h //"), "first"),
    (("_flash_attention_fwd_kernel", "# -- Who am I?", 3), "last"),
    ((["flash_attention"], "def", "def"), "function")])  # was TypeError: unhashable
def test_kernel_source_arguments_are_strings(args, name):
    with pytest.raises(ValueError, match=f"^{name} must be a string"):
        KP.kernel_source(*args)


# ------------------------------------------------------------------ bad inputs
from _bad import Case, bad_input_tests, flags, ints, texts  # noqa: E402

_OPTS = dict(causal=True, window=40, sink_tokens=4, block_m=16, block_n=32)
_BAD_OPTS = dict(causal=flags(), window=ints(minimum=1, none_ok=True),
                 sink_tokens=ints(minimum=0), block_m=ints(minimum=1), block_n=ints(minimum=1))
_NQ_NK = dict(nq=ints(minimum=1, maximum=100), nk=ints(minimum=1))
_STRETCH = KP.kernel_key_stretches(5, 100, 100, **_OPTS)[1]

BAD_INPUTS = [
    Case(KP.block_d, args=(40,), bad=dict(d=ints(minimum=1))),
    Case(KP.kernel_source, args=("_attend_to_key_blocks", "for start in range", "m = m_new"),
         bad=dict(function=texts() | st.sampled_from(["nope", "_attend"]),
                  first=texts() | st.just("no such line"), last=texts() | st.just("no such"))),
    Case(KP.kernel_key_stretches, args=(5, 100, 100), kwargs=_OPTS,
         bad=dict(pid_m=ints(minimum=0, maximum=6), **_NQ_NK, **_BAD_OPTS)),
    Case(KP.stretch_blocks, args=(_STRETCH, 32),
         bad=dict(stretch=st.sampled_from([None, 3, "window edge", (0, 64), _STRETCH[1:],
                                           KP.Stretch("x", -1, 8, True),
                                           KP.Stretch("x", 0, 8.0, True)]),
                  block_n=ints(minimum=1))),
    Case(KP.kernel_tile_plan, args=(100, 100), kwargs=_OPTS, bad=dict(**_NQ_NK, **_BAD_OPTS)),
    Case(KP.kernel_tile_counts, args=(100, 100), kwargs=_OPTS, bad=dict(**_NQ_NK, **_BAD_OPTS)),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
