"""lessonlib: the tested numerics behind the attention and long-context notebooks.

Modules (import the one you need; importing the package does nothing else). Each public name's
arguments, shapes, dtypes, units and errors are in its docstring, which ``make docs`` builds
into the reference (build/docs/); docs/CONTRACT.md holds the conventions and semantics the
modules share, and a paragraph on each:
  softmax      online softmax, step traces, the online attention row (with a learned sink)
  attention    masks, naive and tiled (FlashAttention-style) attention in numpy
  traffic      memory-traffic, score-matrix and long-context cost accounting
  kernel_plan  the Triton kernel's tile plan and tile codes in plain Python (no triton needed)
  triton_attention   the Triton FlashAttention kernel (torch tensors)
  engines      engines' own rules: vLLM's attention-backend choice, llama.cpp's context shift
               and the tokens its cache holds after shifting
  rope         RoPE frequencies and every scaling variant, read from config.json dicts
  kv_cache     KV-cache bytes per token, whole-cache sizing by each engine's rule, llama.cpp's
               compute buffer, GQA head maps and MLA's absorbed scores
  streaming    sliding-window ring buffer, receptive field, StreamingLLM sink cache
  needles      needle-in-a-haystack prompts, grids and an example model
  kvtask, tinylm, tinylm_results   notebook 10's task, its tiny model (torch) and the
               committed results (numpy only)
  models       a model read once (``load_model`` -> ``Model``): the one place config keys are
               read (models.shape, models.rope, models.tiny, models.describe), and the files
               read from: models.configs (real models' config.json files, by name),
               models.gguf (GGUF files read and written), models.weights (the weights
               counted from a config)
  inspect_model, cli   the report of `python -m lessonlib inspect` and its command line
  runtime, requires   which packages this platform gets, and the %%requires cell magic
  plots, widgets, checks   the notebooks' figures, sliders and exercise checks, one module
               per topic each (importing plots or widgets loads matplotlib, widgets ipywidgets;
               checks needs neither)

Every public function checks its arguments (lessonlib._validate): a bad one is a ValueError
that names it.
"""

__version__ = "0.1.0"
