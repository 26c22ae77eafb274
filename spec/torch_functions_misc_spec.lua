-- torch.cumulative_trapezoid, torch.igamma / igammac (torch.special.gammainc / gammaincc),
-- torch.index_reduce, torch.histogramdd, torch.frombuffer / from_file, torch.svd_lowrank /
-- pca_lowrank and torch.segment_reduce: against PyTorch 1.13's values
-- (spec/data/misc_reference.lua, written by tools/gen_misc_reference.py, with mpmath's for
-- igamma), plain-Lua loops, closed forms and finite differences, on non-contiguous inputs and
-- every dtype each accepts, and their errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local REF = dofile('spec/data/misc_reference.lua')

local f64 = torch.float64

local close, noncontig = H.near, H.noncontig

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, 'expected an error')
  return tostring(e)
end

describe('torch.cumulative_trapezoid', function()
  local R = REF.cumtrapz
  local y = torch.tensor(R.y, { dtype = f64 })

  it("gives PyTorch's values along either dim, with dx and with sample points", function()
    close(R.last, torch.cumulative_trapezoid(y):totable())
    close(R.first, torch.cumulative_trapezoid(y, { dim = 1 }):totable())
    close(R.first, torch.cumulative_trapezoid(y, { dim = -2 }):totable())
    close(R.dx, torch.cumulative_trapezoid(y, { dx = 0.25 }):totable())
    close(R.points, torch.cumulative_trapezoid(y, torch.tensor(R.xs, { dtype = f64 })):totable())
    close(R.points2, torch.cumulative_trapezoid(y, torch.tensor(R.x2, { dtype = f64 })):totable())
    close(R.points_first, torch.cumulative_trapezoid(y, torch.tensor({ 1, 4 }, { dtype = f64 }), { dim = 1 }):totable())
  end)

  it('is the running sum of the trapezoids (a plain-Lua loop), its last value trapezoid', function()
    torch.manual_seed(1)
    local t = torch.randn(3, 6, { dtype = f64 })
    local xs = torch.rand(6, { dtype = f64 }):cumsum(1)
    local got = torch.cumulative_trapezoid(t, xs):totable()
    local tv, xv = t:totable(), xs:totable()
    for i = 1, 3 do
      local acc = 0
      for k = 1, 5 do
        acc = acc + (tv[i][k] + tv[i][k + 1]) / 2 * (xv[k + 1] - xv[k])
        close(acc, got[i][k], 1e-12)
      end
    end
    close(torch.trapezoid(t, xs):totable(), torch.cumulative_trapezoid(t, xs):select(2, 5):totable())
  end)

  it('takes non-contiguous inputs, float32 and integers (a float32 result), and passes gradients', function()
    local t = torch.tensor(R.y, { dtype = f64 }):t():contiguous()
    local nc = noncontig(t)
    close(torch.cumulative_trapezoid(t, { dim = 1 }):totable(), torch.cumulative_trapezoid(nc, { dim = 1 }):totable())
    local f = torch.cumulative_trapezoid(y:float())
    assert.are.equal(torch.float32, f.dtype)
    close(R.last, f:totable(), 1e-6)
    local i = torch.cumulative_trapezoid(torch.tensor({ 1, 2, 4 }))
    assert.are.equal(torch.float32, i.dtype)
    close({ 1.5, 4.5 }, i:totable())
    local a = torch.randn(2, 5, { dtype = f64, requires_grad = true })
    local xs = torch.tensor({ 0, 0.5, 2, 2.5, 4 }, { dtype = f64 })
    assert.is_true(torch.autograd.gradcheck(function(v) return torch.cumulative_trapezoid(v, xs) end, { a }))
  end)

  it('gives an empty result for one or no samples, as PyTorch', function()
    assert.are.same({ 2, 0 }, { table.unpack(torch.cumulative_trapezoid(torch.zeros(2, 1)).shape) })
    assert.are.same({ 2, 0 }, { table.unpack(torch.cumulative_trapezoid(torch.zeros(2, 0)).shape) })
  end)

  it('refuses a wrong number of points, a 0-D input, a bad dim and an unknown option', function()
    assert.matches('cumulative_trapezoid: There must be one `x` value for each sample point',
      err_of(torch.cumulative_trapezoid, y, torch.tensor({ 0.0, 1.0 })))
    assert.matches('at least 1 dimension', err_of(torch.cumulative_trapezoid, torch.tensor(3.0)))
    assert.matches('dim 3 is out of range', err_of(torch.cumulative_trapezoid, y, { dim = 3 }))
    assert.matches("unknown option 'dy'", err_of(torch.cumulative_trapezoid, y, { dy = 1 }))
    assert.matches('not both', err_of(torch.cumulative_trapezoid, y, torch.tensor(R.xs), { dx = 1 }))
    assert.matches('x must be a tensor', err_of(torch.trapezoid, y, 'x'))
  end)
end)

