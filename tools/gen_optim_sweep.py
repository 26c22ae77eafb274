#!/usr/bin/env python3
"""Writes spec/data/optim_sweep_reference.lua for spec/optim_sweep_spec.lua: an options matrix of
PyTorch's optimizers and lr schedulers, on fixed values (no random numbers).

Optimizers: three parameters (a 2x3 matrix, a 4-vector, a 3-vector) and seven steps of fixed
gradients; the 3-vector has no gradient (None) at steps 1, 3 and 6, the 4-vector a zero gradient at
step 5 (with `late`, the 3-vector joins in a group of its own, by add_param_group, before step 3).
Each case records the parameters after every step, the state after the last one, and the
run resumed from a state_dict: after `resume` steps the state dict is loaded into a fresh optimizer
(over fresh parameters holding the same values) that takes the remaining steps; its trajectory is
written only where it differs from the uninterrupted one (`resumed`). LBFGS minimizes a
small quadratic and the 3-d Rosenbrock function with a closure.
Schedulers: the rates of an SGD optimizer with two groups over 30 steps (get_last_lr after the
constructor and after every step; momentum too where a scheduler cycles it), and the same run
resumed from the optimizer's and scheduler's state dicts after `resume` steps.

Left out, as lutorch lacks them: SparseAdam. Left out as PyTorch 1.13 lacks them: NAdam's and
RAdam's maximize and decoupled_weight_decay (lutorch's extensions, from later PyTorch versions).

Run: /usr/bin/python3 tools/gen_optim_sweep.py  (needs PyTorch; the generated file is committed)."""
import copy
import math

import torch

from lua_reference import write

O = torch.optim
S = torch.optim.lr_scheduler

PARAMS = [
    [[0.5, -1.25, 2.0], [0.0, 3.5, -0.75]],
    [1.5, -0.5, 0.25, -2.0],
    [0.3, -0.7, 1.1],
]
NSTEPS = 7
SHAPES = [(2, 3), (4,), (3,)]


def grad_values(s, j):
    """the gradient of parameter j (0-based) at step s (1-based): None or a nested list"""
    if j == 2 and s in (1, 3, 6):
        return None
    n = 6 if j == 0 else SHAPES[j][0]
    if j == 1 and s == 5:
        flat = [0.0] * n
    else:
        flat = [round(math.sin(1.7 * s + 0.9 * i + 2.3 * j) * (1.5 if s % 2 else 0.4), 4) for i in range(n)]
        if s == 2:
            flat[1] = 0.0  # a zero entry (Rprop's sign 0, Adagrad's accumulator)
    return [flat[0:3], flat[3:6]] if j == 0 else flat


GRADS = [[grad_values(s, j) for j in range(3)] for s in range(1, NSTEPS + 1)]


def flat(t):
    return t.detach().reshape(-1).tolist()


def make_params(dtype, values=None):
    vals = values or [torch.tensor(p, dtype=torch.float64) for p in PARAMS]
    return [v.detach().clone().to(dtype).requires_grad_(True) for v in vals]


def build(cls, ps, groups, opts):
    if groups is None:
        return getattr(O, cls)(ps, **opts)
    return getattr(O, cls)([dict(g, params=[ps[i - 1] for i in g["params"]]) for g in groups], **opts)


def state_of(opt, ps):
    out = []
    for p in ps:
        st = {}
        for k, v in opt.state.get(p, {}).items():
            if v is None:  # SGD without momentum keeps momentum_buffer = None
                continue
            st[k] = flat(v) if torch.is_tensor(v) and v.dim() > 0 else float(v)
        out.append(st)
    return out


def set_grads(ps, s, dtype):
    for j, p in enumerate(ps):
        g = GRADS[s - 1][j]
        p.grad = None if g is None else torch.tensor(g, dtype=torch.float64).to(dtype)


LATE_STEP = 3  # a case's `late` group joins (add_param_group) before this step


