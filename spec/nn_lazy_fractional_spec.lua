-- nn.LazyLinear and nn.FractionalMaxPool2d / F.fractional_max_pool2d: the latter against PyTorch's
-- outputs, indices and gradients for given random samples (spec/data/nnutils_reference.lua, made
-- by tools/gen_nnutils_reference.py), float64 and float32, and a plain-Lua window maximum.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional
local ref = dofile('spec/data/nnutils_reference.lua')

describe('nn.LazyLinear', function()
  it('takes in_features from the first input, initialises as Linear and becomes a Linear', function()
    -- the same draws as a Linear(5, 3) made after the same seed
    local x = torch.randn(2, 5, { dtype = torch.float64 })
    torch.manual_seed(11)
    local lin = nn.Linear(5, 3, { dtype = torch.float64 })
    torch.manual_seed(11)
    local m = nn.LazyLinear(3, { dtype = torch.float64 })
    assert.equal('LazyLinear(in_features=0, out_features=3, bias=True)', tostring(m))
    local w = m.weight
    local opt = torch.optim.SGD(m:parameters(), { lr = 0.1 })
    local y = m(x)
    assert.is_true(m.weight:equal(lin.weight) and m.bias:equal(lin.bias))
    assert.equal('Linear(in_features=5, out_features=3, bias=True)', tostring(m))
    assert.is_true(rawequal(w, m.weight))
    assert.same({ 3, 5 }, { m.weight:size(1), m.weight:size(2) })
    -- kaiming_uniform(a = sqrt 5) and the bias: U(-1/sqrt(5), 1/sqrt(5))
    assert.is_true(m.weight:abs():max():item() <= 1 / math.sqrt(5))
    assert.is_true(m.bias:abs():max():item() <= 1 / math.sqrt(5))
    H.assert_values(y, (torch.matmul(x, m.weight:t()) + m.bias):totable(), 1e-12)
    y:sum():backward()
    local before = m.weight:clone()
    opt:step()
    assert.is_false(m.weight:equal(before))
    local m2 = nn.LazyLinear(3, { dtype = torch.float64 })
    m2:load_state_dict(m:state_dict())
    assert.is_true(m2.weight:equal(m.weight))
    H.raises(function() nn.LazyLinear(-1) end, 'LazyLinear: out_features must be a non-negative integer')
  end)
end)

describe('nn.FractionalMaxPool2d', function()
  local T = H.from_ref

  it("matches PyTorch's intervals, indices and gradients for given samples", function()
    for i, c in ipairs(ref.fractional) do
      local dtype = c.dtype == 'float32' and torch.float32 or torch.float64
      local x = T(c.x, dtype):requires_grad_()
      local y, idx = F.fractional_max_pool2d(x, c.k, { output_size = c.output_size, output_ratio = c.output_ratio,
        return_indices = true, _random_samples = T(c.samples, dtype) })
      H.assert_values(idx, c.indices.data, 0, 'indices ' .. i)
      H.assert_values(y, c.y.data, 0, 'y ' .. i)
      ;(y * T(c.gy, dtype)):sum():backward()
      H.assert_values(x.grad, c.grad.data, 1e-6, 'grad ' .. i)
      -- each output is the maximum of its window, found here by the indices' plain-Lua reading
      local flat = H.flatten(x:detach():reshape(-1, x:size(-2) * x:size(-1)):totable())
      local planes, per = x:numel() // (x:size(-2) * x:size(-1)), x:size(-2) * x:size(-1)
      local yi, ii = H.flatten(y:detach():totable()), H.flatten(idx:totable())
      local outs = #yi // planes
      for p = 0, planes - 1 do
        for o = 1, outs do assert.equal(yi[p * outs + o], flat[p * per + ii[p * outs + o]]) end
      end
    end
  end)

  it('draws samples per call, takes output_ratio and gives clear errors', function()
    local p = nn.FractionalMaxPool2d(3, { output_ratio = 0.5 })
    local out = p(torch.randn(2, 10, 9))
    assert.same({ 2, 5, 4 }, { out:size(1), out:size(2), out:size(3) })
    local q = nn.FractionalMaxPool2d({ 2, 2 }, { output_size = { 3, 3 }, return_indices = true })
    local y, i = q(torch.randn(1, 2, 6, 6))
    assert.same({ 1, 2, 3, 3 }, { i:size(1), i:size(2), i:size(3), i:size(4) })
    assert.equal(y:numel(), i:numel())
    H.raises(function() nn.FractionalMaxPool2d(2) end, 'requires specifying either an output size, or a pooling ratio')
    H.raises(function() nn.FractionalMaxPool2d(2, { output_size = 3, output_ratio = 0.5 }) end, 'only one of')
    H.raises(function() nn.FractionalMaxPool2d(2, { output_ratio = 1.5 }) end, 'output_ratio must be between 0 and 1')
    H.raises(function() F.fractional_max_pool2d(torch.randn(1, 1, 4, 4), 3, { output_size = 3 }) end,
      'pool height 3 too large relative to input height 4')
    H.raises(function() F.fractional_max_pool2d(torch.randn(4, 4), 2, { output_size = 2 }) end, 'expected a 3-D')
    H.raises(function()
      F.fractional_max_pool2d(torch.randn(1, 2, 6, 6), 2, { output_size = 3, _random_samples = torch.rand(1, 1, 2) })
    end, '_random_samples must be a tensor of shape (1, 2, 2)')
  end)
end)
