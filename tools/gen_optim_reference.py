#!/usr/bin/env python3
"""Writes spec/data/optim_reference.lua: PyTorch's SGD, Adam, AdamW, RMSprop and Adagrad updates and
its lr schedulers' rates on fixed float64 values (no random numbers: the
initial parameters and every step's gradients are written below), for spec/optim_spec.lua.

Run: python3 tools/gen_optim_reference.py  (needs PyTorch; the generated file is committed, CI has
no PyTorch). Values are printed with %.17g, so they read back as the same doubles."""
import os
import torch

torch.set_default_dtype(torch.float64)

# two parameters (a 2x3 matrix and a 4-vector) and four steps of gradients for each
PARAMS = [
    [[0.5, -1.25, 2.0], [0.0, 3.5, -0.75]],
    [1.5, -0.5, 0.25, -2.0],
]
GRADS = [
    [[[0.3, -0.2, 1.5], [0.0, -2.5, 0.125]], [4.0, -0.01, 0.5, -1.0]],
    [[[0.1, 0.4, -0.5], [0.2, -0.3, 0.05]], [0.5, 0.02, -0.25, 0.75]],
    [[[-0.2, 0.1, 0.25], [0.0, 0.6, -0.1]], [0.125, -0.3, 0.0, 0.5]],
    [[[0.05, -0.05, 0.3], [-0.4, 0.2, 0.02]], [-0.25, 0.1, 0.2, -0.1]],
]

