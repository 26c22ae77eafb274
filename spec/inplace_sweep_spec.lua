-- A parity sweep of the in-place tensor methods against PyTorch 1.13 (spec/data/
-- inplace_sweep_reference.lua, written by tools/gen_inplace_sweep.py): x:add_(y), x:exp_(),
-- x:masked_fill_(m, v), x:copy_(y), x:scatter_reduce_(...) and the others, over self's dtype and the
-- operands' dtypes. Each case checks PyTorch's rule that the result must be castable to self's dtype
-- (an int self with a float operand raises, a float self with an int operand works, a bool self takes
-- only bool results) and that operands broadcast to self, never self to them; where PyTorch computes,
-- that the method returns self itself, self keeps its dtype, and its values are PyTorch's (compared as
-- spec.support.sweep.lua does). Each case runs on a contiguous self, on a transposed one (the
-- write lands in the base tensor's right elements) and on a stepped view of a larger tensor (the
-- elements outside the view unchanged). Then autograd: an in-place op on a leaf that requires grad
-- raises; on a non-leaf it is recorded and gives PyTorch's float64 gradients; a tensor saved for
-- backward and then changed makes backward raise.
--
-- Deliberate departures from PyTorch 1.13 (DEPARTURES below, each with its reason).
local torch = require 'torch'
local H = require 'spec.helpers'
local C = require 'spec.support.sweep'

local REF = dofile('spec/data/inplace_sweep_reference.lua')
local INF = math.huge

