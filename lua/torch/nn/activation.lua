-- Activation modules: ReLU, GELU, Tanh, Sigmoid, Softmax and LogSoftmax; SiLU, Mish, Hardswish,
-- Hardsigmoid, SELU, ReLU6, Softsign, Tanhshrink, LogSigmoid, LeakyReLU, ELU, CELU, Softplus,
-- Hardtanh, Threshold, Softshrink, Hardshrink, PReLU, GLU, Softmin, Softmax2d and RReLU, with PyTorch's arguments, defaults and
-- reprs.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'
local Parameter = require('torch.nn.parameter').Parameter
local as_int = require('torch.composite').as_int

local M = {}
local pyrepr = Module._pyrepr

local function inplace_arg(o)
  if type(o) == 'table' then return o.inplace and true or false end
  return o and true or false
end

-- ReLU({inplace = false}) (or ReLU(true))
local ReLU = Module:extend('ReLU')
M.ReLU = ReLU
function ReLU:init(o) self.inplace = inplace_arg(o) end
function ReLU:forward(x) return F.relu(x, { inplace = self.inplace }) end
function ReLU:extra_repr() return self.inplace and 'inplace=True' or '' end

-- GELU({approximate = 'none' | 'tanh'}) (or GELU('tanh'))
local GELU = Module:extend('GELU')
M.GELU = GELU
function GELU:init(o)
  local approximate = type(o) == 'table' and o.approximate or o or 'none'
  if approximate ~= 'none' and approximate ~= 'tanh' then
    error("GELU: approximate must be 'none' or 'tanh', got " .. tostring(approximate), 3)
  end
  self.approximate = approximate
end
function GELU:forward(x) return F.gelu(x, { approximate = self.approximate }) end
function GELU:extra_repr() return "approximate='" .. self.approximate .. "'" end

--- Tanh(): tanh(x) elementwise
local Tanh = Module:extend('Tanh')
M.Tanh = Tanh
function Tanh:forward(x) return x:tanh() end

--- Sigmoid(): 1 / (1 + exp(-x)) elementwise
local Sigmoid = Module:extend('Sigmoid')
M.Sigmoid = Sigmoid
function Sigmoid:forward(x) return x:sigmoid() end

-- PyTorch's implicit dim when none is given: the first for 0-, 1- and 3-D inputs, else the second
local function softmax_dim(dim, x)
  if dim ~= nil then return dim end
  local d = x:dim()
  if d == 0 or d == 1 or d == 3 then return 1 end
  return 2
end

local function dim_arg(dim, op)
  if type(dim) == 'table' then dim = dim.dim end
  dim = as_int(dim)
  if dim ~= nil and math.type(dim) ~= 'integer' then
    error(op .. ': dim must be an integer, got ' .. tostring(dim), 4)
  end
  return dim
end

-- Softmax(dim) (or Softmax({dim = d}))
local Softmax = Module:extend('Softmax')
M.Softmax = Softmax
function Softmax:init(dim) self.dim = dim_arg(dim, 'Softmax') end
function Softmax:forward(x) return F.softmax(x, softmax_dim(self.dim, x)) end
function Softmax:extra_repr() return 'dim=' .. pyrepr(self.dim) end

--- LogSoftmax(dim): log(softmax(x, dim))
local LogSoftmax = Module:extend('LogSoftmax')
M.LogSoftmax = LogSoftmax
function LogSoftmax:init(dim) self.dim = dim_arg(dim, 'LogSoftmax') end
function LogSoftmax:forward(x) return F.log_softmax(x, softmax_dim(self.dim, x)) end
function LogSoftmax:extra_repr() return 'dim=' .. pyrepr(self.dim) end

-- the activations without parameters: Name({inplace = false}) (or Name(true)) where PyTorch has inplace
local function plain(name, fname, has_inplace)
  local cls = Module:extend(name)
  M[name] = cls
  if has_inplace then
    function cls:init(o) self.inplace = inplace_arg(o) end
    function cls:forward(x) return F[fname](x, { inplace = self.inplace }) end
    function cls:extra_repr() return self.inplace and 'inplace=True' or '' end
  else
    function cls:forward(x) return F[fname](x) end
  end
end
plain('SiLU', 'silu', true)
plain('Mish', 'mish', true)
plain('Hardswish', 'hardswish', true)
plain('Hardsigmoid', 'hardsigmoid', true)
plain('SELU', 'selu', true)
plain('ReLU6', 'relu6', true)
plain('Softsign', 'softsign', false)
plain('Tanhshrink', 'tanhshrink', false)
plain('LogSigmoid', 'logsigmoid', false)

-- the parameters of a constructor: positional with PyTorch's defaults, or one options table
local function args_of(cls, given, names, defaults)
  local o, v = given[1], {}
  if type(o) == 'table' then
    for k in pairs(o) do
      local known = false
      for _, n in ipairs(names) do known = known or n == k end
      if not known then
        error(string.format("%s: unknown option '%s' (its options are %s)", cls, tostring(k), table.concat(names, ', ')), 4)
      end
    end
    for i, n in ipairs(names) do v[i] = o[n] end
  else
    for i = 1, #names do v[i] = given[i] end
  end
  for i, n in ipairs(names) do
    if v[i] == nil then v[i] = defaults[i] end
    if n == 'inplace' then v[i] = v[i] and true or false
    elseif type(v[i]) ~= 'number' then
      error(string.format('%s: %s must be a number, got %s', cls, n, type(v[i])), 4)
    end
  end
  return v
end

local function fl(v) return pyrepr(v + 0.0) end

