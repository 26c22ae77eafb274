-- torch.linalg's decompositions (lua/torch/decompositions.lua over core/lapack.c and core/lu.c):
-- Cholesky against the Cholesky-Banachiewicz recurrence, QR against modified Gram-Schmidt, eigh
-- and the singular values against the cyclic Jacobi method, triangular solves against
-- substitution, all written here on plain Lua tables in float64; the factors' defining properties
-- (products, orthogonality, triangles); what is composed from them (pinv by the Moore-Penrose
-- conditions, matrix_rank, lstsq against the normal equations, cond and the spectral norms); the
-- gradients by finite differences; the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local linalg = torch.linalg
local gradcheck = torch.autograd.gradcheck
local f64 = torch.float64

-- ---- references on Lua tables ----

local zeros, matmul = H.zeros_table, H.matmul_table

local function transpose(a)
  local t = zeros(#a[1], #a)
  for i = 1, #a do for j = 1, #a[1] do t[j][i] = a[i][j] end end
  return t
end

-- L with A = L L^T, or nil, k: the order of the first leading minor that is not positive
local function cholesky_ref(a)
  local n = #a
  local l = zeros(n, n)
  for j = 1, n do
    local d = a[j][j]
    for k = 1, j - 1 do d = d - l[j][k] ^ 2 end
    if not (d > 0) then return nil, j end
    l[j][j] = math.sqrt(d)
    for i = j + 1, n do
      local s = a[i][j]
      for k = 1, j - 1 do s = s - l[i][k] * l[j][k] end
      l[i][j] = s / l[j][j]
    end
  end
  return l
end

-- modified Gram-Schmidt: Q (m x n) with orthonormal columns, R (n x n) upper with a positive
-- diagonal (A of full column rank)
local function qr_ref(a)
  local m, n = #a, #a[1]
  local q, r = zeros(m, n), zeros(n, n)
  for i = 1, m do for j = 1, n do q[i][j] = a[i][j] end end
  for j = 1, n do
    local nrm = 0
    for i = 1, m do nrm = nrm + q[i][j] ^ 2 end
    nrm = math.sqrt(nrm)
    r[j][j] = nrm
    for i = 1, m do q[i][j] = q[i][j] / nrm end
    for k = j + 1, n do
      local d = 0
      for i = 1, m do d = d + q[i][j] * q[i][k] end
      r[j][k] = d
      for i = 1, m do q[i][k] = q[i][k] - d * q[i][j] end
    end
  end
  return q, r
end

-- cyclic Jacobi rotations on symmetric a: the eigenvalues ascending and the eigenvectors as the
-- columns of v, in the same order
local function jacobi_ref(a)
  local n = #a
  local s, v = zeros(n, n), zeros(n, n)
  for i = 1, n do
    v[i][i] = 1
    for j = 1, n do s[i][j] = a[i][j] end
  end
  for _ = 1, 100 do
    local off = 0
    for i = 1, n do for j = 1, n do if i ~= j then off = off + s[i][j] ^ 2 end end end
    if off < 1e-30 then break end
    for p = 1, n - 1 do
      for q = p + 1, n do
        if s[p][q] ~= 0 then
          local theta = (s[q][q] - s[p][p]) / (2 * s[p][q])
          local t = (theta >= 0 and 1 or -1) / (math.abs(theta) + math.sqrt(theta * theta + 1))
          local c = 1 / math.sqrt(t * t + 1)
          local sn = t * c
          for k = 1, n do -- columns p, q of s, then rows p, q; the same columns of v
            local skp, skq = s[k][p], s[k][q]
            s[k][p], s[k][q] = c * skp - sn * skq, sn * skp + c * skq
          end
          for k = 1, n do
            local spk, sqk = s[p][k], s[q][k]
            s[p][k], s[q][k] = c * spk - sn * sqk, sn * spk + c * sqk
          end
          for k = 1, n do
            local vkp, vkq = v[k][p], v[k][q]
            v[k][p], v[k][q] = c * vkp - sn * vkq, sn * vkp + c * vkq
          end
        end
      end
    end
  end
  local order = {}
  for i = 1, n do order[i] = i end
  table.sort(order, function(x, y) return s[x][x] < s[y][y] end)
  local w, vs = {}, zeros(n, n)
  for c, i in ipairs(order) do
    w[c] = s[i][i]
    for k = 1, n do vs[k][c] = v[k][i] end
  end
  return w, vs
end

-- the singular values of a, descending: the square roots of A^T A's (or A A^T's) eigenvalues
local function singular_ref(a)
  local g = #a >= #a[1] and matmul(transpose(a), a) or matmul(a, transpose(a))
  local w = jacobi_ref(g)
  local s = {}
  for i = #w, 1, -1 do s[#s + 1] = math.sqrt(math.max(w[i], 0)) end
  return s
end

-- x with op(A) x = b by substitution, A triangular (upper or lower), op(A) = A^T when trans
local function trisolve_ref(a, b, upper, trans, unit)
  local n, k = #a, #b[1]
  local function e(i, j) if trans then return a[j][i] end return a[i][j] end
  local up = upper ~= trans
  local x = zeros(n, k)
  for step = 1, n do
    local i = up and n + 1 - step or step
    for c = 1, k do
      local s = b[i][c]
      for j = 1, n do
        if (up and j > i) or (not up and j < i) then s = s - e(i, j) * x[j][c] end
      end
      x[i][c] = unit and s or s / a[i][i]
    end
  end
  return x
