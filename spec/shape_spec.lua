-- Shape and view ops against plain-Lua references built from :totable() values, on every dtype,
-- on contiguous and non-contiguous (transposed, narrowed, expanded) inputs.
local torch = require 'torch'
local H = require 'spec.helpers'

---------------------------------------------------------------------------------------------------
-- plain-Lua machinery: nested tables addressed by 1-based index lists
---------------------------------------------------------------------------------------------------
local function copy(t) local r = {} for i, v in ipairs(t) do r[i] = v end return r end

-- nested table of the given shape; fn(idx) gives the element at the 1-based index list idx
-- (idx is shared between calls: fn must copy it before changing it)
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

local function get(t, idx)
  for _, i in ipairs(idx) do t = t[i] end
  return t
end

local function wrap(d, n) return d < 0 and d + n + 1 or d end

-- distinct values, exact in every dtype (int8 included): k for integers, k + 0.5 for floats
local function value(dtype, k)
  if dtype == torch.bool then return k % 3 ~= 0 end
  if dtype == torch.float32 or dtype == torch.float64 or dtype == torch.float16 or dtype == torch.bfloat16 then
    return k + 0.5
  end
  return k
end

local function make(dtype, shape)
  local k = 0
  local t = build(shape, function() k = k + 1; return value(dtype, k) end)
  return torch.tensor(t, { dtype = dtype }), t
end

-- a value different from old, valid in dtype
local function marker(dtype, old)
  if dtype == torch.bool then return not old end
  return old == 99 and 98 or 99
end

-- row-major values of a nested table (H.flatten, without its per-call overhead)
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

-- exact comparison of a tensor's values with a nested table (H.assert_values with tolerance 0,
-- minus luassert's and the per-element message's overhead, which dominate the run time here)
local function same_values(y, want, msg)
  local got, exp = flat(y:totable()), flat(want)
  if #got ~= #exp then error(('%s: %d values, expected %d'):format(msg or 'tensor', #got, #exp), 2) end
  for i = 1, #exp do
    if got[i] ~= exp[i] then
      error(('%s: element %d is %s, expected %s'):format(msg or 'tensor', i, tostring(got[i]), tostring(exp[i])), 2)
    end
  end
end

-- assert a == b (cheaper than luassert in the hot loops)
local function eq(want, got, msg)
  if want ~= got then error(('%s: got %s, expected %s'):format(msg or 'value', tostring(got), tostring(want)), 2) end
end

-- assert y has the shape, dtype and values wanted
local function check(y, want, shape, dtype, msg)
  local ys = y.shape
  local ok = #ys == #shape
  for i = 1, #shape do ok = ok and ys[i] == shape[i] end
  if not ok then
    error(('%s: shape {%s}, expected {%s}'):format(msg or 'tensor', table.concat(ys, ', '), table.concat(shape, ', ')), 2)
  end
  if dtype and y.dtype ~= dtype then
    error(('%s: dtype %s, expected %s'):format(msg or 'tensor', tostring(y.dtype), tostring(dtype)), 2)
  end
  same_values(y, want, msg)
end