def run_optim(name, cls, opts=None, groups=None, dtype=torch.float64, resume=4, late=None):
    opts = opts or {}
    ps = make_params(dtype)
    opt = build(cls, ps, groups, opts)
    traj, resumed = [], []
    for s in range(1, NSTEPS + 1):
        if late is not None and s == LATE_STEP:
            opt.add_param_group(dict(late, params=[ps[i - 1] for i in late["params"]]))
        set_grads(ps, s, dtype)
        opt.step()
        traj.append([flat(p) for p in ps])
        if s == resume:
            sd = copy.deepcopy(opt.state_dict())
            ps2 = make_params(dtype, [p.detach() for p in ps])
            opt2 = build(cls, ps2, groups + [late] if late else groups, opts)
            opt2.load_state_dict(sd)
            for s2 in range(resume + 1, NSTEPS + 1):
                set_grads(ps2, s2, dtype)
                opt2.step()
                resumed.append([flat(p) for p in ps2])
    case = dict(name=name, optim=cls, dtype=str(dtype).replace("torch.", ""), opts=opts)
    if groups is not None:
        case["groups"] = groups
    if late is not None:
        case["late"] = late
    case.update(resume=resume, traj=traj, state=state_of(opt, ps))
    if resumed != traj[resume:]:  # kept only where it differs from the uninterrupted run
        case["resumed"] = resumed
    return case


