-- torch.optim.lr_scheduler: LRScheduler and StepLR, MultiStepLR, LambdaLR, CosineAnnealingLR, with
-- PyTorch's recursive (chainable) formulas of get_lr, so the rates match PyTorch's to the last bit.
-- The constructor sets `initial_lr` on the groups (when last_epoch is -1) and takes the first step.
-- step() advances one epoch (step(epoch) jumps to an epoch with the closed form, where there is one);
-- get_last_lr() returns the rates of the groups; state_dict()/load_state_dict() carry every field but
-- the optimizer (and LambdaLR's functions).
local Optimizer = require 'torch.optim.optimizer'

local fail = Optimizer._fail
local M = {}

local LRScheduler = Optimizer._new_class('LRScheduler')
M.LRScheduler = LRScheduler

local function check_optimizer(cname, opt)
  if type(opt) ~= 'table' or type(opt.param_groups) ~= 'table' then
    fail(cname .. ': expected an optimizer, got ' .. type(opt))
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
        fail(("%s: param 'initial_lr' is not specified in param_groups[%d] when resuming an optimizer"):format(self.__name, i))
      end
    end
  end
  self.base_lrs = {}
  for i, group in ipairs(optimizer.param_groups) do self.base_lrs[i] = group.initial_lr end
  self.last_epoch = last_epoch
  self._step_count = 0
  self:step()
end

function LRScheduler:get_lr() fail(self.__name .. ': get_lr is not implemented') end

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
  if type(sd) ~= 'table' then fail(self.__name .. ': load_state_dict expects a table') end
  for k, v in pairs(sd) do
    if k ~= 'optimizer' and k ~= 'lr_lambdas' then self[k] = copy(v) end
  end
end

local function options(cname, opts, defaults)
  if opts ~= nil and type(opts) ~= 'table' then fail(cname .. ': expected an options table, got ' .. type(opts)) end
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do
    if defaults[k] == nil then fail(cname .. ": unknown option '" .. tostring(k) .. "'") end
    o[k] = v
  end
  return o
end

-- StepLR(optimizer, step_size, {gamma = 0.1, last_epoch = -1}): lr *= gamma every step_size epochs
local StepLR = LRScheduler:extend('StepLR')
M.StepLR = StepLR
function StepLR:init(optimizer, step_size, opts)
  local o = options('StepLR', opts, { gamma = 0.1, last_epoch = -1 })
  if math.type(step_size) ~= 'integer' and not (type(step_size) == 'number' and step_size == math.floor(step_size)) then
    fail('StepLR: step_size must be an integer, got ' .. tostring(step_size))
  end
  if step_size <= 0 then fail('StepLR: step_size must be positive, got ' .. tostring(step_size)) end
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
  if type(milestones) ~= 'table' then fail('MultiStepLR: milestones must be an array of epochs') end
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
    if #lr_lambda ~= n then fail(('LambdaLR: Expected %d lr_lambdas, but got %d'):format(n, #lr_lambda)) end
    self.lr_lambdas = {}
    for i, f in ipairs(lr_lambda) do self.lr_lambdas[i] = f end
  else
    if lr_lambda == nil then fail('LambdaLR: lr_lambda is required') end
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
    fail('CosineAnnealingLR: T_max must be a positive number, got ' .. tostring(T_max))
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

return M
