"""Writes spec/data/functional_sweep_reference.lua: PyTorch's values of torch.nn.functional across
its options (reductions, weights, ignore_index, strides, paddings, dilations, groups, ceil_mode,
align_corners, padding modes, training or eval, ...), for spec/functional_sweep_spec.lua to check
lutorch's against: the float64 outputs and the gradients of their inputs for a fixed upstream
gradient, and the float dtypes among float32, float16 and bfloat16 that PyTorch computes the case in
on the CPU (the spec compares lutorch's outputs in those with the float64 ones, within the dtype's
tolerance: the inputs are the same in every dtype, see gen below).

Run from the repository root with a Python that has PyTorch (Debian's python3-torch, 1.13):

    /usr/bin/python3 tools/gen_functional_sweep.py

Each case names the lutorch call (fn, args): a tensor argument is {ref = name}, a nil one
{none = true}; dims, classes and indices are written 1-based, as lutorch takes and gives them.
Floating inputs are not stored but made on both sides by gen (below): values odd / 64 scaled by a
power of two and shifted, exact in every float dtype, so that all dtypes see the same inputs.
"""

import math

import torch
import torch.nn.functional as F

import lua_reference as reference

torch.manual_seed(0)


def gen_values(shape, k, scale=1.0, shift=0.0):
    n = math.prod(shape)
    u = (torch.arange(n, dtype=torch.int64) * 37 + k * 11) % 97
    return ((2 * u - 95).double() / 64 * scale + shift).reshape(shape)


class G:
    """a generated floating input (grad: its gradient is checked)"""

    def __init__(self, shape, k, scale=1.0, shift=0.0, grad=True):
        self.shape, self.k, self.scale, self.shift, self.grad = list(shape), k, scale, shift, grad

    def make(self):
        return gen_values(self.shape, self.k, self.scale, self.shift)

    def spec(self):
        return dict(gen=[self.shape, self.k, self.scale, self.shift])


class V:
    """a stored floating input (values that gen cannot make, such as probabilities summing to 1)"""

    def __init__(self, t, grad=True):
        self.t, self.grad = t.double(), grad

    def make(self):
        return self.t.clone()

    def spec(self):
        return dict(shape=list(self.t.shape), data=self.t.reshape(-1).tolist())


class I:
    """an integer input: PyTorch's values, and lutorch's (PyTorch's + 1 unless given)"""

    def __init__(self, data, lua=None, shift=1):
        self.t = torch.tensor(data, dtype=torch.int64)
        self.lua = torch.tensor(lua, dtype=torch.int64) if lua is not None else self.t + shift
        self.grad = False

    def make(self):
        return self.t.clone()

    def spec(self):
        return dict(shape=list(self.t.shape), ints=self.lua.reshape(-1).tolist())


def R(name):
    return {"ref": name}


NONE = {"none": True}


def flat(v):
    v = v.detach()
    if v.is_floating_point():
        return dict(shape=list(v.shape), data=v.double().reshape(-1).tolist())
    return dict(shape=list(v.shape), ints=v.reshape(-1).tolist())


cases = []
FLOATS = [torch.float32, torch.float16, torch.bfloat16]


# whether the cases added check gradients (the losses' 'sum' cases do not: the 'none' ones check the
# elementwise gradients for a varied upstream gradient, and 'mean' the reduction's)
GRADS = True


# reduction 'sum' is checked for the losses that weigh, ignore or normalise on their own, and for
# mse_loss (the others reduce their 'none' values with the same code as mse_loss does)
SUMMED = {"F.cross_entropy", "F.nll_loss", "F.ctc_loss", "F.kl_div", "F.binary_cross_entropy",
          "F.binary_cross_entropy_with_logits", "F.multi_margin_loss", "F.mse_loss"}


def add(name, fn, inputs, py, args, index_outputs=(), mutated=(), dtypes=True, grad=None):
    """one case: fn(args) in lutorch against py(**inputs) in PyTorch. index_outputs: positions (1-based)
    of outputs holding 0-based indices (written 1-based); mutated: inputs whose values after the call
    are compared (running statistics)"""
    if fn.endswith("_loss") and fn not in SUMMED and any(
            isinstance(a, dict) and a.get("reduction") == "sum" for a in args):
        return
    grad = GRADS if grad is None else grad

    def run(dtype, with_grad):
        ts = {}
        for k, spec in inputs.items():
            t = spec.make()
            if t.is_floating_point():
                t = t.to(dtype)
                if with_grad and spec.grad:
                    t.requires_grad_(True)
            ts[k] = t
        out = py(**ts)
        outs = list(out) if isinstance(out, tuple) else [out]
        return ts, outs

    ts, outs = run(torch.float64, grad)
    case = dict(name=name, fn=fn, inputs={k: v.spec() for k, v in inputs.items()}, args=args, nargs=len(args))
    written = []
    for j, o in enumerate(outs):
        if (j + 1) in index_outputs:
            o = o + 1
        written.append(flat(o))
    case["outputs"] = written
    if mutated:
        case["mutated"] = {k: flat(ts[k]) for k in mutated}
    grad_names = [k for k, v in inputs.items() if v.grad and ts[k].is_floating_point()]
    if grad and grad_names and outs[0].requires_grad:
        gy = gen_values(list(outs[0].shape), 5, 0.5)
        gs = torch.autograd.grad(outs[0], [ts[k] for k in grad_names], gy, allow_unused=True)
        case["grads"] = {k: flat(g if g is not None else torch.zeros_like(ts[k])) for k, g in zip(grad_names, gs)}
    if dtypes:
        low = []
        for dtype in FLOATS:
            try:
                with torch.no_grad():
                    _, louts = run(dtype, False)
            except (RuntimeError, NotImplementedError):
                continue
            if louts[0].is_floating_point():
                low.append(str(dtype).replace("torch.", ""))
        case["low"] = low
    cases.append(case)


REDUCTIONS = ["none", "mean", "sum"]


def opts_py(o):
    return {k: v for k, v in o.items()}