end

local function spd(n, seed, dtype)
  torch.manual_seed(seed)
  local x = torch.randn(n, n, { dtype = f64 })
  return (x:matmul(x:t()) + torch.eye(n, { dtype = f64 }) * n):to(dtype or f64)
end

local function eye(n, dtype) return torch.eye(n, { dtype = dtype or f64 }) end

-- |x - y| elementwise at most tol (relative to y's largest element)
local function near(x, y, tol, msg)
  local scale = 1 + y:double():abs():max():item()
  local d = (x:double() - y:double()):abs():max():item()
  assert(d <= tol * scale, string.format('%s: differ by %g (tolerance %g)', msg or 'tensors', d, tol * scale))
end

describe('linalg.cholesky', function()
  -- orders up to 16 are factored by lutorch's own loops, larger ones by LAPACK's potrf
  for _, n in ipairs { 5, 24 } do
    it(('matches the Cholesky-Banachiewicz recurrence, lower and upper, batched, on a transposed batch (order %d)')
      :format(n), function()
      for _, dt in ipairs { f64, torch.float32 } do
        local tol = dt == f64 and 1e-12 or 2e-6 * (n / 5)
        local a = spd(n, 1, dt)
        local ref = cholesky_ref(a:double():totable())
        local l = linalg.cholesky(a)
        assert.are.equal(dt, l.dtype)
        H.assert_values(l, ref, tol, 'L')
        H.assert_values(linalg.cholesky(a, { upper = true }), transpose(ref), tol, 'U')
        H.assert_values(torch.cholesky(a, true), transpose(ref), tol, 'torch.cholesky upper')
        -- only the lower triangle is read (the upper one with upper = true); the change keeps the
        -- matrix positive-definite, so that a factorisation reading it would succeed, differently
        local junk = a:clone()
        junk[1][n] = junk[1][n] + 0.5
        H.assert_values(linalg.cholesky(junk), ref, tol, 'the upper triangle is not read')
        junk = a:clone()
        junk[n][1] = junk[n][1] + 0.5
        H.assert_values(linalg.cholesky(junk, { upper = true }), transpose(ref), tol, 'the lower triangle is not read')
        -- a batch laid out with the batch dimension last, permuted to the front
        local b = torch.stack({ a, spd(n, 2, dt) }, 3):permute(3, 1, 2)
        assert.is_false(b:is_contiguous())
        local lb = linalg.cholesky(b)
        H.assert_values(lb[2], cholesky_ref(spd(n, 2):totable()), tol, 'batch element 2')
        near(lb:matmul(lb:transpose(-2, -1)), b, tol * 4, 'L L^T')
      end
    end)
  end

  it('cholesky_ex gives info, the order of the first minor that is not positive-definite; cholesky raises', function()
    local a = spd(4, 3)
    a[3][3] = -50 -- the third leading minor is no longer positive
    local _, k = cholesky_ref(a:totable())
    assert.are.equal(3, k)
    local _, info = linalg.cholesky_ex(a)
    assert.are.equal(3, info:item())
    local batch = torch.stack({ spd(4, 4), a })
    local _, infos = linalg.cholesky_ex(batch)
    H.assert_values(infos, { 0, 3 })
    assert.are.equal(torch.int64, infos.dtype)
    H.raises(function() return linalg.cholesky(a) end, 'linalg.cholesky', 'not positive-definite',
      'leading minor of order 3')
    H.raises(function() return linalg.cholesky(batch) end, '(batch element 2)', 'order 3')
    H.raises(function() return linalg.cholesky(torch.ones(2, 3, { dtype = f64 })) end, 'linalg.cholesky', 'square')
    H.raises(function() return linalg.cholesky(torch.ones(3, 3, { dtype = torch.int64 })) end, 'cholesky', 'int64')
    H.raises(function() return linalg.cholesky(torch.ones(3, { dtype = f64 })) end, 'cholesky', 'at least 2')
    H.raises(function() return linalg.cholesky('x') end, 'cholesky', 'must be a tensor')
  end)

  it('passes gradients (finite differences), lower and upper, through symmetric inputs', function()
    torch.manual_seed(5)
    local x = torch.randn(4, 4, { dtype = f64 }):requires_grad_()
    local function sym_pd(t) return t:matmul(t:t()) + eye(4) * 4 end
    assert.is_true(gradcheck(function(t) return linalg.cholesky(sym_pd(t)) end, { x }))
    assert.is_true(gradcheck(function(t) return linalg.cholesky(sym_pd(t), { upper = true }) end, { x }))
    local xb = torch.randn(2, 3, 3, { dtype = f64 }):requires_grad_()
    assert.is_true(gradcheck(function(t) return linalg.cholesky(t:matmul(t:transpose(2, 3)) + eye(3) * 3) end, { xb }))
    -- the gradient is symmetric, as PyTorch's
    local a = spd(4, 6):requires_grad_()
    linalg.cholesky(a):sum():backward()
    near(a.grad, a.grad:t(), 1e-12, 'symmetric gradient')
  end)

  it('cholesky_solve and cholesky_inverse against solve and inv', function()
    local a = spd(4, 7)
    torch.manual_seed(8)
    local b = torch.randn(4, 2, { dtype = f64 })
    local l = linalg.cholesky(a)
    near(torch.cholesky_solve(b, l), linalg.solve(a, b), 1e-10, 'cholesky_solve')
    near(torch.cholesky_solve(b, l:t(), true), linalg.solve(a, b), 1e-10, 'cholesky_solve upper')
    near(torch.cholesky_inverse(l), linalg.inv(a), 1e-10, 'cholesky_inverse')
    local lr = l:clone():requires_grad_()
    local br = b:clone():requires_grad_()
    assert.is_true(gradcheck(function(t, u) return torch.cholesky_solve(u, t:tril()) end, { lr, br }))
  end)
end)

describe('linalg.solve_triangular', function()
  it('matches substitution: upper and lower, left and right, unitriangular, broadcast batches, transposed inputs', function()
    torch.manual_seed(11)
    for _, dt in ipairs { f64, torch.float32 } do
      local tol = dt == f64 and 1e-12 or 1e-5
      local a = (torch.randn(4, 4, { dtype = f64 }) + eye(4) * 4):to(dt)
      local b = torch.randn(4, 3, { dtype = f64 }):to(dt)
      local at, bt = a:double():totable(), b:double():totable()
      for _, upper in ipairs { true, false } do
        for _, unit in ipairs { false, true } do
          local x = linalg.solve_triangular(a, b, { upper = upper, unitriangular = unit })
          assert.are.equal(dt, x.dtype)
          H.assert_values(x, trisolve_ref(at, bt, upper, false, unit), tol, 'left ' .. tostring(upper))
          -- X A = B for B (3 x 4): A^T X^T = B^T
          local xr = linalg.solve_triangular(a, b:t(), { upper = upper, left = false, unitriangular = unit })
          H.assert_values(xr, transpose(trisolve_ref(at, bt, upper, true, unit)), tol, 'right ' .. tostring(upper))
        end
      end
      -- a transposed A (non-contiguous) is the other triangle of the same matrix
      local x = linalg.solve_triangular(a:t(), b, true)
      H.assert_values(x, trisolve_ref(transpose(at), bt, true, false, false), tol, 'transposed A')
      -- a batch of A against one B, broadcast
      local ab = torch.stack({ a, a * 2 })
      local xb = linalg.solve_triangular(ab, b, { upper = false })
      assert.are.same({ 2, 4, 3 }, { xb:size(1), xb:size(2), xb:size(3) })
      H.assert_values(xb[2], trisolve_ref(matmul(at, { { 2, 0, 0, 0 }, { 0, 2, 0, 0 }, { 0, 0, 2, 0 }, { 0, 0, 0, 2 } }),
        bt, false, false, false), tol, 'broadcast batch')
    end
  end)

  it('from order 32 up (blocked) as by substitution, every triangle, transpose and diagonal', function()
    torch.manual_seed(13)
    for _, dt in ipairs { f64, torch.float32 } do
      local tol = dt == f64 and 1e-11 or 1e-4
      local a = (torch.randn(40, 40, { dtype = f64 }) * 0.1 + eye(40) * 2):to(dt)
      local b = torch.randn(40, 5, { dtype = f64 }):to(dt)
      local at, bt = a:double():totable(), b:double():totable()
      for _, upper in ipairs { true, false } do
        for _, unit in ipairs { false, true } do
          for _, trans in ipairs { false, true } do
            local x = torch._solve_triangular(a, b, upper, trans, unit)
            H.assert_values(x, trisolve_ref(at, bt, upper, trans, unit), tol,
              string.format('upper %s unit %s trans %s', upper, unit, trans))
          end
        end
      end
    end
  end)

  it('passes gradients to both A (its triangle only) and B', function()
    torch.manual_seed(12)
    local a = (torch.randn(3, 3, { dtype = f64 }) + eye(3) * 3):requires_grad_()
    local b = torch.randn(3, 2, { dtype = f64 }):requires_grad_()
    for _, o in ipairs { { upper = true }, { upper = false }, { upper = true, left = false }, { upper = false, unitriangular = true } } do
      local bb = o.left == false and b:t():detach():requires_grad_() or b
      assert.is_true(gradcheck(function(t, u) return linalg.solve_triangular(t, u, o) end, { a, bb }))
    end
    local x = linalg.solve_triangular(a, b, { upper = true })
    x:sum():backward()
    H.assert_values(a.grad:tril(-1), zeros(3, 3), 0, 'no gradient below the diagonal')
  end)

  it('errors', function()
    local a, b = eye(3), torch.ones(3, 2, { dtype = f64 })
    H.raises(function() return linalg.solve_triangular(a, b) end, 'solve_triangular', 'upper must be given')
    H.raises(function() return linalg.solve_triangular(a, b:float(), true) end, 'solve_triangular', 'float32')
    H.raises(function() return linalg.solve_triangular(a, torch.ones(4, 2, { dtype = f64 }), true) end,
      'solve_triangular', 'has 4 rows')
    H.raises(function() return linalg.solve_triangular(torch.ones(2, 3, { dtype = f64 }), b, true) end, 'square')
    H.raises(function()
      return linalg.solve_triangular(torch.ones(2, 3, 3, { dtype = f64 }), torch.ones(4, 3, 1, { dtype = f64 }), true)
    end, 'solve_triangular', 'do not broadcast')
  end)
end)

describe('linalg.qr', function()
  -- Q and R with R's diagonal made positive (the unique factorisation Gram-Schmidt gives)
  local function normalised(q, r)
    local k = math.min(q:size(-1), r:size(-2))
    local sign = r:diagonal(0, -2, -1):narrow(-1, 1, k):sign()
    return q:narrow(-1, 1, k) * sign:unsqueeze(-2), r:narrow(-2, 1, k) * sign:unsqueeze(-1)
  end

  it('reduced: against modified Gram-Schmidt for tall and square, float64 and float32, transposed input', function()
    torch.manual_seed(21)
    for _, dt in ipairs { f64, torch.float32 } do
      local tol = dt == f64 and 1e-11 or 2e-5
      for _, shape in ipairs { { 5, 3 }, { 4, 4 } } do
        local a = torch.randn(shape[1], shape[2], { dtype = f64 }):to(dt)
        local q, r = linalg.qr(a)
        assert.are.same({ shape[1], math.min(shape[1], shape[2]) }, { q:size(1), q:size(2) })
        H.assert_values(r:tril(-1), zeros(r:size(1), r:size(2)), 0, 'R is upper triangular')
        near(q:matmul(r), a, tol, 'Q R = A')
        local qref, rref = qr_ref(a:double():totable())
        local qn, rn = normalised(q, r)
        H.assert_values(qn, qref, tol, 'Q')
        H.assert_values(rn, rref, tol, 'R')
      end
      local at = torch.randn(3, 5, { dtype = f64 }):to(dt):t() -- 5 x 3, not contiguous
      local q, r = linalg.qr(at)
      near(q:matmul(r), at, tol, 'transposed input')
    end
  end)

  it('wide, complete and r modes, batches, torch.qr', function()
    torch.manual_seed(22)
    local wide = torch.randn(3, 5, { dtype = f64 })
    local q, r = linalg.qr(wide)
    assert.are.same({ 3, 3, 3, 5 }, { q:size(1), q:size(2), r:size(1), r:size(2) })
    near(q:matmul(r), wide, 1e-12, 'wide Q R')
    near(q:t():matmul(q), eye(3), 1e-12, 'wide Q orthogonal')
    local tall = torch.randn(5, 3, { dtype = f64 })
    local qc, rc = linalg.qr(tall, 'complete')
    assert.are.same({ 5, 5, 5, 3 }, { qc:size(1), qc:size(2), rc:size(1), rc:size(2) })
    near(qc:t():matmul(qc), eye(5), 1e-12, 'complete Q orthogonal')
    near(qc:matmul(rc), tall, 1e-12, 'complete Q R')
    H.assert_values(rc:narrow(1, 4, 2), zeros(2, 3), 0, "complete R's extra rows are zero")
    local qe, re = linalg.qr(tall, { mode = 'r' })
    assert.are.equal(0, qe:numel())
    near(re:abs(), rc:narrow(1, 1, 3):abs(), 1e-12, "mode 'r'")
    local q2, r2 = torch.qr(tall, false)
    assert.are.same({ 5, 5 }, { q2:size(1), q2:size(2) })
    local batch = torch.randn(2, 3, 4, 3, { dtype = f64 })
    local qb, rb = linalg.qr(batch)
    near(qb:matmul(rb), batch, 1e-12, 'batched Q R')
    local qs, rs = linalg.qr(batch[2][3])
    near(qb[2][3], qs, 1e-12, 'a batch element alone')
    -- empty matrices
    local q0, r0 = linalg.qr(torch.zeros(3, 0, { dtype = f64 }), 'complete')
    near(q0, eye(3), 0, 'the Q of an empty matrix')
    assert.are.same({ 3, 0 }, { r0:size(1), r0:size(2) })
  end)

  it('passes gradients for tall, square and wide inputs; complete tall and r are not differentiable', function()
    torch.manual_seed(23)
    for _, shape in ipairs { { 5, 3 }, { 3, 3 }, { 3, 5 } } do
      local a = torch.randn(shape[1], shape[2], { dtype = f64 }):requires_grad_()
      assert.is_true(gradcheck(function(t) return linalg.qr(t) end, { a }), 'Q and R')
      assert.is_true(gradcheck(function(t) local _, r = linalg.qr(t) return r end, { a }), 'R alone')
    end
    local sq = torch.randn(3, 3, { dtype = f64 }):requires_grad_()
    assert.is_true(gradcheck(function(t) return linalg.qr(t, 'complete') end, { sq }), 'complete, square')
    local a = torch.randn(5, 3, { dtype = f64 }):requires_grad_()
    local q = linalg.qr(a, 'complete')
    H.raises(function() q:sum():backward() end, "not differentiable when mode='complete' and nrows > ncols")
    local _, r = linalg.qr(a, 'r')
    H.raises(function() r:sum():backward() end, "mode='r'")
    H.raises(function() return linalg.qr(a, 'thin') end, 'linalg.qr', 'mode must be')
  end)
end)

describe('linalg.eigh', function()
  it('eigenvalues and eigenvectors against the Jacobi method, both triangles, batched, float32', function()
    for _, dt in ipairs { f64, torch.float32 } do
      local tol = dt == f64 and 1e-10 or 5e-5
      torch.manual_seed(31)
      local x = torch.randn(5, 5, { dtype = f64 })
      local a = (x + x:t()):to(dt)
      local w, v = linalg.eigh(a)
      local wref, vref = jacobi_ref(a:double():totable())
      H.assert_values(w, wref, tol, 'eigenvalues')
      -- eigenvectors up to sign
      local vv = v:double()
      for c = 1, 5 do
        local col, refcol = vv:select(2, c), torch.tensor(vref, { dtype = f64 }):select(2, c)
        local s = col:dot(refcol):item() < 0 and -1 or 1
        near(col * s, refcol, tol * 10, 'eigenvector ' .. c)
      end
      near(a:double():matmul(vv), vv * w:double():unsqueeze(1), tol * 10, 'A V = V diag(w)')
      near(linalg.eigvalsh(a), w, tol, 'eigvalsh')
      -- the triangle read: 'L' the lower, 'U' the upper
      local lower_only = a:tril() + a:tril(-1):t()
      local messy = a:tril() + torch.ones(5, 5, { dtype = dt }):triu(1) * 100
      near(linalg.eigvalsh(messy), linalg.eigvalsh(lower_only), tol, "UPLO 'L'")
      near(linalg.eigvalsh(messy:t(), 'U'), linalg.eigvalsh(lower_only), tol, "UPLO 'U'")
      near(linalg.eigh(messy:t(), { UPLO = 'U' }), w, tol, "UPLO 'U' in a table")
    end
    local b = torch.stack({ spd(3, 1), spd(3, 2) })
    local wb = linalg.eigvalsh(b)
    near(wb[2], linalg.eigvalsh(spd(3, 2)), 1e-12, 'batched')
    near(wb:sum(-1), b:diagonal(0, -2, -1):sum(-1), 1e-10, 'the eigenvalues sum to the trace')
  end)

  it('passes gradients: eigenvalues, sign-free functions of the eigenvectors, symmetric result', function()
    torch.manual_seed(32)
    local x = torch.randn(4, 4, { dtype = f64 }):requires_grad_()
    local function sym(t) return t + t:t() end
    assert.is_true(gradcheck(function(t) return linalg.eigvalsh(sym(t)) end, { x }), 'eigvalsh')
    assert.is_true(gradcheck(function(t) local w, v = linalg.eigh(sym(t)) return w, v * v end, { x }), 'eigh')
    assert.is_true(gradcheck(function(t)
      local w, v = linalg.eigh(sym(t))
      return v:matmul(torch.diag(w:exp())):matmul(v:t()) -- the matrix exponential
    end, { x }), 'expm through eigh')
    local a = sym(torch.randn(4, 4, { dtype = f64 })):requires_grad_()
    local w, v = linalg.eigh(a);
    ((v * v):sum(1) * w + (v:select(2, 1) ^ 3):sum()):sum():backward()
    near(a.grad, a.grad:t(), 1e-10, 'symmetric gradient')
  end)

  it('errors', function()
    H.raises(function() return linalg.eigh(torch.ones(2, 3, { dtype = f64 })) end, 'linalg.eigh', 'square')
    H.raises(function() return linalg.eigh(eye(2), 'X') end, 'linalg.eigh', "UPLO must be 'L' or 'U'")
    H.raises(function() return linalg.eigvalsh(torch.tensor({ { 0 / 0, 1 }, { 1, 1 } })) end, 'eigvalsh', 'non-finite')
    H.raises(function() return linalg.eigh(torch.ones(2, 2, { dtype = torch.float16 })) end, 'eigh', 'float16')
  end)
end)

describe('linalg.svd', function()
  it('singular values against the Jacobi method; U S Vh = A with orthonormal factors; full and reduced', function()
    for _, dt in ipairs { f64, torch.float32 } do
      local tol = dt == f64 and 1e-10 or 5e-5
      torch.manual_seed(41)
      for _, shape in ipairs { { 5, 3 }, { 3, 5 }, { 4, 4 } } do
        local m, n = shape[1], shape[2]
        local k = math.min(m, n)
        local a = torch.randn(m, n, { dtype = f64 }):to(dt)
        local u, s, vh = linalg.svd(a, false)
        H.assert_values(s, singular_ref(a:double():totable()), tol, 'singular values')
        assert.are.same({ m, k, k, n }, { u:size(1), u:size(2), vh:size(1), vh:size(2) })
        near(u:matmul(torch.diag(s)):matmul(vh), a, tol, 'U S Vh')
        near(u:t():matmul(u), eye(k, dt), tol, 'U orthonormal')
        near(vh:matmul(vh:t()), eye(k, dt), tol, 'Vh orthonormal')
        local uf, sf, vhf = linalg.svd(a) -- full_matrices by default, as PyTorch
        assert.are.same({ m, m, n, n }, { uf:size(1), uf:size(2), vhf:size(1), vhf:size(2) })
        near(uf:t():matmul(uf), eye(m, dt), tol, 'full U orthogonal')
        near(vhf:matmul(vhf:t()), eye(n, dt), tol, 'full Vh orthogonal')
        near(sf, s, tol, 'full S')
        near(linalg.svdvals(a), s, tol, 'svdvals')
        local tu, ts, tv = torch.svd(a)
        near(tu:matmul(torch.diag(ts)):matmul(tv:t()), a, tol, 'torch.svd gives V')
      end
    end
    local b = torch.randn(2, 4, 3, { dtype = f64 }):transpose(2, 3) -- 2 x 3 x 4, not contiguous
    local ub, sb, vhb = linalg.svd(b, { full_matrices = false })
    near(ub:matmul(sb:unsqueeze(-1) * vhb), b, 1e-12, 'batched, transposed')
    near(sb[2], linalg.svdvals(b[2]:contiguous()), 1e-12, 'a batch element alone')
    local u0, s0 = linalg.svd(torch.zeros(3, 0, { dtype = f64 }))
    near(u0, eye(3), 0, 'the U of an empty matrix')
    assert.are.equal(0, s0:numel())
    local _, sz, _ = torch.svd(torch.ones(3, 2, { dtype = f64 }), true, false)
    H.assert_values(sz, { math.sqrt(6), 0 }, 1e-12, 'compute_uv = false')
  end)

  it('passes gradients: svdvals, sign-free functions of U and Vh, tall, wide and square', function()
    torch.manual_seed(42)
    for _, shape in ipairs { { 4, 3 }, { 3, 4 }, { 3, 3 } } do
      local a = torch.randn(shape[1], shape[2], { dtype = f64 }):requires_grad_()
      assert.is_true(gradcheck(function(t) return linalg.svdvals(t) end, { a }), 'svdvals')
      assert.is_true(gradcheck(function(t) local u = linalg.svd(t, false) return u * u end, { a }), 'U')
      assert.is_true(gradcheck(function(t) local _, _, vh = linalg.svd(t, false) return vh * vh end, { a }), 'Vh')
      assert.is_true(gradcheck(function(t)
        local u, s, vh = linalg.svd(t, false)
        return u:matmul(vh), s
      end, { a }), 'U Vh (the polar factor) and S')
      assert.is_true(gradcheck(function(t) local u, s, vh = linalg.svd(t) return s, u:narrow(2, 1, math.min(shape[1], shape[2])) ^ 2 end, { a }),
        'full matrices')
    end
    -- the singular values of a rank-deficient matrix still pass finite gradients
    local r = torch.ones(3, 3, { dtype = f64 }):requires_grad_()
    linalg.svdvals(r):sum():backward()
    assert.is_true(r.grad:isfinite():all():item())
  end)

  it('errors', function()
    H.raises(function() return linalg.svd(torch.tensor({ { 1, 0 / 0 }, { 1, 1 } })) end, 'linalg.svd', 'non-finite')
    H.raises(function() return linalg.svdvals(torch.ones(3, { dtype = f64 })) end, 'svdvals', 'at least 2')
    H.raises(function() return linalg.svd(torch.ones(2, 2, { dtype = torch.int32 })) end, 'svd', 'int32')
  end)
end)

describe('devices', function()
  it('keep results on the arguments\' CPU device; two devices are the mixed-device error', function()
    local a = spd(4, 71):to('cpu:1')
    local l = linalg.cholesky(a)
    assert.are.equal('cpu:1', tostring(l.device))
    local u, s, vh = linalg.svd(a)
    assert.are.equal('cpu:1', tostring(u.device))
    assert.are.equal('cpu:1', tostring(linalg.inv(a).device))
    near(l:cpu(), linalg.cholesky(a:cpu()), 0, 'the same factor')
    H.raises(function() return linalg.solve(a, torch.ones(4, 1, { dtype = f64 })) end, 'linalg.solve',
      'same device', 'cpu:1', 'cpu:0')
    H.raises(function() return linalg.solve_triangular(a, torch.ones(4, 1, { dtype = f64 }), true) end,
      'linalg.solve_triangular', 'same device')
  end)
end)

describe('large batches (split over the threads)', function()
  it('give each matrix the factors it has alone', function()
    torch.manual_seed(61)
    local x = torch.randn(400, 8, 8, { dtype = f64 })
    local a = x:matmul(x:transpose(2, 3)) + eye(8) * 8
    local l = linalg.cholesky(a)
    local w, v = linalg.eigh(a)
    local q, r = linalg.qr(x)
    local u, s, vh = linalg.svd(x, false)
    near(l:matmul(l:transpose(2, 3)), a, 1e-12, 'L L^T')
    near(q:matmul(r), x, 1e-12, 'Q R')
    near(u:matmul(s:unsqueeze(-1) * vh), x, 1e-12, 'U S Vh')
    near(v:matmul(w:unsqueeze(-1) * v:transpose(2, 3)), a, 1e-10, 'V W V^T')
    for _, i in ipairs { 1, 137, 200, 201, 400 } do
      near(l[i], linalg.cholesky(a[i]), 0, 'cholesky ' .. i)
      near(w[i], (linalg.eigh(a[i])), 0, 'eigh ' .. i)
      near(r[i], select(2, linalg.qr(x[i])), 0, 'qr ' .. i)
      near(s[i], select(2, linalg.svd(x[i], false)), 0, 'svd ' .. i)
    end
    local bad = a:clone()
    bad[300][4][4] = -1e3
    local _, info = linalg.cholesky_ex(bad)
    assert.are.equal(4, info[300])
    assert.are.equal(0, info:ne(0):sum():item() - 1)
  end)
end)

describe('one large matrix (LAPACK\'s blocked code)', function()
  it('factors as the same matrix in a batch (split over the threads), by the factors\' defining products', function()
    torch.manual_seed(62)
    local n = 300
    for _, dt in ipairs { f64, torch.float32 } do
      local tol = dt == f64 and 1e-11 or 2e-4
      local x = torch.randn(n, n, { dtype = f64 })
      local a = (x:matmul(x:t()) / n + eye(n)):to(dt)
      x = x:to(dt)
      local l = linalg.cholesky(a)
      near(l:matmul(l:t()), a, tol, 'L L^T')
      local q, r = linalg.qr(x)
      near(q:matmul(r), x, tol, 'Q R')
      near(q:t():matmul(q), eye(n, dt), tol, 'Q^T Q')
      local w, v = linalg.eigh(a)
      near(a:matmul(v), v * w:unsqueeze(-2), tol, 'A V = V W')
      near(linalg.eigvalsh(a), w, tol, 'eigvalsh')
      local u, sv, vh = linalg.svd(x, false)
      near(u:matmul(sv:unsqueeze(-1) * vh), x, tol, 'U S Vh')
      near(linalg.svdvals(x), sv, tol, 'svdvals')
      -- the same matrices twice in a batch: one matrix a thread
      local two = torch.stack({ a, a })
      near(linalg.cholesky(two)[2], l, tol, 'cholesky in a batch')
      near(linalg.eigvalsh(two)[2], w, tol, 'eigvalsh in a batch')
      near(linalg.svdvals(torch.stack({ x, x }))[1], sv, tol, 'svdvals in a batch')
      near(select(2, linalg.qr(torch.stack({ x, x })))[2]:abs(), r:abs(), tol, 'R in a batch')
    end
  end)
end)

describe('composed from the decompositions', function()
  it('pinv satisfies the Moore-Penrose conditions; equals (A^T A)^-1 A^T at full rank; J / (m n) for ones', function()
    torch.manual_seed(51)
    for _, shape in ipairs { { 5, 3 }, { 3, 5 } } do
      local a = torch.randn(shape[1], shape[2], { dtype = f64 })
      local p = linalg.pinv(a)
      near(a:matmul(p):matmul(a), a, 1e-12, 'A P A = A')
      near(p:matmul(a):matmul(p), p, 1e-12, 'P A P = P')
      near(a:matmul(p), a:matmul(p):t(), 1e-12, 'A P symmetric')
      near(p:matmul(a), p:matmul(a):t(), 1e-12, 'P A symmetric')
    end
    local tall = torch.randn(5, 3, { dtype = f64 })
    near(linalg.pinv(tall), linalg.inv(tall:t():matmul(tall)):matmul(tall:t()), 1e-12, 'full column rank')
    near(linalg.pinv(torch.ones(3, 4, { dtype = f64 })), torch.ones(4, 3, { dtype = f64 }) / 12, 1e-12, 'ones')
    near(torch.pinverse(torch.ones(3, 4, { dtype = f64 })), torch.ones(4, 3, { dtype = f64 }) / 12, 1e-12, 'pinverse')
    local s = spd(4, 52)
    near(linalg.pinv(s, { hermitian = true }), linalg.inv(s), 1e-12, 'hermitian')
    -- singular values under atol are dropped: diag(3, 1e-3) with atol 0.01 inverts only the 3
    local d = torch.diag(torch.tensor({ 3, 1e-3 }, { dtype = f64 }))
    H.assert_values(linalg.pinv(d, { atol = 0.01 }), { { 1 / 3, 0 }, { 0, 0 } }, 1e-12, 'atol')
    H.assert_values(linalg.pinv(d), { { 1 / 3, 0 }, { 0, 1000 } }, 1e-9, 'default tolerance')
    local a = torch.randn(4, 3, { dtype = f64 }):requires_grad_()
    assert.is_true(gradcheck(function(t) return linalg.pinv(t) end, { a }))
  end)

  it('matrix_rank counts the singular values above the tolerance', function()
    torch.manual_seed(53)
    assert.are.equal(1, linalg.matrix_rank(torch.ones(3, 4, { dtype = f64 })):item())
    assert.are.equal(4, linalg.matrix_rank(eye(4)):item())
    local u, v = torch.randn(5, 2, { dtype = f64 }), torch.randn(2, 6, { dtype = f64 })
    assert.are.equal(2, linalg.matrix_rank(u:matmul(v)):item())
    local r = linalg.matrix_rank(torch.stack({ eye(3), torch.zeros(3, 3, { dtype = f64 }) }))
    H.assert_values(r, { 3, 0 })
    assert.are.equal(torch.int64, r.dtype)
    local d = torch.diag(torch.tensor({ 3, 1e-3 }, { dtype = f64 }))
    assert.are.equal(1, linalg.matrix_rank(d, { atol = 0.01 }):item())
    assert.are.equal(1, linalg.matrix_rank(d, { rtol = 0.01 }):item())
    assert.are.equal(2, linalg.matrix_rank(d, { hermitian = true }):item())
  end)

  it('lstsq solves least squares as the normal equations do; vector right-hand sides', function()
    torch.manual_seed(54)
    local a, b = torch.randn(6, 3, { dtype = f64 }), torch.randn(6, 2, { dtype = f64 })
    local x, res, rank, sv = linalg.lstsq(a, b)
    near(x, linalg.solve(a:t():matmul(a), a:t():matmul(b)), 1e-11, 'solution')
    assert.are.equal(3, rank:item())
    assert.are.equal(0, res:numel())
    assert.are.equal(0, sv:numel())
    local xv = linalg.lstsq(a, b:select(2, 1))
    near(xv, x:select(2, 1), 1e-12, 'vector')
    -- rank 2 (A = U V): the minimum-norm solution V^T (V V^T)^-1 (U^T U)^-1 U^T b, rank 2; a batch
    -- of two such A against one b
    local u, v = torch.randn(6, 2, { dtype = f64 }), torch.randn(2, 4, { dtype = f64 })
    local low = u:matmul(v)
    local want = v:t():matmul(linalg.inv(v:matmul(v:t()))):matmul(linalg.inv(u:t():matmul(u))):matmul(u:t():matmul(b))
    local xl, _, rl = linalg.lstsq(torch.stack({ low, low }), b)
    near(xl[1], want, 1e-10, 'minimum norm')
    near(xl[2], want, 1e-10, 'minimum norm, batch')
    H.assert_values(rl, { 2, 2 })
    -- rcond: diag(3, 1e-3) with rcond 0.01 keeps only the 3
    local d = torch.diag(torch.tensor({ 3, 1e-3 }, { dtype = f64 }))
    local xd, _, rd = linalg.lstsq(d, torch.tensor({ 3.0, 1 }, { dtype = f64 }), { rcond = 0.01 })
    H.assert_values(xd, { 1, 0 }, 1e-15, 'rcond')
    assert.are.equal(1, rd:item())
    H.raises(function() return linalg.lstsq(a, torch.ones(5, 1, { dtype = f64 })) end, 'lstsq', 'has 6 rows')
    H.raises(function() return linalg.lstsq(a, b:float()) end, 'lstsq', 'float32')
  end)

  it("cond and the matrix norms 2, -2 and 'nuc' from the singular values, with dim and keepdim", function()
    torch.manual_seed(55)
    local a = torch.randn(4, 3, { dtype = f64 })
    local s = singular_ref(a:totable())
    H.close(linalg.matrix_norm(a, 2):item(), s[1], 1e-12)
    H.close(linalg.matrix_norm(a, -2):item(), s[3], 1e-10)
    H.close(linalg.matrix_norm(a, 'nuc'):item(), s[1] + s[2] + s[3], 1e-12)
    H.close(linalg.norm(a, 'nuc'):item(), s[1] + s[2] + s[3], 1e-12)
    H.close(linalg.cond(a):item(), s[1] / s[3], 1e-10)
    H.close(linalg.cond(a, -2):item(), s[3] / s[1], 1e-10)
    local sq = spd(3, 56)
    H.close(linalg.cond(sq, 1):item(), (linalg.matrix_norm(sq, 1) * linalg.matrix_norm(linalg.inv(sq), 1)):item(), 1e-12)
    -- the matrices along dims 1 and 3 of a 4 x 2 x 3 tensor
    local t = torch.stack({ a, a * 2 }, 2)
    local n = linalg.matrix_norm(t, 2, { 1, 3 })
    H.assert_values(n, { s[1], 2 * s[1] }, 1e-12, 'dims 1 and 3')
    local nk = linalg.matrix_norm(t, 'nuc', { 1, 3 }, true)
    assert.are.same({ 1, 2, 1 }, { nk:size(1), nk:size(2), nk:size(3) })
    local ar = a:clone():requires_grad_()
    assert.is_true(gradcheck(function(x) return linalg.matrix_norm(x, 'nuc') end, { ar }))
  end)

  it('nn.init.orthogonal_ gives orthonormal rows or columns from the QR of a Gaussian draw', function()
    for _, shape in ipairs { { 4, 6 }, { 6, 4 }, { 3, 2, 2 } } do
      local w = torch.empty(shape)
      torch.nn.init.orthogonal_(w, 2)
      local m = w:reshape(shape[1], -1):double()
      if m:size(1) <= m:size(2) then near(m:matmul(m:t()), eye(m:size(1)) * 4, 1e-5, 'rows')
      else near(m:t():matmul(m), eye(m:size(2)) * 4, 1e-5, 'columns') end
    end
    -- PyTorch's recipe: a normal_ draw of the tensor's shape (rows x cols, transposed when wide),
    -- Q of its QR with the signs of R's diagonal
    torch.manual_seed(57)
    local w = torch.empty(6, 4)
    torch.nn.init.orthogonal_(w)
    torch.manual_seed(57)
    local g = torch.empty(6, 4):normal_(0, 1)
    local qref = qr_ref(g:double():totable())
    H.assert_values(w, qref, 1e-5, 'the QR of the same draw')
  end)

  it('without LAPACK (no OpenBLAS): the decompositions say what they need; orthogonal_ falls back to Gram-Schmidt', function()
    local bin = os.getenv('LUTORCH_BIN') or 'build/lutorch'
    local code = "print('lapack=' .. tostring(torch._lapack_available())); " ..
      "local ok, e = pcall(torch.linalg.svd, torch.eye(2)); print(e); " ..
      "local w = torch.empty(5, 3); torch.nn.init.orthogonal_(w); " ..
      "print(string.format('gram=%.3e', (w:t():matmul(w) - torch.eye(3)):abs():max():item()))"
    local p = io.popen(string.format('LUTORCH_BLAS_LIB=none %s -e %q 2>&1', bin, code))
    local out = p:read('a')
    p:close()
    assert.is_truthy(out:find('lapack=false', 1, true), out)
    assert.is_truthy(out:find('linalg.svd: needs LAPACK', 1, true), out)
    local gram = tonumber(out:match('gram=(%S+)'))
    assert(gram and gram < 1e-5, out)
  end)
end)