describe('torch.igamma and torch.igammac', function()
  local R = REF.igamma
  local a, x = torch.tensor(R.a, { dtype = f64 }), torch.tensor(R.x, { dtype = f64 })

  it("match mpmath's regularized incomplete gamma functions to 1e-12 over Cephes' methods", function()
    close(R.p, torch.igamma(a, x):totable(), 1e-12, 'P')
    close(R.q, torch.igammac(a, x):totable(), 1e-12, 'Q')
    close(R.p, torch.special.gammainc(a, x):totable(), 1e-12, 'gammainc')
    close(R.q, a:igammac(x):totable(), 1e-12, 'x:igammac')
  end)

  it('compute float32 in double, rounded once: the float64 values at the float32 inputs, to float32', function()
    local a32, x32 = a:to(torch.float32), x:to(torch.float32)
    local p32, q32 = torch.igamma(a32, x32), torch.igammac(a32, x32)
    assert.are.equal(torch.float32, p32.dtype)
    close(torch.igamma(a32:double(), x32:double()):totable(), p32:totable(), 1e-7, 'P float32')
    close(torch.igammac(a32:double(), x32:double()):totable(), q32:totable(), 1e-7, 'Q float32')
  end)

  it("match PyTorch's values (to 1e-8: PyTorch's asymptotic series for 20 < a < 200 near x is off by 1e-9)", function()
    close(R.torch_p, torch.igamma(a, x):totable(), 1e-8)
    close(R.torch_q, torch.igammac(a, x):totable(), 1e-8)
  end)

  it('agree with closed forms: P(1, x) = 1 - e^-x, Q(1/2, x) = erfc(sqrt x), P(2, x) = 1 - (1 + x) e^-x', function()
    local xs = torch.tensor({ 1e-3, 0.3, 0.7, 1.0, 1.1, 1.5, 3, 8, 20, 45 }, { dtype = f64 })
    local p1, q12, p2 = torch.igamma(torch.ones_like(xs), xs):totable(),
      torch.igammac(torch.full_like(xs, 0.5), xs):totable(), torch.igamma(torch.full_like(xs, 2), xs):totable()
    local erfc = xs:sqrt():erfc():totable()
    for i, v in ipairs(xs:totable()) do
      close(-math.exp(-v) + 1, p1[i], 1e-14, 'P(1)')
      close(erfc[i], q12[i], 1e-13, 'Q(1/2)')
      close(1 - (1 + v) * math.exp(-v), p2[i], 1e-14, 'P(2)')
    end
  end)

  it("give PyTorch's special values (NaN for negative or NaN arguments, the limits at 0 and infinity)", function()
    local inf, nan = math.huge, 0 / 0
    local sa = torch.tensor({ 0, 0, -1, 1, 1, inf, inf, 1, 2, nan })
    local sx = torch.tensor({ 1, 0, 1, -1, 0, 1, inf, inf, nan, 1 })
    close({ 1, nan, nan, nan, 0, 0, nan, 1, nan, nan }, torch.igamma(sa, sx):totable())
    close({ 0, nan, nan, nan, 1, 1, nan, 0, nan, nan }, torch.igammac(sa, sx):totable())
  end)

  it('broadcast, promote (float32 with float64 gives float64; integers with floats), and take views', function()
    local r = torch.igamma(torch.tensor({ { 1.0 }, { 2.0 } }), torch.tensor({ 1.0, 3.0, 0.5 }))
    assert.are.same({ 2, 3 }, { table.unpack(r.shape) })
    assert.are.equal(torch.float32, r.dtype)
    close(1 - math.exp(-3), r[1][2], 1e-6)
    close(1 - 4 * math.exp(-3), r[2][2], 1e-6)
    assert.are.equal(f64, torch.igamma(torch.tensor({ 1.0 }), torch.tensor({ 1.0 }, { dtype = f64 })).dtype)
    local ri = torch.igamma(torch.tensor({ 1, 2 }), torch.tensor({ 1.0, 3.0 }))
    assert.are.equal(torch.float32, ri.dtype)
    close(1 - 4 * math.exp(-3), ri[2], 1e-6)
    for _, dt in ipairs { torch.float16, torch.bfloat16 } do
      local h = torch.igamma(torch.tensor({ 1, 2 }, { dtype = dt }), torch.tensor({ 1, 2 }, { dtype = dt }))
      assert.are.equal(dt, h.dtype)
      close(1 - math.exp(-1), h[1], 1e-2)
    end
    local A = torch.tensor({ R.a, R.x }, { dtype = f64 }):t():contiguous():t() -- 2 x n, columns apart
    local nc = noncontig(torch.tensor({ R.a, R.x }, { dtype = f64 }):t():contiguous())
    close(R.p, torch.igamma(nc:select(2, 1), nc:select(2, 2)):totable(), 1e-12)
    close(R.q, torch.igammac(A[1], A[2]):totable(), 1e-12)
  end)

  it('work in place, with PyTorch’s errors for a shape or dtype the input cannot hold', function()
    local t = a:clone()
    assert.are.equal(t, t:igamma_(x))
    close(R.p, t:totable(), 1e-12)
    t = a:clone()
    t:igammac_(x)
    close(R.q, t:totable(), 1e-12)
    assert.matches("doesn't match the broadcast shape", err_of(function() return torch.ones(3):igamma_(torch.ones(2, 3)) end))
    assert.matches("can't be cast", err_of(function() return torch.ones(3, { dtype = torch.int64 }):igamma_(torch.ones(3)) end))
  end)

  it('pass the gradient in x (x^(a-1) e^-x / Gamma(a), negated for Q) and refuse one in a', function()
    local aa = torch.tensor({ 0.5, 2, 7, 30 }, { dtype = f64 })
    local xx = torch.tensor({ 0.3, 2.5, 6, 28 }, { dtype = f64, requires_grad = true })
    assert.is_true(torch.autograd.gradcheck(function(v) return torch.igamma(aa, v) end, { xx }))
    assert.is_true(torch.autograd.gradcheck(function(v) return torch.igammac(aa, v) end, { xx }))
    -- broadcast x: its gradient summed
    local xb = torch.tensor({ 1.5 }, { dtype = f64, requires_grad = true })
    torch.igamma(aa, xb):sum():backward()
    local want = 0
    for _, av in ipairs(aa:totable()) do
      want = want + math.exp((av - 1) * math.log(1.5) - 1.5 - torch.tensor(av, { dtype = f64 }):lgamma():item())
    end
    close(want, xb.grad[1], 1e-12)
    local ag = torch.tensor({ 2.0 }, { requires_grad = true })
    local y = torch.igamma(ag, torch.tensor({ 3.0 }))
    assert.matches("the derivative for 'igamma: input' is not implemented", err_of(function() y:backward() end))
  end)

  it('refuse integer-only inputs, non-tensors and shapes that do not broadcast', function()
    assert.matches('igamma: not implemented for int64', err_of(torch.igamma, torch.tensor({ 1, 2 }), torch.tensor({ 1, 2 })))
    assert.matches('igammac: other must be a tensor', err_of(torch.igammac, torch.ones(2), 2))
    assert.matches('igamma: the input must be a tensor', err_of(torch.igamma, 1, torch.ones(2)))
    assert.matches('igamma: shape mismatch', err_of(torch.igamma, torch.ones(2), torch.ones(3)))
  end)
end)

