"""Train the tiny model of lessonlib.tinylm on lessonlib.kvtask, then fine-tune it at 2x with PI.

The committed checkpoints and logs were made by exactly this command (CPU, 2 threads):

    .venv/bin/python scripts/train_tinylm.py

which writes
    lessonlib/data/tinylm.pt              base model, trained context 256, plain RoPE
    lessonlib/data/tinylm_pi2x.pt         base + a short fine-tune at 512 with PI (linear, s = 2)
    lessonlib/data/tinylm_train_log.csv   step, phase, lr, train loss, answer accuracy, eval
                                          (loss and retrieval accuracy on held-out documents)
    lessonlib/data/tinylm_train_log.json  the settings, the timings and the final numbers

The schedule is a curriculum: the first 300 of the 1,000 base steps use 64-token documents, where
the retrieval circuit forms within about 150 steps; trained at 256 tokens from the first step,
the same model was still near chance (0.02-0.3 held-out retrieval) after 600-3,000 steps. The
weights are saved as float16, and every number in the log after training (the final evaluation,
the fine-tune's starting point) is that of the saved weights, loaded back.

Seeds are fixed (torch.manual_seed, and every batch is kvtask.training_batch((seed, step), ...)),
so a rerun on the same machine reproduces the weights; a different CPU or thread count may differ
in the last bits (float reductions are ordered differently), not in the results.
"""
import argparse
import ctypes
import csv
import json
import math
import os
import sys
import time

# Under a shared, oversubscribed CPU, OpenMP threads that spin while they wait cost 2-3x in wall
# time; passive waiting costs little on a quiet machine. Set before torch loads its OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402

from lessonlib import kvtask
from lessonlib.tinylm import (DEFAULT_CONFIG, TinyLM, answer_accuracy, load_tinylm, save_tinylm,
                             token_losses, with_rope_scaling)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "lessonlib", "data")
EVAL_SEED = 999  # held-out documents: training batches use seeds (TRAIN_SEED or FT_SEED, step)
TRAIN_SEED, FT_SEED = 1, 2