def optim_cases():
    C = []

    def add(cls, name, opts=None, groups=None, f32=False, late=None):
        C.append(run_optim(name, cls, opts, groups, late=late))
        if f32:
            C.append(run_optim(name, cls, opts, groups, dtype=torch.float32, late=late))

    # SGD: momentum, dampening, nesterov, weight_decay, maximize and their combinations
    for mom in (0, 0.9):
        for damp in ((0, 0.3) if mom else (0,)):
            for nest in ((False, True) if mom and not damp else (False,)):
                for wd in (0, 0.05):
                    for mx in (False, True):
                        o = dict(lr=0.1, momentum=mom, dampening=damp, nesterov=nest, weight_decay=wd, maximize=mx)
                        add("SGD", "m%s d%s n%s wd%s max%s" % (mom, damp, nest, wd, mx), o,
                            f32=(mom and wd and mx and not damp))
    add("SGD", "groups: momentum+nesterov / plain maximize", dict(lr=0.1),
        groups=[dict(params=[1, 3], momentum=0.8, nesterov=True), dict(params=[2], lr=0.3, maximize=True, weight_decay=0.1)])

    # Adam and AdamW: amsgrad, weight_decay, maximize, betas, eps
    for cls in ("Adam", "AdamW"):
        for ams in (False, True):
            for wd in (0, 0.1):
                for mx in (False, True):
                    o = dict(lr=0.05, amsgrad=ams, weight_decay=wd, maximize=mx)
                    add(cls, "ams%s wd%s max%s" % (ams, wd, mx), o, f32=(ams and wd and not mx))
        add(cls, "betas (0.5, 0.8), eps 1e-3", dict(lr=0.1, betas=(0.5, 0.8), eps=1e-3))
        add(cls, "betas (0.3, 0.6), amsgrad, eps 0.1", dict(lr=0.1, betas=(0.3, 0.6), eps=0.1, amsgrad=True))
        add(cls, "groups: amsgrad / betas, weight decay", dict(lr=0.02),
            groups=[dict(params=[1], amsgrad=True), dict(params=[2, 3], betas=(0.7, 0.9), weight_decay=0.2, lr=0.1)])

    # Adagrad: lr_decay, initial_accumulator_value, weight_decay, eps, maximize
    for lrd in (0, 0.1):
        for iav in (0, 0.5):
            for wd in (0, 0.05):
                add("Adagrad", "lr_decay %s init_acc %s wd %s" % (lrd, iav, wd),
                    dict(lr=0.2, lr_decay=lrd, initial_accumulator_value=iav, weight_decay=wd), f32=(lrd and iav and wd))
    add("Adagrad", "maximize, eps 1e-2", dict(lr=0.1, maximize=True, eps=1e-2))
    # PyTorch fills the accumulators with the constructor's initial_accumulator_value, whatever a
    # group says; lutorch takes the group's (a deliberate departure): the groups here share it
    add("Adagrad", "groups: lr_decay / eps, init_acc", dict(lr=0.1, initial_accumulator_value=0.3),
        groups=[dict(params=[1, 2], lr_decay=0.2), dict(params=[3], eps=1e-2, lr=0.3)])

    # RMSprop: centered, momentum, alpha, weight_decay, maximize
    add("RMSprop", "defaults", dict(lr=0.01))
    for cen in (False, True):
        for mom in (0, 0.7):
            add("RMSprop", "centered %s momentum %s alpha 0.8" % (cen, mom),
                dict(lr=0.01, centered=cen, momentum=mom, alpha=0.8), f32=(cen and mom))
    add("RMSprop", "weight decay, maximize, eps", dict(lr=0.02, weight_decay=0.1, maximize=True, eps=1e-3))
    add("RMSprop", "centered, momentum, weight decay, maximize",
        dict(lr=0.02, centered=True, momentum=0.5, weight_decay=0.05, maximize=True))
    add("RMSprop", "groups: centered / momentum", dict(lr=0.01),
        groups=[dict(params=[1], centered=True), dict(params=[2, 3], momentum=0.9, alpha=0.5)])

    # Rprop: etas, step_sizes, maximize
    add("Rprop", "defaults", dict(lr=0.01))
    add("Rprop", "etas (0.3, 1.5)", dict(lr=0.05, etas=(0.3, 1.5)), f32=True)
    add("Rprop", "step_sizes (0.01, 0.06)", dict(lr=0.05, step_sizes=(0.01, 0.06)))
    add("Rprop", "etas, step_sizes, maximize", dict(lr=0.1, etas=(0.6, 1.1), step_sizes=(0.02, 0.15), maximize=True))
    add("Rprop", "groups: etas / step_sizes", dict(lr=0.02),
        groups=[dict(params=[1, 3], etas=(0.4, 1.3)), dict(params=[2], step_sizes=(1e-3, 0.03), lr=0.05)])

    # Adadelta: rho, eps, weight_decay, maximize
    for rho in (0.9, 0.5):
        for wd in (0, 0.1):
            add("Adadelta", "rho %s wd %s" % (rho, wd), dict(lr=1.0, rho=rho, weight_decay=wd), f32=(rho == 0.5 and wd))
    add("Adadelta", "maximize, eps 1e-3, lr 0.5", dict(lr=0.5, eps=1e-3, maximize=True))
    add("Adadelta", "groups: rho / lr", dict(lr=1.0),
        groups=[dict(params=[1], rho=0.7), dict(params=[2, 3], lr=0.3, weight_decay=0.05)])

    # Adamax: betas, eps, weight_decay, maximize
    add("Adamax", "defaults", dict(lr=0.05))
    add("Adamax", "betas, eps", dict(lr=0.05, betas=(0.6, 0.8), eps=1e-2), f32=True)
    add("Adamax", "weight decay, maximize", dict(lr=0.05, weight_decay=0.1, maximize=True))
    add("Adamax", "groups", dict(lr=0.02), groups=[dict(params=[1, 2]), dict(params=[3], betas=(0.5, 0.9), lr=0.1)])

    # NAdam: momentum_decay, betas, weight_decay (no maximize in 1.13). PyTorch 1.13's single-tensor
    # NAdam (its default) counts mu twice in mu_product_next (mu_product * mu * mu_next, fixed in
    # 2.0); its foreach NAdam has the documented rule, which lutorch follows: the reference is that one.
    add("NAdam", "defaults", dict(foreach=True, lr=0.05))
    add("NAdam", "momentum_decay 0.05", dict(foreach=True, lr=0.05, momentum_decay=0.05), f32=True)
    add("NAdam", "momentum_decay 0, betas, wd", dict(foreach=True, lr=0.05, momentum_decay=0.0, betas=(0.7, 0.9), weight_decay=0.1))
    add("NAdam", "groups", dict(foreach=True, lr=0.02), groups=[dict(params=[1]), dict(params=[2, 3], momentum_decay=0.1, lr=0.1)])

    # RAdam: betas (the rectification starts later with a larger beta2), weight_decay, eps
    add("RAdam", "defaults", dict(lr=0.05))
    add("RAdam", "beta2 0.6 (rectified from step 5)", dict(lr=0.05, betas=(0.8, 0.6)), f32=True)
    add("RAdam", "betas, wd, eps", dict(lr=0.1, betas=(0.5, 0.3), weight_decay=0.1, eps=1e-2))
    add("RAdam", "groups", dict(lr=0.02), groups=[dict(params=[1]), dict(params=[2, 3], betas=(0.9, 0.5), lr=0.1)])

    # ASGD: lambd, alpha, t0, weight_decay, maximize
    add("ASGD", "defaults", dict(lr=0.01))
    add("ASGD", "t0 3 (averaging from step 3)", dict(lr=0.05, t0=3), f32=True)
    add("ASGD", "lambd, alpha, t0, wd", dict(lr=0.1, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.05))
    add("ASGD", "lambd 0.1, maximize", dict(lr=0.1, lambd=0.1, maximize=True))
    add("ASGD", "groups", dict(lr=0.02), groups=[dict(params=[1], t0=1), dict(params=[2, 3], lambd=0.05, lr=0.1)])
    # the 3-vector joins in a group of its own (add_param_group) before step 3, its state new (not
    # Adagrad: PyTorch 1.13 fills its accumulators in the constructor only, and raises a KeyError)
    for cls, o, lo in [("SGD", dict(lr=0.1, momentum=0.9), dict(lr=0.2, nesterov=True)),
                       ("Adam", dict(lr=0.05), dict(amsgrad=True, betas=(0.6, 0.9))),
                       ("RMSprop", dict(lr=0.01, centered=True), dict(momentum=0.5)),
                       ("Rprop", dict(lr=0.05), dict(etas=(0.4, 1.4))),
                       ("ASGD", dict(lr=0.05, t0=2), dict(lambd=0.01)),
                       ("NAdam", dict(lr=0.05, foreach=True), dict(momentum_decay=0.02)),
                       ("RAdam", dict(lr=0.05), dict(betas=(0.8, 0.6))),
                       ("Adadelta", dict(lr=1.0), dict(rho=0.6)),
                       ("Adamax", dict(lr=0.05), dict(lr=0.1))]:
        add(cls, "a group added before step %d" % LATE_STEP, o, groups=[dict(params=[1, 2])],
            late=dict(lo, params=[3]))
    return C


