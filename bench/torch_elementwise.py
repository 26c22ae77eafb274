#!/usr/bin/python3
"""PyTorch reference for bench/elementwise.lua: c = a + b, a.exp(), a.sum() on 1e7 float32 (ms).
Usage: /usr/bin/python3 bench/torch_elementwise.py [--threads N]"""
import argparse
import statistics
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
a = ap.parse_args()
torch.set_num_threads(a.threads)
x, y = torch.rand(10_000_000), torch.rand(10_000_000)
print(f"# torch {torch.__version__} threads={torch.get_num_threads()}")
for name, fn in [("add", lambda: x + y), ("exp", lambda: x.exp()), ("sum", lambda: x.sum())]:
    for _ in range(3):
        fn()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20):
            fn()
        ts.append((time.perf_counter() - t0) / 20)
    print(f"RESULT name=torch_elementwise_{name} value={statistics.median(ts) * 1e3:.4g} unit=ms "
          f"min={min(ts) * 1e3:.2f} max={max(ts) * 1e3:.2f} threads={a.threads}", flush=True)