# ---------------------------------------------------------------- losses
N, Cn = 3, 4
for red in REDUCTIONS:
    GRADS = red != "sum"
    for wname, ii, ls in [(None, None, 0.0), ("w", None, 0.0), (None, 2, 0.0), ("w", 2, 0.0), (None, None, 0.2),
                          ("w", 2, 0.3), (None, 2, 0.1)]:
        inputs = dict(x=G((N, Cn), 1), t=I([3, 2, 0]))
        po, lo = dict(reduction=red, label_smoothing=ls), dict(reduction=red, label_smoothing=ls)
        if wname:
            inputs["w"] = G((Cn,), 2, 0.25, 1.0, grad=False)
            po["weight"] = "w"
            lo["weight"] = R("w")
        if ii is not None:
            po["ignore_index"] = ii
            lo["ignore_index"] = ii + 1

        def py(po=po, **ts):
            kw = {k: (ts[v] if k == "weight" else v) for k, v in po.items()}
            return F.cross_entropy(ts["x"], ts["t"], **kw)

        add("cross_entropy %s w=%s ignore=%s ls=%g" % (red, wname, ii, ls), "F.cross_entropy", inputs, py,
            [R("x"), R("t"), lo])

        # nll_loss, the same options (no smoothing), on log-probabilities
        if ls == 0:
            def py2(po=po, **ts):
                kw = {k: (ts[v] if k == "weight" else v) for k, v in po.items() if k != "label_smoothing"}
                return F.nll_loss(ts["x"], ts["t"], **kw)

            lo2 = {k: v for k, v in lo.items() if k != "label_smoothing"}
            add("nll_loss %s w=%s ignore=%s" % (red, wname, ii), "F.nll_loss", inputs, py2, [R("x"), R("t"), lo2])

    # K-dim: N x C x d1 x d2, with weight and ignore_index
    for wname, ii in [(None, None), ("w", 1), ("w", None)]:
        inputs = dict(x=G((2, 3, 2, 3), 3), t=I([[[0, 1, 2], [2, 1, 0]], [[1, 1, 0], [2, 0, 2]]]))
        kw, lo = {}, dict(reduction=red)
        if wname:
            inputs["w"] = G((3,), 4, 0.25, 1.0, grad=False)
            lo["weight"] = R("w")
        if ii is not None:
            kw["ignore_index"] = ii
            lo["ignore_index"] = ii + 1
        add("cross_entropy K-dim %s w=%s ignore=%s" % (red, wname, ii), "F.cross_entropy", inputs,
            lambda x, t, w=None, kw=kw, red=red: F.cross_entropy(x, t, weight=w, reduction=red, **kw),
            [R("x"), R("t"), lo])
        add("nll_loss K-dim %s w=%s ignore=%s" % (red, wname, ii), "F.nll_loss", inputs,
            lambda x, t, w=None, kw=kw, red=red: F.nll_loss(x, t, weight=w, reduction=red, **kw),
            [R("x"), R("t"), lo])

    # class-probability targets
    for wname, ls in [(None, 0.0), ("w", 0.0), (None, 0.25), ("w", 0.1)]:
        inputs = dict(x=G((N, Cn), 7), p=G((N, Cn), 6, 0.25, 0.5, grad=False))
        lo = dict(reduction=red, label_smoothing=ls)
        if wname:
            inputs["w"] = G((Cn,), 8, 0.25, 1.0, grad=False)
            lo["weight"] = R("w")
        add("cross_entropy probabilities %s w=%s ls=%g" % (red, wname, ls), "F.cross_entropy", inputs,
            lambda x, p, w=None, red=red, ls=ls: F.cross_entropy(x, p, weight=w, reduction=red, label_smoothing=ls),
            [R("x"), R("p"), lo])
    inputs = dict(x=G((2, 3, 4), 9), p=G((2, 3, 4), 10, 0.25, 0.5, grad=False))
    add("cross_entropy probabilities K-dim %s" % red, "F.cross_entropy", inputs,
        lambda x, p, red=red: F.cross_entropy(x, p, reduction=red, label_smoothing=0.1),
        [R("x"), R("p"), dict(reduction=red, label_smoothing=0.1)])

    # binary cross entropy
    for wname in [None, "w"]:
        inputs = dict(x=G((3, 4), 11, 0.25, 0.5), y=G((3, 4), 12, 0.25, 0.5, grad=False))
        lo = dict(reduction=red)
        if wname:
            inputs["w"] = G((4,), 13, 0.25, 1.0, grad=False)
            lo["weight"] = R("w")
        add("binary_cross_entropy %s w=%s" % (red, wname), "F.binary_cross_entropy", inputs,
            lambda x, y, w=None, red=red: F.binary_cross_entropy(x, y, weight=w, reduction=red), [R("x"), R("y"), lo])
    for wname, pw in [(None, None), ("w", None), (None, (4,)), ("w", (3, 4)), (None, (1,))]:
        inputs = dict(x=G((3, 4), 14, 2.0), y=G((3, 4), 15, 0.25, 0.5, grad=False))
        lo = dict(reduction=red)
        if wname:
            inputs["w"] = G((3, 1), 16, 0.25, 1.0, grad=False)
            lo["weight"] = R("w")
        if pw:
            inputs["pw"] = G(pw, 17, 0.5, 1.0, grad=False)
            lo["pos_weight"] = R("pw")
        add("binary_cross_entropy_with_logits %s w=%s pos_weight=%s" % (red, wname, pw),
            "F.binary_cross_entropy_with_logits", inputs,
            lambda x, y, w=None, pw=None, red=red: F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw,
                                                                                    reduction=red),
            [R("x"), R("y"), lo])

    pair = dict(x=G((3, 5), 18, 2.0), y=G((3, 5), 19, 2.0))
    add("mse_loss %s" % red, "F.mse_loss", pair, lambda x, y, red=red: F.mse_loss(x, y, reduction=red),
        [R("x"), R("y"), dict(reduction=red)])
    add("l1_loss %s" % red, "F.l1_loss", pair, lambda x, y, red=red: F.l1_loss(x, y, reduction=red),
        [R("x"), R("y"), dict(reduction=red)])
    for beta in [1.0, 0.5, 0.0, 2.0]:
        add("smooth_l1_loss %s beta=%g" % (red, beta), "F.smooth_l1_loss", pair,
            lambda x, y, red=red, beta=beta: F.smooth_l1_loss(x, y, reduction=red, beta=beta),
            [R("x"), R("y"), dict(reduction=red, beta=beta)])
    for delta in [1.0, 0.5, 2.5]:
        add("huber_loss %s delta=%g" % (red, delta), "F.huber_loss", pair,
            lambda x, y, red=red, delta=delta: F.huber_loss(x, y, reduction=red, delta=delta),
            [R("x"), R("y"), dict(reduction=red, delta=delta)])
    for log_target in [False, True]:
        kred = red
        tgt = G((3, 4), 21, 0.25, 0.5, grad=True) if not log_target else G((3, 4), 21, 0.5, -1.0)
        inputs = dict(x=G((3, 4), 20, 0.5, -1.0), t=tgt)
        for kred in [red] + (["batchmean"] if red == "mean" else []):
            add("kl_div %s log_target=%s" % (kred, log_target), "F.kl_div", inputs,
                lambda x, t, kred=kred, lt=log_target: F.kl_div(x, t, reduction=kred, log_target=lt),
                [R("x"), R("t"), dict(reduction=kred, log_target=log_target)])
    for log_input in [True, False]:
        for full in [False, True]:
            x = G((3, 4), 22, 0.5, 0.0) if log_input else G((3, 4), 22, 0.25, 1.0)
            inputs = dict(x=x, t=V(torch.tensor([[0., 1, 2, 3], [4, 0, 1, 5], [2, 2, 7, 1]]), grad=False))
            add("poisson_nll_loss %s log_input=%s full=%s" % (red, log_input, full), "F.poisson_nll_loss", inputs,
                lambda x, t, red=red, li=log_input, full=full: F.poisson_nll_loss(x, t, log_input=li, full=full,
                                                                               reduction=red),
                [R("x"), R("t"), dict(reduction=red, log_input=log_input, full=full)])
    for full, eps, vshape in [(False, 1e-6, (3, 4)), (True, 1e-6, (3, 4)), (False, 0.3, (3, 1)), (True, 1e-6, (3,))]:
        inputs = dict(x=G((3, 4), 23), t=G((3, 4), 24), v=G(vshape, 25, 0.25, 0.5))
        add("gaussian_nll_loss %s full=%s eps=%g var=%s" % (red, full, eps, vshape), "F.gaussian_nll_loss", inputs,
            lambda x, t, v, red=red, full=full, eps=eps: F.gaussian_nll_loss(x, t, v, full=full, eps=eps, reduction=red),
            [R("x"), R("t"), R("v"), dict(reduction=red, full=full, eps=eps)], )
    ysign = V(torch.tensor([1., -1, 1, -1, -1, 1]), grad=False)
    for margin in [0.0, 0.5]:
        inputs = dict(a=G((6,), 26), b=G((6,), 27), y=ysign)
        add("margin_ranking_loss %s margin=%g" % (red, margin), "F.margin_ranking_loss", inputs,
            lambda a, b, y, red=red, m=margin: F.margin_ranking_loss(a, b, y, margin=m, reduction=red),
            [R("a"), R("b"), R("y"), dict(reduction=red, margin=margin)])
    for margin in [1.0, 0.25]:
        inputs = dict(x=G((2, 3), 28, 2.0), y=V(torch.tensor([[1., -1, -1], [1, -1, 1]]), grad=False))
        add("hinge_embedding_loss %s margin=%g" % (red, margin), "F.hinge_embedding_loss", inputs,
            lambda x, y, red=red, m=margin: F.hinge_embedding_loss(x, y, margin=m, reduction=red),
            [R("x"), R("y"), dict(reduction=red, margin=margin)])
    inputs = dict(x=G((2, 3), 29, 2.0), y=V(torch.tensor([[1., -1, -1], [1, -1, 1]]), grad=False))
    add("soft_margin_loss %s" % red, "F.soft_margin_loss", inputs,
        lambda x, y, red=red: F.soft_margin_loss(x, y, reduction=red), [R("x"), R("y"), dict(reduction=red)])
    inputs = dict(x=G((3, 4), 30), t=I([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 0]],
                                       lua=[[4, 1, -1, 2], [2, 3, 4, 1], [-1, 2, 3, 1]]))
    add("multilabel_margin_loss %s" % red, "F.multilabel_margin_loss", inputs,
        lambda x, t, red=red: F.multilabel_margin_loss(x, t, reduction=red), [R("x"), R("t"), dict(reduction=red)])
    for wname in [None, "w"]:
        inputs = dict(x=G((3, 4), 31), y=V(torch.tensor([[1., 0, 1, 0], [0, 0, 1, 1], [1, 1, 1, 0]]), grad=False))
        lo = dict(reduction=red)
        if wname:
            inputs["w"] = G((4,), 32, 0.25, 1.0, grad=False)
            lo["weight"] = R("w")
        add("multilabel_soft_margin_loss %s w=%s" % (red, wname), "F.multilabel_soft_margin_loss", inputs,
            lambda x, y, w=None, red=red: F.multilabel_soft_margin_loss(x, y, weight=w, reduction=red),
            [R("x"), R("y"), lo])
    for p, margin, wname in [(1, 1.0, None), (2, 1.0, None), (1, 0.5, "w"), (2, 2.0, "w")]:
        inputs = dict(x=G((4, 5), 33), t=I([0, 4, 2, 1]))
        lo = dict(reduction=red, p=p, margin=margin)
        if wname:
            inputs["w"] = G((5,), 34, 0.25, 1.0, grad=False)
            lo["weight"] = R("w")
        add("multi_margin_loss %s p=%d margin=%g w=%s" % (red, p, margin, wname), "F.multi_margin_loss", inputs,
            lambda x, t, w=None, red=red, p=p, m=margin: F.multi_margin_loss(x, t, p=p, margin=m, weight=w,
                                                                           reduction=red),
            [R("x"), R("t"), lo])
    for margin in [0.0, 0.3]:
        inputs = dict(a=G((4, 3), 35), b=G((4, 3), 36), y=V(torch.tensor([1., -1, -1, 1]), grad=False))
        add("cosine_embedding_loss %s margin=%g" % (red, margin), "F.cosine_embedding_loss", inputs,
            lambda a, b, y, red=red, m=margin: F.cosine_embedding_loss(a, b, y, margin=m, reduction=red),
            [R("a"), R("b"), R("y"), dict(reduction=red, margin=margin)])
    for margin, p, swap in [(1.0, 2, False), (1.0, 2, True), (0.5, 1, False), (2.0, 3, True)]:
        inputs = dict(a=G((3, 4), 37), p=G((3, 4), 38), n=G((3, 4), 39))
        add("triplet_margin_loss %s margin=%g p=%g swap=%s" % (red, margin, p, swap), "F.triplet_margin_loss", inputs,
            lambda a, p, n, red=red, m=margin, pp=p, sw=swap: F.triplet_margin_loss(a, p, n, margin=m, p=pp, swap=sw,
                                                                                  reduction=red),
            [R("a"), R("p"), R("n"), dict(reduction=red, margin=margin, p=p, swap=swap)])
    # ctc: T x N x C log-probabilities, padded targets
    for zero_inf, blank in [(False, 0), (True, 0), (False, 3)]:
        tg = [[1, 2, 1], [2, 2, 0]] if blank == 0 else [[0, 1, 0], [2, 2, 1]]
        lens_in, lens_t = [5, 4], [3, 2] if not zero_inf else [3, 3]
        if zero_inf:
            tg = [[1, 2, 1], [2, 2, 2]]
            lens_in = [5, 3]  # the second cannot be aligned: 2 2 2 needs 5 frames
        # through a log_softmax of logits: PyTorch's gradient assumes one (lutorch's does not, see ctc.lua)
        inputs = dict(x=G((5, 2, 4), 40), t=I(tg))
        add("ctc_loss %s blank=%d zero_infinity=%s" % (red, blank, zero_inf), "F.ctc_loss", inputs,
            lambda x, t, red=red, b=blank, zi=zero_inf, li=lens_in, lt=lens_t:
            F.ctc_loss(F.log_softmax(x, 2), t, li, lt, blank=b, reduction=red, zero_infinity=zi),
            [dict(ref="x", log_softmax=3), R("t"), lens_in, lens_t,
             dict(blank=blank + 1, reduction=red, zero_infinity=zero_inf)],
            dtypes=False)

