-- torch.linalg (lua/torch/linalg.lua): the norms against loops over the elements, multi_dot and
-- matrix_power against products taken in order, det by cofactor expansion and solve/inv by
-- Gauss-Jordan elimination written here, gradients by finite differences, the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local linalg = torch.linalg
local gradcheck = torch.autograd.gradcheck

describe('torch.linalg norms', function()
  it('vector_norm for every ord, over all elements or a dim, keepdim, transposed', function()
    torch.manual_seed(1)
    local x = torch.randn(3, 4, { dtype = torch.float64 })
    x[2][3] = 0
    local rows = x:totable()
    local function ref(vals, ord)
      local s, mx, mn, nz = 0, 0, math.huge, 0
      for _, v in ipairs(vals) do
        local a = math.abs(v)
        mx, mn = math.max(mx, a), math.min(mn, a)
        if a ~= 0 then nz = nz + 1 end
        if ord ~= 0 and ord ~= math.huge and ord ~= -math.huge then s = s + a ^ ord end
      end
      if ord == math.huge then return mx elseif ord == -math.huge then return mn elseif ord == 0 then return nz end
      return s ^ (1 / ord)
    end
    for _, ord in ipairs { 2, 1, 3, 0.5, 0, math.huge, -math.huge } do
      H.close(linalg.vector_norm(x, ord):item(), ref(H.flatten(rows), ord), 1e-12, 'ord ' .. ord)
      local by_row = linalg.vector_norm(x, ord, 2)
      local by_col = linalg.vector_norm(x:t(), ord, 1, true)
      for r = 1, 3 do
        H.close(by_row[r], ref(rows[r], ord), 1e-12, 'row ' .. r .. ' ord ' .. ord)
        H.close(by_col[1][r], ref(rows[r], ord), 1e-12, 'transposed row ' .. r .. ' ord ' .. ord)
      end
    end
    local k = linalg.vector_norm(x, { ord = 1, keepdim = true })
    assert.are.same({ 1, 1 }, { k:size(1), k:size(2) })
    H.raises(function() return linalg.vector_norm(torch.tensor({ 1, 2 })) end, 'vector_norm', 'floating point')
    H.raises(function() return linalg.vector_norm(x, { p = 2 }) end, "unknown option 'p'")
  end)

  it("matrix_norm ('fro', 1, -1, inf, -inf) against column and row sums, batched, and linalg.norm's choices", function()
    local a = torch.tensor({ { 1.0, -2, 3 }, { -4, 5, -6 } }, { dtype = torch.float64 })
    H.close(linalg.matrix_norm(a):item(), math.sqrt(91), 1e-12)
    H.close(linalg.matrix_norm(a, 1):item(), 9, 0)        -- column sums 5, 7, 9
    H.close(linalg.matrix_norm(a, -1):item(), 5, 0)
    H.close(linalg.matrix_norm(a, math.huge):item(), 15, 0) -- row sums 6, 15
    H.close(linalg.matrix_norm(a, -math.huge):item(), 6, 0)
    local b = torch.stack({ a, a * 2 })
    H.assert_values(linalg.matrix_norm(b, 1), { 9, 18 })
    H.assert_values(linalg.matrix_norm(b:transpose(2, 3), math.huge, { -2, -1 }), { 9, 18 })
    local kd = linalg.matrix_norm(b, 'fro', { -2, -1 }, true)
    assert.are.same({ 2, 1, 1 }, { kd:size(1), kd:size(2), kd:size(3) })
    H.close(linalg.norm(a):item(), math.sqrt(91), 1e-12)
    H.close(linalg.norm(a, 1):item(), 9, 0)
    H.close(linalg.norm(torch.tensor({ 3.0, -4 }), 1):item(), 7, 0)
    H.assert_values(linalg.norm(a, nil, 2), { math.sqrt(14), math.sqrt(77) }, 1e-12)
    H.raises(function() return linalg.matrix_norm(a, 3) end, 'matrix_norm', 'ord must be')
    H.raises(function() return linalg.matrix_norm(torch.ones(3)) end, 'matrix_norm', 'at least 2')
    assert.is_true(gradcheck(function(t) return linalg.matrix_norm(t) end, { torch.randn(3, 3, { dtype = torch.float64 }):requires_grad_() }))
    assert.is_true(gradcheck(function(t) return linalg.vector_norm(t, 3, 2) end, { (torch.rand(2, 3, { dtype = torch.float64 }) + 0.5):requires_grad_() }))
  end)
end)

