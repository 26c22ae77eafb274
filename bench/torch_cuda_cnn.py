"""PyTorch's side of the CNN step of bench/cuda_bench.lua: the Fashion-MNIST CNN training step at
batch 256 on cuda:0, timed with CUDA events. Prints nothing measured when this PyTorch has no CUDA
(Debian's python3-torch is built without it)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

if not torch.cuda.is_available():
    print("no CUDA in this PyTorch: nothing measured")
    raise SystemExit(0)
dev = torch.device("cuda:0")
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.rand(256, 1, 28, 28, device=dev)
y = torch.randint(0, 10, (256,), device=dev)


def step():
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()


scaler = torch.amp.GradScaler("cuda")


def amp_step():
    opt.zero_grad()
    with torch.autocast("cuda"):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


for name, f in (("torch_cuda_cnn_step_b256", step), ("torch_cuda_cnn_step_b256_fp16_autocast", amp_step)):
    f()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(50):
        f()
    e1.record()
    e1.synchronize()
    print("RESULT name=%s value=%.6g unit=ms" % (name, e0.elapsed_time(e1) / 50))
