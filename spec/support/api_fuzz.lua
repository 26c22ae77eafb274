-- A seeded, deterministic fuzzer of lutorch's Lua API (spec/api_fuzz_spec.lua runs it).
--
-- It calls the functions of torch, torch.Tensor's methods and metamethods, torch.nn.functional,
-- torch.linalg, torch.special (and torch.fft where it exists), the nn module constructors (then the
-- module on a fuzzed input, and backward through it) and the optimizers and learning-rate schedulers
-- (constructed, then stepped), each with arguments drawn from a rich pool: tensors of every dtype and
-- of awkward shapes and layouts, extreme numbers, strings, booleans, nil holes, tables, functions and
-- foreign userdata. Each call runs in pcall. The rules it checks:
--   * a failure is a non-empty string (or an error object with a string message), never a crash;
--   * a returned tensor is sane: its shape, strides and offset stay inside its storage, it prints,
--     and :sum() works;
--   * a call on these tiny inputs takes well under a few seconds (a huge allocation fails fast).
-- Call i's target and arguments come from a generator seeded by (seed, i), so a call can be replayed
-- by itself (M.run{seed = s, first = i, calls = 1}) unless it is a mutant: half the calls of a target
-- that has succeeded before change one or two arguments of one of its last successful calls (which
-- reaches deeper than fresh arguments, most of which are refused at once); a mutant replays from the
-- start of its run (a few seconds). A crash cannot be caught: LUTORCH_FUZZ_TRACE=1 prints each call
-- to stderr before making it.
local torch = require 'torch'
local nn = torch.nn

local M = {}

-- ---- the generator: splitmix64 on Lua's 64-bit integers (wrapping arithmetic) ----

local GOLDEN = 0x9E3779B97F4A7C15
local function mix(z)
  z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
  z = (z ~ (z >> 27)) * 0x94D049BB133111EB
  return z ~ (z >> 31)
end

local Rng = {}
Rng.__index = Rng
function M.rng(...)
  local s = GOLDEN
  for _, v in ipairs { ... } do s = mix(s ~ v) end
  return setmetatable({ s = s }, Rng)
end
function Rng:next()
  self.s = self.s + GOLDEN
  return mix(self.s)