-- cases where lutorch departs from PyTorch 1.13 on purpose: a pattern matching the case (as
-- describe_case writes it) and the reason it is skipped, or the error lutorch raises instead
-- (refused), or fix(x, w): lutorch's value where self's element was x and PyTorch's is w
local DEPARTURES = {
  -- PyTorch 1.13's i0 of +-inf is NaN (its series divides inf by inf); I0(+-inf) is +inf
  -- (as spec/elementwise_sweep_spec.lua)
  { '^i0_%(', fix = function(x, w) if x == INF or x == -INF then return INF end return w end },
  -- PyTorch 1.13 has nextafter for bfloat16 (not float16: the reference is float32's); lutorch
  -- refuses both
  { '^nextafter_%(b?float16_a', skip = 'float16 and bfloat16 refused' },
  -- an integer addmm_ with a fractional beta: PyTorch 1.13 truncates beta to an integer without a
  -- word; lutorch raises
  { '^addmm_%(u?int%d+_a, .*beta=0%.5', refused = 'alpha and beta must be integers' },
  -- mvlgamma_ outside its domain (self's elements not above (p - 1) / 2; self holds 0 and negatives):
  -- PyTorch 1.13 computes; lutorch checks the domain, as later PyTorch (lua/torch/special.lua)
  { '^mvlgamma_%(', refused = 'mvlgamma_: all elements must be greater than (p - 1) / 2' },
}
-- atan2_ and hypot_ with a number: PyTorch's binding takes only a tensor (the reference is its result
-- with the number as a 0-dim tensor); lutorch takes a number wherever a tensor operand goes.
-- addcmul_ and addcdiv_ of float self with float operands of another dtype: PyTorch 1.13 fails an
-- internal assertion (a bug, cases marked ia); lutorch computes and casts to self's dtype, as add_.

-- the op an error may name instead of the method's own name (aliases, and ops composed of others)
local ALIAS = { fix = 'trunc', clamp_min = 'clamp', clamp_max = 'clamp', divide = 'div', true_divide = 'div',
  multiply = 'mul', subtract = 'sub', arctan2 = 'atan2', arctan = 'atan', absolute = 'abs', negative = 'neg' }
-- ops compared as another (and aliases as the op they stand for): ldexp with a fractional exponent
-- is x * 2^b, which PyTorch computes through pow (an ulp from lutorch's): pow's tolerance
local COMPARE_AS = { ldexp = 'pow' }

-- the device the inputs are made on: the CPU, then the GPU where one is present (the same cases, the
-- results copied back to be compared)
local device = 'cpu'

local function input(name)
  if name == 'nil' then return nil end
  if type(name) ~= 'string' or not REF.inputs[name] then return name end
  local r = REF.inputs[name]
  return torch.tensor(r.v, { dtype = torch[r.d] }):reshape(r.s):to(device)
end

local function describe_case(c) return C.describe(c.o, { c.s, table.unpack(c.a or {}) }, c.k) end

-- self:op(args..., kw)
local function call(c, self)
  local args, n = {}, #(c.a or {})
  for i = 1, n do args[i] = input(c.a[i]) end
  if c.k then args[n + 1], n = c.k, n + 1 end
  return self[c.o](self, table.unpack(args, 1, n))
end

-- self as a contiguous tensor, a transposed one, and a stepped view of a larger tensor; each with a
-- function giving self's values read through the base, and the base's other elements (or nil)
local function selves(x)
  local base_t = x:t():contiguous()
  local filler = torch.ones_like(x)
  local base_s = torch.stack({ filler, x }, 3) -- self is base_s[:, :, 2]
  return {
    { 'contiguous', x:clone(), function(s) return s end },
    { 'transposed', base_t:t(), function() return base_t:t() end },
    { 'stepped view', base_s:select(3, 2), function() return base_s:select(3, 2) end,
      function() return base_s:select(3, 1), filler end },
  }
end

local function check_case(c, fails)
  local what = describe_case(c)
  local want = c.r
  if c.ia then return end
  for _, d in ipairs(DEPARTURES) do
    if what:find(d[1]) then
      if d.refused then
        H.raises(function() call(c, input(c.s)) end, d.refused)
        return
      end
      if d.skip or not want then return end
      local x, fixed = H.flatten(input(c.s):cpu():totable()), {}
      for i, w in ipairs(want) do fixed[i] = d.fix(x[i], w) end
      want = fixed
    end
  end
  local x = input(c.s)
  local op = c.o:gsub('_$', '')
  local named = ALIAS[op] or op
  for _, v in ipairs(selves(x)) do
    local view, self, read, outside = v[1], v[2], v[3], v[4]
    if view ~= 'contiguous' then assert(not self:is_contiguous() or self:numel() <= 1) end
    local ok, r = pcall(call, c, self)
    if c.err then
      if ok then
        fails[#fails + 1] = ('%s on %s self: PyTorch raises, lutorch computes'):format(what, view)
      elseif not tostring(r):find(named, 1, true) then
        fails[#fails + 1] = what .. ': the error does not name the op: ' .. tostring(r)
      end
      if ok or view == 'contiguous' then return end
    elseif not ok then
      fails[#fails + 1] = ('%s on %s self: raised %s'):format(what, view, tostring(r))
      return
    elseif not rawequal(r, self) then
      fails[#fails + 1] = ('%s on %s self: does not return self'):format(what, view)
      return
    elseif self.dtype ~= x.dtype then
      fails[#fails + 1] = ('%s on %s self: self became %s'):format(what, view, tostring(self.dtype))
      return
    else
      local d = C.differs(COMPARE_AS[op] or named, H.flatten(read(self):cpu():totable()), want, x.dtype.name)
      if not d and outside then
        local got, fill = outside()
        d = C.differs('copy', H.flatten(got:cpu():totable()), H.flatten(fill:cpu():totable()), x.dtype.name)
        if d then d = 'outside the view: ' .. d end
      end
      if d then
        fails[#fails + 1] = ('%s on %s self: %s'):format(what, view, d)
        return
      end
    end
  end
end

describe('in-place methods against PyTorch, over self\'s and the operands\' dtypes', function()
  C.it_per_op(it, REF.cases, 'o', check_case)
end)

-- the same cases on the GPU, against the same references
describe('in-place methods against PyTorch on the GPU', function()
  C.on_gpu({ pending = pending, setup = setup, teardown = teardown }, function(d) device = d end, function()
    -- the matrix products of integer and bool tensors: cuBLAS has none, and lutorch refuses them on
    -- the GPU naming the op, as PyTorch's CUDA kernels do ("addmm_cuda" not implemented for 'Long')
    local PRODUCTS = { addmm_ = true, addmv_ = true, addbmm_ = true, baddbmm_ = true }
    C.it_per_op(it, REF.cases, 'o', function(c, fails)
      local self = REF.inputs[c.s]
      if PRODUCTS[c.o] and self and not self.d:match('float') then
        local ok, err = pcall(call, c, input(c.s))
        if not ok then
          if not tostring(err):find(c.o, 1, true) then
            fails[#fails + 1] = describe_case(c) .. ': the GPU refusal does not name the op: ' .. tostring(err)
          end
          return
        end
      end
      check_case(c, fails)
    end)
  end)
end)

describe('in-place methods and autograd', function()
  local T = {}
  for _, k in ipairs { 'mask', 'idx_rows2', 'scat' } do T[k] = input(k) end
  -- the scenarios of tools/gen_inplace_sweep.py's grad_scenarios: the loss of float64 leaves x, w, u
  local function saved(y, change)
    change(y)
    return (y * 1):sum()
  end
  local function saved_input(y, use, change)
    local z = use(y)
    change(y)
    return (z * 1):sum()
  end
  local SCENARIOS = {
    mul_ = function(x, w, u) return (x * 1):mul_(w):mul(u):sum() end,
    add_alpha = function(x, w, u) return (x * 2):add_(w, { alpha = -1.5 }):mul(u):sum() end,
    div_ = function(x, w, u) return (x * 1):div_(w):mul(u):sum() end,
    pow_ = function(x, w, u) return (x + 0):pow_(w):mul(u):sum() end,
    exp_sigmoid = function(x, w, u) return (x * w):exp_():sigmoid_():mul(u):sum() end,
    exp_sigmoid_out_of_place = function(x, w, u) return (x * w):exp():sigmoid():mul(u):sum() end,
    addcmul_ = function(x, w, u) return (x * 1):addcmul_(w, u, { value = 0.5 }):mul(w):sum() end,
    lerp_ = function(x, w, u) return (x * 1):lerp_(w, u):mul(u):sum() end,
    clamp_ = function(x, w, u) return (x * w):clamp_(0.5, 1.2):mul(u):sum() end,
    masked_fill_ = function(x, w, u) return (x * w):masked_fill_(T.mask, 2):mul(u):sum() end,
    index_add_ = function(x, w, u) return (x * 1):index_add_(1, T.idx_rows2, w, { alpha = 3 }):mul(u):sum() end,
    scatter_ = function(x, w, u) return (x * u):scatter_(1, T.scat, w):mul(u):sum() end,
    copy_view = function(x, w, u)
      local y = x * 1
      y:select(2, 2):copy_(w:select(1, 1):narrow(1, 1, 2)) -- a view of a non-leaf written in place
      return (y * u):sum()
    end,
    exp_then_add_ = function(x) return saved(x:exp(), function(y) y:add_(1) end) end,
    sin_input_mul_ = function(x)
      return saved_input(x * 1, function(y) return y:sin() end, function(y) y:mul_(2) end)
    end,
    mul_operand_ = function(x, w)
      return saved_input(w * 1, function(v) return x * v end, function(v) v:zero_() end)
    end,
    sigmoid_then_view = function(x) return saved(x:sigmoid(), function(y) y:select(1, 1):fill_(0) end) end,
    add_input_add_ = function(x, w)
      return saved_input(x * 1, function(y) return y + w end, function(y) y:add_(3) end)
    end,
  }

  -- where lutorch departs from PyTorch on purpose:
  local DEPARTS = {
    -- lutorch's C in-place ops compute on a copy of self and save what their backward needs apart
    -- from self, so a later in-place op on the result spoils nothing: no error, and the gradient is
    -- the out-of-place form's (PyTorch's exp_ saves self itself, and backward raises)
    exp_sigmoid = { same_as = 'exp_sigmoid_out_of_place' },
    -- an in-place write into a view of a tensor with history: lutorch's autograd refuses it at the
    -- write, with a message pointing to the out-of-place op (PyTorch rebases the view's history)
    copy_view = { refused = 'in-place operations on views of tensors that require grad are not supported' },
    sigmoid_then_view = { refused = 'in-place operations on views of tensors that require grad are not supported' },
  }
  local function grads_of(name)
    for _, g in ipairs(REF.grads) do if g.name == name then return g end end
  end

  for _, g in ipairs(REF.grads) do
    local dep = DEPARTS[g.name] or {}
    it(g.name .. (dep.refused and ': refused at the write (a departure)' or dep.same_as and
      ': the out-of-place gradient (a departure)' or g.err and ': backward refuses a saved tensor changed in place'
      or ': PyTorch\'s gradients'),
      function()
        local names = { 'gx', 'gw', 'gu' }
        local leaves = {}
        for i, k in ipairs(names) do leaves[i] = input(k):requires_grad_() end
        if dep.refused then
          H.raises(function() SCENARIOS[g.name](table.unpack(leaves)) end, dep.refused)
          return
        end
        if dep.same_as then g = grads_of(dep.same_as) end
        local loss = SCENARIOS[g.name](table.unpack(leaves))
        if g.err then
          H.raises(function() loss:backward() end, 'modified by an inplace operation')
          return
        end
        loss:backward()
        for i, k in ipairs(names) do
          local grad = leaves[i].grad or torch.zeros_like(leaves[i])
          local got = H.flatten(grad:totable())
          H.near(g.g[k], got, 1e-12, g.name .. ' ' .. k)
        end
      end)
  end

  it('every scenario of the reference is run', function()
    local n = 0
    for name in pairs(SCENARIOS) do
      n = n + 1
      local found = false
      for _, g in ipairs(REF.grads) do found = found or g.name == name end
      assert(found, name)
    end
    assert.equal(#REF.grads, n)
  end)

  it('refuses an in-place op on a leaf that requires grad, naming the op, and leaves the leaf as it was', function()
    local m, idx, scat = T.mask, T.idx_rows2, T.scat
    for name, f in pairs {
      add_ = function(x) return x:add_(1) end, mul_ = function(x) return x:mul_(x) end,
      exp_ = function(x) return x:exp_() end, clamp_ = function(x) return x:clamp_(0, 1) end,
      masked_fill_ = function(x) return x:masked_fill_(m, 0) end,
      index_add_ = function(x) return x:index_add_(1, idx, torch.ones(2, 4, { dtype = torch.float64 })) end,
      scatter_ = function(x) return x:scatter_(1, scat, 0.5) end, copy_ = function(x) return x:copy_(x * 2) end,
      fill_ = function(x) return x:fill_(3) end, zero_ = function(x) return x:zero_() end,
      eq_ = function(x) return x:eq_(1) end, lerp_ = function(x) return x:lerp_(x * 2, 0.5) end,
      addcmul_ = function(x) return x:addcmul_(x, x) end, tril_ = function(x) return x:tril_() end,
      sigmoid_ = function(x) return x:sigmoid_() end, nan_to_num_ = function(x) return x:nan_to_num_() end,
    } do
      local x = input('gx'):requires_grad_()
      H.raises(function() f(x) end, (name:gsub('_$', '')), 'leaf Variable that requires grad')
      H.assert_values(x:detach(), input('gx'):totable(), 0, name)
      -- under no_grad the leaf is written
      torch.no_grad(function() f(x) end)
    end
  end)
end)
