-- Plain-Lua references for spec/distributions_*_spec.lua: the log-gamma and digamma functions,
-- the regularised incomplete gamma function, numerical integration, small dense linear algebra
-- and moments, written here from their textbook definitions (no tensor operations); log-densities
-- of the common families, KL divergence by Simpson's rule, and the checks of samples against
-- moments and CDFs.
local M = {}

local PI = math.pi

-- Lanczos' approximation (g = 7, 9 terms; Numerical Recipes / Godfrey's coefficients), with the
-- reflection formula below 1/2: about 15 significant digits
local LANCZOS = { 0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
  -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7 }

function M.lgamma(x)
  if x < 0.5 then return math.log(PI / math.abs(math.sin(PI * x))) - M.lgamma(1 - x) end
  x = x - 1
  local a = LANCZOS[1]
  local t = x + 7.5
  for i = 1, 8 do a = a + LANCZOS[i + 1] / (x + i) end
  return 0.5 * math.log(2 * PI) + (x + 0.5) * math.log(t) - t + math.log(a)
end

-- the recurrence up to x >= 10, then the asymptotic series
function M.digamma(x)
  local r = 0
  while x < 10 do
    r = r - 1 / x
    x = x + 1
  end
  local f = 1 / (x * x)
  return r + math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
end

function M.lbeta(a, b) return M.lgamma(a) + M.lgamma(b) - M.lgamma(a + b) end

