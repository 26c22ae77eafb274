#!/usr/bin/env python3
"""Generates spec/data/random_reference.lua: what PyTorch 1.13's CPU generator gives after a seed.

Run from the repository root with a Python that has PyTorch (Debian's python3-torch, 1.13.1), on
an x86-64 CPU with AVX2 (PyTorch's default CPU capability there; do not set ATEN_CPU_CAPABILITY):

    /usr/bin/python3 tools/gen_random_reference.py          writes spec/data/random_reference.lua
    /usr/bin/python3 tools/gen_random_reference.py --c      prints the C table of spec/c/test_random.c
    /usr/bin/python3 tools/gen_random_reference.py --c-update   rewrites that table in the file

Each case of the Lua file is one call right after torch.manual_seed(seed):
    {op='rand',      seed=, dtype=, n=, values={...}}                 torch.rand(n, dtype=)
    {op='randn',     seed=, dtype=, n=, values={...}}                 torch.randn(n, dtype=)
    {op='uniform',   seed=, dtype=, n=, from=, to=, values={...}}     torch.empty(n).uniform_(from, to)
    {op='normal',    seed=, dtype=, n=, mean=, std=, values={...}}    torch.empty(n).normal_(mean, std)
    {op='randint',   seed=, dtype=, n=, low=, high=, values={...}}    torch.randint(low, high, (n,))
    {op='randperm',  seed=, dtype=, n=, values={...}}                 torch.randperm(n, dtype=)
    {op='bernoulli', seed=, dtype=, n=, p=, values={...}}             torch.empty(n).bernoulli_(p)
or a sequence of such calls after one seed (the generator's state, including the normal value
cached by randn of fewer than 16 elements, carries over between the steps):
    {op='sequence', seed=, steps={ {op=..., dtype=, n=, ..., values={...}}, ... }}
or the bytes of torch.get_rng_state() after a sequence (PyTorch's 5056-byte layout, which
lutorch's get_rng_state reproduces):
    {op='get_rng_state', seed=, steps={...}, state='<hex>'}

values are Lua numbers: floats written with %.17g (exact for every dtype; always with a '.' or an
exponent, so they read back as Lua floats), integers as integers, bool as true/false. float16 and
bfloat16 cases also carry bits={...}: the 16-bit patterns as integers.

bernoulli_ is the kernel of PyTorch builds without MKL (Debian's); official wheels built with MKL
draw differently.
"""

import math
import os
import platform
import sys
import warnings

import torch

warnings.filterwarnings("ignore")  # randint's "out of bounds [-(2^24), 2^24]" precision warnings

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "data",
                   "random_reference.lua")

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def run_op(op, dtype, n, **kw):
    """Calls PyTorch; returns the tensor."""
    dt = DTYPES[dtype]
    if op == "rand":
        return torch.rand(n, dtype=dt)
    if op == "randn":
        return torch.randn(n, dtype=dt)
    if op == "uniform":
        return torch.empty(n, dtype=dt).uniform_(kw["from_"], kw["to"])
    if op == "normal":
        return torch.empty(n, dtype=dt).normal_(kw["mean"], kw["std"])
    if op == "randint":
        return torch.randint(kw["low"], kw["high"], (n,), dtype=dt)
    if op == "randperm":
        return torch.randperm(n, dtype=dt)
    if op == "bernoulli":
        return torch.empty(n, dtype=dt).bernoulli_(kw["p"])
    raise ValueError(op)


