"""lessonlib.models.rope: the rope keys read once. What is new beside tests/test_rope.py (which
tests every reader through lessonlib.rope's re-exports): a Model's answers are kept, the readers
import no lesson module, lessonlib.rope and lessonlib.llamacpp hand out the same objects, and
the two small readers the upper layers use instead of a config key."""
import ast
import pathlib

import pytest
from _bad import Case, bad_input_tests, texts
from hypothesis import strategies as st

from lessonlib import llamacpp, rope
from lessonlib.models import as_model, load_model
from lessonlib.models import rope as MR

ROOT = pathlib.Path(__file__).resolve().parents[1]
_GEMMA_V5 = {"head_dim": 128, "rope_parameters": {
    "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
    "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}


def test_a_models_scaling_is_read_once_and_kept():
    model = load_model("Llama-3.1-8B")
    sp = MR.scaling_parameters(model)
    assert MR.scaling_parameters(model) is sp and rope.scaling_parameters(model) is sp
    assert sp == MR.scaling_parameters(dict(model)) == model.scaling
    assert MR.rotary_dim(model) == MR.rotary_dim(dict(model)) == 128


def test_each_layer_type_is_kept_apart():
    model = as_model(_GEMMA_V5)
    full = MR.scaling_parameters(model)
    sliding = MR.scaling_parameters(model, layer_type="sliding_attention")
    assert (full.rope_type, full.base, sliding.rope_type, sliding.base) == ("linear", 1e6,
                                                                             "default", 1e4)
    assert MR.scaling_parameters(model, layer_type="sliding_attention") is sliding
    assert MR.scaling_parameters(model, layer_type="full_attention") == full


def test_a_models_rope_parameters_are_a_fresh_copy_each_time():
    model = load_model("Phi-3.5-mini-instruct")
    params = MR.rope_parameters(model)
    assert params == MR.rope_parameters(dict(model))
    params["long_factor"].append(9.0)
    params["rope_type"] = "linear"
    assert MR.rope_parameters(model) == MR.rope_parameters(dict(model))


def test_a_model_refuses_what_the_dict_refuses_each_time():
    overflows = as_model({"head_dim": 128, "rope_theta": 1e300,
                          "rope_scaling": {"rope_type": "linear", "factor": 1e300}})
    for _ in range(2):  # an error is not kept: the second call raises it again
        with pytest.raises(ValueError, match="non-finite or zero frequencies"):
            MR.scaling_parameters(overflows)
    with pytest.raises(ValueError, match="layer_type"):
        MR.scaling_parameters(load_model("Llama-3.1-8B"), layer_type=["full_attention"])
    with pytest.raises(ValueError, match="layer_type 'chunked_attention' is not a layer type"):
        MR.rotary_dim(load_model("Llama-3.1-8B"), layer_type="chunked_attention")


def test_rope_frequencies_of_a_model_read_its_kept_parameters():
    model = load_model("Qwen2.5-7B-Instruct")
    inv, af = rope.rope_frequencies(model, 4096)
    want = rope.rope_frequencies(dict(model), 4096)
    assert (inv == want[0]).all() and af == want[1]


def test_the_small_readers():
    cfg = {"head_dim": 64, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5},
           "max_position_embeddings": 8192}
    assert MR.rope_theta(cfg) == 5e5 and MR.rope_theta({"head_dim": 64}) == 10_000.0
    assert MR.max_position_embeddings(cfg) == 8192
    with pytest.raises(ValueError, match="^config is missing 'max_position_embeddings'$"):
        MR.max_position_embeddings({"head_dim": 64})
    with pytest.raises(ValueError, match="rope_parameters.rope_theta"):
        MR.rope_theta({"rope_parameters": {"rope_theta": 0.5}})


def test_lessonlib_rope_and_llamacpp_hand_out_the_readers_themselves():
    for name in MR.__all__:
        if name in rope.__all__:
            assert getattr(rope, name) is getattr(MR, name), name
    assert rope.DEFAULT_THETA == MR.DEFAULT_THETA and rope.YARN_BETA_FAST == MR.YARN_BETA_FAST
    assert llamacpp.rope_arguments is MR.llama_cpp_rope_arguments


def _imports(path):
    """The modules a source file imports, relative ones resolved against lessonlib.models."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ["lessonlib", "models"][:len(["lessonlib", "models"]) - node.level + 1] \
                if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{module}.{alias.name}" if module in ("lessonlib", "lessonlib.models")
                      else module for alias in node.names}
    return found


def test_models_rope_imports_no_lesson_module():
    """lessonlib.models.rope may import lessonlib._validate and lessonlib.models, nothing else of
    lessonlib: the lessons import the readers, never the other way round."""
    ours = {m for m in _imports(ROOT / "lessonlib" / "models" / "rope.py")
            if m.startswith("lessonlib")}
    assert ours and ours <= {"lessonlib._validate", "lessonlib.models.Model"}, ours


BAD_INPUTS = [  # a Model is read-only: only the layer type can be bad
    Case(MR.scaling_parameters, args=(load_model("Llama-3.1-8B"),), id="scaling_parameters[Model]",
         bad={"layer_type": texts(none_ok=True) | st.just("slidng_attention")}),
    Case(MR.rotary_dim, args=(load_model("Llama-3.1-8B"),), id="rotary_dim[Model]",
         bad={"layer_type": texts(none_ok=True) | st.just("slidng_attention")}),
    Case(MR.rope_parameters, args=(load_model("Llama-3.1-8B"),), id="rope_parameters[Model]",
         bad={"layer_type": texts(none_ok=True) | st.just("slidng_attention")}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
