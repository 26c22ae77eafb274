-- torch.testing.assert_close and make_tensor. The expected messages are PyTorch 1.13's (run on
-- the same inputs), with its 0-based indices (and item positions) shifted to lutorch's 1-based ones.
local torch = require 'torch'
local H = require 'spec.helpers'
local T = torch.testing

local function message(...)
  local ok, err = pcall(T.assert_close, ...)
  assert(not ok, 'expected assert_close to fail')
  return err
end

describe('torch.testing.assert_close', function()
  it('passes values within the default tolerances of their dtype', function()
    T.assert_close(torch.tensor({ 1.0, 2 }), torch.tensor({ 1 + 1e-5, 2 }))           -- float32 atol 1e-5
    T.assert_close(torch.tensor({ 1e6 }), torch.tensor({ 1e6 + 1 }))                -- rtol 1.3e-6
    T.assert_close(torch.tensor({ 1, 2 }, { dtype = torch.float64 }), torch.tensor({ 1 + 9e-8, 2 }, { dtype = torch.float64 }))
    T.assert_close(torch.tensor({ 100 }, { dtype = torch.float16 }), torch.tensor({ 100.0625 }, { dtype = torch.float16 }))
    T.assert_close(torch.tensor({ 3, 4 }, { dtype = torch.int32 }), torch.tensor({ 3, 4 }, { dtype = torch.int32 }))
    T.assert_close(torch.tensor({ 0 / 0 }), torch.tensor({ 0 / 0 }), { equal_nan = true })
    T.assert_close(torch.tensor({ 1 / 0, -1 / 0 }), torch.tensor({ 1 / 0, -1 / 0 }))
    T.assert_close({ torch.ones(2), { 1.5, x = 3 } }, { torch.ones(2), { 1.5, x = 3 } })
  end)

  it('fails just past the default tolerances of each dtype', function()
    local cases = {
      { torch.float32, 1, 1 + 2.5e-5 }, { torch.float64, 1, 1 + 3e-7 }, { torch.float16, 1000, 1002 },
      { torch.bfloat16, 1000, 1024 }, { torch.int64, 5, 6 }, { torch.int8, 5, 6 }, { torch.uint8, 5, 6 },
    }
    for _, c in ipairs(cases) do
      local dt = c[1]
      local a, b = torch.tensor({ c[2] }, { dtype = dt }), torch.tensor({ c[3] }, { dtype = dt })
      local err = message(a, b)
      local frag = dt.is_floating_point and 'are not close' or 'are not equal'
      assert(err:find(frag, 1, true), tostring(dt) .. ': ' .. err)
    end
    -- bfloat16's rtol 1.6e-2: 1000 and 1008 (its neighbours) pass
    T.assert_close(torch.tensor({ 1000 }, { dtype = torch.bfloat16 }), torch.tensor({ 1008 }, { dtype = torch.bfloat16 }))
  end)

  it('writes PyTorch\'s message for tensors, with 1-based indices', function()
    assert.equal('Tensor-likes are not close!\n\nMismatched elements: 2 / 6 (33.3%)\n' ..
      'Greatest absolute difference: 0.5 at index (2, 3) (up to 1e-05 allowed)\n' ..
      'Greatest relative difference: 0.07692307692307693 at index (2, 3) (up to 1.3e-06 allowed)',
      message(torch.tensor({ { 1.0, 2, 3 }, { 4, 5, 6 } }), torch.tensor({ { 1, 2, 3.1 }, { 4, 5, 6.5 } })))
    assert.equal('Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n' ..
      'Greatest absolute difference: 0.20000001043081284 at index (1,) (up to 1e-05 allowed)\n' ..
      'Greatest relative difference: 0.6666666749450892 at index (1,) (up to 1.3e-06 allowed)',
      message(torch.tensor({ 0.1 }), torch.tensor({ 0.3 })))
    assert.equal('Tensor-likes are not equal!\n\nMismatched elements: 1 / 3 (33.3%)\n' ..
      'Greatest absolute difference: 4 at index (3,)\nGreatest relative difference: 0.5714285969734192 at index (3,)',
      message(torch.tensor({ 1, 2, 3 }), torch.tensor({ 1, 2, 7 })))
    assert.equal('Tensor-likes are not equal!\n\nMismatched elements: 2 / 4 (50.0%)\n' ..
      'Greatest absolute difference: 1 at index (1, 2)\nGreatest relative difference: 0.5 at index (2, 1)',
      message(torch.tensor({ { 1, 2 }, { 3, 4 } }), torch.tensor({ { 1, 2 }, { 3, 4 } }):t()))
    assert.equal('Tensor-likes are not equal!\n\nMismatched elements: 1 / 1 (100.0%)\n' ..
      'Greatest absolute difference: 1 at index (1,)\nGreatest relative difference: inf at index (1,)',
      message(torch.tensor({ true }), torch.tensor({ false })))
    assert.equal('Tensor-likes are not close!\n\nMismatched elements: 2 / 3 (66.7%)\n' ..
      'Greatest absolute difference: nan at index (3,) (up to 1e-05 allowed)\n' ..
      'Greatest relative difference: nan at index (3,) (up to 1.3e-06 allowed)',
      message(torch.tensor({ 1, 2, 0 / 0 }), torch.tensor({ 5.0, 2, 3 })))
    assert.equal('Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n' ..
      'Greatest absolute difference: inf at index (2,) (up to 1e-05 allowed)\n' ..
      'Greatest relative difference: nan at index (2,) (up to 1.3e-06 allowed)',
      message(torch.tensor({ 1.0, 1 / 0 }), torch.tensor({ 1.0, -1 / 0 })))
    -- a NaN is not close to a NaN unless equal_nan
    assert.truthy(message(torch.tensor({ 0 / 0 }), torch.tensor({ 0 / 0 })):find('1 / 1 (100.0%)', 1, true))
    -- 0-dim tensors are Scalars
    assert.equal('Scalars are not close!\n\nAbsolute difference: 1.0 (up to 1e-05 allowed)\n' ..
      'Relative difference: 0.5 (up to 1.3e-06 allowed)', message(torch.tensor(1.0), torch.tensor(2.0)))
  end)

  it('checks shapes, dtypes, devices and (when asked) strides', function()
    assert.equal("The values for attribute 'shape' do not match: torch.Size([1]) != torch.Size([2]).",
      message(torch.tensor({ 1.0 }), torch.tensor({ 1.0, 2 })))
    assert.equal("The values for attribute 'dtype' do not match: torch.float32 != torch.float64.",
      message(torch.tensor({ 1.0 }), torch.tensor({ 1.0 }, { dtype = torch.float64 })))
    assert.equal("The values for attribute 'stride()' do not match: (2, 1) != (1, 2).",
      message(torch.ones(2, 2), torch.ones(2, 2):t():contiguous():t(), { check_stride = true }))
    T.assert_close(torch.ones(2, 2), torch.ones(2, 2):t():contiguous():t())
    assert.equal("The values for attribute 'device' do not match: cpu:0 != cpu:1.",
      message(torch.ones(2), torch.ones(2, { device = 'cpu:1' })))
    T.assert_close(torch.ones(2), torch.ones(2, { device = 'cpu:1' }), { check_device = false })
    -- check_dtype = false: compared in the wider dtype, with the looser tolerance of the two
    assert.equal('Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n' ..
      'Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n' ..
      'Greatest relative difference: 0.3333333333333333 at index (1,) (up to 0.001 allowed)',
      message(torch.tensor({ 1.0 }), torch.tensor({ 1.5 }, { dtype = torch.float16 }), { check_dtype = false }))
    T.assert_close(torch.tensor({ 1.0, 2 }), torch.tensor({ 1, 2.000001 }, { dtype = torch.float64 }), { check_dtype = false })
  end)

  it('takes rtol and atol together, equal_nan and a msg', function()
    T.assert_close(torch.tensor({ 1.0 }), torch.tensor({ 1.5 }), { rtol = 0, atol = 0.5 })
    T.assert_close(torch.tensor({ 1.0 }), torch.tensor({ 1.5 }), { rtol = 0.34, atol = 0 })
    assert.truthy(message(torch.tensor({ 1.0 }), torch.tensor({ 1.5 }), { rtol = 0.3, atol = 0 })
      :find('(up to 0.3 allowed)', 1, true))
    assert.equal('custom', message(torch.tensor({ 1.0 }), torch.tensor({ 1.5 }), { msg = 'custom' }))
    assert.equal('XTenso', message(torch.tensor({ 1.0, 2 }), torch.tensor({ 1.0, 3 }), { msg = function(m) return 'X' .. m:sub(1, 5) end }))
    H.raises(function() T.assert_close(torch.ones(1), torch.ones(1), { rtol = 0.1 }) end,
      "both 'rtol' and 'atol' must be either specified or omitted, but got no atol")
    H.raises(function() T.assert_close(torch.ones(1), torch.ones(1), { rtol = -1, atol = 0 }) end, 'rtol must be a non-negative')
    H.raises(function() T.assert_close(torch.ones(1), torch.ones(1), { tol = 1 }) end, 'tol')
  end)

  it('compares numbers and nested tables, naming the failing item', function()
    assert.equal('Scalars are not close!\n\nAbsolute difference: 0.10000000000000009 (up to 1e-07 allowed)\n' ..
      'Relative difference: 0.09090909090909098 (up to 1e-07 allowed)', message(1.0, 1.1))
    assert.equal('Scalars are not equal!\n\nAbsolute difference: 1\nRelative difference: 0.5', message(1, 2))
    assert.equal('Scalars are not close!\n\nAbsolute difference: 0.5 (up to 1e-07 allowed)\n' ..
      'Relative difference: 0.2 (up to 1e-07 allowed)\n\nThe failure occurred for item [2]',
      message({ torch.tensor({ 1.0 }), 2.0 }, { torch.tensor({ 1.0 }), 2.5 }))
    assert.equal('Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n' ..
      'Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n' ..
      "Greatest relative difference: 0.3333333333333333 at index (1,) (up to 1.3e-06 allowed)\n\nThe failure occurred for item ['a']",
      message({ a = torch.tensor({ 1.0 }) }, { a = torch.tensor({ 1.5 }) }))
    assert.truthy(message({ { 1, { 2, 3 } } }, { { 1, { 2, 4 } } }):find('item [1][2][2]', 1, true))
    assert.equal("The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n" ..
      "Additional keys in the actual mapping: ['a']", message({ a = 1 }, { b = 1 }))
    assert.equal('The length of the sequences mismatch: 2 != 3', message({ 1, 2 }, { 1, 2, 3 }))
    assert.equal('The (d)types do not match: integer != float.', message(1, 1.0))
    T.assert_close(1, 1.0, { check_dtype = false })
    H.raises(function() T.assert_close(1.0, torch.tensor(1.0)) end, 'no comparison pair', 'number and tensor')
    H.raises(function() T.assert_close(torch.ones(1), 'a') end, 'tensor and string')
  end)

  it('writes numbers as Python\'s repr does', function()
    local r = T._pyrepr
    assert.equal('1e-05', r(1e-5))
    assert.equal('0.0001', r(1e-4))
    assert.equal('100.0', r(100.0))
    assert.equal('1e+16', r(1e16))
    assert.equal('1234567890123456.0', r(1234567890123456.0))
    assert.equal('0.1', r(0.1))
    assert.equal('-2.5', r(-2.5))
    assert.equal('1.3e-06', r(1.3e-6))
    assert.equal('0.30000000000000004', r(0.1 + 0.2))
  end)
end)

