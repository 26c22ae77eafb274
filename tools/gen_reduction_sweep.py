#!/usr/bin/env python3
"""Writes spec/data/reduction_sweep_reference.lua for spec/reduction_sweep_spec.lua: a differential
sweep of the reductions, scans, sorts, indexing and shape ops against PyTorch 1.13, values and
gradients. Run: /usr/bin/python3 tools/gen_reduction_sweep.py (the generated file is committed).

The file holds
  inputs[k] = {d = dtype name, s = shape, v = row-major values}: the tensors the cases use (index
    tensors already 1-based);
  cases[i] = {op, x = input number, a = the Lua arguments after x (a table {T = k} stands for
    inputs[k], {D = name} for a dtype, {N = true} for nil), n = #a, f = true where the call is
    torch[op](x, ...) rather than x:op(...), o = the outputs {d, s, v} (index outputs 1-based) or
    err = "raise" (PyTorch raises) / "impl" (PyTorch 1.13 has no CPU kernel for the dtype),
    g = {grad of x, grads of the inputs listed in rg} for float64 cases (the loss is the sum of
    every floating output times the upstream gradient u(j) = ((7 j) % 11 - 5) / 4 at its
    row-major position j, 0-based), tie = {dim, keepdim} where PyTorch may return any of tied
    indices (the spec then checks that the index reads the value back)}."""
import math

import torch

from lua_reference import write

DT = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
NAME = {v: k for k, v in DT.items()}
NAME[torch.int16] = "int16"  # uint8 with int8 promotes to it
ALL = list(DT)
FLOATS = ["float32", "float64", "float16", "bfloat16"]
NAN, INF = math.nan, math.inf

BASE = {
    "m": [[3, -1, 3], [0, 2, -1]],  # 2 x 3 with ties
    "c": [[[1, 4], [-2, 4], [0, 1]], [[3, 3], [-1, 0], [2, -2]]],  # 2 x 3 x 2 with ties
    "r": [[2, 5, 2]],  # a size-1 dim
    "e": torch.zeros(0, 3),  # a size-0 dim
    "f": [[0.5, -1.25, 2.0], [1.5, 1.5, -0.75]],  # non-integers, a tie
    "n": [[1.0, NAN, -INF], [2.0, INF, 0.5]],  # NaN and infinities
    "p": [[0.5, 2.0, 1.25], [3.0, 0.25, 1.5]],  # positive, distinct (logs, products, norms)
    "g": [[0.3, -1.2, 2.1], [1.7, 0.9, -0.6]],  # distinct (gradients)
    "h": [[[0.3, -1.2], [2.1, 1.7], [0.9, -0.6]], [[1.1, 0.2], [-0.4, 2.6], [1.4, -1.9]]],  # distinct 3-D
    "t": [[1.0, 2.0, 2.0], [-1.0, -1.0, 3.0]],  # ties for the gradient conventions
    "u": [[2.0, 1.0, 2.0], [3.0, 2.0, 0.0]],  # a median tied three times
    "q": [[1.0, 4.0, 2.0, 3.0], [2.0, 2.0, 5.0, 1.0], [0.5, 3.0, 3.0, 7.0]],  # 3 x 4 for linalg norms
    "v": [3, 1, 3, 3, 2, 2, 1],  # 1-D for unique and the scans
    "s": [0.0, NAN, 1.0, NAN],  # NaNs in 1-D
    # rows longer than the CPU kernels' vector lanes (their partial results are then combined),
    # with ties; "wn" with a NaN and infinities
    "w": [[float((i * 7 + r) % 5 - 2) for i in range(37)] for r in range(3)],
    "wn": [[float((i * 7 + r) % 5 - 2) if i not in (20, 30) else [NAN, INF, -INF][r] for i in range(37)] for r in range(3)],
    "z": 2.5,  # 0-D
}

inputs, input_key = [], {}


def add_input(t, index=False):
    t = t.detach()
    vals = (t + 1 if index else t).reshape(-1).tolist()
    rec = {"d": NAME[t.dtype], "s": list(t.shape), "v": vals}
    key = repr(rec)
    if key not in input_key:
        inputs.append(rec)
        input_key[key] = len(inputs)
    return input_key[key]


def base(name, dtype):
    b = BASE[name]
    t = b.clone().double() if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=torch.float64)
    assert dtype in FLOATS or t.isfinite().all(), "NaN and inf have no integer value"
    return t.to(DT[dtype])


def upstream(shape):
    n = 1
    for s in shape:
        n *= s
    return torch.tensor([((7 * j) % 11 - 5) / 4 for j in range(n)], dtype=torch.float64).reshape(shape)


def out_rec(t, index):
    if not isinstance(t, torch.Tensor):
        t = torch.tensor(t)
    return {"d": NAME[t.dtype], "s": list(t.shape), "v": (t + 1 if index else t).reshape(-1).tolist()}


class T:  # a tensor argument: the Lua side gets inputs[k]
    def __init__(self, t, index=False, grad=False):
        self.t, self.index, self.grad = t, index, grad


cases = []


def case(op, x, lua_args, py, idx=(), grad=True, f=False, tie=None, extra=()):
    """x a tensor; lua_args the Lua arguments (T objects for tensors); py(x, *tensors) PyTorch's call;
    idx the positions of index outputs; extra the T objects in the order py takes them"""
    c = {"op": op, "x": add_input(x)}
    args = []
    for a in lua_args:
        if isinstance(a, T):
            args.append({"T": add_input(a.t, a.index)})
        elif a is None:
            args.append({"N": True})
        elif isinstance(a, torch.dtype):
            args.append({"D": NAME[a]})
        else:
            args.append(a)
    c["a"], c["n"] = args, len(args)
    if f:
        c["f"] = True
    try:
        outs = py(x, *[e.t for e in extra])
    except (RuntimeError, IndexError, ValueError, TypeError) as e:
        c["err"] = "impl" if "not implemented for" in str(e) else "raise"
        if c["err"] == "impl" and x.dtype in (torch.float16, torch.bfloat16):
            # lutorch computes these: the reference is PyTorch's in float32, rounded to x's dtype
            try:
                outs = py(x.float(), *[e.t.float() if e.t.dtype == x.dtype else e.t for e in extra])
            except (RuntimeError, IndexError, ValueError, TypeError):
                outs = None
            if outs is not None:
                outs = [outs] if isinstance(outs, torch.Tensor) else list(outs)
                outs = [o.to(x.dtype) if o.dtype == torch.float32 else o for o in outs]
                c["o"] = [out_rec(o, i in idx) for i, o in enumerate(outs)]
                if tie is not None:
                    c["tie"] = tie
        cases.append(c)
        return
    single = isinstance(outs, torch.Tensor)
    outs = [outs] if single else list(outs)
    c["o"] = [out_rec(o, i in idx) for i, o in enumerate(outs)]
    if tie is not None:
        c["tie"] = tie
    if grad and x.dtype == torch.float64 and x.isfinite().all():  # no gradients through NaN and inf
        xg = x.clone().requires_grad_()
        eg = [e.t.clone().requires_grad_() if e.grad else e.t for e in extra]
        res = py(xg, *eg)
        res = [res] if isinstance(res, torch.Tensor) else list(res)
        loss = sum((r * upstream(r.shape)).sum() for r in res if r.is_floating_point() and r.requires_grad)
        if isinstance(loss, torch.Tensor):
            loss.backward()
            grads = [xg] + [e for e, s in zip(eg, extra) if s.grad]
            c["g"] = [(t.grad if t.grad is not None else torch.zeros_like(t)).reshape(-1).tolist() for t in grads]
            if any(e.grad for e in extra):
                c["rg"] = [i + 1 for i, e in enumerate(extra) if e.grad]
    cases.append(c)


