-- One class mechanism (torch.class) behind nn.Module, torch.data.Dataset, torch.optim's classes and
-- torch.autograd.Function.
local torch = require 'torch'

describe('torch.class', function()
  it('is the mechanism of modules, datasets, optimizers and autograd functions', function()
    local Net = torch.nn.Module:extend('Net')
    function Net:init() self.fc = torch.nn.Linear(2, 2) end
    local net = Net()
    assert.is_true(torch.isinstance(net, torch.nn.Module))
    assert.is_true(torch.isinstance(net, torch.class.Object))
    local D = torch.data.Dataset:extend('D')
    function D:__len() return 3 end
    local d = D()
    assert.is_true(torch.isinstance(d, torch.data.Dataset))
    assert.is_false(torch.isinstance(d, torch.nn.Module))
    local opt = torch.optim.SGD(net:parameters(), { lr = 0.1 })
    assert.is_true(torch.isinstance(opt, torch.optim.Optimizer))
    local Cube = torch.autograd.Function:extend('Cube')
    assert.is_true(torch.class.issubclass(Cube, torch.autograd.Function))
    assert.is_true(torch.class.issubclass(Cube, torch.class.Object))
    assert.is_true(torch.isinstance(torch.ones(1), torch.Tensor))
  end)

  it('inherits methods and metamethods through two levels, also ones defined after extend', function()
    local A = torch.class('A')
    function A:init(v) self.v = v end
    local B = A:extend('B')
    local C = B:extend('C')
    function A:__len() return self.v end -- defined after B and C were made
    function B:twice() return 2 * self.v end
    local c = C(5)
    assert.are.equal(5, #c)
    assert.are.equal(10, c:twice())
    assert.are.equal(B, C.super)
    assert.are.equal("class 'C'", tostring(C))
  end)

  it("takes Torch7's __init as the constructor, and Parent.__init is the parent's whichever name defined it", function()
    local nn = torch.nn
    local Net = nn.Module:extend('Net')
    function Net:__init(n) nn.Module.__init(self); self.fc = nn.Linear(n, 2) end
    function Net:forward(x) return self.fc(x) end
    local Sub = Net:extend('Sub')
    function Sub:__init() Net.__init(self, 3); self.k = 5 end
    local s = Sub()
    assert.are.equal(2, #s:parameters())
    assert.are.equal(5, s.k)
    assert.are.same({ 1, 2 }, s(torch.ones(1, 3)).shape)
    -- a Torch7-style child of a class whose constructor is written `init`, and the other way round
    local A = nn.Module:extend('A')
    function A:init() nn.Module.init(self); self.w = nn.Parameter(torch.ones(2)) end
    local B = A:extend('B')
    function B:__init() A.__init(self); self.v = 1 end
    local C = B:extend('C')
    function C:init(u) B.init(self); self.u = u end
    local c = C(7)
    assert.are.equal(1, #c:parameters())
    assert.are.same({ 1, 7 }, { c.v, c.u })
    local D = C:extend('D') -- no constructor of its own: C's, under both names
    assert.are.equal(9, D(9).u)
    assert.is_true(rawequal(D.__init, C.init))
  end)

  it('names a missing class name', function()
    assert.has_error(function() torch.class.Object:extend() end)
    assert.has_error(function() torch.autograd.Function:extend(3) end,
      'Function:extend: expected a class name (a non-empty string), got number')
  end)
end)
