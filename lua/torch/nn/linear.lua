-- nn.Linear (y = x W^T + b), nn.Bilinear (y_k = x1^T W_k x2 + b_k) and nn.Identity.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'
local as_int = require('torch.composite').as_int

local M = {}

local function factory(o) return { dtype = o.dtype, device = o.device } end

-- Linear(in_features, out_features, {bias = true, device, dtype})
local Linear = Module:extend('Linear')
M.Linear = Linear

function Linear:init(in_features, out_features, o)
  o = o or {}
  in_features = as_int(in_features)
  out_features = as_int(out_features)
  if math.type(in_features) ~= 'integer' or math.type(out_features) ~= 'integer' or in_features < 0
    or out_features < 0 then
    error(string.format('Linear: in_features and out_features must be non-negative integers, got %s and %s',
      tostring(in_features), tostring(out_features)), 3)
  end
  self.in_features, self.out_features = in_features, out_features
  self.weight = Parameter(torch.empty(out_features, in_features, factory(o)))
  if o.bias == nil or o.bias then
    self.bias = Parameter(torch.empty(out_features, factory(o)))
  else
    self:register_parameter('bias', nil)
  end
  self:reset_parameters()
end

-- kaiming_uniform_(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias uses the same bound
function Linear:reset_parameters()
  init.kaiming_uniform_(self.weight, { a = math.sqrt(5) })
  if self.bias ~= nil then
    local fan_in = self.weight:size(2)
    local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
    init.uniform_(self.bias, -bound, bound)
  end
end

function Linear:forward(x) return F.linear(x, self.weight, self.bias) end

function Linear:extra_repr()
  return string.format('in_features=%d, out_features=%d, bias=%s', self.in_features, self.out_features,
    self.bias ~= nil and 'True' or 'False')
end

-- Bilinear(in1_features, in2_features, out_features, {bias = true, device, dtype}): weight out x in1 x in2
-- and bias drawn from U(-1/sqrt(in1), 1/sqrt(in1)), as PyTorch's
local Bilinear = Module:extend('Bilinear')
M.Bilinear = Bilinear

function Bilinear:init(in1_features, in2_features, out_features, o)
  o = F._opts_of(o, 'Bilinear', { 'bias', 'device', 'dtype' }, 4)
  in1_features, in2_features, out_features = as_int(in1_features), as_int(in2_features), as_int(out_features)
  for _, v in ipairs { in1_features, in2_features, out_features } do
    if math.type(v) ~= 'integer' or v < 0 then
      error(string.format('Bilinear: in1_features, in2_features and out_features must be non-negative integers, got '
        .. '%s, %s and %s', tostring(in1_features), tostring(in2_features), tostring(out_features)), 3)
    end
  end
  self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
  self.weight = Parameter(torch.empty(out_features, in1_features, in2_features, factory(o)))
  if o.bias == nil or o.bias then
    self.bias = Parameter(torch.empty(out_features, factory(o)))
  else
    self:register_parameter('bias', nil)
  end
  self:reset_parameters()
end

function Bilinear:reset_parameters()
  local bound = self.in1_features > 0 and 1 / math.sqrt(self.in1_features) or 0
  init.uniform_(self.weight, -bound, bound)
  if self.bias ~= nil then init.uniform_(self.bias, -bound, bound) end
end

function Bilinear:forward(x1, x2) return F.bilinear(x1, x2, self.weight, self.bias) end

function Bilinear:extra_repr()
  return string.format('in1_features=%d, in2_features=%d, out_features=%d, bias=%s', self.in1_features,
    self.in2_features, self.out_features, self.bias ~= nil and 'True' or 'False')
end

-- Identity(...): returns its input; arguments are ignored, as PyTorch
local Identity = Module:extend('Identity')
M.Identity = Identity
function Identity:forward(x) return x end

return M
