"""The upper layers only wire: no config-key arithmetic in checks, widgets, plots or notebooks.

A number that a widget, a check, a plot or a notebook shows comes from one named compute
function (``kv_cache.model_shape(cfg).head_dim``, ``traffic.crossover_length``), never from
``cfg.get("head_dim") or cfg["hidden_size"] // heads`` written again upstairs: two copies
drift, and the upper one shows a value that compute would have rejected (STYLE.md, "Where each
number lives"). This test reads the code (ast), so it fails with the file and line of a copy.

What counts as a copy: a read of a model-shape key (``cfg["hidden_size"]`` or
``cfg.get("head_dim")``, through ``int(...)`` or an ``or`` if need be) that is an operand of
arithmetic, or a ``.get`` of one with an ``or`` default (the fallback rule that
``kv_cache._kv_heads`` and ``_head_dims`` own). Reading a key to print it or to pass it on is
not a copy.

Notebooks teach by hand: a worked number written from the config's keys and checked against
lessonlib is the lesson (STYLE.md, "Notebooks" 2-3). Those lines are listed in ``BY_HAND``,
each with its reason; a listed line that is no longer there fails too, so the list cannot rot.

The rules issue 31 moved down are caught too (``rule_copies``, ``rule_defs``): in checks,
widgets and plots, ``exp`` of a difference (the online-softmax rescale ``exp(m_old - m_new)``,
a term ``exp(x - m)``: ``softmax``'s steps carry them) and one minus a sum (the sink's share,
``softmax.sink_share``); in checks and widgets, a local ``def`` of a rule that compute or the
plots own (``_pad``: ``kv_cache.llamacpp_swa_cells``; ``_log_ylim`` or ``fit_log_ylim``:
``plots.fit_log_ylim``). A check recomputes the typical mistakes, and the state it probes a
student's function with, the wrong way on purpose: those lines are listed in ``VARIANTS``.
The numbers of notebooks 07-08's widgets are ``lessonlib.rope``'s (``rope_rule_copies``): no
widget, nor ``plots.rope``, computes YaRN's mu, its pair sets, the worst pair, an angle less its
whole turns, mu squared or a frequency's ratio again.
"""
import ast
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
UPPER = ["lessonlib/checks", "lessonlib/widgets", "lessonlib/plots"]

# The config.json keys that kv_cache.model_shape (and kv_bytes_per_token) turns into numbers.
SHAPE_KEYS = {"hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers",
              "head_dim", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}

# (notebook, the line as written, stripped): why it may stay.
BY_HAND = {
    ("01_attention_memory.ipynb", 'head_dim = llama["hidden_size"] // heads'):
        "the worked head dim of the notebook; cell 12 asserts kv_bytes_per_token against it",
    ("01_attention_memory.ipynb", 'hidden_kib = tiny["hidden_size"] * 4 / 1024           '
                                  '# one F32 hidden state, per token'):
        "the worked size of one hidden state, beside the engine's bytes per token above the bound",
    ("05_kv_cache.ipynb", 'd_h = llama["hidden_size"] // llama["num_attention_heads"]'):
        "the worked d_h of 2 L h_kv d_h 2, asserted against kv_bytes_per_token in its cell",
    ("05_kv_cache.ipynb", 'divided = text["hidden_size"] // text["num_attention_heads"]  '
                          '# what the division says'):
        "the d_h a head_dim key overrides, printed beside the key and model_shape's d_h",
    ("05_kv_cache.ipynb", 'd_k, d_v = ds["qk_nope_head_dim"] + rope, ds["v_head_dim"]'):
        "MLA as MHA by hand, asserted against kv_bytes_per_token in the next line",
    ("05_kv_cache.ipynb", 'assert kv_cache.kv_bytes_per_token(as_mha) == L_ds * '
                          'ds["num_attention_heads"] * (d_k + d_v) * 2'):
        "the by-hand check itself",
}