-- The same logical tensor of `shape`, stored four ways. Each variant: name, x, t (its values as a
-- nested table, computed in Lua from the contiguous base), base (the contiguous storage owner) and
-- map (an index of x -> the index of base holding that element).
local function variants(dtype, shape)
  local out = {}
  local n = #shape
  do
    local x, t = make(dtype, shape)
    out[#out + 1] = { name = 'contiguous', x = x, t = t, base = x, map = function(i) return i end }
  end
  if n >= 2 then
    local s = copy(shape)
    s[n], s[n - 1] = s[n - 1], s[n]
    local b, bt = make(dtype, s)
    local function map(i) local j = copy(i); j[n], j[n - 1] = j[n - 1], j[n]; return j end
    out[#out + 1] = { name = 'transposed', x = b:transpose(-1, -2), base = b, map = map,
      t = build(shape, function(i) return get(bt, map(i)) end) }
  end
  if n >= 1 then
    local s = copy(shape)
    s[n] = s[n] + 2
    local b, bt = make(dtype, s)
    local function map(i) local j = copy(i); j[n] = j[n] + 1; return j end
    out[#out + 1] = { name = 'narrowed', x = b:narrow(-1, 2, shape[n]), base = b, map = map,
      t = build(shape, function(i) return get(bt, map(i)) end) }
    local s1 = copy(shape)
    s1[1] = 1
    local b1, bt1 = make(dtype, s1)
    local function map1(i) local j = copy(i); j[1] = 1; return j end
    out[#out + 1] = { name = 'expanded', x = b1:expand(shape), base = b1, map = map1,
      t = build(shape, function(i) return get(bt1, map1(i)) end) }
  end
  for _, v in ipairs(out) do
    -- the variants themselves are right (their values are what the references start from)
    check(v.x, v.t, shape, dtype, 'variant ' .. v.name)
    if (v.name == 'transposed' and shape[n] > 1 and shape[n - 1] > 1) or (v.name == 'expanded' and shape[1] > 1) then
      assert.is_false(v.x:is_contiguous(), v.name)
    end
  end
  return out
end

-- run fn(v, dtype, label) on every dtype x every variant of shape
local function each_input(shape, fn)
  for _, dt in ipairs(H.all_dtypes) do
    for _, v in ipairs(variants(dt, shape)) do fn(v, dt, tostring(dt) .. ' ' .. v.name) end
  end
end

-- write a marker into view y at yidx; assert it lands in v.base at v.map(xidx) (the element of
-- v.x that y's element aliases) and that v.x reads it; then restore the old value
local function assert_shares(v, y, yidx, xidx, dtype, msg)
  local function put(val) if #yidx == 0 then y:fill_(val) else y[yidx] = val end end
  local old = get(y:totable(), yidx)
  local new = marker(dtype, old)
  put(new)
  eq(new, get(v.base:totable(), v.map(xidx)), (msg or '') .. ': write through the view')
  eq(new, get(v.x:totable(), xidx), (msg or '') .. ': read back from the input')
  put(old)
  eq(old, get(v.x:totable(), xidx), (msg or '') .. ': restored')
end

-- write a marker into y at yidx; assert v.base is unchanged (y is a copy)
local function assert_copy(v, y, yidx, dtype, msg)
  local before = v.base:totable()
  local old = get(y:totable(), yidx)
  local new = marker(dtype, old)
  y[yidx] = new
  eq(new, get(y:totable(), yidx), msg)
  same_values(v.base, before, (msg or '') .. ': the input must be unchanged by writes to a copy')
end

-- references
local function ref_reshape(t, newshape)
  local vals = flat(t)
  local k = 0
  return build(newshape, function() k = k + 1; return vals[k] end)
end

local function ref_permute(t, shape, perm)
  local ns = {}
  for i, p in ipairs(perm) do ns[i] = shape[wrap(p, #shape)] end
  return build(ns, function(idx)
    local j = {}
    for i, p in ipairs(perm) do j[wrap(p, #shape)] = idx[i] end
    return get(t, j)
  end), ns
end

local function ref_transpose(t, shape, a, b)
  local perm = {}
  for i = 1, #shape do perm[i] = i end
  a, b = wrap(a, #shape), wrap(b, #shape)
  perm[a], perm[b] = perm[b], perm[a]
  return ref_permute(t, shape, perm)
end

local function ref_expand(t, shape, newshape)
  local off = #newshape - #shape
  return build(newshape, function(idx)
    local j = {}
    for i = 1, #shape do j[i] = shape[i] == 1 and 1 or idx[i + off] end
    return get(t, j)
  end)
end

local function ref_narrow(t, shape, dim, start, len)
  dim = wrap(dim, #shape)
  if start < 0 then start = start + shape[dim] + 1 end
  local ns = copy(shape)
  ns[dim] = len
  return build(ns, function(idx) idx = copy(idx); idx[dim] = idx[dim] + start - 1; return get(t, idx) end), ns
end

local function ref_select(t, shape, dim, i)
  dim = wrap(dim, #shape)
  if i < 0 then i = i + shape[dim] + 1 end
  local ns = copy(shape)
  table.remove(ns, dim)
  return build(ns, function(idx) idx = copy(idx); table.insert(idx, dim, i); return get(t, idx) end), ns
end

-- pieces: list of {t = nested, shape = sizes}
local function ref_cat(pieces, dim, convert)
  local n = #pieces[1].shape
  dim = wrap(dim, n)
  local ns = copy(pieces[1].shape)
  ns[dim] = 0
  for _, p in ipairs(pieces) do ns[dim] = ns[dim] + p.shape[dim] end
  return build(ns, function(idx)
    idx = copy(idx)
    local k = idx[dim]
    for _, p in ipairs(pieces) do
      if k <= p.shape[dim] then
        idx[dim] = k
        local val = get(p.t, idx)
        if convert then val = convert(val) end
        return val
      end
      k = k - p.shape[dim]
    end
  end), ns
end

local function ref_stack(pieces, dim, convert)
  local n = #pieces[1].shape
  dim = wrap(dim, n + 1)
  local ns = copy(pieces[1].shape)
  table.insert(ns, dim, #pieces)
  return build(ns, function(idx)
    idx = copy(idx)
    local which = table.remove(idx, dim)
    local val = get(pieces[which].t, idx)
    if convert then val = convert(val) end
    return val
  end), ns
end

-- lengths of split(size) / chunk(n) along a dimension of size n, PyTorch's rules
local function split_lengths(n, size)
  local l = {}
  local left = n
  repeat
    l[#l + 1] = math.min(size, left)
    left = left - size
  until left <= 0
  return l
end

local function chunk_lengths(n, chunks)
  local size = (n + chunks - 1) // chunks
  if size == 0 then
    local l = {}
    for i = 1, chunks do l[i] = 0 end
    return l
  end
  return split_lengths(n, size)
end

-- assert pieces are narrow views of v.x along dim with lengths
local function check_pieces(pieces, v, shape, dim, lengths, dt, label)
  assert.are.equal(#lengths, #pieces, label .. ': number of pieces')
  local start = 1
  for i, len in ipairs(lengths) do
    local want, ws = ref_narrow(v.t, shape, dim, start, len)
    check(pieces[i], want, ws, dt, label .. ' piece ' .. i)
    start = start + len
  end
end

---------------------------------------------------------------------------------------------------
describe('view', function()
  it('keeps row-major order with sizes as numbers, a table, or -1, on every dtype, and shares memory', function()
    for _, dt in ipairs(H.all_dtypes) do
      local v = variants(dt, { 2, 3, 4 })[1]
      local x, t = v.x, v.t
      for _, case in ipairs {
        { x:view(4, 6), { 4, 6 } }, { x:view({ 6, -1 }), { 6, 4 } }, { x:view(-1), { 24 } },
        { x:view(2, -1, 2, 2), { 2, 3, 2, 2 } }, { x:view(1, 24, 1), { 1, 24, 1 } },
        { x:view({ -1 }), { 24 } },
      } do
        check(case[1], ref_reshape(t, case[2]), case[2], dt, tostring(dt))
        assert.is_true(case[1]:is_contiguous())
      end
      -- element 17 in row-major order is x[2][2][1] and view(4, 6)[3][5]
      assert_shares(v, x:view(4, 6), { 3, 5 }, { 2, 2, 1 }, dt, 'view ' .. tostring(dt))
      assert_shares(v, x:view(-1), { 24 }, { 2, 3, 4 }, dt, 'view(-1) ' .. tostring(dt))
    end
  end)

  it('views a non-contiguous tensor when the strides allow it', function()
    for _, dt in ipairs(H.all_dtypes) do
      for _, v in ipairs(variants(dt, { 2, 3, 4 })) do
        local label = tostring(dt) .. ' ' .. v.name
        if v.name == 'narrowed' then
          -- rows of 4 out of 6: dims 1 and 2 merge, the last one cannot
          local y = v.x:view(6, 4)
          check(y, ref_reshape(v.t, { 6, 4 }), { 6, 4 }, dt, label)
          assert_shares(v, y, { 5, 3 }, { 2, 2, 3 }, dt, label)
        elseif v.name == 'expanded' then
          local y = v.x:view(2, 3, 2, 2)
          check(y, ref_reshape(v.t, { 2, 3, 2, 2 }), { 2, 3, 2, 2 }, dt, label)
          assert.are.equal(0, y:stride(1))
        elseif v.name == 'transposed' then
          local y = v.x:view(2, 3, 4)
          check(y, v.t, { 2, 3, 4 }, dt, label)
          local z = v.x:view(2, 3, 2, 2) -- splitting the last (strided) dim is still a view
          check(z, ref_reshape(v.t, { 2, 3, 2, 2 }), { 2, 3, 2, 2 }, dt, label)
          assert_shares(v, z, { 2, 3, 2, 1 }, { 2, 3, 3 }, dt, label)
        end
      end
    end
  end)

  it('raises an error naming view when the tensor is not viewable', function()
    local v = variants(torch.float32, { 2, 3, 4 })
    H.raises(function() return v[2].x:view(-1) end, 'view', 'reshape') -- transposed
    H.raises(function() return v[2].x:view(6, 4) end, 'view', 'stride')
    H.raises(function() return v[3].x:view(24) end, 'view', 'stride') -- narrowed
    H.raises(function() return v[4].x:view(24) end, 'view', 'stride') -- expanded
    H.raises(function() return H.grid(2, 3):t():view(6) end, 'view', 'compatible')
  end)

  it('rejects bad sizes with errors naming view', function()
    local x = torch.zeros(2, 3, 4)
    H.raises(function() return x:view(5, 5) end, 'view', '[5, 5]', 'invalid for input of size 24')
    H.raises(function() return x:view(-1, -1) end, 'view', 'only one dimension can be inferred')
    H.raises(function() return x:view(-1, 5) end, 'view', 'invalid for input of size 24')
    H.raises(function() return x:view(2, 1.5) end, 'view', 'integers')
    H.raises(function() return x:view({ 2, 'a' }) end, 'view', 'integers')
    H.raises(function() return x:view(-2, 12) end, 'view', '-2')
    H.raises(function() return torch.zeros(0):view(-1, 0) end, 'view', 'ambiguous')
  end)
end)

describe('reshape', function()
  it('is a view when possible (writes go through) and a copy otherwise, on every dtype', function()
    each_input({ 2, 3, 4 }, function(v, dt, label)
      for _, case in ipairs { { { 6, 4 } }, { { 24 }, { -1 } }, { { 4, 6 }, { 4, -1 } }, { { 2, 12 }, { 2, 12 } } } do
        local ws, arg = case[1], case[2] or case[1]
        local y = v.x:reshape(arg)
        check(y, ref_reshape(v.t, ws), ws, dt, label .. ' reshape ' .. table.concat(arg, ','))
      end
      local y = torch.reshape(v.x, 6, -1)
      check(y, ref_reshape(v.t, { 6, 4 }), { 6, 4 }, dt, label .. ' torch.reshape')
      if v.name == 'contiguous' then
        assert_shares(v, v.x:reshape(-1), { 17 }, { 2, 2, 1 }, dt, label)
      elseif v.name == 'narrowed' then
        assert_shares(v, v.x:reshape(6, 4), { 5, 3 }, { 2, 2, 3 }, dt, label) -- viewable
        local c = v.x:reshape(-1) -- not viewable: a contiguous copy
        assert.is_true(c:is_contiguous())
        assert_copy(v, c, { 17 }, dt, label)
      else
        local c = v.x:reshape(-1)
        assert.is_true(c:is_contiguous())
        assert_copy(v, c, { 17 }, dt, label)
      end
    end)
  end)

  it('rejects bad sizes with errors naming reshape', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return x:reshape(4) end, 'reshape', 'invalid for input of size 6')
    H.raises(function() return x:t():reshape(4, -1) end, 'reshape', 'invalid for input of size 6')
    H.raises(function() return x:reshape(-1, -1) end, 'reshape', 'only one dimension')
    H.raises(function() return x:reshape(-2, 3) end, 'reshape', '-2')
    H.raises(function() return x:reshape(2, 3, 'a') end, 'reshape')
  end)
end)

describe('view_as, reshape_as, expand_as', function()
  it('take the shape of another tensor, on every dtype', function()
    for _, dt in ipairs(H.all_dtypes) do
      local vs = variants(dt, { 2, 3, 4 })
      local other = torch.zeros(4, 6, { dtype = torch.int8 })
      local c = vs[1]
      local y = c.x:view_as(other)
      check(y, ref_reshape(c.t, { 4, 6 }), { 4, 6 }, dt, 'view_as')
      assert_shares(c, y, { 3, 5 }, { 2, 2, 1 }, dt, 'view_as')
      for _, v in ipairs(vs) do
        local r = v.x:reshape_as(other)
        check(r, ref_reshape(v.t, { 4, 6 }), { 4, 6 }, dt, 'reshape_as ' .. v.name)
      end
      local col, ct = make(dt, { 3, 1 })
      local e = col:expand_as(torch.zeros(2, 3, 4))
      check(e, ref_expand(ct, { 3, 1 }, { 2, 3, 4 }), { 2, 3, 4 }, dt, 'expand_as')
      assert.are.same({ 0, 1, 0 }, e:stride())
    end
  end)

  it('raise errors naming the shape problem', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return x:view_as(torch.zeros(4)) end, 'view', 'invalid for input of size 6')
    H.raises(function() return x:t():view_as(torch.zeros(6)) end, 'view')
    H.raises(function() return x:reshape_as(torch.zeros(4)) end, 'reshape', 'invalid for input of size 6')
    H.raises(function() return x:expand_as(torch.zeros(3, 3)) end, 'expand', 'must match')
    H.raises(function() return x:expand_as(5) end, 'expand_as', 'tensor')
    H.raises(function() return x:view_as(x, x) end, 'view_as', 'at most 2 arguments')
  end)
end)

describe('permute, transpose, t', function()
  it('permute reorders dimensions (numbers, a table, negative dims) as views, on every dtype', function()
    each_input({ 2, 3, 4 }, function(v, dt, label)
      for _, perm in ipairs { { 3, 1, 2 }, { 1, 2, 3 }, { 2, 3, 1 }, { -1, -3, -2 }, { 3, 2, 1 } } do
        local want, ws = ref_permute(v.t, { 2, 3, 4 }, perm)
        check(v.x:permute(perm), want, ws, dt, label .. ' permute ' .. table.concat(perm, ','))
        if perm[1] == 3 and perm[2] == 1 then
          check(v.x:permute(table.unpack(perm)), want, ws, dt, label)
          check(torch.permute(v.x, perm), want, ws, dt, label .. ' torch.permute')
        end
      end
      local y = v.x:permute(3, 1, 2) -- y[k][i][j] = x[i][j][k]
      assert_shares(v, y, { 4, 2, 1 }, { 2, 1, 4 }, dt, label .. ' permute')
    end)
  end)

  it('transpose swaps two dimensions as a view, on every dtype', function()
    each_input({ 2, 3, 4 }, function(v, dt, label)
      for _, ab in ipairs { { 1, 2 }, { 2, 3 }, { 3, 1 }, { -1, -3 }, { 2, 2 } } do
        local want, ws = ref_transpose(v.t, { 2, 3, 4 }, ab[1], ab[2])
        check(v.x:transpose(ab[1], ab[2]), want, ws, dt, label .. ' transpose ' .. ab[1] .. ',' .. ab[2])
      end
      check(torch.transpose(v.x, -1, 2), ref_transpose(v.t, { 2, 3, 4 }, 3, 2), { 2, 4, 3 }, dt, label .. ' torch.transpose')
      assert_shares(v, v.x:transpose(1, 3), { 3, 2, 1 }, { 1, 2, 3 }, dt, label .. ' transpose')
    end)
  end)

  it('t transposes matrices and leaves vectors and scalars alone', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local want, ws = ref_transpose(v.t, { 3, 4 }, 1, 2)
      local y = v.x:t()
      check(y, want, ws, dt, label .. ' t')
      check(torch.t(v.x), want, ws, dt, label .. ' torch.t')
      check(y:t(), v.t, { 3, 4 }, dt, label .. ' t twice')
      assert_shares(v, y, { 4, 1 }, { 1, 4 }, dt, label .. ' t')
    end)
    each_input({ 5 }, function(v, dt, label)
      check(v.x:t(), v.t, { 5 }, dt, label .. ' t of a vector')
      assert_shares(v, v.x:t(), { 2 }, { 2 }, dt, label)
    end)
    local s = torch.tensor(2.5)
    assert.are.same({}, s:t().shape)
    assert.are.equal(2.5, s:t():item())
  end)

  it('raise errors naming the op', function()
    local x = torch.zeros(2, 3, 4)
    H.raises(function() return x:permute(1, 2) end, 'permute', 'input.dim() = 3', 'len(dims) = 2')
    H.raises(function() return x:permute(1, 1, 2) end, 'permute', 'duplicate', 'dimension 1')
    H.raises(function() return x:permute(1, 2, 4) end, 'permute', 'out of range', '4')
    H.raises(function() return x:permute(0, 1, 2) end, 'permute', '1-based')
    H.raises(function() return x:transpose(1, 4) end, 'transpose', 'out of range', '4')
    H.raises(function() return x:transpose(0, 1) end, 'transpose', '1-based')
    H.raises(function() return x:transpose(1) end, 'transpose')
    H.raises(function() return x:t() end, 't()', '3D')
    H.raises(function() return torch.zeros(2, 2):t(1) end, 't', 'at most 1')
  end)

  it('dimension errors name the op when it is called through pcall or a local alias', function()
    local x = torch.zeros(2, 3)
    local ok, err = pcall(torch.transpose, x, 0, 1)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('transpose', 1, true), err)
    local f = x.unsqueeze
    ok, err = pcall(function() local r = f(x, 0); return r end)
    assert.truthy(tostring(err):find('unsqueeze', 1, true), err)
  end)
end)

describe('contiguous', function()
  it('returns the same object when already contiguous, else a contiguous copy, on every dtype', function()
    each_input({ 2, 3, 4 }, function(v, dt, label)
      local c = v.x:contiguous()
      check(c, v.t, { 2, 3, 4 }, dt, label)
      assert.is_true(c:is_contiguous(), label)
      if v.name == 'contiguous' then
        assert.is_true(rawequal(c, v.x), label)
      else
        assert.is_false(rawequal(c, v.x), label)
        assert.are.same({ 12, 4, 1 }, c:stride())
        assert_copy(v, c, { 2, 3, 4 }, dt, label)
      end
    end)
    -- a narrowed 1-D tensor is contiguous: the same object, offset and all
    local x = torch.tensor({ 1, 2, 3, 4 })
    local n = x:narrow(1, 2, 2)
    assert.is_true(rawequal(n, n:contiguous()))
  end)
end)

describe('squeeze and unsqueeze', function()
  local shape = { 2, 1, 3, 1 }
  it('squeeze removes all size-1 dims or one given dim (as a view), on every dtype', function()
    each_input(shape, function(v, dt, label)
      for _, case in ipairs {
        { v.x:squeeze(), { 2, 3 } }, { v.x:squeeze(2), { 2, 3, 1 } }, { v.x:squeeze(-1), { 2, 1, 3 } },
        { v.x:squeeze(4), { 2, 1, 3 } }, { v.x:squeeze(1), { 2, 1, 3, 1 } }, { v.x:squeeze(3), { 2, 1, 3, 1 } },
        { torch.squeeze(v.x), { 2, 3 } }, { torch.squeeze(v.x, -3), { 2, 3, 1 } },
      } do
        check(case[1], ref_reshape(v.t, case[2]), case[2], dt, label .. ' squeeze')
      end
      assert_shares(v, v.x:squeeze(), { 2, 3 }, { 2, 1, 3, 1 }, dt, label .. ' squeeze')
      assert_shares(v, v.x:squeeze(1), { 1, 1, 2, 1 }, { 1, 1, 2, 1 }, dt, label .. ' squeeze(1)')
    end)
    local s = torch.ones(1, 1)
    assert.are.same({}, s:squeeze().shape)
    assert.are.same({}, torch.tensor(3):squeeze().shape)
  end)

  it('unsqueeze inserts a size-1 dim, with negative dims counting from the end of the result', function()
    each_input({ 2, 3 }, function(v, dt, label)
      for _, case in ipairs {
        { 1, { 1, 2, 3 } }, { 2, { 2, 1, 3 } }, { 3, { 2, 3, 1 } },
        { -1, { 2, 3, 1 } }, { -2, { 2, 1, 3 } }, { -3, { 1, 2, 3 } },
      } do
        local y = v.x:unsqueeze(case[1])
        check(y, ref_reshape(v.t, case[2]), case[2], dt, label .. ' unsqueeze ' .. case[1])
        check(torch.unsqueeze(v.x, case[1]), ref_reshape(v.t, case[2]), case[2], dt, label)
      end
      assert_shares(v, v.x:unsqueeze(2), { 2, 1, 3 }, { 2, 3 }, dt, label .. ' unsqueeze')
    end)
    assert.are.same({ 3, 3, 1 }, torch.zeros(2, 3):unsqueeze(2):stride()) -- PyTorch's strides
    assert.are.same({ 1 }, torch.tensor(5):unsqueeze(1).shape)
    assert.are.same({ 1 }, torch.tensor(5):unsqueeze(-1).shape)
  end)

  it('raise errors naming the op', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return x:squeeze(3) end, 'squeeze', 'out of range', '3')
    H.raises(function() return x:squeeze(0) end, 'squeeze', '1-based')
    H.raises(function() return x:squeeze(1, 2) end, 'squeeze', 'at most 2')
    H.raises(function() return x:unsqueeze(4) end, 'unsqueeze', 'out of range', '4')
    H.raises(function() return x:unsqueeze(-4) end, 'unsqueeze', 'out of range', '-4')
    H.raises(function() return x:unsqueeze(0) end, 'unsqueeze', '1-based')
    H.raises(function() return x:unsqueeze() end, 'unsqueeze')
  end)
end)

describe('expand', function()
  it('broadcasts size-1 dims and adds leading dims with stride 0, on every dtype', function()
    each_input({ 3, 1 }, function(v, dt, label)
      for _, case in ipairs {
        { v.x:expand(3, 4), { 3, 4 } }, { v.x:expand(-1, 4), { 3, 4 } }, { v.x:expand({ 2, 3, 4 }), { 2, 3, 4 } },
        { v.x:expand(2, -1, 5), { 2, 3, 5 } }, { v.x:expand(3, 1), { 3, 1 } }, { v.x:expand(1, 3, 1), { 1, 3, 1 } },
        { v.x:expand(3, 0), { 3, 0 } },
      } do
        check(case[1], ref_expand(v.t, { 3, 1 }, case[2]), case[2], dt, label .. ' expand')
      end
      local y = v.x:expand(2, 3, 4)
      assert.are.equal(0, y:stride(1))
      assert.are.equal(0, y:stride(3))
      -- values are shared: a write into the input shows in every copy
      local new = marker(dt, get(v.t, { 2, 1 }))
      v.x[{ 2, 1 }] = new
      for i = 1, 2 do
        for k = 1, 4 do assert.are.equal(new, y[{ i, 2, k }], label) end
      end
      assert.are.equal(new, get(v.base:totable(), v.map({ 2, 1 })), label)
    end)
  end)

  it('raises errors naming expand', function()
    local x = torch.zeros(3, 1)
    H.raises(function() return x:expand(4, 4) end, 'expand', 'must match the existing size (3)', 'dimension 1')
    H.raises(function() return x:expand(3) end, 'expand', 'number of sizes provided (1)')
    H.raises(function() return x:expand(-1, 3, 4) end, 'expand', '-1', 'leading')
    H.raises(function() return x:expand(3, -2) end, 'expand', 'non-negative')
    H.raises(function() return x:expand(3, 2.5) end, 'expand', 'integers')
  end)
end)

describe('flatten', function()
  it('merges dims start..end (1-based, negative from the end), on every dtype', function()
    each_input({ 2, 3, 4 }, function(v, dt, label)
      for _, case in ipairs {
        { v.x:flatten(), { 24 } }, { v.x:flatten(2), { 2, 12 } }, { v.x:flatten(1, 2), { 6, 4 } },
        { v.x:flatten(-2, -1), { 2, 12 } }, { v.x:flatten(2, 2), { 2, 3, 4 } }, { v.x:flatten(1, -1), { 24 } },
        { torch.flatten(v.x, 2, 3), { 2, 12 } },
      } do
        check(case[1], ref_reshape(v.t, case[2]), case[2], dt, label .. ' flatten')
      end
      if v.name == 'contiguous' then
        assert_shares(v, v.x:flatten(), { 17 }, { 2, 2, 1 }, dt, label)
      elseif v.name == 'narrowed' then
        assert_shares(v, v.x:flatten(1, 2), { 5, 3 }, { 2, 2, 3 }, dt, label)
      elseif v.name == 'transposed' then
        assert_copy(v, v.x:flatten(), { 17 }, dt, label)
      end
    end)
    local s = torch.tensor(4):flatten()
    assert.are.same({ 1 }, s.shape)
    H.assert_values(s, { 4 })
  end)

  it('raises errors naming flatten', function()
    local x = torch.zeros(2, 3, 4)
    H.raises(function() return x:flatten(3, 2) end, 'flatten', 'start_dim cannot come after end_dim')
    H.raises(function() return x:flatten(1, 4) end, 'flatten', 'out of range', '4')
    H.raises(function() return x:flatten(0) end, 'flatten', '1-based')
  end)
end)

describe('narrow', function()
  it('takes len elements from a 1-based (or negative) start, as a view, on every dtype', function()
    each_input({ 2, 3, 4 }, function(v, dt, label)
      for _, a in ipairs { { 3, 2, 2 }, { 1, 2, 1 }, { 2, 1, 3 }, { -1, -2, 2 }, { 3, -4, 1 }, { 2, 4, 0 }, { 3, 1, 4 } } do
        local want, ws = ref_narrow(v.t, { 2, 3, 4 }, a[1], a[2], a[3])
        check(v.x:narrow(a[1], a[2], a[3]), want, ws, dt, label .. ' narrow ' .. table.concat(a, ','))
        check(torch.narrow(v.x, a[1], a[2], a[3]), want, ws, dt, label .. ' torch.narrow')
      end
      assert_shares(v, v.x:narrow(3, 2, 2), { 2, 3, 2 }, { 2, 3, 3 }, dt, label .. ' narrow')
      assert_shares(v, v.x:narrow(1, -1, 1), { 1, 1, 1 }, { 2, 1, 1 }, dt, label .. ' narrow(-1)')
    end)
  end)

  it('raises errors naming narrow', function()
    local x = H.grid(2, 3)
    H.raises(function() return x:narrow(2, 3, 2) end, 'narrow', 'start (3) + length (2) exceeds dimension size (3)')
    H.raises(function() return x:narrow(1, 0, 1) end, 'narrow', '1-based')
    H.raises(function() return x:narrow(1, 1, -1) end, 'narrow', 'non-negative')
    H.raises(function() return x:narrow(3, 1, 1) end, 'narrow', 'out of range')
    H.raises(function() return x:narrow(2, 5, 0) end, 'narrow', '5')
    H.raises(function() return torch.tensor(1):narrow(1, 1, 1) end, 'narrow', '0-dim')
  end)

  it('narrow with a negative start beyond the size raises', function()
    local x = H.grid(2, 3)
    H.raises(function() return x:narrow(1, -3, 1) end, 'narrow', 'out of range')
  end)
end)

describe('select', function()
  it('removes a dim at a 1-based or negative index, as a view, on every dtype', function()
    each_input({ 2, 3, 4 }, function(v, dt, label)
      for _, a in ipairs { { 1, 2 }, { 2, -1 }, { 3, 1 }, { -1, -4 }, { 2, 2 }, { -3, 1 } } do
        local want, ws = ref_select(v.t, { 2, 3, 4 }, a[1], a[2])
        check(v.x:select(a[1], a[2]), want, ws, dt, label .. ' select ' .. a[1] .. ',' .. a[2])
        check(torch.select(v.x, a[1], a[2]), want, ws, dt, label .. ' torch.select')
      end
      assert_shares(v, v.x:select(2, 3), { 2, 4 }, { 2, 3, 4 }, dt, label .. ' select')
      assert_shares(v, v.x:select(3, -1), { 1, 2 }, { 1, 2, 4 }, dt, label .. ' select(-1)')
      local s = v.x:select(1, 2):select(1, 3):select(1, 4) -- 0-dim view
      assert.are.same({}, s.shape)
      assert.are.equal(get(v.t, { 2, 3, 4 }), s:item())
      assert_shares(v, s, {}, { 2, 3, 4 }, dt, label .. ' 0-dim select')
    end)
  end)

  it('raises errors naming select with the 1-based index', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return x:select(2, 4) end, 'select', 'index 4 out of range', 'dimension 2')
    H.raises(function() return x:select(2, -4) end, 'select', 'index -4 out of range')
    H.raises(function() return x:select(2, 0) end, 'select', '1-based')
    H.raises(function() return x:select(3, 1) end, 'select', 'out of range')
    H.raises(function() return torch.tensor(1):select(1, 1) end, 'select', '0-dim')
  end)
end)

describe('torch.cat', function()
  it('concatenates along dim 1 by default, or a given dim, any mix of layouts, on every dtype', function()
    for _, dt in ipairs(H.all_dtypes) do
      local vs = variants(dt, { 2, 3, 4 })
      local xs, pieces = {}, {}
      for i, v in ipairs(vs) do xs[i] = v.x; pieces[i] = { t = v.t, shape = { 2, 3, 4 } } end
      for _, dim in ipairs { 1, 2, 3, -1, -3 } do
        local want, ws = ref_cat(pieces, dim)
        check(torch.cat(xs, dim), want, ws, dt, tostring(dt) .. ' cat dim ' .. dim)
      end
      local want, ws = ref_cat(pieces, 1)
      local y = torch.cat(xs)
      check(y, want, ws, dt, tostring(dt) .. ' cat default dim')
      assert.is_true(y:is_contiguous())
      -- different sizes along the cat dim
      local a, at = make(dt, { 2, 1, 4 })
      local w2, ws2 = ref_cat({ { t = at, shape = { 2, 1, 4 } }, pieces[2], pieces[1] }, 2)
      check(torch.cat({ a, vs[2].x, vs[1].x }, 2), w2, ws2, dt, tostring(dt) .. ' cat sizes 1, 3, 3')
      check(torch.cat({ vs[3].x }), vs[3].t, { 2, 3, 4 }, dt, 'cat of one tensor')
      -- a new tensor: writes do not reach the inputs
      assert_copy(vs[1], y, { 1, 1, 1 }, dt, 'cat result')
    end
  end)

  it('promotes dtypes as PyTorch does', function()
    local function vals(dt, list)
      if dt == torch.bool then
        local b = {}
        for i, v in ipairs(list) do b[i] = v ~= 0 end
        return torch.tensor(b)
      end
      return torch.tensor(list, { dtype = dt })
    end
    for _, case in ipairs {
      { torch.int64, torch.float32, torch.float32 }, { torch.int8, torch.bool, torch.int8 },
      { torch.uint8, torch.int8, torch.int16 }, { torch.float16, torch.bfloat16, torch.float32 },
      { torch.int32, torch.float64, torch.float64 }, { torch.bool, torch.bool, torch.bool },
      { torch.int16, torch.uint8, torch.int16 }, { torch.float16, torch.int64, torch.float16 },
      { torch.bool, torch.float16, torch.float16 }, { torch.int32, torch.int64, torch.int64 },
      { torch.bfloat16, torch.int32, torch.bfloat16 }, { torch.uint8, torch.bool, torch.uint8 },
    } do
      local a = vals(case[1], { 1, 0, 3 })
      local b = vals(case[2], { 2, 5 })
      local convert = case[3] ~= torch.bool and function(v)
        if type(v) == 'boolean' then return v and 1 or 0 end
        return v
      end or nil
      local want, ws = ref_cat({ { t = a:totable(), shape = { 3 } }, { t = b:totable(), shape = { 2 } } }, 1, convert)
      local label = tostring(case[1]) .. ' + ' .. tostring(case[2])
      check(torch.cat({ a, b }), want, ws, case[3], 'cat ' .. label)
      local want2, ws2 = ref_cat({ { t = b:totable(), shape = { 2 } }, { t = a:totable(), shape = { 3 } } }, 1, convert)
      check(torch.cat({ b, a }), want2, ws2, case[3], 'cat ' .. label .. ' reversed')
    end
  end)

  it('skips legacy empty 1-D tensors and is also torch.concat', function()
    local x = H.grid(2, 3)
    check(torch.cat({ torch.zeros(0), x, torch.zeros(0) }), x:totable(), { 2, 3 }, torch.float32, 'cat with empties')
    local c = torch.concat({ x, x }, 2)
    check(c, ref_cat({ { t = x:totable(), shape = { 2, 3 } }, { t = x:totable(), shape = { 2, 3 } } }, 2), { 2, 6 },
      torch.float32, 'concat')
  end)

  it('raises errors naming cat', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return torch.cat({}) end, 'cat', 'non-empty')
    H.raises(function() return torch.cat({ x, 1 }) end, 'cat', 'element 2', 'not a tensor')
    H.raises(function() return torch.cat({ x, torch.zeros(3) }) end, 'cat', 'same number of dimensions')
    H.raises(function() return torch.cat({ x, torch.zeros(2, 2) }) end, 'cat', 'Expected size 3 but got size 2',
      'tensor number 2')
    H.raises(function() return torch.cat({ x, torch.zeros(3, 3) }, 2) end, 'cat', 'Expected size 2 but got size 3')
    H.raises(function() return torch.cat({ torch.tensor(1) }) end, 'cat', 'zero-dimensional')
    H.raises(function() return torch.cat({ x, x }, 3) end, 'cat', 'out of range', '3')
    H.raises(function() return torch.cat({ x, x }, 0) end, 'cat', '1-based')
    H.raises(function() return torch.cat(x) end, 'cat')
  end)
end)

describe('torch.stack', function()
  it('stacks along a new dim (default 1, negative from the end of the result), on every dtype', function()
    for _, dt in ipairs(H.all_dtypes) do
      local vs = variants(dt, { 2, 3 })
      local xs, pieces = {}, {}
      for i, v in ipairs(vs) do xs[i] = v.x; pieces[i] = { t = v.t, shape = { 2, 3 } } end
      for _, dim in ipairs { 1, 2, 3, -1, -2, -3 } do
        local want, ws = ref_stack(pieces, dim)
        check(torch.stack(xs, dim), want, ws, dt, tostring(dt) .. ' stack dim ' .. dim)
      end
      local want, ws = ref_stack(pieces, 1)
      local y = torch.stack(xs)
      check(y, want, ws, dt, tostring(dt) .. ' stack default')
      assert_copy(vs[1], y, { 1, 1, 1 }, dt, 'stack result')
    end
    local s = torch.stack({ torch.tensor(1.5), torch.tensor(2.5) })
    check(s, { 1.5, 2.5 }, { 2 }, torch.float32, 'stack of scalars')
  end)

  it('promotes dtypes', function()
    local s = torch.stack({ torch.tensor({ 1, 2 }, { dtype = torch.float16 }), torch.tensor({ 3, 4 }) })
    check(s, { { 1, 2 }, { 3, 4 } }, { 2, 2 }, torch.float16, 'stack float16 + int64')
    local b = torch.stack({ torch.tensor({ true, false }), torch.tensor({ 3, 4 }, { dtype = torch.uint8 }) })
    check(b, { { 1, 0 }, { 3, 4 } }, { 2, 2 }, torch.uint8, 'stack bool + uint8')
  end)

  it('raises errors naming stack', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return torch.stack({ x, x:t() }) end, 'stack', 'equal size', '[2, 3]', '[3, 2]', 'entry 2')
    H.raises(function() return torch.stack({}) end, 'stack', 'non-empty')
    H.raises(function() return torch.stack({ x, 'a' }) end, 'stack', 'element 2', 'string')
    H.raises(function() return torch.stack({ x, x }, 4) end, 'stack', 'out of range', '4')
    H.raises(function() return torch.stack({ x, x }, 0) end, 'stack', '1-based')
  end)
end)

describe('split, chunk, unbind', function()
  it('split by a size or a table of sizes gives views along a dim, on every dtype', function()
    each_input({ 6, 4 }, function(v, dt, label)
      for _, case in ipairs {
        { 4, nil, 1, { 4, 2 } }, { 3, -1, 2, { 3, 1 } }, { 10, 1, 1, { 6 } }, { 1, 2, 2, { 1, 1, 1, 1 } },
        { { 1, 2, 3 }, nil, 1, { 1, 2, 3 } }, { { 3, 1 }, -1, 2, { 3, 1 } }, { { 0, 6 }, 1, 1, { 0, 6 } },
      } do
        local pieces = case[2] and v.x:split(case[1], case[2]) or v.x:split(case[1])
        check_pieces(pieces, v, { 6, 4 }, case[3], case[4], dt, label .. ' split')
      end
      check_pieces(torch.split(v.x, 4), v, { 6, 4 }, 1, { 4, 2 }, dt, label .. ' torch.split')
      local p = v.x:split(4)
      assert_shares(v, p[2], { 2, 3 }, { 6, 3 }, dt, label .. ' split piece')
    end)
  end)

  it('chunk follows PyTorch ceil rule (pieces of ceil(n / chunks), maybe fewer pieces), on every dtype', function()
    each_input({ 6, 4 }, function(v, dt, label)
      for _, case in ipairs {
        { 4, nil, 1 }, { 5, 1, 1 }, { 1, 1, 1 }, { 7, 1, 1 }, { 3, 2, 2 }, { 10, -1, 2 },
      } do
        local pieces = case[2] and v.x:chunk(case[1], case[2]) or v.x:chunk(case[1])
        local d = wrap(case[3], 2)
        check_pieces(pieces, v, { 6, 4 }, case[3], chunk_lengths(({ 6, 4 })[d], case[1]), dt,
          label .. ' chunk ' .. case[1])
      end
      check_pieces(torch.chunk(v.x, 4, 1), v, { 6, 4 }, 1, { 2, 2, 2 }, dt, label .. ' torch.chunk')
      assert_shares(v, v.x:chunk(3)[3], { 1, 4 }, { 5, 4 }, dt, label .. ' chunk piece')
    end)
    -- the rule itself, spelled out
    assert.are.equal(3, #torch.zeros(6):chunk(4)) -- 2, 2, 2
    assert.are.equal(3, #torch.zeros(6):chunk(5)) -- 2, 2, 2
    assert.are.equal(2, #torch.zeros(4):chunk(3)) -- 2, 2
    local p = torch.zeros(10):chunk(4) -- 3, 3, 3, 1
    assert.are.same({ 3, 3, 3, 1 }, { p[1]:numel(), p[2]:numel(), p[3]:numel(), p[4]:numel() })
    local e = torch.zeros(0):chunk(3) -- as PyTorch: chunks empty pieces
    assert.are.equal(3, #e)
    for i = 1, 3 do assert.are.same({ 0 }, e[i].shape) end
  end)

  it('unbind returns select views for each index along a dim, on every dtype', function()
    each_input({ 2, 3, 4 }, function(v, dt, label)
      for _, dim in ipairs { 1, 2, 3, -1 } do
        local parts = dim == 1 and v.x:unbind() or v.x:unbind(dim)
        local d = wrap(dim, 3)
        assert.are.equal(({ 2, 3, 4 })[d], #parts)
        for i, part in ipairs(parts) do
          local want, ws = ref_select(v.t, { 2, 3, 4 }, dim, i)
          check(part, want, ws, dt, label .. ' unbind ' .. dim .. ' part ' .. i)
        end
      end
      check(torch.unbind(v.x, 2)[3], ref_select(v.t, { 2, 3, 4 }, 2, 3), { 2, 4 }, dt, label .. ' torch.unbind')
      assert_shares(v, v.x:unbind(2)[2], { 2, 4 }, { 2, 2, 4 }, dt, label .. ' unbind part')
    end)
  end)

  it('raise errors naming the op', function()
    local x = torch.zeros(6, 4)
    H.raises(function() return x:split(0) end, 'split', 'split_size can only be 0')
    H.raises(function() return x:split(-1) end, 'split', 'non-negative')
    H.raises(function() return x:split({ 1, 1 }, 2) end, 'split', 'sum exactly to 4', '[1, 1]')
    H.raises(function() return x:split({ 7, -1 }) end, 'split', 'non-negative')
    H.raises(function() return x:split({ 1, 'a' }) end, 'split', 'integers')
    H.raises(function() return x:split(2, 3) end, 'split', 'out of range', '3')
    H.raises(function() return torch.tensor(1):split(1) end, 'split', '1-dimensional')
    H.raises(function() return x:chunk(0) end, 'chunk', 'greater than 0')
    H.raises(function() return x:chunk(2, 3) end, 'chunk', 'out of range')
    H.raises(function() return x:chunk(2, 0) end, 'chunk', '1-based')
    H.raises(function() return torch.tensor(1):chunk(1) end, 'chunk', '1-dimensional')
    H.raises(function() return x:unbind(3) end, 'unbind', 'out of range', '3')
    H.raises(function() return x:unbind(0) end, 'unbind', '1-based')
    H.raises(function() return torch.tensor(1):unbind() end, 'unbind', '0-dim')
  end)
end)

describe('x[i] and x[{...}] views', function()
  it('write through to the base on every dtype, contiguous or not', function()
    each_input({ 3, 4 }, function(v, dt, label)
      local r = v.x[2]
      check(r, ref_select(v.t, { 3, 4 }, 1, 2), { 4 }, dt, label .. ' x[2]')
      if v.name ~= 'expanded' then
        assert_shares(v, r, { 3 }, { 2, 3 }, dt, label .. ' x[2]')
        local c = v.x[{ {}, { 2, 3 } }]
        check(c, ref_narrow(v.t, { 3, 4 }, 2, 2, 2), { 3, 2 }, dt, label .. ' x[{{}, {2, 3}}]')
        assert_shares(v, c, { 3, 2 }, { 3, 3 }, dt, label .. ' range')
      end
    end)
  end)
end)