describe('torch.linalg products and powers', function()
  it('multi_dot equals the product taken in order, vectors at the ends included, and picks a cheap order', function()
    torch.manual_seed(2)
    local A, B, C, D = torch.randn(10, 100, { dtype = torch.float64 }), torch.randn(100, 5, { dtype = torch.float64 }),
      torch.randn(5, 50, { dtype = torch.float64 }), torch.randn(50, 3, { dtype = torch.float64 })
    H.assert_values(linalg.multi_dot({ A, B, C, D }), A:mm(B):mm(C):mm(D):totable(), 1e-10)
    local v, w = torch.randn(10, { dtype = torch.float64 }), torch.randn(3, { dtype = torch.float64 })
    local r = linalg.multi_dot({ v, A, B, C, D, w })
    assert.are.equal(0, r:dim())
    H.close(r:item(), v:dot(A:mm(B):mm(C):mm(D):mv(w)):item(), 1e-9)
    H.assert_values(torch.chain_matmul(A, B), A:mm(B):totable(), 1e-12)
    H.raises(function() return linalg.multi_dot({ A, C }) end, 'multi_dot', 'cannot be multiplied')
    H.raises(function() return linalg.multi_dot({ A }) end, 'multi_dot', 'at least two')
    assert.is_true(gradcheck(function(a, b, c) return linalg.multi_dot({ a, b, c }) end,
      { torch.randn(2, 3, { dtype = torch.float64 }):requires_grad_(), torch.randn(3, 4, { dtype = torch.float64 }):requires_grad_(),
        torch.randn(4, 2, { dtype = torch.float64 }):requires_grad_() }))
  end)

  it('matrix_power by squaring equals repeated products; 0 gives the identity; vecdot, cross, diagonal', function()
    torch.manual_seed(3)
    local a = torch.randn(2, 3, 3, { dtype = torch.float64 }) * 0.5
    local p = a
    for n = 1, 7 do
      H.assert_values(linalg.matrix_power(a, n), p:totable(), 1e-12, 'n = ' .. n)
      p = torch.matmul(p, a)
    end
    H.assert_values(a:matrix_power(0), torch.eye(3, { dtype = torch.float64 }):expand(2, 3, 3):totable())
    -- a negative power is the inverse's: A^-2 A^2 = I
    H.assert_values(torch.matmul(linalg.matrix_power(a, -2), torch.matmul(a, a)),
      torch.eye(3, { dtype = torch.float64 }):expand(2, 3, 3):totable(), 1e-9)
    H.raises(function() return linalg.matrix_power(torch.ones(2, 3), 2) end, 'matrix_power', 'square')
    local x, y = torch.randn(4, 3, { dtype = torch.float64 }), torch.randn(4, 3, { dtype = torch.float64 })
    H.assert_values(linalg.vecdot(x, y), (x * y):sum(2):totable(), 1e-12)
    H.assert_values(linalg.cross(x, y), torch.cross(x, y, 2):totable(), 1e-12)
    H.assert_values(linalg.diagonal(a), { { a[1][1][1], a[1][2][2], a[1][3][3] }, { a[2][1][1], a[2][2][2], a[2][3][3] } })
    assert.is_true(gradcheck(function(t) return linalg.matrix_power(t, 3) end, { torch.randn(3, 3, { dtype = torch.float64 }):requires_grad_() }))
  end)

  it('names what it has when asked for what it has not', function()
    H.raises(function() return linalg.eig end, "torch.linalg has no function 'eig'", 'vector_norm', 'solve', 'svd')
  end)
end)

