#!/usr/bin/env python3
"""Writes spec/data/distributions_sweep_reference.lua for spec/distributions_sweep_spec.lua: a
differential sweep of torch.distributions against PyTorch 1.13, in float64. Run:
/usr/bin/python3 tools/gen_distributions_sweep.py (the generated file is committed).

A value in the file is a number, a tensor {s = shape, v = row-major values, id = k} (id: the
tensor is a float64 leaf whose gradient the case records), a distribution {D = name, k = {keyword
arguments}} or a transform {X = name, a = {positional arguments}, o = {options}}; a list of them is
a Lua array.

  cases[i] = {D = name, k = keyword arguments (PyTorch's names: lutorch takes them in its options
    table), idx = true where the values are class indices (Categorical: lutorch's are 1-based, and
    x, mode and enumerate_support are shifted by one in the spec), bs, es = batch and event shapes,
    sup = the support's constraint class, and for each of mean, mode, variance, stddev, entropy
    either the value or "ni" (PyTorch raises NotImplementedError),
    x = values inside the support, lp = log_prob(x), g = {{id, grad}} the gradients of
    sum(lp * u(j)) (u(j) = ((7 j) % 11 - 5) / 4 at the row-major position j, 0-based) for the
    leaves, cdf = cdf(x) and q, icdf = icdf(q) where defined, enum = enumerate_support(),
    out = {{x = values, r = whether PyTorch's log_prob raises ValueError with validate_args}} for
    values at or outside the edges of the support (lutorch must raise where PyTorch does), rs = {n = sample shape, v = rsample(n) after manual_seed(0), g = gradients of
    sum(v * u)} where the samples are PyTorch's draws transformed deterministically}
  kl[i] = {p, q (distributions), v = kl_divergence(p, q), g = the gradients of sum(v * u)}
  transforms[i] = {t (transform), x, y = t(x), ladj = log_abs_det_jacobian(x, y), inv = t.inv(y),
    dom, cod = the classes of domain and codomain}
  bad[i] = {D, k}: parameters outside their constraints (PyTorch raises ValueError)
  erfinv[i] = {x, erfinv(x)} by mpmath (torch.erfinv, which Normal's icdf uses, near +-1)

Not covered, as lutorch lacks them: the distribution OneHotCategoricalStraightThrough, the class
ExponentialFamily (and its Bregman-divergence KL). The transforms SoftmaxTransform,
StickBreakingTransform, LowerCholeskyTransform, CorrCholeskyTransform, SoftplusTransform,
ReshapeTransform, IndependentTransform, CatTransform, StackTransform and
CumulativeDistributionTransform, and biject_to and transform_to, are compared by
tools/gen_distributions_transforms.py (with the gradients of their maps). rsample is compared only where PyTorch's
draws are a deterministic transform of torch.rand/randn (lutorch draws the gamma family's samples
its own way).
"""
import math

import mpmath

import torch
import torch.distributions as D
import torch.distributions.transforms as TR

from lua_reference import write

torch.set_default_dtype(torch.float64)
NI = "ni"
_ids = [0]
_leaves = []


def u(shape):
    n = 1
    for s in shape:
        n *= s
    return torch.tensor([((7 * j) % 11 - 5) / 4 for j in range(n)]).reshape(shape)


class L:
    """a leaf parameter (gradient recorded) or a plain tensor (grad=False)"""

    def __init__(self, v, grad=True):
        self.v = torch.tensor(v, dtype=torch.float64)
        self.grad = grad


class Dist:
    def __init__(self, name, **k):
        self.name, self.k = name, k


class Tr:
    def __init__(self, name, *a, **o):
        self.name, self.a, self.o = name, a, o


def dist_class(name):
    if name == "LogitRelaxedBernoulli":
        return D.relaxed_bernoulli.LogitRelaxedBernoulli
    if name == "ExpRelaxedCategorical":
        return D.relaxed_categorical.ExpRelaxedCategorical
    return getattr(D, name)


