"""lessonlib: the tested numerics behind the attention and long-context notebooks.

Modules (import the one you need; importing the package does nothing else):
  softmax      online softmax, step traces, the online attention row (with a learned sink)
  attention    masks, naive and tiled (FlashAttention-style) attention in numpy
  traffic      memory-traffic, score-matrix and long-context cost accounting
  rope         RoPE frequencies and every scaling variant, read from config.json dicts
  kv_cache     KV-cache bytes per token and whole-cache sizing by each engine's rule
  streaming    sliding-window ring buffer, receptive field, StreamingLLM sink cache
  needles      needle-in-a-haystack prompts, grids and an example model
  plots, widgets, checks   the notebooks' figures, sliders and exercise checks
  triton_attention   the Triton FlashAttention kernel (torch tensors)
"""

__version__ = "0.1.0"
