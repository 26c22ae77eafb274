#!/usr/bin/python3
"""PyTorch side of bench/amp.lua: one training step of the MLP 784-512-256-10 (ReLU, cross-entropy,
SGD lr 0.05 momentum 0.9) at batch 64 on random data, in float32 and under CPU autocast (bfloat16),
and the ratio float32 / bfloat16. PyTorch 1.13 has no CPU GradScaler (bfloat16 needs no loss
scaling), so its AMP step is the autocast step. Median milliseconds over samples.

Usage: /usr/bin/python3 bench/torch_amp.py [--threads 2] [--tag _t2]
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def bench(fn, iters, samples):
    fn(max(1, iters // 10))
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn(iters)
        out.append((time.perf_counter() - t0) / iters)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tag", default="")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--iters", type=int, default=100)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)

    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.rand(64, 784)
    y = torch.randint(0, 10, (64,))

    def fp32_step(n):
        for _ in range(n):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    def bf16_step(n):
        for _ in range(n):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    t = {}
    for name, fn in (("mlp_step_fp32", fp32_step), ("mlp_step_bf16_autocast", bf16_step)):
        t[name] = bench(fn, a.iters, a.samples)
        print(f"RESULT name=torch_{name}{a.tag} value={t[name] * 1e3:.4g} unit=ms threads={torch.get_num_threads()}",
              flush=True)
    ratio = t["mlp_step_fp32"] / t["mlp_step_bf16_autocast"]
    print(f"RESULT name=torch_mlp_bf16_autocast_speedup{a.tag} value={ratio:.4g} unit=x", flush=True)


if __name__ == "__main__":
    main()
