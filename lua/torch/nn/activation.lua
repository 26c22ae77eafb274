-- Activation modules: ReLU, GELU, Tanh, Sigmoid, Softmax and LogSoftmax.
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'

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

return M
