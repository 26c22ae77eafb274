#!/usr/bin/env python3
"""Writes spec/data/elementwise_sweep_reference.lua: an OpInfo-like sweep of the elementwise ops
(unary math, binary arithmetic and comparisons, bitwise and logical ops, the ternary ones) over every
dtype, on a few values per dtype chosen for their edge cases (0, -0, negatives, NaN, inf, large
values, each integer dtype's extremes and wraparound), and of type promotion (tensor-tensor over
every pair of dtypes, tensor-number with Lua integers and floats, 0-dim tensors beside dimensioned
ones). For each case: PyTorch 1.13's result (values, dtype, shape), or err = true where it raises.
Read by spec/elementwise_sweep_spec.lua.

Run: python3 tools/gen_elementwise_sweep.py  (needs PyTorch 1.13; the generated file is committed).

Format: `inputs` maps a name to {dtype, shape, data}; a case is {op, args, kw, out} where op is the
name of a torch function (called as torch[op](args..., kw)), an argument is the name of an input
(a string), a number (a Lua integer for a Python int, a float for a Python float) or "nil", and
out is {dtype, shape, data} (data flat, row-major) or absent with err = true."""
import math
import operator

import torch

from lua_reference import write

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
FLOATS = DTYPES[:4]
INTS = DTYPES[4:9]
inf, nan = math.inf, math.nan

# ---- inputs: a and b of each dtype, paired element by element for the binary ops ----
# (1e-40 is a float32 subnormal, 3e38 near float32's largest: float16 holds neither, and overflows)
FA = [0.0, -0.0, 0.25, -0.75, 1.0, -1.0, 1.5, -2.5, 2.5, 3.7, -7.2, 100.0, 1e30, nan, inf, -inf, 0.5, 1e-40, 3e38]
FB = [0.0, 0.0, -0.0, 2.0, inf, -3.0, 0.5, 1.5, -2.0, 0.3, 2.5, -inf, 1e30, 1.0, 2.0, inf, -0.5, 3.0, 2.0]
# b never 0 (integer division by zero raises, checked apart) and never -1 beside the dtype's minimum
# for int32/int64 (PyTorch 1.13 dies of SIGFPE there: see the departures in the spec)
IA = {
    "int64": [0, 1, -1, 7, -7, 100, -128, 2 ** 31 - 1, -2 ** 31, 2 ** 63 - 1, -2 ** 63, 3],
    "int32": [0, 1, -1, 7, -7, 100, -128, 2 ** 31 - 1, -2 ** 31, 65536, 3],
    "int16": [0, 1, -1, 7, -7, 100, -128, 32767, -32768, 255, 3],
    "int8": [0, 1, -1, 7, -7, 100, -128, 127, -100, 3],
    "uint8": [0, 1, 2, 7, 100, 127, 128, 200, 255, 3],
}
IB = {
    "int64": [3, -2, 5, 2, 3, -7, 7, 2, -3, 2, 3, 63],
    "int32": [3, -2, 5, 2, 3, -7, 7, 2, -3, 17, 31],
    "int16": [3, -2, 5, 2, 3, -7, -1, 2, -1, 9, 15],
    "int8": [3, -2, 5, 2, 3, -7, -1, 2, -3, 7],
    "uint8": [3, 2, 5, 2, 3, 7, 7, 2, 1, 8],
}
BA = [True, False, True, False]
BB = [True, True, False, False]

inputs = {}
tensors = {}


def add_input(name, data, dtype):
    t = torch.tensor(data, dtype=getattr(torch, dtype))
    inputs[name] = {"dtype": dtype, "shape": list(t.shape), "data": [t.tolist()] if t.dim() == 0 else t.tolist()}
    tensors[name] = t
    return name


def pair(dt):
    if dt in FLOATS:
        return FA, FB
    if dt == "bool":
        return BA, BB
    return IA[dt], IB[dt]