def bits_of(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        return [int(b) & 0xFFFF for b in t.view(torch.int16).tolist()]
    if t.dtype == torch.float32:
        return [int(b) & 0xFFFFFFFF for b in t.view(torch.int32).tolist()]
    if t.dtype == torch.float64:
        return [int(b) & 0xFFFFFFFFFFFFFFFF for b in t.view(torch.int64).tolist()]
    if t.dtype == torch.bool:
        return [1 if b else 0 for b in t.tolist()]
    size = t.element_size() * 8
    return [int(v) & ((1 << size) - 1) for v in t.tolist()]


# ------------------------------------------------------------------------------------------------
# Lua output

def lua_float(x):
    if math.isnan(x):
        return "0/0"
    if math.isinf(x):
        return "1/0" if x > 0 else "-1/0"
    s = "%.17g" % x
    if not any(c in s for c in ".eEn"):
        s += ".0"
    return s


def lua_int(v):
    if v == -(1 << 63):
        return "math.mininteger"
    return str(v)


def lua_values(t):
    if t.dtype.is_floating_point:
        return [lua_float(float(v)) for v in t.double().tolist()] if t.numel() else []
    if t.dtype == torch.bool:
        return ["true" if v else "false" for v in t.tolist()]
    return [lua_int(int(v)) for v in t.tolist()]


def lua_list(items, indent):
    if not items:
        return "{}"
    lines, line = [], ""
    for it in items:
        piece = it + ", "
        if len(line) + len(piece) > 96:
            lines.append(line.rstrip())
            line = ""
        line += piece
    lines.append(line.rstrip().rstrip(","))
    if len(lines) == 1:
        return "{" + lines[0] + "}"
    pad = " " * indent
    return "{\n" + "\n".join(pad + "  " + l for l in lines) + "\n" + pad + "}"


PARAM_ORDER = [("from_", "from"), ("to", "to"), ("mean", "mean"), ("std", "std"),
               ("low", "low"), ("high", "high"), ("p", "p")]


def lua_param(v):
    if isinstance(v, float):
        return lua_float(v)
    return lua_int(v)


def lua_call(op, dtype, n, t, kw, indent, seed=None):
    head = "op='%s', " % op
    if seed is not None:
        head += "seed=%s, " % lua_int(seed)
    head += "dtype='%s', n=%d" % (dtype, n)
    for key, name in PARAM_ORDER:
        if key in kw:
            head += ", %s=%s" % (name, lua_param(kw[key]))
    body = head + ",\n" + " " * (indent + 2) + "values=" + lua_list(lua_values(t), indent + 2)
    if dtype in ("float16", "bfloat16"):
        body += ",\n" + " " * (indent + 2) + "bits=" + lua_list([str(b) for b in bits_of(t)], indent + 2)
    return "{" + body + "}"


# ------------------------------------------------------------------------------------------------
# Cases

def single_cases():
    """(op, seed, dtype, n, kw) for one call after manual_seed."""
    out = []
    for dtype in FLOATS:
        for n in [1, 7, 15, 16, 17, 100, 1000]:
            out.append(("rand", 0, dtype, n, {}))
        for seed in [42, 2**32 + 1, 67280421310721]:
            for n in [1, 7, 17]:
                out.append(("rand", seed, dtype, n, {}))
    for dtype in FLOATS:
        for n in [1, 2, 7, 15, 16, 17, 31, 32, 33, 100, 1000]:
            out.append(("randn", 0, dtype, n, {}))
        for seed in [42, 2**32 + 1]:
            for n in [1, 7, 16, 17, 100]:
                out.append(("randn", seed, dtype, n, {}))
    for dtype in FLOATS:
        for (a, b) in [(-1.3, 2.7), (-100.0, 100.0), (0.1, 0.3), (5.0, 5.0), (-3.0, -2.5)]:
            for n in [7, 40]:
                out.append(("uniform", 1, dtype, n, {"from_": a, "to": b}))
    for dtype in FLOATS:
        for (m, s) in [(0.3, 2.7), (-5.0, 0.01), (100.0, 3.3), (2.0, 0.0)]:
            for n in [1, 7, 16, 17, 40]:
                out.append(("normal", 1, dtype, n, {"mean": m, "std": s}))
    ranges = [(0, 10), (-5, 5), (0, 2), (0, 1), (-100, 1000), (-128, 128), (0, 256),
              (0, 2**31 - 1), (0, 2**32 - 1), (0, 2**32), (0, 2**32 + 1), (-2**40, 2**40),
              (-2**62, 2**62), (-2**63, 2**63 - 1)]
    for dtype in ["int64", "int32", "int16", "uint8", "int8", "bool"] + FLOATS:
        for (lo, hi) in ranges:
            for seed in [0, 3]:
                out.append(("randint", seed, dtype, 20, {"low": lo, "high": hi}))
    for n in [0, 1, 2, 5, 10, 100, 1000]:
        for seed in [0, 9]:
            out.append(("randperm", seed, "int64", n, {}))
    for dtype, n in [("int32", 50), ("int16", 50), ("uint8", 256), ("int8", 128), ("float32", 50),
                     ("float64", 50), ("float16", 100), ("bfloat16", 300)]:
        out.append(("randperm", 0, dtype, n, {}))
    for dtype in ["float32", "float64", "bfloat16", "int64", "int32", "uint8", "bool"]:
        for p in [0.0, 0.2, 0.5, 1.0]:
            out.append(("bernoulli", 4, dtype, 50, {"p": p}))
    return out


def keep(cases):
    """Drops the calls PyTorch refuses (randint ranges out of a dtype's bounds)."""
    kept = []
    for op, seed, dtype, n, kw in cases:
        torch.manual_seed(seed)
        try:
            run_op(op, dtype, n, **kw)
        except RuntimeError:
            continue
        kept.append((op, seed, dtype, n, kw))
    return kept


SEQUENCES = [
    (0, [("randn", "float32", 3, {}), ("randn", "float32", 1, {}), ("randn", "float32", 1, {}),
         ("randn", "float32", 20, {}), ("randn", "float64", 1, {}), ("rand", "float32", 5, {}),
         ("randn", "float16", 2, {}), ("randint", "int64", 8, {"low": 0, "high": 10}),
         ("randperm", "int64", 10, {}), ("uniform", "float64", 3, {"from_": -2.0, "to": 3.5}),
         ("normal", "float32", 5, {"mean": 1.5, "std": 0.25}), ("randn", "bfloat16", 17, {}),
         ("bernoulli", "float32", 6, {"p": 0.3}), ("randn", "float32", 1, {})]),
    (7, [("rand", "float64", 3, {}), ("randn", "float64", 5, {}), ("randn", "float32", 16, {}),
         ("randn", "float64", 1, {}), ("randn", "float64", 1, {}),
         ("randint", "int32", 4, {"low": -3, "high": 3}), ("randn", "float32", 33, {}),
         ("normal", "float64", 3, {"mean": -1.0, "std": 2.0}), ("rand", "bfloat16", 4, {})]),
    (2**33 + 5, [("randn", "float32", 1, {}), ("randint", "int64", 3, {"low": 0, "high": 2**40}),
                 ("randn", "float32", 1, {}), ("randperm", "int64", 7, {}),
                 ("rand", "float16", 9, {}), ("randn", "float64", 100, {})]),
]

STATE_CASES = [
    (5, [("randn", "float32", 3, {})]),
    (0, []),
    (11, [("rand", "float32", 700, {}), ("randn", "float64", 1, {})]),
]


def main_lua():
    cases = keep(single_cases())
    caps = torch.__config__.show()
    cap = [l.strip().lstrip("- ") for l in caps.splitlines() if "CPU capability" in l]
    parts = ["-- Generated by tools/gen_random_reference.py from PyTorch %s on %s (%s). Do not edit.\n"
             % (torch.__version__, platform.machine(), cap[0] if cap else "unknown CPU capability"),
             "-- One case per call after torch.manual_seed(seed); see the script for the format.\n",
             "return {\n"]
    for op, seed, dtype, n, kw in cases:
        torch.manual_seed(seed)
        t = run_op(op, dtype, n, **kw)
        parts.append("  " + lua_call(op, dtype, n, t, kw, 2, seed=seed) + ",\n")
    for seed, steps in SEQUENCES:
        torch.manual_seed(seed)
        parts.append("  {op='sequence', seed=%s, steps={\n" % lua_int(seed))
        for op, dtype, n, kw in steps:
            t = run_op(op, dtype, n, **kw)
            parts.append("    " + lua_call(op, dtype, n, t, kw, 4) + ",\n")
        parts.append("  }},\n")
    for seed, steps in STATE_CASES:
        torch.manual_seed(seed)
        parts.append("  {op='get_rng_state', seed=%s, steps={\n" % lua_int(seed))
        for op, dtype, n, kw in steps:
            t = run_op(op, dtype, n, **kw)
            parts.append("    " + lua_call(op, dtype, n, t, kw, 4) + ",\n")
        state = bytes(torch.get_rng_state().numpy()).hex()
        parts.append("  }, state='%s'},\n" % state)
    parts.append("}\n")
    with open(OUT, "w") as f:
        f.write("".join(parts))
    print("wrote %s (%d cases)" % (os.path.normpath(OUT), len(cases) + len(SEQUENCES) + len(STATE_CASES)))


# ------------------------------------------------------------------------------------------------
# C table for spec/c/test_random.c

C_OPS = {"rand": "OP_UNIFORM", "uniform": "OP_UNIFORM", "randn": "OP_NORMAL", "normal": "OP_NORMAL",
         "randint": "OP_INT", "randperm": "OP_PERM", "bernoulli": "OP_BERNOULLI"}
C_DTYPES = {"float32": "LT_FLOAT32", "float64": "LT_FLOAT64", "float16": "LT_FLOAT16",
            "bfloat16": "LT_BFLOAT16", "int64": "LT_INT64", "int32": "LT_INT32", "int16": "LT_INT16",
            "int8": "LT_INT8", "uint8": "LT_UINT8", "bool": "LT_BOOL"}

# (reseed: seed or None to go on from the previous case, op, dtype, n, kw)
C_CASES = [
    (0, "rand", "float32", 5, {}),
    (0, "rand", "float64", 4, {}),
    (0, "rand", "float16", 6, {}),
    (0, "rand", "bfloat16", 6, {}),
    (0, "randn", "float32", 7, {}),
    (0, "randn", "float32", 17, {}),
    (0, "randn", "float64", 17, {}),
    (0, "randn", "float16", 16, {}),
    (0, "randn", "bfloat16", 17, {}),
    (1, "uniform", "float32", 6, {"from_": -1.3, "to": 2.7}),
    (1, "uniform", "float64", 6, {"from_": -100.0, "to": 100.0}),
    (1, "uniform", "float16", 6, {"from_": 0.1, "to": 0.3}),
    (1, "normal", "float32", 5, {"mean": 0.3, "std": 2.7}),
    (1, "normal", "float32", 20, {"mean": 100.0, "std": 3.3}),
    (1, "normal", "float32", 32, {"mean": 0.3, "std": 2.7}),
    (1, "normal", "float64", 20, {"mean": 0.3, "std": 2.7}),
    (1, "normal", "float16", 18, {"mean": -5.0, "std": 0.5}),
    (2, "randint", "int64", 8, {"low": 0, "high": 10}),
    (2, "randint", "int64", 4, {"low": -2**40, "high": 2**40}),
    (2, "randint", "int64", 4, {"low": -2**63, "high": 2**63 - 1}),
    (2, "randint", "int32", 6, {"low": -5, "high": 5}),
    (2, "randint", "uint8", 6, {"low": 0, "high": 256}),
    (2, "randint", "bool", 8, {"low": 0, "high": 2}),
    (2, "randint", "float32", 4, {"low": 0, "high": 2**32}),
    (2, "randint", "float16", 6, {"low": -10, "high": 10}),
    (3, "randperm", "int64", 10, {}),
    (3, "randperm", "int32", 1, {}),
    (3, "randperm", "float32", 7, {}),
    (4, "bernoulli", "float32", 12, {"p": 0.3}),
    (4, "bernoulli", "bool", 12, {"p": 0.5}),
    (4, "bernoulli", "int64", 6, {"p": 1.0}),
    # a sequence: the cached normal value and the state carry over
    (5, "randn", "float32", 3, {}),
    (None, "randn", "float32", 1, {}),
    (None, "randn", "float64", 20, {}),
    (None, "randn", "float64", 1, {}),
    (None, "randint", "int64", 3, {"low": 0, "high": 100}),
    (None, "randn", "float32", 1, {}),
    (None, "rand", "float32", 2, {}),
    (2**32 + 5, "rand", "float32", 3, {}),
]


def c_double(x):
    if x == int(x) and abs(x) < 2**53:
        return "%.1f" % x
    return repr(float(x))


C_TEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "c", "test_random.c")


