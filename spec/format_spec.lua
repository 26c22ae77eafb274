-- Tests for lua/torch/format.lua (tensor printing, as PyTorch 1.13 prints).
-- Run from the repository root: busted spec/format_spec.lua
-- The expected strings in spec/data/format_reference.lua come from real PyTorch
-- (tools/gen_format_reference.py).
package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path

local format = require 'torch.format'

-- A stand-in for a tensor: only what torch.format may use.
local Named = {}
Named.__index = Named
Named.__tostring = function(self) return self.name end
local function named(name) return setmetatable({ name = name }, Named) end

local Mock = {}
Mock.__index = Mock
function Mock:dim() return #self._shape end
function Mock:size(d) return self._shape[d] end
function Mock:numel()
  local n = 1
  for _, s in ipairs(self._shape) do n = n * s end
  return n
end
function Mock:_flat()
  self._flat_calls = self._flat_calls + 1
  local copy = {}
  for i, v in ipairs(self._values) do copy[i] = v end
  return copy
end

-- make(shape, dtype name, flat values, {device=, requires_grad=, grad_fn=})
local function make(shape, dtype, values, o)
  o = o or {}
  local t = setmetatable({
    _shape = shape, _values = values, _flat_calls = 0,
    dtype = named(dtype or 'torch.float32'),
    device = named(o.device or 'cpu:0'),
    requires_grad = o.requires_grad or false,
  }, Mock)
  if o.grad_fn then t.grad_fn = { name = o.grad_fn } end
  return t
end

local function reset() format.set_printoptions { profile = 'default' } end

local reference = dofile('spec/data/format_reference.lua')

describe('torch.format against PyTorch 1.13', function()
  before_each(reset)
  after_each(reset)

  it('has reference cases', function()
    assert.is_true(#reference >= 100)
  end)

  for _, c in ipairs(reference) do
    it(c.name, function()
      if c.opts then format.set_printoptions(c.opts) end
      local x = make(c.shape, c.dtype, c.values,
        { device = c.device, requires_grad = c.requires_grad, grad_fn = c.grad_fn })
      assert.are.equal(c.expected, format.format(x))
    end)
  end
end)

describe('torch.format', function()
  before_each(reset)
  after_each(reset)

  it('prints the examples of the brief', function()
    assert.are.equal('tensor([1., 2., 3.])', format.format(make({ 3 }, 'torch.float32', { 1.0, 2.0, 3.0 })))
    assert.are.equal('tensor(3.)', format.format(make({}, 'torch.float32', { 3.0 })))
    assert.are.equal('tensor(True)', format.format(make({}, 'torch.bool', { true })))
    assert.are.equal('tensor([ True, False])', format.format(make({ 2 }, 'torch.bool', { true, false })))
    assert.are.equal('tensor([[1, 2],\n        [3, 4]])',
      format.format(make({ 2, 2 }, 'torch.int64', { 1, 2, 3, 4 })))
    assert.are.equal('tensor([1, 2], dtype=torch.int32)', format.format(make({ 2 }, 'torch.int32', { 1, 2 })))
  end)

  it('accepts a plain string dtype and device, and no device at all', function()
    local x = make({ 2 }, 'torch.float64', { 1.0, 2.0 })
    x.dtype = 'torch.float64'
    x.device = nil
    assert.are.equal('tensor([1., 2.], dtype=torch.float64)', format.format(x))
  end)

  it('tolerates integer-valued Lua numbers in float tensors and floats in int tensors', function()
    assert.are.equal('tensor([1., 2.])', format.format(make({ 2 }, 'torch.float32', { 1, 2 })))
    assert.are.equal('tensor([1, 2])', format.format(make({ 2 }, 'torch.int64', { 1.0, 2.0 })))
  end)

  it('calls _flat once even for summarised tensors', function()
    local vals = {}
    for i = 1, 5000 do vals[i] = i - 1 end
    local x = make({ 5000 }, 'torch.int64', vals)
    assert.are.equal('tensor([   0,    1,    2,  ..., 4997, 4998, 4999])', format.format(x))
    assert.are.equal(1, x._flat_calls)
  end)

  it('does not call _flat for empty tensors', function()
    local x = make({ 0, 4 }, 'torch.float32', {})
    assert.are.equal('tensor([], size=(0, 4))', format.format(x))
    assert.are.equal(0, x._flat_calls)
  end)

  it('prefers grad_fn over requires_grad, and ignores a grad_fn without a name', function()
    local x = make({ 1 }, 'torch.float32', { 1.0 }, { requires_grad = true, grad_fn = 'MulBackward0' })
    assert.are.equal('tensor([1.], grad_fn=<MulBackward0>)', format.format(x))
    x.grad_fn = {}
    assert.are.equal('tensor([1.], requires_grad=True)', format.format(x))
    x.grad_fn = { name = function() return 'torch::autograd::AccumulateGrad' end }
    assert.are.equal('tensor([1.], grad_fn=<AccumulateGrad>)', format.format(x))
  end)

  it('tolerates userdata-like objects whose fields raise', function()
    local x = make({ 1 }, 'torch.float32', { 1.0 })
    local proxy = setmetatable({}, {
      __index = function(_, k)
        if k == 'grad_fn' then error('no such field') end
        local v = x[k]
        if type(v) == 'function' then return function(_, ...) return v(x, ...) end end
        return v
      end,
    })
    assert.are.equal('tensor([1.])', format.format(proxy))
  end)
end)

describe('torch.format.set_printoptions', function()
  before_each(reset)
  after_each(reset)

  it('reports the options', function()
    assert.are.same({ precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 },
      format.get_printoptions())
    format.set_printoptions { profile = 'full' }
    assert.are.equal(math.huge, format.get_printoptions().threshold)
    format.set_printoptions { profile = 'short', linewidth = 100 }
    assert.are.same({ precision = 2, threshold = 1000, edgeitems = 2, linewidth = 100 },
      format.get_printoptions())
  end)

  it('keeps options not given, but resets sci_mode as PyTorch does', function()
    format.set_printoptions { precision = 2, sci_mode = true }
    assert.are.equal(true, format.get_printoptions().sci_mode)
    format.set_printoptions { linewidth = 60 }
    local o = format.get_printoptions()
    assert.are.equal(2, o.precision)
    assert.are.equal(60, o.linewidth)
    assert.is_nil(o.sci_mode)
    assert.are.equal('tensor([1.50])', format.format(make({ 1 }, 'torch.float32', { 1.5 })))
  end)

  it('restores the defaults with profile = default', function()
    format.set_printoptions { precision = 1, threshold = 2, edgeitems = 1, linewidth = 10, sci_mode = false }
    format.set_printoptions { profile = 'default' }
    assert.are.equal('tensor([1.1235])', format.format(make({ 1 }, 'torch.float32', { 1.12345 })))
  end)

  it('rejects bad options without changing anything', function()
    for _, bad in ipairs {
      { precision = -1 }, { precision = 1.5 }, { precision = 'x' }, { edgeitems = -2 },
      { linewidth = 'wide' }, { threshold = 'many' }, { sci_mode = 1 }, { profile = 'long' },
      { precison = 3 },
    } do
      assert.has_error(function() format.set_printoptions(bad) end)
    end
    assert.has_error(function() format.set_printoptions(5) end)
    assert.are.same({ precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 },
      format.get_printoptions())
  end)

  it('accepts integral floats for integer options', function()
    format.set_printoptions { precision = 2.0 }
    assert.are.equal('tensor([1.50])', format.format(make({ 1 }, 'torch.float32', { 1.5 })))
  end)
end)