describe('torch.index_reduce', function()
  local R = REF.index_reduce
  local x, src = torch.tensor(R.x, { dtype = f64 }), torch.tensor(R.source, { dtype = f64 })
  local idx = torch.tensor(R.index)

  it("gives PyTorch's values for each reduction, with and without include_self", function()
    for _, c in ipairs(R.cases) do
      local what = c.reduce .. (c.include_self and '' or ' (include_self false)')
      close(c.out, x:index_reduce(2, idx, src, c.reduce, { include_self = c.include_self }):totable(), 1e-12, what)
      close(c.out, torch.index_reduce(x, -2, idx, src, c.reduce, { include_self = c.include_self }):totable(), 1e-12, what)
    end
  end)

  it("agrees with a plain-Lua loop for 'mean' (int64: rounded down, as PyTorch)", function()
    local xv, sv, iv = x:totable(), src:totable(), R.index
    local got = x:index_reduce(2, idx, src, 'mean'):totable()
    for i = 1, 3 do
      for k = 1, 2 do
        for j = 1, 4 do
          local s, n = xv[i][j][k], 1
          for m, t in ipairs(iv) do
            if t == j then s, n = s + sv[i][m][k], n + 1 end
          end
          close(s / n, got[i][j][k], 1e-12)
        end
      end
    end
    local xi, si = torch.tensor(R.int_x), torch.tensor(R.int_source)
    local r = xi:index_reduce(2, torch.tensor(R.int_index), si, 'mean')
    assert.are.equal(torch.int64, r.dtype)
    assert.are.same(R.int_mean, r:totable())
    assert.are.same(R.int_mean_noself, xi:index_reduce(2, torch.tensor(R.int_index), si, 'mean', { include_self = false }):totable())
  end)

  it('takes every dtype but bool, int32 indices, non-contiguous operands, 0-D self, and works in place', function()
    local c = R.cases[1] -- prod with include_self
    for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16 } do
      local r = x:to(dt):index_reduce(2, idx:int(), src:to(dt), 'prod')
      assert.are.equal(dt, r.dtype)
      close(c.out, r:double():totable(), dt == torch.float32 and 1e-5 or 5e-2)
    end
    local ix, is = torch.tensor({ { 1, 5 }, { -3, 2 } }), torch.tensor({ { 2, 4, 3 }, { 1, -1, 7 } })
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8 } do
      local a, b = ix:to(dt), is:to(dt)
      if dt == torch.uint8 then a, b = a:abs(), b:abs() end
      local want = { a:totable()[1][1] * b:totable()[1][1] * b:totable()[1][3], a:totable()[1][2] * b:totable()[1][2] }
      local r = a:index_reduce(2, torch.tensor({ 1, 2, 1 }), b, 'prod')
      assert.are.equal(dt, r.dtype)
      assert.are.same(want, r:totable()[1])
      assert.are.equal(math.max(a:totable()[2][1], b:totable()[2][1], b:totable()[2][3]),
        a:index_reduce(2, torch.tensor({ 1, 2, 1 }), b, 'amax'):totable()[2][1])
    end
    -- non-contiguous self and source: the same values
    local xn = x:permute(3, 2, 1):contiguous():permute(3, 2, 1)
    local sn = src:permute(3, 2, 1):contiguous():permute(3, 2, 1)
    assert.is_false(xn:is_contiguous())
    assert.is_false(sn:is_contiguous())
    for _, c2 in ipairs(R.cases) do
      close(c2.out, xn:index_reduce(2, idx, sn, c2.reduce, { include_self = c2.include_self }):totable(), 1e-12)
    end
    assert.are.equal(30, torch.tensor(5.0):index_reduce(1, torch.tensor({ 1, 1 }), torch.tensor({ 2.0, 3.0 }), 'prod'):item())
    local t = x:clone()
    assert.are.equal(t, t:index_reduce_(2, idx, src, 'amin', { include_self = false }))
    close(R.cases[8].out, t:totable(), 1e-12)
  end)

  it("passes scatter_reduce's gradients (gradcheck) to self and source", function()
    local a = torch.tensor(R.x, { dtype = f64, requires_grad = true })
    local b = torch.tensor(R.source, { dtype = f64, requires_grad = true })
    for _, reduce in ipairs { 'prod', 'mean', 'amax', 'amin' } do
      for _, inc in ipairs { true, false } do
        assert.is_true(torch.autograd.gradcheck(function(p, q)
          return p:index_reduce(2, idx, q, reduce, { include_self = inc })
        end, { a, b }), reduce)
      end
    end
  end)

  it('refuses a bad reduction, bool, a float or 2-D index, indices out of range, a shape or dtype mismatch', function()
    assert.matches('Expected reduce to be one of prod, mean, amax or amin but got sum',
      err_of(x.index_reduce, x, 2, idx, src, 'sum'))
    assert.matches('index_reduce: not implemented for bool',
      err_of(torch.index_reduce, torch.ones(2, { dtype = torch.bool }), 1, torch.tensor({ 1 }), torch.ones(1, { dtype = torch.bool }), 'prod'))
    assert.matches('expected an int64 or int32 index tensor, got float32', err_of(x.index_reduce, x, 2, idx:float(), src, 'prod'))
    assert.matches('index should have dimension 1 or 0', err_of(x.index_reduce, x, 2, idx:reshape(5, 1), src, 'prod'))
    assert.matches('index 5 is out of bounds for dimension 2 with size 4',
      err_of(x.index_reduce, x, 2, torch.tensor({ 1, 2, 3, 4, 5 }), src, 'prod'))
    assert.matches('index 0 is out of bounds', err_of(x.index_reduce, x, 2, torch.tensor({ 0, 2, 3, 4, 1 }), src, 'prod'))
    assert.matches('does not fit self of shape', err_of(x.index_reduce, x, 2, torch.tensor({ 1, 2 }), src, 'prod'))
    assert.matches('same dtype, but got %(self%) float64 and %(source%) float32',
      err_of(x.index_reduce, x, 2, idx, src:float(), 'prod'))
    assert.matches("unknown option 'include'", err_of(x.index_reduce, x, 2, idx, src, 'prod', { include = true }))
    assert.matches('dim 4 is out of range', err_of(x.index_reduce, x, 4, idx, src, 'prod'))
  end)
