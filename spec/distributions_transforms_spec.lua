-- The transforms of torch.distributions beyond the elementwise ones (SoftplusTransform,
-- SoftmaxTransform, StickBreakingTransform, LowerCholeskyTransform, CorrCholeskyTransform,
-- CumulativeDistributionTransform, ReshapeTransform, IndependentTransform, CatTransform,
-- StackTransform), biject_to and transform_to, and LogisticNormal: against PyTorch 1.13 in float64
-- (spec/data/distributions_transforms_reference.lua, written by
-- tools/gen_distributions_transforms.py: maps, inverses, log |det J|, their gradients, constraints,
-- shapes, reprs), log |det J| against finite-difference Jacobians computed here in plain Lua,
-- round trips, gradcheck, caching, and the errors of bad input. LogisticNormal's log_prob against
-- its closed form here (against PyTorch, with seeded rsample, in the distributions sweep).
local torch = require 'torch'
local H = require 'spec.helpers'
local M = require 'spec.support.distribution_math'
local D = torch.distributions
local T = D.transforms
local C = D.constraints
local f64 = torch.float64

local REF = dofile('spec/data/distributions_transforms_reference.lua')
local TOL = 1e-10

local function t(v) return torch.tensor(v, { dtype = f64 }) end

-- the transforms of the reference, by name (lutorch's dims are PyTorch's plus one where those are
-- not negative)
local BUILD = {
  softplus = function() return T.SoftplusTransform() end,
  softmax = function() return T.SoftmaxTransform() end,
  stick_breaking = function() return T.StickBreakingTransform() end,
  lower_cholesky = function() return T.LowerCholeskyTransform() end,
  corr_cholesky = function() return T.CorrCholeskyTransform() end,
  cdf_normal = function() return T.CumulativeDistributionTransform(D.Normal(t(0.5), t(2.0))) end,
  cdf_exponential = function() return T.CumulativeDistributionTransform(D.Exponential(t { 1.5, 0.5 })) end,
  reshape = function() return T.ReshapeTransform({ 2, 3 }, { 3, 2 }) end,
  reshape_flat = function() return T.ReshapeTransform({ 2, 2 }, { 4 }) end,
  independent_exp = function() return T.IndependentTransform(T.ExpTransform(), 1) end,
  independent_stick = function() return T.IndependentTransform(T.StickBreakingTransform(), 1) end,
  cat_first = function()
    return T.CatTransform({ T.ExpTransform(), T.identity_transform, T.AffineTransform(1.0, -2.0) }, 1, { 1, 2, 1 })
  end,
  cat_last = function() return T.CatTransform({ T.ExpTransform(), T.SigmoidTransform() }, -1, { 2, 1 }) end,
  cat_event_sum = function()
    return T.CatTransform({ T.IndependentTransform(T.ExpTransform(), 1), T.TanhTransform() }, -1, { 2, 2 })
  end,
  cat_event_join = function()
    return T.CatTransform({ T.IndependentTransform(T.SoftplusTransform(), 1), T.IndependentTransform(T.ExpTransform(), 1) },
      1, { 1, 2 })
  end,
  stack_second = function()
    return T.StackTransform({ T.ExpTransform(), T.SigmoidTransform(), T.AffineTransform(0.5, 3.0) }, 2)
  end,
  stack_last = function() return T.StackTransform({ T.SoftplusTransform(), T.TanhTransform() }, -1) end,
  compose_stick = function() return T.ComposeTransform { T.AffineTransform(0.5, 2.0), T.StickBreakingTransform() } end,
  inverse_stick = function() return T.StickBreakingTransform().inv end,
}

-- the gradient of sum(fn(x) * u) at a fresh leaf with x's values
local function grad_of(fn, x)
  local leaf = x:detach():clone():requires_grad_()
  local out = fn(leaf)
  if out.requires_grad then (out * H.upstream(out.shape)):sum():backward() end
  return leaf.grad or torch.zeros_like(leaf)
end

local function shape_list(s) return { table.unpack(s) } end

