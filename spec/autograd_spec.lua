-- Autograd: gradients of every op family checked against central finite differences in float64
-- (torch.autograd.gradcheck, itself checked against hand-derived values), on contiguous and
-- non-contiguous inputs; leaves, accumulation, grad mode, custom functions and the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local gradcheck = torch.autograd.gradcheck

-- a float64 leaf of the given shape with values away from 0 and from kinks
local function leaf(shape, lo, hi)
  lo, hi = lo or 0.5, hi or 1.5
  local x = torch.rand(shape, { dtype = torch.float64 }) * (hi - lo) + lo
  local signs = torch.randint(0, 2, shape):double() * 2 - 1
  return (x * signs):requires_grad_()
end

-- a non-contiguous float64 leaf: the transpose of a [c, r] tensor
local function leaf_t(r, c, lo, hi)
  local base = leaf({ c, r }, lo, hi):detach()
  local x = base:t()
  x.requires_grad = true
  assert(not x:is_contiguous())
  return x
end

describe('gradcheck itself', function()
  it('accepts a right gradient and rejects a wrong one', function()
    torch.manual_seed(1)
    local x = leaf({ 3 })
    assert.is_true(gradcheck(function(a) return a * a end, { x }))
    local Wrong = torch.autograd.Function:extend('Wrong')
    function Wrong.forward(ctx, a) return a * a end
    function Wrong.backward(ctx, g) return g * 3 end
    H.raises(function() gradcheck(Wrong.apply, { x }) end, 'Jacobian mismatch')
  end)
end)

describe('gradients of x^2 + 3x summed', function()
  it('match the derivative 2x + 3 exactly', function()
    local x = torch.tensor({ 1.5, -2.0, 0.25 }, { requires_grad = true, dtype = torch.float64 })
    local y = (x ^ 2 + x * 3):sum()
    y:backward()
    H.assert_values(x.grad, { 6, -1, 3.5 }, 1e-12)
    assert.are.equal('SumBackward0', y.grad_fn.name)
  end)
end)

describe('unary ops', function()
  local pos = { 'log', 'log1p', 'log2', 'log10', 'sqrt', 'rsqrt', 'reciprocal' }
  local any = { 'abs', 'neg', 'exp', 'expm1', 'sin', 'cos', 'tan', 'atan', 'sinh', 'cosh', 'tanh', 'erf',
    'sigmoid', 'relu', 'square', 'gelu', 'gelu_tanh' }
  for _, name in ipairs(any) do
    it(name .. ' (contiguous and transposed)', function()
      torch.manual_seed(2)
      assert.is_true(gradcheck(function(a) return a[name](a) end, { leaf({ 2, 3 }) }))
      assert.is_true(gradcheck(function(a) return a[name](a) end, { leaf_t(3, 2) }))
    end)
  end
  for _, name in ipairs(pos) do
    it(name .. ' on positive inputs', function()
      torch.manual_seed(3)
      assert.is_true(gradcheck(function(a) return a[name](a) end, { leaf({ 4 }, 0.5, 2):abs():detach():requires_grad_() }))
    end)
  end
  it('asin and acos inside (-1, 1)', function()
    local x = torch.tensor({ -0.5, 0.1, 0.7 }, { dtype = torch.float64, requires_grad = true })
    assert.is_true(gradcheck(function(a) return a:asin() end, { x }))
    assert.is_true(gradcheck(function(a) return a:acos() end, { x }))
  end)
  it('floor, ceil, round, trunc and sign have zero gradients', function()
    for _, name in ipairs { 'floor', 'ceil', 'round', 'trunc', 'sign' } do
      local x = torch.tensor({ 1.3, -2.7 }, { dtype = torch.float64, requires_grad = true })
      x[name](x):sum():backward()
      H.assert_values(x.grad, { 0, 0 }, 0)
    end
  end)
  it('keeps float32 and float16 gradients in their dtype', function()
    for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16 } do
      local x = torch.tensor({ 1, 2 }, { dtype = dt, requires_grad = true })
      x:exp():sum():backward()
      assert.are.equal(dt, x.grad.dtype)
      H.assert_values(x.grad, { math.exp(1), math.exp(2) }, H.tol(dt) * 10)
    end
  end)
