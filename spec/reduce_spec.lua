-- Reductions and scans against plain-Lua references computed in float64 (or exact Lua integers)
-- over :totable() values: sum, mean, prod, logsumexp, amax, amin, any, all, var, std, norm,
-- max/min (overall, with a dim, elementwise), argmax/argmin, cumsum, cumprod. Every dtype each
-- accepts (with PyTorch's result dtypes), dims as nil / one number (positive or negative) / a table,
-- keepdim both ways, contiguous and non-contiguous (transposed, narrowed, expanded) inputs, NaN,
-- empty tensors, accumulation precision, and bad calls whose errors name the op.
local torch = require 'torch'
local H = require 'spec.helpers'

local NAN, INF = 0 / 0, math.huge
-- busted resolves globals through a chain of environments: keep the hot loops on locals
local ipairs, pairs, type, select, error, tostring, assert = ipairs, pairs, type, select, error, tostring, assert
local math, string, table = math, string, table

---------------------------------------------------------------------------------------------------
-- plain-Lua machinery
---------------------------------------------------------------------------------------------------
local FLOAT = { [torch.float32] = true, [torch.float64] = true, [torch.float16] = true, [torch.bfloat16] = true }
local function is_float(dt) return FLOAT[dt] == true end

-- row-major values of a nested table (or a scalar); booleans become 0 / 1 (integers)
local function flat(t)
  local out, n = {}, 0
  local function rec(u)
    if type(u[1]) == 'table' then
      for i = 1, #u do rec(u[i]) end
    elseif type(u[1]) == 'boolean' then
      for i = 1, #u do n = n + 1; out[n] = u[i] and 1 or 0 end
    else
      for i = 1, #u do n = n + 1; out[n] = u[i] end
    end
  end
  if type(t) == 'table' then rec(t)
  elseif type(t) == 'boolean' then out[1] = t and 1 or 0
  else out[1] = t end
  return out
end

-- nested table of `shape` filled from the flat array vals (row-major)
local function nest(shape, vals)
  local k = 0
  local function rec(d)
    if d > #shape then k = k + 1; return vals[k] end
    local t = {}
    for i = 1, shape[d] do t[i] = rec(d + 1) end
    return t
  end
  return rec(1)
end

local function numel(shape) local n = 1 for _, s in ipairs(shape) do n = n * s end return n end
local function shape_str(s) return '{' .. table.concat(s, ', ') .. '}' end
local function dims_str(d)
  if d == nil then return 'nil' end
  if type(d) == 'table' then return '{' .. table.concat(d, ',') .. '}' end
  return tostring(d)
end

local function check_shape(y, shape, msg)
  local ys = y.shape
  local ok = #ys == #shape
  for i = 1, #shape do ok = ok and ys[i] == shape[i] end
  if not ok then error(('%s: shape %s, expected %s'):format(msg, shape_str(ys), shape_str(shape)), 3) end
end

local function check_dtype(y, dtype, msg)
  if y.dtype ~= dtype then
    error(('%s: dtype %s, expected %s'):format(msg, tostring(y.dtype), tostring(dtype)), 3)
  end
end

-- compare y's values with the flat array want: exact for integers and booleans, else within tol
-- (relative and absolute, NaN equal to NaN, infinities equal)
local function check_values(y, want, tol, msg)
  local got = flat(y:totable())
  if #got ~= #want then error(('%s: %d values, expected %d'):format(msg, #got, #want), 3) end
  for i = 1, #want do
    local g, w = got[i], want[i]
    local ok
    if w ~= w then ok = g ~= g
    elseif g == w then ok = true
    else ok = tol > 0 and math.abs(g - w) <= tol * (1 + math.abs(w)) end
    if not ok then
      error(('%s: element %d is %.17g, expected %.17g (tolerance %g)'):format(msg, i, g, w, tol), 3)
    end
  end
end

local function check(y, shape, dtype, want, tol, msg)
  check_shape(y, shape, msg)
  check_dtype(y, dtype, msg)
  check_values(y, want, tol, msg)
end

-- normalise a 1-based (possibly negative) dim
local function wrap(d, n) return d < 0 and d + n + 1 or d end

-- row-major strides and all offsets over a list of dims
local function strides_of(shape)
  local st, s = {}, 1
  for d = #shape, 1, -1 do st[d] = s; s = s * shape[d] end
  return st
end
local function offsets(dims, shape, st)
  local res = { 0 }
  for _, d in ipairs(dims) do
    local nres = {}
    for _, o in ipairs(res) do
      for i = 0, shape[d] - 1 do nres[#nres + 1] = o + i * st[d] end
    end
    res = nres
  end
  return res
end

-- reference reduction of flat `vals` of `shape` over `dims` (nil: all; a number; a table of them,
-- where an empty table means all): fn(list) gives each output value (list in row-major order of the
-- reduced dims). Returns the output shape and the flat output values.
local function ref_reduce(shape, vals, dims, keepdim, fn)
  local n = #shape
  local rd = {}
  if dims == nil or (type(dims) == 'table' and #dims == 0) then
    for d = 1, n do rd[d] = true end
  elseif type(dims) == 'number' then
    rd[wrap(dims, n)] = true
  else
    for _, d in ipairs(dims) do rd[wrap(d, n)] = true end
  end
  local oshape, kept, red = {}, {}, {}
  for d = 1, n do
    if rd[d] then
      red[#red + 1] = d
      if keepdim then oshape[#oshape + 1] = 1 end
    else
      kept[#kept + 1] = d
      oshape[#oshape + 1] = shape[d]
    end
  end
  local st = strides_of(shape)
  local ro = offsets(red, shape, st)
  local out = {}
  for _, ko in ipairs(offsets(kept, shape, st)) do
    local list = {}
    for i, o in ipairs(ro) do list[i] = vals[ko + o + 1] end
    out[#out + 1] = fn(list)
  end
  return oshape, out
end

-- reference scan along dim: fn(acc, v) with acc starting at init
local function ref_scan(shape, vals, dim, init, fn)
  local n = #shape
  dim = wrap(dim, n)
  local st = strides_of(shape)
  local kept = {}
  for d = 1, n do if d ~= dim then kept[#kept + 1] = d end end
  local out = {}
  for _, ko in ipairs(offsets(kept, shape, st)) do
    local acc = init
    for i = 0, shape[dim] - 1 do
      local o = ko + i * st[dim]
      acc = fn(acc, vals[o + 1])
      out[o + 1] = acc
    end
  end
  return out
end

---------------------------------------------------------------------------------------------------
-- references over a list of numbers (float64, or Lua integers that wrap like int64)
---------------------------------------------------------------------------------------------------
local R = {}
function R.sum(l) local s = 0 for _, v in ipairs(l) do s = s + v end return s end
function R.fsum(l) local s = 0.0 for _, v in ipairs(l) do s = s + v end return s end
function R.prod(l) local s = 1 for _, v in ipairs(l) do s = s * v end return s end
function R.mean(l) return R.fsum(l) / #l end
function R.amax(l)
  local m = -INF
  for _, v in ipairs(l) do if v ~= v then return NAN end if v > m then m = v end end
  return m
end
function R.amin(l)
  local m = INF
  for _, v in ipairs(l) do if v ~= v then return NAN end if v < m then m = v end end
  return m
end
function R.any(l) for _, v in ipairs(l) do if v ~= 0 then return true end end return false end
function R.all(l) for _, v in ipairs(l) do if v == 0 then return false end end return true end
function R.logsumexp(l)
  local m = R.amax(l)
  if m ~= m then return NAN end
  if m == -INF or m == INF then return m end
  local s = 0.0
  for _, v in ipairs(l) do s = s + math.exp(v - m) end
  return m + math.log(s)
end
function R.var(l, correction)
  local mu = R.mean(l)
  local s = 0.0
  for _, v in ipairs(l) do s = s + (v - mu) * (v - mu) end
  local div = math.max(0, #l - correction)
  return s / div
end
function R.norm(l, p)
  if p == INF then
    local m = 0.0
    for _, v in ipairs(l) do if v ~= v then return NAN end m = math.max(m, math.abs(v)) end
    return m
  elseif p == -INF then
    local m = INF
    for _, v in ipairs(l) do if v ~= v then return NAN end m = math.min(m, math.abs(v)) end
    return m
  elseif p == 0 then
    local c = 0.0
    for _, v in ipairs(l) do if v ~= 0 then c = c + 1 end end
    return c
  end
  local s = 0.0
  for _, v in ipairs(l) do s = s + math.abs(v) ^ p end
  return s ^ (1 / p)
end
-- extreme value and its 1-based index (first occurrence; the first NaN wins)
function R.argext(l, is_max)
  local bi, bv = 1, l[1]
  if bv ~= bv then return bv, 1 end
  for i = 2, #l do
    local v = l[i]
    if v ~= v then return v, i end
    if (is_max and v > bv) or (not is_max and v < bv) then bi, bv = i, v end
  end
  return bv, bi
end

---------------------------------------------------------------------------------------------------
-- inputs: shape {2, 3, 4}, stored four ways, values exact in every dtype (int8 and bfloat16 too)
---------------------------------------------------------------------------------------------------
local SHAPE = { 2, 3, 4 }

-- 'general': small signed values with ties and zeros; 'prod': factors whose products stay small
local function value(dt, k, kind)
  if dt == torch.bool then return k % 3 ~= 0 end
  if kind == 'prod' then
    local i = (k * 5) % 8 + 1
    if is_float(dt) then return ({ 1.5, -1.0, 0.5, 2.0, -1.25, 0.75, 1.0, -0.5 })[i] end
    if dt == torch.uint8 then return ({ 1, 1, 2, 1, 2, 3, 1, 1 })[i] end
    return ({ 1, -1, 2, 1, -2, 3, 1, 1 })[i]
  end
  local v = (k * 7) % 11 -- 0..10, ties within every reduced group of size > 11 and many smaller ones
  if dt == torch.uint8 then return v end
  if is_float(dt) then return (v - 5) * 0.75 end
  return v - 5
end

local function make(dt, shape, kind, k0)
  local vals = {}
  for k = 1, numel(shape) do vals[k] = value(dt, k + (k0 or 0), kind) end
  return torch.tensor(nest(shape, vals), { dtype = dt })
end

-- name, tensor; every non-contiguous one is checked to be so
local function variants(dt, kind)
  local out = { { 'contiguous', make(dt, SHAPE, kind) } }
  out[#out + 1] = { 'transposed', make(dt, { 4, 3, 2 }, kind, 3):transpose(1, 3) }
  out[#out + 1] = { 'narrowed', make(dt, { 2, 3, 6 }, kind, 5):narrow(3, 2, 4) }
  out[#out + 1] = { 'expanded', make(dt, { 2, 1, 4 }, kind, 7):expand(2, 3, 4) }
  for i = 2, 4 do assert(not out[i][2]:is_contiguous(), out[i][1] .. ' should not be contiguous') end
  return out
end

-- full set of dim specs for the main dtypes, a smaller one for the rest
local DIMS_FULL = { 'none', 1, 2, 3, -1, -2, -3, { 1, 3 }, { -1, 2 }, { 3, 1 }, { 1, 2, 3 }, {} }
local DIMS_SHORT = { 'none', 2, -1, { 1, -1 } }
local MAIN = { [torch.float32] = true, [torch.int64] = true }

local function tol_of(dt)
  if is_float(dt) then return H.tol(dt) end
  return 0
end

-- run fn(x, vals, dt, dims, keepdim, label) for every dtype in dtypes x every variant x dims spec
-- x keepdim; dims is nil for 'none'
local function each_case(dtypes, kind, fn)
  for _, dt in ipairs(dtypes) do
    for _, v in ipairs(variants(dt, kind)) do
      local x = v[2]
      local vals = flat(x:totable())
      for _, d in ipairs(MAIN[dt] and DIMS_FULL or DIMS_SHORT) do
        if d == 'none' then d = nil end
        for _, keepdim in ipairs { false, true } do
          fn(x, vals, dt, d, keepdim, ('%s %s dims=%s keepdim=%s'):format(tostring(dt), v[1], dims_str(d), tostring(keepdim)))
        end
      end
    end
  end
end

local FLOATS = H.float_dtypes
local ALL = H.all_dtypes
local NOBOOL = { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
  torch.int16, torch.int8, torch.uint8 }

local function int_result(dt) return is_float(dt) and dt or torch.int64 end

---------------------------------------------------------------------------------------------------
describe('sum, mean, prod', function()
  it('sum matches the reference on every dtype (ints and bools give int64), dims and layout', function()
    each_case(ALL, 'general', function(x, vals, dt, d, keepdim, label)
      local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, is_float(dt) and R.fsum or R.sum)
      local y = d == nil and (keepdim and x:sum(nil, true) or x:sum()) or x:sum(d, keepdim)
      check(y, oshape, int_result(dt), want, tol_of(dt), 'sum ' .. label)
    end)
  end)

  it('torch.sum is the same function, and keepdim without dims keeps every dim as 1', function()
    local x = H.grid(2, 3)
    local y = torch.sum(x, 2, true)
    check(y, { 2, 1 }, torch.float32, { 11 + 12 + 13, 21 + 22 + 23 }, 0, 'torch.sum')
    check(x:sum(nil, true), { 1, 1 }, torch.float32, { 102 }, 0, 'sum(nil, true)')
    check(torch.sum(x), {}, torch.float32, { 102 }, 0, 'torch.sum(x)')
  end)

  it('mean matches the reference on floating dtypes', function()
    each_case(FLOATS, 'general', function(x, vals, dt, d, keepdim, label)
      local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, R.mean)
      local y = d == nil and (keepdim and x:mean(nil, true) or x:mean()) or x:mean(d, keepdim)
      check(y, oshape, dt, want, tol_of(dt), 'mean ' .. label)
    end)
  end)

  it('mean of an integer or bool tensor is an error naming mean; a floating dtype option makes it work', function()
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool } do
      local x = make(dt, SHAPE)
      H.raises(function() return x:mean() end, 'mean')
      H.raises(function() return x:mean(1) end, 'mean')
      local vals = flat(x:totable())
      local oshape, want = ref_reduce(SHAPE, vals, 2, false, R.mean)
      check(x:mean(2, { dtype = torch.float64 }), oshape, torch.float64, want, 1e-12, 'mean dtype ' .. tostring(dt))
      oshape, want = ref_reduce(SHAPE, vals, nil, false, R.mean)
      check(x:mean({ dtype = torch.float32 }), oshape, torch.float32, want, 1e-6, 'mean all dtype ' .. tostring(dt))
    end
    H.raises(function() return torch.tensor({ 1, 2 }):mean({ dtype = torch.int64 }) end, 'mean')
  end)

  it('prod matches the reference on every dtype (ints and bools give int64), dims and layout', function()
    each_case(ALL, 'prod', function(x, vals, dt, d, keepdim, label)
      local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, R.prod)
      local y = d == nil and (keepdim and x:prod(nil, true) or x:prod()) or x:prod(d, keepdim)
      check(y, oshape, int_result(dt), want, tol_of(dt), 'prod ' .. label)
    end)
  end)

  it('integer sums and products accumulate in int64, wrapping as int64 does', function()
    check(torch.tensor({ 100, 100, 100 }, { dtype = torch.int8 }):sum(), {}, torch.int64, { 300 }, 0, 'int8 sum')
    check(torch.tensor({ 200, 100 }, { dtype = torch.uint8 }):sum(), {}, torch.int64, { 300 }, 0, 'uint8 sum')
    check(torch.tensor({ -200, 100 }, { dtype = torch.int16 }):prod(), {}, torch.int64, { -20000 }, 0, 'int16 prod')
    check(torch.tensor({ math.maxinteger, 1 }):sum(), {}, torch.int64, { math.mininteger }, 0, 'int64 wraps')
    local big = 1 << 40
    check(torch.tensor({ big, big }):prod(), {}, torch.int64, { big * big }, 0, 'int64 prod wraps')
  end)

  it('the {dtype = ...} option converts the input first and sets the result dtype', function()
    local x = make(torch.int32, SHAPE)
    local vals = flat(x:totable())
    local oshape, want = ref_reduce(SHAPE, vals, 1, false, R.sum)
    check(x:sum(1, { dtype = torch.float64 }), oshape, torch.float64, want, 0, 'sum(1, {dtype})')
    oshape, want = ref_reduce(SHAPE, vals, -1, true, R.sum)
    check(x:sum(-1, true, { dtype = torch.float32 }), oshape, torch.float32, want, 0, 'sum(-1, true, {dtype})')
    oshape, want = ref_reduce(SHAPE, vals, nil, false, R.sum)
    check(x:sum({ dtype = torch.int16 }), oshape, torch.int16, want, 0, 'sum({dtype})')
    check(torch.sum(x, { 1, 3 }, false, { dtype = torch.float64 }), { 3 }, torch.float64,
      select(2, ref_reduce(SHAPE, vals, { 1, 3 }, false, R.sum)), 0, 'torch.sum(x, dims, false, {dtype})')
    -- float input summed as float64 (exact values, so the sum is exact)
    local xf = make(torch.float16, SHAPE):transpose(1, 2)
    local fv = flat(xf:totable())
    oshape, want = ref_reduce({ 3, 2, 4 }, fv, 2, false, R.fsum)
    check(xf:sum(2, { dtype = torch.float64 }), oshape, torch.float64, want, 0, 'float16 sum as float64')
    -- the dtype given applies before summing: int8 sums wrap in int8
    check(torch.tensor({ 100, 100 }, { dtype = torch.int8 }):sum({ dtype = torch.int8 }), {}, torch.int8, { -56 }, 0,
      'int8 sum as int8')
    -- floats converted to an integer dtype are truncated first
    check(torch.tensor({ 1.5, 2.5 }):sum({ dtype = torch.int64 }), {}, torch.int64, { 3 }, 0, 'float sum as int64')
    check(torch.tensor({ 1.5, 2.5 }):prod({ dtype = torch.int32 }), {}, torch.int32, { 2 }, 0, 'float prod as int32')
    check(torch.tensor({ true, false, true }):sum({ dtype = torch.float32 }), {}, torch.float32, { 2 }, 0, 'bool sum as float32')
    check(make(torch.int8, SHAPE, 'prod'):prod(3, { dtype = torch.float64 }), { 2, 3 }, torch.float64,
      select(2, ref_reduce(SHAPE, flat(make(torch.int8, SHAPE, 'prod'):totable()), 3, false, R.prod)), 0, 'prod as float64')
    check(torch.tensor({ 1.0, 2.0, 3.0 }):mean({ dtype = torch.float64 }), {}, torch.float64, { 2 }, 0, 'mean as float64')
  end)

  it('float16 and bfloat16 accumulate wider: partial results beyond the dtype range do not overflow', function()
    for _, dt in ipairs { torch.float16, torch.bfloat16 } do
      local tol = H.tol(dt)
      local big = torch.full({ 100 }, 1000.0, { dtype = dt })
      check(big:mean(), {}, dt, { 1000 }, tol, 'mean of 100 x 1000 ' .. tostring(dt))
      check(big:var(), {}, dt, { 0 }, 0, 'var of 100 x 1000 ' .. tostring(dt))
      check(big:view(10, 10):mean(1), { 10 }, dt, { 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000 }, tol,
        'mean(1) of 10x10 x 1000 ' .. tostring(dt))
      local p = torch.tensor({ 256.0, 256.0, 1 / 256 }, { dtype = dt })
      check(p:prod(), {}, dt, { 256 }, tol, 'prod through 65536 ' .. tostring(dt))
      local n = torch.tensor({ 300.0, 400.0 }, { dtype = dt })
      check(n:norm(), {}, dt, { 500 }, tol, 'norm with squares past 65504 ' .. tostring(dt))
      local v = torch.tensor({ 60000.0, 60000.0, -60000.0 }, { dtype = dt })
      local fv = flat(v:totable())
      check(v:sum(), {}, dt, { fv[1] + fv[2] + fv[3] }, tol, 'sum through 120000 ' .. tostring(dt))
      check(v:logsumexp(), {}, dt, { R.logsumexp(fv) }, tol, 'logsumexp ' .. tostring(dt))
    end
  end)

  it('a long float32 sum accumulates in double (1e6 x 0.1 to 1e-6 relative)', function()
    local n = 1000000
    local x = torch.full({ n }, 0.1)
    assert.are.equal(torch.float32, x.dtype)
    local v = x[1] -- 0.1 as stored in float32
    local want = 0.0
    for _ = 1, n do want = want + v end
    local s = x:sum():item()
    H.close(s, want, 1e-6, 'float32 sum of 1e6 x 0.1')
    H.close(x:mean():item(), want / n, 1e-6, 'float32 mean of 1e6 x 0.1')
    -- a 2-D layout reduced over both dims, and a non-contiguous view of it
    local m = x:view(1000, 1000)
    H.close(m:sum({ 1, 2 }):item(), want, 1e-6, 'float32 sum over {1, 2}')
    H.close(m:t():sum():item(), want, 1e-6, 'float32 sum of a transposed view')
    -- float16 / bfloat16 accumulate in double too: 4096 ones stay exact (half accumulation stalls at 2048)
    check(torch.ones(4096, { dtype = torch.float16 }):sum(), {}, torch.float16, { 4096 }, 0, 'float16 sum of 4096 ones')
    check(torch.ones(1000, { dtype = torch.bfloat16 }):sum(), {}, torch.bfloat16, { 1000 }, 0, 'bfloat16 sum of 1000 ones')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('logsumexp, amax, amin, any, all', function()
  it('logsumexp matches the reference (integers and bools give float32)', function()
    each_case(ALL, 'general', function(x, vals, dt, d, keepdim, label)
      local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, R.logsumexp)
      local y = d == nil and (keepdim and x:logsumexp(nil, true) or x:logsumexp()) or x:logsumexp(d, keepdim)
      check(y, oshape, is_float(dt) and dt or torch.float32, want, is_float(dt) and H.tol(dt) or 1e-6, 'logsumexp ' .. label)
    end)
  end)

  it('logsumexp is stable for large values and handles infinities', function()
    check(torch.tensor({ 1000.0, 1000.0 }):logsumexp(), {}, torch.float32, { 1000 + math.log(2) }, 1e-6, 'large')
    check(torch.tensor({ -INF, -INF }):logsumexp(), {}, torch.float32, { -INF }, 0, 'all -inf')
    check(torch.tensor({ INF, 1.0 }):logsumexp(), {}, torch.float32, { INF }, 0, '+inf')
    check(torch.tensor({ NAN, 1.0 }):logsumexp(), {}, torch.float32, { NAN }, 0, 'nan')
    local m = torch.tensor({ { -INF, -INF }, { 0.0, -INF }, { INF, -INF } })
    check(m:logsumexp(2), { 3 }, torch.float32, { -INF, 0, INF }, 0, 'rows with infinities')
    check(m:logsumexp(-1, true), { 3, 1 }, torch.float32, { -INF, 0, INF }, 0, 'rows with infinities, keepdim')
  end)

  it('logsumexp of short last-dim rows (a classifier\'s logits) matches the reference, 16 rows at a time', function()
    torch.manual_seed(21)
    for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16, torch.float64 } do
      for _, n in ipairs { 1, 2, 10, 16, 31, 32 } do
        for _, rows in ipairs { 16, 17, 40 } do
          local x = (torch.randn(rows, n) * 4):to(dt)
          -- rows with the special values in a lane of each group: all -inf, a +inf, a NaN, a NaN first
          x[2]:fill_(-INF)
          x[3][n] = INF
          x[rows][1] = NAN
          if n > 1 then x[17 <= rows and 17 or 4][n] = NAN end
          local vals = x:totable()
          local want = {}
          for r = 1, rows do want[r] = R.logsumexp(vals[r]) end
          local label = ('%s %d rows of %d'):format(tostring(dt), rows, n)
          check(x:logsumexp(2), { rows }, dt, want, H.tol(dt), label)
          check(x:logsumexp(-1, true), { rows, 1 }, dt, want, H.tol(dt), label .. ' keepdim')
          check(x:view(1, rows, n):logsumexp(3), { 1, rows }, dt, want, H.tol(dt), label .. ' 3-D')
        end
      end
    end
  end)

  for _, name in ipairs { 'amax', 'amin' } do
    it(name .. ' matches the reference on every dtype and keeps the dtype', function()
      each_case(ALL, 'general', function(x, vals, dt, d, keepdim, label)
        local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, R[name])
        local y = d == nil and (keepdim and x[name](x, nil, true) or x[name](x)) or x[name](x, d, keepdim)
        if dt == torch.bool then for i, w in ipairs(want) do want[i] = math.tointeger(w) end end
        check(y, oshape, dt, want, 0, name .. ' ' .. label)
      end)
    end)
  end

  for _, name in ipairs { 'any', 'all' } do
    it(name .. ' matches the reference on every dtype and gives bool', function()
      each_case(ALL, 'general', function(x, vals, dt, d, keepdim, label)
        local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, R[name])
        for i, w in ipairs(want) do want[i] = w and 1 or 0 end
        local y = d == nil and (keepdim and x[name](x, nil, true) or x[name](x)) or x[name](x, d, keepdim)
        check(y, oshape, torch.bool, want, 0, name .. ' ' .. label)
      end)
      -- a NaN is non-zero
      local nn = torch.tensor({ NAN, NAN })
      check(nn[name](nn), {}, torch.bool, { 1 }, 0, name .. ' of NaN')
    end)
  end
end)

---------------------------------------------------------------------------------------------------
describe('var and std', function()
  local modes = {
    { 'default (unbiased)', function(f, x, d, k) if d == nil and not k then return f(x) end return f(x, d, k) end, 1 },
    { 'unbiased = true', function(f, x, d, k) return f(x, d, k, { unbiased = true }) end, 1 },
    { 'unbiased = false', function(f, x, d, k) return f(x, d, k, { unbiased = false }) end, 0 },
    { 'correction = 0', function(f, x, d, k) return f(x, d, k, { correction = 0 }) end, 0 },
    { 'correction = 2', function(f, x, d, k) return f(x, d, k, { correction = 2 }) end, 2 },
    { 'positional unbiased = false', function(f, x, d, k) return f(x, d, k, false) end, 0 },
  }
  for _, name in ipairs { 'var', 'std' } do
    it(name .. ' matches the reference for every correction on floating dtypes', function()
      for _, m in ipairs(modes) do
        local corr = m[3]
        each_case(FLOATS, 'general', function(x, vals, dt, d, keepdim, label)
          local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, function(l)
            local v = R.var(l, corr)
            return name == 'std' and math.sqrt(v) or v
          end)
          local y = m[2](x[name], x, d, keepdim)
          check(y, oshape, dt, want, H.tol(dt) * 2, ('%s %s %s'):format(name, m[1], label))
        end)
      end
    end)

    it(name .. ' takes the options table without dims, and torch.' .. name .. ' is the same', function()
      local x = make(torch.float64, SHAPE)
      local vals = flat(x:totable())
      local v0 = R.var(vals, 0)
      local want = name == 'std' and math.sqrt(v0) or v0
      check(x[name](x, { unbiased = false }), {}, torch.float64, { want }, 1e-12, name .. '({unbiased = false})')
      check(torch[name](x, { correction = 0 }), {}, torch.float64, { want }, 1e-12, 'torch.' .. name)
      local v1 = R.var(vals, 1)
      check(x[name](x, nil, true), { 1, 1, 1 }, torch.float64, { name == 'std' and math.sqrt(v1) or v1 }, 1e-12,
        name .. '(nil, true)')
      -- one element, unbiased: NaN (0 / 0); a correction larger than N: divisor 0
      check(torch.tensor({ 1.5 })[name](torch.tensor({ 1.5 })), {}, torch.float32, { NAN }, 0, name .. ' of one element')
      check(torch.tensor({ 1.0, 2.0 })[name](torch.tensor({ 1.0, 2.0 }), { correction = 3 }), {}, torch.float32, { INF }, 0,
        name .. ' correction > N')
    end)

    it(name .. ' of an integer or bool tensor is an error naming ' .. name, function()
      for _, dt in ipairs { torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool } do
        local x = make(dt, SHAPE)
        H.raises(function() return x[name](x) end, name)
        H.raises(function() return x[name](x, 1) end, name)
      end
    end)
  end
end)

---------------------------------------------------------------------------------------------------
describe('norm', function()
  local ps = { 1, 2, 3, INF, -INF, 0, 'fro', 'inf', '-inf', 0.5 }
  local function pval(p)
    if p == 'fro' then return 2 elseif p == 'inf' then return INF elseif p == '-inf' then return -INF end
    return p
  end
  it('matches the reference for every p on floating dtypes', function()
    for _, p in ipairs(ps) do
      local pv = pval(p)
      each_case(FLOATS, 'general', function(x, vals, dt, d, keepdim, label)
        local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, function(l) return R.norm(l, pv) end)
        local y = x:norm(p, d, keepdim)
        check(y, oshape, dt, want, H.tol(dt) * 2, ('norm p=%s %s'):format(tostring(p), label))
      end)
    end
  end)

  it('defaults to p = 2 over every element, and torch.norm is the same', function()
    local x = make(torch.float64, SHAPE):transpose(2, 3)
    local vals = flat(x:totable())
    check(x:norm(), {}, torch.float64, { R.norm(vals, 2) }, 1e-12, 'norm()')
    check(torch.norm(x, 1), {}, torch.float64, { R.norm(vals, 1) }, 1e-12, 'torch.norm(x, 1)')
    check(x:norm(nil, -1), { 2, 4 }, torch.float64, select(2, ref_reduce({ 2, 4, 3 }, vals, -1, false, function(l)
      return R.norm(l, 2)
    end)), 1e-12, 'norm(nil, -1)')
    -- a negative finite p: (sum |x|^p)^(1/p), 0 when an element is 0
    check(torch.tensor({ 1.0, -3.0 }):norm(-1), {}, torch.float32, { 0.75 }, 1e-6, 'norm(-1)')
    check(torch.tensor({ 0.0, -3.0 }):norm(-1), {}, torch.float32, { 0 }, 0, 'norm(-1) with a zero')
  end)

  it('of an integer tensor is an error naming norm, and an unknown p string too', function()
    H.raises(function() return torch.tensor({ 1, 2 }):norm() end, 'norm')
    H.raises(function() return torch.tensor({ 1, 2 }, { dtype = torch.int32 }):norm(1, 1) end, 'norm')
    H.raises(function() return torch.tensor({ true }):norm() end, 'norm')
    H.raises(function() return torch.tensor({ 1.0, 2.0 }):norm('nuc') end, 'norm', 'nuc')
    H.raises(function() return torch.tensor({ 1.0, 2.0 }):norm({}) end, 'norm')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('max and min', function()
  for _, name in ipairs { 'max', 'min' } do
    local is_max = name == 'max'
    it(name .. '(dim, keepdim) gives the values and 1-based indices of the first extreme', function()
      for _, dt in ipairs(ALL) do
        for _, v in ipairs(variants(dt, 'general')) do
          local x = v[2]
          local vals = flat(x:totable())
          for _, d in ipairs { 1, 2, 3, -1, -2, -3 } do
            for _, keepdim in ipairs { false, true } do
              local label = ('%s %s %s dim=%d keepdim=%s'):format(name, tostring(dt), v[1], d, tostring(keepdim))
              local oshape, wv = ref_reduce(SHAPE, vals, d, keepdim, function(l) return (R.argext(l, is_max)) end)
              local _, wi = ref_reduce(SHAPE, vals, d, keepdim, function(l) return select(2, R.argext(l, is_max)) end)
              local values, indices
              if keepdim then values, indices = x[name](x, d, true) else values, indices = x[name](x, d) end
              check(values, oshape, dt, wv, 0, label .. ' values')
              check(indices, oshape, torch.int64, wi, 0, label .. ' indices')
            end
          end
        end
      end
    end)

    it(name .. '() gives the overall extreme as a 0-dim tensor of the same dtype', function()
      for _, dt in ipairs(ALL) do
        for _, v in ipairs(variants(dt, 'general')) do
          local x = v[2]
          local want = (R.argext(flat(x:totable()), is_max))
          check(x[name](x), {}, dt, { want }, 0, ('%s() %s %s'):format(name, tostring(dt), v[1]))
          check(torch[name](x), {}, dt, { want }, 0, ('torch.%s %s %s'):format(name, tostring(dt), v[1]))
        end
      end
    end)

    it(name .. '(a, b) is the elementwise ' .. (is_max and 'maximum' or 'minimum') .. ', broadcasting, NaN propagating', function()
      for _, dt in ipairs(ALL) do
        local va, vb = variants(dt, 'general'), variants(dt, 'prod')
        for i = 1, #va do
          local a, b = va[i][2], vb[#vb + 1 - i][2]
          local fa, fb = flat(a:totable()), flat(b:totable())
          local want = {}
          for k = 1, #fa do
            local p, q = fa[k], fb[k]
            want[k] = is_max and math.max(p, q) or math.min(p, q)
          end
          check(a[name](a, b), SHAPE, dt, want, 0, ('%s(a, b) %s %s'):format(name, tostring(dt), va[i][1]))
        end
      end
      -- broadcasting a row against a column
      local r = torch.tensor({ 1.0, 5.0, 3.0 })
      local c = torch.tensor({ { 2.0 }, { 4.0 } })
      local want = {}
      for i, cv in ipairs { 2.0, 4.0 } do
        for j, rv in ipairs { 1.0, 5.0, 3.0 } do
          want[(i - 1) * 3 + j] = is_max and math.max(cv, rv) or math.min(cv, rv)
        end
      end
      check(r[name](r, c), { 2, 3 }, torch.float32, want, 0, name .. ' broadcast')
      -- promotion: int32 with float32 gives float32
      local ia, fb = torch.tensor({ 1, 2 }, { dtype = torch.int32 }), torch.tensor({ 1.5, 0.5 })
      check(ia[name](ia, fb), { 2 }, torch.float32, is_max and { 1.5, 2 } or { 1, 0.5 }, 0, name .. ' promotion')
      -- NaN in either operand gives NaN
      local na, nb = torch.tensor({ 1.0, NAN, 3.0 }), torch.tensor({ NAN, 2.0, 1.0 })
      check(na[name](na, nb), { 3 }, torch.float32, { NAN, NAN, is_max and 3 or 1 }, 0, name .. '(a, b) NaN')
    end)
  end

  it('NaN propagates through max/min/amax/amin/sum, and the index is that of the first NaN', function()
    local y = torch.tensor({ { 1.0, NAN, 3.0, NAN }, { 5.0, 2.0, 7.0, 1.0 } })
    local v, i = y:max(2)
    check(v, { 2 }, torch.float32, { NAN, 7 }, 0, 'max values')
    check(i, { 2 }, torch.int64, { 2, 3 }, 0, 'max indices')
    v, i = y:min(2)
    check(v, { 2 }, torch.float32, { NAN, 1 }, 0, 'min values')
    check(i, { 2 }, torch.int64, { 2, 4 }, 0, 'min indices')
    v, i = y:max(1)
    check(v, { 4 }, torch.float32, { 5, NAN, 7, NAN }, 0, 'max(1) values')
    check(i, { 4 }, torch.int64, { 2, 1, 2, 1 }, 0, 'max(1) indices')
    check(y:max(), {}, torch.float32, { NAN }, 0, 'max()')
    check(y:min(), {}, torch.float32, { NAN }, 0, 'min()')
    check(y:amax(2), { 2 }, torch.float32, { NAN, 7 }, 0, 'amax')
    check(y:amin(), {}, torch.float32, { NAN }, 0, 'amin()')
    check(y:sum(2), { 2 }, torch.float32, { NAN, 15 }, 0, 'sum')
    check(y:mean(1), { 4 }, torch.float32, { 3, NAN, 5, NAN }, 0, 'mean')
    check(y:argmax(), {}, torch.int64, { 2 }, 0, 'argmax()')
    check(y:argmin(2), { 2 }, torch.int64, { 2, 4 }, 0, 'argmin(2)')
    check(y:argmax(1, true), { 1, 4 }, torch.int64, { 2, 1, 2, 1 }, 0, 'argmax(1, true)')
    -- first NaN in logical order, not in memory order: base row-major {1,2,nan | nan,4,5}, viewed transposed
    local t = torch.tensor({ { 1.0, 2.0, NAN }, { NAN, 4.0, 5.0 } }):t() -- {{1, nan}, {2, 4}, {nan, 5}}
    check(t:argmax(), {}, torch.int64, { 2 }, 0, 'argmax of transposed view with NaN')
    check(t:argmin(), {}, torch.int64, { 2 }, 0, 'argmin of transposed view with NaN')
    v, i = t:max(1)
    check(i, { 2 }, torch.int64, { 3, 1 }, 0, 'max(1) of transposed view with NaN')
    -- the other reductions of a NaN
    local z = torch.tensor({ NAN, 1.0, 0.0 })
    check(z:prod(), {}, torch.float32, { NAN }, 0, 'prod NaN')
    check(z:var(), {}, torch.float32, { NAN }, 0, 'var NaN')
    check(z:std(), {}, torch.float32, { NAN }, 0, 'std NaN')
    check(z:norm(), {}, torch.float32, { NAN }, 0, 'norm 2 NaN')
    check(z:norm(INF), {}, torch.float32, { NAN }, 0, 'norm inf NaN')
    check(z:norm(-INF), {}, torch.float32, { NAN }, 0, 'norm -inf NaN')
    check(z:norm(0), {}, torch.float32, { 2 }, 0, 'norm 0 counts a NaN as non-zero')
    check(z:logsumexp(), {}, torch.float32, { NAN }, 0, 'logsumexp NaN')
    -- float16 and bfloat16 too
    for _, dt in ipairs { torch.float16, torch.bfloat16, torch.float64 } do
      local z = torch.tensor({ 1.0, 9.0, NAN, 9.0, NAN }, { dtype = dt })
      v, i = z:max(1)
      check(v, {}, dt, { NAN }, 0, 'max NaN ' .. tostring(dt))
      check(i, {}, torch.int64, { 3 }, 0, 'max NaN index ' .. tostring(dt))
      check(z:argmin(), {}, torch.int64, { 3 }, 0, 'argmin NaN ' .. tostring(dt))
      check(z:amin(), {}, dt, { NAN }, 0, 'amin NaN ' .. tostring(dt))
    end
  end)

  it('ties resolve to the first occurrence, contiguous or not', function()
    local v, i = torch.tensor({ 1, 3, 3, 1 }):max(1)
    check(v, {}, torch.int64, { 3 }, 0, 'max tie value')
    check(i, {}, torch.int64, { 2 }, 0, 'max tie index')
    v, i = torch.tensor({ 1.0, 0.0, 0.0, 3.0 }):min(1)
    check(i, {}, torch.int64, { 2 }, 0, 'min tie index')
    -- base {1,2,9 | 9,4,5}, transposed: {{1, 9}, {2, 4}, {9, 5}}; the first 9 in memory is logically 5th
    local t = torch.tensor({ { 1, 2, 9 }, { 9, 4, 5 } }):t()
    check(t:argmax(), {}, torch.int64, { 2 }, 0, 'argmax tie, transposed')
    v, i = t:max(1)
    check(i, { 2 }, torch.int64, { 3, 1 }, 0, 'max(1) tie, transposed')
    -- expanded: every element of a column the same
    local e = torch.tensor({ { 4.0, 7.0, 7.0 } }):expand(3, 3)
    v, i = e:max(1)
    check(i, { 3 }, torch.int64, { 1, 1, 1 }, 0, 'max(1) expanded')
    v, i = e:max(2)
    check(i, { 3 }, torch.int64, { 2, 2, 2 }, 0, 'max(2) expanded')
    check(e:argmin(), {}, torch.int64, { 1 }, 0, 'argmin expanded')
  end)

  it('0-dim tensors: dim 1 and -1 are the only dim, index 1', function()
    local s = torch.tensor(3.5)
    local v, i = s:max(1)
    check(v, {}, torch.float32, { 3.5 }, 0, 'max(1) of a scalar')
    check(i, {}, torch.int64, { 1 }, 0, 'max(1) index of a scalar')
    v, i = s:min(-1)
    check(i, {}, torch.int64, { 1 }, 0, 'min(-1) index of a scalar')
    check(s:argmax(), {}, torch.int64, { 1 }, 0, 'argmax of a scalar')
    check(s:sum(1), {}, torch.float32, { 3.5 }, 0, 'sum(1) of a scalar')
    check(s:cumsum(-1), {}, torch.float32, { 3.5 }, 0, 'cumsum(-1) of a scalar')
    H.raises(function() return s:sum(2) end, 'sum')
    -- keepdim on a 0-dim tensor keeps it 0-dim
    check(s:sum(1, true), {}, torch.float32, { 3.5 }, 0, 'sum(1, true) of a scalar')
    v, i = s:max(-1, true)
    check(i, {}, torch.int64, { 1 }, 0, 'max(-1, true) index of a scalar')
  end)

  it('integer extremes are exact: uint8 above 127, int8 -128, int64 beyond 2^53', function()
    local u = torch.tensor({ 200, 2, 255, 128 }, { dtype = torch.uint8 })
    local v, i = u:max(1)
    check(v, {}, torch.uint8, { 255 }, 0, 'uint8 max')
    check(i, {}, torch.int64, { 3 }, 0, 'uint8 max index')
    v, i = u:min(1)
    check(i, {}, torch.int64, { 2 }, 0, 'uint8 min index')
    check(u:amax(), {}, torch.uint8, { 255 }, 0, 'uint8 amax')
    check(u:argmin(), {}, torch.int64, { 2 }, 0, 'uint8 argmin')
    check(u:sum(), {}, torch.int64, { 585 }, 0, 'uint8 sum')
    local s8 = torch.tensor({ 5, -128, 127, -128 }, { dtype = torch.int8 })
    v, i = s8:min(1)
    check(v, {}, torch.int8, { -128 }, 0, 'int8 min')
    check(i, {}, torch.int64, { 2 }, 0, 'int8 min index')
    check(s8:argmax(), {}, torch.int64, { 3 }, 0, 'int8 argmax')
    -- 2^53 + 1 is not a double: these must be computed in int64
    local b = 1 << 53
    local l = torch.tensor({ b, b + 1, b - 1, b + 1 })
    v, i = l:max(1)
    check(v, {}, torch.int64, { b + 1 }, 0, 'int64 max beyond 2^53')
    check(i, {}, torch.int64, { 2 }, 0, 'int64 max index beyond 2^53')
    check(l:amin(), {}, torch.int64, { b - 1 }, 0, 'int64 amin beyond 2^53')
    check(l:argmin(), {}, torch.int64, { 3 }, 0, 'int64 argmin beyond 2^53')
    check(l:max(), {}, torch.int64, { b + 1 }, 0, 'int64 max() beyond 2^53')
    check(l:sum(), {}, torch.int64, { 4 * b + 1 }, 0, 'int64 sum beyond 2^53')
    check(l:cumsum(1), { 4 }, torch.int64, { b, 2 * b + 1, 3 * b, 4 * b + 1 }, 0, 'int64 cumsum beyond 2^53')
    check(torch.tensor({ b + 1, 3 }):prod(), {}, torch.int64, { 3 * b + 3 }, 0, 'int64 prod beyond 2^53')
    check(torch.tensor({ b + 1, 3 }):cumprod(1), { 2 }, torch.int64, { b + 1, 3 * b + 3 }, 0, 'int64 cumprod beyond 2^53')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('argmax and argmin', function()
  for _, name in ipairs { 'argmax', 'argmin' } do
    local is_max = name == 'argmax'
    it(name .. ' with a dim (1-based) and flattened (1-based), keepdim both ways', function()
      for _, dt in ipairs(NOBOOL) do
        for _, v in ipairs(variants(dt, 'general')) do
          local x = v[2]
          local vals = flat(x:totable())
          local label = ('%s %s %s'):format(name, tostring(dt), v[1])
          -- flattened
          local _, wi = R.argext(vals, is_max)
          check(x[name](x), {}, torch.int64, { wi }, 0, label .. ' flattened')
          check(torch[name](x), {}, torch.int64, { wi }, 0, label .. ' torch.' .. name)
          check(x[name](x, nil, true), { 1, 1, 1 }, torch.int64, { wi }, 0, label .. ' flattened keepdim')
          for _, d in ipairs { 1, 2, 3, -1, -2, -3 } do
            for _, keepdim in ipairs { false, true } do
              local oshape, want = ref_reduce(SHAPE, vals, d, keepdim, function(l) return select(2, R.argext(l, is_max)) end)
              check(x[name](x, d, keepdim), oshape, torch.int64, want, 0,
                ('%s dim=%d keepdim=%s'):format(label, d, tostring(keepdim)))
            end
          end
        end
      end
    end)
  end
end)

---------------------------------------------------------------------------------------------------
describe('cumsum and cumprod', function()
  local ops = {
    { 'cumsum', 'general', 0, function(a, v) return a + v end },
    { 'cumprod', 'prod', 1, function(a, v) return a * v end },
  }
  for _, op in ipairs(ops) do
    local name, kind, init, fn = op[1], op[2], op[3], op[4]
    it(name .. ' matches the reference along every dim on every dtype (ints and bools give int64)', function()
      for _, dt in ipairs(ALL) do
        for _, v in ipairs(variants(dt, kind)) do
          local x = v[2]
          local vals = flat(x:totable())
          for _, d in ipairs { 1, 2, 3, -1, -2, -3 } do
            local want = ref_scan(SHAPE, vals, d, is_float(dt) and init + 0.0 or init, fn)
            check(x[name](x, d), SHAPE, int_result(dt), want, tol_of(dt),
              ('%s %s %s dim=%d'):format(name, tostring(dt), v[1], d))
          end
        end
      end
    end)

    it(name .. ' takes {dtype = ...}, and torch.' .. name .. ' is the same', function()
      local x = make(torch.int16, SHAPE, kind):transpose(1, 2)
      local vals = flat(x:totable())
      local want = ref_scan({ 3, 2, 4 }, vals, 2, init, fn)
      check(x[name](x, 2, { dtype = torch.float64 }), { 3, 2, 4 }, torch.float64, want, 0, name .. ' as float64')
      check(torch[name](x, 2, { dtype = torch.int32 }), { 3, 2, 4 }, torch.int32, want, 0, 'torch.' .. name .. ' as int32')
      check(torch[name](x, 2), { 3, 2, 4 }, torch.int64, want, 0, 'torch.' .. name)
    end)
  end

  it('cumsum of a long float32 run accumulates in double', function()
    local n = 1000000
    local x = torch.full({ n }, 0.1)
    local v = x[1]
    local want = 0.0
    for _ = 1, n do want = want + v end
    local c = x:cumsum(1)
    H.close(c[n], want, 1e-6, 'last element of cumsum')
    H.close(c[n // 2], want / 2, 1e-6, 'middle element of cumsum')
  end)

  it('NaN and infinities propagate through the scans', function()
    check(torch.tensor({ 1.0, NAN, 2.0 }):cumsum(1), { 3 }, torch.float32, { 1, NAN, NAN }, 0, 'cumsum NaN')
    check(torch.tensor({ 2.0, NAN, 2.0 }):cumprod(1), { 3 }, torch.float32, { 2, NAN, NAN }, 0, 'cumprod NaN')
    check(torch.tensor({ 1.0, INF, -INF }):cumsum(1), { 3 }, torch.float32, { 1, INF, NAN }, 0, 'cumsum inf')
  end)

  it('uint8 and int8 inputs accumulate in int64', function()
    check(torch.tensor({ 200, 100 }, { dtype = torch.uint8 }):cumsum(1), { 2 }, torch.int64, { 200, 300 }, 0, 'uint8 cumsum')
    check(torch.tensor({ 100, 100, 100 }, { dtype = torch.int8 }):cumsum(1), { 3 }, torch.int64, { 100, 200, 300 }, 0,
      'int8 cumsum')
    check(torch.tensor({ 100, 100 }, { dtype = torch.int8 }):cumprod(1), { 2 }, torch.int64, { 100, 10000 }, 0, 'int8 cumprod')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('large inputs (the parallel, split-and-combine and blocked kernel paths)', function()
  -- above 2 * 32768 elements the CPU kernels split the work across threads (split reduced ranges are
  -- combined in order), and reductions whose kept dim is innermost accumulate blocks of 256 outputs.
  -- values exact in float32 with many ties: v(k) = ((k * 7919 + seed) % 1001) * 0.5 - 250
  local function big(dt, shape, seed)
    local n = numel(shape)
    local vals, fl = {}, is_float(dt)
    for k = 1, n do
      local v = (k * 7919 + seed) % 1001
      vals[k] = fl and v * 0.5 - 250 or v - 500
    end
    return torch.tensor(vals, { dtype = dt }):view(shape)
  end

  -- every statistic of one reduced group in one pass (two for the variance)
  local function stats(l)
    local n = #l
    local s, mxv, mxi, mnv, mni = 0, l[1], 1, l[1], 1
    local mxnan, mnnan = mxv ~= mxv, mnv ~= mnv
    for i = 1, n do
      local v = l[i]
      s = s + v
      if not mxnan then
        if v ~= v then mxnan, mxv, mxi, mnnan, mnv, mni = true, v, i, true, v, i
        else
          if v > mxv then mxv, mxi = v, i end
          if v < mnv then mnv, mni = v, i end
        end
      end
    end
    local mu = s / n
    local q = 0.0
    for i = 1, n do local dv = l[i] - mu; q = q + dv * dv end
    return { s, mxv, q / (n - 1), mxv, mxi, mnv, mni }
  end

  -- sum, amax (keepdim), var, max/min(dim) values and indices, argmin (or flattened argmax/argmin)
  local function check_ops(x, d, label)
    local dt = x.dtype
    local shape = x.shape
    local vals = flat(x:totable())
    local tol = is_float(dt) and H.tol(dt) or 0
    local oshape, st = ref_reduce(shape, vals, d, false, stats)
    local kshape = ref_reduce(shape, {}, d, true, function() return 0 end)
    local function col(k) local c = {} for i = 1, #st do c[i] = st[i][k] end return c end
    check(d and x:sum(d) or x:sum(), oshape, int_result(dt), col(1), tol, label .. ' sum')
    check(d and x:amax(d, true) or x:amax(nil, true), kshape, dt, col(2), 0, label .. ' amax')
    if is_float(dt) then check(d and x:var(d) or x:var(), oshape, dt, col(3), tol * 4, label .. ' var') end
    if type(d) == 'number' then
      local v, i = x:max(d)
      check(v, oshape, dt, col(4), 0, label .. ' max values')
      check(i, oshape, torch.int64, col(5), 0, label .. ' max indices')
      v, i = x:min(d)
      check(v, oshape, dt, col(6), 0, label .. ' min values')
      check(i, oshape, torch.int64, col(7), 0, label .. ' min indices')
      check(x:argmin(d), oshape, torch.int64, col(7), 0, label .. ' argmin')
    elseif d == nil then
      check(x:argmax(), {}, torch.int64, col(5), 0, label .. ' argmax')
      check(x:argmin(), {}, torch.int64, col(7), 0, label .. ' argmin')
    end
  end

  it('full reductions of 70000 elements, float32 / int32', function()
    for _, dt in ipairs { torch.float32, torch.int32 } do
      check_ops(big(dt, { 70000 }, 3), nil, tostring(dt) .. ' 1-D')
    end
    -- ties across the halves: all equal, the first index wins
    local z = torch.zeros(70000, { dtype = torch.float64 })
    check(z:argmax(), {}, torch.int64, { 1 }, 0, 'argmax of zeros')
    check(select(2, z:min(1)), {}, torch.int64, { 1 }, 0, 'min(1) index of zeros')
    -- NaN in the second half beats a larger value in the first; the first NaN wins
    local x = big(torch.float32, { 70000 }, 5)
    x[20000] = 1e9
    x[65000] = NAN
    x[50000] = NAN
    local v, i = x:max(1)
    check(v, {}, torch.float32, { NAN }, 0, 'max with NaN')
    check(i, {}, torch.int64, { 50000 }, 0, 'max index of the first NaN')
    check(x:argmin(), {}, torch.int64, { 50000 }, 0, 'argmin index of the first NaN')
    check(x:amax(), {}, torch.float32, { NAN }, 0, 'amax with NaN')
    check(x:sum(), {}, torch.float32, { NAN }, 0, 'sum with NaN')
  end)

  it('reductions over the outer and the inner dim, contiguous and transposed', function()
    for _, case in ipairs {
      -- outer dim, one block of outputs: the reduced range is split and combined
      { { 700, 100 }, 1, torch.float32 }, { { 700, 100 }, 1, torch.int64 },
      -- outer dim, two blocks of 256 outputs
      { { 260, 260 }, 1, torch.float32 },
      -- inner dim, many outputs
      { { 700, 100 }, 2, torch.int64 },
      -- inner dim, three long outputs split across threads
      { { 3, 22000 }, 2, torch.float32, true },
    } do
      local x = big(case[3], case[1], 11)
      local label = ('%s %s dim %d'):format(tostring(case[3]), shape_str(case[1]), case[2])
      check_ops(x, case[2], label)
      if case[4] then check_ops(x:t(), case[2], label .. ' transposed') end
    end
    local y = big(torch.float64, { 42, 40, 42 }, 17)
    check_ops(y, { 1, 3 }, 'float64 {42, 40, 42} dims {1, 3}')
  end)

  it('scans along both dims of {700, 100}, contiguous and transposed', function()
    for _, dt in ipairs { torch.float64, torch.int32 } do
      local x = big(dt, { 700, 100 }, 23)
      for _, v in ipairs { { 'contiguous', x, { 1, 2 } }, { 'transposed', x:t(), dt == torch.int32 and { 2 } or { 1, 2 } } } do
        local xv = v[2]
        local vals = flat(xv:totable())
        for _, d in ipairs(v[3]) do
          local want = ref_scan(xv.shape, vals, d, is_float(dt) and 0.0 or 0, function(a, b) return a + b end)
          check(xv:cumsum(d), xv.shape, int_result(dt), want, 0, ('cumsum %s %s dim %d'):format(tostring(dt), v[1], d))
        end
      end
    end
  end)
end)

---------------------------------------------------------------------------------------------------
describe('empty tensors', function()
  it('reduce to the identities: sum 0, prod 1, mean and var NaN, logsumexp -inf, any false, all true', function()
    local e = torch.zeros(0)
    check(e:sum(), {}, torch.float32, { 0 }, 0, 'sum')
    check(e:prod(), {}, torch.float32, { 1 }, 0, 'prod')
    check(e:mean(), {}, torch.float32, { NAN }, 0, 'mean')
    check(e:var(), {}, torch.float32, { NAN }, 0, 'var')
    check(e:std(), {}, torch.float32, { NAN }, 0, 'std')
    check(e:logsumexp(), {}, torch.float32, { -INF }, 0, 'logsumexp')
    check(e:any(), {}, torch.bool, { 0 }, 0, 'any')
    check(e:all(), {}, torch.bool, { 1 }, 0, 'all')
    check(e:norm(), {}, torch.float32, { 0 }, 0, 'norm 2')
    check(e:norm(1), {}, torch.float32, { 0 }, 0, 'norm 1')
    check(e:norm(0), {}, torch.float32, { 0 }, 0, 'norm 0')
    check(torch.zeros(0, { dtype = torch.int32 }):sum(), {}, torch.int64, { 0 }, 0, 'int32 sum')
    check(torch.zeros(0, { dtype = torch.int8 }):prod(), {}, torch.int64, { 1 }, 0, 'int8 prod')
    check(e:cumsum(1), { 0 }, torch.float32, {}, 0, 'cumsum')
    check(e:cumprod(1), { 0 }, torch.float32, {}, 0, 'cumprod')
    local m = torch.zeros(0, 3)
    check(m:sum(1), { 3 }, torch.float32, { 0, 0, 0 }, 0, 'sum(1) of 0x3')
    check(m:prod(1, true), { 1, 3 }, torch.float32, { 1, 1, 1 }, 0, 'prod(1, true) of 0x3')
    check(m:mean(1), { 3 }, torch.float32, { NAN, NAN, NAN }, 0, 'mean(1) of 0x3')
    check(m:sum(2), { 0 }, torch.float32, {}, 0, 'sum(2) of 0x3')
    -- a max over a non-empty dim of an empty tensor is fine: empty values and indices
    local v, i = m:max(2)
    check(v, { 0 }, torch.float32, {}, 0, 'max(2) of 0x3')
    check(i, { 0 }, torch.int64, {}, 0, 'max(2) indices of 0x3')
    check(m:amin(2), { 0 }, torch.float32, {}, 0, 'amin(2) of 0x3')
    check(m:argmax(2), { 0 }, torch.int64, {}, 0, 'argmax(2) of 0x3')
  end)

  it('max, min, amax, amin, argmax, argmin and the inf norms raise an error naming the op', function()
    local e, m = torch.zeros(0), torch.zeros(0, 3)
    for _, name in ipairs { 'max', 'min', 'amax', 'amin', 'argmax', 'argmin' } do
      H.raises(function() return e[name](e) end, name)
      H.raises(function() return m[name](m, 1) end, name)
    end
    H.raises(function() return e:norm(INF) end, 'norm')
    H.raises(function() return m:norm('-inf', 1) end, 'norm')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('bad calls raise errors that name the op', function()
  local x = make(torch.float32, SHAPE)
  -- call x:name(...) with method syntax, so that Lua's own argument errors name the method
  local function method(name)
    local call = assert(load('local x = ...; return x:' .. name .. '(select(2, ...))'))
    return function(t, ...) return call(t, ...) end
  end
  local xi = make(torch.int64, SHAPE)
  local dim_ops = { 'sum', 'mean', 'prod', 'logsumexp', 'amax', 'amin', 'any', 'all', 'var', 'std' }

  it('dim 0 (dims are 1-based), an out-of-range dim, a repeated dim, a non-integer dim', function()
    for _, name in ipairs(dim_ops) do
      local f = method(name)
      H.raises(function() return f(x, 0) end, name, '1-based')
      H.raises(function() return f(x, { 1, 0 }) end, name, '1-based')
      H.raises(function() return f(x, 4) end, name, 'out of range')
      H.raises(function() return f(x, -4) end, name, 'out of range')
      H.raises(function() return f(x, { 1, 4 }) end, name)
      H.raises(function() return f(x, { 2, -2 }) end, name)
      H.raises(function() return f(x, 1.5) end, name)
      H.raises(function() return f(x, 'a') end, name)
    end
    for _, name in ipairs { 'max', 'min', 'argmax', 'argmin', 'cumsum', 'cumprod' } do
      local f = method(name)
      H.raises(function() return f(x, 0) end, name, '1-based')
      H.raises(function() return f(x, 4) end, name, 'out of range')
      H.raises(function() return f(x, -4) end, name, 'out of range')
      H.raises(function() return f(x, 1.5) end, name)
    end
    H.raises(function() return x:norm(2, 0) end, 'norm', '1-based')
    H.raises(function() return x:norm(2, 4) end, 'norm', 'out of range')
    H.raises(function() return x:norm(1, { 1, 1 }) end, 'norm')
  end)

  it('too many arguments', function()
    H.raises(function() return x:sum(1, true, { dtype = torch.float64 }, 1) end, 'sum')
    H.raises(function() return x:mean(1, true, {}, 1) end, 'mean')
    H.raises(function() return x:prod(1, true, {}, 1) end, 'prod')
    H.raises(function() return x:logsumexp(1, true, 1) end, 'logsumexp')
    H.raises(function() return x:amax(1, true, 1) end, 'amax')
    H.raises(function() return x:amin(1, true, 1) end, 'amin')
    H.raises(function() return x:any(1, true, 1) end, 'any')
    H.raises(function() return x:all(1, true, 1) end, 'all')
    H.raises(function() return x:var(1, true, {}, 1) end, 'var')
    H.raises(function() return x:std(1, true, {}, 1) end, 'std')
    H.raises(function() return x:norm(2, 1, true, 1) end, 'norm')
    H.raises(function() return x:max(1, true, 1) end, 'max')
    H.raises(function() return x:min(1, true, 1) end, 'min')
    H.raises(function() return x:max(x, 1) end, 'max')
    H.raises(function() return x:argmax(1, true, 1) end, 'argmax')
    H.raises(function() return x:argmin(1, true, 1) end, 'argmin')
    H.raises(function() return x:cumsum(1, {}, 1) end, 'cumsum')
    H.raises(function() return x:cumprod(1, {}, 1) end, 'cumprod')
  end)

  it('wrong input dtypes and a missing dim', function()
    H.raises(function() return xi:mean() end, 'mean')
    H.raises(function() return xi:var(1) end, 'var')
    H.raises(function() return xi:std() end, 'std')
    H.raises(function() return xi:norm() end, 'norm')
    H.raises(function() return x:cumsum() end, 'cumsum')
    H.raises(function() return x:cumprod() end, 'cumprod')
    H.raises(function() return x:sum({ dtype = 5 }) end, 'sum')
    H.raises(function() return x:max('a') end, 'max')
  end)

  it('a non-boolean keepdim raises an error naming the op', function()
    local x = torch.ones(2, 3)
    H.raises(function() return x:sum(1, 1) end, 'sum', 'keepdim')
    H.raises(function() return x:var(1, 'yes') end, 'var', 'keepdim')
    H.raises(function() return x:amax(1, 1) end, 'amax', 'keepdim')
    H.raises(function() return x:max(1, 'no') end, 'max', 'keepdim')
  end)

  it('an unknown dtype name in the options names the op', function()
    local x = torch.ones(2, 3)
    H.raises(function() return x:sum({ dtype = 'foo' }) end, 'sum', 'foo')
    H.raises(function() return x:cumsum(1, { dtype = 'foo' }) end, 'cumsum', 'foo')
  end)

  it('a non-tensor self is an error, never a crash', function()
    for _, name in ipairs { 'sum', 'mean', 'max', 'argmax', 'cumsum', 'norm', 'var' } do
      H.raises(function() return torch[name]({ 1, 2 }) end)
      H.raises(function() return torch[name](nil) end)
    end
  end)
end)

-- amax and amin over long contiguous rows run four quarters of the row side by side
-- (kernels/cpu/reduce.c): rows around the 64 elements where that starts, the extreme and NaN in
-- each quarter and in the tail, every dtype, against a plain loop
describe('amax and amin over long rows', function()
  local DTYPES = { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8 }
  local function ref(vals, lo, hi, pick)
    local m
    for i = lo, hi do
      local v = vals[i]
      if v ~= v then return v end
      if m == nil or pick(v, m) then m = v end
    end
    return m
  end
  it('equal a plain loop with the extreme or a NaN anywhere in the row', function()
    for _, n in ipairs { 63, 64, 67, 256, 1001 } do
      for _, dt in ipairs(DTYPES) do
        -- four rows: the maximum (and minimum) in quarters 1 and 3; in the tail; NaN in quarter 2
        -- (floats) or the type's extremes (integers); one value repeated
        local rows = {}
        for r = 1, 4 do
          rows[r] = {}
          for i = 1, n do rows[r][i] = ((i * 37 + r * 11) % 50) - 20 end
        end
        rows[1][2], rows[1][3 * n // 4 + 1] = 90, -90
        rows[2][n], rows[2][n - 1] = 95, -95
        if is_float(dt) then
          rows[3][n // 4 + 2] = NAN
        elseif dt == torch.int64 then
          rows[3][n // 2 + 1], rows[3][n // 4 + 1] = math.maxinteger, math.mininteger
        end
        for i = 1, n do rows[4][i] = 7 end
        if dt == torch.uint8 then
          for r = 1, 4 do for i = 1, n do rows[r][i] = rows[r][i] % 256 end end
        end
        local x = torch.tensor(rows, { dtype = dt })
        local vals = flat(x:totable())
        for _, op in ipairs { 'amax', 'amin' } do
          local pick = op == 'amax' and function(a, b) return a > b end or function(a, b) return a < b end
          local got = flat(x[op](x, 2):totable())
          for r = 1, 4 do
            local want = ref(vals, (r - 1) * n + 1, r * n, pick)
            local g = got[r]
            assert(g == want or (g ~= g and want ~= want),
              string.format('%s %s n=%d row %d: %s, want %s', op, tostring(dt), n, r, tostring(g), tostring(want)))
          end
          local all = x[op](x)
          local want_all = ref(vals, 1, 4 * n, pick)
          local ga = all:item()
          assert(ga == want_all or (ga ~= ga and want_all ~= want_all), op .. ' of all ' .. tostring(dt))
        end
      end
    end
  end)
end)
