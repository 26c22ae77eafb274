-- x:data_ptr, torch.as_strided / empty_strided, torch.gradient, torch.put / x:put_, torch.histogram
-- and the window functions: against PyTorch's values (spec/data/functions_reference.lua, written by
-- tools/gen_functions_reference.py) and against plain-Lua loops and closed forms in float64,
-- gradients by gradcheck, on non-contiguous inputs and every dtype each accepts, and their errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local REF = dofile('spec/data/functions_reference.lua')

local f64 = torch.float64

local close, noncontig = H.near, H.noncontig

describe('x:data_ptr', function()
  it("is the address of the first element: views move it by their offset times the element's size", function()
    for _, dt in ipairs { torch.float32, f64, torch.int16, torch.uint8 } do
      local x = torch.zeros(4, 5, { dtype = dt })
      local p = x:data_ptr()
      assert.are.equal('integer', math.type(p))
      assert.are.equal(p + (2 * 5 + 3) * dt.itemsize, x[3]:narrow(1, 4, 2):data_ptr())
      assert.are.equal(p, x:view(20):data_ptr())
      assert.are_not.equal(p, x:clone():data_ptr())
    end
  end)
end)

describe('torch.as_strided', function()
  -- the view's elements by its sizes, strides and offset over the flat storage, in plain Lua
  local function strided_ref(flat, size, stride, offset)
    local out = {}
    local function walk(d, pos)
      if d > #size then out[#out + 1] = flat[pos + 1]; return end
      for i = 0, size[d] - 1 do walk(d + 1, pos + i * stride[d]) end
    end
    walk(1, offset)
    return out
  end

  it('views the storage with any sizes, strides and offset, in every dtype', function()
    for _, dt in ipairs { torch.float32, f64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool } do
      local x = torch.arange(0, 12):remainder(dt == torch.bool and 2 or 100):to(dt)
      local flat = x:totable()
      for _, c in ipairs { { { 3, 2 }, { 1, 3 }, 0 }, { { 2, 2, 2 }, { 4, 1, 2 }, 3 }, { { 4 }, { 0 }, 5 }, { { 2, 3 }, { 3, 1 }, 6 } } do
        local v = torch.as_strided(x, c[1], c[2], c[3])
        assert.are.same(c[1], { table.unpack(v.shape) })
        assert.are.same(c[2], v:stride())
        assert.are.equal(c[3], v:storage_offset())
        assert.are.same(strided_ref(flat, c[1], c[2], c[3]), v:reshape(-1):totable())
      end
    end
  end)

  it('shares the memory, keeps the offset of a view by default, and works on non-contiguous inputs', function()
    local base = torch.arange(0., 20., { dtype = f64 })
    local x = base:narrow(1, 5, 10) -- storage offset 4
    local v = x:as_strided({ 2, 2 }, { 2, 1 })
    assert.are.equal(4, v:storage_offset())
    assert.are.same({ { 4, 5 }, { 6, 7 } }, v:totable())
    v[1][1] = 100
    assert.are.equal(100, base[5])
    local nc = noncontig(torch.arange(0., 6.):reshape(2, 3))
    -- the storage of the non-contiguous copy holds the transpose's layout: 0, 3, 1, 4, 2, 5
    assert.are.same({ 0, 3, 1, 4, 2, 5 }, nc:as_strided({ 6 }, { 1 }, 0):totable())
  end)

  it('passes gradients back to the positions the view reads (gradcheck, overlapping windows)', function()
    local x = torch.randn(10, { dtype = f64, requires_grad = true })
    assert.is_true(torch.autograd.gradcheck(function(a) return a:as_strided({ 3, 4 }, { 2, 1 }, 1) * 1.5 end, { x }))
    local m = torch.randn(3, 4, { dtype = f64, requires_grad = true })
    assert.is_true(torch.autograd.gradcheck(function(a) return torch.as_strided(a, { 2, 3 }, { 4, 2 }, 2):sin() end, { m }))
    -- the gradient of overlapping windows adds up: element k is read by min(k, 3, ...) windows
    local y = torch.zeros(6, { dtype = f64, requires_grad = true })
    y:as_strided({ 4, 3 }, { 1, 1 }, 0):sum():backward()
    assert.are.same({ 1, 2, 3, 3, 2, 1 }, y.grad:totable())
  end)

  it('refuses views outside the storage and bad arguments, with clear errors', function()
    local x = torch.zeros(6)
    assert.has_error(function() torch.as_strided(x, { 3, 3 }, { 3, 1 }) end)
    local ok, err = pcall(torch.as_strided, x, { 3, 3 }, { 3, 1 })
    assert.is_false(ok)
    assert.truthy(err:find('as_strided: sizes [3, 3], strides [3, 1] and storage offset 0 need a storage of 9 elements, '
      .. 'but it holds 6', 1, true))
    ok, err = pcall(torch.as_strided, x, { 2 }, { 1 }, 5)
    assert.truthy(err:find('storage offset 5 need a storage of 7 elements, but it holds 6', 1, true))
    ok, err = pcall(torch.as_strided, x, { 2 }, { -1 })
    assert.truthy(err:find('as_strided: strides must be non-negative, got -1 in dimension 1', 1, true))
    ok, err = pcall(torch.as_strided, x, { 2, 2 }, { 1 })
    assert.truthy(err:find('as_strided: expected as many strides as sizes, got 2 sizes and 1 strides', 1, true))
    ok, err = pcall(torch.as_strided, x, { 2 }, { 1 }, -1)
    assert.truthy(err:find('as_strided: storage_offset must be non-negative, got -1', 1, true))
    ok, err = pcall(torch.as_strided, x, 2, 1)
    assert.truthy(err:find('as_strided: expected the sizes and the strides as two tables of integers', 1, true))
    -- an empty view needs no storage
    assert.are.equal(0, torch.as_strided(x, { 0, 5 }, { 100, 100 }, 6):numel())
    -- sizes, strides and offsets whose products or sums pass 2^63 are refused, not wrapped around
    local big = 1 << 40
    ok, err = pcall(torch.as_strided, x, { big, big }, { big, 1 })
    assert.truthy(err:find('as_strided: sizes and strides reach past 2^63 elements', 1, true), err)
    ok, err = pcall(torch.as_strided, x, { big, big, big }, { 0, 0, 0 })
    assert.truthy(err:find('as_strided: sizes and strides reach past 2^63 elements', 1, true), err)
    ok, err = pcall(torch.as_strided, x, { 2 }, { 1 }, math.maxinteger)
    assert.truthy(err:find('need a storage of ' .. math.maxinteger .. ' elements', 1, true), err)
    ok, err = pcall(torch.empty_strided, { big, big }, { big, 1 })
    assert.truthy(err:find('empty_strided: sizes and strides reach past 2^63 elements', 1, true), err)
  end)
end)

