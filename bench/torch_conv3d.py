#!/usr/bin/python3
"""PyTorch side of bench/conv3d.lua: Conv3d(8 -> 16, 3x3x3, padding 1) on 4x8x16x16x16, forward
alone (no grad) and forward + backward, and MaxPool3d(2) forward + backward on 4x16x16x16x16.
Median milliseconds over samples.

Usage: /usr/bin/python3 bench/torch_conv3d.py [--threads 2] [--tag _t2]
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn


def bench(fn, iters, samples):
    fn(max(1, iters // 10))
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn(iters)
        out.append((time.perf_counter() - t0) / iters)
    out.sort()
    return statistics.median(out), out[0], out[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tag", default="")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("only", nargs="?", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    conv = nn.Conv3d(8, 16, 3, padding=1)
    x = torch.randn(4, 8, 16, 16, 16, requires_grad=True)
    pool = nn.MaxPool3d(2)
    xp = torch.randn(4, 16, 16, 16, 16, requires_grad=True)

    def conv3d_fwd(n):
        with torch.no_grad():
            for _ in range(n):
                conv(x)

    def conv3d_fwd_bwd(n):
        for _ in range(n):
            conv.zero_grad(set_to_none=True)
            x.grad = None
            conv(x).sum().backward()

    def max_pool3d_fwd_bwd(n):
        for _ in range(n):
            xp.grad = None
            pool(xp).sum().backward()

    for name, fn, iters in (("conv3d_fwd", conv3d_fwd, 20), ("conv3d_fwd_bwd", conv3d_fwd_bwd, 10),
                            ("max_pool3d_fwd_bwd", max_pool3d_fwd_bwd, 10)):
        if a.only and a.only not in name:
            continue
        med, lo, hi = bench(fn, iters, a.samples)
        print(f"RESULT name=torch_{name}{a.tag} value={med * 1e3:.4g} unit=ms min={lo * 1e3:.4g} max={hi * 1e3:.4g} "
              f"threads={torch.get_num_threads()}", flush=True)


if __name__ == "__main__":
    main()