def sweep(op, names, dtypes, lua_args, py, **kw):
    for n in names:
        for d in dtypes:
            case(op, base(n, d), lua_args, py, **kw)


# ---- full reductions and reductions over dims ----
for op in ["sum", "mean", "prod", "nansum", "nanmean", "logsumexp", "amax", "amin", "all", "any", "count_nonzero"]:
    tp = getattr(torch, op)
    if op == "logsumexp":  # PyTorch 1.13 wants a dim; lutorch's x:logsumexp() reduces all of them
        tp = lambda x, *a, **k: torch.logsumexp(x, *a, **k) if a else torch.logsumexp(x, tuple(range(x.dim())))
    sweep(op, ["m"], ALL, [], tp)
    sweep(op, ["e", "n"], ["float32", "float64"], [], tp)
    sweep(op, ["r"], ["float32", "int64"], [], tp)
    g = op not in ("all", "any", "count_nonzero")
    if op == "count_nonzero":
        sweep(op, ["c"], ["float64", "int64", "bool"], [2], lambda x: tp(x, 1))
        sweep(op, ["c"], ["float32"], [[1, 3]], lambda x: tp(x, (0, 2)))
        continue
    for d in ["float64", "int64", "bool"]:
        sweep(op, ["c"], [d], [2], lambda x: tp(x, 1))
        sweep(op, ["c"], [d], [-1, True], lambda x: tp(x, -1, keepdim=True))
    sweep(op, ["e"], ["float32"], [1], lambda x: tp(x, 0))
    sweep(op, ["e"], ["float32"], [2], lambda x: tp(x, 1))
    if g:
        sweep(op, ["g", "t"], ["float64"], [2], lambda x: tp(x, 1))
        sweep(op, ["g", "t"], ["float64"], [], tp)
        sweep(op, ["h"], ["float64"], [1, True], lambda x: tp(x, 0, keepdim=True))
    if op not in ("prod", "all", "any"):  # several dims at once
        sweep(op, ["c"], ["float32", "int32"], [[1, 3]], lambda x: tp(x, (0, 2)))
        sweep(op, ["h"], ["float64"], [[1, -1], True], lambda x: tp(x, (0, -1), keepdim=True))

for op in ["sum", "prod", "mean", "nansum", "cumsum", "cumprod"]:  # the dtype option
    tp = getattr(torch, op)
    scan = op in ("cumsum", "cumprod")  # these take a dim first
    for d, od in [(d, od) for d in ["int32", "bool", "float32", "uint8"] for od in ["float64", "int64"]] + [("float32", "float64")]:
        x = base("m" if d != "float32" or od == "int64" else "g", d)
        if scan:
            case(op, x, [2, {"dtype": {"D": od}}], lambda x, od=od: tp(x, 1, dtype=DT[od]), grad=False)
        else:
            case(op, x, [{"dtype": {"D": od}}], lambda x, od=od: tp(x, dtype=DT[od]), grad=False)

# ---- max / min / argmax / argmin ----
for op in ["max", "min"]:
    tp = getattr(torch, op)
    sweep(op, ["m", "e"], ALL, [], tp)
    sweep(op, ["n", "g", "t"], ["float32", "float64"], [], tp)
    for d in ALL:
        case(op, base("m", d), [2], lambda x: tp(x, 1), idx=(1,))
    sweep(op, ["c", "h"], ["float64", "int64"], [1, True], lambda x: tp(x, 0, keepdim=True), idx=(1,))
    sweep(op, ["c", "h"], ["float64"], [-1], lambda x: tp(x, -1), idx=(1,))
    sweep(op, ["n", "t", "g"], ["float32", "float64"], [2], lambda x: tp(x, 1), idx=(1,))
    sweep(op, ["e"], ["float32"], [2], lambda x: tp(x, 1), idx=(1,))
    sweep(op, ["e"], ["float32"], [1], lambda x: tp(x, 0), idx=(1,))
for op in ["argmax", "argmin"]:
    tp = getattr(torch, op)
    sweep(op, ["m"], ALL, [], tp, idx=(0,))
    sweep(op, ["n", "t", "c"], ["float32", "float64"], [], tp, idx=(0,))
    sweep(op, ["c", "t", "n"], ["float64"], [2], lambda x: tp(x, 1), idx=(0,))
    sweep(op, ["c", "t"], ["int64"], [2], lambda x: tp(x, 1), idx=(0,))
    sweep(op, ["c"], ["float32"], [1, True], lambda x: tp(x, 0, keepdim=True), idx=(0,))
    sweep(op, ["e"], ["float32"], [], tp, idx=(0,))
    sweep(op, ["e"], ["float32"], [2], lambda x: tp(x, 1), idx=(0,))

# ---- std / var / std_mean / var_mean ----
for op in ["std", "var"]:
    tp = getattr(torch, op)
    sweep(op, ["m"], ALL, [], tp)
    sweep(op, ["r", "n", "e"], ["float32", "float64"], [], tp)
    sweep(op, ["g", "h"], ["float64"], [], tp)
    sweep(op, ["g"], ["float64"], [{"unbiased": False}], lambda x: tp(x, unbiased=False))
    sweep(op, ["h"], ["float64"], [2], lambda x: tp(x, 1))
    sweep(op, ["h", "r"], ["float64"], [2, True, {"unbiased": False}], lambda x: tp(x, 1, keepdim=True, unbiased=False))
    sweep(op, ["h"], ["float64"], [[1, 3]], lambda x: tp(x, (0, 2)))
    sweep(op, ["h", "g"], ["float64"], [2, {"correction": 2}], lambda x: tp(x, 1, correction=2))
    sweep(op, ["h"], ["float64"], [{"N": True}, {"correction": 0}], lambda x: tp(x, None, correction=0))
    sweep(op, ["r"], ["float64"], [1], lambda x: tp(x, 0))
    sweep(op, ["h"], ["float64"], [1, {"correction": 3}], lambda x, tp=tp: tp(x, 0, correction=3))  # n - correction < 0
    sweep(op, ["g"], ["float64"], [2, True, {"correction": 0.5}], lambda x, tp=tp: tp(x, 1, keepdim=True, correction=0.5))