# unbatched inputs and edges: one sample, every target ignored (a mean of nothing: NaN), probabilities
# at 0 and 1 (logs clamped at -100), targets of 0 in kl_div
for red in REDUCTIONS:
    GRADS = red != "sum"
    for wname, ii, ls in [(None, None, 0.0), ("w", 3, 0.2)]:
        inputs = dict(x=G((Cn,), 90), t=I(1))
        lo = dict(reduction=red, label_smoothing=ls)
        if wname:
            inputs["w"] = G((Cn,), 91, 0.25, 1.0, grad=False)
            lo["weight"] = R("w")
        if ii is not None:
            lo["ignore_index"] = ii + 1
        add("cross_entropy unbatched %s w=%s ignore=%s ls=%g" % (red, wname, ii, ls), "F.cross_entropy", inputs,
            lambda x, t, w=None, red=red, ii=ii, ls=ls: F.cross_entropy(
                x, t, weight=w, reduction=red, label_smoothing=ls, ignore_index=-100 if ii is None else ii),
            [R("x"), R("t"), lo])
        add("nll_loss unbatched %s w=%s ignore=%s" % (red, wname, ii), "F.nll_loss", inputs,
            lambda x, t, w=None, red=red, ii=ii: F.nll_loss(x, t, weight=w, reduction=red,
                                                           ignore_index=-100 if ii is None else ii),
            [R("x"), R("t"), {k: v for k, v in lo.items() if k != "label_smoothing"}])
    for ls in [0.0, 0.1]:
        inputs = dict(x=G((3, Cn), 92), t=I([2, 2, 2]), w=G((Cn,), 93, 0.25, 1.0, grad=False))
        add("cross_entropy every target ignored %s ls=%g" % (red, ls), "F.cross_entropy", inputs,
            lambda x, t, w, red=red, ls=ls: F.cross_entropy(x, t, weight=w, ignore_index=2, reduction=red,
                                                            label_smoothing=ls),
            [R("x"), R("t"), dict(weight=R("w"), ignore_index=3, reduction=red, label_smoothing=ls)])
    inputs = dict(x=V(torch.tensor([[0.0, 1.0, 0.25], [1.0, 0.5, 0.0]])),
                  y=V(torch.tensor([[0.0, 1.0, 1.0], [0.0, 0.5, 1.0]]), grad=False))
    add("binary_cross_entropy at 0 and 1 %s" % red, "F.binary_cross_entropy", inputs,
        lambda x, y, red=red: F.binary_cross_entropy(x, y, reduction=red), [R("x"), R("y"), dict(reduction=red)])
    inputs = dict(x=G((2, 3), 94, 0.5, -1.0), t=V(torch.tensor([[0.0, 0.25, 0.75], [0.5, 0.0, 0.5]])))
    add("kl_div zero targets %s" % red, "F.kl_div", inputs, lambda x, t, red=red: F.kl_div(x, t, reduction=red),
        [R("x"), R("t"), dict(reduction=red)])
    inputs = dict(x=G((Cn,), 95), t=I(3))
    add("multi_margin_loss unbatched %s" % red, "F.multi_margin_loss", inputs,
        lambda x, t, red=red: F.multi_margin_loss(x, t, p=2, margin=0.5, reduction=red),
        [R("x"), R("t"), dict(reduction=red, p=2, margin=0.5)])
    inputs = dict(x=G((4,), 96), t=I([2, 0, -1, 1], lua=[3, 1, -1, 2]))
    if red == "none":  # lutorch also takes 0 as the end of a sample's targets
        inputs = dict(x=G((2, 4), 150), t=I([[3, 0, -1, 1], [1, -1, 0, 2]], lua=[[4, 1, 0, 2], [2, 0, -1, 3]]))
        add("multilabel_margin_loss 0-ended targets", "F.multilabel_margin_loss", inputs,
            lambda x, t: F.multilabel_margin_loss(x, t, reduction="none"), [R("x"), R("t"), dict(reduction="none")])
    add("multilabel_margin_loss unbatched %s" % red, "F.multilabel_margin_loss", inputs,
        lambda x, t, red=red: F.multilabel_margin_loss(x, t, reduction=red), [R("x"), R("t"), dict(reduction=red)])
    inputs = dict(a=G((4,), 97), b=G((4,), 98), y=V(torch.tensor(-1.0), grad=False))
    add("cosine_embedding_loss unbatched %s" % red, "F.cosine_embedding_loss", inputs,
        lambda a, b, y, red=red: F.cosine_embedding_loss(a, b, y, margin=0.2, reduction=red),
        [R("a"), R("b"), R("y"), dict(reduction=red, margin=0.2)])
    inputs = dict(a=G((4,), 99), p=G((4,), 100), n=G((4,), 101))
    add("triplet_margin_loss unbatched %s" % red, "F.triplet_margin_loss", inputs,
        lambda a, p, n, red=red: F.triplet_margin_loss(a, p, n, swap=True, reduction=red),
        [R("a"), R("p"), R("n"), dict(reduction=red, swap=True)])
    # ctc: the targets concatenated (1-D), and an unbatched T x C input
    inputs = dict(x=G((5, 2, 4), 102), t=I([1, 2, 3, 3]))
    add("ctc_loss concatenated targets %s" % red, "F.ctc_loss", inputs,
        lambda x, t, red=red: F.ctc_loss(F.log_softmax(x, 2), t, [5, 4], [3, 1], reduction=red),
        [dict(ref="x", log_softmax=3), R("t"), [5, 4], [3, 1], dict(reduction=red)], dtypes=False)
    inputs = dict(x=G((5, 4), 103), t=I([1, 1, 2]))
    add("ctc_loss unbatched %s" % red, "F.ctc_loss", inputs,
        lambda x, t, red=red: F.ctc_loss(F.log_softmax(x, 1), t, [5], [3], reduction=red),
        [dict(ref="x", log_softmax=2), R("t"), [5], [3], dict(reduction=red)], dtypes=False)

    # K-dim with smoothing, weights and ignore_index together; a lone sample whose target is ignored
    inputs = dict(x=G((2, 3, 2, 2), 108), t=I([[[0, 1], [2, 1]], [[1, 1], [0, 2]]]), w=G((3,), 109, 0.25, 1.0, grad=False))
    add("cross_entropy K-dim smoothing w ignore %s" % red, "F.cross_entropy", inputs,
        lambda x, t, w, red=red: F.cross_entropy(x, t, weight=w, ignore_index=1, label_smoothing=0.2, reduction=red),
        [R("x"), R("t"), dict(weight=R("w"), ignore_index=2, label_smoothing=0.2, reduction=red)])
    inputs = dict(x=G((Cn,), 110), t=I(2))
    add("cross_entropy unbatched ignored %s" % red, "F.cross_entropy", inputs,
        lambda x, t, red=red: F.cross_entropy(x, t, ignore_index=2, label_smoothing=0.1, reduction=red),
        [R("x"), R("t"), dict(ignore_index=3, label_smoothing=0.1, reduction=red)])
    # large logits: log-sum-exp and log1p(exp) kept stable
    inputs = dict(x=G((3, Cn), 111, 256.0), t=I([0, 3, 1]))
    add("cross_entropy large logits %s" % red, "F.cross_entropy", inputs,
        lambda x, t, red=red: F.cross_entropy(x, t, reduction=red), [R("x"), R("t"), dict(reduction=red)])
    inputs = dict(x=G((2, 4), 112, 64.0), y=G((2, 4), 113, 0.25, 0.5, grad=False), pw=G((4,), 114, 0.5, 1.0, grad=False))
    add("binary_cross_entropy_with_logits large logits %s" % red, "F.binary_cross_entropy_with_logits", inputs,
        lambda x, y, pw, red=red: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw, reduction=red),
        [R("x"), R("y"), dict(pos_weight=R("pw"), reduction=red)])
    # ctc with an empty target
    inputs = dict(x=G((4, 2, 3), 115), t=I([[1, 2], [0, 0]]))
    add("ctc_loss empty target %s" % red, "F.ctc_loss", inputs,
        lambda x, t, red=red: F.ctc_loss(F.log_softmax(x, 2), t, [4, 3], [2, 0], reduction=red),
        [dict(ref="x", log_softmax=3), R("t"), [4, 3], [2, 0], dict(reduction=red)], dtypes=False)

GRADS = True

