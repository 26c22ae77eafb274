-- The lazy modules: nn.LazyLinear, nn.LazyConv1d/2d/3d, nn.LazyConvTranspose1d/2d/3d,
-- nn.LazyBatchNorm1d/2d/3d and nn.LazyInstanceNorm1d/2d/3d. Each takes its class's arguments less
-- the first (in_features, in_channels or num_features), which its first input gives (or the shapes
-- of a state dict loaded into it). Until then its size-dependent parameters and buffers are empty
-- tensors (size 0: PyTorch's UninitializedParameter); the first call gives them their shapes in
-- place (set_, so an optimizer made before keeps them), initialises them as the class does (the same
-- draws as the class made after the same seed), and the module becomes that class (PyTorch's
-- cls_to_become).
--
--   local m = nn.LazyConv2d(16, 3, {padding = 1})   -- in_channels from the first input
--   local y = m(torch.randn(8, 3, 32, 32))          -- m is now a Conv2d(3, 16, ...)
local torch = require 'torch'
local Parameter = require('torch.nn.parameter').Parameter
local Linear = require('torch.nn.linear').Linear
local conv = require 'torch.nn.conv'
local norm = require 'torch.nn.normalization'
local as_int = require('torch.composite').as_int

local M = {}

-- an error raised inside the class's constructor (named for the class, or for the one it is built
-- on, as ConvTranspose2d's for Conv2d's checks), named for the lazy class and raised at `level`
local function renamed(err, name, level)
  err = tostring(err):gsub('^[^\n]-:%d+: ', '', 1):gsub('^[%w_]+: ', name .. ': ', 1)
  error(err, level + 1)
end