for op in ["std_mean", "var_mean"]:
    tp = getattr(torch, op)
    sweep(op, ["m"], ["float32", "float64", "int64", "bool"], [], tp, f=True)
    sweep(op, ["h"], ["float64"], [], tp, f=True)
    sweep(op, ["h"], ["float64"], [2, True], lambda x: tp(x, 1, keepdim=True), f=True)
    sweep(op, ["h"], ["float64"], [[1, 3], {"unbiased": False}], lambda x: tp(x, (0, 2), unbiased=False), f=True)
    sweep(op, ["g"], ["float64"], [2, {"correction": 0}], lambda x: tp(x, 1, correction=0), f=True)

# ---- norm ----
for p in [1, 2, INF, -INF, 0, 3, "fro", "nuc"]:
    pt = lambda x, p=p: torch.norm(x, p)
    if p == "nuc":
        sweep("norm", ["q", "g"], ["float32", "float64"], [p], pt)
        sweep("norm", ["m"], ["int64"], [p], pt)
        continue
    sweep("norm", ["m"], ALL, [p], pt)
    sweep("norm", ["g", "n", "e", "t"], ["float64"], [p], pt)
    sweep("norm", ["h"], ["float64"], [p, 2], lambda x, p=p: torch.norm(x, p, dim=1))
    sweep("norm", ["h"], ["float64", "float32"], [p, [1, 3], True], lambda x, p=p: torch.norm(x, p, dim=(0, 2), keepdim=True))
sweep("norm", ["g"], ["float64"], [], torch.norm)

# ---- median, nanmedian, mode, kthvalue, quantile ----
for op in ["median", "nanmedian"]:
    tp = getattr(torch, op)
    sweep(op, ["m"], ALL, [], tp)
    sweep(op, ["n", "s", "g", "t", "u", "e"], ["float32", "float64"], [], tp)
    for d in ALL:
        case(op, base("m", d), [2], lambda x: tp(x, 1), idx=(1,), tie=[2, False])
    sweep(op, ["n", "g", "t"], ["float64"], [2], lambda x: tp(x, 1), idx=(1,), tie=[2, False])
    sweep(op, ["h", "c"], ["float64"], [1, True], lambda x: tp(x, 0, keepdim=True), idx=(1,), tie=[1, True])
    sweep(op, ["e"], ["float32"], [2], lambda x: tp(x, 1), idx=(1,))
sweep("mode", ["m"], ALL, [], torch.mode, idx=(1,), tie=[-1, False])
sweep("mode", ["c", "t", "n", "r"], ["float64"], [2], lambda x: torch.mode(x, 1), idx=(1,), tie=[2, False])
sweep("mode", ["c", "t", "r"], ["int64"], [2], lambda x: torch.mode(x, 1), idx=(1,), tie=[2, False])
sweep("mode", ["c"], ["float64"], [1, True], lambda x: torch.mode(x, 0, keepdim=True), idx=(1,), tie=[1, True])
for k in [1, 2, 3]:
    sweep("kthvalue", ["m"], ALL, [k], lambda x, k=k: torch.kthvalue(x, k), idx=(1,), tie=[-1, False])
    sweep("kthvalue", ["n", "g", "t"], ["float64"], [k], lambda x, k=k: torch.kthvalue(x, k), idx=(1,), tie=[-1, False])
sweep("kthvalue", ["h"], ["float64"], [2, 1, True], lambda x: torch.kthvalue(x, 2, 0, keepdim=True), idx=(1,), tie=[1, True])
sweep("kthvalue", ["m"], ["float32"], [4], lambda x: torch.kthvalue(x, 4), idx=(1,))
for op in ["quantile", "nanquantile"]:
    tp = getattr(torch, op)
    for interp in ["linear", "lower", "higher", "midpoint", "nearest"]:
        sweep(op, ["g", "n", "s"], ["float64"], [0.4, {"interpolation": interp}], lambda x, i=interp: tp(x, 0.4, interpolation=i))
        sweep(op, ["h"], ["float64"], [0.75, 2, True, {"interpolation": interp}],
              lambda x, i=interp: tp(x, 0.75, dim=1, keepdim=True, interpolation=i))
    sweep(op, ["m"], ALL, [0.5], lambda x: tp(x, 0.5))
    sweep(op, ["n", "g"], ["float32", "float64"], [0.5, 2], lambda x: tp(x, 0.5, dim=1))
    for d in ["float32", "float64"]:
        q = torch.tensor([0.0, 0.25, 1.0], dtype=DT[d])
        sweep(op, ["g", "n"], [d], [T(q), 1], lambda x, q=q: tp(x, q, dim=0))
    sweep(op, ["g"], ["float64"], [1.5], lambda x: tp(x, 1.5))
    sweep(op, ["g"], ["float64"], [0.4, 2, {"interpolation": "lower"}], lambda x, tp=tp: tp(x, 0.4, 1, interpolation="lower"))
    q32 = torch.tensor([0.5], dtype=torch.float32)
    sweep(op, ["g"], ["float64"], [T(q32), 1], lambda x, tp=tp: tp(x, q32, dim=0))  # q of another dtype
    q2 = torch.tensor([[0.5]], dtype=torch.float64)
    sweep(op, ["g"], ["float64"], [T(q2), 1], lambda x, tp=tp: tp(x, q2, dim=0))  # a 2-D q
    sweep(op, ["g"], ["float64"], [-0.1], lambda x, tp=tp: tp(x, -0.1))
    sweep(op, ["g"], ["float64"], [0.5, 1, {"interpolation": "cubic"}], lambda x, tp=tp: tp(x, 0.5, 0, interpolation="cubic"))
    sweep(op, ["e"], ["float64"], [0.5], lambda x: tp(x, 0.5))

# ---- scans ----
for op in ["cumsum", "cumprod", "logcumsumexp"]:
    tp = getattr(torch, op)
    for d in ALL:
        case(op, base("m", d), [2], lambda x: tp(x, 1))
    sweep(op, ["n", "e", "v", "s"], ["float32", "float64"], [1], lambda x: tp(x, 0))
    sweep(op, ["g", "h", "t"], ["float64"], [1], lambda x: tp(x, 0))
    sweep(op, ["h"], ["float64"], [-1], lambda x: tp(x, -1))
