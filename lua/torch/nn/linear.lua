-- nn.Linear (y = x W^T + b), nn.Bilinear (y_k = x1^T W_k x2 + b_k) and nn.Identity.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'

local M = {}

local function factory(o) return { dtype = o.dtype, device = o.device } end

-- Linear(in_features, out_features, {bias = true, device, dtype})
local Linear = Module:extend('Linear')
M.Linear = Linear

function Linear:init(in_features, out_features, o)
  o = o or {}
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

-- LazyLinear(out_features, {bias = true, device, dtype}): a Linear whose in_features is taken from
-- the last size of its first input. Until then weight and bias are empty parameters (in_features
-- = 0); the first call (or load_state_dict) gives them their shapes in place (set_, so an
-- optimizer made before keeps them), initialises them as Linear does, and the module becomes a
-- Linear, as PyTorch's cls_to_become.
local LazyLinear = Linear:extend('LazyLinear')
M.LazyLinear = LazyLinear

function LazyLinear:init(out_features, o)
  o = o or {}
  if math.type(out_features) ~= 'integer' or out_features < 0 then
    error('LazyLinear: out_features must be a non-negative integer, got ' .. tostring(out_features), 3)
  end
  self.in_features, self.out_features = 0, out_features
  self.weight = Parameter(torch.empty(0, factory(o)))
  if o.bias == nil or o.bias then
    self.bias = Parameter(torch.empty(0, factory(o)))
  else
    self:register_parameter('bias', nil)
  end
  self._load_state_hook = LazyLinear._lazy_load
end

function LazyLinear:has_uninitialized_params() return getmetatable(self) == LazyLinear end

-- the shapes given, the parameters initialised, the class Linear
function LazyLinear:_materialize(in_features)
  torch.no_grad(function()
    self.weight:set_(self.weight:new_empty(self.out_features, in_features))
    if self.bias ~= nil then self.bias:set_(self.bias:new_empty(self.out_features)) end
  end)
  self.in_features = in_features
  self._load_state_hook = nil
  setmetatable(self, Linear)
  self:reset_parameters()
end

function LazyLinear:reset_parameters()
  if not self:has_uninitialized_params() then Linear.reset_parameters(self) end
end

-- load_state_dict into an uninitialised LazyLinear takes in_features from the saved weight
function LazyLinear._lazy_load(self, src, prefix)
  local w = src[prefix .. 'weight']
  if torch.is_tensor(w) and w:dim() == 2 and getmetatable(self) == LazyLinear then self:_materialize(w:size(2)) end
end

function LazyLinear:forward(x)
  if not torch.is_tensor(x) or x:dim() == 0 then
    error('LazyLinear: expected an input tensor with at least one dimension', 2)
  end
  self:_materialize(x:size(-1))
  return Linear.forward(self, x)
end

return M
