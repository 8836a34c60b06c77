"""The exercise checks of notebook 04: the stub is "not attempted", the instructors' reference
solution is correct, each typical mistake gets the hint that names it, and the expected answers
are what the kernel itself does (run under Triton's interpreter)."""
import math
import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (make test exports it too)

import numpy as np  # noqa: E402

from lessonlib.attention import naive_attention  # noqa: E402
from lessonlib.checks import triton as checks  # noqa: E402
from _support import assert_wrong, needs, optional, solutions  # noqa: E402

torch = optional("torch")  # the hints need neither; running the kernel needs torch and triton


S4 = solutions("04_flash_attention_triton")
ALL = {name: getattr(S4, name) for name in
       ("grid_programs", "program_heads", "visited_key_blocks", "sink_output")}


# ------------------------------------------------------------------ 1. the launch grid

def test_grid_programs_hints():
    assert checks.grid_programs(256).ok and checks.grid_programs(256.0).ok
    assert_wrong(checks.grid_programs(240), "cdiv", "not floor")
    assert_wrong(checks.grid_programs(250.0), "whole numbers")
    assert_wrong(checks.grid_programs(64), "per query head, not per KV head")
    assert_wrong(checks.grid_programs(128), "batch")
    assert_wrong(checks.grid_programs(16), "axis 0 alone")
    assert_wrong(checks.grid_programs(4096), "counts tiles")
    assert_wrong(checks.grid_programs(16000), "BLOCK_M = 64 query rows")
    assert_wrong(checks.grid_programs(7), "Not 7")
    assert_wrong(checks.grid_programs("256"), "one whole number")
    assert_wrong(checks.grid_programs(True), "one whole number")
    assert_wrong(checks.grid_programs(math.nan), "one whole number")


# ------------------------------------------------------------------ 2. who am I?

