"""python -m lessonlib inspect: every source kind, the library's numbers, one-line errors (exit 2)."""
import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lessonlib import cli, inspect_model as im
from lessonlib.models import gguf as gf
from lessonlib.models.configs import config_names, load_config


FULL = [n for n in config_names() if not n.startswith("tiny-")]
SNAPSHOTS = Path(__file__).parent / "data" / "cli"
REPO = Path(__file__).resolve().parent.parent
# The snapshot commands: `python tests/test_cli.py` rewrites the files after a deliberate change.
SNAPSHOT_ARGS = {
    "Llama-3.1-8B.txt": ["inspect", "Llama-3.1-8B", "-c", "8K", "-c", "128K", "--kv-dtype", "f16",
                         "--kv-dtype", "q8_0", "--gpu-memory", "24GiB", "--gpu", "RTX-4090"],
    "gpt-oss-20b.txt": ["inspect", "gpt-oss-20b", "-c", "32K", "-c", "128K", "--gpu-memory",
                        "80GB", "--gpu", "H100-SXM"],
}


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", FULL)
def test_every_shipped_config_is_the_library_report(name):
    code, out, err = run("inspect", name, "--json", "-c", "4096", "-c", "100000", "--seqs", "2",
                         "--kv-dtype", "f16", "--kv-dtype", "q8_0")
    assert code == 0 and err == ""
    expected = im.report(load_config(name), [4096, 100000], kv_types=["f16", "q8_0"], n_seq=2,
                         source={"name": name, "format": "shipped config"})
    assert json.loads(out) == json.loads(json.dumps(expected))


def test_config_file_folder_and_gguf(tmp_path):
    cfg = load_config("Qwen2.5-7B-Instruct")
    folder = tmp_path / "qwen"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    by_name = json.loads(run("inspect", "Qwen2.5-7B-Instruct", "--json")[1])
    by_file = json.loads(run("inspect", str(folder / "config.json"), "--json")[1])
    by_folder = json.loads(run("inspect", str(folder), "--json")[1])
    for rep in (by_file, by_folder):
        assert rep["caches"] == by_name["caches"] and rep["rope"] == by_name["rope"]
    assert by_folder["source"] == {"path": str(folder / "config.json"), "format": "config.json"}
    path = gf.write_gguf(str(tmp_path / "qwen.gguf"), cfg)
    by_gguf = json.loads(run("inspect", path, "--json", "--engine", "llama.cpp")[1])
    assert by_gguf["source"]["format"] == "GGUF" and by_gguf["source"]["architecture"] == "qwen2"
    llama = [r for r in by_name["caches"] if r["engine"] == "llama.cpp"]
    assert by_gguf["caches"] == llama


def test_gguf_budget_uses_the_files_tensor_bytes(tmp_path):
    path = gf.write_gguf(str(tmp_path / "m.gguf"), load_config("Llama-3.1-8B"))
    rep = json.loads(run("inspect", path, "--json", "--gpu-memory", "24GiB")[1])
    assert rep["budget"]["weights_bytes"] == gf.read_gguf(path).tensor_bytes
    assert rep["budget"]["weights_source"] == "the GGUF file's tensor data"
    given = json.loads(run("inspect", path, "--json", "--gpu-memory", "24GiB", "--weights",
                           "16GB")[1])
    assert given["budget"]["weights_bytes"] == 16 * 10**9


def test_gpu_draws_the_decode_roofline_with_the_sources_weights(tmp_path):
    path = gf.write_gguf(str(tmp_path / "m.gguf"), load_config("Llama-3.1-8B"))
    rep = json.loads(run("inspect", path, "--json", "--gpu", "L4", "-c", "8K")[1])
    assert rep["budget"] is None and rep["decode"]["gpu"] == "L4"
    assert rep["decode"]["weights_bytes"] == gf.read_gguf(path).tensor_bytes
    assert rep["decode"]["weights_source"] == "the GGUF file's tensor data"
    counted = json.loads(run("inspect", "Llama-3.1-8B", "--json", "--gpu", "L4", "-c", "8K")[1])
    assert counted["decode"]["weights_bytes"] == 16_060_522_496
    given = json.loads(run("inspect", "Llama-3.1-8B", "--json", "--gpu", "L4", "-c", "8K",
                           "--weights", "4GB")[1])
    assert given["decode"]["weights_bytes"] == 4 * 10**9
    assert [r["tokens_per_s"] for r in given["decode"]["rows"]] == \
        [300e9 / (4e9 + 32 * 8192 * 4096)] * 3


def _bad_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"num_hidden_layers": 32,\n "num_attention_heads": 32 "x": 1}')
    return [str(p)], "not valid JSON (line 2, column"


def _no_config(tmp_path):
    (tmp_path / "m.gguf").write_bytes(b"")
    return [str(tmp_path)], "this folder has no config.json; for its GGUF file give the file"


def _unknown_arch(tmp_path):
    import gguf
    p = str(tmp_path / "mamba.gguf")
    w = gguf.GGUFWriter(p, "mamba")
    w.add_block_count(2)
    return [gf.finish(w)], "GGUF architecture 'mamba' is not one lessonlib reads"


def _missing_key(tmp_path):
    import gguf
    p = str(tmp_path / "llama.gguf")
    w = gguf.GGUFWriter(p, "llama")
    w.add_block_count(2)
    w.add_context_length(4096)
    w.add_embedding_length(64)
    return [gf.finish(w)], "GGUF key 'llama.attention.head_count' is missing"


def _not_gguf(tmp_path):
    p = tmp_path / "broken.gguf"
    p.write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    return [str(p)], "not a readable GGUF file"