# LBFGS with a closure on two problems (loss functions written alike in spec/optim_sweep_spec.lua)
QUAD_A = [[3.0, 0.5, -0.2], [0.5, 2.0, 0.3], [-0.2, 0.3, 1.5]]
QUAD_B = [1.0, -2.0, 0.5]
LBFGS_X0 = dict(quadratic=[0.0, 0.0, 0.0], rosenbrock=[-1.2, 1.0, 0.5])


def loss_of(problem, x):
    if problem == "quadratic":
        A, b = torch.tensor(QUAD_A, dtype=x.dtype), torch.tensor(QUAD_B, dtype=x.dtype)
        return 0.5 * torch.dot(torch.mv(A, x), x) - torch.dot(b, x)
    a, c = x[:-1], x[1:]
    return (100 * (c - a * a) ** 2 + (1 - a) ** 2).sum()


def lbfgs_run(problem, o, x0, nsteps, dtype=torch.float64):
    x = torch.tensor(x0, dtype=dtype, requires_grad=True)
    opt = O.LBFGS([x], **o)

    def closure():
        opt.zero_grad()
        loss = loss_of(problem, x)
        loss.backward()
        return loss

    traj, losses = [], []
    for _ in range(nsteps):
        losses.append(float(opt.step(closure)))
        traj.append(flat(x))
    return traj, losses, opt.state[x]


