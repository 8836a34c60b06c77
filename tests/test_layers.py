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
LEFT = {
    ("lessonlib/checks/rope.py",
     'R.yarn_correction_range(fast, slow, int(cfg["qk_nope_head_dim"]) + r, b, L0)},'):
        "DeepSeek's full head dim for the yarn_band hint: kv_cache.model_shape(cfg).head_dim",
}

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