# (file, the line as written, stripped): copies in files that issue 16's shape change does not
# own, still to move to model_shape. Remove an entry with its copy: a listed line that is gone
# fails below, so the list only shrinks.
LEFT = {}

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def _key_read(node):
    """The shape key ``node`` reads (``x["key"]`` or ``x.get("key", ...)``), else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant)):
        key = node.args[0].value
    else:
        return None
    return key if isinstance(key, str) and key in SHAPE_KEYS else None


def _is_conversion(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id in ("int", "float")


def config_arithmetic(source):
    """(line, key, why) of every copy of config-key arithmetic in ``source``."""
    tree = ast.parse(source)
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        key = _key_read(node)
        if key is None:
            continue
        up = parent.get(node)
        if isinstance(up, ast.BoolOp) and isinstance(up.op, ast.Or) and \
                isinstance(node, ast.Call):
            found.append((node.lineno, key, f".get({key!r}) with an 'or' default"))
            continue
        while _is_conversion(up) or isinstance(up, ast.BoolOp):  # int(...), a or b
            node, up = up, parent.get(up)
        if isinstance(up, ast.BinOp) and isinstance(up.op, _ARITHMETIC) or \
                isinstance(up, ast.AugAssign) and isinstance(up.op, _ARITHMETIC):
            found.append((node.lineno, key, f"[{key!r}] in arithmetic"))
    return found


def _python_files():
    for folder in UPPER:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _python_copies(path):
    """(line number, line text, why) of every copy in one upper-layer file."""
    lines = path.read_text().splitlines()
    return [(line, lines[line - 1].strip(), why)
            for line, _, why in config_arithmetic(path.read_text())]


def _notebook_cells(path):
    """(cell index, source) of each code cell, IPython magics and shell lines blanked."""
    cells = json.loads(path.read_text())["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).splitlines()
        yield i, "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                           for line in lines)


def _notebook_copies():
    """(notebook, cell, line number, line text, key, why) of every copy in the notebooks."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, source in _notebook_cells(path):
            lines = source.splitlines()
            for line, key, why in config_arithmetic(source):
                yield path.name, i, line, lines[line - 1].strip(), key, why


def test_the_scan_finds_each_form_of_the_copies():
    """The forms that were copied five times, and the ones that are not copies."""
    copies = [
        'heads = cfg["num_attention_heads"]\nd = cfg.get("head_dim") or cfg["hidden_size"] // heads',
        'd = int(cfg.get("head_dim") or cfg["hidden_size"] // heads)',
        'q_dim = heads * (cfg.get("head_dim") or 128)',
        'kv_dim = cfg["num_key_value_heads"] * q_dim // heads',
        'kv_heads = cfg.get("num_key_value_heads") or hq',
        'x = expected * cfg["num_attention_heads"]',
        'n = P / (int(c["num_hidden_layers"]) * q)',
        'total += cfg["head_dim"]',
    ]
    for source in copies:
        assert config_arithmetic(source), source
    fine = [
        'heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]',
        'layers = int(cfg["num_hidden_layers"])',
        'print(f"{cfg[\'hidden_size\']}")',
        'if cfg.get("kv_lora_rank") is not None: pass',
        'w = cfg["sliding_window"] * 2',  # not a shape key
        'x = shape.head_dim * shape.heads',
    ]
    for source in fine:
        assert not config_arithmetic(source), source