def lbfgs_cases():
    """Rosenbrock's runs are sensitive to the last bit (a dot product summed in another order moves
    them): each case's tolerance is 100 times the largest relative change of its trajectory when x0's
    first entry moves by one unit in the last place, and at least 1e-12"""
    C = []
    for problem in ("quadratic", "rosenbrock"):
        for name, o in [("defaults", dict()),
                        ("strong_wolfe", dict(line_search_fn="strong_wolfe")),
                        ("history_size 2", dict(history_size=2, max_iter=6)),
                        ("strong_wolfe, history_size 3, lr 0.5", dict(line_search_fn="strong_wolfe", history_size=3, lr=0.5)),
                        ("max_iter 3, max_eval 5", dict(max_iter=3, max_eval=5))]:
            nsteps = 3
            if problem == "rosenbrock":
                o = dict(o, max_iter=min(o.get("max_iter", 4), 4))
                nsteps = 4
            x0 = LBFGS_X0[problem]
            traj, losses, st = lbfgs_run(problem, o, x0, nsteps)
            moved, _, _ = lbfgs_run(problem, o, [math.nextafter(x0[0], math.inf)] + x0[1:], nsteps)
            sens = max(abs(a - b) / max(1.0, abs(a)) for ta, tb in zip(traj, moved) for a, b in zip(ta, tb))
            C.append(dict(name="%s, %s" % (problem, name), problem=problem, x0=x0, opts=o, tol=max(1e-12, 100 * sens),
                          traj=traj, losses=losses, func_evals=st["func_evals"], n_iter=st["n_iter"]))
    # float32 on the quadratic (from another start: x0 = 0 is exact in both), to 1e-6: one step, as
    # the next starts near the minimum, where the gradients are rounding noise and PyTorch's float32
    # scalar tensors (ys, H_diag, gtd, t) part from lutorch's scalars (Lua numbers, doubles)
    x0 = [0.5, -0.25, 1.0]
    for name, o in [("defaults", dict(max_iter=5)), ("strong_wolfe", dict(line_search_fn="strong_wolfe", max_iter=5))]:
        traj, losses, st = lbfgs_run("quadratic", o, x0, 1, torch.float32)
        C.append(dict(name="quadratic float32, " + name, problem="quadratic", x0=x0, dtype="float32", opts=o,
                      tol=1e-6, traj=traj, losses=losses, func_evals=st["func_evals"], n_iter=st["n_iter"]))
    return C


# Schedulers on SGD(two groups: lr 0.1 and 0.05, momentum 0.9); LambdaLR's functions by name
LAMBDAS = dict(
    pow95=lambda e: 0.95 ** e,
    inv=lambda e: 1.0 / (1.0 + e),
    warm5=lambda e: min(1.0, (e + 1) / 5.0),
    mul9=lambda e: 0.9,
    mul_alt=lambda e: 0.8 if e % 3 == 0 else 1.05,
)
NEPOCHS = 30


def make_opt(kind="sgd", initial_lr=False):
    """initial_lr: the groups hold initial_lr (0.2 and 0.1), as a scheduler built with last_epoch needs"""
    ps = [torch.zeros(2, requires_grad=True), torch.zeros(1, requires_grad=True)]
    groups = [dict(params=[ps[0]], lr=0.1), dict(params=[ps[1]], lr=0.05)]
    if initial_lr:
        groups[0]["initial_lr"], groups[1]["initial_lr"] = 0.2, 0.1
    if kind == "adam":
        return O.Adam(groups)
    return O.SGD(groups, momentum=0.9)


def make_sched(opt, spec):
    cls, args, opts = spec["sched"], list(spec.get("args", [])), dict(spec.get("opts", {}))
    if "lam" in spec:
        lam = spec["lam"]
        args = [[LAMBDAS[l] for l in lam] if isinstance(lam, list) else LAMBDAS[lam]]
    if cls == "SequentialLR":
        return S.SequentialLR(opt, [make_sched(opt, s) for s in spec["subs"]], spec["milestones"])
    if cls == "ChainedScheduler":
        return S.ChainedScheduler([make_sched(opt, s) for s in spec["subs"]])
    if "scale_fn" in spec:
        opts["scale_fn"] = LAMBDAS[spec["scale_fn"]]
    return getattr(S, cls)(opt, *args, **opts)


PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.97, 0.96, 0.99, 0.85, 0.86, 0.87, 0.849, 0.89, 0.9, 0.91, 0.5, 0.6, 0.7,
                   0.8, 0.5, 0.4999, 0.5, 0.3, 0.31, 0.32, 0.33, 0.34, 0.35, 0.2, 0.2, 0.2, 0.2]


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def run_sched(name, spec, resume=13, kind="sgd"):
    plateau = spec["sched"] == "ReduceLROnPlateau"

    def lrs_of(opt, s):
        return [g["lr"] for g in opt.param_groups] if plateau else s.get_last_lr()

    def step(s, e):
        if plateau:
            s.step(PLATEAU_METRICS[e - 1])
        elif "epochs" in spec:  # step(epoch): the closed form, or WarmRestarts' fractional epochs
            s.step(spec["epochs"][e - 1])
        else:
            s.step()

    initial_lr = "last_epoch" in spec.get("opts", {})
    opt = make_opt(kind, initial_lr)
    s = make_sched(opt, spec)
    lrs, moms, resumed = [lrs_of(opt, s)], [momenta(opt)], []
    for e in range(1, NEPOCHS + 1):
        opt.step()
        step(s, e)
        lrs.append(lrs_of(opt, s))
        moms.append(momenta(opt))
        if e == resume:
            # not deep-copied: 1.13 CyclicLR's holds a WeakMethod
            osd, ssd = copy.deepcopy(opt.state_dict()), dict(s.state_dict())
            opt2 = make_opt(kind, initial_lr)
            s2 = make_sched(opt2, spec)
            opt2.load_state_dict(osd)
            s2.load_state_dict(ssd)
            for e2 in range(resume + 1, NEPOCHS + 1):
                opt2.step()
                step(s2, e2)
                resumed.append(lrs_of(opt2, s2))
    case = dict(name=name, spec=spec, resume=resume, lrs=lrs)
    if kind != "sgd":
        case["kind"] = kind
    if spec["sched"] in ("CyclicLR", "OneCycleLR"):
        case["moms"] = moms
    if resumed != lrs[resume + 1:]:
        case["resumed"] = resumed
    return case


