"""Writes spec/data/names1_reference.lua: PyTorch 1.13's values for torch.norm_except_dim,
torch.embedding_renorm_, F.embedding's scale_grad_by_freq gradient, torch.as_strided_scatter (on
contiguous and non-contiguous inputs), torch.as_strided_ and torch.ormqr, read by
spec/torch_names_spec.lua. Indices and dims are written 1-based where lutorch's are. Run with
/usr/bin/python3 (python3-torch)."""
import torch

from lua_reference import write

ref = {}
f64 = torch.float64

# norm_except_dim: v 2x3x4 (values 0..23 with signs), pow 2 and 3, each dim (PyTorch 0-based:
# written 1-based), and dim -1 (PyTorch: the whole tensor; lutorch: dim = false)
v = (torch.arange(24, dtype=f64) * torch.tensor([1.0, -1.0], dtype=f64).repeat(12) / 3.0).view(2, 3, 4)
ref["norm_except_dim"] = {
    "v": v.flatten(),
    "cases": [
        {"pow": p, "dim": d + 1, "shape": list(torch.norm_except_dim(v, p, d).shape),
         "out": torch.norm_except_dim(v, p, d).flatten()}
        for p in (2, 3, 1) for d in (0, 1, 2)
    ],
    "whole2": torch.norm_except_dim(v, 2, -1).item(),
    "whole3": torch.norm_except_dim(v, 3, -1).item(),
}

# embedding_renorm_: weight 5x3, indices with a repeat, norm types 2 and 1, max_norm 5
w = torch.arange(15, dtype=f64).view(5, 3) / 2.0 - 1.0
idx = torch.tensor([[0, 3], [3, 4]])
cases = []
for p in (2.0, 1.0, 3.0):
    ww = w.clone()
    torch.embedding_renorm_(ww, idx, 5.0, p)
    cases.append({"norm_type": p, "out": ww.flatten()})
ref["renorm"] = {"w": w.flatten(), "idx": (idx + 1).flatten(), "cases": cases}

# scale_grad_by_freq: the gradient of weight 6x2 for indices with repeats and an upstream gradient
W = torch.arange(12, dtype=f64).view(6, 2).requires_grad_()
I = torch.tensor([[0, 2, 2], [5, 2, 0]])
G = torch.arange(12, dtype=f64).view(2, 3, 2) / 4.0 + 1.0
torch.nn.functional.embedding(I, W, scale_grad_by_freq=True).backward(G)
g1 = W.grad.clone()
W.grad = None
torch.nn.functional.embedding(I, W, padding_idx=2, scale_grad_by_freq=True).backward(G)
ref["freq"] = {"idx": (I + 1).flatten(), "up": G.flatten(), "grad": g1.flatten(), "grad_pad3": W.grad.flatten()}

# as_strided_scatter: contiguous 2x3, a transpose (dense, strides kept by the clone) and a slice
# of the transpose (not dense)
base = torch.arange(6, dtype=f64).view(2, 3)
src2 = torch.tensor([10.0, 20.0], dtype=f64)
src22 = torch.tensor([[10.0, 20.0], [30.0, 40.0]], dtype=f64)
ref["ass"] = [
    {"what": "contiguous", "size": [2, 2], "stride": [1, 2], "offset": 1,
     "out": torch.as_strided_scatter(base, src22, (2, 2), (1, 2), 1).flatten()},
    {"what": "transpose", "size": [2], "stride": [1], "offset": 0,
     "out": torch.as_strided_scatter(base.t(), src2, (2,), (1,), 0).flatten()},
    {"what": "transpose", "size": [2], "stride": [1], "offset": 1,
     "out": torch.as_strided_scatter(base.t(), src2, (2,), (1,), 1).flatten()},
    {"what": "slice", "size": [2], "stride": [1], "offset": 1,
     "out": torch.as_strided_scatter(base.t()[1:], src2, (2,), (1,), 1).flatten()},
    {"what": "slice", "size": [2, 2], "stride": [2, 1], "offset": 0,
     "out": torch.as_strided_scatter(base.t()[1:], src22, (2, 2), (2, 1), 0).flatten()},
]
# its gradients: input's and src's for an upstream gradient
x = base.clone().requires_grad_()
s = src22.clone().requires_grad_()
up = torch.arange(6, dtype=f64).view(2, 3) + 1.0
torch.as_strided_scatter(x, s, (2, 2), (1, 2), 1).backward(up)
# (src's only: PyTorch 1.13's gradient for the input is wrong, zeros (or uninitialised memory) outside the view
# and the upstream gradient inside it, where it should be the reverse; the spec checks lutorch's
# against finite differences)
ref["ass_grad"] = {"up": up.flatten(), "gs": s.grad.flatten()}

# as_strided_: in place on a 2x3's view metadata
y = torch.arange(6, dtype=f64).view(2, 3)
y.as_strided_((2, 2), (1, 2), 1)
ref["as_strided_"] = {"shape": list(y.shape), "stride": list(y.stride()), "offset": y.storage_offset(),
                      "out": y.flatten()}

# ormqr: geqrf of a 4x3 (and a batch of 2), other 4x2 on the left, 2x4 on the right, each transpose
A = torch.tensor([[1.0, 2, 3], [4, 5, 6], [7, 8, 10], [1, 0, 1]], dtype=f64)
a, tau = torch.geqrf(A)
C = torch.tensor([[1.0, 2], [3, 4], [5, 6], [7, 8]], dtype=f64)
Ab = torch.stack([A, A.flip(0) * 0.5 + 1.0])
ab, taub = torch.geqrf(Ab)
Cb = torch.stack([C, C * -1.5 + 2.0])
ref["ormqr"] = {
    "a": a.flatten(), "tau": tau, "c": C.flatten(),
    "ll": torch.ormqr(a, tau, C).flatten(),
    "lt": torch.ormqr(a, tau, C, True, True).flatten(),
    "rl": torch.ormqr(a, tau, C.t(), False).flatten(),
    "rt": torch.ormqr(a, tau, C.t(), False, True).flatten(),
    "k2": torch.ormqr(a, tau[:2], C).flatten(),
    "ab": ab.flatten(), "taub": taub.flatten(), "cb": Cb.flatten(),
    "batch": torch.ormqr(ab, taub, Cb).flatten(),
}

write("names1_reference.lua", "gen_names1_reference.py",
      ["Read by spec/torch_names_spec.lua (indices and dims 1-based)."], ref)
