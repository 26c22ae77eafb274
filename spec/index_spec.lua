-- Indexing with index tensors and masks (index_select, masked_*, gather, scatter*, index_add_,
-- index_fill_, nonzero, x[mask], x[idx]) against plain-Lua loops implementing PyTorch's definitions
-- with 1-based index values, on every dtype, contiguous or not.
local torch = require 'torch'
local H = require 'spec.helpers'

---------------------------------------------------------------------------------------------------
-- plain-Lua machinery: nested tables addressed by 1-based index lists
---------------------------------------------------------------------------------------------------
local function copy(t) local r = {} for i, v in ipairs(t) do r[i] = v end return r end

-- nested table of the given shape; fn(idx) gives the element at idx (idx is shared between calls:
-- fn must copy it before changing it)
local function build(shape, fn)
  local idx = {}
  local function rec(d)
    if d > #shape then return fn(idx) end
    local t = {}
    for i = 1, shape[d] do idx[d] = i; t[i] = rec(d + 1) end
    return t
  end
  return rec(1)
end

-- call fn(idx) for every index of shape in row-major order (idx shared, as in build)
local function each_index(shape, fn) build(shape, function(i) fn(i); return 0 end) end

local function get(t, idx)
  for _, i in ipairs(idx) do t = t[i] end
  return t
end

