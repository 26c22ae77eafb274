-- nn.Module's forward hooks (order, replacement of the arguments and of the results, removal);
-- nn.utils.weight_norm (w = g v / ||v|| per the 1-based dim, against Lua loops; gradients by
-- gradcheck in float64) and spectral_norm (sigma against torch.linalg.svdvals after enough power
-- iterations; eval mode; ConvTranspose's dim), their removal and errors; nn.init.sparse_;
-- torch.utils.checkpoint (gradients equal to a plain run's, dropout's masks replayed, the random
-- state kept) and checkpoint_sequential.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local f64 = torch.float64

local function shape(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

local function names(iter)
  local out = {}
  for k in iter do out[#out + 1] = k end
  return out
end

describe('nn.Module forward hooks', function()
  it('run pre-hooks, forward and hooks in order, each seeing the replacements before it', function()
    local m = nn.Linear(3, 2):double()
    local log = {}
    local x = torch.randn(4, 3, { dtype = f64 })
    m:register_forward_pre_hook(function(mod, input)
      assert.are.equal(m, mod)
      assert.are.equal(1, input.n)
      assert.is_true(input[1]:equal(x))
      log[#log + 1] = 'pre1'
      return input[1] * 2
    end)
    m:register_forward_pre_hook(function(_, input)
      assert.is_true(input[1]:equal(x * 2))
      log[#log + 1] = 'pre2'
      -- nothing returned: the arguments stay
    end)
    m:register_forward_hook(function(_, input, out)
      assert.is_true(input[1]:equal(x * 2))
      log[#log + 1] = 'post1'
      return out + 1
    end)
    m:register_forward_hook(function(_, _, out)
      log[#log + 1] = 'post2'
      return out * 3
    end)
    local y = m(x)
    assert.are.same({ 'pre1', 'pre2', 'post1', 'post2' }, log)
    assert.is_true(y:equal((m:forward(x * 2) + 1) * 3))
  end)

  it('take and give several arguments and results', function()
    local Two = nn.Module:extend('Two')
    function Two:forward(a, b) return a + b, a - b end
    local m = Two()
    m:register_forward_pre_hook(function(_, input)
      assert.are.equal(2, input.n)
      return input[2], input[1] -- swapped
    end)
    local seen
    m:register_forward_hook(function(_, input, s, d)
      seen = { input[1], input[2], s, d }
      return s * 10, d * 10
    end)
    local s, d = m(torch.tensor({ 1.0 }), torch.tensor({ 5.0 }))
    H.assert_values(s, { 60 })
    H.assert_values(d, { 40 })
    H.assert_values(seen[1], { 5 })
    H.assert_values(seen[4], { 4 })
  end)

  it('are removed by their handles, also as to-be-closed values and from inside a hook', function()
    local m = nn.Identity()
    local calls = {}
    local h1 = m:register_forward_hook(function() calls[#calls + 1] = 1 end)
    local h2
    h2 = m:register_forward_hook(function()
      calls[#calls + 1] = 2
      h2:remove() -- once only
    end)
    m(torch.zeros(1))
    m(torch.zeros(1))
    assert.are.same({ 1, 2, 1 }, calls)
    h1:remove()
    h1:remove() -- twice is harmless
    m(torch.zeros(1))
    assert.are.same({ 1, 2, 1 }, calls)
    do
      local _ <close> = m:register_forward_pre_hook(function(_, input) return input[1] + 1 end)
      H.assert_values(m(torch.zeros(1)), { 1 })
    end
    H.assert_values(m(torch.zeros(1)), { 0 })
    assert.are.equal(0, #m._forward_pre_hooks)
  end)

  it('run for the children of a container, and accept callable objects', function()
    local inner = nn.Linear(2, 2)
    local seq = nn.Sequential(inner, nn.ReLU())
    local n = 0
    local counter = setmetatable({}, { __call = function(_, mod) assert.are.equal(inner, mod); n = n + 1 end })
    inner:register_forward_pre_hook(counter)
    seq(torch.ones(1, 2))
    seq(torch.ones(1, 2))
    assert.are.equal(2, n)
    H.raises(function() inner:register_forward_hook(42) end, 'register_forward_hook: expected a function, got number')
    -- hooks are not state: state_dict and parameters are unchanged
    assert.are.same({ 'weight', 'bias' }, names(pairs(inner:state_dict())))
  end)
end)

-- the weight of weight_norm from g and v (nested tables of a 2-D weight), the norm over every
-- dimension but dim (nil: over all)
local function wn_weight(g, v, dim)
  local rows, cols = #v, #v[1]
  local w = {}
  for i = 1, rows do w[i] = {} end
  local function norm(pick)
    local s = 0
    for i = 1, rows do
      for j = 1, cols do
        if pick(i, j) then s = s + v[i][j] ^ 2 end
      end
    end
    return math.sqrt(s)
  end
  for i = 1, rows do
    for j = 1, cols do
      local n, gg
      if dim == 1 then
        n, gg = norm(function(a) return a == i end), g[i][1]
      elseif dim == 2 then
        n, gg = norm(function(_, b) return b == j end), g[1][j]
      else
        n, gg = norm(function() return true end), g
      end
      w[i][j] = gg * v[i][j] / n
    end
  end
  return w
end

describe('nn.utils.weight_norm', function()
  for _, case in ipairs { { dim = nil, want = 1, gshape = { 3, 1 } }, { dim = 2, want = 2, gshape = { 1, 4 } },
    { dim = -1, want = 2, gshape = { 1, 4 } }, { dim = false, want = nil, gshape = {} } } do
    it('w = g v / ||v|| with dim = ' .. tostring(case.dim), function()
      torch.manual_seed(1)
      local m = nn.Linear(4, 3):double()
      local w0 = m.weight:detach():clone()
      local old = m.weight
      nn.utils.weight_norm(m, { dim = case.dim })
      assert.are.same(case.gshape, shape(m.weight_g))
      assert.are.same({ 3, 4 }, shape(m.weight_v))
      -- parameters: bias, then the new ones at the end; the old weight is no parameter any more
      assert.are.same({ 'bias', 'weight_g', 'weight_v' }, names(m:named_parameters()))
      assert.are.same({ 'bias', 'weight_g', 'weight_v' }, names(pairs(m:state_dict())))
      assert.is_false(rawequal(old, m.weight_v))
      -- at first the weight is unchanged (g holds the norms of v)
      H.assert_values(m.weight, w0:totable(), 1e-14)
      -- change g and v: the forward uses the recomputed weight
      torch.no_grad(function()
        m.weight_g:mul_(torch.linspace(0.5, 2, m.weight_g:numel(), { dtype = f64 }):view(m.weight_g.shape))
        m.weight_v:add_(torch.linspace(-1, 1, 12, { dtype = f64 }):view(3, 4))
      end)
      local g = m.weight_g:detach():totable()
      local want = wn_weight(g, m.weight_v:detach():totable(), case.want)
      local x = torch.randn(2, 4, { dtype = f64 })
      local y = m(x)
      H.assert_values(m.weight, want, 1e-14)
      H.assert_values(y, (x:matmul(torch.tensor(want, { dtype = f64 }):t()) + m.bias):totable(), 1e-13)
      -- gradients reach g and v, and match finite differences
      y:sum():backward()
      assert.is_not_nil(m.weight_g.grad)
      assert.is_not_nil(m.weight_v.grad)
      assert.is_true(torch.autograd.gradcheck(function(gg, vv, xx) return m(xx) end,
        { m.weight_g, m.weight_v, x:requires_grad_() }))
      -- removal: one parameter `weight` with the last weight
      local last = m.weight:detach():clone()
      nn.utils.remove_weight_norm(m)
      assert.are.same({ 'bias', 'weight' }, names(m:named_parameters()))
      assert.is_true(nn.parameter.is_parameter(m.weight))
      assert.is_true(m.weight.is_leaf and m.weight.requires_grad)
      H.assert_values(m.weight, last:totable(), 0)
      assert.are.equal(0, #m._forward_pre_hooks)
      assert.is_true(m(x):equal(y))
    end)
  end

  it('takes the norm per output channel of a convolution, and trains', function()
    torch.manual_seed(2)
    local conv = nn.Conv2d(2, 3, 3):double()
    nn.utils.weight_norm(conv, 'weight', 1)
    assert.are.same({ 3, 1, 1, 1 }, shape(conv.weight_g))
    local v = conv.weight_v:detach()
    local norms = v:reshape(3, -1):norm(2, 2)
    -- each output channel of the weight has norm g
    torch.no_grad(function() conv.weight_g:fill_(2) end)
    local x = torch.randn(1, 2, 5, 5, { dtype = f64 })
    conv(x)
    H.assert_values(conv.weight:reshape(3, -1):norm(2, 2), { 2, 2, 2 }, 1e-14)
    assert.is_true(norms:gt(0):all():item())
    -- a few SGD steps on g and v
    local opt = torch.optim.SGD(conv:parameters(), { lr = 0.1 })
    local first
    for s = 1, 5 do
      opt:zero_grad()
      local loss = (conv(x) ^ 2):mean()
      loss:backward()
      opt:step()
      if s == 1 then first = loss:item() end
    end
    assert.is_true((conv(x) ^ 2):mean():item() < first)
  end)

  it('raises errors', function()
    local m = nn.Linear(2, 2)
    nn.utils.weight_norm(m)
    H.raises(function() nn.utils.weight_norm(m) end, 'Cannot register two weight_norm hooks on the same parameter weight')
    H.raises(function() nn.utils.remove_weight_norm(m, 'bias') end, "weight_norm of 'bias' not found in Linear")
    H.raises(function() nn.utils.weight_norm(nn.Linear(2, 2), 'nope') end, "weight_norm: Linear has no parameter 'nope'")
    H.raises(function() nn.utils.weight_norm(nn.Linear(2, 2), { dim = 0 }) end,
      'weight_norm: dim 0 is out of range for a weight with 2 dimensions (dims are 1-based)')
    H.raises(function() nn.utils.weight_norm(nn.Linear(2, 2), { axis = 1 }) end, "weight_norm: unknown option 'axis'")
    -- the bias can be normalised too, independently
    nn.utils.weight_norm(m, 'bias')
    assert.are.same({ 'weight_g', 'weight_v', 'bias_g', 'bias_v' }, names(m:named_parameters()))
  end)
end)

describe('nn.utils.spectral_norm', function()
  it('divides the weight by its largest singular value after enough power iterations', function()
    torch.manual_seed(4)
    local m = nn.Linear(5, 4):double()
    local old = m.weight
    nn.utils.spectral_norm(m, { n_power_iterations = 200 })
    -- the same tensor under its new name: an optimizer holding it keeps working
    assert.is_true(rawequal(old, m.weight_orig))
    assert.are.same({ 'bias', 'weight_orig' }, names(m:named_parameters()))
    assert.are.same({ 'weight_u', 'weight_v' }, names(m:named_buffers()))
    assert.are.same({ 'bias', 'weight_orig', 'weight_u', 'weight_v' }, names(pairs(m:state_dict())))
    H.close(m.weight_u:norm():item(), 1, 1e-14)
    H.close(m.weight_v:norm():item(), 1, 1e-14)
    local x = torch.randn(3, 5, { dtype = f64 })
    local y = m(x)
    local sigma = torch.linalg.svdvals(m.weight_orig:detach())[1]
    local u, v = m.weight_u, m.weight_v
    H.close(u:dot(m.weight_orig:detach():mv(v)):item(), sigma, 1e-12, 'u.W v')
    H.close(torch.linalg.svdvals(m.weight:detach())[1], 1, 1e-12, 'sigma of the normalised weight')
    H.assert_values(m.weight, (m.weight_orig:detach() / sigma):totable(), 1e-12)
    H.assert_values(y, (x:matmul(m.weight:detach():t()) + m.bias):totable(), 1e-12)
    -- u = normalize(W v) holds after a forward
    H.assert_values(u, (m.weight_orig:detach():mv(v) / m.weight_orig:detach():mv(v):norm()):totable(), 1e-12)
    -- eval mode: u and v are kept, gradients by finite differences
    m:eval()
    local u0, v0 = u:clone(), v:clone()
    m(x)
    assert.is_true(u:equal(u0) and v:equal(v0))
    assert.is_true(torch.autograd.gradcheck(function(w, xx) return m(xx) end, { m.weight_orig, x:requires_grad_() }))
    -- removal: the normalised weight as a parameter
    local w = m.weight:detach():clone()
    nn.utils.remove_spectral_norm(m)
    assert.are.same({ 'bias', 'weight' }, names(m:named_parameters()))
    assert.are.same({}, names(m:named_buffers()))
    H.assert_values(m.weight, w:totable(), 1e-15)
    assert.are.equal(0, #m._forward_pre_hooks)
  end)

  it('converges with one power iteration per forward, in training', function()
    torch.manual_seed(5)
    local m = nn.Linear(6, 3):double()
    nn.utils.spectral_norm(m)
    local x = torch.randn(2, 6, { dtype = f64 })
    local u_before = m.weight_u:clone()
    for _ = 1, 100 do m(x) end
    assert.is_false(m.weight_u:equal(u_before))
    H.close(torch.linalg.svdvals(m.weight:detach())[1], 1, 1e-10)
    -- a backward through two forwards (the GAN pattern) works: each forward has its own u and v
    local loss = m(x):sum() - m(x * 2):sum()
    loss:backward()
    assert.is_not_nil(m.weight_orig.grad)
  end)

  it('uses dim 2 for ConvTranspose, and dim as given', function()
    torch.manual_seed(6)
    local ct = nn.ConvTranspose2d(3, 4, 2):double() -- weight 3 x 4 x 2 x 2
    nn.utils.spectral_norm(ct, { n_power_iterations = 300 })
    assert.are.equal(4, ct.weight_u:numel())
    assert.are.equal(12, ct.weight_v:numel())
    ct(torch.randn(1, 3, 3, 3, { dtype = f64 }))
    local mat = ct.weight_orig:detach():permute(2, 1, 3, 4):reshape(4, -1)
    local sigma = torch.linalg.svdvals(mat)[1]
    H.assert_values(ct.weight, (ct.weight_orig:detach() / sigma):totable(), 1e-10)
    local conv = nn.Conv2d(2, 5, 3):double()
    nn.utils.spectral_norm(conv, 'weight', 1, 1e-12, -1) -- the last dim: a 3 x 30 matrix
    assert.are.equal(3, conv.weight_u:numel())
    assert.are.equal(30, conv.weight_v:numel())
  end)

  it('raises errors', function()
    local m = nn.Linear(2, 2)
    nn.utils.spectral_norm(m)
    H.raises(function() nn.utils.spectral_norm(m) end, 'Cannot register two spectral_norm hooks on the same parameter weight')
    H.raises(function() nn.utils.remove_spectral_norm(nn.Linear(2, 2)) end, "spectral_norm of 'weight' not found in Linear")
    H.raises(function() nn.utils.spectral_norm(nn.Linear(2, 2), { n_power_iterations = 0 }) end,
      'Expected n_power_iterations to be positive, but got n_power_iterations=0')
    H.raises(function() nn.utils.spectral_norm(nn.Linear(2, 2), { dim = 3 }) end, 'dim 3 is out of range')
    -- weight_norm and spectral_norm hooks on one module are told apart
    nn.utils.weight_norm(m, 'bias')
    H.raises(function() nn.utils.remove_weight_norm(m) end, "weight_norm of 'weight' not found")
    nn.utils.remove_spectral_norm(m)
    nn.utils.remove_weight_norm(m, 'bias')
    assert.are.same({ 'weight', 'bias' }, names(m:named_parameters()))
  end)
end)

describe('nn.init.sparse_', function()
  it('zeroes ceil(sparsity * rows) elements of each column and draws the rest from N(0, std^2)', function()
    torch.manual_seed(7)
    local t = torch.empty(200, 40, { dtype = f64 })
    assert.are.equal(t, nn.init.sparse_(t, 0.1))
    local rows = t:totable()
    local sum, sq, n = 0, 0, 0
    for j = 1, 40 do
      local zeros = 0
      for i = 1, 200 do
        local v = rows[i][j]
        if v == 0 then zeros = zeros + 1 else sum, sq, n = sum + v, sq + v * v, n + 1 end
      end
      assert.are.equal(20, zeros, 'column ' .. j)
    end
    local std = math.sqrt(sq / n - (sum / n) ^ 2)
    assert.is_true(math.abs(std - 0.01) < 0.001, 'std ' .. std)
    nn.init.sparse_(t, 0.31, 2)
    local z = t:eq(0):sum(1):totable()
    for j = 1, 40 do assert.are.equal(62, z[j]) end
    H.raises(function() nn.init.sparse_(torch.empty(3), 0.5) end, 'Only tensors with 2 dimensions are supported')
  end)
end)

describe('torch.utils.checkpoint', function()
  local cp = torch.utils.checkpoint

  local function net()
    torch.manual_seed(8)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Dropout(0.3), nn.Linear(6, 3)):double()
  end

  local function grads(m, x)
    local out = { x.grad:clone() }
    for _, p in ipairs(m:parameters()) do out[#out + 1] = p.grad:clone() end
    return out
  end

  it('gives the gradients of a plain run, dropout included, and keeps the random state', function()
    local m1, m2 = net(), net()
    local x1 = torch.randn(5, 4, { dtype = f64, requires_grad = true })
    local x2 = x1:detach():clone():requires_grad_()
    torch.manual_seed(9)
    local y1 = m1(x1)
    local l1 = (y1 ^ 2):sum()
    l1:backward()
    local after_plain = torch.rand(3)
    torch.manual_seed(9)
    local y2 = cp.checkpoint(m2, x2)
    assert.is_true(y2:equal(y1))
    assert.is_true(y2.requires_grad)
    ;(y2 ^ 2):sum():backward()
    -- the recomputation drew its masks from the saved state and gave the current one back
    assert.is_true(torch.rand(3):equal(after_plain))
    local g1, g2 = grads(m1, x1), grads(m2, x2)
    for i = 1, #g1 do assert.is_true(g1[i]:equal(g2[i]), 'gradient ' .. i) end
  end)

  it('passes every argument, returns every result, and gives gradients to tensor arguments', function()
    local w = torch.randn(3, 3, { dtype = f64, requires_grad = true })
    local function fn(a, scale, b)
      local h = torch.tanh(a:matmul(w)) * scale
      return h + b, h:sum()
    end
    local a = torch.randn(2, 3, { dtype = f64, requires_grad = true })
    local b = torch.randn(2, 3, { dtype = f64 }) -- no grad
    local y, s = cp.checkpoint(fn, a, 2.5, b)
    ;((y * y):sum() + s * 3):backward()
    local ga, gw = a.grad:clone(), w.grad:clone()
    a.grad, w.grad = nil, nil
    local y2, s2 = fn(a, 2.5, b)
    ;((y2 * y2):sum() + s2 * 3):backward()
    assert.is_true(y:equal(y2) and s:equal(s2))
    H.assert_values(ga, a.grad:totable(), 1e-15)
    H.assert_values(gw, w.grad:totable(), 1e-15)
    assert.is_nil(b.grad)
    -- only one result used
    a.grad, w.grad = nil, nil
    local y3 = cp.checkpoint(fn, a, 2.5, b)
    y3:sum():backward()
    assert.is_not_nil(a.grad)
  end)

  it('without an argument that requires grad, the results do not either', function()
    local m = nn.Linear(2, 2)
    local y
    torch.no_grad(function() y = cp.checkpoint(m, torch.ones(1, 2)) end)
    assert.is_false(y.requires_grad)
    H.raises(function() cp.checkpoint(42, torch.ones(1)) end, 'checkpoint: expected a function')
    H.raises(function() cp.checkpoint(function() return 1 end, torch.ones(1, { requires_grad = true })) end,
      'checkpoint: the function must return tensors, but result 1 is a number')
  end)

  it('checkpoint_sequential gives the gradients of a plain run', function()
    torch.manual_seed(10)
    local layers = {}
    for i = 1, 5 do layers[i] = nn.Linear(3, 3):double() end
    local seq = nn.Sequential(layers)
    local x1 = torch.randn(4, 3, { dtype = f64, requires_grad = true })
    local x2 = x1:detach():clone():requires_grad_()
    seq(x1):pow(2):sum():backward()
    local plain = grads(seq, x1)
    seq:zero_grad()
    local y = cp.checkpoint_sequential(seq, 2, x2)
    y:pow(2):sum():backward()
    local got = grads(seq, x2)
    for i = 1, #plain do H.assert_values(got[i], plain[i]:totable(), 1e-14, 'gradient ' .. i) end
    -- an array of functions, more segments than fit evenly
    local z = cp.checkpoint_sequential({ function(t) return t * 2 end, torch.tanh, function(t) return t + 1 end }, 3, x2)
    H.assert_values(z, (torch.tanh(x2 * 2) + 1):totable(), 1e-15)
  end)
end)
