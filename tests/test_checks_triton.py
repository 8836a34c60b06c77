"""The exercise checks of notebook 04: the stub is "not attempted", the instructors' reference
solution is correct, each typical mistake gets the hint that names it, and the expected answers
are what the kernel itself does (run under Triton's interpreter)."""
import math
import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (make test exports it too)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from lessonlib.attention import naive_attention  # noqa: E402
from lessonlib.checks import triton as checks  # noqa: E402
from _support import assert_wrong, needs, optional, solutions  # noqa: E402

torch = optional("torch")  # the hints need neither; running the kernel needs torch and triton


S4 = solutions("04_flash_attention_triton")
ALL = {name: getattr(S4, name) for name in
       ("grid_programs", "program_heads", "visited_key_blocks", "program_tiles", "sink_output",
        "vllm_backends")}


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


# ------------------------------------------------------------------ the build: one program's tiles

def _brute(pid_m, n, b, causal, w, sinks):
    """(masked, full) by looking at every (query, key) pair: visited if some query may see a
    key of the block (sinks included), full if every query sees every key by the causal and
    window rules alone (the kernel cannot prove more from its loop bounds)."""
    rows = range(pid_m * b, min(pid_m * b + b, n))

    def sees(p, key, with_sinks=True):
        return key < n and not (causal and key > p) and not (
            w and p - key >= w and not (with_sinks and key < sinks))
    masked, full = set(), set()
    for j in range(-(-n // b)):
        keys = range(j * b, j * b + b)
        if all(sees(p, key, False) for p in rows for key in keys):
            full.add(j)
        elif any(sees(p, key) for p in rows for key in keys):
            masked.add(j)
    return masked, full


def test_program_tiles_reference_is_the_kernel_plan_and_passes():
    for case in checks._tile_cases():
        assert tuple(map(set, S4.program_tiles(*case))) == checks._plan(*case) \
            == checks._tiles(*case), case
        assert _brute(*case) == checks._plan(*case), case
    assert checks.program_tiles(S4.program_tiles).ok is True
    assert checks.program_tiles(_brute).ok is True  # the slow way is right too
    # any collection of whole numbers reads
    assert checks.program_tiles(lambda *a: [sorted(x) for x in S4.program_tiles(*a)]).ok
    assert checks.program_tiles(lambda *a: tuple(np.array(sorted(x), dtype=float)
                                                 for x in S4.program_tiles(*a))).ok
    assert checks.program_tiles(lambda *a: (iter(x) for x in S4.program_tiles(*a))).ok


def test_program_tiles_cases_cover_the_edges():
    cases = checks._tile_cases()
    assert len(cases) >= 50
    assert any(n % b for _, n, b, *_ in cases)  # n not a multiple of the block
    assert any(w == 1 for *_, w, _ in cases) and any(w > n for _, n, _, _, w, _ in cases)
    assert any(not c for _, _, _, c, w, _ in cases if w) and any(not c and not w for
                                                                 _, _, _, c, w, _ in cases)
    assert any(p == 0 for p, *_ in cases) and any(p == -(-n // b) - 1 for p, n, b, *_ in cases)
    assert any(s > b for _, _, b, _, w, s in cases if w)  # sinks spanning blocks
    stretches = [checks._tiles(*c, slip="no_sinks") != checks._plan(*c) for c in cases]
    assert sum(stretches) >= 5  # sink blocks before the band, in several cases


@pytest.mark.parametrize("slip, hint", [
    ("swapped", "swapped"),
    ("window_plus_one", "p - W + 1"),
    ("no_sinks", "sink blocks are missing"),
    ("band_from_last", "FIRST query"),
    ("diagonal_full", "diagonal block is not full"),
    ("ragged_full", "never a full tile"),
    ("ragged_dropped", "cdiv(hi, B) - 1"),
    ("p_last_unclipped", "min(p_first + B, n) - 1"),
    ("window_is_causal", "every later key"),
    ("sinks_without_window", "W = 0"),
    ("sink_blocks_full", "before the band always run"),
])
def test_program_tiles_names_each_typical_slip(slip, hint):
    assert_wrong(checks.program_tiles(lambda *a: checks._tiles(*a, slip=slip)), hint)


def _diagonal_taken_as_full(pid_m, n, B, causal, W, sinks):
    """A student's tiles() whose causal full tiles run to the LAST query's key: the diagonal
    block counted as full (standalone, so the grading tests can write it into a cell)."""
    p_first = pid_m * B
    p_last = min(p_first + B, n) - 1
    lo, hi = 0, n
    if causal:
        hi = p_last + 1
    if W:
        lo = max(p_first - W + 1, 0) // B * B
    full_lo, full_hi = lo, n // B * B
    if causal:
        full_hi = (p_last + 1) // B * B  # the slip: p_last, not p_first
    if W:
        full_lo = -(-max(p_last - W + 1, 0) // B) * B
    full_lo = min(max(full_lo, lo), hi)
    full_hi = max(min(full_hi, hi), full_lo)
    sink_hi = min(-(-sinks // B) * B, lo) if W else 0
    masked = set()
    for start, stop in ((0, sink_hi), (lo, full_lo), (full_hi, hi)):
        masked |= set(range(start // B, -(-stop // B))) if stop > start else set()
    return masked, set(range(full_lo // B, -(-full_hi // B))) if full_hi > full_lo else set()


def test_program_tiles_a_standalone_slip_gets_its_hint():
    assert_wrong(checks.program_tiles(_diagonal_taken_as_full), "diagonal block is not full")


def test_program_tiles_one_slip_among_others_names_the_case():
    def two_slips(pid_m, n, b, causal, w, sinks):  # both slips: no single hint fits every case
        slip = "no_sinks" if causal else "ragged_full"
        return checks._tiles(pid_m, n, b, causal, w, sinks, slip=slip)
    verdict = checks.program_tiles(two_slips)
    assert_wrong(verdict, "tiles(pid_m=", "you gave masked")
    assert any(h in verdict.message for h in ("sink blocks are missing", "never a full tile"))


def test_program_tiles_junk_and_other_errors():
    table = {c: checks._plan(*c) for c in checks._tile_cases()}
    assert checks.program_tiles(lambda *a: table[a]).ok  # the check alone cannot tell ...
    for junk, hint in [(lambda *a: {0, 1}, "two sets"),
                       (lambda *a: (["0"], []), "without quotes"),
                       (lambda *a: ([0.5], []), "not a whole number"),
                       (lambda *a: 1 / 0, "ZeroDivisionError"),
                       (lambda p, n, b, *a: ({n}, set()), "not key positions"),
                       (lambda *a: ({0}, {0}), "both sets"),
                       (lambda *a: ({0}, set()), "the kernel visits masked"),
                       (lambda p, *a: None if p == 0 else ({0}, set()), "returned None"),
                       (3, "give a function")]:
        assert_wrong(checks.program_tiles(junk), hint)
    assert checks.program_tiles(lambda *a: None).ok is None  # the stub: not attempted


def _unseen(student):
    """scripts/assignments' hidden test for program_tiles: ``student`` seen through its change of
    inputs (a function the graded notebook passes to the same check)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "scripts"))
    import assignments
    scope = {"np": np, "student": student}
    exec(assignments.HIDDEN["program_tiles"].format(f="student"), scope)
    return scope["_unseen"]


def test_program_tiles_hidden_test_passes_a_right_answer_and_fails_a_lookup_table():
    assert checks.program_tiles(_unseen(S4.program_tiles)).ok is True
    assert checks.program_tiles(_unseen(_brute)).ok is True
    table = {c: checks._plan(*c) for c in checks._tile_cases()}
    assert checks.program_tiles(_unseen(lambda *a: table.get(a, (set(), set())))).ok is False
    unseen, rng = _unseen(checks._plan), np.random.default_rng(7)
    for _ in range(500):  # the change of inputs keeps the kernel's plan on random shapes
        case = checks._tile_shape(rng)
        assert unseen(*case) == checks._plan(*case), case


@needs("triton")
def test_program_tiles_is_what_the_kernel_records():
    from lessonlib.attention import TILE_FULL, TILE_MASKED
    from lessonlib.triton_attention import kernel_tile_map

    for pid_m, n, b, causal, w, sinks in checks._TILE_EDGES[:6]:
        tiles = kernel_tile_map(n, n, causal=causal, window=w or None, sink_tokens=sinks,
                                block_m=b, block_n=b)
        masked, full = map(set, S4.program_tiles(pid_m, n, b, causal, w, sinks))
        assert set(np.flatnonzero(tiles[pid_m] == TILE_MASKED)) == masked
        assert set(np.flatnonzero(tiles[pid_m] == TILE_FULL)) == full


# ------------------------------------------------------------------ the NaN guard

def test_nan_guard_rows_hints():
    assert checks.nan_guard_rows(17).ok and checks.nan_guard_rows(17.0).ok
    assert S4.nan_guard_rows == 17
    assert_wrong(checks.nan_guard_rows(16), "off by one", "p - W + 1")
    assert_wrong(checks.nan_guard_rows(18), "one row too many")
    assert_wrong(checks.nan_guard_rows(15), "DO see")
    assert_wrong(checks.nan_guard_rows(0), "WITH its 4 sink tokens")
    assert_wrong(checks.nan_guard_rows(32), "Not every row")
    assert_wrong(checks.nan_guard_rows(5), "Which rows see none of keys 96..127")
    assert_wrong(checks.nan_guard_rows(16.5), "not a whole number")


def test_nan_guard_rows_is_what_the_mask_says():
    """Rows 207..223 of program 6 see nothing of keys 96..127 with W = 80, and the first
    stretch the loop visits without sinks starts at block 3."""
    from lessonlib.attention import attention_mask
    from lessonlib.kernel_plan import kernel_key_stretches

    q = checks.QUESTIONS["nan_guard_rows"]
    first = next(st for st in kernel_key_stretches(q["pid_m"], q["n"], q["n"], causal=True,
                                                   window=q["window"], block_m=q["block"],
                                                   block_n=q["block"]) if st.end > st.start)
    assert (first.name, first.start) == ("window edge", 96)
    sees = attention_mask(256, 256, causal=True, window=80)[192:224, 96:128]
    assert [p for p, row in zip(range(192, 224), sees) if not row.any()] == list(range(207, 224))


# ------------------------------------------------------------------ 4. the learned sink

def test_sink_output_hints():
    assert checks.sink_output((1.2, -0.6)).ok
    assert_wrong(checks.sink_output([2.0, -1.0]), "ignores the sink")
    assert_wrong(checks.sink_output([2.4, -1.2]), "not acc")
    e = math.exp(-1)
    assert_wrong(checks.sink_output([6 * e / (3 * e + 1), -3 * e / (3 * e + 1)]), "log2 units")
    assert_wrong(checks.sink_output([6 / 67, -3 / 67]), "2^(z - m)")
    assert_wrong(checks.sink_output([1.5, -0.75]), "only after rescaling")
    assert_wrong(checks.sink_output([1.6, -0.2]), "no value vector")
    assert_wrong(checks.sink_output(1.2), "2 numbers")
    assert_wrong(checks.sink_output("x"), "two numbers")
    assert_wrong(checks.sink_output([0.0, 0.0]), "m_final = max(m, z)")


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


# ------------------------------------------------------------------ going deeper: vLLM's backends

def test_vllm_backends_hints():
    right = ["TRITON_ATTN", "FLASH_ATTN", "FLASHINFER"]
    assert checks.vllm_backends(right).ok and checks.vllm_backends(tuple(right)).ok
    assert checks.vllm_backends([" triton_attn", "flash-attn", "FlashInfer"]).ok
    assert checks.vllm_backends(right) and S4.vllm_backends == right
    for i, other, hint in [(0, "FLASH_ATTN", "from compute capability 9.0"),
                           (0, "FLASHINFER", "TensorRT-LLM"),
                           (1, "FLASHINFER", "96 falls through"),
                           (1, "TRITON_ATTN", "multiple of 8 up to 256"),
                           (2, "FLASH_ATTN", "up to 256 on 8.0"),
                           (2, "TRITON_ATTN", "takes head size 512"),
                           (0, "FLEX_ATTENTION", "first backend whose checks pass")]:
        answer = list(right)
        answer[i] = other
        assert_wrong(checks.vllm_backends(answer), hint)
    assert_wrong(checks.vllm_backends(["TRITON", "FLASH_ATTN", "FLASHINFER"]),
                 "not one of vLLM's backends")
    assert_wrong(checks.vllm_backends("TRITON_ATTN"), "a list of 3 backend names")
    assert_wrong(checks.vllm_backends(right[:2]), "one per GPU")
    assert_wrong(checks.vllm_backends([1, 2, 3]), "one per GPU")
    assert_wrong(checks.vllm_backends({"L4": "TRITON_ATTN"}), "dict")


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


def _tiles_by_the_notebooks_rule(pid_m, n, B, causal, W, sinks):
    """Notebook 04's build exercise, its rule taken word for word from visibility alone: a block
    is visited when some real query may see one of its keys; full when it holds B real keys and
    every real query sees all of them by the causal and window rules alone; a sink block visited
    before the window's band always runs masked, one inside the band follows the band's rule."""
    queries = range(pid_m * B, min(pid_m * B + B, n))

    def by_rules(p, k):  # the causal and window rules alone
        return (not causal or k <= p) and (not W or p - k < W)

    def sees(p, k):
        return by_rules(p, k) or bool(W and k < sinks and (not causal or k <= p))

    band_start = max(queries[0] - W + 1, 0) // B if W else 0
    masked, full = set(), set()
    for j in range(-(-n // B)):
        keys = range(j * B, min(j * B + B, n))
        if not any(sees(p, k) for p in queries for k in keys):
            continue
        whole = len(keys) == B and all(by_rules(p, k) for p in queries for k in keys)
        (full if whole and j >= band_start else masked).add(j)
    return masked, full


def test_the_notebooks_stated_rule_is_the_kernels_on_every_case():
    """The rule as notebook 04 states it gives kernel_plan's tiles on every case the check tries
    (its first statement, "sink blocks always run masked", did not: block 0 is full for program
    1 of the worked example)."""
    for case in checks._tile_cases():
        assert _tiles_by_the_notebooks_rule(*case) == checks._plan(*case), case
