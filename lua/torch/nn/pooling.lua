-- nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d, nn.LPPool2d, nn.MaxUnpool2d and
-- their 1-D forms, and the 3-D (volumetric) MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d
-- and MaxUnpool3d, over torch.nn.functional.
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'
local as_int = require('torch.composite').as_int

local M = {}
local pyrepr = Module._pyrepr

-- a number or a pair (a triple when n is 3), kept as given (the repr prints it as given)
local function size_arg(v, name, op, allow_nil_entries, n)
  n = n or 2
  v = as_int(v)
  if math.type(v) == 'integer' then return v end
  if type(v) == 'table' and #v <= n then
    local ok, t = true, {}
    for i = 1, n do
      local e = as_int(v[i])
      if not (math.type(e) == 'integer' or (allow_nil_entries and e == nil)) then ok = false end
      t[i] = e
    end
    if ok then return t end
  end
  error(string.format('%s: %s must be an integer or %s of integers, got %s', op, name,
    n == 3 and 'a triple {d, h, w}' or 'a pair {h, w}', tostring(v)), 4)
end

-- MaxPool2d(kernel_size, {stride = kernel_size, padding = 0, dilation = 1, return_indices = false,
-- ceil_mode = false})
local MaxPool2d = Module:extend('MaxPool2d')
M.MaxPool2d = MaxPool2d

function MaxPool2d:init(kernel_size, o)
  o = o or {}
  self.kernel_size = size_arg(kernel_size, 'kernel_size', 'MaxPool2d')
  self.stride = o.stride ~= nil and size_arg(o.stride, 'stride', 'MaxPool2d') or self.kernel_size
  self.padding = size_arg(o.padding or 0, 'padding', 'MaxPool2d')
  self.dilation = size_arg(o.dilation or 1, 'dilation', 'MaxPool2d')
  self.return_indices = o.return_indices or false
  self.ceil_mode = o.ceil_mode or false
end

function MaxPool2d:forward(x)
  return F.max_pool2d(x, self.kernel_size, { stride = self.stride, padding = self.padding,
    dilation = self.dilation, ceil_mode = self.ceil_mode, return_indices = self.return_indices })
end

function MaxPool2d:extra_repr()
  return string.format('kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s', pyrepr(self.kernel_size),
    pyrepr(self.stride), pyrepr(self.padding), pyrepr(self.dilation), pyrepr(self.ceil_mode))
end

-- AvgPool2d(kernel_size, {stride = kernel_size, padding = 0, ceil_mode = false, count_include_pad = true,
-- divisor_override})
local AvgPool2d = Module:extend('AvgPool2d')
M.AvgPool2d = AvgPool2d

function AvgPool2d:init(kernel_size, o)
  o = o or {}
  self.kernel_size = size_arg(kernel_size, 'kernel_size', 'AvgPool2d')
  self.stride = o.stride ~= nil and size_arg(o.stride, 'stride', 'AvgPool2d') or self.kernel_size
  self.padding = size_arg(o.padding or 0, 'padding', 'AvgPool2d')
  self.ceil_mode = o.ceil_mode or false
  if o.count_include_pad == nil then self.count_include_pad = true else self.count_include_pad = o.count_include_pad end
  self.divisor_override = o.divisor_override
end

function AvgPool2d:forward(x)
  return F.avg_pool2d(x, self.kernel_size, { stride = self.stride, padding = self.padding,
    ceil_mode = self.ceil_mode, count_include_pad = self.count_include_pad, divisor_override = self.divisor_override })
end

function AvgPool2d:extra_repr()
  return string.format('kernel_size=%s, stride=%s, padding=%s', pyrepr(self.kernel_size), pyrepr(self.stride),
    pyrepr(self.padding))
end

-- AdaptiveAvgPool2d(output_size): a number or {h, w}, where a nil entry keeps the input's size
local AdaptiveAvgPool2d = Module:extend('AdaptiveAvgPool2d')
M.AdaptiveAvgPool2d = AdaptiveAvgPool2d

function AdaptiveAvgPool2d:init(output_size)
  self.output_size = size_arg(output_size, 'output_size', 'AdaptiveAvgPool2d', true)
end

function AdaptiveAvgPool2d:forward(x) return F.adaptive_avg_pool2d(x, self.output_size) end

function AdaptiveAvgPool2d:extra_repr()
  local s = self.output_size
  if type(s) == 'table' then
    return string.format('output_size=(%s, %s)', pyrepr(s[1]), pyrepr(s[2]))
  end
  return 'output_size=' .. pyrepr(s)
end

-- an integer or a 1-tuple {n}
local function single_arg(v, name, op)
  if type(v) == 'table' and #v == 1 then v = v[1] end
  v = as_int(v)
  if math.type(v) ~= 'integer' then
    error(string.format('%s: %s must be an integer or a 1-tuple {n}, got %s', op, name, tostring(v)), 4)
  end
  return v
