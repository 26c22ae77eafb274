-- The random functions composed in Lua from the generator's in-place samplers: torch.normal with
-- PyTorch's four overloads, torch.poisson and torch.binomial. Each takes a trailing {generator = g}.
local torch = require 'torch'
local C = require 'torch.composite'
local check_tensor, broadcast_shape = C.check_tensor, C.broadcast_shape

-- the {generator = g} table passed on to the in-place samplers ({} for the default generator)
local function gen_opts(opts, op)
  if opts == nil then return {} end
  if type(opts) ~= 'table' or torch.is_tensor(opts) then
    error(op .. ': expected an options table {generator = g} last, got ' .. type(opts), 3)
  end
  return { generator = opts.generator }
end

-- PyTorch's gradient of normal: zeros for the tensor parameters (the draw is not reparameterised),
-- so the result requires grad when a parameter does
local function zero_grad_of(out, ...)
  for _, t in ipairs { ... } do
    if torch.is_tensor(t) and t.requires_grad then out = out + (t - t:detach()) * 0 end
  end
  return out
end

--- torch.normal(mean, std[, {generator}]) with a tensor mean or std (or both, broadcast), or
--- torch.normal(mean, std, size[, {generator, dtype, device, requires_grad}]) with numbers: drawn
--- as PyTorch (normal_(0, std) then + mean, or normal_(0, 1) * std + mean), so the same seed gives
--- PyTorch's values.
function torch.normal(mean, std, a, b)
  local mt, st = torch.is_tensor(mean), torch.is_tensor(std)
  if not mt and not st then
    if type(mean) ~= 'number' or type(std) ~= 'number' or a == nil then
      error('normal: expected (mean, std) with a tensor, or (mean, std, size) with numbers', 2)
    end
    local o = b or {}
    local opts = { dtype = o.dtype, device = o.device }
    local out = torch.empty(a, opts):normal_(mean, std, gen_opts(o, 'normal'))
    if o.requires_grad then out:requires_grad_() end
    return out
  end
  if b ~= nil or (a ~= nil and type(a) ~= 'table') then error('normal: too many arguments', 2) end
  local g = gen_opts(a, 'normal')
  if mt then check_tensor(mean, 'normal') end
  if st then check_tensor(std, 'normal') end
  if not mt and type(mean) ~= 'number' then error('normal: mean must be a number or a tensor', 2) end
  if not st and type(std) ~= 'number' then error('normal: std must be a number or a tensor', 2) end
  local out
  torch.no_grad(function()
    if mt and not st then
      if std < 0 then error('normal expects std >= 0.0, but found std ' .. std, 4) end
      out = torch.empty(mean.shape, { dtype = mean.dtype, device = mean.device }):normal_(0, std, g):add_(mean)
    else
      if not std:ge(0):all():item() then error('normal expects all elements of std >= 0.0', 4) end
      local ref = mt and mean or std
      local shape = mt and broadcast_shape({ mean.shape, std.shape }, 'normal', 4) or std.shape
      local dtype = mt and torch.result_type(mean, std) or std.dtype
      out = torch.empty(shape, { dtype = dtype, device = ref.device }):normal_(0, 1, g):mul_(std):add_(mean)
    end
  end)
  return zero_grad_of(out, mean, std)
end

--- torch.poisson(rates[, {generator}]): Poisson draws of rates' shape and dtype (the
--- distributions' sampler; no gradient)
function torch.poisson(rates, opts)
  check_tensor(rates, 'poisson')
  if not rates:ge(0):all():item() then error('poisson: rates must be non-negative', 2) end
  return require('torch.distributions.samplers').poisson(rates, gen_opts(opts, 'poisson').generator)
end

-- binomial's result: requires grad where an input does, as PyTorch's, whose derivative is not
-- implemented
local Binomial = torch.autograd.Function:extend('BinomialBackward0')
Binomial.once_differentiable = true
function Binomial.forward(_, _, _, out) return out end
function Binomial.backward()
  error("binomial: the derivative for 'binomial' is not implemented (nor in PyTorch 1.13)", 0)
end

--- torch.binomial(count, prob[, {generator}]): Binomial(count, prob) draws (the number of successes
--- in count trials of probability prob), of the broadcast shape and the inputs' dtype (float32 or
--- float64, the same for both; float16 and bfloat16 on CUDA only, as PyTorch's). prob at or below 0
--- gives 0, at or above 1 gives count, count <= 0 gives 0, a NaN prob NaN, as PyTorch's; the
--- distributions' sampler (inversion below count min(p, 1 - p) = 10, BTRS above).
function torch.binomial(count, prob, opts)
  local op = 'binomial'
  check_tensor(count, op, 'count')
  check_tensor(prob, op, 'prob')
  local g = gen_opts(opts, op).generator
  if count.dtype ~= prob.dtype then
    error(string.format('%s: expected count and prob to have the same dtype, got %s and %s', op, tostring(count.dtype),
      tostring(prob.dtype)), 2)
  end
  if count.device ~= prob.device then
    error(string.format('%s: expected all tensors to be on the same device, but found at least two devices, %s and %s',
      op, tostring(count.device), tostring(prob.device)), 2)
  end
  local dt = count.dtype
  local half = dt == torch.float16 or dt == torch.bfloat16
  if not (dt == torch.float32 or dt == torch.float64 or (half and count.device.type == 'cuda')) then
    error(string.format('%s: not implemented for %s on %s (expected float32 or float64)', op, tostring(dt),
      count.device.type), 2)
  end
  broadcast_shape({ count.shape, prob.shape }, op, 3)
  local out = torch.no_grad(function()
    local S = require 'torch.distributions.samplers'
    local n, p = count:double(), prob:double()
    -- prob outside [0, 1] as PyTorch's sampler: at or below 0 none, at or above 1 all
    return S.binomial(n, p, g):to(dt)
  end)
  if (count.requires_grad or prob.requires_grad) and torch.is_grad_enabled() then
    return Binomial.apply(count, prob, out)
  end
  return out
end