-- cls = lazy(Base, name, spec): the lazy form of Base, whose constructor is Base(size, ...) with size
-- spec.field ('in_features', ...). spec.placeholder(...) -> a size Base accepts (the lazy
-- constructor's arguments given); spec.infer(self, x) -> the size from the first input, or nil and
-- an error message; spec.from_state(self, sd, prefix) -> the size from a state dict, or nil;
-- spec.args(self, args), optional: the arguments Base is given with the size (args by default).
local function lazy(Base, name, spec)
  local cls = Base:extend(name)

  -- the module of Base(size, ...), drawn without moving the random generator
  local function probe(size, args, level)
    local state = torch.get_rng_state()
    local ok, m = pcall(Base, size, table.unpack(args, 1, args.n))
    torch.set_rng_state(state)
    if not ok then renamed(m, name, level + 1) end
    return m
  end

  function cls:init(...)
    local args = table.pack(...)
    if spec.check then spec.check(...) end
    local state = torch.get_rng_state()
    local ok, err = pcall(Base.init, self, spec.placeholder(...), ...)
    torch.set_rng_state(state)
    if not ok then renamed(err, name, 3) end
    self._lazy_args = spec.args and spec.args(self, args) or args
    self[spec.field] = 0
    -- the parameters and the sized buffers (not num_batches_tracked) empty
    local sized = {}
    for pname, p in self:named_parameters() do
      self[pname] = Parameter(torch.empty(0, { dtype = p.dtype, device = p.device }), p.requires_grad)
    end
    for bname, b in self:named_buffers() do
      if b:dim() > 0 then
        self[bname] = torch.empty(0, { dtype = b.dtype, device = b.device })
        sized[#sized + 1] = bname
      end
    end
    self._lazy_buffers = sized
  end

  function cls:has_uninitialized_params() return getmetatable(self) == cls end

  -- nothing to initialise before the shapes are known (Base's constructor calls this)
  function cls:reset_parameters()
    if not self:has_uninitialized_params() then Base.reset_parameters(self) end
  end

  -- the shapes of Base(size, ...) given in place, the values initialised, the class Base
  function cls:_materialize(size, level)
    local m = probe(size, self._lazy_args, (level or 1) + 1)
    torch.no_grad(function()
      for pname, p in self:named_parameters() do p:set_(p:new_empty(m[pname].shape)) end
      -- (in the dtype and on the device the empty buffer has now, after a :double() or :to())
      for _, bname in ipairs(self._lazy_buffers) do self[bname]:set_(m[bname]:to(self[bname])) end
    end)
    self[spec.field] = size
    self._lazy_args, self._lazy_buffers = nil, nil
    setmetatable(self, Base)
    self:reset_parameters()
  end

  function cls:forward(x, ...)
    local size, err = spec.infer(self, x)
    if size == nil then error(name .. ': ' .. err, 2) end
    self:_materialize(size, 2)
    return self:forward(x, ...)
  end

  -- load_state_dict into an uninitialised module takes the size from the saved tensors' shapes
  function cls:_load_state_hook(sd, prefix)
    if getmetatable(self) == cls then
      local size = spec.from_state(self, sd, prefix)
      if size then self:_materialize(size, 3) end
    end
    if Base._load_state_hook then Base._load_state_hook(self, sd, prefix) end
  end
  return cls
end

-- the size of a saved tensor's dim d, if it is there with nd dims
local function saved(sd, key, nd, d)
  local t = sd[key]
  if torch.is_tensor(t) and t:dim() == nd then return t:size(d) end
end

--- LazyLinear(out_features, {bias = true, device, dtype}): in_features from the last size of the input
M.LazyLinear = lazy(Linear, 'LazyLinear', {
  field = 'in_features',
  check = function(out_features)
    out_features = as_int(out_features)
    if math.type(out_features) ~= 'integer' or out_features < 0 then
      error('LazyLinear: out_features must be a non-negative integer, got ' .. tostring(out_features), 4)
    end
  end,
  placeholder = function() return 0 end,
  infer = function(_, x)
    if not torch.is_tensor(x) or x:dim() == 0 then return nil, 'expected an input tensor with at least one dimension' end
    return x:size(-1)
  end,
  from_state = function(_, sd, prefix) return saved(sd, prefix .. 'weight', 2, 2) end,
})

-- the channels of an input of nd spatial dims, batched or not (PyTorch's _get_in_channels)
local function channels(self, x, nd)
  if not torch.is_tensor(x) then return nil, 'expected a tensor input, got ' .. type(x) end
  if x:dim() ~= nd + 1 and x:dim() ~= nd + 2 then
    return nil, string.format('Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s', nd + 1,
      nd + 2, self:_get_name(), tostring(x.shape))
  end
  return x:size(x:dim() - nd)
end

-- a convolution's placeholder in_channels: its groups (in_channels must be a multiple), when valid
local function groups(_, _, o)
  local g = as_int(type(o) == 'table' and o.groups or 1)
  return math.type(g) == 'integer' and g > 0 and g or 1
end

for nd = 1, 3 do
  local d = nd .. 'd'
  --- LazyConvNd(out_channels, kernel_size, {stride, padding, dilation, groups, bias, padding_mode, device, dtype})
  M['LazyConv' .. d] = lazy(conv['Conv' .. d], 'LazyConv' .. d, {
    field = 'in_channels',
    placeholder = groups,
    infer = function(self, x) return channels(self, x, nd) end,
    from_state = function(self, sd, prefix)
      local c = saved(sd, prefix .. 'weight', nd + 2, 2)
      return c and c * self.groups
    end,
  })
  --- LazyConvTransposeNd(out_channels, kernel_size, {stride, padding, output_padding, groups, bias,
  -- dilation, device, dtype})
  M['LazyConvTranspose' .. d] = lazy(conv['ConvTranspose' .. d], 'LazyConvTranspose' .. d, {
    field = 'in_channels',
    placeholder = groups,
    infer = function(self, x) return channels(self, x, nd) end,
    from_state = function(_, sd, prefix) return saved(sd, prefix .. 'weight', nd + 2, 1) end,
  })

  -- the normalisations' size: their weight's or running mean's
  local function features(_, sd, prefix)
    return saved(sd, prefix .. 'weight', 1, 1) or saved(sd, prefix .. 'running_mean', 1, 1)
  end
  --- LazyBatchNormNd({eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true, device, dtype}):
  -- num_features from dim 2 of the input
  M['LazyBatchNorm' .. d] = lazy(norm['BatchNorm' .. d], 'LazyBatchNorm' .. d, {
    field = 'num_features',
    placeholder = function() return 1 end,
    infer = function(self, x)
      local ok, err = pcall(self._check_input_dim, self, x)
      if not ok then return nil, (tostring(err):gsub('^[^\n]-:%d+: ', '', 1):gsub('^BatchNorm%dd: ', '', 1)) end
      return x:size(2)
    end,
    from_state = features,
  })
  --- LazyInstanceNormNd({eps = 1e-5, momentum = 0.1, affine = true, track_running_stats = true, device,
  -- dtype}): num_features from the channel dim of the input (batched or not). affine and
  -- track_running_stats default to true, as PyTorch's lazy forms (InstanceNormNd's default false).
  local inorm = lazy(norm['InstanceNorm' .. d], 'LazyInstanceNorm' .. d, {
    field = 'num_features',
    placeholder = function() return 1 end,
    infer = function(self, x) return channels(self, x, nd) end,
    from_state = features,
    -- InstanceNormNd with the lazy defaults made explicit
    args = function(self, args)
      local o = {}
      for k, v in pairs(args[1] or {}) do o[k] = v end
      o.affine, o.track_running_stats = self.affine, self.track_running_stats
      return table.pack(o)
    end,
  })
  inorm._affine_default, inorm._track_default = true, true
  M['LazyInstanceNorm' .. d] = inorm
end

return M
