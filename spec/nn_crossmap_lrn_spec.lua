-- nn.CrossMapLRN2d: PyTorch 1.13's outputs (spec/data/nnmore_reference.lua, made by
-- tools/gen_nnmore_reference.py) for odd and even sizes, float64 and float32; the formula PyTorch's
-- running sum computes, written here as plain-Lua loops (channel 1 stays in every later window);
-- gradients by finite differences; the repr and bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local ref = dofile('spec/data/nnmore_reference.lua')
local T = H.from_ref

-- x * (k + alpha / size * s)^-beta, s: x^2 summed over channel 1 and the channels
-- max(2, c - h) .. min(C, c + h), h = (size - 1) // 2
local function plain(x, size, alpha, beta, k)
  local v = x:totable()
  local h = (size - 1) // 2
  local out = {}
  for n = 1, #v do
    out[n] = {}
    local C = #v[n]
    for c = 1, C do
      out[n][c] = {}
      for i = 1, #v[n][c] do
        out[n][c][i] = {}
        for j = 1, #v[n][c][i] do
          local s = v[n][1][i][j] ^ 2
          for d = math.max(2, c - h), math.min(C, c + h) do s = s + v[n][d][i][j] ^ 2 end
          out[n][c][i][j] = v[n][c][i][j] * (k + alpha / size * s) ^ -beta
        end
      end
    end
  end
  return out
end

describe('nn.CrossMapLRN2d', function()
  it("matches PyTorch's values and the plain-Lua formula", function()
    for i, c in ipairs(ref.crossmap) do
      local dtype = c.dtype == 'float32' and torch.float32 or torch.float64
      local tol = dtype == torch.float32 and 1e-6 or 1e-14
      local x = T(c.x, dtype)
      local m = nn.CrossMapLRN2d(c.size, c.alpha, c.beta, c.k)
      H.assert_values(m(x), c.y.data, tol, 'case ' .. i)
      H.assert_values(m(x), plain(x, c.size, c.alpha, c.beta, c.k), tol, 'plain ' .. i)
      -- non-contiguous input: the same values
      local xs = x:transpose(3, 4):contiguous():transpose(3, 4)
      H.assert_values(m(xs), c.y.data, tol, 'non-contiguous ' .. i)
    end
  end)

  it('differs from LocalResponseNorm only through channel 1 (odd sizes)', function()
    local x = torch.randn(2, 6, 3, 3, { dtype = torch.float64 })
    -- with channel 1 zero the windows are LocalResponseNorm's
    x:select(2, 1):zero_()
    local y = nn.CrossMapLRN2d(3, 0.4, 0.6, 1.5)(x)
    H.assert_values(y, nn.LocalResponseNorm(3, 0.4, 0.6, 1.5)(x):totable(), 1e-14)
  end)

  it('passes gradcheck (its own derivative)', function()
    torch.manual_seed(4)
    local x = torch.randn(2, 5, 2, 3, { dtype = torch.float64 }):requires_grad_()
    for _, size in ipairs { 1, 2, 3, 5 } do
      local m = nn.CrossMapLRN2d(size, 0.5, 0.75, 1.0)
      assert.is_true(torch.autograd.gradcheck(function(a) return m(a) end, { x }))
    end
  end)

  it('prints and checks as PyTorch', function()
    assert.equal('CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)', tostring(nn.CrossMapLRN2d(3)))
    assert.equal('CrossMapLRN2d(5, alpha=0.5, beta=1, k=2.5)', tostring(nn.CrossMapLRN2d(5, { alpha = 0.5, beta = 1, k = 2.5 })))
    H.raises(function() nn.CrossMapLRN2d(0) end, 'CrossMapLRN2d: size must be a positive integer, got 0')
    H.raises(function() nn.CrossMapLRN2d(3, 'a') end, 'CrossMapLRN2d: alpha must be a number, got string')
    H.raises(function() nn.CrossMapLRN2d(3, { gamma = 1 }) end, "CrossMapLRN2d: unknown option 'gamma'")
    H.raises(function() nn.CrossMapLRN2d(3)(torch.randn(2, 3, 4)) end, 'CrossMapLRN2d: expected a 4-D input (N x C x H x W), got 3-D')
    H.raises(function() nn.CrossMapLRN2d(3)(torch.ones(1, 2, 2, 2, { dtype = torch.int64 })) end, 'expected a floating point input')
    H.raises(function() nn.CrossMapLRN2d(3)('x') end, 'CrossMapLRN2d: expected input to be a tensor')
  end)
end)
