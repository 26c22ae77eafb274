"""Writes spec/data/misc_reference.lua: PyTorch 1.13's values for torch.cumulative_trapezoid,
torch.igamma / igammac (with mpmath's 30-digit values beside them), torch.index_reduce,
torch.histogramdd, torch.svd_lowrank / pca_lowrank and torch.segment_reduce, read by
spec/torch_functions_misc_spec.lua. Run with /usr/bin/python3 (python3-torch, python3-mpmath)."""
import mpmath
import torch

from lua_reference import write

ref = {}

# cumulative_trapezoid: y 2x4, along each dim, with dx and with points x (1-D and broadcast 2-D)
y = torch.tensor([[1.0, 2.5, 4.0, -3.0], [3.0, 5.0, 9.0, 0.5]], dtype=torch.float64)
xs = torch.tensor([0.0, 1.0, 3.0, 3.5], dtype=torch.float64)
x2 = torch.tensor([[0.0, 1.0, 3.0, 3.5], [0.0, 0.5, 2.0, 4.0]], dtype=torch.float64)
ref["cumtrapz"] = {
    "y": y,
    "xs": xs,
    "x2": x2,
    "last": torch.cumulative_trapezoid(y),
    "first": torch.cumulative_trapezoid(y, dim=0),
    "dx": torch.cumulative_trapezoid(y, dx=0.25),
    "points": torch.cumulative_trapezoid(y, xs),
    "points2": torch.cumulative_trapezoid(y, x2),
    "points_first": torch.cumulative_trapezoid(y, torch.tensor([1.0, 4.0], dtype=torch.float64), dim=0),
}

# igamma / igammac: each of Cephes' methods (series, continued fraction, the series of Q for small x),
# both sides of the switch points, small and large a; PyTorch uses an asymptotic series for
# 20 < a < 200 near x that lutorch does not (its values differ there by about 1e-9 from mpmath's)
mpmath.mp.dps = 30
A = [0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0, 0.3, 3.0, 250.0, 0.01, 1e-5, 4.0, 1.5, 0.2, 7.0, 50.0, 1.2, 0.7]
X = [0.05, 2.0, 1.0, 3.0, 4.0, 12.0, 25.0, 110.0, 0.8, 1.05, 240.0, 3.0, 0.1, 1.2, 0.4, 1e-4, 30.0, 0.5, 1.09, 0.6]
a = torch.tensor(A, dtype=torch.float64)
x = torch.tensor(X, dtype=torch.float64)
ref["igamma"] = {
    "a": A,
    "x": X,
    "p": [float(mpmath.gammainc(ai, 0, xi, regularized=True)) for ai, xi in zip(A, X)],
    "q": [float(mpmath.gammainc(ai, xi, mpmath.inf, regularized=True)) for ai, xi in zip(A, X)],
    "torch_p": torch.igamma(a, x),
    "torch_q": torch.igammac(a, x),
}

# index_reduce: a 3 x 4 x 2 float64 tensor, source slices along dim 1 (0-based) to repeated
# indices (one slice never named), each reduction with and without include_self; an int64 mean
g = torch.Generator().manual_seed(7)
xr = torch.randn(3, 4, 2, dtype=torch.float64, generator=g)
sr = torch.randn(3, 5, 2, dtype=torch.float64, generator=g)
ir = torch.tensor([3, 0, 3, 1, 3])
cases = []
for reduce in ["prod", "mean", "amax", "amin"]:
    for inc in [True, False]:
        cases.append({"reduce": reduce, "include_self": inc, "out": xr.index_reduce(1, ir, sr, reduce, include_self=inc)})
xi = torch.tensor([[1, -2, 3], [4, 5, -6]])
si = torch.tensor([[2, 3, -7, 1], [7, 8, 0, -1]])
ii = torch.tensor([0, 0, 2, 0])
ref["index_reduce"] = {
    "x": xr,
    "source": sr,
    "index": (ir + 1).tolist(),
    "cases": cases,
    "int_x": xi,
    "int_source": si,
    "int_index": (ii + 1).tolist(),
    "int_mean": xi.index_reduce(1, ii, si, "mean"),
    "int_mean_noself": xi.index_reduce(1, ii, si, "mean", include_self=False),
}

