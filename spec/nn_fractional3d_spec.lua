-- nn.FractionalMaxPool3d and F.fractional_max_pool3d (+ _with_indices): PyTorch 1.13's outputs,
-- 1-based indices and gradients for given random samples (spec/data/nnmore_reference.lua, made by
-- tools/gen_nnmore_reference.py), float64 and float32, each output read back as the maximum of its
-- window by plain Lua, and the module's options and errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional
local ref = dofile('spec/data/nnmore_reference.lua')
local T = H.from_ref

describe('F.fractional_max_pool3d', function()
  it("matches PyTorch's windows, indices and gradients for given samples", function()
    for i, c in ipairs(ref.fractional3d) do
      local dtype = c.dtype == 'float32' and torch.float32 or torch.float64
      local x = T(c.x, dtype):requires_grad_()
      local y, idx = F.fractional_max_pool3d(x, c.k, { output_size = c.output_size, output_ratio = c.output_ratio,
        return_indices = true, _random_samples = T(c.samples, dtype) })
      H.assert_values(idx, c.indices.data, 0, 'indices ' .. i)
      H.assert_values(y, c.y.data, 0, 'y ' .. i)
      ;(y * T(c.gy, dtype)):sum():backward()
      H.assert_values(x.grad, c.grad.data, 1e-6, 'grad ' .. i)
      -- each output is the input at its index, read in plain Lua
      local vol = x:size(-3) * x:size(-2) * x:size(-1)
      local flat = H.flatten(x:detach():reshape(-1, vol):totable())
      local planes = x:numel() // vol
      local yi, ii = H.flatten(y:detach():totable()), H.flatten(idx:totable())
      local outs = #yi // planes
      for p = 0, planes - 1 do
        for o = 1, outs do assert.equal(yi[p * outs + o], flat[p * vol + ii[p * outs + o]]) end
      end
      -- the same through _with_indices, on a non-contiguous copy of the input
      local xs = x:detach():transpose(-1, -2):contiguous():transpose(-1, -2)
      local y2, i2 = F.fractional_max_pool3d_with_indices(xs, c.k, { output_size = c.output_size,
        output_ratio = c.output_ratio, _random_samples = T(c.samples, dtype) })
      H.assert_values(y2, c.y.data, 0, 'y (non-contiguous) ' .. i)
      H.assert_values(i2, c.indices.data, 0, 'indices (non-contiguous) ' .. i)
    end
  end)

  it('one output is the maximum of the last window (its start: in - k), whatever the samples', function()
    local x = torch.randn(2, 3, 5, 6, 7, { dtype = torch.float64 })
    local y, idx = F.fractional_max_pool3d(x, { 4, 5, 6 }, { output_size = 1, return_indices = true })
    for n = 1, 2 do
      for ch = 1, 3 do
        local best, at = -math.huge, nil
        local v = x[n][ch]:totable()
        for t = 2, 5 do
          for h = 2, 6 do
            for w = 2, 7 do
              if v[t][h][w] > best then best, at = v[t][h][w], ((t - 1) * 6 + (h - 1)) * 7 + w end
            end
          end
        end
        assert.equal(best, y[n][ch]:reshape(-1)[1])
        assert.equal(at, idx[n][ch]:reshape(-1)[1])
      end
    end
    torch.manual_seed(1)
    local a = F.fractional_max_pool3d(torch.arange(1, 1 + 8 * 8 * 8, { dtype = torch.float32 }):reshape(1, 8, 8, 8), 2,
      { output_size = 3 })
    assert.same({ 1, 3, 3, 3 }, a.shape)
  end)

  it('nn.FractionalMaxPool3d takes output_ratio, return_indices and _random_samples, and names bad calls', function()
    local p = nn.FractionalMaxPool3d(2, { output_ratio = 0.5 })
    assert.same({ 2, 3, 4, 5, 3 }, p(torch.randn(2, 3, 8, 10, 7)).shape)
    local s = torch.rand(1, 2, 3, { dtype = torch.float64 })
    local q = nn.FractionalMaxPool3d({ 2, 1, 2 }, { output_size = { 3, 4, 2 }, return_indices = true, _random_samples = s })
    local x = torch.randn(1, 2, 6, 5, 5, { dtype = torch.float64 })
    local y, i = q(x)
    local fy, fi = F.fractional_max_pool3d(x, { 2, 1, 2 }, { output_size = { 3, 4, 2 }, return_indices = true,
      _random_samples = s })
    H.assert_values(y, fy:totable(), 0)
    H.assert_values(i, fi:totable(), 0)
    H.raises(function() nn.FractionalMaxPool3d(2) end, 'FractionalMaxPool3d requires specifying either an output size, or a pooling ratio')
    H.raises(function() nn.FractionalMaxPool3d(2, { output_size = 3, output_ratio = 0.5 }) end, 'only one of')
    H.raises(function() nn.FractionalMaxPool3d(2, { output_ratio = { 0.5, 0.5, 1 } }) end, 'output_ratio must be between 0 and 1')
    H.raises(function() nn.FractionalMaxPool3d({ 2, 2 }, { output_size = 2 }) end, 'kernel_size must be an integer or a triple')
    -- PyTorch's 3-D check is strict: out + k - 1 < in
    H.raises(function() F.fractional_max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, { output_size = { 3, 2, 2 } }) end,
      'pool time 2 too large relative to input time 4')
    assert.same({ 1, 1, 2, 2, 2 }, F.fractional_max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, { output_size = 2 }).shape)
    H.raises(function() F.fractional_max_pool3d(torch.randn(4, 4, 4), 2, { output_size = 2 }) end,
      'fractional_max_pool3d: expected a 4-D (unbatched) or 5-D (batched) input, got 3-D')
    H.raises(function() F.fractional_max_pool3d(torch.ones(1, 4, 4, 4, { dtype = torch.int64 }), 2, { output_size = 2 }) end,
      'expected a floating point input')
    H.raises(function() F.fractional_max_pool3d(torch.randn(1, 4, 4, 4), 2) end, 'requires specifying either an output_size or an output_ratio')
    H.raises(function()
      F.fractional_max_pool3d(torch.randn(1, 2, 6, 6, 6), 2, { output_size = 3, _random_samples = torch.rand(1, 2, 2) })
    end, '_random_samples must be a tensor of shape (1, 2, 3)')
    H.raises(function() F.fractional_max_pool3d(torch.randn(1, 2, 6, 6, 6), 2, { output_sise = 3 }) end,
      "fractional_max_pool3d: unknown option 'output_sise'")
    H.raises(function() F.fractional_max_pool3d_with_indices(torch.randn(1, 2, 6, 6, 6), 2, { out = 3 }) end,
      "fractional_max_pool3d_with_indices: unknown option 'out'")
  end)
end)