end)

describe('binary ops', function()
  local ops = {
    add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
    mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
    pow = function(a, b) return a:abs() ^ b end, maximum = torch.maximum, minimum = torch.minimum,
    atan2 = function(a, b) return torch.atan2(a, b) end,
    alpha = function(a, b) return torch.add(a, b, { alpha = 2.5 }) end,
    sub_alpha = function(a, b) return torch.sub(a, b, { alpha = -0.5 }) end,
  }
  for name, f in pairs(ops) do
    it(name .. ' with broadcasting and non-contiguous operands', function()
      torch.manual_seed(4)
      assert.is_true(gradcheck(f, { leaf({ 2, 3 }), leaf({ 3 }) }))
      assert.is_true(gradcheck(f, { leaf_t(3, 2), leaf({ 3, 1 }) }))
    end)
  end
  it('with numbers on either side', function()
    torch.manual_seed(5)
    local x = leaf({ 4 })
    for _, f in ipairs {
      function(a) return a * 3 end, function(a) return 2 - a end, function(a) return 1.5 / a end,
      function(a) return a:abs() ^ 2.5 end, function(a) return 2 ^ a end, function(a) return a:fmod(0.3) end,
      function(a) return a:remainder(0.3) end, function(a) return torch.maximum(a, torch.tensor(0.9, { dtype = torch.float64 })) end,
    } do
      assert.is_true(gradcheck(f, { x }))
    end
  end)
  it('sends a float64 gradient back to a float32 input as float32', function()
    local a = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local b = torch.tensor({ 3, 4 }, { dtype = torch.float64, requires_grad = true })
    local y = (a * b):sum()
    assert.are.equal(torch.float64, y.dtype)
    y:backward()
    assert.are.equal(torch.float32, a.grad.dtype)
    H.assert_values(a.grad, { 3, 4 }, 0)
    H.assert_values(b.grad, { 1, 2 }, 0)
  end)
  it('pow at exponent 0 and base 0', function()
    local a = torch.tensor({ 0, 2 }, { dtype = torch.float64, requires_grad = true })
    local b = torch.tensor({ 0, 3 }, { dtype = torch.float64, requires_grad = true })
    local y = (a ^ b):sum()
    y:backward()
    H.assert_values(a.grad, { 0, 12 }, 1e-12)
    H.assert_values(b.grad, { 0, 8 * math.log(2) }, 1e-12)
  end)
  it('where and clamp', function()
    torch.manual_seed(6)
    local c = torch.tensor({ { true, false, true }, { false, false, true } })
    assert.is_true(gradcheck(function(a, b) return torch.where(c, a, b) end, { leaf({ 2, 3 }), leaf({ 3 }) }))
    assert.is_true(gradcheck(function(a) return torch.where(c, a, 0.5) end, { leaf({ 2, 3 }) }))
    assert.is_true(gradcheck(function(a) return a:clamp(-0.8, 0.9) end, { leaf({ 2, 3 }, 0.1, 1.5) }))
  end)
end)

