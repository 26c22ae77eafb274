-- torch.Generator: a CPU generator of its own, seeded as torch.manual_seed, and the generator
-- option of the random functions and of torch.data.
local torch = require 'torch'
local data = require 'torch.data'

local cases = dofile('spec/data/random_reference.lua')

local function gen(s) return torch.Generator():manual_seed(s) end

-- the draws of f(opts) with the global generator after manual_seed(s) and with a generator seeded s
local function both_ways(s, f)
  torch.manual_seed(s)
  local a = f({})
  return a, f({ generator = gen(s) })
end

local draws = {
  rand = function(o) return torch.rand(5, 3, o) end,
  randn = function(o) return torch.randn(7, { dtype = torch.float64, generator = o.generator }) end,
  randint = function(o) return torch.randint(-5, 50, { 20 }, o) end,
  randperm = function(o) return torch.randperm(30, o) end,
  rand_like = function(o) return torch.rand_like(torch.zeros(4), o) end,
  randn_like = function(o) return torch.randn_like(torch.zeros(4), o) end,
  multinomial = function(o)
    return torch.multinomial(torch.tensor({ 0.1, 0.2, 0.3, 0.4 }), 3, false, o)
  end,
  multinomial_replacement = function(o)
    return torch.multinomial(torch.tensor({ 0.1, 0.2, 0.3, 0.4 }), 9, true, o)
  end,
  bernoulli = function(o) return torch.bernoulli(torch.full({ 9 }, 0.3), o) end,
  bernoulli_p = function(o) return torch.bernoulli(torch.zeros(9), 0.3, o) end,
  uniform_ = function(o) return torch.zeros(6):uniform_(-2, 3, o) end,
  normal_ = function(o) return torch.zeros(6, { dtype = torch.float64 }):normal_(1, 2, o) end,
  random_ = function(o) return torch.zeros(6, { dtype = torch.int64 }):random_(3, 90, o) end,
  bernoulli_ = function(o) return torch.zeros(8):bernoulli_(0.4, o) end,
}

describe('torch.Generator', function()
  it('is a CPU generator with the default seed, printed as PyTorch', function()
    local g = torch.Generator()
    assert.are.equal(67280421310721, g:initial_seed())
    assert.are.equal('cpu', tostring(g.device))
    assert.truthy(tostring(g):find('^<torch._C.Generator object'))
    assert.are.equal(67280421310721, torch.Generator('cpu'):initial_seed())
    assert.are.equal(67280421310721, torch.Generator({ device = 'cpu' }):initial_seed())
    assert.are.equal(67280421310721, torch.Generator(torch.device('cpu')):initial_seed())
  end)

  it('manual_seed returns the generator and sets initial_seed', function()
    local g = torch.Generator()
    assert.are.equal(g, g:manual_seed(42))
    assert.are.equal(42, g:initial_seed())
  end)

  for name, f in pairs(draws) do
    it('draws with {generator = g} what the global generator draws after manual_seed: ' .. name, function()
      for _, s in ipairs({ 0, 7, 123456789 }) do
        local a, b = both_ways(s, f)
        assert.is_true(torch.equal(a, b), name .. ' seed ' .. s)
      end
    end)
  end

  it('reproduces PyTorch: torch.Generator().manual_seed(0) draws its rand values', function()
    for _, c in ipairs(cases) do
      if c.op == 'rand' and c.seed == 0 and c.dtype == 'float32' and c.n == 7 then
        local got = torch.rand(c.n, { generator = gen(0) }):totable()
        for i = 1, c.n do assert.are.equal(c.values[i], got[i]) end
        return
      end
    end
    error('no reference case')
  end)

  it('generators are independent of each other and of the global one', function()
    local fresh_a = torch.rand(6, { generator = gen(1) })
    local fresh_b = torch.rand(6, { generator = gen(2) })
    torch.manual_seed(3)
    local fresh_global = torch.rand(6)
    local ga, gb = gen(1), gen(2)
    torch.manual_seed(3)
    local a1 = torch.rand(3, { generator = ga })
    local b = torch.rand(6, { generator = gb })
    local glob = torch.rand(6)
    local a2 = torch.rand(3, { generator = ga })
    assert.is_true(torch.equal(fresh_a, torch.cat({ a1, a2 })))
    assert.is_true(torch.equal(fresh_b, b))
    assert.is_true(torch.equal(fresh_global, glob))
  end)

  it('get_state / set_state repeat the draws', function()
    local g = gen(9)
    torch.rand(5, { generator = g })
    local st = g:get_state()
    assert.are.equal(torch.uint8, st.dtype)
    assert.are.equal(torch.get_rng_state():numel(), st:numel())
    local a = torch.randn(10, { generator = g })
    assert.are.equal(g, g:set_state(st))
    assert.is_true(torch.equal(a, torch.randn(10, { generator = g })))
    -- the same format as torch.get_rng_state
    local h = torch.Generator()
    h:set_state(st)
    assert.is_true(torch.equal(a, torch.randn(10, { generator = h })))
    torch.set_rng_state(st)
    assert.is_true(torch.equal(a, torch.randn(10)))
  end)

  it('seed() sets and returns a new non-deterministic seed', function()
    local g = gen(5)
    local before = g:get_state()
    local s = g:seed()
    assert.are.equal('integer', math.type(s))
    assert.is_true(s >= 0)
    assert.are.equal(s, g:initial_seed())
    assert.is_false(torch.equal(before, g:get_state()))
    assert.is_true(torch.equal(torch.rand(4, { generator = g }), torch.rand(4, { generator = gen(s) })))
  end)

  it('torch.default_generator is the global generator', function()
    local d = torch.default_generator
    assert.are.equal(d, d:manual_seed(11))
    assert.are.equal(11, torch.initial_seed())
    local a = torch.rand(5)
    torch.manual_seed(11)
    assert.is_true(torch.equal(a, torch.rand(5)))
    torch.manual_seed(11)
    assert.is_true(torch.equal(a, torch.rand(5, { generator = d })))
    assert.is_true(torch.equal(torch.get_rng_state(), d:get_state()))
    collectgarbage()
    collectgarbage()
    torch.manual_seed(11)
    assert.is_true(torch.equal(a, torch.rand(5, { generator = torch.default_generator })))
  end)

  it('errors: a non-generator as generator, a CUDA generator, a bad state', function()
    local function err(f, pat)
      local ok, msg = pcall(f)
      assert.is_false(ok)
      assert.truthy(tostring(msg):find(pat), tostring(msg))
    end
    err(function() return torch.rand(3, { generator = 5 }) end, 'rand: generator should be a torch.Generator')
    err(function() return torch.randperm(3, { generator = {} }) end, 'randperm: generator should be a torch.Generator')
    err(function() return torch.randint(0, 5, { 3 }, { generator = 'g' }) end, 'randint: generator should be')
    err(function() return torch.zeros(3):normal_(0, 1, { generator = 1 }) end, 'normal_: generator should be')
    err(function() return torch.zeros(3):uniform_(0, 1, { gen = gen(1) }) end, "uniform_: unknown option 'gen'")
    err(function() return torch.multinomial(torch.ones(3), 2, true, { generator = 1 }) end,
      'multinomial: generator should be')
    err(function() return torch.bernoulli(torch.ones(3), { generator = true }) end, 'bernoulli: generator should be')
    err(function() return torch.zeros(3, { generator = gen(1) }) end, "zeros: unknown option 'generator'")
    err(function() return torch.Generator({ device = 'cuda' }) end, 'only CPU generators are supported')
    err(function() return torch.Generator('cuda:0') end, 'only CPU generators are supported')
    err(function() return gen(1):set_state(torch.zeros(3)) end, 'set_state: expected a contiguous uint8')
    err(function() return gen(1):set_state(torch.zeros(3, { dtype = torch.uint8 })) end, 'size')
    err(function() return gen(1):set_state('x') end, 'set_state: expected a uint8 tensor')
    err(function() return data.RandomSampler(data.TensorDataset(torch.zeros(3)), { generator = 3 }) end,
      'RandomSampler: generator should be a torch.Generator')
  end)
end)

