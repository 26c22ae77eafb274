#!/usr/bin/env python3
"""Writes spec/data/cyclic_lr_reference.lua: the learning rates and momenta of PyTorch's
optim.lr_scheduler.CyclicLR over 25 steps, for two parameter groups of SGD with momentum, in its
modes (triangular, triangular2, exp_range), with step_size_down, with a scale_fn of either
scale_mode, with per-group values and without cycle_momentum; for spec/nn_optim_extra_spec.lua.

Run: python3 tools/gen_cyclic_lr_reference.py  (needs PyTorch; the generated file is committed, CI
has no PyTorch). Values are printed with %.17g, so they read back as the same doubles."""
import torch

from lua_reference import write

STEPS = 25


# scale_fn 'inverse' in the spec is the same function in Lua: 1 / (1 + 0.1 x)
def inverse(x):
    return 1 / (1 + 0.1 * x)


CASES = [
    ("triangular", dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("triangular, step_size_down", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5)),
    ("triangular2", dict(base_lr=0.001, max_lr=0.01, step_size_up=2, step_size_down=3, mode="triangular2")),
    ("exp_range", dict(base_lr=0.01, max_lr=0.2, step_size_up=4, mode="exp_range", gamma=0.9)),
    ("per-group values and momenta", dict(base_lr=[0.01, 0.02], max_lr=[0.05, 0.3], step_size_up=3,
                                          base_momentum=[0.7, 0.8], max_momentum=[0.95, 0.9])),
    ("scale_fn per cycle", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn="inverse", scale_mode="cycle")),
    ("scale_fn per iteration", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn="inverse",
                                    scale_mode="iterations")),
    ("no cycle_momentum", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, cycle_momentum=False)),
]


def run(opts):
    ps = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(3))]
    opt = torch.optim.SGD([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.5}], lr=0.1, momentum=0.5)
    kw = dict(opts)
    if kw.get("scale_fn") == "inverse":
        kw["scale_fn"] = inverse
    sched = torch.optim.lr_scheduler.CyclicLR(opt, **kw)
    lrs, moms = [], []
    for _ in range(STEPS):
        lrs.append(sched.get_last_lr())
        moms.append([g["momentum"] for g in opt.param_groups])
        opt.step()
        sched.step()
    return lrs, moms


def main():
    cases = []
    for name, opts in CASES:
        lrs, moms = run(opts)
        cases.append(dict(name=name, opts=opts, lrs=lrs, momenta=moms))
    write("cyclic_lr_reference.lua", "gen_cyclic_lr_reference.py", [
        "Each case: lrs[k][group] and momenta[k][group] after k - 1 steps; the optimizer is SGD with",
        "groups {lr = 0.1, momentum = 0.5} and {lr = 0.5, momentum = 0.5}.",
    ], cases)

if __name__ == "__main__":
    main()