describe('torch.testing.make_tensor', function()
  it('draws from [low, high) in every dtype, with PyTorch\'s default ranges', function()
    torch.manual_seed(1)
    for _, dt in ipairs(H.all_dtypes) do
      local x = T.make_tensor({ 40, 50 }, { dtype = dt })
      assert.equal(dt, x.dtype)
      assert.same({ 40, 50 }, { x.shape[1], x.shape[2] })
      local lo, hi = x:to(torch.float64):min():item(), x:to(torch.float64):max():item()
      if dt == torch.bool then
        assert.equal(0, lo); assert.equal(1, hi)
      elseif dt == torch.uint8 then
        assert.equal(0, lo); assert.equal(9, hi)
      elseif dt.is_floating_point then
        assert.truthy(lo >= -9 and lo < -8, tostring(dt) .. ' min ' .. lo)
        assert.truthy(hi <= 9 and hi > 8, tostring(dt) .. ' max ' .. hi)
      else
        assert.equal(-9, lo); assert.equal(9, hi)
      end
    end
    local y = T.make_tensor(1000, { dtype = torch.float64, low = 2, high = 3 })
    assert.truthy(y:ge(2):all():item() and y:lt(3):all():item())
    assert.truthy(math.abs(y:mean():item() - 2.5) < 0.05)
    -- clamped to the dtype's range; low == high gives that value (floats)
    local u = T.make_tensor(100, { dtype = torch.uint8, low = -5, high = 3 })
    assert.equal(0, u:min():item()); assert.equal(2, u:max():item())
    H.assert_values(T.make_tensor(3, { dtype = torch.float64, low = 4, high = 4 }), { 4, 4, 4 })
  end)

  it('makes non-contiguous tensors, excludes zeros and sets requires_grad', function()
    local x = T.make_tensor({ 3, 4 }, { noncontiguous = true })
    assert.is_false(x:is_contiguous())
    assert.same({ 8, 2 }, x:stride())
    local s = T.make_tensor(1, { noncontiguous = true })
    assert.is_true(s:is_contiguous()) -- one element: left as it is, as PyTorch
    local z = T.make_tensor(200, { dtype = torch.int8, low = -1, high = 1, exclude_zero = true })
    assert.is_false(z:eq(0):any():item())
    local f = T.make_tensor(10, { dtype = torch.float64, low = 0, high = 0, exclude_zero = true })
    H.assert_values(f, { 2.2250738585072014e-308, 2.2250738585072014e-308, 2.2250738585072014e-308,
      2.2250738585072014e-308, 2.2250738585072014e-308, 2.2250738585072014e-308, 2.2250738585072014e-308,
      2.2250738585072014e-308, 2.2250738585072014e-308, 2.2250738585072014e-308 })
    assert.is_true(T.make_tensor(2, { requires_grad = true }).requires_grad)
    local d = T.make_tensor(2, { device = 'cpu:1', dtype = torch.int16 })
    assert.equal('cpu:1', tostring(d.device))
  end)

  it('refuses bad arguments', function()
    H.raises(function() T.make_tensor(3, { low = 5, high = 1 }) end, 'make_tensor: low must be weakly less than high')
    H.raises(function() T.make_tensor(3, { low = 0 / 0 }) end, 'make_tensor: one of low or high was NaN')
    H.raises(function() T.make_tensor(3, { dtype = torch.int64, requires_grad = true }) end,
      'make_tensor: requires_grad must be false for integral dtype')
    H.raises(function() T.make_tensor('3') end, 'make_tensor: shape must be')
    H.raises(function() T.make_tensor(3, { colour = 1 }) end, 'colour')
  end)
end)
