#!/usr/bin/env python3
"""Writes spec/data/distributions_transforms_reference.lua for spec/distributions_transforms_spec.lua:
the transforms of torch.distributions that act on events (SoftmaxTransform, StickBreakingTransform,
LowerCholeskyTransform, CorrCholeskyTransform), on parts and shapes (IndependentTransform,
ReshapeTransform, CatTransform, StackTransform), SoftplusTransform and
CumulativeDistributionTransform; biject_to and transform_to of every constraint; LogisticNormal's
repr and shapes. PyTorch 1.13, float64. Run: /usr/bin/python3 tools/gen_distributions_transforms.py
(the generated file is committed). LogisticNormal's log_prob, gradients and seeded rsample are in
the distributions sweep (tools/gen_distributions_sweep.py).

Each case is named; the spec builds the same object from the name (its own table of constructors,
with lutorch's 1-based dims where PyTorch's are 0-based). A tensor is {s = shape, v = row-major
values}; "ni" marks NotImplementedError, "err" a ValueError.

  transforms[i] = {name, x, y = t(x), inv = t.inv(y), ladj = log_abs_det_jacobian(x, y) or "ni",
    gy = the gradient of sum(y * u) with respect to x (u(j) = ((7 j) % 11 - 5) / 4 at the row-major
    position j, 0-based), gl = that of sum(ladj * u) (y = t(x) from x), gi = that of sum(t.inv(y) * u)
    with respect to y, dom, cod = repr of domain and codomain, event_dim or "err", bijective,
    sign or "ni", repr, fshape = forward_shape(x.shape), ishape = inverse_shape(y.shape),
    eq = (t == the same transform made again)}
  registry[i] = {name, x, and for each of biject_to and transform_to (keys b and t) either "ni" or
    {repr, y = t(x), ladj or "ni", ok = constraint.check(y).all()}}
  logistic_normal[i] = {name, repr, bs, es = batch and event shapes}
"""
import torch
import torch.distributions as D
import torch.distributions.constraints as C
import torch.distributions.transforms as TR
from torch.distributions import biject_to, transform_to

from lua_reference import write

torch.set_default_dtype(torch.float64)
NI, ERR = "ni", "err"


def u(shape):
    n = 1
    for s in shape:
        n *= s
    return torch.tensor([((7 * j) % 11 - 5) / 4 for j in range(n)]).reshape(shape)


def val(t):
    t = t.detach()
    return {"s": list(t.shape), "v": t.reshape(-1).tolist()}


def attempt(f, exc=NotImplementedError, mark=NI):
    try:
        return f()
    except exc:
        return mark


def grad_of(out, leaf):
    if not out.requires_grad:  # (a constant: ReshapeTransform's log |det J|)
        return val(torch.zeros_like(leaf))
    (g,) = torch.autograd.grad((out * u(out.shape)).sum(), [leaf], allow_unused=True)
    return val(g if g is not None else torch.zeros_like(leaf))


# ---- the transforms, by name (the spec has the same names) ----
TRANSFORMS = {
    "softplus": lambda: TR.SoftplusTransform(),
    "softmax": lambda: TR.SoftmaxTransform(),
    "stick_breaking": lambda: TR.StickBreakingTransform(),
    "lower_cholesky": lambda: TR.LowerCholeskyTransform(),
    "corr_cholesky": lambda: TR.CorrCholeskyTransform(),
    "cdf_normal": lambda: TR.CumulativeDistributionTransform(D.Normal(torch.tensor(0.5), torch.tensor(2.0))),
    "cdf_exponential": lambda: TR.CumulativeDistributionTransform(D.Exponential(torch.tensor([1.5, 0.5]))),
    "reshape": lambda: TR.ReshapeTransform((2, 3), (3, 2)),
    "reshape_flat": lambda: TR.ReshapeTransform((2, 2), (4,)),
    "independent_exp": lambda: TR.IndependentTransform(TR.ExpTransform(), 1),
    "independent_stick": lambda: TR.IndependentTransform(TR.StickBreakingTransform(), 1),
    "cat_first": lambda: TR.CatTransform([TR.ExpTransform(), TR.identity_transform, TR.AffineTransform(1.0, -2.0)],
                                         dim=0, lengths=[1, 2, 1]),
    "cat_last": lambda: TR.CatTransform([TR.ExpTransform(), TR.SigmoidTransform()], dim=-1, lengths=[2, 1]),
    "cat_event_sum": lambda: TR.CatTransform([TR.IndependentTransform(TR.ExpTransform(), 1), TR.TanhTransform()],
                                             dim=-1, lengths=[2, 2]),
    "cat_event_join": lambda: TR.CatTransform([TR.IndependentTransform(TR.SoftplusTransform(), 1),
                                               TR.IndependentTransform(TR.ExpTransform(), 1)], dim=0, lengths=[1, 2]),
    "stack_second": lambda: TR.StackTransform([TR.ExpTransform(), TR.SigmoidTransform(), TR.AffineTransform(0.5, 3.0)],
                                              dim=1),
    "stack_last": lambda: TR.StackTransform([TR.SoftplusTransform(), TR.TanhTransform()], dim=-1),
    "compose_stick": lambda: TR.ComposeTransform([TR.AffineTransform(0.5, 2.0), TR.StickBreakingTransform()]),
    "inverse_stick": lambda: TR.StickBreakingTransform().inv,
}

