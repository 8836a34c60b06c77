"""How long `python -m lessonlib inspect` takes on a GGUF file of a real model's size.

Writes, under a temporary folder, a GGUF with Llama-3.1-8B's keys, a 128,256-token vocabulary and
280,147 merges (the tokenizer metadata a real file carries) and its 291 tensors at their real
shapes in Q8_0 (8.5 GB of tensor data), the data left as a sparse hole (the file's size is real,
its blocks are not written). Then times lessonlib.models.gguf.read_gguf and the whole report, best
of three. The reader memory-maps the file and reads only the metadata and the few small tensors
it needs, so the time is the metadata's, not the weights'.
"""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import gguf  # noqa: E402

from lessonlib import inspect_model
from lessonlib.models import gguf  # noqa: E402
from lessonlib.models.configs import load_config  # noqa: E402

N_VOCAB, N_MERGES = 128256, 280147


def write(path):
    cfg = load_config("Llama-3.1-8B")
    L, H, hq, hkv, d, ff = 32, 4096, 32, 8, 128, 14336
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(L)
    w.add_context_length(131072)
    w.add_embedding_length(H)
    w.add_feed_forward_length(ff)
    w.add_head_count(hq)
    w.add_head_count_kv(hkv)
    w.add_rope_freq_base(500000.0)
    w.add_rope_dimension_count(d)
    w.add_vocab_size(N_VOCAB)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i}" for i in range(N_VOCAB)])
    w.add_token_types([1] * N_VOCAB)
    w.add_token_merges([f"a{i} b{i}" for i in range(N_MERGES)])
    q8 = gguf.GGMLQuantizationType.Q8_0
    shapes = [("token_embd.weight", (N_VOCAB, H)), ("output.weight", (N_VOCAB, H)),
              ("output_norm.weight", (H,))]
    for il in range(L):
        shapes += [(f"blk.{il}.attn_q.weight", (hq * d, H)), (f"blk.{il}.attn_k.weight", (hkv * d, H)),
                   (f"blk.{il}.attn_v.weight", (hkv * d, H)), (f"blk.{il}.attn_output.weight", (H, hq * d)),
                   (f"blk.{il}.ffn_gate.weight", (ff, H)), (f"blk.{il}.ffn_up.weight", (ff, H)),
                   (f"blk.{il}.ffn_down.weight", (H, ff)), (f"blk.{il}.attn_norm.weight", (H,)),
                   (f"blk.{il}.ffn_norm.weight", (H,))]
    freqs = gguf._llama3_factors(cfg).astype(np.float32)
    w.add_tensor_info("rope_freqs.weight", freqs.shape, freqs.dtype, freqs.nbytes)
    total = freqs.nbytes
    for name, shape in shapes:
        if len(shape) == 1:
            w.add_tensor_info(name, shape, np.dtype(np.float32), shape[0] * 4)
            total += shape[0] * 4
        else:
            nbytes = shape[0] * shape[1] // 32 * 34
            w.add_tensor_info(name, (shape[0], shape[1] // 32 * 34), np.dtype(np.uint8), nbytes,
                              raw_dtype=q8)
            total += nbytes
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    with open(path, "r+b") as f:  # tensor data: a sparse hole of the real size
        f.seek(0, 2)
        start = f.tell()
        align = 32
        start += (-start) % align
        f.truncate(start + total + 4096 * len(shapes))
        f.seek(start)
        f.write(freqs.tobytes())  # the one small tensor the reader reads comes first
    return total


def best(fn, n=3):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "llama-3.1-8b-shaped-q8_0.gguf")
        data = write(path)
        size = os.path.getsize(path)
        read = best(lambda: gguf.read_gguf(path))
        model = gguf.read_gguf(path)
        full = best(lambda: inspect_model.format_report(inspect_model.report(
            gguf.read_gguf(path).config, [4096, 32768, 131072], gpu_memory=24 * 2**30,
            weights_bytes=model.tensor_bytes, weights_source="file")))
        print(f"file {size / 2**30:.2f} GiB ({data / 2**30:.2f} GiB of tensor data, "
              f"{model.n_tensors} tensors, {N_VOCAB:,} tokens, {N_MERGES:,} merges)")
        print(f"read_gguf: {read * 1000:.0f} ms; read + report + text: {full * 1000:.0f} ms "
              "(best of 3)")


if __name__ == "__main__":
    main()