sweep("cumprod", ["t"], ["float64"], [2], lambda x: torch.cumprod(x, 1))
zt = torch.tensor([[2.0, 0.0, 3.0, 0.0], [0.0, 1.5, -2.0, 4.0]], dtype=torch.float64)  # zeros: cumprod's gradient
case("cumprod", zt, [2], lambda x: torch.cumprod(x, 1))
for op in ["cummax", "cummin"]:
    tp = getattr(torch, op)
    for d in ALL:
        case(op, base("m", d), [2], lambda x: tp(x, 1), idx=(1,))
    sweep(op, ["n", "e", "v", "s"], ["float32", "float64"], [1], lambda x: tp(x, 0), idx=(1,))
    sweep(op, ["g", "h", "t"], ["float64"], [1], lambda x: tp(x, 0), idx=(1,))

# ---- sorting ----
for d in ALL:
    case("sort", base("m", d), [], lambda x: torch.sort(x, stable=True), idx=(1,))
    case("argsort", base("m", d), [2, True], lambda x: torch.argsort(x, 1, descending=True), idx=(0,), grad=False)
sweep("sort", ["m", "n", "t", "h", "s", "v"], ["float32", "float64"], [1, True], lambda x: torch.sort(x, dim=0, descending=True, stable=True), idx=(1,))
sweep("sort", ["n", "t", "g", "e", "s"], ["float64"], [-1, False, True], lambda x: torch.sort(x, dim=-1, stable=True), idx=(1,))
sweep("argsort", ["n", "t", "s"], ["float64"], [], lambda x: torch.argsort(x, stable=True), idx=(0,), grad=False)
for d in ALL:
    case("topk", base("m", d), [2], lambda x: torch.topk(x, 2), idx=(1,), tie=[-1, True])
sweep("topk", ["g", "n", "t", "h"], ["float64"], [2, 1, False], lambda x: torch.topk(x, 2, 0, largest=False), idx=(1,), tie=[1, True])
sweep("topk", ["g", "n", "t"], ["float64", "float32"], [3, 2, True, True], lambda x: torch.topk(x, 3, 1), idx=(1,), tie=[2, True])
sweep("topk", ["g"], ["float64"], [0], lambda x: torch.topk(x, 0), idx=(1,))
sweep("topk", ["g"], ["float64"], [4], lambda x: torch.topk(x, 4), idx=(1,))

# ---- unique ----
for d in ALL:
    case("unique", base("m", d), [], torch.unique, grad=False)
for nm in ["v", "m", "e", "c"]:
    for d in ["float32", "int64"]:
        case("unique", base(nm, d), [{"return_inverse": True, "return_counts": True}],
             lambda x: torch.unique(x, return_inverse=True, return_counts=True), idx=(1,), grad=False)
        case("unique_consecutive", base(nm, d), [{"return_inverse": True, "return_counts": True}],
             lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True), idx=(1,), grad=False)
for d in ALL:
    case("unique_consecutive", base("v", d), [], torch.unique_consecutive, grad=False)
UD = torch.tensor([[1, 2, 1, 2], [0, 3, 0, 1], [1, 2, 1, 2]])  # repeated rows, repeated columns
for d in ["int64", "float32", "bool", "uint8"]:
    for t in [UD, base("c", "int64"), torch.zeros(0, 3, dtype=torch.int64)]:
        for dim in ([0, 1, 2] if t.dim() == 3 else [0, 1]):
            for op in ["unique", "unique_consecutive"]:
                tp = getattr(torch, op)
                case(op, t.to(DT[d]), [{"dim": dim + 1, "return_inverse": True, "return_counts": True}],
                     lambda x, tp=tp, dim=dim: tp(x, dim=dim, return_inverse=True, return_counts=True), idx=(1,), grad=False)
case("unique", UD, [{"dim": -1}], lambda x: torch.unique(x, dim=-1), grad=False)

# ---- gather / scatter family ----
I2 = torch.tensor([[2, 0, 2], [1, 1, 0]])  # 2 x 3 indices into dim 0 of a 3 x 3
I1 = torch.tensor([[0, 2], [1, 1]])  # 2 x 2 indices into dim 1
X3 = [[1.0, -2.0, 3.5], [4.0, 0.5, -6.0], [7.0, 8.0, 9.5]]
S23 = [[0.5, 1.5, -2.0], [3.0, -4.0, 2.5]]
for d in ALL:
    x = torch.tensor(X3, dtype=torch.float64).to(DT[d])
    case("gather", x, [1, T(I2, True)], lambda x, i: torch.gather(x, 0, i), extra=[T(I2, True)])
    case("gather", x, [2, T(I1, True)], lambda x, i: torch.gather(x, 1, i), extra=[T(I1, True)])
    src = torch.tensor(S23, dtype=torch.float64).to(DT[d])
    case("scatter", x, [1, T(I2, True), T(src, grad=True)], lambda x, i, s: torch.scatter(x, 0, i, s),
         extra=[T(I2, True), T(src, grad=True)], grad=False)
    case("scatter_add", x, [1, T(I2, True), T(src)], lambda x, i, s: torch.scatter_add(x, 0, i, s),
         extra=[T(I2, True), T(src)])
    case("index_select", x, [2, T(torch.tensor([2, 0, 2]), True)],
         lambda x, i: torch.index_select(x, 1, i), extra=[T(torch.tensor([2, 0, 2]), True)])
xg = torch.tensor(X3, dtype=torch.float64)
sg = torch.tensor(S23, dtype=torch.float64)
I2u = torch.tensor([[2, 0, 1], [1, 2, 0]])  # no repeats within a column: scatter's gradient is defined
case("scatter", xg, [1, T(I2u, True), T(sg, grad=True)], lambda x, i, s: torch.scatter(x, 0, i, s),
     extra=[T(I2u, True), T(sg, grad=True)])
case("scatter", xg, [1, T(I2u, True), 2.5], lambda x, i: torch.scatter(x, 0, i, 2.5), extra=[T(I2u, True)])
case("scatter_add", xg, [1, T(I2, True), T(sg, grad=True)], lambda x, i, s: torch.scatter_add(x, 0, i, s),
     extra=[T(I2, True), T(sg, grad=True)])
s22 = sg[:, :2].contiguous()
case("scatter_add", xg, [2, T(I1, True), T(s22, grad=True)], lambda x, i, s: torch.scatter_add(x, 1, i, s),
     extra=[T(I1, True), T(s22, grad=True)])
for red in ["add", "multiply"]:
    for d in ["float64", "float32", "int64"]:
        x, s = xg.to(DT[d]), sg.to(DT[d])
        case("scatter", x, [1, T(I2, True), T(s), {"reduce": red}],
             lambda x, i, s, r=red: torch.scatter(x, 0, i, s, reduce=r), extra=[T(I2, True), T(s)], grad=False)
        case("scatter", x, [1, T(I2, True), 2.0, {"reduce": red}],
             lambda x, i, r=red: torch.scatter(x, 0, i, 2.0, reduce=r), extra=[T(I2, True)], grad=False)