transforms = []


def tcase(name, x):
    t = TRANSFORMS[name]()
    x = torch.tensor(x).requires_grad_()
    y = t(x)
    c = {"name": name, "x": val(x), "y": val(y), "gy": grad_of(y, x)}
    y = t(x)
    ladj = attempt(lambda: t.log_abs_det_jacobian(x, y))
    if ladj == NI:
        c["ladj"] = NI
    else:
        c["ladj"], c["gl"] = val(ladj), grad_of(ladj, x)
    yl = y.detach().clone().requires_grad_()
    xi = t.inv(yl)
    c["inv"], c["gi"] = val(xi), grad_of(xi, yl)
    c["dom"], c["cod"] = repr(t.domain), repr(t.codomain)
    c["event_dim"] = attempt(lambda: t.event_dim, ValueError, ERR)
    c["bijective"] = bool(t.bijective)
    c["sign"] = attempt(lambda: int(t.sign))
    c["repr"] = repr(t)
    c["fshape"] = list(t.forward_shape(x.shape))
    c["ishape"] = list(t.inverse_shape(y.shape))
    c["eq"] = bool(t == TRANSFORMS[name]())
    transforms.append(c)


tcase("softplus", [-30.0, -2.0, -0.5, 0.0, 0.7, 3.0, 25.0])
tcase("softmax", [[-1.0, 0.5, 2.0], [3.0, 3.0, -40.0]])
tcase("stick_breaking", [[-1.0, 0.5, 2.0], [0.0, 0.0, 0.0]])
tcase("stick_breaking", [0.3])
tcase("lower_cholesky", [[[0.5, 9.0, 9.0], [-1.0, 0.2, 9.0], [2.0, 0.3, -0.7]],
                         [[0.0, 1.0, 2.0], [3.0, 0.0, 4.0], [5.0, 6.0, 0.0]]])
tcase("corr_cholesky", [[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]])
tcase("corr_cholesky", [[0.7], [-2.5]])
tcase("corr_cholesky", [0.3, -0.2, 1.1, 0.4, -0.8, 0.05])
tcase("cdf_normal", [-3.0, 0.0, 0.5, 4.0])
tcase("cdf_exponential", [[0.1, 2.0], [1.0, 0.3]])
tcase("reshape", [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]]])
tcase("reshape_flat", [[[1.0, 2.0], [3.0, 4.0]]])
tcase("independent_exp", [[-1.0, 0.5, 2.0], [0.0, 0.3, -0.3]])
tcase("independent_stick", [[[-1.0, 0.5], [2.0, 0.0]], [[0.3, -0.3], [1.0, 1.0]]])
tcase("cat_first", [[0.5, -1.0], [0.2, 0.3], [1.5, -0.5], [2.0, 0.0]])
tcase("cat_last", [[0.5, -1.0, 0.2], [0.3, 1.5, -0.5]])
tcase("cat_event_sum", [[0.5, -1.0, 0.2, 0.9], [0.3, 1.5, -0.5, -2.0], [0.0, 0.1, 0.2, 0.3]])
tcase("cat_event_join", [[0.5, -1.0], [0.2, 0.3], [1.5, -0.5]])
tcase("stack_second", [[0.5, -1.0, 0.2], [0.3, 1.5, -0.5]])
tcase("stack_last", [[0.5, -1.0], [0.2, 0.3], [1.5, -0.5]])
tcase("compose_stick", [[-1.0, 0.5, 2.0], [0.0, 0.2, -0.4]])
tcase("inverse_stick", [[0.2, 0.3, 0.1, 0.4], [0.7, 0.1, 0.1, 0.1]])
# a last coordinate of 0: the stick left is clamped to tiny, not 0
tcase("inverse_stick", [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])