def sched_cases():
    C = []

    def add(name, spec, **kw):
        C.append(run_sched(name, spec, **kw))

    add("StepLR 3", dict(sched="StepLR", args=[3]))
    add("StepLR 4 gamma 0.5", dict(sched="StepLR", args=[4], opts=dict(gamma=0.5)))
    add("MultiStepLR", dict(sched="MultiStepLR", args=[[2, 5, 5, 11, 20]], opts=dict(gamma=0.7)))
    add("ExponentialLR 0.9", dict(sched="ExponentialLR", args=[0.9]))
    add("CosineAnnealingLR T_max 10", dict(sched="CosineAnnealingLR", args=[10]))
    add("CosineAnnealingLR T_max 7 eta_min", dict(sched="CosineAnnealingLR", args=[7], opts=dict(eta_min=0.01)))
    add("WarmRestarts T_0 5", dict(sched="CosineAnnealingWarmRestarts", args=[5]))
    add("WarmRestarts T_0 3 T_mult 2 eta_min", dict(sched="CosineAnnealingWarmRestarts", args=[3],
                                                     opts=dict(T_mult=2, eta_min=0.005)))
    add("CyclicLR triangular", dict(sched="CyclicLR", args=[0.01, 0.1], opts=dict(step_size_up=4)))
    add("CyclicLR triangular2 down", dict(sched="CyclicLR", args=[[0.01, 0.02], [0.1, 0.2]],
                                          opts=dict(step_size_up=3, step_size_down=5, mode="triangular2")))
    add("CyclicLR exp_range", dict(sched="CyclicLR", args=[0.01, 0.1],
                                   opts=dict(step_size_up=2, mode="exp_range", gamma=0.95, base_momentum=0.7,
                                             max_momentum=0.95)))
    add("CyclicLR no momentum", dict(sched="CyclicLR", args=[0.01, 0.1], opts=dict(step_size_up=5,
                                                                                   cycle_momentum=False)))
    add("CyclicLR scale_fn by cycle", dict(sched="CyclicLR", args=[0.01, 0.1], scale_fn="inv",
                                           opts=dict(step_size_up=3)))
    add("CyclicLR scale_fn by iteration", dict(sched="CyclicLR", args=[0.01, 0.1], scale_fn="pow95",
                                               opts=dict(step_size_up=2, step_size_down=4, scale_mode="iterations")))
    add("OneCycleLR cos", dict(sched="OneCycleLR", args=[0.5], opts=dict(total_steps=31)))
    add("OneCycleLR linear three_phase", dict(sched="OneCycleLR", args=[[0.4, 0.2]],
                                              opts=dict(epochs=8, steps_per_epoch=4, anneal_strategy="linear",
                                                        three_phase=True, pct_start=0.4, div_factor=10.0,
                                                        final_div_factor=100.0)))
    add("OneCycleLR Adam betas", dict(sched="OneCycleLR", args=[0.3], opts=dict(total_steps=35, base_momentum=0.75,
                                                                                max_momentum=0.9)), kind="adam")
    add("OneCycleLR no momentum", dict(sched="OneCycleLR", args=[0.3], opts=dict(total_steps=32,
                                                                                cycle_momentum=False)))
    add("LinearLR defaults", dict(sched="LinearLR"))
    add("LinearLR 0.1 -> 0.8 over 12", dict(sched="LinearLR", opts=dict(start_factor=0.1, end_factor=0.8,
                                                                        total_iters=12)))
    add("ConstantLR defaults", dict(sched="ConstantLR"))
    add("ConstantLR 0.25 for 9", dict(sched="ConstantLR", opts=dict(factor=0.25, total_iters=9)))
    add("PolynomialLR defaults", dict(sched="PolynomialLR"))
    add("PolynomialLR power 2 over 20", dict(sched="PolynomialLR", opts=dict(total_iters=20, power=2.0)))
    add("PolynomialLR power 0.5 over 8", dict(sched="PolynomialLR", opts=dict(total_iters=8, power=0.5)))
    add("LambdaLR pow95", dict(sched="LambdaLR", lam="pow95"))
    add("LambdaLR per group", dict(sched="LambdaLR", lam=["inv", "warm5"]))
    add("MultiplicativeLR mul9", dict(sched="MultiplicativeLR", lam="mul9"))
    add("MultiplicativeLR per group", dict(sched="MultiplicativeLR", lam=["mul_alt", "mul9"]))
    add("SequentialLR linear warmup then exponential",
        dict(sched="SequentialLR", milestones=[5],
             subs=[dict(sched="LinearLR", opts=dict(start_factor=0.2, total_iters=5)),
                   dict(sched="ExponentialLR", args=[0.9])]))
    add("SequentialLR constant, step, cosine",
        dict(sched="SequentialLR", milestones=[4, 15],
             subs=[dict(sched="ConstantLR", opts=dict(factor=0.5, total_iters=4)),
                   dict(sched="StepLR", args=[3], opts=dict(gamma=0.5)),
                   dict(sched="CosineAnnealingLR", args=[8])]))
    add("ChainedScheduler constant and exponential",
        dict(sched="ChainedScheduler", subs=[dict(sched="ConstantLR", opts=dict(factor=0.1, total_iters=4)),
                                             dict(sched="ExponentialLR", args=[0.9])]))
    add("ChainedScheduler linear, multistep, multiplicative",
        dict(sched="ChainedScheduler", subs=[dict(sched="LinearLR", opts=dict(start_factor=0.5, total_iters=6)),
                                             dict(sched="MultiStepLR", args=[[7, 14]], opts=dict(gamma=0.5)),
                                             dict(sched="MultiplicativeLR", lam="mul_alt")]))
    # step(epoch): the closed forms (epochs out of order, repeated, skipped), WarmRestarts' fractions
    jumps = [1, 2, 2, 5, 4, 7, 8, 12, 3, 9, 10, 11, 15, 14, 16, 20, 21, 0, 6, 13, 17, 18, 19, 22, 23, 25, 24, 26,
             28, 27]
    for name, spec in [("StepLR", dict(sched="StepLR", args=[3], opts=dict(gamma=0.5))),
                       ("MultiStepLR", dict(sched="MultiStepLR", args=[[3, 6, 6, 14]], opts=dict(gamma=0.5))),
                       ("ExponentialLR", dict(sched="ExponentialLR", args=[0.9])),
                       ("CosineAnnealingLR", dict(sched="CosineAnnealingLR", args=[8], opts=dict(eta_min=0.01))),
                       ("ConstantLR", dict(sched="ConstantLR", opts=dict(factor=0.5, total_iters=6))),
                       ("LinearLR", dict(sched="LinearLR", opts=dict(start_factor=0.25, total_iters=10))),
                       ("PolynomialLR", dict(sched="PolynomialLR", opts=dict(total_iters=12, power=1.5)))]:
        add(name + " step(epoch)", dict(spec, epochs=jumps))
    add("WarmRestarts step(fractional epoch)", dict(sched="CosineAnnealingWarmRestarts", args=[2],
                                                    opts=dict(T_mult=2, eta_min=0.001),
                                                    epochs=[0.25 * e for e in range(1, 31)]))
    add("WarmRestarts T_mult 1 step(epoch)", dict(sched="CosineAnnealingWarmRestarts", args=[4],
                                                  epochs=[0.5 + 0.75 * e for e in range(1, 31)]))
    # built with last_epoch (the groups hold initial_lr)
    add("StepLR last_epoch 5", dict(sched="StepLR", args=[4], opts=dict(gamma=0.5, last_epoch=5)))
    add("ExponentialLR last_epoch 3", dict(sched="ExponentialLR", args=[0.8], opts=dict(last_epoch=3)))
    add("CosineAnnealingLR last_epoch 4", dict(sched="CosineAnnealingLR", args=[10], opts=dict(last_epoch=4)))
    for mode in ("min", "max"):
        for tmode in ("rel", "abs"):
            add("ReduceLROnPlateau %s %s" % (mode, tmode),
                dict(sched="ReduceLROnPlateau", opts=dict(mode=mode, threshold_mode=tmode, patience=2, factor=0.5,
                                                          threshold=0.02 if tmode == "abs" else 0.01)))
    add("ReduceLROnPlateau cooldown, min_lr per group, eps",
        dict(sched="ReduceLROnPlateau", opts=dict(patience=1, cooldown=2, factor=0.3, min_lr=[0.004, 0.01],
                                                  eps=1e-3)))
    add("ReduceLROnPlateau patience 0, min_lr", dict(sched="ReduceLROnPlateau",
                                                     opts=dict(patience=0, factor=0.5, min_lr=0.01, threshold=0.0)))
    return C


def main():
    torch.set_default_dtype(torch.float64)
    ref = dict(params=PARAMS, nsteps=NSTEPS, late_step=LATE_STEP, grads=[[False if g is None else g for g in gs] for gs in GRADS], quad_a=QUAD_A, quad_b=QUAD_B,
               plateau_metrics=PLATEAU_METRICS, nepochs=NEPOCHS,
               optim=optim_cases(), lbfgs=lbfgs_cases(), sched=sched_cases())
    write("optim_sweep_reference.lua", "gen_optim_sweep.py",
          ["Options matrix of the optimizers and lr schedulers, for spec/optim_sweep_spec.lua.",
           "grads[s][j]: the gradient of parameter j at step s (false: none, p.grad = nil)."], ref)


if __name__ == "__main__":
    main()