# ---------------------------------------------------------------- convolutions
conv_cases = [
    # (dims, x shape, w shape, bias, opts)
    (1, (1, 4, 9), (6, 2, 3), True, dict(stride=2, padding=1, dilation=1, groups=2)),
    (1, (1, 3, 8), (2, 3, 3), False, dict(stride=1, padding="same", dilation=2)),
    (1, (1, 3, 8), (2, 3, 2), True, dict(padding="same")),
    (1, (1, 3, 8), (2, 3, 3), True, dict(padding="valid", dilation=3)),
    (2, (1, 2, 4, 5), (4, 2, 3, 2), True, dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    (2, (1, 4, 4, 4), (4, 1, 3, 3), False, dict(padding=1, groups=4)),
    (2, (1, 2, 4, 5), (3, 2, 2, 3), True, dict(padding="same", dilation=(2, 1))),
    (2, (1, 2, 5, 5), (3, 2, 3, 3), True, dict(padding="valid", stride=2)),
    (3, (1, 2, 3, 3, 4), (4, 1, 2, 3, 2), True, dict(stride=(1, 2, 1), padding=(1, 0, 1), groups=2)),
    (3, (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), False, dict(dilation=(2, 1, 1), padding="same")),
]
for dims, xs, ws, bias, o in conv_cases:
    inputs = dict(x=G(xs, 41), w=G(ws, 42, 0.5))
    if bias:
        inputs["b"] = G((ws[0],), 43)
    fn = "conv%dd" % dims
    lo = {k: (list(v) if isinstance(v, tuple) else v) for k, v in o.items()}
    add("%s %s bias=%s" % (fn, o, bias), "F." + fn, inputs,
        lambda x, w, b=None, fn=fn, o=o: getattr(F, fn)(x, w, b, **o),
        [R("x"), R("w"), R("b") if bias else NONE, lo])

for fn, xs, ws, o in [("conv1d", (3, 8), (2, 3, 3), dict(stride=2, padding=1)),
                      ("conv2d", (2, 4, 5), (3, 2, 3, 3), dict(padding="same", dilation=2)),
                      ("conv3d", (2, 3, 4, 3), (2, 2, 2, 2, 2), dict(stride=2, padding=1))]:
    add("%s unbatched %s" % (fn, o), "F." + fn, dict(x=G(xs, 104), w=G(ws, 105, 0.5), b=G((ws[0],), 106)),
        lambda x, w, b, fn=fn, o=o: getattr(F, fn)(x, w, b, **o), [R("x"), R("w"), R("b"), dict(o)])

convt_cases = [
    (1, (1, 4, 5), (4, 3, 3), True, dict(stride=2, padding=1, output_padding=1, groups=2)),
    (1, (1, 2, 6), (2, 3, 2), False, dict(stride=3, dilation=2, output_padding=2)),
    (1, (1, 2, 4), (2, 2, 4), True, dict(padding=2)),
    (2, (1, 2, 2, 3), (2, 3, 3, 2), True, dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    (2, (1, 4, 2, 3), (4, 1, 2, 3), False, dict(stride=2, groups=4, dilation=(1, 2))),
    (2, (1, 2, 4, 3), (2, 2, 3, 3), True, dict(padding=1, dilation=2, stride=2, output_padding=1)),
    (3, (1, 2, 2, 3, 2), (2, 2, 2, 2, 3), True, dict(stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1))),
]
for dims, xs, ws, bias, o in convt_cases:
    inputs = dict(x=G(xs, 44), w=G(ws, 45, 0.5))
    if bias:
        inputs["b"] = G((ws[1] * o.get("groups", 1),), 46)
    fn = "conv_transpose%dd" % dims
    lo = {k: (list(v) if isinstance(v, tuple) else v) for k, v in o.items()}
    add("%s %s bias=%s" % (fn, o, bias), "F." + fn, inputs,
        lambda x, w, b=None, fn=fn, o=o: getattr(F, fn)(x, w, b, **o),
        [R("x"), R("w"), R("b") if bias else NONE, lo])

# ---------------------------------------------------------------- pooling


def lua_opts(o):
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in o.items()}


max_pool_cases = [
    (1, (1, 2, 9), 3, dict()),
    (1, (1, 2, 9), 3, dict(stride=2, padding=1, ceil_mode=True)),
    (1, (1, 3, 10), 2, dict(stride=3, dilation=2, ceil_mode=True)),
    (1, (1, 2, 11), 3, dict(stride=2, padding=1, dilation=2)),
    (2, (1, 2, 5, 7), 2, dict(ceil_mode=True)),
    (2, (1, 2, 6, 7), (3, 2), dict(stride=(2, 1), padding=(1, 1), dilation=(1, 2))),
    (2, (2, 1, 7, 6), 3, dict(stride=2, padding=1, ceil_mode=True, dilation=2)),
    (3, (1, 1, 4, 5, 5), 2, dict(stride=2, ceil_mode=True)),
    (3, (1, 1, 5, 5, 6), (2, 3, 2), dict(stride=(1, 2, 2), padding=(1, 1, 0), dilation=(2, 1, 1))),
]
for dims, xs, k, o in max_pool_cases:
    fn = "max_pool%dd" % dims
    inputs = dict(x=G(xs, 47))
    lk = list(k) if isinstance(k, tuple) else k
    add("%s k=%s %s" % (fn, k, o), "F." + fn, inputs, lambda x, fn=fn, k=k, o=o: getattr(F, fn)(x, k, **o),
        [R("x"), lk, lua_opts(o)])
    ro = dict(o, return_indices=True)
    add("%s k=%s %s" % (fn, k, ro), "F." + fn, inputs, lambda x, fn=fn, k=k, o=ro: getattr(F, fn)(x, k, **o),
        [R("x"), lk, lua_opts(ro)], index_outputs=(2,), dtypes=False, grad=False)  # gradients: the case before