for dt in DTYPES:
    a, b = pair(dt)
    add_input(dt + "_a", a, dt)
    add_input(dt + "_b", b, dt)
    n = len(a)
    # a third operand (addcmul, lerp weights, clamp bounds), a condition, small exponents, zeros
    if dt in FLOATS:
        c = [(-1.0, 2.0, 0.5, nan, -0.0, 3.0, 1.5, -1.0)[i % 8] for i in range(n)]
        hi = [(2.0, 1.0, -1.0, 2.0, 0.0, nan, 4.0, 0.5)[i % 8] for i in range(n)]
    elif dt == "bool":
        c, hi = [False, True, True, False], [True, False, True, True]
    else:
        lo_v = (-1, 2, 0, 5, -3, 1, 100) if dt != "uint8" else (1, 2, 0, 5, 3, 1, 100)
        c = [lo_v[i % 7] for i in range(n)]
        hi = [(2, 1, 7, 5, 0, 3, 127)[i % 7] for i in range(n)]
    add_input(dt + "_c", c, dt)
    add_input(dt + "_hi", hi, dt)
    add_input(dt + "_e", [(i % 4) for i in range(n)], dt if dt != "bool" else "int64")
    add_input(dt + "_z", [(i % 3 == 1) for i in range(n)] if dt == "bool" else [0] * n, dt)
    add_input(dt + "_cond", [(i % 3 != 1) for i in range(n)], "bool")
    # shift amounts: b made non-negative (PyTorch 1.13 shifts by a negative amount as x86 does, an
    # undefined behaviour of C++ that lutorch defines as later PyTorch: see spec/bitwise_spec.lua)
    add_input(dt + "_sh", [abs(v) for v in b] if dt in INTS else b, dt)
    # type promotion operands: four values, and a 0-dim one
    add_input(dt + "_p", BA if dt == "bool" else [1, 2, 0, 3] if dt == "uint8" else [1.5, -2.0, 0.0, 3.0]
              if dt in FLOATS else [1, -2, 0, 3], dt)
    add_input(dt + "_s", True if dt == "bool" else 3 if dt not in FLOATS else 2.5, dt)

cases = []


def record(op, args, kw, fn):
    """runs fn on the tensors named in args; records the result or the fact that PyTorch raises"""
    targs = [tensors[a] if isinstance(a, str) and a != "nil" else (None if a == "nil" else a) for a in args]
    case = {"op": op, "args": list(args)}
    if kw:
        case["kw"] = kw
    try:
        r = fn(*targs, **(kw or {}))
    except (RuntimeError, TypeError, ValueError) as e:
        # PyTorch 1.13 lacks many float16 kernels on the CPU (its CUDA ones compute in float32 and
        # round): the reference is then the float32 result rounded to float16
        half = torch.float16
        try:
            # (but nextafter in float32 says nothing of float16's next value)
            assert "not implemented for 'Half'" in str(e) and fn is not torch.nextafter
            r = fn(*[t.float() if isinstance(t, torch.Tensor) and t.dtype == half else t for t in targs], **(kw or {}))
        except (AssertionError, RuntimeError, TypeError, ValueError):
            case["err"] = True
            cases.append(case)
            return
        if r.dtype == torch.float32:
            r = r.to(half)
        case["half32"] = True
    assert isinstance(r, torch.Tensor), op
    case["out"] = {"dtype": str(r.dtype).replace("torch.", ""), "shape": list(r.shape),
                   "data": [r.tolist()] if r.dim() == 0 else r.reshape(-1).tolist()}
    cases.append(case)


def torch_fn(name):
    return getattr(torch, name)


UNARY = ["abs", "neg", "sign", "sgn", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
         "logit", "erf", "erfc", "erfinv", "floor", "ceil", "round", "trunc", "frac", "reciprocal", "square",
         "signbit", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num", "bitwise_not",
         "logical_not", "lgamma", "digamma", "i0", "sinc", "deg2rad", "rad2deg", "positive"]
for op in UNARY:
    for dt in DTYPES:
        record(op, [dt + "_a"], None, torch_fn(op))
