-- nn.utils.stateless.functional_call: outputs and gradients against a module built with the
-- substituted tensors (and plain-Lua arithmetic), the originals back in place (also after an
-- error), buffers, positional and keyword arguments, tied weights as PyTorch 1.13, bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local SH = require 'spec.support.shell'
local nn = torch.nn
local functional_call = nn.utils.stateless.functional_call
local f64 = torch.float64
local BIN = os.getenv('LUTORCH_BIN') or 'build/lutorch'

local function leaf(t) return t:detach():clone():requires_grad_(true) end

describe('nn.utils.stateless.functional_call', function()
  setup(function() torch.manual_seed(3) end)

  it('runs forward with the given tensors; outputs and gradients equal a module built with them', function()
    local net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)):double()
    local originals = {}
    for k, p in net:named_parameters() do originals[k] = p:clone() end
    local subs = {
      ['1.weight'] = leaf(torch.randn(4, 3, { dtype = f64 })), ['1.bias'] = leaf(torch.randn(4, { dtype = f64 })),
      ['3.weight'] = leaf(torch.randn(2, 4, { dtype = f64 })), ['3.bias'] = leaf(torch.randn(2, { dtype = f64 })),
    }
    local x = torch.randn(5, 3, { dtype = f64 })
    local y = functional_call(net, subs, x)
    -- the reference: a copy of the module holding the substituted values
    local ref = net:_deepcopy()
    ref:load_state_dict(subs)
    local want = ref(x)
    assert.is_true((y - want):abs():max():item() < 1e-12)
    -- and in plain Lua for the first row: tanh(x W1^T + b1) W2^T + b2
    local xs, w1, b1 = x:totable(), subs['1.weight']:totable(), subs['1.bias']:totable()
    local w2, b2 = subs['3.weight']:totable(), subs['3.bias']:totable()
    local h = {}
    for j = 1, 4 do
      local s = b1[j]
      for k = 1, 3 do s = s + xs[1][k] * w1[j][k] end
      h[j] = math.tanh(s)
    end
    for o = 1, 2 do
      local s = b2[o]
      for j = 1, 4 do s = s + h[j] * w2[o][j] end
      H.close(y[1][o], s, 1e-12)
    end
    y:pow(2):sum():backward()
    want:pow(2):sum():backward()
    for k, t in pairs(subs) do
      local p = ref:get_parameter(k)
      assert.is_true((t.grad - p.grad):abs():max():item() < 1e-12, k)
    end
    for k, p in net:named_parameters() do
      assert.is_true(p:equal(originals[k]), k .. ' is back')
      assert.is_nil(p.grad, k .. ' got no gradient')
    end
    assert.are.equal(net[1].weight, net:get_parameter('1.weight'))
  end)

  it('replaces only the names given', function()
    local m = nn.Linear(2, 1, { dtype = f64 })
    local w = torch.tensor({ { 2.0, -1.0 } }, { dtype = f64 })
    local y = functional_call(m, { weight = w }, torch.tensor({ { 3.0, 4.0 } }, { dtype = f64 }))
    H.close(y:item(), 2 * 3 - 4 + m.bias:item(), 1e-12)
  end)

  it('substitutes buffers; in-place updates reach the given tensors, not the module\'s', function()
    local bn = nn.BatchNorm1d(2):double():eval()
    local rm, rv = torch.tensor({ 1.0, -2.0 }, { dtype = f64 }), torch.tensor({ 4.0, 0.25 }, { dtype = f64 })
    local x = torch.tensor({ { 3.0, 1.0 } }, { dtype = f64 })
    local y = functional_call(bn, { running_mean = rm, running_var = rv }, x)
    H.close(y[1][1], (3 - 1) / math.sqrt(4 + 1e-5), 1e-12)
    H.close(y[1][2], (1 + 2) / math.sqrt(0.25 + 1e-5), 1e-12)
    bn:train()
    local xb = torch.tensor({ { 1.0, 2.0 }, { 3.0, 6.0 } }, { dtype = f64 })
    functional_call(bn, { running_mean = rm }, xb)
    -- momentum 0.1: rm = 0.9 rm + 0.1 batch mean
    H.assert_values(rm, { 0.9 * 1 + 0.1 * 2, 0.9 * -2 + 0.1 * 4 }, 1e-12)
    H.assert_values(bn.running_mean, { 0, 0 }, 0)
    H.close(bn.running_var[1], 0.9 + 0.1 * 2, 1e-12, 'the module\'s own running_var is updated')
  end)

  it('a tensor the forward assigns to a replaced name goes back into the table (PyTorch 1.13)', function()
    local B = nn.Module:extend('B')
    function B:init() self:register_buffer('foo', torch.zeros(1)) end
    function B:forward(x) self.foo = self.foo + 1; return x end
    local b, d = B(), { foo = torch.zeros(1) }
    functional_call(b, d, torch.ones(1))
    assert.are.equal(0, b.foo:item())
    assert.are.equal(1, d.foo:item())
  end)

  it('takes a table of positional arguments and kwargs as the trailing options table', function()
    local M = nn.Module:extend('M')
    function M:init() self.w = nn.Parameter(torch.ones(1)) end
    function M:forward(a, b, o) return a * self.w + b * (o and o.scale or 1), 'second' end
    local m = M()
    local y, extra = functional_call(m, { w = torch.full({ 1 }, 2.0) }, { torch.full({ 1 }, 3.0), torch.ones(1) },
      { scale = 10 })
    assert.are.equal(16, y:item())
    assert.are.equal('second', extra)
    local bil = nn.Bilinear(1, 1, 1, { bias = false })
    y = functional_call(bil, { weight = torch.full({ 1, 1, 1 }, 2.0) }, { torch.full({ 1, 1 }, 3.0),
      torch.full({ 1, 1 }, 5.0) })
    assert.are.equal(30, y:item())
  end)

  it('puts the originals back when the forward raises, and passes the error on', function()
    local net = nn.Sequential(nn.Linear(2, 2))
    local w = net[1].weight
    H.raises(function() functional_call(net, { ['1.weight'] = torch.ones(3, 3) }, torch.ones(1, 2)) end)
    assert.are.equal(w, net[1].weight)
    assert.are.equal(w, net:get_parameter('1.weight'))
    local E = nn.Module:extend('E')
    function E:init() self.w = nn.Parameter(torch.ones(1)) end
    function E:forward() error('E broke') end
    local e = E()
    local ew = e.w
    H.raises(function() functional_call(e, { w = torch.zeros(1), extra = torch.zeros(1) }) end, 'E broke')
    assert.are.equal(ew, e.w)
    assert.is_nil(e.extra)
  end)

  it('ties as PyTorch 1.13: the name not given keeps the original; two values warn', function()
    local T = nn.Module:extend('T')
    function T:init()
      local p = nn.Parameter(torch.ones(1))
      self.a = p
      self.b = p
    end
    function T:forward(x) return x * self.a + self.b end
    local m = T()
    -- PyTorch 1.13: tensor([4.]) and, with both, tensor([8.]) and the warning
    assert.are.equal(4, functional_call(m, { a = torch.full({ 1 }, 3.0) }, torch.ones(1)):item())
    assert.are.equal(1, m.a:item())
    local out, err, rc = SH.run(SH.quote(BIN) .. ' -e ' .. SH.quote([[
      local T = torch.nn.Module:extend('T')
      function T:init() local p = torch.nn.Parameter(torch.ones(1)); self.a = p; self.b = p end
      function T:forward(x) return x * self.a + self.b end
      local fc = torch.nn.utils.stateless.functional_call
      print(fc(T(), { a = torch.full({ 1 }, 3.0), b = torch.full({ 1 }, 5.0) }, torch.ones(1)):item())
      fc(T(), { a = torch.ones(1), b = torch.zeros(1) }, torch.ones(1))
      fc(T(), { a = torch.ones(1) }, torch.ones(1))]]))
    assert.are.equal(0, rc, err)
    assert.are.equal('8.0\n', out)
    assert.are.equal('functional_call was passed multiple values for tied weights. This behavior is deprecated '
      .. 'and will be an error in future versions\n', err)
  end)

  it('raises clear errors for bad calls', function()
    local net = nn.Sequential(nn.Linear(1, 1))
    local x = torch.ones(1, 1)
    H.raises(function() functional_call(5, {}, x) end, 'functional_call: expected an nn.Module, got a number')
    H.raises(function() functional_call(net, x, x) end, 'functional_call: expected parameters_and_buffers to be a '
      .. 'table of dotted names to tensors, got a tensor')
    H.raises(function() functional_call(net, { ['1.weight'] = 2 }, x) end,
      "functional_call: the value for '1.weight' is a number, expected a tensor")
    H.raises(function() functional_call(net, { ['5.weight'] = torch.ones(1, 1) }, x) end,
      'functional_call: Sequential has no attribute `5` (in "5.weight")')
    H.raises(function() functional_call(net, { torch.ones(1) }, x) end,
      'functional_call: expected the names to be strings, got a number')
    H.raises(function() functional_call(net, {}, x, 'k') end, 'functional_call: expected kwargs to be a table, got a '
      .. 'string')
  end)
end)
