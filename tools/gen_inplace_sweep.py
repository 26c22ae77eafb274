#!/usr/bin/env python3
"""Writes spec/data/inplace_sweep_reference.lua: a sweep of the in-place tensor methods (x:add_(y),
x:exp_(), x:masked_fill_(m, v), x:copy_(y), ...) against PyTorch 1.13, over self's dtype and the
operands' dtypes. PyTorch's rule: the op's result dtype must be castable to self's dtype (an integer
self with a float operand raises, a float self with an integer operand works, a bool self takes only
bool results), and the operands broadcast to self's shape, never self to theirs. For each case:
self's values after the op, or err = true where PyTorch raises. Also a few autograd scenarios in
float64 (an in-place op on a non-leaf and its gradients; a tensor saved for backward, then changed).
Read by spec/inplace_sweep_spec.lua.

Run: python3 tools/gen_inplace_sweep.py  (needs PyTorch 1.13; the generated file is committed).

Format: inputs[k] = {d = dtype name, s = shape, v = row-major values} (index tensors 1-based). A case
is {o = method, s = self's input, a = the arguments (a string names an input, "nil" is nil, another
string is a string, a number is a number: dims already 1-based), k = keyword table or absent, r =
self's row-major values after the op} or err = true where PyTorch raises (ia = true too where it
fails an internal assertion, a bug of PyTorch's); h = true marks a float16 op that PyTorch 1.13 lacks on the CPU,
whose reference is its float32 result rounded to float16 (as its CUDA kernels compute). Self keeps
its dtype and shape, so neither is written. An autograd scenario is {name, g = {input = gradient
values}} or err = true, the scenario itself written twice: in grad_scenarios below and in the spec."""
import math

import torch

from lua_reference import write

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
FLOATS = DTYPES[:4]
INTS = DTYPES[4:9]
inf, nan = math.inf, math.nan

SHAPE = [2, 4]
SELF = {
    "f": [0.0, -0.75, 2.5, nan, -inf, 3.7, -2.5, 0.5],
    "int64": [0, -7, 3, 100, 2 ** 63 - 1, 5, 1, -2 ** 63],
    "int32": [0, -7, 3, 100, 2 ** 31 - 1, 5, 1, -2 ** 31],
    "int16": [0, -7, 3, 100, 32767, 5, 1, -32768],
    "int8": [0, -7, 3, 100, 127, 5, 1, -128],
    "uint8": [0, 7, 3, 100, 255, 5, 1, 200],
    "bool": [True, False, True, False, True, True, False, False],
}
# the operand: never 0 (integer division by zero raises), never -1 beside an integer minimum
OTHER = {
    "f": [2.0, 0.5, -1.5, 1.0, 2.0, -0.0, 0.25, 3.0],
    "i": [3, 2, -2, 7, 3, -3, 5, 2],
    "uint8": [3, 2, 5, 7, 3, 1, 5, 2],
    "bool": [True, True, False, False, True, False, True, False],
}

inputs, tensors = {}, {}


def add_input(name, t, index=False):
    inputs[name] = {"d": str(t.dtype).replace("torch.", ""), "s": list(t.shape),
                    "v": (t + 1 if index else t).reshape(-1).tolist()}
    tensors[name] = t
    return name


def tensor(data, dtype, shape=SHAPE):
    return torch.tensor(data, dtype=getattr(torch, dtype)).reshape(shape)


for dt in DTYPES:
    key = "f" if dt in FLOATS else dt
    add_input(dt + "_a", tensor(SELF[key], dt))
    okey = "f" if dt in FLOATS else dt if dt in ("uint8", "bool") else "i"
    add_input(dt + "_b", tensor(OTHER[okey], dt))
    # a third operand (lerp weights, addcmul's), and shift amounts (non-negative)
    third = [0.25, -1.0, 2.0, 0.5, 1.0, 3.0, -0.5, 1.5] if dt in FLOATS else [True, False] * 4 if dt == "bool" \
        else [1, 2, 3, 1, 2, 3, 1, 2]
    add_input(dt + "_c", tensor(third, dt))
    add_input(dt + "_sh", tensor([abs(v) for v in OTHER[okey]], dt))
    add_input(dt + "_row", torch.tensor(OTHER[okey][:4], dtype=getattr(torch, dt)))  # [4]: broadcasts
    add_input(dt + "_col2", torch.tensor(OTHER[okey][4:6], dtype=getattr(torch, dt)))  # [2]: addr_'s vec1
