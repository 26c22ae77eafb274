-- The losses PyTorch has beside the common ones: poisson_nll_loss, gaussian_nll_loss,
-- cosine_embedding_loss, hinge_embedding_loss, triplet_margin_loss and multilabel_soft_margin_loss,
-- functional and module forms. Values of each reduction against element-by-element references
-- written here in plain Lua (from PyTorch's documented formulas, not from the implementation), in
-- float32 and float64 and on transposed inputs; one value a loss worked out by hand; the modules
-- against the functions; gradients by finite differences (gradcheck, float64); the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional
local gradcheck = torch.autograd.gradcheck
local f32, f64 = torch.float32, torch.float64

local function tol(dt) return dt == f64 and 1e-12 or 2e-5 end

-- a rows x cols table of deterministic values spread over [lo, hi]
local function grid(rows, cols, lo, hi, seed)
  local t = {}
  for i = 1, rows do
    t[i] = {}
    for j = 1, cols do
      local u = (math.sin(i * 12.9898 + j * 78.233 + seed * 37.719) * 43758.5453) % 1
      t[i][j] = lo + (hi - lo) * u
    end
  end
  return t
end

-- the tensor of a rows x cols table; transposed: built as its cols x rows transpose, then :t(),
-- so the same values in a non-contiguous tensor
local function tensor_of(rows, dtype, transposed)
  if not transposed then return torch.tensor(rows, { dtype = dtype }) end
  local tt = {}
  for j = 1, #rows[1] do
    tt[j] = {}
    for i = 1, #rows do tt[j][i] = rows[i][j] end
  end
  local x = torch.tensor(tt, { dtype = dtype }):t()
  assert(not x:is_contiguous())
  return x
end

-- a float64 leaf for gradcheck (transposed: a non-contiguous one, as autograd_spec's leaf_t)
local function leaf_of(rows, transposed)
  local x = tensor_of(rows, f64, transposed)
  x.requires_grad = true
  return x
end

-- the tensor's values as a nested Lua table (the reference works from the values the tensor holds)
local function values(x) return x:double():totable() end

-- fn(reduction) against the elementwise reference `want` (nested table, shape `shape`): 'none'
-- element by element, 'sum' and 'mean' (the default) summed here
local function check_reductions(fn, want, shape, dt, msg)
  local flat = H.flatten(want)
  local sum = 0
  for _, v in ipairs(flat) do sum = sum + v end
  local none = fn('none')
  local got = {}
  for d = 1, none:dim() do got[d] = none:size(d) end
  assert.are.same(shape, got, msg .. ': shape of none')
  assert.are.equal(dt, none.dtype, msg .. ': dtype')
  H.assert_values(none, want, tol(dt), msg .. ' none')
  H.close(fn('sum'):item(), sum, tol(dt), msg .. ' sum')
  H.close(fn('mean'):item(), sum / #flat, tol(dt), msg .. ' mean')
  H.close(fn(nil):item(), sum / #flat, tol(dt), msg .. ' default (mean)')
  assert.are.equal(0, fn('mean'):dim())
end

local function with(o, r)
  local c = {}
  for k, v in pairs(o) do c[k] = v end
  c.reduction = r
  return c
end

local function log_sigmoid(v) return -math.log(1 + math.exp(-v)) end

describe('F.poisson_nll_loss and nn.PoissonNLLLoss', function()
  local function ref(x, t, log_input, full, eps)
    local out = {}
    for i = 1, #x do
      out[i] = {}
      for j = 1, #x[i] do
        local a, b = x[i][j], t[i][j]
        local l
        if log_input then l = math.exp(a) - b * a else l = a - b * math.log(a + eps) end
        if full and b > 1 then l = l + b * math.log(b) - b + 0.5 * math.log(2 * math.pi * b) end
        out[i][j] = l
      end
    end
    return out
  end
  local targets = grid(4, 3, 0, 4, 2)
  targets[1][1], targets[1][2], targets[2][1] = 0, 1, 1.5 -- 0, the edge of the Stirling term, above it

  it('matches the reference for each reduction and option, float32 and float64, transposed input', function()
    local cases = { {}, { log_input = false }, { full = true }, { log_input = false, full = true, eps = 1e-3 } }
    for _, dt in ipairs { f32, f64 } do
      for _, tr in ipairs { false, true } do
        for ci, o in ipairs(cases) do
          local li = o.log_input ~= false
          local x = tensor_of(li and grid(4, 3, -1.5, 1.5, 1) or grid(4, 3, 0.1, 3, 1), dt, tr)
          local t = tensor_of(targets, dt)
          local want = ref(values(x), values(t), li, o.full, o.eps or 1e-8)
          check_reductions(function(r) return F.poisson_nll_loss(x, t, with(o, r)) end, want, { 4, 3 }, dt,
            string.format('case %d %s%s', ci, tostring(dt), tr and ' transposed' or ''))
          for _, r in ipairs { 'none', 'mean', 'sum' } do
            assert.is_true(torch.equal(nn.PoissonNLLLoss(with(o, r))(x, t), F.poisson_nll_loss(x, t, with(o, r))))
          end
        end
      end
    end
  end)
  it('gives the hand-computed values', function()
    -- exp(log 2) - 1 * log 2
    H.close(F.poisson_nll_loss(torch.tensor({ math.log(2) }, { dtype = f64 }), torch.tensor({ 1.0 }, { dtype = f64 })):item(),
      1.3068528194400546, 1e-15)
    -- full, target 2: (exp(0) - 0) + 2 log 2 - 2 + 0.5 log(4 pi) = 2 log 2 - 1 + 0.5 log(4 pi)
    H.close(F.poisson_nll_loss(torch.zeros(1, { dtype = f64 }), torch.tensor({ 2.0 }, { dtype = f64 }), { full = true }):item(),
      1.651806484604536, 1e-15)
    -- log_input = false, eps = 0: 2 - 2 log 2
    H.close(F.poisson_nll_loss(torch.tensor({ 2.0 }, { dtype = f64 }), torch.tensor({ 2.0 }, { dtype = f64 }),
      { log_input = false, eps = 0 }):item(), 0.6137056388801094, 1e-15)
  end)
  it('passes gradcheck', function()
    local t = tensor_of(targets, f64)
    assert.is_true(gradcheck(function(a) return F.poisson_nll_loss(a, t, { full = true }) end,
      { leaf_of(grid(4, 3, -1, 1, 3)) }))
    assert.is_true(gradcheck(function(a) return F.poisson_nll_loss(a, t, { log_input = false, reduction = 'none' }) end,
      { leaf_of(grid(3, 4, 0.5, 2, 4), true):t() }))
    assert.is_true(gradcheck(function(a) return nn.PoissonNLLLoss({ reduction = 'sum' })(a, t) end,
      { leaf_of(grid(3, 4, -1, 1, 5), true):t() }))
  end)
  it('names bad arguments', function()
    local x, t = torch.ones(2, 3), torch.ones(2, 3)
    H.raises(function() F.poisson_nll_loss(x, torch.ones(3, 2)) end, 'poisson_nll_loss: input of shape', 'differ')
    H.raises(function() F.poisson_nll_loss(x, t, { reduction = 'avg' }) end,
      "poisson_nll_loss: reduction must be 'mean', 'sum' or 'none', got avg")
    H.raises(function() F.poisson_nll_loss(x, t, { log_inputs = true }) end, "poisson_nll_loss: unknown option 'log_inputs'")
    H.raises(function() F.poisson_nll_loss(x, t, { full = 1 }) end, 'poisson_nll_loss: full must be a boolean, got number')
    H.raises(function() F.poisson_nll_loss(x, t, { eps = 'small' }) end, 'poisson_nll_loss: eps must be a number, got string')
    H.raises(function() F.poisson_nll_loss(x, 2) end, 'poisson_nll_loss: expected target to be a tensor, got number')
    H.raises(function() nn.PoissonNLLLoss({ reduction = 'avg' }) end, "PoissonNLLLoss: reduction must be 'mean', 'sum' or 'none'")
    H.raises(function() nn.PoissonNLLLoss({ epsilon = 1 }) end, "PoissonNLLLoss: unknown option 'epsilon'")
  end)
end)

describe('F.gaussian_nll_loss and nn.GaussianNLLLoss', function()
  -- x, t, v: functions (i, j) -> the values, target and variance broadcast by the caller
  local function ref(n, c, x, t, v, full, eps)
    local out = {}
    for i = 1, n do
      out[i] = {}
      for j = 1, c do
        local var = math.max(v(i, j), eps)
        local d = x(i, j) - t(i, j)
        local l = 0.5 * (math.log(var) + d * d / var)
        if full then l = l + 0.5 * math.log(2 * math.pi) end
        out[i][j] = l
      end
    end
    return out
  end
  local vars = grid(4, 3, 0.05, 2, 7)
  vars[1][1], vars[2][2] = 0, 1e-9 -- clamped to eps

  it('matches the reference for var of the input\'s shape, one dim fewer and a last dim of 1', function()
    for _, dt in ipairs { f32, f64 } do
      for _, tr in ipairs { false, true } do
        for _, o in ipairs { {}, { full = true }, { eps = 0.1 } } do
          local x = tensor_of(grid(4, 3, -2, 2, 5), dt, tr)
          local t = tensor_of(grid(4, 3, -2, 2, 6), dt)
          local xv, tv = values(x), values(t)
          local eps = o.eps or 1e-6
          local msg = tostring(dt) .. (tr and ' transposed' or '') .. (o.full and ' full' or '')
          -- var of the input's shape (heteroscedastic), transposed too
          local v = tensor_of(vars, dt, tr)
          local vv = values(v)
          local want = ref(4, 3, function(i, j) return xv[i][j] end, function(i, j) return tv[i][j] end,
            function(i, j) return vv[i][j] end, o.full, eps)
          check_reductions(function(r) return F.gaussian_nll_loss(x, t, v, with(o, r)) end, want, { 4, 3 }, dt, msg)
          -- one variance a row: shape {4} and {4, 1}
          local v1 = torch.tensor({ vars[1][1], vars[2][3], vars[3][1], vars[4][2] }, { dtype = dt })
          local v1v = values(v1)
          want = ref(4, 3, function(i, j) return xv[i][j] end, function(i, j) return tv[i][j] end,
            function(i) return v1v[i] end, o.full, eps)
          check_reductions(function(r) return F.gaussian_nll_loss(x, t, v1, with(o, r)) end, want, { 4, 3 }, dt, msg .. ' var {4}')
          check_reductions(function(r) return F.gaussian_nll_loss(x, t, v1:view(4, 1), with(o, r)) end, want, { 4, 3 }, dt,
            msg .. ' var {4, 1}')
          -- a target with a dim of 1 broadcasts
          local t1 = tensor_of({ { 0.5, -0.25, 1.0 } }, dt)
          local t1v = values(t1)
          want = ref(4, 3, function(i, j) return xv[i][j] end, function(_, j) return t1v[1][j] end,
            function(i, j) return vv[i][j] end, o.full, eps)
          check_reductions(function(r) return F.gaussian_nll_loss(x, t1, v, with(o, r)) end, want, { 4, 3 }, dt, msg .. ' target {1, 3}')
          for _, r in ipairs { 'none', 'mean', 'sum' } do
            assert.is_true(torch.equal(nn.GaussianNLLLoss(with(o, r))(x, t, v1), F.gaussian_nll_loss(x, t, v1, with(o, r))))
          end
        end
      end
    end
  end)
  it('gives the hand-computed values', function()
    local function T(v) return torch.tensor(v, { dtype = f64 }) end
    -- 0.5 (log 2 + (1 - 3)^2 / 2) = 0.5 log 2 + 1
    H.close(F.gaussian_nll_loss(T({ 1.0 }), T({ 3.0 }), T({ 2.0 })):item(), 1.3465735902799727, 1e-15)
    -- full adds 0.5 log(2 pi); a 1-D input with a 0-D var (one dim fewer)
    H.close(F.gaussian_nll_loss(T({ 1.0, 1.0 }), T({ 3.0, 3.0 }), T(2.0), { full = true }):item(),
      1.3465735902799727 + 0.9189385332046727, 1e-15)
    -- var 0 counts as eps: 0.5 (log 0.25 + 1 / 0.25)
    H.close(F.gaussian_nll_loss(T({ 0.0 }), T({ 1.0 }), T({ 0.0 }), { eps = 0.25 }):item(), 1.3068528194400546, 1e-15)
  end)
  it('passes gradcheck in input, target and var, and var\'s gradient is taken at the clamped value', function()
    local t = tensor_of(grid(4, 3, -1, 1, 8), f64)
    assert.is_true(gradcheck(function(a, b, v) return F.gaussian_nll_loss(a, b, v, { reduction = 'none' }) end,
      { leaf_of(grid(4, 3, -1, 1, 9)), leaf_of(grid(4, 3, -1, 1, 10)), leaf_of(grid(3, 4, 0.2, 2, 11), true):t() }))
    assert.is_true(gradcheck(function(a, v) return nn.GaussianNLLLoss({ full = true })(a, t, v) end,
      { leaf_of(grid(3, 4, -1, 1, 12), true):t(), leaf_of({ { 0.5, 1.5, 0.7, 1.1 } }):view(4) }))
    -- no gradient of the clamp itself: d/dvar 0.5 (log v + d^2 / v) at v = eps, as PyTorch's
    local v = torch.tensor({ 1e-9, 0.5 }, { dtype = f64, requires_grad = true })
    local x = torch.tensor({ 2e-3, 1.0 }, { dtype = f64 })
    F.gaussian_nll_loss(x, torch.zeros(2, { dtype = f64 }), v, { reduction = 'sum' }):backward()
    local eps = 1e-6
    H.close(v.grad[1], 0.5 / eps - 0.5 * 4e-6 / (eps * eps), 1e-12) -- -1.5e6 (a clamp's own gradient: 0)
    H.close(v.grad[2], 0.5 / 0.5 - 0.5 * 1 / 0.25, 1e-12)
  end)
  it('names bad arguments', function()
    local x, t = torch.ones(4, 3), torch.ones(4, 3)
    H.raises(function() F.gaussian_nll_loss(x, t, torch.ones(4, 2)) end, 'gaussian_nll_loss: var is of incorrect size')
    H.raises(function() F.gaussian_nll_loss(x, t, torch.ones(3)) end, 'gaussian_nll_loss: var is of incorrect size')
    H.raises(function() F.gaussian_nll_loss(x, t, torch.ones(4, 3, 1)) end, 'gaussian_nll_loss: var is of incorrect size')
    H.raises(function() F.gaussian_nll_loss(x, torch.ones(4, 2), torch.ones(4)) end,
      'gaussian_nll_loss: target of shape torch.Size([4, 2]) does not match input of shape torch.Size([4, 3])')
    H.raises(function() F.gaussian_nll_loss(x, t, torch.tensor({ 1.0, -0.5, 1.0, 1.0 })) end,
      'gaussian_nll_loss: var has negative entry/entries')
    H.raises(function() F.gaussian_nll_loss(x, t, torch.ones(4), { reduction = 'avg' }) end,
      "gaussian_nll_loss: reduction must be 'mean', 'sum' or 'none', got avg")
    H.raises(function() F.gaussian_nll_loss(x, t, torch.ones(4), { log_input = true }) end,
      "gaussian_nll_loss: unknown option 'log_input'")
    H.raises(function() F.gaussian_nll_loss(x, t, 1.0) end, 'gaussian_nll_loss: expected var to be a tensor, got number')
    H.raises(function() F.gaussian_nll_loss(x, t, torch.ones(4), { eps = '1' }) end, 'gaussian_nll_loss: eps must be a number')
    H.raises(function() nn.GaussianNLLLoss({ reduction = 'avg' }) end, "GaussianNLLLoss: reduction must be 'mean', 'sum' or 'none'")
    H.raises(function() nn.GaussianNLLLoss({ epsilon = 1 }) end, "GaussianNLLLoss: unknown option 'epsilon'")
    H.raises(function() nn.GaussianNLLLoss()(x, t, -torch.ones(4)) end, 'gaussian_nll_loss: var has negative entry/entries')
  end)
end)

describe('F.cosine_embedding_loss and nn.CosineEmbeddingLoss', function()
  local function ref(x1, x2, y, margin)
    local out = {}
    for i = 1, #x1 do
      local dot, n1, n2 = 0, 0, 0
      for k = 1, #x1[i] do
        dot = dot + x1[i][k] * x2[i][k]
        n1 = n1 + x1[i][k] ^ 2
        n2 = n2 + x2[i][k] ^ 2
      end
      local cos = dot / math.sqrt((n1 + 1e-12) * (n2 + 1e-12))
      if y[i] == 1 then out[i] = 1 - cos else out[i] = math.max(0, cos - margin) end
    end
    return out
  end
  local ys = { 1, -1, 1, -1, -1 }

  it('matches the reference for each reduction and margin, float32 and float64, transposed inputs', function()
    for _, dt in ipairs { f32, f64 } do
      for _, tr in ipairs { false, true } do
        for _, o in ipairs { {}, { margin = 0.2 }, { margin = -0.5 } } do
          local x1 = tensor_of(grid(5, 4, -1, 1, 13), dt, tr)
          local x2 = tensor_of(grid(5, 4, -1, 1, 14), dt)
          -- targets as integers and as floats
          for _, y in ipairs { torch.tensor(ys), torch.tensor(ys, { dtype = dt }) } do
            local want = ref(values(x1), values(x2), ys, o.margin or 0)
            check_reductions(function(r) return F.cosine_embedding_loss(x1, x2, y, with(o, r)) end, want, { 5 }, dt,
              tostring(dt) .. (tr and ' transposed' or '') .. ' margin ' .. tostring(o.margin))
            for _, r in ipairs { 'none', 'mean', 'sum' } do
              assert.is_true(torch.equal(nn.CosineEmbeddingLoss(with(o, r))(x1, x2, y), F.cosine_embedding_loss(x1, x2, y, with(o, r))))
            end
          end
        end
      end
    end
  end)
  it('gives the hand-computed values', function()
    local function T(v) return torch.tensor(v, { dtype = f64 }) end
    -- orthogonal, y = 1: 1 - 0
    H.close(F.cosine_embedding_loss(T({ { 1, 0 } }), T({ { 0, 1 } }), torch.tensor({ 1 })):item(), 1, 1e-15)
    -- 45 degrees, y = -1, margin 0.5: cos - 0.5 = 1 / sqrt 2 - 0.5 (1e-12 in each norm is below float64's eps here)
    H.close(F.cosine_embedding_loss(T({ { 1, 1 } }), T({ { 3, 0 } }), torch.tensor({ -1 }), { margin = 0.5 }):item(),
      0.20710678118654746, 1e-12)
    -- a pair of 1-D inputs with a 0-D target
    H.close(F.cosine_embedding_loss(T({ 2, 0 }), T({ 1, 0 }), torch.tensor(1)):item(), 0, 1e-12)
    H.close(F.cosine_embedding_loss(T({ 2, 0 }), T({ 1, 0 }), torch.tensor(-1), { reduction = 'none' }):item(), 1, 1e-12)
  end)
  it('passes gradcheck', function()
    local y = torch.tensor(ys, { dtype = f64 })
    assert.is_true(gradcheck(function(a, b) return F.cosine_embedding_loss(a, b, y, { margin = -0.5, reduction = 'none' }) end,
      { leaf_of(grid(5, 4, -1, 1, 15)), leaf_of(grid(4, 5, -1, 1, 16), true):t() }))
    assert.is_true(gradcheck(function(a, b) return nn.CosineEmbeddingLoss({ margin = -0.5 })(a, b, y) end,
      { leaf_of(grid(4, 5, -1, 1, 17), true):t(), leaf_of(grid(5, 4, -1, 1, 18)) }))
  end)
  it('names bad arguments', function()
    local x = torch.ones(3, 2)
    H.raises(function() F.cosine_embedding_loss(x, x, torch.tensor({ 1, 0, -1 })) end,
      'cosine_embedding_loss: target must contain only 1 or -1')
    H.raises(function() F.cosine_embedding_loss(x, x, torch.tensor({ 1, 2, -1 })) end,
      'cosine_embedding_loss: target must contain only 1 or -1')
    H.raises(function() F.cosine_embedding_loss(x, x, torch.ones(3, 1)) end,
      'cosine_embedding_loss: 0D or 1D target tensor expected, multi-target not supported')
    H.raises(function() F.cosine_embedding_loss(torch.ones(2), torch.ones(2), torch.ones(3)) end,
      'cosine_embedding_loss: 1D target tensor expects 2D input tensors, but found inputs with sizes')
    H.raises(function() F.cosine_embedding_loss(x, x, torch.tensor(1)) end,
      'cosine_embedding_loss: 0D target tensor expects 1D input tensors')
    H.raises(function() F.cosine_embedding_loss(x, torch.ones(3, 3), torch.ones(3)) end,
      'cosine_embedding_loss: input1 of shape torch.Size([3, 2]) and input2 of shape torch.Size([3, 3]) differ')
    H.raises(function() F.cosine_embedding_loss(x, x, torch.ones(4)) end,
      'cosine_embedding_loss: target of shape torch.Size([4]) does not match a batch of 3')
    H.raises(function() F.cosine_embedding_loss(x, x, torch.ones(3), { reduction = 'avg' }) end,
      "cosine_embedding_loss: reduction must be 'mean', 'sum' or 'none', got avg")
    H.raises(function() F.cosine_embedding_loss(x, x, torch.ones(3), { eps = 1 }) end, "cosine_embedding_loss: unknown option 'eps'")
    H.raises(function() F.cosine_embedding_loss(x, x, torch.ones(3), { margin = '1' }) end,
      'cosine_embedding_loss: margin must be a number, got string')
    H.raises(function() F.cosine_embedding_loss(x, nil, torch.ones(3)) end, 'cosine_embedding_loss: expected input2 to be a tensor, got nil')
    H.raises(function() nn.CosineEmbeddingLoss({ reduction = 'max' }) end, "CosineEmbeddingLoss: reduction must be 'mean', 'sum' or 'none'")
    H.raises(function() nn.CosineEmbeddingLoss({ margins = 1 }) end, "CosineEmbeddingLoss: unknown option 'margins'")
  end)
end)

describe('F.hinge_embedding_loss and nn.HingeEmbeddingLoss', function()
  -- PyTorch's definition: x where y = 1, max(0, margin - x) where y = -1
  local function ref(x, y, margin)
    local out = {}
    for i = 1, #x do
      out[i] = {}
      for j = 1, #x[i] do
        if y[i][j] == 1 then out[i][j] = x[i][j] else out[i][j] = math.max(0, margin - x[i][j]) end
      end
    end
    return out
  end
  local ys = { { 1, -1, -1 }, { -1, 1, -1 }, { 1, 1, -1 }, { -1, -1, 1 } }

  it('matches the reference for each reduction and margin, float32 and float64, transposed input', function()
    for _, dt in ipairs { f32, f64 } do
      for _, tr in ipairs { false, true } do
        for _, o in ipairs { {}, { margin = 0.3 }, { margin = 2 } } do
          local x = tensor_of(grid(4, 3, -1, 2, 19), dt, tr)
          for _, y in ipairs { tensor_of(ys, dt), tensor_of(ys, torch.int64, true) } do
            local want = ref(values(x), ys, o.margin or 1)
            check_reductions(function(r) return F.hinge_embedding_loss(x, y, with(o, r)) end, want, { 4, 3 }, dt,
              tostring(dt) .. (tr and ' transposed' or '') .. ' margin ' .. tostring(o.margin))
            for _, r in ipairs { 'none', 'mean', 'sum' } do
              assert.is_true(torch.equal(nn.HingeEmbeddingLoss(with(o, r))(x, y), F.hinge_embedding_loss(x, y, with(o, r))))
            end
          end
        end
      end
    end
  end)
  it('gives the hand-computed values', function()
    local x = torch.tensor({ 0.25, 0.25, 1.5 }, { dtype = f64 })
    local y = torch.tensor({ 1, -1, -1 }, { dtype = f64 })
    H.assert_values(F.hinge_embedding_loss(x, y, { reduction = 'none' }), { 0.25, 0.75, 0 }, 0)
    H.close(F.hinge_embedding_loss(x, y):item(), 1 / 3, 1e-15)
    -- PyTorch does not check y: an element neither 1 nor -1 takes both terms
    H.close(F.hinge_embedding_loss(torch.tensor({ 0.25 }, { dtype = f64 }), torch.tensor({ 0.0 }, { dtype = f64 })):item(), 1, 1e-15)
  end)
  it('passes gradcheck', function()
    local y = tensor_of(ys, f64)
    -- values away from the kink at x = margin
    local x = grid(4, 3, -1, 2, 20)
    for i = 1, 4 do for j = 1, 3 do if math.abs(x[i][j] - 1) < 0.05 then x[i][j] = 1.3 end end end
    assert.is_true(gradcheck(function(a) return F.hinge_embedding_loss(a, y, { reduction = 'none' }) end, { leaf_of(x) }))
    assert.is_true(gradcheck(function(a) return nn.HingeEmbeddingLoss()(a, y) end, { leaf_of(x, true) }))
  end)
  it('names bad arguments', function()
    local x = torch.ones(2, 3)
    H.raises(function() F.hinge_embedding_loss(x, torch.ones(3, 2)) end, 'hinge_embedding_loss: input of shape', 'differ')
    H.raises(function() F.hinge_embedding_loss(x, x, { reduction = 'avg' }) end,
      "hinge_embedding_loss: reduction must be 'mean', 'sum' or 'none', got avg")
    H.raises(function() F.hinge_embedding_loss(x, x, { p = 2 }) end, "hinge_embedding_loss: unknown option 'p'")
    H.raises(function() F.hinge_embedding_loss(x, x, { margin = true }) end, 'hinge_embedding_loss: margin must be a number, got boolean')
    H.raises(function() nn.HingeEmbeddingLoss({ reduction = 'max' }) end, "HingeEmbeddingLoss: reduction must be 'mean', 'sum' or 'none'")
    H.raises(function() nn.HingeEmbeddingLoss({ margn = 1 }) end, "HingeEmbeddingLoss: unknown option 'margn'")
  end)
end)

describe('F.triplet_margin_loss and nn.TripletMarginLoss', function()
  local function dist(u, v, p, eps)
    local s = 0
    for k = 1, #u do s = s + math.abs(u[k] - v[k] + eps) ^ p end
    return s ^ (1 / p)
  end
  local function ref(a, pos, neg, o)
    local margin, p, eps = o.margin or 1, o.p or 2, o.eps or 1e-6
    local out = {}
    for i = 1, #a do
      local dp, dn = dist(a[i], pos[i], p, eps), dist(a[i], neg[i], p, eps)
      if o.swap then dn = math.min(dn, dist(pos[i], neg[i], p, eps)) end
      out[i] = math.max(0, margin + dp - dn)
    end
    return out
  end

  it('matches the reference for each reduction, p, margin and swap, float32 and float64, transposed input', function()
    local cases = { {}, { p = 1 }, { p = 3, margin = 0.5 }, { swap = true }, { swap = true, p = 1, eps = 0 }, { margin = 2, eps = 0.1 } }
    for _, dt in ipairs { f32, f64 } do
      for _, tr in ipairs { false, true } do
        for ci, o in ipairs(cases) do
          local a = tensor_of(grid(6, 4, -1, 1, 21), dt, tr)
          local pos = tensor_of(grid(6, 4, -1, 1, 22), dt)
          local neg = tensor_of(grid(6, 4, -1.5, 1.5, 23), dt, tr)
          local want = ref(values(a), values(pos), values(neg), o)
          check_reductions(function(r) return F.triplet_margin_loss(a, pos, neg, with(o, r)) end, want, { 6 }, dt,
            string.format('case %d %s%s', ci, tostring(dt), tr and ' transposed' or ''))
          for _, r in ipairs { 'none', 'mean', 'sum' } do
            assert.is_true(torch.equal(nn.TripletMarginLoss(with(o, r))(a, pos, neg), F.triplet_margin_loss(a, pos, neg, with(o, r))))
          end
        end
      end
    end
  end)
  it('gives the hand-computed values', function()
    local function T(v) return torch.tensor(v, { dtype = f64 }) end
    -- |a - p| = 5, |a - n| = 1: max(0, 1 + 5 - 1)
    H.close(F.triplet_margin_loss(T({ { 0, 0 } }), T({ { 3, 4 } }), T({ { 0, 1 } }), { eps = 0 }):item(), 5, 1e-15)
    -- p = 1: 7 - 1 + 1
    H.close(F.triplet_margin_loss(T({ { 0, 0 } }), T({ { 3, 4 } }), T({ { 0, 1 } }), { eps = 0, p = 1 }):item(), 7, 1e-15)
    -- swap: |p - n| = sqrt(18) is larger than |a - n| = 1, so no change; with n near p it is used
    H.close(F.triplet_margin_loss(T({ { 0, 0 } }), T({ { 3, 4 } }), T({ { 3, 5 } }), { eps = 0, swap = true }):item(), 5, 1e-15)
    -- 1-D inputs: one triplet, a 0-D loss; the negative far away: 0
    local l = F.triplet_margin_loss(T({ 0, 0 }), T({ 0, 1 }), T({ 10, 0 }), { reduction = 'none' })
    assert.are.equal(0, l:dim())
    assert.are.equal(0, l:item())
  end)
  it('passes gradcheck', function()
    -- a large margin keeps every triplet on the linear side of the hinge
    for _, o in ipairs { { margin = 4 }, { margin = 4, p = 1 }, { margin = 4, p = 3, swap = true } } do
      assert.is_true(gradcheck(function(a, p, n) return F.triplet_margin_loss(a, p, n, with(o, 'none')) end,
        { leaf_of(grid(5, 4, -1, 1, 24)), leaf_of(grid(4, 5, -1, 1, 25), true):t(), leaf_of(grid(5, 4, -1, 1, 26)) }))
    end
    assert.is_true(gradcheck(function(a, p, n) return nn.TripletMarginLoss({ margin = 4 })(a, p, n) end,
      { leaf_of(grid(4, 5, -1, 1, 27), true):t(), leaf_of(grid(5, 4, -1, 1, 28)), leaf_of(grid(5, 4, -1, 1, 29)) }))
  end)
  it('names bad arguments', function()
    local x = torch.ones(3, 2)
    H.raises(function() F.triplet_margin_loss(x, x, torch.ones(3, 2, 1)) end,
      'triplet_margin_loss: all inputs should have same dimension but got 2D, 2D and 3D inputs')
    H.raises(function() F.triplet_margin_loss(x, torch.ones(3, 3), x) end,
      'triplet_margin_loss: anchor of shape torch.Size([3, 2]), positive of shape torch.Size([3, 3])', 'differ')
    H.raises(function() F.triplet_margin_loss(x, x, x, { margin = 0 }) end, 'triplet_margin_loss: margin must be greater than 0, got 0')
    H.raises(function() F.triplet_margin_loss(x, x, x, { p = 0 }) end, 'triplet_margin_loss: p must be a positive number, got 0')
    H.raises(function() F.triplet_margin_loss(x, x, x, { swap = 1 }) end, 'triplet_margin_loss: swap must be a boolean, got number')
    H.raises(function() F.triplet_margin_loss(x, x, x, { reduction = 'avg' }) end,
      "triplet_margin_loss: reduction must be 'mean', 'sum' or 'none', got avg")
    H.raises(function() F.triplet_margin_loss(x, x, x, { keepdim = true }) end, "triplet_margin_loss: unknown option 'keepdim'")
    H.raises(function() F.triplet_margin_loss(x, x, {}) end, 'triplet_margin_loss: expected negative to be a tensor, got table')
    H.raises(function() F.triplet_margin_loss(torch.tensor(1.0), torch.tensor(1.0), torch.tensor(1.0)) end,
      'triplet_margin_loss: expected inputs of at least 1 dimension')
    H.raises(function() nn.TripletMarginLoss({ margin = -1 }) end, 'TripletMarginLoss: margin must be greater than 0, got -1')
    H.raises(function() nn.TripletMarginLoss({ reduction = 'max' }) end, "TripletMarginLoss: reduction must be 'mean', 'sum' or 'none'")
    H.raises(function() nn.TripletMarginLoss({ norm = 2 }) end, "TripletMarginLoss: unknown option 'norm'")
  end)
end)

describe('F.multilabel_soft_margin_loss and nn.MultiLabelSoftMarginLoss', function()
  local function ref(x, y, w)
    local out = {}
    for i = 1, #x do
      local s = 0
      for j = 1, #x[i] do
        local l = -(y[i][j] * log_sigmoid(x[i][j]) + (1 - y[i][j]) * log_sigmoid(-x[i][j]))
        s = s + l * (w and w[j] or 1)
      end
      out[i] = s / #x[i]
    end
    return out
  end
  local ys = { { 1, 0, 0, 1 }, { 0, 0, 1, 1 }, { 1, 1, 1, 0 } }
  local ws = { 0.5, 2, 1, 0.25 }

  it('matches the reference for each reduction, with and without weight, float32 and float64, transposed input', function()
    for _, dt in ipairs { f32, f64 } do
      for _, tr in ipairs { false, true } do
        for _, weighted in ipairs { false, true } do
          local x = tensor_of(grid(3, 4, -3, 3, 30), dt, tr)
          local y = tensor_of(ys, dt, tr)
          local o = { weight = weighted and torch.tensor(ws, { dtype = dt }) or nil }
          local want = ref(values(x), ys, weighted and ws or nil)
          check_reductions(function(r) return F.multilabel_soft_margin_loss(x, y, with(o, r)) end, want, { 3 }, dt,
            tostring(dt) .. (tr and ' transposed' or '') .. (weighted and ' weighted' or ''))
          for _, r in ipairs { 'none', 'mean', 'sum' } do
            assert.is_true(torch.equal(nn.MultiLabelSoftMarginLoss(with(o, r))(x, y), F.multilabel_soft_margin_loss(x, y, with(o, r))))
          end
        end
      end
    end
  end)
  it('gives the hand-computed values', function()
    local function T(v) return torch.tensor(v, { dtype = f64 }) end
    -- logits 0: log 2 for each class whatever the label
    H.close(F.multilabel_soft_margin_loss(T({ { 0, 0 } }), T({ { 1, 0 } })):item(), 0.6931471805599453, 1e-15)
    -- a 1-D input is one sample: (log(1 + e^-2) + log(1 + e^-2)) / 2 with weight {1, 3}: 2 log(1 + e^-2)
    H.close(F.multilabel_soft_margin_loss(T({ 2, -2 }), T({ 1, 0 }), { weight = T({ 1, 3 }), reduction = 'none' }):item(),
      2 * math.log(1 + math.exp(-2)), 1e-15)
  end)
  it('passes gradcheck, and the module keeps its weight as a buffer', function()
    local y = tensor_of(ys, f64)
    local w = torch.tensor(ws, { dtype = f64 })
    assert.is_true(gradcheck(function(a) return F.multilabel_soft_margin_loss(a, y, { weight = w, reduction = 'none' }) end,
      { leaf_of(grid(3, 4, -2, 2, 31)) }))
    assert.is_true(gradcheck(function(a, b) return nn.MultiLabelSoftMarginLoss()(a, b) end,
      { leaf_of(grid(4, 3, -2, 2, 32), true):t(), leaf_of(grid(3, 4, 0, 1, 33)) }))
    local m = nn.MultiLabelSoftMarginLoss({ weight = w })
    assert.are.equal(w, m.weight)
    assert.are.equal(0, #m:parameters())
  end)
  it('names bad arguments', function()
    local x = torch.ones(2, 3)
    H.raises(function() F.multilabel_soft_margin_loss(x, torch.ones(2, 2)) end, 'multilabel_soft_margin_loss: input of shape', 'differ')
    H.raises(function() F.multilabel_soft_margin_loss(x, x, { weight = torch.ones(2) }) end,
      'multilabel_soft_margin_loss: weight of shape torch.Size([2]) does not broadcast')
    H.raises(function() F.multilabel_soft_margin_loss(x, x, { weight = 2 }) end,
      'multilabel_soft_margin_loss: expected weight to be a tensor, got number')
    H.raises(function() F.multilabel_soft_margin_loss(torch.tensor(1.0), torch.tensor(1.0)) end,
      'multilabel_soft_margin_loss: expected an input of at least 1 dimension')
    H.raises(function() F.multilabel_soft_margin_loss(x, x, { reduction = 'avg' }) end,
      "multilabel_soft_margin_loss: reduction must be 'mean', 'sum' or 'none', got avg")
    H.raises(function() F.multilabel_soft_margin_loss(x, x, { weights = torch.ones(3) }) end,
      "multilabel_soft_margin_loss: unknown option 'weights'")
    H.raises(function() nn.MultiLabelSoftMarginLoss({ reduction = 'max' }) end,
      "MultiLabelSoftMarginLoss: reduction must be 'mean', 'sum' or 'none'")
    H.raises(function() nn.MultiLabelSoftMarginLoss({ weight = 1 }) end, 'MultiLabelSoftMarginLoss: weight must be a tensor, got number')
    H.raises(function() nn.MultiLabelSoftMarginLoss({ pos_weight = torch.ones(3) }) end,
      "MultiLabelSoftMarginLoss: unknown option 'pos_weight'")
  end)
end)

describe('the new loss modules', function()
  it('are in torch.nn and print as PyTorch\'s', function()
    for _, name in ipairs { 'PoissonNLLLoss', 'GaussianNLLLoss', 'CosineEmbeddingLoss', 'HingeEmbeddingLoss',
      'TripletMarginLoss', 'MultiLabelSoftMarginLoss' } do
      assert.are.equal(name .. '()', tostring(nn[name]()))
    end
  end)
end)