describe('reductions', function()
  local cases = {
    { 'sum', function(a) return a:sum() end }, { 'sum dim', function(a) return a:sum(2) end },
    { 'sum dims keepdim', function(a) return a:sum({ 1, 3 }, true) end },
    { 'mean', function(a) return a:mean(-1) end }, { 'prod', function(a) return a:prod(2) end },
    { 'prod all', function(a) return a:prod() end },
    { 'logsumexp', function(a) return a:logsumexp(2) end }, { 'var', function(a) return a:var(1) end },
    { 'std', function(a) return a:std(3, true) end },
    { 'var biased', function(a) return a:var(2, false, { unbiased = false }) end },
    { 'norm', function(a) return a:norm() end }, { 'norm 1', function(a) return a:norm(1, 2) end },
    { 'norm 3', function(a) return a:norm(3, 3) end }, { 'norm inf', function(a) return a:norm(math.huge, 1) end },
    { 'amax', function(a) return a:amax(2) end }, { 'max all', function(a) return a:max() end },
    { 'min all', function(a) return a:min() end },
    { 'max dim', function(a) return (a:max(2)) end }, { 'min dim keepdim', function(a) return (a:min(3, true)) end },
    { 'cumsum', function(a) return a:cumsum(2) end }, { 'cumprod', function(a) return a:cumprod(3) end },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      torch.manual_seed(7)
      assert.is_true(gradcheck(c[2], { leaf({ 2, 3, 4 }) }))
      local t = leaf({ 4, 3, 2 }):detach():permute(3, 2, 1)
      t.requires_grad = true
      assert.is_true(gradcheck(c[2], { t }))
    end)
  end
  it('prod and cumprod with zeros', function()
    local x = torch.tensor({ { 2, 0, 3 }, { 0, 0, 4 }, { 1, 2, 3 } }, { dtype = torch.float64, requires_grad = true })
    x:prod(2):sum():backward()
    H.assert_values(x.grad, { { 0, 6, 0 }, { 0, 0, 0 }, { 6, 3, 2 } }, 1e-12)
    assert.is_true(gradcheck(function(a) return a:prod() end, { x }))
    assert.is_true(gradcheck(function(a) return a:cumprod(2) end, { x }))
  end)
  it('max splits the gradient between ties', function()
    local x = torch.tensor({ 1, 3, 3 }, { dtype = torch.float64, requires_grad = true })
    x:max():backward()
    H.assert_values(x.grad, { 0, 0.5, 0.5 }, 0)
  end)
end)

describe('shape and view ops', function()
  local cases = {
    { 'view', function(a) return a:view(3, 2) end }, { 'reshape', function(a) return a:reshape(-1) end },
    { 'permute', function(a) return a:permute(2, 1) end }, { 'transpose', function(a) return a:transpose(1, 2) end },
    { 't', function(a) return a:t() end }, { 'unsqueeze', function(a) return a:unsqueeze(2) end },
    { 'squeeze', function(a) return a:unsqueeze(1):squeeze() end },
    { 'expand', function(a) return a:unsqueeze(1):expand(4, 2, 3) end },
    { 'flatten', function(a) return a:unsqueeze(1):flatten() end },
    { 'narrow', function(a) return a:narrow(2, 2, 2) end }, { 'select', function(a) return a:select(2, 3) end },
    { 'index', function(a) return a[{ {}, { 2, 3 } }] end }, { 'row', function(a) return a[2] end },
    { 'cat', function(a) return torch.cat({ a, a * 2 }, 1) end },
    { 'stack', function(a) return torch.stack({ a, a:exp() }, 2) end },
    { 'split', function(a) return a:split(2, 2)[2] end }, { 'chunk', function(a) return a:chunk(3, 2)[1] * 3 end },
    { 'contiguous', function(a) return a:t():contiguous() end }, { 'clone', function(a) return a:clone() end },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      torch.manual_seed(8)
      local x = c[1] == 'view' and leaf({ 2, 3 }) or leaf_t(2, 3)
      assert.is_true(gradcheck(c[2], { x }))
    end)
  end
  it('cat of inputs that need and do not need gradients', function()
    local a = leaf({ 2, 2 })
    local b = torch.ones(3, 2, { dtype = torch.float64 })
    torch.cat({ b, a }, 1):sum():backward()
    H.assert_values(a.grad, { { 1, 1 }, { 1, 1 } }, 0)
  end)
  it('to() another dtype sends the gradient back converted', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local y = x:double() * torch.tensor({ 3, 4 }, { dtype = torch.float64 })
    y:sum():backward()
    assert.are.equal(torch.float32, x.grad.dtype)
    H.assert_values(x.grad, { 3, 4 }, 0)
  end)
end)

