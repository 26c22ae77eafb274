-- nn.Conv2d over F.conv2d, with PyTorch's arguments, checks, initialisation and repr.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'

local M = {}
local pyrepr = Module._pyrepr

-- a number or {h, w} as a pair table
local function pair(v, name)
  if math.type(v) == 'integer' then return { v, v } end
  if type(v) == 'table' and #v == 2 and math.type(v[1]) == 'integer' and math.type(v[2]) == 'integer' then
    return { v[1], v[2] }
  end
  error(string.format('Conv2d: %s must be an integer or a pair {h, w} of integers, got %s', name, tostring(v)), 4)
end

-- Conv2d(in_channels, out_channels, kernel_size, {stride = 1, padding = 0, dilation = 1, groups = 1,
-- bias = true, padding_mode = 'zeros', device, dtype}); padding may be 'same' or 'valid'
local Conv2d = Module:extend('Conv2d')
M.Conv2d = Conv2d

function Conv2d:init(in_channels, out_channels, kernel_size, o)
  o = o or {}
  local groups = o.groups or 1
  if math.type(in_channels) ~= 'integer' or math.type(out_channels) ~= 'integer' or in_channels <= 0
    or out_channels <= 0 then
    error(string.format('Conv2d: in_channels and out_channels must be positive integers, got %s and %s',
      tostring(in_channels), tostring(out_channels)), 3)
  end
  if math.type(groups) ~= 'integer' or groups <= 0 then
    error('Conv2d: groups must be a positive integer, got ' .. tostring(groups), 3)
  end
  if in_channels % groups ~= 0 then error('Conv2d: in_channels must be divisible by groups', 3) end
  if out_channels % groups ~= 0 then error('Conv2d: out_channels must be divisible by groups', 3) end
  local kernel = pair(kernel_size, 'kernel_size')
  local stride = pair(o.stride or 1, 'stride')
  local dilation = pair(o.dilation or 1, 'dilation')
  local padding = o.padding or 0
  if type(padding) == 'string' then
    if padding ~= 'same' and padding ~= 'valid' then
      error(string.format("Conv2d: invalid padding string '%s', should be one of {'valid', 'same'}", padding), 3)
    end
    if padding == 'same' and (stride[1] ~= 1 or stride[2] ~= 1) then
      error("Conv2d: padding='same' is not supported for strided convolutions", 3)
    end
  else
    padding = pair(padding, 'padding')
  end
  local padding_mode = o.padding_mode or 'zeros'
  if padding_mode ~= 'zeros' then
    if padding_mode == 'reflect' or padding_mode == 'replicate' or padding_mode == 'circular' then
      error("Conv2d: padding_mode '" .. padding_mode .. "' is not supported by lutorch, only 'zeros'", 3)
    end
    error("Conv2d: padding_mode must be one of 'zeros', 'reflect', 'replicate' or 'circular', but got padding_mode='"
      .. tostring(padding_mode) .. "'", 3)
  end
  for i = 1, 2 do
    if kernel[i] <= 0 or stride[i] <= 0 or dilation[i] <= 0 then
      error('Conv2d: kernel_size, stride and dilation must be positive', 3)
    end
    if type(padding) == 'table' and padding[i] < 0 then error('Conv2d: padding must be non-negative', 3) end
  end
  self.in_channels, self.out_channels = in_channels, out_channels
  self.kernel_size, self.stride, self.padding, self.dilation = kernel, stride, padding, dilation
  self.groups, self.padding_mode = groups, padding_mode
  self.transposed, self.output_padding = false, { 0, 0 }
  local f = { dtype = o.dtype, device = o.device }
  self.weight = Parameter(torch.empty(out_channels, in_channels // groups, kernel[1], kernel[2], f))
  if o.bias == nil or o.bias then
    self.bias = Parameter(torch.empty(out_channels, f))
  else
    self:register_parameter('bias', nil)
  end
  self:reset_parameters()
end

function Conv2d:reset_parameters()
  init.kaiming_uniform_(self.weight, { a = math.sqrt(5) })
  if self.bias ~= nil then
    local fan_in = init._calculate_fan_in_and_fan_out(self.weight)
    local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
    init.uniform_(self.bias, -bound, bound)
  end
end

function Conv2d:forward(x)
  local padding = self.padding
  if padding == 'valid' then
    return F.conv2d(x, self.weight, self.bias, { stride = self.stride, padding = 0, dilation = self.dilation,
      groups = self.groups })
  elseif padding == 'same' then
    -- total padding d (k - 1) per dim; when odd, PyTorch puts the extra row/column at the end, which
    -- is the symmetric padding of ceil(total / 2) with the first output row/column dropped
    local pads, drop = {}, {}
    for i = 1, 2 do
      local total = self.dilation[i] * (self.kernel_size[i] - 1)
      pads[i] = (total + 1) // 2
      drop[i] = total % 2 == 1
    end
    local y = F.conv2d(x, self.weight, self.bias, { stride = 1, padding = pads, dilation = self.dilation,
      groups = self.groups })
    local d = y:dim()
    if drop[1] then y = y:narrow(d - 1, 2, y:size(d - 1) - 1) end
    if drop[2] then y = y:narrow(d, 2, y:size(d) - 1) end
    return y
  end
  return F.conv2d(x, self.weight, self.bias, { stride = self.stride, padding = padding, dilation = self.dilation,
    groups = self.groups })
end

function Conv2d:extra_repr()
  local s = string.format('%d, %d, kernel_size=%s, stride=%s', self.in_channels, self.out_channels,
    pyrepr(self.kernel_size), pyrepr(self.stride))
  local p = self.padding
  if type(p) == 'string' then
    s = s .. ', padding=' .. p
  elseif p[1] ~= 0 or p[2] ~= 0 then
    s = s .. ', padding=' .. pyrepr(p)
  end
  if self.dilation[1] ~= 1 or self.dilation[2] ~= 1 then s = s .. ', dilation=' .. pyrepr(self.dilation) end
  if self.groups ~= 1 then s = s .. ', groups=' .. self.groups end
  if self.bias == nil then s = s .. ', bias=False' end
  if self.padding_mode ~= 'zeros' then s = s .. ', padding_mode=' .. self.padding_mode end
  return s
end

return M
