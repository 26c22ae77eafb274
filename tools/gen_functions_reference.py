#!/usr/bin/env python3
"""Writes spec/data/functions_reference.lua: PyTorch's torch.finfo and torch.iinfo values, its
window functions (hann, hamming, blackman, bartlett, kaiser), torch.gradient and torch.histogram on
fixed float64 inputs, for spec/dtype_info_spec.lua and spec/torch_functions_extra_spec.lua.

Run: python3 tools/gen_functions_reference.py  (needs PyTorch; the generated file is committed, CI
has no PyTorch). Values are printed with %.17g, so they read back as the same doubles. Dims in the
cases are written 1-based, as lutorch takes them."""
import torch

from lua_reference import write


FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]


def dtype_info():
    finfo, iinfo = {}, {}
    for name in FLOATS:
        f = torch.finfo(getattr(torch, name))
        finfo[name] = dict(bits=f.bits, eps=f.eps, max=f.max, min=f.min, tiny=f.tiny,
                           smallest_normal=f.smallest_normal, resolution=f.resolution)
    for name in INTS:
        i = torch.iinfo(getattr(torch, name))
        iinfo[name] = dict(bits=i.bits, max=i.max, min=i.min)
    return finfo, iinfo


def windows():
    out = []
    for n in [0, 1, 2, 5, 8]:
        for periodic in [True, False]:
            kw = dict(periodic=periodic, dtype=torch.float64)
            out.append(dict(fn="hann_window", n=n, opts=dict(periodic=periodic), values=torch.hann_window(n, **kw)))
            out.append(dict(fn="hamming_window", n=n, opts=dict(periodic=periodic), values=torch.hamming_window(n, **kw)))
            out.append(dict(fn="blackman_window", n=n, opts=dict(periodic=periodic), values=torch.blackman_window(n, **kw)))
            out.append(dict(fn="bartlett_window", n=n, opts=dict(periodic=periodic), values=torch.bartlett_window(n, **kw)))
            out.append(dict(fn="kaiser_window", n=n, opts=dict(periodic=periodic), values=torch.kaiser_window(n, **kw)))
    out.append(dict(fn="hamming_window", n=7, opts=dict(periodic=False, alpha=0.6, beta=0.4),
                    values=torch.hamming_window(7, False, 0.6, 0.4, dtype=torch.float64)))
    out.append(dict(fn="kaiser_window", n=9, opts=dict(periodic=True, beta=5.0),
                    values=torch.kaiser_window(9, True, 5.0, dtype=torch.float64)))
    out.append(dict(fn="kaiser_window", n=6, opts=dict(periodic=False, beta=0.5),
                    values=torch.kaiser_window(6, False, 0.5, dtype=torch.float64)))
    return out


GRAD_INPUT = [[1.0, 2.5, -0.5, 4.0, 3.25], [0.0, -1.5, 2.0, 8.0, 1.0], [3.0, 0.5, 0.25, -2.0, 6.0],
              [2.0, 2.0, -3.0, 1.5, 0.75]]
COORDS = [[0.0, 0.5, 1.75, 3.0], [-1.0, 0.0, 0.25, 1.5, 4.0]]


def gradients():
    x = torch.tensor(GRAD_INPUT, dtype=torch.float64)
    cx = [torch.tensor(c, dtype=torch.float64) for c in COORDS]
    cases = [
        ("defaults", {}, {}),
        ("scalar spacing", dict(spacing=2.0), dict(spacing=2.0)),
        ("list of spacings", dict(spacing=[0.5, 3.0]), dict(spacing=[0.5, 3.0])),
        ("dim 2", dict(dim=1), dict(dim=2)),
        ("dims {2, 1}, spacings", dict(dim=[1, 0], spacing=[0.25, 4.0]), dict(dim=[2, 1], spacing=[0.25, 4.0])),
        ("edge_order 2", dict(edge_order=2), dict(edge_order=2)),
        ("edge_order 2, scalar spacing", dict(edge_order=2, spacing=0.5), dict(edge_order=2, spacing=0.5)),
        ("coordinates", dict(spacing=cx), dict(spacing="coords")),
        ("coordinates, edge_order 2", dict(spacing=cx, edge_order=2), dict(spacing="coords", edge_order=2)),
        ("coordinates, dim -1", dict(spacing=[cx[1]], dim=-1), dict(spacing="coords2", dim=-1)),
    ]
    out = []
    for name, kw, lopts in cases:
        out.append(dict(name=name, opts=lopts, values=[g for g in torch.gradient(x, **kw)]))
    return out


HIST_INPUT = [0.5, -1.25, 2.0, 3.0, 0.0, 1.5, 2.75, -0.5, 1.0, 4.0, 2.0, 0.25]
HIST_WEIGHT = [1.0, 0.5, 2.0, 0.25, 1.5, 1.0, 3.0, 0.75, 1.0, 2.0, 0.5, 1.25]


def histograms():
    x = torch.tensor(HIST_INPUT, dtype=torch.float64)
    w = torch.tensor(HIST_WEIGHT, dtype=torch.float64)
    edges = torch.tensor([-1.0, 0.0, 0.5, 2.0, 3.5], dtype=torch.float64)
    cases = [
        ("4 bins", (4,), {}, {}),
        ("range", (5,), dict(range=(-1.0, 3.0)), dict(range=[-1.0, 3.0])),
        ("weight", (3,), dict(weight=w), dict(weight=True)),
        ("density", (4,), dict(density=True), dict(density=True)),
        ("weight and density", (6,), dict(weight=w, density=True), dict(weight=True, density=True)),
        ("bin edges", (edges,), {}, dict(edges=True)),
        ("bin edges, weight, density", (edges,), dict(weight=w, density=True),
         dict(edges=True, weight=True, density=True)),
    ]
    out = []
    for name, args, kw, lopts in cases:
        h, e = torch.histogram(x, *args, **kw)
        bins = args[0] if isinstance(args[0], int) else None
        out.append(dict(name=name, bins=bins if bins is not None else 0, opts=lopts, hist=h, edges=e))
    const = torch.histogram(torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64), 3)
    empty = torch.histogram(torch.tensor([], dtype=torch.float64), 3)
    return out, dict(hist=const[0], edges=const[1]), dict(hist=empty[0], edges=empty[1]), edges


def main():
    finfo, iinfo = dtype_info()
    hist, const, empty, edges = histograms()
    ref = dict(
        finfo=finfo,
        iinfo=iinfo,
        windows=windows(),
        grad_input=GRAD_INPUT,
        grad_coords=COORDS,
        gradients=gradients(),
        hist_input=HIST_INPUT,
        hist_weight=HIST_WEIGHT,
        hist_edges=edges,
        histograms=hist,
        hist_constant=const,
        hist_empty=empty,
    )
    write("functions_reference.lua", "gen_functions_reference.py", [], ref)

if __name__ == "__main__":
    main()
