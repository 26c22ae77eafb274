-- Higher-order gradients: create_graph in backward and autograd.grad (second and third
-- derivatives against closed forms, gradients of gradients against float64 finite differences of
-- the first gradient), the options of backward and grad, the error for nodes without double
-- backward, torch.autograd.gradgradcheck, and torch.autograd.functional against closed forms.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional
local AF = torch.autograd.functional
local grad = torch.autograd.grad

local f64 = { dtype = torch.float64 }
local function leaf(values) return torch.tensor(values, { dtype = torch.float64, requires_grad = true }) end

-- d/dx of sum(f(x)) with create_graph, then the gradient of sum(that) again: the diagonal of the
-- Hessian of sum(f) (for elementwise f, f'' at each x)
local function second(f, x)
  local g = grad(f(x):sum(), x, { create_graph = true })[1]
  assert.is_true(g.requires_grad)
  return grad(g:sum(), x)[1]
end

-- plain-Lua values of fn applied to the numbers of t
local function map(t, fn)
  local r = {}
  for i, v in ipairs(H.flatten(t:totable())) do r[i] = fn(v) end
  return r
end

-- float64 central differences of the gradient of scalar loss(x) with respect to x, taken from a
-- backward without create_graph: the derivative of sum(w * grad) along each element of x
local function fd_of_gradient(loss, x, w, eps)
  eps = eps or 1e-6
  local base = x:detach():clone()
  local function gsum(xv)
    local xx = xv:clone():requires_grad_()
    return (grad(loss(xx), xx)[1] * w):sum():item()
  end
  local out = torch.zeros(base:numel(), f64)
  local flat = base:reshape(-1)
  for i = 1, base:numel() do
    local o = flat[i]
    flat[i] = o + eps
    local p = gsum(base)
    flat[i] = o - eps
    local m = gsum(base)
    flat[i] = o
    out[i] = (p - m) / (2 * eps)
  end
  return out:reshape(x.shape)
end

-- gradgradcheck, after checking that the gradients under create_graph (the backward_graph path)
-- equal the plain backward's, for a random output gradient: gradgradcheck alone checks the second
-- derivatives against the create_graph gradients, not those against the first derivatives
local function check_twice(fn, inputs)
  local out = fn(table.unpack(inputs))
  local go = torch.randn(out.shape, f64)
  local with = grad((fn(table.unpack(inputs)) * go):sum(), inputs, { create_graph = true })
  local plain = grad((fn(table.unpack(inputs)) * go):sum(), inputs)
  for i = 1, #inputs do H.assert_values(with[i], plain[i]:totable(), 1e-12, 'first gradient ' .. i) end
  return torch.autograd.gradgradcheck(fn, inputs)
end