end)

describe('torch.frombuffer and torch.from_file', function()
  -- little-endian packing of each dtype by string.pack (x86 and the other hosts lutorch runs on)
  local packs = {
    { torch.float32, '<f', { 1.5, -2.25, 3 * 2 ^ 40 } }, { f64, '<d', { 1.5, -2.25, 1e300 } },
    { torch.int64, '<i8', { 1, -2, math.maxinteger } }, { torch.int32, '<i4', { 7, -8, 2147483647 } },
    { torch.int16, '<i2', { 7, -8, 32767 } }, { torch.int8, '<i1', { 7, -8, 127 } },
    { torch.uint8, '<I1', { 7, 200, 255 } },
  }
  local function packed(fmt, values)
    local parts = {}
    for i, v in ipairs(values) do parts[i] = string.pack(fmt, v) end
    return table.concat(parts)
  end

  it("reads each dtype's bytes (string.pack's), with count and offset", function()
    for _, p in ipairs(packs) do
      local dt, fmt, values = p[1], p[2], p[3]
      local s = packed(fmt, values)
      local t = torch.frombuffer(s, { dtype = dt })
      assert.are.equal(dt, t.dtype)
      assert.are.same(values, t:totable())
      local es = #string.pack(fmt, 0)
      assert.are.same({ values[2] }, torch.frombuffer('xyz' .. s, { dtype = dt, offset = 3 + es, count = 1 }):totable())
    end
    -- float16 and bfloat16 by their bit patterns: 1.0, -2.0
    assert.are.same({ 1, -2 }, torch.frombuffer('\x00\x3c\x00\xc0', { dtype = torch.float16 }):totable())
    assert.are.same({ 1, -2 }, torch.frombuffer('\x80\x3f\x00\xc0', { dtype = torch.bfloat16 }):totable())
    -- bool: any non-zero byte is true
    local b = torch.frombuffer('\0\1\7', { dtype = torch.bool })
    assert.are.same({ false, true, true }, b:totable())
    assert.are.same({ 0, 1, 1 }, b:to(torch.uint8):totable()) -- stored as 1, not 7
    assert.are.equal(2, b:sum():item())
  end)

  it('copies the bytes (a Lua string cannot be shared), and takes requires_grad', function()
    local s = packed('<d', { 1, 2 })
    local a = torch.frombuffer(s, { dtype = f64 })
    a:fill_(9)
    assert.are.same({ 1, 2 }, torch.frombuffer(s, { dtype = f64 }):totable())
    local g = torch.frombuffer(s, { dtype = f64, requires_grad = true })
    assert.is_true(g.requires_grad)
    local y = (g * 3):sum()
    y:backward()
    assert.are.same({ 3, 3 }, g.grad:totable())
  end)

  it("refuses PyTorch's bad calls with its messages", function()
    local s = '\1\2\3\4\5\6\7\8\9\10'
    assert.matches('buffer length %(10 bytes%) after offset %(0 bytes%) must be a multiple of element size %(4%)',
      err_of(torch.frombuffer, s, { dtype = torch.int32 }))
    assert.matches('requested buffer length %(3 %* 4 bytes%) after offset %(1 bytes%) must not be greater than actual buffer length %(10 bytes%)',
      err_of(torch.frombuffer, s, { dtype = torch.int32, offset = 1, count = 3 }))
    assert.matches('offset %(10 bytes%) must be non%-negative and no greater than buffer length %(10 bytes%) minus 1',
      err_of(torch.frombuffer, s, { dtype = torch.int32, offset = 10 }))
    assert.matches('offset %(%-1 bytes%)', err_of(torch.frombuffer, s, { dtype = torch.uint8, offset = -1 }))
    assert.matches('both buffer length %(10%) and count %(0%) must not be 0', err_of(torch.frombuffer, s, { dtype = torch.int8, count = 0 }))
    assert.matches('both buffer length %(0%)', err_of(torch.frombuffer, '', { dtype = torch.int8 }))
    assert.matches('the dtype option is required', err_of(torch.frombuffer, s))
    assert.matches('expected a string of bytes, got table', err_of(torch.frombuffer, { 1, 2 }, { dtype = torch.int8 }))
    assert.matches("unknown option 'size'", err_of(torch.frombuffer, s, { dtype = torch.int8, size = 2 }))
  end)

  it('reads the first size elements of a file, as the file holds them', function()
    local name = os.tmpname()
    local f = assert(io.open(name, 'wb'))
    f:write(packed('<i4', { 5, -6, 7, 8 }), 'tail')
    f:close()
    local ok, e = pcall(function()
      assert.are.same({ 5, -6, 7 }, torch.from_file(name, false, 3, { dtype = torch.int32 }):totable())
      assert.are.same({ 5, -6, 7, 8 }, torch.from_file(name, { size = 4, dtype = torch.int32 }):totable())
      local fl = torch.from_file(name, nil, 2)
      assert.are.equal(torch.float32, fl.dtype) -- the default dtype
      assert.are.same({ 0, 0 }, { torch.from_file(name):numel(), torch.from_file(name, false, 0, { dtype = f64 }):numel() })
      assert.are.same({ 5, 0, 0, 0, 0xfa }, torch.from_file(name, { size = 5, dtype = torch.uint8 }):totable())
      assert.matches('size %(20 bytes%) is smaller than the required size %(24 bytes%)',
        err_of(torch.from_file, name, false, 3, { dtype = f64 }))
      assert.matches('shared = true .* is not supported', err_of(torch.from_file, name, true, 1))
      assert.matches('size must be a non%-negative integer', err_of(torch.from_file, name, false, -1))
      assert.matches('shared must be a boolean', err_of(torch.from_file, name, 1, 1))
      assert.matches("unknown option 'shared'", err_of(torch.from_file, name, false, 1, { shared = true }))
      assert.matches('unable to open file <' .. name .. 'x> in read%-only mode', err_of(torch.from_file, name .. 'x', false, 1))
    end)
    os.remove(name)
    assert(ok, e)
  end)
end)