describe('torch.empty_strided', function()
  it('makes a tensor of the given strides over a storage of just the elements they reach', function()
    local t = torch.empty_strided({ 2, 3 }, { 1, 2 })
    assert.are.same({ 1, 2 }, t:stride())
    assert.are.equal(torch.float32, t.dtype)
    assert.are.equal(6, t:_storage_numel())
    assert.is_false(t:is_contiguous())
    t:copy_(torch.arange(1., 7.):reshape(2, 3))
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, t:totable())
    -- the storage, read flat, is column-major
    assert.are.same({ 1, 4, 2, 5, 3, 6 }, t:as_strided({ 6 }, { 1 }, 0):totable())
    local e = torch.empty_strided({ 3, 4 }, { 0, 1 }, { dtype = torch.int32 })
    assert.are.equal(torch.int32, e.dtype)
    assert.are.equal(4, e:_storage_numel())
    assert.are.equal(0, torch.empty_strided({ 0, 3 }, { 3, 1 }):_storage_numel())
    local g = torch.empty_strided({ 2 }, { 3 }, { dtype = f64, requires_grad = true })
    assert.is_true(g.requires_grad)
  end)

  it('refuses bad sizes and strides', function()
    assert.has_error(function() torch.empty_strided({ 2, 3 }, { 1 }) end,
      'empty_strided: expected as many strides as sizes, got 2 sizes and 1 strides')
    local ok, err = pcall(torch.empty_strided, { 2 }, { -2 })
    assert.truthy(err:find('empty_strided: strides must be non-negative, got -2 in dimension 1', 1, true))
    ok, err = pcall(torch.empty_strided, { -2 }, { 1 })
    assert.truthy(err:find('empty_strided: sizes must be non-negative, got -2 in dimension 1', 1, true))
    assert.has_error(function() torch.empty_strided(2, 1) end,
      'empty_strided: expected the sizes and the strides as two tables of integers')
  end)
