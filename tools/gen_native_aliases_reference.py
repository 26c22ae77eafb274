#!/usr/bin/env python3
"""Writes spec/data/native_aliases_reference.lua for spec/native_aliases_spec.lua: PyTorch 1.13's values
and gradients of the native_ and low-level op forms (native_layer_norm, native_batch_norm,
native_group_norm, convolution, conv_tbc, grid_sampler_2d/3d, affine_grid_generator), of the
functional RNNs (torch.lstm padded and batch_first, torch.gru in its packed form, torch.rnn_relu
without biases), and the references of SyncBatchNorm's primitives: PyTorch runs batch_norm_stats,
batch_norm_gather_stats*, batch_norm_backward_* on CUDA only, so their reference is what they
compute, PyTorch's batch_norm in training over the whole batch (a batch split into two "ranks"
gathers to that batch's mean, invstd and running statistics; the backward primitives give its
gradients); batch_norm_update_stats runs on the CPU and is called.

Run: /usr/bin/python3 tools/gen_native_aliases_reference.py  (needs PyTorch; the generated file is
committed, CI has no PyTorch). Inputs are float64 values from a fixed formula, det(shape, k, scale),
so the spec rebuilds them without PyTorch. Each gradient is that of sum(output * det(shape, 500 + i))
over the op's i-th output."""
import math

import torch
import torch.nn.functional as F

from lua_reference import write


def det(shape, k, scale=1.0):
    """float64 values sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4, i the flat index from 0"""
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.float64)
    return (torch.sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4).reshape(shape)


def flat(t):
    t = t.detach()
    return {"shape": list(t.shape), "data": t.double().reshape(-1).tolist()}


def leaves(*specs):
    return [det(s, k, sc).requires_grad_() for s, k, sc in specs]


def grads(outs, ins):
    loss = sum((o * det(o.shape, 500 + i)).sum() for i, o in enumerate(outs) if o.requires_grad)
    gs = torch.autograd.grad(loss, ins, allow_unused=True)
    return [flat(g) for g in gs]


ref = {}

# native_layer_norm(x (2, 3, 4), [4], w, b, 1e-5)
x, w, b = leaves(((2, 3, 4), 1, 1.0), ((4,), 2, 0.5), ((4,), 3, 0.5))
out, mean, rstd = torch.native_layer_norm(x, [4], w, b, 1e-5)
ref["layer_norm"] = {"out": flat(out), "mean": flat(mean), "rstd": flat(rstd), "grads": grads([out], [x, w, b])}

# native_batch_norm(x (4, 3, 5), w, b, rm = det * 0.1, rv = 1 + det^2, training, 0.1, 1e-5) and in eval
x, w, b = leaves(((4, 3, 5), 4, 1.0), ((3,), 5, 0.5), ((3,), 6, 0.5))
rm, rv = det((3,), 7, 0.1), 1 + det((3,), 8) ** 2
out, sm, si = torch.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
ref["batch_norm"] = {"out": flat(out), "save_mean": flat(sm), "save_invstd": flat(si), "running_mean": flat(rm),
                     "running_var": flat(rv), "grads": grads([out], [x, w, b])}
out, sm, si = torch.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5)
ref["batch_norm_eval"] = {"out": flat(out), "save_mean": flat(sm), "grads": grads([out], [x, w, b])}

# native_group_norm(x (2, 6, 5), w, b, 2, 6, 5, 3, 1e-5)
x, w, b = leaves(((2, 6, 5), 9, 1.0), ((6,), 10, 0.5), ((6,), 11, 0.5))
out, mean, rstd = torch.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5)
ref["group_norm"] = {"out": flat(out), "mean": flat(mean), "rstd": flat(rstd), "grads": grads([out], [x, w, b])}

# conv_tbc(x (7, 2, 3), w (3, 3, 4), b (4), pad 1)
x, w, b = leaves(((7, 2, 3), 12, 1.0), ((3, 3, 4), 13, 0.5), ((4,), 14, 0.5))
out = torch.conv_tbc(x, w, b, 1)
ref["conv_tbc"] = {"out": flat(out), "grads": grads([out], [x, w, b])}

# convolution: 2-D (stride (2, 1), padding (1, 0), dilation (1, 2), groups 2) and transposed 1-D
x, w, b = leaves(((2, 4, 6, 7), 15, 1.0), ((6, 2, 3, 2), 16, 0.5), ((6,), 17, 0.5))
out = torch.convolution(x, w, b, [2, 1], [1, 0], [1, 2], False, [0, 0], 2)
ref["convolution2d"] = {"out": flat(out), "grads": grads([out], [x, w, b])}
x, w = leaves(((2, 4, 5), 18, 1.0), ((4, 3, 3), 19, 0.5))
out = torch.convolution(x, w, None, [2], [1], [1], True, [1], 1)
ref["convolution_t1d"] = {"out": flat(out), "grads": grads([out], [x, w])}