-- Slicing views (narrow, select, ranges) give the engine the gradient of their part, which
-- it adds into that part of the sliced tensor's gradient (in place when the engine alone holds it):
-- many slices of one intermediate, slices mixed with uses of the whole tensor in both orders (the
-- whole's gradient can be an expanded tensor, not written in place), overlapping slices, slices of a
-- non-contiguous intermediate and of a leaf, against gradients written out here and gradcheck.
describe('gradients through many slices of one tensor', function()
  it('a loop over the rows of an intermediate, as an RNN over x[t]', function()
    torch.manual_seed(3)
    local x = leaf({ 5, 3 })
    local z = x * 2
    local w = torch.randn(5, 3, { dtype = torch.float64 })
    local loss = 0
    for t = 1, 5 do loss = loss + (z[t] * w[t]):sum() * t end
    loss:backward()
    local want = {}
    for t = 1, 5 do
      want[t] = {}
      for j = 1, 3 do want[t][j] = 2 * t * w[t][j] end
    end
    H.assert_values(x.grad, want, 1e-12)
  end)
  for _, order in ipairs { 'whole first', 'slices first', 'whole first, added last', 'slices first, added last' } do
    it('slices and the whole tensor, made ' .. order, function()
      local x = leaf({ 4, 3 })
      local z = x * 3
      local c = torch.tensor({ 1, 2, 4 }, { dtype = torch.float64 })
      -- the engine runs the later-made nodes first: made last, the whole's gradient (an expanded
      -- tensor) comes first into z's gradient, and the slices' must not be written into it
      local whole, parts
      local function make_parts()
        parts = (z[2] * c):sum() + (z:narrow(1, 3, 2) * 5):sum() + z[{ { 1, 3 }, 3 }]:sum() * 7
      end
      if order:find('^whole first') then whole = z:sum(); make_parts() else make_parts(); whole = z:sum() end
      local loss = order:find('added last') and parts + whole or whole + parts
      loss:backward()
      -- row 2 gets c, rows 3-4 get 5, column 3 of rows 1-3 gets 7, every element 1; times 3
      local want = {}
      for i = 1, 4 do
        want[i] = {}
        for j = 1, 3 do
          local g = 1
          if i == 2 then g = g + c[j] end
          if i >= 3 then g = g + 5 end
          if j == 3 and i <= 3 then g = g + 7 end
          want[i][j] = 3 * g
        end
      end
      H.assert_values(x.grad, want, 1e-12)
    end)
  end
  it("a row's gradient is not written into the whole's expanded gradient", function()
    for order = 1, 2 do
      local x = torch.ones(4, 3, { dtype = torch.float64, requires_grad = true })
      local z = x * 3
      local loss
      if order == 1 then
        local p = (z[2] * 1):sum()
        loss = p + z:sum()
      else
        local w = z:sum()
        loss = w + (z[2] * 1):sum()
      end
      loss:backward()
      H.assert_values(x.grad, { { 3, 3, 3 }, { 6, 6, 6 }, { 3, 3, 3 }, { 3, 3, 3 } }, 0)
    end
  end)
  it('overlapping narrows, slices of a transposed intermediate, and a leaf sliced directly (gradcheck)', function()
    torch.manual_seed(4)
    assert.is_true(gradcheck(function(a)
      local z = a:exp()
      return z:narrow(1, 1, 3) * z:narrow(1, 2, 3) + z:narrow(1, 2, 3):sin()
    end, { leaf({ 4, 2 }) }))
    assert.is_true(gradcheck(function(a)
      local z = (a * 2):t() -- [3, 4], not contiguous
      local out = z[1] * 0
      for t = 1, 3 do out = out + z[t] * t + z:select(2, 3 - t + 1):narrow(1, t, 1) end
      return out
    end, { leaf_t(3, 4) }))
    assert.is_true(gradcheck(function(a) return a[2] * a[{ { 1, 2 } }]:sum(1) + a:narrow(2, 1, 1):sum() end,
      { leaf({ 3, 2 }) }))
  end)
  it('the sliced gradient reaches torch.autograd.grad and retain_grad', function()
    local x = leaf({ 3, 2 })
    local z = x * 1
    local gx = torch.autograd.grad((z[1] * 2):sum() + (z[3] * 4):sum(), { x, z })
    H.assert_values(gx[1], { { 2, 2 }, { 0, 0 }, { 4, 4 } }, 0)
    H.assert_values(gx[2], { { 2, 2 }, { 0, 0 }, { 4, 4 } }, 0)
    local y = x * 1
    y:retain_grad()
    local loss = (y[1] * 2):sum() + (y[3] * 4):sum()
    loss:backward()
    H.assert_values(y.grad, { { 2, 2 }, { 0, 0 }, { 4, 4 } }, 0)
  end)
end)

