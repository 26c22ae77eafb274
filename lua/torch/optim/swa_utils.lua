-- torch.optim.swa_utils: stochastic weight averaging, as PyTorch 1.13's.
--   AveragedModel(model, {device, avg_fn, use_buffers = false}) (or (model, device)): a module
--     holding a deep copy of model (`.module`, moved to device when given) and the buffer n_averaged
--     (an int64 scalar); forward calls the copy. update_parameters(model) copies model's parameters
--     into the copy the first time, then sets each to avg_fn(averaged, current, n_averaged) (default:
--     the running mean averaged + (current - averaged) / (n_averaged + 1)); with use_buffers, the
--     buffers are averaged the same way (else they stay those of the copy).
--   SWALR(optimizer, swa_lr, {anneal_epochs = 10, anneal_strategy = 'cos' | 'linear', last_epoch = -1})
--     (also SWALR(optimizer, {swa_lr = ..., ...})): an lr scheduler that anneals each group's rate
--     from its value to swa_lr (a number, or one per group) over anneal_epochs steps, then keeps it:
--     lr_t = swa_lr * a(t) + lr_0 * (1 - a(t)), t = min(1, step / anneal_epochs), with
--     a(t) = (1 - cos(pi t)) / 2 or t; PyTorch's recursive form, which recovers lr_0 from the current rate.
--   update_bn(loader, model, device): resets the running statistics of model's BatchNorm layers and
--     recomputes them over one pass of loader as cumulative averages (momentum nil), in training mode
--     and without grad; then restores the momenta and the training mode. loader is a DataLoader (or
--     anything with :iter()), an array of batches or an iterator function; a batch that is a table
--     gives its first element, the input.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Optimizer = require 'torch.optim.optimizer'
local lr_scheduler = require 'torch.optim.lr_scheduler'
local isinstance = require('torch.class').isinstance
local as_int = require('torch.composite').as_int

local M = {}

local function is_device(v)
  local mt = getmetatable(v)
  return type(v) == 'userdata' and type(mt) == 'table' and rawget(mt, '__name') == 'torch.device'
end

-- ---- AveragedModel ----
local AveragedModel = Module:extend('AveragedModel')
M.AveragedModel = AveragedModel

local function default_avg_fn(averaged, current, num_averaged)
  return averaged + (current - averaged) / (num_averaged + 1)
end

local allowed = { device = true, avg_fn = true, use_buffers = true }

function AveragedModel:init(model, opts)
  if not Module.is_module(model) then error('AveragedModel: expected a module, got ' .. type(model)) end
  local o = {}
  if is_device(opts) or type(opts) == 'string' then
    o.device = opts
  elseif type(opts) == 'table' then
    for k, v in pairs(opts) do
      if not allowed[k] then error("AveragedModel: unknown option '" .. tostring(k) .. "'") end
      o[k] = v
    end
  elseif opts ~= nil then
    error('AveragedModel: expected a device or an options table, got ' .. type(opts))
  end
  local copy = model:_deepcopy()
  if o.device ~= nil then copy:to(o.device) end
  self.module = copy
  self:register_buffer('n_averaged', torch.tensor(0, { dtype = torch.int64, device = o.device }))
  self.avg_fn = o.avg_fn or default_avg_fn
  self.use_buffers = o.use_buffers and true or false
end

function AveragedModel:forward(...) return self.module(...) end