avg_pool_cases = [
    (1, (1, 2, 9), 3, dict(stride=2, padding=1)),
    (1, (1, 2, 9), 3, dict(stride=2, padding=1, count_include_pad=False)),
    (1, (1, 2, 10), 4, dict(stride=3, padding=2, ceil_mode=True)),
    (1, (1, 2, 10), 4, dict(stride=3, padding=2, ceil_mode=True, count_include_pad=False)),
    (2, (1, 2, 5, 7), 2, dict(ceil_mode=True)),
    (2, (1, 2, 5, 7), (3, 2), dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    (2, (1, 2, 5, 7), 3, dict(stride=2, padding=1, divisor_override=2)),
    (2, (1, 1, 6, 6), 3, dict(stride=2, padding=1, ceil_mode=True, count_include_pad=True)),
    (3, (1, 1, 4, 5, 5), 2, dict(stride=2, ceil_mode=True, count_include_pad=False, padding=1)),
    (3, (1, 1, 4, 5, 5), (2, 3, 2), dict(stride=(1, 2, 2), padding=(1, 1, 0), divisor_override=5)),
    (3, (1, 1, 4, 4, 4), 3, dict(stride=2, padding=1, ceil_mode=True)),
]
for dims, xs, k, o in avg_pool_cases:
    fn = "avg_pool%dd" % dims
    add("%s k=%s %s" % (fn, k, o), "F." + fn, dict(x=G(xs, 48)), lambda x, fn=fn, k=k, o=o: getattr(F, fn)(x, k, **o),
        [R("x"), list(k) if isinstance(k, tuple) else k, lua_opts(o)])

for dims, xs, p, k, o in [(1, (1, 2, 9), 2, 3, dict(stride=2)), (1, (1, 2, 9), 3, 2, dict(ceil_mode=True)),
                          (1, (1, 2, 8), 1, 3, dict(stride=2, ceil_mode=True)),
                          (2, (1, 2, 5, 6), 2, 2, dict()), (2, (1, 1, 5, 7), 3, (2, 3), dict(stride=(1, 2), ceil_mode=True)),
                          (2, (1, 1, 5, 5), 1.5, 2, dict(stride=2, ceil_mode=True))]:
    fn = "lp_pool%dd" % dims
    add("%s p=%g k=%s %s" % (fn, p, k, o), "F." + fn, dict(x=G(xs, 49, 1.0, 2.0)),
        lambda x, fn=fn, p=p, k=k, o=o: getattr(F, fn)(x, p, k, **o),
        [R("x"), p, list(k) if isinstance(k, tuple) else k, lua_opts(o)])

for dims, xs, size in [(1, (2, 2, 7), 3), (1, (1, 2, 5), 7), (2, (1, 2, 7, 5), (3, 2)), (2, (1, 2, 5, 6), 4),
                       (3, (1, 1, 4, 3, 5), (3, 2, 2))]:
    ls = list(size) if isinstance(size, tuple) else size
    for kind in ["avg", "max"]:
        fn = "adaptive_%s_pool%dd" % (kind, dims)
        add("%s %s" % (fn, size), "F." + fn, dict(x=G(xs, 50)), lambda x, fn=fn, s=size: getattr(F, fn)(x, s),
            [R("x"), ls])
        if kind == "max":
            add("%s %s indices" % (fn, size), "F." + fn, dict(x=G(xs, 50)),
                lambda x, fn=fn, s=size: getattr(F, fn)(x, s, return_indices=True), [R("x"), ls, True],
                index_outputs=(2,), dtypes=False)

for fn, xs, args, o in [("max_pool1d", (2, 9), [3], dict(stride=2, padding=1, ceil_mode=True)),
                        ("max_pool2d", (2, 5, 6), [(2, 3)], dict(stride=2, dilation=(2, 1), return_indices=True)),
                        ("avg_pool2d", (2, 5, 6), [3], dict(stride=2, padding=1, count_include_pad=False)),
                        ("adaptive_avg_pool2d", (2, 5, 7), [(3, 4)], dict()),
                        ("adaptive_max_pool1d", (2, 7), [3], dict()),
                        ("max_pool3d", (1, 4, 5, 5), [2], dict(stride=2, padding=1)),
                        ("avg_pool3d", (1, 4, 4, 4), [3], dict(stride=2, padding=1, ceil_mode=True))]:
    add("%s unbatched %s %s" % (fn, args, o), "F." + fn, dict(x=G(xs, 107)),
        lambda x, fn=fn, a=args, o=o: getattr(F, fn)(x, *a, **o),
        [R("x")] + [list(v) if isinstance(v, tuple) else v for v in args] + ([lua_opts(o)] if o else []),
        index_outputs=(2,) if o.get("return_indices") else (), dtypes=not o.get("return_indices"))

# ---------------------------------------------------------------- interpolate
interp_cases = [
    ((1, 1, 5), dict(size=8, mode="nearest")),
    ((1, 1, 5), dict(scale_factor=1.7, mode="nearest")),
    ((1, 1, 7), dict(size=4, mode="nearest")),
    ((1, 1, 5), dict(size=8, mode="nearest-exact")),
    ((1, 1, 7), dict(scale_factor=0.6, mode="nearest-exact")),
    ((1, 1, 5), dict(size=8, mode="linear", align_corners=False)),
    ((1, 1, 5), dict(size=8, mode="linear", align_corners=True)),
    ((1, 1, 5), dict(scale_factor=1.5, mode="linear")),
    ((1, 1, 5), dict(scale_factor=1.5, mode="linear", recompute_scale_factor=True)),
    ((1, 1, 8), dict(size=3, mode="linear", align_corners=True)),
    ((1, 1, 8), dict(size=3, mode="area")),
    ((1, 1, 4, 5), dict(size=(6, 6), mode="bilinear", align_corners=False)),
    ((1, 1, 3, 5), dict(size=(5, 6), mode="bilinear", align_corners=True)),
    ((1, 1, 4, 5), dict(scale_factor=(1.5, 0.8), mode="bilinear")),
    ((1, 1, 4, 5), dict(scale_factor=(1.5, 0.8), mode="bilinear", recompute_scale_factor=True)),
    ((1, 1, 4, 5), dict(size=(7, 3), mode="bicubic", align_corners=False)),
    ((1, 1, 4, 5), dict(size=(7, 3), mode="bicubic", align_corners=True)),
    ((1, 1, 4, 5), dict(scale_factor=1.6, mode="bicubic")),
    ((1, 1, 4, 5), dict(size=(3, 8), mode="nearest")),
    ((1, 1, 4, 5), dict(scale_factor=(2, 1.5), mode="nearest-exact")),
    ((1, 1, 6, 5), dict(size=(4, 3), mode="area")),
    ((1, 1, 2, 3, 3), dict(size=(3, 2, 4), mode="trilinear", align_corners=False)),
    ((1, 1, 2, 3, 3), dict(size=(3, 2, 4), mode="trilinear", align_corners=True)),
    ((1, 1, 2, 3, 3), dict(scale_factor=(1.5, 0.75, 2), mode="trilinear")),
    ((1, 1, 2, 3, 3), dict(scale_factor=1.5, mode="nearest")),
]
for xs, o in interp_cases:
    add("interpolate %s %s" % (list(xs), o), "F.interpolate", dict(x=G(xs, 51)),
        lambda x, o=o: F.interpolate(x, **o), [R("x"), lua_opts(o)])
# antialias: downsampling (the filter widened by the scale), upsampling, one axis of each, sizes of 1
aa_cases = [
    ((1, 1, 8, 9), dict(size=(3, 4), mode="bilinear")),
    ((1, 2, 9, 7), dict(scale_factor=0.4, mode="bilinear")),
    ((1, 1, 8, 9), dict(size=(5, 2), mode="bilinear", align_corners=True)),
    ((1, 1, 6, 7), dict(scale_factor=(0.5, 0.3), mode="bilinear", recompute_scale_factor=True)),
    ((1, 1, 4, 9), dict(size=(7, 4), mode="bilinear")),
    ((1, 1, 4, 5), dict(size=(7, 8), mode="bilinear")),
    ((1, 1, 10, 3), dict(size=(1, 1), mode="bilinear")),
    ((1, 1, 8, 9), dict(size=(3, 4), mode="bicubic")),
    ((1, 2, 9, 7), dict(scale_factor=0.4, mode="bicubic")),
    ((1, 1, 8, 9), dict(size=(5, 2), mode="bicubic", align_corners=True)),
    ((1, 1, 6, 7), dict(scale_factor=(0.5, 0.3), mode="bicubic", recompute_scale_factor=True)),
    ((1, 1, 4, 9), dict(size=(7, 4), mode="bicubic")),
    ((1, 1, 4, 5), dict(size=(7, 8), mode="bicubic")),
    ((1, 1, 4, 5), dict(size=(7, 8), mode="bicubic", align_corners=True)),
    ((1, 1, 10, 6), dict(size=(1, 3), mode="bicubic", align_corners=True)),
    ((1, 1, 16, 5), dict(scale_factor=(0.25, 1.0), mode="bicubic")),
]
for xs, o in aa_cases:
    o = dict(o, antialias=True)
    add("interpolate antialias %s %s" % (list(xs), o), "F.interpolate", dict(x=G(xs, 151)),
        lambda x, o=o: F.interpolate(x, **o), [R("x"), lua_opts(o)])

# ---------------------------------------------------------------- grid_sample, affine_grid
theta = torch.tensor([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.3, 0.4, 0.3], [-0.5, 0.8, 0.25]]], dtype=torch.float64)
for mode in ["bilinear", "nearest"]:
    for pm in ["zeros", "border", "reflection"]:
        for ac in [False, True]:
            add("grid_sample %s %s align_corners=%s" % (mode, pm, ac), "F.grid_sample",
                dict(x=G((1, 1, 4, 5), 53), g=G((1, 2, 4, 2), 52, grad=mode == "bilinear")),
                lambda x, g, m=mode, pm=pm, ac=ac: F.grid_sample(x, g, mode=m, padding_mode=pm, align_corners=ac),
                [R("x"), R("g"), dict(mode=mode, padding_mode=pm, align_corners=ac)])
for ac in [False, True]:
    add("affine_grid align_corners=%s" % ac, "F.affine_grid", dict(t=V(theta)),
        lambda t, ac=ac: F.affine_grid(t, [2, 1, 2, 4], align_corners=ac), [R("t"), [2, 1, 2, 4], dict(align_corners=ac)])
# bicubic (its 4 x 4 pixels padded one by one), on a grid within about -1.5 .. 1.5 and one far outside;
# volumetric (5-D) input, trilinear and nearest
for pm in ["zeros", "border", "reflection"]:
    for ac in [False, True]:
        for far in [False, True]:
            add("grid_sample bicubic %s align_corners=%s far=%s" % (pm, ac, far), "F.grid_sample",
                dict(x=G((1, 2, 4, 5), 152), g=G((1, 2, 4, 2), 153, 2.5 if far else 1.0)),
                lambda x, g, pm=pm, ac=ac: F.grid_sample(x, g, mode="bicubic", padding_mode=pm, align_corners=ac),
                [R("x"), R("g"), dict(mode="bicubic", padding_mode=pm, align_corners=ac)])
        for mode in ["bilinear", "nearest"]:
            add("grid_sample 5-D %s %s align_corners=%s" % (mode, pm, ac), "F.grid_sample",
                dict(x=G((1, 2, 3, 4, 5), 154), g=G((1, 2, 3, 2, 3), 155, 1.25, grad=mode == "bilinear")),
                lambda x, g, m=mode, pm=pm, ac=ac: F.grid_sample(x, g, mode=m, padding_mode=pm, align_corners=ac),
                [R("x"), R("g"), dict(mode=mode, padding_mode=pm, align_corners=ac)])
theta3 = torch.tensor([[[0.9, -0.3, 0.1, 0.2], [0.2, 1.1, -0.2, 0.1], [0.1, 0.3, 0.8, -0.3]],
                       [[1.2, 0.1, -0.1, 0.0], [0.3, 0.7, 0.2, 0.5], [-0.2, 0.1, 1.1, 0.25]]], dtype=torch.float64)
for ac in [False, True]:
    add("affine_grid 5-D align_corners=%s" % ac, "F.affine_grid", dict(t=V(theta3)),
        lambda t, ac=ac: F.affine_grid(t, [2, 1, 2, 3, 4], align_corners=ac),
        [R("t"), [2, 1, 2, 3, 4], dict(align_corners=ac)])

# ---------------------------------------------------------------- pad
pad_cases = [
    ((2, 5), (1, 2), "constant", 0.5),
    ((2, 5), (-1, 2), "constant", 0.0),
    ((1, 3, 4), (1, -2, 2, 0), "constant", -1.0),
    ((1, 1, 2, 3, 3), (1, 0, -1, 1, 2, 1), "constant", 0.0),
    ((1, 1, 5), (2, 3), "reflect", None),
    ((1, 1, 3, 4), (1, 2, 2, 1), "reflect", None),
    ((1, 1, 2, 3, 3), (1, 2, 0, 1, 1, 1), "reflect", None),
    ((1, 1, 5), (2, 3), "replicate", None),
    ((1, 1, 3, 4), (1, 2, 2, 1), "replicate", None),
    ((1, 1, 2, 3, 3), (1, 2, 0, 1, 1, 1), "replicate", None),
    ((1, 1, 5), (2, 3), "circular", None),
    ((1, 1, 3, 4), (1, 2, 2, 1), "circular", None),
    ((1, 1, 2, 3, 3), (1, 2, 0, 1, 1, 1), "circular", None),
    ((1, 1, 4, 5), (-1, 2, 1, -1), "replicate", None),
    ((1, 1, 4, 5), (-1, 2, 1, -2), "circular", None),
]
for xs, p, mode, value in pad_cases:
    lo = dict(mode=mode)
    kw = dict(mode=mode)
    if value is not None:
        lo["value"] = value
        kw["value"] = value
    add("pad %s %s %s value=%s" % (list(xs), p, mode, value), "F.pad", dict(x=G(xs, 54)),
        lambda x, p=p, kw=kw: F.pad(x, p, **kw), [R("x"), list(p), lo])