for red in ["sum", "prod", "mean", "amax", "amin"]:
    for inc in [True, False]:
        for d in ["float64", "float32", "int64", "bool", "float16"]:
            x = torch.tensor([[1.0, -2.0, 3.5], [4.0, 0.5, -6.0], [7.0, 8.0, 0.0]], dtype=torch.float64).to(DT[d])
            s = torch.tensor([[0.5, 1.5, -2.0], [3.0, -4.0, 2.5], [2.0, 1.5, 5.0]], dtype=torch.float64).to(DT[d])
            ii = torch.tensor([[2, 0, 2], [2, 1, 2], [0, 0, 2]])
            case("scatter_reduce", x, [1, T(ii, True), T(s, grad=True), red, {"include_self": inc}],
                 lambda x, i, s, r=red, inc=inc: torch.scatter_reduce(x, 0, i, s, r, include_self=inc),
                 extra=[T(ii, True), T(s, grad=True)])
        xt = torch.tensor([[1.0, 2.0], [3.0, 2.0]], dtype=torch.float64)  # ties with the source: amax/amin split
        st = torch.tensor([[2.0, 2.0], [3.0, 1.0]], dtype=torch.float64)
        it = torch.tensor([[0, 0], [0, 0]])
        case("scatter_reduce", xt, [1, T(it, True), T(st, grad=True), red, {"include_self": inc}],
             lambda x, i, s, r=red, inc=inc: torch.scatter_reduce(x, 0, i, s, r, include_self=inc),
             extra=[T(it, True), T(st, grad=True)])
IX = torch.tensor([2, 0, 2])
for d in ALL:
    x = torch.tensor(X3, dtype=torch.float64).to(DT[d])
    s = torch.tensor([[0.5, 1.5, -2.0], [3.0, -4.0, 2.5], [1.0, 2.0, 3.0]], dtype=torch.float64).to(DT[d])
    case("index_add", x, [1, T(IX, True), T(s, grad=True)], lambda x, i, s: torch.index_add(x, 0, i, s),
         extra=[T(IX, True), T(s, grad=True)])
    case("index_fill", x, [2, T(torch.tensor([0, 2]), True), 1], lambda x, i: torch.index_fill(x, 1, i, 1),
         extra=[T(torch.tensor([0, 2]), True)])
    case("index_copy", x, [1, T(torch.tensor([2, 0, 1]), True), T(s, grad=True)],
         lambda x, i, s: torch.index_copy(x, 0, i, s), extra=[T(torch.tensor([2, 0, 1]), True), T(s, grad=True)])
case("index_add", xg, [2, T(IX, True), T(sg.t().contiguous(), grad=True), {"alpha": 2}],
     lambda x, i, s: torch.index_add(x, 1, i, s, alpha=2), extra=[T(IX, True), T(sg.t().contiguous(), grad=True)])
case("index_add", xg, [1, T(IX, True), T(sg.t().contiguous())], lambda x, i, s: torch.index_add(x, 0, i, s),
     extra=[T(IX, True), T(sg.t().contiguous())])  # source of the wrong shape
case("index_fill", xg, [1, T(torch.tensor([1]), True), -1.5], lambda x, i: torch.index_fill(x, 0, i, -1.5),
     extra=[T(torch.tensor([1]), True)])
case("gather", xg, [1, T(torch.tensor([[3, 0, 0]]), True)], lambda x, i: torch.gather(x, 0, i),
     extra=[T(torch.tensor([[3, 0, 0]]), True)])  # out of range

# int32 indices: index_select and the index_* ops take them, gather, scatter and take do not
I32 = torch.tensor([2, 0, 2], dtype=torch.int32)
I32c = torch.tensor([2, 0, 1], dtype=torch.int32)
G32 = torch.tensor([[2, 0, 2]], dtype=torch.int32)
s33 = torch.tensor([[0.5, 1.5, -2.0], [3.0, -4.0, 2.5], [1.0, 2.0, 3.0]], dtype=torch.float64)
for op, a, py, ex in [
        ("index_select", [2, T(I32, True)], lambda x, i: torch.index_select(x, 1, i), [T(I32, True)]),
        ("index_add", [1, T(I32, True), T(s33)], lambda x, i, s: torch.index_add(x, 0, i, s), [T(I32, True), T(s33)]),
        ("index_copy", [1, T(I32c, True), T(s33)], lambda x, i, s: torch.index_copy(x, 0, i, s), [T(I32c, True), T(s33)]),
        ("index_fill", [2, T(I32, True), 2.0], lambda x, i: torch.index_fill(x, 1, i, 2.0), [T(I32, True)]),
        ("gather", [1, T(G32, True)], lambda x, i: torch.gather(x, 0, i), [T(G32, True)]),
        ("scatter_add", [1, T(G32, True), T(s33)], lambda x, i, s: torch.scatter_add(x, 0, i, s), [T(G32, True), T(s33)]),
        ("take", [T(I32, True)], lambda x, i: torch.take(x, i), [T(I32, True)])]:
    case(op, torch.tensor(X3, dtype=torch.float64), a, py, extra=ex)

# ---- masks, take, nonzero, where ----
MASK = torch.tensor([[True, False, True], [False, False, True]])
for d in ALL:
    x = base("m", d)
    case("masked_select", x, [T(MASK)], lambda x, m: torch.masked_select(x, m), extra=[T(MASK)])
    case("masked_fill", x, [T(MASK), 1], lambda x, m: torch.masked_fill(x, m, 1), extra=[T(MASK)])
    src = base("c", d).reshape(-1)
    case("masked_scatter", x, [T(MASK), T(src, grad=True)], lambda x, m, s: x.masked_scatter(m, s),
         extra=[T(MASK), T(src, grad=True)])
    case("take", x, [T(torch.tensor([[5, 0], [2, 2]]), True)], lambda x, i: torch.take(x, i),
         extra=[T(torch.tensor([[5, 0], [2, 2]]), True)])
    case("take_along_dim", x, [T(torch.tensor([[2, 0], [1, 1]]), True), 2],
         lambda x, i: torch.take_along_dim(x, i, 1), extra=[T(torch.tensor([[2, 0], [1, 1]]), True)])
    case("nonzero", x, [], torch.nonzero, idx=(0,))
    case("where", x, [], torch.where, idx=(0, 1), f=True)
for nm in ["g", "h"]:
    x = base(nm, "float64")
    m = x > 0.5
    case("masked_select", x, [T(m)], lambda x, m: torch.masked_select(x, m), extra=[T(m)])
    case("masked_fill", x, [T(m), -3.5], lambda x, m: torch.masked_fill(x, m, -3.5), extra=[T(m)])
    case("take_along_dim", x, [T(torch.zeros([1] + list(x.shape[1:]), dtype=torch.long), True), 1],
         lambda x, i: torch.take_along_dim(x, i, 0), extra=[T(torch.zeros([1] + list(x.shape[1:]), dtype=torch.long), True)])
    case("nonzero", x > 0.5, [], torch.nonzero, idx=(0,))
    case("where", x > 0.5, [], torch.where, idx=tuple(range(x.dim())), f=True)
