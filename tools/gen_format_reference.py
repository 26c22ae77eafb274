#!/usr/bin/env python3
"""Generates spec/data/format_reference.lua: how real PyTorch prints tensors.

Run from the repository root with a Python that has PyTorch (Debian's python3-torch, 1.13):

    /usr/bin/python3 tools/gen_format_reference.py

Each case records the tensor's shape, lutorch dtype name, flat row-major values, device,
requires_grad / grad_fn, the print options in force, and the string PyTorch's repr gives.

PyTorch here has only a CPU, so cases on another device (lutorch prints the device whenever it
is not cpu:0) are rendered with PyTorch's own _tensor_str and _add_suffixes, with the device
suffix put first, where PyTorch's _str_intern puts it.
"""

import math
import os
import sys

import torch
import torch._tensor_str as ts

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "data",
                   "format_reference.lua")

DTYPE_NAMES = {
    torch.float32: "torch.float32", torch.float64: "torch.float64",
    torch.float16: "torch.float16", torch.bfloat16: "torch.bfloat16",
    torch.int64: "torch.int64", torch.int32: "torch.int32", torch.int16: "torch.int16",
    torch.int8: "torch.int8", torch.uint8: "torch.uint8", torch.bool: "torch.bool",
}

cases = []


def default_opts():
    torch.set_printoptions(profile="default")  # also resets sci_mode to None


def add(name, t, opts=None, device=None, requires_grad=False, grad_fn=None):
    """grad_fn: a function applied to the leaf (which then requires grad) whose result is printed."""
    default_opts()
    if opts:
        torch.set_printoptions(**opts)
    leaf = t
    if requires_grad or grad_fn:
        leaf = t.clone().requires_grad_(True)
    shown = grad_fn(leaf) if grad_fn else leaf
    if device is None:
        expected = repr(shown)
    else:
        # PyTorch (CPU only here) cannot hold such a tensor: assemble as _str_intern does.
        prefix = "tensor("
        indent = len(prefix)
        suffixes = ["device='" + device + "'"]
        if shown.numel() == 0:
            if shown.dim() != 1:
                suffixes.append("size=" + str(tuple(shown.shape)))
            if shown.dtype != torch.get_default_dtype():
                suffixes.append("dtype=" + str(shown.dtype))
            body = "[]"
        else:
            if shown.dtype not in (torch.get_default_dtype(), torch.int64, torch.bool):
                suffixes.append("dtype=" + str(shown.dtype))
            body = ts._tensor_str(shown.detach(), indent)
        if shown.grad_fn is not None:
            suffixes.append("grad_fn=<{}>".format(type(shown.grad_fn).__name__))
        elif shown.requires_grad:
            suffixes.append("requires_grad=True")
        expected = ts._add_suffixes(prefix + body, suffixes, indent, force_newline=False)
    default_opts()
    d = shown.detach()
    if d.dtype.is_floating_point:
        values = d.double().reshape(-1).tolist()
    else:
        values = d.reshape(-1).tolist()
    cases.append(dict(
        name=name, shape=list(d.shape), dtype=DTYPE_NAMES[d.dtype], values=values,
        device=device, requires_grad=bool(shown.requires_grad),
        grad_fn=(type(shown.grad_fn).__name__ if shown.grad_fn is not None else None),
        opts=opts, expected=expected,
    ))


def T(v, **kw):
    return torch.tensor(v, **kw)


