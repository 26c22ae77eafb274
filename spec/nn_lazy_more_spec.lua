-- The lazy convolutions, batch and instance normalisations (lua/torch/nn/lazy.lua): the shapes and
-- classes PyTorch 1.13 gives them for the same arguments and inputs (written out below, from
-- PyTorch runs), the same draws and outputs as the class made after the same seed, parameters kept
-- in place for an optimizer made before, the uninitialised state, load_state_dict and bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn

-- a non-contiguous tensor of shape (the last two dims swapped back from a contiguous one)
local function nc(shape, dtype)
  local s = {}
  for i, v in ipairs(shape) do s[i] = v end
  local n = #s
  s[n - 1], s[n] = s[n], s[n - 1]
  return torch.randn(s, { dtype = dtype }):transpose(n - 1, n)
end

-- class, lazy arguments, input shape, the class it becomes, its size, PyTorch's state shapes, output shape
local CASES = {
  { 'LazyConv1d', { 4, 3, { groups = 2 } }, { 2, 6, 7 }, 'Conv1d', 6, { weight = { 4, 3, 3 }, bias = { 4 } }, { 2, 4, 5 } },
  { 'LazyConv2d', { 4, 3, { padding = 1 } }, { 2, 3, 5, 6 }, 'Conv2d', 3, { weight = { 4, 3, 3, 3 }, bias = { 4 } },
    { 2, 4, 5, 6 } },
  { 'LazyConv3d', { 2, 2, { stride = 2 } }, { 3, 4, 5, 6 }, 'Conv3d', 3, { weight = { 2, 3, 2, 2, 2 }, bias = { 2 } },
    { 2, 2, 2, 3 } },
  { 'LazyConvTranspose1d', { 4, 3, { stride = 2, groups = 2 } }, { 2, 6, 5 }, 'ConvTranspose1d', 6,
    { weight = { 6, 2, 3 }, bias = { 4 } }, { 2, 4, 11 } },
  { 'LazyConvTranspose2d', { 3, 2 }, { 2, 4, 3, 5 }, 'ConvTranspose2d', 4, { weight = { 4, 3, 2, 2 }, bias = { 3 } },
    { 2, 3, 4, 6 } },
  { 'LazyConvTranspose3d', { 2, { 1, 2, 2 } }, { 1, 3, 2, 3, 4 }, 'ConvTranspose3d', 3,
    { weight = { 3, 2, 1, 2, 2 }, bias = { 2 } }, { 1, 2, 2, 4, 5 } },
  { 'LazyBatchNorm1d', {}, { 4, 5 }, 'BatchNorm1d', 5,
    { weight = { 5 }, bias = { 5 }, running_mean = { 5 }, running_var = { 5 }, num_batches_tracked = {} }, { 4, 5 } },
  { 'LazyBatchNorm2d', { { momentum = 0.2 } }, { 2, 3, 4, 4 }, 'BatchNorm2d', 3,
    { weight = { 3 }, bias = { 3 }, running_mean = { 3 }, running_var = { 3 }, num_batches_tracked = {} }, { 2, 3, 4, 4 } },
  { 'LazyBatchNorm3d', { { affine = false } }, { 2, 3, 2, 2, 2 }, 'BatchNorm3d', 3,
    { running_mean = { 3 }, running_var = { 3 }, num_batches_tracked = {} }, { 2, 3, 2, 2, 2 } },
  { 'LazyInstanceNorm1d', {}, { 2, 4, 5 }, 'InstanceNorm1d', 4,
    { weight = { 4 }, bias = { 4 }, running_mean = { 4 }, running_var = { 4 }, num_batches_tracked = {} }, { 2, 4, 5 } },
  { 'LazyInstanceNorm2d', { { track_running_stats = false } }, { 2, 3, 4, 4 }, 'InstanceNorm2d', 3,
    { weight = { 3 }, bias = { 3 } }, { 2, 3, 4, 4 } },
  { 'LazyInstanceNorm3d', { { affine = false } }, { 2, 3, 2, 2, 2 }, 'InstanceNorm3d', 3,
    { running_mean = { 3 }, running_var = { 3 }, num_batches_tracked = {} }, { 2, 3, 2, 2, 2 } },
}