local function concat(a, b)
  local c = {}
  for i, v in ipairs(a) do c[i] = v end
  for _, v in ipairs(b) do c[#c + 1] = v end
  return c
end

-- avg:update_parameters(model): the first call copies model's parameters (and buffers with
-- use_buffers), later ones set each to avg_fn(averaged, current, n_averaged); n_averaged += 1
function AveragedModel:update_parameters(model)
  if not Module.is_module(model) then error('AveragedModel.update_parameters: expected a module, got ' .. type(model)) end
  local mine, theirs
  if self.use_buffers then
    mine = concat(self.module:parameters(), self.module:buffers())
    theirs = concat(model:parameters(), model:buffers())
  else
    mine, theirs = self:parameters(), model:parameters()
  end
  local n = self.n_averaged
  local first = n:item() == 0
  torch.no_grad(function()
    for i = 1, math.min(#mine, #theirs) do
      local p_swa = mine[i]
      local device = p_swa.device
      local p_model = theirs[i]:detach():to(device)
      if first then
        p_swa:detach():copy_(p_model)
      else
        p_swa:detach():copy_(self.avg_fn(p_swa:detach(), p_model, n:to(device)))
      end
    end
    n:add_(1)
  end)
end

-- ---- SWALR ----
local LRScheduler = lr_scheduler.LRScheduler
local SWALR = LRScheduler:extend('SWALR')
M.SWALR = SWALR

local swalr_defaults = { swa_lr = true, anneal_epochs = true, anneal_strategy = true, last_epoch = true }

function SWALR:init(optimizer, swa_lr, opts)
  if type(swa_lr) == 'table' and swa_lr.swa_lr ~= nil and opts == nil then swa_lr, opts = swa_lr.swa_lr, swa_lr end
  if opts ~= nil and type(opts) ~= 'table' then error('SWALR: expected an options table, got ' .. type(opts)) end
  opts = opts or {}
  for k in pairs(opts) do
    if not swalr_defaults[k] then error("SWALR: unknown option '" .. tostring(k) .. "'") end
  end
  if type(optimizer) ~= 'table' or type(optimizer.param_groups) ~= 'table' then
    error('SWALR: expected an optimizer, got ' .. type(optimizer))
  end
  local groups = optimizer.param_groups
  local lrs = {}
  if type(swa_lr) == 'table' then
    if #swa_lr ~= #groups then
      error(('SWALR: swa_lr must have the same length as optimizer.param_groups: swa_lr has %d, '
        .. 'optimizer.param_groups has %d'):format(#swa_lr, #groups))
    end
    for i, v in ipairs(swa_lr) do lrs[i] = v end
  else
    for i = 1, #groups do lrs[i] = swa_lr end
  end
  for i, v in ipairs(lrs) do
    if type(v) ~= 'number' then error('SWALR: swa_lr must be a number or an array of numbers, got ' .. tostring(v)) end
    groups[i].swa_lr = v
  end
  local strategy = opts.anneal_strategy or 'cos'
  if strategy ~= 'cos' and strategy ~= 'linear' then
    error("SWALR: anneal_strategy must by one of 'cos' or 'linear', instead got " .. tostring(strategy))
  end
  local epochs = opts.anneal_epochs
  if epochs == nil then epochs = 10 end
  epochs = as_int(epochs)
  if math.type(epochs) ~= 'integer' or epochs < 0 then
    error('SWALR: anneal_epochs must be equal or greater than 0, got ' .. tostring(epochs))
  end
  self.anneal_strategy, self.anneal_epochs = strategy, epochs
  LRScheduler.init(self, optimizer, opts.last_epoch)
end

function SWALR:_anneal(t)
  if self.anneal_strategy == 'linear' then return t end
  return (1 - math.cos(math.pi * t)) / 2
end

local function initial_lr(lr, swa_lr, alpha)
  if alpha == 1 then return swa_lr end
  return (lr - alpha * swa_lr) / (1 - alpha)
end

function SWALR:get_lr()
  local step = self._step_count - 1
  local epochs = self.anneal_epochs
  if epochs == 0 then step = math.max(1, step) end
  local prev_alpha = self:_anneal(math.max(0, math.min(1, (step - 1) / math.max(1, epochs))))
  local alpha = self:_anneal(math.max(0, math.min(1, step / math.max(1, epochs))))
  local lrs = {}
  for i, group in ipairs(self.optimizer.param_groups) do
    local prev = initial_lr(group.lr, group.swa_lr, prev_alpha)
    lrs[i] = group.swa_lr * alpha + prev * (1 - alpha)
  end
  return lrs
end

-- ---- update_bn ----
local function is_batch_norm(m)
  local norm = require 'torch.nn.normalization'
  return isinstance(m, norm._BatchNorm) and not isinstance(m, norm._InstanceNorm)
end

-- calls fn(input) for each batch of loader
local function each_input(loader, fn)
  local function visit(batch)
    if type(batch) == 'table' and not torch.is_tensor(batch) then batch = batch[1] end
    fn(batch)
  end
  if type(loader) == 'function' then
    for batch in loader do visit(batch) end
  elseif type(loader) == 'table' and type(loader.iter) == 'function' then
    for batch in loader:iter() do visit(batch) end
  elseif type(loader) == 'table' then
    for _, batch in ipairs(loader) do visit(batch) end
  else
    error('update_bn: expected a DataLoader, an array of batches or an iterator, got ' .. type(loader))
  end
end

-- update_bn(loader, model, device): recomputes the running statistics of model's BatchNorm layers
-- over one pass of loader (cumulative averages), then restores their momenta and model's mode
function M.update_bn(loader, model, device)
  if not Module.is_module(model) then error('update_bn: expected a module, got ' .. type(model)) end
  local bns, momenta = {}, {}
  for _, m in ipairs(model:modules()) do
    if is_batch_norm(m) and m.running_mean ~= nil then
      bns[#bns + 1] = m
      momenta[#bns] = m.momentum
      torch.no_grad(function()
        m.running_mean:zero_()
        m.running_var:fill_(1)
      end)
    end
  end
  if #bns == 0 then return end
  local was_training = model.training
  model:train()
  for _, m in ipairs(bns) do
    m.momentum = nil -- a cumulative average
    if m.num_batches_tracked ~= nil then torch.no_grad(function() m.num_batches_tracked:zero_() end) end
  end
  local ok, err = pcall(torch.no_grad, function()
    each_input(loader, function(input)
      if device ~= nil then input = input:to(device) end
      model(input)
    end)
  end)
  for i, m in ipairs(bns) do m.momentum = momenta[i] end
  model:train(was_training)
  if not ok then error(err, 0) end
end

return M
