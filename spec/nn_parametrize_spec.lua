-- nn.utils.parametrize and nn.utils.parametrizations (orthogonal, spectral_norm): values against
-- plain-Lua references and closed forms, orthogonality as Q^T Q = I computed here, gradients by
-- finite differences, and PyTorch's own maps (spec/data/nnutils_reference.lua, made by
-- tools/gen_nnutils_reference.py).
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local P = nn.utils.parametrize
local PZ = nn.utils.parametrizations
local ref = dofile('spec/data/nnutils_reference.lua')

local f64 = { dtype = torch.float64 }
local T, keys = H.from_ref, H.state_keys

-- plain-Lua matrices
local function rows(t) return t:totable() end
local function mat_tmat(a) -- a^T a
  local n, k = #a, #a[1]
  local out = {}
  for i = 1, k do
    out[i] = {}
    for j = 1, k do
      local s = 0
      for r = 1, n do s = s + a[r][i] * a[r][j] end
      out[i][j] = s
    end
  end
  return out
end
local function assert_orthonormal_columns(q, tol, msg)
  local g = mat_tmat(q)
  for i = 1, #g do
    for j = 1, #g do H.close(g[i][j], i == j and 1 or 0, tol, msg) end
  end
end

local Symmetric = nn.Module:extend('Symmetric')
function Symmetric:forward(x) return x:triu() + x:triu(1):t() end

local Scale = nn.Module:extend('Scale')
function Scale:init(c) self.c = c end
function Scale:forward(x) return x * self.c end
function Scale:right_inverse(y) return y / self.c end

