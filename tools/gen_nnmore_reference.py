"""Writes spec/data/nnmore_reference.lua: PyTorch's values for F.fractional_max_pool3d (given random
samples: outputs, indices, gradients), nn.AdaptiveLogSoftmaxWithLoss (given weights: output, loss,
log_prob, predict and the gradients of the loss) and nn.CrossMapLRN2d (outputs), so that
spec/nn_fractional3d_spec.lua, spec/nn_adaptive_softmax_spec.lua and spec/nn_crossmap_lrn_spec.lua
check lutorch against PyTorch itself.

Run from the repository root with a Python that has PyTorch (Debian's python3-torch, 1.13):

    /usr/bin/python3 tools/gen_nnmore_reference.py

Inputs are float64 values from a fixed formula; indices and classes are written 1-based, as lutorch
gives and takes them.
"""

import math

import torch
import torch.nn.functional as F

import lua_reference as reference


def det(shape, k, scale=1.0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.float64)
    return (torch.sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4).reshape(shape)


def t(v):
    """a tensor as {shape = ..., data = flat values}"""
    v = v.detach()
    return {"shape": list(v.shape), "data": v.double().reshape(-1).tolist() if v.is_floating_point()
            else v.reshape(-1).tolist()}


fractional = []
for dtype in [torch.float64, torch.float32]:
    for (shape, k, osize, ratio) in [((2, 2, 5, 6, 7), 2, (3, 4, 4), None),
                                     ((2, 6, 7, 8), (2, 3, 2), None, (0.5, 0.6, 0.7)),
                                     ((1, 3, 4, 9, 5), (1, 2, 3), (3, 5, 2), None)]:
        x = det(shape, 6).to(dtype).requires_grad_(True)
        nb = 1 if len(shape) == 4 else shape[0]
        samples = (det((nb, shape[-4], 3), 7) * 0.5 + 0.5).clamp(0, 0.999).to(dtype)
        y, idx = F.fractional_max_pool3d(x, k, output_size=osize, output_ratio=ratio, return_indices=True,
                                         _random_samples=samples)
        gy = det(tuple(y.shape), 8).to(dtype)
        (y * gy).sum().backward()
        case = dict(dtype=str(dtype).replace("torch.", ""), x=t(x), k=list(k) if isinstance(k, tuple) else k,
                    samples=t(samples), y=t(y), indices=t(idx + 1), gy=t(gy), grad=t(x.grad))
        if osize is not None:
            case["output_size"] = list(osize)
        if ratio is not None:
            case["output_ratio"] = list(ratio)
        fractional.append(case)

adaptive = []
for (in_f, n_classes, cutoffs, div, head_bias, batch) in [(8, 20, [4, 9, 15], 2.0, False, 7),
                                                         (6, 10, [3], 4.0, True, 5),
                                                         (5, 12, [2, 6], 1.5, True, 0)]:
    m = torch.nn.AdaptiveLogSoftmaxWithLoss(in_f, n_classes, cutoffs, div_value=div, head_bias=head_bias).double()
    weights = []  # PyTorch's names (0-based positions in tail and its Sequentials)
    with torch.no_grad():
        for j, (name, p) in enumerate(m.named_parameters()):
            p.copy_(det(tuple(p.shape), 10 + j, 0.8))
            weights.append(dict(name=name, value=t(p)))
    shape = (batch or 1, in_f)
    x = det(shape, 3, 1.5)
    # every cluster's classes among the targets
    target = torch.tensor([(3 * i + 1) % n_classes for i in range(shape[0])])
    target[0] = n_classes - 1
    if batch == 0:
        x, target = x[0], target[0]
    x.requires_grad_(True)
    out = m(x, target)
    out.loss.backward()
    case = dict(in_features=in_f, n_classes=n_classes, cutoffs=cutoffs, div_value=div, head_bias=head_bias,
                weights=weights, x=t(x), target=t(target + 1), output=t(out.output), loss=out.loss.item(),
                grad_x=t(x.grad), grads=[t(p.grad if p.grad is not None else torch.zeros_like(p)) for p in m.parameters()])
    xs = x.detach().reshape(-1, in_f)
    case["log_prob"] = t(m.log_prob(xs))
    case["predict"] = t(m.predict(xs) + 1)
    case["tail_sizes"] = [[lin.weight.shape[0], lin.weight.shape[1]] for seq in m.tail for lin in seq]
    adaptive.append(case)

crossmap = []
for dtype in [torch.float64, torch.float32]:
    for (shape, size, alpha, beta, k) in [((2, 7, 3, 4), 5, 0.3, 0.75, 2.0), ((1, 4, 2, 3), 2, 1e-2, 0.5, 1.0),
                                          ((2, 3, 2, 2), 1, 0.5, 1.5, 1.0), ((1, 9, 2, 2), 4, 2.0, 0.6, 0.5)]:
        x = det(shape, 4, 2.0).to(dtype)
        y = torch.nn.CrossMapLRN2d(size, alpha, beta, k)(x)
        crossmap.append(dict(dtype=str(dtype).replace("torch.", ""), size=size, alpha=alpha, beta=beta, k=k, x=t(x),
                             y=t(y)))

reference.write("nnmore_reference.lua", "gen_nnmore_reference.py",
                ["F.fractional_max_pool3d, nn.AdaptiveLogSoftmaxWithLoss and nn.CrossMapLRN2d; indices and "
                 "classes 1-based."],
                {"fractional3d": fractional, "adaptive": adaptive, "crossmap": crossmap})
