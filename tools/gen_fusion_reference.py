#!/usr/bin/env python3
"""Generates spec/data/fusion_reference.lua: PyTorch's torch.nn.utils.fusion results
(fuse_conv_bn_weights, with and without transpose, and fuse_linear_bn_weights) for given float64
inputs, so that spec/nn_utils_fusion_spec.lua checks lutorch against PyTorch itself.

Run from the repository root with a Python that has PyTorch (Debian's python3-torch, 1.13):

    /usr/bin/python3 tools/gen_fusion_reference.py

Tensors are written as {shape = ..., data = flat values}; a missing one (None) is left out.
"""

import math

import torch
from torch.nn.utils import fusion

import lua_reference as reference


def det(shape, k, scale=1.0, shift=0.0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.float64)
    return (torch.sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4 + shift).reshape(shape)


def t(v):
    return {"shape": list(v.shape), "data": v.detach().reshape(-1).tolist()}


def case(name, w_shape, channels, bias, bn_affine, transpose=False, linear=False, eps=1e-5):
    w = det(w_shape, 1)
    b = det((channels,), 2) if bias else None
    rm = det((channels,), 3, 0.5)
    rv = det((channels,), 4, 0.4, 1.0)  # in [0.6, 1.4]
    bw = det((channels,), 5, 1.5) if bn_affine else None
    bb = det((channels,), 6) if bn_affine else None
    if linear:
        if bw is None:  # PyTorch 1.13's fuse_linear_bn_weights needs the bn weight and bias
            fw, fb = fusion.fuse_linear_bn_weights(w, b, rm, rv, eps, torch.ones(channels, dtype=torch.float64),
                                                   torch.zeros(channels, dtype=torch.float64))
        else:
            fw, fb = fusion.fuse_linear_bn_weights(w, b, rm, rv, eps, bw, bb)
    else:
        fw, fb = fusion.fuse_conv_bn_weights(w, b, rm, rv, eps, bw, bb, transpose)
    out = {"name": name, "linear": linear, "transpose": transpose, "eps": eps, "w": t(w), "rm": t(rm),
           "rv": t(rv), "fused_w": t(fw), "fused_b": t(fb)}
    if b is not None:
        out["b"] = t(b)
    if bw is not None:
        out["bw"] = t(bw)
        out["bb"] = t(bb)
    return out


cases = [
    case("conv2d", (3, 2, 2, 2), 3, True, True),
    case("conv1d without a bias", (4, 3, 3), 4, False, True, eps=1e-3),
    case("conv3d, bn without affine", (2, 1, 2, 2, 2), 2, True, False),
    case("conv_transpose2d", (2, 3, 2, 2), 3, True, True, transpose=True),
    case("linear", (3, 4), 3, True, True, linear=True),
    case("linear without a bias, bn without affine", (2, 5), 2, False, False, linear=True),
]

reference.write("fusion_reference.lua", "gen_fusion_reference.py",
                ["torch.nn.utils.fusion's fused weights and biases for the inputs given with them"],
                {"cases": cases})
