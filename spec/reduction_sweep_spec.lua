-- A differential sweep of the reductions, scans, sorts, indexing and shape ops against PyTorch 1.13
-- (spec/data/reduction_sweep_reference.lua, written by tools/gen_reduction_sweep.py): every case's
-- result dtypes, shapes and values (indices 1-based), the errors PyTorch raises, and the float64
-- gradients of a fixed upstream gradient, each on contiguous inputs and on non-contiguous views of
-- the same data (a transpose of a transposed copy; a stride-2 view for vectors), x and the other
-- tensor arguments (indices, masks, sources) alike.
--
-- Where lutorch departs from PyTorch on purpose, the case is listed in DEPARTURES below with the
-- reason, and checked for lutorch's own behaviour instead.
local torch = require 'torch'
local H = require 'spec.helpers'

local REF = dofile('spec/data/reduction_sweep_reference.lua')
local INPUTS, CASES = REF.inputs, REF.cases

local ipairs, type, pcall, error, tostring, assert = ipairs, type, pcall, error, tostring, assert
local string, table, math = string, table, math

-- tolerances: relative to max(1, |expected|); integers and booleans exact
local TOL = { float64 = 1e-10, float32 = 2e-6, float16 = 4e-3, bfloat16 = 1.6e-2 }

-- a tensor of inputs[k] (or an {d, s, v} record)
local function build(r)
  return torch.tensor(r.v, { dtype = torch[r.d] }):reshape(r.s)
end

-- the same values as t, not contiguous (where t has more than one element); with grad, a leaf
-- behind the view and a function giving the view's gradient
local function noncontig(t, grad)
  local base, view
  local d = t:dim()
  if d >= 2 and t:size(1) > 1 and t:size(2) > 1 then
    base = t:transpose(1, 2):contiguous()
    if grad then base:requires_grad_() end
    view = function(b) return b:transpose(1, 2) end
  elseif d >= 1 then
    base = torch.stack({ t, t }, d + 1)
    if grad then base:requires_grad_() end
    view = function(b) return b:select(d + 1, 1) end
  else
    base = t:clone()
    if grad then base:requires_grad_() end
    view = function(b) return b end
  end
  local x = view(base)
  if t:numel() > 1 then assert(not x:is_contiguous(), 'the view should not be contiguous') end
  return x, function() return base.grad and view(base.grad) end
end

