#!/usr/bin/env python3
"""Generates spec/data/nnutils_reference.lua: PyTorch's nn.utils.parametrizations.orthogonal maps,
its l1_unstructured and ln_structured masks, and F.fractional_max_pool2d for given random samples,
so that spec/nn_parametrize_spec.lua, spec/nn_prune_spec.lua and spec/nn_lazy_fractional_spec.lua
check lutorch against PyTorch itself.

Run from the repository root with a Python that has PyTorch (Debian's python3-torch, 1.13):

    /usr/bin/python3 tools/gen_nnutils_reference.py

Inputs are float64 values from a fixed formula; indices are written 1-based, as lutorch gives them.
"""

import math
import os

import torch
import torch.nn.functional as F
from torch.nn.utils import parametrizations, prune

import lua_reference as reference

torch.manual_seed(0)  # the layers' other parameters, so that the file is the same on every run
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "data",
                   "nnutils_reference.lua")


def det(shape, k, scale=1.0):
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.float64)
    return (torch.sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4).reshape(shape)


def lua(v):
    """v as a Lua literal (tools/lua_reference.py), tensors as {shape = ..., data = flat values}"""
    if torch.is_tensor(v):
        t = v.detach()
        return reference.lua({"shape": list(t.shape), "data": t.double().reshape(-1).tolist()
                              if t.is_floating_point() else t.reshape(-1).tolist()})
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(lua(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join("%s = %s" % (k, lua(x)) for k, x in v.items()) + "}"
    return reference.lua(v)


orthogonal = []
for omap in ["matrix_exp", "cayley", "householder"]:
    for (out_f, in_f) in [(4, 4), (5, 3), (3, 5)]:
        m = torch.nn.Linear(in_f, out_f).double()
        w0 = det((out_f, in_f), 1)
        with torch.no_grad():
            m.weight.copy_(w0)
        parametrizations.orthogonal(m, "weight", orthogonal_map=omap)
        w_init = m.weight.detach().clone()
        x = det((out_f, in_f), 2, 0.7)
        if omap == "householder":  # its diagonal holds the signs of the columns (-1 or 1)
            x.diagonal().copy_(torch.tensor([(-1.0) ** (i + 1) for i in range(min(out_f, in_f))]))
        with torch.no_grad():
            m.parametrizations.weight.original.copy_(x)
        gy = det((out_f, in_f), 3)
        w = m.weight
        (w * gy).sum().backward()
        orthogonal.append(dict(map=omap, shape=[out_f, in_f], w0=w0, w_init=w_init, original=x,
                               base=m.parametrizations.weight[0].base, weight=w, gy=gy,
                               grad=m.parametrizations.weight.original.grad))

prunes = []
# l1: distinct magnitudes; among equal ones PyTorch's topk picks by its selection algorithm (for
# |[0.5, 0.25, 0.25, 1, 0.5, 0.25, 2, 0.125, 0.125, 3, 0.25, 0.5]| and k = 3 it prunes flat indices
# 7, 8 and 10, 0-based), which lutorch does not follow: it prunes the lower index first
t = det((3, 4), 9)
for amount in [0.25, 0.5, 3, 7]:
    m = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        m.weight.copy_(t)
    prune.l1_unstructured(m, "weight", amount)
    prunes.append(dict(kind="l1_unstructured", amount=amount, weight=t, mask=m.weight_mask))
w = det((4, 3, 2), 4)
for n, dim, amount in [(1, 0, 2), (2, 1, 0.5), ("inf", -1, 1), ("fro", 0, 0.3)]:
    m = torch.nn.Conv1d(3, 4, 2).double()
    with torch.no_grad():
        m.weight.copy_(w)
    pn = float("inf") if n == "inf" else n
    prune.ln_structured(m, "weight", amount, pn, dim)
    prunes.append(dict(kind="ln_structured", n=n, dim=dim + 1 if dim >= 0 else dim, amount=amount,
                       weight=w, mask=m.weight_mask))
# repeated pruning: l1 then ln_structured then l1 again (a PruningContainer)
m = torch.nn.Linear(5, 4).double()
w = det((4, 5), 5)
with torch.no_grad():
    m.weight.copy_(w)
prune.l1_unstructured(m, "weight", 0.3)
prune.ln_structured(m, "weight", 1, 2, 0)
prune.l1_unstructured(m, "weight", 3)
prunes.append(dict(kind="chain", weight=w, mask=m.weight_mask))

fractional = []
for dtype in [torch.float64, torch.float32]:
    for (shape, k, osize, ratio) in [((2, 3, 7, 8), 2, (3, 4), None), ((2, 2, 9, 10), 3, None, (0.5, 0.6)),
                                     ((3, 11, 6), (3, 2), (5, 4), None)]:
        x = det(shape, 6).to(dtype).requires_grad_(True)
        nb = 1 if len(shape) == 3 else shape[0]
        samples = (det((nb, shape[-3], 2), 7) * 0.5 + 0.5).clamp(0, 0.999).to(dtype)
        y, idx = F.fractional_max_pool2d(x, k, output_size=osize, output_ratio=ratio, return_indices=True,
                                         _random_samples=samples)
        gy = det(tuple(y.shape), 8).to(dtype)
        (y * gy).sum().backward()
        fractional.append(dict(dtype=str(dtype).replace("torch.", ""), x=x, k=list(k) if isinstance(k, tuple) else k,
                               output_size=list(osize) if osize else None, output_ratio=list(ratio) if ratio else None,
                               samples=samples, y=y, indices=idx + 1, gy=gy, grad=x.grad))
        if osize is None:
            del fractional[-1]["output_size"]
        if ratio is None:
            del fractional[-1]["output_ratio"]

with open(OUT, "w") as f:
    f.write("-- Generated by tools/gen_nnutils_reference.py from PyTorch %s; do not edit.\n" % torch.__version__)
    f.write("return {\n")
    for name, cases in [("orthogonal", orthogonal), ("prune", prunes), ("fractional", fractional)]:
        f.write("  %s = {\n" % name)
        for c in cases:
            f.write("    %s,\n" % lua(c))
        f.write("  },\n")
    f.write("}\n")