def _array(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("[1, 2]")
    return [str(p)], "a config.json holds one JSON object, this holds a list"


@pytest.mark.parametrize("make", [_bad_json, _no_config, _unknown_arch, _missing_key, _not_gguf,
                                  _array])
def test_bad_sources_give_one_line_and_exit_2(tmp_path, make):
    argv, says = make(tmp_path)
    code, out, err = run("inspect", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err and "Traceback" not in err


@pytest.mark.parametrize("argv, says", [
    (["Llama-3.1-8B", "-c", "lots"], "--context must be a whole number of tokens"),
    (["Llama-3.1-8B", "-c", "0"], "--context must be"),
    (["Llama-3.1-8B", "--seqs", "two"], "--seqs must be a whole number"),
    (["Llama-3.1-8B", "--gpu-memory", "24"], "--gpu-memory must be a number with a unit"),
    (["Llama-3.1-8B", "--kv-dtype", "q8"], "argument --kv-dtype: invalid choice: 'q8'"),
    (["Llama-3.1-8B", "--engine", "sglang"], "argument --engine: invalid choice"),
    (["Llama-3.1-8B", "--gpu", "H100"], "argument --gpu: invalid choice: 'H100'"),
    (["Llama-3.1-8B", "--engine", "vllm", "--kv-dtype", "q8_0"], "kv_types: 'q8_0'"),
    (["Lama-3.1-8B"], "not a shipped config (those are"),
    (["nowhere/config.json"], "nowhere/config.json: no such file or folder"),
    (["tiny-gemma3-swa"], "tiny-gemma3-swa: config is missing 'num_attention_heads'"),
    ([], "the following arguments are required: SOURCE"),
])
def test_bad_arguments_give_one_line_and_exit_2(argv, says):
    code, out, err = run("inspect", *argv)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and says in err, err


def test_a_bad_config_key_is_named(tmp_path):
    cfg = load_config("Llama-3.1-8B")
    cfg["rope_scaling"]["facter"] = 2.0
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    code, _, err = run("inspect", str(p))
    assert code == 2 and "facter" in err and err.count("\n") == 1


@pytest.mark.parametrize("name", sorted(SNAPSHOT_ARGS))
def test_snapshots(name):
    code, out, err = run(*SNAPSHOT_ARGS[name])
    assert code == 0 and err == ""
    assert out == (SNAPSHOTS / name).read_text(), \
        f"{name} changed: if on purpose, run python tests/test_cli.py and review the diff"


def test_python_dash_m_runs_it():
    proc = subprocess.run([sys.executable, "-m", "lessonlib", "inspect", "Mistral-7B", "-c", "32K"],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0 and "llama.cpp runs every layer of a mistral model global" in proc.stdout
    bad = subprocess.run([sys.executable, "-m", "lessonlib", "inspect", "Mistral-7B", "-c", "x"],
                         capture_output=True, text=True, cwd=REPO, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and bad.stdout == ""


@pytest.mark.parametrize("name", [n for n in FULL if "model_type" in load_config(n)])
def test_hf_autoconfig_agrees_on_head_dim_and_layer_types(name):
    """HuggingFace's own config classes derive head_dim and (where they have them) layer_types
    (transformers' configs need no torch: this runs in the torch-free profile too)."""
    import transformers
    transformers.logging.set_verbosity_error()
    cfg = {k: v for k, v in load_config(name).items() if not k.startswith("_")}
    hf = transformers.AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    rep = im.report(load_config(name), [4096])
    text = getattr(hf, "text_config", hf)
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    if rep["shape"]["mla"] is None:
        assert rep["shape"]["head_dim"] == head_dim
    else:
        assert rep["shape"]["head_dim"] == text.qk_nope_head_dim + text.qk_rope_head_dim
    types = getattr(text, "layer_types", None)
    if types is not None:
        assert rep["layers"]["sliding"] == [i for i, t in enumerate(types) if t == "sliding_attention"]
    elif getattr(text, "sliding_window", None):  # Mistral, Phi-3: the window on every layer
        assert len(rep["layers"]["sliding"]) == text.num_hidden_layers
    else:
        assert rep["layers"]["sliding"] == []


if __name__ == "__main__":
    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    for file, argv in SNAPSHOT_ARGS.items():
        buf = io.StringIO()
        assert cli.main(argv, stdout=buf) == 0
        (SNAPSHOTS / file).write_text(buf.getvalue())
        print("wrote", SNAPSHOTS / file)


def _readme_examples():
    """The console blocks of the README's inspect section: [(commands, expected output)]."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Bring your own model"):]
    section = section[:section.index("\n## ", 3)]
    blocks = []
    for block in section.split("```console\n")[1:]:
        lines = block[:block.index("```")].rstrip("\n").split("\n")
        commands = [ln[2:] for ln in lines if ln.startswith("$ ")]
        output = "\n".join(ln for ln in lines if not ln.startswith("$ "))
        blocks.append((commands, output))
    return blocks


@pytest.mark.parametrize("commands, expected", _readme_examples())
def test_readme_examples_print_what_the_readme_shows(tmp_path, commands, expected):
    (tmp_path / "lessonlib").symlink_to(REPO / "lessonlib")  # the README's paths, from the root
    out = ""
    for command in commands:
        assert command.startswith("python "), command
        proc = subprocess.run([sys.executable] + shlex.split(command)[1:], capture_output=True,
                              text=True, cwd=tmp_path, timeout=120, env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr
        out += proc.stdout
    assert out.rstrip("\n") == expected, "README's inspect example is out of date"


def test_readme_has_both_examples():
    sources = [c for commands, _ in _readme_examples() for c in commands if " inspect " in c]
    assert any(".json" in c for c in sources) and any(".gguf" in c for c in sources)