mrow = torch.tensor([True, False, True])  # broadcast mask
case("masked_fill", base("g", "float64"), [T(mrow), 0.25], lambda x, m: torch.masked_fill(x, m, 0.25), extra=[T(mrow)])
case("masked_select", base("g", "float64"), [T(mrow)], lambda x, m: torch.masked_select(x, m), extra=[T(mrow)])
case("take_along_dim", base("g", "float64"), [T(torch.tensor([5, 0, 3]), True)], lambda x, i: torch.take_along_dim(x, i),
     extra=[T(torch.tensor([5, 0, 3]), True)])
case("masked_fill", base("m", "int64"), [T(MASK), 2.7], lambda x, m: torch.masked_fill(x, m, 2.7), extra=[T(MASK)])
case("masked_fill", base("g", "float64"), [T(torch.tensor(True)), 1.0], lambda x, m: torch.masked_fill(x, m, 1.0),
     extra=[T(torch.tensor(True))])  # a 0-D mask
ib = torch.tensor([[0], [2]])  # broadcast along dim 0... and taken along dim 1
case("take_along_dim", base("g", "float64"), [T(ib, True), 2], lambda x, i: torch.take_along_dim(x, i, 1), extra=[T(ib, True)])
ib1 = torch.tensor([[1]])
case("take_along_dim", base("g", "float64"), [T(ib1, True), 2], lambda x, i: torch.take_along_dim(x, i, 1), extra=[T(ib1, True)])
i12 = torch.tensor([[2, 0]])  # an index smaller than src (PyTorch 1.13 has no gradient of src there)
case("scatter_add", torch.zeros(3, 3, dtype=torch.float64), [1, T(i12, True), T(sg)],
     lambda x, i, s: torch.scatter_add(x, 0, i, s), extra=[T(i12, True), T(sg)])
case("masked_select", base("e", "float32"), [T(torch.zeros(0, 3, dtype=torch.bool))],
     lambda x, m: torch.masked_select(x, m), extra=[T(torch.zeros(0, 3, dtype=torch.bool))])
case("nonzero", base("e", "float32"), [], torch.nonzero, idx=(0,))

# ---- shape ops ----
for d in ALL:
    x = base("c", d)
    case("flip", x, [[1, 3]], lambda x: torch.flip(x, (0, 2)))
    case("roll", x, [1, 2], lambda x: torch.roll(x, 1, 1))
    case("diff", base("m", d), [], torch.diff)
    case("tril", base("m", d), [], torch.tril)
    case("triu", base("m", d), [1], lambda x: torch.triu(x, 1))
    case("repeat_interleave", base("m", d), [2, 1], lambda x: torch.repeat_interleave(x, 2, 0))
    case("tile", base("m", d), [[2, 1, 2]], lambda x: torch.tile(x, (2, 1, 2)))
    case("narrow", x, [2, 2, 2], lambda x: torch.narrow(x, 1, 1, 2))
    case("unfold", x, [2, 2, 1], lambda x: x.unfold(1, 2, 1))
    case("diagonal", x, [1, 2, 3], lambda x: torch.diagonal(x, 1, 1, 2))
    case("diag_embed", base("m", d), [], torch.diag_embed)
for nm in ["g", "h"]:
    x = base(nm, "float64")
    case("flip", x, [-1], lambda x: torch.flip(x, (-1,)))
    case("roll", x, [[1, -1], [1, 2]], lambda x: torch.roll(x, (1, -1), (0, 1)))
    case("roll", x, [2], lambda x: torch.roll(x, 2))
    case("diff", x, [1, 1], lambda x: torch.diff(x, 1, 0))
    case("diff", x, [2, 2], lambda x: torch.diff(x, 2, 1))
    case("diff", x, [1, -1, T(x.narrow(-1, 0, 1))], lambda x, p: torch.diff(x, 1, -1, p), extra=[T(x.narrow(-1, 0, 1), grad=True)])
    case("diff", x, [1, -1, {"N": True}, T(x.narrow(-1, 0, 1) * 2)], lambda x, a: torch.diff(x, 1, -1, None, a),
         extra=[T(x.narrow(-1, 0, 1) * 2, grad=True)])
    for k in [-2, -1, 0, 1, 2, 3]:
        case("tril", x, [k], lambda x, k=k: torch.tril(x, k))
        case("triu", x, [k], lambda x, k=k: torch.triu(x, k))
    case("repeat_interleave", x, [T(torch.tensor([1, 0, 2])), 2] if nm == "g" else [T(torch.tensor([2, 0, 1])), -2],
         lambda x, r: torch.repeat_interleave(x, r, 1), extra=[T(torch.tensor([1, 0, 2] if nm == "g" else [2, 0, 1]))])
    case("repeat_interleave", x, [2], lambda x: torch.repeat_interleave(x, 2))
    case("tile", x, [[2]], lambda x: torch.tile(x, (2,)))
    case("narrow", x, [-1, 1, 1], lambda x: torch.narrow(x, -1, 0, 1))
    case("narrow", x, [1, 2, 0], lambda x: torch.narrow(x, 0, 1, 0))
    case("unfold", x, [-1, 2, 1], lambda x: x.unfold(-1, 2, 1))
    case("unfold", x, [2, 1, 2], lambda x: x.unfold(1, 1, 2))
    for off in [-2, -1, 0, 1, 2, 5]:
        case("diagonal", x, [off], lambda x, o=off: torch.diagonal(x, o))
    case("diagonal", x, [0, -1, 1], lambda x: torch.diagonal(x, 0, -1, 0))
    for off, d1, d2 in [(0, -2, -1), (1, -2, -1), (-1, 1, 3), (2, 3, 1)]:
        case("diag_embed", x, [off, d1, d2], lambda x, o=off, a=d1, b=d2: torch.diag_embed(x, o, a - 1 if a > 0 else a, b - 1 if b > 0 else b))
x = base("h", "float64")
case("roll", x, [1, 4], lambda x: torch.roll(x, 1, 3))  # dim out of range
case("unfold", x, [2, 4, 1], lambda x: x.unfold(1, 4, 1))  # window larger than the dim
case("diff", base("e", "float32"), [], torch.diff)
case("narrow", base("g", "float64"), [2, 3, 2], lambda x: torch.narrow(x, 1, 2, 2))  # past the end

# cat / stack of mixed dtypes: the result has the promoted dtype
PAIRS = [("float32", "float64"), ("int64", "float32"), ("int32", "int64"), ("bool", "int8"), ("uint8", "int8"),
         ("float16", "bfloat16"), ("bool", "float16"), ("int64", "bool"), ("uint8", "float64")]