add_input("mask", tensor([True, False, False, True, False, True, True, False], "bool"))
add_input("mask_row", torch.tensor([False, True, True, False]))
add_input("mask_big", torch.ones(3, 2, 4, dtype=torch.bool))
add_input("float32_big", torch.ones(3, 2, 4))
add_input("float32_col", torch.tensor([[2.0], [-1.0]]))
add_input("float32_one", torch.tensor([[1.5, 2.0, -1.0, 0.5]]))  # [1, 4]
add_input("idx_cols", torch.tensor([3, 0, 3]), index=True)  # dim 2 indices, one repeated
add_input("idx_rows", torch.tensor([1, 0, 1]), index=True)  # dim 1 indices (index_copy_: distinct below)
add_input("idx_rows2", torch.tensor([1, 0]), index=True)
add_input("idx_bad", torch.tensor([4]), index=True)  # out of range along dim 2
add_input("scat", torch.tensor([[0, 1, 0, 1], [1, 0, 1, 1]]), index=True)  # scatter along dim 1
for dt in DTYPES:
    okey = "f" if dt in FLOATS else dt if dt in ("uint8", "bool") else "i"
    add_input(dt + "_src3", torch.tensor([OTHER[okey][:4], OTHER[okey][4:], OTHER[okey][1:5]],
                                         dtype=getattr(torch, dt)))  # [3, 4]: index_add_ along dim 1
    add_input(dt + "_srcc", torch.tensor([OTHER[okey][:3], OTHER[okey][4:7]], dtype=getattr(torch, dt)))  # [2, 3]


class Dim:
    """a dim: d in Python, d + 1 in Lua"""

    def __init__(self, d):
        self.d = d


class Num0:
    """a number that PyTorch's binding takes only as a tensor (atan2_, hypot_): a 0-dim tensor in
    Python, a number in Lua (lutorch takes numbers wherever a tensor operand goes)"""

    def __init__(self, v):
        self.v = v


cases = []


def lua_arg(a):
    return a.d + 1 if isinstance(a, Dim) else a.v if isinstance(a, Num0) else "nil" if a is None else a


def py_arg(a, half32=False):
    if isinstance(a, Dim):
        return a.d
    if isinstance(a, Num0):
        return torch.tensor(a.v)
    if isinstance(a, str) and a in tensors:
        t = tensors[a]
        return t.float() if half32 and t.dtype == torch.float16 else t.clone()
    return a


def record(op, self_name, args=(), kw=None):
    """x = self's input; x.op(args..., **kw): self's values after it, or that PyTorch raises"""
    case = {"o": op, "s": self_name}
    if args:
        case["a"] = [lua_arg(a) for a in args]
    if kw:
        case["k"] = kw

    def run(half32):
        x = py_arg(self_name, half32)
        r = getattr(x, op)(*[py_arg(a, half32) for a in args], **(kw or {}))
        assert r is x, op
        return x

    try:
        x = run(False)
    except (RuntimeError, TypeError, ValueError, IndexError) as e:
        if "not implemented for 'Half'" not in str(e):
            case["err"] = True
            if "INTERNAL ASSERT FAILED" in str(e):
                case["ia"] = True
            cases.append(case)
            return
        try:
            x = run(True).to(torch.float16)
        except (RuntimeError, TypeError, ValueError, IndexError):
            case["err"] = True
            cases.append(case)
            return
        case["h"] = True
    case["r"] = x.reshape(-1).tolist()
    cases.append(case)


# ---- unary ----
UNARY = ["abs_", "neg_", "sign_", "sgn_", "sqrt_", "rsqrt_", "exp_", "exp2_", "expm1_", "log_", "log2_", "log10_",
         "log1p_", "sin_", "cos_", "tan_", "asin_", "acos_", "atan_", "sinh_", "cosh_", "tanh_", "asinh_", "acosh_",
         "atanh_", "sigmoid_", "logit_", "erf_", "erfc_", "erfinv_", "floor_", "ceil_", "round_", "trunc_", "fix_",
         "frac_", "reciprocal_", "square_", "relu_", "nan_to_num_", "bitwise_not_", "logical_not_", "lgamma_",
         "digamma_", "i0_", "sinc_", "deg2rad_", "rad2deg_", "zero_", "tril_", "triu_"]
for op in UNARY:
    for dt in DTYPES:
        record(op, dt + "_a")