end
function Rng:int(lo, hi) return lo + (self:next() >> 1) % (hi - lo + 1) end
function Rng:float() return (self:next() >> 11) * 2.0 ^ -53 end
function Rng:chance(p) return self:float() < p end
function Rng:pick(t) return t[self:int(1, #t)] end
-- t = { {weight, value}, ... }
function Rng:weighted(t)
  local total = 0
  for _, e in ipairs(t) do total = total + e[1] end
  local r = self:float() * total
  for _, e in ipairs(t) do
    r = r - e[1]
    if r < 0 then return e[2] end
  end
  return t[#t][2]
end

-- ---- the pools ----

local NAN, INF = 0 / 0, math.huge
-- numbers: the ordinary, the awkward and the extreme. Sizes that a machine could satisfy but only
-- slowly (2^31 elements) come in only with big = true, for runs under a memory limit.
local NUMBERS = { 0, -0.0, 1, 2, 3, 4, 5, -1, -2, -3, 0.5, -1.5, 2.5, 1e-7, 0.1, 0.9, 9, 1 << 62, 2.0 ^ 62,
  1e308, -1e308, NAN, INF, -INF, math.mininteger, math.maxinteger, 255, 256, -129, 1e-310, 2.0 ^ 53 + 1 }
local BIG_NUMBERS = { 1 << 31, (1 << 31) - 1, 1 << 32, 2.0 ^ 31, -(1 << 31) }
local DIMS = { 1, 2, 3, -1, -2, -3, 0, 4, 5, -4, -5, 6 }
local STRINGS = { 'mean', 'sum', 'none', 'cpu', 'cpu:1', 'cuda', 'cuda:0', 'fro', 'nuc', 'inf', 'ij', 'xy',
  'reflect', 'replicate', 'circular', 'constant', 'zeros', 'nearest', 'bilinear', 'bicubic', 'linear', 'trilinear',
  'area', 'tanh', 'relu', 'gelu', 'L', 'U', 'reduced', 'complete', 'r', 'ii->i', 'ij,jk->ik', 'i,i->', '...ij->ji',
  'b i j -> b j i', 'float32', 'int64', '', 'x', string.rep('a', 300), 'batchmean', 'max', 'min', 'amax', 'prod',
  'trunc', 'floor', 'left', 'right', 'ortho', 'forward', 'backward', 'higher', 'lower', 'midpoint', 'gelsd',
  '%s%s%n', '\0nul', 'xavier', 'fan_in', 'leaky_relu', 'gloo', 'mpi' }
local DTYPES = { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
  torch.int8, torch.uint8, torch.bool }
local FLOAT_DTYPES = { torch.float32, torch.float64, torch.float16, torch.bfloat16 }
local SHAPES = { {}, { 0 }, { 1 }, { 3 }, { 5 }, { 2, 3 }, { 3, 2 }, { 3, 3 }, { 4, 4 }, { 1, 1 }, { 3, 0 }, { 0, 3 },
  { 2, 0, 3 }, { 1, 3 }, { 3, 1 }, { 2, 3, 4 }, { 2, 2, 2 }, { 1, 2, 3, 4 }, { 2, 1, 3, 1 }, { 2, 3, 4, 5 },
  { 1, 1, 2, 2, 2 }, { 2, 2, 1, 2, 2, 1 }, { 1025 }, { 3, 257 }, { 33, 33 }, { 2, 3, 5, 5 }, { 1, 3, 8, 8 } }

-- keys of options tables, each with a few typical values (a random argument stands in sometimes)
local OPTION_VALUES = {
  dtype = DTYPES, device = { 'cpu', 'cpu:1', 'cuda', 'cpu:7' }, requires_grad = { true, false },
  keepdim = { true, false }, dim = DIMS, alpha = { 0, 1, 2, -1 }, beta = { 0, 1, 0.5 }, reduction = { 'mean', 'sum', 'none', 'bad' },
  p = { 0, 0.5, 1, 2, INF, -1 }, eps = { 1e-5, 0, -1 }, training = { true, false }, stride = { 1, 2, { 1, 2 }, 0 },
  padding = { 0, 1, 'same', 'valid', { 1, 1 }, -1 }, dilation = { 1, 2, 0 }, groups = { 1, 2, 3, 0 },
  bias = { true, false }, lr = { 0.1, 0, -1, NAN }, momentum = { 0, 0.9, 1.5 }, weight_decay = { 0, 0.1, -1 },
  unbiased = { true, false }, correction = { 0, 1, 2 }, descending = { true, false }, stable = { true, false },
  sorted = { true, false }, return_inverse = { true, false }, return_counts = { true, false }, largest = { true, false },
  value = { 0, 1, NAN }, mode = { 'nearest', 'bilinear', 'reflect', 'constant', 'fan_in' }, align_corners = { true, false },
  scale_factor = { 2, 0.5, 0, { 2, 2 } }, size = { 2, { 2, 2 }, 0 }, ignore_index = { 1, -100, 0 },
  label_smoothing = { 0, 0.1, 1.5 }, weight = { 'tensor' }, inplace = { true, false }, generator = { 'generator' },
  non_blocking = { true, false }, copy = { true, false }, min = { 0, -1, NAN }, max = { 1, 0, NAN }, upper = { true, false },
  left = { true, false }, full_matrices = { true, false }, some = { true, false }, ord = { 2, 'fro', 'nuc', INF, 0 },
  rcond = { 1e-15, -1 }, hermitian = { true, false }, pivot = { true, false }, approximate = { 'none', 'tanh', 'x' },
  negative_slope = { 0.01, -1 }, num_classes = { -1, 3, 0 }, padding_idx = { 1, -1, 9 }, max_norm = { 1, 0, -1 },
  norm_type = { 2, 1, INF }, ceil_mode = { true, false }, count_include_pad = { true, false },
  divisor_override = { 0, 2 }, return_indices = { true, false }, output_size = { 2, { 2, 2 }, 0 },
  kernel_size = { 1, 2, 3, 0 }, betas = { { 0.9, 0.999 }, { 1.5, 0.9 }, {} }, amsgrad = { true, false },
  nesterov = { true, false }, maximize = { true, false }, dampening = { 0, 0.5 }, rho = { 0.9, 2 },
  history_size = { 1, 3, 0 }, max_iter = { 1, 3, 0 }, line_search_fn = { 'strong_wolfe', 'x' },
  batch_first = { true, false }, bidirectional = { true, false }, num_layers = { 1, 2, 0 },
  nonlinearity = { 'tanh', 'relu', 'x' }, dropout = { 0, 0.5, 1 }, affine = { true, false },
  track_running_stats = { true, false }, elementwise_affine = { true, false }, start_dim = DIMS, end_dim = DIMS,
  threshold = { 20, 0 }, margin = { 1, 0, -1 }, delta = { 1, 0 }, log_input = { true, false }, full = { true, false },
  blank = { 1, 0, 99 }, zero_infinity = { true, false }, padding_mode = { 'zeros', 'reflect', 'circular', 'x' },
  output_padding = { 0, 1 }, shared = { false, true }, map_location = { 'cpu', 'cpu:1' }, correction_ = { 1 },
  scale = { 1, 0, NAN }, is_causal = { true, false }, dropout_p = { 0, 0.5 }, attn_mask = { 'tensor' },
  tau = { 1, 0, -1 }, hard = { true, false }, lambd = { 0.5, -1 }, start = { 0, 1 }, ['end'] = { 3, 1 }, step = { 1, 0, 2 },
  decimals = { 0, 2, -1 }, out_int32 = { true, false }, right = { true, false }, side = { 'left', 'right', 'x' },
  interpolation = { 'linear', 'lower', 'x' }, bins = { 2, 0, -1 }, range = { { 0, 1 }, { 1, 0 } }, density = { true, false },
  diagonal = { 0, 1, -1 }, offset = { 0, 1, -1 }, dim1 = DIMS, dim2 = DIMS, storage_offset = { 0, 1, -1 },
  memory_format = { 'contiguous_format', 'x' }, accumulate = { true, false }, include_self = { true, false },
  nan = { 0, 1 }, posinf = { 1, INF }, neginf = { -1 }, driver = { 'gelsd', 'gels', 'x' }, mode_ = { 'reduced' },
}
local OPTION_KEYS = {}
for k in pairs(OPTION_VALUES) do OPTION_KEYS[#OPTION_KEYS + 1] = k end
table.sort(OPTION_KEYS)

-- ---- values ----

local Gen = {}
Gen.__index = Gen

-- ints of a tensor's values: mostly small (valid 1-based indices, counts), sometimes the extremes
local INT_LIMITS = {
  [torch.int64] = { math.mininteger, math.maxinteger }, [torch.int32] = { -(1 << 31), (1 << 31) - 1 },
  [torch.int16] = { -32768, 32767 }, [torch.int8] = { -128, 127 }, [torch.uint8] = { 0, 255 },
}
local FLOAT_SPECIALS = { NAN, INF, -INF, 0.0, -0.0, 1e30, -1e30, 1e-30, 65504, 70000, 3.4e38, 1e-45 }

local function numel_of(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

function Gen:values(n, dtype)
  local r, out = self.r, {}
  local is_float = dtype.is_floating_point
  local special = r:chance(0.15)
  local integral = r:chance(0.25)
  for i = 1, n do
    local v
    if dtype == torch.bool then
      v = r:chance(0.5)
    elseif is_float then
      if special and r:chance(0.3) then v = r:pick(FLOAT_SPECIALS)
      elseif integral then v = r:int(-2, 5) + 0.0
      else v = (r:float() - 0.5) * 4 end
    else
      local lim = INT_LIMITS[dtype]
      if special and r:chance(0.3) then v = r:pick(lim)
      else v = math.max(lim[1], math.min(lim[2], r:int(-2, 6))) end
    end
    out[i] = v
  end
  return out
end

-- a contiguous tensor of the given shape and dtype
function Gen:dense(shape, dtype)
  local n = numel_of(shape)
  local t
  if n == 0 then t = torch.zeros(shape, { dtype = dtype })
  elseif #shape == 0 then t = torch.tensor(self:values(1, dtype)[1], { dtype = dtype })
  else t = torch.tensor(self:values(n, dtype), { dtype = dtype }):reshape(shape) end
  return t
end

-- a tensor of the given shape in one of the layouts: contiguous, transposed, stepped, expanded,
-- overlapping (as_strided), offset into a bigger storage
function Gen:laid_out(shape, dtype)
  local r = self.r
  local d = #shape
  local layout = r:weighted { { 60, 'dense' }, { 10, 'transposed' }, { 10, 'stepped' }, { 8, 'expanded' },
    { 5, 'overlap' }, { 7, 'offset' } }
  if layout == 'transposed' and d >= 2 then
    local s = {}
    for i = 1, d do s[i] = shape[i] end
    s[1], s[d] = s[d], s[1]
    return self:dense(s, dtype):transpose(1, d)
  elseif layout == 'stepped' and d >= 1 and shape[1] > 0 then
    -- every other element along the first dim: a stride twice the natural one
    local s = {}
    for i = 1, d do s[i] = shape[i] end
    s[1] = s[1] * 2
    return self:dense(s, dtype):unfold(1, 1, 2):select(d + 1, 1)
  elseif layout == 'expanded' and d >= 1 then
    local s = {}
    for i = 1, d do s[i] = (r:chance(0.5) and 1 or shape[i]) end
    return self:dense(s, dtype):expand(shape)
  elseif layout == 'overlap' and d >= 1 and numel_of(shape) > 0 then
    -- windows that share elements: stride 1 along every dim
    local strides, reach = {}, 1
    for i = 1, d do strides[i] = 1; reach = reach + shape[i] - 1 end
    return self:dense({ reach }, dtype):as_strided(shape, strides, 0)
  elseif layout == 'offset' and d >= 1 then
    local n = numel_of(shape)
    return self:dense({ n + 3 }, dtype):narrow(1, 3, n):view(shape)
  end
  return self:dense(shape, dtype)
end

function Gen:dtype()
  return self.r:weighted { { 30, torch.float32 }, { 15, torch.float64 }, { 6, torch.float16 }, { 6, torch.bfloat16 },
    { 12, torch.int64 }, { 5, torch.int32 }, { 4, torch.int16 }, { 4, torch.int8 }, { 5, torch.uint8 }, { 8, torch.bool } }
end

-- a fuzzed tensor: shape from the call's base shape (so that binary ops can succeed) or the pool
function Gen:tensor(opts)
  local r = self.r
  opts = opts or {}
  local shape
  if opts.shape then shape = opts.shape
  elseif r:chance(0.6) then shape = self.base_shape
  else shape = r:pick(SHAPES) end
  local dtype = opts.dtype or (r:chance(0.5) and self.base_dtype or self:dtype())
  local t = self:laid_out(shape, dtype)
  if dtype.is_floating_point and r:chance(opts.grad or 0.2) then
    if r:chance(0.7) then t = t:clone():requires_grad_()
    else t = t:clone():requires_grad_() * 1 end -- a non-leaf
  end
  return t
end

local function cyclic()
  local t = { 1, 2 }
  t[3] = t
  return t
end
local function deep(n)
  local t = { 1 }
  for _ = 1, n do t = { t } end
  return t
end

function Gen:table()
  local r = self.r
  local kind = r:weighted { { 10, 'empty' }, { 25, 'ints' }, { 10, 'nested' }, { 15, 'tensors' }, { 15, 'options' },
    { 4, 'ragged' }, { 3, 'cyclic' }, { 3, 'deep' }, { 5, 'mixed' }, { 5, 'size' }, { 5, 'floats' } }
  if kind == 'empty' then return {}
  elseif kind == 'ints' then
    local t = {}
    for i = 1, r:int(1, 4) do t[i] = r:chance(0.8) and r:pick(DIMS) or r:pick(NUMBERS) end
    return t
  elseif kind == 'floats' then
    local t = {}
    for i = 1, r:int(1, 5) do t[i] = (r:float() - 0.5) * 4 end
    return t
  elseif kind == 'nested' then return { { 1, 2 }, { 3, 4 } }
  elseif kind == 'ragged' then return { { 1 }, { 2, 3 } }
  elseif kind == 'cyclic' then return cyclic()
  elseif kind == 'deep' then return deep(r:pick { 50, 300, 3000 })
  elseif kind == 'tensors' then
    local t = {}
    for i = 1, r:int(1, 3) do t[i] = self:tensor() end
    return t
  elseif kind == 'mixed' then return { self:tensor(), 1, 'a', true }
  elseif kind == 'size' then return self:tensor().shape
  end
  return self:options()
end

function Gen:options(keys)
  local r = self.r
  local o = {}
  for _ = 1, r:int(1, 3) do
    local k = keys and r:pick(keys) or r:pick(OPTION_KEYS)
    local vals = OPTION_VALUES[k]
    local v
    if not vals or r:chance(0.2) then v = self:scalar_arg()
    else
      v = r:pick(vals)
      if v == 'tensor' then v = self:tensor() elseif v == 'generator' then v = torch.Generator() end
    end
    o[k] = v
  end
  return o
end

local FUNCTIONS = {
  function(...) return ... end,
  function() error('fuzz: the function raised') end,
  function() return 'not a tensor' end,
  function() return torch.ones(2) end,
  function(x) return torch.is_tensor(x) and x * 2 or x end,
}

function Gen:special()
  local r = self.r
  local kind = r:int(1, 9)
  if kind == 1 then return r:pick(DTYPES)
  elseif kind == 2 then return torch.device(r:pick { 'cpu', 'cpu:1' })
  elseif kind == 3 then return torch.Generator()
  elseif kind == 4 then return r:pick(FUNCTIONS)
  elseif kind == 5 then return coroutine.create(function() end)
  elseif kind == 6 then return io.stderr -- a userdata of another kind
  elseif kind == 7 then return nn.Linear(2, 2)
  elseif kind == 8 then return torch.float32.name
  end
  return setmetatable({}, { __index = function() error('fuzz: an object that raises on every read') end })
end

-- a non-tensor argument
function Gen:scalar_arg()
  local r = self.r
  local kind = r:weighted { { 40, 'number' }, { 25, 'dim' }, { 12, 'string' }, { 10, 'boolean' }, { 8, 'nil' },
    { 5, 'special' } }
  if kind == 'number' then
    if self.big and r:chance(0.1) then return r:pick(BIG_NUMBERS) end
    return r:pick(NUMBERS)
  elseif kind == 'dim' then return r:pick(DIMS)
  elseif kind == 'string' then return r:pick(STRINGS)
  elseif kind == 'boolean' then return r:chance(0.5)
  elseif kind == 'special' then return self:special()
  end
  return nil
end

function Gen:arg()
  local r = self.r
  local kind = r:weighted { { 45, 'tensor' }, { 35, 'scalar' }, { 14, 'table' }, { 6, 'options' } }
  if kind == 'tensor' then return self:tensor()
  elseif kind == 'table' then return self:table()
  elseif kind == 'options' then return self:options()
  end
  return self:scalar_arg()
end

-- an argument list {n = ..., ...}; first_tensor: the chance that the first is a tensor
function Gen:args(first_tensor)
  local r = self.r
  local n = r:weighted { { 3, 0 }, { 25, 1 }, { 30, 2 }, { 22, 3 }, { 10, 4 }, { 6, 5 }, { 4, 6 } }
  local a = { n = n }
  for i = 1, n do
    if i == 1 and r:chance(first_tensor) then a[i] = self:tensor() else a[i] = self:arg() end
  end
  return self:with_options(a, 0.25)
end

-- a, with an options table appended with chance p (options come last)
function Gen:with_options(a, p)
  if self.r:chance(p) then
    a.n = a.n + 1
    a[a.n] = self:options()
  end
  return a
end

function M.generator(r, big)
  local g = setmetatable({ r = r, big = big }, Gen)
  g.base_shape = r:pick(SHAPES)
  g.base_dtype = r:chance(0.6) and r:pick(FLOAT_DTYPES) or g:dtype()
  return g
end

-- ---- describing values (for the findings and the trace) ----

local function describe(v, depth)
  depth = depth or 0
  if torch.is_tensor(v) then
    local ok, s = pcall(function()
      local sh = {}
      for i, n in ipairs(v.shape) do sh[i] = tostring(n) end
      local st = {}
      for i = 1, v:dim() do st[i] = tostring(v:stride(i)) end
      return string.format('T(%s,[%s],stride[%s]%s%s)', v.dtype.name, table.concat(sh, ','), table.concat(st, ','),
        v:storage_offset() ~= 0 and ',off' .. v:storage_offset() or '', v.requires_grad and ',grad' or '')
    end)
    return ok and s or 'T(?)'
  end
  local t = type(v)
  if t == 'string' then
    if #v > 20 then return string.format('%q', v:sub(1, 8) .. '..(' .. #v .. ')') end
    return string.format('%q', v)
  elseif t == 'number' then
    if math.type(v) == 'integer' then return tostring(v) end
    return string.format('%.17g', v)
  elseif t == 'table' then
    if getmetatable(v) == torch.Size then return 'Size' .. tostring(v) end
    if depth > 1 then return '{...}' end
    local parts, n = {}, 0
    for k, x in pairs(v) do
      n = n + 1
      if n > 6 then parts[#parts + 1] = '...'; break end
      local ks = math.type(k) == 'integer' and '' or tostring(k) .. '='
      parts[#parts + 1] = ks .. (x == v and '<self>' or describe(x, depth + 1))
    end
    return '{' .. table.concat(parts, ', ') .. '}'
  end
  return t == 'nil' and 'nil' or (t == 'boolean' and tostring(v)) or ('<' .. t .. '>')
end
M.describe = describe

local function describe_args(a)
  local p = {}
  for i = 1, a.n do p[i] = describe(a[i]) end
  return table.concat(p, ', ')
end

-- ---- checks ----

-- an error value must be a message: a non-empty string, or an object with a string message
local function error_problem(err)
  if type(err) == 'string' then
    if #err == 0 then return 'the error is an empty string' end
    return nil
  end
  if type(err) == 'table' then
    local m = err.msg or err.message
    if type(m) == 'string' and #m > 0 then return nil end
    local mt = getmetatable(err)
    if mt and mt.__tostring then
      local ok, s = pcall(tostring, err)
      if ok and type(s) == 'string' and #s > 0 then return nil end
    end
  end
  return 'the error is not a message: a ' .. type(err) .. ' (' .. tostring(err) .. ')'
end
M.error_problem = error_problem

-- the problem with a returned tensor, or nil
local function tensor_problem(t)
  local ok, why = pcall(function()
    local d = t:dim()
    local shape = t.shape
    if #shape ~= d then return ('%d sizes for %d dims'):format(#shape, d) end
    local n, reach_lo, reach_hi = 1, t:storage_offset(), t:storage_offset()
    if math.type(reach_lo) ~= 'integer' or reach_lo < 0 then return 'storage offset ' .. tostring(reach_lo) end
    for i = 1, d do
      local s, st = shape[i], t:stride(i)
      if math.type(s) ~= 'integer' or s < 0 then return 'size ' .. tostring(s) .. ' at dim ' .. i end
      if math.type(st) ~= 'integer' then return 'stride ' .. tostring(st) .. ' at dim ' .. i end
      n = n * s
      if s > 0 then
        if st >= 0 then reach_hi = reach_hi + (s - 1) * st else reach_lo = reach_lo + (s - 1) * st end
      end
    end
    if n ~= t:numel() then return ('numel %d, but the sizes multiply to %d'):format(t:numel(), n) end
    if n > 0 and t.device.type == 'cpu' then
      local storage = t:_storage_numel()
      if reach_lo < 0 or reach_hi >= storage then
        return ('the view reaches elements %d..%d of a storage of %d'):format(reach_lo, reach_hi, storage)
      end
    end
    if n <= 100000 then
      local s = tostring(t)
      if type(s) ~= 'string' or #s == 0 then return 'it does not print' end
      local sum = t:sum()
      if not torch.is_tensor(sum) or sum:numel() ~= 1 then return ':sum() is not one value' end
      sum:item()
    end
    return nil
  end)
  if not ok then return 'using the result raised: ' .. tostring(why) end
  return why
end
M.tensor_problem = tensor_problem

local function result_problem(v, depth, seen)
  if torch.is_tensor(v) then return tensor_problem(v) end
  if type(v) == 'table' and depth < 2 and not seen[v] and getmetatable(v) == nil then
    seen[v] = true
    for _, x in pairs(v) do
      local p = result_problem(x, depth + 1, seen)
      if p then return p end
    end
  end
  return nil
end

-- ---- global state: saved before each call, restored after it ----

local function save_state()
  return {
    grad = torch.is_grad_enabled(), dtype = torch.get_default_dtype(), print = torch.get_printoptions(),
    det = torch.are_deterministic_algorithms_enabled(), det_warn = torch.is_deterministic_algorithms_warn_only_enabled(),
    det_mode = torch.get_deterministic_debug_mode(), matmul = torch.get_float32_matmul_precision(),
    warn = torch.is_warn_always_enabled(), anomaly = torch.is_anomaly_enabled(), autocast = torch._autocast_state(),
    inference = torch.is_inference_mode_enabled(),
  }
end

local function restore_state(s)
  torch.set_grad_enabled(s.grad)
  torch.set_default_dtype(s.dtype)
  torch.set_printoptions(s.print)
  torch.use_deterministic_algorithms(s.det, { warn_only = s.det_warn })
  torch.set_deterministic_debug_mode(s.det_mode)
  torch.set_float32_matmul_precision(s.matmul)
  torch.set_warn_always(s.warn)
  torch.autograd.set_detect_anomaly(s.anomaly)
  torch._set_autocast_state(s.autocast)
  if torch.is_inference_mode_enabled() ~= s.inference then
    error('the call left inference mode ' .. (s.inference and 'off' or 'on'))
  end
end

-- a result that is a context (a to-be-closed value) is closed, as a `local _ <close>` would
local function close_contexts(res)
  for i = 1, res.n do
    local v = res[i]
    local mt = (type(v) == 'table' or type(v) == 'userdata') and getmetatable(v)
    if type(mt) == 'table' and rawget(mt, '__close') then pcall(mt.__close, v) end
  end
end

-- ---- the targets ----

-- Functions not called, with the reason.
M.SKIP = {
  ['torch.set_num_threads'] = 'sets the process-wide thread count',
  ['torch.set_num_interop_threads'] = 'sets the process-wide thread count',
  ['torch._set_thread_num_threads'] = 'sets the thread count of the calling thread',
  ['torch.set_flush_denormal'] = 'changes the floating-point mode with no way to read it back',
  ['torch._lua_thread'] = 'starts a thread',
  ['torch._lua_threads_run'] = 'runs Lua states on threads',
  ['torch._worker_pool_new'] = 'starts data-loader worker threads',
  ['torch._worker_pool_thread_rng'] = 'a data-loader worker thread\'s generator',
  ['torch._memory_set_policy'] = 'switches the caching allocator\'s policy for the process',
  ['torch._safetensors_set_write_limit'] = 'sets the process-wide limit on file writes (a test hook)',
  ['torch._stream_hold'] = 'a test hook that blocks a stream until released',
  ['torch._set_steal_delay'] = 'a test hook that slows every work-stealing loop\'s first worker, process-wide',
  ['torch._set_grad_enabled'] = 'the raw switch under set_grad_enabled, restored by the state guard only in pairs',
  ['torch.inference_mode'] = 'enters inference mode, which cannot be left from outside while a tensor made in it lives',
  ['torch._set_autocast_state'] = 'takes the opaque bytes of _autocast_state',
  ['nn.DataParallel'] = 'turns on asynchronous execution on its devices',
  ['nn.DistributedDataParallel'] = 'needs an initialised process group',
}

-- Functions whose time follows a count of iterations given as an argument: asked for 2^62 of them,
-- they run on (the 5 s limit stops them), as PyTorch's would, and that is not reported.
M.SLOW_OK = {
  ['torch.svd_lowrank'] = 'niter power iterations', ['torch.pca_lowrank'] = 'niter power iterations',
  ['optim.LBFGS'] = 'max_iter iterations of each step',
}

-- functions that take a file name: their string arguments become paths in a temporary directory
local FILE_TAKERS = { ['torch.save'] = true, ['torch.load'] = true, ['torch.from_file'] = true,
  ['torch._safetensors_write'] = true, ['torch._safetensors_read'] = true, ['torch._read_idx'] = true }

local function sorted_functions(prefix, t, out, first_tensor)
  local names = {}
  for k, v in pairs(t) do
    if type(k) == 'string' and type(v) == 'function' then names[#names + 1] = k end
  end
  table.sort(names)
  for _, k in ipairs(names) do
    local name = prefix .. k
    if not M.SKIP[name] then out[#out + 1] = { name = name, kind = 'function', fn = t[k], first_tensor = first_tensor } end
  end
end

local function is_class(v)
  local mt = type(v) == 'table' and getmetatable(v)
  return mt and type(mt) == 'table' and mt.__call ~= nil
end

-- metamethods of tensors as targets
local OPERATORS = {
  add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
  pow = function(a, b) return a ^ b end, mod = function(a, b) return a % b end,
  idiv = function(a, b) return a // b end, unm = function(a) return -a end,
  index = function(a, i) return a[i] end,
  newindex = function(a, i, v) a[i] = v end,
  len = function(a) return #a end, tostring = function(a) return tostring(a) end,
  eq = function(a, b) return a == b end, lt = function(a, b) return a < b end,
  le = function(a, b) return a <= b end, concat = function(a, b) return a .. b end,
  band = function(a, b) return a & b end, bor = function(a, b) return a | b end,
  shl = function(a, b) return a << b end, bnot = function(a) return ~a end,
  call = function(a, ...) return a(...) end, field = function(a, k) return a[k] end,
  setfield = function(a, k, v) a[k] = v end, pairs = function(a) for _ in pairs(a) do end end,
}

function M.targets()
  local out = {}
  sorted_functions('torch.', torch, out, 0.75)
  sorted_functions('Tensor.', torch.Tensor, out, 0.95)
  sorted_functions('F.', nn.functional, out, 0.9)
  sorted_functions('linalg.', torch.linalg, out, 0.9)
  sorted_functions('special.', torch.special, out, 0.85)
  if torch.fft then sorted_functions('fft.', torch.fft, out, 0.9) end
  local ops = {}
  for k in pairs(OPERATORS) do ops[#ops + 1] = k end
  table.sort(ops)
  for _, k in ipairs(ops) do out[#out + 1] = { name = 'op.' .. k, kind = 'operator', fn = OPERATORS[k] } end
  local classes = {}
  for k, v in pairs(nn) do
    if type(k) == 'string' and is_class(v) and k ~= 'Module' then classes[#classes + 1] = k end
  end
  table.sort(classes)
  for _, k in ipairs(classes) do
    if not M.SKIP['nn.' .. k] then out[#out + 1] = { name = 'nn.' .. k, kind = 'module', cls = nn[k] } end
  end
  local optims = {}
  for k, v in pairs(torch.optim) do if type(k) == 'string' and is_class(v) then optims[#optims + 1] = k end end
  table.sort(optims)
  for _, k in ipairs(optims) do out[#out + 1] = { name = 'optim.' .. k, kind = 'optim', cls = torch.optim[k] } end
  local scheds = {}
  for k, v in pairs(torch.optim.lr_scheduler) do
    if type(k) == 'string' and is_class(v) then scheds[#scheds + 1] = k end
  end
  table.sort(scheds)
  for _, k in ipairs(scheds) do
    out[#out + 1] = { name = 'lr_scheduler.' .. k, kind = 'scheduler', cls = torch.optim.lr_scheduler[k] }
  end
  return out
end

-- ---- running one call ----

-- pcall(fn, ...), except that Lua code still running after `seconds` raises, again and again until
-- the call returns (a loop in C runs on: the time it took is checked afterwards)
function M.within(seconds, fn, ...)
  local deadline = torch.utils.clock() + seconds
  debug.sethook(function()
    if torch.utils.clock() > deadline then
      error(('still running after %g s'):format(seconds), 2)
    end
  end, '', 10000)
  local res = table.pack(pcall(fn, ...))
  debug.sethook()
  return table.unpack(res, 1, res.n)
end

-- a Run holds what one fuzzing run needs and collects its findings
local Run = {}
Run.__index = Run

function Run:finding(i, target, what, args)
  local f = ('call %d: %s(%s): %s'):format(i, target.name, args and describe_args(args) or '', what)
  self.findings[#self.findings + 1] = f
end

-- calls fn(table.unpack(args)) in pcall; checks the error or the results; returns ok and the results
function Run:checked(i, target, label, fn, args)
  if self.trace then
    io.stderr:write(('call %d: %s%s(%s)\n'):format(i, target.name, label, describe_args(args)))
    io.stderr:flush()
  end
  local t0 = torch.utils.clock()
  local res = table.pack(M.within(self.slow, fn, table.unpack(args, 1, args.n)))
  local dt = torch.utils.clock() - t0
  self.counts.calls = self.counts.calls + 1
  local ok = table.remove(res, 1)
  res.n = res.n - 1
  if self.trace and dt > 0.2 then io.stderr:write(('  %s took %.2f s\n'):format(label, dt)) end
  if dt > self.slow and not M.SLOW_OK[target.name] then
    self:finding(i, target, ('%s took %.1f s'):format(label, dt), args)
  end
  if not ok then
    self.counts.errors = self.counts.errors + 1
    local p = error_problem(res[1])
    if p then self:finding(i, target, label .. ': ' .. p, args) end
    return false
  end
  self.counts.ok = self.counts.ok + 1
  close_contexts(res)
  for k = 1, res.n do
    local p = result_problem(res[k], 0, {})
    if p then self:finding(i, target, ('%s: result %d: %s'):format(label, k, p), args) end
  end
  return true, res
end

-- temporary paths for the file takers
function Run:paths()
  if not self.tmpdir then
    self.tmpdir = os.tmpname()
    os.remove(self.tmpdir)
    assert(os.execute('mkdir -p ' .. self.tmpdir))
    local f = assert(io.open(self.tmpdir .. '/garbage', 'wb'))
    f:write('\16\0\0\0\0\0\0\0{"a":{"dtype":"F32","shape":[9999999999],"data_offsets":[0,4]}}garbage')
    f:close()
  end
  return { self.tmpdir .. '/a.safetensors', self.tmpdir .. '/missing', self.tmpdir, self.tmpdir .. '/garbage' }
end

function Run:cleanup()
  if self.tmpdir then os.execute('rm -rf ' .. self.tmpdir) end
end

-- a variant of a tensor: the same shape in another dtype or layout, or a near shape
function Gen:tensor_like(t)
  local r = self.r
  local shape = {}
  for k, n in ipairs(t.shape) do shape[k] = n end
  local kind = r:int(1, 6)
  if kind == 1 then return self:tensor { shape = shape, dtype = self:dtype() }
  elseif kind == 2 then return self:tensor { shape = shape, dtype = t.dtype, grad = t.requires_grad and 0 or 0.5 }
  elseif kind == 3 and #shape > 0 then shape[r:int(1, #shape)] = r:pick { 0, 1, 2 }
  elseif kind == 4 and #shape > 0 then table.remove(shape, r:int(1, #shape))
  elseif kind == 5 and #shape < 6 then table.insert(shape, r:int(1, #shape + 1), r:pick { 1, 2 })
  else return self:tensor { dtype = t.dtype } end
  return self:tensor { shape = shape, dtype = t.dtype }
end

-- args with one or two of them changed (or one added or dropped): near a call that succeeded
function Gen:mutant(args)
  local r = self.r
  local a = { n = args.n }
  for k = 1, args.n do a[k] = args[k] end
  for _ = 1, r:int(1, 2) do
    local what = r:int(1, 10)
    if what == 1 then
      a.n = a.n + 1
      a[a.n] = self:arg()
    elseif what == 2 and a.n > 0 then
      a[a.n] = nil
      a.n = a.n - 1
    elseif a.n > 0 then
      local k = r:int(1, a.n)
      local v = a[k]
      if torch.is_tensor(v) and r:chance(0.85) then a[k] = self:tensor_like(v)
      elseif type(v) == 'number' and r:chance(0.8) then
        a[k] = r:chance(0.5) and r:pick(self.big and r:chance(0.3) and BIG_NUMBERS or NUMBERS) or v + r:pick { -1, 1 }
      else a[k] = self:arg() end
    end
  end
  return a
end

-- the argument lists of the last calls of each target that succeeded (a few each)
local CORPUS_PER_TARGET = 4

function Run:call_function(i, target, g)
  local corpus = self.corpus[target.name]
  if corpus and g.r:chance(0.5) then
    local args = g:mutant(g.r:pick(corpus))
    local ok = self:checked(i, target, ' (a mutant)', target.fn, args)
    if ok then self:remember(target, args, g) end
    return
  end
  local args = g:args(target.first_tensor)
  if FILE_TAKERS[target.name] then
    local paths = self:paths()
    for k = 1, args.n do if type(args[k]) == 'string' then args[k] = g.r:pick(paths) end end
    if args.n == 0 or g.r:chance(0.7) then
      args[1] = g.r:pick(paths)
      if args.n == 0 then args.n = 1 end
    end
  end
  if self:checked(i, target, '', target.fn, args) then self:remember(target, args, g) end
end

function Run:remember(target, args, g)
  if FILE_TAKERS[target.name] then return end
  local c = self.corpus[target.name]
  if not c then
    c = {}
    self.corpus[target.name] = c
  end
  if #c < CORPUS_PER_TARGET then c[#c + 1] = args else c[g.r:int(1, #c)] = args end
end

function Run:call_operator(i, target, g)
  local args = g:args(0.9)
  if args.n == 0 then args = { n = 1, g:tensor() } end
  self:checked(i, target, '', target.fn, args)
end

-- small integers for constructors (features, channels, kernel sizes), sometimes anything
function Gen:ctor_args()
  local r = self.r
  local n = r:weighted { { 5, 0 }, { 30, 1 }, { 30, 2 }, { 20, 3 }, { 15, 4 } }
  local a = { n = n }
  for k = 1, n do
    a[k] = r:weighted { { 70, r:int(1, 4) }, { 5, 0 }, { 25, false } } or self:arg()
  end
  return self:with_options(a, 0.3)
end

-- an input for a module made with constructor arguments a: shaped around its first integer
-- (features, channels) in one of the layouts a layer takes
function Gen:module_input(a)
  local r = self.r
  if r:chance(0.15) then return self:arg() end
  local c = 3
  for k = 1, a.n do
    if math.type(a[k]) == 'integer' and a[k] > 0 and a[k] <= 16 then c = a[k]; break end
  end
  local b, l = r:int(1, 3), r:int(1, 6)
  local shape = r:pick { { b, c }, { b, c, l }, { b, c, l, l }, { b, c, 2, l, l }, { c }, { l, b, c }, { b, l, c }, { c, l } }
  local dtype = r:weighted { { 70, torch.float32 }, { 10, torch.float64 }, { 5, torch.float16 }, { 15, torch.int64 } }
  if dtype == torch.int64 then
    return torch.tensor(self:values(numel_of(shape), dtype), { dtype = dtype }):reshape(shape):clamp(1, c)
  end
  return self:tensor { shape = shape, dtype = dtype, grad = 0.3 }
end

function Run:call_module(i, target, g)
  local r = g.r
  local ctor = g:ctor_args()
  local ok, res = self:checked(i, target, '', target.cls, ctor)
  if not ok then return end
  local m = res[1]
  if type(m) ~= 'table' then self:finding(i, target, 'the constructor returned a ' .. type(m), ctor); return end
  for _ = 1, r:int(1, 2) do
    if r:chance(0.2) then m:eval() end
    local x = g:module_input(ctor)
    local input = { n = 1, x }
    for _ = 1, r:weighted { { 60, 0 }, { 30, 1 }, { 10, 2 } } do
      input.n = input.n + 1
      input[input.n] = r:chance(0.7) and g:tensor { shape = torch.is_tensor(x) and x.shape or nil, dtype = torch.is_tensor(x) and x.dtype or nil } or g:arg()
    end
    local made = '(' .. describe_args(ctor) .. ')'
    local fok, out = self:checked(i, target, made .. ':forward', m, input)
    if fok and torch.is_tensor(out[1]) and out[1].requires_grad and r:chance(0.5) then
      self:checked(i, target, made .. ':backward', function(y) y:sum():backward() end, { n = 1, out[1] })
    end
  end
  if r:chance(0.3) then
    self:checked(i, target, ':state_dict', function() return m:load_state_dict(m:state_dict()) end, { n = 0 })
  end
end

-- parameters for an optimizer: leaves that require grad, some with gradients (of the right shape,
-- or not), sometimes in a group, sometimes wrong
function Gen:params()
  local r = self.r
  local kind = r:weighted { { 75, 'leaves' }, { 10, 'group' }, { 15, 'anything' } }
  if kind == 'anything' then return self:arg() end
  local ps = {}
  for k = 1, r:int(1, 3) do
    local dtype = r:weighted { { 70, torch.float32 }, { 15, torch.float64 }, { 5, torch.float16 }, { 5, torch.bfloat16 }, { 5, torch.int64 } }
    local p = self:dense(r:pick(SHAPES), dtype)
    if dtype.is_floating_point then p:requires_grad_(r:chance(0.95)) end
    if p.requires_grad and r:chance(0.8) then
      local gs = r:chance(0.9) and p.shape or r:pick(SHAPES)
      local gd = r:chance(0.9) and dtype or self:dtype()
      pcall(function() p.grad = self:dense(gs, gd) end)
    end
    ps[k] = p
  end
  if kind == 'group' then return { { params = ps, lr = r:pick { 0.1, -1, NAN } } } end
  return ps
end

local OPTIM_KEYS = { 'lr', 'momentum', 'dampening', 'weight_decay', 'nesterov', 'betas', 'eps', 'amsgrad', 'maximize',
  'rho', 'alpha', 'lambd', 'history_size', 'max_iter', 'line_search_fn', 'centered', 'foreach' }

function Run:call_optim(i, target, g)
  local r = g.r
  local params = g:params()
  local args = { n = 1, params }
  if r:chance(0.8) then args.n, args[2] = 2, g:options(OPTIM_KEYS) end
  if r:chance(0.05) then args = g:args(0) end
  local ok, res = self:checked(i, target, '', target.cls, args)
  if not ok then return end
  local opt = res[1]
  local plist = type(params) == 'table' and (params[1] and params[1].params or params) or {}
  local function closure()
    opt:zero_grad()
    local loss = torch.zeros(1)
    for _, p in ipairs(plist) do
      if torch.is_tensor(p) and p.requires_grad then loss = loss + (p:float() ^ 2):sum() end
    end
    if loss.requires_grad then loss:backward() end
    return loss
  end
  for _ = 1, r:int(1, 3) do
    self:checked(i, target, ':step', function() return opt:step(r:chance(0.5) and closure or nil) end, { n = 0 })
  end
  if r:chance(0.5) then
    self:checked(i, target, ':state_dict', function() return opt:load_state_dict(opt:state_dict()) end, { n = 0 })
  end
end

function Run:call_scheduler(i, target, g)
  local r = g.r
  local p = torch.zeros(2, { requires_grad = true })
  local opt = torch.optim.SGD({ p }, { lr = 0.1 })
  local args = g:args(0)
  if r:chance(0.8) then
    args[1] = opt
    if args.n == 0 then args.n = 1 end
  end
  for k = 2, args.n do
    if r:chance(0.5) and type(args[k]) ~= 'table' then args[k] = r:pick { 1, 2, 0.5, 0.1, -1, 0, 10 } end
  end
  local ok, res = self:checked(i, target, '', target.cls, args)
  if not ok then return end
  for _ = 1, r:int(1, 4) do
    local sargs = { n = 0 }
    if r:chance(0.3) then sargs = { n = 1, r:pick { 1.0, NAN, 'x', -1 } } end
    self:checked(i, target, ':step', function(...) return res[1]:step(...) end, sargs)
  end
end

-- the target of call i (a shuffle of all targets per round of #targets calls)
function Run:target_of(i)
  local n = #self.targets
  local round, pos = (i - 1) // n, (i - 1) % n + 1
  local perm = self.perms[round]
  if not perm then
    perm = {}
    for k = 1, n do perm[k] = k end
    local r = M.rng(self.seed, -1, round)
    for k = n, 2, -1 do
      local j = r:int(1, k)
      perm[k], perm[j] = perm[j], perm[k]
    end
    self.perms = { [round] = perm }
  end
  return self.targets[perm[pos]]
end

function Run:one(i)
  local target = self:target_of(i)
  local r = M.rng(self.seed, i)
  torch.manual_seed(self.seed * 1000003 + i)
  local g = M.generator(r, self.big)
  local state = save_state()
  local kind = target.kind
  if kind == 'function' then self:call_function(i, target, g)
  elseif kind == 'operator' then self:call_operator(i, target, g)
  elseif kind == 'module' then self:call_module(i, target, g)
  elseif kind == 'optim' then self:call_optim(i, target, g)
  else self:call_scheduler(i, target, g) end
  local ok, err = pcall(restore_state, state)
  if not ok then self:finding(i, target, 'global state not restorable: ' .. tostring(err)) end
  self.counts.targets[target.name] = true
end

-- opts: seed, calls, first (the first call's number, default 1), big (extreme sizes; run under a
-- memory limit), slow (seconds that make a call a finding, default 5), trace (print each call).
-- Returns {findings = {...}, counts = {calls, ok, errors, targets}}.
function M.run(opts)
  local run = setmetatable({
    seed = opts.seed, big = opts.big, slow = opts.slow or 5, trace = opts.trace, targets = M.targets(), perms = {},
    corpus = {},
    findings = {}, counts = { calls = 0, ok = 0, errors = 0, targets = {} },
  }, Run)
  local first = opts.first or 1
  local ok, err = pcall(function()
    for i = first, first + opts.calls - 1 do
      run:one(i)
      if i % 50 == 0 then collectgarbage() end
    end
  end)
  run:cleanup()
  if not ok then error(err, 0) end
  local nt = 0
  for _ in pairs(run.counts.targets) do nt = nt + 1 end
  run.counts.distinct = nt
  run.counts.available = #run.targets
  return { findings = run.findings, counts = run.counts }
end

return M