def build(v, rec):
    """the PyTorch object of a description, and its Lua record; leaves collected in _leaves"""
    if isinstance(v, L):
        t = v.v.clone()
        r = {"s": list(t.shape), "v": t.reshape(-1).tolist()}
        if v.grad:
            t.requires_grad_()
            _ids[0] += 1
            r["id"] = _ids[0]
            _leaves.append((_ids[0], t))
        return t, r
    if isinstance(v, Dist):
        k, kr = {}, {}
        for name, a in v.k.items():
            k[name], kr[name] = build(a, rec)
        return dist_class(v.name)(**k, validate_args=True), {"D": v.name, "k": kr}
    if isinstance(v, Tr):
        a, ar = zip(*[build(x, rec) for x in v.a]) if v.a else ((), ())
        o, orr = {}, {}
        for name, x in v.o.items():
            o[name], orr[name] = build(x, rec)
        return getattr(TR, v.name)(*a, **o), {"X": v.name, "a": list(ar), "o": orr}
    if isinstance(v, (list, tuple)):
        pairs = [build(x, rec) for x in v]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return v, v


def val(t):
    t = t.detach()
    return {"s": list(t.shape), "v": t.reshape(-1).tolist()}


def grads(out):
    leaves = list(_leaves)
    if not out.requires_grad:
        return []
    gs = torch.autograd.grad((out * u(out.shape)).sum(), [t for _, t in leaves], allow_unused=True, retain_graph=True)
    return [[i, val(g)] for (i, _), g in zip(leaves, gs) if g is not None]


def attempt(f):
    try:
        return val(f())
    except NotImplementedError:
        return NI


def case(name, x, q=None, out=(), rs=None, idx=False, **k):
    _leaves.clear()
    d, rec = build(Dist(name, **k), None)
    c = {"D": name, "k": rec["k"]}
    if idx:
        c["idx"] = True
    c["bs"], c["es"] = list(d.batch_shape), list(d.event_shape)
    c["sup"] = type(d.support).__name__.lstrip("_")
    for p in ("mean", "mode", "variance", "stddev"):
        c[p] = attempt(lambda: getattr(d, p))
    c["entropy"] = attempt(d.entropy)
    x = torch.tensor(x)
    c["x"] = val(x)
    lp = d.log_prob(x)
    c["lp"] = val(lp)
    c["g"] = grads(lp)
    try:
        c["cdf"] = val(d.cdf(x))
    except NotImplementedError:
        pass
    if q is not None:
        q = torch.tensor(q)
        c["q"] = val(q)
        c["icdf"] = attempt(lambda: d.icdf(q))
    if d.has_enumerate_support:
        c["enum"] = attempt(d.enumerate_support)
    outs = []
    for o in out:
        try:
            d.log_prob(torch.tensor(o))
            outs.append({"x": val(torch.tensor(o)), "r": False})
        except ValueError:
            outs.append({"x": val(torch.tensor(o)), "r": True})
    if outs:
        c["out"] = outs
    if rs is not None:
        torch.manual_seed(0)
        s = d.rsample(rs)
        c["rs"] = {"n": list(rs), "v": val(s), "g": grads(s)}
    cases.append(c)


cases, kls, transforms = [], [], []

# ---- continuous, loc-scale and friends ----
case("Normal", [0.3, -1.0, 2.5], q=[0.1, 0.5, 0.999], out=[[0.0, math.nan, 1.0]], rs=[2],
     loc=L([0.0, 1.5, -2.0]), scale=L([1.0, 0.5, 3.0]))
case("Normal", [[0.3], [-4.0]], q=[[1e-9], [0.75]], rs=[1], loc=L([0.5, -0.5]), scale=L([[2.0], [1e-3]]))
case("LogNormal", [0.3, 1.0, 12.0], q=[0.2, 0.5, 0.9], out=[[-1.0, 1.0, 1.0]], rs=[2],
     loc=L([0.0, 0.5, 2.0]), scale=L([1.0, 0.25, 1.5]))
case("Uniform", [0.0, 0.5, 2.9], q=[0.0, 0.5, 0.99], out=[[0.0, 0.5, 3.0]], rs=[2],
     low=L([0.0, -1.0, 1.0]), high=L([2.0, 1.0, 3.0]))
case("Uniform", [[0.25], [0.75]], q=[[0.1], [0.9]], rs=[1], low=L([0.0]), high=L([[1.0], [1.0 + 1e-9]]))
case("Exponential", [0.0, 0.5, 40.0], q=[0.0, 0.5, 0.99], out=[[-1e-3, 1.0, 1.0]], rs=[2],
     rate=L([1.0, 2.0, 0.1]))
case("Cauchy", [0.0, -3.0, 100.0], q=[0.01, 0.5, 0.9], out=[[0.0, math.nan, 1.0]], rs=[2],
     loc=L([0.0, 1.0, -1.0]), scale=L([1.0, 0.5, 2.0]))