@pytest.mark.parametrize("path", list(_python_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_checks_widgets_and_plots_do_no_config_arithmetic(path):
    name = str(path.relative_to(ROOT))
    copies = [c for c in _python_copies(path) if (name, c[1]) not in LEFT]
    assert not copies, "config-key arithmetic outside compute (use kv_cache.model_shape):\n" + \
        "\n".join(f"{name}:{line}: {why}: {text}" for line, text, why in copies)


def test_every_left_copy_is_still_there():
    seen = {(str(p.relative_to(ROOT)), c[1]) for p in _python_files() for c in _python_copies(p)}
    gone = [entry for entry in LEFT if entry not in seen]
    assert not gone, f"LEFT lists copies that are gone (remove them from LEFT): {gone}"


def test_notebooks_do_no_config_arithmetic_but_their_worked_numbers():
    copies = [c for c in _notebook_copies() if (c[0], c[3]) not in BY_HAND]
    assert not copies, "config-key arithmetic in a notebook (use kv_cache.model_shape):\n" + \
        "\n".join(f"notebooks/{nb} cell {cell} line {line}: {why}: {text}"
                  for nb, cell, line, text, _, why in copies)


def test_every_by_hand_line_is_still_there():
    seen = {(c[0], c[3]) for c in _notebook_copies()}
    stale = [entry for entry in BY_HAND if entry not in seen]
    assert not stale, f"BY_HAND lists lines no notebook has (remove them): {stale}"


def test_one_topic_name_per_lesson_across_the_upper_layers():
    """plots, widgets and checks name their topic modules alike (a lesson is one name in all
    three: widgets.long_context draws with plots.long_context and is judged by
    checks.long_context)."""
    import lessonlib

    def topics(package):
        folder = pathlib.Path(lessonlib.__file__).parent / package
        return {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}

    plots, widgets, checks = topics("plots"), topics("widgets"), topics("checks")
    assert plots == widgets == checks, (plots ^ widgets, widgets ^ checks)


# ------------------------------------------------------------------ rules copied upstairs (issue 31)

# (file, the line as written, stripped): lines of a check that compute a rule on purpose, the
# wrong way or from a state compute never sees. A listed line that is gone fails below.
VARIANTS = {
    ("lessonlib/checks/attention.py",
     "term_old = math.exp(sink - keys.m)  # the sink's term measured against the keys' max"):
        "sink_share's typical mistake: the sink's term against the keys' max, not the new one",
    ("lessonlib/checks/attention.py", "a, w = math.exp(m - m_new), math.exp(x - m_new)"):
        "attention_update's probes: one step from a given (m, l, acc), which softmax's traces "
        "(always from nothing) do not take, beside the slips it names",
    ("lessonlib/checks/attention.py", "w_old = math.exp(x - m) if m > -math.inf else w"):
        "attention_update's 'old max weight' slip",
    ("lessonlib/checks/attention.py",
     "alpha, w = np.exp(m - m_ref), np.exp(x - m_ref[:, None])"):
        "the tiled kernel's variants (wrong mask, visit or rescale) a student's output is "
        "matched against to name the slip",
    ("lessonlib/checks/triton.py", "alpha = exp(m - m_final)"):
        "sink_output's fold in the kernel's exp2 units, with and without the acc rescale slip",
    ("lessonlib/checks/triton.py", "l_final = l * alpha + exp(z - m_final)"):
        "the same fold: l rescaled and the sink's exp2 term added",
}

# Local definitions of a rule that a lower layer owns: name -> the owner to call instead.
RULE_OWNERS = {"_pad": "kv_cache.llamacpp_swa_cells (llama.cpp's pad to 256)",
               "pad": "kv_cache.llamacpp_swa_cells (llama.cpp's pad to 256)",
               "_log_ylim": "plots.fit_log_ylim", "log_ylim": "plots.fit_log_ylim",
               "fit_log_ylim": "plots.fit_log_ylim", "_fit_log_ylim": "plots.fit_log_ylim"}
EXP_MODULES = {"np", "numpy", "math", "torch"}


def _is_exp(func):
    """``np.exp``, ``math.exp``, ... or a bare ``exp``."""
    return (isinstance(func, ast.Attribute) and func.attr == "exp"
            and isinstance(func.value, ast.Name) and func.value.id in EXP_MODULES) or \
        (isinstance(func, ast.Name) and func.id == "exp")


def _is_sum(node):
    """``x.sum()``, ``np.sum(x)``, ``sum(...)`` or ``math.fsum(...)``, through float() or int()."""
    while _is_conversion(node) and node.args:
        node = node.args[0]
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr in ("sum", "fsum")) or \
        (isinstance(f, ast.Name) and f.id in ("sum", "fsum"))


def rule_copies(source):
    """(line, why) of every exp of a difference and every one minus a sum in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _is_exp(node.func) and node.args and \
                isinstance(node.args[0], ast.BinOp) and isinstance(node.args[0].op, ast.Sub):
            found.append((node.lineno, "exp of a difference (softmax's rescale or term)"))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and \
                isinstance(node.left, ast.Constant) and node.left.value == 1 and \
                _is_sum(node.right):
            found.append((node.lineno, "one minus a sum (softmax.sink_share)"))
    return found


def rule_defs(source):
    """(line, name, owner) of every local def, at any depth, of a rule in ``RULE_OWNERS``."""
    return [(node.lineno, node.name, RULE_OWNERS[node.name]) for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name in RULE_OWNERS]


def test_the_rule_scans_find_the_copies_issue_31_removed():
    """The copies as they were written (widgets.attention, widgets.long_context, checks.windows)
    and their near forms are found; calling the owner, or arithmetic that is no rule, is not."""
    copies = [
        'state["rescale"] = float(np.exp(prev_m - last.m)) if prev_m > -np.inf else None',
        'share = 1.0 - float(w.sum())',
        'terms = list(w * l) + [(1.0 - float(w.sum())) * l]',
        'alpha = math.exp(m_old - m_new)',
        'w = exp(x - m)',  # a bare exp (from math import exp)
        'p = torch.exp(s - s.max())',
        'share = 1 - np.sum(weights)',
        'rest = 1 - sum(p for p in probs)',
    ]
    for source in copies:
        assert rule_copies(source), source
    fine = [
        'share = softmax.sink_share(scores, z)',
        'x = np.exp(scores)', 'y = math.exp(-x)', 'e = np.exp(np.float64(z))',
        'keys = 1 - share', 'total = 1.0 + w.sum()', 'n = w.sum() - 1',
        'lines.append(f"exp(m_old - m_new) = {st.rescale:.6f}")',  # text, not arithmetic
    ]
    for source in fine:
        assert not rule_copies(source), source
    defs = [
        'def _pad(x, to=256):\n    return -(-x // to) * to',
        'def _log_ylim(curves):\n    return 1, 2',
        'def fit_log_ylim(ax, curves):\n    pass',
        'def explorer():\n    def _pad(x):\n        return x\n    return _pad',  # nested
    ]
    for source in defs:
        assert rule_defs(source), source
    for source in ['plots.fit_log_ylim(ax, curves, margin=(2.5, 2.5))', 'def padding_label(x): pass',
                   'cells = llamacpp_swa_cells(n_ctx, W, n_seq=1, n_ubatch=ub)']:
        assert not rule_defs(source), source


def _rule_copies_in(path):
    lines = path.read_text().splitlines()
    return [(line, lines[line - 1].strip(), why) for line, why in rule_copies(path.read_text())]


@pytest.mark.parametrize("path", list(_python_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_checks_widgets_and_plots_copy_no_softmax_rule(path):
    name = str(path.relative_to(ROOT))
    copies = [c for c in _rule_copies_in(path) if (name, c[1]) not in VARIANTS]
    assert not copies, "a rule compute owns, computed again upstairs (read it from softmax):\n" + \
        "\n".join(f"{name}:{line}: {why}: {text}" for line, text, why in copies)


@pytest.mark.parametrize("path", [p for folder in ("lessonlib/checks", "lessonlib/widgets")
                                  for p in sorted((ROOT / folder).rglob("*.py"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_checks_and_widgets_define_no_copy_of_a_rule(path):
    name = str(path.relative_to(ROOT))
    found = rule_defs(path.read_text())
    assert not found, "a local copy of a rule a lower layer owns:\n" + \
        "\n".join(f"{name}:{line}: def {fn}: call {owner}" for line, fn, owner in found)


def test_every_variant_is_still_there():
    seen = {(str(p.relative_to(ROOT)), c[1]) for p in _python_files() for c in _rule_copies_in(p)}
    gone = [entry for entry in VARIANTS if entry not in seen]
    assert not gone, f"VARIANTS lists lines that are gone (remove them from VARIANTS): {gone}"


# ------------------------------------------------------------------ RoPE rules copied upstairs (issue 31)

# The numbers notebooks 07 and 08's widgets show, each computed once in lessonlib.rope: a widget
# that computes one of them again (from the frequencies rope returned) is a second copy.
ROPE_OWNERS = {
    "mscale": "rope.yarn_mscale (YaRN's mu = 0.1 mscale ln s + 1)",
    "pair_sets": "rope.yarn_pair_sets (YaRN's kept, ramped and divided pairs)",
    "set_difference": "rope.yarn_pair_sets (a set of pairs, from the ramp)",
    "worst_pair": "rope.largest_overshoot (the largest overshoot and its pair)",
    "clock_angle": "rope.clock_angle (the angle less its whole turns)",
    "score_scale": "rope.rotary_score_scale (mu squared on the scores)",
    "frequency_arithmetic": "rope.frequency_ratio, rope.slowdown, rope.angle_at or "
                            "rope.wavelengths (theta' / theta, theta / theta', m theta, 2 pi / theta)",
}
_INDEX_SETS = {"flatnonzero", "nonzero", "argwhere", "where"}
_SET_OPS = {"setdiff1d", "intersect1d", "union1d", "setxor1d", "in1d", "isin"}
_TURN_NAMES = {"TWO_PI", "two_pi", "TAU", "tau"}
_FREQ_WORDS = ("theta", "inv", "inv_freq")
_MU_WORDS = ("mscale", "mu", "attention_factor")
_PAIR_WORDS = ("pair", "pairs", "kept", "ramp", "ramped", "blend", "divided", "never", "outside",
               "range", "arange")


def _called(node):
    """The name a call calls: ``np.flatnonzero(...)`` -> 'flatnonzero', ``x.argmax()`` -> 'argmax'."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)


def _is_number(node, *values):
    return isinstance(node, ast.Constant) and not isinstance(node.value, bool) and \
        isinstance(node.value, (int, float)) and node.value in values


def _is_turn(node):
    """2 pi written as TWO_PI, math.tau, 2 * np.pi, 2 * math.pi."""
    if isinstance(node, ast.Name) and node.id in _TURN_NAMES:
        return True
    if isinstance(node, ast.Attribute) and node.attr in ("TWO_PI", "tau"):
        return True
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and any(
        _is_number(a, 2) and isinstance(b, (ast.Attribute, ast.Name)) and
        getattr(b, "attr", getattr(b, "id", None)) == "pi"
        for a, b in ((node.left, node.right), (node.right, node.left)))


def _words(node):
    """The names, attributes and string keys an expression reads, lower case."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id.lower())
        elif isinstance(n, ast.Attribute):
            found.add(n.attr.lower())
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            found.add(n.value.lower())
    return found


def _mentions(node, words):
    """``node`` reads a name, attribute or key that is one of ``words`` or has one as a part
    between underscores (inv_ntk, d["theta"], sp.attention_factor; not invert, multiply)."""
    return any(w == word or w.startswith(word + "_") or w.endswith("_" + word) or
               f"_{word}_" in w for w in _words(node) for word in words)


def rope_rule_copies(source):
    """(line, key of ROPE_OWNERS) of every copy of a rope rule in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = _called(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and \
                any(_is_number(n, 0.1) for n in ast.walk(node)) and \
                any(_called(n) in ("log", "log1p") for n in ast.walk(node)):
            found.append((node.lineno, "mscale"))
        if name in _INDEX_SETS and node.args and any(
                isinstance(n, ast.Compare) and any(_is_number(c, 0, 1) for c in
                                                   [n.left, *n.comparators])
                for n in ast.walk(node.args[0])):
            found.append((node.lineno, "pair_sets"))
        if (name in _SET_OPS and _mentions(node, _PAIR_WORDS)) or (
                isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and
                any(_called(s) == "set" or isinstance(s, (ast.Set, ast.SetComp))
                    for s in (node.left, node.right)) and _mentions(node, _PAIR_WORDS)):
            found.append((node.lineno, "set_difference"))
        if name in ("argmax", "argmin", "nanargmax"):
            found.append((node.lineno, "worst_pair"))
        if (name in ("mod", "fmod", "remainder") and len(node.args) == 2 and
                _is_turn(node.args[1])) or (isinstance(node, ast.BinOp) and
                                            isinstance(node.op, ast.Mod) and _is_turn(node.right)):
            found.append((node.lineno, "clock_angle"))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and \
                _is_number(node.right, 2) and _mentions(node.left, _MU_WORDS):
            found.append((node.lineno, "score_scale"))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Mult)) and \
                (_mentions(node.left, _FREQ_WORDS) or _mentions(node.right, _FREQ_WORDS)):
            found.append((node.lineno, "frequency_arithmetic"))
    return found


