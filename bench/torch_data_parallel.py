"""PyTorch's side of bench/data_parallel.lua: the same MLP training step (784-512-256-10, SGD
momentum, batch 256) with --threads kernel threads. PyTorch's DataParallel does not split work
between CPU threads (without CUDA it calls the module), so this is what a PyTorch user gets."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--tag", default="")
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(1)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.rand(256, 784)
y = torch.randint(0, 10, (256,))


def steps(n):
    for _ in range(n):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


steps(10)
n = 1
while True:
    t0 = time.perf_counter()
    steps(n)
    el = time.perf_counter() - t0
    if el > 0.05:
        break
    n *= 4
n = max(1, int(n * 0.5 / el))
samples = []
for _ in range(7):
    t0 = time.perf_counter()
    steps(n)
    samples.append((time.perf_counter() - t0) / n)
samples.sort()
print("RESULT name=torch_dp_mlp_step%s value=%.6g unit=ms min=%.4g max=%.4g"
      % (a.tag, samples[3] * 1e3, samples[0] * 1e3, samples[-1] * 1e3))