end

-- MaxPool1d(kernel_size, {stride = kernel_size, padding = 0, dilation = 1, return_indices = false,
-- ceil_mode = false})
local MaxPool1d = Module:extend('MaxPool1d')
M.MaxPool1d = MaxPool1d
function MaxPool1d:init(kernel_size, o)
  o = o or {}
  self.kernel_size = single_arg(kernel_size, 'kernel_size', 'MaxPool1d')
  self.stride = o.stride ~= nil and single_arg(o.stride, 'stride', 'MaxPool1d') or self.kernel_size
  self.padding = single_arg(o.padding or 0, 'padding', 'MaxPool1d')
  self.dilation = single_arg(o.dilation or 1, 'dilation', 'MaxPool1d')
  self.return_indices = o.return_indices or false
  self.ceil_mode = o.ceil_mode or false
end
MaxPool1d.extra_repr = MaxPool2d.extra_repr
function MaxPool1d:forward(x)
  return F.max_pool1d(x, self.kernel_size, { stride = self.stride, padding = self.padding,
    dilation = self.dilation, ceil_mode = self.ceil_mode, return_indices = self.return_indices })
end

-- AvgPool1d(kernel_size, {stride = kernel_size, padding = 0, ceil_mode = false, count_include_pad = true});
-- sizes kept as 1-tuples, as PyTorch's (its repr prints (3,))
local AvgPool1d = Module:extend('AvgPool1d')
M.AvgPool1d = AvgPool1d
function AvgPool1d:init(kernel_size, o)
  o = o or {}
  self.kernel_size = { single_arg(kernel_size, 'kernel_size', 'AvgPool1d') }
  self.stride = { o.stride ~= nil and single_arg(o.stride, 'stride', 'AvgPool1d') or self.kernel_size[1] }
  self.padding = { single_arg(o.padding or 0, 'padding', 'AvgPool1d') }
  self.ceil_mode = o.ceil_mode or false
  if o.count_include_pad == nil then self.count_include_pad = true else self.count_include_pad = o.count_include_pad end
end
AvgPool1d.extra_repr = AvgPool2d.extra_repr
function AvgPool1d:forward(x)
  return F.avg_pool1d(x, self.kernel_size, { stride = self.stride, padding = self.padding, ceil_mode = self.ceil_mode,
    count_include_pad = self.count_include_pad })
end

-- AdaptiveAvgPool1d(output_size)
local AdaptiveAvgPool1d = Module:extend('AdaptiveAvgPool1d')
M.AdaptiveAvgPool1d = AdaptiveAvgPool1d
function AdaptiveAvgPool1d:init(output_size) self.output_size = single_arg(output_size, 'output_size', 'AdaptiveAvgPool1d') end
function AdaptiveAvgPool1d:forward(x) return F.adaptive_avg_pool1d(x, self.output_size) end
function AdaptiveAvgPool1d:extra_repr() return 'output_size=' .. pyrepr(self.output_size) end

-- AdaptiveMaxPool2d(output_size, {return_indices = false}) (or AdaptiveMaxPool2d(output_size, true)):
-- output_size a number or {h, w}, where a nil entry keeps the input's size
local AdaptiveMaxPool2d = Module:extend('AdaptiveMaxPool2d')
M.AdaptiveMaxPool2d = AdaptiveMaxPool2d
local function return_indices_of(o, op)
  if type(o) == 'table' then return F._opts_of(o, op, { 'return_indices' }, 4).return_indices and true or false end
  return o and true or false
end
function AdaptiveMaxPool2d:init(output_size, o)
  self.output_size = size_arg(output_size, 'output_size', 'AdaptiveMaxPool2d', true)
  self.return_indices = return_indices_of(o, 'AdaptiveMaxPool2d')
end
function AdaptiveMaxPool2d:forward(x) return F.adaptive_max_pool2d(x, self.output_size, self.return_indices) end
AdaptiveMaxPool2d.extra_repr = AdaptiveAvgPool2d.extra_repr

-- AdaptiveMaxPool1d(output_size, {return_indices = false})
local AdaptiveMaxPool1d = Module:extend('AdaptiveMaxPool1d')
M.AdaptiveMaxPool1d = AdaptiveMaxPool1d
function AdaptiveMaxPool1d:init(output_size, o)
  self.output_size = single_arg(output_size, 'output_size', 'AdaptiveMaxPool1d')
  self.return_indices = return_indices_of(o, 'AdaptiveMaxPool1d')
end
function AdaptiveMaxPool1d:forward(x) return F.adaptive_max_pool1d(x, self.output_size, self.return_indices) end
AdaptiveMaxPool1d.extra_repr = AdaptiveAvgPool1d.extra_repr

