-- x:sort, x:argsort, x:topk (lua/torch/sort.lua over core/sort.c) against a sort written here in
-- plain Lua: every dtype, every dim of 1-, 2- and 3-D tensors, contiguous and not, ascending and
-- descending, ties (stable), NaN (the largest value), 0-dim and empty tensors; gradients through the
-- sorted values; arguments and errors.
local torch = require 'torch'
local H = require 'spec.helpers'

-- the reference: positions 1..n of vals in sorted order, stable, NaN largest
local function ref_order(vals, descending)
  local pos = {}
  for i = 1, #vals do pos[i] = i end
  local function key_lt(a, b) -- a < b with NaN largest
    local na, nb = a ~= a, b ~= b
    if na or nb then return nb and not na end
    return a < b
  end
  table.sort(pos, function(i, j)
    local a, b = vals[i], vals[j]
    if type(a) == 'boolean' then a, b = a and 1 or 0, b and 1 or 0 end
    local less
    if descending then less = key_lt(b, a) else less = key_lt(a, b) end
    if less then return true end
    local greater
    if descending then greater = key_lt(a, b) else greater = key_lt(b, a) end
    if greater then return false end
    return i < j -- equal (or both NaN): the earlier first
  end)
  return pos
end

-- the slices of a nested table t of shape `shape` along dim (1-based): {values}, and a function
-- placing a slice's j-th result back at its coordinates
local function slices(shape, dim)
  local out = {}
  local coords = {}
  local function walk(d)
    if d > #shape then
      out[#out + 1] = { table.unpack(coords) }
      return
    end
    if d == dim then
      coords[d] = 0
      walk(d + 1)
      return
    end
    for i = 1, shape[d] do
      coords[d] = i
      walk(d + 1)
    end
  end
  walk(1)
  return out
end

local function at(t, c)
  for _, i in ipairs(c) do t = t[i] end
  return t
end

-- checks values v and positions idx (the first k along dim, descending or not; and, when given,
-- argsort's positions as a table) against the reference order on every slice of x
local function check_first(x, v, idx, k, dim, descending, what, argsorted)
  local shape = x:size()
  local vals = x:totable()
  local d = dim < 0 and #shape + dim + 1 or dim
  local want_shape = { table.unpack(shape) }
  want_shape[d] = k
  assert.are.equal(torch.int64, idx.dtype, what)
  assert.are.equal(x.dtype, v.dtype, what)
  assert.are.same(want_shape, { table.unpack(idx:size()) }, what)
  assert.are.same(want_shape, { table.unpack(v:size()) }, what)
  local vt, it = v:totable(), idx:totable()
  for _, c in ipairs(slices(shape, d)) do
    local sv = {}
    for j = 1, shape[d] do
      c[d] = j
      sv[j] = at(vals, c)
    end
    local want = ref_order(sv, descending)
    for j = 1, k do
      c[d] = j
      local gi, gv = at(it, c), at(vt, c)
      assert(gi == want[j], string.format('%s: position %d is %s, want %d', what, j, tostring(gi), want[j]))
      if argsorted then assert(at(argsorted, c) == want[j], what .. ': argsort') end
      local w = sv[want[j]]
      assert(gv == w or (gv ~= gv and w ~= w), string.format('%s: value %d is %s, want %s', what, j, tostring(gv), tostring(w)))
    end
  end
end

-- checks x:sort(dim, descending) and x:argsort against the reference on every slice
local function check_sort(x, dim, descending, what)
  local v, idx = x:sort(dim, descending)
  local n = x:size(dim < 0 and x:dim() + dim + 1 or dim)
  check_first(x, v, idx, n, dim, descending, what, x:argsort(dim, descending):totable())
end

-- checks x:topk(k, dim, largest) against the reference order on every slice
local function check_topk(x, k, dim, largest, what)
  local v, idx = x:topk(k, dim, largest)
  check_first(x, v, idx, k, dim, largest, what)
end

describe('sort and argsort', function()
  it('order every dtype along every dim, contiguous and transposed, ascending and descending', function()
    torch.manual_seed(4)
    for _, dt in ipairs(H.all_dtypes) do
      -- few distinct values, so that ties are common and stability shows
      local base = torch.randint(0, 5, { 4, 6, 3 }):to(dt)
      if dt.is_floating_point then base = base - 2 end
      for _, x in ipairs { base, base:transpose(1, 3), base:select(2, 2), base[1][2] } do
        for d = 1, x:dim() do
          for _, desc in ipairs { false, true } do
            check_sort(x, d, desc, ('%s %dD dim %d desc %s'):format(tostring(dt), x:dim(), d, tostring(desc)))
            check_sort(x, d - x:dim() - 1, desc, ('%s negative dim'):format(tostring(dt)))
          end
        end
      end
    end
  end)

  it('sorts large tensors on every kernel thread as on one', function()
    torch.manual_seed(9)
    local x = torch.randint(0, 50, { 300, 200 }):float()
    check_sort(x, 2, false, 'large rows')
    check_sort(x:t(), 2, true, 'large transposed')
    local threads = torch.get_num_threads()
    torch.set_num_threads(1)
    local _, one = x:sort(1)
    torch.set_num_threads(threads)
    local _, all = x:sort(1)
    assert.is_true(torch.equal(one, all))
  end)

  it('puts NaN last ascending and first descending, keeping equal values in order', function()
    local x = torch.tensor({ 2, 0 / 0, -1, 2, 0 / 0, -math.huge, math.huge, -1 })
    local v, i = x:sort()
    H.assert_values(i, { 6, 3, 8, 1, 4, 7, 2, 5 }, 0)
    assert.is_true(v[7] ~= v[7] and v[8] ~= v[8])
    local _, j = x:sort(1, true)
    H.assert_values(j, { 2, 5, 7, 1, 4, 3, 8, 6 }, 0)
    check_sort(x, 1, false, 'nan')
    check_sort(x:half(), 1, true, 'nan half')
  end)

  it('sorts slices around the 32 elements where insertion gives way to merging, with ties and NaN', function()
    torch.manual_seed(12)
    for _, n in ipairs { 2, 31, 32, 33, 40 } do
      for _, dt in ipairs { torch.float32, torch.float64, torch.int64, torch.int8 } do
        local x = torch.randint(0, 6, { 5, n }):to(dt)
        if dt.is_floating_point then
          x[2][n] = 0 / 0
          x[3][1] = 0 / 0
          x[3][n // 2 + 1] = 0 / 0
        end
        for _, desc in ipairs { false, true } do
          check_sort(x, 2, desc, ('%s n=%d desc %s'):format(tostring(dt), n, tostring(desc)))
          check_sort(x:t(), 1, desc, ('%s n=%d transposed'):format(tostring(dt), n))
        end
      end
    end
  end)

  it('takes -0 as equal to +0 and NaN of either sign as the largest', function()
    local nan = 0 / 0
    local x = torch.tensor({ 0.0, -0.0, 1, -nan, nan, 0.0, -0.0, -1 }, { dtype = torch.float64 })
    assert.is_true(1 / x[2] < 0) -- a negative zero went in
    for _, dt in ipairs { torch.float64, torch.float32, torch.float16, torch.bfloat16 } do
      local y = x:to(dt)
      local _, i = y:sort()
      H.assert_values(i, { 8, 1, 2, 6, 7, 3, 4, 5 }, 0)
      local _, j = y:sort(1, true)
      H.assert_values(j, { 4, 5, 3, 1, 2, 6, 7, 8 }, 0)
      local _, t = y:topk(3, 1, false)
      H.assert_values(t, { 8, 1, 2 }, 0)
    end
  end)

  it('sorts long slices (introsort) of sorted, reversed and repeating values', function()
    for _, n in ipairs { 100, 1000, 5000 } do
      local up = torch.arange(1, n + 1):double()
      for _, x in ipairs { up, up:flip(1), torch.remainder(up, 3), torch.cat({ up:narrow(1, 1, n // 2), up:narrow(1, 1, n - n // 2):flip(1) }) } do
        for _, desc in ipairs { false, true } do
          local v, i = x:sort(1, desc)
          local ref = ref_order(x:totable(), desc)
          H.assert_values(i, ref, 0)
          assert.is_true(torch.equal(v, x:index_select(1, i)))
        end
      end
    end
  end)

  it('compares int64 exactly beyond 2^53', function()
    local x = torch.tensor({ 9007199254740993, 9007199254740992, -9007199254740993, math.maxinteger, math.mininteger })
    local _, i = x:sort()
    H.assert_values(i, { 5, 3, 2, 1, 4 }, 0)
  end)

  it('takes 0-dim and empty tensors, options tables and torch.* forms', function()
    local s, si = torch.tensor(3.5):sort()
    assert.are.equal(3.5, s:item())
    assert.are.equal(1, si:item())
    local e, ei = torch.zeros(0, 3):sort(1)
    assert.are.same({ 0, 3 }, { table.unpack(e.shape) })
    assert.are.equal(0, ei:numel())
    local x = torch.tensor({ { 3, 1, 2 }, { 0, 5, 4 } })
    local a, ai = x:sort({ dim = 1, descending = true })
    local b, bi = torch.sort(x, 1, true)
    assert.is_true(torch.equal(a, b) and torch.equal(ai, bi))
    assert.is_true(torch.equal(torch.argsort(x), x:argsort(-1)))
  end)

  it('names bad arguments', function()
    local x = torch.ones(2, 3)
    H.raises(function() x:sort(3) end, 'sort: dimension out of range')
    H.raises(function() x:sort(1.5) end, 'sort: dim must be an integer')
    H.raises(function() x:sort({ dims = 1 }) end, "sort: unknown option 'dims'")
    H.raises(function() torch.sort('x') end, 'sort: expected a tensor, got string')
  end)
end)

describe('topk', function()
  it('gives the k largest (or smallest) along a dim, as sort does, every dtype and layout', function()
    torch.manual_seed(6)
    for _, dt in ipairs(H.all_dtypes) do
      local x = torch.randint(0, 7, { 5, 8 }):to(dt)
      for _, t in ipairs { x, x:t() } do
        for d = 1, 2 do
          for _, largest in ipairs { true, false } do
            local n = t:size(d)
            for _, k in ipairs { 0, 1, 3, n } do
              local v, i = t:topk(k, d, largest)
              local sv, si = t:sort(d, largest)
              assert.is_true(torch.equal(i, si:narrow(d, 1, k)), ('%s k %d dim %d'):format(tostring(dt), k, d))
              assert.is_true(torch.equal(v, sv:narrow(d, 1, k)))
            end
          end
        end
      end
    end
  end)

  it('selects the first k of long slices as the reference orders them, every dtype and layout', function()
    torch.manual_seed(13)
    for _, dt in ipairs(H.all_dtypes) do
      for _, n in ipairs { 33, 40, 200 } do
        local few = torch.randint(0, 6, { 3, n }):to(dt)
        local up = torch.arange(1, n + 1):remainder(dt == torch.int8 and 100 or n + 1):to(dt):expand(2, n)
        if dt.is_floating_point then
          few[2][n] = 0 / 0
          few[3][5] = 0 / 0
        end
        for _, case in ipairs { { few, 2 }, { few:t(), 1 }, { up, 2 }, { up:flip(2), 2 } } do
          local x, d = case[1], case[2]
          for _, k in ipairs { 1, 5, 32, 33, n } do
            for _, largest in ipairs { true, false } do
              check_topk(x, k, d, largest, ('%s n=%d k=%d largest %s'):format(tostring(dt), n, k, tostring(largest)))
            end
          end
        end
      end
    end
    local x3 = torch.randn(4, 50, 3)
    check_topk(x3, 7, 2, true, '3-D middle dim')
    check_topk(x3:transpose(1, 2), 3, 1, false, '3-D transposed')
  end)

  it('returns values without history for inputs that need no gradient, and with it for those that do', function()
    local x = torch.tensor({ 3, 1, 2 }, { dtype = torch.float32 })
    local v = x:topk(2)
    assert.is_false(v.requires_grad)
    local y = torch.tensor({ 3, 1, 2 }, { dtype = torch.float32, requires_grad = true })
    local w = y:topk(2)
    assert.is_true(w.requires_grad)
    torch.no_grad(function() assert.is_false(y:topk(2).requires_grad) end)
  end)

  it('top-5 accuracy as training scripts compute it', function()
    local logits = torch.tensor({ { 0.1, 0.9, 0.3, 0.2, 0.8, 0.05, 0.7 }, { 0.5, 0.1, 0.2, 0.3, 0.4, 0.6, 0.05 } })
    local _, pred = logits:topk(5, 2)
    H.assert_values(pred, { { 2, 5, 7, 3, 4 }, { 6, 1, 5, 4, 3 } }, 0)
    local y = torch.tensor({ 4, 7 })
    local hit = pred:eq(y:view(2, 1)):any(2)
    H.assert_values(hit, { true, false }, 0)
  end)

  it('passes gradients to the selected elements (finite differences, non-contiguous input)', function()
    torch.manual_seed(7)
    local x = torch.randn(5, 4, { dtype = torch.float64 }):t():requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(a) return (a:topk(2, 2)) end, { x }))
    assert.is_true(torch.autograd.gradcheck(function(a) return (a:sort(1, true)) end, { x }))
    local y = torch.tensor({ 3, 1, 2 }, { dtype = torch.float32, requires_grad = true })
    local v = y:topk(1)
    v:sum():backward()
    H.assert_values(y.grad, { 1, 0, 0 }, 0)
  end)

  it('names a k out of range', function()
    local x = torch.ones(2, 3)
    H.raises(function() x:topk(4) end, 'topk: k (4) is out of range for dimension -1 of size 3')
    H.raises(function() x:topk(-1, 1) end, 'topk: k (-1) is out of range for dimension 1 of size 2')
    H.raises(function() x:topk(1.5) end, 'topk: k must be an integer')
    H.raises(function() x:topk(1, { dim = 1, biggest = true }) end, "topk: unknown option 'biggest'")
  end)
end)