def build():
    nan, inf = float("nan"), float("inf")
    torch.manual_seed(0)
    # 0-dim
    add("0-dim integral float", T(3.))
    add("0-dim float", T(3.14159))
    add("0-dim negative float", T(-2.5))
    add("0-dim zero", T(0.))
    add("0-dim int64", T(5))
    add("0-dim negative int64", T(-42))
    add("0-dim bool true", T(True))
    add("0-dim bool false", T(False))
    add("0-dim nan", T(nan))
    add("0-dim -inf", T(-inf))
    add("0-dim small (sci)", T(1e-5))
    add("0-dim big (sci)", T(1e10))
    add("0-dim float64", T(1.5, dtype=torch.float64))
    add("0-dim int32", T(7, dtype=torch.int32))
    # 1-D floats
    add("1-D integral floats", T([1., 2., 3.]))
    add("1-D fractional", T([0.1, 0.2]))
    add("1-D sci ratio", T([1e-5, 1e5]))
    add("1-D negative", T([-1.5, 2.0]))
    add("1-D negative integral", T([-1., 20., -300.]))
    add("1-D nan inf", T([nan, inf, 1.]))
    add("1-D nan -inf frac", T([nan, -inf, 0.5]))
    add("1-D nan inf sci", T([nan, inf, 1e-6, -3.0]))
    add("1-D all zero", T([0., 0., 0.]))
    add("1-D all nan", T([nan, nan]))
    add("1-D all inf", T([inf, -inf]))
    add("1-D zero and nonfinite", T([0., nan, -inf]))
    add("1-D signed zeros", T([-0.0, 0.0, 1.0]))
    add("1-D signed zero frac", T([-0.0, 0.25]))
    add("1-D int-mode sci (max > 1e8)", T([1e9, 1.]))
    add("1-D int-mode sci (ratio)", T([1., 2000.]))
    add("1-D int-mode wide", T([100., 1000., -5.]))
    add("1-D large integral", T([12345678., 99999999.]))
    add("1-D small (sci min)", T([0.00005, 0.5]))
    add("1-D big fractional", T([123456789.5, 1.5]))
    add("1-D negative sci", T([-1e-7, 2e-7, -3.5e-6]))
    add("1-D huge sci", T([1e30, -2e-30]))
    add("1-D rounding", T([0.12345, 0.99995, 2.00005]))
    add("1-D randn", torch.randn(7))
    add("1-D randn wrapping", torch.randn(25))
    add("1-D arange wrapping", torch.arange(30.) * 1.5)
    add("1-D integral wrapping", torch.arange(40.))
    # ints
    add("1-D int64", T([1, 2]))
    add("1-D int64 negative", T([-100, 5, 20]))
    add("1-D int64 extremes", T([-9223372036854775808, 9223372036854775807, 0]))
    add("1-D int64 wrapping", torch.arange(0, 3000, 77))
    add("1-D int32", T([1, 2], dtype=torch.int32))
    add("1-D int16", T([-3, 300], dtype=torch.int16))
    add("1-D int8", T([-128, 127], dtype=torch.int8))
    add("1-D uint8", T([0, 255, 7], dtype=torch.uint8))
    # bool
    add("1-D bool", T([True, False]))
    add("1-D bool all true", T([True, True]))
    add("2-D bool", T([[True, False, True], [False, False, True]]))
    # other float dtypes
    add("1-D float64", T([1., 2.], dtype=torch.float64))
    add("1-D float64 frac", T([0.1, 1 / 3], dtype=torch.float64))
    add("1-D float16", T([0.1, 0.2, 1000.], dtype=torch.float16))
    add("1-D float16 integral", T([1., 2.], dtype=torch.float16))
    add("1-D bfloat16", T([0.1, 3.0, -7.25], dtype=torch.bfloat16))
    # 2-D and up
    add("2-D int64", T([[1, 2], [3, 4]]))
    add("2-D float", T([[1.5, -2.25], [3., 4.]]))
    add("2-D randn", torch.randn(4, 5))
    add("2-D rows wrapping", torch.randn(3, 12))
    add("2-D float64 rows wrapping", torch.randn(2, 9, dtype=torch.float64))
    add("2-D column", torch.arange(4.).reshape(4, 1))
    add("2-D row", torch.arange(4.).reshape(1, 4))
    add("3-D arange", torch.arange(24.).reshape(2, 3, 4))
    add("3-D int", torch.arange(12).reshape(3, 2, 2))
    add("4-D", torch.arange(16.).reshape(2, 2, 2, 2) / 4)
    add("5-D", torch.arange(32).reshape(2, 2, 2, 2, 2))
    add("3-D with singleton", torch.arange(6.).reshape(1, 2, 3))
    # empty
    add("empty 1-D", T([]))
    add("empty (0, 3)", torch.zeros(0, 3))
    add("empty (2, 0)", torch.zeros(2, 0))
    add("empty (0, 2, 3) float64", torch.zeros(0, 2, 3, dtype=torch.float64))
    add("empty int64", torch.zeros(0, dtype=torch.int64))
    add("empty int64 2-D", torch.zeros(3, 0, dtype=torch.int64))
    add("empty bool", torch.zeros(0, dtype=torch.bool))
    add("empty float16", torch.zeros(0, dtype=torch.float16))
    # large, summarised
    add("1000 elements (not summarised)", torch.arange(1000.))
    add("1001 elements", torch.arange(1001.))
    add("arange(2000) int", torch.arange(2000))
    add("1-D big randn", torch.randn(1500))
    add("2-D 50x50", torch.arange(2500.).reshape(50, 50))
    add("2-D 10x200 randn", torch.randn(10, 200))
    add("2-D 1x2000", torch.arange(2000).reshape(1, 2000))
    add("2-D 2000x1", torch.arange(2000.).reshape(2000, 1))
    add("3-D 12x12x12", torch.randn(12, 12, 12))
    add("3-D 5x5x50 (only last dim cut)", torch.arange(1250).reshape(5, 5, 50))
    add("big bool", torch.arange(1200) % 3 == 0)
    add("summarised sci", torch.cat([torch.full((1000,), 1e-6), T([5.0, 1e6])]))
    add("summarised hides extremes", torch.cat([T([1.0, 2.0, 3.0]), torch.full((1000,), 1e9),
                                                T([4.0, 5.0, 6.0])]))
    # autograd
    add("requires_grad", T([1., 2.]), requires_grad=True)
    add("requires_grad 0-dim", T(2.5), requires_grad=True)
    add("requires_grad float64", T([1., 2.], dtype=torch.float64), requires_grad=True)
    add("grad_fn add", T([1., 2.]), grad_fn=lambda x: x + 1)
    add("grad_fn mul 2-D", T([[1., 2.], [3., 4.]]), grad_fn=lambda x: x * 2.5)
    add("grad_fn sum", T([1., 2.]), grad_fn=lambda x: x.sum())
    add("grad_fn float16", T([1., 2.], dtype=torch.float16), grad_fn=lambda x: x * 2)
    # devices
    add("device cuda:0", T([1., 2.]), device="cuda:0")
    add("device cpu:1", T([1, 2]), device="cpu:1")
    add("device cuda:1 float16 requires_grad", T([1.5, 2.], dtype=torch.float16),
        device="cuda:1", requires_grad=True)
    add("device empty", torch.zeros(0, 2, dtype=torch.int32), device="cuda:0")
    add("device grad_fn", T([1., 2.]), device="cuda:0", grad_fn=lambda x: x + 1)
    # suffix wrapping at linewidth
    add("suffix wraps (float64)", (torch.arange(7.) + 0.5).double() * 1000)
    add("suffix wraps 2-D", torch.randn(3, 6, dtype=torch.float64))
    add("suffix fits", torch.arange(6.).double() + 0.5)
    add("several suffixes", torch.arange(7.).double() * 1000 + 0.5, device="cuda:0",
        requires_grad=True)
    add("suffixes wrap twice", T([1.5, 2.5], dtype=torch.float16), device="cuda:0",
        requires_grad=True, opts=dict(linewidth=30))
    add("suffixes wrap twice 2-D", T([[1, 2], [3, 4]], dtype=torch.int8), device="cpu:1",
        grad_fn=None, opts=dict(linewidth=24))
    add("grad_fn wraps", torch.arange(8.) + 0.25, grad_fn=lambda x: x * 1000)
    # print options
    add("precision=2", T([1.12345, -2.5]), opts=dict(precision=2))
    add("precision=6", T([1.12345, -2.5]), opts=dict(precision=6))
    add("precision=0", T([1.5, 2.5, 0.4]), opts=dict(precision=0))
    add("precision=0 sci", T([1.5e-5, 2.5]), opts=dict(precision=0))
    add("precision=10 float64", T([1 / 3, 2 / 3], dtype=torch.float64), opts=dict(precision=10))
    add("threshold=5", torch.arange(10), opts=dict(threshold=5))
    add("threshold=5 float", torch.arange(10.) / 3, opts=dict(threshold=5))
    add("edgeitems=1", torch.arange(2000.).reshape(20, 100), opts=dict(edgeitems=1))
    add("edgeitems=5", torch.arange(2000), opts=dict(edgeitems=5))
    add("edgeitems=0 1-D", torch.arange(12), opts=dict(threshold=5, edgeitems=0))
    add("linewidth=40", torch.arange(20.) / 7, opts=dict(linewidth=40))
    add("linewidth=20 2-D", torch.arange(12).reshape(2, 6) * 1000, opts=dict(linewidth=20))
    add("linewidth=5", T([1.5, 2.5, 3.5]), opts=dict(linewidth=5))
    add("linewidth=20 suffix", T([1.5, 2.5], dtype=torch.float64), opts=dict(linewidth=20))
    add("sci_mode=True", T([1.5, 2.5]), opts=dict(sci_mode=True))
    add("sci_mode=True integral", T([1., 20.]), opts=dict(sci_mode=True))
    add("sci_mode=False", T([1e-5, 1e5]), opts=dict(sci_mode=False))
    add("sci_mode=False integral big", T([1e9, 1.]), opts=dict(sci_mode=False))
    add("sci_mode=True zeros (ignored)", T([0., 0.]), opts=dict(sci_mode=True))
    add("sci_mode=True int (ignored)", T([1, 2]), opts=dict(sci_mode=True))
    add("sci_mode=True nan", T([nan, 1.5]), opts=dict(sci_mode=True))
    add("sci_mode=True 0-dim", T(0.5), opts=dict(sci_mode=True))
    add("profile=short", T([1.12345, -2.5]), opts=dict(profile="short"))
    add("profile=short summarised", torch.arange(1500.), opts=dict(profile="short"))
    add("profile=full", torch.arange(1200), opts=dict(profile="full"))
    add("profile=short + precision", T([1.12345]), opts=dict(profile="short", precision=3))


