-- nn.Conv1d, nn.Conv2d and nn.Conv3d over F.conv1d / F.conv2d / F.conv3d, with PyTorch's arguments,
-- checks, initialisation and repr; padding 'same' / 'valid', and padding_mode 'zeros', 'reflect',
-- 'replicate' or 'circular' (F.pad first, as PyTorch does). nn.ConvTranspose1d, nn.ConvTranspose2d
-- and nn.ConvTranspose3d over F.conv_transpose1d / 2d / 3d.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'
local as_int = require('torch.composite').as_int

local M = {}
local pyrepr = Module._pyrepr

local MODES = { zeros = true, reflect = true, replicate = true, circular = true }

-- the weight (channels ... then the kernel's sizes) and the bias (unless o.bias is false), drawn
local function make_parameters(self, channels, kernel, out_channels, o)
  local f = { dtype = o.dtype, device = o.device }
  local shape = { channels[1], channels[2] }
  for i = 1, #kernel do shape[#shape + 1] = kernel[i] end
  self.weight = Parameter(torch.empty(shape, f))
  if o.bias == nil or o.bias then
    self.bias = Parameter(torch.empty(out_channels, f))
  else
    self:register_parameter('bias', nil)
  end
  self:reset_parameters()
end

local CONV = { F.conv1d, F.conv2d, F.conv3d }
local CONV_TRANSPOSE = { F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d }
local TUPLE = { 'a 1-tuple {n}', 'a pair {h, w}', 'a triple {d, h, w}' }

-- a class ConvNd for nd = 1, 2 or 3: kernel_size, stride, padding, dilation are integers or nd-tuples
local function conv_class(name, nd)
  local fconv = CONV[nd]
  local cls = Module:extend(name)

  local function tuple(v, what)
    v = as_int(v)
    if math.type(v) == 'integer' then
      local t = {}
      for i = 1, nd do t[i] = v end
      return t
    end
    if type(v) == 'table' and #v == nd then
      local t = {}
      for i = 1, nd do
        t[i] = as_int(v[i])
        if math.type(t[i]) ~= 'integer' then v = nil break end
      end
      if v then return t end
    end
    error(string.format('%s: %s must be an integer or %s of integers, got %s', name, what, TUPLE[nd], tostring(v)), 4)
  end

  -- Conv2d(in_channels, out_channels, kernel_size, {stride = 1, padding = 0, dilation = 1, groups = 1,
  -- bias = true, padding_mode = 'zeros', device, dtype}); padding may be 'same' or 'valid'; sizes are
  -- integers or pairs {h, w}. Conv1d and Conv3d take the same, their sizes integers or 1-tuples {n},
  -- or triples {d, h, w}.
  function cls:init(in_channels, out_channels, kernel_size, o)
    o = o or {}
    local groups = o.groups or 1
    in_channels = as_int(in_channels)
    out_channels = as_int(out_channels)
    if math.type(in_channels) ~= 'integer' or math.type(out_channels) ~= 'integer' or in_channels <= 0
      or out_channels <= 0 then
      error(string.format('%s: in_channels and out_channels must be positive integers, got %s and %s', name,
        tostring(in_channels), tostring(out_channels)), 3)
    end
    groups = as_int(groups)
    if math.type(groups) ~= 'integer' or groups <= 0 then
      error(name .. ': groups must be a positive integer, got ' .. tostring(groups), 3)
    end
    if in_channels % groups ~= 0 then error(name .. ': in_channels must be divisible by groups', 3) end
    if out_channels % groups ~= 0 then error(name .. ': out_channels must be divisible by groups', 3) end
    local kernel = tuple(kernel_size, 'kernel_size')
    local stride = tuple(o.stride or 1, 'stride')
    local dilation = tuple(o.dilation or 1, 'dilation')
    local padding = o.padding or 0
    if type(padding) == 'string' then
      if padding ~= 'same' and padding ~= 'valid' then
        error(string.format("%s: invalid padding string '%s', should be one of {'valid', 'same'}", name, padding), 3)
      end
      for i = 1, nd do
        if padding == 'same' and stride[i] ~= 1 then
          error(name .. ": padding='same' is not supported for strided convolutions", 3)
        end
      end
    else
      padding = tuple(padding, 'padding')
    end
    local padding_mode = o.padding_mode or 'zeros'
    if not MODES[padding_mode] then
      error(name .. ": padding_mode must be one of 'zeros', 'reflect', 'replicate' or 'circular', but got padding_mode='"
        .. tostring(padding_mode) .. "'", 3)
    end
    for i = 1, nd do
      if kernel[i] <= 0 or stride[i] <= 0 or dilation[i] <= 0 then
        error(name .. ': kernel_size, stride and dilation must be positive', 3)
      end
      if type(padding) == 'table' and padding[i] < 0 then error(name .. ': padding must be non-negative', 3) end
    end
    self.in_channels, self.out_channels = in_channels, out_channels
    self.kernel_size, self.stride, self.padding, self.dilation = kernel, stride, padding, dilation
    self.groups, self.padding_mode = groups, padding_mode
    self.transposed = false
    self.output_padding = tuple(0, 'output_padding')
    make_parameters(self, { out_channels, in_channels // groups }, kernel, out_channels, o)
  end

  function cls:reset_parameters()
    init.kaiming_uniform_(self.weight, { a = math.sqrt(5) })
    if self.bias ~= nil then
      local fan_in = init._calculate_fan_in_and_fan_out(self.weight)
      local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
      init.uniform_(self.bias, -bound, bound)
    end
  end

  function cls:forward(x)
    local o = { stride = self.stride, padding = self.padding, dilation = self.dilation, groups = self.groups }
    if self.padding_mode ~= 'zeros' and self.padding ~= 'valid' then
      -- F.pad's amounts, last dim first: PyTorch's _reversed_padding_repeated_twice ('same': the
      -- extra element of an odd total at the end)
      local pads = {}
      for i = nd, 1, -1 do
        local l, r
        if self.padding == 'same' then
          local total = self.dilation[i] * (self.kernel_size[i] - 1)
          l, r = total // 2, total - total // 2
        else
          l, r = self.padding[i], self.padding[i]
        end
        pads[#pads + 1], pads[#pads + 2] = l, r
      end
      x = F.pad(x, pads, { mode = self.padding_mode })
      o.padding = 0
    end
    return fconv(x, self.weight, self.bias, o)
  end

  function cls:extra_repr()
    local s = string.format('%d, %d, kernel_size=%s, stride=%s', self.in_channels, self.out_channels,
      pyrepr(self.kernel_size), pyrepr(self.stride))
    local p = self.padding
    if type(p) == 'string' then
      s = s .. ', padding=' .. p
    else
      local nonzero = false
      for i = 1, nd do nonzero = nonzero or p[i] ~= 0 end
      if nonzero then s = s .. ', padding=' .. pyrepr(p) end
    end
    local dil = false
    for i = 1, nd do dil = dil or self.dilation[i] ~= 1 end
    if dil then s = s .. ', dilation=' .. pyrepr(self.dilation) end
    if self.groups ~= 1 then s = s .. ', groups=' .. self.groups end
    if self.bias == nil then s = s .. ', bias=False' end
    if self.padding_mode ~= 'zeros' then s = s .. ', padding_mode=' .. self.padding_mode end
    return s
  end
  return cls
end

M.Conv1d = conv_class('Conv1d', 1)
M.Conv2d = conv_class('Conv2d', 2)
M.Conv3d = conv_class('Conv3d', 3)

-- ConvTransposeNd for nd = 1, 2 or 3
local function transposed_class(name, nd)
  local fconv = CONV_TRANSPOSE[nd]
  local base = M['Conv' .. nd .. 'd']
  local cls = Module:extend(name)

  -- ConvTranspose2d(in_channels, out_channels, kernel_size, {stride = 1, padding = 0, output_padding = 0,
  -- groups = 1, bias = true, dilation = 1, device, dtype}); the weight is in x out/groups x kernel
  function cls:init(in_channels, out_channels, kernel_size, o)
    o = o or {}
    if type(o.padding) == 'string' then error(name .. ': padding must be a size, not a string', 3) end
    if o.padding_mode ~= nil and o.padding_mode ~= 'zeros' then
      error(string.format("%s: Only 'zeros' padding mode is supported for %s", name, name), 3)
    end
    -- the checks and sizes of the plain convolution (its random initial values drawn and given back:
    -- the generator then draws this layer's as PyTorch's does, so one seed gives PyTorch's weights),
    -- then the transposed weight
    local state = torch.get_rng_state()
    local plain = base(in_channels, out_channels, kernel_size, { stride = o.stride, padding = o.padding,
      dilation = o.dilation, groups = o.groups, bias = false, dtype = o.dtype })
    torch.set_rng_state(state)
    self.in_channels, self.out_channels = in_channels, out_channels
    self.kernel_size, self.stride, self.padding, self.dilation = plain.kernel_size, plain.stride, plain.padding, plain.dilation
    self.groups, self.padding_mode, self.transposed = plain.groups, 'zeros', true
    local op = o.output_padding or 0
    op = as_int(op)
    if math.type(op) == 'integer' then
      local t = {}
      for i = 1, nd do t[i] = op end
      op = t
    end
    if type(op) ~= 'table' or #op ~= nd then error(name .. ': output_padding must be an integer or one per dim', 3) end
    op = { table.unpack(op, 1, nd) }
    for i = 1, nd do
      op[i] = as_int(op[i])
      if math.type(op[i]) ~= 'integer' or op[i] < 0 or op[i] >= math.max(self.stride[i], self.dilation[i]) then
        error(name .. ': output padding must be smaller than either stride or dilation', 3)
      end
    end
    self.output_padding = op
    make_parameters(self, { in_channels, out_channels // self.groups }, self.kernel_size, out_channels, o)
  end
  cls.reset_parameters = base.reset_parameters

  function cls:forward(x)
    return fconv(x, self.weight, self.bias, { stride = self.stride, padding = self.padding,
      output_padding = self.output_padding, groups = self.groups, dilation = self.dilation })
  end

  function cls:extra_repr()
    local s = base.extra_repr(self)
    local nonzero = false
    for i = 1, nd do nonzero = nonzero or self.output_padding[i] ~= 0 end
    if nonzero then
      -- after padding (or stride), as PyTorch prints it
      local at = s:find(', dilation=', 1, true) or s:find(', groups=', 1, true) or s:find(', bias=', 1, true) or (#s + 1)
      s = s:sub(1, at - 1) .. ', output_padding=' .. pyrepr(self.output_padding) .. s:sub(at)
    end
    return s
  end
  return cls
end

M.ConvTranspose1d = transposed_class('ConvTranspose1d', 1)
M.ConvTranspose2d = transposed_class('ConvTranspose2d', 2)
M.ConvTranspose3d = transposed_class('ConvTranspose3d', 3)

return M