-- the Lua arguments of case c: {T = k} becomes inputs[k] (a float64 leaf where c.rg names it;
-- with nc, the others non-contiguous), {D = name} a dtype, {N = true} nil; returns the arguments
-- and the leaves by argument number
local function resolve(c, grad, nc)
  local args, leaves, tensor_no = {}, {}, 0
  local wants = {}
  for _, k in ipairs(c.rg or {}) do wants[k] = true end
  local function conv(a)
    if type(a) ~= 'table' then return a end
    if a.T then
      tensor_no = tensor_no + 1
      local t = build(INPUTS[a.T])
      if grad and wants[tensor_no] then
        t:requires_grad_()
        leaves[#leaves + 1] = t
      elseif nc then
        t = noncontig(t)
      end
      return t
    end
    if a.D then return torch[a.D] end
    if a.N then return nil end
    local r = {}
    for k, v in pairs(a) do r[k] = conv(v) end
    return r
  end
  for i = 1, c.n do args[i] = conv(c.a[i]) end
  return args, leaves
end

local CALL = {
  cat = function(x, y, dim) return torch.cat({ x, y }, dim) end,
  stack = function(x, y, dim) return torch.stack({ x, y }, dim) end,
}

-- the outputs of case c on x, as an array (a table of tensors returned, as where's, is flattened)
local function run(c, x, args)
  local res
  if CALL[c.op] then
    res = table.pack(CALL[c.op](x, table.unpack(args, 1, c.n)))
  elseif c.f then
    res = table.pack(torch[c.op](x, table.unpack(args, 1, c.n)))
  else
    local m = x[c.op]
    if m == nil then error('no method ' .. c.op) end
    res = table.pack(m(x, table.unpack(args, 1, c.n)))
  end
  local out = {}
  for i = 1, res.n do
    local r = res[i]
    if torch.is_tensor(r) then out[#out + 1] = r
    elseif type(r) == 'table' then
      for _, t in ipairs(r) do out[#out + 1] = t end
    end
  end
  return out
end

local function shape_str(s) return '{' .. table.concat(s, ', ') .. '}' end

local flat = H.flatten

local function same(g, w, tol)
  if type(w) == 'boolean' or type(g) == 'boolean' then return g == w end
  if w ~= w then return g ~= g end
  if g == w then return true end
  if tol == 0 or w == math.huge or w == -math.huge then return false end
  return math.abs(g - w) <= tol * math.max(1, math.abs(w))
end

local function check_values(got, want, tol, what)
  if #got ~= #want then error(string.format('%s: %d values, expected %d', what, #got, #want), 0) end
  for i = 1, #want do
    if not same(got[i], want[i], tol) then
      error(string.format('%s: element %d is %s, expected %s', what, i, tostring(got[i]), tostring(want[i])), 0)
    end
  end
end

local function check_tensor(y, r, what)
  if tostring(y.dtype) ~= tostring(torch[r.d]) then
    error(string.format('%s: dtype %s, expected %s', what, tostring(y.dtype), r.d), 0)
  end
  local ys = y.shape
  local ok = #ys == #r.s
  for i = 1, #r.s do ok = ok and ys[i] == r.s[i] end
  if not ok then error(string.format('%s: shape %s, expected %s', what, shape_str(ys), shape_str(r.s)), 0) end
  check_values(flat(y:totable()), r.v, TOL[r.d] or 0, what)
end

-- PyTorch may return any of tied indices (median, kthvalue, mode, topk): where lutorch's differ,
-- its index must read its value back from x along c.tie = {dim, keepdim}
local function check_tied(c, x, outs, what)
  local dim, keepdim = c.tie[1], c.tie[2]
  local v, i = outs[1], outs[2]
  if x:dim() == 0 then return end
  local idx = keepdim and i or i:unsqueeze(dim)
  local back = x:gather(dim, idx)
  if not keepdim then back = back:squeeze(dim) end
  check_values(flat(back:totable()), flat(v:totable()), 0, what .. ' (the value at the returned index)')
end

-- the upstream gradient of output y: ((7 j) % 11 - 5) / 4 at row-major position j
local function upstream(y)
  local v = {}
  for j = 0, y:numel() - 1 do v[j + 1] = ((7 * j) % 11 - 5) / 4 end
  return torch.tensor(v, { dtype = torch.float64 }):reshape(y.shape)
end

local function is_float(t)
  local d = t.dtype
  return d == torch.float64 or d == torch.float32 or d == torch.float16 or d == torch.bfloat16
end

-- the gradient of x where lutorch's index differs from PyTorch's among ties: the upstream
-- gradient of the values sent to lutorch's indices
local function tied_gradient(c, x, outs)
  local dim, keepdim = c.tie[1], c.tie[2]
  local i, u = outs[2], upstream(outs[1])
  if not keepdim then i, u = i:unsqueeze(dim), u:unsqueeze(dim) end
  return flat(torch.zeros(x.shape, { dtype = torch.float64 }):scatter_add(dim, i, u):totable())
end

local function check_grads(c, contiguous, what, want_x)
  local t = build(INPUTS[c.x])
  local x, xgrad
  if contiguous then
    x = t:requires_grad_()
    xgrad = function() return x.grad end
  else
    x, xgrad = noncontig(t, true)
  end
  local args, leaves = resolve(c, true, not contiguous)
  local outs = run(c, x, args)
  local loss
  for _, y in ipairs(outs) do
    if is_float(y) and y.requires_grad then
      local term = (y * upstream(y)):sum()
      loss = loss and loss + term or term
    end
  end
  assert(loss, what .. ': no differentiable output')
  loss:backward()
  local grads = { xgrad() }
  for k, l in ipairs(leaves) do grads[k + 1] = l.grad end
  for k, want in ipairs(c.g) do
    if k == 1 and want_x then want = want_x end
    local g = grads[k]
    local got = g and flat(g:totable()) or nil
    if got == nil then -- no gradient reached it: PyTorch's zeros
      got = {}
      for j = 1, #want do got[j] = 0 end
    end
    check_values(got, want, 1e-9, string.format('%s: gradient %d', what, k))
  end
end

local function indices_equal(outs, c)
  for k, r in ipairs(c.o) do
    if outs[k] == nil then return false end
    if r.d == 'int64' then
      local got = flat(outs[k]:totable())
      if #got ~= #r.v then return false end
      for j = 1, #got do if got[j] ~= r.v[j] then return false end end
    end
  end
  return true
end

-- Deliberate departures from PyTorch 1.13: `when` picks the cases, `check` replaces PyTorch's
-- check of them (or `values_only` keeps it but for the gradients). Others are written into the reference by the generator and need no entry here:
-- - x:logsumexp() without a dim reduces every dim (PyTorch 1.13 wants a dim; API.md gives
--   logsumexp the sum's signature): the reference is PyTorch's logsumexp over all dims.
-- - float16 and bfloat16 ops that PyTorch 1.13 has no CPU kernel for (median, kthvalue, the scans,
--   ...) are computed by lutorch: the reference is PyTorch's float32 result rounded to the dtype.
-- - sort and argsort are always stable (PyTorch's stable = true is the reference).
local DEPARTURES = {
  -- the inf and -inf norms of an empty tensor: PyTorch 1.13's torch.norm gives 0 (its old code
  -- path; torch.linalg.vector_norm raises): lutorch raises, as a max or min of nothing has no value
  {
    when = function(c)
      local p = c.a[1]
      return c.op == 'norm' and (p == math.huge or p == -math.huge) and #INPUTS[c.x].v == 0
    end,
    check = function(c, x, args)
      H.raises(function() return run(c, x, args) end, 'norm', 'empty')
    end,
  },
  -- all and any of uint8 give bool, as of every other dtype (PyTorch keeps uint8 there, for
  -- compatibility with its days before bool; spec/reduce_spec.lua holds lutorch to bool)
  {
    when = function(c) return (c.op == 'all' or c.op == 'any') and INPUTS[c.x].d == 'uint8' end,
    check = function(c, x, args)
      local r = c.o[1]
      local want = {}
      for i, v in ipairs(r.v) do want[i] = v ~= 0 end
      check_tensor(run(c, x, args)[1], { d = 'bool', s = r.s, v = want }, c.op)
    end,
  },
  -- the median of an empty tensor is an error (PyTorch gives NaN for floats, an uninitialised
  -- value for integers; spec/composite_spec.lua holds lutorch to the error)
  {
    when = function(c) return (c.op == 'median' or c.op == 'nanmedian') and c.n == 0 and #INPUTS[c.x].v == 0 end,
    check = function(c, x, args) H.raises(function() return run(c, x, args) end, c.op, 'empty') end,
  },
  -- the gradient of var of a 0-D tensor with a dim: PyTorch 1.13 gives -inf (its 0-D path), as
  -- its 1-element dims and lutorch give NaN (2 (x - mean) / (n - 1) is 0 / 0)
  {
    when = function(c) return c.op == 'var' and #INPUTS[c.x].s == 0 and c.n > 0 end,
    values_only = true,
  },
  -- index_copy, index_fill and take take int32 indices, as index_select and index_add do in both
  -- (PyTorch 1.13 wants int64 there): the result is the one of the same indices in int64
  {
    when = function(c)
      if c.op ~= 'index_copy' and c.op ~= 'index_fill' and c.op ~= 'take' then return false end
      local index = c.a[c.op == 'take' and 1 or 2]
      return INPUTS[index.T].d == 'int32'
    end,
    check = function(c, x, args)
      local at = c.op == 'take' and 1 or 2
      local wide = { table.unpack(args, 1, c.n) }
      wide[at] = args[at]:long()
      local got, want = run(c, x, args)[1], run(c, x, wide)[1]
      check_tensor(got, { d = 'float64', s = want.shape, v = flat(want:totable()) }, c.op)
    end,
  },
}

local function departure(c)
  for _, d in ipairs(DEPARTURES) do
    if d.when(c) then return d end
  end
end

local function case_name(c, i)
  local x = INPUTS[c.x]
  return string.format('#%d %s(%s %s)', i, c.op, x.d, shape_str(x.s))
end

describe('reduction sweep against PyTorch 1.13', function()
  for i, c in ipairs(CASES) do
    local name = case_name(c, i)
    it(name, function()
      local dep = departure(c)
      if dep and dep.check then return dep.check(c, build(INPUTS[c.x]), resolve(c)) end
      for _, contiguous in ipairs({ true, false }) do
        local what = name .. (contiguous and '' or ' non-contiguous')
        local x = build(INPUTS[c.x])
        if not contiguous then x = noncontig(x) end
        local args = resolve(c, false, not contiguous)
        if c.err == 'raise' then
          local ok, err = pcall(run, c, x, args)
          if ok then error(what .. ': PyTorch raises, lutorch returned', 0) end
          assert(type(err) == 'string' and err:find(c.op, 1, true), what .. ': the error does not name the op: ' .. tostring(err))
        elseif c.err == 'impl' and not c.o then
          -- PyTorch 1.13 has no CPU kernel for this dtype (nor a float32 stand-in): lutorch may
          -- compute it or raise, but not crash
          pcall(run, c, x, args)
        else -- (an 'impl' case with outputs: PyTorch's float32 result rounded to the dtype)
          local ok, outs = pcall(run, c, x, args)
          if not ok then error(what .. ': ' .. tostring(outs), 0) end
          if #outs ~= #c.o then error(string.format('%s: %d outputs, expected %d', what, #outs, #c.o), 0) end
          local tied_differ = c.tie and not indices_equal(outs, c)
          for k, r in ipairs(c.o) do
            if tied_differ and r.d == 'int64' then
              check_tensor(outs[k], { d = r.d, s = r.s, v = flat(outs[k]:totable()) }, what .. ' output ' .. k)
            else
              check_tensor(outs[k], r, what .. ' output ' .. k)
            end
          end
          if tied_differ then check_tied(c, x, outs, what) end
          if c.g and not dep then check_grads(c, contiguous, what, tied_differ and tied_gradient(c, x, outs)) end
        end
      end
    end)
  end
end)

-- PyTorch's flip, roll, tile, repeat and diff return new tensors: writing into the result must
-- leave x as it was, also where nothing moves (they returned x itself, or, for tile and repeat of
-- a size-1 dim, a view of x with a zero stride, so that one write changed every repeat)
describe('results that PyTorch copies', function()
  local calls = {
    ['flip of a size-1 dim'] = function(x) return x:flip(1) end,
    ['flip of a 0-D tensor'] = function() return torch.tensor(2.5):flip(1) end,
    ['roll by 0'] = function(x) return x:roll(0, 2) end,
    ['roll by the size'] = function(x) return x:roll(3, 2) end,
    ['roll of a size-1 dim'] = function(x) return x:roll(1, 1) end,
    ['tile by ones'] = function(x) return x:tile({ 1, 1 }) end,
    ['tile of a size-1 dim'] = function(x) return x:tile({ 2, 1 }) end,
    ['repeat of a size-1 dim'] = function(x) return x['repeat'](x, 3, 1) end,
    ['diff with n = 0'] = function(x) return x:diff(0) end,
  }
  for name, f in pairs(calls) do
    it(name, function()
      local x = torch.tensor({ { 1.0, 2.0, 3.0 } })
      local y = f(x)
      local before = H.flatten(y:totable())
      y:view(-1)[1] = 100
      H.assert_values(x, { { 1, 2, 3 } }, 0, name .. ': x')
      local after = H.flatten(y:totable())
      after[1] = before[1]
      H.assert_values(torch.tensor(after), before, 0, name .. ': the other elements of the result')
    end)
  end
end)