# ---------------------------------------------------------------- shuffles, embeddings
add("pixel_shuffle 2", "F.pixel_shuffle", dict(x=G((1, 8, 2, 3), 55)), lambda x: F.pixel_shuffle(x, 2), [R("x"), 2])
add("pixel_shuffle 3 unbatched", "F.pixel_shuffle", dict(x=G((9, 2, 2), 55)), lambda x: F.pixel_shuffle(x, 3),
    [R("x"), 3])
add("pixel_unshuffle 2", "F.pixel_unshuffle", dict(x=G((1, 2, 4, 6), 56)), lambda x: F.pixel_unshuffle(x, 2),
    [R("x"), 2])
add("pixel_unshuffle 3", "F.pixel_unshuffle", dict(x=G((2, 1, 3, 6), 56)), lambda x: F.pixel_unshuffle(x, 3),
    [R("x"), 3])

idx = [[0, 2, 4, 2], [1, 4, 0, 3]]
for pad in [None, 2, -1]:
    lo = {} if pad is None else dict(padding_idx=pad + 1 if pad >= 0 else pad)
    add("embedding padding_idx=%s" % pad, "F.embedding", dict(i=I(idx), w=G((5, 3), 57)),
        lambda i, w, pad=pad: F.embedding(i, w, padding_idx=pad), [R("i"), R("w"), lo])
# max_norm: the rows looked up renormalised in place (the weight after the call is compared too)
for max_norm, norm_type in [(1.0, 2.0), (0.75, 1.0), (1.5, 3.0)]:
    add("embedding max_norm=%g norm_type=%g" % (max_norm, norm_type), "F.embedding", dict(i=I(idx), w=G((5, 3), 57)),
        lambda i, w, m=max_norm, p=norm_type: F.embedding(i, w, max_norm=m, norm_type=p),
        [R("i"), R("w"), dict(max_norm=max_norm, norm_type=norm_type)], mutated=("w",))
bag_in = [0, 2, 4, 2, 1, 4, 0, 3, 3]
for mode, psw, last, pad in [("sum", False, False, None), ("mean", False, False, None), ("max", False, False, None),
                             ("sum", True, False, None), ("mean", False, True, None), ("sum", False, False, 2),
                             ("mean", False, False, 4), ("max", False, True, 0), ("sum", True, True, 3)]:
    offs = [0, 3, 3, 7] if not last else [0, 3, 3, 7, 9]
    inputs = dict(i=I(bag_in), w=G((5, 3), 58), o=I(offs))
    lo = dict(mode=mode, include_last_offset=last)
    if psw:
        inputs["s"] = G((9,), 59)
        lo["per_sample_weights"] = R("s")
    if pad is not None:
        lo["padding_idx"] = pad + 1
    add("embedding_bag %s psw=%s last=%s pad=%s" % (mode, psw, last, pad), "F.embedding_bag", inputs,
        lambda i, w, o, s=None, mode=mode, last=last, pad=pad: F.embedding_bag(
            i, w, o, mode=mode, per_sample_weights=s, include_last_offset=last, padding_idx=pad),
        [R("i"), R("w"), R("o"), lo])
add("embedding_bag 2-D mean", "F.embedding_bag", dict(i=I([[0, 2, 4], [1, 1, 3]]), w=G((5, 3), 58)),
    lambda i, w: F.embedding_bag(i, w, mode="mean"), [R("i"), R("w"), NONE, dict(mode="mean")])
# max_norm: every row named renormalised in place first (padding rows too); the weight after the call
# is compared. (A last offset below the input's length, include_last_offset, corrupts PyTorch 1.13's
# heap in mode 'mean': the rows named after it are checked in nn_layers_more_spec.)
for mode, max_norm, norm_type, psw, last, pad in [("sum", 1.0, 2.0, False, False, None), ("mean", 0.75, 1.0, False, True, None),
                                                  ("max", 1.25, 3.0, False, False, 2), ("sum", 1.0, 2.0, True, True, 3),
                                                  ("mean", 0.5, 2.0, False, False, 4)]:
    offs = [0, 3, 3, 7] if not last else [0, 3, 3, 7, 9]
    inputs = dict(i=I(bag_in), w=G((5, 3), 58), o=I(offs))
    lo = dict(mode=mode, include_last_offset=last, max_norm=max_norm, norm_type=norm_type)
    if psw:
        inputs["s"] = G((9,), 59)
        lo["per_sample_weights"] = R("s")
    if pad is not None:
        lo["padding_idx"] = pad + 1
    add("embedding_bag max_norm=%g norm_type=%g %s psw=%s last=%s pad=%s" % (max_norm, norm_type, mode, psw, last, pad),
        "F.embedding_bag", inputs,
        lambda i, w, o, s=None, mode=mode, last=last, pad=pad, m=max_norm, p=norm_type: F.embedding_bag(
            i, w, o, mode=mode, per_sample_weights=s, include_last_offset=last, padding_idx=pad, max_norm=m, norm_type=p),
        [R("i"), R("w"), R("o"), lo], mutated=("w",))
add("embedding_bag 2-D max_norm", "F.embedding_bag", dict(i=I([[0, 2, 4], [1, 1, 3]]), w=G((5, 3), 58)),
    lambda i, w: F.embedding_bag(i, w, mode="sum", max_norm=1.0), [R("i"), R("w"), NONE, dict(mode="sum", max_norm=1.0)],
    mutated=("w",))

# ---------------------------------------------------------------- normalisations
for p, dim, eps in [(2, 1, 1e-12), (1, 0, 1e-12), (3, -1, 1e-12), (2, 1, 0.5), (float("inf"), 1, 1e-12)]:
    add("normalize p=%g dim=%d eps=%g" % (p, dim, eps), "F.normalize", dict(x=G((3, 4), 60)),
        lambda x, p=p, dim=dim, eps=eps: F.normalize(x, p=p, dim=dim, eps=eps),
        [R("x"), dict(p=p, dim=dim + 1 if dim >= 0 else dim, eps=eps)])
for shape, affine, eps in [((4,), True, 1e-5), ((3, 4), True, 1e-5), ((4,), False, 0.1), ((3, 4), False, 1e-5)]:
    inputs = dict(x=G((2, 3, 4), 61, 2.0))
    if affine:
        inputs.update(w=G(shape, 62, 0.5, 1.0), b=G(shape, 63))
    add("layer_norm %s affine=%s eps=%g" % (list(shape), affine, eps), "F.layer_norm", inputs,
        lambda x, w=None, b=None, s=shape, eps=eps: F.layer_norm(x, s, w, b, eps),
        [R("x"), list(shape), R("w") if affine else NONE, R("b") if affine else NONE, dict(eps=eps)])
for g, affine, xs in [(2, True, (2, 4, 3)), (1, True, (2, 4, 3)), (4, False, (1, 4, 2, 2)), (2, True, (1, 6, 2, 2))]:
    inputs = dict(x=G(xs, 64, 2.0))
    if affine:
        inputs.update(w=G((xs[1],), 65, 0.5, 1.0), b=G((xs[1],), 66))
    add("group_norm groups=%d affine=%s %s" % (g, affine, list(xs)), "F.group_norm", inputs,
        lambda x, w=None, b=None, g=g: F.group_norm(x, g, w, b),
        [R("x"), g, R("w") if affine else NONE, R("b") if affine else NONE])
for training, momentum, affine, running in [(True, 0.1, True, True), (True, 0.3, False, True), (False, 0.1, True, True),
                                            (True, 0.1, True, False), (False, 0.1, False, True),
                                            (True, 1.0, True, True)]:
    for xs in [(4, 3)] + ([(2, 3, 3)] if training else []) + ([(2, 3, 2, 2)] if momentum == 0.1 and affine and training else []):
        inputs = dict(x=G(xs, 67, 2.0, 0.5))
        if running:
            inputs.update(rm=G((3,), 68, 0.5, grad=False), rv=G((3,), 69, 0.25, 1.0, grad=False))
        if affine:
            inputs.update(w=G((3,), 70, 0.5, 1.0), b=G((3,), 71))
        lo = dict(training=training, momentum=momentum)
        add("batch_norm %s training=%s momentum=%s affine=%s running=%s" % (list(xs), training, momentum, affine, running),
            "F.batch_norm", inputs,
            lambda x, rm=None, rv=None, w=None, b=None, t=training, m=momentum: F.batch_norm(x, rm, rv, w, b, t, m),
            [R("x"), R("rm") if running else NONE, R("rv") if running else NONE, R("w") if affine else NONE,
             R("b") if affine else NONE, lo], mutated=("rm", "rv") if running else ())
for use_stats, running, affine, momentum in [(True, False, False, 0.1), (True, True, True, 0.2), (False, True, True, 0.1),
                                             (True, False, True, 0.1)]:
    inputs = dict(x=G((2, 3, 4), 72, 2.0, 0.5))
    if running:
        inputs.update(rm=G((3,), 73, 0.5, grad=False), rv=G((3,), 74, 0.25, 1.0, grad=False))
    if affine:
        inputs.update(w=G((3,), 75, 0.5, 1.0), b=G((3,), 76))
    add("instance_norm use_input_stats=%s running=%s affine=%s momentum=%g" % (use_stats, running, affine, momentum),
        "F.instance_norm", inputs,
        lambda x, rm=None, rv=None, w=None, b=None, u=use_stats, m=momentum: F.instance_norm(
            x, rm, rv, w, b, use_input_stats=u, momentum=m),
        [R("x"), R("rm") if running else NONE, R("rv") if running else NONE, R("w") if affine else NONE,
         R("b") if affine else NONE, dict(use_input_stats=use_stats, momentum=momentum)],
        mutated=("rm", "rv") if running else ())
for size, alpha, beta, k, xs in [(2, 1e-4, 0.75, 1.0, (2, 5, 3)), (3, 0.5, 0.6, 2.0, (1, 6, 2, 2)),
                                 (4, 1.0, 1.5, 0.5, (1, 5, 2, 1, 2))]:
    add("local_response_norm size=%d alpha=%g beta=%g k=%g" % (size, alpha, beta, k), "F.local_response_norm",
        dict(x=G(xs, 77, 2.0)), lambda x, s=size, a=alpha, b=beta, k=k: F.local_response_norm(x, s, a, b, k),
        [R("x"), size, alpha, beta, k])

