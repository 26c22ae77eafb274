-- torch.linalg's functions composed from other ops (lua/torch/linalg_composed.lua): matrix_exp
-- against its Taylor series summed here in float64 and closed forms (diagonal, nilpotent, rotation
-- generator); householder_product against the product of the reflectors written out on Lua tables
-- and against the Q of a Householder QR written here, torch.geqrf against that QR; tensorinv and
-- tensorsolve by tensordot's identities and residuals; vander against loops; batches,
-- non-contiguous inputs, float32 and float64; the gradients by finite differences; bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local linalg = torch.linalg
local gradcheck = torch.autograd.gradcheck
local f64 = torch.float64

-- ---- references on Lua tables ----

local zeros, matmul = H.zeros_table, H.matmul_table

local function eye(m, n)
  local t = zeros(m, n or m)
  for i = 1, math.min(m, n or m) do t[i][i] = 1 end
  return t
end

-- exp(A) as sum A^k / k! (A / 2^s summed, then squared s times, the norm of A / 2^s below 1)
local function expm_ref(a)
  local n = #a
  local norm = 0
  for i = 1, n do for j = 1, n do norm = norm + math.abs(a[i][j]) end end
  local s = norm > 1 and math.ceil(math.log(norm, 2)) or 0
  local b = zeros(n, n)
  for i = 1, n do for j = 1, n do b[i][j] = a[i][j] / 2 ^ s end end
  local sum, term = eye(n), eye(n)
  for k = 1, 40 do
    term = matmul(term, b)
    for i = 1, n do
      for j = 1, n do
        term[i][j] = term[i][j] / k
        sum[i][j] = sum[i][j] + term[i][j]
      end
    end
  end
  for _ = 1, s do sum = matmul(sum, sum) end
  return sum
end

-- the first n columns of H_1 ... H_k written out: H_i = I - tau_i v_i v_i^T
local function householder_ref(a, tau)
  local m, n = #a, #a[1]
  local q = eye(m)
  for i = 1, #tau do
    local hm = eye(m)
    local v = {}
    for r = 1, m do v[r] = r < i and 0 or r == i and 1 or a[r][i] end
    for r = 1, m do for c = 1, m do hm[r][c] = hm[r][c] - tau[i] * v[r] * v[c] end end
    q = matmul(q, hm)
  end
  local out = zeros(m, n)
  for r = 1, m do for c = 1, n do out[r][c] = q[r][c] end end
  return out
end

