#!/usr/bin/python3
"""PyTorch side of bench/conv.lua: Conv2d(32 -> 64, 3x3, padding 1) on 64x32x14x14 and
Conv2d(1 -> 32, 3x3, padding 1) on 64x1x28x28 (the demo CNN's two convolutions; the first's
input needs no gradient), forward alone (no grad) and forward + backward, and one SGD step of
the whole demo CNN at batch 64. Median milliseconds over samples.

Usage: OPENBLAS_CORETYPE=SkylakeX OMP_PROC_BIND=true /usr/bin/python3 bench/torch_conv.py [--threads 2]
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
    out.sort()
    return statistics.median(out), out[0], out[-1]


def fwd_case(conv, x):
    def f(n):
        with torch.no_grad():
            for _ in range(n):
                conv(x)
    return f


def fwd_bwd_case(conv, x):
    def f(n):
        for _ in range(n):
            conv.zero_grad(set_to_none=True)
            x.grad = None
            conv(x).sum().backward()
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tag", default="")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("only", nargs="?", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)

    conv2 = nn.Conv2d(32, 64, 3, padding=1)
    x2 = torch.randn(64, 32, 14, 14, requires_grad=True)
    conv1 = nn.Conv2d(1, 32, 3, padding=1)
    x1 = torch.randn(64, 1, 28, 28)

    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    xb = torch.rand(64, 1, 28, 28)
    yb = torch.randint(0, 10, (64,))

    def cnn_step(n):
        for _ in range(n):
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    cases = (("conv2_fwd", fwd_case(conv2, x2), 20), ("conv2_fwd_bwd", fwd_bwd_case(conv2, x2), 10),
             ("conv1_fwd", fwd_case(conv1, x1), 20), ("conv1_fwd_bwd", fwd_bwd_case(conv1, x1), 10),
             ("cnn_step", cnn_step, 10))
    for name, fn, iters in cases:
        if a.only and a.only not in name:
            continue
        med, lo, hi = bench(fn, iters, a.samples)
        print(f"RESULT name=torch_{name}{a.tag} value={med * 1e3:.4g} unit=ms min={lo * 1e3:.4g} max={hi * 1e3:.4g} "
              f"threads={torch.get_num_threads()}", flush=True)


if __name__ == "__main__":
    main()