def keep_freed_memory():
    """Ask glibc to keep freed blocks instead of returning them to the OS: every step allocates
    the same few-MB activations, and fresh pages cost a page fault each (2-5x slower steps)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD: its maximum, 32 MiB
        libc.mallopt(-1, 2 ** 30)  # M_TRIM_THRESHOLD
    except OSError:
        pass


def lr_at(step, steps, peak, warmup):
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def make_optimizer(model, lr, weight_decay):
    decay = [p for n, p in model.named_parameters() if p.ndim == 2 and "embed" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.ndim == 2 and "embed" not in n)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95))


@torch.no_grad()
def evaluate(model, length, n_docs, rope=None):
    """(mean token loss, retrieval accuracy) on held-out retrieval documents of ``length``."""
    model.eval()
    tokens = torch.from_numpy(kvtask.retrieval_batch(EVAL_SEED, length, n_docs))
    logits = model(tokens, rope=rope)
    loss = token_losses(logits, tokens).mean().item()
    acc = answer_accuracy(logits, tokens, torch.full((n_docs, 1), length - 1))
    model.train()
    return loss, acc


def train(model, *, phase, seed, steps, batch, length, lr, warmup, weight_decay, answer_weight,
          eval_every, eval_docs, log, warm_steps=0, warm_length=None, rope=None):
    opt = make_optimizer(model, lr, weight_decay)
    model.train()
    t0, c0 = time.perf_counter(), time.process_time()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, lr, warmup)
        n = warm_length if step < warm_steps else length
        tokens, answers = kvtask.training_batch((seed, step), batch, n)
        tokens, answers = torch.from_numpy(tokens), torch.from_numpy(answers)
        logits = model(tokens, rope=rope)
        losses = token_losses(logits, tokens)  # (B, n - 1): position t predicts t + 1
        # the language-model loss plus the answers' mean loss: the few answers get as much
        # gradient as the thousands of filler words
        loss = losses.mean() + answer_weight * losses[answers[:, 1:]].mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():
            pred = logits[:, :-1].argmax(-1)
            hit = (pred == tokens[:, 1:])[answers[:, 1:]]
        row = {"phase": phase, "step": step + 1, "lr": round(opt.param_groups[0]["lr"], 7),
               "train_loss": round(losses.mean().item(), 5),
               "train_answer_loss": round(losses[answers[:, 1:]].mean().item(), 5),
               "train_answer_acc": round(hit.float().mean().item(), 5),
               "eval_loss": "", "eval_acc": "", "seconds": round(time.perf_counter() - t0, 1),
               "cpu_seconds": round(time.process_time() - c0, 1)}
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            el, ea = evaluate(model, length, eval_docs, rope=rope)
            row["eval_loss"], row["eval_acc"] = round(el, 5), round(ea, 5)
            print(f"[{phase}] step {step + 1:4d}  loss {row['train_loss']:.3f}  answer acc "
                  f"{row['train_answer_acc']:.2f}  eval loss {el:.3f}  eval acc {ea:.3f}  "
                  f"{row['seconds']:.0f} s ({row['cpu_seconds']:.0f} s CPU)", flush=True)
        log.append(row)
    model.eval()
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--warm-steps", type=int, default=300, help="first steps on short documents")
    ap.add_argument("--warm-length", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--answer-weight", type=float, default=1.0)
    ap.add_argument("--ft-steps", type=int, default=120)
    ap.add_argument("--ft-batch", type=int, default=16)
    ap.add_argument("--ft-lr", type=float, default=5e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default="{}", help="JSON overrides of tinylm.DEFAULT_CONFIG")
    ap.add_argument("--out", default=DATA)
    args = ap.parse_args(argv)

    keep_freed_memory()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    log, t_start = [], time.perf_counter()
    settings = dict(vars(args), out=os.path.relpath(os.path.abspath(args.out), ROOT))

    model = TinyLM({**DEFAULT_CONFIG, **json.loads(args.model)})
    t_base = train(model, phase="base", seed=TRAIN_SEED, steps=args.steps, batch=args.batch,
                   length=256, lr=args.lr, warmup=50, weight_decay=0.1,
                   answer_weight=args.answer_weight, eval_every=50, eval_docs=256, log=log,
                   warm_steps=args.warm_steps, warm_length=args.warm_length)
    # the committed weights are float16: evaluate and fine-tune what a user loads
    save_tinylm(model, os.path.join(args.out, "tinylm.pt"))
    model = load_tinylm(os.path.join(args.out, "tinylm.pt"))
    base_loss, base_acc = evaluate(model, 256, 512)

    # PI fine-tune: positions read as m / 2 (rope_type linear, factor 2), documents of 512.
    ft = TinyLM(with_rope_scaling(model.config, {"rope_type": "linear", "factor": 2.0}))
    ft.config["max_position_embeddings"] = 512
    ft.config["original_max_position_embeddings"] = 256
    ft.load_state_dict(model.state_dict())
    t_ft = train(ft, phase="pi2x", seed=FT_SEED, steps=args.ft_steps, batch=args.ft_batch,
                 length=512, lr=args.ft_lr, warmup=10, weight_decay=0.1,
                 answer_weight=args.answer_weight, eval_every=20, eval_docs=128, log=log)
    save_tinylm(ft, os.path.join(args.out, "tinylm_pi2x.pt"))
    ft = load_tinylm(os.path.join(args.out, "tinylm_pi2x.pt"))
    ft_loss, ft_acc = evaluate(ft, 512, 512)

    fields = ["phase", "step", "lr", "train_loss", "train_answer_loss", "train_answer_acc",
              "eval_loss", "eval_acc", "seconds", "cpu_seconds"]
    with open(os.path.join(args.out, "tinylm_train_log.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(log)
    summary = {
        "command": "python scripts/train_tinylm.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "settings": settings, "torch": torch.__version__, "threads": torch.get_num_threads(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "base": {"seconds": round(t_base, 1), "eval_length": 256, "eval_docs": 512,
                 "eval_loss": round(base_loss, 4), "retrieval_acc": round(base_acc, 4)},
        "pi2x": {"seconds": round(t_ft, 1), "eval_length": 512, "eval_docs": 512,
                 "eval_loss": round(ft_loss, 4), "retrieval_acc": round(ft_acc, 4)},
        "total_seconds": round(time.perf_counter() - t_start, 1),
        "chance_acc": 1 / kvtask.N_VALUES,
    }
    with open(os.path.join(args.out, "tinylm_train_log.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