-- MaxPool3d(kernel_size, {stride = kernel_size, padding = 0, dilation = 1, return_indices = false,
-- ceil_mode = false}): sizes integers or triples {d, h, w}
local MaxPool3d = Module:extend('MaxPool3d')
M.MaxPool3d = MaxPool3d
function MaxPool3d:init(kernel_size, o)
  o = F._opts_of(o, 'MaxPool3d', { 'stride', 'padding', 'dilation', 'return_indices', 'ceil_mode' }, 4)
  self.kernel_size = size_arg(kernel_size, 'kernel_size', 'MaxPool3d', false, 3)
  self.stride = o.stride ~= nil and size_arg(o.stride, 'stride', 'MaxPool3d', false, 3) or self.kernel_size
  self.padding = size_arg(o.padding or 0, 'padding', 'MaxPool3d', false, 3)
  self.dilation = size_arg(o.dilation or 1, 'dilation', 'MaxPool3d', false, 3)
  self.return_indices = o.return_indices or false
  self.ceil_mode = o.ceil_mode or false
end
MaxPool3d.extra_repr = MaxPool2d.extra_repr
function MaxPool3d:forward(x)
  return F.max_pool3d(x, self.kernel_size, { stride = self.stride, padding = self.padding,
    dilation = self.dilation, ceil_mode = self.ceil_mode, return_indices = self.return_indices })
end

-- AvgPool3d(kernel_size, {stride = kernel_size, padding = 0, ceil_mode = false, count_include_pad = true,
-- divisor_override})
local AvgPool3d = Module:extend('AvgPool3d')
M.AvgPool3d = AvgPool3d
function AvgPool3d:init(kernel_size, o)
  o = F._opts_of(o, 'AvgPool3d', { 'stride', 'padding', 'ceil_mode', 'count_include_pad', 'divisor_override' }, 4)
  self.kernel_size = size_arg(kernel_size, 'kernel_size', 'AvgPool3d', false, 3)
  self.stride = o.stride ~= nil and size_arg(o.stride, 'stride', 'AvgPool3d', false, 3) or self.kernel_size
  self.padding = size_arg(o.padding or 0, 'padding', 'AvgPool3d', false, 3)
  self.ceil_mode = o.ceil_mode or false
  if o.count_include_pad == nil then self.count_include_pad = true else self.count_include_pad = o.count_include_pad end
  self.divisor_override = o.divisor_override
end
AvgPool3d.extra_repr = AvgPool2d.extra_repr
function AvgPool3d:forward(x)
  return F.avg_pool3d(x, self.kernel_size, { stride = self.stride, padding = self.padding,
    ceil_mode = self.ceil_mode, count_include_pad = self.count_include_pad, divisor_override = self.divisor_override })
end

-- AdaptiveAvgPool3d(output_size) and AdaptiveMaxPool3d(output_size, {return_indices = false}) (or
-- AdaptiveMaxPool3d(output_size, true)): output_size a number or {d, h, w}, where a nil entry keeps
-- the input's size
local function adaptive3d_repr(self)
  local s = self.output_size
  if type(s) == 'table' then
    return string.format('output_size=(%s, %s, %s)', pyrepr(s[1]), pyrepr(s[2]), pyrepr(s[3]))
  end
  return 'output_size=' .. pyrepr(s)
end

local AdaptiveAvgPool3d = Module:extend('AdaptiveAvgPool3d')
M.AdaptiveAvgPool3d = AdaptiveAvgPool3d
function AdaptiveAvgPool3d:init(output_size)
  self.output_size = size_arg(output_size, 'output_size', 'AdaptiveAvgPool3d', true, 3)
end
function AdaptiveAvgPool3d:forward(x) return F.adaptive_avg_pool3d(x, self.output_size) end
AdaptiveAvgPool3d.extra_repr = adaptive3d_repr

local AdaptiveMaxPool3d = Module:extend('AdaptiveMaxPool3d')
M.AdaptiveMaxPool3d = AdaptiveMaxPool3d
function AdaptiveMaxPool3d:init(output_size, o)
  self.output_size = size_arg(output_size, 'output_size', 'AdaptiveMaxPool3d', true, 3)
  self.return_indices = return_indices_of(o, 'AdaptiveMaxPool3d')
end
function AdaptiveMaxPool3d:forward(x) return F.adaptive_max_pool3d(x, self.output_size, self.return_indices) end
AdaptiveMaxPool3d.extra_repr = adaptive3d_repr