-- the arguments with dtype added to the options table (one is added where there is none)
local function with_dtype(args, dtype)
  local out, o = {}, nil
  for i, v in ipairs(args) do
    if type(v) == 'table' and next(v) ~= nil and #v == 0 then
      o = {}
      for k, x in pairs(v) do o[k] = x end
      out[i] = o
    else
      out[i] = v
    end
  end
  if not o then o = {}; out[#out + 1] = o end
  o.dtype = dtype
  return out
end

local function shapes(m)
  local out = {}
  for k, v in pairs(m:state_dict()) do out[k] = v.shape end
  return out
end

describe('the lazy convolutions and normalisations', function()
  for _, case in ipairs(CASES) do
    local name, args, in_shape, becomes, size, state, out_shape = table.unpack(case)
    for _, dt in ipairs { torch.float32, torch.float64 } do
      it(name .. ' infers its size, draws as ' .. becomes .. ' and becomes one (' .. tostring(dt) .. ')', function()
        local a = with_dtype(args, dt)
        torch.manual_seed(21)
        local m = nn[name](table.unpack(a))
        assert.is_true(m:has_uninitialized_params())
        assert.equal(name, m:_get_name())
        -- uninitialised: the parameters and sized buffers are empty, num_batches_tracked a scalar
        local params = m:parameters()
        for _, p in ipairs(params) do assert.equal(0, p:numel()) end
        for k, s in pairs(shapes(m)) do
          if k == 'num_batches_tracked' then assert.equal(0, #s) else assert.same({ 0 }, s) end
        end
        local opt = #params > 0 and torch.optim.SGD(params, { lr = 0.5 })
        local x = nc(in_shape, dt)
        torch.manual_seed(21) -- the first call draws the initial values
        local y = m(x)
        assert.equal(becomes, m:_get_name())
        assert.is_nil(m.has_uninitialized_params) -- the class's own methods, as PyTorch's cls_to_become
        assert.same(state, shapes(m))
        assert.same(out_shape, y.shape)
        assert.equal(size, m.in_channels or m.num_features)
        -- the draws of the eager class made after the same seed, and its output
        local b = { size }
        for _, v in ipairs(a) do b[#b + 1] = v end
        if name:find('InstanceNorm') then b[#b].affine, b[#b].track_running_stats = m.affine, m.track_running_stats end
        torch.manual_seed(21)
        local eager = nn[becomes](table.unpack(b))
        assert.equal(tostring(eager), tostring(m))
        -- the same output for the same (training) call, and then the same state: the drawn
        -- parameters, and the running statistics after one batch
        local ye = eager(x)
        H.assert_values(y, ye:totable(), 0, name .. ' output')
        for k, v in pairs(eager:state_dict()) do H.assert_values(m:state_dict()[k], v:totable(), 0, k) end
        -- the parameters are the optimizer's: one step moves them
        local mp = m:parameters()
        for i, p in ipairs(params) do assert.is_true(rawequal(p, mp[i])) end
        if #params > 0 then
          (y * y):sum():backward()
          local before = params[1]:clone()
          opt:step()
          assert.is_false(params[1]:equal(before))
        end
      end)
    end
  end

  it('load_state_dict into an uninitialised module takes the shapes and values, and the class', function()
    torch.manual_seed(3)
    for _, c in ipairs {
      { nn.Conv2d(4, 6, 3, { groups = 2 }), nn.LazyConv2d(6, 3, { groups = 2 }), 'in_channels', 4 },
      { nn.ConvTranspose1d(4, 6, 3, { groups = 2 }), nn.LazyConvTranspose1d(6, 3, { groups = 2 }), 'in_channels', 4 },
      { nn.BatchNorm1d(7), nn.LazyBatchNorm1d(), 'num_features', 7 },
      { nn.InstanceNorm3d(2, { affine = true }), nn.LazyInstanceNorm3d({ track_running_stats = false }), 'num_features', 2 },
      { nn.BatchNorm2d(5, { affine = false }), nn.LazyBatchNorm2d({ affine = false }), 'num_features', 5 },
    } do
      local src, m, field, size = table.unpack(c)
      torch.no_grad(function()
        for _, p in ipairs(src:parameters()) do p:uniform_(-2, 2) end
        if src.running_mean then src.running_mean:uniform_(-1, 1) end
      end)
      m:load_state_dict(src:state_dict())
      assert.equal(src:_get_name(), m:_get_name())
      assert.equal(size, m[field])
      for k, v in pairs(src:state_dict()) do H.assert_values(m:state_dict()[k], v:totable(), 0, k) end
    end
    -- a state dict without the sized tensors leaves the module lazy (a later call sizes it)
    local m = nn.LazyConv1d(2, 1)
    assert.has_error(function() m:load_state_dict({}) end)
    assert.is_true(m:has_uninitialized_params())
  end)

  it('names bad calls after the lazy class', function()
    H.raises(function() nn.LazyConv1d(4, 3, { groups = 2 })(torch.randn(1, 3, 5)) end,
      'LazyConv1d: in_channels must be divisible by groups')
    H.raises(function() nn.LazyConv2d(4, 3)(torch.randn(2, 3)) end,
      'LazyConv2d: Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size')
    H.raises(function() nn.LazyConv3d(4, 3)('x') end, 'LazyConv3d: expected a tensor input, got string')
    H.raises(function() nn.LazyConvTranspose2d(4, 3)(torch.randn(5)) end, 'LazyConvTranspose2d: Expected 3D (unbatched)')
    H.raises(function() nn.LazyConvTranspose1d(4, 3, { groups = 3 }) end, 'LazyConvTranspose1d: out_channels must be divisible by groups')
    H.raises(function() nn.LazyConv2d(4, 3, { groups = 0 }) end, 'LazyConv2d: groups must be a positive integer, got 0')
    H.raises(function() nn.LazyConv2d(4, 3, { padding = 'foo' }) end, "LazyConv2d: invalid padding string 'foo'")
    H.raises(function() nn.LazyConv2d(0, 3) end, 'LazyConv2d: in_channels and out_channels must be positive integers')
    H.raises(function() nn.LazyBatchNorm2d()(torch.randn(2, 3)) end, 'LazyBatchNorm2d: expected 4D input (got 2D input)')
    H.raises(function() nn.LazyBatchNorm1d()(torch.randn(2)) end, 'LazyBatchNorm1d: expected 2D or 3D input (got 1D input)')
    H.raises(function() nn.LazyInstanceNorm2d()(torch.randn(2, 3)) end, 'LazyInstanceNorm2d: Expected 3D (unbatched) or 4D')
    H.raises(function() nn.LazyLinear(3)(torch.tensor(1.0)) end, 'LazyLinear: expected an input tensor with at least one dimension')
    -- a failed first call leaves the module lazy; a good one then sizes it
    local m = nn.LazyConv1d(4, 3, { groups = 2 })
    pcall(m, torch.randn(1, 3, 5))
    assert.is_true(m:has_uninitialized_params())
    assert.same({ 1, 4, 3 }, m(torch.randn(1, 4, 5)).shape)
  end)

  it('keeps a dtype given before the first call (module:double())', function()
    local m = nn.LazyBatchNorm1d()
    m:double()
    local y = m(torch.randn(4, 3, { dtype = torch.float64 }))
    assert.equal(torch.float64, y.dtype)
    for _, t in ipairs { m.weight, m.bias, m.running_mean, m.running_var } do assert.equal(torch.float64, t.dtype) end
    local c = nn.LazyConvTranspose2d(2, 3):double()
    assert.equal(torch.float64, c(torch.randn(1, 3, 4, 4, { dtype = torch.float64 })).dtype)
    assert.equal(torch.float64, c.weight.dtype)
  end)

  it('an unbatched input gives the instance norm its channels (dim 1)', function()
    local m = nn.LazyInstanceNorm1d()
    local x = torch.randn(3, 6, { dtype = torch.float64 })
    local y = m(x)
    assert.equal(3, m.num_features)
    -- each channel normalised over its positions: mean 0, biased variance 1 - eps / (var + eps)
    for c = 1, 3 do
      local row = y[c]
      H.close(row:mean():item(), 0, 1e-12)
      local v = x[c]:var({ unbiased = false }):item()
      H.close((row * row):mean():item(), v / (v + 1e-5), 1e-10)
    end
  end)
end)