describe('torch.data with a torch.Generator', function()
  local ds = data.TensorDataset(torch.arange(1, 21, { dtype = torch.int64 }))
  local function order(sampler)
    local t = {}
    for i in sampler:iter() do t[#t + 1] = i end
    return t
  end

  it('random_split: the split of the same seed', function()
    local a = data.random_split(ds, { 5, 15 }, { generator = gen(4) })
    local b = data.random_split(ds, { 5, 15 }, { seed = 4 })
    assert.are.same(a[1].indices, b[1].indices)
    assert.are.same(a[2].indices, b[2].indices)
  end)

  it('RandomSampler, SubsetRandomSampler, WeightedRandomSampler: the order of the same seed', function()
    assert.are.same(order(data.RandomSampler(ds, { seed = 6 })), order(data.RandomSampler(ds, { generator = gen(6) })))
    assert.are.same(order(data.RandomSampler(ds, { seed = 6, replacement = true })),
      order(data.RandomSampler(ds, { generator = gen(6), replacement = true })))
    local idx = { 3, 5, 8, 13, 21 }
    assert.are.same(order(data.SubsetRandomSampler(idx, { seed = 2 })),
      order(data.SubsetRandomSampler(idx, { generator = gen(2) })))
    local w = torch.tensor({ 1.0, 2.0, 3.0, 4.0 })
    assert.are.same(order(data.WeightedRandomSampler(w, 10, { seed = 8 })),
      order(data.WeightedRandomSampler(w, 10, { generator = gen(8) })))
  end)

  it('DataLoader{generator = g} shuffles as RandomSampler with that generator, as PyTorch', function()
    local function batches(loader)
      local t = {}
      for x in loader:iter() do for _, v in ipairs(x:totable()) do t[#t + 1] = v end end
      return t
    end
    local a = batches(data.DataLoader(ds, { batch_size = 4, shuffle = true, generator = gen(3) }))
    assert.are.same(order(data.RandomSampler(ds, { generator = gen(3) })), a)
    assert.are.same(a, batches(data.DataLoader(ds, { batch_size = 4, shuffle = true, generator = gen(3) })))
    local ok, msg = pcall(data.DataLoader, ds, { shuffle = true, generator = 'x' })
    assert.is_false(ok)
    assert.truthy(msg:find('DataLoader: generator should be a torch.Generator'))
  end)
end)