def test_the_rope_rule_scan_finds_the_copies_issue_31_removed():
    """The copies as widgets.rope wrote them before issue 31 moved them to rope, and near forms,
    are found; calling the owner, or formatting its answer, is not."""
    copies = {
        "mscale": ['mu = 1 + 0.1 * math.log(s)', 'mu = 0.1 * mscale * np.log(s) + 1.0',
                   'mu = math.log(s) * 0.1 + 1'],
        "pair_sets": ['kept, divided = np.flatnonzero(ramp == 1.0), np.flatnonzero(ramp == 0.0)',
                      'blend = np.flatnonzero((ramp > 0.0) & (ramp < 1.0))',
                      'kept = np.where(ramp >= 1)[0]'],
        "set_difference": ['ramped = np.setdiff1d(np.arange(64), kept)',
                           'ramped = set(range(n)) - set(kept) - set(divided)'],
        "worst_pair": ['worst = int(np.argmax(d["overshoot"]["NTK-aware"]))',
                       'worst = over.argmax()'],
        "clock_angle": ["x = np.mod(d['angles'][0], plots.TWO_PI)", 'a = m * theta % (2 * math.pi)',
                        'a = np.mod(angles, 2 * np.pi)', 'a = math.fmod(x, math.tau)'],
        "score_scale": ["s = d['mscale'] ** 2", 'scores = mu ** 2', 'f = sp.attention_factor ** 2'],
        "frequency_arithmetic": ["r = d['theta'][last] / d['inv']['NTK-aware'][last]",
                                 'ratios = {k: v[0] / theta for k, v in inv.items()}',
                                 'slow = theta / inv_ntk', 'wl = 2 * np.pi / theta',
                                 'angles = m * d["theta"]'],
    }
    for rule, sources in copies.items():
        for source in sources:
            assert rule in [why for _, why in rope_rule_copies(source)], (rule, source)
    fine = [
        'sets = yarn_pair_sets(band[0], band[1], r // 2)', 'mu = yarn_mscale(s)',
        "line = f\"YaRN μ = 1 + 0.1·ln s = {d['mscale']:.4f}\"",  # the rule's name, as text
        'outside = np.flatnonzero(d["outside"])',  # the pairs of a computed mask
        'x = 0.1 * width', 'y = math.log(v / slider.value)', 'n = 2 ** 10', 'w = x ** 2',
        'm = min(max(coarse + fine, 0), max_position)', 'half = coarse_step // 2',
        'c = int(math.floor(m / coarse_step + 0.5)) * coarse_step',
        'lo = 1 / (1.5 * max_factor)', 'share = len(kept) / n_pairs',
        'x = invert * 2', 'y = multiplier ** 2', 'pairs = theta.size // 2',
        'unknown = set(values) - set(self.controls)',  # names of controls, not pairs
        'top = max(max(w.max() for w in widest.values()), widest["target"])',
    ]
    for source in fine:
        assert not rope_rule_copies(source), (source, rope_rule_copies(source))