for dt in DTYPES:
    a = dt + "_a"
    record("round_", a, kw={"decimals": 1})
    record("nan_to_num_", a, kw={"nan": 1.5, "posinf": 2.0, "neginf": -3.0})
    record("tril_", a, [1])
    record("triu_", a, [-1])
    record("fill_diagonal_", a, [5])
    record("fill_diagonal_", a, [0.5])
    for v in (3, 2.5, -1, True):
        record("fill_", a, [v])
    record("clamp_", a, [-1, 2])
    record("clamp_", a, [0.5, 2.5])
    record("clamp_", a, [None, 2])
    record("clamp_min_", a, [0.5])
    record("clamp_max_", a, [1])
    record("clamp_min_", a, [1])
    record("logit_", a, [0.25])
    for mode in ("trunc", "floor"):
        record("div_", a, [2], {"rounding_mode": mode})
    for s in (2, -3, 2.5):
        for op in ("add_", "sub_", "mul_", "div_", "pow_", "fmod_", "remainder_", "eq_", "lt_", "ge_",
                   "floor_divide_", "copysign_", "hypot_", "atan2_"):
            record(op, a, [Num0(s) if op in ("atan2_", "hypot_") else s])
    record("add_", a, [dt + "_b"], {"alpha": 2})
    record("sub_", a, [dt + "_b"], {"alpha": 0.5})
    record("masked_fill_", a, ["mask", 2.5])
    record("masked_fill_", a, ["mask", -3])
    record("masked_fill_", a, ["mask_row", True])
    record("index_fill_", a, [Dim(1), "idx_cols", -2])
    record("index_fill_", a, [Dim(1), "idx_cols", 0.5])
    record("scatter_", a, [Dim(0), "scat", 4])
    record("scatter_", a, [Dim(0), "scat", 1.5])

# ---- binary, over every pair of dtypes ----
BINARY = ["add_", "sub_", "mul_", "div_", "pow_", "fmod_", "remainder_", "atan2_", "hypot_", "copysign_", "eq_",
          "ge_", "logical_and_", "bitwise_and_", "floor_divide_", "copy_"]
for x in DTYPES:
    for y in DTYPES:
        for op in BINARY:
            record(op, x + "_a", [y + "_b"])
        record("div_", x + "_a", [y + "_b"], {"rounding_mode": "floor"})
        record("bitwise_left_shift_", x + "_a", [y + "_sh"])
        record("index_add_", x + "_a", [Dim(0), "idx_rows", y + "_src3"])
        record("scatter_add_", x + "_a", [Dim(0), "scat", y + "_b"])
        record("lerp_", x + "_a", [y + "_b", 0.25])
        record("addcmul_", x + "_a", [y + "_b", y + "_c"])
for dt in DTYPES:
    a, b, c = dt + "_a", dt + "_b", dt + "_c"
    record("bitwise_right_shift_", a, [dt + "_sh"])
    record("lerp_", a, [b, c])
    record("addcmul_", a, [b, c], {"value": 2})
    record("addcdiv_", a, [b, c], {"value": 0.5})
    record("addcdiv_", a, [b, c])
    for op in ("gcd_", "lcm_", "nextafter_", "ldexp_", "heaviside_", "ne_", "le_", "gt_", "xlogy_", "clamp_max_",
               "logical_or_", "bitwise_or_", "lt_", "logical_xor_", "bitwise_xor_", "clamp_min_", "float_power_",
               "greater_", "greater_equal_", "less_", "less_equal_",
               "not_equal_", "multiply_", "divide_", "subtract_", "true_divide_", "arctan2_"):
        record(op, a, [b])
    for op in ("absolute_", "negative_", "arctan_", "square_"):
        record(op, a)
    for d in (0, 1):
        record("cumsum_", a, [Dim(d)])
        record("cumprod_", a, [Dim(d)])
    record("float_power_", a, [2])
    record("mvlgamma_", a, [1])
    record("addr_", a, [dt + "_col2", dt + "_row"])
    record("addmm_", a, [dt + "_srcc", dt + "_src3"])
    record("addmm_", a, [dt + "_srcc", dt + "_src3"], {"beta": 0.5, "alpha": 2})
    record("div_", a, [b], {"rounding_mode": "trunc"})
    record("clamp_", a, [c, b])
    record("clamp_", a, [None, b])
    record("index_add_", a, [Dim(0), "idx_rows", dt + "_src3"], {"alpha": 2})
    record("index_copy_", a, [Dim(0), "idx_rows2", b])
    record("index_fill_", a, [Dim(1), "idx_bad", 1])
    record("scatter_", a, [Dim(0), "scat", b])
    for red in ("add", "multiply"):
        record("scatter_", a, [Dim(0), "scat", b], {"reduce": red})
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            record("scatter_reduce_", a, [Dim(0), "scat", b, red], {"include_self": inc})
    record("masked_scatter_", a, ["mask", b])
    record("put_", a, ["idx_rows2", dt + "_srcc"])

# ---- broadcasting: the operand broadcasts to self, never self to the operand ----
for op in ("add_", "mul_", "eq_", "logical_and_", "copy_", "atan2_"):
    for other in ("float32_row", "float32_one", "float32_col", "float32_big"):
        record(op, "float32_a", [other])
    record(op, "float32_one", ["float32_a"])