SGD_CASES = [
    ("plain", dict(lr=0.1)),
    ("momentum", dict(lr=0.1, momentum=0.9)),
    ("momentum, dampening, weight decay", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("nesterov, weight decay", dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.05)),
    ("maximize, momentum", dict(lr=0.1, momentum=0.9, maximize=True)),
    ("maximize, weight decay", dict(lr=0.2, weight_decay=0.1, maximize=True)),
]
ADAM_CASES = [
    ("defaults", dict(lr=0.01)),
    ("betas, weight decay", dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1)),
    ("amsgrad, weight decay", dict(lr=0.02, amsgrad=True, weight_decay=0.01)),
    ("maximize, eps", dict(lr=0.01, maximize=True, eps=1e-3)),
    ("small beta1 (lerp's second form)", dict(lr=0.03, betas=(0.3, 0.9))),
]
ADAMW_CASES = [
    ("defaults", dict(lr=0.01)),
    ("amsgrad, weight decay", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
    ("maximize, betas", dict(lr=0.02, maximize=True, betas=(0.85, 0.95))),
    ("no weight decay", dict(lr=0.01, weight_decay=0)),
]

RMSPROP_CASES = [
    ("defaults", dict(lr=0.01)),
    ("momentum, weight decay", dict(lr=0.02, momentum=0.9, weight_decay=0.05, alpha=0.9)),
    ("centered, momentum", dict(lr=0.01, centered=True, momentum=0.5)),
    ("centered, maximize, eps", dict(lr=0.03, centered=True, maximize=True, eps=1e-3)),
]
ADAGRAD_CASES = [
    ("defaults", dict(lr=0.1)),
    ("lr decay, weight decay", dict(lr=0.2, lr_decay=0.1, weight_decay=0.05)),
    ("initial accumulator, maximize, eps", dict(lr=0.05, initial_accumulator_value=0.5, maximize=True, eps=1e-3)),
]


def lua(v, indent=""):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):  # a float stays a float in Lua: 2.0, not 2
        s = "%.17g" % v
        return s if any(c in s for c in ".ein") else s + ".0"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(lua(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join("%s = %s" % (k, lua(x)) for k, x in v.items()) + "}"
    raise TypeError(type(v))


def run(cls, opts, groups=None):
    ps = [torch.tensor(p, requires_grad=True) for p in PARAMS]
    if groups is None:
        opt = cls(ps, **opts)
    else:
        opt = cls([dict(params=[p], **g) for p, g in zip(ps, groups)], **opts)
    out = []
    for step_grads in GRADS:
        for p, g in zip(ps, step_grads):
            p.grad = torch.tensor(g)
        opt.step()
        out.append([p.detach().tolist() for p in ps])
    return out


def cases(cls, table):
    return [dict(name=name, opts=opts, expected=run(cls, opts)) for name, opts in table]


def sched(make, epochs, lr=0.1, groups=1):
    """get_last_lr() after 0..epochs steps, groups with lr, 2 lr, ..."""
    opt = torch.optim.SGD([dict(params=[torch.zeros(1, requires_grad=True)], lr=lr * (i + 1))
                           for i in range(groups)], lr=lr)
    s = make(opt)
    lrs = [s.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr())
    return lrs


def onecycle_momentum():
    """SGD momentum and Adam beta1 cycled by OneCycleLR, after 0..8 steps"""
    out = {}
    for name, make in [("sgd", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
                       ("adam", lambda ps: torch.optim.Adam(ps, lr=0.1))]:
        opt = make([torch.zeros(1, requires_grad=True)])
        s = torch.optim.lr_scheduler.OneCycleLR(opt, 0.4, total_steps=8, base_momentum=0.8, max_momentum=0.9)
        ms = []
        for _ in range(8):
            g = opt.param_groups[0]
            ms.append(g["betas"][0] if "betas" in g else g["momentum"])
            opt.step()
            s.step()
        out[name] = ms
    return out


def plateau():
    """ReduceLROnPlateau: lrs after each metric of a fixed sequence, min and max modes"""
    metrics = [1.0, 0.9, 0.95, 0.97, 0.96, 0.99, 0.85, 0.86, 0.87, 0.88, 0.89, 0.9, 0.91, 0.5, 0.6, 0.7, 0.8]
    out = dict(metrics=metrics)
    for name, kw in [("min_rel", dict(patience=2, factor=0.5, cooldown=1)),
                     ("max_abs", dict(mode="max", patience=1, factor=0.3, threshold=0.05, threshold_mode="abs",
                                      min_lr=[0.02, 0.05]))]:
        opt = torch.optim.SGD([dict(params=[torch.zeros(1, requires_grad=True)], lr=0.1 * (i + 1))
                               for i in range(2)], lr=0.1)
        s = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        lrs = []
        for m in metrics:
            opt.step()
            s.step(m)
            lrs.append([g["lr"] for g in opt.param_groups])
        out[name] = lrs
    return out


def main():
    LR = torch.optim.lr_scheduler
    ref = dict(
        params=PARAMS,
        grads=GRADS,
        sgd=cases(torch.optim.SGD, SGD_CASES),
        adam=cases(torch.optim.Adam, ADAM_CASES),
        adamw=cases(torch.optim.AdamW, ADAMW_CASES),
        sgd_groups=dict(opts=dict(lr=0.1, momentum=0.9), groups=[dict(), dict(lr=0.01, momentum=0.5)],
                        expected=run(torch.optim.SGD, dict(lr=0.1, momentum=0.9),
                                     groups=[dict(), dict(lr=0.01, momentum=0.5)])),
        steplr=dict(step_size=3, gamma=0.5, lrs=sched(lambda o: LR.StepLR(o, 3, gamma=0.5), 10, groups=2)),
        multisteplr=dict(milestones=[2, 5, 5], gamma=0.3,
                         lrs=sched(lambda o: LR.MultiStepLR(o, [2, 5, 5], gamma=0.3), 8, groups=2)),
        lambdalr=dict(lrs=sched(lambda o: LR.LambdaLR(o, lambda e: 0.95 ** e), 6, groups=2)),
        cosine=dict(T_max=5, eta_min=0.001,
                    lrs=sched(lambda o: LR.CosineAnnealingLR(o, 5, eta_min=0.001), 17, groups=2)),
        cosine0=dict(T_max=4, eta_min=0,
                     lrs=sched(lambda o: LR.CosineAnnealingLR(o, 4), 12, lr=0.5)),
        rmsprop=cases(torch.optim.RMSprop, RMSPROP_CASES),
        adagrad=cases(torch.optim.Adagrad, ADAGRAD_CASES),
        multiplicativelr=dict(lrs=sched(lambda o: LR.MultiplicativeLR(o, lambda e: 0.9 + 0.01 * e), 6, groups=2)),
        exponentiallr=dict(lrs=sched(lambda o: LR.ExponentialLR(o, 0.7), 6, groups=2)),
        constantlr=dict(lrs=sched(lambda o: LR.ConstantLR(o, factor=0.25, total_iters=3), 6, groups=2)),
        linearlr=dict(lrs=sched(lambda o: LR.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=4), 7,
                                groups=2)),
        polynomiallr=dict(lrs=sched(lambda o: LR.PolynomialLR(o, total_iters=5, power=2.0), 7, groups=2)),
        warm_restarts=dict(lrs=sched(lambda o: LR.CosineAnnealingWarmRestarts(o, 3, T_mult=2, eta_min=0.01), 16,
                                     groups=2)),
        warm_restarts1=dict(lrs=sched(lambda o: LR.CosineAnnealingWarmRestarts(o, 4), 10)),
        onecycle=dict(lrs=sched(lambda o: LR.OneCycleLR(o, [1.0, 2.0], total_steps=10), 10, groups=2)),
        onecycle3=dict(lrs=sched(lambda o: LR.OneCycleLR(o, 0.5, total_steps=12, three_phase=True,
                                                           anneal_strategy="linear", pct_start=0.25), 12)),
        onecycle_momentum=onecycle_momentum(),
        sequential=dict(lrs=sched(lambda o: LR.SequentialLR(o, [LR.LinearLR(o, start_factor=0.1, total_iters=3),
                                                               LR.ExponentialLR(o, 0.8)], milestones=[3]), 8,
                                  groups=2)),
        chained=dict(lrs=sched(lambda o: LR.ChainedScheduler([LR.ConstantLR(o, factor=0.5, total_iters=2),
                                                             LR.ExponentialLR(o, 0.9)]), 6, groups=2)),
        plateau=plateau(),
    )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "data", "optim_reference.lua")
    with open(path, "w") as f:
        f.write("-- Generated by tools/gen_optim_reference.py with PyTorch %s: do not edit.\n" % torch.__version__)
        f.write("-- Each optimizer case: expected[step][param] = the parameter after that step (float64).\n")
        f.write("-- Schedulers: lrs[epoch + 1][group] = get_last_lr() after `epoch` steps.\n")
        f.write("return {\n")
        for k, v in ref.items():
            if isinstance(v, list) and v and isinstance(v[0], dict):
                f.write("  %s = {\n" % k)
                for c in v:
                    f.write("    %s,\n" % lua(c))
                f.write("  },\n")
            else:
                f.write("  %s = %s,\n" % (k, lua(v)))
        f.write("}\n")


if __name__ == "__main__":
    main()