def lua_str(s):
    out = ['"']
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            raise ValueError("unexpected character %r" % ch)
    out.append('"')
    return "".join(out)


def lua_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if v == -9223372036854775808:
            return "math.mininteger"
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INF" if v > 0 else "-INF"
        if v == 0 and math.copysign(1.0, v) < 0:
            return "-0.0"
        r = repr(v)
        if "." not in r and "e" not in r and "inf" not in r:
            r += ".0"
        return r
    if v is None:
        return "nil"
    if isinstance(v, str):
        return lua_str(v)
    raise TypeError(type(v))


def lua_opts(o):
    if not o:
        return "nil"
    parts = []
    for k, v in o.items():
        parts.append("%s = %s" % (k, lua_value(v)))
    return "{ " + ", ".join(parts) + " }"


def write(path):
    lines = [
        "-- Generated by tools/gen_format_reference.py from PyTorch %s: do not edit." % torch.__version__,
        "-- Each case: the tensor (shape, lutorch dtype name, flat row-major values, device,",
        "-- requires_grad, grad_fn name), the print options in force and PyTorch's repr.",
        "local NAN, INF = 0.0 / 0.0, math.huge",
        "return {",
    ]
    for c in cases:
        lines.append("  {")
        lines.append("    name = %s," % lua_str(c["name"]))
        lines.append("    shape = {%s}," % ", ".join(str(s) for s in c["shape"]))
        lines.append("    dtype = %s," % lua_str(c["dtype"]))
        if c["device"]:
            lines.append("    device = %s," % lua_str(c["device"]))
        if c["requires_grad"]:
            lines.append("    requires_grad = true,")
        if c["grad_fn"]:
            lines.append("    grad_fn = %s," % lua_str(c["grad_fn"]))
        if c["opts"]:
            lines.append("    opts = %s," % lua_opts(c["opts"]))
        vals = [lua_value(v) for v in c["values"]]
        chunks = [", ".join(vals[i:i + 16]) for i in range(0, len(vals), 16)]
        if chunks:
            lines.append("    values = {\n      " + ",\n      ".join(chunks) + "\n    },")
        else:
            lines.append("    values = {},")
        lines.append("    expected = %s," % lua_str(c["expected"]))
        lines.append("  },")
    lines.append("}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    build()
    path = sys.argv[1] if len(sys.argv) > 1 else OUT
    write(os.path.normpath(path))
    print("wrote %d cases to %s" % (len(cases), os.path.normpath(path)))
