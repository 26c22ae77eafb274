#!/usr/bin/python3
"""PyTorch's side of bench/sequence.lua: one training step (forward, backward, Adam) of a 2-layer
LSTM (hidden 128) and of a 2-layer Transformer encoder (d_model 128, 4 heads, feed-forward 256),
batch 32 of sequences of 32, a linear head and an MSE loss (ms per step).
Usage: /usr/bin/python3 bench/torch_sequence.py [--threads N] [--tag SUFFIX] [--device cuda]"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--tag", default="")
ap.add_argument("--device", default="cpu")
a = ap.parse_args()
dev = torch.device(a.device)
gpu = dev.type == "cuda"
if gpu:
    a.tag = "_cuda" + a.tag
torch.set_num_threads(a.threads)
torch.manual_seed(0)
N, T, D = 32, 32, 128
x = torch.randn(N, T, D).to(dev)
y = torch.randn(N, T, 1).to(dev)


class Head(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body, self.head = body, nn.Linear(D, 1)

    def forward(self, x):
        out = self.body(x)
        return self.head(out[0] if isinstance(out, tuple) else out)


def sync():
    if gpu:
        torch.cuda.synchronize()


def bench(name, model):
    model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    sync()
    n = 1
    while True:  # iterations for about 0.5 s a sample
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        el = time.perf_counter() - t0
        if el > 0.05:
            n = max(1, int(n * 0.5 / el))
            break
        n *= 4
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        ts.append((time.perf_counter() - t0) / n)
    print(f"RESULT name=torch_{name}_step{a.tag} value={statistics.median(ts) * 1e3:.4g} unit=ms "
          f"min={min(ts) * 1e3:.4g} max={max(ts) * 1e3:.4g} threads={a.threads}", flush=True)


print(f"# torch {torch.__version__} threads={torch.get_num_threads()}" + (f" {torch.cuda.get_device_name(0)}" if gpu else ""))
bench("lstm", Head(nn.LSTM(D, D, num_layers=2, batch_first=True)))
bench("transformer", Head(nn.TransformerEncoder(
    nn.TransformerEncoderLayer(D, 4, dim_feedforward=2 * D, dropout=0.1, batch_first=True), 2,
    enable_nested_tensor=False)))