-- LPPool2d(norm_type, kernel_size, {stride = kernel_size, ceil_mode = false}) and LPPool1d likewise:
-- (sum of x^p over each window)^(1/p)
for nd, name in ipairs { 'LPPool1d', 'LPPool2d' } do
  local cls = Module:extend(name)
  M[name] = cls
  local fn = nd == 1 and F.lp_pool1d or F.lp_pool2d
  local arg = nd == 1 and single_arg or size_arg
  function cls:init(norm_type, kernel_size, o)
    o = F._opts_of(o, name, { 'stride', 'ceil_mode' }, 4)
    if type(norm_type) ~= 'number' then error(name .. ': norm_type must be a number, got ' .. type(norm_type), 3) end
    self.norm_type = norm_type
    self.kernel_size = arg(kernel_size, 'kernel_size', name)
    self.stride = o.stride ~= nil and arg(o.stride, 'stride', name) or nil
    self.ceil_mode = o.ceil_mode or false
  end
  function cls:forward(x)
    return fn(x, self.norm_type, self.kernel_size, { stride = self.stride, ceil_mode = self.ceil_mode })
  end
  function cls:extra_repr()
    return string.format('norm_type=%s, kernel_size=%s, stride=%s, ceil_mode=%s', pyrepr(self.norm_type),
      pyrepr(self.kernel_size), pyrepr(self.stride), pyrepr(self.ceil_mode))
  end
end

-- MaxUnpool2d(kernel_size, {stride = kernel_size, padding = 0}) and MaxUnpool1d, MaxUnpool3d likewise;
-- forward(x, indices, output_size) takes the 1-based indices that MaxPool2d / MaxPool1d / MaxPool3d
-- return. The sizes are kept as tuples, as PyTorch prints them.
for nd, name in ipairs { 'MaxUnpool1d', 'MaxUnpool2d', 'MaxUnpool3d' } do
  local cls = Module:extend(name)
  M[name] = cls
  local fn = F['max_unpool' .. nd .. 'd']
  local function tuple(v, what)
    if nd == 1 then return { single_arg(v, what, name) } end
    v = size_arg(v, what, name, false, nd)
    if type(v) == 'table' then return v end
    local t = {}
    for i = 1, nd do t[i] = v end
    return t
  end
  function cls:init(kernel_size, o)
    o = F._opts_of(o, name, { 'stride', 'padding' }, 4)
    self.kernel_size = tuple(kernel_size, 'kernel_size')
    self.stride = o.stride ~= nil and tuple(o.stride, 'stride') or self.kernel_size
    self.padding = tuple(o.padding or 0, 'padding')
  end
  function cls:forward(x, indices, output_size)
    return fn(x, indices, self.kernel_size, { stride = self.stride, padding = self.padding, output_size = output_size })
  end
  function cls:extra_repr()
    return string.format('kernel_size=%s, stride=%s, padding=%s', pyrepr(self.kernel_size), pyrepr(self.stride),
      pyrepr(self.padding))
  end
end

-- FractionalMaxPool2d(kernel_size, {output_size | output_ratio, return_indices = false,
-- _random_samples}): F.fractional_max_pool2d, with new random samples each call unless the
-- buffer _random_samples is given; output_ratio entries lie in (0, 1). FractionalMaxPool3d: the
-- same over F.fractional_max_pool3d, its sizes integers or triples {t, h, w}.
local function fractional_class(nd)
  local op = 'FractionalMaxPool' .. nd .. 'd'
  local fpool = F['fractional_max_pool' .. nd .. 'd']
  local cls = Module:extend(op)
  function cls:init(kernel_size, o)
    o = F._opts_of(o, op, { 'output_size', 'output_ratio', 'return_indices', '_random_samples' }, 4)
    self.kernel_size = size_arg(kernel_size, 'kernel_size', op, false, nd)
    self.return_indices = o.return_indices or false
    self:register_buffer('_random_samples', o._random_samples)
    self.output_size = o.output_size ~= nil and size_arg(o.output_size, 'output_size', op, false, nd) or nil
    self.output_ratio = o.output_ratio
    if o.output_size == nil and o.output_ratio == nil then
      error(op .. ' requires specifying either an output size, or a pooling ratio', 3)
    end
    if o.output_size ~= nil and o.output_ratio ~= nil then
      error(op .. ': only one of output_size and output_ratio may be specified', 3)
    end
    if o.output_ratio ~= nil then
      local r = o.output_ratio
      if type(r) ~= 'table' then
        r = {}
        for i = 1, nd do r[i] = o.output_ratio end
      end
      for i = 1, nd do
        if type(r[i]) ~= 'number' or not (r[i] > 0 and r[i] < 1) then
          error(op .. ': output_ratio must be between 0 and 1 (got ' .. pyrepr(o.output_ratio) .. ')', 3)
        end
      end
    end
  end

  function cls:forward(x)
    return fpool(x, self.kernel_size, { output_size = self.output_size, output_ratio = self.output_ratio,
      return_indices = self.return_indices, _random_samples = self._random_samples })
  end
  return cls
end
M.FractionalMaxPool2d = fractional_class(2)
M.FractionalMaxPool3d = fractional_class(3)

return M