describe('torch.distributions transforms against PyTorch 1.13', function()
  for i, c in ipairs(REF.transforms) do
    it(('%d %s'):format(i, c.name), function()
      local tr = BUILD[c.name]()
      local name = tostring(tr):match('^[%w_]+')
      local x = H.ref_tensor(c.x)
      local y = tr(x)
      H.ref_values(y, c.y, TOL, 'forward')
      H.ref_values(grad_of(function(v) return tr(v) end, x), c.gy, TOL, 'gradient of the forward map')
      if c.ladj == 'ni' then
        H.raises(function() tr:log_abs_det_jacobian(x, y) end, name, 'log_abs_det_jacobian is not implemented')
      else
        H.ref_values(tr:log_abs_det_jacobian(x, y), c.ladj, TOL, 'log_abs_det_jacobian')
        H.ref_values(grad_of(function(v) return tr:log_abs_det_jacobian(v, tr(v)) end, x), c.gl, TOL,
          'gradient of log_abs_det_jacobian')
      end
      local yr = H.ref_tensor(c.y)
      H.ref_values(tr.inv(yr), c.inv, TOL, 'inverse')
      H.ref_values(grad_of(function(v) return tr.inv(v) end, yr), c.gi, TOL, 'gradient of the inverse')
      -- round trips: x back where the map is a bijection; y back (a pseudo-inverse) otherwise
      if c.bijective then
        H.ref_values(tr.inv(y), c.x, 1e-9, 'round trip x -> y -> x')
      else
        H.ref_values(tr(tr.inv(y)), c.y, 1e-9, 'round trip y -> x -> y')
      end
      assert.are.equal(c.dom, tostring(tr.domain), 'domain')
      assert.are.equal(c.cod, tostring(tr.codomain), 'codomain')
      if c.event_dim == 'err' then
        H.raises(function() return tr.event_dim end, name, 'event_dim')
      else
        assert.are.equal(c.event_dim, tr.event_dim, 'event_dim')
      end
      assert.are.equal(c.bijective, tr.bijective, 'bijective')
      if c.sign == 'ni' then
        H.raises(function() return tr.sign end, 'sign is not implemented')
      else
        assert.are.equal(c.sign, tr.sign, 'sign')
      end
      assert.are.equal(c.repr, tostring(tr), 'tostring')
      assert.are.same(c.fshape, shape_list(tr:forward_shape(x.shape)), 'forward_shape')
      assert.are.same(c.ishape, shape_list(tr:inverse_shape(y.shape)), 'inverse_shape')
      assert.are.equal(c.eq, tr == BUILD[c.name](), 'equality with the same transform made again')
    end)
  end
end)

