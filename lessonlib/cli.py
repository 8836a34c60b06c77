"""The command line: ``python -m lessonlib inspect SOURCE [-c N ...] [--engine E ...]
[--kv-dtype T ...] [--seqs N] [--gpu-memory SIZE] [--gpu NAME] [--weights SIZE] [--in-flight N]
[--json]``.

SOURCE is a config.json file, a model folder holding one, a shipped config's name
(``lessonlib.models.configs.config_names()``) or a ``.gguf`` file (its metadata, memory-mapped: a
multi-GB file inspects in well under a second). The report is ``lessonlib.inspect_model``'s:
text by default, one JSON object with ``--json``.

Bad input (a folder without a config, JSON that does not parse, a GGUF of an unknown
architecture, a context that is not a number, a config key that is missing or wrong) prints one
line naming what is wrong and where, and exits with status 2; no traceback.
"""
import argparse
import json
import os
import sys

from . import inspect_model as im

__all__ = ["main", "load_source", "UsageError"]

DEFAULT_CONTEXTS = (4096, 32768, 131072)
PROG = "python -m lessonlib"


class UsageError(Exception):
    """Bad input from the command line: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise UsageError(f"{message} (see {self.prog} --help)")


def _parser():
    p = _Parser(prog=PROG, description="lessonlib's command line.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    q = sub.add_parser(
        "inspect", prog=f"{PROG} inspect",
        help="what a model's KV cache and context cost in each engine",
        description="Attention shape, KV cache per engine at each context, RoPE scaling in "
                    "plain words, the longest context each engine derives, with "
                    "--gpu-memory how many tokens and sequences fit beside the weights, and "
                    "with --gpu the tokens per second its memory bandwidth allows a decode.")
    q.add_argument("source", metavar="SOURCE",
                   help="config.json, a model folder holding one, a .gguf file, or a shipped "
                        "config's name (e.g. Llama-3.1-8B)")
    q.add_argument("--context", "-c", action="append", metavar="N",
                   help="tokens per sequence: 32768, 32K or 1M (K = 1,024 tokens); repeat for "
                        "several; default 4K, 32K and 128K")
    q.add_argument("--engine", action="append", choices=im.ENGINE_CHOICES,
                   help="llama.cpp, vllm or ideal (exact tokens); repeat; default all three")
    q.add_argument("--kv-dtype", action="append", choices=im.KV_TYPE_CHOICES, dest="kv_dtype",
                   help="cache element type: f16, bf16, q8_0, q4_0 (llama.cpp) or fp8 (vLLM); "
                        "repeat; default f16")
    q.add_argument("--seqs", default="1", metavar="N",
                   help="sequences (requests) of each context at once; default 1")
    q.add_argument("--gpu-memory", metavar="SIZE",
                   help="GPU memory for the budget, with a unit: 24GiB, 80GB")
    q.add_argument("--gpu", choices=im.GPU_CHOICES, metavar="NAME",
                   help="a GPU for the decode roofline: the bytes each step reads and the "
                        "tokens/s its memory bandwidth allows; one of "
                        + ", ".join(im.GPU_CHOICES))
    q.add_argument("--weights", metavar="SIZE",
                   help="the weights' size for the budget and the roofline, if not counted "
                        "from the source")
    q.add_argument("--in-flight", metavar="N", dest="in_flight",
                   help="vLLM's tokens scheduled but not settled, which sliding-window layers "
                        "keep blocks for; default vllm serve's: 2 x max_num_batched_tokens "
                        "for the --gpu-memory given (4,096 under 70 GiB)")
    q.add_argument("--json", action="store_true", help="one JSON object instead of text")
    return p


def _read_json(path):
    from .models.configs import config_from_text
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise UsageError(f"{path}: cannot read it ({err.strerror})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a UTF-8 text file (a config.json is JSON text)") from None
    try:
        return config_from_text(text, path)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _is_gguf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False


def load_source(source):
    """(config dict, source description, weights bytes or None) for a SOURCE argument; bad input
    raises ``UsageError`` with the line to print."""
    if os.path.isdir(source):
        path = os.path.join(source, "config.json")
        if not os.path.isfile(path):
            ggufs = sorted(f for f in os.listdir(source) if f.endswith(".gguf"))
            hint = f"; for its GGUF file give the file: {os.path.join(source, ggufs[0])}" \
                if ggufs else ""
            raise UsageError(f"{source}: this folder has no config.json{hint}")
        return _read_json(path), {"path": path, "format": "config.json"}, None
    if os.path.isfile(source):
        if source.endswith(".gguf") or _is_gguf(source):
            from .models import gguf
            model = gguf.read_gguf(source)
            return model.config, {"path": source, "format": "GGUF",
                                  "architecture": model.architecture,
                                  "tensor_bytes": model.tensor_bytes}, model.tensor_bytes
        return _read_json(source), {"path": source, "format": "config.json"}, None
    from .models.configs import config_names, load_config
    if os.sep in source or source.endswith((".json", ".gguf")):
        raise UsageError(f"{source}: no such file or folder")
    try:
        return load_config(source), {"name": source, "format": "shipped config"}, None
    except ValueError:
        raise UsageError(f"{source}: no such file or folder, and not a shipped config (those "
                         f"are {', '.join(config_names())})") from None


def _weights(config, given, counted):
    if given is not None:
        return im.parse_size(given, "--weights"), "given with --weights"
    if counted is not None:
        return counted, "the GGUF file's tensor data"
    from .models import weights
    try:
        w = weights.weight_bytes(config)
    except ValueError as err:
        raise UsageError(f"cannot count the weights from this config ({err}); give their size "
                         "with --weights, e.g. --weights 15GiB") from None
    return w.bytes, ("counted from the config, as the published checkpoint stores them (a "
                     "quantized GGUF is smaller: inspect the file, or give --weights): "
                     + "; ".join(w.assumptions))


def run(args):
    """The inspect command on parsed arguments: (text to print)."""
    config, source, counted = load_source(args.source)
    contexts = [im.parse_context(c, "--context") for c in (args.context or DEFAULT_CONTEXTS)]
    try:
        n_seq = im.parse_context(args.seqs, "--seqs")
    except ValueError:
        raise UsageError(f"--seqs must be a whole number of sequences, got {args.seqs!r}") from None
    gpu = im.parse_size(args.gpu_memory, "--gpu-memory") if args.gpu_memory else None
    in_flight = None
    if args.in_flight is not None:
        if not args.in_flight.strip().isdigit():
            raise UsageError(f"--in-flight must be a whole number of tokens, got {args.in_flight!r}")
        in_flight = int(args.in_flight)
    weights, where = (None, None)
    if gpu is not None or args.gpu is not None:
        weights, where = _weights(config, args.weights, counted)
    rep = im.report(config, contexts, engines=args.engine or im.ENGINE_CHOICES,
                    kv_types=args.kv_dtype or ("f16",), n_seq=n_seq, gpu_memory=gpu,
                    weights_bytes=weights, weights_source=where, source=source,
                    in_flight_tokens=in_flight, gpu=args.gpu)
    return json.dumps(rep, indent=2) if args.json else im.format_report(rep)


def main(argv=None, *, stdout=None, stderr=None):
    """Run the command line; returns the exit status (0, or 2 for bad input)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    prog = f"{PROG} inspect" if argv[:1] == ["inspect"] else PROG
    try:
        args = _parser().parse_args(argv)
        text = run(args)
    except UsageError as err:
        print(f"{prog}: error: {err}", file=stderr)
        return 2
    except ValueError as err:
        where = getattr(args, "source", "") if "args" in locals() else ""
        print(f"{prog}: error: {where}: {err}", file=stderr)
        return 2
    except SystemExit as exit_:  # --help
        return exit_.code if isinstance(exit_.code, int) else 0
    try:
        print(text, file=stdout)
        stdout.flush()
    except BrokenPipeError:  # `... | head`: the reader left; not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
    return 0
