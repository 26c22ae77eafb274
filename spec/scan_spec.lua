-- The scans torch.cummax, torch.cummin and torch.logcumsumexp (and their methods) against plain-Lua
-- loops over the rows of each dim: every dim (positive and negative), every dtype each accepts,
-- ties (the index moves to the later of equal extremes, as PyTorch), NaN, infinities, signed
-- zeros, non-contiguous inputs, 0-dim and empty tensors, inputs large enough for the threaded
-- and blocked kernel paths, CPU devices; gradients against finite differences (gradcheck, float64)
-- and against the formulas written out here; the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local gradcheck = torch.autograd.gradcheck

local ipairs, type, tostring, assert, error = ipairs, type, tostring, assert, error
local math, string = math, string
local NAN, INF = 0 / 0, math.huge

---------------------------------------------------------------------------------------------------
-- plain-Lua machinery
---------------------------------------------------------------------------------------------------
local FLOAT = { [torch.float32] = true, [torch.float64] = true, [torch.float16] = true, [torch.bfloat16] = true }

-- row-major values of a nested table (or a scalar); booleans become 0 / 1
local function flat(t)
  local out = {}
  local function rec(u)
    if type(u) ~= 'table' then
      if type(u) == 'boolean' then u = u and 1 or 0 end
      out[#out + 1] = u
      return
    end
    for i = 1, #u do rec(u[i]) end
  end
  rec(t)
  return out
end

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- the values of a tensor as stored (floating dtypes read back in float64, bools as 0 / 1)
local function values(x)
  if FLOAT[x.dtype] then return flat(x:double():totable()) end
  return flat(x:totable())
end

-- For each row of `shape` along dim d (1-based, positive), step(state, v, k) -> state, value, index
-- over its elements in order (k 1-based); returns the flat arrays of values and indices.
local function ref_scan(shape, vals, d, step)
  local stride = 1
  for k = #shape, d + 1, -1 do stride = stride * shape[k] end
  local len = shape[d]
  local outer = numel(shape) // math.max(len * stride, 1)
  local ov, oi = {}, {}
  for o = 0, outer - 1 do
    for inner = 0, stride - 1 do
      local base = o * len * stride + inner
      local st
      for k = 1, len do
        local p = base + (k - 1) * stride + 1
        local v, i
        st, v, i = step(st, vals[p], k)
        ov[p], oi[p] = v, i
      end
    end
  end
  return ov, oi
end

-- cummax / cummin as PyTorch defines them: the running extreme, its index moving to a later equal
-- element; the first NaN, then each later NaN, takes over for good
local function extreme_step(greater)
  return function(st, v, k)
    if st == nil then
      st = { v = v, i = k }
    elseif v ~= v then
      st.v, st.i = v, k
    elseif st.v == st.v then
      if (greater and v > st.v) or (not greater and v < st.v) or v == st.v then st.v, st.i = v, k end
    end
    return st, st.v, st.i
  end
end

-- log(sum_{i <= k} exp(x_i)) from the prefix itself (O(n^2), no running rescaling): its maximum m
-- taken out, NaN if any NaN, +inf if any +inf, -inf if all are -inf
local function lcse_step(st, v, k)
  st = st or {}
  st[k] = v
  local m, nan = -INF, false
  for i = 1, k do
    if st[i] ~= st[i] then nan = true elseif st[i] > m then m = st[i] end
  end
  if nan then return st, NAN, 0 end
  if m == INF or m == -INF then return st, m, 0 end
  local s = 0
  for i = 1, k do s = s + math.exp(st[i] - m) end
  return st, m + math.log(s), 0
end

local function same_num(a, b)
  if a ~= a then return b ~= b end
  return a == b
end

-- assert x has shape and dtype and its flat values equal want (within tol relative; NaN == NaN)
local function check_vals(x, shape, dtype, want, tol, msg)
  assert.are.same(shape, x.shape, msg .. ': shape')
  assert.are.equal(dtype, x.dtype, msg .. ': dtype')
  local got = values(x)
  assert(#got == #want, msg .. ': element count')
  for i = 1, #want do
    if tol == 0 then
      if not same_num(got[i], want[i]) then
        error(string.format('%s: element %d is %s, expected %s', msg, i, tostring(got[i]), tostring(want[i])), 2)
      end
    else
      H.close(got[i], want[i], tol, msg .. ' element ' .. i)
    end
  end
end

local SHAPE = { 3, 4, 5 }
local DIMS = { 1, 2, 3, -1, -2, -3 }
local function pos(d, nd) return d < 0 and d + nd + 1 or d end

-- values of shape SHAPE with many ties, exact in every dtype (small integers, halves for floats)
local function tie_values(dt)
  local n = numel(SHAPE)
  local t = {}
  for k = 1, n do
    local v = (k * 7 + k // 3) % 5
    if dt == torch.bool then t[k] = v % 2 == 1
    elseif FLOAT[dt] then t[k] = v * 0.5 - 1
    elseif dt == torch.uint8 then t[k] = v * 40
    else t[k] = v * 3 - 6 end
  end
  return t
end

-- a nested table of `shape` from a flat array
local function nest(shape, vals)
  local k = 0
  local function rec(d)
    local t = {}
    for i = 1, shape[d] do
      if d == #shape then k = k + 1; t[i] = vals[k] else t[i] = rec(d + 1) end
    end
    return t
  end
  return rec(1)
end

-- x (contiguous) and the same values as non-contiguous views: permuted from a tensor laid out
-- with the dims in another order, and narrowed out of a larger tensor
local function variants(dt, vals)
  local x = torch.tensor(nest(SHAPE, vals), { dtype = dt })
  local p = x:permute(3, 1, 2):contiguous():permute(2, 3, 1)
  assert(not p:is_contiguous())
  local wide = torch.cat({ x, x }, 3)
  local n = wide:narrow(3, 1, SHAPE[3])
  assert(not n:is_contiguous())
  local e = x:narrow(1, 1, 1):expand(SHAPE[1], SHAPE[2], SHAPE[3])
  return { { 'contiguous', x }, { 'permuted', p }, { 'narrowed', n }, { 'expanded', e } }
end

---------------------------------------------------------------------------------------------------
describe('cummax and cummin', function()
  local ops = { { 'cummax', true }, { 'cummin', false } }
  for _, op in ipairs(ops) do
    local name, greater = op[1], op[2]

    it(name .. ' matches the reference along every dim on every dtype, with ties, contiguous or not', function()
      for _, dt in ipairs(H.all_dtypes) do
        for _, v in ipairs(variants(dt, tie_values(dt))) do
          local x = v[2]
          local vals = values(x)
          for _, d in ipairs(DIMS) do
            local wv, wi = ref_scan(SHAPE, vals, pos(d, 3), extreme_step(greater))
            local msg = ('%s %s %s dim=%d'):format(name, tostring(dt), v[1], d)
            local rv, ri = torch[name](x, d)
            check_vals(rv, SHAPE, dt, wv, 0, msg .. ' values')
            check_vals(ri, SHAPE, torch.int64, wi, 0, msg .. ' indices (1-based)')
            local mv, mi = x[name](x, d)
            check_vals(mv, SHAPE, dt, wv, 0, msg .. ' method values')
            check_vals(mi, SHAPE, torch.int64, wi, 0, msg .. ' method indices')
          end
        end
      end
    end)

    it(name .. ': the index moves to a later equal element; NaN takes over, each later NaN moves it', function()
      local x = torch.tensor({ 1, 3, 3, NAN, 2, NAN, 5 })
      local v, i = torch[name](x, 1)
      local wv = greater and { 1, 3, 3, NAN, NAN, NAN, NAN } or { 1, 1, 1, NAN, NAN, NAN, NAN }
      local wi = greater and { 1, 2, 3, 4, 4, 6, 6 } or { 1, 1, 1, 4, 4, 6, 6 }
      check_vals(v, { 7 }, torch.float32, wv, 0, name .. ' NaN values')
      check_vals(i, { 7 }, torch.int64, wi, 0, name .. ' NaN indices')
      -- PyTorch 1.13's results for integer ties
      local a = greater and torch.tensor({ 2, 1, 2, 0, 2 }) or torch.tensor({ 2, 1, 2, 1, 3 })
      local av, ai = a[name](a, 1)
      assert.are.same(greater and { 2, 2, 2, 2, 2 } or { 2, 1, 1, 1, 1 }, av:totable())
      assert.are.same(greater and { 1, 1, 3, 3, 5 } or { 1, 2, 2, 4, 4 }, ai:totable())
      -- bool
      local b = torch.tensor(greater and { true, false, true } or { false, true, false })
      local bv, bi = b[name](b, 1)
      assert.are.same(greater and { true, true, true } or { false, false, false }, bv:totable())
      assert.are.same({ 1, 1, 3 }, bi:totable())
      -- infinities are ordinary values; -0.0 ties with 0.0, so it takes over, sign and all
      local f = torch.tensor({ -INF, INF, 0.0, -INF }, { dtype = torch.float64 })
      local fv, fi = f[name](f, 1)
      check_vals(fv, { 4 }, torch.float64, greater and { -INF, INF, INF, INF } or { -INF, -INF, -INF, -INF }, 0,
        name .. ' infinities')
      assert.are.same(greater and { 1, 2, 2, 2 } or { 1, 1, 1, 4 }, fi:totable())
      local z = torch.tensor({ 0.0, -0.0 }, { dtype = torch.float64 })
      local zv, zi = z[name](z, 1)
      assert.are.same({ 1, 2 }, zi:totable())
      assert.is_true(1 / zv:totable()[2] < 0, name .. ': the value at a tie is the later element (-0.0)')
    end)

    it(name .. ' of the extremes of every integer dtype (exact, no rounding through floats)', function()
      local cases = {
        { torch.int64, { math.maxinteger - 1, math.maxinteger, math.mininteger, math.maxinteger - 1 } },
        { torch.int32, { -2147483648, 2147483647, 2147483646, -2147483648 } },
        { torch.int16, { -32768, 32767, 0, 32767 } },
        { torch.int8, { -128, 127, -128, 127 } },
        { torch.uint8, { 0, 255, 254, 0 } },
      }
      for _, c in ipairs(cases) do
        local dt, vals = c[1], c[2]
        local wv, wi = ref_scan({ 4 }, vals, 1, extreme_step(greater))
        local v, i = torch[name](torch.tensor(vals, { dtype = dt }), 1)
        check_vals(v, { 4 }, dt, wv, 0, name .. ' ' .. tostring(dt))
        check_vals(i, { 4 }, torch.int64, wi, 0, name .. ' ' .. tostring(dt) .. ' indices')
      end
    end)

    it(name .. ' of 0-dim and empty tensors', function()
      for _, d in ipairs { 1, -1 } do
        local v, i = torch[name](torch.tensor(2.5), d)
        assert.are.same({}, v.shape)
        assert.are.equal(2.5, v:item())
        assert.are.equal(1, i:item())
        assert.are.equal(torch.int64, i.dtype)
      end
      local iv, ii = torch[name](torch.tensor(7, { dtype = torch.int16 }), 1)
      assert.are.equal(torch.int16, iv.dtype)
      assert.are.equal(7, iv:item())
      assert.are.equal(1, ii:item())
      for _, d in ipairs { 1, 2, -1 } do
        local e = torch.zeros(0, 3, { dtype = torch.int32 })
        local v, i = torch[name](e, d)
        assert.are.same({ 0, 3 }, v.shape)
        assert.are.same({ 0, 3 }, i.shape)
        assert.are.equal(torch.int32, v.dtype)
        assert.are.equal(torch.int64, i.dtype)
      end
      local v = torch[name](torch.zeros(2, 0), 1)
      assert.are.same({ 2, 0 }, v.shape)
    end)

    it(name .. ' gradients: gradcheck in float64 along every dim, contiguous or not', function()
      torch.manual_seed(7)
      -- distinct values: no ties, so finite differences see a smooth function
      local function leaf(shape) return (torch.randperm(numel(shape)):double():reshape(shape) * 0.37 + 0.1):requires_grad_() end
      for _, d in ipairs { 1, 2, 3, -1 } do
        assert.is_true(gradcheck(function(a) return (torch[name](a, d)) end, { leaf({ 2, 3, 4 }) }), name .. ' dim ' .. d)
      end
      assert.is_true(gradcheck(function(a) return (a:t()[name](a:t(), 1)) end, { leaf({ 4, 3 }) }), name .. ' transposed')
      assert.is_true(gradcheck(function(a) return (a[name](a, 1)) end, { leaf({ 6 }) }), name .. ' 1-D')
    end)

    it(name .. ' gradients: added up at the running extremes (ties included), every floating dtype', function()
      for _, dt in ipairs(H.float_dtypes) do
        local vals = greater and { 1, 3, 3, 2, 4 } or { 4, 2, 2, 3, 1 }
        local x = torch.tensor(vals, { dtype = dt, requires_grad = true })
        local v, i = x[name](x, 1)
        assert.are.same({ 1, 2, 3, 3, 5 }, i:totable())
        v:backward(torch.tensor({ 1, 2, 4, 8, 16 }, { dtype = dt }))
        assert.are.equal(dt, x.grad.dtype)
        check_vals(x.grad, { 5 }, dt, { 1, 2, 12, 0, 16 }, 0, name .. ' grad ' .. tostring(dt))
      end
      -- along dim 2 of a matrix, through a transposed view, and for a 0-dim tensor
      local m = torch.tensor({ { 1, 5 }, { 2, 1 }, { 0, 0 } }, { dtype = torch.float64, requires_grad = true })
      local v = m:t()[name](m:t(), 2)
      v:backward(torch.tensor({ { 1, 2, 4 }, { 8, 16, 32 } }, { dtype = torch.float64 }))
      -- rows of m:t(): {1, 2, 0} and {5, 1, 0}
      local want = greater and { { 1, 8 + 16 + 32 }, { 2 + 4, 0 }, { 0, 0 } } or { { 1 + 2, 8 }, { 0, 16 }, { 4, 32 } }
      assert.are.same(want, m.grad:totable())
      local s = torch.tensor(3.0, { requires_grad = true })
      torch[name](s, 1):backward(torch.tensor(5.0))
      assert.are.equal(5, s.grad:item())
    end)
  end
end)

---------------------------------------------------------------------------------------------------
describe('logcumsumexp', function()
  -- general values, exact in every floating dtype
  local function lcse_values(n)
    local t = {}
    for k = 1, n do t[k] = ((k * 11) % 9) * 0.5 - 2 end
    return t
  end

  it('matches the reference along every dim on every floating dtype, contiguous or not', function()
    for _, dt in ipairs(H.float_dtypes) do
      for _, v in ipairs(variants(dt, lcse_values(numel(SHAPE)))) do
        local x = v[2]
        local vals = values(x)
        for _, d in ipairs(DIMS) do
          local want = ref_scan(SHAPE, vals, pos(d, 3), lcse_step)
          local msg = ('logcumsumexp %s %s dim=%d'):format(tostring(dt), v[1], d)
          check_vals(torch.logcumsumexp(x, d), SHAPE, dt, want, H.tol(dt) * 2, msg)
          check_vals(x:logcumsumexp(d), SHAPE, dt, want, H.tol(dt) * 2, msg .. ' method')
        end
      end
    end
  end)

  it('is stable for large and small magnitudes; -inf adds nothing, +inf and NaN propagate', function()
    local x = torch.tensor({ 1000, 1001, -1000, 1001 }, { dtype = torch.float64 })
    local want = ref_scan({ 4 }, values(x), 1, lcse_step)
    check_vals(x:logcumsumexp(1), { 4 }, torch.float64, want, 1e-14, 'large magnitudes')
    H.close(x:logcumsumexp(1):totable()[2], 1001 + math.log(1 + math.exp(-1)), 1e-15, 'log(e^1000 + e^1001)')
    local y = torch.tensor({ -1e4, -1e4 - 1 }, { dtype = torch.float32 })
    check_vals(y:logcumsumexp(1), { 2 }, torch.float32, { -1e4, -1e4 + math.log(1 + math.exp(-1)) }, 1e-7, 'very negative')
    local special = torch.tensor({ -INF, -INF, 1, INF, 2, -INF, NAN, 1 })
    check_vals(special:logcumsumexp(1), { 8 }, torch.float32, { -INF, -INF, 1, INF, INF, INF, NAN, NAN }, 0, 'inf and NaN')
    check_vals(torch.tensor({ INF, -INF }):logcumsumexp(1), { 2 }, torch.float32, { INF, INF }, 0, '+inf first')
    check_vals(torch.tensor({ -INF, 0 }):logcumsumexp(1), { 2 }, torch.float32, { -INF, 0 }, 0, '-inf first')
  end)

  it('of 0-dim and empty tensors', function()
    for _, d in ipairs { 1, -1 } do
      local r = torch.logcumsumexp(torch.tensor(2.5, { dtype = torch.float64 }), d)
      assert.are.same({}, r.shape)
      assert.are.equal(2.5, r:item())
    end
    local e = torch.logcumsumexp(torch.zeros(0, 3, { dtype = torch.float16 }), 1)
    assert.are.same({ 0, 3 }, e.shape)
    assert.are.equal(torch.float16, e.dtype)
  end)

  it('gradients: gradcheck in float64 along every dim, contiguous or not', function()
    torch.manual_seed(11)
    local function leaf(shape) return (torch.randn(shape, { dtype = torch.float64 }) * 2):requires_grad_() end
    for _, d in ipairs { 1, 2, 3, -1, -3 } do
      assert.is_true(gradcheck(function(a) return torch.logcumsumexp(a, d) end, { leaf({ 2, 3, 4 }) }), 'dim ' .. d)
    end
    assert.is_true(gradcheck(function(a) return a:t():logcumsumexp(1) end, { leaf({ 4, 3 }) }), 'transposed')
    assert.is_true(gradcheck(function(a) return a:logcumsumexp(1) * a end, { leaf({ 5 }) }), 'in a product')
    -- large magnitudes stay finite
    local big = torch.tensor({ 800, 802, 801 }, { dtype = torch.float64, requires_grad = true })
    assert.is_true(gradcheck(function(a) return a:logcumsumexp(1) end, { big }), 'large magnitudes')
  end)

  it('gradients: sum_{i >= j} g_i exp(x_j - y_i), written out; 0 at -inf inputs; every floating dtype', function()
    local xs = { -INF, 0.5, -1, 2, -INF, 1 }
    local gs = { 1, -2, 3, 0.5, 4, -1 }
    local ys = ref_scan({ 6 }, xs, 1, lcse_step)
    local want = {}
    for j = 1, 6 do
      local s = 0
      if xs[j] ~= -INF then
        for i = j, 6 do s = s + gs[i] * math.exp(xs[j] - ys[i]) end
      end
      want[j] = s
    end
    for _, dt in ipairs(H.float_dtypes) do
      local x = torch.tensor(xs, { dtype = dt, requires_grad = true })
      x:logcumsumexp(1):backward(torch.tensor(gs, { dtype = dt }))
      assert.are.equal(dt, x.grad.dtype)
      check_vals(x.grad, { 6 }, dt, want, H.tol(dt) * 4, 'logcumsumexp grad ' .. tostring(dt))
    end
    -- a 0-dim input passes the gradient through
    local s = torch.tensor(0.3, { dtype = torch.float64, requires_grad = true })
    s:logcumsumexp(1):backward(torch.tensor(2.0, { dtype = torch.float64 }))
    assert.are.equal(2, s.grad:item())
  end)
end)

---------------------------------------------------------------------------------------------------
describe('scans on large inputs (threaded, line and blocked kernel paths)', function()
  it('cummax, cummin and logcumsumexp of a 200 x 400 matrix along both dims, and of a long vector', function()
    local r, c = 200, 400
    local vals = {}
    for k = 1, r * c do vals[k] = ((k * 7919) % 1001) * 0.25 - 125 end -- many ties
    local x = torch.tensor(nest({ r, c }, vals), { dtype = torch.float64 })
    local xt = torch.tensor(nest({ c, r }, vals), { dtype = torch.float64 }):t() -- other values, transposed
    local tvals = values(xt)
    for _, case in ipairs { { 'contiguous', x, vals }, { 'transposed', xt, tvals } } do
      local t, tv = case[2], case[3]
      for _, d in ipairs { 1, 2 } do
        for _, op in ipairs { { 'cummax', true }, { 'cummin', false } } do
          local wv, wi = ref_scan({ r, c }, tv, d, extreme_step(op[2]))
          local v, i = t[op[1]](t, d)
          local msg = ('%s %s dim=%d'):format(op[1], case[1], d)
          check_vals(v, { r, c }, torch.float64, wv, 0, msg)
          check_vals(i, { r, c }, torch.int64, wi, 0, msg .. ' indices')
        end
      end
    end
    -- logcumsumexp against running sums of exp (moderate values: no rescaling needed)
    local small = x / 50
    local sv = values(small)
    for _, d in ipairs { 1, 2 } do
      local want = ref_scan({ r, c }, sv, d, function(st, v)
        st = (st or 0) + math.exp(v)
        return st, math.log(st), 0
      end)
      check_vals(small:logcumsumexp(d), { r, c }, torch.float64, want, 1e-12, 'logcumsumexp large dim ' .. d)
    end
    local n = 100000
    local long = torch.arange(0, n):remainder(977):float()
    local lv = values(long)
    local wv, wi = ref_scan({ n }, lv, 1, extreme_step(true))
    local v, i = long:cummax(1)
    check_vals(v, { n }, torch.float32, wv, 0, 'long cummax')
    check_vals(i, { n }, torch.int64, wi, 0, 'long cummax indices')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('scans on CPU devices', function()
  it('run on cpu:1 and keep the device', function()
    if torch.cpu.device_count() < 2 then pending('needs LUTORCH_CPU_DEVICES=2') return end
    local x = torch.tensor({ 1.0, 3, 2 }, { device = 'cpu:1', requires_grad = true })
    local v, i = x:cummax(1)
    assert.are.equal('cpu:1', tostring(v.device))
    assert.are.equal('cpu:1', tostring(i.device))
    assert.are.same({ 1, 2, 2 }, i:totable())
    local y = x:logcumsumexp(1)
    assert.are.equal('cpu:1', tostring(y.device))
    ;(v:sum() + y:sum()):backward()
    assert.are.equal('cpu:1', tostring(x.grad.device))
  end)
end)

---------------------------------------------------------------------------------------------------
describe('scan errors', function()
  it('name the op: dims out of range, missing dims, bad arguments', function()
    local x = torch.ones(2, 3)
    for _, name in ipairs { 'cummax', 'cummin', 'logcumsumexp' } do
      H.raises(function() return torch[name](x, 3) end, name)
      H.raises(function() return torch[name](x, -3) end, name)
      H.raises(function() return torch[name](x, 0) end)
      H.raises(function() return torch[name](x) end)
      H.raises(function() return torch[name](x, 1, 2) end, name)
      H.raises(function() return torch[name]('x', 1) end)
      H.raises(function() return torch[name](torch.tensor(1.0), 2) end, name)
    end
  end)

  it('logcumsumexp refuses integer and bool tensors, naming the dtype', function()
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool } do
      local dn = tostring(dt):gsub('^torch%.', '')
      H.raises(function() return torch.logcumsumexp(torch.ones(3, { dtype = dt }), 1) end, 'logcumsumexp', dn)
    end
  end)
end)