def main_c(update=False):
    out = ["/* generated by tools/gen_random_reference.py --c from PyTorch %s */\n" % torch.__version__]
    arrays, rows = [], []
    for i, (seed, op, dtype, n, kw) in enumerate(C_CASES):
        if seed is not None:
            torch.manual_seed(seed)
        t = run_op(op, dtype, n, **kw)
        bits = bits_of(t)
        name = "ref_%d" % i
        arrays.append("static const uint64_t %s[] = {%s};\n"
                      % (name, ", ".join("UINT64_C(0x%x)" % b for b in bits) if bits else "0"))
        # a, b: from, to (uniform) / mean, std (normal) / p (bernoulli)
        a = kw.get("from_", kw.get("mean", kw.get("p", 0.0)))
        b = kw.get("to", kw.get("std", 1.0))
        lo = kw.get("low", 0)
        hi = kw.get("high", 0)
        rows.append("  {%s, %s, UINT64_C(%d), %s, %d, %s, %s, %s, %s, %s, \"%s %s n=%d%s\"},\n" % (
            "1" if seed is not None else "0", C_OPS[op], seed if seed is not None else 0,
            C_DTYPES[dtype], n, c_double(a), c_double(b),
            ("INT64_MIN" if lo == -2**63 else "INT64_C(%d)" % lo),
            ("INT64_C(%d)" % hi), name, op, dtype, n,
            "".join(" %s=%s" % (k.rstrip("_"), v) for k, v in kw.items())))
    out += arrays
    out.append("static const struct ref_case ref_cases[] = {\n")
    out += rows
    out.append("};\n")
    table = "".join(out)
    if not update:
        sys.stdout.write(table)
        return
    begin, end = "/* BEGIN GENERATED", "/* END GENERATED */"
    with open(C_TEST) as f:
        src = f.read()
    i = src.index(begin)
    i = src.index("\n", i) + 1
    j = src.index(end)
    with open(C_TEST, "w") as f:
        f.write(src[:i] + table + src[j:])
    print("updated %s" % os.path.normpath(C_TEST))


if __name__ == "__main__":
    if "--c-update" in sys.argv[1:]:
        main_c(update=True)
    elif "--c" in sys.argv[1:]:
        main_c()
    else:
        main_lua()
