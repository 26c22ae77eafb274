-- nn.utils.skip_init: the module is made with the right shapes, dtypes and parameters, its tensors
-- are not the ones its constructor wrote, the random generator does not move, bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local skip_init = nn.utils.skip_init
local f64 = torch.float64

describe('nn.utils.skip_init', function()
  it('leaves the random generator where it was', function()
    torch.manual_seed(11)
    local before = torch.get_rng_state()
    local m = skip_init(nn.Linear, 5, 3)
    assert.is_true(torch.get_rng_state():equal(before))
    local next_draw = torch.rand(4)
    torch.manual_seed(11)
    assert.is_true(torch.rand(4):equal(next_draw))
    skip_init(nn.Conv2d, 2, 4, 3, { bias = false })
    skip_init(nn.Embedding, 10, 3)
    torch.manual_seed(11)
    local s = torch.get_rng_state()
    skip_init(nn.Conv2d, 2, 4, 3, { bias = false })
    assert.is_true(torch.get_rng_state():equal(s))
    assert.are.equal('Linear', m:_get_name())
  end)

  it('makes the parameters with their shapes, dtype, device and requires_grad', function()
    -- the specs run with two CPU devices (LUTORCH_CPU_DEVICES=2)
    local dev = torch.cpu.device_count() > 1 and 'cpu:1' or 'cpu'
    local o = { dtype = f64, device = dev }
    local m = skip_init(nn.Linear, 5, 3, o)
    assert.are.equal('torch.Size([3, 5])', tostring(m.weight.shape))
    assert.are.equal('torch.Size([3])', tostring(m.bias.shape))
    assert.are.equal(f64, m.weight.dtype)
    assert.are.equal(torch.device(dev), m.weight.device)
    assert.are.equal(torch.device(dev), m.bias.device)
    assert.is_true(m.weight.requires_grad and nn.parameter.is_parameter(m.weight))
    assert.are.same({ dtype = f64, device = dev }, o, 'the options are not changed')
    assert.are.equal(nn.Linear(1, 1).weight.device, skip_init(nn.Linear, 1, 1).weight.device)
    torch.no_grad(function() m.weight:fill_(1); m.bias:fill_(0.5) end)
    H.assert_values(m(torch.ones(2, 5, { dtype = f64, device = dev })), { { 5.5, 5.5, 5.5 }, { 5.5, 5.5, 5.5 } }, 0)
  end)

  it('replaces what the constructor wrote by uninitialised tensors', function()
    local C = nn.Module:extend('C')
    local made
    function C:init(n)
      self.w = nn.Parameter(torch.empty(n, { dtype = f64 }))
      torch.no_grad(function() self.w:fill_(7) end)
      self:register_buffer('b', torch.empty(n, { dtype = f64 }))
      self.b:fill_(7)
      made = { self.w:data_ptr(), self.b:data_ptr() }
    end
    local m = skip_init(C, 37)
    assert.are.equal(37, m.w:numel())
    assert.are_not.same(made, { m.w:data_ptr(), m.b:data_ptr() })
    assert.is_false(m.w:eq(7):all():item() and m.b:eq(7):all():item())
  end)

  it('raises clear errors for bad calls and passes the constructor\'s on', function()
    H.raises(function() skip_init(5) end, 'skip_init: expected a Module class, got number')
    H.raises(function() skip_init(nn.Linear(1, 1)) end, 'skip_init: expected a Module class, got an instance of Linear')
    H.raises(function() skip_init(torch.class.Object) end, 'skip_init: expected a Module class, got table')
    local s = torch.get_rng_state()
    H.raises(function() skip_init(nn.Linear, 'x') end, 'Linear: in_features and out_features must be non-negative')
    assert.is_true(torch.get_rng_state():equal(s))
  end)
end)