end)

describe('torch.gradient', function()
  local X = REF.grad_input

  -- plain Lua: the derivative along dim d (1 or 2) of a matrix by PyTorch's formulas, at
  -- coordinates xs (spacing h: xs[i] = (i - 1) * h)
  local function gradient_ref(m, d, xs, edge)
    local rows, cols = #m, #m[1]
    local n = d == 1 and rows or cols
    local function at(i, j, k) if d == 1 then return m[k][j] else return m[i][k] end end
    local out = {}
    for i = 1, rows do
      out[i] = {}
      for j = 1, cols do
        local k = d == 1 and i or j
        local v
        if k == 1 or k == n then
          local s = k == 1 and 1 or -1
          local k0, k1, k2 = k, k + s, k + 2 * s
          local h1, h2 = xs[k1] - xs[k0], xs[k2] and (xs[k2] - xs[k1]) or nil
          if edge == 1 then
            v = (at(i, j, k1) - at(i, j, k0)) / h1
          else -- the derivative at k0 of the parabola through k0, k1, k2
            local a, b = h1, h1 + h2
            v = -(a + b) / (a * b) * at(i, j, k0) + b / (a * (b - a)) * at(i, j, k1) - a / (b * (b - a)) * at(i, j, k2)
          end
        else -- the derivative at k of the parabola through k - 1, k, k + 1
          local hl, hr = xs[k] - xs[k - 1], xs[k + 1] - xs[k]
          v = (hl * hl * at(i, j, k + 1) - hr * hr * at(i, j, k - 1) + (hr * hr - hl * hl) * at(i, j, k)) / (hl * hr * (hl + hr))
        end
        out[i][j] = v
      end
    end
    return out
  end
  local function even(n, h)
    local xs = {}
    for i = 1, n do xs[i] = (i - 1) * h end
    return xs
  end

  it("matches PyTorch's values for every form of spacing, dim and edge_order", function()
    local x = torch.tensor(X, { dtype = f64 })
    local coords = { torch.tensor(REF.grad_coords[1], { dtype = f64 }), torch.tensor(REF.grad_coords[2], { dtype = f64 }) }
    for _, c in ipairs(REF.gradients) do
      local o = {}
      for k, v in pairs(c.opts) do o[k] = v end
      if o.spacing == 'coords' then o.spacing = coords elseif o.spacing == 'coords2' then o.spacing = { coords[2] } end
      local got = torch.gradient(x, o)
      assert.are.equal(#c.values, #got, c.name)
      for k = 1, #got do close(c.values[k], got[k]:totable(), 1e-12, c.name) end
    end
  end)

  it('agrees with plain-Lua finite differences (even and uneven coordinates, both edge orders)', function()
    local x = torch.tensor(X, { dtype = f64 })
    for _, edge in ipairs { 1, 2 } do
      local g = torch.gradient(x, { spacing = { 0.5, 3.0 }, edge_order = edge })
      close(gradient_ref(X, 1, even(4, 0.5), edge), g[1]:totable(), 1e-12, 'dim 1')
      close(gradient_ref(X, 2, even(5, 3.0), edge), g[2]:totable(), 1e-12, 'dim 2')
      local cs = REF.grad_coords
      local gc = torch.gradient(x, { spacing = { torch.tensor(cs[1], { dtype = f64 }), torch.tensor(cs[2], { dtype = f64 }) },
        edge_order = edge })
      close(gradient_ref(X, 1, cs[1], edge), gc[1]:totable(), 1e-12, 'coords dim 1')
      close(gradient_ref(X, 2, cs[2], edge), gc[2]:totable(), 1e-12, 'coords dim 2')
    end
    -- exact on quadratics with edge_order 2: d/dx x^2 = 2x
    local q = torch.arange(0, 6, { dtype = f64 }):pow(2)
    close({ 0, 2, 4, 6, 8, 10 }, torch.gradient(q, { edge_order = 2 })[1]:totable(), 1e-12, 'x^2')
  end)

  it('takes non-contiguous inputs, integer inputs (giving the default dtype) and float32', function()
    local x = torch.tensor(X, { dtype = f64 })
    local nc = noncontig(x)
    for k, g in ipairs(torch.gradient(nc)) do close(torch.gradient(x)[k]:totable(), g:totable(), 1e-12, 'nc') end
    local i = torch.tensor({ 1, 4, 9, 16 })
    local gi = torch.gradient(i)[1]
    assert.are.equal(torch.float32, gi.dtype)
    assert.are.same({ 3, 4, 6, 7 }, gi:totable())
    for _, dt in ipairs { torch.int32, torch.int16, torch.int8 } do
      assert.are.same({ 3, 4, 6, 7 }, torch.gradient(i:to(dt))[1]:totable())
    end
    local g32 = torch.gradient(x:float(), { dim = 2 })[1]
    assert.are.equal(torch.float32, g32.dtype)
    close(torch.gradient(x, { dim = 2 })[1]:totable(), g32:double():totable(), 1e-6, 'float32')
  end)

  it('passes gradients (gradcheck)', function()
    local x = torch.randn(4, 5, { dtype = f64, requires_grad = true })
    for _, edge in ipairs { 1, 2 } do
      assert.is_true(torch.autograd.gradcheck(function(a)
        local g = torch.gradient(a, { spacing = { 0.5, torch.tensor(REF.grad_coords[2], { dtype = f64 }) }, edge_order = edge })
        return g[1] * 2 + g[2]
      end, { x }))
    end
  end)

  it('refuses bad arguments with clear errors', function()
    local x = torch.zeros(3, 4)
    assert.has_error(function() torch.gradient(x, { edge_order = 3 }) end, 'gradient: edge_order must be 1 or 2, got 3')
    assert.has_error(function() torch.gradient(torch.zeros(2, 4), { edge_order = 2 }) end,
      'gradient: expected each dimension size to be at least edge_order+1 (3), got size 2 in dim 1')
    assert.has_error(function() torch.gradient(x, { spacing = { 1, 2, 3 } }) end,
      'gradient: expected spacing to be a number or a table of 2 (one per dim), got a table of 3')
    assert.has_error(function() torch.gradient(x, { spacing = { torch.zeros(3) }, dim = 2 }) end,
      'gradient: expected the coordinates of dim 2 to be a 1-D tensor of 4 values, got shape torch.Size([3])')
    assert.has_error(function() torch.gradient(x, { dim = { 1, 1 } }) end, 'gradient: dim 1 appears more than once in dim')
    assert.has_error(function() torch.gradient(torch.zeros(3, { dtype = torch.uint8 })) end, 'gradient: uint8 input is not supported')
    assert.has_error(function() torch.gradient(torch.tensor(1.0)) end,
      'gradient: expected a tensor with at least one dimension, got a 0-dim tensor')
    assert.has_error(function() torch.gradient(x, { dims = 1 }) end)
  end)
end)

describe('torch.put', function()
  -- plain Lua: flat positions (1-based, negative from the end) written or added
  local function put_ref(flat, index, source, accumulate)
    local r = { table.unpack(flat) }
    for k, i in ipairs(index) do
      if i < 0 then i = i + #flat + 1 end
      r[i] = accumulate and r[i] + source[k] or source[k]
    end
    return r
  end

  it('writes or adds source at flat 1-based indices (negative from the end), in every dtype', function()
    local idx = { 3, -1, 7, -12 }
    for _, dt in ipairs { torch.float32, f64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8 } do
      local x = torch.arange(0, 12):reshape(3, 4):to(dt)
      local src = torch.tensor({ { 10, 20 }, { 30, 40 } }):to(dt)
      local index = torch.tensor({ { 3, -1 }, { 7, -12 } })
      for _, acc in ipairs { false, true } do
        local r = torch.put(x, index, src, acc)
        assert.are.same({ 3, 4 }, { table.unpack(r.shape) })
        assert.are.same(put_ref(x:reshape(-1):totable(), idx, { 10, 20, 30, 40 }, acc), r:reshape(-1):totable())
      end
    end
    -- repeated indices add up with accumulate
    local a = torch.zeros(4, { dtype = f64 }):put_(torch.tensor({ 2, 2, -3, 4 }), torch.tensor({ 1.0, 2.0, 4.0, 8.0 }, { dtype = f64 }), true)
    assert.are.same({ 0, 7, 0, 8 }, a:totable())
  end)

  it('put_ writes into x itself, also when x is not contiguous; put leaves x alone', function()
    local base = torch.arange(0., 6.):reshape(2, 3)
    local x = base:t() -- 3 x 2, not contiguous; flat (row-major) order 0, 3, 1, 4, 2, 5
    local r = x:put_(torch.tensor({ 2, 5 }), torch.tensor({ -1.0, -2.0 }))
    assert.are.equal(x, r)
    assert.are.same({ { 0, -1 }, { 1, 4 }, { -2, 5 } }, x:totable())
    assert.are.same({ { 0, 1, -2 }, { -1, 4, 5 } }, base:totable())
    local y = torch.zeros(3)
    local z = torch.put(y, torch.tensor({ 1 }), torch.tensor({ 5.0 }))
    assert.are.same({ 0, 0, 0 }, y:totable())
    assert.are.same({ 5, 0, 0 }, z:totable())
    assert.are.same({ 7 }, { torch.tensor(1.0):put_(torch.tensor({ -1 }), torch.tensor({ 7.0 })):item() })
  end)

  it('passes gradients to x and to source (gradcheck)', function()
    local x = torch.randn(3, 4, { dtype = f64, requires_grad = true })
    local s = torch.randn(3, { dtype = f64, requires_grad = true })
    local index = torch.tensor({ 2, -1, 6 })
    for _, acc in ipairs { false, true } do
      assert.is_true(torch.autograd.gradcheck(function(a, b) return torch.put(a, index, b, acc) end, { x, s }))
    end
  end)

  it('refuses bad arguments with clear errors', function()
    local x = torch.zeros(2, 3)
    assert.has_error(function() torch.put(x, torch.tensor({ 7 }), torch.tensor({ 1.0 })) end,
      'put: index 7 is out of range for a tensor of 6 elements (indices are 1 to 6, or -6 to -1 from the end)')
    assert.has_error(function() torch.put(x, torch.tensor({ -7 }), torch.tensor({ 1.0 })) end,
      'put: index -7 is out of range for a tensor of 6 elements (indices are 1 to 6, or -6 to -1 from the end)')
    assert.has_error(function() torch.put(x, torch.tensor({ 0 }), torch.tensor({ 1.0 })) end,
      'put: index 0 is out of range for a tensor of 6 elements (indices are 1 to 6, or -6 to -1 from the end)')
    assert.has_error(function() torch.put(x, torch.tensor({ 1 }, { dtype = torch.int32 }), torch.tensor({ 1.0 })) end,
      'put: expected an int64 index tensor, got int32')
    assert.has_error(function() torch.put(x, torch.tensor({ 1 }), torch.tensor({ 1.0 }, { dtype = f64 })) end,
      'put: self and source expected to have the same dtype, but got (self) float32 and (source) float64')
    assert.has_error(function() torch.put(x, torch.tensor({ 1, 2 }), torch.tensor({ 1.0 })) end,
      'put: expected source and index to have the same number of elements, but got 1 and 2')
    assert.has_error(function() torch.put(x, { 1 }, torch.tensor({ 1.0 })) end, 'put: index must be a tensor, got table')
  end)
end)

describe('torch.histogram', function()
  local X, W = REF.hist_input, REF.hist_weight

  -- plain Lua: counts (or weights) per bin of the given edges; the last bin holds its right edge
  local function hist_ref(xs, edges, ws, density)
    local nb = #edges - 1
    local h = {}
    for b = 1, nb do h[b] = 0 end
    for k, v in ipairs(xs) do
      for b = 1, nb do
        if v >= edges[b] and (v < edges[b + 1] or (b == nb and v == edges[b + 1])) then
          h[b] = h[b] + (ws and ws[k] or 1)
          break
        end
      end
    end
    if density then
      local total = 0
      for b = 1, nb do total = total + h[b] end
      for b = 1, nb do h[b] = h[b] / (total * (edges[b + 1] - edges[b])) end
    end
    return h
  end

  it("matches PyTorch's counts and edges", function()
    local x = torch.tensor(X, { dtype = f64 })
    for _, c in ipairs(REF.histograms) do
      local o = {}
      if c.opts.range then o.range = c.opts.range end
      if c.opts.weight then o.weight = torch.tensor(W, { dtype = f64 }) end
      if c.opts.density then o.density = true end
      local bins = c.opts.edges and torch.tensor(REF.hist_edges, { dtype = f64 }) or c.bins
      local h, e = torch.histogram(x, bins, o)
      close(c.hist, h:totable(), 1e-12, c.name .. ' hist')
      close(c.edges, e:totable(), 1e-12, c.name .. ' edges')
      -- and plain Lua over those edges
      close(hist_ref(X, c.edges, c.opts.weight and W, c.opts.density), h:totable(), 1e-12, c.name .. ' (Lua)')
    end
    local h, e = torch.histogram(torch.tensor({ 1.0, 1.0, 1.0 }, { dtype = f64 }), 3)
    close(REF.hist_constant.hist, h:totable())
    close(REF.hist_constant.edges, e:totable())
    h, e = torch.histogram(torch.tensor({}, { dtype = f64 }), 3)
    close(REF.hist_empty.hist, h:totable())
    close(REF.hist_empty.edges, e:totable())
  end)

  it('takes float32 and non-contiguous inputs, and defaults to 100 bins', function()
    local x = torch.tensor({ { 0.5, 1.5, 2.5 }, { 3.0, 0.0, 1.0 } })
    local h, e = torch.histogram(noncontig(x:t():contiguous()), 3)
    assert.are.equal(torch.float32, h.dtype)
    assert.are.equal(torch.float32, e.dtype)
    assert.are.same({ 2, 2, 2 }, h:totable())
    local h100 = x:histogram()
    assert.are.equal(100, h100:numel())
    assert.are.equal(6, h100:sum():item())
    local hr = torch.histogram(x, { range = { 1.0, 2.0 } })
    assert.are.equal(2, hr:sum():item())
  end)

  it('refuses bad arguments with clear errors', function()
    local x = torch.tensor({ 1.0, 2.0 })
    assert.has_error(function() torch.histogram(torch.tensor({ 1, 2 }), 3) end,
      'histogram: expected a float32 or float64 input, got int64')
    assert.has_error(function() torch.histogram(x, 0) end, 'histogram: bins must be > 0, got 0')
    assert.has_error(function() torch.histogram(x, 3, { range = { 2.0, 1.0 } }) end,
      'histogram: min should not exceed max, but got min 2 max 1')
    assert.has_error(function() torch.histogram(torch.tensor({ 1.0, 0 / 0 }), 3) end,
      'histogram: the range [nan, nan] is not finite')
    assert.has_error(function() torch.histogram(x, torch.tensor({ 0.0, 2.0, 1.0 })) end,
      'histogram: bin edges must be non-decreasing')
    assert.has_error(function() torch.histogram(x, torch.tensor({ 0.0, 2.0 }, { dtype = f64 })) end,
      'histogram: input and bin edges should have the same dtype, got float32 and float64')
    assert.has_error(function() torch.histogram(x, 2, { weight = torch.ones(3) }) end,
      'histogram: weight should have the shape and dtype of input (torch.Size([2]), float32), got torch.Size([3]), float32')
    assert.has_error(function() torch.histogram(x, 2, { bins = 3 }) end)
  end)
end)

describe('window functions', function()
  -- closed forms in plain Lua, float64
  local pi = math.pi
  local function i0(v) -- the power series of the modified Bessel function of order 0
    local s, t, k = 1, 1, 1
    repeat
      t = t * (v / 2) ^ 2 / (k * k)
      s, k = s + t, k + 1
    until t < 1e-17 * s
    return s
  end
  local FORMS = {
    hann_window = function(k, N) return 0.5 - 0.5 * math.cos(2 * pi * k / (N - 1)) end,
    hamming_window = function(k, N, o) return (o.alpha or 0.54) - (o.beta or 0.46) * math.cos(2 * pi * k / (N - 1)) end,
    blackman_window = function(k, N) return 0.42 - 0.5 * math.cos(2 * pi * k / (N - 1)) + 0.08 * math.cos(4 * pi * k / (N - 1)) end,
    bartlett_window = function(k, N) return 1 - math.abs(2 * k / (N - 1) - 1) end,
    kaiser_window = function(k, N, o)
      local a, beta = (N - 1) / 2, o.beta or 12.0
      return i0(beta * math.sqrt(math.max(0, 1 - ((k - a) / a) ^ 2))) / i0(beta)
    end,
  }
  local function form(name, n, o)
    if n == 0 then return {} end
    if n == 1 then return { 1 } end
    local N = (o.periodic == false) and n or n + 1
    local r = {}
    for k = 0, n - 1 do r[k + 1] = FORMS[name](k, N, o) end
    return r
  end

  it("match PyTorch's values and the closed forms (periodic and symmetric, their parameters)", function()
    for _, c in ipairs(REF.windows) do
      local o = { dtype = f64 }
      for k, v in pairs(c.opts) do o[k] = v end
      local w = torch[c.fn](c.n, o)
      local what = string.format('%s(%d, %s)', c.fn, c.n, tostring(c.opts.periodic))
      assert.are.equal(f64, w.dtype)
      close(c.values, w:totable(), 1e-13, what)
      close(form(c.fn, c.n, c.opts), w:totable(), 1e-13, what .. ' (Lua)')
    end
  end)

  it('take their parameters positionally too, and a dtype, device and requires_grad', function()
    close(form('hamming_window', 7, { periodic = false, alpha = 0.6, beta = 0.4 }),
      torch.hamming_window(7, false, 0.6, 0.4, { dtype = f64 }):totable(), 1e-13, 'hamming')
    close(form('kaiser_window', 9, { beta = 5.0 }), torch.kaiser_window(9, true, 5.0, { dtype = f64 }):totable(), 1e-13, 'kaiser')
    local w = torch.hann_window(8)
    assert.are.equal(torch.float32, w.dtype)
    close(form('hann_window', 8, {}), w:double():totable(), 1e-7, 'float32')
    for _, dt in ipairs { torch.float16, torch.bfloat16 } do
      local h = torch.blackman_window(6, { dtype = dt })
      assert.are.equal(dt, h.dtype)
      close(form('blackman_window', 6, {}), h:double():totable(), 1e-2, dt.name)
    end
    local b = torch.bartlett_window(5, false, { device = 'cpu:1', requires_grad = true })
    assert.are.equal('cpu:1', tostring(b.device))
    assert.is_true(b.requires_grad)
    torch.set_default_dtype(f64)
    local ok, d = pcall(function() return torch.hann_window(4).dtype end)
    torch.set_default_dtype(torch.float32)
    assert.is_true(ok, d)
    assert.are.equal(f64, d)
  end)

  it('refuse bad arguments with clear errors', function()
    assert.has_error(function() torch.hann_window(-1) end, 'hann_window: window_length must be a non-negative integer, got -1')
    assert.has_error(function() torch.kaiser_window(2.5) end, 'kaiser_window: window_length must be a non-negative integer, got 2.5')
    assert.has_error(function() torch.hamming_window(4, { dtype = torch.int64 }) end,
      'hamming_window: expects a floating point dtype, got torch.int64')
    assert.has_error(function() torch.blackman_window(4, 'yes') end, 'blackman_window: periodic must be a boolean, got string')
    assert.has_error(function() torch.kaiser_window(4, true, 'big') end, 'kaiser_window: beta must be a number, got string')
    assert.has_error(function() torch.bartlett_window(4, true, 3) end,
      'bartlett_window: expected at most 1 arguments after window_length, got 2')
    assert.has_error(function() torch.hann_window(4, { alpha = 1 }) end)
  end)
end)