describe('nn.utils.parametrize', function()
  it('computes the tensor from the original, with PyTorch state_dict keys and a parametrized class', function()
    local m = nn.Linear(3, 3, f64)
    local w0 = m.weight:detach():clone()
    P.register_parametrization(m, 'weight', Symmetric())
    assert.equal('ParametrizedLinear', m:_get_name())
    assert.same({ 'bias', 'parametrizations.weight.original' }, keys(m))
    assert.is_true(P.is_parametrized(m) and P.is_parametrized(m, 'weight'))
    assert.is_false(P.is_parametrized(m, 'bias'))
    assert.equal(nn.Linear, P.type_before_parametrizations(m))
    local w, o = rows(m.weight), rows(w0)
    for i = 1, 3 do
      for j = 1, 3 do H.close(w[i][j], i <= j and o[i][j] or o[j][i], 0, 'symmetric') end
    end
    -- the original is the same tensor object as the parameter was (set_)
    local x = torch.randn(2, 3, f64)
    m(x):sum():backward()
    local g = rows(m.parametrizations.weight.original.grad)
    -- d sum(x W^T) / dW_ij is the column sum cs_j of x; an original entry above the diagonal is
    -- W_ij and W_ji, one below is unused
    local cs = rows(x:sum(1))
    for i = 1, 3 do
      for j = 1, 3 do H.close(g[i][j], i < j and cs[j] + cs[i] or (i == j and cs[j] or 0), 1e-12, 'grad') end
    end
  end)

  it('applies right_inverse at registration and on assignment, and chains parametrizations', function()
    local m = nn.Linear(2, 2, f64)
    local w0 = m.weight:detach():clone()
    local orig = m.weight
    P.register_parametrization(m, 'weight', Scale(2))
    assert.is_true(rawequal(orig, m.parametrizations.weight.original))
    H.assert_values(m.parametrizations.weight.original, (w0 / 2):totable(), 1e-15)
    H.assert_values(m.weight, w0:totable(), 1e-15)
    m.weight = torch.tensor({ { 4.0, 8.0 }, { 2.0, 6.0 } }, f64)
    H.assert_values(m.parametrizations.weight.original, { 2, 4, 1, 3 }, 0)
    -- a second parametrization is applied after the first; the original stays as it is
    P.register_parametrization(m, 'weight', Scale(3))
    H.assert_values(m.weight, { 12, 24, 6, 18 }, 1e-15)
    H.assert_values(m.parametrizations.weight.original, { 2, 4, 1, 3 }, 0)
    m.weight = torch.tensor({ { 6.0, 12.0 }, { 18.0, 24.0 } }, f64)
    H.assert_values(m.parametrizations.weight.original, { 1, 2, 3, 4 }, 1e-15)
    assert.same({ 'bias', 'parametrizations.weight.original' }, keys(m))
    assert.equal(2, #m.parametrizations.weight)
  end)

  it('keeps several originals when right_inverse returns several tensors (original0, original1)', function()
    local Sum = nn.Module:extend('Sum')
    function Sum:forward(a, b) return a + b end
    function Sum:right_inverse(y) return { y * 0.25, y * 0.75 } end
    local m = nn.Linear(2, 2, f64)
    local w0 = m.weight:detach():clone()
    P.register_parametrization(m, 'weight', Sum())
    assert.same({ 'bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1' }, keys(m))
    H.assert_values(m.weight, w0:totable(), 1e-15)
    P.remove_parametrizations(m, 'weight')
    H.assert_values(m.weight, w0:totable(), 1e-15)
  end)

  it('computes each tensor once inside cached(), in both forms', function()
    local calls = 0
    local Count = nn.Module:extend('Count')
    function Count:forward(x) calls = calls + 1; return x * 1 end
    local m = nn.Linear(2, 2)
    P.register_parametrization(m, 'weight', Count())
    calls = 0
    do
      local _ <close> = P.cached()
      local a, b = m.weight, m.weight
      assert.is_true(rawequal(a, b))
    end
    assert.equal(1, calls)
    local _ = m.weight
    assert.equal(2, calls)
    P.cached(function() local _, _ = m.weight, m.weight end)
    assert.equal(3, calls)
  end)

  it('removes parametrizations, leaving the parametrized value or the original', function()
    local m = nn.Linear(3, 3, f64)
    local orig = m.weight
    P.register_parametrization(m, 'weight', Symmetric())
    local w = m.weight:detach():clone()
    P.remove_parametrizations(m, 'weight')
    assert.equal('Linear', m:_get_name())
    assert.is_true(rawequal(orig, m.weight))
    H.assert_values(m.weight, w:totable(), 0)
    assert.same({ 'bias', 'weight' }, keys(m))
    local m2 = nn.Linear(2, 2, f64)
    local w2 = m2.weight:detach():clone()
    P.register_parametrization(m2, 'weight', Scale(2))
    P.remove_parametrizations(m2, 'weight', { leave_parametrized = false })
    H.assert_values(m2.weight, (w2 / 2):totable(), 1e-15)
  end)

  it('gives clear errors', function()
    local m = nn.Linear(2, 3)
    H.raises(function() P.register_parametrization(m, 'nope', Symmetric()) end, 'register_parametrization',
      "does not have a parameter, a buffer, or a parametrized element with name 'nope'")
    H.raises(function() P.register_parametrization(m, 'weight', function() end) end, 'must be a Module')
    local Shrink = nn.Module:extend('Shrink')
    function Shrink:forward(x) return x:narrow(1, 1, 1) end
    H.raises(function() P.register_parametrization(m, 'weight', Shrink()) end,
      'may not change the shape of the tensor, unless the `unsafe` flag is enabled')
    assert.is_false(P.is_parametrized(m))
    P.register_parametrization(m, 'weight', Shrink(), { unsafe = true })
    assert.same({ 1, 2 }, { m.weight:size(1), m.weight:size(2) })
    H.raises(function() P.remove_parametrizations(nn.Linear(2, 2), 'weight') end, 'does not have a parametrization on weight')
    local NoInv = nn.Module:extend('NoInv')
    function NoInv:forward(x) return x * 2 end
    local m3 = nn.Linear(2, 2)
    P.register_parametrization(m3, 'weight', NoInv())
    H.raises(function() m3.weight = torch.zeros(2, 2) end, 'NoInv does not implement right_inverse')
  end)
end)

describe('nn.utils.parametrizations.orthogonal', function()
  it("matches PyTorch's maps, right_inverse and gradients", function()
    for _, c in ipairs(ref.orthogonal) do
      local what = c.map .. ' ' .. c.shape[1] .. 'x' .. c.shape[2]
      local m = nn.Linear(c.shape[2], c.shape[1], f64)
      torch.no_grad(function() m.weight:copy_(T(c.w0)) end)
      PZ.orthogonal(m, 'weight', { orthogonal_map = c.map })
      assert.same({ 'bias', 'parametrizations.weight.original', 'parametrizations.weight.1.base' }, keys(m))
      -- the weight after registration is the orthogonalised weight, sign conventions as PyTorch's
      H.assert_values(m.weight, H.flatten(c.w_init.data), 1e-10, what .. ' w_init')
      local pl = m.parametrizations.weight
      torch.no_grad(function()
        pl.original:copy_(T(c.original))
        pl[1].base:copy_(T(c.base))
      end)
      local w = m.weight
      H.assert_values(w, c.weight.data, 1e-10, what .. ' weight')
      local q = rows(w)
      if c.shape[1] < c.shape[2] then q = rows(w:t()) end
      assert_orthonormal_columns(q, 1e-12, what)
      ;(w * T(c.gy)):sum():backward()
      H.assert_values(pl.original.grad, c.grad.data, 1e-9, what .. ' grad')
    end
  end)

  it('gives rotations for 2x2 skew-symmetric maps (closed forms) and passes gradcheck', function()
    local t = 0.7
    local m = nn.Linear(2, 2, f64)
    PZ.orthogonal(m, 'weight', { orthogonal_map = 'matrix_exp', use_trivialization = false })
    -- X.tril() - X.tril()^T for X = [[a, b], [t, d]] is [[0, -t], [t, 0]]: exp is the rotation by t
    torch.no_grad(function() m.parametrizations.weight.original:copy_(torch.tensor({ { 0.3, 9 }, { t, -2 } }, f64)) end)
    H.assert_values(m.weight, { math.cos(t), -math.sin(t), math.sin(t), math.cos(t) }, 1e-14, 'matrix_exp')
    local c = nn.Linear(2, 2, f64)
    PZ.orthogonal(c, 'weight', { orthogonal_map = 'cayley', use_trivialization = false })
    torch.no_grad(function() c.parametrizations.weight.original:copy_(torch.tensor({ { 0.3, 9 }, { t, -2 } }, f64)) end)
    local d = 1 + t * t / 4
    H.assert_values(c.weight, { (1 - t * t / 4) / d, -t / d, t / d, (1 - t * t / 4) / d }, 1e-14, 'cayley')
    -- a large matrix exponential (scaling and squaring) against the series summed here
    local A = torch.tensor({ { 0, -3.1, 1.2 }, { 3.1, 0, -2.5 }, { -1.2, 2.5, 0 } }, f64)
    local E = torch.linalg.matrix_exp(A):totable()
    local a, term, sum = A:totable(), {}, {}
    for i = 1, 3 do
      term[i], sum[i] = {}, {}
      for j = 1, 3 do term[i][j] = i == j and 1 or 0; sum[i][j] = term[i][j] end
    end
    for k = 1, 60 do
      local nt = {}
      for i = 1, 3 do
        nt[i] = {}
        for j = 1, 3 do
          local s = 0
          for r = 1, 3 do s = s + term[i][r] * a[r][j] end
          nt[i][j] = s / k
          sum[i][j] = sum[i][j] + nt[i][j]
        end
      end
      term = nt
    end
    H.assert_values(torch.tensor(E, f64), sum, 1e-12, 'matrix_exp series')
    for _, map in ipairs { 'matrix_exp', 'cayley', 'householder' } do
      local o = PZ._Orthogonal(torch.zeros(4, 3, f64), map, false)
      assert.is_true(torch.autograd.gradcheck(function(x) return o(x) end,
        { (torch.randn(4, 3, f64) * 0.5):requires_grad_() }), map)
    end
  end)

  it('householder without trivialization: the weight becomes the Q of its QR with diag(R) > 0 (geqrf)', function()
    torch.manual_seed(11)
    for _, shape in ipairs { { 3, 5 }, { 5, 3 }, { 4, 4 } } do
      local m = nn.Linear(shape[1], shape[2], f64)
      local w = m.weight:detach():clone()
      PZ.orthogonal(m, 'weight', { orthogonal_map = 'householder', use_trivialization = false })
      local q = m.weight:detach()
      local tall = q:size(1) >= q:size(2)
      local qt, wt = tall and q or q:t(), tall and w or w:t()
      local k = qt:size(2)
      -- orthonormal columns, and Q^T W upper triangular with a positive diagonal: W = Q R
      assert.is_true(torch.allclose(qt:t():matmul(qt), torch.eye(k, f64), { atol = 1e-12, rtol = 0 }))
      local r = qt:t():matmul(wt)
      assert.is_true(torch.allclose(r:tril(-1), torch.zeros(k, k, f64), { atol = 1e-12, rtol = 0 }))
      assert.is_true(r:diagonal():gt(0):all():item())
      -- an orthogonal matrix assigned comes back as itself
      local target = torch.linalg.qr(torch.randn(qt:size(1), k, f64))
      m.weight = tall and target or target:t()
      assert.is_true(torch.allclose(m.weight, tall and target or target:t(), { atol = 1e-12, rtol = 0 }))
    end
  end)

  it('gives clear errors', function()
    H.raises(function() PZ.orthogonal(nn.Linear(2, 2), 'weight', { orthogonal_map = 'qr' }) end,
      'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: qr')
    H.raises(function() PZ.orthogonal(nn.Linear(2, 2), 'bias') end, 'Expected a matrix')
    H.raises(function() PZ.orthogonal(nn.Linear(2, 2), 'nope') end, "has no parameter or buffer with name 'nope'")
    local m = nn.Linear(2, 2)
    PZ.orthogonal(m, 'weight', { orthogonal_map = 'cayley', use_trivialization = false })
    H.raises(function() m.weight = torch.eye(2) end, 'not possible to assign')
  end)
end)

describe('nn.utils.parametrizations.spectral_norm', function()
  -- one step of PyTorch's parametrization power iteration in plain Lua: u = W v / |W v|, then
  -- v = W^T u / |W^T u|; sigma = u . W v
  local function step(w, u, v)
    local nu, nv = {}, {}
    local s = 0
    for i = 1, #w do
      nu[i] = 0
      for j = 1, #w[1] do nu[i] = nu[i] + w[i][j] * v[j] end
      s = s + nu[i] ^ 2
    end
    for i = 1, #w do nu[i] = nu[i] / math.max(math.sqrt(s), 1e-12) end
    s = 0
    for j = 1, #w[1] do
      nv[j] = 0
      for i = 1, #w do nv[j] = nv[j] + w[i][j] * nu[i] end
      s = s + nv[j] ^ 2
    end
    for j = 1, #w[1] do nv[j] = nv[j] / math.max(math.sqrt(s), 1e-12) end
    local sigma = 0
    for i = 1, #w do
      for j = 1, #w[1] do sigma = sigma + nu[i] * w[i][j] * nv[j] end
    end
    return nu, nv, sigma
  end

  it('divides the weight by u . W v after a power iteration in training, none in eval', function()
    local m = nn.Linear(4, 3, f64)
    PZ.spectral_norm(m)
    assert.same({ 'bias', 'parametrizations.weight.original', 'parametrizations.weight.1._u',
      'parametrizations.weight.1._v' }, keys(m))
    local sn = m.parametrizations.weight[1]
    local w = rows(m.parametrizations.weight.original)
    local u, v, sigma = step(w, sn._u:totable(), sn._v:totable())
    local got = rows(m.weight)
    for i = 1, 3 do
      for j = 1, 4 do H.close(got[i][j], w[i][j] / sigma, 1e-12, 'weight') end
    end
    H.assert_values(sn._u, u, 1e-12, 'u')
    H.assert_values(sn._v, v, 1e-12, 'v')
    -- after the 15 iterations at registration and this one, sigma is the largest singular value
    H.close(sigma, torch.linalg.svdvals(m.parametrizations.weight.original):totable()[1], 1e-6, 'sigma')
    m:eval()
    local before = sn._u:clone()
    local _ = m.weight
    assert.is_true(sn._u:equal(before))
    -- a 1-D tensor is normalised exactly
    local b = nn.Linear(2, 3, f64)
    local b0 = b.bias:detach():clone()
    PZ.spectral_norm(b, 'bias')
    H.assert_values(b.bias, (b0 / b0:norm()):totable(), 1e-14, 'bias')
    -- dim 2 for ConvTranspose; the gradient by finite differences (eval: fixed u and v)
    local ct = nn.ConvTranspose2d(2, 3, 2, {dtype = torch.float64})
    PZ.spectral_norm(ct)
    assert.equal(3, ct.parametrizations.weight[1]._u:numel())
    local f = PZ._SpectralNorm(torch.randn(3, 4, f64), 1, 1, 1e-12)
    f:eval()
    assert.is_true(torch.autograd.gradcheck(function(x) return f(x) end, { torch.randn(3, 4, f64):requires_grad_() }))
  end)

  it('gives clear errors', function()
    H.raises(function() PZ.spectral_norm(nn.Linear(2, 2), 'weight', { n_power_iterations = 0 }) end,
      'Expected n_power_iterations to be positive')
    H.raises(function() PZ.spectral_norm(nn.Linear(2, 2), 'weight', { dim = 3 }) end, 'out of range')
    H.raises(function() PZ.spectral_norm(nn.Linear(2, 2), 'weight', { bogus = 1 }) end, "unknown option 'bogus'")
  end)
end)
