#!/usr/bin/env python3
"""Generates spec/data/reference.safetensors and spec/data/safetensors_reference.lua.

Run from the repository root with a Python that has PyTorch (Debian's python3-torch, 1.13):

    /usr/bin/python3 tools/gen_safetensors_reference.py

The `safetensors` package is not installed here, so the file is written by the small writer
below, which follows the format's specification and its reference writer (huggingface/safetensors,
safetensors/src/tensor.rs `prepare`): an 8-byte little-endian header length N; the header as
compact JSON with "__metadata__" first, then the tensors sorted by the reference's Dtype order
(descending) and then by name, each {"dtype","shape","data_offsets":[begin,end]} with offsets
contiguous from 0; the JSON padded with spaces to a multiple of 8 (N counts the padding); then
the tensors' raw little-endian row-major bytes. The reference keeps the metadata in a hash map
(any order); this writer sorts its keys, as lutorch does, so the files can be compared byte for
byte. The writer checks itself against the test vectors of tensor.rs before writing anything.

The Lua file records what PyTorch holds for each tensor (dtype, shape, values read back from the
torch tensor), the metadata, the names in data order, and the file's bytes as hex.
"""

import json
import math
import os
import struct

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT_BIN = os.path.join(ROOT, "spec", "data", "reference.safetensors")
OUT_LUA = os.path.join(ROOT, "spec", "data", "safetensors_reference.lua")

# The reference's Dtype enum, in declaration order (its writer sorts by it, descending).
ST_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32",
            "F32", "F64", "I64", "U64"]
ST_NAME = {
    torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
    torch.float16: "F16", torch.bfloat16: "BF16", torch.int32: "I32", torch.float32: "F32",
    torch.float64: "F64", torch.int64: "I64",
}
LUA_DTYPE = {
    torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.int32: "int32",
    torch.float32: "float32", torch.float64: "float64", torch.int64: "int64",
}


def raw_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: the same 16 bits as int16
        t = t.view(torch.int16)
    assert struct.pack("<H", 1) == b"\x01\x00"  # numpy's native order is the file's (little)
    return t.numpy().tobytes()


def serialize(tensors, metadata=None):
    """tensors: {name: torch tensor}; metadata: {str: str} or None."""
    items = sorted(tensors.items(), key=lambda kv: kv[0].encode("utf-8"))
    items.sort(key=lambda kv: ST_ORDER.index(ST_NAME[kv[1].dtype]), reverse=True)  # stable
    header = {}
    if metadata is not None:
        header["__metadata__"] = {k: metadata[k] for k in sorted(metadata)}
    data = b""
    for name, t in items:
        b = raw_bytes(t)
        header[name] = {"dtype": ST_NAME[t.dtype], "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data, [name for name, _ in items]


def check_test_vectors():
    """The expected bytes of safetensors/src/tensor.rs's tests."""
    out, _ = serialize({})
    assert out == bytes([8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32]), out
    out, _ = serialize({}, {"framework": "pt"})
    assert out[:8] == struct.pack("<Q", 40)
    assert out[8:] == b'{"__metadata__":{"framework":"pt"}}' + b" " * 5, out
    x = torch.arange(6, dtype=torch.float32)
    out, _ = serialize({"attn.0": x.view(1, 2, 3)})
    assert out[:8] == struct.pack("<Q", 64)
    assert out[8:72] == b'{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}'
    assert out[72:] == raw_bytes(x)
    out, _ = serialize({"attn0": x.view(1, 1, 2, 3)})
    assert out[:8] == struct.pack("<Q", 72)
    assert out[8:80] == b'{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}' + b" " * 7


def lua_string(s):
    out = []
    for byte in s.encode("utf-8"):
        c = chr(byte)
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif 32 <= byte < 127:
            out.append(c)
        else:
            out.append("\\%03d" % byte)
    return '"' + "".join(out) + '"'


def lua_number(v, integral):
    if integral:
        return str(int(v))
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INF" if v > 0 else "-INF"
    return repr(float(v))


def lua_values(t):
    flat = t.reshape(-1)
    if t.dtype == torch.bool:
        return ", ".join("true" if bool(v) else "false" for v in flat.tolist())
    integral = not t.dtype.is_floating_point
    # float16/bfloat16 values as PyTorch holds them (exact in a double)
    vals = flat.tolist() if integral else flat.double().tolist()
    return ", ".join(lua_number(v, integral) for v in vals)


def main():
    check_test_vectors()
    g = torch.Generator().manual_seed(7)
    tensors = {
        "weight": torch.randn(2, 3, generator=g),
        "model.layers.0.bias": torch.tensor([0.1, -2.5, 1e-3]),
        "double_scalar": torch.tensor(math.pi, dtype=torch.float64),
        "double_inf_nan": torch.tensor([math.inf, -math.inf, math.nan, -0.0], dtype=torch.float64),
        "half": torch.tensor([0.1, -2.5, 65504.0, 6.0e-8, 1 / 3], dtype=torch.float16),
        "bf16": torch.tensor([[1 / 3, -7.1], [1e20, 0.0]], dtype=torch.bfloat16),
        "mask": torch.tensor([True, False, False, True]),
        "steps": torch.tensor([-(2 ** 40), 0, 2 ** 62 + 1], dtype=torch.int64),
        "i32": torch.tensor([[-(2 ** 31), 2 ** 31 - 1, 5]], dtype=torch.int32),
        "i16": torch.tensor([-32768, 32767], dtype=torch.int16),
        "i8": torch.tensor([-128, 127, -1], dtype=torch.int8),
        "u8": torch.tensor([0, 255, 17], dtype=torch.uint8),
        "empty": torch.zeros(0, 3),
        "empty_i64": torch.zeros(4, 0, 2, dtype=torch.int64),
        "quote\"and \u00f1\n": torch.tensor([1.5, 2.5], dtype=torch.float32),
    }
    metadata = {"format": "pt", "note": "written by tools/gen_safetensors_reference.py"}
    blob, order = serialize(tensors, metadata)
    with open(OUT_BIN, "wb") as f:
        f.write(blob)

    lines = [
        "-- Generated by tools/gen_safetensors_reference.py from PyTorch %s: do not edit." % torch.__version__,
        "-- spec/data/reference.safetensors, written by that script's spec-following writer: each",
        "-- tensor's dtype, shape and values as PyTorch holds them, the metadata, the names in data",
        "-- order, and the whole file as hex.",
        "local NAN, INF = 0.0 / 0.0, math.huge",
        "return {",
        "  tensors = {",
    ]
    for name in order:
        t = tensors[name]
        lines.append("    [%s] = { dtype = %s, shape = {%s}, values = {%s} }," % (
            lua_string(name), lua_string(LUA_DTYPE[t.dtype]), ", ".join(str(s) for s in t.shape),
            lua_values(t)))
    lines.append("  },")
    lines.append("  metadata = {")
    for k in sorted(metadata):
        lines.append("    [%s] = %s," % (lua_string(k), lua_string(metadata[k])))
    lines.append("  },")
    lines.append("  names = { %s }," % ", ".join(lua_string(n) for n in order))
    header_len = struct.unpack("<Q", blob[:8])[0]
    lines.append("  header_len = %d," % header_len)
    hexed = blob.hex()
    lines.append("  hex = table.concat {")
    for i in range(0, len(hexed), 96):
        lines.append('    "%s",' % hexed[i:i + 96])
    lines.append("  },")
    lines.append("}")
    with open(OUT_LUA, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", OUT_BIN, len(blob), "bytes and", OUT_LUA)


if __name__ == "__main__":
    main()