def test_program_heads_hints():
    assert checks.program_heads(lambda p, hq, hkv: (p // hq, p % hq, p % hq * hkv // hq)).ok
    assert_wrong(checks.program_heads(lambda p, hq, hkv: (p // hq, p % hq, p % hq % hkv)),
                 "h % hkv", "h // (hq // hkv)")
    assert_wrong(checks.program_heads(lambda p, hq, hkv: (p // hq, p % hq, p % hq // hkv)),
                 "group size hq // hkv")
    assert_wrong(checks.program_heads(lambda p, hq, hkv: (p // hq, p % hq, p % hq)),
                 "multi-head")
    assert_wrong(checks.program_heads(lambda p, hq, hkv: (p % hq, p // hq, p // hq * hkv // hq)),
                 "swapped")
    assert_wrong(checks.program_heads(lambda p, hq, hkv: (p // hkv, p % hkv, p % hkv)),
                 "b x hq")
    assert_wrong(checks.program_heads(lambda p, hq, hkv: (0, 0, 0)), "expected (b, h, h_kv)")
    assert checks.program_heads(lambda p, hq, hkv: None).ok is None  # the stub: not attempted
    assert_wrong(checks.program_heads(lambda p, hq, hkv: None if p else (0, 0, 0)),
                 "returned None")
    assert_wrong(checks.program_heads(lambda p, hq, hkv: 1 / 0), "raised ZeroDivisionError")
    assert_wrong(checks.program_heads(3), "give a function")


@needs("triton")
def test_program_heads_is_what_the_kernel_reads():
    """Each KV head's values are one constant, so every output row names the KV head its
    program read; the reference mapping must predict all of them."""
    b, hq, hkv, n, d = 2, 8, 2, 16, 16
    q = torch.randn(b, hq, n, d, generator=torch.Generator().manual_seed(0))
    k = torch.zeros(b, hkv, n, d)
    tag = torch.arange(b * hkv, dtype=torch.float32).view(b, hkv, 1, 1)  # 10 b + kv, below
    v = (10 * (tag // hkv) + tag % hkv).expand(b, hkv, n, d).contiguous()
    from lessonlib.triton_attention import flash_attention

    out = flash_attention(q, k, v)  # (b, hq, n, d): each row = its KV head's constant
    for pid_bh in range(b * hq):
        bb, h, h_kv = S4.program_heads(pid_bh, hq, hkv)
        torch.testing.assert_close(out[bb, h], torch.full((n, d), 10.0 * bb + h_kv))


# ------------------------------------------------------------------ 3. the loop bounds

def test_visited_key_blocks_hints():
    good = {0, 7, 8, 9, 10, 11}
    assert checks.visited_key_blocks(sorted(good)).ok
    assert checks.visited_key_blocks(np.array(sorted(good))).ok
    assert_wrong(checks.visited_key_blocks({0, 6, 7, 8, 9, 10, 11}), "off by one",
                 "block 7")
    assert_wrong(checks.visited_key_blocks({7, 8, 9, 10, 11}), "sink")
    assert_wrong(checks.visited_key_blocks({0, 8, 9, 10, 11}), "first query")
    assert_wrong(checks.visited_key_blocks({0, *range(7, 16)}), "stops at block 11")
    assert_wrong(checks.visited_key_blocks({0, 7, 8, 9, 10}), "diagonal block 11")
    assert_wrong(checks.visited_key_blocks({0, 3, 4, 5}), "BLOCK_N = 64")
    assert_wrong(checks.visited_key_blocks({0, 448, 767}), "not key positions")
    assert_wrong(checks.visited_key_blocks(7), "band starts")
    assert_wrong(checks.visited_key_blocks(3), "set of key-block indices")
    assert_wrong(checks.visited_key_blocks("0, 7"), "set (or list)")
    assert_wrong(checks.visited_key_blocks({0, 1, 7, 8, 9, 10, 11}), "[1] hold no key")
    assert_wrong(checks.visited_key_blocks({0, 7, 9, 10, 11}), "missing [8]")


@needs("triton")
def test_visited_key_blocks_is_what_the_kernel_visits():
    from lessonlib.triton_attention import kernel_tile_map

    q = checks.QUESTIONS["visited_key_blocks"]
    tiles = kernel_tile_map(q["n"], q["n"], causal=q["causal"], window=q["window"],
                            sink_tokens=q["sink_tokens"], block_m=q["block_m"],
                            block_n=q["block_n"])
    assert set(np.flatnonzero(tiles[q["pid_m"]])) == set(S4.visited_key_blocks)


# ------------------------------------------------------------------ 4. the learned sink

def test_sink_output_hints():
    assert checks.sink_output((1.2, -0.6)).ok
    assert_wrong(checks.sink_output([2.0, -1.0]), "ignores the sink")
    assert_wrong(checks.sink_output([2.4, -1.2]), "not acc")
    e = math.exp(-1)
    assert_wrong(checks.sink_output([6 * e / (3 * e + 1), -3 * e / (3 * e + 1)]), "log2 units")
    assert_wrong(checks.sink_output([6 / 67, -3 / 67]), "2^(s - m)")
    assert_wrong(checks.sink_output([1.5, -0.75]), "only after rescaling")
    assert_wrong(checks.sink_output([1.6, -0.2]), "no value vector")
    assert_wrong(checks.sink_output(1.2), "2 numbers")
    assert_wrong(checks.sink_output("x"), "two numbers")
    assert_wrong(checks.sink_output([0.0, 0.0]), "m_final = max(m, s)")


@needs("triton")
def test_sink_output_is_what_attention_with_a_sink_gives():
    """Three keys of log2 score 5 (m = 5, l = 3) with values (2, -1) (acc = (6, -3)), and a sink
    of log2 logit 6: numpy's naive attention and the kernel both give the check's answer."""
    ln2 = math.log(2)
    q = np.array([[1.0, 0.0]])  # (nq, d); with scale 1 every score is 5 ln 2
    k = np.tile([5 * ln2, 0.0], (3, 1))
    v = np.tile([2.0, -1.0], (3, 1))
    sink = np.array([6 * ln2])
    ref = naive_attention(q, k, v, scale=1.0, sink_logits=sink)[0]
    np.testing.assert_allclose(ref, S4.sink_output, rtol=1e-12)
    from lessonlib.triton_attention import flash_attention

    q4, k4, v4 = (torch.tensor(a, dtype=torch.float32)[None, None] for a in (q, k, v))
    out = flash_attention(q4, k4, v4, scale=1.0, sink_logits=sink)
    np.testing.assert_allclose(out[0, 0, 0].numpy(), S4.sink_output, rtol=1e-5)


# ------------------------------------------------------------------ answers in every form

def test_grid_programs_forms():
    assert checks.grid_programs(np.array(256)).ok and checks.grid_programs(np.float32(256)).ok
    assert_wrong(checks.grid_programs(255.5), "not a whole number", "//")
    assert_wrong(checks.grid_programs(256 + 1j), "complex number")
    if torch is not None:
        assert checks.grid_programs(torch.tensor(256)).ok
        assert checks.grid_programs(torch.tensor(256.0)).ok


def test_program_heads_with_float_division_is_wrong_with_the_floor_division_hint():
    float_division = lambda p, hq, hkv: (p // hq, p % hq, (p % hq) / (hq / hkv))  # noqa: E731
    assert_wrong(checks.program_heads(float_division), "0.25", "not a whole number", "//")
    all_slash = lambda p, hq, hkv: (p / hq, p % hq, (p % hq) / (hq / hkv))  # noqa: E731
    assert_wrong(checks.program_heads(all_slash), "not a whole number", "//")
    # floats that are whole (from // on floats) are the right indices
    assert checks.program_heads(lambda p, hq, hkv: (p // hq, p % hq,
                                                    (p % hq) // (hq / hkv))).ok
    assert checks.program_heads(lambda p, hq, hkv: map(int, S4.program_heads(p, hq, hkv))).ok
    assert checks.program_heads(lambda p, hq, hkv: np.array(S4.program_heads(p, hq, hkv))).ok
    assert_wrong(checks.program_heads(lambda p, hq, hkv: tuple(map(str, S4.program_heads(
        p, hq, hkv)))), "without quotes")
    assert_wrong(checks.program_heads(lambda p, hq, hkv: (0, 0)), "three integers")


def test_visited_key_blocks_forms():
    good = [0, 7, 8, 9, 10, 11]
    assert checks.visited_key_blocks([float(b) for b in good]).ok
    assert checks.visited_key_blocks(frozenset(good)).ok
    assert checks.visited_key_blocks(b for b in good).ok
    assert_wrong(checks.visited_key_blocks({0, 7.5, 8, 9, 10, 11}), "7.5",
                 "not a whole number", "//")
    assert_wrong(checks.visited_key_blocks([str(b) for b in good]), "without quotes")
    if torch is not None:
        assert checks.visited_key_blocks(torch.tensor(good)).ok


def test_sink_output_forms():
    assert checks.sink_output(np.array([1.2, -0.6], dtype=np.float32)).ok
    assert checks.sink_output(map(float, [1.2, -0.6])).ok
    assert_wrong(checks.sink_output([1.2 + 1j, -0.6]), "complex number")
    assert_wrong(checks.sink_output(["1.2", "-0.6"]), "without quotes")
