#!/usr/bin/env python3
"""Writes spec/data/samplers_reference.lua: what PyTorch 1.13's CPU generator gives for
Tensor.exponential_, geometric_, cauchy_, log_normal_ and torch.normal right after
torch.manual_seed(seed), for spec/random_more_spec.lua.

Run from the repository root: /usr/bin/python3 tools/gen_samplers_reference.py (needs Debian's
PyTorch 1.13 on an x86-64 CPU, as tools/gen_random_reference.py; the generated file is committed,
CI has no PyTorch). Each case: {op, seed, dtype, n, a, b, values}, a and b the method's parameters
(b absent for exponential_ and geometric_); torch.normal's cases name their overload in op."""
import torch

from lua_reference import write

FLOATS = ["float32", "float64", "float16", "bfloat16"]
METHODS = [("exponential_", [(1.0,), (1.5,), (0.25,)]),
           ("geometric_", [(0.3,), (0.9,), (0.01,)]),
           ("cauchy_", [(0.0, 1.0), (0.5, 2.0)]),
           ("log_normal_", [(1.0, 2.0), (-0.5, 0.3)])]


def cases():
    out = []
    for op, params in METHODS:
        dtypes = FLOATS + (["int64", "int32", "int16", "int8", "uint8"] if op == "geometric_" else [])
        for dtype in dtypes:
            for p in params:
                for n in [5, 20]:
                    torch.manual_seed(7)
                    t = getattr(torch.empty(n, dtype=getattr(torch, dtype)), op)(*p)
                    c = dict(op=op, seed=7, dtype=dtype, n=n, a=float(p[0]))
                    if len(p) > 1:
                        c["b"] = float(p[1])
                    c["values"] = [float(v) for v in t.double().tolist()]
                    out.append(c)
    # torch.normal: mean arange(n) * 0.5 (float dtype), std 0.5 + arange(n) * 0.25, or numbers
    for dtype in ["float32", "float64"]:
        dt = getattr(torch, dtype)
        for n in [5, 20]:
            mean = torch.arange(n, dtype=dt) * 0.5
            std = 0.5 + torch.arange(n, dtype=dt) * 0.25
            for op, args in [("normal_tt", (mean, std)), ("normal_tn", (mean, 1.5)),
                             ("normal_nt", (-2.0, std))]:
                torch.manual_seed(3)
                t = torch.normal(*args)
                out.append(dict(op=op, seed=3, dtype=dtype, n=n, values=t.double().tolist()))
            torch.manual_seed(3)
            t = torch.normal(2.0, 3.0, (n,), dtype=dt)
            out.append(dict(op="normal_nn", seed=3, dtype=dtype, n=n, values=t.double().tolist()))
    return out


if __name__ == "__main__":
    write("samplers_reference.lua", "gen_samplers_reference.py",
          ["One case per call after torch.manual_seed(seed); see the script for the format."], cases())
