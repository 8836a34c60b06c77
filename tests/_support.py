"""Helpers shared by the test files (imported as ``from _support import ...``)."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_file(*parts, name=None):
    """The Python file at ROOT/parts... (a script, a benchmark, a solution) as a module."""
    path = os.path.join(ROOT, *parts)
    name = name or os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def solutions(stem):
    """instructors/solutions/<stem>.py as a module (the reference answers to a notebook)."""
    return load_file("instructors", "solutions", f"{stem}.py", name=f"solutions_{stem}")


def assert_wrong(verdict, *fragments):
    """The check said "not yet", with a hint containing every fragment (case-insensitive)."""
    assert verdict.ok is False, verdict
    for f in fragments:
        assert f.lower() in verdict.message.lower(), (f, verdict.message)


def labelled(ax, *, xlabel=True, ylabel=True):
    """The axes has a title, and an x and a y label unless told otherwise."""
    assert ax.get_title(), "no title"
    assert not xlabel or ax.get_xlabel(), "no x label"
    assert not ylabel or ax.get_ylabel(), "no y label"


def optional(package):
    """``import package`` (torch or triton), or None where it is absent by design: no wheels for
    this platform, or an environment built without it (``lessonlib.runtime``). Absent where it
    is pinned is a broken install: ImportError with the reason. Tests that use the module carry
    ``@needs(package)``, which skips them, with the reason, where it is None."""
    from lessonlib import runtime
    if runtime.installed(package):
        return importlib.import_module(package)
    if runtime.expected_missing(package):
        return None
    raise ImportError(runtime.missing_reason(package))


def skip_module_without(package):
    """At the top of a test module whose every test needs ``package``: skip the module, with
    the reason, where the package is absent by design (and fail where it is pinned)."""
    import pytest
    if optional(package) is None:
        from lessonlib import runtime
        pytest.skip(f"needs {package}: {runtime.missing_cause(package)}", allow_module_level=True)


def needs(*packages):
    """Mark a test that needs torch and/or triton (handled in conftest.py)."""
    import pytest
    return pytest.mark.needs(*packages)


def notebook_explorers():
    """Each notebook's slider widget, by name, as a function that builds it as the notebook
    does (its defaults; notebook 10's from the committed results)."""
    from lessonlib import tinylm_results
    from lessonlib.models import load_model
    from lessonlib.widgets import (attention, kv_cache, long_context, paged, rope, tinylm, triton,
                                   windows)
    head = {"head_dim": 128, "rope_theta": 10_000.0}  # notebooks 07 and 08's HEAD
    llama = load_model("Llama-3.1-8B")
    return {
        "memory": lambda: attention.memory_explorer(llama), "online_softmax": attention.online_softmax_explorer,
        "tiled": attention.tiled_explorer, "tile_map": triton.tile_map_explorer,
        "kv_cache": lambda: kv_cache.kv_cache_explorer(llama, mla_config=load_model("DeepSeek-V3")),
        "budget": lambda: kv_cache.model_budget_explorer(llama),
        "window": lambda: windows.window_explorer("gpt-oss-20b"),
        "clock": lambda: rope.clock_explorer(head, n_train=4096, m=16383),
        "scaling": lambda: rope.scaling_explorer(head, factor=4.0, n_train=4096),
        "cost": lambda: long_context.cost_explorer(llama),
        "extension": lambda: tinylm.extension_explorer(
            tinylm_results.load_results("extension"), length=256),
        "stream": lambda: paged.stream_explorer(),
    }


def slider_values(control):
    """Every value a slider (int, float or selection) can take, in order, and the index of
    its current value (the nearest one: a float slider's steps are rounded)."""
    import ipywidgets as widgets
    import numpy as np
    if isinstance(control, widgets.SelectionSlider):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return values, values.index(control.value)
    values = list(np.arange(control.min, control.max + control.step / 2, control.step))
    return values, int(np.argmin([abs(v - control.value) for v in values]))


def sliders(explorer):
    """An Explorer's sliders (int, float and selection), by name."""
    import ipywidgets as widgets
    return {k: c for k, c in explorer.controls.items()
            if isinstance(c, (widgets.IntSlider, widgets.FloatSlider, widgets.SelectionSlider))}


def run_python_without_gpu(code, **env_changes):
    """Run ``code`` (dedented) in a fresh Python at the repository's root with no CUDA device
    and no TRITON_INTERPRET (``env_changes`` added): how a Triton kernel behaves where it
    cannot run. Returns the CompletedProcess, output captured as text."""
    import subprocess
    import sys
    import textwrap
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(CUDA_VISIBLE_DEVICES="", PYTHONPATH=ROOT, **env_changes)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