record("masked_fill_", "float32_a", ["mask_big", 1])
record("masked_fill_", "float32_one", ["mask", 1])
record("lerp_", "float32_a", ["float32_row", "float32_col"])
record("lerp_", "float32_one", ["float32_a", 0.5])
record("addcmul_", "float32_a", ["float32_row", "float32_col"])
record("addcmul_", "float32_a", ["float32_big", "float32_row"])
record("addcdiv_", "float32_one", ["float32_a", "float32_a"])
record("clamp_", "float32_a", ["float32_row", "float32_col"])
record("clamp_", "float32_one", ["float32_a", None])


# ---- autograd: a non-leaf written in place, and the version counter ----
def grad_scenarios(T):
    """name -> function(x, w, u) giving the loss; x, w, u float64 leaves; the same in the spec"""
    return {
        "mul_": lambda x, w, u: (x * 1).mul_(w).mul(u).sum(),
        "add_alpha": lambda x, w, u: (x * 2).add_(w, alpha=-1.5).mul(u).sum(),
        "div_": lambda x, w, u: (x * 1).div_(w).mul(u).sum(),
        "pow_": lambda x, w, u: (x + 0).pow_(w).mul(u).sum(),
        "exp_sigmoid": lambda x, w, u: (x * w).exp_().sigmoid_().mul(u).sum(),
        "exp_sigmoid_out_of_place": lambda x, w, u: (x * w).exp().sigmoid().mul(u).sum(),
        "addcmul_": lambda x, w, u: (x * 1).addcmul_(w, u, value=0.5).mul(w).sum(),
        "lerp_": lambda x, w, u: (x * 1).lerp_(w, u).mul(u).sum(),
        "clamp_": lambda x, w, u: (x * w).clamp_(0.5, 1.2).mul(u).sum(),
        "masked_fill_": lambda x, w, u: (x * w).masked_fill_(T["mask"], 2).mul(u).sum(),
        "index_add_": lambda x, w, u: (x * 1).index_add_(0, T["idx_rows2"], w, alpha=3).mul(u).sum(),
        "scatter_": lambda x, w, u: (x * u).scatter_(0, T["scat"], w).mul(u).sum(),
        "copy_view": lambda x, w, u: _copy_view(x, w, u),
        # a tensor saved for backward, then changed: backward raises
        "exp_then_add_": lambda x, w, u: _saved(x.exp(), lambda y: y.add_(1)),
        "sin_input_mul_": lambda x, w, u: _saved_input(x * 1, lambda y: y.sin(), lambda y: y.mul_(2)),
        "mul_operand_": lambda x, w, u: _saved_input(w * 1, lambda v: x * v, lambda v: v.zero_()),
        "sigmoid_then_view": lambda x, w, u: _saved(x.sigmoid(), lambda y: y[0].fill_(0)),
        # an unsaved tensor changed in place: fine
        "add_input_add_": lambda x, w, u: _saved_input(x * 1, lambda y: y + w, lambda y: y.add_(3)),
    }


def _copy_view(x, w, u):
    y = x * 1
    y[:, 1].copy_(w[0, :2])  # a view of a non-leaf written in place
    return (y * u).sum()


def _saved(y, change):
    change(y)
    return (y * 1).sum()


def _saved_input(y, use, change):
    z = use(y)
    change(y)
    return (z * 1).sum()


X = [[0.3, -0.8, 1.1, 0.6], [-0.4, 0.9, 0.2, 1.4]]
W = [[1.2, 0.7, -1.1, 0.5], [0.9, 1.6, 0.4, -0.6]]
U = [[0.5, -1.0, 1.5, 2.0], [-0.5, 1.0, 0.8, 0.3]]
add_input("gx", torch.tensor(X, dtype=torch.float64))
add_input("gw", torch.tensor(W, dtype=torch.float64).abs())
add_input("gu", torch.tensor(U, dtype=torch.float64))
grads = []
for name, fn in grad_scenarios(tensors).items():
    leaves = [tensors[k].clone().requires_grad_() for k in ("gx", "gw", "gu")]
    rec = {"name": name}
    try:
        fn(*leaves).backward()
        rec["g"] = {k: (l.grad if l.grad is not None else torch.zeros_like(l)).reshape(-1).tolist()
                    for k, l in zip(("gx", "gw", "gu"), leaves)}
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), e
        rec["err"] = True
    grads.append(rec)

assert all(c.get("r") or c.get("err") for c in cases)
write("inplace_sweep_reference.lua", "gen_inplace_sweep.py",
      ["In-place tensor methods over self's dtype and the operands' dtypes: PyTorch's results (see the",
       "generator's docstring for the format). Read by spec/inplace_sweep_spec.lua."],
      {"inputs": inputs, "cases": cases, "grads": grads})