case("Laplace", [0.0, -3.0, 10.0], q=[0.01, 0.5, 0.9], rs=[2], loc=L([0.0, 1.0, -1.0]), scale=L([1.0, 0.5, 2.0]))
case("Gumbel", [0.0, -1.0, 10.0], q=[0.1, 0.5, 0.9], rs=[2], loc=L([0.0, 1.0, -1.0]), scale=L([1.0, 0.5, 2.0]))
case("HalfNormal", [0.0, 0.5, 3.0], q=[0.1, 0.5, 0.9], out=[[-0.5, 1.0, 1.0]], rs=[2], scale=L([1.0, 0.5, 2.0]))
case("HalfCauchy", [0.0, 0.5, 30.0], q=[0.1, 0.5, 0.9], out=[[-0.5, 1.0, 1.0]], rs=[2], scale=L([1.0, 0.5, 2.0]))
case("StudentT", [0.0, -2.0, 50.0], out=[[math.nan, 0.0, 0.0]], df=L([1.0, 3.0, 30.0]), loc=L([0.0, 1.0, -1.0]),
     scale=L([1.0, 0.5, 2.0]))
case("StudentT", [[0.5, 2.0]], df=L([[1.5], [2.5]]), loc=L(0.25), scale=L([1.0, 3.0]))
case("Pareto", [1.0, 2.0, 50.0], q=[0.1, 0.5, 0.9], out=[[0.5, 2.0, 2.0]], rs=[2], scale=L([1.0, 1.5, 0.5]),
     alpha=L([0.5, 1.5, 3.0]))
case("Weibull", [0.1, 1.0, 5.0], q=[0.1, 0.5, 0.9], rs=[2], out=[[-1.0, 1.0, 1.0]], scale=L([1.0, 0.5, 2.0]),
     concentration=L([0.5, 1.0, 3.0]))
case("VonMises", [0.0, -3.0, 3.1], out=[[0.0, 4.0, 0.0]], loc=L([0.0, 1.0, -1.0]),
     concentration=L([0.1, 1.0, 30.0]))

# ---- gamma family ----
case("Gamma", [0.1, 1.0, 20.0], out=[[-0.1, 1.0, 1.0]], concentration=L([0.5, 1.0, 10.0]), rate=L([1.0, 2.0, 0.5]))
case("Gamma", [[1e-3, 3.0]], concentration=L([[0.25], [4.0]]), rate=L(1.5))
case("Chi2", [0.1, 1.0, 20.0], out=[[-0.1, 1.0, 1.0]], df=L([1.0, 2.5, 10.0]))
case("Beta", [0.01, 0.5, 0.99], out=[[1.5, 0.5, 0.5]], concentration1=L([0.5, 2.0, 5.0]),
     concentration0=L([0.5, 3.0, 1.0]))
case("Beta", [[0.2], [0.7]], concentration1=L([1.0, 10.0]), concentration0=L([[1.0], [0.1]]))
case("Dirichlet", [[0.2, 0.3, 0.5], [0.01, 0.01, 0.98]], out=[[0.5, 0.5, 0.5]],
     concentration=L([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]]))
case("Kumaraswamy", [0.1, 0.5, 0.9], q=[0.1, 0.5, 0.9], rs=[2], concentration1=L([0.5, 2.0, 5.0]), concentration0=L([1.5, 3.0, 2.0]))
case("FisherSnedecor", [0.1, 1.0, 8.0], out=[[-1.0, 1.0, 1.0]], df1=L([1.0, 3.0, 10.0]), df2=L([2.0, 5.0, 20.0]))

# ---- discrete ----
case("Bernoulli", [0.0, 1.0, 1.0], out=[[0.5, 1.0, 0.0]], probs=L([0.3, 1e-6, 0.999]))
case("Bernoulli", [[0.0, 1.0]], logits=L([[-2.0], [30.0]]))
case("Binomial", [0.0, 3.0, 10.0], out=[[11.0, 1.0, 1.0], [0.5, 1.0, 1.0]], total_count=L([10.0], grad=False),
     probs=L([0.3, 0.5, 0.9]))
