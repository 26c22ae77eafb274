"""PyTorch beside `lutorch examples/fashion_mnist_mlp.lua --device cuda` (the demo's recipe on a GPU):
the MLP 784-512-256-10, SGD lr 0.05 momentum 0.9, batch 64, 5 epochs, as the example runs it:
images kept as uint8 on the host, each shuffled batch gathered, moved to cuda:0 and made float32
there, loss.item() every step. Prints the seconds of each epoch's training loop and the test
accuracy. Reads Debian's dataset-fashion-mnist files. Prints nothing measured without CUDA.
Usage: python3 bench/torch_cuda_mlp.py [--epochs 5] [--seed 0] [--root DIR]"""
import argparse
import gzip
import statistics
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=5)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--root", default="/usr/share/datasets/fashion-mnist")
a = ap.parse_args()
if not torch.cuda.is_available():
    print("no CUDA in this PyTorch: nothing measured")
    raise SystemExit(0)


def idx(name, offset):
    with gzip.open(f"{a.root}/{name}.gz", "rb") as f:
        return torch.from_numpy(np.frombuffer(f.read(), np.uint8, offset=offset).copy())


Xtr = idx("train-images-idx3-ubyte", 16).view(-1, 784).pin_memory()
Ytr = idx("train-labels-idx1-ubyte", 8).long().pin_memory()
Xte = idx("t10k-images-idx3-ubyte", 16).view(-1, 784)
Yte = idx("t10k-labels-idx1-ubyte", 8).long()
dev = torch.device("cuda:0")
torch.manual_seed(a.seed)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
gen = torch.Generator().manual_seed(a.seed)
n, times = Xtr.shape[0], []
for ep in range(1, a.epochs + 1):
    perm = torch.randperm(n, generator=gen)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(0, n, 64):
        j = perm[i:i + 64]
        x = Xtr[j].to(dev, non_blocking=True).float().div_(255)
        y = Ytr[j].to(dev, non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
    with torch.no_grad():
        model.eval()
        acc = (model(Xte.to(dev).float().div_(255)).argmax(1).cpu() == Yte).float().mean().item()
        model.train()
    print(f"epoch {ep}  {times[-1]:.2f} s  test accuracy {acc:.4f}", flush=True)
print(f"RESULT name=torch_cuda_mlp_epoch value={statistics.median(times[1:] or times):.3f} unit=s "
      f"torch={torch.__version__}")