# histogramdd: 2 x 30 points of 3 coordinates (float64), one coordinate rounded so that points
# fall on edges; bins as counts, with a range (points outside it), weights and density, and as
# edge tensors; a float32 case (its edges by float32 linspace)
g = torch.Generator().manual_seed(11)
pts = torch.randn(2, 30, 3, dtype=torch.float64, generator=g)
pts[..., 1] = (pts[..., 1] * 2).round() / 2
wts = torch.rand(2, 30, dtype=torch.float64, generator=g)
e0 = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.5], dtype=torch.float64)
e1 = torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64)
e2 = torch.tensor([-3.0, -1.0, 1.0, 3.0], dtype=torch.float64)
def hdd(*args, **kw):
    r = torch.histogramdd(*args, **kw)
    return {"hist": r.hist, "edges": [e.tolist() for e in r.bin_edges]}
ref["histogramdd"] = {
    "points": pts,
    "weight": wts,
    "counts": hdd(pts, bins=[3, 4, 2]),
    "same": hdd(pts, bins=3),
    "ranged": hdd(pts, bins=[2, 3, 2], range=[-1.0, 1.0, -0.5, 0.5, 0.0, 2.0]),
    "weighted": hdd(pts, bins=[3, 4, 2], weight=wts),
    "density": hdd(pts, bins=[3, 4, 2], weight=wts, density=True),
    "edges": hdd(pts, bins=[e0, e1, e2]),
    "float32": hdd(pts.float(), bins=[5, 2, 3]),
}

# svd_lowrank / pca_lowrank: rank-3 matrices (7 x 5, its transpose, 7 x 3 where n <= q, a batch
# of 2 x 6 x 4), each run right after manual_seed(1) so that the random test matrix is PyTorch's;
# only the columns of the non-zero singular values are determined (the rest are noise)
g = torch.Generator().manual_seed(5)
def low_rank(*shape):
    return torch.randn(*shape[:-1], 3, dtype=torch.float64, generator=g) @ torch.randn(
        *shape[:-2], 3, shape[-1], dtype=torch.float64, generator=g)
A = low_rank(7, 5)
A3 = low_rank(7, 3)
Ab = low_rank(2, 6, 4)
Mm = torch.randn(1, 5, dtype=torch.float64, generator=g)
def lowrank(f, *args, **kw):
    torch.manual_seed(1)
    U, S, V = f(*args, **kw)
    return {"U": U[..., :3], "S": S, "V": V[..., :3]}
ref["lowrank"] = {
    "A": A,
    "A3": A3,
    "Ab": Ab,
    "M": Mm,
    "svd_q4": lowrank(torch.svd_lowrank, A, q=4),
    "svd_t": lowrank(torch.svd_lowrank, A.t(), q=4, niter=1),
    "svd_n3": lowrank(torch.svd_lowrank, A3, q=3),
    "svd_batch": lowrank(torch.svd_lowrank, Ab, q=4),
    "svd_M": lowrank(torch.svd_lowrank, A, q=5, M=Mm.expand(7, 5)),
    "pca": lowrank(torch.pca_lowrank, A),
    "pca_nocenter": lowrank(torch.pca_lowrank, A, q=4, center=False),
}

# segment_reduce: 1-D data in segments of 2, 0, 3 and 1 (each reduction, with and without
# initial), and 2 x 7 x 2 data along its second dim with a row of lengths for each of the first;
# PyTorch's offsets are 0-based, lutorch's 1-based (the generator writes lutorch's)
g = torch.Generator().manual_seed(13)
d1 = torch.randn(6, dtype=torch.float64, generator=g)
l1 = torch.tensor([2, 0, 3, 1])
d3 = torch.randn(2, 7, 2, dtype=torch.float64, generator=g)
l3 = torch.tensor([[3, 0, 4], [1, 5, 1]])
seg = []
for r in ["max", "mean", "min", "sum", "prod"]:
    seg.append({"reduce": r, "plain": torch.segment_reduce(d1, r, lengths=l1),
                "initial": torch.segment_reduce(d1, r, lengths=l1, initial=0.5),
                "rows": torch.segment_reduce(d3, r, lengths=l3, axis=1)})
ref["segment_reduce"] = {"data": d1, "lengths": l1, "data3": d3, "lengths3": l3, "cases": seg}

write("misc_reference.lua", "gen_misc_reference.py", [], ref)
