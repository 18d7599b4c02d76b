"""bench/pytorch_step.py: the PyTorch training step of the same models, for make bench.

Usage: /usr/bin/python3 bench/pytorch_step.py 124m|default [--warmup N] [--steps N]
       /usr/bin/python3 bench/pytorch_step.py --blas   (which BLAS torch loads)

The same architecture as train_gpt2.c: GPT-2 (pre-LN blocks, GELU with the tanh
approximation, biases, learned position embedding, output head tied to the token
embedding, vocabulary padded to Vp), float32. One step = forward with the loss,
zero_grad, backward, clip the gradient norm to 1, AdamW step: train_gpt2.c's step.
  124m:    L=12 NH=12 C=768 maxT=1024 V=50257 Vp=50304, B=4 T=64
  default: L=4 NH=4 C=128 maxT=64 V=65 Vp=128, B=12 T=64 (nanoGPT's baby Shakespeare
           CPU config, whose head has 65 outputs instead of 128)
Run it with the tuned settings of bench/README.md (run_bench.sh does):
OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000
MALLOC_TOP_PAD_=1073741824, OPENBLAS_CORETYPE unset; 2 threads.
Prints the median ms per step after warm-up, and "@ torch.<shape>.ms <value>" for
run_bench.sh.
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPES = {
    "124m": dict(L=12, NH=12, C=768, maxT=1024, V=50257, Vp=50304, B=4, T=64, warmup=2, steps=5),
    "default": dict(L=4, NH=4, C=128, maxT=64, V=65, Vp=128, B=12, T=64, warmup=10, steps=50),
}


class Block(nn.Module):
    def __init__(self, C, NH, maxT):
        super().__init__()
        self.NH = NH
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)
        self.gelu = nn.GELU(approximate="tanh")
        self.register_buffer("mask", torch.tril(torch.ones(maxT, maxT, dtype=torch.bool)).view(1, 1, maxT, maxT))

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, self.NH, hs).transpose(1, 2)
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        x = x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))
        return x


class GPT(nn.Module):
    def __init__(self, L, NH, C, maxT, Vp):
        super().__init__()
        self.wte = nn.Embedding(Vp, C)
        self.wpe = nn.Embedding(maxT, C)
        self.h = nn.ModuleList([Block(C, NH, maxT) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)
        for name, p in self.named_parameters():  # GPT-2's initialisation
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("c_proj.weight") or name.endswith("mlp_proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif "ln" in name and name.endswith("weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        B, T = idx.shape
        pos = torch.arange(T, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def blas_library():
    """The BLAS library this process loaded for torch's matmuls, and what kind it is."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    paths = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path).lower()
            if ("blas" in name or "mkl" in name or "blis" in name) and path not in paths:
                paths.append(path)
    for path in paths:
        real = os.path.realpath(path).lower()
        if "openblas" in real:
            return "OpenBLAS", path
        if "mkl" in real:
            return "MKL", path
        if "blis" in real:
            return "BLIS", path
    if paths:
        return "reference", paths[0]  # Debian's netlib libblas3: unoptimised Fortran loops
    return "unknown", "(none found)"


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--blas":
        kind, path = blas_library()
        print(f"{kind} {path} -> {os.path.realpath(path) if path.startswith('/') else path}")
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    s = dict(SHAPES[args.shape])
    if args.warmup is not None:
        s["warmup"] = args.warmup
    if args.steps is not None:
        s["steps"] = args.steps
    torch.set_num_threads(args.threads)
    torch.manual_seed(1337)
    env = {k: os.environ.get(k, "(unset)") for k in
           ("OMP_WAIT_POLICY", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "OPENBLAS_CORETYPE")}
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads; " + " ".join(f"{k}={v}" for k, v in env.items()))
    L, NH, C, maxT, V, Vp, B, T = (s[k] for k in ("L", "NH", "C", "maxT", "V", "Vp", "B", "T"))
    model = GPT(L, NH, C, maxT, Vp)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99), eps=1e-8)
    nparams = sum(p.numel() for p in model.parameters())
    flops = 6 * B * T * (12 * L * C * C + Vp * C) + 6 * L * B * T * T * C
    print(f"{args.shape}: L={L} NH={NH} C={C} maxT={maxT} V={V} Vp={Vp}, B={B} T={T}, {nparams / 1e6:.2f}M parameters; "
          f"{s['warmup']} warm-up + {s['steps']} timed steps (forward, zero_grad, backward, clip 1.0, AdamW)")
    g = torch.Generator().manual_seed(42)
    times, cpu_times = [], []  # wall clock; the process's CPU time (all threads)
    for step in range(s["warmup"] + s["steps"]):
        tok = torch.randint(0, V, (B, T + 1), generator=g)
        x, y = tok[:, :-1].contiguous(), tok[:, 1:].contiguous()
        t0, c0 = time.perf_counter(), time.process_time()
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        if step >= s["warmup"]:
            times.append(dt)
            cpu_times.append(time.process_time() - c0)
        if s["warmup"] + s["steps"] <= 12 or step < 2:
            print(f"  step {step}{' (warm-up)' if step < s['warmup'] else ''}: loss {loss.item():.6f}, {dt * 1e3:.1f} ms")
    med = statistics.median(times)
    print(f"PyTorch step: median {med * 1e3:.2f} ms (min {min(times) * 1e3:.2f}, max {max(times) * 1e3:.2f}) over "
          f"{len(times)} steps; {B * T / med:.0f} tokens/s; {flops / med / 1e9:.1f} GFLOP/s")
    kind, path = blas_library()
    print(f"BLAS: {kind} ({os.path.realpath(path) if path.startswith('/') else path})")
    print(f"CPU time per step (all threads together): median {statistics.median(cpu_times) * 1e3:.2f} ms")
    print(f"@ torch.{args.shape}.ms {med * 1e3:.6f}")
    print(f"@ torch.{args.shape}.cpu_ms {statistics.median(cpu_times) * 1e3:.6f}")
    print(f"@ torch.blas_optimised {int(kind in ('OpenBLAS', 'MKL', 'BLIS'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