case("Binomial", [[0.0, 2.0], [5.0, 1.0]], total_count=L([[5.0], [8.0]], grad=False), logits=L([-1.0, 2.0]))
case("Categorical", [0, 2], idx=True, out=[[3, 0]], probs=L([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]))
case("Categorical", [[1], [0]], idx=True, logits=L([[-1.0, 0.0, 2.0, 0.5]]))
case("OneHotCategorical", [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], out=[[0.0, 1.0, 1.0]],
     probs=L([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]))
case("OneHotCategorical", [[0.0, 1.0, 0.0]], logits=L([[-1.0, 0.0, 2.0], [1.0, 1.0, 1.0]]))
case("Multinomial", [[1.0, 2.0, 3.0], [6.0, 0.0, 0.0]], out=[[1.0, 1.0, 1.0]], total_count=6,
     probs=L([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]))
case("Multinomial", [[2.0, 0.0, 2.0]], total_count=4, logits=L([[-1.0, 0.0, 2.0]]))
case("Poisson", [0.0, 3.0, 25.0], out=[[-1.0, 1.0, 1.0], [0.5, 1.0, 1.0]], rate=L([0.5, 3.0, 20.0]))
case("Geometric", [0.0, 3.0, 25.0], out=[[-1.0, 1.0, 1.0]], probs=L([0.5, 0.1, 1.0]))
case("Geometric", [[0.0, 2.0]], logits=L([[-1.0], [2.0]]))
case("NegativeBinomial", [0.0, 3.0, 25.0], out=[[-1.0, 1.0, 1.0]], total_count=L([2.0, 0.5, 10.0]),
     probs=L([0.5, 0.1, 0.7]))
case("NegativeBinomial", [[0.0, 4.0]], total_count=L(3.0), logits=L([[-1.0], [2.0]]))
case("ContinuousBernoulli", [0.0, 0.3, 0.9, 0.5], out=[[1.5, 0.5, 0.5, 0.5]], q=[0.1, 0.5, 0.9, 0.3], rs=[2],
     probs=L([0.2, 0.4995, 0.9, 0.5]))
case("ContinuousBernoulli", [[0.25, 0.75]], rs=[1], logits=L([[-2.0], [3.0]]))

# ---- relaxed ----
case("RelaxedBernoulli", [0.2, 0.5, 0.9], q=[0.1, 0.5, 0.9], rs=[2], out=[[1.5, 0.5, 0.5]], temperature=L(0.5), probs=L([0.3, 0.5, 0.9]))
case("RelaxedBernoulli", [[0.2, 0.5]], temperature=L(2.0), logits=L([[-1.0], [1.0]]))
case("LogitRelaxedBernoulli", [0.2, -3.0, 5.0], rs=[2], temperature=L(0.5), probs=L([0.3, 0.5, 0.9]))
case("RelaxedOneHotCategorical", [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], rs=[2], out=[[0.5, 0.5, 0.5]], temperature=L(0.7),
     probs=L([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]))
case("RelaxedOneHotCategorical", [[0.2, 0.3, 0.5]], temperature=L(1.5), logits=L([[-1.0, 0.0, 2.0]]))
case("ExpRelaxedCategorical", [[-1.0, -2.0, -0.7]], rs=[2], temperature=L(0.7), probs=L([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]))

# ---- multivariate ----
COV = [[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, 1.5]]
TRIL = torch.linalg.cholesky(torch.tensor(COV)).tolist()
PREC = torch.linalg.inv(torch.tensor(COV)).tolist()
XM = [[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]]
case("MultivariateNormal", XM, rs=[2], loc=L([0.1, -0.2, 0.3]), covariance_matrix=L(COV))
case("MultivariateNormal", XM, rs=[2], loc=L([0.1, -0.2, 0.3]), scale_tril=L(TRIL))
case("MultivariateNormal", XM, loc=L([[0.1, -0.2, 0.3], [1.0, 1.0, 1.0]]), precision_matrix=L(PREC))
case("LowRankMultivariateNormal", XM, rs=[2], loc=L([0.1, -0.2, 0.3]), cov_factor=L([[1.0, 0.5], [0.0, 1.0], [-0.5, 0.2]]),
     cov_diag=L([0.5, 1.0, 2.0]))
case("LowRankMultivariateNormal", [0.5, -1.0, 2.0], loc=L([[0.0, 0.0, 0.0], [1.0, 0.0, -1.0]]),
     cov_factor=L([[0.3], [0.2], [0.1]]), cov_diag=L([1.0, 0.5, 0.25]))
