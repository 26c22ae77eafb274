"""Writes spec/data/api_coverage_reference.lua: PyTorch 1.13's values for the functions that
tools/api_coverage.py found missing and lutorch now composes (the view copies torch.*_copy,
torch.angle, torch.fill, torch.frobenius_norm, torch.nuclear_norm), read by
spec/api_coverage_spec.lua. Run with /usr/bin/python3 (python3-torch).

Each case: op, a = the Lua arguments after x (dims and indices 1-based), x = the name of the input,
o = the output {s = shape, v = row-major values} (a list of them for the functions that return a
table), g = the gradient of x for the loss sum(out * u) with u(j) = ((7 j) % 11 - 5) / 4 at the
output's row-major position j (0-based; each output of a list numbered on from the last), absent
where PyTorch has no derivative. Input xt is x.transpose(0, 2) (the spec makes it so, a view)."""
import math

import torch

from lua_reference import write

X = torch.tensor([(i * 7 % 13) / 4 - 1.5 for i in range(24)], dtype=torch.float64).reshape(2, 3, 4)
INPUTS = {
    "x": X,  # 2 x 3 x 4, distinct values
    "xt": X.transpose(0, 2),  # 4 x 3 x 2, non-contiguous
    "m": X[0],  # 3 x 4
    "r": X[:, :1, :].clone(),  # 2 x 1 x 4 (a size-1 dim)
    "e": torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64),  # 1 x 3
}


def upstream(n):
    return torch.tensor([((7 * j) % 11 - 5) / 4 for j in range(n)], dtype=torch.float64)


cases = []


def case(op, x, lua_args, py, grad=True):
    t = INPUTS[x].clone().requires_grad_(grad)
    out = py(t)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    recs = [{"s": list(o.shape), "v": o.detach().reshape(-1).tolist()} for o in outs]
    c = {"op": op, "x": x, "a": lua_args, "o": recs if isinstance(out, (tuple, list)) else recs[0]}
    if grad:
        loss, at = 0, 0
        for o in outs:
            loss = loss + (o.reshape(-1) * upstream(at + o.numel())[at:]).sum()
            at += o.numel()
        loss.backward()
        c["g"] = t.grad.reshape(-1).tolist()
    cases.append(c)


for x in ["x", "xt"]:
    case("alias_copy", x, [], torch.alias_copy)
    case("detach_copy", x, [], torch.detach_copy, grad=False)  # no derivative in PyTorch
    case("as_strided_copy", x, [[2, 3], [1, 2], 1], lambda t: torch.as_strided_copy(t, (2, 3), (1, 2), 1))
    case("diagonal_copy", x, [1, 2, 3], lambda t: torch.diagonal_copy(t, 1, 1, 2))
    case("diagonal_copy", x, [-1, 1, -1], lambda t: torch.diagonal_copy(t, -1, 0, -1))
    case("permute_copy", x, [[3, 1, 2]], lambda t: torch.permute_copy(t, (2, 0, 1)))
    case("select_copy", x, [2, 3], lambda t: torch.select_copy(t, 1, 2))
    case("select_copy", x, [-1, -1], lambda t: torch.select_copy(t, -1, -1))
    case("transpose_copy", x, [1, 3], lambda t: torch.transpose_copy(t, 0, 2))
    case("unfold_copy", x, [3, 2, 1], lambda t: torch.unfold_copy(t, 2, 2, 1))
    case("unsqueeze_copy", x, [2], lambda t: torch.unsqueeze_copy(t, 1))
    case("unsqueeze_copy", x, [-1], lambda t: torch.unsqueeze_copy(t, -1))
    case("split_copy", x, [2, 3], lambda t: torch.split_copy(t, 2, 2))
    case("split_with_sizes_copy", x, [[1, 2], 2], lambda t: torch.split_with_sizes_copy(t, [1, 2], 1))
    case("unbind_copy", x, [2], lambda t: torch.unbind_copy(t, 1))
    case("slice_copy", x, [3, 2, 4, 2], lambda t: torch.slice_copy(t, 2, 1, 4, 2))
    case("slice_copy", x, [1, -1], lambda t: torch.slice_copy(t, 0, -1))
    case("slice_copy", x, [], torch.slice_copy)
    case("slice_copy", x, [2, 2], lambda t: torch.slice_copy(t, 1, 1))
case("view_copy", "x", [[4, 6]], lambda t: torch.view_copy(t, (4, 6)))
case("view_copy", "x", [[-1]], lambda t: torch.view_copy(t, (-1,)))
case("t_copy", "m", [], torch.t_copy)
case("squeeze_copy", "r", [], torch.squeeze_copy)
case("squeeze_copy", "r", [2], lambda t: torch.squeeze_copy(t, 1))
case("expand_copy", "e", [[2, -1, 3]], lambda t: torch.expand_copy(t, (2, -1, 3)))
case("angle", "x", [], torch.angle)
case("fill", "x", [2.5], lambda t: torch.fill(t, 2.5))
case("frobenius_norm", "x", [], torch.frobenius_norm)
case("frobenius_norm", "x", [2], lambda t: torch.frobenius_norm(t, (1,)))
case("frobenius_norm", "x", [[1, 3], True], lambda t: torch.frobenius_norm(t, (0, 2), True))
case("frobenius_norm", "xt", [[-1, -2]], lambda t: torch.frobenius_norm(t, (-1, -2)))
case("nuclear_norm", "m", [], torch.nuclear_norm)
case("nuclear_norm", "m", [True], lambda t: torch.nuclear_norm(t, True))
case("nuclear_norm", "x", [[2, 3]], lambda t: torch.nuclear_norm(t, (1, 2)))
case("nuclear_norm", "xt", [[1, 3], True], lambda t: torch.nuclear_norm(t, (0, 2), True))

# angle's values on special numbers and other dtypes (the gradient is zero: checked in the spec)
SPECIAL = [-1.5, 0.0, -0.0, 2.0, math.nan, math.inf, -math.inf]
angle = {
    "special": torch.angle(torch.tensor(SPECIAL, dtype=torch.float64)).tolist(),
    "float32": torch.angle(torch.tensor(SPECIAL, dtype=torch.float32)).tolist(),
    "float16": torch.angle(torch.tensor([-1.0, 2.0], dtype=torch.float16)).tolist(),
    "int64": torch.angle(torch.tensor([-3, 0, 5])).tolist(),
    "int64_dtype": str(torch.angle(torch.tensor([-3, 0, 5])).dtype).replace("torch.", ""),
    "bool": torch.angle(torch.tensor([True, False])).tolist(),
}

write("api_coverage_reference.lua", "gen_api_coverage_reference.py",
      ["PyTorch's values for the view copies, angle, fill, frobenius_norm and nuclear_norm; the format",
       "is described in tools/gen_api_coverage_reference.py. Read by spec/api_coverage_spec.lua."],
      {"inputs": {k: {"s": list(v.shape), "v": v.reshape(-1).tolist()} for k, v in INPUTS.items()},
       "cases": cases, "angle": angle})
print(len(cases), "cases")
