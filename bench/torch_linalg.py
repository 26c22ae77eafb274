#!/usr/bin/python3
"""torch.linalg's factorisations and solves (ms a call), the PyTorch side of bench/linalg.lua:
one matrix of a few hundred rows and batches of 1000 8 x 8 matrices.

Usage: /usr/bin/python3 torch_linalg.py [--threads 2] [--tag X]
"""
import argparse
import statistics
import time

import torch


def timed(f, seconds=0.2, samples=5):
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        el = time.perf_counter() - t0
        if el > 0.05:
            break
        n *= 4
    iters = max(1, int(n * seconds / el))
    ts = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(iters):
            f()
        ts.append((time.perf_counter() - t0) / iters)
    return statistics.median(ts), min(ts), max(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tag", default="")
    o = ap.parse_args()
    torch.set_num_threads(o.threads)
    torch.manual_seed(0)
    L = torch.linalg
    a = torch.randn(256, 256)
    spd = a @ a.t() + torch.eye(256) * 256
    tall = torch.randn(512, 256)
    rhs = torch.randn(256, 16)
    small = torch.randn(1000, 8, 8)
    small_spd = small @ small.transpose(1, 2) + torch.eye(8) * 8
    cases = [
        ("inv_256", lambda: L.inv(a)),
        ("solve_256x16", lambda: L.solve(a, rhs)),
        ("det_1000x8x8", lambda: L.det(small)),
        ("cholesky_256", lambda: L.cholesky(spd)),
        ("cholesky_1000x8x8", lambda: L.cholesky(small_spd)),
        ("qr_512x256", lambda: L.qr(tall)),
        ("eigh_256", lambda: L.eigh(spd)),
        ("eigh_1000x8x8", lambda: L.eigh(small_spd)),
        ("svd_256", lambda: L.svd(a, full_matrices=False)),
        ("svd_1000x8x8", lambda: L.svd(small, full_matrices=False)),
    ]
    print(f"# torch {torch.__version__} threads={torch.get_num_threads()}", flush=True)
    for name, f in cases:
        med, lo, hi = timed(f)
        print(f"RESULT name=torch_linalg_{name}{o.tag} value={med * 1e3:.6g} unit=ms "
              f"min={lo * 1e3:.4g} max={hi * 1e3:.4g} threads={o.threads}", flush=True)


if __name__ == "__main__":
    main()
