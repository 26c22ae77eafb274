-- torch.optim.lr_scheduler: LRScheduler and StepLR, MultiStepLR, LambdaLR, MultiplicativeLR,
-- ExponentialLR, ConstantLR, LinearLR, PolynomialLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
-- OneCycleLR, CyclicLR, SequentialLR, ChainedScheduler and ReduceLROnPlateau, with PyTorch's recursive
-- (chainable) formulas of get_lr, so the rates match PyTorch's to the last bit.
-- The constructor sets `initial_lr` on the groups (when last_epoch is -1) and takes the first step.
-- step() advances one epoch (step(epoch) jumps to an epoch with the closed form, where there is one);
-- get_last_lr() returns the rates of the groups; state_dict()/load_state_dict() carry every field but
-- the optimizer (and LambdaLR's functions).
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'
local as_int = require('torch.composite').as_int

local M = {}

local LRScheduler = Optimizer._new_class('LRScheduler')
M.LRScheduler = LRScheduler

local function check_optimizer(cname, opt)
  if type(opt) ~= 'table' or type(opt.param_groups) ~= 'table' then
    error(cname .. ': expected an optimizer, got ' .. type(opt))
  end
end

function LRScheduler:init(optimizer, last_epoch)
  check_optimizer(self.__name, optimizer)
  self.optimizer = optimizer
  last_epoch = last_epoch or -1
  if last_epoch == -1 then
    for _, group in ipairs(optimizer.param_groups) do
      if group.initial_lr == nil then group.initial_lr = group.lr end
    end
  else
    for i, group in ipairs(optimizer.param_groups) do
      if group.initial_lr == nil then
        error(("%s: param 'initial_lr' is not specified in param_groups[%d] when resuming an optimizer"):format(self.__name, i))
      end
    end
  end
  self.base_lrs = {}
  for i, group in ipairs(optimizer.param_groups) do self.base_lrs[i] = group.initial_lr end
  self.last_epoch = last_epoch
  self._step_count = 0
  self:step()
end

function LRScheduler:get_lr() error(self.__name .. ': get_lr is not implemented') end

function LRScheduler:_group_lrs()
  local lrs = {}
  for i, group in ipairs(self.optimizer.param_groups) do lrs[i] = group.lr end
  return lrs
end

function LRScheduler:step(epoch)
  self._step_count = self._step_count + 1
  local values
  if epoch == nil then
    self.last_epoch = self.last_epoch + 1
    values = self:get_lr()
  else
    self.last_epoch = epoch
    values = self._get_closed_form_lr and self:_get_closed_form_lr() or self:get_lr()
  end
  for i, group in ipairs(self.optimizer.param_groups) do group.lr = values[i] end
  self._last_lr = self:_group_lrs()
end

function LRScheduler:get_last_lr()
  local c = {}
  for i, v in ipairs(self._last_lr) do c[i] = v end
  return c
end

local function copy(v)
  if type(v) ~= 'table' then return v end
  local c = {}
  for k, x in pairs(v) do c[k] = copy(x) end
  return c
end

function LRScheduler:state_dict()
  local sd = {}
  for k, v in pairs(self) do
    if k ~= 'optimizer' and type(v) ~= 'function' and k ~= 'lr_lambdas' then sd[k] = copy(v) end
  end
  return sd
end

function LRScheduler:load_state_dict(sd)
  if type(sd) ~= 'table' then error(self.__name .. ': load_state_dict expects a table') end
  for k, v in pairs(sd) do
    if k ~= 'optimizer' and k ~= 'lr_lambdas' then self[k] = copy(v) end
  end
end

local function options(cname, opts, defaults)
  if opts ~= nil and type(opts) ~= 'table' then error(cname .. ': expected an options table, got ' .. type(opts)) end
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do
    if defaults[k] == nil then error(cname .. ": unknown option '" .. tostring(k) .. "'") end
    o[k] = v
  end
  return o
end

-- StepLR(optimizer, step_size, {gamma = 0.1, last_epoch = -1}): lr *= gamma every step_size epochs
local StepLR = LRScheduler:extend('StepLR')
M.StepLR = StepLR
function StepLR:init(optimizer, step_size, opts)
  local o = options('StepLR', opts, { gamma = 0.1, last_epoch = -1 })
  step_size = as_int(step_size)
  if math.type(step_size) ~= 'integer' then
    error('StepLR: step_size must be an integer, got ' .. tostring(step_size))
  end
  if step_size <= 0 then error('StepLR: step_size must be positive, got ' .. tostring(step_size)) end
  self.step_size, self.gamma = step_size, o.gamma
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function StepLR:get_lr()
  local lrs = self:_group_lrs()
  if self.last_epoch == 0 or self.last_epoch % self.step_size ~= 0 then return lrs end
  for i = 1, #lrs do lrs[i] = lrs[i] * self.gamma end
  return lrs
end
function StepLR:_get_closed_form_lr()
  local lrs = {}
  for i, b in ipairs(self.base_lrs) do lrs[i] = b * self.gamma ^ (self.last_epoch // self.step_size) end
  return lrs
end

-- MultiStepLR(optimizer, milestones, {gamma = 0.1, last_epoch = -1}): lr *= gamma at each milestone
-- (a milestone given twice counts twice)
local MultiStepLR = LRScheduler:extend('MultiStepLR')
M.MultiStepLR = MultiStepLR
function MultiStepLR:init(optimizer, milestones, opts)
  local o = options('MultiStepLR', opts, { gamma = 0.1, last_epoch = -1 })
  if type(milestones) ~= 'table' then error('MultiStepLR: milestones must be an array of epochs') end
  self.milestones = {}
  for _, m in ipairs(milestones) do self.milestones[m] = (self.milestones[m] or 0) + 1 end
  self.gamma = o.gamma
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function MultiStepLR:get_lr()
  local lrs = self:_group_lrs()
  local n = self.milestones[self.last_epoch]
  if n == nil then return lrs end
  for i = 1, #lrs do lrs[i] = lrs[i] * self.gamma ^ n end
  return lrs
end
function MultiStepLR:_get_closed_form_lr()
  local passed = 0
  for m, n in pairs(self.milestones) do
    if m <= self.last_epoch then passed = passed + n end
  end
  local lrs = {}
  for i, b in ipairs(self.base_lrs) do lrs[i] = b * self.gamma ^ passed end
  return lrs
end

-- LambdaLR(optimizer, lr_lambda, {last_epoch = -1}): lr = initial_lr * lr_lambda(epoch); lr_lambda is
-- a function or an array of one function per group
local LambdaLR = LRScheduler:extend('LambdaLR')
M.LambdaLR = LambdaLR
function LambdaLR:init(optimizer, lr_lambda, opts)
  local o = options('LambdaLR', opts, { last_epoch = -1 })
  check_optimizer('LambdaLR', optimizer)
  local n = #optimizer.param_groups
  if type(lr_lambda) == 'table' and getmetatable(lr_lambda) == nil then
    if #lr_lambda ~= n then error(('LambdaLR: Expected %d lr_lambdas, but got %d'):format(n, #lr_lambda)) end
    self.lr_lambdas = {}
    for i, f in ipairs(lr_lambda) do self.lr_lambdas[i] = f end
  else
    if lr_lambda == nil then error('LambdaLR: lr_lambda is required') end
    self.lr_lambdas = {}
    for i = 1, n do self.lr_lambdas[i] = lr_lambda end
  end
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function LambdaLR:get_lr()
  local lrs = {}
  for i, b in ipairs(self.base_lrs) do lrs[i] = b * self.lr_lambdas[i](self.last_epoch) end
  return lrs
end

-- CosineAnnealingLR(optimizer, T_max, {eta_min = 0, last_epoch = -1})
local CosineAnnealingLR = LRScheduler:extend('CosineAnnealingLR')
M.CosineAnnealingLR = CosineAnnealingLR
function CosineAnnealingLR:init(optimizer, T_max, opts)
  local o = options('CosineAnnealingLR', opts, { eta_min = 0, last_epoch = -1 })
  if type(T_max) ~= 'number' or T_max <= 0 then
    error('CosineAnnealingLR: T_max must be a positive number, got ' .. tostring(T_max))
  end
  self.T_max, self.eta_min = T_max, o.eta_min
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function CosineAnnealingLR:get_lr()
  local e, T, eta = self.last_epoch, self.T_max, self.eta_min
  local groups = self.optimizer.param_groups
  local lrs = {}
  if e == 0 then return self:_group_lrs() end
  if self._step_count == 1 and e > 0 then
    for i, b in ipairs(self.base_lrs) do
      lrs[i] = eta + (b - eta) * (1 + math.cos(e * math.pi / T)) / 2
    end
  elseif (e - 1 - T) % (2 * T) == 0 then
    for i, b in ipairs(self.base_lrs) do
      lrs[i] = groups[i].lr + (b - eta) * (1 - math.cos(math.pi / T)) / 2
    end
  else
    for i, group in ipairs(groups) do
      lrs[i] = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (group.lr - eta) + eta
    end
  end
  return lrs
end
function CosineAnnealingLR:_get_closed_form_lr()
  local lrs = {}
  for i, b in ipairs(self.base_lrs) do
    lrs[i] = self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
  end
  return lrs
end

-- a positive integer argument, or an error naming it
local function check_count(cname, what, v)
  v = as_int(v)
  if math.type(v) ~= 'integer' or v <= 0 then error(('%s: %s must be a positive integer, got %s'):format(cname, what, tostring(v))) end
  return v
end

-- MultiplicativeLR(optimizer, lr_lambda, {last_epoch = -1}): lr *= lr_lambda(epoch) at each step
local MultiplicativeLR = LRScheduler:extend('MultiplicativeLR')
M.MultiplicativeLR = MultiplicativeLR
function MultiplicativeLR:init(optimizer, lr_lambda, opts)
  local o = options('MultiplicativeLR', opts, { last_epoch = -1 })
  LambdaLR.init(self, optimizer, lr_lambda, o)
end
function MultiplicativeLR:get_lr()
  local lrs = self:_group_lrs()
  if self.last_epoch > 0 then
    for i = 1, #lrs do lrs[i] = lrs[i] * self.lr_lambdas[i](self.last_epoch) end
  end
  return lrs
end

-- ExponentialLR(optimizer, gamma, {last_epoch = -1}): lr *= gamma every epoch
local ExponentialLR = LRScheduler:extend('ExponentialLR')
M.ExponentialLR = ExponentialLR
function ExponentialLR:init(optimizer, gamma, opts)
  local o = options('ExponentialLR', opts, { last_epoch = -1 })
  if type(gamma) ~= 'number' then error('ExponentialLR: gamma must be a number, got ' .. tostring(gamma)) end
  self.gamma = gamma
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function ExponentialLR:get_lr()
  local lrs = self:_group_lrs()
  if self.last_epoch == 0 then return lrs end
  for i = 1, #lrs do lrs[i] = lrs[i] * self.gamma end
  return lrs
end
function ExponentialLR:_get_closed_form_lr()
  local lrs = {}
  for i, b in ipairs(self.base_lrs) do lrs[i] = b * self.gamma ^ self.last_epoch end
  return lrs
end

-- ConstantLR(optimizer, {factor = 1/3, total_iters = 5, last_epoch = -1}): lr * factor until epoch
-- total_iters, then lr
local ConstantLR = LRScheduler:extend('ConstantLR')
M.ConstantLR = ConstantLR
function ConstantLR:init(optimizer, opts)
  local o = options('ConstantLR', opts, { factor = 1.0 / 3, total_iters = 5, last_epoch = -1 })
  if type(o.factor) ~= 'number' or o.factor > 1 or o.factor < 0 then
    error('ConstantLR: Constant multiplicative factor expected to be between 0 and 1.')
  end
  self.factor, self.total_iters = o.factor, o.total_iters
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function ConstantLR:get_lr()
  local lrs = self:_group_lrs()
  local e = self.last_epoch
  if e == 0 then
    for i = 1, #lrs do lrs[i] = lrs[i] * self.factor end
  elseif e == self.total_iters then
    for i = 1, #lrs do lrs[i] = lrs[i] * (1.0 / self.factor) end
  end
  return lrs
end
function ConstantLR:_get_closed_form_lr()
  local lrs = {}
  local f = self.factor + (self.last_epoch >= self.total_iters and 1 or 0) * (1 - self.factor)
  for i, b in ipairs(self.base_lrs) do lrs[i] = b * f end
  return lrs
end

-- LinearLR(optimizer, {start_factor = 1/3, end_factor = 1, total_iters = 5, last_epoch = -1}): the
-- factor goes linearly from start_factor to end_factor over total_iters epochs (a warm-up)
local LinearLR = LRScheduler:extend('LinearLR')
M.LinearLR = LinearLR
function LinearLR:init(optimizer, opts)
  local o = options('LinearLR', opts, { start_factor = 1.0 / 3, end_factor = 1.0, total_iters = 5, last_epoch = -1 })
  if type(o.start_factor) ~= 'number' or o.start_factor > 1 or o.start_factor <= 0 then
    error('LinearLR: Starting multiplicative factor expected to be greater than 0 and less or equal to 1.')
  end
  if type(o.end_factor) ~= 'number' or o.end_factor > 1 or o.end_factor < 0 then
    error('LinearLR: Ending multiplicative factor expected to be between 0 and 1.')
  end
  o.total_iters = check_count('LinearLR', 'total_iters', o.total_iters)
  self.start_factor, self.end_factor, self.total_iters = o.start_factor, o.end_factor, o.total_iters
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function LinearLR:get_lr()
  local lrs = self:_group_lrs()
  local e, s, f, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
  if e == 0 then
    for i = 1, #lrs do lrs[i] = lrs[i] * s end
  elseif e <= n then
    for i = 1, #lrs do lrs[i] = lrs[i] * (1.0 + (f - s) / (n * s + (e - 1) * (f - s))) end
  end
  return lrs
end
function LinearLR:_get_closed_form_lr()
  local lrs = {}
  local s, f, n = self.start_factor, self.end_factor, self.total_iters
  for i, b in ipairs(self.base_lrs) do lrs[i] = b * (s + (f - s) * math.min(n, self.last_epoch) / n) end
  return lrs
end

-- PolynomialLR(optimizer, {total_iters = 5, power = 1, last_epoch = -1}): lr decays as
-- (1 - epoch / total_iters)^power to 0 at total_iters
local PolynomialLR = LRScheduler:extend('PolynomialLR')
M.PolynomialLR = PolynomialLR
function PolynomialLR:init(optimizer, opts)
  local o = options('PolynomialLR', opts, { total_iters = 5, power = 1.0, last_epoch = -1 })
  o.total_iters = check_count('PolynomialLR', 'total_iters', o.total_iters)
  self.total_iters, self.power = o.total_iters, o.power
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function PolynomialLR:get_lr()
  local lrs = self:_group_lrs()
  local e, n = self.last_epoch, self.total_iters
  if e == 0 or e > n then return lrs end
  local decay = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ^ self.power
  for i = 1, #lrs do lrs[i] = lrs[i] * decay end
  return lrs
end
function PolynomialLR:_get_closed_form_lr()
  local lrs = {}
  for i, b in ipairs(self.base_lrs) do
    lrs[i] = b * (1.0 - math.min(self.total_iters, self.last_epoch) / self.total_iters) ^ self.power
  end
  return lrs
end

-- CosineAnnealingWarmRestarts(optimizer, T_0, {T_mult = 1, eta_min = 0, last_epoch = -1}): cosine
-- annealing restarted after T_0 epochs, then T_0 * T_mult, ...; step(epoch) may take a fraction
local WarmRestarts = LRScheduler:extend('CosineAnnealingWarmRestarts')
M.CosineAnnealingWarmRestarts = WarmRestarts
function WarmRestarts:init(optimizer, T_0, opts)
  local o = options('CosineAnnealingWarmRestarts', opts, { T_mult = 1, eta_min = 0, last_epoch = -1 })
  T_0 = as_int(T_0)
  if math.type(T_0) ~= 'integer' or T_0 <= 0 then
    error('CosineAnnealingWarmRestarts: Expected positive integer T_0, but got ' .. tostring(T_0))
  end
  o.T_mult = as_int(o.T_mult)
  if math.type(o.T_mult) ~= 'integer' or o.T_mult < 1 then
    error('CosineAnnealingWarmRestarts: Expected integer T_mult >= 1, but got ' .. tostring(o.T_mult))
  end
  self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, o.T_mult, o.eta_min
  self.T_cur = o.last_epoch
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function WarmRestarts:get_lr()
  local lrs = {}
  for i, b in ipairs(self.base_lrs) do
    lrs[i] = self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
  end
  return lrs
end
function WarmRestarts:step(epoch)
  self._step_count = self._step_count + 1
  if epoch == nil and self.last_epoch < 0 then epoch = 0 end
  if epoch == nil then
    epoch = self.last_epoch + 1
    self.T_cur = self.T_cur + 1
    if self.T_cur >= self.T_i then
      self.T_cur = self.T_cur - self.T_i
      self.T_i = self.T_i * self.T_mult
    end
  else
    if type(epoch) ~= 'number' or epoch < 0 then
      error('CosineAnnealingWarmRestarts: Expected non-negative epoch, but got ' .. tostring(epoch))
    end
    if epoch >= self.T_0 then
      if self.T_mult == 1 then
        self.T_cur = math.fmod(epoch, self.T_0)
      else
        local n = math.floor(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
        self.T_cur = epoch - self.T_0 * (self.T_mult ^ n - 1) / (self.T_mult - 1)
        self.T_i = self.T_0 * self.T_mult ^ n
      end
    else
      self.T_i = self.T_0
      self.T_cur = epoch
    end
  end
  self.last_epoch = math.floor(epoch)
  local values = self:get_lr()
  for i, group in ipairs(self.optimizer.param_groups) do group.lr = values[i] end
  self._last_lr = self:_group_lrs()
end

-- OneCycleLR(optimizer, max_lr, {total_steps, epochs, steps_per_epoch, pct_start = 0.3,
-- anneal_strategy = 'cos', cycle_momentum = true, base_momentum = 0.85, max_momentum = 0.95,
-- div_factor = 25, final_div_factor = 1e4, three_phase = false, last_epoch = -1}): the 1cycle policy,
-- stepped after every batch; max_lr and the momenta may be arrays of one value per group
local OneCycleLR = LRScheduler:extend('OneCycleLR')
M.OneCycleLR = OneCycleLR
local function per_group(cname, what, v, n)
  if type(v) == 'table' then
    if #v ~= n then error(('%s: expected %d values for %s, got %d'):format(cname, n, what, #v)) end
    return v
  end
  if type(v) ~= 'number' then error(('%s: %s must be a number or an array of numbers, got %s'):format(cname, what, type(v))) end
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end
function OneCycleLR:init(optimizer, max_lr, opts)
  local cname = 'OneCycleLR'
  local o = options(cname, opts, { total_steps = false, epochs = false, steps_per_epoch = false, pct_start = 0.3,
    anneal_strategy = 'cos', cycle_momentum = true, base_momentum = 0.85, max_momentum = 0.95, div_factor = 25.0,
    final_div_factor = 1e4, three_phase = false, last_epoch = -1 })
  check_optimizer(cname, optimizer)
  local total = o.total_steps
  if total then
    total = check_count(cname, 'total_steps', total)
  elseif o.epochs and o.steps_per_epoch then
    o.epochs = check_count(cname, 'epochs', o.epochs)
    o.steps_per_epoch = check_count(cname, 'steps_per_epoch', o.steps_per_epoch)
    total = o.epochs * o.steps_per_epoch
  else
    error('OneCycleLR: You must define either total_steps OR (epochs AND steps_per_epoch)')
  end
  self.total_steps = total
  if type(o.pct_start) ~= 'number' or o.pct_start < 0 or o.pct_start > 1 then
    error('OneCycleLR: Expected float between 0 and 1 pct_start, but got ' .. tostring(o.pct_start))
  end
  if o.anneal_strategy ~= 'cos' and o.anneal_strategy ~= 'linear' then
    error("OneCycleLR: anneal_strategy must by one of 'cos' or 'linear', instead got " .. tostring(o.anneal_strategy))
  end
  self.anneal_strategy = o.anneal_strategy
  local p = o.pct_start
  if o.three_phase then
    self._phases = {
      { end_step = p * total - 1, start_lr = 'initial_lr', end_lr = 'max_lr', start_m = 'max_momentum', end_m = 'base_momentum' },
      { end_step = 2 * p * total - 2, start_lr = 'max_lr', end_lr = 'initial_lr', start_m = 'base_momentum', end_m = 'max_momentum' },
      { end_step = total - 1, start_lr = 'initial_lr', end_lr = 'min_lr', start_m = 'max_momentum', end_m = 'max_momentum' },
    }
  else
    self._phases = {
      { end_step = p * total - 1, start_lr = 'initial_lr', end_lr = 'max_lr', start_m = 'max_momentum', end_m = 'base_momentum' },
      { end_step = total - 1, start_lr = 'max_lr', end_lr = 'min_lr', start_m = 'base_momentum', end_m = 'max_momentum' },
    }
  end
  local groups = optimizer.param_groups
  local maxs = per_group(cname, 'max_lr', max_lr, #groups)
  if o.last_epoch == -1 then
    for i, g in ipairs(groups) do
      g.initial_lr = maxs[i] / o.div_factor
      g.lr = g.initial_lr
      g.max_lr = maxs[i]
      g.min_lr = g.initial_lr / o.final_div_factor
    end
  end
  self.cycle_momentum = o.cycle_momentum and true or false
  if self.cycle_momentum then
    local d = optimizer.defaults or {}
    if d.momentum == nil and d.betas == nil then
      error('OneCycleLR: optimizer must support momentum with `cycle_momentum` option enabled')
    end
    self.use_beta1 = d.betas ~= nil
    local bases = per_group(cname, 'base_momentum', o.base_momentum, #groups)
    local tops = per_group(cname, 'max_momentum', o.max_momentum, #groups)
    if o.last_epoch == -1 then
      for i, g in ipairs(groups) do
        if self.use_beta1 then g.betas = { tops[i], g.betas[2] } else g.momentum = tops[i] end
        g.max_momentum, g.base_momentum = tops[i], bases[i]
      end
    end
  end
  LRScheduler.init(self, optimizer, o.last_epoch)
end
function OneCycleLR:_anneal(a, b, pct)
  if self.anneal_strategy == 'cos' then return b + (a - b) / 2.0 * (math.cos(math.pi * pct) + 1) end
  return (b - a) * pct + a
end
function OneCycleLR:get_lr()
  local step = self.last_epoch
  if step > self.total_steps then
    error(('OneCycleLR: Tried to step %d times. The specified number of total steps is %d'):format(step + 1, self.total_steps))
  end
  local lrs = {}
  for i, g in ipairs(self.optimizer.param_groups) do
    local start = 0
    for k, ph in ipairs(self._phases) do
      if step <= ph.end_step or k == #self._phases then
        local pct = (step - start) / (ph.end_step - start)
        lrs[i] = self:_anneal(g[ph.start_lr], g[ph.end_lr], pct)
        if self.cycle_momentum then
          local m = self:_anneal(g[ph.start_m], g[ph.end_m], pct)
          if self.use_beta1 then g.betas = { m, g.betas[2] } else g.momentum = m end
        end
        break
      end
      start = ph.end_step
    end
  end
  return lrs
end

-- CyclicLR(optimizer, base_lr, max_lr, {step_size_up = 2000, step_size_down = step_size_up,
-- mode = 'triangular', gamma = 1, scale_fn, scale_mode = 'cycle', cycle_momentum = true,
-- base_momentum = 0.8, max_momentum = 0.9, last_epoch = -1}): the cyclical learning rate policy,
-- stepped after every batch, as PyTorch 1.13's: the rate rises from base_lr to max_lr in
-- step_size_up steps and falls back in step_size_down, the amplitude scaled by scale_fn of the
-- cycle (1-based) or of the step: 1 ('triangular'), halved each cycle ('triangular2'), gamma^step
-- ('exp_range'), or a function of the user's (not saved by state_dict). With cycle_momentum the
-- momentum moves the other way, between max_momentum and base_momentum. base_lr, max_lr and the
-- momenta may be arrays of one value per group.
local CyclicLR = LRScheduler:extend('CyclicLR')
M.CyclicLR = CyclicLR
local CYCLIC_SCALES = {
  triangular = { function() return 1.0 end, 'cycle' },
  triangular2 = { function(_, x) return 1 / (2.0 ^ (x - 1)) end, 'cycle' },
  exp_range = { function(self, x) return self.gamma ^ x end, 'iterations' },
}
function CyclicLR:init(optimizer, base_lr, max_lr, opts)
  local cname = 'CyclicLR'
  local o = options(cname, opts, { step_size_up = 2000, step_size_down = false, mode = 'triangular', gamma = 1.0,
    scale_fn = false, scale_mode = 'cycle', cycle_momentum = true, base_momentum = 0.8, max_momentum = 0.9,
    last_epoch = -1 })
  check_optimizer(cname, optimizer)
  local groups = optimizer.param_groups
  local base_lrs = per_group(cname, 'base_lr', base_lr, #groups)
  if o.last_epoch == -1 then
    for i, g in ipairs(groups) do g.lr = base_lrs[i] end
  end
  self.max_lrs = per_group(cname, 'max_lr', max_lr, #groups)
  for _, k in ipairs { 'step_size_up', 'step_size_down' } do
    if o[k] and (type(o[k]) ~= 'number' or o[k] <= 0) then
      error(('%s: %s must be a positive number, got %s'):format(cname, k, tostring(o[k])))
    end
  end
  local up = o.step_size_up + 0.0
  local down = o.step_size_down and o.step_size_down + 0.0 or up
  self.total_size = up + down
  self.step_ratio = up / self.total_size
  if o.scale_fn then
    if type(o.scale_fn) ~= 'function' then error(cname .. ': scale_fn must be a function, got ' .. type(o.scale_fn)) end
    if o.scale_mode ~= 'cycle' and o.scale_mode ~= 'iterations' then
      error(cname .. ": scale_mode must be 'cycle' or 'iterations', got " .. tostring(o.scale_mode))
    end
    self.scale_fn, self.scale_mode = o.scale_fn, o.scale_mode
  elseif not CYCLIC_SCALES[o.mode] then
    error(cname .. ": mode must be 'triangular', 'triangular2' or 'exp_range' when scale_fn is not given, got "
      .. tostring(o.mode))
  else
    self.scale_mode = CYCLIC_SCALES[o.mode][2]
  end
  self.mode, self.gamma = o.mode, o.gamma
  self.cycle_momentum = o.cycle_momentum and true or false
  if self.cycle_momentum then
    if (optimizer.defaults or {}).momentum == nil then
      error(cname .. ': optimizer must support momentum with `cycle_momentum` option enabled')
    end
    local bases = per_group(cname, 'base_momentum', o.base_momentum, #groups)
    if o.last_epoch == -1 then
      for i, g in ipairs(groups) do g.momentum = bases[i] end
    end
    self.base_momentums = {}
    for i, g in ipairs(groups) do self.base_momentums[i] = g.momentum end
    self.max_momentums = per_group(cname, 'max_momentum', o.max_momentum, #groups)
  end
  LRScheduler.init(self, optimizer, o.last_epoch)
  self.base_lrs = base_lrs
end
function CyclicLR:_scale(x)
  if self.scale_fn then return self.scale_fn(x) end
  return CYCLIC_SCALES[self.mode][1](self, x)
end
function CyclicLR:get_lr()
  local cycle = math.floor(1 + self.last_epoch / self.total_size)
  local x = 1.0 + self.last_epoch / self.total_size - cycle
  local factor = x <= self.step_ratio and x / self.step_ratio or (x - 1) / (self.step_ratio - 1)
  local scale = self:_scale(self.scale_mode == 'cycle' and cycle or self.last_epoch)
  local lrs = {}
  for i, base in ipairs(self.base_lrs) do lrs[i] = base + (self.max_lrs[i] - base) * factor * scale end
  if self.cycle_momentum then
    for i, g in ipairs(self.optimizer.param_groups) do
      local top = self.max_momentums[i]
      g.momentum = top - (top - self.base_momentums[i]) * factor * scale
    end
  end
  return lrs
end

-- SequentialLR(optimizer, schedulers, milestones, {last_epoch = -1}): schedulers[k] runs from
-- milestones[k - 1] on (each restarted there at its epoch 0)
local SequentialLR = LRScheduler:extend('SequentialLR')
M.SequentialLR = SequentialLR
function SequentialLR:init(optimizer, schedulers, milestones, opts)
  local o = options('SequentialLR', opts, { last_epoch = -1 })
  check_optimizer('SequentialLR', optimizer)
  if type(schedulers) ~= 'table' or #schedulers < 1 then error('SequentialLR: expected an array of schedulers') end
  for i, s in ipairs(schedulers) do
    if type(s) ~= 'table' or s.optimizer ~= optimizer then
      error(('SequentialLR: Sequential Schedulers expects all schedulers to belong to the same optimizer, but got '
        .. 'schedulers at index %d to be different than the optimizer passed in.'):format(i))
    end
  end
  if type(milestones) ~= 'table' or #milestones ~= #schedulers - 1 then
    error(('SequentialLR: Sequential Schedulers expects number of schedulers provided to be one more than the number '
      .. 'of milestone points, but got number of schedulers %d and the number of milestones to be equal to %d')
      :format(#schedulers, type(milestones) == 'table' and #milestones or 0))
  end
  self.optimizer = optimizer
  self._schedulers, self._milestones = schedulers, milestones
  self.last_epoch = o.last_epoch + 1
  for _, g in ipairs(optimizer.param_groups) do g.lr = g.initial_lr end
  for _, s in ipairs(schedulers) do s.last_epoch = s.last_epoch - 1 end
  schedulers[1]._step_count = 0
  schedulers[1]:step()
  self._last_lr = schedulers[1]:get_last_lr()
end
function SequentialLR:step()
  self.last_epoch = self.last_epoch + 1
  local idx = 1
  while idx <= #self._milestones and self._milestones[idx] <= self.last_epoch do idx = idx + 1 end
  local s = self._schedulers[idx]
  if idx > 1 and self._milestones[idx - 1] == self.last_epoch then s:step(0) else s:step() end
  self._last_lr = s:get_last_lr()
end
function SequentialLR:state_dict()
  local sd = { last_epoch = self.last_epoch, _milestones = copy(self._milestones), _schedulers = {} }
  for i, s in ipairs(self._schedulers) do sd._schedulers[i] = s:state_dict() end
  return sd
end
function SequentialLR:load_state_dict(sd)
  self.last_epoch = sd.last_epoch
  for i, s in ipairs(self._schedulers) do s:load_state_dict(sd._schedulers[i]) end
  self._last_lr = self._schedulers[1]:_group_lrs()
end

-- ChainedScheduler(schedulers): each step steps every one of them, in order
local ChainedScheduler = LRScheduler:extend('ChainedScheduler')
M.ChainedScheduler = ChainedScheduler
function ChainedScheduler:init(schedulers)
  if type(schedulers) ~= 'table' or #schedulers < 1 then error('ChainedScheduler: expected an array of schedulers') end
  for i = 2, #schedulers do
    if schedulers[i].optimizer ~= schedulers[1].optimizer then
      error(('ChainedScheduler: ChainedScheduler expects all schedulers to belong to the same optimizer, but got '
        .. 'schedulers at index %d and 1 to be different'):format(i))
    end
  end
  self._schedulers = schedulers
  self.optimizer = schedulers[1].optimizer
  self._last_lr = schedulers[#schedulers]:_group_lrs()
end
function ChainedScheduler:step()
  for _, s in ipairs(self._schedulers) do s:step() end
  self._last_lr = self._schedulers[#self._schedulers]:_group_lrs()
end
function ChainedScheduler:state_dict()
  local sd = { _schedulers = {} }
  for i, s in ipairs(self._schedulers) do sd._schedulers[i] = s:state_dict() end
  return sd
end
function ChainedScheduler:load_state_dict(sd)
  for i, s in ipairs(self._schedulers) do s:load_state_dict(sd._schedulers[i]) end
  self._last_lr = self._schedulers[#self._schedulers]:_group_lrs()
end

-- ReduceLROnPlateau(optimizer, {mode = 'min', factor = 0.1, patience = 10, threshold = 1e-4,
-- threshold_mode = 'rel', cooldown = 0, min_lr = 0, eps = 1e-8}): step(metric) after each
-- evaluation; the rates shrink by factor when the metric has not improved for patience epochs
local Plateau = Optimizer._new_class('ReduceLROnPlateau')
M.ReduceLROnPlateau = Plateau
function Plateau:init(optimizer, opts)
  local cname = 'ReduceLROnPlateau'
  local o = options(cname, opts, { mode = 'min', factor = 0.1, patience = 10, threshold = 1e-4, threshold_mode = 'rel',
    cooldown = 0, min_lr = 0, eps = 1e-8, verbose = false })
  check_optimizer(cname, optimizer)
  if type(o.factor) ~= 'number' or o.factor >= 1 then error('ReduceLROnPlateau: Factor should be < 1.0.') end
  if o.mode ~= 'min' and o.mode ~= 'max' then error('ReduceLROnPlateau: mode ' .. tostring(o.mode) .. ' is unknown!') end
  if o.threshold_mode ~= 'rel' and o.threshold_mode ~= 'abs' then
    error('ReduceLROnPlateau: threshold mode ' .. tostring(o.threshold_mode) .. ' is unknown!')
  end
  self.optimizer = optimizer
  self.min_lrs = per_group(cname, 'min_lr', o.min_lr, #optimizer.param_groups)
  self.factor, self.patience, self.cooldown, self.eps = o.factor, o.patience, o.cooldown, o.eps
  self.mode, self.threshold, self.threshold_mode = o.mode, o.threshold, o.threshold_mode
  self.best = o.mode == 'min' and math.huge or -math.huge
  self.num_bad_epochs, self.cooldown_counter, self.last_epoch = 0, 0, 0
  self._last_lr = LRScheduler._group_lrs(self)
end
function Plateau:is_better(a, best)
  local rel, t = self.threshold_mode == 'rel', self.threshold
  if self.mode == 'min' then
    if rel then return a < best * (1 - t) end
    return a < best - t
  end
  if rel then return a > best * (t + 1) end
  return a > best + t
end
function Plateau:step(metric)
  if torch.is_tensor(metric) then metric = metric:item() end
  if type(metric) ~= 'number' then error('ReduceLROnPlateau: step expects the metric (a number), got ' .. type(metric)) end
  self.last_epoch = self.last_epoch + 1
  if self:is_better(metric, self.best) then
    self.best, self.num_bad_epochs = metric, 0
  else
    self.num_bad_epochs = self.num_bad_epochs + 1
  end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.num_bad_epochs = 0
  end
  if self.num_bad_epochs > self.patience then
    for i, g in ipairs(self.optimizer.param_groups) do
      local old = g.lr
      local new = math.max(old * self.factor, self.min_lrs[i])
      if old - new > self.eps then g.lr = new end
    end
    self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
  end
  self._last_lr = LRScheduler._group_lrs(self)
end
Plateau.get_last_lr = LRScheduler.get_last_lr
Plateau.state_dict = LRScheduler.state_dict
Plateau.load_state_dict = LRScheduler.load_state_dict


-- PyTorch's keyword form of the required arguments: StepLR(opt, {step_size = 30, gamma = 0.5}) is
-- StepLR(opt, 30, {gamma = 0.5}), OneCycleLR(opt, {max_lr = 0.1, total_steps = 100}) is
-- OneCycleLR(opt, 0.1, {total_steps = 100}). When the argument after the optimizer is a plain table
-- holding the first required argument by name, and nothing follows it, the required arguments are
-- taken out of it and the rest are the options. (An array -- milestones, one max_lr a group -- has
-- no such key and stays positional.)
local function keyword_init(names, init)
  return function(self, optimizer, first, ...)
    if type(first) == 'table' and getmetatable(first) == nil and first[names[1]] ~= nil and
        select('#', ...) == 0 then
      local o, args = {}, {}
      for k, v in pairs(first) do o[k] = v end
      for i, name in ipairs(names) do args[i], o[name] = o[name], nil end
      args[#names + 1] = o
      return init(self, optimizer, table.unpack(args, 1, #names + 1))
    end
    return init(self, optimizer, first, ...)
  end
end
for cls, names in pairs { [StepLR] = { 'step_size' }, [MultiStepLR] = { 'milestones' }, [LambdaLR] = { 'lr_lambda' },
  [CosineAnnealingLR] = { 'T_max' }, [MultiplicativeLR] = { 'lr_lambda' }, [ExponentialLR] = { 'gamma' },
  [WarmRestarts] = { 'T_0' }, [OneCycleLR] = { 'max_lr' }, [CyclicLR] = { 'base_lr', 'max_lr' },
  [SequentialLR] = { 'schedulers', 'milestones' } } do
  cls.init = keyword_init(names, cls.init)
end

return M
