-- Every function of torch and every tensor method, called with wrong arguments, raises a Lua
-- error (a string naming the problem) and never crashes the interpreter.
local torch = require 'torch'
local H = require 'spec.helpers'

local skip = {
  -- functions that legitimately accept anything or take no arguments
  manual_seed = false, get_rng_state = true, initial_seed = true, get_num_threads = true,
  get_default_dtype = true, get_printoptions = true, is_tensor = true, typename = true,
  device = false, set_printoptions = false, new = true,
}

local function bad_argument_lists(x)
  return {
    {}, { 'not a tensor' }, { x, 'bad' }, { x, {} }, { x, x, x, x, x }, { x, 1e300 }, { x, -99 },
    { x, 0 }, { x, true }, { x, { 1, 'a' } }, { x, x:t() }, { {} }, { x, 1, 2, 3, 4, 5, 6 },
    { torch.zeros(0) }, { torch.tensor(1.5) }, { x:int(), x }, { x, 99 },
  }
end

describe('bad input', function()
  it('never crashes any torch function or tensor method, and errors are strings', function()
    local x = torch.rand(3, 4)
    local called, errors = 0, 0
    local names = {}
    for k, v in pairs(torch) do if type(v) == 'function' and not skip[k] then names[#names + 1] = { 'torch.' .. k, v } end end
    for k, v in pairs(torch.Tensor) do if type(v) == 'function' and not skip[k] then names[#names + 1] = { 'Tensor.' .. k, v } end end
    table.sort(names, function(a, b) return a[1] < b[1] end)
    for _, entry in ipairs(names) do
      -- a fresh tensor for each function: the in-place ops change it (resize_ and t_ its shape)
      x = torch.rand(3, 4)
      for _, args in ipairs(bad_argument_lists(x)) do
        local ok, err = pcall(entry[2], table.unpack(args))
        -- torch.inference_mode() enters the mode until its value is closed, which a sweep does not do
        if entry[2] == torch.inference_mode and ok then getmetatable(err).__close(err) end
        called = called + 1
        if not ok then
          errors = errors + 1
          assert(type(err) == 'string' and #err > 0, entry[1] .. ': the error is not a message: ' .. tostring(err))
        end
      end
    end
    assert.is_true(called > 1000, 'called ' .. called)
    assert.is_true(errors > called / 2, ('only %d of %d bad calls raised'):format(errors, called))
  end)

  it('errors name the operation', function()
    local x = torch.rand(3, 4)
    local cases = {
      { 'view', function() return x:view(5, 5) end }, { 'permute', function() return x:permute(1, 1) end },
      { 'transpose', function() return x:transpose(1, 3) end }, { 'narrow', function() return x:narrow(1, 3, 5) end },
      { 'select', function() return x:select(1, 9) end }, { 'index_select', function() return x:index_select(1, torch.tensor({ 9 })) end },
      { 'gather', function() return x:gather(1, torch.tensor({ { 9 } })) end }, { 'expand', function() return x:expand(5, 5) end },
      { 'sum', function() return x:sum(3) end }, { 'mean', function() return torch.ones(2, { dtype = torch.int64 }):mean() end },
      { 'max', function() return torch.zeros(0):max(1) end }, { 'cat', function() return torch.cat({ x, torch.rand(2, 5) }) end },
      { 'chunk', function() return x:chunk(0) end }, { 'masked_fill', function() return x:masked_fill(torch.ones(3), 1) end },
      { 'squeeze', function() return x:squeeze(5) end }, { 'unsqueeze', function() return x:unsqueeze(9) end },
      { 'flatten', function() return x:flatten(2, 1) end }, { 'split', function() return x:split({ 1, 1 }) end },
      { 'std', function() return torch.ones(3, { dtype = torch.int32 }):std() end },
      { 'scatter', function() return x:scatter(1, torch.tensor({ { 9 } }), 1.0) end },
      { 'reshape', function() return x:reshape(7) end }, { 'stack', function() return torch.stack({ x, x:t() }) end },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[2])
      assert(not ok, c[1] .. ' did not raise')
      assert(tostring(err):find(c[1], 1, true), ('%s: the error %q does not name the op'):format(c[1], tostring(err)))
    end
  end)
  it('refuses unknown option keys instead of ignoring them', function()
    local a = torch.ones(3)
    H.raises(function() torch.add(a, a, { out = torch.empty(3) }) end, "add: unknown option 'out'", 'alpha')
    H.raises(function() a:sub(a, { alpah = 2 }) end, "unknown option 'alpah'")
    local function zeros_typo() return torch.zeros(2, { dtpye = torch.float64 }) end
    H.raises(zeros_typo, "unknown option 'dtpye'", 'dtype, device, requires_grad')
    H.raises(function() torch.ones(2, 2, { devcie = 'cpu' }) end, "unknown option 'devcie'")
    H.raises(function() torch.ones(2, 3):sum(2, { keepdm = true }) end, "sum: unknown option 'keepdm'", 'dtype')
    H.raises(function() torch.ones(2, 3):std(2, { unbaised = false }) end, "std: unknown option 'unbaised'")
    -- the known ones still work
    assert.are.equal(torch.float64, torch.zeros(2, { dtype = torch.float64, requires_grad = true }).dtype)
    assert.are.equal(torch.float64, torch.ones(2, 3):sum(2, false, { dtype = torch.float64 }).dtype)
    assert.are.equal(3, torch.add(a, a, { alpha = 2 })[1])
  end)

  -- composed functions given a wrong type where a tensor, number or integer goes: an error naming
  -- the function (they raised Lua's own "attempt to call a nil value" or named the op they call)
  it('composed functions name themselves when an argument has the wrong type', function()
    local x = torch.ones(2, 4)
    H.raises(function() torch.kron(x, 'a') end, 'kron: other must be a tensor, got string')
    H.raises(function() torch.kron('a', x) end, 'kron: the input must be a tensor, got string')
    H.raises(function() torch.atleast_2d('a') end, 'atleast_2d: expected a tensor, got string')
    H.raises(function() torch.nn.functional.glu(x, 'a') end, 'glu: dim must be an integer, got a')
    H.raises(function() torch.diff(x, 'a') end, 'diff: n must be a non-negative integer, got a')
    H.raises(function() torch.diff(x, -1) end, 'diff: n must be a non-negative integer, got -1')
    H.raises(function() x:xlogy({}) end, 'xlogy: expected other to be a tensor or a number, got table')
    H.raises(function() x:heaviside({}) end, 'heaviside: expected other to be a tensor or a number, got table')
    H.raises(function() x:fmax('a') end, 'fmax: expected other to be a tensor or a number, got string')
    H.raises(function() torch.fmin('a', x) end, 'fmin: the input must be a tensor, got string')
    H.raises(function() x:logaddexp({}) end, 'logaddexp: expected other to be a tensor or a number, got table')
    -- the valid forms still work, integral floats included
    assert.are.equal(2, torch.atleast_2d(torch.ones(3)):dim())
    H.assert_values(torch.diff(torch.tensor({ 1, 4, 9 }), 2.0), { 2 })
    assert.are.equal(2, torch.nn.functional.glu(x, 2.0):size(2))
    H.assert_values(torch.kron(torch.tensor({ 1, 2 }), torch.tensor({ 1, 10 })), { 1, 10, 2, 20 })
  end)
end)