# ---------------------------------------------------------------- softmax and activations
for fn in ["softmax", "log_softmax", "softmin"]:
    for dim in [0, 1, 2, -1]:
        add("%s dim=%d" % (fn, dim), "F." + fn, dict(x=G((2, 3, 3), 78, 2.0)),
            lambda x, fn=fn, dim=dim: getattr(F, fn)(x, dim=dim), [R("x"), dim + 1 if dim >= 0 else dim])

ACT = G((2, 8), 79, 3.0)
acts = [
    ("elu", dict(alpha=1.0)), ("elu", dict(alpha=0.5)), ("elu", dict(alpha=2.5)),
    ("celu", dict(alpha=1.0)), ("celu", dict(alpha=0.5)), ("selu", dict()),
    ("leaky_relu", dict(negative_slope=0.01)), ("leaky_relu", dict(negative_slope=0.2)),
    ("leaky_relu", dict(negative_slope=-0.5)),
    ("hardtanh", dict(min_val=-1.0, max_val=1.0)), ("hardtanh", dict(min_val=-0.5, max_val=2.0)),
    ("softplus", dict(beta=1, threshold=20)), ("softplus", dict(beta=2, threshold=3)),
    ("softplus", dict(beta=0.5, threshold=1)),
    ("threshold", dict(threshold=0.3, value=-2.0)), ("relu", dict()), ("relu6", dict()),
    ("hardswish", dict()), ("hardsigmoid", dict()), ("mish", dict()), ("silu", dict()),
    ("gelu", dict()), ("gelu", dict(approximate="tanh")), ("logsigmoid", dict()), ("softsign", dict()),
    ("tanhshrink", dict()), ("softshrink", dict(lambd=0.5)), ("softshrink", dict(lambd=1.2)),
    ("hardshrink", dict(lambd=0.5)), ("hardshrink", dict(lambd=1.2)), ("sigmoid", dict()), ("tanh", dict()),
]
POSITIONAL = dict(elu=["alpha"], celu=["alpha"], leaky_relu=["negative_slope"], hardtanh=["min_val", "max_val"],
                  softplus=["beta", "threshold"], threshold=["threshold", "value"], softshrink=["lambd"],
                  hardshrink=["lambd"])
for fn, o in acts:
    if fn == "gelu":
        largs = [R("x")] + ([dict(approximate=o["approximate"])] if o else [])
    else:
        largs = [R("x")] + [o[k] for k in POSITIONAL.get(fn, [])]
    add("%s %s" % (fn, o), "F." + fn, dict(x=ACT), lambda x, fn=fn, o=o: getattr(F, fn)(x, **o), largs)
for lower, upper in [(1 / 8, 1 / 3), (0.1, 0.6)]:
    add("rrelu eval lower=%g upper=%g" % (lower, upper), "F.rrelu", dict(x=ACT),
        lambda x, lo=lower, up=upper: F.rrelu(x, lo, up, training=False), [R("x"), lower, upper, False])
for dim in [0, 1, -1]:
    add("glu dim=%d" % dim, "F.glu", dict(x=G((2, 6), 80, 2.0)), lambda x, d=dim: F.glu(x, d),
        [R("x"), dim + 1 if dim >= 0 else dim])
for ws, xs in [((1,), (2, 3, 4)), ((3,), (2, 3, 4)), ((3,), (2, 3)), ((1,), (5,))]:
    add("prelu weight %s input %s" % (list(ws), list(xs)), "F.prelu", dict(x=G(xs, 81, 2.0), w=G(ws, 82, 0.25)),
        lambda x, w: F.prelu(x, w), [R("x"), R("w")])
add("dropout eval", "F.dropout", dict(x=ACT), lambda x: F.dropout(x, 0.5, training=False), [R("x"), 0.5, False])
add("one_hot", "F.one_hot", dict(i=I([[0, 3], [2, 1]])), lambda i: F.one_hot(i, 5), [R("i"), 5], dtypes=False)
add("one_hot inferred", "F.one_hot", dict(i=I([0, 3, 2, 1])), lambda i: F.one_hot(i), [R("i")], dtypes=False)

# large inputs: the activations' exp kept in range
for fn in ["softplus", "logsigmoid", "mish", "silu", "gelu", "elu", "selu", "celu", "sigmoid", "tanh", "hardswish",
           "log_softmax", "softmax"]:
    largs = [R("x")] + ([2] if fn in ("log_softmax", "softmax") else [])
    add("%s large inputs" % fn, "F." + fn, dict(x=G((1, 8), 116, 64.0)),
        lambda x, fn=fn: getattr(F, fn)(x, 1) if fn in ("log_softmax", "softmax") else getattr(F, fn)(x), largs)
add("pixel_shuffle 5-D", "F.pixel_shuffle", dict(x=G((2, 1, 4, 1, 2), 117)), lambda x: F.pixel_shuffle(x, 2), [R("x"), 2])
add("pixel_unshuffle 5-D", "F.pixel_unshuffle", dict(x=G((2, 1, 1, 2, 4), 118)), lambda x: F.pixel_unshuffle(x, 2),
    [R("x"), 2])
# grid_sample far outside the input: several reflections, the border's values
for mode in ["bilinear", "nearest"]:
    for pm in ["border", "reflection", "zeros"]:
        for ac in [False, True]:
            add("grid_sample far %s %s align_corners=%s" % (mode, pm, ac), "F.grid_sample",
                dict(x=G((1, 1, 3, 4), 119), g=G((1, 2, 3, 2), 120, 2.0, grad=mode == "bilinear")),
                lambda x, g, m=mode, pm=pm, ac=ac: F.grid_sample(x, g, mode=m, padding_mode=pm, align_corners=ac),
                [R("x"), R("g"), dict(mode=mode, padding_mode=pm, align_corners=ac)])
for xs, o in [((1, 1, 6), dict(scale_factor=0.5, mode="area")), ((1, 1, 3, 5), dict(scale_factor=(1.5, 0.6), mode="area")),
              ((1, 1, 4, 3, 3), dict(size=(2, 2, 3), mode="area")),
              ((1, 1, 4, 5), dict(scale_factor=1.25, mode="bicubic", align_corners=True)),
              ((1, 1, 5), dict(scale_factor=2.5, mode="nearest", recompute_scale_factor=True)),
              ((1, 1, 2, 2, 3), dict(size=(3, 3, 2), mode="nearest-exact"))]:
    add("interpolate %s %s" % (list(xs), o), "F.interpolate", dict(x=G(xs, 121)),
        lambda x, o=o: F.interpolate(x, **o), [R("x"), lua_opts(o)])

# ---------------------------------------------------------------- distances
for dim, eps in [(1, 1e-8), (0, 1e-8), (-1, 0.5)]:
    add("cosine_similarity dim=%d eps=%g" % (dim, eps), "F.cosine_similarity", dict(a=G((3, 4), 83), b=G((3, 4), 84)),
        lambda a, b, d=dim, e=eps: F.cosine_similarity(a, b, dim=d, eps=e),
        [R("a"), R("b"), dict(dim=dim + 1 if dim >= 0 else dim, eps=eps)])
add("cosine_similarity broadcast", "F.cosine_similarity", dict(a=G((3, 4), 83), b=G((1, 4), 84)),
    lambda a, b: F.cosine_similarity(a, b), [R("a"), R("b")])
for p, eps, keepdim in [(2, 1e-6, False), (1, 1e-6, True), (3, 0.1, False), (float("inf"), 1e-6, False)]:
    add("pairwise_distance p=%g eps=%g keepdim=%s" % (p, eps, keepdim), "F.pairwise_distance",
        dict(a=G((3, 4), 85), b=G((3, 4), 86)),
        lambda a, b, p=p, e=eps, k=keepdim: F.pairwise_distance(a, b, p=p, eps=e, keepdim=k),
        [R("a"), R("b"), dict(p=p, eps=eps, keepdim=keepdim)])
for p in [2, 1, 3, 0.5, float("inf")]:
    # p = inf: inputs without ties among a difference's largest entries, where PyTorch gives each of
    # them the whole gradient and lutorch (amax, norm) shares it among them
    if p == float("inf"):
        x, a, b = (V(torch.randn(s, dtype=torch.float64)) for s in [(4, 3), (2, 3, 4), (2, 2, 4)])
    else:
        x, a, b = G((4, 3), 87), G((2, 3, 4), 88), G((2, 2, 4), 89)
    add("pdist p=%g" % p, "F.pdist", dict(x=x), lambda x, p=p: F.pdist(x, p), [R("x"), p], dtypes=False)
    add("cdist p=%g" % p, "torch.cdist", dict(a=a, b=b),
        lambda a, b, p=p: torch.cdist(a, b, p), [R("a"), R("b"), p])

# sizes of 1: align_corners' scale (n_in - 1) / (n_out - 1) with an output or input of one
for xs, o in [((1, 1, 5), dict(size=1, mode="linear", align_corners=True)),
              ((1, 1, 1), dict(size=4, mode="linear", align_corners=True)),
              ((1, 1, 1), dict(size=3, mode="linear", align_corners=False)),
              ((1, 1, 3, 4), dict(size=(1, 3), mode="bilinear", align_corners=True)),
              ((1, 1, 1, 3), dict(size=(2, 5), mode="bicubic", align_corners=True)),
              ((1, 1, 3, 1), dict(size=(4, 2), mode="bicubic", align_corners=False)),
              ((1, 1, 2, 1, 3), dict(size=(1, 2, 4), mode="trilinear", align_corners=True))]:
    add("interpolate size 1 %s %s" % (list(xs), o), "F.interpolate", dict(x=G(xs, 125)),
        lambda x, o=o: F.interpolate(x, **o), [R("x"), lua_opts(o)])