# ---- biject_to and transform_to ----
CONSTRAINTS = {
    "real": C.real,
    "real_vector": C.real_vector,
    "positive": C.positive,
    "nonnegative": C.nonnegative,
    "greater_than": C.greater_than(2.5),
    "greater_than_eq": C.greater_than_eq(-1.0),
    "less_than": C.less_than(3.0),
    "interval": C.interval(-2.0, 5.0),
    "unit_interval": C.unit_interval,
    "interval_01_int": C.interval(0, 1),
    "interval_tensor": C.interval(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 3.0])),
    "half_open_interval": C.half_open_interval(0.0, 2.0),
    "simplex": C.simplex,
    "lower_cholesky": C.lower_cholesky,
    "corr_cholesky": C.corr_cholesky,
    "independent_positive": C.independent(C.positive, 1),
    "cat": C.cat([C.positive, C.real, C.unit_interval], 0, [1, 2, 1]),
    "stack": C.stack([C.positive, C.interval(-1.0, 1.0)], -1),
    "positive_definite": C.positive_definite,
    "positive_semidefinite": C.positive_semidefinite,
    "boolean": C.boolean,
    "integer_interval": C.integer_interval(0, 3),
    "dependent": C.dependent,
}

registry = []


def entry(reg, c, x):
    t = attempt(lambda: reg(c))
    if t == NI:
        return NI
    y = t(x)
    e = {"repr": repr(t), "y": val(y), "ok": bool(c.check(y).all())}
    ladj = attempt(lambda: t.log_abs_det_jacobian(x, y))
    e["ladj"] = ladj if ladj == NI else val(ladj)
    return e


def rcase(name, x):
    c = CONSTRAINTS[name]
    x = torch.tensor(x)
    registry.append({"name": name, "x": val(x), "b": entry(biject_to, c, x), "t": entry(transform_to, c, x)})


X = [-2.0, -0.5, 0.0, 0.7, 3.0]
for n in ["real", "positive", "nonnegative", "greater_than", "greater_than_eq", "less_than", "interval",
          "unit_interval", "interval_01_int", "half_open_interval"]:
    rcase(n, X)
rcase("real_vector", [[0.5, -1.0], [2.0, 0.0]])
rcase("interval_tensor", [[-1.0, 2.0], [0.5, -0.5]])
rcase("simplex", [[-1.0, 0.5, 2.0], [0.0, 0.0, 0.0]])
rcase("lower_cholesky", [[0.5, 9.0], [-1.0, 0.2]])
rcase("corr_cholesky", [[0.5, -1.0, 2.0]])
rcase("independent_positive", [[0.5, -1.0], [2.0, 0.0]])
rcase("cat", [[0.5, -1.0], [0.2, 0.3], [1.5, -0.5], [2.0, 0.0]])
rcase("stack", [[0.5, -1.0], [0.2, 0.3], [1.5, -0.5]])
for n in ["positive_definite", "positive_semidefinite", "boolean", "integer_interval", "dependent"]:
    rcase(n, [[1.0, 0.0], [0.0, 1.0]])

# ---- LogisticNormal: repr and shapes ----
LOGISTIC_NORMAL = {
    "scalar": lambda: D.LogisticNormal(0.5, 2.0),
    "vector": lambda: D.LogisticNormal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5])),
    "broadcast": lambda: D.LogisticNormal(torch.tensor([[0.0, 1.0, 2.0]]), torch.tensor([[1.0], [2.0]])),
}
logistic_normal = []
for name, f in LOGISTIC_NORMAL.items():
    d = f()
    logistic_normal.append({"name": name, "repr": repr(d), "bs": list(d.batch_shape), "es": list(d.event_shape)})

write("distributions_transforms_reference.lua", "gen_distributions_transforms.py",
      ["torch.distributions' transforms, biject_to and transform_to, LogisticNormal: see the generator's docstring."],
      {"transforms": transforms, "registry": registry, "logistic_normal": logistic_normal})
