"""Writes spec/data/api_coverage_reference.lua: PyTorch 1.13's values for the functions that
tools/api_coverage.py found missing and lutorch now composes (the view copies torch.*_copy,
torch.angle, torch.fill, torch.frobenius_norm, torch.nuclear_norm, the functional recurrent cells
torch.rnn_tanh_cell, rnn_relu_cell, gru_cell, lstm_cell, torch.max_pool1d_with_indices), read by
spec/api_coverage_spec.lua. Run with /usr/bin/python3 (python3-torch).

Each case: op, a = the Lua arguments after x (dims and indices 1-based), x = the name of the input,
o = the output {s = shape, v = row-major values} (a list of them for the functions that return a
table), g = the gradient of x for the loss sum(out * u) with u(j) = ((7 j) % 11 - 5) / 4 at the
output's row-major position j (0-based; each output of a list numbered on from the last), absent
where PyTorch has no derivative. Input xt is x.transpose(0, 2) (the spec makes it so, a view).
cells[i]: op, bias, t = its tensors {s, v} by name (x, h, c for lstm_cell, w_ih, w_hh, b_ih and b_hh
where bias), o = the outputs' values (h', and c' for lstm_cell), g = each tensor's gradient for the
same loss (c' numbered on after h'). pool: max_pool1d_with_indices(x, 3, 2, 1)'s values and
1-based indices."""
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
    # 2 x 3 x 4 whose 3 x 4 slices have full rank (x's have rank 2): the nuclear norm's gradient is
    # unique only there (at a zero singular value it depends on the null vector LAPACK picks)
    "n": torch.tensor([(i * 5 % 17) / 4 - 2 for i in range(24)], dtype=torch.float64).reshape(2, 3, 4),
}
INPUTS["nm"] = INPUTS["n"][0]  # 3 x 4, full rank


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
    # (PyTorch 1.13's slice_copy without its step reads an unset value for it: from one run to the
    # next it gives every element or only the first; lutorch's step is 1, as its signature says:
    # the step is given here)
    case("slice_copy", x, [1, -1], lambda t: torch.slice_copy(t, 0, -1, None, 1))
    case("slice_copy", x, [], lambda t: torch.slice_copy(t, 0, None, None, 1))
    case("slice_copy", x, [2, 2], lambda t: torch.slice_copy(t, 1, 1, None, 1))
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
case("nuclear_norm", "nm", [], torch.nuclear_norm)
case("nuclear_norm", "nm", [True], lambda t: torch.nuclear_norm(t, True))
case("nuclear_norm", "n", [[2, 3]], lambda t: torch.nuclear_norm(t, (1, 2)))
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

# the functional recurrent cells: one step from given weights, with and without biases; the
# gradients of every tensor for the loss sum(h' * u) (+ sum(c' * u) numbered on after h')
def vals(n, shape, k):
    return torch.tensor([((i * k + 3) % 17) / 8 - 1.0 for i in range(n)], dtype=torch.float64).reshape(shape)


N, I, HS = 3, 4, 2
cells = []
for op, gates in [("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3), ("lstm_cell", 4)]:
    for bias in [True, False]:
        t = {"x": vals(N * I, (N, I), 5), "h": vals(N * HS, (N, HS), 7), "c": vals(N * HS, (N, HS), 3),
             "w_ih": vals(gates * HS * I, (gates * HS, I), 11) / 2, "w_hh": vals(gates * HS * HS, (gates * HS, HS), 13) / 2,
             "b_ih": vals(gates * HS, (gates * HS,), 9) / 4, "b_hh": vals(gates * HS, (gates * HS,), 15) / 4}
        if not bias:
            del t["b_ih"], t["b_hh"]
        if op != "lstm_cell":
            del t["c"]
        g = {k: v.clone().requires_grad_() for k, v in t.items()}
        hx = (g["h"], g["c"]) if op == "lstm_cell" else g["h"]
        out = getattr(torch, op)(g["x"], hx, g["w_ih"], g["w_hh"], g.get("b_ih"), g.get("b_hh"))
        outs = list(out) if isinstance(out, tuple) else [out]
        loss = sum((o.reshape(-1) * upstream(k * o.numel() + o.numel())[k * o.numel():]).sum() for k, o in enumerate(outs))
        loss.backward()
        cells.append({"op": op, "bias": bias, "t": {k: {"s": list(v.shape), "v": v.reshape(-1).tolist()} for k, v in t.items()},
                      "o": [o.detach().reshape(-1).tolist() for o in outs],
                      "g": {k: v.grad.reshape(-1).tolist() for k, v in g.items()}})

# max_pool1d_with_indices (indices 1-based)
mp = torch.tensor([[[0.5, -1.0, 2.0, 2.0, 0.25, 3.0, -2.0]]], dtype=torch.float64)
mv, mi = torch.max_pool1d_with_indices(mp, 3, 2, 1)
pool = {"x": mp.reshape(-1).tolist(), "v": mv.reshape(-1).tolist(), "i": (mi + 1).reshape(-1).tolist(), "s": list(mv.shape)}

write("api_coverage_reference.lua", "gen_api_coverage_reference.py",
      ["PyTorch's values for the view copies, angle, fill, frobenius_norm, nuclear_norm, the recurrent",
       "cells and max_pool1d_with_indices; the format is described in tools/gen_api_coverage_reference.py.",
       "Read by spec/api_coverage_spec.lua."],
      {"inputs": {k: {"s": list(v.shape), "v": v.reshape(-1).tolist()} for k, v in INPUTS.items()},
       "cases": cases, "angle": angle, "cells": cells, "pool": pool})
print(len(cases), "cases")