for fn, xs, size in [("adaptive_avg_pool2d", (1, 1, 3, 4), 1), ("adaptive_max_pool2d", (1, 1, 3, 4), (1, 5)),
                     ("adaptive_avg_pool1d", (1, 2, 1), 3), ("adaptive_max_pool3d", (1, 1, 2, 3, 3), (3, 1, 2))]:
    add("%s %s %s" % (fn, list(xs), size), "F." + fn, dict(x=G(xs, 126)), lambda x, fn=fn, s=size: getattr(F, fn)(x, s),
        [R("x"), list(size) if isinstance(size, tuple) else size])
# grid points half way between pixels (nearest rounds half to even), and on the borders
ties = torch.tensor([-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, -0.875, 0.625, 0.125], dtype=torch.float64)
for ac in [False, True]:
    for pm in ["zeros", "border", "reflection"]:
        add("grid_sample nearest ties %s align_corners=%s" % (pm, ac), "F.grid_sample",
            dict(x=G((1, 1, 4, 5), 127), g=V(ties.reshape(1, 2, 3, 2), grad=False)),
            lambda x, g, pm=pm, ac=ac: F.grid_sample(x, g, mode="nearest", padding_mode=pm, align_corners=ac),
            [R("x"), R("g"), dict(mode="nearest", padding_mode=pm, align_corners=ac)])
# poisson_nll_loss with rates of 0 (log of eps), gaussian_nll_loss with variances of 0 (raised to eps)
inputs = dict(x=V(torch.tensor([[0.0, 0.5, 2.0], [0.0, 1.5, 0.25]])), t=V(torch.tensor([[0.0, 1, 3], [2, 0, 1]]), grad=False))
add("poisson_nll_loss zero rates", "F.poisson_nll_loss", inputs,
    lambda x, t: F.poisson_nll_loss(x, t, log_input=False, full=True), [R("x"), R("t"), dict(log_input=False, full=True)])
inputs = dict(x=G((2, 3), 128), t=G((2, 3), 129), v=V(torch.tensor([[0.0, 0.5, 1e-7], [2.0, 0.0, 0.25]])))
add("gaussian_nll_loss zero variances", "F.gaussian_nll_loss", inputs,
    lambda x, t, v: F.gaussian_nll_loss(x, t, v), [R("x"), R("t"), R("v")])

# the rest of the functional layer: linear, bilinear, unfold / fold, max_unpool, channel_shuffle,
# the triplet loss with a distance function, the dropouts in eval
for bias in [True, False]:
    inputs = dict(x=G((2, 3, 4), 130), w=G((5, 4), 131, 0.5))
    if bias:
        inputs["b"] = G((5,), 132)
    add("linear bias=%s" % bias, "F.linear", inputs, lambda x, w, b=None: F.linear(x, w, b),
        [R("x"), R("w"), R("b") if bias else NONE])
    inputs = dict(a=G((3, 2), 133), c=G((3, 4), 134), w=G((2, 2, 4), 135, 0.5))
    if bias:
        inputs["b"] = G((2,), 136)
    add("bilinear bias=%s" % bias, "F.bilinear", inputs, lambda a, c, w, b=None: F.bilinear(a, c, w, b),
        [R("a"), R("c"), R("w"), R("b") if bias else NONE])
for k, o in [(2, dict()), ((2, 3), dict(stride=(2, 1), padding=1)), (2, dict(dilation=2, padding=(0, 1), stride=2))]:
    lk = list(k) if isinstance(k, tuple) else k
    add("unfold k=%s %s" % (k, o), "F.unfold", dict(x=G((1, 1, 4, 5), 137)), lambda x, k=k, o=o: F.unfold(x, k, **o),
        [R("x"), lk, lua_opts(o)])
    L = F.unfold(torch.zeros(1, 1, 4, 5), k, **o).shape
    add("fold k=%s %s" % (k, o), "F.fold", dict(x=G(tuple(L), 138)), lambda x, k=k, o=o: F.fold(x, (4, 5), k, **o),
        [R("x"), [4, 5], lk, lua_opts(o)])
for dims, xs, k, o, osize in [(1, (1, 2, 7), 2, dict(stride=2), None), (1, (1, 2, 7), 3, dict(stride=2, padding=1), [8]),
                              (2, (1, 1, 5, 4), 2, dict(), [5, 5]), (2, (1, 2, 4, 5), 3, dict(stride=2, padding=1), None),
                              (3, (1, 1, 4, 4, 4), 2, dict(), None)]:
    y, idx = getattr(F, "max_pool%dd" % dims)(gen_values(xs, 139), k, return_indices=True, **o)
    fn = "max_unpool%dd" % dims
    lo = lua_opts(o)
    kw = dict(o)
    if osize:
        lo["output_size"] = osize
        kw["output_size"] = osize
    add("%s k=%d %s output_size=%s" % (fn, k, o, osize), "F." + fn, dict(x=G(tuple(y.shape), 140), i=I(idx.tolist())),
        lambda x, i, fn=fn, k=k, kw=kw: getattr(F, fn)(x, i, k, **kw), [R("x"), R("i"), k, lo])
add("channel_shuffle", "F.channel_shuffle", dict(x=G((1, 6, 2, 2), 141)), lambda x: F.channel_shuffle(x, 3), [R("x"), 3],
    grad=False)  # PyTorch 1.13 has no derivative for it
for red in REDUCTIONS:
    for margin, swap in [(1.0, False), (0.5, True)]:
        add("triplet_margin_with_distance_loss %s margin=%g swap=%s" % (red, margin, swap),
            "F.triplet_margin_with_distance_loss", dict(a=G((3, 4), 142), p=G((3, 4), 143), n=G((3, 4), 144)),
            lambda a, p, n, red=red, m=margin, sw=swap: F.triplet_margin_with_distance_loss(
                a, p, n, margin=m, swap=sw, reduction=red),
            [R("a"), R("p"), R("n"), dict(reduction=red, margin=margin, swap=swap)], grad=red != "sum")
for fn, xs in [("dropout1d", (2, 3, 4)), ("dropout2d", (1, 2, 3, 4)), ("dropout3d", (1, 2, 2, 2, 3)),
               ("alpha_dropout", (3, 4)), ("feature_alpha_dropout", (1, 2, 3, 4))]:
    add("%s eval" % fn, "F." + fn, dict(x=G(xs, 145)), lambda x, fn=fn: getattr(F, fn)(x, 0.4, training=False),
        [R("x"), 0.4, False])

# the deprecated upsampling aliases (upsample_bilinear: align_corners = true)
add("upsample_bilinear size", "F.upsample_bilinear", dict(x=G((1, 1, 3, 4), 146)),
    lambda x: F.upsample_bilinear(x, size=(5, 6)), [R("x"), [5, 6]])
add("upsample_bilinear scale_factor", "F.upsample_bilinear", dict(x=G((1, 1, 3, 4), 146)),
    lambda x: F.upsample_bilinear(x, scale_factor=2), [R("x"), NONE, 2])
add("upsample_nearest scale_factor", "F.upsample_nearest", dict(x=G((1, 1, 2, 3), 147)),
    lambda x: F.upsample_nearest(x, scale_factor=2), [R("x"), NONE, 2])
add("upsample nearest-exact", "F.upsample", dict(x=G((1, 1, 5), 148)),
    lambda x: F.upsample(x, size=7, mode="nearest-exact"), [R("x"), dict(size=7, mode="nearest-exact")])
# reflect and replicate with a negative amount on one side
for p, mode in [((-1, 3), "reflect"), ((3, -1), "reflect"), ((-2, 4), "reflect"), ((2, -3), "reflect"),
                ((2, -3), "replicate"), ((-2, 4), "circular"), ((3, -1), "circular")]:
    add("pad negative %s %s" % (p, mode), "F.pad", dict(x=G((1, 1, 6), 149)), lambda x, p=p, m=mode: F.pad(x, p, mode=m),
        [R("x"), list(p), dict(mode=mode)])

# zero vectors and equal rows: the norms' gradient at 0
Z = V(torch.tensor([[0.0, 0.0, 0.0], [0.5, -1.0, 0.25], [0.5, -1.0, 0.25]]))
for p in [2, 1]:
    add("normalize zero row p=%g" % p, "F.normalize", dict(x=Z), lambda x, p=p: F.normalize(x, p=p), [R("x"), dict(p=p)])
add("cosine_similarity zero vector", "F.cosine_similarity", dict(a=Z, b=G((3, 3), 122)),
    lambda a, b: F.cosine_similarity(a, b), [R("a"), R("b")])
add("cosine_similarity norms below eps", "F.cosine_similarity", dict(a=G((3, 4), 123, 0.125), b=G((3, 4), 124)),
    lambda a, b: F.cosine_similarity(a, b, eps=0.5), [R("a"), R("b"), dict(eps=0.5)])
add("pairwise_distance equal rows", "F.pairwise_distance", dict(a=Z, b=V(Z.t.clone())),
    lambda a, b: F.pairwise_distance(a, b), [R("a"), R("b")])
for p in [2, 1, 3]:
    add("pdist equal rows p=%g" % p, "F.pdist", dict(x=Z), lambda x, p=p: F.pdist(x, p), [R("x"), p], dtypes=False)
    add("cdist equal rows p=%g" % p, "torch.cdist", dict(a=Z, b=V(Z.t[1:].clone())),
        lambda a, b, p=p: torch.cdist(a, b, p), [R("a"), R("b"), p])

reference.write("functional_sweep_reference.lua", "gen_functional_sweep.py",
                ["torch.nn.functional across its options: see the generator's docstring."], cases)
print(len(cases), "cases")