describe('torch.histogramdd', function()
  local R = REF.histogramdd
  local pts, wts = torch.tensor(R.points, { dtype = f64 }), torch.tensor(R.weight, { dtype = f64 })

  local function check(ref, hist, edges, tol)
    close(ref.hist, hist:totable(), tol or 1e-12, 'hist')
    assert.are.equal(#ref.edges, #edges)
    for d = 1, #edges do close(ref.edges[d], edges[d]:totable(), tol or 1e-12, 'edges ' .. d) end
  end

  it("gives PyTorch's histograms and edges: counts, one count for all dims, a range, weights, density, edge tensors", function()
    check(R.counts, torch.histogramdd(pts, { 3, 4, 2 }))
    check(R.same, torch.histogramdd(pts, 3))
    check(R.ranged, torch.histogramdd(pts, { 2, 3, 2 }, { range = { -1, 1, -0.5, 0.5, 0, 2 } }))
    check(R.weighted, torch.histogramdd(pts, { 3, 4, 2 }, { weight = wts }))
    check(R.density, pts:histogramdd({ 3, 4, 2 }, { weight = wts, density = true }))
    local e = { torch.tensor({ -2, -0.5, 0, 0.5, 2.5 }, { dtype = f64 }), torch.tensor({ -1, 0, 1 }, { dtype = f64 }),
      torch.tensor({ -3, -1, 1, 3 }, { dtype = f64 }) }
    check(R.edges, torch.histogramdd(pts, e))
    local h32, e32 = torch.histogramdd(pts:float(), { 5, 2, 3 })
    assert.are.equal(torch.float32, h32.dtype)
    assert.are.equal(torch.float32, e32[1].dtype)
    check(R.float32, h32, e32, 1e-6)
  end)

  it('counts like a plain-Lua loop over the points (each bin holds its left edge, the last also its right)', function()
    local h, edges = torch.histogramdd(pts, { 3, 4, 2 })
    local want = {}
    for i = 1, 3 do
      want[i] = {}
      for j = 1, 4 do want[i][j] = { 0, 0 } end
    end
    local ev = {}
    for d = 1, 3 do ev[d] = edges[d]:totable() end
    local function bin(v, e)
      for k = 1, #e - 1 do
        if v >= e[k] and (v < e[k + 1] or k == #e - 1 and v <= e[k + 1]) then return k end
      end
    end
    for _, batch in ipairs(pts:totable()) do
      for _, p in ipairs(batch) do
        local b1, b2, b3 = bin(p[1], ev[1]), bin(p[2], ev[2]), bin(p[3], ev[3])
        want[b1][b2][b3] = want[b1][b2][b3] + 1
      end
    end
    assert.are.same(want, h:totable())
    assert.are.equal(60, h:sum():item())
    -- density integrates to 1 over the bins' volumes
    local d, de = torch.histogramdd(pts, { 3, 4, 2 }, { density = true })
    local vol = de[1]:diff():reshape(3, 1, 1) * de[2]:diff():reshape(1, 4, 1) * de[3]:diff():reshape(1, 1, 2)
    close(1, (d * vol):sum():item(), 1e-12)
  end)

  it('takes non-contiguous points and weights; an empty input bins over [0, 1]', function()
    local nc = pts:transpose(1, 2):contiguous():transpose(1, 2)
    local wn = wts:t():contiguous():t()
    assert.is_false(nc:is_contiguous())
    assert.is_false(wn:is_contiguous())
    check(R.weighted, torch.histogramdd(nc, { 3, 4, 2 }, { weight = wn }))
    local h, e = torch.histogramdd(torch.zeros(0, 2), { 2, 2 })
    assert.are.same({ { 0, 0 }, { 0, 0 } }, h:totable())
    assert.are.same({ 0, 0.5, 1 }, e[2]:totable())
  end)

  it('refuses integer input, a 1-D input, wrong bins, range, weight and options', function()
    assert.matches('histogramdd: expected a float32 or float64 input, got int64', err_of(torch.histogramdd, pts:long(), 2))
    assert.matches('input tensor should have at least 2 dimensions', err_of(torch.histogramdd, torch.ones(3), 2))
    assert.matches('bins should have one entry for each of the 3 dimensions, got 2', err_of(torch.histogramdd, pts, { 2, 2 }))
    assert.matches('bins must be > 0, got 0 for dimension 2', err_of(torch.histogramdd, pts, { 2, 0, 2 }))
    assert.matches('bins is required', err_of(torch.histogramdd, pts))
    assert.matches('range should have 6 elements, but got 2', err_of(torch.histogramdd, pts, 2, { range = { 0, 1 } }))
    assert.matches('min should not exceed max, but got min 1 max 0 for dimension 3',
      err_of(torch.histogramdd, pts, 2, { range = { 0, 1, 0, 1, 1, 0 } }))
    assert.matches('weight should have the shape of input without its last dimension',
      err_of(torch.histogramdd, pts, 2, { weight = torch.ones(60, { dtype = f64 }) }))
    assert.matches('bin edges must be non%-decreasing for dimension 1',
      err_of(torch.histogramdd, pts:narrow(3, 1, 1), { torch.tensor({ 1, 0 }, { dtype = f64 }) }))
    assert.matches('same dtype, got float64 and float32 for dimension 1',
      err_of(torch.histogramdd, pts:narrow(3, 1, 1), { torch.tensor({ 0.0, 1.0 }) }))
    assert.matches("unknown option 'bins'", err_of(torch.histogramdd, pts, 2, { bins = 2 }))
  end)
end)

describe('torch.svd_lowrank and torch.pca_lowrank', function()
  local R = REF.lowrank
  local A, A3, Ab = torch.tensor(R.A, { dtype = f64 }), torch.tensor(R.A3, { dtype = f64 }), torch.tensor(R.Ab, { dtype = f64 })

  -- the columns of the 3 non-zero singular values, and S (its noise entries to 1e-12 absolute)
  local function check(ref, U, S, V, tol)
    tol = tol or 1e-10
    close(ref.U, U:narrow(-1, 1, 3):totable(), tol, 'U')
    close(ref.V, V:narrow(-1, 1, 3):totable(), tol, 'V')
    close(ref.S, S:totable(), tol, 'S')
  end
  local function seeded(f, ...)
    torch.manual_seed(1)
    return f(...)
  end

  it("gives PyTorch's U, S, V after the same seed (each branch of its algorithm, a batch, M)", function()
    check(R.svd_q4, seeded(torch.svd_lowrank, A, { q = 4 }))
    check(R.svd_q4, seeded(torch.svd_lowrank, A, 4))
    check(R.svd_t, seeded(torch.svd_lowrank, A:t(), { q = 4, niter = 1 }))
    check(R.svd_n3, seeded(torch.svd_lowrank, A3, { q = 3 }))
    check(R.svd_batch, seeded(torch.svd_lowrank, Ab, { q = 4 }))
    local M = torch.tensor(R.M, { dtype = f64 })
    check(R.svd_M, seeded(torch.svd_lowrank, A, { q = 5, M = M:expand(7, 5) }))
    check(R.svd_M, seeded(torch.svd_lowrank, A, { q = 5, M = M })) -- (1, n) broadcast
    check(R.pca, seeded(torch.pca_lowrank, A))
    check(R.pca_nocenter, seeded(torch.pca_lowrank, A, { q = 4, center = false }))
  end)

  it('reconstructs a low-rank matrix, its S the full SVD\'s, U and V orthonormal (non-contiguous A, float32)', function()
    torch.manual_seed(3)
    local B = torch.randn(30, 4, { dtype = f64 }):matmul(torch.randn(4, 20, { dtype = f64 }))
    local Bn = noncontig(B)
    local U, S, V = torch.svd_lowrank(Bn, { q = 6 })
    assert.are.same({ 30, 6 }, { table.unpack(U.shape) })
    assert.are.same({ 20, 6 }, { table.unpack(V.shape) })
    close(B:totable(), (U * S):matmul(V:t()):totable(), 1e-10)
    local full = torch.linalg.svdvals(B)
    close(full:narrow(1, 1, 4):totable(), S:narrow(1, 1, 4):totable(), 1e-10)
    close(torch.eye(6, { dtype = f64 }):totable(), U:t():matmul(U):totable(), 1e-10)
    close(torch.eye(6, { dtype = f64 }):totable(), V:t():matmul(V):totable(), 1e-10)
    local U32, S32, V32 = torch.svd_lowrank(B:float(), { q = 5 })
    assert.are.equal(torch.float32, S32.dtype)
    close(full:narrow(1, 1, 4):totable(), S32:narrow(1, 1, 4):double():totable(), 1e-4)
    close(B:totable(), (U32 * S32):matmul(V32:t()):double():totable(), 1e-4)
  end)

  it("pca_lowrank's S^2 / (m - 1) are the covariance's eigenvalues and V its principal directions", function()
    torch.manual_seed(4)
    local X = torch.randn(50, 3, { dtype = f64 }):matmul(torch.randn(3, 5, { dtype = f64 })) + 7
    local _, S, V = torch.pca_lowrank(X, { q = 3 })
    local Xc = X - X:mean(1, true)
    local cov = Xc:t():matmul(Xc) / 49
    local evals = torch.linalg.eigvalsh(cov) -- ascending
    close({ evals[5], evals[4], evals[3] }, (S * S / 49):totable(), 1e-10)
    -- cov v = lambda v for each direction
    close((V * (S * S / 49)):totable(), cov:matmul(V):totable(), 1e-10)
  end)

  it('refuses bad q, niter, M, dtypes and options', function()
    assert.matches('q%(=6%) must be non%-negative integer and not greater than min%(m, n%)=5',
      err_of(torch.svd_lowrank, A, { q = 6 }))
    assert.matches('q%(=%-1%)', err_of(torch.pca_lowrank, A, { q = -1 }))
    assert.matches('niter%(=%-1%) must be non%-negative integer', err_of(torch.pca_lowrank, A, { niter = -1 }))
    assert.matches('expected a float32 or float64 matrix, got int64', err_of(torch.svd_lowrank, A:long()))
    assert.matches('A must have at least 2 dimensions', err_of(torch.pca_lowrank, torch.ones(3)))
    assert.matches('M must have the dtype of A', err_of(torch.svd_lowrank, A, { M = torch.zeros(1, 5) }))
    assert.matches('must broadcast to the shape of A', err_of(torch.svd_lowrank, A, { M = torch.zeros(2, 7, 5, { dtype = f64 }) }))
    assert.matches('center must be a boolean', err_of(torch.pca_lowrank, A, { center = 1 }))
    assert.matches("unknown option 'rank'", err_of(torch.svd_lowrank, A, { rank = 2 }))
  end)
end)

describe('torch.segment_reduce', function()
  local R = REF.segment_reduce
  local d1, l1 = torch.tensor(R.data, { dtype = f64 }), torch.tensor(R.lengths)
  local d3, l3 = torch.tensor(R.data3, { dtype = f64 }), torch.tensor(R.lengths3)

  it("gives PyTorch's values for each reduction: empty segments, initial, rows of lengths along axis 2", function()
    for _, c in ipairs(R.cases) do
      close(c.plain, torch.segment_reduce(d1, c.reduce, { lengths = l1 }):totable(), 1e-12, c.reduce)
      close(c.initial, torch.segment_reduce(d1, c.reduce, { lengths = l1, initial = 0.5 }):totable(), 1e-12, c.reduce)
      close(c.rows, torch.segment_reduce(d3, c.reduce, { lengths = l3, axis = 2 }):totable(), 1e-12, c.reduce)
      -- offsets: 1-based starts and one past the end
      close(c.plain, torch.segment_reduce(d1, c.reduce, { offsets = torch.tensor({ 1, 3, 3, 6, 7 }) }):totable(), 1e-12)
      close(c.rows, torch.segment_reduce(d3, c.reduce,
        { offsets = torch.tensor({ { 1, 4, 4, 8 }, { 1, 2, 7, 8 } }), axis = -2 }):totable(), 1e-12)
    end
  end)

  it('agrees with plain-Lua sums over the segments, on non-contiguous float32 data, and passes gradients', function()
    local data = torch.tensor({ { 1, 2, 3, 4, 5 }, { 6, 7, 8, 9, 10 } }):float()
    local nc = noncontig(data:t():contiguous()) -- 5 x 2, columns apart
    local got = torch.segment_reduce(nc, 'sum', { lengths = torch.tensor({ 2, 3 }) })
    assert.are.equal(torch.float32, got.dtype)
    assert.are.same({ { 1 + 2, 6 + 7 }, { 3 + 4 + 5, 8 + 9 + 10 } }, got:totable())
    local x = torch.tensor(R.data, { dtype = f64, requires_grad = true })
    for _, r in ipairs { 'max', 'mean', 'min', 'sum', 'prod' } do
      assert.is_true(torch.autograd.gradcheck(function(v)
        return torch.segment_reduce(v, r, { lengths = torch.tensor({ 2, 3, 1 }) })
      end, { x }), r)
    end
    -- max shares the gradient among a segment's equal maxima, as PyTorch
    local t = torch.tensor({ 1.0, 5, 3, 3, 2, 2 }, { requires_grad = true })
    torch.segment_reduce(t, 'max', { lengths = torch.tensor({ 2, 4 }) }):sum():backward()
    assert.are.same({ 0, 1, 0.5, 0.5, 0, 0 }, t.grad:totable())
  end)

  it('refuses bad reductions, integer data, lengths that do not fit, and both or neither of lengths and offsets', function()
    assert.matches("reduce must be one of 'max', 'mean', 'min', 'sum' or 'prod', got foo",
      err_of(torch.segment_reduce, d1, 'foo', { lengths = l1 }))
    assert.matches('not implemented for int64', err_of(torch.segment_reduce, d1:long(), 'sum', { lengths = l1 }))
    assert.matches('give exactly one of lengths and offsets', err_of(torch.segment_reduce, d1, 'sum'))
    assert.matches('give exactly one of lengths and offsets',
      err_of(torch.segment_reduce, d1, 'sum', { lengths = l1, offsets = torch.tensor({ 1, 7 }) }))
    assert.matches('indices based reduction is not supported', err_of(torch.segment_reduce, d1, 'sum', { indices = l1 }))
    assert.matches('must add up to data:size%(1%) = 6', err_of(torch.segment_reduce, d1, 'sum', { lengths = torch.tensor({ 2, 2 }) }))
    assert.matches('negative length', err_of(torch.segment_reduce, d1, 'sum', { lengths = torch.tensor({ 7, -1 }) }))
    assert.matches('lengths must be an int64 or int32 tensor, got float32',
      err_of(torch.segment_reduce, d1, 'sum', { lengths = torch.tensor({ 6.0 }) }))
    assert.matches('expected axis %(2%) to be the last dimension of lengths, which has 1',
      err_of(torch.segment_reduce, d3, 'sum', { lengths = torch.tensor({ 3, 4 }), axis = 2 }))
    assert.matches('offsets must start at 1', err_of(torch.segment_reduce, d1, 'sum', { offsets = torch.tensor({ 0, 2, 6 }) }))
    -- unsafe: lengths that fall short leave the rest out
    assert.are.same({ R.data[1] + R.data[2] }, torch.segment_reduce(d1, 'sum', { lengths = torch.tensor({ 2 }), unsafe = true }):totable())
  end)
end)
