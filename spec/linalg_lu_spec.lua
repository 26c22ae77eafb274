-- torch.linalg's LU family (lua/torch/lu.lua over core/lu.c): lu_factor(_ex) against partial
-- pivoting written here on plain Lua tables in float64 (the same pivots: the first largest |value|),
-- lu and lu_unpack by P L U = A and the factors' shapes and triangles, lu_solve, solve_ex, inv_ex,
-- torch.lu_solve and torch.triangular_solve by their residuals and against Gauss-Jordan elimination;
-- batches (broadcast), rectangular and non-contiguous inputs, float32 and float64; the gradients by
-- finite differences; singular matrices (the errors and the infos); bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local linalg = torch.linalg
local gradcheck = torch.autograd.gradcheck
local f64 = torch.float64

-- ---- references on Lua tables ----

local function copy(a)
  local c = {}
  for i = 1, #a do c[i] = { table.unpack(a[i]) } end
  return c
end

-- the packed factors, 1-based pivots and info of P A = L U with partial pivoting, m x n
local function lu_ref(a)
  a = copy(a)
  local m, n = #a, #a[1]
  local piv, info = {}, 0
  for i = 1, math.min(m, n) do
    local p, best = i, math.abs(a[i][i])
    for r = i + 1, m do
      if math.abs(a[r][i]) > best then p, best = r, math.abs(a[r][i]) end
    end
    piv[i] = p
    a[i], a[p] = a[p], a[i]
    local d = a[i][i]
    if d == 0 then
      if info == 0 then info = i end
    else
      for r = i + 1, m do
        local f = a[r][i] / d
        a[r][i] = f
        for c = i + 1, n do a[r][c] = a[r][c] - f * a[i][c] end
      end
    end
  end
  return a, piv, info
end

local solve_ref = H.solve_ref

local function transpose(a)
  local t = {}
  for j = 1, #a[1] do
    t[j] = {}
    for i = 1, #a do t[j][i] = a[i][j] end
  end
  return t
end

local function mT(x) return x:transpose(-2, -1) end

