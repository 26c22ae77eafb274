#!/usr/bin/python3
"""PyTorch's side of bench/ops.lua: the same calls on the same shapes (us per call, median of 5
samples of about 0.05 s each). Usage: /usr/bin/python3 torch_ops.py [--threads N] [--tag _t1]"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def bench(f):
    n = 1
    while True:  # calibrate: a sample of about 0.05 s
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        el = time.perf_counter() - t0
        if el > 0.01:
            break
        n *= 4
    iters = max(1, int(n * 0.05 / el))
    for _ in range(max(1, iters // 10)):
        f()
    out = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            f()
        out.append((time.perf_counter() - t0) / iters)
    return statistics.median(out), min(out), max(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    x = torch.rand(256, 10)
    y = torch.randint(0, 10, (256,))
    h = torch.rand(64, 512)
    hg = torch.rand(64, 512, requires_grad=True)
    w512, b512 = torch.rand(512), torch.rand(512)
    big = torch.rand(256, 784)
    emb = torch.rand(1000, 64)
    idx = torch.randint(0, 1000, (256,))
    rm, rv = torch.zeros(512), torch.ones(512)
    mask = h > 0.5
    img = torch.rand(16, 8, 32, 32)
    wide = torch.rand(64, 1000)
    w16, b16 = torch.rand(16, 512), torch.rand(16)
    hs = h * 2 - 1
    cases = [
        ("max_dim_256x10", lambda: x.max(1)),
        ("argmax_256x10", lambda: x.argmax(1)),
        ("sum_dim_256x10", lambda: x.sum(1)),
        ("logsumexp_256x10", lambda: x.logsumexp(1)),
        ("log_softmax_256x10", lambda: F.log_softmax(x, 1)),
        ("accuracy_256x10", lambda: x.argmax(1).eq(y).sum()),
        ("nll_loss_256x10", lambda: F.nll_loss(x, y)),
        ("topk5_256x10", lambda: x.topk(5, 1)),
        ("sort_256x10", lambda: x.sort(1)),
        ("layer_norm_64x512", lambda: F.layer_norm(h, (512,), w512, b512)),
        ("layer_norm_fwd_bwd_64x512", lambda: F.layer_norm(hg, (512,), w512, b512).sum().backward()),
        ("batch_norm_train_64x512", lambda: F.batch_norm(h, rm, rv, w512, b512, True)),
        ("gelu_64x512", lambda: F.gelu(h)),
        ("gelu_fwd_bwd_64x512", lambda: F.gelu(hg).sum().backward()),
        ("tanh_64x512", lambda: h.tanh()),
        ("sigmoid_64x512", lambda: h.sigmoid()),
        ("dropout_64x512", lambda: F.dropout(h, 0.5, True)),
        ("clamp_64x512", lambda: h.clamp(0.2, 0.8)),
        ("where_64x512", lambda: torch.where(mask, h, w512)),
        ("sum_rows_256x784", lambda: big.sum(1)),
        ("sum_cols_256x784", lambda: big.sum(0)),
        ("max_256x784", lambda: big.max()),
        ("std_rows_256x784", lambda: big.std(1)),
        ("transpose_copy_256x784", lambda: big.t().contiguous()),
        ("embedding_256_of_1000x64", lambda: F.embedding(idx, emb)),
        ("index_select_256_of_1000x64", lambda: emb.index_select(0, idx)),
        ("cat_2x128x10", lambda: torch.cat([x[:128], x[128:]], 0)),
        ("gt_scalar_64x512", lambda: h.gt(0.5)),
        ("mask_sum_64x512", lambda: mask.sum()),
        ("mul_mask_64x512", lambda: h * mask),
        ("pow2_64x512", lambda: h.pow(2)),
        ("log_64x512", lambda: h.log()),
        ("softplus_64x512", lambda: F.softplus(h)),
        ("logsigmoid_64x512", lambda: F.logsigmoid(h)),
        ("transpose_copy_64x512", lambda: h.t().contiguous()),
        ("flip_64x512", lambda: h.flip(1)),
        ("roll_64x512", lambda: h.roll(3, 1)),
        ("arange_32768", lambda: torch.arange(0, 32768)),
        ("global_avg_pool_16x8x32x32", lambda: F.adaptive_avg_pool2d(img, 1)),
        ("topk5_64x1000", lambda: wide.topk(5, 1)),
        ("elu_64x512", lambda: F.elu(hs)),
        ("leaky_relu_64x512", lambda: F.leaky_relu(hs, 0.2)),
        ("leaky_relu_fwd_bwd_64x512", lambda: F.leaky_relu(hg, 0.2).sum().backward()),
        ("one_minus_64x512", lambda: 1 - h),
        ("pow3_64x512", lambda: h.pow(3)),
        ("pad_16x8x32x32", lambda: F.pad(img, (1, 1, 1, 1))),
        ("interpolate_nearest_16x8x32x32", lambda: F.interpolate(img, scale_factor=2, mode="nearest")),
        ("linear_64x512_to_16", lambda: F.linear(h, w16, b16)),
    ]
    print(f"# torch {torch.__version__} threads={torch.get_num_threads()}")
    for name, f in cases:
        med, lo, hi = bench(f)
        print(f"RESULT name=torch_ops_{name}{a.tag} value={med * 1e6:.3f} unit=us min={lo * 1e6:.3f} max={hi * 1e6:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
