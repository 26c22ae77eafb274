#!/usr/bin/python3
"""PyTorch side of bench/train.lua: one training step of the MLP 784-512-256-10 (ReLU,
cross-entropy, SGD lr 0.05 momentum 0.9) at batch 64 on random data, and Conv2d(32 -> 64, 3x3,
padding 1) forward + backward on a 64x32x14x14 batch. Median milliseconds over samples.

Usage: /usr/bin/python3 bench/torch_train.py [--threads 2] [--tag _t2]
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def bench(fn, iters, samples):
    fn(max(1, iters // 5))
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
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)

    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.rand(64, 784)
    y = torch.randint(0, 10, (64,))

    def mlp_step(n):
        for _ in range(n):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    conv = nn.Conv2d(32, 64, 3, padding=1)
    xc = torch.randn(64, 32, 14, 14, requires_grad=True)

    def conv_step(n):
        for _ in range(n):
            conv.zero_grad(set_to_none=True)
            xc.grad = None
            conv(xc).sum().backward()

    for name, fn, iters in (("mlp_step", mlp_step, 200), ("conv_fwd_bwd", conv_step, 10)):
        ms = bench(fn, iters, a.samples) * 1e3
        print(f"RESULT name=torch_{name}{a.tag} value={ms:.4g} unit=ms threads={torch.get_num_threads()}", flush=True)


if __name__ == "__main__":
    main()