for a, b in PAIRS:
    xa, xb = base("m", a), base("m", b)
    case("cat", xa, [T(xb), 1], lambda x, y: torch.cat([x, y], 0), extra=[T(xb)], f=True)
    case("cat", xa, [T(xb), 2], lambda x, y: torch.cat([x, y], 1), extra=[T(xb)], f=True)
    case("stack", xa, [T(xb), 2], lambda x, y: torch.stack([x, y], 1), extra=[T(xb)], f=True)
xa, xb = base("g", "float64"), base("m", "float64")
case("cat", xa, [T(xb, grad=True), 2], lambda x, y: torch.cat([x, y], 1), extra=[T(xb, grad=True)], f=True)
case("stack", xa, [T(xb, grad=True), -1], lambda x, y: torch.stack([x, y], -1), extra=[T(xb, grad=True)], f=True)
case("cat", xa, [T(base("e", "float32")), 1], lambda x, y: torch.cat([x, y], 0), extra=[T(base("e", "float32"))], f=True)
case("cat", xa, [T(base("c", "float64")), 1], lambda x, y: torch.cat([x, y], 0), extra=[T(base("c", "float64"))], f=True)
case("cat", xa, [T(torch.zeros(0, dtype=torch.float64)), 1], lambda x, y: torch.cat([x, y], 0),
     extra=[T(torch.zeros(0, dtype=torch.float64))], f=True)  # PyTorch skips a 1-D empty tensor
case("stack", xa, [T(base("r", "float64")), 1], lambda x, y: torch.stack([x, y], 0), extra=[T(base("r", "float64"))], f=True)

# ---- long rows (the kernels' lanes combined) and 0-D inputs ----
LONG = {
    "sum": [[], [2], [1]], "prod": [[2]], "mean": [[], [2]], "amax": [[], [2], [1]], "amin": [[2]],
    "logsumexp": [[2], [1]], "std": [[], [2]], "var": [[1]], "norm": [[2, 2], [INF, 1]],
    "max": [[], [2], [1]], "min": [[2]], "argmax": [[], [2], [1]], "argmin": [[2]],
    "cumsum": [[2]], "cumprod": [[1]], "cummax": [[2]], "cummin": [[2]], "logcumsumexp": [[2]],
    "sort": [[2]], "argsort": [[2, True]], "median": [[2]], "mode": [[2]], "kthvalue": [[20, 2]], "topk": [[5, 2]],
    "count_nonzero": [[2]], "any": [[2]], "all": [[1]], "nansum": [[2]], "nanmean": [[2]], "nanmedian": [[2]],
}
IDX = {"max": (1,), "min": (1,), "argmax": (0,), "argmin": (0,), "cummax": (1,), "cummin": (1,), "sort": (1,),
       "argsort": (0,), "median": (1,), "mode": (1,), "kthvalue": (1,), "topk": (1,), "nanmedian": (1,)}
TIE = {"median": [2, False], "mode": [2, False], "kthvalue": [2, False], "topk": [2, True], "nanmedian": [2, False]}


def py_args(op, a):
    """PyTorch's call for the Lua arguments a (dims 1-based there)"""
    tp = getattr(torch, op)
    if op in ("max", "min", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "median",
              "mode", "nanmedian", "sum", "mean", "amax", "amin", "logsumexp", "std", "var", "count_nonzero", "any",
              "all", "nansum", "nanmean", "prod"):
        if not a:
            return lambda x: tp(x)
        return lambda x: tp(x, a[0] - 1)
    if op == "sort":
        return lambda x: torch.sort(x, dim=a[0] - 1, stable=True)
    if op == "argsort":
        return lambda x: torch.argsort(x, dim=a[0] - 1, descending=a[1], stable=True)
    if op == "norm":
        return lambda x: torch.norm(x, a[0], dim=a[1] - 1)
    if op in ("kthvalue", "topk"):
        return lambda x: tp(x, a[0], a[1] - 1)
    raise ValueError(op)


for op, variants in LONG.items():
    for v, a in enumerate(variants):  # the first on five dtypes, the others on two
        for d in (["float32", "float64", "int64", "float16", "bool"] if v == 0 else ["float64", "int64"]):
            for nm in (["w", "wn"] if d == "float64" else ["w"]):
                case(op, base(nm, d), a, py_args(op, a), idx=IDX.get(op, ()), tie=TIE.get(op))
for op in ["sum", "mean", "prod", "amax", "max", "argmax", "std", "logsumexp", "cumsum", "cummax", "sort", "median",
           "kthvalue", "topk", "count_nonzero", "all", "norm", "flip", "tril", "diag_embed", "diff"]:
    x = base("z", "float64")
    if op in ("cumsum", "cummax", "sort", "max", "argmax", "logsumexp", "median"):
        a = [1]
    elif op in ("kthvalue", "topk"):
        a = [1, 1]
    elif op == "norm":
        a = [2]
    elif op == "flip":
        a = [[1]]
    else:
        a = []
    py = {"flip": lambda x: torch.flip(x, (0,)), "norm": lambda x: torch.norm(x, 2),
          "kthvalue": lambda x: torch.kthvalue(x, 1, 0), "topk": lambda x: torch.topk(x, 1, 0),
          "sort": lambda x: torch.sort(x, dim=0, stable=True)}.get(op)
    if py is None:
        py = (lambda x, op=op: getattr(torch, op)(x, 0)) if a == [1] else (lambda x, op=op: getattr(torch, op)(x))
    case(op, x, a, py, idx=IDX.get(op, ()))

# 0-D inputs with dim 1 (PyTorch's 0 or -1, which a 0-D tensor takes as if it were 1-D)
z = base("z", "float64")
for op in ["sum", "mean", "amax", "argmax", "std", "var", "logsumexp", "median", "nanmedian", "mode", "nansum",
           "count_nonzero", "all", "any", "cumprod", "logcumsumexp", "cummin", "argsort", "min", "prod", "nanmean"]:
    tp = getattr(torch, op)
    case(op, z, [1], lambda x, tp=tp: tp(x, 0), idx=IDX.get(op, (0,) if op in ("argmax", "argsort") else ()))
    keeps = op not in ("cumprod", "logcumsumexp", "cummin", "argsort", "count_nonzero")  # these have no keepdim
    case(op, z, [-1, True] if keeps else [-1], (lambda x, tp=tp: tp(x, -1, keepdim=True)) if keeps else
         (lambda x, tp=tp: tp(x, -1)), idx=IDX.get(op, (0,) if op in ("argmax", "argsort") else ()))
