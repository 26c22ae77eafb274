"""Writes spec/data/linalg_lu_reference.lua: PyTorch 1.13's values of the LU family (lu_factor, lu,
lu_solve, triangular_solve), matrix_exp, householder_product, geqrf, ldl_factor and ldl_solve,
tensorinv, tensorsolve and vander for fixed float64 inputs, with the gradients of sum(W * output)
for fixed weights W, which spec/linalg_reference_spec.lua compares with lutorch's.
Run with a Python that has PyTorch: python3 tools/gen_linalg_lu_reference.py"""
import math
import torch
import lua_reference as reference

torch.set_default_dtype(torch.float64)


def fixed(*shape, seed=0.0):
    """deterministic values in about [-2, 2]: sin of a scrambled index (no random generator)"""
    n = math.prod(shape)
    return torch.tensor([2 * math.sin(1.7 * i + 0.3 + seed) + 0.1 * math.cos(5.1 * i) for i in range(n)]).reshape(shape)


def grads(fn, inputs, weight_seed=9.0):
    """the output(s) of fn and the gradients of sum(W * output) with respect to the inputs"""
    xs = [x.clone().requires_grad_() for x in inputs]
    outs = fn(*xs)
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    loss = sum((o * fixed(*o.shape, seed=weight_seed + k)).sum() for k, o in enumerate(outs))
    gs = torch.autograd.grad(loss, xs)
    return [o.detach() for o in outs], list(gs)


ref = {}
cases = []
for name, shape in [("square", (4, 4)), ("tall", (5, 3)), ("wide", (3, 5)), ("batch", (2, 3, 3))]:
    a = fixed(*shape, seed=len(name))
    lu, piv = torch.linalg.lu_factor(a)
    (lu_o,), (g_lu,) = grads(lambda x: torch.linalg.lu_factor(x)[0], [a])
    (p, l, u), (g_plu,) = grads(lambda x: torch.linalg.lu(x), [a])
    cases.append({"name": name, "A": a, "LU": lu, "pivots": piv, "P": p, "L": l, "U": u,
                  "grad_lu_factor": g_lu, "grad_lu": g_plu})
ref["lu"] = cases

a = fixed(4, 4, seed=1.0) + 3 * torch.eye(4)
lu, piv = torch.linalg.lu_factor(a)
solves = []
for left in (True, False):
    for adjoint in (False, True):
        b = fixed(4, 2, seed=2.0) if left else fixed(2, 4, seed=2.0)
        (x,), (glu, gb) = grads(lambda f, y: torch.linalg.lu_solve(f, piv, y, left=left, adjoint=adjoint), [lu, b])
        solves.append({"left": left, "adjoint": adjoint, "B": b, "X": x, "grad_LU": glu, "grad_B": gb})
ref["lu_solve"] = {"A": a, "LU": lu, "pivots": piv, "cases": solves}

tri = []
for upper in (True, False):
    for transpose in (False, True):
        for unit in (False, True):
            b = fixed(3, 2, seed=4.0)
            (x, _), (ga, gb) = grads(lambda m, y: torch.triangular_solve(y, m, upper, transpose, unit), [a[:3, :3], b])
            tri.append({"upper": upper, "transpose": transpose, "unitriangular": unit, "B": b, "X": x,
                        "grad_A": ga, "grad_B": gb})
ref["triangular_solve"] = {"A": a[:3, :3], "cases": tri}

e_in = fixed(2, 3, 3, seed=5.0) * torch.tensor([0.3, 2.0]).reshape(2, 1, 1)
(e,), (ge,) = grads(torch.linalg.matrix_exp, [e_in])
ref["matrix_exp"] = {"A": e_in, "E": e, "grad": ge}

h_a, h_tau = fixed(2, 5, 3, seed=6.0), fixed(2, 2, seed=7.0) * 0.5
(q,), (gha, ght) = grads(torch.linalg.householder_product, [h_a, h_tau])
ref["householder_product"] = {"A": h_a, "tau": h_tau, "Q": q, "grad_A": gha, "grad_tau": ght}

ref["geqrf"] = [{"A": g, "a": torch.geqrf(g)[0], "tau": torch.geqrf(g)[1]}
                for g in (fixed(5, 3, seed=14.0), fixed(3, 5, seed=15.0), fixed(2, 4, 4, seed=16.0))]

s = fixed(5, 5, seed=8.0)
s = s + s.T
ld, lpiv = torch.linalg.ldl_factor(s)
lb = fixed(5, 2, seed=3.0)
ref["ldl"] = {"A": s, "LD": ld, "pivots": lpiv, "B": lb, "X": torch.linalg.ldl_solve(ld, lpiv, lb)}

t_in = fixed(4, 2, 2, seed=10.0) + torch.eye(4).reshape(4, 2, 2) * 3
(ti,), (gti,) = grads(lambda x: torch.linalg.tensorinv(x, ind=1), [t_in])
ts_a, ts_b = fixed(2, 3, 6, seed=11.0) + torch.eye(6).reshape(2, 3, 6) * 3, fixed(2, 3, seed=12.0)
(tx,), (gta, gtb) = grads(torch.linalg.tensorsolve, [ts_a, ts_b])
ref["tensorinv"] = {"A": t_in, "X": ti, "grad": gti}
ref["tensorsolve"] = {"A": ts_a, "B": ts_b, "X": tx, "grad_A": gta, "grad_B": gtb}

v_in = fixed(2, 3, seed=13.0)
(v,), (gv,) = grads(lambda x: torch.linalg.vander(x, N=4), [v_in])
ref["vander"] = {"x": v_in, "V": v, "grad": gv}

reference.write("linalg_lu_reference.lua", "gen_linalg_lu_reference.py",
                ["the inputs, outputs and gradients of sum(W * output) of spec/linalg_reference_spec.lua;",
                 "the weights W are fixed(shape, seed = 9 + k) for output k (the generator's fixed())"], ref)