-- Householder QR of an m x n table as geqrf stores it (LAPACK's larfg: beta = -sign(alpha) |x|): R on and above the diagonal, the
-- reflectors' tails below it, and tau
local function geqrf_ref(a)
  local m, n = #a, #a[1]
  local r = {}
  for i = 1, m do r[i] = { table.unpack(a[i]) } end
  local tau = {}
  for j = 1, math.min(m, n) do
    local xnorm = 0
    for i = j + 1, m do xnorm = xnorm + r[i][j] ^ 2 end
    local alpha = r[j][j]
    local norm = math.sqrt(alpha ^ 2 + xnorm)
    local beta = alpha >= 0 and -norm or norm
    tau[j] = xnorm == 0 and 0 or (beta - alpha) / beta -- nothing to reflect: H_j = I (larfg)
    if xnorm ~= 0 then
      local scale = 1 / (alpha - beta)
      for i = j + 1, m do r[i][j] = r[i][j] * scale end
      r[j][j] = beta
    end
    -- apply H_j = I - tau v v^T to the columns right of j
    for c = j + 1, n do
      local s = r[j][c]
      for i = j + 1, m do s = s + r[i][j] * r[i][c] end
      s = s * tau[j]
      r[j][c] = r[j][c] - s
      for i = j + 1, m do r[i][c] = r[i][c] - s * r[i][j] end
    end
  end
  return r, tau
end

local function mT(x) return x:transpose(-2, -1) end

describe('linalg.matrix_exp', function()
  it('against the Taylor series in float64: batches of small and large norms, float32 and float64', function()
    torch.manual_seed(1)
    for _, dt in ipairs { torch.float32, f64 } do
      local a = torch.randn(3, 4, 4, { dtype = f64 })
      a[1]:mul_(1e-3) -- no scaling
      a[3]:mul_(3)    -- several squarings
      local e = linalg.matrix_exp(a:to(dt))
      assert.are.equal(dt, e.dtype)
      for q = 1, 3 do
        local want = expm_ref(a[q]:totable())
        H.assert_values(e[q], want, dt == f64 and 1e-11 or 2e-5, 'exp ' .. q)
      end
    end
    -- non-contiguous: a transposed view gives exp(A)^T
    local a = torch.randn(2, 3, 3, { dtype = f64 })
    local at = mT(a)
    assert.is_false(at:is_contiguous())
    assert.is_true(torch.allclose(linalg.matrix_exp(at), mT(linalg.matrix_exp(a)), { atol = 1e-13, rtol = 0 }))
  end)

  it('closed forms: diagonal, nilpotent, the rotation generator, 1 x 1, empty', function()
    local d = torch.tensor({ -2.5, 0, 1, 3.25 }, { dtype = f64 })
    local e = linalg.matrix_exp(torch.diag(d))
    H.assert_values(e, torch.diag(d:exp()):totable(), 1e-14)
    -- N strictly upper triangular: exp(N) = I + N + N^2 / 2
    local n = torch.tensor({ { 0, 2, -1 }, { 0, 0, 3 }, { 0, 0, 0 } }, { dtype = f64 })
    H.assert_values(linalg.matrix_exp(n), { { 1, 2, -1 + 3 }, { 0, 1, 3 }, { 0, 0, 1 } }, 1e-14)
    for _, t in ipairs { 0.3, 2.0, 40.0 } do
      local r = linalg.matrix_exp(torch.tensor({ { 0, -t }, { t, 0 } }, { dtype = f64 }))
      H.assert_values(r, { { math.cos(t), -math.sin(t) }, { math.sin(t), math.cos(t) } }, 1e-12, 'rotation ' .. t)
    end
    H.assert_values(linalg.matrix_exp(torch.tensor({ { { 1.5 } } }, { dtype = f64 })), { math.exp(1.5) }, 1e-15)
    assert.are.equal(0, linalg.matrix_exp(torch.zeros(2, 0, 0)):numel())
    -- torch.matrix_exp and the method
    assert.is_true(torch.matrix_exp(n):equal(linalg.matrix_exp(n)))
    assert.is_true(n:matrix_exp():equal(linalg.matrix_exp(n)))
  end)

  it('a matrix with a NaN or an infinity gives NaNs, its neighbours in the batch their exponentials', function()
    local a = torch.zeros(3, 2, 2, { dtype = f64 })
    a[1][1][1] = 1 / 0
    a[3][2][1] = 0 / 0
    a[2][1][1] = 1
    local e = linalg.matrix_exp(a)
    assert.is_true(e[1]:isnan():all():item() and e[3]:isnan():all():item())
    H.assert_values(e[2], { { math.exp(1), 0 }, { 0, 1 } }, 1e-15)
  end)

  it('gradients by finite differences, and the adjoint by exp of the block matrix [[A^T, G], [0, A^T]]', function()
    torch.manual_seed(2)
    local a = torch.randn(2, 3, 3, { dtype = f64 })
    a[2]:mul_(2)
    assert.is_true(gradcheck(function(x) return linalg.matrix_exp(x) end, { a:clone():requires_grad_() }))
    local x = a[1]:clone():requires_grad_()
    local g = torch.randn(3, 3, { dtype = f64 })
    linalg.matrix_exp(x):backward(g)
    local big = torch.cat({ torch.cat({ a[1]:t(), g }, 2), torch.cat({ torch.zeros(3, 3, { dtype = f64 }), a[1]:t() }, 2) }, 1)
    local adj = expm_ref(big:totable())
    local want = {}
    for i = 1, 3 do want[i] = { adj[i][4], adj[i][5], adj[i][6] } end
    H.assert_values(x.grad, want, 1e-11)
  end)

  it('bad calls: integers, not square, not a tensor', function()
    H.raises(function() return linalg.matrix_exp(torch.ones(2, 2, { dtype = torch.int64 })) end,
      'linalg.matrix_exp: Expected a floating point tensor as input. Got torch.int64')
    H.raises(function() return linalg.matrix_exp(torch.ones(2, 3)) end, 'square matrices', '2 by 3')
    H.raises(function() return linalg.matrix_exp(torch.ones(3)) end, 'square matrices', '1-D')
    H.raises(function() return linalg.matrix_exp({}) end, 'must be a tensor')
  end)
end)

describe('linalg.householder_product', function()
  it('against the reflectors multiplied out: batches, k < n, non-contiguous, float32 and float64', function()
    torch.manual_seed(3)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-12 or 1e-5
      for _, s in ipairs { { 5, 3, 3 }, { 4, 4, 2 }, { 3, 3, 0 }, { 6, 2, 1 } } do
        local a = torch.randn(2, s[1], s[2], { dtype = dt })
        local tau = torch.randn(2, s[3], { dtype = dt })
        local q = linalg.householder_product(a, tau)
        assert.are.same({ 2, s[1], s[2] }, { q:size(1), q:size(2), q:size(3) })
        for b = 1, 2 do
          H.assert_values(q[b], householder_ref(a[b]:double():totable(), tau[b]:double():totable()), tol)
        end
      end
      -- non-contiguous A (a transposed view) and tau (a strided column)
      local base = torch.randn(3, 5, { dtype = dt })
      local taus = torch.randn(3, 2, { dtype = dt }):select(2, 1)
      local q = linalg.householder_product(base:t(), taus)
      H.assert_values(q, householder_ref(base:t():double():totable(), taus:double():totable()), tol)
      -- torch.orgqr and the method
      assert.is_true(torch.orgqr(base:t(), taus):equal(q))
      assert.is_true(base:t():orgqr(taus):equal(q))
    end
  end)

  it("gives QR's Q from a Householder QR's reflectors (Q R = A, Q orthonormal, linalg.qr's Q up to signs)", function()
    torch.manual_seed(4)
    local a = torch.randn(5, 3, { dtype = f64 })
    local r, tau = geqrf_ref(a:totable())
    local q = linalg.householder_product(torch.tensor(r, { dtype = f64 }), torch.tensor(tau, { dtype = f64 }))
    local rt = torch.tensor(r, { dtype = f64 }):narrow(1, 1, 3):triu()
    assert.is_true(torch.allclose(q:matmul(rt), a, { atol = 1e-12, rtol = 0 }))
    assert.is_true(torch.allclose(q:t():matmul(q), torch.eye(3, { dtype = f64 }), { atol = 1e-12, rtol = 0 }))
    local q2 = linalg.qr(a)
    local signs = (q * q2):sum(1):sign()
    assert.is_true(torch.allclose(q, q2 * signs, { atol = 1e-12, rtol = 0 }))
  end)

  it('torch.geqrf against the Householder QR written here; its reflectors give linalg.qr\'s Q', function()
    torch.manual_seed(8)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-12 or 1e-5
      for _, s in ipairs { { 5, 3 }, { 4, 4 }, { 3, 5 } } do
        local a = torch.randn(2, s[1], s[2], { dtype = dt })
        local qr, tau = torch.geqrf(a)
        assert.are.same({ 2, math.min(s[1], s[2]) }, { tau:size(1), tau:size(2) })
        for b = 1, 2 do
          local want, wtau = geqrf_ref(a[b]:double():totable())
          H.assert_values(qr[b], want, tol, 'geqrf ' .. s[1] .. 'x' .. s[2])
          H.assert_values(tau[b], wtau, tol, 'tau')
        end
        if s[1] >= s[2] then
          local q = linalg.householder_product(qr, tau)
          assert.is_true(torch.allclose(q, (linalg.qr(a)), { atol = tol * 10, rtol = 0 }))
        end
      end
      -- non-contiguous input and the method
      local a = torch.randn(3, 5, { dtype = dt }):t()
      local qr, tau = a:geqrf()
      local qc, tc = torch.geqrf(a:contiguous())
      assert.is_true(qr:equal(qc) and tau:equal(tc))
    end
    local leaf = torch.randn(4, 3, { dtype = f64 }):requires_grad_()
    H.raises(function() (torch.geqrf(leaf)):sum():backward() end, 'geqrf', 'derivative', 'not implemented')
    H.raises(function() return torch.geqrf(torch.ones(3, 3, { dtype = torch.int64 })) end,
      'geqrf: Expected a floating point tensor as input. Got torch.int64')
    H.raises(function() return torch.geqrf(torch.ones(3)) end, 'at least 2 dimensions')
  end)

  it('gradients in A and tau by finite differences', function()
    torch.manual_seed(5)
    local a = torch.randn(2, 4, 3, { dtype = f64 }):requires_grad_()
    local tau = torch.randn(2, 2, { dtype = f64 }):requires_grad_()
    assert.is_true(gradcheck(function(x, t) return linalg.householder_product(x, t) end, { a, tau }))
  end)

  it('bad calls: wide input, too many reflectors, batch mismatch, integers, dtypes', function()
    H.raises(function() return linalg.householder_product(torch.ones(2, 3), torch.ones(2)) end,
      'input.shape[-2] must be greater than or equal to input.shape[-1]')
    H.raises(function() return linalg.householder_product(torch.ones(3, 2), torch.ones(3)) end,
      'input.shape[-1] must be greater than or equal to tau.shape[-1]')
    H.raises(function() return linalg.householder_product(torch.ones(2, 3, 2), torch.ones(3, 2)) end, 'batch dimensions of tau')
    H.raises(function() return linalg.householder_product(torch.ones(3, 2), torch.ones(1, 2)) end, 'greater than tau.dim() by 1')
    H.raises(function() return linalg.householder_product(torch.ones(3, 2, { dtype = torch.int64 }), torch.ones(2)) end,
      'Expected a floating point tensor as input. Got torch.int64')
    H.raises(function() return linalg.householder_product(torch.ones(3, 2), torch.ones(2, { dtype = f64 })) end, 'dtype')
    H.raises(function() return linalg.householder_product(torch.ones(3, 2), 1) end, 'tau must be a tensor')
  end)
end)

describe('linalg.tensorinv and linalg.tensorsolve', function()
  it('tensorinv: tensordot(tensorinv(A, ind), A, ind) is the identity; the shape; ind; gradients', function()
    torch.manual_seed(6)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-10 or 1e-4
      local a = (torch.randn(6, 6, { dtype = f64 }) + torch.eye(6, { dtype = f64 }) * 3):to(dt)
      local t = a:reshape(2, 3, 6)
      local ti = linalg.tensorinv(t)
      assert.are.same({ 6, 2, 3 }, { ti:size(1), ti:size(2), ti:size(3) })
      local id = torch.tensordot(ti, t, 2)
      assert.is_true(torch.allclose(id, torch.eye(6, { dtype = dt }), { atol = tol, rtol = 0 }))
      local t1 = a:reshape(6, 3, 2)
      local ti1 = linalg.tensorinv(t1, { ind = 1 })
      assert.are.same({ 3, 2, 6 }, { ti1:size(1), ti1:size(2), ti1:size(3) })
      assert.is_true(torch.allclose(torch.tensordot(ti1, t1, 1):reshape(6, 6), torch.eye(6, { dtype = dt }),
        { atol = tol, rtol = 0 }))
      -- non-contiguous: the transpose's inverse is the inverse's transpose
      assert.is_true(torch.allclose(linalg.tensorinv(a:t(), { ind = 1 }), linalg.inv(a):t(), { atol = tol, rtol = 0 }))
    end
    local a = torch.randn(4, 4, { dtype = f64 }) + torch.eye(4, { dtype = f64 }) * 3
    assert.is_true(gradcheck(function(x) return linalg.tensorinv(x) end, { a:reshape(2, 2, 4):clone():requires_grad_() }))
    H.raises(function() return linalg.tensorinv(torch.ones(4, 2, 3), { ind = 1 }) end,
      'prod(self.shape[ind:]) == prod(self.shape[:ind]), but got 6 != 4')
    H.raises(function() return linalg.tensorinv(torch.ones(4, 4), { ind = 0 }) end, "strictly positive integer for 'ind'")
    H.raises(function() return linalg.tensorinv(torch.ones(4, 4), { ind = 3 }) end, 'larger than the number of dimensions')
    H.raises(function() return linalg.tensorinv(torch.zeros(2, 2, 4)) end, 'linalg.inv', 'singular')
  end)

  it('tensorsolve: tensordot(A, X, X:dim()) = B; dims moved last; gradients; errors', function()
    torch.manual_seed(7)
    for _, dt in ipairs { torch.float32, f64 } do
      local tol = dt == f64 and 1e-10 or 1e-4
      local m = (torch.randn(6, 6, { dtype = f64 }) + torch.eye(6, { dtype = f64 }) * 3):to(dt)
      local a = m:reshape(2, 3, 3, 2)
      local b = torch.randn(2, 3, { dtype = dt })
      local x = linalg.tensorsolve(a, b)
      assert.are.same({ 3, 2 }, { x:size(1), x:size(2) })
      assert.is_true(torch.allclose(torch.tensordot(a, x, 2), b, { atol = tol, rtol = 0 }))
      -- dims: A's dim 1 moved last, a non-contiguous A and B
      local a2 = a:permute(3, 1, 2, 4)          -- (3, 2, 3, 2), not contiguous
      local b2 = torch.randn(3, 2, { dtype = dt }):t() -- (2, 3), not contiguous
      local x2 = linalg.tensorsolve(a2, b2, { dims = { 1 } })
      local moved = a2:permute(2, 3, 4, 1)      -- dims {1} last: (2, 3, 2, 3)
      assert.are.same({ 2, 3 }, { x2:size(1), x2:size(2) })
      assert.is_true(torch.allclose(torch.tensordot(moved, x2, 2), b2, { atol = tol, rtol = 0 }))
      assert.is_true(torch.allclose(linalg.tensorsolve(a2, b2, { dims = { -4 } }), x2, { atol = tol, rtol = 0 }))
    end
    local a = (torch.randn(6, 6, { dtype = f64 }) + torch.eye(6, { dtype = f64 }) * 3):reshape(6, 2, 3)
    assert.is_true(gradcheck(function(x, y) return linalg.tensorsolve(x, y) end,
      { a:clone():requires_grad_(), torch.randn(6, { dtype = f64 }):requires_grad_() }))
    H.raises(function() return linalg.tensorsolve(torch.ones(2, 3, 6), torch.ones(2, 4)) end,
      'prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got 6 != 8')
    H.raises(function() return linalg.tensorsolve(torch.ones(2, 3), torch.ones(2, 3, 1)) end, 'more than')
    H.raises(function() return linalg.tensorsolve(torch.ones(2, 3, 6), torch.ones(6), { dims = { 4 } }) end, 'dims must be')
    H.raises(function() return linalg.tensorsolve(torch.ones(2, 3, 6), torch.ones(6), { dim = { 1 } }) end, "unknown option 'dim'")
  end)
end)

describe('linalg.vander', function()
  it('against loops: float and integer x, N, batches, 0-d, non-contiguous; gradients', function()
    for _, dt in ipairs { torch.float32, f64, torch.int64, torch.int32 } do
      local x = torch.tensor({ { 2, -1, 3 }, { 0, 1, 4 } }, { dtype = dt })
      for _, n in ipairs { 3, 2, 5 } do
        local v = linalg.vander(x, { N = n })
        assert.are.equal(dt.is_floating_point and dt or torch.int64, v.dtype) -- integers: int64, as PyTorch's
        local want = {}
        for b = 1, 2 do
          want[b] = {}
          for i = 1, 3 do
            want[b][i] = {}
            for j = 1, n do want[b][i][j] = x[b][i] ^ (j - 1) end
          end
        end
        H.assert_values(v, want, 0)
      end
      H.assert_values(linalg.vander(x), linalg.vander(x, { N = 3 }):totable(), 0)
      -- non-contiguous: a column of x's transpose
      H.assert_values(linalg.vander(x:t()[2]), { { 1, -1 }, { 1, 1 } }, 0)
    end
    H.assert_values(linalg.vander(torch.tensor(2.0), { N = 3 }), { { 1, 2, 4 } }, 0)
    assert.is_true(gradcheck(function(t) return linalg.vander(t, { N = 4 }) end,
      { torch.randn(2, 3, { dtype = f64 }):requires_grad_() }))
  end)

  it('bad calls: N below 2, bool, not a tensor', function()
    H.raises(function() return linalg.vander(torch.tensor(2.0)) end, 'N must be greater than 1')
    H.raises(function() return linalg.vander(torch.ones(3), { N = 1 }) end, 'N must be greater than 1')
    H.raises(function() return linalg.vander(torch.ones(3):bool()) end, 'but got torch.bool')
    H.raises(function() return linalg.vander({ 1, 2 }) end, 'x must be a tensor')
  end)
end)