WX = [[2.0, 0.3, 0.0], [0.3, 1.5, 0.2], [0.0, 0.2, 1.0]]
case("Wishart", WX, df=L(4.5), covariance_matrix=L(COV))
case("Wishart", WX, df=L([3.0, 6.0]), scale_tril=L(TRIL))
case("Wishart", WX, df=L(5.0), precision_matrix=L(PREC))
LC = torch.linalg.cholesky(torch.tensor([[1.0, 0.3, -0.2], [0.3, 1.0, 0.1], [-0.2, 0.1, 1.0]])).tolist()
case("LKJCholesky", LC, dim=3, concentration=L([0.5, 1.0, 3.0]))

# ---- composite ----
case("Independent", [[0.3, -1.0], [1.0, 2.0]], rs=[2], base_distribution=Dist("Normal", loc=L([0.0, 1.0]), scale=L([1.0, 2.0])),
     reinterpreted_batch_ndims=1)
case("MixtureSameFamily", [0.3, -1.0, 4.0], mixture_distribution=Dist("Categorical", probs=L([0.2, 0.3, 0.5])),
     component_distribution=Dist("Normal", loc=L([0.0, 1.0, -1.0]), scale=L([1.0, 0.5, 2.0])))
case("TransformedDistribution", [1.5, 2.0, 7.0], q=[0.1, 0.5, 0.9], rs=[2], base_distribution=Dist("Normal", loc=L([0.0, 0.5, 1.0]), scale=L(1.0)),
     transforms=[Tr("ExpTransform"), Tr("AffineTransform", L(1.0), L(2.0))])
case("LogisticNormal", [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], out=[[0.5, 0.5, 0.5]], rs=[2],
     loc=L([[0.0, 1.0], [-0.5, 0.3]]), scale=L([1.0, 0.5]))
case("LogisticNormal", [0.3, 0.7], out=[[0.3, -0.3]], rs=[3], loc=L(0.5), scale=L(2.0))

# ---- parameters outside their constraints: PyTorch raises ValueError with validate_args ----
bad = []
for name, k in [
    ("Normal", dict(loc=L([0.0, 1.0]), scale=L([1.0, 0.0]))),
    ("Normal", dict(loc=L([math.nan]), scale=L([1.0]))),
    ("Uniform", dict(low=L([0.0, 1.0]), high=L([1.0, 1.0]))),
    ("Exponential", dict(rate=L([-1.0]))),
    ("Bernoulli", dict(probs=L([1.5]))),
    ("Categorical", dict(probs=L([[0.5, -0.1, 0.6]]))),
    ("Binomial", dict(total_count=L([-1.0]), probs=L([0.5]))),
    ("Beta", dict(concentration1=L([0.0]), concentration0=L([1.0]))),
    ("Dirichlet", dict(concentration=L([[1.0, -1.0]]))),
    ("Gamma", dict(concentration=L([1.0]), rate=L([0.0]))),
    ("Geometric", dict(probs=L([0.0]))),
    ("Poisson", dict(rate=L([-0.5]))),
    ("StudentT", dict(df=L([0.0]))),
    ("VonMises", dict(loc=L([0.0]), concentration=L([-1.0]))),
    ("MultivariateNormal", dict(loc=L([0.0, 0.0]), covariance_matrix=L([[1.0, 2.0], [2.0, 1.0]]))),
    ("MultivariateNormal", dict(loc=L([0.0, 0.0]), scale_tril=L([[1.0, 0.0], [0.5, -1.0]]))),
    ("LowRankMultivariateNormal", dict(loc=L([0.0, 0.0]), cov_factor=L([[1.0], [0.0]]), cov_diag=L([1.0, 0.0]))),
    ("Wishart", dict(df=L(1.0), covariance_matrix=L(COV))),
    ("LKJCholesky", dict(dim=3, concentration=L(0.0))),
    ("Pareto", dict(scale=L([1.0]), alpha=L([0.0]))),
    ("ContinuousBernoulli", dict(probs=L([-0.5]))),
]:
    try:
        _leaves.clear()
        build(Dist(name, **k), None)
        raise AssertionError("PyTorch takes %s %s" % (name, k))
    except ValueError:
        bad.append({"D": name, "k": {n: build(a, None)[1] for n, a in k.items()}})