for dt in DTYPES:
    record("round", [dt + "_a"], {"decimals": 1}, torch.round)
    record("round", [dt + "_a"], {"decimals": -1}, torch.round)
    record("logit", [dt + "_a", 0.25], None, torch.logit)
    record("nan_to_num", [dt + "_a"], {"nan": 1.5, "posinf": 2.0, "neginf": -3.0}, torch.nan_to_num)

BINARY = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "atan2", "hypot",
          "maximum", "minimum", "fmax", "fmin", "copysign", "nextafter", "ldexp", "xlogy", "logaddexp", "logaddexp2",
          "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "logical_and",
          "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "isclose"]
SHIFTS = ("bitwise_left_shift", "bitwise_right_shift")
for op in BINARY:
    for dt in DTYPES:
        record(op, [dt + "_a", dt + ("_sh" if op in SHIFTS else "_b")], None, torch_fn(op))
for dt in DTYPES:
    a, b = dt + "_a", dt + "_b"
    record("add", [a, b], {"alpha": 2}, torch.add)
    record("sub", [a, b], {"alpha": 2}, torch.sub)
    record("add", [a, b], {"alpha": 0.5}, torch.add)
    for mode in ("trunc", "floor"):
        record("div", [a, b], {"rounding_mode": mode}, torch.div)
    if dt in INTS:  # integer division by zero raises
        for op in ("floor_divide", "remainder", "fmod"):
            record(op, [a, dt + "_z"], None, torch_fn(op))
        for mode in ("trunc", "floor"):
            record("div", [a, dt + "_z"], {"rounding_mode": mode}, torch.div)
    record("pow", [a, dt + "_e"], None, torch.pow)
    for s in (2, 0.5, -1, 3, 0):
        record("pow", [a, s], None, torch.pow)
    for s in (2, 2.5, -1):
        record("pow", [s, a], None, torch.pow)
    record("isclose", [a, b], {"equal_nan": True}, torch.isclose)
    record("isclose", [a, b], {"rtol": 0.1, "atol": 0.5}, torch.isclose)
    record("lerp", [a, b, 0.25], None, torch.lerp)
    record("lerp", [a, b, dt + "_c"], None, torch.lerp)
    record("clamp", [a, dt + "_c", dt + "_hi"], None, torch.clamp)
    record("clamp", [a, "nil", dt + "_hi"], None, torch.clamp)
    record("clamp", [a, -1, 2], None, torch.clamp)
    record("clamp", [a, 0.5, "nil"], None, torch.clamp)
    record("clamp", [a, -1.5, 2.5], None, torch.clamp)
    record("where", [dt + "_cond", a, b], None, torch.where)
    record("where", [dt + "_cond", a, 0.5], None, torch.where)
    record("where", [dt + "_cond", -2, b], None, torch.where)
    record("addcmul", [a, b, dt + "_c"], {"value": 2}, torch.addcmul)
    record("addcdiv", [a, b, dt + "_hi"], {"value": 0.5}, torch.addcdiv)

# ---- type promotion ----
for x in DTYPES:
    for y in DTYPES:
        for op in ("add", "mul", "div", "eq"):
            record(op, [x + "_p", y + "_p"], None, torch_fn(op))
        record("add", [x + "_p", y + "_s"], None, torch.add)
        record("mul", [x + "_s", y + "_p"], None, torch.mul)
        record("add", [x + "_s", y + "_s"], None, torch.add)
RSUB = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv, "pow": operator.pow}
for x in DTYPES:
    for s in (2, -3, 2.5):
        for op in ("add", "sub", "mul", "div", "eq", "lt", "remainder", "floor_divide"):
            record(op, [x + "_p", s], None, torch_fn(op))
        for op in ("add", "sub", "mul", "div", "pow"):
            record(op, [s, x + "_p"], None, RSUB[op])

assert all(c.get("out") or c.get("err") for c in cases)
write("elementwise_sweep_reference.lua", "gen_elementwise_sweep.py",
      ["Elementwise ops over every dtype, and type promotion: PyTorch's results (see the generator's",
       "docstring for the format). Read by spec/elementwise_sweep_spec.lua."],
      {"inputs": inputs, "cases": cases})