local function set(t, idx, v)
  for k = 1, #idx - 1 do t = t[idx[k]] end
  t[idx[#idx]] = v
end

local function deepcopy(t)
  if type(t) ~= 'table' then return t end
  local r = {}
  for i = 1, #t do r[i] = deepcopy(t[i]) end -- not ipairs: bool tensors hold false
  return r
end

local function wrap(d, n) return d < 0 and d + n + 1 or d end

local function is_float(dt)
  return dt == torch.float32 or dt == torch.float64 or dt == torch.float16 or dt == torch.bfloat16
end

-- distinct values, exact in every dtype (int8 included): k for integers, k + 0.5 for floats, and a
-- pattern for bool
local function value(dtype, k)
  if dtype == torch.bool then return k % 3 ~= 0 end
  if is_float(dtype) then return k + 0.5 end
  return k
end

local function make(dtype, shape, offset)
  local k = offset or 0
  local t = build(shape, function() k = k + 1; return value(dtype, k) end)
  return torch.tensor(t, { dtype = dtype }), t
end

local function flat(t, out)
  out = out or {}
  if type(t) ~= 'table' then out[#out + 1] = t; return out end
  if type(t[1]) ~= 'table' then
    local n = #out
    for i = 1, #t do out[n + i] = t[i] end
  else
    for i = 1, #t do flat(t[i], out) end
  end
  return out
end

-- assert y has the shape, dtype and values wanted (exact unless tol is given); cheaper than
-- luassert and H.assert_values in these loops
local function check(y, want, shape, dtype, msg, tol)
  msg = msg or 'tensor'
  local ys = y.shape
  local ok = #ys == #shape
  for i = 1, #shape do ok = ok and ys[i] == shape[i] end
  if not ok then
    error(('%s: shape {%s}, expected {%s}'):format(msg, table.concat(ys, ', '), table.concat(shape, ', ')), 2)
  end
  if dtype and y.dtype ~= dtype then error(('%s: dtype %s, expected %s'):format(msg, tostring(y.dtype), tostring(dtype)), 2) end
  local got, exp = flat(y:totable()), flat(want)
  if #got ~= #exp then error(('%s: %d values, expected %d'):format(msg, #got, #exp), 2) end
  for i = 1, #exp do
    local g, w = got[i], exp[i]
    if g ~= w and not (tol and type(w) == 'number' and math.abs(g - w) <= tol * (1 + math.abs(w))) then
      error(('%s: element %d is %s, expected %s'):format(msg, i, tostring(g), tostring(w)), 2)
    end
  end
end

-- The same logical tensor of `shape`, stored three ways (contiguous, transposed, narrowed) plus
-- expanded for read-only use. Each: name, x, t (values in Lua, from the contiguous base), base,
-- map (index of x -> index of base).
local function variants(dtype, shape, with_expanded)
  local out = {}
  local n = #shape
  local x, t = make(dtype, shape)
  out[#out + 1] = { name = 'contiguous', x = x, t = t, base = x, map = function(i) return i end }
  if n >= 2 then
    local s = copy(shape)
    s[n], s[n - 1] = s[n - 1], s[n]
    local b, bt = make(dtype, s)
    local function map(i) local j = copy(i); j[n], j[n - 1] = j[n - 1], j[n]; return j end
    out[#out + 1] = { name = 'transposed', x = b:transpose(-1, -2), base = b, map = map,
      t = build(shape, function(i) return get(bt, map(i)) end) }
  end
  local s = copy(shape)
  s[n] = s[n] + 2
  local b, bt = make(dtype, s)
  local function map(i) local j = copy(i); j[n] = j[n] + 1; return j end
  out[#out + 1] = { name = 'narrowed', x = b:narrow(-1, 2, shape[n]), base = b, map = map,
    t = build(shape, function(i) return get(bt, map(i)) end) }
  if with_expanded then
    local s1 = copy(shape)
    s1[1] = 1
    local b1, bt1 = make(dtype, s1)
    local function map1(i) local j = copy(i); j[1] = 1; return j end
    out[#out + 1] = { name = 'expanded', x = b1:expand(shape), base = b1, map = map1,
      t = build(shape, function(i) return get(bt1, map1(i)) end) }
  end
  for _, v in ipairs(out) do check(v.x, v.t, shape, dtype, 'variant ' .. v.name) end
  return out
end

-- every dtype x every variant
local function each_input(shape, fn, with_expanded, dtypes)
  for _, dt in ipairs(dtypes or H.all_dtypes) do
    for _, v in ipairs(variants(dt, shape, with_expanded)) do fn(v, dt, tostring(dt) .. ' ' .. v.name) end
  end
end

-- index tensors of 1-based values: int64, int32, and a non-contiguous int64 (a strided view)
local function index_tensors(list)
  local wide = {}
  for i, v in ipairs(list) do wide[2 * i - 1] = v; wide[2 * i] = -100 end
  local strided = torch.tensor(wide):view(#list, 2):select(2, 1)
  assert(not strided:is_contiguous() or #list <= 1)
  return {
    { 'int64', torch.tensor(list) },
    { 'int32', torch.tensor(list, { dtype = torch.int32 }) },
    { 'strided int64', strided },
  }
end

local numeric_dtypes = { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
  torch.int16, torch.int8, torch.uint8 }

---------------------------------------------------------------------------------------------------
-- references (PyTorch's definitions, 1-based)
---------------------------------------------------------------------------------------------------
local function ref_index_select(t, shape, dim, list)
  dim = wrap(dim, #shape)
  local ns = copy(shape)
  ns[dim] = #list
  return build(ns, function(i) local j = copy(i); j[dim] = list[i[dim]]; return get(t, j) end), ns
end

-- broadcast two shapes (trailing-aligned)
local function broadcast(a, b)
  local n = math.max(#a, #b)
  local s = {}
  for k = 1, n do
    local x, y = a[#a - n + k] or 1, b[#b - n + k] or 1
    assert(x == y or x == 1 or y == 1, 'reference: shapes do not broadcast')
    s[k] = math.max(x, y)
  end
  return s
end

local function get_b(t, shape, idx) -- element of t (of shape) at idx of a broadcast shape
  local off = #idx - #shape
  local j = {}
  for k = 1, #shape do j[k] = shape[k] == 1 and 1 or idx[k + off] end
  return get(t, j)
end

local function ref_masked_select(xt, xs, mt, ms)
  local out = {}
  each_index(broadcast(xs, ms), function(i)
    if get_b(mt, ms, i) then out[#out + 1] = get_b(xt, xs, i) end
  end)
  return out
end

local function ref_masked_fill(xt, xs, mt, ms, v)
  local s = broadcast(xs, ms)
  return build(s, function(i) if get_b(mt, ms, i) then return v end return get_b(xt, xs, i) end), s
end

local function ref_gather(t, shape, dim, it, ishape)
  dim = wrap(dim, #shape)
  return build(ishape, function(i) local j = copy(i); j[dim] = get(it, i); return get(t, j) end)
end

-- scatter: self[..., index[i], ...] = src[i] (or value), for i over the index's shape; add: +=
local function ref_scatter(t, shape, dim, it, ishape, src, value, add)
  dim = wrap(dim, #shape)
  local out = deepcopy(t)
  each_index(ishape, function(i)
    local j = copy(i)
    j[dim] = get(it, i)
    local s = value
    if src then s = get(src, i) end -- (not `and/or`: bool values may be false)
    if add then s = get(out, j) + s end
    set(out, j, s)
  end)
  return out
end

local function ref_index_add(t, shape, dim, list, src, sshape, alpha)
  dim = wrap(dim, #shape)
  local out = deepcopy(t)
  each_index(sshape, function(i)
    local j = copy(i)
    j[dim] = list[i[dim]]
    set(out, j, get(out, j) + alpha * get(src, i))
  end)
  return out
end

local function ref_index_fill(t, shape, dim, list, v)
  dim = wrap(dim, #shape)
  local hit = {}
  for _, k in ipairs(list) do hit[k] = true end
  return build(shape, function(i) if hit[i[dim]] then return v end return get(t, i) end)
end

local function ref_nonzero(t, shape)
  local out = {}
  each_index(shape, function(i)
    local v = get(t, i)
    if v ~= 0 and v ~= false then out[#out + 1] = copy(i) end
  end)
  return out
end

-- a value different from the ones in the tests, valid in dtype
local function fill_value(dt) if dt == torch.bool then return false end return 99 end

-- a bool mask pattern of a shape
local function mask_of(shape, seed)
  local k = seed or 0
  local t = build(shape, function() k = k + 1; return k % 3 == 1 or k % 5 == 0 end)
  return torch.tensor(t), t
end

-- assert the storage behind v is as it was (before: v.base:totable() taken earlier)
local function unchanged(v, before, msg)
  check(v.base, before, v.base.shape, nil, (msg or '') .. ': tensor must be unchanged after a failed call')
end

---------------------------------------------------------------------------------------------------
describe('index_select', function()
  it('picks 1-based rows (int64, int32, strided index tensors) along any dim, on every dtype', function()
    local lists = { { 3, 1, 3, 2 }, { 2 }, {} }
    each_input({ 3, 4 }, function(v, dt, label)
      for _, list in ipairs(lists) do
        for _, it in ipairs(#list > 1 and index_tensors(list) or { { 'int64', torch.tensor(list, { dtype = torch.int64 }) } }) do
          for _, dim in ipairs { 1, 2, -1 } do
            local want, ws = ref_index_select(v.t, { 3, 4 }, dim, list)
            local l = label .. ' dim ' .. dim .. ' ' .. it[1] .. ' {' .. table.concat(list, ',') .. '}'
            check(v.x:index_select(dim, it[2]), want, ws, dt, l)
            check(torch.index_select(v.x, dim, it[2]), want, ws, dt, l .. ' torch.index_select')
          end
        end
      end
      local want = ref_index_select(v.t, { 3, 4 }, 2, { 4, 4, 1 })
      check(v.x:index_select(2, torch.tensor({ 4, 4, 1 })), want, { 3, 3 }, dt, label .. ' repeated')
      -- a copy: writes do not reach the input
      local before = v.base:totable()
      local y = v.x:index_select(1, torch.tensor({ 1, 2 }))
      y:fill_(fill_value(dt))
      unchanged(v, before, label)
    end, true)
  end)

  it('works on 3-D and 0-dim inputs', function()
    local x, t = make(torch.float32, { 2, 3, 4 })
    for _, dim in ipairs { 1, 2, 3 } do
      local want, ws = ref_index_select(t, { 2, 3, 4 }, dim, { 2, 1 })
      check(x:index_select(dim, torch.tensor({ 2, 1 })), want, ws, torch.float32, '3-D dim ' .. dim)
    end
    local s = torch.tensor(2.5):index_select(1, torch.tensor({ 1 }))
    check(s, { 2.5 }, {}, torch.float32, '0-dim')
  end)

  it('crosses the threading grain (large inputs) with the same results', function()
    local rows, cols = 512, 80
    local x = torch.arange(0, rows * cols):view(rows, cols)
    local list = {}
    for i = 1, 700 do list[i] = (i * 37) % rows + 1 end
    local y = x:index_select(1, torch.tensor(list))
    local got = y:totable()
    for i = 1, #list, 7 do
      for j = 1, cols, 9 do
        assert(got[i][j] == (list[i] - 1) * cols + (j - 1), 'large index_select')
      end
    end
    local yt = x:t():index_select(2, torch.tensor(list)) -- non-contiguous path
    local gt = yt:totable()
    for i = 1, #list, 11 do
      for j = 1, cols, 13 do assert(gt[j][i] == (list[i] - 1) * cols + (j - 1), 'large transposed index_select') end
    end
  end)

  it('raises errors naming index_select with the 1-based index value', function()
    local x = torch.zeros(3, 4)
    H.raises(function() return x:index_select(1, torch.tensor({ 1, 4 })) end, 'index_select', 'index 4', 'dimension 1', 'size 3')
    H.raises(function() return x:index_select(2, torch.tensor({ 5 }, { dtype = torch.int32 })) end, 'index_select', 'index 5')
    H.raises(function() return x:index_select(1, torch.tensor({ 0 })) end, 'index_select', 'index 0')
    H.raises(function() return x:index_select(1, torch.tensor({ 2, -1 })) end, 'index_select', 'index -1')
    H.raises(function() return x:index_select(1, torch.tensor({ 1.0 })) end, 'index_select', 'int64', 'float32')
    H.raises(function() return x:index_select(1, torch.tensor({ 1 }, { dtype = torch.int16 })) end, 'index_select', 'int16')
    H.raises(function() return x:index_select(1, torch.tensor({ true })) end, 'index_select', 'bool')
    H.raises(function() return x:index_select(1, torch.tensor({ { 1 } })) end, 'index_select', 'vector', '2D')
    H.raises(function() return x:index_select(3, torch.tensor({ 1 })) end, 'index_select', 'out of range')
    H.raises(function() return x:index_select(0, torch.tensor({ 1 })) end, 'index_select', '1-based')
    H.raises(function() return x:index_select(1, { 1 }) end, 'index_select')
  end)

  it('an out-of-range int32 index value is shown as given', function()
    local x = torch.zeros(3, 4)
    H.raises(function() return x:index_select(1, torch.tensor({ -2147483648 }, { dtype = torch.int32 })) end,
      'index_select', 'index -2147483648 ')
  end)
end)

describe('masked_select', function()
  it('returns the elements where the (broadcast) mask is true, in row-major order, on every dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      for _, ms in ipairs { { 3, 4 }, { 4 }, { 3, 1 }, { 2, 3, 4 }, { 1 } } do
        local m, mt = mask_of(ms, #ms)
        local want = ref_masked_select(v.t, { 3, 4 }, mt, ms)
        check(v.x:masked_select(m), want, { #want }, dt, label .. ' mask {' .. table.concat(ms, ',') .. '}')
        check(torch.masked_select(v.x, m), want, { #want }, dt, label .. ' torch.masked_select')
      end
      -- a non-contiguous mask
      local m, mt = mask_of({ 4, 3 }, 1)
      local want = ref_masked_select(v.t, { 3, 4 }, build({ 3, 4 }, function(i) return mt[i[2]][i[1]] end), { 3, 4 })
      check(v.x:masked_select(m:t()), want, { #want }, dt, label .. ' transposed mask')
      check(v.x:masked_select(torch.zeros(3, 4, { dtype = torch.bool })), {}, { 0 }, dt, label .. ' none')
    end, true)
  end)

  it('raises errors naming masked_select', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return x:masked_select(torch.ones(2, 3)) end, 'masked_select', 'Bool', 'float32')
    H.raises(function() return x:masked_select(torch.ones(2, 3, { dtype = torch.uint8 })) end, 'masked_select', 'uint8')
    H.raises(function() return x:masked_select(torch.tensor({ true, false })) end, 'masked_select', 'broadcast')
    H.raises(function() return x:masked_select(true) end, 'masked_select')
  end)
end)

describe('masked_fill and masked_fill_', function()
  it('masked_fill fills where the broadcast mask is true (numbers, booleans, 0-dim tensors), on every dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local fv = fill_value(dt)
      for _, ms in ipairs { { 3, 4 }, { 4 }, { 3, 1 }, { 2, 3, 4 } } do
        local m, mt = mask_of(ms, #ms + 1)
        local want, ws = ref_masked_fill(v.t, { 3, 4 }, mt, ms, fv)
        local l = label .. ' mask {' .. table.concat(ms, ',') .. '}'
        check(v.x:masked_fill(m, fv), want, ws, dt, l)
        check(torch.masked_fill(v.x, m, fv), want, ws, dt, l .. ' torch.masked_fill')
        check(v.x:masked_fill(m, torch.tensor(fv, { dtype = dt == torch.bool and torch.bool or torch.float64 })),
          want, ws, dt, l .. ' 0-dim value')
      end
      -- not in place
      check(v.x, v.t, { 3, 4 }, dt, label .. ' input unchanged')
    end, true)
  end)

  it('masked_fill_ writes in place through views (transposed, narrowed) and returns the tensor', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local fv = fill_value(dt)
      local m, mt = mask_of({ 4 }, 2) -- broadcast over rows
      local want = ref_masked_fill(v.t, { 3, 4 }, mt, { 4 }, fv)
      local r = v.x:masked_fill_(m, fv)
      assert(rawequal(r, v.x), label .. ': masked_fill_ returns its tensor')
      check(v.x, want, { 3, 4 }, dt, label .. ' masked_fill_')
      -- the base holds the new values at the mapped places
      local bt = v.base:totable()
      each_index({ 3, 4 }, function(i) assert(get(bt, v.map(i)) == get(want, i), label .. ': written through') end)
      -- x[mask] = value is the same operation
      local x2, t2 = make(dt, { 3, 4 })
      local m2, mt2 = mask_of({ 3, 4 }, 5)
      x2[m2] = fv
      check(x2, ref_masked_fill(t2, { 3, 4 }, mt2, { 3, 4 }, fv), { 3, 4 }, dt, label .. ' x[mask] = v')
    end)
  end)

  it('raise errors naming the op', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return x:masked_fill(torch.ones(2, 3), 1) end, 'masked_fill', 'boolean', 'float32')
    H.raises(function() return x:masked_fill(torch.ones(3, 3, { dtype = torch.bool }), 1) end, 'masked_fill', 'broadcast')
    H.raises(function() return x:masked_fill(torch.ones(2, 3, { dtype = torch.bool }), torch.ones(2)) end, 'masked_fill', '0-dimensional')
    H.raises(function() return x:masked_fill(torch.ones(2, 3, { dtype = torch.bool })) end, 'masked_fill')
    H.raises(function() return x:masked_fill_(torch.ones(2, 2, 3, { dtype = torch.bool }), 1) end, 'masked_fill_', '[2, 2, 3]', '[2, 3]')
    H.raises(function() return x:masked_fill_(torch.ones(2, 3, { dtype = torch.int64 }), 1) end, 'masked_fill_', 'int64')
    H.raises(function() return torch.zeros(3):expand(2, 3):masked_fill_(torch.ones(3, { dtype = torch.bool }), 1) end,
      'masked_fill_', 'single memory location')
    H.raises(function() x[torch.ones(3, 3, { dtype = torch.bool })] = 1 end, 'index assignment', 'mask', '[3, 3]')
  end)

  it("record a 0-dim value tensor that requires grad: its gradient is the sum of the gradient where the mask is set", function()
    local f64 = { dtype = torch.float64 }
    local mask = torch.tensor({ { true, false, true }, { false, false, true } })
    local x, v = H.leaf({ 2, 3 }), H.leaf({})
    local y = x:masked_fill(mask, v)
    assert.are.equal('MaskedFillBackward1', y.grad_fn.name) -- the C op's node, named as PyTorch's
    local w = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, f64)
    local loss = (y * w):sum()
    loss:backward()
    assert.are.equal(1 + 3 + 6, v.grad:item())
    H.assert_values(x.grad, { { 0, 2, 0 }, { 4, 5, 0 } }, 0)
    -- against finite differences: both inputs, the value alone, in place on a non-leaf, twice
    local m = torch.tensor({ true, false, true }) -- broadcast over the rows
    local gradcheck = torch.autograd.gradcheck
    assert.is_true(gradcheck(function(a, b) return a:masked_fill(m, b) end, { x, v }))
    assert.is_true(gradcheck(function(a, b) return torch.masked_fill(a, mask, b) end, { x, v }))
    local plain = torch.randn({ 2, 3 }, f64)
    assert.is_true(gradcheck(function(b) return plain:masked_fill(m, b) end, { v }))
    assert.is_true(gradcheck(function(a, b)
      local t = a * 2
      t:masked_fill_(m, b)
      return t
    end, { x, v }))
    assert.is_true(torch.autograd.gradgradcheck(function(a, b) return a:masked_fill(m, b * b) * a end, { x, v }))
    -- a value of another dtype takes its gradient in its own dtype
    local v32 = torch.tensor(0.5):requires_grad_()
    x:masked_fill(mask, v32):sum():backward()
    assert.are.equal(torch.float32, v32.grad.dtype)
    assert.are.equal(3, v32.grad:item())
  end)
end)

describe('gather', function()
  it('out[i][j] = x[idx[i][j]][j] (dim 1) and x[i][idx[i][j]] (dim 2), 1-based, on every dtype', function()
    local it1 = { { 3, 1, 2, 3 }, { 1, 1, 3, 2 } }          -- [2, 4] into dim 1 (size 3)
    local it2 = { { 4, 1 }, { 2, 2 }, { 1, 3 } }            -- [3, 2] into dim 2 (size 4)
    local it3 = { { 2 }, { 4 } }                            -- [2, 1]: smaller than x in dim 1 too
    each_input({ 3, 4 }, function(v, dt, label)
      for _, c in ipairs { { 1, it1, { 2, 4 } }, { 2, it2, { 3, 2 } }, { -1, it3, { 2, 1 } }, { -2, it1, { 2, 4 } } } do
        local want = ref_gather(v.t, { 3, 4 }, c[1], c[2], c[3])
        local l = label .. ' dim ' .. c[1]
        check(v.x:gather(c[1], torch.tensor(c[2])), want, c[3], dt, l)
        check(torch.gather(v.x, c[1], torch.tensor(c[2])), want, c[3], dt, l .. ' torch.gather')
      end
      -- a transposed (non-contiguous) index tensor
      local idx = torch.tensor({ { 3, 1 }, { 1, 1 }, { 2, 3 }, { 3, 2 } }):t() -- [2, 4]: it1
      check(v.x:gather(1, idx), ref_gather(v.t, { 3, 4 }, 1, it1, { 2, 4 }), { 2, 4 }, dt, label .. ' transposed index')
    end, true)
  end)

  it('works in 3-D and crosses the threading grain', function()
    local x, t = make(torch.float64, { 2, 3, 4 })
    local it = { { { 1, 3 }, { 2, 2 } }, { { 3, 1 }, { 1, 2 } } } -- [2, 2, 2] into dim 2
    check(x:gather(2, torch.tensor(it)), ref_gather(t, { 2, 3, 4 }, 2, it, { 2, 2, 2 }), { 2, 2, 2 }, torch.float64, '3-D')
    local n, m = 256, 160
    local big = torch.arange(0, n * m):view(n, m)
    local list = build({ n, m }, function(i) return (i[1] * 7 + i[2] * 13) % n + 1 end)
    local got = big:gather(1, torch.tensor(list)):totable()
    for i = 1, n, 5 do
      for j = 1, m, 3 do assert(got[i][j] == (list[i][j] - 1) * m + (j - 1), 'large gather') end
    end
    -- the first bad value in row-major order is reported, found by the threaded check
    list[200][100] = n + 5
    list[250][1] = n + 9
    H.raises(function() return big:gather(1, torch.tensor(list)) end, 'gather', 'index ' .. (n + 5) .. ' ')
  end)

  it('raises errors naming gather', function()
    local x = torch.zeros(3, 4)
    H.raises(function() return x:gather(1, torch.tensor({ { 4 } })) end, 'gather', 'index 4', 'dimension 1', 'size 3')
    H.raises(function() return x:gather(2, torch.tensor({ { 1, 0 } })) end, 'gather', 'index 0')
    H.raises(function() return x:gather(1, torch.tensor({ { -1 } })) end, 'gather', 'index -1')
    H.raises(function() return x:gather(1, torch.tensor({ { 1.0 } })) end, 'gather', 'int64')
    H.raises(function() return x:gather(1, torch.tensor({ { 1 } }, { dtype = torch.int32 })) end, 'gather', 'int64')
    H.raises(function() return x:gather(1, torch.tensor({ 1, 2 })) end, 'gather', 'same number of dimensions')
    H.raises(function() return x:gather(1, torch.tensor({ { 1, 1, 1, 1, 1 } })) end, 'gather', 'Size does not match')
    H.raises(function() return x:gather(3, torch.tensor({ { 1 } })) end, 'gather', 'out of range')
  end)
end)

describe('scatter and scatter_add', function()
  -- no duplicate targets for scatter with a src (PyTorch leaves their order undefined)
  local it1 = { { 3, 1, 2, 3 }, { 1, 2, 3, 2 } } -- [2, 4] into dim 1 (size 3): distinct per column
  local it2 = { { 4, 1 }, { 2, 3 }, { 1, 4 } }   -- [3, 2] into dim 2 (size 4): distinct per row
  local dup = { { 3, 3, 1, 3 }, { 3, 1, 1, 3 } } -- duplicates for value scatter and scatter_add

  it('scatter writes src (or a value) at 1-based positions, out of place and in place, on every dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local src, st = make(dt, { 3, 4 }, 40) -- larger than the index: only its index-shaped block is read
      for _, c in ipairs { { 1, it1, { 2, 4 } }, { 2, it2, { 3, 2 } }, { -2, it1, { 2, 4 } } } do
        local want = ref_scatter(v.t, { 3, 4 }, c[1], c[2], c[3], st)
        local l = label .. ' dim ' .. c[1]
        check(v.x:scatter(c[1], torch.tensor(c[2]), src), want, { 3, 4 }, dt, l)
        check(torch.scatter(v.x, c[1], torch.tensor(c[2]), src), want, { 3, 4 }, dt, l .. ' torch.scatter')
        local fv = fill_value(dt)
        local wantv = ref_scatter(v.t, { 3, 4 }, c[1], dup, { 2, 4 }, nil, fv)
        check(v.x:scatter(c[1], torch.tensor(dup), fv), wantv, { 3, 4 }, dt, l .. ' value')
      end
      check(v.x, v.t, { 3, 4 }, dt, label .. ' unchanged by scatter')
      -- scatter_ in place, through the view into its base
      local want = ref_scatter(v.t, { 3, 4 }, 2, it2, { 3, 2 }, st)
      local r = v.x:scatter_(2, torch.tensor(it2), src)
      assert(rawequal(r, v.x), 'scatter_ returns its tensor')
      check(v.x, want, { 3, 4 }, dt, label .. ' scatter_')
      local bt = v.base:totable()
      each_index({ 3, 4 }, function(i) assert(get(bt, v.map(i)) == get(want, i), label .. ': written through') end)
    end)
  end)

  it('scatter_add sums duplicates, out of place and in place, on every numeric dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local src, st = make(dt, { 2, 4 }, 10)
      local want = ref_scatter(v.t, { 3, 4 }, 1, dup, { 2, 4 }, st, nil, true)
      check(v.x:scatter_add(1, torch.tensor(dup), src), want, { 3, 4 }, dt, label .. ' scatter_add')
      check(torch.scatter_add(v.x, 1, torch.tensor(dup), src), want, { 3, 4 }, dt, label .. ' torch.scatter_add')
      check(v.x, v.t, { 3, 4 }, dt, label .. ' unchanged by scatter_add')
      local src2, st2 = make(dt, { 3, 4 }, 5)
      local want2 = ref_scatter(v.t, { 3, 4 }, -1, { { 1, 1 }, { 4, 4 }, { 2, 1 } }, { 3, 2 }, st2, nil, true)
      local r = v.x:scatter_add_(-1, torch.tensor({ { 1, 1 }, { 4, 4 }, { 2, 1 } }), src2)
      assert(rawequal(r, v.x), 'scatter_add_ returns its tensor')
      check(v.x, want2, { 3, 4 }, dt, label .. ' scatter_add_')
      local bt = v.base:totable()
      each_index({ 3, 4 }, function(i) assert(get(bt, v.map(i)) == get(want2, i), label .. ': written through') end)
    end, false, numeric_dtypes)
  end)

  it('a failing in-place scatter leaves the tensor unchanged', function()
    local x, t = make(torch.float32, { 3, 4 })
    H.raises(function() return x:scatter_(1, torch.tensor({ { 1, 2, 3, 4 } }), 0) end, 'scatter_', 'index 4')
    check(x, t, { 3, 4 }, torch.float32, 'after scatter_')
    H.raises(function() return x:scatter_add_(1, torch.tensor({ { 1, 2, 9, 1 } }), torch.ones(1, 4)) end, 'scatter_add_', 'index 9')
    check(x, t, { 3, 4 }, torch.float32, 'after scatter_add_')
  end)

  it('raise errors naming the op with the 1-based index value', function()
    local x = torch.zeros(3, 4)
    H.raises(function() return x:scatter(2, torch.tensor({ { 5 } }), 1.0) end, 'scatter', 'index 5', 'dimension 2', 'size 4')
    H.raises(function() return x:scatter(1, torch.tensor({ { 0 } }), 1.0) end, 'scatter', 'index 0')
    H.raises(function() return x:scatter(1, torch.tensor({ { 1.0 } }), 1.0) end, 'scatter', 'int64')
    H.raises(function() return x:scatter(1, torch.tensor({ { 1 } }, { dtype = torch.int16 }), 1.0) end, 'scatter', 'int16')
    H.raises(function() return x:scatter(1, torch.tensor({ { 1 } }), torch.ones(1, 1, { dtype = torch.float64 })) end,
      'scatter', 'float32', 'float64')
    H.raises(function() return x:scatter(1, torch.tensor({ 1 }), 1.0) end, 'scatter', 'same number of dimensions')
    H.raises(function() return x:scatter(1, torch.tensor({ { 1, 1, 1, 1, 1 } }), 1.0) end, 'scatter', 'smaller than self')
    H.raises(function() return x:scatter(1, torch.tensor({ { 1, 1 } }), torch.ones(1, 1)) end, 'scatter', 'src')
    H.raises(function() return x:scatter_(2, torch.tensor({ { 5 } }), 1.0) end, 'scatter_', 'index 5')
    H.raises(function() return x:scatter_add(2, torch.tensor({ { 5 } }), torch.ones(1, 1)) end, 'scatter_add', 'index 5')
    H.raises(function() return x:scatter_add(2, torch.tensor({ { 1 } }), 1.0) end, 'scatter_add', 'src')
    H.raises(function() return x:scatter_add_(2, torch.tensor({ { 1 } }), torch.ones(1, 1, { dtype = torch.int64 })) end,
      'scatter_add_', 'float32', 'int64')
    H.raises(function() return torch.zeros(4):expand(3, 4):scatter_(1, torch.tensor({ { 1 } }), 1.0) end,
      'scatter_', 'single memory location')
  end)
end)

describe('index_add_ and index_fill_', function()
  it('index_add_ adds alpha * src slices at 1-based indices (duplicates accumulate), on every numeric dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local fl = is_float(dt)
      local tol = (dt == torch.float16 or dt == torch.bfloat16) and H.tol(dt) or nil
      for _, it in ipairs(index_tensors({ 3, 1, 3 })) do
        local x = v.x:clone()
        local src, st = make(dt, { 3, 4 }, 3)
        local want = ref_index_add(v.t, { 3, 4 }, 1, { 3, 1, 3 }, st, { 3, 4 }, 1)
        local r = x:index_add_(1, it[2], src)
        assert(rawequal(r, x), 'index_add_ returns its tensor')
        check(x, want, { 3, 4 }, dt, label .. ' ' .. it[1], tol)
        local alpha = fl and 0.5 or 2
        local src2, st2 = make(dt, { 3, 2 }, 1)
        local x2 = v.x:clone()
        local want2 = ref_index_add(v.t, { 3, 4 }, 2, { 4, 2 }, st2, { 3, 2 }, alpha)
        x2:index_add_(-1, it[1] == 'int32' and torch.tensor({ 4, 2 }, { dtype = torch.int32 }) or torch.tensor({ 4, 2 }),
          src2, { alpha = alpha })
        check(x2, want2, { 3, 4 }, dt, label .. ' alpha ' .. alpha, tol)
      end
      -- in place through the view
      local src, st = make(dt, { 1, 4 }, 2)
      local want = ref_index_add(v.t, { 3, 4 }, 1, { 2 }, st, { 1, 4 }, 1)
      v.x:index_add_(1, torch.tensor({ 2 }), src)
      check(v.x, want, { 3, 4 }, dt, label .. ' in place', tol)
      local bt = v.base:totable()
      each_index({ 3, 4 }, function(i) assert(get(bt, v.map(i)) == get(want, i), label .. ': written through') end)
    end, false, numeric_dtypes)
  end)

  it('index_fill_ fills 1-based slices with a value, in place through views, on every dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local fv = fill_value(dt)
      for _, c in ipairs { { 1, { 3, 1 } }, { 2, { 4 } }, { -1, { 2, 2, 3 } }, { 1, {} } } do
        for _, it in ipairs(#c[2] > 1 and index_tensors(c[2]) or { { 'int64', torch.tensor(c[2], { dtype = torch.int64 }) } }) do
          local x = v.x:clone()
          local r = x:index_fill_(c[1], it[2], fv)
          assert(rawequal(r, x), 'index_fill_ returns its tensor')
          check(x, ref_index_fill(v.t, { 3, 4 }, c[1], c[2], fv), { 3, 4 }, dt, label .. ' dim ' .. c[1] .. ' ' .. it[1])
        end
      end
      local want = ref_index_fill(v.t, { 3, 4 }, 2, { 1, 3 }, fv)
      v.x:index_fill_(2, torch.tensor({ 1, 3 }), torch.tensor(fv)) -- a 0-dim value tensor
      check(v.x, want, { 3, 4 }, dt, label .. ' in place')
      local bt = v.base:totable()
      each_index({ 3, 4 }, function(i) assert(get(bt, v.map(i)) == get(want, i), label .. ': written through') end)
    end)
  end)

  it('raise errors naming the op with the 1-based index value', function()
    local x = torch.zeros(3, 4)
    H.raises(function() return x:index_add_(1, torch.tensor({ 4 }), torch.ones(1, 4)) end, 'index_add_', 'index 4', 'dimension 1', 'size 3')
    H.raises(function() return x:index_add_(1, torch.tensor({ 0 }, { dtype = torch.int32 }), torch.ones(1, 4)) end, 'index_add_', 'index 0')
    H.raises(function() return x:index_add_(1, torch.tensor({ 1.0 }), torch.ones(1, 4)) end, 'index_add_', 'int64')
    H.raises(function() return x:index_add_(1, torch.tensor({ 1, 2 }), torch.ones(3, 4)) end, 'index_add_', 'Number of indices (2)')
    H.raises(function() return x:index_add_(1, torch.tensor({ 1 }), torch.ones(1, 3)) end, 'index_add_', 'shape')
    H.raises(function() return x:index_add_(1, torch.tensor({ 1 }), torch.ones(1, 4, { dtype = torch.float64 })) end,
      'index_add_', 'float32', 'float64')
    H.raises(function() return x:index_add_(1, torch.tensor({ { 1 } }), torch.ones(1, 4)) end, 'index_add_', 'vector')
    H.raises(function() return torch.zeros(3, { dtype = torch.int64 }):index_add_(1, torch.tensor({ 1 }), torch.ones(1, { dtype = torch.int64 }), { alpha = 0.5 }) end,
      'index_add_', 'alpha')
    H.raises(function() return x:index_fill_(2, torch.tensor({ 5 }), 1) end, 'index_fill_', 'index 5', 'dimension 2', 'size 4')
    H.raises(function() return x:index_fill_(2, torch.tensor({ -1 }), 1) end, 'index_fill_', 'index -1')
    H.raises(function() return x:index_fill_(2, torch.tensor({ 1.0 }), 1) end, 'index_fill_', 'int64')
    H.raises(function() return x:index_fill_(2, torch.tensor({ { 1 } }), 1) end, 'index_fill_', '2D')
    H.raises(function() return x:index_fill_(2, torch.tensor({ 1 }), torch.ones(2)) end, 'index_fill_', '0-dimensional')
    H.raises(function() return x:index_fill_(3, torch.tensor({ 1 }), 1) end, 'index_fill_', 'out of range')
    -- a failing in-place call leaves the tensor unchanged
    local y, t = make(torch.float32, { 3, 4 })
    H.raises(function() return y:index_fill_(1, torch.tensor({ 1, 2, 7 }), 0) end, 'index_fill_', 'index 7')
    H.raises(function() return y:index_add_(1, torch.tensor({ 1, 7 }), torch.ones(2, 4)) end, 'index_add_', 'index 7')
    check(y, t, { 3, 4 }, torch.float32, 'unchanged')
  end)
end)

describe('nonzero', function()
  it('gives the 1-based coordinates of nonzero elements in row-major order, on every dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      -- zero out a pattern so that both zeros and nonzeros occur
      local m, mt = mask_of({ 3, 4 }, 0)
      local zero = 0
      if dt == torch.bool then zero = false end
      local x = v.x:masked_fill(m, zero)
      local t = ref_masked_fill(v.t, { 3, 4 }, mt, { 3, 4 }, zero)
      local want = ref_nonzero(t, { 3, 4 })
      check(x:nonzero(), want, { #want, 2 }, torch.int64, label)
      check(torch.nonzero(x), want, { #want, 2 }, torch.int64, label .. ' torch.nonzero')
      -- on the (possibly non-contiguous) input itself
      local want2 = ref_nonzero(v.t, { 3, 4 })
      check(v.x:nonzero(), want2, { #want2, 2 }, torch.int64, label .. ' input')
    end, true)
  end)

  it('handles 1-D, 3-D, 0-dim, empty, NaN and -0.0', function()
    check(torch.tensor({ 0, 5, 0, -2 }):nonzero(), { { 2 }, { 4 } }, { 2, 1 }, torch.int64, '1-D')
    local _, t0 = make(torch.int64, { 2, 3, 2 })
    local t = build({ 2, 3, 2 }, function(i) return get(t0, i) % 3 end)
    local x = torch.tensor(t)
    local want = ref_nonzero(t, { 2, 3, 2 })
    check(x:nonzero(), want, { #want, 3 }, torch.int64, '3-D')
    check(torch.tensor({ 0.0, 0 / 0, -0.0, 1.0 }):nonzero(), { { 2 }, { 4 } }, { 2, 1 }, torch.int64, 'NaN is nonzero, -0.0 is zero')
    check(torch.zeros(2, 3):nonzero(), {}, { 0, 2 }, torch.int64, 'all zero')
    check(torch.tensor(5):nonzero(), {}, { 1, 0 }, torch.int64, '0-dim nonzero')
    check(torch.tensor(0):nonzero(), {}, { 0, 0 }, torch.int64, '0-dim zero')
    H.raises(function() return torch.zeros(2):nonzero(1) end, 'nonzero', 'expected an options table, got number')
  end)
end)

describe('x[mask] and x[idx] in __index', function()
  it('x[mask] with a mask of the same shape is masked_select, on every dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local m, mt = mask_of({ 3, 4 }, 3)
      local want = ref_masked_select(v.t, { 3, 4 }, mt, { 3, 4 })
      check(v.x[m], want, { #want }, dt, label .. ' x[mask]')
      local mn, mnt = mask_of({ 4, 3 }, 4) -- a transposed mask
      local wt = ref_masked_select(v.t, { 3, 4 }, build({ 3, 4 }, function(i) return mnt[i[2]][i[1]] end), { 3, 4 })
      check(v.x[mn:t()], wt, { #wt }, dt, label .. ' x[transposed mask]')
    end, true)
  end)

  it('x[idx] with a 1-D int64 or int32 index tensor picks 1-based rows, on every dtype', function()
    each_input({ 3, 4 }, function(v, dt, label)
      for _, it in ipairs(index_tensors({ 3, 1, 3 })) do
        local want, ws = ref_index_select(v.t, { 3, 4 }, 1, { 3, 1, 3 })
        check(v.x[it[2]], want, ws, dt, label .. ' x[' .. it[1] .. ']')
      end
      -- a copy, not a view
      local before = v.base:totable()
      v.x[torch.tensor({ 2 })]:fill_(fill_value(dt))
      unchanged(v, before, label)
    end, true)
    local x = torch.tensor({ 5, 6, 7 }, { dtype = torch.int16 })
    check(x[torch.tensor({ 3, 3, 1 })], { 7, 7, 5 }, { 3 }, torch.int16, '1-D x[idx]')
  end)

  it('raises errors naming the op and the 1-based value', function()
    local x = torch.zeros(3, 4)
    H.raises(function() return x[torch.tensor({ 4 })] end, 'index', 'index 4', 'size 3')
    H.raises(function() return x[torch.tensor({ -4 })] end, 'index', 'out of range')
    H.raises(function() return x[torch.tensor({ 0 })] end, 'index', 'index 0', '1-based')
    H.raises(function() return x[torch.tensor({ 1.0 })] end, 'index', 'float32')
    H.raises(function() return x[torch.tensor({ 1 }, { dtype = torch.uint8 })] end, 'index', 'uint8')
    H.raises(function() return x[torch.ones(4, 4, { dtype = torch.bool })] end, 'index', 'mask', '[4, 4]')
  end)

  it('x[mask] with a mask over the leading dims selects rows as in PyTorch', function()
    local x = H.grid(3, 3)
    local r = x[torch.tensor({ true, false, true })]
    check(r, { { 11, 12, 13 }, { 31, 32, 33 } }, { 2, 3 }, torch.float32, 'x[row mask]')
    local y = H.grid(2, 3)
    check(y[torch.tensor({ false, true })], { { 21, 22, 23 } }, { 1, 3 }, torch.float32, 'x[row mask] 2x3')
    y[torch.tensor({ false, true })] = 0
    check(y, { { 11, 12, 13 }, { 0, 0, 0 } }, { 2, 3 }, torch.float32, 'x[row mask] = 0')
  end)

  it('x[idx] with a 2-D index tensor has shape idx.shape .. x.shape[2:]', function()
    local x = H.grid(3, 2)
    check(x[torch.tensor({ { 3, 1 }, { 2, 2 } })], { { { 31, 32 }, { 11, 12 } }, { { 21, 22 }, { 21, 22 } } }, { 2, 2, 2 },
      torch.float32, 'x[2-D idx]')
  end)

  it('x[idx] with negative index values counts from the end, as x[-1] does', function()
    local x = H.grid(3, 2)
    check(x[torch.tensor({ -1, 1 })], { { 31, 32 }, { 11, 12 } }, { 2, 2 }, torch.float32, 'x[negative idx]')
  end)

  it('x[idx] = v and x[mask] = v assign numbers and broadcast tensors', function()
    local x = H.grid(3, 2)
    x[torch.tensor({ 3, -3 })] = 0
    check(x, { { 0, 0 }, { 21, 22 }, { 0, 0 } }, { 3, 2 }, torch.float32, 'x[idx] = 0')
    x[torch.tensor({ 2 })] = torch.tensor({ 7.0, 8.0 })
    check(x, { { 0, 0 }, { 7, 8 }, { 0, 0 } }, { 3, 2 }, torch.float32, 'x[idx] = row')
    local y = H.grid(2, 3)
    y[torch.tensor({ { true, false, true }, { false, false, true } })] = torch.tensor({ 1.0, 2.0, 3.0 })
    check(y, { { 1, 12, 2 }, { 21, 22, 3 } }, { 2, 3 }, torch.float32, 'x[full mask] = values')
    local z = H.grid(3, 2):t() -- a mask assignment of numbers works on any layout
    z[z:gt(20)] = -1
    check(z, { { 11, -1, -1 }, { 12, -1, -1 } }, { 2, 3 }, torch.float32, 'transposed x[mask] = -1')
  end)

  it('x[idx] = v with a repeated row writes one of its values there (not their sum), as PyTorch', function()
    local x = H.grid(3, 2)
    x[torch.tensor({ 2, 3, 2 })] = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 }, { 5.0, 6.0 } })
    local row = x[2]:totable()
    assert((row[1] == 1 and row[2] == 2) or (row[1] == 5 and row[2] == 6), 'row 2 is ' .. row[1] .. ', ' .. row[2])
    check(x[{ { 1, 1 } }], { { 11, 12 } }, { 1, 2 }, torch.float32, 'row 1 untouched')
    check(x[3], { 3, 4 }, { 2 }, torch.float32, 'row 3')
  end)
end)