-- the activations with parameters: Name(p1, p2, ..., inplace) or Name({p1 = ..., inplace = ...}),
-- stored as fields of those names, printed as PyTorch prints them (inplace only when set)
local function parametric(name, fname, names, defaults, check)
  local cls = Module:extend(name)
  M[name] = cls
  function cls:init(...)
    local v = args_of(name, { ... }, names, defaults)
    if check then check(table.unpack(v)) end
    for i, n in ipairs(names) do self[n] = v[i] end
  end
  function cls:forward(x)
    local v = {}
    for i, n in ipairs(names) do v[i] = self[n] end
    return F[fname](x, table.unpack(v, 1, #names))
  end
  function cls:extra_repr()
    local parts = {}
    for _, n in ipairs(names) do
      if n ~= 'inplace' then parts[#parts + 1] = n .. '=' .. fl(self[n])
      elseif self.inplace then parts[#parts + 1] = 'inplace=True' end
    end
    return table.concat(parts, ', ')
  end
end
parametric('LeakyReLU', 'leaky_relu', { 'negative_slope', 'inplace' }, { 0.01, false })
parametric('ELU', 'elu', { 'alpha', 'inplace' }, { 1.0, false })
parametric('CELU', 'celu', { 'alpha', 'inplace' }, { 1.0, false })
parametric('Softplus', 'softplus', { 'beta', 'threshold' }, { 1.0, 20.0 })
parametric('Hardtanh', 'hardtanh', { 'min_val', 'max_val', 'inplace' }, { -1.0, 1.0, false }, function(lo, hi)
  if lo > hi then error(string.format('Hardtanh: min_val (%g) must not exceed max_val (%g)', lo, hi), 4) end
end)
parametric('Threshold', 'threshold', { 'threshold', 'value', 'inplace' }, { nil, nil, false })
-- Softshrink(lambd = 0.5) and Hardshrink(lambd = 0.5), printed as PyTorch's: Softshrink(0.5)
parametric('Softshrink', 'softshrink', { 'lambd' }, { 0.5 }, function(l)
  if l < 0 then error(string.format('Softshrink: lambd must be greater or equal to 0, got %g', l), 4) end
end)
parametric('Hardshrink', 'hardshrink', { 'lambd' }, { 0.5 })
for _, name in ipairs { 'Softshrink', 'Hardshrink' } do
  M[name].extra_repr = function(self) return fl(self.lambd) end
end

--- PReLU({num_parameters = 1, init = 0.25}) (or PReLU(num_parameters, init)): a learnt slope for
-- x < 0, one, or one per channel
local PReLU = Module:extend('PReLU')
M.PReLU = PReLU
function PReLU:init(...)
  local given = { ... }
  local o = type(given[1]) == 'table' and given[1] or nil
  local device, dtype = o and o.device, o and o.dtype
  if o then
    local opts = {}
    for k, val in pairs(o) do if k ~= 'device' and k ~= 'dtype' then opts[k] = val end end
    given = { opts }
  end
  local v = args_of('PReLU', given, { 'num_parameters', 'init' }, { 1, 0.25 })
  v[1] = as_int(v[1])
  if math.type(v[1]) ~= 'integer' or v[1] < 1 then
    error('PReLU: num_parameters must be a positive integer, got ' .. tostring(v[1]), 3)
  end
  self.num_parameters = v[1]
  self.weight = Parameter(torch.full({ v[1] }, v[2], { device = device, dtype = dtype }))
end
function PReLU:forward(x) return F.prelu(x, self.weight) end
function PReLU:extra_repr() return 'num_parameters=' .. self.num_parameters end

--- GLU(dim = -1)
local GLU = Module:extend('GLU')
M.GLU = GLU
function GLU:init(dim)
  if type(dim) == 'table' then dim = dim.dim end
  self.dim = dim_arg(dim, 'GLU') or -1
end
function GLU:forward(x) return F.glu(x, self.dim) end
function GLU:extra_repr() return 'dim=' .. pyrepr(self.dim) end

--- Softmin(dim): softmax(-x, dim)
local Softmin = Module:extend('Softmin')
M.Softmin = Softmin
function Softmin:init(dim) self.dim = dim_arg(dim, 'Softmin') end
function Softmin:forward(x) return F.softmin(x, softmax_dim(self.dim, x)) end
function Softmin:extra_repr() return 'dim=' .. pyrepr(self.dim) end

--- Softmax2d(): softmax over the channels (dim -3) of C x H x W or N x C x H x W input
local Softmax2d = Module:extend('Softmax2d')
M.Softmax2d = Softmax2d
function Softmax2d:forward(x)
  if not torch.is_tensor(x) then error('Softmax2d: expected a tensor, got ' .. type(x), 2) end
  if x:dim() ~= 3 and x:dim() ~= 4 then
    error(string.format('Softmax2d: expected input to be 3D or 4D, got %dD instead', x:dim()), 2)
  end
  return F.softmax(x, -3)
end

--- RReLU(lower = 1/8, upper = 1/3, inplace = false) (or RReLU({lower, upper, inplace})): x where x > 0,
-- else a x, a drawn from U(lower, upper) for each element while training, (lower + upper) / 2 in eval mode
local RReLU = Module:extend('RReLU')
M.RReLU = RReLU
function RReLU:init(...)
  local v = args_of('RReLU', { ... }, { 'lower', 'upper', 'inplace' }, { 1 / 8, 1 / 3, false })
  if v[1] > v[2] then
    error(string.format('RReLU: Lower bound should be less than or equal to the upper bound, got %g and %g', v[1], v[2]), 3)
  end
  self.lower, self.upper, self.inplace = v[1], v[2], v[3]
end
function RReLU:forward(x) return F.rrelu(x, self.lower, self.upper, self.training, self.inplace) end
function RReLU:extra_repr()
  return string.format('lower=%s, upper=%s%s', fl(self.lower), fl(self.upper), self.inplace and ', inplace=True' or '')
end

return M
