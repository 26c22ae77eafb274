-- torch.linalg's symmetric indefinite factorisation (LAPACK's sytrf and sytrs through core/lapack.c,
-- lua/torch/decompositions.lua): ldl_factor(_ex) by rebuilding A from the compact factors on plain
-- Lua tables, as LAPACK documents them (A = L D L^T, L = P(1) L(1) P(2) L(2) ..., 1 x 1 and 2 x 2
-- steps), a 2 x 2 block's pivots and a singular matrix by hand; ldl_solve by its residuals against
-- Gauss-Jordan; batches (broadcast), non-contiguous inputs, float32 and float64; the gradient of B
-- by finite differences, the errors for those PyTorch does not have either; bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local linalg = torch.linalg
local f64 = torch.float64

local matmul = H.matmul_table

local function eye(n)
  local t = H.zeros_table(n, n)
  for i = 1, n do t[i][i] = 1 end
  return t
end

local function transpose(a)
  local t = H.zeros_table(#a[1], #a)
  for i = 1, #a do for j = 1, #a[1] do t[j][i] = a[i][j] end end
  return t
end

-- A = M D M^T rebuilt from sytrf's lower compact factors ld (table) and pivots
local function ldl_rebuild(ld, piv)
  local n = #ld
  local m, d = eye(n), H.zeros_table(n, n)
  local k = 1
  while k <= n do
    local p = eye(n)
    local l = eye(n)
    local s = piv[k] > 0 and 1 or 2
    local swap = s == 1 and piv[k] or -piv[k]
    local row = k + s - 1 -- the row swapped with swap
    p[row][row], p[swap][swap], p[row][swap], p[swap][row] = 0, 0, 1, 1
    if row == swap then p[row][row] = 1 end
    for c = k, k + s - 1 do
      for r = k + s, n do l[r][c] = ld[r][c] end
    end
    d[k][k] = ld[k][k]
    if s == 2 then
      assert(piv[k + 1] == piv[k], 'a 2 x 2 block has both pivots equal')
      d[k + 1][k], d[k][k + 1], d[k + 1][k + 1] = ld[k + 1][k], ld[k + 1][k], ld[k + 1][k + 1]
    end
    m = matmul(matmul(m, p), l)
    k = k + s
  end
  return matmul(matmul(m, d), transpose(m))
end

local function symmetric(shape, dtype)
  local a = torch.randn(shape, { dtype = f64 })
  return (a + a:transpose(-2, -1)):to(dtype)
end

describe('linalg LDL', function()
  it('ldl_factor rebuilds A from the compact factors: 1 x 1 and 2 x 2 steps, batches, float32 and float64', function()
    torch.manual_seed(1)
    local blocks = 0
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-12 or 1e-4
      for _, n in ipairs { 1, 3, 6, 24 } do
        local a = symmetric({ 3, n, n }, dt)
        local ld, piv = linalg.ldl_factor(a)
        assert.are.equal(torch.int32, piv.dtype)
        assert.is_true(ld:triu(1):eq(0):all():item())
        for b = 1, 3 do
          local p = piv[b]:totable()
          for _, v in ipairs(p) do if v < 0 then blocks = blocks + 1 end end
          H.assert_values(torch.tensor(ldl_rebuild(ld[b]:double():totable(), p), { dtype = f64 }),
            a[b]:double():totable(), tol * n, 'A = L D L^T, n = ' .. n)
        end
      end
    end
    assert.is_true(blocks > 0, 'the random matrices took 2 x 2 pivots somewhere')
    -- a matrix whose first step must be a 2 x 2 block (a zero corner), written out: PyTorch's factors
    local s = torch.tensor({ { 1, 3, 0, 2 }, { 3, -1, 4, 1 }, { 0, 4, 2, 5 }, { 2, 1, 5, -3 } }, { dtype = f64 })
    local ld, piv, info = linalg.ldl_factor_ex(s)
    assert.are.same({ -2, -2, 3, 4 }, piv:totable())
    assert.are.equal(0, info:item())
    H.assert_values(ld, { { 1, 0, 0, 0 }, { 3, -1, 0, 0 }, { 1.2, -0.4, 3.6, 0 }, { 0.5, 0.5, 5 / 6, -7 } }, 1e-14)
    -- only the lower triangle is read
    local ld2 = linalg.ldl_factor(s:tril() + torch.ones(4, 4, { dtype = f64 }):triu(1) * 100)
    assert.is_true(ld2:equal(ld))
    -- hermitian changes nothing for real matrices
    assert.is_true(linalg.ldl_factor(s, { hermitian = true }):equal(ld))
  end)

  it('non-contiguous input: the factors of the contiguous copy', function()
    local a = symmetric({ 5, 5 }, f64)
    local view = (a * 1):t() -- a transposed view of a symmetric matrix: the same matrix
    assert.is_false(view:is_contiguous())
    local ld, piv = linalg.ldl_factor(view)
    local ldc, pivc = linalg.ldl_factor(a)
    assert.is_true(ld:equal(ldc) and piv:equal(pivc))
  end)

  it('ldl_solve: residuals, against Gauss-Jordan, batches broadcast, non-contiguous B', function()
    torch.manual_seed(2)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-9 or 1e-3
      local a = symmetric({ 2, 5, 5 }, dt) + torch.eye(5, { dtype = dt }) * 0.5
      local ld, piv = linalg.ldl_factor(a)
      local b = torch.randn(2, 3, 5, { dtype = dt }):transpose(-2, -1) -- (2, 5, 3), not contiguous
      local x = linalg.ldl_solve(ld, piv, b)
      for q = 1, 2 do
        H.assert_values(x[q], H.solve_ref(a[q]:double():totable(), b[q]:double():totable()), tol)
      end
      local x1 = linalg.ldl_solve(ld, piv, b[1])
      assert.is_true(torch.allclose(a:matmul(x1), b[1]:expand(2, 5, 3), { atol = tol, rtol = 0 }))
      local x2 = linalg.ldl_solve(ld[1], piv[1], b)
      assert.is_true(torch.allclose(a[1]:matmul(x2), b, { atol = tol, rtol = 0 }))
    end
  end)

  it('singular D: ldl_factor raises, ldl_factor_ex gives the infos', function()
    local s = torch.tensor({ { 1.0, 2 }, { 2, 4 } }, { dtype = f64 })
    local ld, piv, info = linalg.ldl_factor_ex(s)
    H.assert_values(ld, { { 4, 0 }, { 0.5, 0 } }, 0)
    assert.are.same({ 2, 2 }, piv:totable())
    assert.are.equal(2, info:item())
    local _, _, iz = linalg.ldl_factor_ex(torch.zeros(2, 2, 2))
    assert.are.same({ 1, 1 }, iz:totable())
    H.raises(function() return linalg.ldl_factor(s) end, 'linalg.ldl_factor: D[2,2] is zero')
    H.raises(function() return linalg.ldl_factor(torch.stack({ torch.eye(2, { dtype = f64 }), s })) end,
      '(Batch element 2): D[2,2] is zero')
    H.raises(function() return linalg.ldl_factor_ex(s, { check_errors = true }) end, 'D[2,2] is zero')
  end)

  it("gradients: B's by finite differences; LD's and the factorisation's are errors, as in PyTorch", function()
    local a = symmetric({ 4, 4 }, f64) + torch.eye(4, { dtype = f64 })
    local ld, piv = linalg.ldl_factor(a)
    assert.is_true(torch.autograd.gradcheck(function(b) return linalg.ldl_solve(ld, piv, b) end,
      { torch.randn(4, 2, { dtype = f64 }):requires_grad_() }))
    local y = a:clone():requires_grad_()
    H.raises(function() linalg.ldl_factor(y):sum():backward() end, 'ldl_factor', 'derivative', 'not implemented')
    H.raises(function() linalg.ldl_solve(ld:clone():requires_grad_(), piv, torch.ones(4, 1, { dtype = f64 })):sum():backward() end,
      'ldl_solve', 'derivative with respect to LD is not implemented')
  end)

  it('bad calls: integers, not square, dtypes, shapes, pivots sytrs could not use', function()
    local a = symmetric({ 3, 3 }, f64)
    local ld, piv = linalg.ldl_factor(a)
    H.raises(function() return linalg.ldl_factor(torch.ones(2, 2, { dtype = torch.int64 })) end,
      'linalg.ldl_factor: Expected a floating point tensor as input. Got torch.int64')
    H.raises(function() return linalg.ldl_factor(torch.ones(2, 3)) end, 'square matrices')
    H.raises(function() return linalg.ldl_factor(a, { check_errors = true }) end, "unknown option 'check_errors'")
    H.raises(function() return linalg.ldl_factor(a, { hermitian = 1 }) end, 'hermitian must be true or false')
    H.raises(function() return linalg.ldl_solve(ld, piv, torch.ones(3, 1)) end, 'same dtype')
    H.raises(function() return linalg.ldl_solve(ld, piv, torch.ones(2, 1, { dtype = f64 })) end, 'Incompatible matrix sizes')
    H.raises(function() return linalg.ldl_solve(ld, piv:long(), torch.ones(3, 1, { dtype = f64 })) end, 'int32')
    for _, bad in ipairs { { 0, 1, 2 }, { 4, 1, 2 }, { -2, 1, 3 }, { 1, 2, -3 } } do
      H.raises(function()
        return linalg.ldl_solve(ld, torch.tensor(bad, { dtype = torch.int32 }), torch.ones(3, 1, { dtype = f64 }))
      end, 'the pivots are not those of ldl_factor')
    end
    H.raises(function() return linalg.ldl_solve(ld:expand(2, 3, 3), piv, torch.ones(3, 3, 1, { dtype = f64 })) end,
      'do not broadcast')
  end)
end)
