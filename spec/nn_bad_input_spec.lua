-- Bad input to models, losses and optimizers: each a Lua error naming the function and the problem.
local torch = require 'torch'
local nn = torch.nn

local function err(fn, ...)
  local ok, e = pcall(fn, ...)
  assert.is_false(ok, 'expected an error')
  return tostring(e)
end

describe('bad input to nn and optim', function()
  it('a layer given an input of the wrong shape, dtype or device', function()
    local l = nn.Linear(3, 2)
    assert.matches('linear: input of shape torch.Size%(%[4, 5%]%) cannot be multiplied', err(l, torch.ones(4, 5)))
    assert.matches('linear: input %(torch.float64%), weight %(torch.float32%)', err(l, torch.ones(4, 3, { dtype = torch.float64 })))
    assert.matches('same device', err(l, torch.ones(4, 3, { device = 'cpu:1' })))
    local c = nn.Conv2d(3, 4, 3)
    assert.matches('conv2d', err(c, torch.ones(1, 2, 5, 5)))
    local bn = nn.BatchNorm2d(3)
    assert.matches('batch_norm', err(bn, torch.ones(2, 4, 3, 3)))
  end)

  it('a loss given a class target outside 1..C, or of the wrong shape', function()
    local ce = nn.CrossEntropyLoss()
    assert.matches('cross_entropy: target 4 is out of bounds for 3 classes', err(ce, torch.randn(2, 3), torch.tensor({ 1, 4 })))
    assert.matches('cross_entropy: target 0 is out of bounds', err(ce, torch.randn(2, 3), torch.tensor({ 0, 1 })))
    assert.matches('batch_size', err(ce, torch.randn(2, 3), torch.tensor({ 1, 2, 3 })))
    assert.matches('mse_loss: input of shape', err(nn.MSELoss(), torch.ones(2), torch.ones(3)))
  end)

  it('an optimizer given something other than parameters', function()
    assert.matches('SGD: optimizer can only optimize Tensors, but one of the params is number',
      err(torch.optim.SGD, { 1, 2 }, { lr = 0.1 }))
    assert.matches('Adam: params argument given to the optimizer should be an iterable of Tensors or dicts, but got Linear',
      err(torch.optim.Adam, nn.Linear(2, 2)))
    assert.matches('SGD: optimizer got an empty parameter list', err(torch.optim.SGD, {}, { lr = 0.1 }))
    -- the error points at the caller's line, not into the library
    local e = err(torch.optim.SGD, {}, { lr = 0.1 })
    assert.is_nil(e:find('torch/class.lua', 1, true))
  end)

  it('backward on a non-scalar without a gradient, and twice through a freed graph', function()
    local x = torch.randn(3, { requires_grad = true })
    assert.matches('grad can be implicitly created only for scalar outputs', err(function() x:exp():backward() end))
    local y = (x * x):sum()
    y:backward()
    assert.matches('Trying to backward through the graph a second time', err(function() y:backward() end))
  end)
  it('a misspelt option of a functional op is refused, naming the op and its options', function()
    local F = nn.functional
    local x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    local e = err(F.conv2d, x, w, nil, { paddding = 1 })
    assert.truthy(e:find("conv2d: unknown option 'paddding'", 1, true), e)
    assert.truthy(e:find('stride, padding, dilation, groups', 1, true), e)
    e = err(F.cross_entropy, torch.randn(4, 3), torch.tensor({ 1, 2, 3, 1 }), { label_smoothin = 0.1 })
    assert.truthy(e:find("cross_entropy: unknown option 'label_smoothin'", 1, true), e)
    e = err(F.max_pool2d, x, 2, { strid = 2 })
    assert.truthy(e:find("max_pool2d: unknown option 'strid'", 1, true), e)
    e = err(F.relu, x, { in_place = true })
    assert.truthy(e:find("relu: unknown option 'in_place'", 1, true), e)
    e = err(F.mse_loss, x, x, 'sum')
    assert.truthy(e:find('mse_loss: expected an options table', 1, true), e)
    -- spelt right, they work
    assert.are.same({ 1, 3, 5, 5 }, F.conv2d(x, w, nil, { padding = 1 }):size())
  end)
end)