@pytest.mark.parametrize("path", sorted((ROOT / "lessonlib/widgets").rglob("*.py")) +
                         [ROOT / "lessonlib/plots/rope.py"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_widgets_and_rope_plots_compute_no_rope_rule(path):
    name = str(path.relative_to(ROOT))
    lines = path.read_text().splitlines()
    found = rope_rule_copies(path.read_text())
    assert not found, "a rope rule computed again upstairs (call lessonlib.rope):\n" + \
        "\n".join(f"{name}:{line}: {lines[line - 1].strip()}: call {ROPE_OWNERS[why]}"
                  for line, why in found)


# --------------------------------------------------------------------------- config keys

# Issue 31: lessonlib.models is the one place a config.json key is read. Every other module
# reads a Model's facts (``model.shape``, ``model.scaling``, ``model.vocab_size``) or the models
# package's readers. A read is ``x["key"]``, ``x.get("key")``, ``x.pop("key")``, ``"key" in x``
# or ``int_key(x, "key")`` with a config key as a literal; building a config (``cfg["key"] =``)
# is not one.

def _config_keys():
    keys = set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                keys.add(k)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    for path in (ROOT / "lessonlib/models/configs").glob("*.json"):
        walk(json.loads(path.read_text()))
    # keys the readers know that no shipped config happens to hold
    return keys | {
        "rope_scaling", "rope_parameters", "rope_type", "type", "factor", "sliding_window",
        "layer_types", "partial_rotary_factor", "head_dim", "kv_lora_rank", "qk_rope_head_dim",
        "max_position_embeddings", "original_max_position_embeddings", "rope_theta",
        "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate",
        "low_freq_factor", "high_freq_factor", "short_factor", "long_factor",
        "rope_local_base_freq", "use_sliding_window", "max_window_layers",
        "sliding_window_pattern", "text_config", "model_max_length", "num_local_experts",
        "n_routed_experts", "_gguf_sinks", "_gguf_context_length", "_gguf_rope_freqs"}


CONFIG_KEYS = _config_keys()

# (file, the line as written, stripped): a read of a dict that is not a config although its
# keys are named like one; each with what the dict is.
_QUESTION = "a row of checks.rope.QUESTIONS: the question's own numbers, named like the keys"
_REPORT = "inspect_model.report()'s dict (its JSON output), printed by format_report"
NOT_CONFIG = {
    ("lessonlib/checks/rope.py", 'b, s, d = q["base"], q["factor"], q["d"]'): _QUESTION,
    ("lessonlib/checks/rope.py", 'i, n, m, s = q["pair"], q["n_train"], q["position"], q["factor"]'):
        _QUESTION,
    ("lessonlib/checks/rope.py", 'config = {**published, "rope_scaling": {"rope_type": q["rope_type"], '
                                 '"factor": q["factor"]}}'): _QUESTION + ", built into a config",
    ("lessonlib/checks/rope.py", '(n / q["factor"], "vLLM multiplies by the factor for dynamic '
                                 'scaling; it never divides."),'): _QUESTION,
    ("lessonlib/checks/rope.py", '(n * q["factor"] ** 2, "One factor: max_position_embeddings x '
                                 'factor."),'): _QUESTION,
    ("lessonlib/checks/rope.py", '"rope_scaling": {"rope_type": "linear", "factor": q["factor"]}})[0]'):
        _QUESTION + ", built into a config",
    ("lessonlib/checks/tinylm.py", 'kind = answer.get("rope_type", answer.get("type"))'):
        "the student's rope_scaling answer, judged by its name before models.tiny reads it",
    ("lessonlib/checks/tinylm.py", 'if "rope_scaling" in answer or "rope_parameters" in answer:'):
        "the student's answer: a whole config where the rope dict was asked for is the mistake named",
    ("lessonlib/inspect_model.py", 'att = (f"MLA: {s[\'heads\']} heads; latent kv_lora_rank '
                                   '{m[\'kv_lora_rank\']} + RoPE key "'): _REPORT,
    ("lessonlib/inspect_model.py", 'f"{m[\'qk_rope_head_dim\']} cached per token; q_lora_rank '
                                   '{m[\'q_lora_rank\']}")'): _REPORT,
    ("lessonlib/inspect_model.py", '+ (f", {rep[\'model_type\']}" if rep.get("model_type") else "") '
                                   '+ ")")'): _REPORT,
    ("lessonlib/inspect_model.py", 'f"head dim {s[\'head_dim\']}"'): _REPORT,
    ("lessonlib/inspect_model.py", '+ (f" (values {s[\'v_head_dim\']})" if s["v_head_dim"] != '
                                   's["head_dim"] else ""))'): _REPORT,
    ("lessonlib/widgets/_render.py",
     'heard.append(content.get("type") if isinstance(content, dict) else content)'):
        "a comm message from the page (its type), not a config",
}


def config_key_reads(source):
    """[(line, key)] of every read of a config key in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "pop") and node.args \
                and isinstance(node.args[0], ast.Constant):
            key = node.args[0].value
        elif isinstance(node, ast.Call) and _called(node) in ("int_key", "_int_key") \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            key = node.args[1].value
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) \
                and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            key = node.left.value
        if isinstance(key, str) and key in CONFIG_KEYS:
            found.append((node.lineno, key))
    return found


def _outside_models():
    return [p for p in sorted((ROOT / "lessonlib").rglob("*.py"))
            if "models" not in p.relative_to(ROOT / "lessonlib").parts]


def test_the_key_scan_finds_each_form_of_a_read():
    for source in ['x = cfg["vocab_size"]', 'x = cfg.get("rope_scaling")',
                   'x = rp.pop("factor", None)', 'if "kv_lora_rank" in text: pass',
                   'x = int_key(cfg, "num_hidden_layers")', 'x = _int_key(c, "head_dim")',
                   'if "sliding_window" not in cfg: pass']:
        assert config_key_reads(source), source
    for source in ['cfg["vocab_size"] = 4', 'x = model.vocab_size', 'x = row["bytes"]',
                   'x = d.get(name)', 'if key in cfg: pass']:
        assert not config_key_reads(source), source


@pytest.mark.parametrize("path", _outside_models(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_outside_models_reads_a_config_key(path):
    name = str(path.relative_to(ROOT))
    lines = path.read_text().splitlines()
    found = [(line, key) for line, key in config_key_reads(path.read_text())
             if (name, lines[line - 1].strip()) not in NOT_CONFIG]
    assert not found, "a config key read outside lessonlib.models (read a Model's fact):\n" + \
        "\n".join(f"{name}:{line}: {key!r}: {lines[line - 1].strip()}" for line, key in found)


def test_every_not_config_line_is_still_there():
    gone = [(f, line) for f, line in NOT_CONFIG
            if line not in [x.strip() for x in (ROOT / f).read_text().splitlines()]]
    assert not gone, f"NOT_CONFIG lists lines that are gone; remove them: {gone}"


LESSON_FREE = {"_validate", "models"}  # all the models package may import of lessonlib


@pytest.mark.parametrize("path", sorted((ROOT / "lessonlib/models").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_models_package_imports_no_lesson_module(path):
    """File readers sit under the lessons: lessonlib.models imports only lessonlib._validate
    and itself (a lesson module imports the model, never the other way round)."""
    depth = len(path.relative_to(ROOT / "lessonlib").parts) - 1  # 1 in models/, 2 in configs/
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level > depth:
            # from .. import x (x a lessonlib module), from ..x import y
            top = (node.module or "").split(".")[0]
            names = [top] if top else [a.name for a in node.names]
            bad += [(node.lineno, n) for n in names if n not in LESSON_FREE]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            full = [module] if module else [a.name for a in node.names]
            bad += [(node.lineno, m) for m in full if m and m.startswith("lessonlib.")
                    and m.split(".")[1] not in LESSON_FREE]
    assert not bad, f"{path.relative_to(ROOT)} imports lesson modules: {bad}"
