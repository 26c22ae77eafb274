-- torch.optim's optimizers and lr schedulers against PyTorch 1.13 on an options matrix
-- (spec/data/optim_sweep_reference.lua, written by tools/gen_optim_sweep.py): every option of each
-- optimizer and the combinations that interact, parameter groups with their own options (one
-- added by add_param_group mid-run), a
-- parameter without a gradient at some steps and a zero gradient, the parameters after each of 7
-- steps (float64 to 1e-12, float32 to 1e-6), the state after the last step, and the run resumed
-- from a state_dict loaded into a fresh optimizer mid-run; LBFGS (with and without the strong Wolfe
-- line search, short histories) on a quadratic and the Rosenbrock function; every scheduler's rates
-- (get_last_lr) over 30 steps (step(), or step(epoch) where PyTorch has a closed form, and
-- CosineAnnealingWarmRestarts' fractional epochs; built with last_epoch), the momentum that CyclicLR
-- and OneCycleLR cycle, and the run resumed from the optimizer's and the scheduler's state dicts.
-- Each optimizer case runs on the fused C step (the default for contiguous CPU parameters) and on
-- the tensor-op path (fused = false).
-- Deliberate departures (the generator's cases avoid them): Adagrad fills a group's accumulators with
-- that group's initial_accumulator_value (PyTorch with the constructor's, whatever the group says),
-- and gives a parameter of a group added later its accumulator (PyTorch 1.13's step raises KeyError);
-- NAdam follows the documented rule, as PyTorch 1.13's foreach NAdam and 2.0 onwards (1.13's default
-- single-tensor NAdam counts mu twice in mu_product_next).
local torch = require 'torch'
local H = require 'spec.helpers'

local REF = dofile('spec/data/optim_sweep_reference.lua')
local LS = torch.optim.lr_scheduler
local TOL = { float64 = 1e-12, float32 = 1e-6 }

local function values(p) return H.flatten(p:detach():totable()) end

local function leaves(list, dtype)
  local ps = {}
  for j, v in ipairs(list) do
    ps[j] = torch.is_tensor(v) and v:detach():clone():requires_grad_(true)
      or torch.tensor(v, { dtype = dtype, requires_grad = true })
  end
  return ps
end

-- a group of the reference (parameters by number) over the parameters ps
local function group_of(g, ps)
  local grp = {}
  for k, v in pairs(g) do grp[k] = v end
  grp.params = {}
  for i, j in ipairs(g.params) do grp.params[i] = ps[j] end
  return grp
end

-- the case's optimizer; with_late: with the group that joins mid-run already there
local function build(case, ps, fused, with_late)
  local opts = {}
  for k, v in pairs(case.opts) do opts[k] = v end
  if not fused then opts.fused = false end
  local cls = torch.optim[case.optim]
  if case.groups == nil then return cls(ps, opts) end
  local groups = {}
  for gi, g in ipairs(case.groups) do groups[gi] = group_of(g, ps) end
  if with_late and case.late then groups[#groups + 1] = group_of(case.late, ps) end
  return cls(groups, opts)
end

local function set_grads(ps, s, dtype)
  for j, p in ipairs(ps) do
    local g = REF.grads[s][j]
    if g then p.grad = torch.tensor(g, { dtype = dtype }) else p.grad = nil end
  end
end

local function check_step(ps, want, tol, what)
  for j, p in ipairs(ps) do H.near(H.flatten(want[j]), values(p), tol, what .. ' param ' .. j) end
end

local function as_values(v)
  if torch.is_tensor(v) then return v:dim() == 0 and v:item() or values(v) end
  return v
end

describe('optimizer options matrix against PyTorch 1.13', function()
  for _, case in ipairs(REF.optim) do
    for _, fused in ipairs { true, false } do
      local title = ('%s (%s) %s, %s path'):format(case.optim, case.name, case.dtype, fused and 'fused' or 'tensor-op')
      it(title, function()
        local dtype, tol = torch[case.dtype], TOL[case.dtype]
        local ps = leaves(REF.params, dtype)
        local opt = build(case, ps, fused)
        local ps2, opt2
        for s = 1, REF.nsteps do
          if case.late and s == REF.late_step then opt:add_param_group(group_of(case.late, ps)) end
          set_grads(ps, s, dtype)
          opt:step()
          check_step(ps, case.traj[s], tol, title .. ' step ' .. s)
          if s == case.resume then
            -- a fresh optimizer over fresh parameters of the same values takes the saved state
            ps2 = leaves(ps)
            opt2 = build(case, ps2, fused, true)
            opt2:load_state_dict(opt:state_dict())
          end
        end
        for j, p in ipairs(ps) do
          for k, want in pairs(case.state[j]) do
            local got = opt.state[p] and opt.state[p][k]
            assert(got ~= nil, ('%s: param %d has no state %s'):format(title, j, k))
            H.near(want, as_values(got), tol, ('%s: state %s of param %d'):format(title, k, j))
          end
        end
        for s = case.resume + 1, REF.nsteps do
          set_grads(ps2, s, dtype)
          opt2:step()
          local want = case.resumed and case.resumed[s - case.resume] or case.traj[s]
          check_step(ps2, want, tol, title .. ' resumed from a state_dict, step ' .. s)
        end
      end)
    end
  end
end)

describe('deliberate departures from PyTorch 1.13', function()
  it("Adagrad fills a group's accumulators with that group's initial_accumulator_value", function()
    local p1, p2 = torch.zeros(3, { requires_grad = true }), torch.zeros(2, { requires_grad = true })
    local opt = torch.optim.Adagrad({ { params = { p1 } }, { params = { p2 }, initial_accumulator_value = 2.0 } },
      { initial_accumulator_value = 0.5 })
    H.near({ 0.5, 0.5, 0.5 }, values(opt.state[p1].sum), 0, 'the first group (the default)')
    H.near({ 2.0, 2.0 }, values(opt.state[p2].sum), 0, "the second group (its own; PyTorch's: 0.5)")
  end)
end)

-- the losses of tools/gen_optim_sweep.py
local LOSS = {
  quadratic = function(x)
    local A = torch.tensor(REF.quad_a, { dtype = x.dtype })
    local b = torch.tensor(REF.quad_b, { dtype = x.dtype })
    return A:mv(x):dot(x) * 0.5 - b:dot(x)
  end,
  rosenbrock = function(x)
    local n = x:size(1)
    local a, c = x:narrow(1, 1, n - 1), x:narrow(1, 2, n - 1)
    return ((c - a * a):pow(2) * 100 + (1 - a):pow(2)):sum()
  end,
}

-- case.tol: 1e-12 (float32: 1e-6), or on the Rosenbrock function (where a dot product summed in another order than
-- PyTorch's BLAS moves the run) 100 times the change that one unit in the last place of x0 makes
describe('LBFGS against PyTorch 1.13', function()
  for _, case in ipairs(REF.lbfgs) do
    it(case.name, function()
      local tol = case.tol
      local x = torch.tensor(case.x0, { dtype = torch[case.dtype or 'float64'], requires_grad = true })
      local opt = torch.optim.LBFGS({ x }, case.opts)
      local function closure()
        opt:zero_grad()
        local loss = LOSS[case.problem](x)
        loss:backward()
        return loss
      end
      for s, want in ipairs(case.traj) do
        local loss = opt:step(closure)
        H.near(case.losses[s], as_values(loss), tol, case.name .. ' loss of step ' .. s)
        H.near(want, values(x), tol, case.name .. ' x after step ' .. s)
      end
      local st = opt.state[x]
      assert.are.equal(case.func_evals, st.func_evals)
      assert.are.equal(case.n_iter, st.n_iter)
    end)
  end
end)

-- LambdaLR's and MultiplicativeLR's functions of tools/gen_optim_sweep.py
local LAMBDAS = {
  pow95 = function(e) return 0.95 ^ e end,
  inv = function(e) return 1.0 / (1.0 + e) end,
  warm5 = function(e) return math.min(1.0, (e + 1) / 5.0) end,
  mul9 = function() return 0.9 end,
  mul_alt = function(e) return e % 3 == 0 and 0.8 or 1.05 end,
}

-- initial_lr: the groups hold initial_lr (0.2 and 0.1), as a scheduler built with last_epoch needs
local function make_opt(kind, initial_lr)
  local p1, p2 = torch.zeros(2, { requires_grad = true }), torch.zeros(1, { requires_grad = true })
  local groups = { { params = { p1 }, lr = 0.1 }, { params = { p2 }, lr = 0.05 } }
  if initial_lr then groups[1].initial_lr, groups[2].initial_lr = 0.2, 0.1 end
  if kind == 'adam' then return torch.optim.Adam(groups) end
  return torch.optim.SGD(groups, { momentum = 0.9 })
end

-- the schedulers' required arguments after the optimizer, by name: with keyword_form, make_sched
-- passes them as PyTorch's keyword arguments, in the options table
local REQUIRED = { StepLR = { 'step_size' }, MultiStepLR = { 'milestones' }, LambdaLR = { 'lr_lambda' },
  MultiplicativeLR = { 'lr_lambda' }, CosineAnnealingLR = { 'T_max' }, ExponentialLR = { 'gamma' },
  CosineAnnealingWarmRestarts = { 'T_0' }, OneCycleLR = { 'max_lr' }, CyclicLR = { 'base_lr', 'max_lr' },
  SequentialLR = { 'schedulers', 'milestones' } }
local keyword_form = false

local function make_sched(opt, spec)
  local subs = {}
  for i, s in ipairs(spec.subs or {}) do subs[i] = make_sched(opt, s) end
  if spec.sched == 'SequentialLR' then
    if keyword_form then return LS.SequentialLR(opt, { schedulers = subs, milestones = spec.milestones }) end
    return LS.SequentialLR(opt, subs, spec.milestones)
  end
  if spec.sched == 'ChainedScheduler' then return LS.ChainedScheduler(subs) end
  local args = { opt }
  for _, a in ipairs(spec.args or {}) do args[#args + 1] = a end
  if spec.lam then
    if type(spec.lam) == 'table' then
      local fs = {}
      for i, name in ipairs(spec.lam) do fs[i] = LAMBDAS[name] end
      args[#args + 1] = fs
    else
      args[#args + 1] = LAMBDAS[spec.lam]
    end
  end
  local opts = spec.opts
  if spec.scale_fn then
    opts = { scale_fn = LAMBDAS[spec.scale_fn] }
    for k, v in pairs(spec.opts) do opts[k] = v end
  end
  if opts then args[#args + 1] = opts end
  local names = REQUIRED[spec.sched]
  if keyword_form and names then
    local kw = {}
    for k, v in pairs(opts or {}) do kw[k] = v end
    for i, name in ipairs(names) do kw[name] = args[i + 1] end
    args = { opt, kw }
  end
  return LS[spec.sched](table.unpack(args, 1, #args))
end

local function momenta(opt)
  local m = {}
  for i, g in ipairs(opt.param_groups) do m[i] = g.betas and g.betas[1] or g.momentum end
  return m
end

describe('lr schedulers against PyTorch 1.13', function()
  for _, case in ipairs(REF.sched) do
    for _, kw in ipairs { false, true } do
      it(case.name .. (kw and ', the required arguments by name' or ''), function()
        keyword_form = kw
        local plateau = case.spec.sched == 'ReduceLROnPlateau'
        local function lrs_of(opt, s)
          if not plateau then return s:get_last_lr() end
          local lrs = {}
          for i, g in ipairs(opt.param_groups) do lrs[i] = g.lr end
          return lrs
        end
        local epochs = case.spec.epochs -- step(epoch): the closed form, or WarmRestarts' fractions
        local function step(s, e)
          if plateau then s:step(REF.plateau_metrics[e]) elseif epochs then s:step(epochs[e]) else s:step() end
        end
        local initial_lr = case.spec.opts ~= nil and case.spec.opts.last_epoch ~= nil
        local opt = make_opt(case.kind, initial_lr)
        local s = make_sched(opt, case.spec)
        H.near(case.lrs[1], lrs_of(opt, s), 1e-12, 'lr after the constructor')
        if case.moms then H.near(case.moms[1], momenta(opt), 1e-12, 'momentum after the constructor') end
        local opt2, s2
        for e = 1, REF.nepochs do
          opt:step()
          step(s, e)
          H.near(case.lrs[e + 1], lrs_of(opt, s), 1e-12, 'lr after step ' .. e)
          if case.moms then H.near(case.moms[e + 1], momenta(opt), 1e-12, 'momentum after step ' .. e) end
          if e == case.resume then
            opt2 = make_opt(case.kind, initial_lr)
            s2 = make_sched(opt2, case.spec)
            opt2:load_state_dict(opt:state_dict())
            s2:load_state_dict(s:state_dict())
          end
        end
        for e = case.resume + 1, REF.nepochs do
          opt2:step()
          step(s2, e)
          local want = case.resumed and case.resumed[e - case.resume] or case.lrs[e + 1]
          H.near(want, lrs_of(opt2, s2), 1e-12, 'resumed from the state dicts: lr after step ' .. e)
        end
        keyword_form = false
      end)
    end
  end
end)
