-- The seeded generator reproduces PyTorch 1.13's CPU values (spec/data/random_reference.lua was
-- written by tools/gen_random_reference.py from the real PyTorch).
local torch = require 'torch'
local H = require 'spec.helpers'
local cases = dofile('spec/data/random_reference.lua')

-- run one reference step and return the tensor
local function run(c)
  local dt = torch[c.dtype]
  if c.op == 'rand' then return torch.rand(c.n, { dtype = dt })
  elseif c.op == 'randn' then return torch.randn(c.n, { dtype = dt })
  elseif c.op == 'uniform' then return torch.empty(c.n, { dtype = dt }):uniform_(c.from, c.to)
  elseif c.op == 'normal' then return torch.empty(c.n, { dtype = dt }):normal_(c.mean, c.std)
  elseif c.op == 'randint' then return torch.randint(c.low, c.high, { c.n }, { dtype = dt })
  elseif c.op == 'randperm' then return torch.randperm(c.n, { dtype = dt })
  elseif c.op == 'bernoulli' then return torch.empty(c.n, { dtype = dt }):bernoulli_(c.p)
  end
  error('unknown op ' .. tostring(c.op))
end

local function check(c, label)
  local t = run(c)
  local got = t:totable()
  local offset = (c.op == 'randperm' and c.dtype ~= 'float32' and c.dtype ~= 'float64'
    and c.dtype ~= 'float16' and c.dtype ~= 'bfloat16') and 1 or 0 -- lutorch's permutations are 1-based
  assert(#got == #c.values, label .. ': length')
  for i, want in ipairs(c.values) do
    local g = got[i]
    if type(g) == 'boolean' then g = g and 1 or 0 end
    if type(want) == 'boolean' then want = want and 1 or 0 end
    if g ~= want + offset and not (g ~= g and want ~= want) then
      error(string.format('%s: element %d is %.17g, PyTorch gives %.17g', label, i, g, want + offset))
    end
  end
end

describe('the CPU generator', function()
  it('reproduces PyTorch for every reference case', function()
    local n = 0
    for i, c in ipairs(cases) do
      local label = string.format('case %d (%s %s n=%s seed=%s)', i, c.op, tostring(c.dtype), tostring(c.n), tostring(c.seed))
      torch.manual_seed(c.seed)
      if c.op == 'sequence' then
        for j, step in ipairs(c.steps) do check(step, label .. ' step ' .. j) end
        n = n + 1
      elseif c.op == 'randperm' and ((c.dtype == 'uint8' and c.n > 255) or (c.dtype == 'int8' and c.n > 127)) then
        H.raises(function() run(c) end, 'randperm', 'do not fit')
      elseif c.op ~= 'get_rng_state' then
        check(c, label)
        n = n + 1
      end
    end
    assert.is_true(n > 400)
  end)

  it('state round-trips through get_rng_state and set_rng_state', function()
    torch.manual_seed(123)
    local s = torch.get_rng_state()
    local a = torch.rand(20)
    local b = torch.randn(5)
    torch.set_rng_state(s)
    assert.is_true(torch.rand(20):equal(a))
    assert.is_true(torch.randn(5):equal(b))
    assert.are.equal(123, torch.initial_seed())
    H.raises(function() torch.set_rng_state(torch.zeros(3)) end, 'set_rng_state')
  end)

  it('fills non-contiguous tensors and checks arguments', function()
    torch.manual_seed(5)
    local want = torch.rand(6):totable()
    torch.manual_seed(5)
    local x = torch.zeros(3, 2):t()
    x:uniform_()
    H.assert_values(x:contiguous(), want)
    H.raises(function() return torch.randint(5, 5, { 3 }) end, 'random_', 'from')
    H.raises(function() torch.zeros(3, { dtype = torch.int64 }):uniform_() end, 'uniform_')
    H.raises(function() torch.zeros(3):normal_(0, -1) end, 'normal', 'std')
    H.raises(function() torch.zeros(3):bernoulli_(1.5) end, 'bernoulli_')
    H.raises(function() return torch.randperm(-1) end, 'randperm')
  end)

  it('randint(high, sizes) and randperm give 1-based permutations', function()
    local r = torch.randint(3, { 100 })
    assert.is_true(r:ge(0):all():item() and r:lt(3):all():item())
    local p = torch.randperm(10):totable()
    table.sort(p)
    for i = 1, 10 do assert.are.equal(i, p[i]) end
  end)
end)