-- a well-conditioned random batch
local function regular(shape, dtype)
  local a = torch.randn(shape, { dtype = f64 })
  local n = shape[#shape]
  return (a + torch.eye(n, { dtype = f64 }) * 2):to(dtype)
end

describe('linalg LU', function()
  it('lu_factor against partial pivoting: square and rectangular, batches, float32 and float64', function()
    torch.manual_seed(1)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-12 or 1e-5
      for _, s in ipairs { { 4, 4 }, { 3, 5, 5 }, { 2, 6, 3 }, { 2, 3, 6 }, { 1, 1 }, { 40, 40 }, { 2, 40, 33 }, { 33, 45 } } do
        local a = torch.randn(s, { dtype = dt })
        local f, piv = linalg.lu_factor(a)
        assert.are.equal(torch.int32, piv.dtype)
        local m, n = s[#s - 1], s[#s]
        assert.are.same({ table.unpack(s, 1, #s - 2) }, (function()
          local t = {}
          for d = 1, piv:dim() - 1 do t[d] = piv:size(d) end
          return t
        end)())
        assert.are.equal(math.min(m, n), piv:size(-1))
        local af, ff, pf = a:reshape(-1, m, n), f:reshape(-1, m, n), piv:reshape(-1, math.min(m, n))
        for b = 1, af:size(1) do
          local want, wpiv, info = lu_ref(af[b]:double():totable())
          assert.are.equal(0, info)
          assert.are.same(wpiv, pf[b]:totable())
          H.assert_values(ff[b], want, tol * (n > 10 and 100 or 1), 'LU ' .. tostring(a.shape))
        end
      end
    end
  end)

  it('lu and lu_unpack: P L U = A, L unit lower m x k, U upper k x n, P a permutation', function()
    torch.manual_seed(2)
    for _, s in ipairs { { 5, 5 }, { 2, 5, 3 }, { 2, 3, 5 }, { 3, 2, 4, 4 } } do
      for _, dt in ipairs { torch.float32, f64 } do
        local a = torch.randn(s, { dtype = dt })
        local p, l, u = linalg.lu(a)
        local m, n = s[#s - 1], s[#s]
        local k = math.min(m, n)
        assert.are.equal(m, l:size(-2)); assert.are.equal(k, l:size(-1))
        assert.are.equal(k, u:size(-2)); assert.are.equal(n, u:size(-1))
        assert.are.equal(dt, p.dtype)
        local tol = dt == f64 and 1e-12 or 1e-5
        assert.is_true(torch.allclose(p:matmul(l):matmul(u), a, { atol = tol, rtol = 0 }))
        assert.is_true(l:triu(1):eq(0):all():item())
        assert.is_true(l:diagonal(0, -2, -1):eq(1):all():item())
        assert.is_true(u:tril(-1):eq(0):all():item())
        -- P: ones and zeros, one 1 in every row and column
        assert.is_true(p:sum(-1):eq(1):all():item() and p:sum(-2):eq(1):all():item())
        assert.is_true(p:mul(p:sub(1)):eq(0):all():item())
        -- lu_unpack of lu_factor gives the same
        local f, piv = linalg.lu_factor(a)
        local p2, l2, u2 = torch.lu_unpack(f, piv)
        assert.is_true(p2:equal(p) and l2:equal(l) and u2:equal(u))
        local pe, le, ue = torch.lu_unpack(f, piv, false, false)
        assert.are.equal(0, pe:numel() + le:numel() + ue:numel())
        local p3, l3 = torch.lu_unpack(f, piv, { unpack_pivots = false })
        assert.are.equal(0, p3:numel()); assert.is_true(l3:equal(l))
      end
    end
    -- a NaN stays in the factors of a wide matrix (the pivot search is over its rows only)
    local pn, ln, un = linalg.lu(torch.tensor({ { 0 / 0, 1, 2 }, { 1, 2, 3 } }))
    H.assert_values(pn, { { 0, 1 }, { 1, 0 } }, 0)
    H.assert_values(un:select(1, 1), { 1, 2, 3 }, 0)
    assert.is_true(ln[2][1] ~= ln[2][1] and un:select(1, 2):isnan():narrow(1, 2, 2):all():item())
    -- a known permutation: rows swapped (pivots {2, 2}): A = P L U with P = [[0, 1], [1, 0]]
    local p, l, u = linalg.lu(torch.tensor({ { 1.0, 2 }, { 3, 4 } }, { dtype = f64 }))
    H.assert_values(p, { { 0, 1 }, { 1, 0 } }, 0)
    H.assert_values(l, { { 1, 0 }, { 1 / 3, 1 } }, 1e-15)
    H.assert_values(u, { { 3, 4 }, { 0, 2 - 4 / 3 } }, 1e-15)
    -- a pivots sequence unpacked: swaps (1 3), (2 3), (3 3) take rows 1 2 3 to 3 1 2
    local pp = torch.lu_unpack(torch.zeros(3, 3, { dtype = f64 }), torch.tensor({ 3, 3, 3 }, { dtype = torch.int32 }))
    -- P^T A has rows 3, 1, 2 of A: P^T = [[0,0,1],[1,0,0],[0,1,0]]
    H.assert_values(mT(pp), { { 0, 0, 1 }, { 1, 0, 0 }, { 0, 1, 0 } }, 0)
  end)

  it('non-contiguous inputs factor and solve as their contiguous copies', function()
    torch.manual_seed(3)
    local base = regular({ 3, 5, 5 }, f64)
    local a = mT(base)                    -- transposed view
    assert.is_false(a:is_contiguous())
    local f, piv = linalg.lu_factor(a)
    local fc, pc = linalg.lu_factor(a:contiguous())
    assert.is_true(f:equal(fc) and piv:equal(pc))
    local b = torch.randn(3, 2, 5, { dtype = f64 }):transpose(-2, -1) -- (3, 5, 2), non-contiguous
    local x = linalg.lu_solve(f, piv, b)
    assert.is_true(torch.allclose(a:matmul(x), b, { atol = 1e-12, rtol = 0 }))
    local s = linalg.solve_ex(a, b)
    assert.is_true(torch.allclose(s, x, { atol = 1e-12, rtol = 0 }))
  end)

  it('lu_solve: left and right, adjoint, batches broadcast, against Gauss-Jordan', function()
    torch.manual_seed(4)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-10 or 1e-4
      local a = regular({ 2, 4, 4 }, dt)
      local f, piv = linalg.lu_factor(a)
      local b = torch.randn(2, 4, 3, { dtype = dt })
      local x = linalg.lu_solve(f, piv, b)
      local xa = linalg.lu_solve(f, piv, b, { adjoint = true })
      for q = 1, 2 do
        local aq = a[q]:double():totable()
        H.assert_values(x[q], solve_ref(aq, b[q]:double():totable()), tol)
        H.assert_values(xa[q], solve_ref(transpose(aq), b[q]:double():totable()), tol)
      end
      local br = torch.randn(2, 3, 4, { dtype = dt })
      local xr = linalg.lu_solve(f, piv, br, { left = false })
      local xra = linalg.lu_solve(f, piv, br, { left = false, adjoint = true })
      assert.is_true(torch.allclose(xr:matmul(a), br, { atol = tol, rtol = 0 }))
      assert.is_true(torch.allclose(xra:matmul(mT(a)), br, { atol = tol, rtol = 0 }))
      -- B of one matrix broadcast over the factors' batch, and the factors over B's batch
      local b1 = torch.randn(4, 2, { dtype = dt })
      local x1 = linalg.lu_solve(f, piv, b1)
      assert.are.same({ 2, 4, 2 }, { x1:size(1), x1:size(2), x1:size(3) })
      for q = 1, 2 do H.assert_values(x1[q], solve_ref(a[q]:double():totable(), b1:double():totable()), tol) end
      local x3 = linalg.lu_solve(f[1], piv[1], torch.randn(3, 4, 2, { dtype = dt }))
      assert.are.equal(3, x3:size(1))
      -- torch.lu_solve(B, LU, pivots) and x:lu_solve
      assert.is_true(torch.lu_solve(b, f, piv):equal(x))
      assert.is_true(b:lu_solve(f, piv):equal(x))
    end
    -- from order 32 (blocked) the same
    local a = regular({ 40, 40 }, f64)
    local f, piv = linalg.lu_factor(a)
    local b = torch.randn(40, 3, { dtype = f64 })
    assert.is_true(torch.allclose(a:matmul(linalg.lu_solve(f, piv, b)), b, { atol = 1e-10, rtol = 0 }))
  end)

  it('torch.lu returns infos on request and never raises for a singular matrix', function()
    local s = torch.tensor({ { 1.0, 2 }, { 2, 4 } }, { dtype = f64 })
    local f, piv, info = torch.lu(s, { get_infos = true })
    H.assert_values(f, { { 2, 4 }, { 0.5, 0 } }, 0)
    assert.are.same({ 2, 2 }, piv:totable())
    assert.are.equal(torch.int32, info.dtype)
    assert.are.equal(2, info:item())
    local f2, piv2, none = s:lu()
    assert.is_true(f2:equal(f) and piv2:equal(piv))
    assert.is_nil(none)
    local _, _, i3 = torch.lu(torch.eye(3):expand(2, 3, 3), true, true)
    assert.are.same({ 0, 0 }, i3:totable())
  end)

  it('singular matrices: lu_factor, solve and inv raise PyTorch\'s errors; the _ex forms give infos', function()
    local s = torch.tensor({ { 1.0, 2 }, { 2, 4 } }, { dtype = f64 })
    local e = torch.eye(2, { dtype = f64 })
    H.raises(function() return linalg.lu_factor(s) end, 'linalg.lu_factor: U[2,2] is zero')
    H.raises(function() return linalg.lu_factor(torch.stack({ e, s })) end, '(Batch element 2): U[2,2] is zero')
    H.raises(function() return linalg.inv(s) end,
      'linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.')
    H.raises(function() return linalg.inv(torch.stack({ e, s, e })) end, 'linalg.inv: (Batch element 2): The diagonal element 2')
    H.raises(function() return linalg.solve(torch.stack({ s, e }), torch.ones(2, 2, { dtype = f64 })) end,
      'linalg.solve: (Batch element 1): The solver failed because the input matrix is singular.')
    -- the _ex forms: the infos (int32, of the batch shape), no error
    local f, piv, info = linalg.lu_factor_ex(torch.stack({ e, s }))
    assert.are.equal(torch.int32, info.dtype)
    assert.are.same({ 0, 2 }, info:totable())
    assert.are.same({ { 1, 2 }, { 2, 2 } }, piv:totable())
    local zero = torch.zeros(3, 3, { dtype = f64 })
    local _, _, iz = linalg.lu_factor_ex(zero)
    assert.are.equal(1, iz:item())
    local inv, ii = linalg.inv_ex(torch.stack({ e * 2, s }))
    assert.are.same({ 0, 2 }, ii:totable())
    H.assert_values(inv[1], { { 0.5, 0 }, { 0, 0.5 } }, 0)
    assert.is_false(inv[2]:isfinite():all():item())
    local x, si = linalg.solve_ex(s, torch.ones(2, { dtype = f64 }))
    assert.are.equal(2, si:item())
    assert.is_false(x:isfinite():all():item())
    -- check_errors raises as the plain forms
    H.raises(function() return linalg.inv_ex(s, { check_errors = true }) end, 'The diagonal element 2 is zero')
    H.raises(function() return linalg.solve_ex(s, torch.ones(2, { dtype = f64 }), { check_errors = true }) end, 'singular')
    H.raises(function() return linalg.lu_factor_ex(s, { check_errors = true }) end, 'U[2,2] is zero')
    -- a rectangular matrix: info counts only its min(m, n) steps (a wide one's padding is not singular)
    local _, _, ir = linalg.lu_factor_ex(torch.tensor({ { 1.0, 2, 3 }, { 2, 5, 7 } }))
    assert.are.equal(0, ir:item())
    local _, _, ir2 = linalg.lu_factor_ex(torch.tensor({ { 1.0, 2 }, { 2, 4 }, { 3, 6 } }))
    assert.are.equal(2, ir2:item())
  end)

  it('solve_ex and inv_ex of regular matrices: the results of solve and inv, info 0; left = false', function()
    torch.manual_seed(6)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-10 or 1e-4
      local a = regular({ 3, 4, 4 }, dt)
      local b = torch.randn(3, 4, 2, { dtype = dt })
      local x, info = linalg.solve_ex(a, b)
      assert.are.same({ 0, 0, 0 }, info:totable())
      assert.are.equal(torch.int32, info.dtype)
      for q = 1, 3 do H.assert_values(x[q], solve_ref(a[q]:double():totable(), b[q]:double():totable()), tol) end
      local inv, ii = linalg.inv_ex(a)
      assert.are.same({ 0, 0, 0 }, ii:totable())
      assert.is_true(torch.allclose(a:matmul(inv), torch.eye(4, { dtype = dt }):expand(3, 4, 4), { atol = tol, rtol = 0 }))
      local br = torch.randn(3, 2, 4, { dtype = dt })
      local xr = linalg.solve_ex(a, br, { left = false })
      assert.is_true(torch.allclose(xr:matmul(a), br, { atol = tol, rtol = 0 }))
      assert.is_true(torch.allclose(linalg.solve(a, br, { left = false }), xr, { atol = tol, rtol = 0 }))
      local _, i0 = linalg.inv_ex(a[1], { check_errors = true })
      assert.are.equal(0, i0:item())
    end
  end)

  it('torch.triangular_solve: upper, lower, transpose, unitriangular, batches; the cloned coefficient', function()
    torch.manual_seed(7)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-10 or 1e-4
      local a = regular({ 2, 4, 4 }, dt)
      local b = torch.randn(2, 4, 3, { dtype = dt })
      for _, upper in ipairs { true, false } do
        for _, tr in ipairs { false, true } do
          for _, unit in ipairs { false, true } do
            local x, c = torch.triangular_solve(b, a, upper, tr, unit)
            assert.is_true(c:equal(a))
            local t = upper and a:triu() or a:tril()
            if unit then t = t - t:diagonal(0, -2, -1):diag_embed() + torch.eye(4, { dtype = dt }) end
            if tr then t = mT(t) end
            for q = 1, 2 do H.assert_values(x[q], solve_ref(t[q]:double():totable(), b[q]:double():totable()), tol) end
          end
        end
      end
      -- the default is upper; the options table; the method; A broadcast over B's batch
      local x = torch.triangular_solve(b, a)
      assert.is_true(x:equal((torch.triangular_solve(b, a, { upper = true }))))
      assert.is_true(x:equal((b:triangular_solve(a))))
      local x1, c1 = torch.triangular_solve(b, a[1])
      assert.are.equal(3, c1:dim())
      assert.is_true(torch.allclose(a[1]:triu():matmul(x1), b, { atol = tol, rtol = 0 }))
    end
  end)

  it('gradients: lu_factor, lu (square, wide, tall), lu_solve, solve_ex, inv_ex, triangular_solve', function()
    torch.manual_seed(8)
    local function leaf(...) return torch.randn({ ... }, { dtype = f64 }):requires_grad_() end
    for _, s in ipairs { { 3, 3 }, { 2, 3, 5 }, { 5, 3 } } do
      local a = torch.randn(s, { dtype = f64 })
      assert.is_true(gradcheck(function(x) return (linalg.lu_factor(x)) end, { a:clone():requires_grad_() }))
      assert.is_true(gradcheck(function(x)
        local _, l, u = linalg.lu(x)
        return l, u
      end, { a:clone():requires_grad_() }))
      assert.is_true(gradcheck(function(x)
        local _, l = linalg.lu(x)
        return l
      end, { a:clone():requires_grad_() }))
    end
    local a = regular({ 3, 3 }, f64)
    local f, piv = linalg.lu_factor(a)
    for _, o in ipairs { {}, { adjoint = true }, { left = false }, { left = false, adjoint = true } } do
      local b = o.left == false and leaf(2, 3) or leaf(3, 2)
      assert.is_true(gradcheck(function(lu, y) return linalg.lu_solve(lu, piv, y, o) end,
        { f:clone():requires_grad_(), b }))
    end
    -- through the factorisation too: d/dA of lu_solve(lu_factor(A), B) is solve's
    local b = leaf(3, 2)
    assert.is_true(gradcheck(function(x, y)
      local lu, p = linalg.lu_factor(x)
      return linalg.lu_solve(lu, p, y)
    end, { a:clone():requires_grad_(), b }))
    assert.is_true(gradcheck(function(x, y) return (linalg.solve_ex(x, y)) end, { regular({ 2, 3, 3 }, f64):requires_grad_(), leaf(2, 3, 2) }))
    assert.is_true(gradcheck(function(x) return (linalg.inv_ex(x)) end, { regular({ 3, 3 }, f64):requires_grad_() }))
    assert.is_true(gradcheck(function(x, y) return (torch.triangular_solve(y, x, false, true)) end,
      { regular({ 3, 3 }, f64):requires_grad_(), leaf(3, 2) }))
  end)

  -- From order 32 core/lu.c factors 32 columns a panel and solves 32 rows a block, the rest by
  -- matrix products, the right-hand sides' columns shared between the threads (2 here when a solve
  -- has n^2 k / 2 >= 2^20 multiply-adds).
  it('the blocked factorisation and solves: several panels with a short last one, rectangular, a zero pivot in a later panel, both threads', function()
    torch.manual_seed(21)
    -- pivots and factors against the Lua elimination (float64: the same pivots), P L U = A in float32
    for _, s in ipairs { { 70, 70 }, { 100, 70 }, { 70, 100 }, { 65, 33 } } do
      local m, n = s[1], s[2]
      local a = torch.randn(m, n, { dtype = f64 })
      local f, piv = linalg.lu_factor(a)
      local want, wpiv, info = lu_ref(a:totable())
      assert.are.equal(0, info)
      assert.are.same(wpiv, piv:totable())
      H.assert_values(f, want, 1e-11, 'LU ' .. m .. ' x ' .. n)
      local a32 = a:float()
      local p, l, u = linalg.lu(a32)
      H.assert_values((p:matmul(l):matmul(u) - a32):abs():amax(), 0, 2e-5 * n, 'P L U = A in float32, ' .. m .. ' x ' .. n)
    end
    -- a zero column 40 (in the second panel): info 40, and the rest of the factorisation as LAPACK's
    local z = torch.randn(70, 70, { dtype = f64 })
    z:select(2, 40):zero_()
    local fz, pz, iz = linalg.lu_factor_ex(z)
    local wz, wpz, wiz = lu_ref(z:totable())
    assert.are.equal(40, wiz)
    assert.are.equal(40, iz:item())
    assert.are.same(wpz, pz:totable())
    H.assert_values(fz, wz, 1e-11, 'LU with a zero column')
    -- triangular solves: every triangle, transpose and diagonal, by the residual op(A) X - B in float64;
    -- 100 x 420 runs on two threads (columns 1-224 and 225-420, the last part not a whole number of
    -- 32-column steps), 33 x 17 on one
    for _, dt in ipairs { f64, torch.float32 } do
      for _, nk in ipairs { { 100, 420 }, { 33, 17 } } do
        local n, k = nk[1], nk[2]
        local a = (torch.randn(n, n, { dtype = f64 }) * 0.3 + torch.eye(n, { dtype = f64 }) * 2):to(dt)
        local b = torch.randn(n, k, { dtype = f64 }):to(dt)
        for _, upper in ipairs { true, false } do
          for _, trans in ipairs { false, true } do
            for _, unit in ipairs { false, true } do
              local x = torch._solve_triangular(a, b, upper, trans, unit)
              local t = upper and a:double():triu() or a:double():tril()
              if unit then t = t - torch.diag(torch.diagonal(t)) + torch.eye(n, { dtype = f64 }) end
              if trans then t = t:t() end
              local r = (t:matmul(x:double()) - b:double()):abs():amax():item() / (x:abs():amax():item() * n)
              H.close(r, 0, dt == f64 and 1e-15 or 1e-6,
                string.format('%s %d x %d upper %s trans %s unit %s', tostring(dt), n, k, upper, trans, unit))
            end
          end
        end
        -- the LU solves, plain and transposed, by their residuals
        local g = (torch.randn(n, n, { dtype = f64 }) + torch.eye(n, { dtype = f64 }) * 4):to(dt)
        local f, piv = torch._lu_factor(g)
        for _, trans in ipairs { false, true } do
          local x = torch._lu_solve(f, piv, b, trans)
          local gg = trans and g:double():t() or g:double()
          local scale = x:abs():amax():item() * n -- the residual's size: rounding in n terms of x's size
          H.close((gg:matmul(x:double()) - b:double()):abs():amax():item() / scale, 0, dt == f64 and 1e-15 or 1e-6,
            string.format('lu_solve %s %d x %d trans %s', tostring(dt), n, k, trans))
        end
      end
    end
  end)

  it('inv from order 32: the forward solve of the identity skipping its zeros, then the pivots as column swaps', function()
    torch.manual_seed(22)
    -- plain random matrices (rows swapped at most steps, unlike A + n I); at 200 the solve with U runs on
    -- two threads
    for _, n in ipairs { 32, 33, 100, 200 } do
      local a = torch.randn(2, n, n, { dtype = f64 })
      local _, piv = linalg.lu_factor(a)
      local swaps = piv:ne(torch.arange(1, n + 1, { dtype = torch.int32 })):sum():item()
      assert.is_true(swaps > n, 'pivoting at ' .. n)
      for _, dt in ipairs { f64, torch.float32 } do
        local x = linalg.inv(a:to(dt)):double()
        local ex, _ = linalg.inv_ex(a:to(dt))
        assert.is_true(ex:equal(x:to(dt)))
        for q = 1, 2 do
          -- A X = I and X A = I, relative to the sizes of A and X
          local scale = a[q]:abs():amax():item() * x[q]:abs():amax():item() * n
          local eye = torch.eye(n, { dtype = f64 })
          for _, r in ipairs { a[q]:matmul(x[q]) - eye, x[q]:matmul(a[q]) - eye } do
            H.close(r:abs():amax():item() / scale, 0, dt == f64 and 1e-15 or 1e-6, string.format('inv %s at %d', tostring(dt), n))
          end
        end
      end
    end
    -- a singular matrix (a zero column 40): inv_ex's info and an inverse of infs and NaNs
    local z = torch.randn(70, 70, { dtype = f64 })
    z:select(2, 40):zero_()
    local zi, info = linalg.inv_ex(z)
    assert.are.equal(40, info:item())
    assert.is_false(zi:isfinite():all():item())
  end)

  it('bad calls: integer dtypes, too few dims, no pivoting, mismatched dtypes and shapes, bad pivots', function()
    local e = torch.eye(3)
    local f, piv = linalg.lu_factor(e)
    H.raises(function() return linalg.lu_factor(torch.ones(2, 2, { dtype = torch.int64 })) end,
      'linalg.lu_factor: Expected a floating point tensor as input. Got torch.int64')
    H.raises(function() return linalg.lu(torch.ones(2, 2, { dtype = torch.int32 })) end, 'linalg.lu', 'floating point')
    H.raises(function() return linalg.lu_factor(torch.eye(2, { dtype = torch.float16 })) end, 'float32 or float64')
    H.raises(function() return linalg.lu_factor(torch.ones(3)) end, 'at least 2 dimensions')
    H.raises(function() return linalg.lu_factor(e, { pivot = false }) end, 'LU without pivoting is not implemented on the CPU')
    H.raises(function() return linalg.lu(e, { pivot = false }) end, 'LU without pivoting')
    H.raises(function() return linalg.lu_factor(e, { pivots = true }) end, "unknown option 'pivots'")
    H.raises(function() return linalg.lu_solve(f, piv, torch.ones(3, 1, { dtype = f64 })) end, 'same dtype')
    H.raises(function() return linalg.lu_solve(f, piv, torch.ones(2, 1)) end,
      'Incompatible shapes of A and B for the equation AX = B (3x3 and 2x1)')
    H.raises(function() return linalg.lu_solve(f, piv, torch.ones(2, 1), { left = false }) end, 'XA = B')
    H.raises(function() return linalg.lu_solve(f, piv:float(), torch.ones(3, 1)) end, 'int32')
    H.raises(function() return linalg.lu_solve(f, torch.tensor({ 1, 4, 3 }, { dtype = torch.int32 }), torch.ones(3, 1)) end,
      'between 1 and 3')
    H.raises(function() return linalg.lu_solve(f, piv:narrow(1, 1, 2), torch.ones(3, 1)) end, 'pivots of shape')
    H.raises(function() return linalg.lu_solve(f:expand(2, 3, 3), piv, torch.ones(3, 3, 1)) end, 'do not broadcast')
    H.raises(function() return linalg.lu_solve(torch.ones(2, 3), piv, torch.ones(3, 1)) end, 'square')
    H.raises(function() return torch.lu_unpack(f, 'x') end, 'pivots must be a tensor')
    H.raises(function() return torch.triangular_solve(torch.ones(2, 1), e) end, 'Incompatible matrix sizes')
    H.raises(function() return torch.triangular_solve(torch.ones(3, 1, { dtype = f64 }), e) end, 'same dtype')
    H.raises(function() return linalg.solve_ex(e, torch.ones(3), { lefts = true }) end, "unknown option 'lefts'")
    H.raises(function() return linalg.inv_ex(torch.ones(2, 3)) end, 'square')
    H.raises(function() return linalg.solve(e, torch.ones(3), { left = false }) end, 'left = false')
  end)
end)
