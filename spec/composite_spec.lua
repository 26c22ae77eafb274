-- The operations composed in Lua (lua/torch/composite.lua, shapes.lua, statistics.lua, builders.lua): values against plain-Lua references
-- computed here element by element, on contiguous and transposed inputs and over the dtypes each
-- accepts; gradients against finite differences (gradcheck, float64); the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local mat, map, leaf = H.mat, H.map, H.leaf
local gradcheck = torch.autograd.gradcheck

describe('composite elementwise functions', function()
  local v = function(i, j) return (i * 7 + j * 3) % 11 / 4 - 1.2 end
  local w = function(i, j) return (i * 5 + j) % 7 / 3 - 0.9 end
  local cases = {
    { 'lerp', function(a, b) return a:lerp(b, 0.3) end, function(a, b) return a + 0.3 * (b - a) end },
    { 'lerp (weight near 1)', function(a, b) return a:lerp(b, 0.8) end, function(a, b) return b - (b - a) * 0.2 end },
    { 'addcmul', function(a, b) return a:addcmul(a, b, { value = 0.5 }) end, function(a, b) return a + 0.5 * a * b end },
    { 'addcdiv', function(a, b) return a:addcdiv(a, b + 3, { value = 2 }) end, function(a, b) return a + 2 * a / (b + 3) end },
    { 'logaddexp', function(a, b) return torch.logaddexp(a, b) end, function(a, b) return math.log(math.exp(a) + math.exp(b)) end },
    { 'fmax', function(a, b) return torch.fmax(a, b) end, function(a, b) return math.max(a, b) end },
    { 'fmin', function(a, b) return torch.fmin(a, b) end, function(a, b) return math.min(a, b) end },
    { 'deg2rad', function(a) return a:deg2rad() end, function(a) return a * math.pi / 180 end },
    { 'rad2deg', function(a) return a:rad2deg() end, function(a) return a * 180 / math.pi end },
    { 'sinc', function(a) return a:sinc() end, function(a) return a == 0 and 1 or math.sin(math.pi * a) / (math.pi * a) end },
    { 'asinh', function(a) return a:asinh() end, function(a) local s = a < 0 and -1 or 1; a = math.abs(a); return s * math.log(a + math.sqrt(a * a + 1)) end },
    { 'atanh', function(a) return (a / 3):atanh() end, function(a) a = a / 3; return 0.5 * math.log((1 + a) / (1 - a)) end },
    { 'acosh', function(a) return (a:abs() + 1):acosh() end, function(a) a = math.abs(a) + 1; return math.log(a + math.sqrt(a * a - 1)) end },
    { 'logit', function(a) return (a:abs() / 3 + 0.1):logit() end, function(a) local p = math.abs(a) / 3 + 0.1; return math.log(p / (1 - p)) end },
    { 'floor_divide', function(a, b) return a:floor_divide(b + 2) end, function(a, b) return math.floor(a / (b + 2)) end },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. ' (float32 and float64, contiguous and transposed)', function()
      for _, dt in ipairs { torch.float64, torch.float32 } do
        local a, at, ta = mat(3, 4, v, dt)
        local b, bt, tb = mat(3, 4, w, dt)
        local want = map(ta, c[3], tb)
        local tol = dt == torch.float64 and 1e-12 or 3e-6
        H.assert_values(c[2](a, b), want, tol, c[1])
        H.assert_values(c[2](at, bt), want, tol, c[1] .. ' transposed')
      end
    end)
  end

  it('special values: logaddexp of equal infinities, xlogy at 0, nan_to_num, fmax with NaN, sinc at 0', function()
    local inf, nan = math.huge, 0 / 0
    H.assert_values(torch.logaddexp(torch.tensor({ -inf, inf, 1000.0 }), torch.tensor({ -inf, inf, 1000.0 })),
      { -inf, inf, 1000 + math.log(2) }, 1e-6)
    H.assert_values(torch.xlogy(torch.tensor({ 0.0, 0.0, 2.0 }), torch.tensor({ 0.0, nan, 3.0 })), { 0, nan, 2 * math.log(3) }, 1e-6)
    H.assert_values(torch.nan_to_num(torch.tensor({ nan, inf, -inf, 1.5 })), { 0, 3.4028234663852886e38, -3.4028234663852886e38, 1.5 })
    H.assert_values(torch.nan_to_num(torch.tensor({ nan, inf, -inf }, { dtype = torch.float64 }), { nan = 1, posinf = 2, neginf = -2 }), { 1, 2, -2 })
    H.assert_values(torch.nan_to_num(torch.tensor({ 1, 2 })), { 1, 2 })
    H.assert_values(torch.fmax(torch.tensor({ nan, 1.0, nan }), torch.tensor({ 2.0, nan, nan })), { 2, 1, nan })
    H.assert_values(torch.fmin(torch.tensor({ nan, 1.0 }), torch.tensor({ 2.0, 0.5 })), { 2, 0.5 })
    H.assert_values(torch.tensor({ -1.5, 0.0, 2.0 }):heaviside(torch.tensor({ 0.5 })), { 0, 0.5, 1 })
    H.assert_values(torch.tensor({ -1.0, -0.0, 0.0, 2.0 }):signbit(), { true, true, false, false })
    H.assert_values(torch.tensor({ -3, 0, 2 }):signbit(), { true, false, false })
    H.assert_values(torch.tensor({ inf, -inf, 1.0 }):isposinf(), { true, false, false })
    H.assert_values(torch.tensor({ inf, -inf, 1.0 }):isneginf(), { false, true, false })
    H.assert_values(torch.tensor({ 1e-8 }, { dtype = torch.float32 }):asinh(), { 1e-8 }, 1e-6)
    H.assert_values(torch.tensor({ 1e-8 }, { dtype = torch.float32 }):atanh(), { 1e-8 }, 1e-6)
  end)

  it('floor_divide and // on integers round toward minus infinity exactly, for every integer dtype', function()
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8 } do
      local a = torch.tensor({ 7, -7, 7, -7, 0, 100 }, { dtype = dt })
      local b = torch.tensor({ 2, 2, -2, -2, 3, 7 }, { dtype = dt })
      local q = a // b
      assert.are.equal(dt, q.dtype)
      H.assert_values(q, { 3, -4, -4, 3, 0, 14 })
    end
    H.assert_values(torch.tensor({ 7, -7 }) // 2, { 3, -4 })
    H.assert_values(7 // torch.tensor({ 2, -2 }), { 3, -4 })
    local big = 2 ^ 52 + 1
    H.assert_values(torch.tensor({ math.tointeger(big) }) // 1, { big })
    H.assert_values(torch.tensor({ 7.5, -7.5 }) // 2, { 3, -4 })
    H.raises(function() return torch.tensor({ 1, 2 }) // torch.tensor({ 1, 0 }) end, 'floor_divide', 'division by zero')
  end)

  it('pass gradients (finite differences)', function()
    torch.manual_seed(4)
    local fns = {
      function(a, b) return a:lerp(b, 0.3) end,
      function(a, b) return a:lerp(b, b:sigmoid()) end,
      function(a, b) return a:addcmul(a, b, { value = 0.5 }) end,
      function(a, b) return a:addcdiv(a, b, { value = 2 }) end,
      function(a, b) return torch.logaddexp(a, b) end,
      function(a, b) return torch.xlogy(a, b) end,
      function(a) return a:sinc() end,
      function(a) return a:asinh() end,
      function(a) return (a / 2):atanh() end,
      function(a) return (a + 1):acosh() end,
      function(a) return (a / 2):logit() end,
    }
    for k, f in ipairs(fns) do
      assert.is_true(gradcheck(f, { leaf({ 2, 3 }), leaf({ 2, 3 }) }), 'function ' .. k)
    end
  end)
end)

describe('composite products', function()
  it('outer, ger, inner, vdot, kron against loops', function()
    local a = torch.tensor({ 1.0, 2, 3 })
    local b = torch.tensor({ 4.0, 5 })
    H.assert_values(torch.outer(a, b), { { 4, 5 }, { 8, 10 }, { 12, 15 } })
    H.assert_values(a:ger(b), { { 4, 5 }, { 8, 10 }, { 12, 15 } })
    H.assert_values(torch.inner(a, a), { 14 })
    local m, mt = mat(2, 3, function(i, j) return i + j * 0.5 end)
    local n = mat(4, 3, function(i, j) return i - j end)
    local want = {}
    for i = 1, 2 do
      want[i] = {}
      for j = 1, 4 do
        local s = 0
        for k = 1, 3 do s = s + (i + k * 0.5) * (j - k) end
        want[i][j] = s
      end
    end
    H.assert_values(torch.inner(m, n), want, 1e-12)
    H.assert_values(torch.inner(mt, n), want, 1e-12)
    H.assert_values(torch.vdot(a, a), { 14 })
    local x, xt = mat(2, 2, function(i, j) return i * 2 + j end)
    local y = mat(2, 3, function(i, j) return i - j * 3 end)
    local k = {}
    for i = 1, 4 do
      k[i] = {}
      for j = 1, 6 do
        local xi, xj, yi, yj = (i - 1) // 2 + 1, (j - 1) // 3 + 1, (i - 1) % 2 + 1, (j - 1) % 3 + 1
        k[i][j] = (xi * 2 + xj) * (yi - yj * 3)
      end
    end
    H.assert_values(torch.kron(x, y), k)
    H.assert_values(torch.kron(xt, y), k)
    H.raises(function() return torch.outer(x, a) end, 'outer', '1-D')
    H.raises(function() return torch.inner(m, torch.ones(2)) end, 'inner', 'last dimensions')
  end)

  it('cross of 3-vectors along the first dim of size 3 or the dim given', function()
    local a = torch.tensor({ { 1.0, 2, 3 }, { -1, 0.5, 2 } })
    local b = torch.tensor({ { 4.0, -5, 6 }, { 2, 2, -1 } })
    local function cr(u, w) return { u[2] * w[3] - u[3] * w[2], u[3] * w[1] - u[1] * w[3], u[1] * w[2] - u[2] * w[1] } end
    local want = { cr({ 1, 2, 3 }, { 4, -5, 6 }), cr({ -1, 0.5, 2 }, { 2, 2, -1 }) }
    H.assert_values(torch.cross(a, b), want, 1e-6)
    H.assert_values(torch.cross(a:t(), b:t(), 1):t(), want, 1e-6)
    H.raises(function() return torch.cross(torch.ones(2, 2), torch.ones(2, 2)) end, 'cross', 'size 3')
    H.raises(function() return torch.cross(a, b, 1) end, 'cross', 'size 3')
    assert.is_true(gradcheck(function(u, w) return torch.cross(u, w, 2) end, { leaf({ 2, 3 }), leaf({ 2, 3 }) }))
  end)

  it('addmv, addr, baddbmm, addbmm with beta and alpha', function()
    torch.manual_seed(5)
    local x, M, v = torch.randn(3, { dtype = torch.float64 }), torch.randn(3, 4, { dtype = torch.float64 }), torch.randn(4, { dtype = torch.float64 })
    local got = torch.addmv(x, M, v, { beta = 0.5, alpha = 2 }):totable()
    for i = 1, 3 do
      local s = 0
      for k = 1, 4 do s = s + M[i][k] * v[k] end
      H.close(got[i], 0.5 * x[i] + 2 * s, 1e-12)
    end
    local r = torch.addr(torch.zeros(3, 4, { dtype = torch.float64 }), x, v, { alpha = 3 })
    H.close(r[2][3], 3 * x[2] * v[3], 1e-12)
    local A, B = torch.randn(2, 3, 4, { dtype = torch.float64 }), torch.randn(2, 4, 5, { dtype = torch.float64 })
    local C = torch.randn(2, 3, 5, { dtype = torch.float64 })
    H.assert_values(torch.baddbmm(C, A, B, { beta = 2 }), (C * 2 + torch.bmm(A, B)):totable(), 1e-12)
    H.assert_values(torch.addbmm(C[1], A, B), (C[1] + torch.bmm(A, B):sum(1)):totable(), 1e-12)
    -- beta = 0 ignores x, NaNs included
    local nan = torch.full({ 3 }, 0 / 0, { dtype = torch.float64 })
    H.assert_values(torch.addmv(nan, M, v, { beta = 0 }), torch.mv(M, v):totable(), 1e-12)
  end)
end)

describe('composite diagonals', function()
  it('diagonal with offsets and dims, diag both ways, trace: against loops', function()
    local v = function(i, j) return i * 10 + j end
    local x, xt = mat(3, 4, v)
    for _, off in ipairs { -3, -2, -1, 0, 1, 2, 3, 4 } do
      local want = {}
      for i = 1, 3 do
        local j = i + off
        if j >= 1 and j <= 4 then want[#want + 1] = v(i, j) end
      end
      H.assert_values(x:diagonal(off), want, 0, 'offset ' .. off)
      H.assert_values(xt:diagonal(off), want, 0, 'offset ' .. off .. ' transposed')
      H.assert_values(torch.diag(x, off), want, 0, 'diag offset ' .. off)
    end
    -- dims 2 and 3 of a 3-D tensor, and in swapped order (the transpose's diagonal)
    local t = torch.arange(1, 25, { dtype = torch.float64 }):view(2, 3, 4)
    local d = t:diagonal(0, 2, 3)
    assert.are.same({ 2, 3 }, { d:size(1), d:size(2) })
    for b = 1, 2 do
      for i = 1, 3 do H.close(d[b][i], (b - 1) * 12 + (i - 1) * 4 + i, 0) end
    end
    H.assert_values(t:diagonal({ offset = 1, dim1 = 3, dim2 = 2 }), { { 5, 10 }, { 17, 22 } })
    for _, k in ipairs { -2, 0, 1 } do
      local m = torch.diag(torch.tensor({ 1.0, 2, 3 }), k)
      local n = 3 + math.abs(k)
      local want = {}
      for i = 1, n do
        want[i] = {}
        for j = 1, n do want[i][j] = (j - i == k) and (k >= 0 and i or j) or 0 end
      end
      H.assert_values(m, want, 0, 'diag of a vector, k = ' .. k)
    end
    H.assert_values(torch.trace(x), { 11 + 22 + 33 })
    assert.is_true(gradcheck(function(a) return a:diagonal(1) end, { leaf({ 3, 4 }) }))
    assert.is_true(gradcheck(function(a) return torch.diag(a, -1) end, { leaf({ 3 }) }))
    H.raises(function() return torch.ones(3):diagonal() end, 'diagonal', '2 dimensions')
    H.raises(function() return torch.ones(3, 3):diagonal(0, 1, 1) end, 'diagonal', 'same dimension')
    H.raises(function() return torch.trace(torch.ones(3)) end, 'trace', 'matrix')
  end)

  it('diagonal is a view, as PyTorch\'s: writes reach the tensor; gradients of views and overlaps', function()
    -- writing into the diagonal (offset 1 of a transposed 3 x 4) changes those elements alone
    local base = torch.zeros(4, 3, { dtype = torch.float64 })
    local x = base:t()
    local d = x:diagonal(1)
    assert.are.equal(3, d:numel())
    d:copy_(torch.tensor({ 7, 8, 9 }, { dtype = torch.float64 }))
    local want = {}
    for i = 1, 3 do
      want[i] = {}
      for j = 1, 4 do want[i][j] = (j == i + 1) and (6 + i) or 0 end
    end
    H.assert_values(x, want, 0, 'written through the diagonal')
    -- a 3-D tensor's diagonal over dims 3 and 1 (offset -1): written by add_
    local t = torch.zeros(3, 2, 4)
    t:diagonal(-1, 3, 1):add_(1)
    for i = 1, 3 do
      for j = 1, 2 do
        for k = 1, 4 do assert.are.equal((k == i + 1) and 1 or 0, t[i][j][k]) end
      end
    end
    -- gradients: of a non-contiguous input, and of a diagonal read twice (its entries overlap)
    assert.is_true(gradcheck(function(a) return a:t():diagonal(-1) end, { leaf({ 3, 4 }) }))
    assert.is_true(gradcheck(function(a) return a:diagonal(0, 3, 1) * a:diagonal(0, 1, 3) end, { leaf({ 3, 2, 3 }) }))
    -- an in-place change of the diagonal of a tensor in a graph is refused, not lost
    local y = leaf({ 3, 3 }) * 2
    H.raises(function() y:diagonal():add_(1) end, 'add', 'views')
  end)
end)

describe("diagonal's gradient", function()
  it('is the gradient written into zeros of the input\'s shape (offsets, dims, non-contiguous input)', function()
    -- x:diagonal(-1, 3, 1) of a 3 x 2 x 4 x: d[j][m] = x[m][j][m + 1], so dL/dx[i][j][k] = w[j][i]
    -- where k = i + 1, else 0
    local x = leaf({ 3, 2, 4 })
    local w = torch.randn({ 2, 3 }, { dtype = torch.float64 })
    ;(x:diagonal(-1, 3, 1) * w):sum():backward()
    local want = {}
    for i = 1, 3 do
      want[i] = {}
      for j = 1, 2 do
        want[i][j] = {}
        for k = 1, 4 do want[i][j][k] = k == i + 1 and w[j][i] or 0 end
      end
    end
    H.assert_values(x.grad, want, 0)
    -- a transposed input, offset 1: the gradient in the input's own layout
    local y = leaf({ 4, 3 })
    torch.trace(y:t()):backward()
    H.assert_values(y.grad, { { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 }, { 0, 0, 0 } }, 0)
    local z = leaf({ 3, 4 })
    z:t():diagonal(-1):sum():backward()
    H.assert_values(z.grad, { { 0, 1, 0, 0 }, { 0, 0, 1, 0 }, { 0, 0, 0, 1 } }, 0)
  end)

  it('differentiates twice: the embedding of the gradient is itself differentiated (gradgradcheck)', function()
    assert.is_true(torch.autograd.gradgradcheck(function(a) return a:diagonal(1):pow(3) end, { leaf({ 3, 4 }) }))
    assert.is_true(torch.autograd.gradgradcheck(function(a) return a:diagonal(-1, 3, 1):sin() end, { leaf({ 3, 2, 4 }) }))
    -- d/dx of sum(w * grad): the gradient of the embedding is the diagonal of its own gradient
    local x = leaf({ 3, 3 })
    local g = torch.autograd.grad((x:diagonal() ^ 2):sum(), x, { create_graph = true })[1] -- 2 diag(x) embedded
    local w = torch.randn({ 3, 3 }, { dtype = torch.float64 })
    local gg = torch.autograd.grad((g * w):sum(), x)[1]
    local want = {}
    for i = 1, 3 do
      want[i] = {}
      for j = 1, 3 do want[i][j] = i == j and 2 * w[i][i] or 0 end
    end
    H.assert_values(gg, want, 1e-12)
  end)

  it("allocates the input's size in backward, not its storage's (a slice of a large tensor)", function()
    local d = 'cpu:1'
    local big = torch.randn({ 1000, 1000 }, { device = d }) -- 4 MB
    local s = big[{ { 1, 2 }, { 1, 2 } }]:requires_grad_()
    local y = s:diagonal():sum()
    local used = H.peak_bytes(d, function() y:backward() end)
    assert.is_true(used < 64 * 1024, string.format('backward allocated %d bytes for a 2 x 2 slice', used))
    H.assert_values(s.grad, { { 1, 0 }, { 0, 1 } }, 0)
    s.grad = nil
    local t = big[{ { 3, 5 }, { 2, 4 } }]:requires_grad_()
    local tr = torch.trace(t)
    assert.is_true(H.peak_bytes(d, function() tr:backward() end) < 64 * 1024, 'trace')
    H.assert_values(t.grad, { { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 } }, 0)
  end)
end)

describe('composite shape functions', function()
  it('movedim, swapaxes, broadcast_to, ravel, unflatten', function()
    local x = torch.arange(1, 25):view(2, 3, 4)
    local m = x:movedim(1, -1)
    assert.are.same({ 3, 4, 2 }, { m:size(1), m:size(2), m:size(3) })
    for i = 1, 2 do
      for j = 1, 3 do
        for k = 1, 4 do assert.are.equal(x[i][j][k], m[j][k][i]) end
      end
    end
    local m2 = torch.moveaxis(x, { 1, 2 }, { 3, 1 })
    assert.are.same({ 3, 4, 2 }, { m2:size(1), m2:size(2), m2:size(3) })
    assert.are.equal(x[2][3][4], m2[3][4][2])
    assert.is_true(x:swapaxes(1, 3):equal(x:transpose(1, 3)))
    assert.are.same({ 3, 2 }, { torch.tensor({ 1, 2 }):broadcast_to({ 3, 2 }):size(1), 2 })
    H.assert_values(x:transpose(1, 3):ravel(), x:transpose(1, 3):contiguous():view(-1):totable())
    local u = x:unflatten(3, { 2, -1 })
    assert.are.same({ 2, 3, 2, 2 }, { u:size(1), u:size(2), u:size(3), u:size(4) })
    assert.are.equal(x[2][1][3], u[2][1][2][1])
    H.raises(function() return x:unflatten(2, { 2, 2 }) end, 'unflatten', "don't multiply")
    H.raises(function() return x:movedim({ 1, 1 }, { 2, 3 }) end, 'movedim', 'repeated')
    H.raises(function() return x:movedim(4, 1) end, 'movedim', 'out of range')
  end)

  it('repeat, repeatTensor and tile against loops, on every dtype, transposed too', function()
    for _, dt in ipairs(H.all_dtypes) do
      local x = torch.tensor({ { 1, 0, 1 }, { 0, 1, 1 } }, { dtype = dt })
      local r = x['repeat'](x, 2, 1, 2)
      assert.are.same({ 2, 2, 6 }, { r:size(1), r:size(2), r:size(3) })
      assert.are.equal(dt, r.dtype)
      for a = 1, 2 do
        for i = 1, 2 do
          for j = 1, 6 do assert.are.equal(x[i][(j - 1) % 3 + 1], r[a][i][j]) end
        end
      end
    end
    local x = torch.arange(1, 7):view(2, 3)
    local t = x:t():tile(2)
    assert.are.same({ 3, 4 }, { t:size(1), t:size(2) })
    for i = 1, 3 do
      for j = 1, 4 do assert.are.equal(x[(j - 1) % 2 + 1][i], t[i][j]) end
    end
    assert.is_true(x:repeatTensor(1, 2):equal(x['repeat'](x, { 1, 2 })))
    assert.are.equal(0, torch.ones(3):tile(0):numel())
    H.raises(function() return x['repeat'](x, 2) end, 'repeat', 'can not be smaller')
    H.raises(function() return x:tile(-1) end, 'tile', 'non-negative')
    assert.is_true(gradcheck(function(a) return a:tile(2, 3) end, { leaf({ 2, 2 }) }))
  end)

  it('repeat_interleave by a count, by counts and without a dim', function()
    local x = torch.tensor({ { 1, 2 }, { 3, 4 } })
    H.assert_values(x:repeat_interleave(2), { 1, 1, 2, 2, 3, 3, 4, 4 })
    H.assert_values(x:repeat_interleave(torch.tensor({ 1, 2 }), 1), { { 1, 2 }, { 3, 4 }, { 3, 4 } })
    H.assert_values(x:t():repeat_interleave(2, { dim = 2 }), { { 1, 1, 3, 3 }, { 2, 2, 4, 4 } })
    H.assert_values(torch.tensor({ 5, 6, 7 }):repeat_interleave(torch.tensor({ 0, 3, 1 })), { 6, 6, 6, 7 })
    H.raises(function() return x:repeat_interleave(torch.tensor({ 1, 2, 3 }), 1) end, 'repeat_interleave', 'same size')
    H.raises(function() return x:repeat_interleave(-1) end, 'repeat_interleave', 'non-negative')
    -- counts with zeros (first, inside, last) against a loop, and a strided input
    torch.manual_seed(21)
    local counts = torch.randint(0, 4, { 40 })
    counts[1], counts[17], counts[40] = 0, 0, 0
    local src = torch.randn(40, 2):t()
    local want = {}
    for i = 1, 40 do for _ = 1, counts[i] do want[#want + 1] = src[2][i] end end
    H.assert_values(src[2]:repeat_interleave(counts), want, 0, 'strided, with zero counts')
    H.assert_values(torch.tensor({ 5, 6 }):repeat_interleave(torch.tensor({ 0, 0 })), {})
    H.raises(function() return x:repeat_interleave(torch.tensor({ 1, -1 }), 1) end, 'repeat_interleave', 'negative')
    -- one argument: each 1-based index i repeated repeats[i] times (PyTorch's 0-based indices, 1-based)
    H.assert_values(torch.repeat_interleave(torch.tensor({ 2, 0, 3 })), { 1, 1, 3, 3, 3 })
    H.assert_values(torch.tensor({ 1, 2 }, { dtype = torch.int32 }):repeat_interleave(), { 1, 2, 2 })
    H.raises(function() return torch.repeat_interleave(torch.tensor({ 1.5 })) end, 'repeat_interleave', 'integer')
  end)

  it('flipud, fliplr, rot90 (every k), diff (n times), unfold, take, take_along_dim', function()
    local x = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    H.assert_values(x:flipud(), { { 4, 5, 6 }, { 1, 2, 3 } })
    H.assert_values(x:fliplr(), { { 3, 2, 1 }, { 6, 5, 4 } })
    H.assert_values(x:rot90(), { { 3, 6 }, { 2, 5 }, { 1, 4 } })
    H.assert_values(x:rot90(2), { { 6, 5, 4 }, { 3, 2, 1 } })
    H.assert_values(x:rot90(3), { { 4, 1 }, { 5, 2 }, { 6, 3 } })
    H.assert_values(x:rot90(-1), { { 4, 1 }, { 5, 2 }, { 6, 3 } })
    H.assert_values(x:rot90(4), x:totable())
    H.assert_values(x:rot90(1, { 2, 1 }), { { 4, 1 }, { 5, 2 }, { 6, 3 } })
    local s = torch.tensor({ 1.0, 4, 9, 16, 25 })
    H.assert_values(s:diff(), { 3, 5, 7, 9 })
    H.assert_values(s:diff(2), { 2, 2, 2 })
    H.assert_values(x:diff(1, 1), { { 3, 3, 3 } })
    H.assert_values(x:t():diff({ dim = 1 }), { { 1, 1 }, { 1, 1 } })
    assert.are.equal(0, torch.ones(1):diff():numel())
    local a = torch.arange(1, 9):view(2, 4)
    local u = a:unfold(2, 2, 1)
    assert.are.same({ 2, 3, 2 }, { u:size(1), u:size(2), u:size(3) })
    for i = 1, 2 do
      for w = 1, 3 do
        for k = 1, 2 do assert.are.equal(a[i][w + k - 1], u[i][w][k]) end
      end
    end
    local u2 = a:t():unfold(1, 3, 2) -- windows of 3 every 2 along a dim of 4: one window
    assert.are.same({ 1, 2, 3 }, { u2:size(1), u2:size(2), u2:size(3) })
    H.assert_values(u2, { { { 1, 2, 3 }, { 5, 6, 7 } } })
    assert.is_true(gradcheck(function(t) return t:unfold(1, 2, 1) end, { leaf({ 4 }) }))
    H.raises(function() return a:unfold(2, 5, 1) end, 'unfold', 'maximum size')
    H.raises(function() return a:unfold(2, 2, 0) end, 'unfold', 'step')
    -- a view, as PyTorch's: windows that overlap read the same elements, and writes reach a
    local v = torch.arange(1, 8, { dtype = torch.float64 })
    local w = v:unfold(1, 3, 2)
    H.assert_values(w, { { 1, 2, 3 }, { 3, 4, 5 }, { 5, 6, 7 } })
    w:select(1, 2):fill_(0)
    H.assert_values(v, { 1, 2, 0, 0, 0, 6, 7 })
    H.assert_values(torch.tensor(5.0):unfold(1, 1, 1), { 5 }) -- a 0-dim tensor's one window
    assert.is_true(gradcheck(function(t) return t:t():unfold(2, 3, 1) end, { leaf({ 5, 2 }) }))
    H.assert_values(x:take(torch.tensor({ { 1, 6 }, { 4, 2 } })), { { 1, 6 }, { 4, 2 } })
    H.assert_values(x:take_along_dim(torch.tensor({ { 3 }, { 1 } }), 2), { { 3 }, { 4 } })
    H.assert_values(x:index_add(2, torch.tensor({ 1, 1 }), torch.tensor({ { 10, 20 }, { 30, 40 } }), { alpha = 2 }),
      { { 61, 2, 3 }, { 144, 5, 6 } })
    H.assert_values(x, { { 1, 2, 3 }, { 4, 5, 6 } }) -- out of place
    H.assert_values(x:index_fill(1, torch.tensor({ 2 }), -1), { { 1, 2, 3 }, { -1, -1, -1 } })
  end)
end)

describe("unfold's gradient", function()
  it('adds the windows\' gradients into zeros of the input\'s shape (overlapping, gapped, non-contiguous)', function()
    -- u = x:unfold(dim, size, step): u[..., i, ..., j] = x[..., (i - 1) * step + j, ...], so
    -- dL/dx[p] is the sum of w over the windows and positions that read element p
    for _, c in ipairs { { 2, 3, 1 }, { 2, 2, 3 }, { 1, 2, 2 }, { 2, 6, 1 } } do
      local dim, size, step = c[1], c[2], c[3]
      local x = leaf({ 3, 6 })
      local u = x:unfold(dim, size, step)
      assert.is_truthy(u.grad_fn.name:find('^UnfoldBackward0')) -- its own node, not as_strided's
      local w = torch.randn(u.shape, { dtype = torch.float64 })
      ;(u * w):sum():backward()
      local want = H.map(x:detach():totable(), function() return 0 end)
      local wt = w:totable()
      for i = 1, u:size(1) do
        for k = 1, u:size(2) do
          for j = 1, size do
            local r, q = i, k
            if dim == 1 then r = (i - 1) * step + j else q = (k - 1) * step + j end
            want[r][q] = want[r][q] + wt[i][k][j]
          end
        end
      end
      H.assert_values(x.grad, want, 1e-12, table.concat(c, ', '))
    end
    assert.is_true(gradcheck(function(t) return t:t():unfold(1, 2, 1) end, { leaf({ 3, 4 }) }))
    assert.is_true(gradcheck(function(t) return t:unfold(1, 2, 3) end, { leaf({ 7 }) }))
  end)

  it('differentiates twice: the gradient of the fold is unfold again (gradgradcheck)', function()
    assert.is_true(torch.autograd.gradgradcheck(function(a) return a:unfold(2, 3, 1):pow(3) end, { leaf({ 2, 5 }) }))
    assert.is_true(torch.autograd.gradgradcheck(function(a) return a:unfold(1, 2, 2):sin() end, { leaf({ 5, 2 }) }))
    -- the gradient of the windows' squares is 2 n x (n: how many windows read each element), so
    -- the gradient of sum(w * that) is 2 n w
    local x = leaf({ 5 })
    local g = torch.autograd.grad((x:unfold(1, 3, 1) ^ 2):sum(), x, { create_graph = true })[1]
    local w = torch.randn({ 5 }, { dtype = torch.float64 })
    local count = { 1, 2, 3, 2, 1 }
    H.assert_values(g, H.map(x:detach():totable(), function(v, n) return 2 * n * v end, count), 1e-12)
    local gg = torch.autograd.grad((g * w):sum(), x)[1]
    H.assert_values(gg, H.map(w:totable(), function(v, n) return 2 * n * v end, count), 1e-12)
  end)

  it("allocates the input's size in backward, not its storage's (a slice of a large tensor)", function()
    local d = 'cpu:1'
    local big = torch.randn({ 1000, 1000 }, { device = d }) -- 4 MB
    local s = big[{ { 1, 2 }, { 1, 4 } }]:requires_grad_()
    local y = s:unfold(2, 2, 1):sum()
    local used = H.peak_bytes(d, function() y:backward() end)
    assert.is_true(used < 64 * 1024, string.format('backward allocated %d bytes for a 2 x 4 slice', used))
    H.assert_values(s.grad, { { 1, 2, 2, 1 }, { 1, 2, 2, 1 } }, 0)
  end)
end)

describe('composite reductions', function()
  it('nansum, nanmean, count_nonzero, aminmax, dist', function()
    local nan = 0 / 0
    local x = torch.tensor({ { 1.0, nan, 3 }, { nan, nan, 2 } })
    H.assert_values(x:nansum(), { 6 })
    H.assert_values(x:nansum(2), { 4, 2 })
    H.assert_values(x:nanmean(), { 2 })
    H.assert_values(x:nanmean(2), { 2, 2 })
    H.assert_values(x:t():nanmean(1, true), { { 2, 2 } })
    H.assert_values(torch.tensor({ { 0, 1, 2 }, { 0, 0, 3 } }):count_nonzero(2), { 2, 1 })
    local lo, hi = torch.tensor({ { 3, -1 }, { 2, 8 } }):aminmax()
    H.assert_values(lo, { -1 })
    H.assert_values(hi, { 8 })
    lo, hi = torch.tensor({ { 3, -1 }, { 2, 8 } }):aminmax({ dim = 1 })
    H.assert_values(lo, { 2, -1 })
    H.assert_values(hi, { 3, 8 })
    H.assert_values(torch.dist(torch.tensor({ 1.0, 2 }), torch.tensor({ 4.0, 6 })), { 5 }, 1e-6)
    H.assert_values(torch.dist(torch.tensor({ 1.0, 2 }), torch.tensor({ 4.0, 6 }), 1), { 7 }, 1e-6)
  end)

  it('kthvalue and median (values and indices) against sorting in Lua, with NaNs and transposed', function()
    torch.manual_seed(6)
    for _, dt in ipairs { torch.float32, torch.float64, torch.int64, torch.int32 } do
      local x = torch.randint(-20, 20, { 5, 7 }):to(dt)
      local rows = x:totable()
      for k = 1, 7 do
        local v, i = x:kthvalue(k, 2)
        for r = 1, 5 do
          local s = { table.unpack(rows[r]) }
          table.sort(s)
          assert.are.equal(s[k], v[r])
          assert.are.equal(s[k], rows[r][i[r]])
        end
      end
      local mv, mi = x:t():median(1)
      for r = 1, 5 do
        local s = { table.unpack(rows[r]) }
        table.sort(s)
        assert.are.equal(s[4], mv[r])
        assert.are.equal(s[4], rows[r][mi[r]])
      end
      local all = H.flatten(rows)
      table.sort(all)
      assert.are.equal(all[(35 - 1) // 2 + 1], x:median():item())
    end
    -- an even count gives the lower middle; a NaN gives NaN and its index
    H.assert_values(torch.tensor({ 4.0, 1, 3, 2 }):median(), { 2 })
    local v, i = torch.tensor({ { 1.0, 0 / 0, 3 }, { 5, 4, 6 } }):median(2, true)
    H.assert_values(v, { { 0 / 0 }, { 5 } })
    H.assert_values(i, { { 2 }, { 1 } })
    H.raises(function() return torch.ones(3):kthvalue(4) end, 'kthvalue', 'out of range')
    H.raises(function() return torch.ones(0):median() end, 'median', 'empty')
    assert.is_true(gradcheck(function(a) return (a:median(2)) end, { leaf({ 3, 5 }) }))
  end)

  it('unique (sorted, inverse, counts) and unique_consecutive against Lua tables, on every dtype', function()
    torch.manual_seed(7)
    for _, dt in ipairs { torch.int64, torch.int32, torch.uint8, torch.float32, torch.float64 } do
      local x = torch.randint(0, 6, { 4, 5 }):to(dt)
      local flat = H.flatten(x:totable())
      local vals, inv, counts = x:unique({ return_inverse = true, return_counts = true })
      local seen, list = {}, {}
      for _, v in ipairs(flat) do
        if not seen[v] then seen[v] = 0; list[#list + 1] = v end
        seen[v] = seen[v] + 1
      end
      table.sort(list)
      H.assert_values(vals, list)
      assert.are.equal(dt, vals.dtype)
      local wc = {}
      for k, v in ipairs(list) do wc[k] = seen[v] end
      H.assert_values(counts, wc)
      assert.are.same({ 4, 5 }, { inv:size(1), inv:size(2) })
      local inv_flat = H.flatten(inv:totable())
      for k, v in ipairs(flat) do assert.are.equal(v, list[inv_flat[k]]) end
    end
    local x = torch.tensor({ 1, 1, 2, 2, 3, 1, 1, 2 })
    local v, inv, c = x:unique_consecutive({ return_inverse = true, return_counts = true })
    H.assert_values(v, { 1, 2, 3, 1, 2 })
    H.assert_values(inv, { 1, 1, 2, 2, 3, 4, 4, 5 })
    H.assert_values(c, { 2, 2, 1, 2, 1 })
    -- each NaN is its own value; an empty tensor has none
    assert.are.equal(3, torch.tensor({ 0 / 0, 1.0, 0 / 0 }):unique():numel())
    local e, ei, ec = torch.zeros(0):unique({ return_inverse = true, return_counts = true })
    assert.are.same({ 0, 0, 0 }, { e:numel(), ei:numel(), ec:numel() })
    H.raises(function() return x:unique({ sorted = true, bogus = 1 }) end, 'unique', 'bogus')
  end)

  -- the slices of the nested table t (of shape `shape`) along dim, each a flat list of its values
  -- in the order of x:transpose(1, dim) (PyTorch 1.13's, which decides their lexicographic order)
  local function lua_slices(t, shape, dim)
    local order, idx, out = {}, {}, {}
    for d = 1, #shape do order[d] = d end
    order[1], order[dim] = dim, 1
    for k = 1, shape[dim] do out[k] = {} end
    local function walk(p)
      if p > #shape then
        local v = t
        for d = 1, #shape do v = v[idx[d]] end
        local s = out[idx[dim]]
        s[#s + 1] = v
        return
      end
      for i = 1, shape[order[p]] do
        idx[order[p]] = i
        walk(p + 1)
      end
    end
    walk(1)
    return out
  end

  -- unique's slices along dim by plain Lua: the distinct slices in lexicographic order, each
  -- slice's 1-based place among them and each one's count
  local function lua_unique_slices(slices)
    local function less(a, b)
      for i = 1, #a do
        if a[i] ~= b[i] then return a[i] < b[i] end
      end
      return false
    end
    local sorted = { table.unpack(slices) }
    table.sort(sorted, less)
    local uniq, counts = {}, {}
    for _, s in ipairs(sorted) do
      if #uniq == 0 or less(uniq[#uniq], s) then uniq[#uniq + 1] = s; counts[#uniq] = 0 end
      counts[#uniq] = counts[#uniq] + 1
    end
    local inverse = {}
    for k, s in ipairs(slices) do
      for u, v in ipairs(uniq) do
        if not less(s, v) and not less(v, s) then inverse[k] = u end
      end
    end
    return uniq, inverse, counts
  end

  it('unique with dim: the distinct slices in lexicographic order, inverse and counts, against plain Lua', function()
    torch.manual_seed(11)
    -- small values, so that slices repeat (certainly in {10, 2}, {2, 10, 1} and {12})
    local shapes = { { 9, 3 }, { 10, 2 }, { 3, 8 }, { 6, 2, 3 }, { 2, 10, 1 }, { 3, 2, 6 }, { 2, 3, 2, 5 }, { 12 } }
    for _, dt in ipairs(H.all_dtypes) do
      for _, shape in ipairs(shapes) do
        local x = torch.randint(0, dt == torch.bool and 2 or 3, shape):to(dt)
        local t = x:long():totable() -- (bools as 0 and 1, to order them)
        for dim = 1, #shape do
          for _, d in ipairs { dim, dim - #shape - 1 } do -- positive and negative
            local what = string.format('%s %s dim %d', dt.name, table.concat(shape, 'x'), d)
            local v, inv, c = torch.unique(x, { dim = d, return_inverse = true, return_counts = true })
            local uniq, want_inv, want_c = lua_unique_slices(lua_slices(t, shape, dim))
            local want_shape = { table.unpack(shape) }
            want_shape[dim] = #uniq
            assert.are.same(want_shape, { table.unpack(v.shape) }, what)
            assert.are.equal(dt, v.dtype, what)
            assert.are.same(uniq, lua_slices(v:long():totable(), want_shape, dim), what)
            H.assert_values(inv, want_inv, 0, what)
            H.assert_values(c, want_c, 0, what)
            assert.are.equal(torch.int64, inv.dtype)
            -- the method, a transposed (non-contiguous) input, and sorted = false (ignored with a dim,
            -- as PyTorch's) give the same
            assert.is_true(x:unique({ dim = d, sorted = false }):equal(v), what)
            local nc = x:transpose(1, #shape):contiguous():transpose(1, #shape)
            assert.is_true(#shape == 1 or not nc:is_contiguous())
            local v2, inv2 = torch.unique(nc, { dim = d, return_inverse = true })
            assert.is_true(v2:equal(v) and inv2:equal(inv), what .. ' non-contiguous')
          end
        end
      end
    end
  end)

  it('unique with dim: empty slices, one value per slice, and the errors', function()
    -- size 0 along dim: no slices (the shape kept); size 0 elsewhere: an error, as PyTorch's
    local v, inv, c = torch.zeros(0, 3):unique({ dim = 1, return_inverse = true, return_counts = true })
    assert.are.same({ 0, 3 }, { table.unpack(v.shape) })
    assert.are.same({ 0, 0 }, { inv:numel(), c:numel() })
    H.raises(function() return torch.zeros(0, 3):unique({ dim = 2 }) end, 'unique', 'dimension 1 has size 0')
    H.raises(function() return torch.zeros(0, 0):unique({ dim = 1 }) end, 'unique', 'size 0')
    -- a single slice; slices equal but for -0 and 0 are one
    v, inv, c = torch.tensor({ { 1.5, 2 } }):unique({ dim = 1, return_inverse = true, return_counts = true })
    H.assert_values(v, { { 1.5, 2 } })
    H.assert_values(inv, { 1 })
    H.assert_values(c, { 1 })
    v, inv, c = torch.tensor({ { 0.0, 1 }, { -0.0, 1 } }):unique({ dim = 1, return_inverse = true, return_counts = true })
    H.assert_values(inv, { 1, 1 })
    H.assert_values(c, { 2 })
    -- a slice with a NaN equals no other (NaN sorts last in its column, as in sort)
    v, inv = torch.tensor({ { 0 / 0, 1 }, { 0 / 0, 1 }, { 2, 1 } }):unique({ dim = 1, return_inverse = true })
    H.assert_values(v, { { 2, 1 }, { 0 / 0, 1 }, { 0 / 0, 1 } })
    H.assert_values(inv, { 2, 3, 1 })
    H.raises(function() return torch.tensor(3):unique({ dim = 1 }) end, 'unique', '0-D')
    H.raises(function() return torch.ones(2, 3):unique({ dim = 3 }) end, 'unique', 'out of range')
    H.raises(function() return torch.ones(2, 3):unique({ dim = 0 }) end, 'unique', 'out of range')
    H.raises(function() return torch.ones(2, 3):unique({ dim = 1.5 }) end, 'unique', 'integer')
    -- the values pass gradients (each kept slice's, from its first occurrence in sorted order)
    assert.is_true(gradcheck(function(a) return (torch.unique(torch.cat({ a, a:flip(1) }), { dim = 1 })) end,
      { leaf({ 3, 2 }) }))
  end)

  it('histc against counting in Lua; the data range when min = max', function()
    torch.manual_seed(8)
    for _, dt in ipairs { torch.float32, torch.float64 } do
      local x = torch.randn(200, { dtype = dt })
      local h = torch.histc(x, 7, -1.5, 2)
      assert.are.equal(dt, h.dtype)
      local want = { 0, 0, 0, 0, 0, 0, 0 }
      for _, v in ipairs(x:totable()) do
        if v >= -1.5 and v <= 2 then
          local b = math.min(math.floor((v + 1.5) * 7 / 3.5), 6) + 1
          want[b] = want[b] + 1
        end
      end
      H.assert_values(h, want)
      H.assert_values(x:histc(4):sum(), { 200 })
    end
    H.assert_values(torch.tensor({ 1.0, 2, 1, 4 }):histc(3), { 2, 1, 1 })
    H.raises(function() return torch.tensor({ 1, 2 }):histc(3) end, 'histc', 'floating point')
    H.raises(function() return torch.ones(3):histc(0) end, 'histc', 'bins')
  end)
end)

describe('composite samplers', function()
  it('bernoulli draws 1 with the probability in each element', function()
    torch.manual_seed(9)
    local p = torch.tensor({ 0.0, 1.0, 0.25 }):view(3, 1):expand(3, 20000)
    local s = torch.bernoulli(p)
    assert.are.equal(torch.float32, s.dtype)
    local m = s:mean(2)
    H.assert_values(m:narrow(1, 1, 2), { 0, 1 })
    assert.is_true(math.abs(m[3] - 0.25) < 0.015)
    local d = torch.zeros(10000, { dtype = torch.float64 }):bernoulli(0.5)
    assert.is_true(math.abs(d:mean():item() - 0.5) < 0.02)
  end)

  it('multinomial follows the weights, never draws a zero weight, and draws each index once without replacement', function()
    torch.manual_seed(10)
    local w = torch.tensor({ { 1.0, 0, 3, 4 }, { 0, 0, 1, 0 } })
    local s = torch.multinomial(w, 8000, true)
    assert.are.same({ 2, 8000 }, { s:size(1), s:size(2) })
    assert.are.equal(torch.int64, s.dtype)
    local counts = { 0, 0, 0, 0 }
    for _, v in ipairs(s[1]:totable()) do counts[v] = counts[v] + 1 end
    assert.are.equal(0, counts[2])
    for k, p in ipairs { 1 / 8, 0, 3 / 8, 4 / 8 } do assert.is_true(math.abs(counts[k] / 8000 - p) < 0.02, 'weight ' .. k) end
    assert.is_true(s[2]:eq(3):all():item())
    for _ = 1, 20 do
      local d = torch.multinomial(torch.tensor({ 0.1, 0.2, 0.3, 0.4, 0 }), 4)
      local got = d:totable()
      table.sort(got)
      assert.are.same({ 1, 2, 3, 4 }, got)
    end
    H.raises(function() return torch.multinomial(torch.tensor({ 0.5, 0.5 }), 3) end, 'multinomial', 'without replacement')
    H.raises(function() return torch.multinomial(torch.tensor({ -1.0, 2 }), 1) end, 'multinomial', 'element < 0')
    H.raises(function() return torch.multinomial(torch.zeros(3), 1) end, 'multinomial', 'sum of probabilities')
    H.raises(function() return torch.multinomial(torch.tensor({ 1, 2 }), 1) end, 'multinomial', 'floating point')
  end)
end)

describe('composite functions as methods and torch.* alike', function()
  it('softmax and log_softmax as methods, type_as, msort, argwhere', function()
    local x = torch.tensor({ { 1.0, 2, 3 }, { 0, 0, 0 } })
    H.assert_values(x:softmax(2), torch.F.softmax(x, 2):totable(), 1e-7)
    H.assert_values(x:log_softmax(2), torch.F.log_softmax(x, 2):totable(), 1e-7)
    assert.are.equal(torch.float64, torch.ones(2, { dtype = torch.int32 }):type_as(torch.ones(1, { dtype = torch.float64 })).dtype)
    H.assert_values(torch.tensor({ { 3, 1 }, { 2, 0 } }):msort(), { { 2, 0 }, { 3, 1 } })
    H.assert_values(torch.tensor({ { 0, 1 }, { 2, 0 } }):argwhere(), { { 1, 2 }, { 2, 1 } })
    for _, name in ipairs { 'lerp', 'kron', 'movedim', 'unique', 'median', 'multinomial', 'diagonal', 'tile' } do
      assert.are.equal(torch.Tensor[name], torch[name], name)
    end
  end)
end)

describe('composite functions on another device', function()
  local it2 = torch.cpu.device_count() >= 2 and it or pending
  it2('make their index and scratch tensors on the input\'s device (cpu:1 here, as for CUDA)', function()
    local x = torch.tensor({ { 3.0, 1, 2 }, { 0.5, 4, 4 } }):to('cpu:1')
    local i1 = torch.tensor({ 1, 2 }):to('cpu:1')
    local results = {
      x:diagonal(), torch.diag(x[1], 1), x:unique({ return_inverse = true, return_counts = true }),
      select(3, x:unique_consecutive({ return_inverse = true, return_counts = true })), x:histc(3),
      torch.multinomial(x, 2, true), torch.multinomial(x, 2), x:repeat_interleave(2, 1),
      x:repeat_interleave(i1, 1), x:unfold(2, 2, 1), (x:median(2)), (x:kthvalue(1, 2)), x:nan_to_num(),
      torch.logaddexp(x, 1), x:tile(2), (x / 5):bernoulli(), x // 2, torch.cross(x, x), torch.kron(x, x),
      x:heaviside(0.5), x:index_add(2, i1, torch.ones(2, 2):to('cpu:1')), x:lerp(x, 0.5), x:nansum(), x:trace(),
    }
    for k, r in ipairs(results) do assert.are.equal('cpu:1', tostring(r.device), 'result ' .. k) end
  end)
end)

describe('composite builders', function()
  it('vstack, hstack, dstack, column_stack and atleast_*d as PyTorch shapes them', function()
    local a, b = torch.tensor({ 1, 2 }), torch.tensor({ 3, 4 })
    H.assert_values(torch.vstack({ a, b }), { { 1, 2 }, { 3, 4 } })
    H.assert_values(torch.hstack({ a, b }), { 1, 2, 3, 4 })
    H.assert_values(torch.hstack({ a:view(2, 1), b:view(2, 1) }), { { 1, 3 }, { 2, 4 } })
    H.assert_values(torch.column_stack({ a, b:view(2, 1) }), { { 1, 3 }, { 2, 4 } })
    local d = torch.dstack({ a, b })
    assert.are.same({ 1, 2, 2 }, { d:size(1), d:size(2), d:size(3) })
    H.assert_values(d, { { { 1, 3 }, { 2, 4 } } })
    assert.are.equal(2, torch.atleast_2d(torch.tensor(5)):dim())
    assert.are.same({ 1, 2, 1 }, { torch.atleast_3d(a):size(1), torch.atleast_3d(a):size(2), torch.atleast_3d(a):size(3) })
    H.raises(function() return torch.vstack({}) end, 'vstack', 'non-empty')
    H.raises(function() return torch.hstack({ a, 3 }) end, 'hstack', 'element 2')
  end)

  it('meshgrid (ij and xy), cartesian_prod, combinations against loops', function()
    local x, y, z = torch.tensor({ 1, 2, 3 }), torch.tensor({ 10, 20 }), torch.tensor({ 7 })
    local g = torch.meshgrid({ x, y, z })
    assert.are.same({ 3, 2, 1 }, { g[1]:size(1), g[1]:size(2), g[1]:size(3) })
    for i = 1, 3 do
      for j = 1, 2 do
        assert.are.equal(x[i], g[1][i][j][1])
        assert.are.equal(y[j], g[2][i][j][1])
        assert.are.equal(7, g[3][i][j][1])
      end
    end
    local X, Y = table.unpack(torch.meshgrid(x, y, { indexing = 'xy' }))
    assert.are.same({ 2, 3 }, { X:size(1), X:size(2) })
    for i = 1, 2 do for j = 1, 3 do assert.are.equal(x[j], X[i][j]); assert.are.equal(y[i], Y[i][j]) end end
    H.raises(function() return torch.meshgrid({ x }, { indexing = 'yx' }) end, 'meshgrid', 'indexing')
    H.assert_values(torch.cartesian_prod(x, y), { { 1, 10 }, { 1, 20 }, { 2, 10 }, { 2, 20 }, { 3, 10 }, { 3, 20 } })
    local v = torch.tensor({ 5.0, 6, 7, 8 })
    for _, r in ipairs { 1, 2, 3 } do
      for _, rep in ipairs { false, true } do
        local want = {}
        local function rec(start, cur)
          if #cur == r then want[#want + 1] = { table.unpack(cur) } return end
          for i = start, 4 do
            cur[#cur + 1] = v[i]
            rec(rep and i or i + 1, cur)
            cur[#cur] = nil
          end
        end
        rec(1, {})
        H.assert_values(torch.combinations(v, r, rep), want, 0, 'r = ' .. r)
      end
    end
    assert.are.equal(0, torch.combinations(torch.tensor({ 1 }), 2):size(1))
    -- more elements than positions with replacement, a strided input, and a count: C(n + r - 1, r)
    local w = torch.arange(1, 13):view(4, 3):select(2, 2) -- 2, 5, 8, 11
    local c = torch.combinations(w, 5, true)
    assert.are.same({ 56, 5 }, { c:size(1), c:size(2) })
    H.assert_values(c[1], { 2, 2, 2, 2, 2 })
    H.assert_values(c[56], { 11, 11, 11, 11, 11 })
    H.assert_values(c[2], { 2, 2, 2, 2, 5 })
    assert.are.equal(0, torch.combinations(w, 5):size(1))
    -- a size whose positions cannot fit in memory fails at once, saying so
    H.raises(function() return torch.combinations(torch.zeros(1025, { dtype = torch.float64 }), 4) end, 'combinations',
      'cannot be made')
  end)

  it('block_diag, tensordot, cdist, trapezoid against loops; they pass gradients', function()
    H.assert_values(torch.block_diag(torch.tensor({ { 1, 2 } }), torch.tensor({ { 3 }, { 4 } }), torch.tensor({ 5, 6 })),
      { { 1, 2, 0, 0, 0 }, { 0, 0, 3, 0, 0 }, { 0, 0, 4, 0, 0 }, { 0, 0, 0, 5, 6 } })
    torch.manual_seed(11)
    local a, b = torch.randn(2, 3, 4, { dtype = torch.float64 }), torch.randn(4, 3, 5, { dtype = torch.float64 })
    local t = torch.tensordot(a, b, { { 2, 3 }, { 2, 1 } })
    assert.are.same({ 2, 5 }, { t:size(1), t:size(2) })
    for i = 1, 2 do
      for l = 1, 5 do
        local s = 0
        for j = 1, 3 do for k = 1, 4 do s = s + a[i][j][k] * b[k][j][l] end end
        H.close(t[i][l], s, 1e-12)
      end
    end
    H.assert_values(torch.tensordot(a, torch.ones(3, 4, { dtype = torch.float64 })), a:sum({ 2, 3 }):totable(), 1e-12)
    H.raises(function() return torch.tensordot(a, torch.ones(3, 5, { dtype = torch.float64 }), 1) end, 'tensordot', 'need to match')
    local x1, x2 = torch.randn(3, 4, { dtype = torch.float64 }), torch.randn(5, 4, { dtype = torch.float64 })
    for _, p in ipairs { 0, 1, 2, 3, math.huge } do
      local d = torch.cdist(x1, x2, p)
      for i = 1, 3 do
        for j = 1, 5 do
          local s, m, nz = 0, 0, 0
          for k = 1, 4 do
            local e = math.abs(x1[i][k] - x2[j][k])
            s, m, nz = s + e ^ (p == math.huge and 1 or p), math.max(m, e), nz + (e ~= 0 and 1 or 0)
          end
          local want = p == 0 and nz or p == math.huge and m or s ^ (1 / p)
          H.close(d[i][j], want, 1e-12, 'p = ' .. p)
        end
      end
    end
    H.raises(function() return torch.cdist(x1, torch.ones(2, 3)) end, 'cdist', 'same number of columns')
    local y = torch.tensor({ { 1.0, 4, 9 }, { 2, 2, 2 } })
    H.assert_values(torch.trapezoid(y), { 2.5 + 6.5, 4 })
    H.assert_values(torch.trapezoid(y, { dx = 0.5 }), { 4.5, 2 })
    H.assert_values(torch.trapezoid(y, torch.tensor({ 0.0, 1, 3 })), { 2.5 + 13, 6 })
    H.assert_values(torch.trapz(y, { dim = 1 }), { 1.5, 3, 5.5 })
    assert.is_true(gradcheck(function(u, w) return torch.tensordot(u, w, 1) end, { leaf({ 2, 3 }), leaf({ 3, 2 }) }))
    assert.is_true(gradcheck(function(u, w) return torch.cdist(u, w, 3) end, { leaf({ 2, 3 }), leaf({ 4, 3 }, -1.5, -0.5) }))
    assert.is_true(gradcheck(function(u, w) return torch.block_diag(u, w) end, { leaf({ 2, 2 }), leaf({ 1, 3 }) }))
    assert.is_true(gradcheck(function(u) return torch.trapezoid(u) end, { leaf({ 2, 4 }) }))
  end)

  it('searchsorted and bucketize give 1-based insertion positions (left and right) against a loop', function()
    torch.manual_seed(12)
    local seq = torch.tensor({ 1, 3, 3, 5, 8 })
    local vals = torch.tensor({ { 0, 1, 3, 4 }, { 5, 8, 9, 3 } })
    for _, right in ipairs { false, true } do
      local got = torch.searchsorted(seq, vals, { right = right })
      for i = 1, 2 do
        for j = 1, 4 do
          local v, k = vals[i][j], 1
          while k <= 5 and (right and seq[k] <= v or (not right and seq[k] < v)) do k = k + 1 end
          assert.are.equal(k, got[i][j])
        end
      end
      H.assert_values(torch.searchsorted(seq, vals, { side = right and 'right' or 'left' }), got:totable())
      H.assert_values(torch.bucketize(vals, seq, { right = right }), got:totable())
    end
    -- one sorted row for each row of values
    local rows = torch.tensor({ { 1.0, 2, 3 }, { 10, 20, 30 } })
    H.assert_values(torch.searchsorted(rows, torch.tensor({ { 2.5 }, { 5.0 } })), { { 3 }, { 1 } })
    assert.are.equal(torch.int32, torch.bucketize(torch.tensor({ 1.0 }), torch.tensor({ 0.0 }), { out_int32 = true }).dtype)
    H.assert_values(torch.searchsorted(seq, 4), { 4 })
    H.raises(function() return torch.searchsorted(seq, vals, { side = 'left', right = true }) end, 'searchsorted', 'opposites')
    H.raises(function() return torch.bucketize(vals, rows) end, 'bucketize', '1-D')
  end)

  it('nn.utils.rnn.pad_sequence: time-major or batch-first, right or left, with a value', function()
    local s = { torch.tensor({ 1, 2, 3 }), torch.tensor({ 4 }), torch.tensor({ 5, 6 }) }
    H.assert_values(torch.nn.utils.rnn.pad_sequence(s, { batch_first = true, padding_value = -1 }),
      { { 1, 2, 3 }, { 4, -1, -1 }, { 5, 6, -1 } })
    H.assert_values(torch.nn.utils.rnn.pad_sequence(s), { { 1, 4, 5 }, { 2, 0, 6 }, { 3, 0, 0 } })
    H.assert_values(torch.nn.utils.rnn.pad_sequence(s, { batch_first = true, padding_side = 'left' }),
      { { 1, 2, 3 }, { 0, 0, 4 }, { 0, 5, 6 } })
    local f = torch.nn.utils.rnn.pad_sequence({ torch.ones(2, 3), torch.ones(1, 3) })
    assert.are.same({ 2, 2, 3 }, { f:size(1), f:size(2), f:size(3) })
    H.raises(function() return torch.nn.utils.rnn.pad_sequence({ torch.ones(2, 3), torch.ones(2, 4) }) end, 'pad_sequence', 'trailing shape')
    H.raises(function() return torch.nn.utils.rnn.pad_sequence({}) end, 'pad_sequence', 'non-empty')
  end)
end)