describe('create_graph', function()
  it('makes the gradient differentiable (without it the gradient has no history)', function()
    local x = leaf({ 1.5, -2 })
    local y = (x ^ 3):sum()
    local g = grad(y, x, { create_graph = true })[1]
    assert.is_true(g.requires_grad)
    assert.is_not_nil(g.grad_fn)
    H.assert_values(g, { 3 * 1.5 ^ 2, 12 }, 1e-12)
    local g0 = grad((x ^ 3):sum(), x)[1]
    assert.is_false(g0.requires_grad)
  end)

  it('gives second derivatives of elementwise functions in closed form', function()
    local x = leaf({ 0.3, -0.7, 1.2 })
    H.assert_values(second(function(t) return t ^ 3 end, x), map(x, function(v) return 6 * v end), 1e-12, 'x^3')
    H.assert_values(second(function(t) return t * t * t end, x), map(x, function(v) return 6 * v end), 1e-12, 'x*x*x')
    H.assert_values(second(torch.sin, x), map(x, function(v) return -math.sin(v) end), 1e-12, 'sin')
    H.assert_values(second(torch.cos, x), map(x, function(v) return -math.cos(v) end), 1e-12, 'cos')
    H.assert_values(second(torch.exp, x), map(x, math.exp), 1e-12, 'exp')
    H.assert_values(second(torch.tanh, x), map(x, function(v)
      local t = math.tanh(v)
      return -2 * t * (1 - t * t)
    end), 1e-12, 'tanh')
    H.assert_values(second(torch.sigmoid, x), map(x, function(v)
      local s = 1 / (1 + math.exp(-v))
      return s * (1 - s) * (1 - 2 * s)
    end), 1e-12, 'sigmoid')
    local p = leaf({ 0.5, 1.7, 3 })
    H.assert_values(second(torch.log, p), map(p, function(v) return -1 / (v * v) end), 1e-12, 'log')
    H.assert_values(second(torch.sqrt, p), map(p, function(v) return -0.25 * v ^ -1.5 end), 1e-12, 'sqrt')
    H.assert_values(second(function(t) return 1 / t end, p), map(p, function(v) return 2 / v ^ 3 end), 1e-12, '1/x')
    H.assert_values(second(function(t) return t:pow(2.5) end, p), map(p, function(v) return 2.5 * 1.5 * v ^ 0.5 end),
      1e-12, 'pow')
    H.assert_values(second(function(t) return torch.pow(2, t) end, p),
      map(p, function(v) return math.log(2) ^ 2 * 2 ^ v end), 1e-12, '2^x')
    H.assert_values(second(function(t) return t:relu() * t end, x),
      map(x, function(v) return v > 0 and 2 or 0 end), 1e-12, 'relu(x) x')
  end)

  it('gives the mixed derivative of a product', function()
    local a, b = leaf({ 2, 3 }), leaf({ -1, 4 })
    local ga = grad((a * b * b):sum(), a, { create_graph = true })[1] -- b^2
    H.assert_values(ga, { 1, 16 }, 1e-12)
    local gb = grad(ga:sum(), b)[1] -- 2b
    H.assert_values(gb, { -2, 8 }, 1e-12)
  end)

  it('gives a third derivative', function()
    local x = leaf({ 0.4, -1.1 })
    local g1 = grad((x ^ 4):sum(), x, { create_graph = true })[1]
    local g2 = grad(g1:sum(), x, { create_graph = true })[1]
    local g3 = grad(g2:sum(), x)[1]
    H.assert_values(g3, map(x, function(v) return 24 * v end), 1e-12, 'x^4')
    local s1 = grad(x:sin():sum(), x, { create_graph = true })[1]
    local s2 = grad(s1:sum(), x, { create_graph = true })[1]
    H.assert_values(grad(s2:sum(), x)[1], map(x, function(v) return -math.cos(v) end), 1e-12, 'sin')
  end)

  it('gives the Hessian of a quadratic form x^T A x: A + A^T', function()
    local A = torch.tensor({ { 1, 2, 0 }, { -1, 3, 5 }, { 4, 0.5, 2 } }, f64)
    local x = leaf({ 0.3, -1, 2 })
    local g = grad(x:dot(A:mv(x)), x, { create_graph = true })[1]
    local rows = {}
    for i = 1, 3 do rows[i] = grad(g[{ { i, i } }]:sum(), x, { retain_graph = true })[1] end
    local want = (A + A:t()):totable()
    H.assert_values(torch.stack(rows), want, 1e-12, 'mv')
    local xm = x:detach():view(1, 3):requires_grad_()
    local gm = grad(xm:mm(A):mm(xm:t()):sum(), xm, { create_graph = true })[1]
    local hm = {}
    for i = 1, 3 do hm[i] = grad(gm:select(2, i):sum(), xm, { retain_graph = true })[1]:view(3) end
    H.assert_values(torch.stack(hm), want, 1e-12, 'mm')
  end)

  it("gives softmax cross-entropy's Hessian diagonal p (1 - p)", function()
    local z = leaf({ { 0.2, -1, 0.7, 1.5 } })
    local g = grad(F.cross_entropy(z, torch.tensor({ 3 })), z, { create_graph = true })[1]
    local p = F.softmax(z:detach(), 2)
    local diag = {}
    for j = 1, 4 do diag[j] = grad(g:select(2, j):sum(), z, { retain_graph = true })[1][1][j] end
    H.assert_values(torch.tensor(diag, f64), map(p, function(v) return v * (1 - v) end), 1e-12)
    -- off the diagonal: -p_i p_j
    local row = grad(g:select(2, 1):sum(), z)[1]
    H.close(row[1][2], -p[1][1] * p[1][2], 1e-12)
  end)

  it("gives a gradient penalty's gradient (an MLP in float64) equal to finite differences", function()
    torch.manual_seed(7)
    local w1 = torch.randn({ 5, 3 }, f64):requires_grad_()
    local b1 = torch.randn({ 5 }, f64):requires_grad_()
    local w2 = torch.randn({ 1, 5 }, f64):requires_grad_()
    local x = torch.randn({ 4, 3 }, f64):requires_grad_()
    local function mlp(xx, ww1) return F.linear(F.linear(xx, ww1, b1):tanh(), w2):sum() end
    -- penalty: || d mlp / dx ||^2, differentiated with respect to w1
    local gx = grad(mlp(x, w1), x, { create_graph = true })[1]
    local penalty = (gx * gx):sum()
    local got = grad(penalty, w1)[1]
    -- reference: d/dw1 of sum(gx^2) = finite differences over w1 of the plain first gradient
    local eps, ref = 1e-6, torch.zeros({ 5, 3 }, f64)
    local base = w1:detach():clone()
    local function pen(wv)
      local xx = x:detach():clone():requires_grad_()
      local g1 = grad(mlp(xx, wv), xx)[1]
      return (g1 * g1):sum():item()
    end
    for i = 1, 5 do
      for j = 1, 3 do
        local o = base[i][j]
        base[i][j] = o + eps
        local p = pen(base)
        base[i][j] = o - eps
        local m = pen(base)
        base[i][j] = o
        ref[i][j] = (p - m) / (2 * eps)
      end
    end
    H.assert_values(got, ref:totable(), 1e-6, 'penalty gradient')
    -- the same through backward: w1.grad gets it, with history when create_graph stays on
    local gx2 = grad(mlp(x, w1), x, { create_graph = true })[1]
    ;(gx2 * gx2):sum():backward()
    H.assert_values(w1.grad, ref:totable(), 1e-6, 'w1.grad')
  end)

  it('runs through the ops that support it: gradients of gradients against finite differences', function()
    torch.manual_seed(3)
    local x0 = torch.randn({ 3, 4 }, f64)
    local idx = torch.tensor({ 3, 1, 3 })
    local gidx = torch.tensor({ { 1, 2 }, { 4, 4 }, { 3, 1 } })
    local pos = x0:abs() + 0.5
    local cases = {
      add_sub = function(t) return ((t + 2 * t - t:pow(2)) * t):sum() end,
      div = function(t) return (t / (t * t + 1)):sum() end,
      pow_tensor = function(t) return pos:pow(t):sum() + t:pow(3):sum() end,
      maximum = function(t) return torch.maximum(t, t:pow(2) - 0.5):pow(2):sum() end,
      atan2 = function(t) return torch.atan2(t, t * t + 1):sum() end,
      unary = function(t)
        return (t:exp() + t:tanh() + t:sigmoid() + t:sin() + t:cos() + t:atan() + t:sinh() + t:erf() + t:abs() * t
          + t:softplus() + t:expm1() + t:square() * t):sum()
      end,
      unary_pos = function(t)
        local p = t:abs() + 0.5
        return (p:log() + p:sqrt() + p:rsqrt() + p:reciprocal() + p:log1p() + p:log2() + p:log10()
          + (p * 0.3):asin() + (p * 0.3):acos() + (p * 0.3):atanh() + (p + 1):acosh() + p:asinh()):sum()
      end,
      activations = function(t)
        return (F.gelu(t) + F.silu(t) + F.logsigmoid(t) + F.softsign(t) + F.tanhshrink(t) + F.relu(t) * t):sum()
      end,
      activations_more = function(t)
        return (F.gelu(t, { approximate = 'tanh' }) + F.mish(t) + F.hardswish(t * 2) * t + F.hardsigmoid(t * 2) * t
          + F.selu(t) * t + F.leaky_relu(t, 0.2) * t + F.elu(t) * t + F.prelu(t, torch.full({ 4 }, 0.3, f64)) * t):sum()
      end,
      special = function(t) return ((t * 0.3):erfinv() + (t:abs() + 0.5):lgamma()):sum() end,
      where = function(t) return torch.where(t:gt(0), t:pow(2), t:exp()):sum() end,
      mm_matmul = function(t) return t:mm(t:t()):tanh():sum() + t:matmul(t[1]):pow(2):sum() end,
      addmm_linear = function(t) return torch.addmm(t:narrow(2, 1, 3), t, t:t():narrow(1, 1, 4):narrow(2, 1, 3), {
          beta = 0.5, alpha = 2 }):pow(2):sum() + F.linear(t, t, t[1]:narrow(1, 1, 3)):sin():sum()
      end,
      sum_mean_dims = function(t) return t:sum(2):pow(2):sum() + t:mean(1, true):pow(3):sum() + t:mean():exp() end,
      var_std_norm = function(t) return t:var(2):sum() + t:std(1):sum() + t:norm() + t:logsumexp(2):sum() end,
      max_amax = function(t) return t:max(2):pow(3):sum() + t:amax(1):pow(2):sum() end,
      cumsum = function(t) return t:cumsum(2):pow(2):sum() end,
      shapes = function(t)
        return (t:t():contiguous():view(12):pow(3)):sum() + t:reshape(2, 6):permute(2, 1):sin():sum()
          + t:unsqueeze(1):expand(2, 3, 4):pow(2):sum() + t:transpose(1, 2)[2]:pow(3):sum()
      end,
      views = function(t)
        return t[2]:pow(3):sum() + t[{ { 1, 2 } }]:sin():sum() + t:narrow(2, 2, 2):exp():sum() + t:select(2, 4):pow(2):sum()
      end,
      cat_stack = function(t) return torch.cat({ t, t:pow(2) }, 1):sin():sum() + torch.stack({ t, t * t }):pow(2):sum() end,
      index = function(t)
        return t:index_select(1, idx):pow(2):sum() + t:gather(2, gidx):pow(3):sum() + t[idx]:sin():sum()
          + t:masked_fill(t:gt(0.5), 0):pow(2):sum()
      end,
      softmax = function(t) return (F.softmax(t, 2):pow(2) + F.log_softmax(t, 1):pow(2)):sum() end,
      losses = function(t)
        return F.mse_loss(t, x0 * 0.5) + F.cross_entropy(t, torch.tensor({ 1, 4, 2 }))
          + F.cross_entropy(t, torch.tensor({ 2, 2, 3 }), { reduction = 'sum' }) + F.nll_loss(F.log_softmax(t, 2),
            torch.tensor({ 3, 1, 1 }), { reduction = 'none' }):pow(2):sum()
      end,
      copies = function(t) return t:to(torch.float64):pow(3):sum() + t:clone():pow(2):sum() end,
    }
    local names = {}
    for name in pairs(cases) do names[#names + 1] = name end
    table.sort(names)
    torch.manual_seed(11)
    local w = torch.randn({ 3, 4 }, f64)
    for _, name in ipairs(names) do
      local f = cases[name]
      local x = x0:clone():requires_grad_()
      local g = grad(f(x), x, { create_graph = true })[1]
      local got = grad((g * w):sum(), x)[1]
      local ref = fd_of_gradient(f, x, w)
      H.assert_values(got, ref:totable(), 1e-5, name)
    end
  end)

  it('runs a custom Function backward with grad mode on, so it records', function()
    local Sin = torch.autograd.Function:extend('MySin')
    function Sin.forward(ctx, x)
      ctx:save_for_backward(x)
      return x:sin()
    end
    function Sin.backward(ctx, g) return g * ctx.saved_tensors[1]:cos() end
    local x = leaf({ 0.5, -2 })
    local g = grad(Sin.apply(x):sum(), x, { create_graph = true })[1]
    H.assert_values(g, map(x, math.cos), 1e-12)
    H.assert_values(grad(g:sum(), x)[1], map(x, function(v) return -math.sin(v) end), 1e-12)
  end)

  it('refuses, for a custom Function marked once_differentiable, and for the Lua-made nodes whose backward is not made of recorded ops', function()
    local Sin = torch.autograd.Function:extend('OnceSin')
    Sin.once_differentiable = true
    function Sin.forward(ctx, x)
      ctx:save_for_backward(x)
      return x:sin()
    end
    function Sin.backward(ctx, g) return g * ctx.saved_tensors[1]:cos() end
    local x = leaf({ 0.5, -2 })
    H.assert_values(grad(Sin.apply(x):sum(), x)[1], map(x, math.cos), 1e-12) -- once is fine
    H.raises(function() grad(Sin.apply(x):sum(), x, { create_graph = true }) end,
      'create_graph: double backward through OnceSin is not supported yet')
    -- the linalg functions that solve with factors saved without history (their second
    -- derivatives came out half of the true ones), the reentrant checkpoint
    local a = torch.tensor({ { 3, 1 }, { 0.5, 2 } }, { dtype = torch.float64, requires_grad = true })
    local L = torch.linalg
    for name, f in pairs({
      CheckpointFunction = function() return torch.utils.checkpoint.checkpoint(function(t) return t:exp() end, a):sum() end,
    }) do
      H.raises(function() grad(f(), a, { create_graph = true }) end, 'double backward through ' .. name, name)
      assert.are.equal(4, grad(f(), a)[1]:numel(), name) -- and without create_graph they differentiate
    end
  end)

  it('differentiates the views made by as_strided twice: diagonal, trace, unfold', function()
    -- f = the cubes of the diagonal (offset 1), trace^2 and the windows' end products: against the
    -- finite differences of the first gradient
    local x0 = torch.tensor({ { 0.3, -1.2, 0.7 }, { 1.1, 0.4, -0.6 }, { -0.2, 0.9, 1.3 } }, f64)
    local function loss(x) return (x:diagonal(1) ^ 3):sum() + torch.trace(x) ^ 2
      + (function(w) return (w:select(2, 1) * w:select(2, 3)):sum() end)(x:reshape(-1):unfold(1, 3, 2)) end
    assert.is_true(torch.autograd.gradgradcheck(function(x) return loss(x) end, { x0:clone():requires_grad_() }))
    -- the gradient of trace(x)^2 is 2 trace(x) I: the sum of its diagonal, 6 trace(x), has the
    -- gradient 6 I
    local x = x0:clone():requires_grad_()
    local g = grad(torch.trace(x) ^ 2, x, { create_graph = true })[1]
    H.assert_values(grad(g:diagonal():sum(), x)[1], { { 6, 0, 0 }, { 0, 6, 0 }, { 0, 0, 6 } }, 1e-12)
  end)

  it('makes retain_graph default to true', function()
    local x = leaf({ 1, 2 })
    local y = (x:exp() * x):sum()
    grad(y, x, { create_graph = true })
    H.assert_values(grad(y, x)[1], map(x, function(v) return math.exp(v) * (1 + v) end), 1e-12)
    H.raises(function() grad(y, x) end, 'backward through the graph a second time')
    local z = (x:exp() * x):sum()
    z:backward(nil, { create_graph = true })
    z:backward()
    assert.is_true(x.grad.requires_grad)
    x.grad = nil -- a .grad with history holds x through its graph (a cycle, as in PyTorch)
  end)

  it('accumulates .grad out of place, with history', function()
    local x = leaf({ 0.5, 1.5 })
    ;(x ^ 3):sum():backward(nil, { create_graph = true })
    local g1 = x.grad
    assert.is_true(g1.requires_grad)
    ;(x ^ 2):sum():backward(nil, { create_graph = true })
    assert.is_true(x.grad.requires_grad)
    H.assert_values(g1, { 0.75, 6.75 }, 1e-12, 'the first .grad is not written in place')
    H.assert_values(x.grad, { 0.75 + 1, 6.75 + 3 }, 1e-12)
    H.assert_values(grad(x.grad:sum(), x)[1], { 6 * 0.5 + 2, 6 * 1.5 + 2 }, 1e-12)
    x.grad = nil
  end)

  it('raises naming the node when a node has no double backward', function()
    -- nextafter has no derivative at all: create_graph names its node before its backward runs
    local x = leaf({ 0.5, 1.5, 2 })
    local y = torch.zeros(3, f64)
    H.raises(function() grad(x:nextafter(y):sum(), x, { create_graph = true }) end,
      'autograd.grad: create_graph: double backward through NextafterBackward0 is not supported yet')
    H.raises(function() x:nextafter(y):sum():backward(nil, { create_graph = true }) end,
      'backward: create_graph: double backward through NextafterBackward0 is not supported yet')
    H.raises(function() torch.autograd.backward({ x:nextafter(y):pow(2):sum() }, nil, { create_graph = true }) end,
      'autograd.backward: create_graph: double backward through NextafterBackward0 is not supported yet')
  end)

  it('differentiates lgamma, digamma and polygamma any number of times (polygamma(n + 1) each)', function()
    -- polygamma(n, 1) = (-1)^(n + 1) n! zeta(n + 1): pi^2 / 6, -2 zeta(3), pi^4 / 15, -24 zeta(5)
    local zeta3, zeta5 = 1.2020569031595942854, 1.0369277551433699263
    local at1 = { math.pi ^ 2 / 6, -2 * zeta3, math.pi ^ 4 / 15, -24 * zeta5 }
    local x = leaf({ 1, 1 })
    local g = torch.lgamma(x):sum()
    for order = 1, 5 do
      g = grad(g, x, { create_graph = true })[1]
      assert.is_true(g.requires_grad, 'order ' .. order)
      -- lgamma's derivatives: digamma(1) = -Euler's gamma, then polygamma(order - 1, 1)
      H.assert_values(g, order == 1 and { -0.57721566490153286, -0.57721566490153286 }
        or { at1[order - 1], at1[order - 1] }, 1e-10, 'order ' .. order)
      g = g:sum()
    end
    -- the same of digamma and polygamma(2): their second derivatives
    H.assert_values(second(function(t) return t:digamma() end, leaf({ 1 })), { at1[2] }, 1e-10, 'digamma')
    H.assert_values(second(function(t) return torch.polygamma(2, t) end, leaf({ 1 })), { at1[4] }, 1e-10, 'polygamma(2)')
    -- gradgradcheck over both signs (away from the poles); digamma's first derivative under
    -- create_graph is zeta(2, x), without it the trigamma kernel (PyTorch's series, within 1e-9)
    local xs = { 0.4, 1.7, 6.5, -0.3, -2.6 }
    local x1 = leaf(xs)
    H.assert_values(grad(x1:digamma():sum(), x1, { create_graph = true })[1], grad(x1:digamma():sum(), x1)[1]:totable(),
      1e-9)
    assert.is_true(torch.autograd.gradgradcheck(function(t) return t:digamma() end, { x1 }))
    for _, f in ipairs { function(t) return torch.polygamma(1, t) end, function(t) return torch.special.polygamma(3, t) end } do
      assert.is_true(check_twice(f, { leaf(xs) }))
    end
  end)

  it("differentiates igamma and igammac in x twice (d/dx: +-x^(a-1) e^-x / Gamma(a)), a's derivative refused", function()
    local a = torch.tensor({ 0.5, 2, 7, 3.5 }, f64)
    local x = leaf({ 0.3, 2.5, 6, 1.2 })
    assert.is_true(check_twice(function(t) return torch.igamma(a, t) end, { x }))
    assert.is_true(check_twice(function(t) return torch.igammac(a:reshape(4, 1), t) end, { x }))
    -- d2/dx2 P(a, x) = x^(a-2) e^-x (a - 1 - x) / Gamma(a)
    local want = {}
    for i, av in ipairs(a:totable()) do
      local xv = x[i]
      want[i] = xv ^ (av - 2) * math.exp(-xv) * (av - 1 - xv) / math.exp(torch.tensor(av, f64):lgamma():item())
    end
    H.assert_values(second(function(t) return torch.igamma(a, t) end, x), want, 1e-12)
    local al = leaf({ 2, 3 })
    H.raises(function() grad(torch.igamma(al, torch.tensor({ 1.0, 2.0 }, f64)):sum(), al) end,
      "the derivative for 'igamma: input' is not implemented")
  end)
end)

describe('create_graph through convolutions', function()
  local function conv_case(t, w, b) return F.conv2d(t, w, b, { stride = { 2, 1 }, padding = { 1, 2 }, dilation = { 1, 2 },
    groups = 2 }):tanh() end

  it('conv2d (stride, padding, dilation, groups, bias): gradgradcheck, and the first gradient against finite differences', function()
    torch.manual_seed(21)
    local x = torch.randn({ 2, 4, 5, 4 }, f64):requires_grad_()
    local w = torch.randn({ 6, 2, 3, 2 }, f64):requires_grad_()
    local b = torch.randn({ 6 }, f64):requires_grad_()
    assert.is_true(check_twice(conv_case, { x, w, b }))
    -- unbatched, and the ops built on conv2d: conv1d and conv_transpose2d (no bias)
    assert.is_true(check_twice(function(t, k, bb) return F.conv2d(t, k, bb, { padding = 1 }):sin() end,
      { torch.randn({ 2, 3, 3 }, f64):requires_grad_(), torch.randn({ 3, 2, 2, 2 }, f64):requires_grad_(),
        torch.randn({ 3 }, f64):requires_grad_() }))
    assert.is_true(check_twice(function(t, k) return F.conv1d(t, k, nil, { stride = 2 }):pow(2) end,
      { torch.randn({ 1, 2, 7 }, f64):requires_grad_(), torch.randn({ 3, 2, 3 }, f64):requires_grad_() }))
    assert.is_true(check_twice(function(t, k) return F.conv_transpose2d(t, k, nil, { stride = 2,
      padding = 1 }):tanh() end, { torch.randn({ 1, 3, 3, 2 }, f64):requires_grad_(), torch.randn({ 3, 2, 3, 3 }, f64):requires_grad_() }))
    -- d/dx of sum(w2 * d/dx loss) against finite differences of the plain first gradient
    local w2 = torch.randn(x.shape, f64)
    local function loss(t) return conv_case(t, w:detach(), b:detach()):pow(2):sum() end
    local g = grad(loss(x), x, { create_graph = true })[1]
    H.assert_values(grad((g * w2):sum(), x)[1], fd_of_gradient(loss, x, w2):totable(), 1e-6)
  end)

  it('conv2d: third derivatives', function()
    torch.manual_seed(22)
    local x = torch.randn({ 1, 2, 4, 4 }, f64):requires_grad_()
    local w = torch.randn({ 2, 2, 2, 2 }, f64):requires_grad_()
    local function first(t, k) return grad(F.conv2d(t, k, nil, { stride = 2 }):pow(3):sum(), { t, k }, { create_graph = true }) end
    assert.is_true(check_twice(function(t, k)
      local gt, gk = table.unpack(first(t, k))
      return gt * gk:sum()
    end, { x, w }))
  end)

  it('gives a WGAN-GP penalty (a conv critic) the gradient of finite differences', function()
    torch.manual_seed(23)
    local w1 = (torch.randn({ 3, 2, 3, 3 }, f64) * 0.4):requires_grad_()
    local b1 = (torch.randn({ 3 }, f64) * 0.1):requires_grad_()
    local w2 = (torch.randn({ 2, 3, 2, 2 }, f64) * 0.4):requires_grad_()
    local wl = (torch.randn({ 1, 8 }, f64) * 0.4):requires_grad_()
    local bl = torch.randn({ 1 }, f64) -- the penalty does not depend on the last bias
    local params = { w1, b1, w2, wl }
    local real, fake = torch.randn({ 3, 2, 5, 5 }, f64), torch.randn({ 3, 2, 5, 5 }, f64)
    local alpha = torch.rand({ 3, 1, 1, 1 }, f64)
    local function critic(x, p)
      local h = F.leaky_relu(F.conv2d(x, p[1], p[2], { padding = 1 }), 0.2)
      h = F.conv2d(h, p[3], nil, { stride = 2 })
      return F.linear(h:flatten(2), p[4], bl)
    end
    local function penalty(p, create)
      local xh = (alpha * real + (1 - alpha) * fake):requires_grad_()
      local gx = grad(critic(xh, p):sum(), xh, { create_graph = create })[1]
      return ((gx:flatten(2):norm(2, 2) - 1) ^ 2):mean()
    end
    local got = grad(penalty(params, true), params)
    local eps = 1e-6
    for k, p in ipairs(params) do
      local ref = torch.zeros(p:numel(), f64)
      local flat = p:detach():clone()
      local view = flat:view(-1)
      for i = 1, p:numel() do
        local q = {}
        for j, t in ipairs(params) do q[j] = t:detach() end
        local o = view[i]
        view[i] = o + eps
        q[k] = flat
        local plus = penalty(q, false):item()
        view[i] = o - eps
        local minus = penalty(q, false):item()
        view[i] = o
        ref[i] = (plus - minus) / (2 * eps)
      end
      H.assert_values(got[k], ref:view(p.shape):totable(), 1e-6, 'parameter ' .. k)
    end
  end)
end)

describe('create_graph through pooling', function()
  it('max_pool2d, avg_pool2d, adaptive_avg_pool2d (overlapping windows, padding, ceil_mode): gradgradcheck', function()
    torch.manual_seed(41)
    local x = torch.randn({ 2, 2, 5, 6 }, f64):requires_grad_()
    assert.is_true(check_twice(function(t) return F.max_pool2d(t, 3, { stride = 2, padding = 1 }):pow(3) end, { x }))
    assert.is_true(check_twice(function(t) return F.max_pool2d(t[1], 2):sin() end, { x }))
    assert.is_true(check_twice(function(t) return F.avg_pool2d(t, 3, { stride = 2, padding = 1, ceil_mode = true,
      count_include_pad = false }):pow(3) end, { x }))
    assert.is_true(check_twice(function(t) return F.avg_pool2d(t[2], 2, { divisor_override = 3 }):pow(2) end, { x }))
    assert.is_true(check_twice(function(t) return F.adaptive_avg_pool2d(t, { 3, 4 }):pow(3) end, { x }))
    assert.is_true(check_twice(function(t) return F.adaptive_avg_pool2d(t[1], 2):exp() end, { x }))
    -- third derivatives through the recorded backward of average pooling
    assert.is_true(torch.autograd.gradgradcheck(function(t)
      return grad(F.avg_pool2d(t, 2):pow(3):sum() + F.adaptive_avg_pool2d(t, 3):pow(3):sum(), t, { create_graph = true })[1]
    end, { x }))
  end)
end)

describe('create_graph through reductions and selections', function()
  it('prod and cumprod (with zeros, over all, a dim, keepdim), logcumsumexp, cummax, cummin, masked_select: gradgradcheck', function()
    torch.manual_seed(51)
    local x = torch.randn({ 3, 4 }, f64)
    local xz = x:clone()
    xz[1][2], xz[2][1], xz[2][3] = 0, 0, 0 -- row 1 one zero, row 2 two
    for _, v in ipairs({ x, xz }) do
      local t = v:clone():requires_grad_()
      assert.is_true(check_twice(function(a) return a:prod() end, { t }))
      assert.is_true(check_twice(function(a) return a:prod(2) end, { t }))
      assert.is_true(check_twice(function(a) return a:prod(1, true) end, { t }))
      assert.is_true(check_twice(function(a) return a[1]:prod() * a end, { t }))
    end
    for _, v in ipairs({ x, xz }) do -- cumprod: rows with no zero, one zero, two zeros
      local t = v:clone():requires_grad_()
      assert.is_true(check_twice(function(a) return a:cumprod(2) end, { t }))
      assert.is_true(check_twice(function(a) return a:cumprod(1):pow(2) end, { t }))
      -- third derivatives: cumprod's backward is made of recorded cumprods
      assert.is_true(torch.autograd.gradgradcheck(function(a)
        return grad((a:cumprod(2) * a:cumprod(2)):sum(), a, { create_graph = true })[1]
      end, { t }))
    end
    assert.is_true(check_twice(function(a) return a:cumprod(1) end, { torch.tensor(1.5, f64):requires_grad_() }))
    -- logcumsumexp, to the third order, and with values far apart (the log-space formula)
    local u = x:clone():requires_grad_()
    assert.is_true(check_twice(function(a) return a:logcumsumexp(2) end, { u }))
    assert.is_true(check_twice(function(a) return a:logcumsumexp(1):pow(2) end, { u }))
    assert.is_true(torch.autograd.gradgradcheck(function(a)
      return grad(a:logcumsumexp(2):pow(2):sum(), a, { create_graph = true })[1]
    end, { u }))
    local wide = (x * 300):requires_grad_()
    local gw = grad((wide:logcumsumexp(2) * x):sum(), wide, { create_graph = true })[1]
    H.assert_values(gw, grad((wide:logcumsumexp(2) * x):sum(), wide)[1]:totable(), 1e-12)
    local t = x:clone():requires_grad_()
    assert.is_true(check_twice(function(a) return a:prod(1):prod() end, { t }))
    assert.is_true(check_twice(function(a) return a:cummax(2):pow(2) end, { t }))
    assert.is_true(check_twice(function(a) return a:cummin(1):pow(3) end, { t }))
    assert.is_true(check_twice(function(a) return a:masked_select(a:gt(0)):pow(2) end, { t }))
    assert.is_true(check_twice(function(a) return a[2]:masked_select(torch.tensor({ { true, false, true, true },
      { false, true, true, false } })):pow(3) end, { t }))
    -- a 0-dim prod, and prod's second derivative in closed form: d2/dxi dxj prod = prod / (xi xj) off the diagonal
    assert.is_true(check_twice(function(a) return a:prod() end, { torch.tensor(1.5, f64):requires_grad_() }))
    local v = leaf({ 0.5, 1.5, 2 })
    local gv = grad(v:prod(), v, { create_graph = true })[1]
    H.assert_values(grad(gv:narrow(1, 1, 1):sum(), v)[1], { 0, 2, 1.5 }, 1e-12)
  end)
end)

describe('create_graph through the linalg functions', function()
  it('det, slogdet, solve, inv, solve_triangular, cholesky, qr: gradgradcheck', function()
    torch.manual_seed(61)
    local L = torch.linalg
    local A = (torch.randn({ 3, 3 }, f64) + torch.eye(3, f64) * 3):requires_grad_()
    local B = torch.randn({ 3, 2 }, f64):requires_grad_()
    local cases = {
      det = { function(a) return L.det(a) end, { A } },
      det_batch = { function(a) return L.det(a) end, { torch.randn({ 2, 3, 3 }, f64):requires_grad_() } },
      slogdet = { function(a) return select(2, L.slogdet(a)) end, { A } },
      solve = { function(a, b) return L.solve(a, b) end, { A, B } },
      solve_vector = { function(a, b) return L.solve(a, b) end, { A, torch.randn({ 3 }, f64):requires_grad_() } },
      solve_right = { function(a, b) return L.solve(a, b:t(), { left = false }) end, { A, B } },
      inv = { function(a) return L.inv(a) end, { A } },
      triangular = { function(a, b) return L.solve_triangular(a:triu(), b, { upper = true }) end, { A, B } },
      triangular_unit = { function(a, b) return L.solve_triangular(a, b, { upper = false, unitriangular = true }) end, { A, B } },
      triangular_right = { function(a, b) return L.solve_triangular(a, b:t(), { upper = true, left = false }) end, { A, B } },
      cholesky = { function(a) return L.cholesky(a:matmul(a:t())) end, { A } },
      cholesky_upper = { function(a) return L.cholesky(a:matmul(a:t()), { upper = true }) end, { A } },
    }
    for name, c in pairs(cases) do assert.is_true(check_twice(c[1], c[2]), name) end
    -- qr: Q and R (both read), reduced for tall, square and wide A, complete for square and wide
    -- (PyTorch's differentiable cases); a batch
    local function qr_out(mode) return function(a)
      local q, r = L.qr(a, mode)
      return torch.cat({ q:reshape(-1), r:reshape(-1) }) end end
    for name, c in pairs({
      qr_tall = { 'reduced', { 4, 3 } }, qr_square = { 'reduced', { 3, 3 } }, qr_wide = { 'reduced', { 2, 4 } },
      qr_complete_square = { 'complete', { 3, 3 } }, qr_complete_wide = { 'complete', { 2, 3 } },
      qr_batch = { 'reduced', { 2, 3, 2 } },
    }) do
      assert.is_true(check_twice(qr_out(c[1]), { torch.randn(c[2], f64):requires_grad_() }), name)
    end
    -- the second derivative of a function of R alone against finite differences of its gradient
    local aq = torch.randn({ 3, 3 }, f64):requires_grad_()
    local w2 = torch.randn({ 3, 3 }, f64)
    local function rloss(t) return (select(2, L.qr(t)) ^ 2 * w2):sum() end
    local gq = grad(rloss(aq), aq, { create_graph = true })[1]
    local w3 = torch.randn({ 3, 3 }, f64)
    H.assert_values(grad((gq * w3):sum(), aq)[1], fd_of_gradient(rloss, aq, w3):totable(), 1e-6)
    -- det's Hessian in closed form for 2 x 2: d2 det / da11 da22 = 1, d2 det / da12 da21 = -1
    local a2 = torch.tensor({ { 3, 1 }, { 0.5, 2 } }, { dtype = torch.float64, requires_grad = true })
    local g = grad(L.det(a2), a2, { create_graph = true })[1]
    H.assert_values(grad(g:select(1, 1):select(1, 1), a2, { retain_graph = true })[1], { { 0, 0 }, { 0, 1 } }, 1e-12)
    H.assert_values(grad(g:select(1, 1):select(1, 2), a2)[1], { { 0, 0 }, { -1, 0 } }, 1e-12)
  end)
end)

describe('create_graph through normalisation', function()
  it('layer_norm and batch_norm (training and eval), with weight and bias: gradgradcheck', function()
    torch.manual_seed(31)
    local x = torch.randn({ 3, 2, 4 }, f64):requires_grad_()
    local w = torch.randn({ 2, 4 }, f64):requires_grad_()
    local b = torch.randn({ 2, 4 }, f64):requires_grad_()
    assert.is_true(check_twice(function(t, ww, bb) return F.layer_norm(t, { 2, 4 }, ww, bb):pow(2) end, { x, w, b }))
    assert.is_true(check_twice(function(t, ww, bb) return F.layer_norm(t, { 4 }, ww, bb):tanh() end,
      { x, w[1]:detach():requires_grad_(), b[2]:detach():requires_grad_() }))
    local x4 = torch.randn({ 3, 2, 2, 2 }, f64):requires_grad_()
    local wc, bc = torch.randn({ 2 }, f64):requires_grad_(), torch.randn({ 2 }, f64):requires_grad_()
    assert.is_true(check_twice(function(t, ww, bb)
      return F.batch_norm(t, nil, nil, ww, bb, { training = true }):pow(3)
    end, { x4, wc, bc }))
    local rm, rv = torch.randn({ 2 }, f64), torch.rand({ 2 }, f64) + 0.5
    assert.is_true(check_twice(function(t, ww, bb)
      return F.batch_norm(t, rm, rv, ww, bb, { training = false }):pow(3)
    end, { x4, wc, bc }))
    -- 2-D input (N, C), and the modules
    local x2 = torch.randn({ 4, 3 }, f64):requires_grad_()
    assert.is_true(check_twice(function(t) return F.batch_norm(t, nil, nil, nil, nil, { training = true }):pow(3) end, { x2 }))
    local ln = torch.nn.LayerNorm(3):to(torch.float64)
    local w2 = torch.randn({ 4, 3 }, f64)
    local function loss(t) return (ln(t):tanh() * w2):sum() end
    local g = grad(loss(x2), x2, { create_graph = true })[1]
    H.assert_values(grad((g * w2):sum(), x2)[1], fd_of_gradient(loss, x2, w2):totable(), 1e-6)
  end)
end)

describe('options of backward and grad', function()
  it('refuse unknown keys naming the op and the key', function()
    local x = leaf({ 1, 2 })
    H.raises(function() grad((x * x):sum(), x, { create_grap = true }) end, 'autograd.grad', "unknown option 'create_grap'")
    H.raises(function() (x * x):sum():backward(nil, { retain = true }) end, 'backward', "unknown option 'retain'")
    H.raises(function() (x * x):sum():backward(nil, { allow_unused = true }) end, "unknown option 'allow_unused'")
    H.raises(function() torch.autograd.backward({ (x * x):sum() }, nil, { grad_outputs = {} }) end,
      'autograd.backward', "unknown option 'grad_outputs'")
    H.raises(function() (x * x):sum():backward(nil, 'yes') end, 'backward: options should be a table')
  end)

  it('backward with inputs accumulates into those tensors only', function()
    local a, b = leaf({ 1, 2 }), leaf({ 3, 4 })
    ;(a * b):sum():backward(nil, { inputs = { a } })
    H.assert_values(a.grad, { 3, 4 })
    assert.is_nil(b.grad)
    torch.autograd.backward({ (a * b):sum() }, nil, { inputs = b })
    H.assert_values(b.grad, { 1, 2 })
    H.assert_values(a.grad, { 3, 4 })
    H.raises(function() (a * b):sum():backward(nil, { inputs = {} }) end, 'inputs argument to backward() cannot be empty')
  end)
end)

describe('torch.autograd.gradgradcheck', function()
  it('accepts right second derivatives and rejects a wrong double backward', function()
    torch.manual_seed(5)
    local x = torch.randn({ 3 }, f64):requires_grad_()
    local y = torch.randn({ 3 }, f64):requires_grad_()
    assert.is_true(torch.autograd.gradgradcheck(function(a, b) return (a * b):tanh() * a end, { x, y }))
    assert.is_true(torch.autograd.gradgradcheck(function(a) return a:sin() end, { x }, { torch.ones(3, f64) }))
    local Bad = torch.autograd.Function:extend('BadSquare')
    function Bad.forward(ctx, a)
      ctx:save_for_backward(a)
      return a * a
    end
    function Bad.backward(ctx, g) -- right gradient, but detached values: no second derivative
      return g * 2 * ctx.saved_tensors[1]:detach()
    end
    assert.is_true(torch.autograd.gradcheck(Bad.apply, { x }))
    H.raises(function() torch.autograd.gradgradcheck(Bad.apply, { x }) end, 'gradcheck: Jacobian mismatch')
  end)
end)

describe('torch.autograd.functional', function()
  local A = torch.tensor({ { 1, 2, 0 }, { -1, 3, 5 }, { 4, 0.5, 2 } }, f64)
  local x = torch.tensor({ 0.3, -1, 2 }, f64)
  local function quad(t) return t:dot(A:mv(t)) end

  it('jacobian: a tensor of shape out .. in, or tables', function()
    local J = AF.jacobian(torch.sin, x)
    H.assert_values(J, { { math.cos(0.3), 0, 0 }, { 0, math.cos(-1), 0 }, { 0, 0, math.cos(2) } }, 1e-12)
    H.assert_values(AF.jacobian(function(t) return A:mv(t) end, x), A:totable(), 1e-12)
    local M = torch.tensor({ { 1, 2 }, { 3, 4 } }, f64)
    local JM = AF.jacobian(function(t) return t * t end, M)
    assert.are.same({ 2, 2, 2, 2 }, JM.shape)
    H.close(JM[2][1][2][1], 6, 1e-12)
    H.close(JM[2][1][1][2], 0, 1e-12)
    local b = torch.tensor({ 2, 5, -1 }, f64)
    local JJ = AF.jacobian(function(u, v) return u * v, u + v end, { x, b })
    H.assert_values(JJ[1][1], torch.diag(b):totable(), 1e-12)
    H.assert_values(JJ[1][2], torch.diag(x):totable(), 1e-12)
    H.assert_values(JJ[2][2], torch.eye(3, f64):totable(), 1e-12)
    local J1 = AF.jacobian(function(u, v) return (u * v):sum() end, { x, b })
    H.assert_values(J1[2], x:totable(), 1e-12)
    -- an input the function ignores: zeros, or an error in strict mode
    local Jz = AF.jacobian(function(u, v) return u * 2 end, { x, b })
    H.assert_values(Jz[2], torch.zeros(3, 3, f64):totable())
    H.raises(function() AF.jacobian(function(u, v) return u * 2 end, { x, b }, { strict = true }) end,
      'independent of input 2')
    assert.is_false(J.requires_grad)
    local xr = x:clone():requires_grad_()
    local Jc = AF.jacobian(function(t) return t ^ 3 end, xr, { create_graph = true })
    assert.is_true(Jc.requires_grad)
    H.assert_values(grad(Jc:sum(), xr)[1], map(x, function(v) return 6 * v end), 1e-12)
    H.raises(function() AF.jacobian(torch.sin, x, { vectorise = true }) end, "unknown option 'vectorise'")
    H.assert_values(AF.jacobian(torch.sin, x, { vectorize = true }), J:totable(), 1e-15)
  end)

  it('hessian: A + A^T of a quadratic form; tables for several inputs', function()
    H.assert_values(AF.hessian(quad, x), (A + A:t()):totable(), 1e-12)
    local b = torch.tensor({ 2, 5, -1 }, f64)
    local Hs = AF.hessian(function(u, v) return (u * u * v):sum() end, { x, b })
    H.assert_values(Hs[1][1], torch.diag(b * 2):totable(), 1e-12)
    H.assert_values(Hs[1][2], torch.diag(x * 2):totable(), 1e-12)
    H.assert_values(Hs[2][2], torch.zeros(3, 3, f64):totable(), 1e-12)
    -- softmax cross-entropy: diag p(1 - p), off-diagonal -p_i p_j
    local z = torch.tensor({ 0.2, -1, 0.7 }, f64)
    local Hc = AF.hessian(function(t) return F.cross_entropy(t:view(1, 3), torch.tensor({ 2 })) end, z)
    local p = F.softmax(z, 1)
    for i = 1, 3 do
      for j = 1, 3 do
        H.close(Hc[i][j], (i == j and p[i] or 0) - p[i] * p[j], 1e-12)
      end
    end
    H.raises(function() AF.hessian(torch.sin, x) end, 'should contain a single element')
    H.raises(function() AF.hessian(function(t) return { t:sum() } end, x) end, 'should return a single Tensor')
  end)

  it('vjp, jvp, hvp and vhp against closed forms', function()
    local v = torch.tensor({ 1, -2, 0.5 }, f64)
    local out, r = AF.vjp(function(t) return A:mv(t) end, x, v)
    H.assert_values(out, A:mv(x):totable(), 1e-12)
    H.assert_values(r, A:t():mv(v):totable(), 1e-12)
    out, r = AF.jvp(function(t) return A:mv(t):sin() end, x, v)
    H.assert_values(r, (A:mv(x):cos() * A:mv(v)):totable(), 1e-12)
    H.assert_values(out, A:mv(x):sin():totable(), 1e-12)
    out, r = AF.hvp(quad, x, v)
    H.close(out:item(), quad(x):item(), 1e-12)
    H.assert_values(r, (A + A:t()):mv(v):totable(), 1e-12)
    out, r = AF.vhp(quad, x, v)
    H.assert_values(r, (A + A:t()):t():mv(v):totable(), 1e-12)
    -- a non-symmetric check of vhp against hvp: the Hessian is symmetric, so they agree
    local _, h1 = AF.hvp(function(t) return (t:sin() * t:roll(1, 1)):sum() end, x, v)
    local _, h2 = AF.vhp(function(t) return (t:sin() * t:roll(1, 1)):sum() end, x, v)
    H.assert_values(h1, h2:totable(), 1e-12)
    -- several inputs: tables back
    local b = torch.tensor({ 2, 5, -1 }, f64)
    local o2, r2 = AF.vjp(function(u, w) return u * w end, { x, b }, v)
    H.assert_values(r2[1], (v * b):totable(), 1e-12)
    H.assert_values(r2[2], (v * x):totable(), 1e-12)
    H.assert_values(o2, (x * b):totable(), 1e-12)
    local _, j2 = AF.jvp(function(u, w) return u * w, u:sum() end, { x, b }, { v, v })
    H.assert_values(j2[1], (v * b + x * v):totable(), 1e-12)
    H.close(j2[2]:item(), v:sum():item(), 1e-12)
    -- v may be left out for a one-element output (vjp) or input (jvp, hvp)
    local _, rs = AF.vjp(function(t) return (t * t):sum() end, x)
    H.assert_values(rs, (x * 2):totable(), 1e-12)
    local s = torch.tensor(0.7, f64)
    local _, js = AF.jvp(function(t) return t:exp() end, s)
    H.close(js:item(), math.exp(0.7), 1e-12)
    local _, hs = AF.hvp(function(t) return t ^ 4 end, s)
    H.close(hs:item(), 12 * 0.49, 1e-12)
  end)

  it('refuses a wrong v, and keeps the graph under create_graph', function()
    H.raises(function() AF.vjp(torch.sin, x, torch.ones(2, f64)) end, 'v has invalid size: should be [3] but got [2]')
    H.raises(function() AF.vjp(torch.sin, x) end, 'The vector v can only be None')
    H.raises(function() AF.jvp(function(u, w) return u * w end, { x, x }, { x }) end, 'v is a table of invalid length')
    H.raises(function() AF.vjp(torch.sin, x, x, { create = true }) end, "unknown option 'create'")
    local xr = x:clone():requires_grad_()
    local _, r = AF.vjp(function(t) return t ^ 3 end, xr, torch.ones(3, f64), { create_graph = true })
    assert.is_true(r.requires_grad)
    H.assert_values(grad(r:sum(), xr)[1], map(x, function(t) return 6 * t end), 1e-12)
    local _, r0 = AF.vjp(function(t) return t ^ 3 end, xr, torch.ones(3, f64))
    assert.is_false(r0.requires_grad)
  end)
end)