describe('indexing ops', function()
  local idx = torch.tensor({ 3, 1, 3 })
  local mask = torch.tensor({ { true, false, true }, { false, true, true } })
  local cases = {
    { 'index_select', function(a) return a:index_select(2, idx) end },
    { 'gather', function(a) return a:gather(2, torch.tensor({ { 1, 3 }, { 2, 2 } })) end },
    { 'masked_select', function(a) return a:masked_select(mask) end },
    { 'masked_fill', function(a) return a:masked_fill(mask, 0.5) end },
    { 'x[rows]', function(a) return a[torch.tensor({ 2, 2, 1 })] end },
    { 'x[mask]', function(a) return a[mask] end },
    { 'scatter', function(a) return a:scatter(2, torch.tensor({ { 1 }, { 3 } }), 0.0) end },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      torch.manual_seed(9)
      assert.is_true(gradcheck(c[2], { leaf({ 2, 3 }) }))
      assert.is_true(gradcheck(c[2], { leaf_t(2, 3) }))
    end)
  end
  it('scatter and scatter_add to both inputs', function()
    torch.manual_seed(10)
    local index = torch.tensor({ { 1, 3 }, { 2, 1 } })
    assert.is_true(gradcheck(function(a, s) return a:scatter(2, index, s) end, { leaf({ 2, 3 }), leaf({ 2, 2 }) }))
    assert.is_true(gradcheck(function(a, s) return a:scatter_add(2, index, s) end, { leaf({ 2, 3 }), leaf({ 2, 2 }) }))
  end)
end)

describe('matrix products', function()
  local cases = {
    { 'mm', function(a, b) return a:mm(b) end, { 2, 3 }, { 3, 4 } },
    { 'bmm', function(a, b) return a:bmm(b) end, { 2, 2, 3 }, { 2, 3, 2 } },
    { 'matmul 1-D 1-D', torch.matmul, { 3 }, { 3 } },
    { 'matmul 2-D 1-D', torch.matmul, { 2, 3 }, { 3 } },
    { 'matmul 1-D 3-D', torch.matmul, { 3 }, { 2, 3, 2 } },
    { 'matmul broadcast', torch.matmul, { 2, 1, 2, 3 }, { 3, 3, 2 } },
    { 'mv', function(a, b) return a:mv(b) end, { 2, 3 }, { 3 } },
    { 'dot', function(a, b) return a:dot(b) end, { 3 }, { 3 } },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      torch.manual_seed(11)
      assert.is_true(gradcheck(c[2], { leaf(c[3]), leaf(c[4]) }))
    end)
  end
  it('mm on transposed operands', function()
    torch.manual_seed(12)
    assert.is_true(gradcheck(function(a, b) return a:mm(b) end, { leaf_t(2, 3), leaf_t(3, 2) }))
  end)
  it('addmm with beta and alpha and a broadcast bias', function()
    torch.manual_seed(13)
    assert.is_true(gradcheck(function(c, a, b) return torch.addmm(c, a, b, { beta = 0.5, alpha = 2 }) end,
      { leaf({ 4 }), leaf({ 2, 3 }), leaf({ 3, 4 }) }))
  end)
end)