# grid_sampler_2d bicubic (2), reflection (2), align_corners; grid_sampler_3d bilinear (0), border (1)
x, g = leaves(((1, 2, 4, 5), 20, 1.0), ((1, 3, 2, 2), 21, 1.2))
out = torch.grid_sampler_2d(x, g, 2, 2, True)
ref["grid_sampler_2d"] = {"out": flat(out), "grads": grads([out], [x, g])}
x, g = leaves(((1, 2, 3, 4, 3), 22, 1.0), ((1, 2, 2, 3, 3), 23, 1.1))
out = torch.grid_sampler_3d(x, g, 0, 1, False)
ref["grid_sampler_3d"] = {"out": flat(out), "grads": grads([out], [x, g])}
x, g = leaves(((1, 1, 3, 4), 24, 1.0), ((1, 2, 3, 2), 25, 1.1))
out = torch.grid_sampler(x, g, 1, 0, False)
ref["grid_sampler_nearest"] = {"out": flat(out)}

# affine_grid_generator(theta (2, 2, 3), [2, 1, 3, 4], False)
(theta,) = leaves(((2, 2, 3), 26, 1.0))
out = torch.affine_grid_generator(theta, [2, 1, 3, 4], False)
ref["affine_grid"] = {"out": flat(out), "grads": grads([out], [theta])}

# SyncBatchNorm's primitives: x (5, 3, 4) as two ranks' batches x[0:2] and x[2:5]
x, w, b = leaves(((5, 3, 4), 27, 1.0), ((3,), 28, 0.5), ((3,), 29, 0.5))
rm, rv = det((3,), 30, 0.1), 1 + det((3,), 31) ** 2
out = F.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5)
xc = x.detach().transpose(0, 1).reshape(3, -1)
dy = det(out.shape, 500)
gx, gw, gb = torch.autograd.grad(out, [x, w, b], dy)
xmu = x.detach() - xc.mean(1).view(1, 3, 1)
ref["sync"] = {"out": flat(out), "mean": flat(xc.mean(1)), "invstd": flat((xc.var(1, unbiased=False) + 1e-5).rsqrt()),
               "running_mean": flat(rm), "running_var": flat(rv), "grad_input": flat(gx), "grad_weight": flat(gw),
               "grad_bias": flat(gb), "sum_dy": flat(dy.sum((0, 2))), "sum_dy_xmu": flat((dy * xmu).sum((0, 2)))}
rm, rv = det((3,), 30, 0.1), 1 + det((3,), 31) ** 2
mean, var = torch.batch_norm_update_stats(x.detach(), rm, rv, 0.1)
ref["update_stats"] = {"mean": flat(mean), "var": flat(var), "running_mean": flat(rm), "running_var": flat(rv)}

# torch.lstm: 2 layers, bidirectional, batch_first, input (2, 5, 3), hidden 4
I, H = 3, 4
params = []
k = 40
for layer in range(2):
    for d in range(2):
        in_size = I if layer == 0 else 2 * H
        params += leaves(((4 * H, in_size), k, 0.5), ((4 * H, H), k + 1, 0.5), ((4 * H,), k + 2, 0.5),
                         ((4 * H,), k + 3, 0.5))
        k += 4
x, h0, c0 = leaves(((2, 5, 3), 60, 1.0), ((4, 2, 4), 61, 0.5), ((4, 2, 4), 62, 0.5))
out, hn, cn = torch.lstm(x, (h0, c0), params, True, 2, 0.0, False, True, True)
ref["lstm"] = {"out": flat(out), "h_n": flat(hn), "c_n": flat(cn),
               "grads": grads([out, hn, cn], [x, h0, c0, params[0], params[9]])}

# torch.gru packed: data of batch_sizes {3, 3, 2, 1}, 1 layer, bidirectional, hidden 2
params = leaves(((6, 3), 70, 0.5), ((6, 2), 71, 0.5), ((6,), 72, 0.5), ((6,), 73, 0.5),
                ((6, 3), 74, 0.5), ((6, 2), 75, 0.5), ((6,), 76, 0.5), ((6,), 77, 0.5))
data, h0 = leaves(((9, 3), 78, 1.0), ((2, 3, 2), 79, 0.5))
bs = torch.tensor([3, 3, 2, 1])
out, hn = torch.gru(data, bs, h0, params, True, 1, 0.0, False, True)
ref["gru_packed"] = {"out": flat(out), "h_n": flat(hn), "grads": grads([out, hn], [data, h0, params[1], params[5]])}

# torch.rnn_relu: no biases, 2 layers, input (4, 2, 3) (time first), hidden 3
params = leaves(((3, 3), 80, 0.5), ((3, 3), 81, 0.5), ((3, 3), 82, 0.5), ((3, 3), 83, 0.5))
x, h0 = leaves(((4, 2, 3), 84, 1.0), ((2, 2, 3), 85, 0.5))
out, hn = torch.rnn_relu(x, h0, params, False, 2, 0.0, False, False, False)
ref["rnn_relu"] = {"out": flat(out), "h_n": flat(hn), "grads": grads([out, hn], [x, h0, params[2]])}
out, hn = torch.rnn_tanh(x, h0, params, False, 2, 0.0, False, False, False)
ref["rnn_tanh"] = {"out": flat(out), "h_n": flat(hn)}

write("native_aliases_reference.lua", "gen_native_aliases_reference.py",
      ["inputs det(shape, k, scale) = sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4 (float64); see the script",
       "for each case's arguments; grads: of sum(output_i * det(shape, 500 + i)) over the outputs"], ref)