case("kthvalue", z, [1, 1, True], lambda x: torch.kthvalue(x, 1, 0, keepdim=True), idx=(1,))
z0 = torch.tensor(0)
case("gather", z, [1, T(z0, True)], lambda x, i: torch.gather(x, 0, i), extra=[T(z0, True)])
case("index_select", z, [1, T(z0, True)], lambda x, i: torch.index_select(x, 0, i), extra=[T(z0, True)])
case("roll", z, [1, 1], lambda x: torch.roll(x, 1, 0))
case("narrow", z, [1, 1, 1], lambda x: torch.narrow(x, 0, 0, 1))
case("quantile", z, [0.5, 1], lambda x: torch.quantile(x, 0.5, 0))
case("norm", z, [2, 1], lambda x: torch.norm(x, 2, 0))
case("unique_consecutive", z, [{"dim": 1}], lambda x: torch.unique_consecutive(x, dim=0))
case("unique", z, [{"dim": 1}], lambda x: torch.unique(x, dim=0), grad=False)
case("masked_fill", z, [T(torch.tensor(True)), 1.0], lambda x, m: torch.masked_fill(x, m, 1.0), extra=[T(torch.tensor(True))])
case("take", z, [T(z0, True)], lambda x, i: torch.take(x, i), extra=[T(z0, True)])
case("nonzero", z, [], torch.nonzero, idx=(0,))

# ---- bad dims: 0 (no dim in lutorch's 1-based counting, PyTorch has no such call: an error) and
# 3 of a 2-D tensor (out of range in both); repeated dims ----
def no_dim(x):
    raise ValueError("dim 0 is not a dim in lutorch")


BAD = {"sum": [], "mean": [], "amax": [], "amin": [], "max": [], "min": [], "argmax": [], "std": [], "var": [],
       "cumsum": [], "cumprod": [], "cummax": [], "logcumsumexp": [], "sort": [], "argsort": [], "logsumexp": [],
       "median": [], "nanmedian": [], "mode": [], "kthvalue": [1], "topk": [1], "flip": [], "roll": [1],
       "count_nonzero": [], "all": [], "any": [], "nansum": [], "nanmean": [], "prod": []}
for op, pre in BAD.items():
    x = base("g", "float64")
    tp = getattr(torch, op)
    if op == "roll":
        case(op, x, [1, 0], no_dim)
        case(op, x, [1, 3], lambda x: torch.roll(x, 1, 2))
        continue
    case(op, x, pre + [0], no_dim)
    case(op, x, pre + [3], lambda x, tp=tp, pre=pre: tp(x, *pre, 2))
for op in ["sum", "amax", "std", "count_nonzero", "logsumexp", "nansum", "mean"]:
    tp = getattr(torch, op)
    case(op, base("g", "float64"), [[1, 1]], lambda x, tp=tp: tp(x, (0, 0)))
    case(op, base("g", "float64"), [[2, -1]], lambda x, tp=tp: tp(x, (1, -1)))
    case(op, base("g", "float64"), [[1, 0]], no_dim)
x = base("g", "float64")
for op, a, py in [("gather", [0, T(I1, True)], no_dim), ("index_select", [0, T(IX, True)], no_dim),
                  ("narrow", [0, 1, 1], no_dim), ("unfold", [0, 1, 1], no_dim), ("diff", [1, 0], no_dim),
                  ("diagonal", [0, 0, 2], no_dim), ("diag_embed", [0, 0, 2], no_dim),
                  ("repeat_interleave", [2, 0], no_dim), ("take_along_dim", [T(torch.zeros(1, 3, dtype=torch.long), True), 0], no_dim),
                  ("scatter_add", [0, T(I1, True), T(x)], no_dim), ("index_fill", [0, T(IX, True), 1.0], no_dim),
                  ("unique_consecutive", [{"dim": 0}], no_dim), ("quantile", [0.5, 0], no_dim),
                  ("unique", [{"dim": 0}], no_dim), ("unique", [{"dim": 3}], lambda x: torch.unique(x, dim=2)),
                  ("unique", [{"dim": -3}], lambda x: torch.unique(x, dim=-3))]:
    case(op, x, a, py)

# ---- unique along a dim, more ----
# slices along the last dim of a 3-D tensor, which PyTorch 1.13 flattens in the order of
# x.transpose(dim, 0) (x[:, :, k] column by column): the slices [[0, 5], [1, 0]], [[0, 1], [5, 0]]
# and the first again are in the other order when flattened row by row
UM = torch.tensor([[[0, 0, 0], [5, 1, 5]], [[1, 5, 1], [0, 0, 0]]])
# 4-D, a slice repeated along each dim (apart along dims 1 and 2, in a run along dims 3 and 4)
U4 = torch.tensor([(i * 7 + i // 3) % 4 for i in range(16)]).reshape(2, 2, 2, 2)
U4 = U4[[1, 0, 1]][:, [1, 0, 1]][:, :, [0, 1, 1]][:, :, :, [1, 0, 0]]
for d in ALL:
    for dim in [3, -1]:
        case("unique", UM.to(DT[d]), [{"dim": dim, "return_inverse": True, "return_counts": True}],
             lambda x, dim=dim: torch.unique(x, dim=dim - 1 if dim > 0 else dim, return_inverse=True,
                                             return_counts=True), idx=(1,), grad=False)
for d in ["int64", "float64", "float16", "bfloat16", "int32", "int8"]:
    for dim in [1, 2, 3, 4, -3]:
        for op in ["unique", "unique_consecutive"]:
            tp = getattr(torch, op)
            case(op, U4.to(DT[d]), [{"dim": dim, "return_inverse": True, "return_counts": True}],
                 lambda x, tp=tp, dim=dim: tp(x, dim=dim - 1 if dim > 0 else dim, return_inverse=True,
                                              return_counts=True), idx=(1,), grad=False)
# the options one at a time (sorted = false sorts all the same with a dim)
case("unique", U4, [{"dim": 2, "return_counts": True}], lambda x: torch.unique(x, dim=1, return_counts=True), grad=False)
case("unique", U4, [{"dim": 4, "return_inverse": True}], lambda x: torch.unique(x, dim=3, return_inverse=True),
     idx=(1,), grad=False)
case("unique", U4, [{"dim": 1, "sorted": False}], lambda x: torch.unique(x, dim=0, sorted=False), grad=False)
case("unique", torch.tensor([3, 1, 3, 2]), [{"dim": 1, "return_inverse": True}],
     lambda x: torch.unique(x, dim=0, return_inverse=True), idx=(1,), grad=False)

write("reduction_sweep_reference.lua", "gen_reduction_sweep.py",
      ["A differential sweep of reductions, scans, sorts, indexing and shape ops; the format is",
       "described in tools/gen_reduction_sweep.py. Read by spec/reduction_sweep_spec.lua."],
      {"inputs": inputs, "cases": cases})
print(len(inputs), "inputs,", len(cases), "cases")