describe('leaves and graphs', function()
  it('accumulates into .grad across backward calls', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    for _ = 1, 3 do (x * 2):sum():backward() end
    H.assert_values(x.grad, { 6, 6 }, 0)
    x.grad = nil
    local loss = (x * x):sum()
    loss:backward()
    H.assert_values(x.grad, { 2, 4 }, 0)
  end)
  it('sums the gradients of a tensor used twice', function()
    local x = torch.tensor({ 3.0 }, { requires_grad = true })
    local y = x * x * x + x
    y:backward()
    H.assert_values(x.grad, { 28 }, 0)
  end)
  it('is_leaf, grad_fn, requires_grad of results', function()
    local x = torch.ones(2, { requires_grad = true })
    local y = x * 2
    assert.is_true(x.is_leaf)
    assert.is_false(y.is_leaf)
    assert.is_true(y.requires_grad)
    assert.are.equal('MulBackward0', y.grad_fn.name)
    assert.is_nil(x.grad_fn)
    assert.is_false((torch.ones(2) * 2).requires_grad)
  end)
  it('retain_grad keeps a non-leaf gradient', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local y = x * 3
    y:retain_grad()
    local loss = (y * y):sum()
    loss:backward()
    H.assert_values(y.grad, { 6, 12 }, 0)
    assert.is_nil((x * 2).grad)
  end)
  it('backward with a gradient for a non-scalar output', function()
    local x = torch.tensor({ 1.0, 2.0, 3.0 }, { requires_grad = true })
    local y = x * x
    y:backward(torch.tensor({ 1, 0.5, 2 }))
    H.assert_values(x.grad, { 2, 2, 12 }, 0)
  end)
  it('detach cuts the graph and shares the data', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local d = (x * 2):detach()
    assert.is_false(d.requires_grad)
    local y = x * 2
    local yd = y:detach()
    yd[1] = 10
    assert.are.equal(10, y[1])
  end)
  it('backward across devices runs each device part on its own thread, with the same gradients', function()
    -- a graph spanning cpu:0 and cpu:1 (as DataParallel's): the gradients equal the same graph on
    -- cpu:0 alone, computed in float64 by hand for the first layer
    torch.manual_seed(21)
    local w = torch.randn(6, 5, { dtype = torch.float64, requires_grad = true })
    local x = torch.randn(8, 5, { dtype = torch.float64 })
    local function run(d2)
      w.grad = nil
      local a = x:narrow(1, 1, 4):matmul(w:t()):tanh():sum()
      local b = x:narrow(1, 5, 4):to(d2):matmul(w:to(d2):t()):tanh():sum():to('cpu:0')
      ;(a + b * 2):backward()
      return w.grad:clone()
    end
    local g1 = run('cpu:0')
    local g2 = run('cpu:1')
    assert.are.equal(0, (g1 - g2):abs():max():item())
    -- by hand: d/dw sum(tanh(x w^T)) = (1 - tanh^2)^T x, the second half counted twice
    local h = x:matmul(w:detach():t()):tanh()
    local s = (1 - h * h)
    s:narrow(1, 5, 4):mul_(2)
    assert(((s:t():matmul(x)) - g2):abs():max():item() < 1e-12)
    -- a Lua backward in such a graph runs on the caller's thread, and still gives the same result
    local Double = torch.autograd.Function:extend('DoubleAcross')
    function Double.forward(ctx, t) return t * 2 end
    function Double.backward(ctx, g) return g * 2 end
    w.grad = nil
    local y = Double.apply(x:to('cpu:1'):matmul(w:to('cpu:1'):t())):sum():to('cpu:0') + x:matmul(w:t()):sum()
    y:backward()
    local ones = torch.ones(8, 6, { dtype = torch.float64 })
    assert(((ones:t():matmul(x)) * 3 - w.grad):abs():max():item() < 1e-12)
  end)
  it('torch.autograd.grad returns gradients without touching .grad', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local w = torch.tensor({ 3.0, 4.0 }, { requires_grad = true })
    local y = (x * w):sum()
    local g = torch.autograd.grad(y, { x, w })
    H.assert_values(g[1], { 3, 4 }, 0)
    H.assert_values(g[2], { 1, 2 }, 0)
    assert.is_nil(x.grad)
    local z = torch.tensor({ 1.0 }, { requires_grad = true })
    H.raises(function() torch.autograd.grad((x * 2):sum(), { z }) end, 'not have been used')
    local r = torch.autograd.grad((x * 2):sum(), { x, z }, { allow_unused = true })
    H.assert_values(r[1], { 2, 2 }, 0)
    assert.is_false(r[2])
  end)
  it('torch.autograd.grad of a non-leaf', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local h = x * 3
    local g = torch.autograd.grad((h * h):sum(), { h })
    H.assert_values(g[1], { 6, 12 }, 0)
  end)
  it('torch.autograd.grad computes in each op only the gradients that lead to the inputs asked for', function()
    -- w's gradient here would be 0 * inf = nan, which anomaly mode reports from any backward that
    -- computes it; x's is finite
    local x = torch.tensor({ math.huge, 1.0 }, { requires_grad = true })
    local w = torch.tensor({ 2.0, 3.0 }, { requires_grad = true })
    local y = x * w
    local g = torch.tensor({ 0.0, 1.0 })
    do
      local _ <close> = torch.autograd.detect_anomaly()
      local gx = torch.autograd.grad(y, { x }, { grad_outputs = g, retain_graph = true })
      H.assert_values(gx[1], { 0, 3 }, 0)
      H.raises(function() torch.autograd.grad(y, { w }, { grad_outputs = g, retain_graph = true }) end, 'nan')
    end
    -- a convolution asked for its input's gradient computes no weight gradient (an inf in x: the
    -- weight's would be nan), and the same values as when both are asked for
    local xc = torch.randn(2, 3, 5, 5, { dtype = torch.float64 })
    xc[1][2][3][3] = math.huge
    xc.requires_grad = true
    local wc = torch.randn(4, 3, 3, 3, { dtype = torch.float64, requires_grad = true })
    local yc = torch.nn.functional.conv2d(xc, wc, nil, { padding = 1 }):relu()
    local gc = torch.randn(2, 4, 5, 5, { dtype = torch.float64 })
    gc[1][1][3][3] = 0 -- the inf's own output: its gradient must not meet the inf
    local both = torch.autograd.grad(yc, { xc, wc }, { grad_outputs = gc, retain_graph = true, allow_unused = true })
    assert.is_true(both[2]:isnan():any():item())
    do
      local _ <close> = torch.autograd.detect_anomaly()
      local only = torch.autograd.grad(yc, { xc }, { grad_outputs = gc, retain_graph = true })
      assert.is_true(torch.equal(only[1], both[1]))
    end
    -- backward afterwards, on the same graph, computes every gradient again
    y:backward(torch.tensor({ 1.0, 1.0 }))
    H.assert_values(w.grad, { math.huge, 1 }, 0)
    H.assert_values(x.grad, { 2, 3 }, 0)
  end)
  it('frees a long chain without running out of stack', function()
    local x = torch.ones(1, { requires_grad = true })
    local y = x
    for _ = 1, 100000 do y = y + 1 end
    y:backward()
    H.assert_values(x.grad, { 1 }, 0)
    y = nil
    collectgarbage()
  end)
end)

describe('grad mode', function()
  it('no_grad as a to-be-closed value and as a function', function()
    local x = torch.ones(2, { requires_grad = true })
    do
      local _ <close> = torch.no_grad()
      assert.is_false(torch.is_grad_enabled())
      assert.is_false((x * 2).requires_grad)
      do
        local _ <close> = torch.enable_grad()
        assert.is_true((x * 2).requires_grad)
      end
      assert.is_false(torch.is_grad_enabled())
    end
    assert.is_true(torch.is_grad_enabled())
    local y = torch.no_grad(function(a) return a * 2 end, x)
    assert.is_false(y.requires_grad)
    assert.is_true(torch.is_grad_enabled())
  end)
  it('restores the mode when the function raises', function()
    assert.is_false(pcall(torch.no_grad, function() error('boom') end))
    assert.is_true(torch.is_grad_enabled())
  end)
  it('set_grad_enabled switches and restores', function()
    do
      local _ <close> = torch.set_grad_enabled(false)
      assert.is_false(torch.is_grad_enabled())
    end
    assert.is_true(torch.is_grad_enabled())
  end)
  it('in-place updates of leaves under no_grad', function()
    local w = torch.ones(2, { requires_grad = true })
    torch.no_grad(function() w:add_(1); w:mul_(3) end)
    H.assert_values(w, { 6, 6 }, 0)
    assert.is_true(w.is_leaf)
  end)
end)

describe('in-place ops with autograd', function()
  it('record history on non-leaves', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local y = x * 2
    y:mul_(x)
    y:exp_()
    y:sum():backward()
    -- d/dx exp(2 x^2) = 4 x exp(2 x^2)
    H.assert_values(x.grad, { 4 * math.exp(2), 8 * math.exp(8) }, 1e-5)
  end)
  it('copy_ into a non-leaf and into a fresh tensor', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local buf = torch.zeros(2)
    buf:copy_(x * 3)
    assert.is_true(buf.requires_grad)
    buf:sum():backward()
    H.assert_values(x.grad, { 3, 3 }, 0)
  end)
  it('refuse a leaf that requires grad', function()
    local w = torch.ones(2, { requires_grad = true })
    H.raises(function() w:add_(1) end, 'add', 'leaf Variable that requires grad', 'in-place')
    H.raises(function() w:zero_() end, 'leaf Variable')
  end)
  it('detect a saved tensor changed before backward', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local y = x * 2
    local z = y:sin() -- saves its input
    y:add_(1)
    H.raises(function() z:sum():backward() end, 'modified by an inplace operation', 'SinBackward0')
  end)
end)

describe('autograd errors', function()
  it('backward of a non-scalar without a gradient', function()
    local x = torch.ones(2, { requires_grad = true })
    H.raises(function() (x * 2):backward() end, 'grad can be implicitly created only for scalar outputs')
  end)
  it('backward twice through a freed graph', function()
    local x = torch.ones(2, { requires_grad = true })
    local y = (x * x):sum()
    y:backward({ retain_graph = true } and nil)
    H.raises(function() y:backward() end, 'backward through the graph a second time', 'retain_graph')
    local z = (x * x):sum()
    z:backward(nil, { retain_graph = true })
    z:backward()
    H.assert_values(x.grad, { 6, 6 }, 0)
  end)
  it('backward of something without history', function()
    H.raises(function() torch.ones(1):backward() end, 'does not require grad')
  end)
  it('requires_grad on integers and on non-leaves', function()
    H.raises(function() torch.ones(2, { dtype = torch.int64 }):requires_grad_() end, 'floating point')
    local y = torch.ones(2, { requires_grad = true }) * 2
    H.raises(function() y.requires_grad = false end, 'leaf variables')
  end)
  it('a gradient of the wrong shape', function()
    local x = torch.ones(2, { requires_grad = true })
    H.raises(function() (x * 2):backward(torch.ones(3)) end, 'Mismatch in shape')
  end)
end)

describe('custom functions', function()
  local Cube = torch.autograd.Function:extend('Cube')
  function Cube.forward(ctx, x)
    ctx:save_for_backward(x)
    return x ^ 3
  end
  function Cube.backward(ctx, g)
    local x = ctx.saved_tensors[1]
    return g * 3 * x ^ 2
  end
  it('apply records a node whose backward is the Lua function', function()
    local x = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local y = Cube.apply(x)
    assert.are.equal('CubeBackward', y.grad_fn.name)
    y:sum():backward()
    H.assert_values(x.grad, { 3, 12 }, 0)
    assert.is_true(gradcheck(Cube.apply, { leaf({ 3 }) }))
  end)
  it('two inputs, a number argument, and composition', function()
    local Scale = torch.autograd.Function:extend('Scale')
    function Scale.forward(ctx, a, b, k)
      ctx.k = k
      ctx:save_for_backward(a, b)
      return a * b * k
    end
    function Scale.backward(ctx, g)
      local a, b = ctx.saved_tensors[1], ctx.saved_tensors[2]
      return g * b * ctx.k, g * a * ctx.k, nil
    end
    torch.manual_seed(14)
    assert.is_true(gradcheck(function(a, b) return Cube.apply(Scale.apply(a, b, 2.5)) end, { leaf({ 3 }), leaf({ 3 }) }))
  end)
  it('an error in backward becomes a Lua error naming the function', function()
    local Bad = torch.autograd.Function:extend('Bad')
    function Bad.forward(ctx, x) return x * 1 end
    function Bad.backward(ctx, g) error('no gradient here') end
    local x = torch.ones(2, { requires_grad = true })
    H.raises(function() Bad.apply(x):sum():backward() end, 'BadBackward', 'no gradient here')
  end)
  it('a backward that returns too few gradients is an error, also where autograd.grad asks for fewer', function()
    local Short = torch.autograd.Function:extend('Short')
    function Short.forward(ctx, a, b) return a * b end
    function Short.backward(ctx, g) return g end
    local a, b = torch.ones(2, { requires_grad = true }), torch.ones(2, { requires_grad = true })
    H.raises(function() Short.apply(a, b):sum():backward() end, 'Short', 'too few gradients')
    H.raises(function() torch.autograd.grad(Short.apply(a, b):sum(), { a }) end, 'Short', 'too few gradients')
    -- an input without a gradient needs none
    local g = torch.autograd.grad(Short.apply(a, torch.ones(2)):sum(), { a })
    H.assert_values(g[1], { 1, 1 }, 0)
  end)
end)