# ---- KL divergences: every pair PyTorch 1.13 registers ----
N1 = Dist("Normal", loc=L([0.0, 1.0]), scale=L([1.0, 2.0]))
PAR = {
    "Bernoulli": Dist("Bernoulli", probs=L([0.3, 0.8])),
    "Beta": Dist("Beta", concentration1=L([0.5, 2.0]), concentration0=L([1.5, 3.0])),
    "Binomial": Dist("Binomial", total_count=L([5.0], grad=False), probs=L([0.3, 0.6])),
    "Categorical": Dist("Categorical", probs=L([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
    "Cauchy": Dist("Cauchy", loc=L([0.0, 1.0]), scale=L([1.0, 2.0])),
    "ContinuousBernoulli": Dist("ContinuousBernoulli", probs=L([0.3, 0.8])),
    "Dirichlet": Dist("Dirichlet", concentration=L([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]])),
    "Exponential": Dist("Exponential", rate=L([1.0, 2.5])),
    "Gamma": Dist("Gamma", concentration=L([0.5, 3.0]), rate=L([1.0, 2.0])),
    "Geometric": Dist("Geometric", probs=L([0.3, 0.8])),
    "Gumbel": Dist("Gumbel", loc=L([0.0, 1.0]), scale=L([1.0, 2.0])),
    "HalfNormal": Dist("HalfNormal", scale=L([1.0, 2.0])),
    "Laplace": Dist("Laplace", loc=L([0.0, 1.0]), scale=L([1.0, 2.0])),
    "LowRankMultivariateNormal": Dist("LowRankMultivariateNormal", loc=L([0.1, -0.2, 0.3]),
                                      cov_factor=L([[1.0, 0.5], [0.0, 1.0], [-0.5, 0.2]]), cov_diag=L([0.5, 1.0, 2.0])),
    "MultivariateNormal": Dist("MultivariateNormal", loc=L([0.1, -0.2, 0.3]), covariance_matrix=L(COV)),
    "Normal": N1,
    "OneHotCategorical": Dist("OneHotCategorical", probs=L([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
    "Pareto": Dist("Pareto", scale=L([1.0, 1.5]), alpha=L([2.5, 3.0])),
    "Poisson": Dist("Poisson", rate=L([0.5, 3.0])),
    "TransformedDistribution": Dist("LogNormal", loc=L([0.0, 0.5]), scale=L([1.0, 0.5])),
    "Uniform": Dist("Uniform", low=L([0.0, 0.2]), high=L([1.0, 0.9])),
    "Independent": Dist("Independent", base_distribution=Dist("Normal", loc=L([[0.0, 1.0]]), scale=L([[1.0, 2.0]])),
                        reinterpreted_batch_ndims=1),
}
# second members with different parameters
Q = {
    "Bernoulli": Dist("Bernoulli", probs=L([0.5, 0.4])),
    "Beta": Dist("Beta", concentration1=L([1.5, 1.0]), concentration0=L([2.0, 0.5])),
    "Binomial": Dist("Binomial", total_count=L([5.0], grad=False), probs=L([0.5, 0.2])),
    "Categorical": Dist("Categorical", logits=L([[0.0, 1.0, -1.0], [0.5, 0.5, 0.0]])),
    "Cauchy": Dist("Cauchy", loc=L([0.5, -1.0]), scale=L([2.0, 0.5])),
    "ContinuousBernoulli": Dist("ContinuousBernoulli", probs=L([0.6, 0.2])),
    "Dirichlet": Dist("Dirichlet", concentration=L([[2.0, 2.0, 2.0], [1.0, 3.0, 0.5]])),
    "Exponential": Dist("Exponential", rate=L([0.5, 1.5])),
    "Gamma": Dist("Gamma", concentration=L([2.0, 1.5]), rate=L([0.5, 3.0])),
    "Geometric": Dist("Geometric", probs=L([0.6, 0.2])),
    "Gumbel": Dist("Gumbel", loc=L([0.5, -1.0]), scale=L([2.0, 0.5])),
    "HalfNormal": Dist("HalfNormal", scale=L([0.5, 3.0])),
    "Laplace": Dist("Laplace", loc=L([0.5, -1.0]), scale=L([2.0, 0.5])),
    "LowRankMultivariateNormal": Dist("LowRankMultivariateNormal", loc=L([0.0, 0.5, -0.3]),
                                      cov_factor=L([[0.5], [0.2], [1.0]]), cov_diag=L([1.0, 2.0, 0.5])),
    "MultivariateNormal": Dist("MultivariateNormal", loc=L([0.0, 0.5, -0.3]), scale_tril=L(TRIL)),
    "Normal": Dist("Normal", loc=L([0.5, -1.0]), scale=L([2.0, 0.5])),
    "OneHotCategorical": Dist("OneHotCategorical", logits=L([[0.0, 1.0, -1.0], [0.5, 0.5, 0.0]])),
    "Pareto": Dist("Pareto", scale=L([0.5, 1.0]), alpha=L([3.0, 1.5])),
    "Poisson": Dist("Poisson", rate=L([2.0, 1.0])),
    "TransformedDistribution": Dist("LogNormal", loc=L([0.5, 0.0]), scale=L([2.0, 1.0])),
    "Uniform": Dist("Uniform", low=L([-1.0, 0.0]), high=L([2.0, 1.0])),
    "Independent": Dist("Independent", base_distribution=Dist("Normal", loc=L([[0.5, -1.0]]), scale=L([[2.0, 0.5]])),
                        reinterpreted_batch_ndims=1),
}
for (P, Qc) in sorted(D.kl._KL_REGISTRY, key=lambda pq: (pq[0].__name__, pq[1].__name__)):
    pn, qn = P.__name__, Qc.__name__
    if pn == qn == "ExponentialFamily":  # the Bregman form: lutorch has no ExponentialFamily class
        continue
    assert pn in PAR and qn in PAR, (pn, qn)
    # one parameter set; a second (the pair reversed) where both are of one class
    for a, b in [(PAR[pn], Q[qn] if pn == qn else PAR[qn])] + ([(Q[qn], PAR[pn])] if pn == qn else []):
        _leaves.clear()
        p, pr = build(a, None)
        q, qr = build(b, None)
        v = D.kl_divergence(p, q)
        kls.append({"p": pr, "q": qr, "v": val(v), "g": grads(v)})


# ---- transforms ----
def tcase(t, x, inv_ok=True):
    _leaves.clear()
    tt, tr = build(t, None)
    x = torch.tensor(x)
    y = tt(x)
    c = {"t": tr, "x": val(x), "y": val(y), "ladj": attempt(lambda: tt.log_abs_det_jacobian(x, y)),
         "dom": type(tt.domain).__name__.lstrip("_"), "cod": type(tt.codomain).__name__.lstrip("_")}
    if inv_ok:
        c["inv"] = val(tt.inv(y))
    transforms.append(c)


X = [-2.0, -0.5, 0.0, 0.7, 3.0]
XP = [0.1, 0.5, 1.0, 2.0, 7.0]
tcase(Tr("ExpTransform"), X)
tcase(Tr("SigmoidTransform"), X + [-40.0, 40.0])
tcase(Tr("TanhTransform"), X + [-10.0])
tcase(Tr("AffineTransform", L([1.0, -2.0, 0.5, 3.0, 0.0], grad=False), L(-2.5, grad=False)), X)
tcase(Tr("AffineTransform", L(0.5, grad=False), L([2.0, 3.0], grad=False), event_dim=1), [[1.0, 2.0], [3.0, -4.0]])
tcase(Tr("PowerTransform", L(2.5, grad=False)), XP)
tcase(Tr("PowerTransform", L([0.5, -1.0, 3.0, 1.0, 2.0], grad=False)), XP)
tcase(Tr("AbsTransform"), X, inv_ok=False)
tcase(Tr("ComposeTransform", [Tr("ExpTransform"), Tr("AffineTransform", L(1.0, grad=False), L(2.0, grad=False))]), X)

# ---- erfinv near +-1 (Normal's icdf), by mpmath at 40 digits: PyTorch's own is 1e-10 off there ----
mpmath.mp.dps = 40
erfinv = [[x, float(mpmath.erfinv(mpmath.mpf(x)))]
          for x in [2 * 1e-9 - 1, 1 - 2 * 1e-9, 1 - 2.0 ** -40, 1 - 2.0 ** -53, -1 + 2.0 ** -53, -0.9999, 0.75,
                    -0.6, 0.5, 0.3, 1e-3, 1e-300]]

write("distributions_sweep_reference.lua", "gen_distributions_sweep.py",
      ["torch.distributions against PyTorch 1.13 in float64: see the generator's docstring."],
      {"cases": cases, "kl": kls, "transforms": transforms, "erfinv": erfinv, "bad": bad})