-- log |det J| of the map x -> coords(tr(x)) at x (float64) by central differences over x's
-- elements, in plain Lua (M.det)
local function fd_log_det(tr, x, coords)
  coords = coords or function(y) return y:reshape(-1):totable() end
  local xs = x:reshape(-1):totable()
  local n, h = #xs, 1e-6
  local J = {}
  for j = 1, n do
    local up, down = { table.unpack(xs) }, { table.unpack(xs) }
    up[j], down[j] = xs[j] + h, xs[j] - h
    local a, b = coords(tr(t(up):reshape(x.shape))), coords(tr(t(down):reshape(x.shape)))
    assert(#a == n, 'the coordinates of y must be as many as x has elements')
    for i = 1, n do
      J[i] = J[i] or {}
      J[i][j] = (a[i] - b[i]) / (2 * h)
    end
  end
  return math.log(math.abs(M.det(J)))
end

-- y's first K coordinates along its last dimension (a point of the simplex is fixed by them)
local function drop_last(y) return y:narrow(-1, 1, y:size(-1) - 1):reshape(-1):totable() end

-- the strict lower triangle of the matrix y, row by row
local function strict_lower(y)
  local m, out = y:totable(), {}
  for r = 2, #m do
    for c = 1, r - 1 do out[#out + 1] = m[r][c] end
  end
  return out
end

describe('torch.distributions transforms', function()
  it('give log |det J| as finite-difference Jacobians do (float64)', function()
    local cases = {
      { T.SoftplusTransform(), t { -3.0, 0.2, 4.0 } },
      { T.StickBreakingTransform(), t { -1.0, 0.5, 2.0 }, drop_last },
      { T.StickBreakingTransform(), t { 0.3 }, drop_last },
      { T.CorrCholeskyTransform(), t { 0.5, -1.0, 2.0 }, strict_lower },
      { T.CorrCholeskyTransform(), t { 0.3, -0.2, 1.1, 0.4, -0.8, 0.05 }, strict_lower },
      { T.CorrCholeskyTransform(), t { -0.7 }, strict_lower },
      { T.CumulativeDistributionTransform(D.Normal(t(0.5), t(2.0))), t { -3.0, 0.0, 4.0 } },
      { T.CumulativeDistributionTransform(D.Exponential(t { 1.5, 0.5 })), t { 0.2, 3.0 } },
      { T.IndependentTransform(T.ExpTransform(), 1), t { -1.0, 0.5, 2.0 } },
      { T.ReshapeTransform({ 2, 2 }, { 4 }), t { { 1.0, -2.0 }, { 0.5, 3.0 } } },
      { T.CatTransform({ T.IndependentTransform(T.ExpTransform(), 1), T.TanhTransform() }, -1, { 2, 2 }),
        t { 0.5, -1.0, 0.2, 0.9 } },
      { T.CatTransform({ T.ExpTransform(), T.SigmoidTransform() }, 1, { 1, 2 }), t { 0.5, -1.0, 0.2 } },
      { T.StackTransform({ T.SoftplusTransform(), T.TanhTransform() }, -1), t { 0.5, -1.0 } },
      { T.ComposeTransform { T.AffineTransform(0.5, 2.0), T.StickBreakingTransform() }, t { -1.0, 0.5, 2.0 }, drop_last },
    }
    for _, c in ipairs(cases) do
      local tr, x, coords = c[1], c[2], c[3]
      local ladj = tr:log_abs_det_jacobian(x, tr(x)):sum():item()
      H.near(fd_log_det(tr, x, coords), ladj, 1e-6, (tostring(tr):gsub('\n', ' ')) .. ' log |det J|')
    end
  end)

  it('pass gradcheck in their maps, inverses and log |det J|', function()
    local cases = {
      { T.SoftplusTransform(), { -2.0, 0.3, 1.5 } },
      { T.StickBreakingTransform(), { { -1.0, 0.5, 2.0 }, { 0.1, 0.2, -0.3 } } },
      { T.CorrCholeskyTransform(), { 0.5, -1.0, 2.0 } },
      { T.CumulativeDistributionTransform(D.Normal(t(0.5), t(2.0))), { -1.0, 0.5, 2.0 } },
      { T.CatTransform({ T.ExpTransform(), T.TanhTransform() }, -1, { 1, 2 }), { { 0.5, -1.0, 0.2 } } },
      { T.StackTransform({ T.SoftplusTransform(), T.SigmoidTransform() }, 1), { { 0.5, -1.0 }, { 0.2, 0.9 } } },
    }
    for _, c in ipairs(cases) do
      local tr = c[1]
      local x = t(c[2]):requires_grad_()
      local name = (tostring(tr):gsub('\n', ' '))
      assert(torch.autograd.gradcheck(function(v) return tr(v) end, { x }), name .. ' forward')
      assert(torch.autograd.gradcheck(function(v) return tr:log_abs_det_jacobian(v, tr(v)) end, { x }), name .. ' ladj')
      local y = tr(x):detach():requires_grad_()
      assert(torch.autograd.gradcheck(function(v) return tr.inv(v) end, { y }), name .. ' inverse')
    end
    -- the non-bijective maps onto the simplex and the lower Cholesky factors
    assert(torch.autograd.gradcheck(function(v) return T.SoftmaxTransform()(v) end, { t { 0.5, -1.0, 2.0 }:requires_grad_() }))
    assert(torch.autograd.gradcheck(function(v) return T.LowerCholeskyTransform()(v) end,
      { t { { 0.5, 9.0 }, { -1.0, 0.2 } }:requires_grad_() }))
  end)

  it('cache their last pair and keep their arguments in with_cache', function()
    local x = t { { 0.5, -1.0, 0.2 }, { 0.3, 1.5, -0.5 } }
    local cases = {
      T.CatTransform({ T.ExpTransform(), T.SigmoidTransform() }, -1, { 2, 1 }),
      T.StackTransform({ T.ExpTransform(), T.SigmoidTransform() }, 1),
      T.IndependentTransform(T.ExpTransform(), 1),
      T.ReshapeTransform({ 3 }, { 3, 1 }),
      T.StickBreakingTransform(), T.SoftplusTransform(), T.SoftmaxTransform(),
      T.CumulativeDistributionTransform(D.Normal(0.0, 1.0)),
    }
    for _, tr in ipairs(cases) do
      local name = tostring(tr)
      local cached = tr:with_cache(1)
      assert.are.equal(1, cached._cache_size, name)
      assert.are.equal(getmetatable(tr), getmetatable(cached), name)
      local y = cached(x)
      assert.is_true(rawequal(cached.inv(y), x), name .. ': the inverse of the last output is the input')
      assert.is_true(rawequal(cached(x), y), name .. ': the output of the last input')
      H.assert_values(y, tr(x):totable(), 0, name .. ': the same map')
      assert.is_true(rawequal(cached:with_cache(1), cached), name)
    end
    -- the parts are cached with the whole, the options are kept
    local cat = T.CatTransform({ T.ExpTransform(), T.SigmoidTransform() }, -1, { 2, 1 }, { cache_size = 1 })
    assert.are.equal(1, cat.transforms[1]._cache_size)
    assert.are.same({ 2, 1 }, cat:with_cache(0).lengths)
    assert.are.equal(-1, cat:with_cache(0).dim)
    assert.are.equal(1, T.IndependentTransform(T.ExpTransform(), 2, { cache_size = 1 }).base_transform._cache_size)
    assert.are.equal(2, T.IndependentTransform(T.ExpTransform(), 2):with_cache(1).reinterpreted_batch_ndims)
    assert.are.same({ 3, 1 }, shape_list(T.ReshapeTransform({ 3 }, { 3, 1 }):with_cache(1).out_shape))
    local n = D.Normal(0.0, 1.0)
    assert.is_true(rawequal(n, T.CumulativeDistributionTransform(n):with_cache(1).distribution))
  end)

  it('make TransformedDistributions with event shapes', function()
    -- a Normal over 3 values stick-broken onto the simplex of 4: the event grows by one
    local d = D.TransformedDistribution(D.Normal(t { 0.0, 1.0, -1.0 }, 1.0), T.StickBreakingTransform())
    assert.are.same({}, shape_list(d.batch_shape))
    assert.are.same({ 4 }, shape_list(d.event_shape))
    assert.are.equal('Simplex()', tostring(d.support))
    -- a reshaped event
    local r = D.TransformedDistribution(D.Normal(torch.zeros(5, 6, { dtype = f64 }), 1.0), T.ReshapeTransform({ 6 }, { 2, 3 }))
    assert.are.same({ 5 }, shape_list(r.batch_shape))
    assert.are.same({ 2, 3 }, shape_list(r.event_shape))
    local v = torch.zeros(5, 2, 3, { dtype = f64 })
    H.assert_values(r:log_prob(v), torch.full({ 5 }, -3 * math.log(2 * math.pi), { dtype = f64 }):totable(), 1e-12)
    -- a scalar event made a vector of one ({} is a shape there, not an options table)
    local one = T.ReshapeTransform({}, { 1 })
    assert.are.same({ 2, 1 }, shape_list(one(t { 1.0, 2.0 }).shape))
    assert.are.equal('IndependentConstraint(Real(), 0)', tostring(one.domain))
    -- a Gaussian copula's margins: uniform on [0, 1]
    local u = D.TransformedDistribution(D.Normal(t { 0.5 }, t { 2.0 }), T.CumulativeDistributionTransform(D.Normal(t(0.5), t(2.0))))
    H.assert_values(u:log_prob(t { 0.1, 0.5, 0.9 }), { 0.0, 0.0, 0.0 }, 1e-12)
  end)

  it('raise errors naming the transform on bad input', function()
    H.raises(function() T.ReshapeTransform({ 2, 3 }, { 4 }) end, 'ReshapeTransform', 'different numbers of elements')
    H.raises(function() T.ReshapeTransform({ 2, 'a' }, { 4 }) end, 'ReshapeTransform', 'in_shape')
    H.raises(function() T.ReshapeTransform({ 2, 2 }, { 4 })(torch.zeros(3, 3)) end, 'ReshapeTransform', 'rightmost sizes')
    H.raises(function() T.ReshapeTransform({ 2, 2 }, { 4 }):forward_shape({ 2 }) end, 'ReshapeTransform',
      'too few dimensions')
    H.raises(function() T.ReshapeTransform({ 2, 2 }, { 4 }):inverse_shape({ 2, 5 }) end, 'ReshapeTransform',
      'rightmost sizes')
    H.raises(function() T.IndependentTransform(3, 1) end, 'IndependentTransform', 'base_transform')
    H.raises(function() T.IndependentTransform(T.ExpTransform(), -1) end, 'IndependentTransform',
      'reinterpreted_batch_ndims')
    H.raises(function() T.IndependentTransform(T.ExpTransform(), 2)(t { 1.0, 2.0 }) end, 'IndependentTransform',
      'too few dimensions')
    H.raises(function() T.CatTransform({ T.ExpTransform() }, 1, { 1, 2 }) end, 'CatTransform', 'lengths')
    H.raises(function() T.CatTransform({ T.ExpTransform(), 3 }) end, 'CatTransform', 'tseq[2]')
    H.raises(function() T.CatTransform({}) end, 'CatTransform', 'tseq')
    H.raises(function() T.CatTransform({ T.ExpTransform() }, 0) end, 'CatTransform', 'dim')
    H.raises(function() T.CatTransform({ T.ExpTransform(), T.ExpTransform() })(torch.zeros(3)) end, 'CatTransform',
      'size 2')
    H.raises(function() T.CatTransform({ T.ExpTransform(), T.ExpTransform() }, 3)(torch.zeros(2)) end, 'CatTransform',
      'out of range')
    H.raises(function() return T.CatTransform({ T.ExpTransform() }).sign end, 'CatTransform', 'sign')
    H.raises(function() T.StackTransform({ T.ExpTransform(), T.ExpTransform() })(torch.zeros(3, 2)) end,
      'StackTransform', 'size 2')
    H.raises(function() T.StackTransform('exp') end, 'StackTransform', 'tseq')
    H.raises(function() T.CorrCholeskyTransform()(torch.zeros(4)) end, 'CorrCholeskyTransform', 'D (D - 1) / 2')
    H.raises(function() T.CorrCholeskyTransform():forward_shape({ 5 }) end, 'CorrCholeskyTransform', 'D (D - 1) / 2')
    H.raises(function() T.CorrCholeskyTransform():inverse_shape({ 2, 3 }) end, 'CorrCholeskyTransform', 'square')
    H.raises(function() T.CorrCholeskyTransform().inv(torch.zeros(2, 3)) end, 'CorrCholeskyTransform', 'square')
    H.raises(function() return T.CorrCholeskyTransform().event_dim end, 'CorrCholeskyTransform', 'event_dim')
    H.raises(function() T.StickBreakingTransform():forward_shape({}) end, 'StickBreakingTransform', 'too few dimensions')
    H.raises(function() T.StickBreakingTransform():forward_shape('x') end, 'StickBreakingTransform', 'a shape')
    H.raises(function() T.StickBreakingTransform()(t(3.0)) end, 'StickBreakingTransform', 'got a scalar')
    H.raises(function() T.StickBreakingTransform().inv(t(0.5)) end, 'StickBreakingTransform', 'got a scalar')
    H.raises(function() T.CatTransform({ T.ExpTransform() })(3) end, 'CatTransform', 'to be a tensor')
    H.raises(function() T.ReshapeTransform({ 2 }, { 2, 1 })('x') end, 'ReshapeTransform', 'expected a tensor')
    H.raises(function() T.SoftmaxTransform():inverse_shape({}) end, 'SoftmaxTransform', 'too few dimensions')
    H.raises(function() T.SoftmaxTransform():log_abs_det_jacobian(t { 1.0 }, t { 1.0 }) end, 'SoftmaxTransform',
      'not implemented')
    H.raises(function() T.LowerCholeskyTransform()(torch.zeros(3)) end, 'LowerCholeskyTransform', 'matrix')
    H.raises(function() T.CumulativeDistributionTransform(3) end, 'CumulativeDistributionTransform', 'distribution')
    H.raises(function() T.SoftplusTransform { cache_size = 2 } end, 'SoftplusTransform', 'cache_size')
    H.raises(function() T.CatTransform({ T.ExpTransform() }, 1, nil, { cache_size = 3 }) end, 'CatTransform',
      'cache_size')
  end)
end)

describe('torch.distributions constraints cat, stack and positive_semidefinite', function()
  it('check the slices of a value', function()
    local cat = C.cat({ C.positive, C.real, C.unit_interval }, 1, { 1, 2, 1 })
    assert.are.equal('Cat()', tostring(cat))
    assert.are.equal(0, cat.event_dim)
    H.assert_values(cat:check(t { { 1.0, -1.0 }, { -5.0, 0 / 0 }, { 3.0, 3.0 }, { 0.5, 2.0 } }),
      { { true, false }, { true, false }, { true, true }, { true, false } })
    assert.are.equal(1, C.cat({ C.simplex, C.real }, -1, { 3, 1 }).event_dim)
    assert.is_true(C.cat({ C.real, C.nonnegative_integer }).is_discrete)
    local stack = C.stack({ C.positive, C.interval(-1.0, 1.0) }, -1)
    assert.are.equal('Stack()', tostring(stack))
    -- a negative dim among the event's dimensions makes one more of them (PyTorch's dim + event_dim < 0)
    assert.are.equal(1, stack.event_dim)
    assert.are.equal(0, C.stack({ C.positive, C.real }, 1).event_dim)
    H.assert_values(stack:check(t { { 1.0, 0.5 }, { -1.0, 0.5 }, { 1.0, 2.0 } }),
      { { true, true }, { false, true }, { true, false } })
    H.assert_values(C.stack({ C.positive, C.real }, 1):check(t { { 1.0, -1.0 }, { -2.0, 0 / 0 } }),
      { { true, false }, { true, false } })
    local psd = C.positive_semidefinite
    assert.are.equal('PositiveSemidefinite()', tostring(psd))
    H.assert_values(psd:check(t { { { 1.0, 1.0 }, { 1.0, 1.0 } }, { { 1.0, 2.0 }, { 2.0, 1.0 } } }), { true, false })
    H.assert_values(C.positive_definite:check(t { { 1.0, 1.0 }, { 1.0, 1.0 } }), { false })
  end)

  it('raise errors naming the constraint on bad arguments', function()
    H.raises(function() C.cat({ C.real }, 1, { 1, 2 }) end, 'constraints.cat', 'lengths')
    H.raises(function() C.cat({ C.real }, 1, { -1 }) end, 'constraints.cat', 'lengths[1]')
    H.raises(function() C.cat({}) end, 'constraints.cat', 'cseq')
    H.raises(function() C.stack({ C.real, 'x' }) end, 'constraints.stack', 'cseq[2]')
    H.raises(function() C.stack({ C.real }, 0) end, 'constraints.stack', 'dim')
    H.raises(function() C.stack({ C.real, C.real }):check(torch.zeros(3)) end, 'constraints.stack', 'size 2')
    H.raises(function() C.cat({ C.real, C.real }, 2):check(torch.zeros(3)) end, 'constraints.cat', 'out of range')
  end)
end)

local CONSTRAINTS = {
  real = C.real, real_vector = C.real_vector, positive = C.positive, nonnegative = C.nonnegative,
  greater_than = C.greater_than(2.5), greater_than_eq = C.greater_than_eq(-1.0), less_than = C.less_than(3.0),
  interval = C.interval(-2.0, 5.0), unit_interval = C.unit_interval, interval_01_int = C.interval(0, 1),
  interval_tensor = C.interval(t { 0.0, 1.0 }, t { 1.0, 3.0 }), half_open_interval = C.half_open_interval(0.0, 2.0),
  simplex = C.simplex, lower_cholesky = C.lower_cholesky, corr_cholesky = C.corr_cholesky,
  independent_positive = C.independent(C.positive, 1),
  cat = C.cat({ C.positive, C.real, C.unit_interval }, 1, { 1, 2, 1 }),
  stack = C.stack({ C.positive, C.interval(-1.0, 1.0) }, -1),
  positive_definite = C.positive_definite, positive_semidefinite = C.positive_semidefinite, boolean = C.boolean,
  integer_interval = C.integer_interval(0, 3), dependent = C.dependent,
}

describe('torch.distributions.biject_to and transform_to against PyTorch 1.13', function()
  for i, c in ipairs(REF.registry) do
    it(('%d %s'):format(i, c.name), function()
      local constraint = CONSTRAINTS[c.name]
      local x = H.ref_tensor(c.x)
      for key, reg in pairs { b = D.biject_to, t = D.transform_to } do
        local e, what = c[key], key == 'b' and 'biject_to' or 'transform_to'
        if e == 'ni' then
          H.raises(function() reg(constraint) end, what, 'cannot transform')
        else
          local tr = reg(constraint)
          assert.are.equal(e.repr, tostring(tr), what)
          local y = tr(x)
          H.ref_values(y, e.y, TOL, what .. ' values')
          assert.are.equal(e.ok, constraint:check(y):all():item(), what .. ': the values lie in the set')
          if e.ladj == 'ni' then
            H.raises(function() tr:log_abs_det_jacobian(x, y) end, 'not implemented')
          else
            H.ref_values(tr:log_abs_det_jacobian(x, y), e.ladj, TOL, what .. ' log_abs_det_jacobian')
          end
          if key == 'b' then assert.is_true(tr.bijective, 'biject_to gives a bijection') end
        end
      end
    end)
  end

  it('registries take new factories for a constraint class, also as decorators, and check their arguments', function()
    local R = D.constraint_registry.ConstraintRegistry()
    H.raises(function() R(C.positive) end, 'cannot transform GreaterThan')
    R:register(C.positive, function() return T.SoftplusTransform() end)
    -- an instance stands for its class
    assert.are.equal('SoftplusTransform()', tostring(R(C.greater_than(3.0))))
    R:register(C.interval)(function(c) return T.AffineTransform(c.lower_bound, 1.0) end)
    assert.are.equal(-2.0, R(C.interval(-2.0, 5.0)).loc)
    H.raises(function() R:register('x', function() end) end, 'register', 'Constraint subclass or instance')
    H.raises(function() R:register(C.real, 3) end, 'register', 'function')
    H.raises(function() D.biject_to(3) end, 'biject_to', 'expected a constraint')
    H.raises(function() D.transform_to(C.dependent) end, 'transform_to', 'cannot transform')
    -- the shared registries are not changed by another's registrations
    assert.are.equal('ComposeTransform(\n    ExpTransform(),\n    AffineTransform()\n)', tostring(D.biject_to(C.positive)))
    assert.are.equal('SigmoidTransform()', tostring(D.transform_to(C.unit_interval)))
  end)
end)

-- log p(y) of LogisticNormal at y (K + 1 values) in plain Lua: x_i = logit(z_i) + log(K + 1 - i) with
-- z_i = y_i / (1 - y_1 - ... - y_{i-1}), and log |det dy/dx| = sum log(y_i (1 - z_i))
local function logistic_normal_lp(y, loc, scale)
  local k, left, lp = #loc, 1.0, 0.0
  for i = 1, k do
    local z = y[i] / left
    local x = math.log(z / (1 - z)) + math.log(k + 1 - i)
    lp = lp + M.logpdf.normal(loc[i], scale[i])(x) - math.log(y[i] * (1 - z))
    left = left - y[i]
  end
  return lp
end

describe('torch.distributions.LogisticNormal', function()
  it('has PyTorch 1.13 shapes and repr', function()
    local made = {
      scalar = function() return D.LogisticNormal(0.5, 2.0) end,
      vector = function() return D.LogisticNormal(t { 0.0, 1.0 }, t { 1.0, 0.5 }) end,
      broadcast = function() return D.LogisticNormal(t { { 0.0, 1.0, 2.0 } }, t { { 1.0 }, { 2.0 } }) end,
    }
    for _, c in ipairs(REF.logistic_normal) do
      local d = made[c.name]()
      assert.are.equal(c.repr, tostring(d), c.name)
      assert.are.same(c.bs, shape_list(d.batch_shape), c.name)
      assert.are.same(c.es, shape_list(d.event_shape), c.name)
    end
  end)

  it('has the log density of its closed form, samples on the simplex, and expands', function()
    local loc, scale = { { 0.0, 1.0, -0.5 }, { 0.3, -2.0, 0.2 } }, { { 1.0, 0.5, 2.0 }, { 0.7, 1.5, 0.3 } }
    local d = D.LogisticNormal(t(loc), t(scale))
    assert.are.equal('Simplex()', tostring(d.support))
    assert.is_true(d.has_rsample)
    H.assert_values(d.loc, loc, 0)
    H.assert_values(d.scale, scale, 0)
    local y = { { 0.1, 0.2, 0.3, 0.4 }, { 0.05, 0.05, 0.6, 0.3 } }
    local lp = d:log_prob(t(y))
    for b = 1, 2 do H.near(logistic_normal_lp(y[b], loc[b], scale[b]), lp[b], 1e-12, 'log_prob ' .. b) end
    torch.manual_seed(1)
    local s = d:sample(500)
    assert.are.same({ 500, 2, 4 }, shape_list(s.shape))
    assert.is_true(s:gt(0):all():item())
    H.assert_values(s:sum(-1), torch.ones(500, 2):totable(), 1e-12, 'the samples sum to one')
    local e = d:expand(3, 2)
    assert.are.same({ 3, 2 }, shape_list(e.batch_shape))
    assert.are.same({ 4 }, shape_list(e.event_shape))
    H.assert_values(e:log_prob(t(y)), { lp:totable(), lp:totable(), lp:totable() }, 1e-12, 'expanded log_prob')
    -- gradients reach loc and scale through rsample
    local l, sc = t { 0.5, -0.5 }:requires_grad_(), t { 1.0, 2.0 }:requires_grad_()
    D.LogisticNormal(l, sc):rsample(4):pow(2):sum():backward()
    assert.is_true(l.grad:abs():sum():item() > 0 and sc.grad:abs():sum():item() > 0)
  end)

  it('raises errors naming LogisticNormal', function()
    H.raises(function() D.LogisticNormal(t { 0.0 }, t { -1.0 }) end, 'LogisticNormal', 'scale')
    H.raises(function() D.LogisticNormal(t { 0.0, 0.0 }, 1.0):log_prob(t { 0.5, 0.6, 0.2 }) end, 'LogisticNormal',
      'support')
    H.raises(function() D.LogisticNormal(0.0, 1.0, { temperature = 1 }) end, 'LogisticNormal', 'temperature')
    H.raises(function() D.LogisticNormal('a', 1.0) end, 'LogisticNormal', 'loc must be a number or a tensor')
    H.raises(function() D.LogisticNormal(t { 0.0, 1.0 }, t { 1.0, 1.0, 1.0 }) end, 'LogisticNormal', 'broadcast')
    H.raises(function() return D.LogisticNormal(0.0, 1.0).mean end, 'LogisticNormal', 'mean')
  end)
end)