-- P(a, x) = gamma(a, x) / Gamma(a): the series below a + 1, Lentz's continued fraction for the
-- complement above (Numerical Recipes' gser and gcf)
function M.gamma_p(a, x)
  if x <= 0 then return 0 end
  local gln = M.lgamma(a)
  if x < a + 1 then
    local ap, sum = a, 1 / a
    local del = sum
    for _ = 1, 10000 do
      ap = ap + 1
      del = del * x / ap
      sum = sum + del
      if math.abs(del) < math.abs(sum) * 1e-17 then break end
    end
    return sum * math.exp(-x + a * math.log(x) - gln)
  end
  local tiny = 1e-300
  local b = x + 1 - a
  local c = 1 / tiny
  local d = 1 / b
  local h = d
  for i = 1, 10000 do
    local an = -i * (i - a)
    b = b + 2
    d = an * d + b
    if math.abs(d) < tiny then d = tiny end
    c = b + an / c
    if math.abs(c) < tiny then c = tiny end
    d = 1 / d
    local del = d * c
    h = h * del
    if math.abs(del - 1) < 1e-17 then break end
  end
  return 1 - math.exp(-x + a * math.log(x) - gln) * h
end

-- composite Simpson's rule on [a, b] with n (even) intervals
function M.integrate(f, a, b, n)
  n = n or 20000
  local h = (b - a) / n
  local s = f(a) + f(b)
  for i = 1, n - 1 do s = s + (i % 2 == 1 and 4 or 2) * f(a + i * h) end
  return s * h / 3
end

-- a p log p that is 0 where p is 0
function M.plogp(p) return p > 0 and p * math.log(p) or 0 end

-- the determinant and the solution of A x = b for a small dense matrix (rows of Lua numbers),
-- by Gaussian elimination with partial pivoting
function M.solve(A, b)
  local n = #A
  local m = {}
  for i = 1, n do
    m[i] = {}
    for j = 1, n do m[i][j] = A[i][j] end
    m[i][n + 1] = b and b[i] or 0
  end
  local det = 1
  for k = 1, n do
    local p = k
    for i = k + 1, n do
      if math.abs(m[i][k]) > math.abs(m[p][k]) then p = i end
    end
    if p ~= k then m[p], m[k] = m[k], m[p]; det = -det end
    det = det * m[k][k]
    for i = k + 1, n do
      local f = m[i][k] / m[k][k]
      for j = k, n + 1 do m[i][j] = m[i][j] - f * m[k][j] end
    end
  end
  local x = {}
  for i = n, 1, -1 do
    local s = m[i][n + 1]
    for j = i + 1, n do s = s - m[i][j] * x[j] end
    x[i] = s / m[i][i]
  end
  return x, det
end

function M.det(A)
  local _, d = M.solve(A)
  return d
end

-- the inverse of a small dense matrix, column by column
function M.inverse(A)
  local n = #A
  local inv = {}
  for i = 1, n do inv[i] = {} end
  for j = 1, n do
    local e = {}
    for i = 1, n do e[i] = i == j and 1 or 0 end
    local x = M.solve(A, e)
    for i = 1, n do inv[i][j] = x[i] end
  end
  return inv
end

-- the mean, variance (n - 1) and fourth central moment of a Lua array
function M.moments(xs)
  local n = #xs
  local s = 0
  for i = 1, n do s = s + xs[i] end
  local mean = s / n
  local s2, s4 = 0, 0
  for i = 1, n do
    local d = xs[i] - mean
    s2 = s2 + d * d
    s4 = s4 + d * d * d * d
  end
  return mean, s2 / (n - 1), s4 / n
end

-- ---- log-densities, one function of x per parameter set ----

local log, exp, inf = math.log, math.exp, math.huge
local L = {}
M.logpdf = L
function L.normal(m, s) return function(x) return -((x - m) ^ 2) / (2 * s * s) - log(s) - 0.5 * log(2 * PI) end end
function L.laplace(m, b) return function(x) return -log(2 * b) - math.abs(x - m) / b end end
function L.exponential(r) return function(x) return x >= 0 and log(r) - r * x or -inf end end
function L.gamma(a, r)
  return function(x) return x > 0 and a * log(r) + (a - 1) * log(x) - r * x - M.lgamma(a) or -inf end
end
function L.beta(a, b)
  return function(x) return (x > 0 and x < 1) and (a - 1) * log(x) + (b - 1) * log(1 - x) - M.lbeta(a, b) or -inf end
end
function L.uniform(lo, hi) return function(x) return (x >= lo and x <= hi) and -log(hi - lo) or -inf end end
function L.cauchy(m, s) return function(x) return -log(PI * s * (1 + ((x - m) / s) ^ 2)) end end

-- KL(p || q) of log-densities lp and lq by Simpson's rule on [a, b]
function M.kl_integral(lp, lq, a, b, n)
  return M.integrate(function(x)
    local u = lp(x)
    if u == -inf then return 0 end
    return exp(u) * (u - lq(x))
  end, a, b, n or 40000)
end

-- ---- samples ----

-- a sample's mean within 5 standard errors of `mean`, its variance within 5 standard errors
-- (estimated from its fourth central moment) of `var`
function M.check_moments(xs, mean, var, label)
  local n = #xs
  local m, s2, m4 = M.moments(xs)
  local se_mean = math.sqrt(var / n)
  assert(math.abs(m - mean) <= 5 * se_mean,
    string.format('%s: mean %.6g, expected %.6g (standard error %.3g)', label, m, mean, se_mean))
  local se_var = math.sqrt(math.max(m4 - s2 * s2, 0) / n)
  assert(math.abs(s2 - var) <= 5 * se_var + 1e-12,
    string.format('%s: variance %.6g, expected %.6g (standard error %.3g)', label, s2, var, se_var))
end

-- the Kolmogorov-Smirnov distance of a sample from a CDF, below its 0.1% critical value
function M.check_ks(xs, cdf, label)
  local s = { table.unpack(xs) }
  table.sort(s)
  local n = #s
  local dmax = 0
  for i, x in ipairs(s) do
    local c = cdf(x)
    dmax = math.max(dmax, math.abs(c - (i - 1) / n), math.abs(i / n - c))
  end
  assert(dmax < 1.95 / math.sqrt(n), string.format('%s: Kolmogorov-Smirnov distance %.4f (critical %.4f)', label, dmax,
    1.95 / math.sqrt(n)))
end

-- ---- gradcheck ----

--- M.seeded(seed, fn): fn with the generator reset first, so that rsample draws the same noise each call
function M.seeded(seed, fn)
  return function(...)
    require('torch').manual_seed(seed)
    return fn(...)
  end
end

return M
