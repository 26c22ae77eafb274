#!/usr/bin/env python3
"""Writes spec/data/interpolate_reference.lua: PyTorch's F.interpolate in the modes bicubic, area and
nearest-exact (with size, scale_factor and recompute_scale_factor), F.upsample_bilinear, F.pdist and
F.triplet_margin_with_distance_loss on fixed float64 inputs (stored beside the results), for
spec/nn_interpolate_extra_spec.lua.

Run: python3 tools/gen_interpolate_reference.py  (needs PyTorch; the generated file is committed, CI
has no PyTorch). Values are printed with %.17g, so they read back as the same doubles."""
import math

import torch
import torch.nn.functional as F

from lua_reference import write


def data(*shape):
    """a tensor of shape with the values sin(0.37 k + 0.1), k = 0, 1, ... in row-major order"""
    n = math.prod(shape)
    return torch.tensor([math.sin(0.37 * k + 0.1) for k in range(n)], dtype=torch.float64).view(*shape)


# (shape, options of F.interpolate); a size or scale_factor as a list is one per spatial dim
INTERP = [
    ((1, 2, 4, 5), dict(size=[7, 3], mode="bicubic")),
    ((1, 2, 4, 5), dict(size=[7, 3], mode="bicubic", align_corners=True)),
    ((2, 1, 5, 4), dict(size=[2, 3], mode="bicubic")),
    ((1, 1, 4, 5), dict(scale_factor=1.7, mode="bicubic")),
    ((1, 1, 4, 5), dict(scale_factor=1.7, mode="bicubic", recompute_scale_factor=True)),
    ((1, 1, 3, 4), dict(scale_factor=[2.5, 0.6], mode="bicubic", align_corners=True)),
    ((2, 3, 7), dict(size=5, mode="area")),
    ((1, 2, 5, 7), dict(size=[3, 2], mode="area")),
    ((1, 1, 3, 4, 5), dict(size=[2, 3, 2], mode="area")),
    ((1, 2, 6, 5), dict(scale_factor=0.5, mode="area")),
    ((1, 2, 3, 4), dict(size=[5, 9], mode="area")),
    ((2, 2, 5), dict(scale_factor=1.5, mode="nearest-exact")),
    ((1, 2, 4, 5), dict(size=[7, 3], mode="nearest-exact")),
    ((1, 1, 4, 6, 5), dict(scale_factor=[0.75, 1.5, 2.0], mode="nearest-exact")),
    ((1, 1, 5, 3), dict(scale_factor=1.7, mode="nearest-exact", recompute_scale_factor=True)),
]

PDIST = [((5, 3), 2.0), ((4, 6), 1.0), ((5, 3), 3.0), ((3, 4), 0.5), ((1, 3), 2.0)]


def cosine_distance(x1, x2):
    return 1 - F.cosine_similarity(x1, x2)


TRIPLET = [
    ("pairwise", dict()),
    ("pairwise", dict(margin=0.5, swap=True, reduction="none")),
    ("cosine", dict(distance_function=cosine_distance, reduction="sum")),
    ("cosine", dict(distance_function=cosine_distance, margin=2.0, swap=True, reduction="none")),
]


def main():
    interp = []
    for shape, opts in INTERP:
        kw = {k: tuple(v) if isinstance(v, list) else v for k, v in opts.items()}
        interp.append(dict(shape=list(shape), opts=opts, out=F.interpolate(data(*shape), **kw)))
    bil = F.upsample_bilinear(data(1, 2, 3, 4), size=(5, 3))
    pdist = [dict(shape=list(s), p=p, out=F.pdist(data(*s), p)) for s, p in PDIST]
    a, pos, neg = data(4, 5), data(4, 5).flip(0) * 0.8, data(4, 5).flip(1) * 1.3
    triplet = []
    for dist, opts in TRIPLET:
        out = F.triplet_margin_with_distance_loss(a, pos, neg, **opts)
        o = {k: v for k, v in opts.items() if k != "distance_function"}
        triplet.append(dict(distance=dist, opts=o, out=out.tolist() if out.dim() else out.item()))
    write("interpolate_reference.lua", "gen_interpolate_reference.py", [
        "Inputs are data(shape): sin(0.37 k + 0.1), k = 0, 1, ... in row-major order. interpolate: F.interpolate",
        "of data(shape) with opts; upsample_bilinear: data(1, 2, 3, 4) to size {5, 3}; pdist: F.pdist(data(shape), p);",
        "triplet: anchor data(4, 5), positive its rows reversed * 0.8, negative its columns reversed * 1.3, distance",
        "'pairwise' (the default) or 'cosine' (1 - F.cosine_similarity).",
    ], dict(interpolate=interp, upsample_bilinear=bil, pdist=pdist, triplet=triplet))


if __name__ == "__main__":
    main()