-- det by cofactor expansion along the first row (a table matrix)
local function det_ref(m)
  local n = #m
  if n == 1 then return m[1][1] end
  local d = 0
  for j = 1, n do
    local minor = {}
    for i = 2, n do
      local row = {}
      for c = 1, n do if c ~= j then row[#row + 1] = m[i][c] end end
      minor[#minor + 1] = row
    end
    d = d + (j % 2 == 1 and 1 or -1) * m[1][j] * det_ref(minor)
  end
  return d
end

local solve_ref = H.solve_ref

describe('torch.linalg det, slogdet, solve and inv', function()
  it('det and slogdet against cofactor expansion, batched, transposed, float32 and float64', function()
    torch.manual_seed(4)
    for _, dt in ipairs { torch.float64, torch.float32 } do
      local a = torch.randn(3, 4, 4, { dtype = dt })
      local at = a:transpose(-2, -1):contiguous():transpose(-2, -1) -- the same values, not contiguous
      assert.is_false(at:is_contiguous())
      local tol = dt == torch.float64 and 1e-12 or 1e-5
      for _, x in ipairs { a, at } do
        local d = linalg.det(x)
        local s, l = linalg.slogdet(x)
        for b = 1, 3 do
          local want = det_ref(x[b]:double():totable())
          H.close(d[b], want, tol)
          H.close(s[b] * math.exp(l[b]), want, tol * 10)
          assert.are.equal(want < 0 and -1 or 1, s[b])
        end
      end
    end
    -- a permutation's sign, a singular matrix, the identity
    H.close(linalg.det(torch.tensor({ { 0.0, 1 }, { 1, 0 } })):item(), -1, 0)
    H.close(linalg.det(torch.tensor({ { 1.0, 2 }, { 2, 4 } })):item(), 0, 0)
    local s, l = linalg.slogdet(torch.tensor({ { 1.0, 2 }, { 2, 4 } }))
    assert.are.equal(0, s:item())
    assert.are.equal(-math.huge, l:item())
    H.close(torch.eye(5):det():item(), 1, 0)
    -- the sign carries no history; the factorisation of a leaf that requires grad neither
    local leafm = torch.randn(3, 3, { dtype = torch.float64 }):requires_grad_()
    assert.is_false((linalg.slogdet(leafm)).requires_grad)
    assert.is_false((torch._lu_factor(leafm)).requires_grad)
    H.close(torch.tensor({ { 2.0, 0 }, { 0, 3 } }):logdet():item(), math.log(6), 1e-6)
    assert.is_true(gradcheck(function(t) return linalg.det(t) end, { torch.randn(2, 3, 3, { dtype = torch.float64 }):requires_grad_() }))
    assert.is_true(gradcheck(function(t) return (select(2, linalg.slogdet(t))) end, { torch.randn(3, 3, { dtype = torch.float64 }):requires_grad_() }))
  end)

  it('solve and inv against Gauss-Jordan elimination; vectors, batches broadcast over B; gradients', function()
    torch.manual_seed(5)
    local a = torch.randn(2, 4, 4, { dtype = torch.float64 }) + torch.eye(4, { dtype = torch.float64 }) * 3
    local b = torch.randn(2, 4, 3, { dtype = torch.float64 })
    local x = linalg.solve(a, b)
    local inv = linalg.inv(a:transpose(-2, -1))
    for q = 1, 2 do
      H.assert_values(x[q], solve_ref(a[q]:totable(), b[q]:totable()), 1e-12)
      local eye = torch.eye(4, { dtype = torch.float64 }):totable()
      H.assert_values(inv[q], solve_ref(a[q]:t():totable(), eye), 1e-12)
    end
    -- the factors solve with A^T too (the backward's solves)
    local f, piv = torch._lu_factor(a)
    local xt = torch._lu_solve(f, piv, b, true)
    for q = 1, 2 do H.assert_values(xt[q], solve_ref(a[q]:t():totable(), b[q]:totable()), 1e-12) end
    local pm = torch.tensor({ { 0.0, 2, 1 }, { 1, 1, 1 }, { 2, 1, 3 } }, { dtype = torch.float64 }) -- rows swap
    local pf, pp = torch._lu_factor(pm)
    assert.is_true(pp:ne(torch.tensor({ 1, 2, 3 })):any():item())
    local rhs = torch.tensor({ { 1.0, 0 }, { 2, 1 }, { -1, 3 } }, { dtype = torch.float64 })
    H.assert_values(torch._lu_solve(pf, pp, rhs, true), solve_ref(pm:t():totable(), rhs:totable()), 1e-12)
    H.assert_values(torch._lu_solve(pf, pp, rhs), solve_ref(pm:totable(), rhs:totable()), 1e-12)
    -- a vector right-hand side, and one B for every matrix of the batch
    local v = torch.randn(4, { dtype = torch.float64 })
    local xv = linalg.solve(a[1], v)
    assert.are.equal(1, xv:dim())
    H.assert_values(a[1]:mv(xv), v:totable(), 1e-12)
    local xb = linalg.solve(a, b[1])
    assert.are.same({ 2, 4, 3 }, { xb:size(1), xb:size(2), xb:size(3) })
    H.assert_values(torch.matmul(a, xb), b[1]:expand(2, 4, 3):totable(), 1e-12)
    -- float32
    local af = a:float()
    H.assert_values(torch.matmul(af, linalg.inv(af)), torch.eye(4):expand(2, 4, 4):totable(), 1e-5)
    assert.is_true(gradcheck(function(t, u) return linalg.solve(t, u) end, { a:clone():requires_grad_(), b:clone():requires_grad_() }))
    assert.is_true(gradcheck(function(t) return linalg.inv(t) end, { a[1]:clone():requires_grad_() }))
    assert.is_true(gradcheck(function(t) return t:inverse():sum() end, { a[2]:clone():requires_grad_() }))
  end)

  it('the errors: singular, not square, integer, mismatched dtypes or shapes, not on the CPU', function()
    H.raises(function() return linalg.inv(torch.ones(3, 3)) end, 'linalg.inv', 'singular')
    H.raises(function() return linalg.solve(torch.zeros(2, 2), torch.ones(2)) end, 'linalg.solve', 'singular')
    H.raises(function() return linalg.det(torch.ones(2, 3)) end, 'linalg.det', 'square')
    H.raises(function() return linalg.det(torch.ones(3)) end, 'linalg.det', 'square')
    H.raises(function() return linalg.det(torch.ones(2, 2, { dtype = torch.int64 })) end, 'linalg.det', 'floating point')
    H.raises(function() return linalg.solve(torch.eye(2), torch.ones(2, { dtype = torch.float64 })) end, 'linalg.solve', 'same dtype')
    H.raises(function() return linalg.solve(torch.eye(2), torch.ones(3)) end, 'linalg.solve', 'rows')
    H.raises(function() return torch._lu_solve(torch.eye(2), torch.tensor({ 1, 5 }), torch.ones(2, 1)) end, 'lu_solve', 'out of range')
    H.raises(function() return linalg.inv(torch.eye(2, { dtype = torch.float16 })) end, 'linalg.inv', 'float32 or float64')
    H.raises(function() return torch._lu_factor(torch.ones(3)) end, 'lu_factor', 'at least 2 dimensions')
    H.raises(function() return torch._lu_factor(torch.ones(2, 2, { dtype = torch.int32 })) end, 'lu_factor', 'float32 or float64')
    if torch.cpu.device_count() >= 2 then
      -- another CPU device is the CPU: it works there
      H.close(linalg.det(torch.eye(2):to('cpu:1') * 2):item(), 4, 0)
    end
  end)

  it('from order 32 up (the blocked factorisation and solves): solve, inv, det, the transposed solve, a singular matrix', function()
    torch.manual_seed(9)
    -- det by Gaussian elimination with partial pivoting (tables)
    local function det_elim(a)
      local n, m, d = #a, {}, 1
      for i = 1, n do m[i] = { table.unpack(a[i]) } end
      for c = 1, n do
        local p = c
        for r = c + 1, n do if math.abs(m[r][c]) > math.abs(m[p][c]) then p = r end end
        if p ~= c then m[c], m[p], d = m[p], m[c], -d end
        if m[c][c] == 0 then return 0 end
        d = d * m[c][c]
        for r = c + 1, n do
          local f = m[r][c] / m[c][c]
          for j = c, n do m[r][j] = m[r][j] - f * m[c][j] end
        end
      end
      return d
    end
    for _, dt in ipairs { torch.float64, torch.float32 } do
      local tol = dt == torch.float64 and 1e-10 or 2e-4
      local n = 40
      -- well conditioned: a diagonal of about n; laid out transposed (not contiguous)
      local a = (torch.randn(2, n, n, { dtype = torch.float64 }) + torch.eye(n, { dtype = torch.float64 }) * n)
        :transpose(-2, -1):contiguous():transpose(-2, -1):to(dt)
      local b = torch.randn(2, n, 3, { dtype = torch.float64 }):to(dt)
      local x = linalg.solve(a, b)
      for q = 1, 2 do
        local at, bt = a[q]:double():totable(), b[q]:double():totable()
        H.assert_values(x[q], solve_ref(at, bt), tol, 'solve ' .. q)
        local d = det_elim(at)
        local sign, logabs = linalg.slogdet(a[q]) -- det itself is ~40^40, past float32's range
        H.close(logabs:item(), math.log(math.abs(d)), tol, 'logabsdet ' .. q)
        assert.are.equal(d > 0 and 1 or -1, sign:item())
        if dt == torch.float64 then H.close(linalg.det(a[q]):item() / d, 1, tol, 'det ' .. q) end
        local f, piv = torch._lu_factor(a[q])
        local at_t = a[q]:t():double():totable()
        H.assert_values(torch._lu_solve(f, piv, b[q], true), solve_ref(at_t, bt), tol, 'transposed solve ' .. q)
      end
      local eye = torch.eye(n, { dtype = dt })
      local ai = linalg.inv(a)
      H.assert_values((ai:matmul(a) - eye):abs():amax(-1):amax(-1), { 0, 0 }, tol, 'inv(A) A = I')
    end
    -- a zero column 5: the factorisation's info names pivot 5; det is 0 and solve refuses
    local s = torch.randn(33, 33, { dtype = torch.float64 }) + torch.eye(33, { dtype = torch.float64 }) * 33
    s:select(2, 5):zero_()
    local _, _, info = torch._lu_factor(s)
    assert.are.equal(5, info:item())
    assert.are.equal(0, linalg.det(s):item())
    H.raises(function() return linalg.solve(s, torch.ones(33, { dtype = torch.float64 })) end, 'singular')
    -- inv from order 32 up (the blocked factorisation and solves): its gradient -A^-T g A^-T by finite
    -- differences on a few entries
    local m = (torch.randn(33, 33, { dtype = torch.float64 }) + torch.eye(33, { dtype = torch.float64 }) * 33)
    local mi = linalg.inv(m)
    H.assert_values((mi:matmul(m) - torch.eye(33, { dtype = torch.float64 })):abs():amax(), 0, 1e-12, 'inv at 33')
    local mr = m:clone():requires_grad_()
    linalg.inv(mr)[3]:sum():backward()
    for _, ij in ipairs { { 1, 1 }, { 3, 7 }, { 20, 33 } } do
      local i, j = ij[1], ij[2]
      local mp, mm = m:clone(), m:clone()
      mp[i][j] = mp[i][j] + 1e-6
      mm[i][j] = mm[i][j] - 1e-6
      local fd = (linalg.inv(mp)[3]:sum():item() - linalg.inv(mm)[3]:sum():item()) / 2e-6
      H.close(mr.grad[i][j], fd, 1e-6, 'inv gradient ' .. i .. ',' .. j)
    end
    -- gradients through the blocked factors (the backward's transposed solves)
    local g = (torch.randn(33, 33, { dtype = torch.float64 }) + torch.eye(33, { dtype = torch.float64 }) * 33):requires_grad_()
    local rhs = torch.randn(33, { dtype = torch.float64 })
    local y = linalg.solve(g, rhs)
    y:sum():backward()
    -- d(sum x)/dB = A^-T 1, d/dA = -(A^-T 1) x^T
    local w = solve_ref(g:detach():t():totable(), (function() local o = {} for i = 1, 33 do o[i] = { 1 } end return o end)())
    local xs = y:detach():totable()
    for i = 1, 33, 8 do
      for j = 1, 33, 8 do H.close(g.grad[i][j], -w[i][1] * xs[j], 1e-9, 'gA ' .. i .. ',' .. j) end
    end
  end)

  it('inv at larger orders: against Gauss-Jordan, batches, one large matrix, singular ones, empty ones', function()
    torch.manual_seed(12)
    local f64 = torch.float64
    -- a batch of 3, laid out transposed, against Gauss-Jordan in float64
    for _, dt in ipairs { f64, torch.float32 } do
      local n, tol = 45, dt == f64 and 1e-12 or 2e-6
      local a = (torch.randn(3, n, n, { dtype = f64 }) + torch.eye(n, { dtype = f64 }) * n):transpose(-2, -1):to(dt)
      local x = linalg.inv(a)
      assert.is_true(x:is_contiguous())
      local eye = torch.eye(n, { dtype = f64 }):totable()
      for q = 1, 3 do H.assert_values(x[q], solve_ref(a[q]:double():totable(), eye), tol, 'inv ' .. q) end
      -- small matrices (lu.c's loops): a batch of 2 x 2
      local s = torch.tensor({ { { 4.0, 7 }, { 2, 6 } }, { { 0.0, 1 }, { 1, 0 } } }, { dtype = dt })
      H.assert_values(linalg.inv(s), { { { 0.6, -0.7 }, { -0.2, 0.4 } }, { { 0, 1 }, { 1, 0 } } }, tol, '2 x 2')
    end
    -- one large matrix (several panels and blocks, both threads): A X = I, float32 and float64; the input left
    -- as it was by inv and by lu_factor (which factor copies of it)
    local big = torch.randn(300, 300, { dtype = f64 }) + torch.eye(300, { dtype = f64 }) * 300
    local kept = big:clone()
    for _, dt in ipairs { f64, torch.float32 } do
      local r = big:to(dt):matmul(linalg.inv(big:to(dt))) - torch.eye(300, { dtype = dt })
      H.assert_values(r:abs():amax(), 0, dt == f64 and 1e-11 or 1e-4, 'A inv(A) = I at 300, ' .. tostring(dt))
    end
    local lu_big, piv_big = linalg.lu_factor(big)
    assert.is_true(big:equal(kept))
    local p, l, u = torch.lu_unpack(lu_big, piv_big)
    H.assert_values((p:matmul(l):matmul(u) - big):abs():amax(), 0, 1e-12 * 300, 'P L U = A at 300')
    -- a zero column 5 at order 33: PyTorch's error with the pivot; inv_ex's info,
    -- and an inverse of infs or NaNs (the identity solved with the factors)
    local z = torch.randn(33, 33, { dtype = f64 }) + torch.eye(33, { dtype = f64 }) * 33
    z:select(2, 5):zero_()
    H.raises(function() return linalg.inv(z) end,
      'linalg.inv: The diagonal element 5 is zero, the inversion could not be completed because the input matrix is singular.')
    local e = torch.eye(33, { dtype = f64 })
    H.raises(function() return linalg.inv(torch.stack({ e, e, z })) end, 'linalg.inv: (Batch element 3): The diagonal element 5')
    local zi, info = linalg.inv_ex(torch.stack({ z, e * 4 }))
    assert.are.same({ 5, 0 }, info:totable())
    assert.are.equal(torch.int32, info.dtype)
    assert.is_false(zi[1]:isfinite():all():item())
    H.assert_values(zi[2], (e / 4):totable(), 0, 'the regular one beside it')
    -- empty batches and 0 x 0 matrices
    assert.are.same({ 0, 3, 3 }, linalg.inv(torch.zeros(0, 3, 3)):size())
    local i0, info0 = linalg.inv_ex(torch.zeros(2, 0, 0))
    assert.are.same({ 2, 0, 0 }, i0:size())
    assert.are.same({ 0, 0 }, info0:totable())
    -- the gradient -X^T g X^T, and the second derivative, by finite differences
    local m = (torch.randn(3, 3, { dtype = f64 }) + torch.eye(3, { dtype = f64 }) * 3):requires_grad_()
    assert.is_true(torch.autograd.gradgradcheck(function(t) return linalg.inv(t) end, { m }))
  end)
end)
