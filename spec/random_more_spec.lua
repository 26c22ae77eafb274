-- exponential_, geometric_, cauchy_, log_normal_, torch.normal, torch.poisson and torch.mvlgamma:
-- PyTorch 1.13's values for a seed (spec/data/samplers_reference.lua, written by
-- tools/gen_samplers_reference.py), the formulas over the draws of an identically seeded generator,
-- the distributions' moments and KS distances, the generator option, dtypes and errors.
local torch = require 'torch'
local H = require 'spec.helpers'
-- read when a test needs it (not while busted loads the spec files)
local function reference() return dofile('spec/data/samplers_reference.lua') end

local FLOATS = { 'float32', 'float64', 'float16', 'bfloat16' }

-- n float64 uniforms in [0, 1) (53 bits each), as a plain Lua list, from a generator seeded with seed
local function uniforms(seed, n)
  local g = torch.Generator():manual_seed(seed)
  return torch.empty(n, { dtype = torch.float64 }):uniform_(0, 1, { generator = g }):totable()
end
-- n standard normals drawn one at a time (PyTorch's scalar Box-Muller path)
local function scalar_normals(seed, n, mean, std)
  local g = torch.Generator():manual_seed(seed)
  local out = {}
  for i = 1, n do out[i] = torch.empty(1, { dtype = torch.float64 }):normal_(mean, std, { generator = g }):item() end
  return out
end

-- the largest distance between the empirical CDF of xs and cdf
local function ks(xs, cdf)
  table.sort(xs)
  local n, d = #xs, 0
  for i, x in ipairs(xs) do
    local f = cdf(x)
    d = math.max(d, math.abs(f - (i - 1) / n), math.abs(i / n - f))
  end
  return d
end
local function mean_var(xs)
  local s, s2 = 0, 0
  for _, x in ipairs(xs) do s = s + x end
  local m = s / #xs
  for _, x in ipairs(xs) do s2 = s2 + (x - m) ^ 2 end
  return m, s2 / (#xs - 1)
end
local function erf(x) -- Abramowitz-Stegun 7.1.26 is too coarse; a series / continued fraction
  local t = 1 / (1 + 0.5 * math.abs(x))
  local y = 1 - t * math.exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
    + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
  return x >= 0 and y or -y
end
local function normal_cdf(x, m, s) return 0.5 * (1 + erf((x - m) / (s * math.sqrt(2)))) end

describe('the in-place samplers', function()
  it('give PyTorch 1.13 values for a seed on every dtype', function()
    local n = 0
    for i, c in ipairs(reference()) do
      if not c.op:match('^normal') then
        torch.manual_seed(c.seed)
        local x = torch.empty(c.n, { dtype = torch[c.dtype] })
        if c.b then x[c.op](x, c.a, c.b) else x[c.op](x, c.a) end
        local got = x:double():totable()
        for j, want in ipairs(c.values) do
          if got[j] ~= want then
            error(string.format('case %d (%s %s a=%s): element %d is %.17g, PyTorch gives %.17g', i, c.op, c.dtype,
              c.a, j, got[j], want))
          end
        end
        n = n + 1
      end
    end
    assert.is_true(n >= 90)
  end)

  it('follow their formulas over the uniform draws of an identically seeded generator', function()
    local N = 300
    local u = uniforms(11, N)
    local function check(name, x, f)
      local got = x:totable()
      for i = 1, N do
        local want = f(u[i])
        if got[i] ~= want then error(string.format('%s: element %d is %.17g, want %.17g', name, i, got[i], want)) end
      end
    end
    local g = torch.Generator():manual_seed(11)
    check('exponential_', torch.empty(N, { dtype = torch.float64 }):exponential_(2.5, { generator = g }),
      function(v) return -1 / 2.5 * math.log(1 - v) end)
    g:manual_seed(11)
    check('geometric_', torch.empty(N, { dtype = torch.float64 }):geometric_(0.2, { generator = g }),
      function(v) return math.ceil(math.log(v) / math.log(1 - 0.2)) end)
    g:manual_seed(11)
    check('cauchy_', torch.empty(N, { dtype = torch.float64 }):cauchy_(-1, 3, { generator = g }),
      function(v) return -1 + 3 * math.tan(math.pi * (v - 0.5)) end)
    -- log_normal_: exp of the normals drawn one at a time
    local z = scalar_normals(11, N, 0.5, 1.5)
    g:manual_seed(11)
    local x = torch.empty(N, { dtype = torch.float64 }):log_normal_(0.5, 1.5, { generator = g }):totable()
    for i = 1, N do assert.are.equal(math.exp(z[i]), x[i]) end
  end)

  it('match their distributions (moments and KS distance over 20000 draws)', function()
    torch.manual_seed(1)
    local N = 20000
    local e = torch.empty(N, { dtype = torch.float64 }):exponential_(2):totable()
    local m, v = mean_var(e)
    H.close(m, 0.5, 0.02)
    H.close(v, 0.25, 0.02)
    assert.is_true(ks(e, function(x) return 1 - math.exp(-2 * x) end) < 0.015)
    local geo = torch.empty(N, { dtype = torch.float64 }):geometric_(0.3):totable()
    m, v = mean_var(geo)
    H.close(m, 1 / 0.3, 0.08)
    H.close(v, 0.7 / 0.09, 0.4)
    for _, k in ipairs(geo) do assert.is_true(k >= 1 and k == math.floor(k)) end
    -- KS of a discrete law: compare at the integers
    local counts = {}
    for _, k in ipairs(geo) do counts[k] = (counts[k] or 0) + 1 end
    local acc = 0
    for k = 1, 15 do
      acc = acc + (counts[k] or 0)
      H.close(acc / N, 1 - 0.7 ^ k, 0.015)
    end
    local c = torch.empty(N, { dtype = torch.float64 }):cauchy_(1, 2):totable()
    assert.is_true(ks(c, function(x) return 0.5 + math.atan((x - 1) / 2) / math.pi end) < 0.015)
    local ln = torch.empty(N, { dtype = torch.float64 }):log_normal_(0.2, 0.5):totable()
    assert.is_true(ks(ln, function(x) return normal_cdf(math.log(x), 0.2, 0.5) end) < 0.015)
    m = mean_var(ln)
    H.close(m, math.exp(0.2 + 0.125), 0.03)
  end)

  it('take a generator: the same draws as the global generator after manual_seed', function()
    for _, op in ipairs { { 'exponential_', 1.5 }, { 'geometric_', 0.4 }, { 'cauchy_', 0, 2 }, { 'log_normal_', 1, 0.5 } } do
      local name, a, b = op[1], op[2], op[3]
      torch.manual_seed(21)
      local x = torch.empty(50)
      if b then x[name](x, a, b) else x[name](x, a) end
      local g = torch.Generator():manual_seed(21)
      local y = torch.empty(50)
      if b then y[name](y, a, b, { generator = g }) else y[name](y, a, { generator = g }) end
      assert.is_true(x:equal(y), name)
      -- and it does not move the global generator
      torch.manual_seed(4)
      local before = torch.rand(3)
      torch.manual_seed(4)
      if b then y[name](y, a, b, { generator = g }) else y[name](y, a, { generator = g }) end
      assert.is_true(torch.rand(3):equal(before), name)
    end
  end)

  it('fill non-contiguous tensors in order and keep defaults as PyTorch', function()
    torch.manual_seed(8)
    local want = torch.empty(6):exponential_():totable()
    torch.manual_seed(8)
    local x = torch.zeros(3, 2):t()
    assert.are.equal(x, x:exponential_())
    H.assert_values(x:contiguous(), want)
    torch.manual_seed(8)
    want = torch.empty(3, 4, { dtype = torch.float64 }):cauchy_(0, 1):totable()
    torch.manual_seed(8)
    local base = torch.zeros(3, 8, { dtype = torch.float64 })
    local v = base:narrow(2, 3, 4)
    assert.is_false(v:is_contiguous())
    v:cauchy_()
    H.assert_values(v:contiguous(), want)
    assert.are.equal(0, base:narrow(2, 1, 2):abs():sum():item() + base:narrow(2, 7, 2):abs():sum():item())
    torch.manual_seed(8)
    want = torch.empty(4):log_normal_(1, 2):totable()
    torch.manual_seed(8)
    H.assert_values(torch.empty(2, 2):t():log_normal_(), want)
  end)

  it('check their parameters and dtypes', function()
    H.raises(function() torch.empty(3):exponential_(0) end, 'exponential_', 'lambd')
    H.raises(function() torch.empty(3):exponential_(-1) end, 'exponential_')
    H.raises(function() torch.empty(3):geometric_(0) end, 'geometric_', '(0, 1)')
    H.raises(function() torch.empty(3):geometric_(1) end, 'geometric_')
    H.raises(function() torch.empty(3):geometric_(0 / 0) end, 'geometric_')
    H.raises(function() torch.empty(3):cauchy_(0, 0) end, 'cauchy_', 'sigma')
    H.raises(function() torch.empty(3):log_normal_(0, 0) end, 'log_normal_', 'std')
    H.raises(function() torch.empty(3):log_normal_(0, -1) end, 'log_normal_')
    for _, name in ipairs { 'exponential_', 'cauchy_', 'log_normal_' } do
      local x = torch.zeros(3, { dtype = torch.int64 })
      H.raises(function() x[name](x) end, name, 'floating')
    end
    local b = torch.zeros(3, { dtype = torch.bool })
    H.raises(function() b:geometric_(0.5) end, 'geometric_')
    H.raises(function() torch.empty(3):exponential_(1, 2) end, 'exponential_')
    for _, dt in ipairs(FLOATS) do
      local x = torch.empty(40, { dtype = torch[dt] })
      assert.is_true(x:exponential_():ge(0):all():item(), dt)
      assert.is_true(x:log_normal_():gt(0):all():item(), dt)
    end
  end)
end)

describe('torch.normal', function()
  it('gives PyTorch 1.13 values for each overload', function()
    for i, c in ipairs(reference()) do
      if c.op:match('^normal') then
        local dt = torch[c.dtype]
        local mean = torch.arange(c.n, { dtype = dt }) * 0.5
        local std = torch.arange(c.n, { dtype = dt }) * 0.25 + 0.5
        torch.manual_seed(c.seed)
        local t
        if c.op == 'normal_tt' then t = torch.normal(mean, std)
        elseif c.op == 'normal_tn' then t = torch.normal(mean, 1.5)
        elseif c.op == 'normal_nt' then t = torch.normal(-2.0, std)
        else t = torch.normal(2.0, 3.0, { c.n }, { dtype = dt }) end
        assert.are.equal(dt, t.dtype)
        local got = t:double():totable()
        for j, want in ipairs(c.values) do
          if got[j] ~= want then error(string.format('case %d (%s %s): element %d', i, c.op, c.dtype, j)) end
        end
      end
    end
  end)

  it('broadcasts mean and std, draws N(0, 1) * std + mean, and takes a generator', function()
    local mean = torch.tensor({ { 1 }, { -1 } })
    local std = torch.tensor({ 0.5, 1, 2 })
    torch.manual_seed(2)
    local t = torch.normal(mean, std)
    assert.are.same({ 2, 3 }, t.shape)
    torch.manual_seed(2)
    local z = torch.randn(2, 3):totable()
    local got = t:totable()
    local s, m = { 0.5, 1, 2 }, { 1, -1 }
    for i = 1, 2 do
      for j = 1, 3 do H.close(got[i][j], z[i][j] * s[j] + m[i], 1e-6) end
    end
    local g = torch.Generator():manual_seed(2)
    assert.is_true(torch.normal(mean, std, { generator = g }):equal(t))
    g:manual_seed(2)
    torch.manual_seed(2)
    assert.is_true(torch.normal(0, 1, { 2, 3 }, { generator = g }):equal(torch.randn(2, 3)))
    -- the moments of many draws
    torch.manual_seed(3)
    local xs = torch.normal(torch.full({ 20000 }, 3.0, { dtype = torch.float64 }), 2.0):totable()
    local mu, var = mean_var(xs)
    H.close(mu, 3, 0.05)
    H.close(var, 4, 0.15)
    assert.is_true(ks(xs, function(x) return normal_cdf(x, 3, 2) end) < 0.015)
  end)

  it('has a zero gradient as PyTorch, and checks its arguments', function()
    local m = torch.ones(3, { requires_grad = true })
    local s = torch.ones(3, { requires_grad = true })
    local y = torch.normal(m, s)
    assert.is_true(y.requires_grad)
    y:sum():backward()
    H.assert_values(m.grad, { 0, 0, 0 })
    H.assert_values(s.grad, { 0, 0, 0 })
    assert.is_false(torch.normal(torch.ones(3), 1).requires_grad)
    assert.is_true(torch.normal(0, 1, { 2 }, { requires_grad = true }).requires_grad)
    H.raises(function() torch.normal(torch.ones(3), -1) end, 'normal', 'std')
    H.raises(function() torch.normal(torch.ones(3), torch.tensor({ 1, -1, 1 })) end, 'normal', 'std')
    H.raises(function() torch.normal(torch.ones(3), torch.ones(2)) end, 'normal')
    H.raises(function() torch.normal(0, 1) end, 'normal', 'size')
  end)
end)

describe('torch.poisson', function()
  it('draws with the distributions sampler, takes a generator and matches the law', function()
    local rates = torch.tensor({ 0.5, 4, 30, 0 }, { dtype = torch.float64 })
    local g = torch.Generator():manual_seed(6)
    local a = torch.poisson(rates, { generator = g })
    torch.manual_seed(6)
    assert.is_true(torch.poisson(rates):equal(a))
    torch.manual_seed(6)
    local Poisson = require('torch.distributions').Poisson
    assert.is_true(Poisson(rates):sample():equal(a))
    assert.are.equal(0, a[4])
    torch.manual_seed(1)
    for _, lam in ipairs { 2.5, 40 } do
      local xs = torch.poisson(torch.full({ 20000 }, lam, { dtype = torch.float64 })):totable()
      local mu, var = mean_var(xs)
      H.close(mu, lam, 0.03 * lam)
      H.close(var, lam, 0.06 * lam)
      -- CDF at a few integers
      local pk, acc = math.exp(-lam), 0
      local below = {}
      for _, x in ipairs(xs) do below[x] = (below[x] or 0) + 1 end
      local seen = 0
      for k = 0, math.floor(lam * 2) do
        acc = acc + pk
        seen = seen + (below[k] or 0)
        H.close(seen / #xs, acc, 0.015)
        pk = pk * lam / (k + 1)
      end
    end
    assert.are.equal(torch.float32, torch.poisson(torch.ones(2)).dtype)
    H.raises(function() torch.poisson(torch.tensor({ -1.0 })) end, 'poisson')
  end)
end)

describe('torch.mvlgamma', function()
  local function lgamma_sum(x, p)
    local s = p * (p - 1) / 4 * math.log(math.pi)
    for i = 0, p - 1 do
      local v = x - i / 2
      -- lgamma by the Lanczos approximation (g = 7, n = 9), v > 0
      local c = { 0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
        -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7 }
      local function lg(z)
        if z < 0.5 then return math.log(math.pi / math.abs(math.sin(math.pi * z))) - lg(1 - z) end
        z = z - 1
        local a = c[1]
        local t = z + 7.5
        for k = 2, 9 do a = a + c[k] / (z + k - 1) end
        return 0.5 * math.log(2 * math.pi) + (z + 0.5) * math.log(t) - t + math.log(a)
      end
      s = s + lg(v)
    end
    return s
  end

  it('is the sum of lgammas, under both names, with finite-difference gradients', function()
    local xs = { 1.5, 2.0, 3.7, 10.25 }
    for _, p in ipairs { 1, 2, 3, 5 } do
      local vals = {}
      for i, v in ipairs(xs) do vals[i] = v + (p - 1) / 2 end
      local x = torch.tensor(vals, { dtype = torch.float64, requires_grad = true })
      local y = torch.mvlgamma(x, p)
      local y2 = torch.special.multigammaln(x, p)
      assert.is_true(y:equal(y2))
      assert.is_true(x:mvlgamma(p):equal(y))
      for i, v in ipairs(vals) do H.close(y[i], lgamma_sum(v, p), 1e-9) end
      y:sum():backward()
      for i, v in ipairs(vals) do
        local h = 1e-6
        local fd = (lgamma_sum(v + h, p) - lgamma_sum(v - h, p)) / (2 * h)
        H.close(x.grad[i], fd, 1e-5)
      end
    end
    assert.are.equal(torch.float32, torch.mvlgamma(torch.tensor({ 2, 3 }), 2).dtype)
    H.close(torch.mvlgamma(torch.tensor({ 1.5, 2.0 }, { dtype = torch.float64 }), 3)[1], 2.1687, 1e-4)
  end)

  it('raises PyTorch\'s domain error for x <= (p - 1) / 2 and checks p', function()
    H.raises(function() torch.mvlgamma(torch.tensor({ 0.4 }), 2) end, 'mvlgamma', '(p - 1) / 2')
    H.raises(function() torch.mvlgamma(torch.tensor({ 3.0, 1.0 }), 3) end, 'mvlgamma')
    H.raises(function() torch.special.multigammaln(torch.tensor({ 0.5 }), 2) end, 'multigammaln')
    H.raises(function() torch.mvlgamma(torch.tensor({ 2.0 }), 0) end, 'mvlgamma', 'p')
    H.raises(function() torch.mvlgamma(torch.tensor({ 2.0 }), 1.5) end, 'mvlgamma', 'p')
  end)
end)
