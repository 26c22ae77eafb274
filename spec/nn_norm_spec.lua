-- softmax, log_softmax, batch_norm, layer_norm, nll_loss and cross_entropy (torch._nn through
-- torch.nn.functional) against plain-Lua references computed in double over :totable() values:
-- every dim of a 3-D tensor, non-contiguous inputs, every floating dtype (float32 and the 16-bit
-- types within their precision), large magnitudes, batch norm's running statistics, losses with
-- weights, ignore_index, K-dimensional inputs and label smoothing; gradients by finite differences
-- (gradcheck in float64) for every differentiable input; and each bad call's error message.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional
local gradcheck = torch.autograd.gradcheck

local ipairs, pairs, math, table, assert = ipairs, pairs, math, table, assert

---------------------------------------------------------------------------------------------------
-- plain-Lua machinery: flat row-major values with a shape
---------------------------------------------------------------------------------------------------
local function flat(x) return H.flatten(x:double():totable()) end

local function shape_of(x)
  local s = {}
  for d = 1, x:dim() do s[d] = x:size(d) end
  return s
end

local function strides_of(shape)
  local st, acc = {}, 1
  for d = #shape, 1, -1 do st[d] = acc; acc = acc * shape[d] end
  return st
end

local function prod(shape, from, to)
  local p = 1
  for d = from or 1, to or #shape do p = p * shape[d] end
  return p
end

-- softmax (or log_softmax) of flat vals of `shape` along dim (1-based), in double
local function ref_softmax(vals, shape, dim, log)
  local out = {}
  if #shape == 0 then return { log and 0 or 1 } end
  local n, st = shape[dim], strides_of(shape)[dim]
  for i = 0, #vals - 1 do
    local coord = (i // st) % n
    if coord == 0 then
      local m = -math.huge
      for k = 0, n - 1 do m = math.max(m, vals[i + k * st + 1]) end
      local s = 0
      for k = 0, n - 1 do s = s + math.exp(vals[i + k * st + 1] - m) end
      for k = 0, n - 1 do
        local v = vals[i + k * st + 1]
        out[i + k * st + 1] = log and (v - m - math.log(s)) or math.exp(v - m) / s
      end
    end
  end
  return out
end

-- batch norm of flat vals of shape [N, C, ...]; w, b: arrays or nil; rm, rv: arrays (updated in
-- place when training) or nil. Returns y.
local function ref_batch_norm(vals, shape, w, b, rm, rv, training, momentum, eps)
  local N, C, S = shape[1], shape[2], prod(shape, 3)
  local M = N * S
  local mean, var = {}, {}
  for c = 1, C do
    if training then
      local s = 0
      for n = 0, N - 1 do for k = 0, S - 1 do s = s + vals[(n * C + c - 1) * S + k + 1] end end
      local mu = s / M
      local q = 0
      for n = 0, N - 1 do for k = 0, S - 1 do q = q + (vals[(n * C + c - 1) * S + k + 1] - mu) ^ 2 end end
      mean[c], var[c] = mu, q / M
      if rm then rm[c] = (1 - momentum) * rm[c] + momentum * mu end
      if rv then rv[c] = (1 - momentum) * rv[c] + momentum * q / (M - 1) end
    else
      mean[c], var[c] = rm[c], rv[c]
    end
  end
  local y = {}
  for i = 0, #vals - 1 do
    local c = (i // S) % C + 1
    local v = (vals[i + 1] - mean[c]) / math.sqrt(var[c] + eps)
    y[i + 1] = v * (w and w[c] or 1) + (b and b[c] or 0)
  end
  return y
end

-- layer norm over rows of length L (the last dims); w, b: arrays of L or nil
local function ref_layer_norm(vals, L, w, b, eps)
  local y = {}
  for r = 0, #vals // L - 1 do
    local s = 0
    for j = 1, L do s = s + vals[r * L + j] end
    local mu = s / L
    local q = 0
    for j = 1, L do q = q + (vals[r * L + j] - mu) ^ 2 end
    local rs = 1 / math.sqrt(q / L + eps)
    for j = 1, L do y[r * L + j] = (vals[r * L + j] - mu) * rs * (w and w[j] or 1) + (b and b[j] or 0) end
  end
  return y
end

-- nll loss of flat logp of shape [N, C, ...] (or [C]) and flat 1-based targets; returns the
-- per-element losses (0 where ignored), their sum and the total weight
local function ref_nll(lp, shape, tg, w, ignore)
  local N, C, S
  if #shape == 1 then N, C, S = 1, shape[1], 1 else N, C, S = shape[1], shape[2], prod(shape, 3) end
  local per, sum, wsum = {}, 0, 0
  for n = 0, N - 1 do
    for s = 0, S - 1 do
      local i = n * S + s + 1
      local t = tg[i]
      if ignore and t == ignore then
        per[i] = 0
      else
        local wt = w and w[t] or 1
        per[i] = -wt * lp[(n * C + t - 1) * S + s + 1]
        sum, wsum = sum + per[i], wsum + wt
      end
    end
  end
  return per, sum, wsum
end

local function reduce_ref(per, sum, wsum, reduction)
  if reduction == 'none' then return per end
  if reduction == 'sum' then return { sum } end
  return { sum / wsum }
end

-- a float64 tensor with values in [-2, 2] (fixed by the seed)
local function randn(shape, seed, dtype)
  torch.manual_seed(seed)
  return (torch.rand(shape, { dtype = torch.float64 }) * 4 - 2):to(dtype or torch.float64)
end

local function leaf(shape, seed) return randn(shape, seed):requires_grad_() end

local function rand_targets(n, C, seed)
  torch.manual_seed(seed)
  return torch.randint(1, C + 1, n)
end

---------------------------------------------------------------------------------------------------
describe('softmax and log_softmax', function()
  local x3 = randn({ 3, 4, 5 }, 1)
  for _, log in ipairs { false, true } do
    local fn = log and F.log_softmax or F.softmax
    local name = log and 'log_softmax' or 'softmax'
    it(name .. ' along every dim of a 3-D tensor (positive and negative dims)', function()
      for d = 1, 3 do
        local want = ref_softmax(flat(x3), shape_of(x3), d, log)
        H.assert_values(fn(x3, d), want, 1e-12, name .. ' dim ' .. d)
        H.assert_values(fn(x3, d - 4), want, 1e-12, name .. ' dim ' .. (d - 4))
      end
    end)

    it(name .. ' of non-contiguous inputs (transposed, narrowed)', function()
      local xt = x3:transpose(1, 3)
      assert.is_false(xt:is_contiguous())
      for d = 1, 3 do
        H.assert_values(fn(xt, d), ref_softmax(flat(xt), shape_of(xt), d, log), 1e-12, 'transposed dim ' .. d)
      end
      local xn = x3:narrow(3, 2, 3)
      H.assert_values(fn(xn, 3), ref_softmax(flat(xn), shape_of(xn), 3, log), 1e-12, 'narrowed')
    end)

    it(name .. ' in float32, float16 and bfloat16 against float64', function()
      for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16 } do
        local xd = x3:to(dt)
        local vals = flat(xd) -- the rounded inputs
        for d = 1, 3 do
          local y = fn(xd, d)
          assert.are.equal(dt, y.dtype)
          local tol = dt == torch.float32 and 1e-6 or dt == torch.float16 and 4e-3 or 2e-2
          H.assert_values(y, ref_softmax(vals, shape_of(x3), d, log), tol, tostring(dt) .. ' dim ' .. d)
        end
      end
    end)

    it(name .. ' of large magnitudes does not overflow', function()
      local big = torch.tensor({ { 1000, 1001, 1002 }, { -1000, -1001, -1002 }, { 5000, 0, -5000 } })
      local small = { { 0, 1, 2 }, { 0, -1, -2 }, { 10000, 5000, 0 } }
      local want = {}
      for r = 1, 3 do
        local w = ref_softmax(small[r], { 3 }, 1, log)
        for k = 1, 3 do want[#want + 1] = w[k] end
      end
      for _, dt in ipairs { torch.float32, torch.float64 } do
        local y = fn(big:to(dt), 2)
        for _, v in ipairs(flat(y)) do assert.is_true(v == v and v > -math.huge and v < math.huge or log and v == -math.huge) end
        H.assert_values(y, want, 1e-6, 'large ' .. tostring(dt))
      end
    end)

    it(name .. ' of a 0-dim tensor and of a 1-D tensor', function()
      H.assert_values(fn(torch.tensor(3.5), 1), { log and 0 or 1 }, 0)
      H.assert_values(fn(torch.tensor(3.5), -1), { log and 0 or 1 }, 0)
      H.assert_values(fn(torch.tensor({ 1.0, 2.0 }, { dtype = torch.float64 }), 1),
        ref_softmax({ 1, 2 }, { 2 }, 1, log), 1e-12)
    end)

    it(name .. ' rows (64, 10) and long rows (3, 1000) match the reference', function()
      for _, sh in ipairs { { 64, 10 }, { 3, 1000 }, { 2, 70, 3 } } do
        local x = randn(sh, 7)
        local d = #sh == 2 and 2 or 2
        H.assert_values(fn(x, d), ref_softmax(flat(x), sh, d, log), 1e-12)
        H.assert_values(fn(x:float(), d), ref_softmax(flat(x:float()), sh, d, log), 1e-5)
      end
    end)

    -- rows of up to 31 elements along the last dim run 16 rows at a time (kernels/cpu/softmax.c):
    -- row counts around the group, row lengths around the limit, each dtype, forward and backward
    -- (the backward reference: for softmax y * (g - sum(g * y)), for log_softmax g - exp(y) * sum(g))
    it(name .. ' of short rows in groups (1 to 40 rows of 1 to 32), forward and backward, every dtype', function()
      for _, n in ipairs { 1, 3, 10, 16, 17, 31, 32 } do
        for _, rows in ipairs { 1, 15, 16, 17, 40 } do
          local x = randn({ rows, n }, 40 + n + rows):mul(3)
          local g = randn({ rows, n }, 90 + n + rows)
          for _, dt in ipairs { torch.float64, torch.float32, torch.float16, torch.bfloat16 } do
            local xd = x:to(dt):detach():requires_grad_()
            local gd = g:to(dt)
            local vals = flat(xd)
            local y = fn(xd, 2)
            local tol = dt == torch.float64 and 1e-12 or dt == torch.float32 and 1e-5 or dt == torch.float16 and 8e-3 or 5e-2
            local tag = string.format('%s %dx%d', tostring(dt), rows, n)
            H.assert_values(y, ref_softmax(vals, { rows, n }, 2, log), tol, tag)
            y:backward(gd)
            local yv, gv, want = flat(y), flat(gd), {}
            for r = 0, rows - 1 do
              local s = 0
              for k = 1, n do s = s + (log and gv[r * n + k] or gv[r * n + k] * yv[r * n + k]) end
              for k = 1, n do
                local i = r * n + k
                want[i] = log and gv[i] - math.exp(yv[i]) * s or yv[i] * (gv[i] - s)
              end
            end
            H.assert_values(xd.grad, want, tol * 4, tag .. ' backward')
          end
        end
      end
    end)

    it(name .. ' gradients (gradcheck) along every dim, contiguous and transposed', function()
      for d = 1, 3 do
        assert.is_true(gradcheck(function(a) return fn(a, d) end, { leaf({ 2, 3, 4 }, 10 + d) }))
      end
      local base = leaf({ 4, 3 }, 20):detach()
      local xt = base:t():requires_grad_()
      assert.is_true(gradcheck(function(a) return fn(a, 2) end, { xt }))
      assert.is_true(gradcheck(function(a) return fn(a, 1) end, { xt }))
      local y = fn(leaf({ 2, 3 }, 21), 2)
      assert.are.equal(log and 'LogSoftmaxBackward0' or 'SoftmaxBackward0', y.grad_fn.name)
    end)

    it(name .. ' backward in float32 matches float64', function()
      local x64 = leaf({ 5, 6 }, 22)
      local x32 = x64:detach():float():requires_grad_()
      local g = randn({ 5, 6 }, 23)
      fn(x64, 1):backward(g)
      fn(x32, 1):backward(g:float())
      H.assert_values(x32.grad, flat(x64.grad), 1e-5)
    end)
  end

  it('softmax rows sum to one and log_softmax is its log', function()
    local x = randn({ 4, 7 }, 3)
    H.assert_values(F.softmax(x, 2):sum(2), { 1, 1, 1, 1 }, 1e-14)
    H.assert_values(F.log_softmax(x, 2):exp(), flat(F.softmax(x, 2)), 1e-14)
  end)

  it('refuses integer inputs, bad dims and non-tensors', function()
    H.raises(function() F.softmax(torch.tensor({ 1, 2 }), 1) end, 'softmax', 'floating point', 'int64')
    H.raises(function() F.log_softmax(torch.tensor({ 1, 2 }, { dtype = torch.int32 }), 1) end, 'log_softmax',
      'int32')
    H.raises(function() F.softmax(torch.zeros(2, 3), 3) end, 'softmax', 'dimension out of range')
    H.raises(function() F.softmax(torch.zeros(2, 3), -3) end, 'dimension out of range')
    H.raises(function() F.softmax(torch.zeros(2, 3)) end, 'softmax: dim is required')
    H.raises(function() torch._nn.softmax(5, 1) end, 'softmax: expected input (argument 1) to be a tensor, got number')
    H.raises(function() torch._nn.log_softmax(torch.zeros(2), 1.5) end, 'log_softmax: expected dim', 'integer')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('batch_norm', function()
  local shapes = { { 6, 3 }, { 4, 3, 5 }, { 3, 2, 3, 4 } }
  for _, sh in ipairs(shapes) do
    local tag = #sh .. '-D'
    it('training ' .. tag .. ' with and without affine parameters, updating the running statistics', function()
      local x = randn(sh, 30)
      local C = sh[2]
      for _, affine in ipairs { false, true } do
        local w = affine and randn({ C }, 31) or nil
        local b = affine and randn({ C }, 32) or nil
        local rm, rv = randn({ C }, 33), randn({ C }, 34):abs() + 0.5
        local rm_ref, rv_ref = flat(rm), flat(rv)
        local y = F.batch_norm(x, rm, rv, w, b, { training = true, momentum = 0.2, eps = 1e-3 })
        local want = ref_batch_norm(flat(x), sh, w and flat(w), b and flat(b), rm_ref, rv_ref, true, 0.2, 1e-3)
        H.assert_values(y, want, 1e-12, 'y ' .. tag)
        H.assert_values(rm, rm_ref, 1e-12, 'running_mean')
        H.assert_values(rv, rv_ref, 1e-12, 'running_var')
      end
    end)

    it('eval ' .. tag .. ' uses the running statistics and leaves them alone', function()
      local x = randn(sh, 35)
      local C = sh[2]
      local w, b = randn({ C }, 36), randn({ C }, 37)
      local rm, rv = randn({ C }, 38), randn({ C }, 39):abs() + 0.5
      local before_m, before_v = flat(rm), flat(rv)
      local y = F.batch_norm(x, rm, rv, w, b, { training = false })
      H.assert_values(y, ref_batch_norm(flat(x), sh, flat(w), flat(b), before_m, before_v, false, 0.1, 1e-5), 1e-12)
      H.assert_values(rm, before_m, 0)
      H.assert_values(rv, before_v, 0)
      local y2 = F.batch_norm(x, rm, rv)
      H.assert_values(y2, ref_batch_norm(flat(x), sh, nil, nil, before_m, before_v, false, 0.1, 1e-5), 1e-12)
    end)

    it('gradients ' .. tag .. ' of x, weight and bias in training and eval (gradcheck)', function()
      local small = { sh[1] > 3 and 3 or sh[1], sh[2], sh[3] and 2 or nil, sh[4] and 2 or nil }
      local C = small[2]
      for _, training in ipairs { true, false } do
        local x, w, b = leaf(small, 40), leaf({ C }, 41), leaf({ C }, 42)
        local rm, rv = randn({ C }, 43), randn({ C }, 44):abs() + 0.5
        local o = { training = training }
        assert.is_true(gradcheck(function(a, ww, bb) return F.batch_norm(a, rm, rv, ww, bb, o) end, { x, w, b }))
        assert.is_true(gradcheck(function(a) return F.batch_norm(a, rm, rv, nil, nil, o) end, { leaf(small, 45) }))
        local y = F.batch_norm(x, rm, rv, w, b, o)
        assert.are.equal('NativeBatchNormBackward0', y.grad_fn.name)
      end
    end)
  end

  it('training without running statistics, non-contiguous input', function()
    local base = randn({ 3, 5 }, 50)
    local x = base:t() -- [5, 3], channels 3
    assert.is_false(x:is_contiguous())
    local y = F.batch_norm(x, nil, nil, nil, nil, { training = true })
    H.assert_values(y, ref_batch_norm(flat(x), { 5, 3 }, nil, nil, nil, nil, true, 0.1, 1e-5), 1e-12)
    local x4 = randn({ 2, 3, 4, 2 }, 51):permute(1, 2, 4, 3)
    local y4 = F.batch_norm(x4, nil, nil, nil, nil, { training = true })
    H.assert_values(y4, ref_batch_norm(flat(x4), shape_of(x4), nil, nil, nil, nil, true, 0.1, 1e-5), 1e-12)
    assert.is_true(gradcheck(function(a) return F.batch_norm(a, nil, nil, nil, nil, { training = true }) end,
      { leaf({ 3, 4 }, 52):t():detach():requires_grad_() }))
  end)

  it('float32, float16 and bfloat16 against float64', function()
    local x = randn({ 8, 3, 4 }, 53)
    local w, b = randn({ 3 }, 54), randn({ 3 }, 55)
    for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16 } do
      local xd = x:to(dt)
      local rm, rv = torch.zeros(3, { dtype = dt }), torch.ones(3, { dtype = dt })
      local y = F.batch_norm(xd, rm, rv, w:to(dt), b:to(dt), { training = true })
      assert.are.equal(dt, y.dtype)
      local rm_ref, rv_ref = { 0, 0, 0 }, { 1, 1, 1 }
      local want = ref_batch_norm(flat(xd), { 8, 3, 4 }, flat(w:to(dt)), flat(b:to(dt)), rm_ref, rv_ref, true, 0.1,
        1e-5)
      local tol = dt == torch.float32 and 1e-5 or dt == torch.float16 and 4e-3 or 3e-2
      H.assert_values(y, want, tol, tostring(dt))
      H.assert_values(rm, rm_ref, tol, 'running_mean ' .. tostring(dt))
      -- gradients in the low-precision dtype follow float64's
      local xg = xd:clone():requires_grad_()
      local g = randn({ 8, 3, 4 }, 56)
      F.batch_norm(xg, nil, nil, nil, nil, { training = true }):backward(g:to(dt))
      local x64 = xd:double():requires_grad_()
      F.batch_norm(x64, nil, nil, nil, nil, { training = true }):backward(g)
      H.assert_values(xg.grad, flat(x64.grad), tol * 4, 'grad ' .. tostring(dt))
    end
  end)

  it('running statistics are written in place: a graph that saved them notices', function()
    local rm, rv = torch.zeros(3, { dtype = torch.float64 }), torch.ones(3, { dtype = torch.float64 })
    local w = leaf({ 3 }, 57)
    local z = (rm * w):sum() -- saves rm
    F.batch_norm(randn({ 4, 3 }, 58), rm, rv, nil, nil, { training = true })
    H.raises(function() z:backward() end, 'modified by an inplace operation')
    assert.is_false(rm.requires_grad)
  end)

  it('refuses bad calls with PyTorch-like messages', function()
    H.raises(function() F.batch_norm(torch.zeros(1, 4), nil, nil, nil, nil, { training = true }) end,
      'batch_norm: expected more than 1 value per channel when training, got input size [1, 4]')
    H.raises(function() F.batch_norm(torch.zeros(1, 4, 1), nil, nil, nil, nil, { training = true }) end,
      'more than 1 value per channel', '[1, 4, 1]')
    H.raises(function() F.batch_norm(torch.zeros(2, 4)) end, 'batch_norm', 'running_mean and running_var',
      'evaluation mode')
    H.raises(function() F.batch_norm(torch.zeros(3, 4), nil, nil, torch.ones(3), nil, { training = true }) end,
      'batch_norm: expected weight of shape [4] (one value per channel), got [3]')
    H.raises(function() F.batch_norm(torch.zeros(3, 4), nil, nil, nil, torch.ones(2, 2), { training = true }) end,
      'expected bias of shape [4]', 'got [2, 2]')
    H.raises(function() F.batch_norm(torch.zeros(3, 4), torch.zeros(5), torch.ones(4)) end,
      'expected running_mean of shape [4]')
    H.raises(function() F.batch_norm(torch.zeros(3, 4), torch.zeros(4), torch.ones(5)) end,
      'expected running_var of shape [4]')
    H.raises(function() F.batch_norm(torch.zeros(4), nil, nil, nil, nil, { training = true }) end,
      'batch_norm: expected an input of 2 or more dimensions', '[4]')
    H.raises(function() F.batch_norm(torch.zeros(3, 4, { dtype = torch.int64 }), nil, nil, nil, nil, { training = true }) end,
      'batch_norm', 'floating point', 'int64')
    H.raises(function() torch._nn.batch_norm(torch.zeros(3, 4), nil, nil, nil, nil, 1, 0.1, 1e-5) end,
      'batch_norm: expected training (argument 6) to be a boolean')
    H.raises(function() torch._nn.batch_norm(torch.zeros(3, 4), 5, nil, nil, nil, true, 0.1, 1e-5) end,
      'batch_norm: expected weight (argument 2) to be a tensor or nil, got number')
    H.raises(function() torch._nn.batch_norm(torch.zeros(3, 4), nil, nil, nil, nil, true, 'x', 1e-5) end,
      'batch_norm: expected momentum (argument 7) to be a number')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('layer_norm', function()
  for _, nd in ipairs { 1, 2 } do
    it('over the last ' .. nd .. ' dim(s), with and without weight and bias', function()
      local x = randn({ 3, 4, 5 }, 60)
      local shape = nd == 1 and { 5 } or { 4, 5 }
      local L = prod(shape)
      local w, b = randn(shape, 61), randn(shape, 62)
      for _, case in ipairs { { w, b }, { w, nil }, { nil, b }, { nil, nil } } do
        local cw, cb = case[1], case[2]
        local y = F.layer_norm(x, shape, cw, cb, { eps = 1e-4 })
        H.assert_values(y, ref_layer_norm(flat(x), L, cw and flat(cw), cb and flat(cb), 1e-4), 1e-12)
      end
    end)

    it('gradients over the last ' .. nd .. ' dim(s) of x, weight and bias (gradcheck)', function()
      local shape = nd == 1 and { 4 } or { 3, 4 }
      local x, w, b = leaf({ 2, 3, 4 }, 63), leaf(shape, 64), leaf(shape, 65)
      assert.is_true(gradcheck(function(a, ww, bb) return F.layer_norm(a, shape, ww, bb) end, { x, w, b }))
      assert.is_true(gradcheck(function(a) return F.layer_norm(a, shape) end, { leaf({ 2, 3, 4 }, 66) }))
      assert.is_true(gradcheck(function(a, ww) return F.layer_norm(a, shape, ww) end, { leaf({ 2, 3, 4 }, 67), w }))
      assert.are.equal('NativeLayerNormBackward0', F.layer_norm(x, shape, w, b).grad_fn.name)
    end)
  end

  it('non-contiguous input and a 1-D input', function()
    local x = randn({ 5, 3 }, 68):t() -- [3, 5]
    H.assert_values(F.layer_norm(x, 5), ref_layer_norm(flat(x), 5, nil, nil, 1e-5), 1e-12)
    local v = randn({ 6 }, 69)
    H.assert_values(F.layer_norm(v, { 6 }), ref_layer_norm(flat(v), 6, nil, nil, 1e-5), 1e-12)
    assert.is_true(gradcheck(function(a) return F.layer_norm(a, 3) end, { leaf({ 3, 4 }, 70):t():detach():requires_grad_() }))
  end)

  it('(64, 256) in float32 and the 16-bit dtypes against float64', function()
    local x = randn({ 64, 256 }, 71) * 3 + 5
    local w, b = randn({ 256 }, 72), randn({ 256 }, 73)
    for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16 } do
      local xd = x:to(dt)
      local y = F.layer_norm(xd, 256, w:to(dt), b:to(dt))
      assert.are.equal(dt, y.dtype)
      local tol = dt == torch.float32 and 1e-5 or dt == torch.float16 and 4e-3 or 3e-2
      H.assert_values(y, ref_layer_norm(flat(xd), 256, flat(w:to(dt)), flat(b:to(dt)), 1e-5), tol, tostring(dt))
    end
    -- backward in float32 against float64
    local x64, w64, b64 = x:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
    local x32, w32, b32 = x:float():requires_grad_(), w:float():requires_grad_(), b:float():requires_grad_()
    local g = randn({ 64, 256 }, 74)
    F.layer_norm(x64, 256, w64, b64):backward(g)
    F.layer_norm(x32, 256, w32, b32):backward(g:float())
    H.assert_values(x32.grad, flat(x64.grad), 1e-4, 'x.grad')
    H.assert_values(w32.grad, flat(w64.grad), 1e-4, 'w.grad')
    H.assert_values(b32.grad, flat(b64.grad), 1e-5, 'b.grad')
    assert.are.equal(torch.float32, w32.grad.dtype)
  end)

  it('refuses an input whose shape does not end in normalized_shape (checked in functional.lua)', function()
    H.raises(function() F.layer_norm(torch.zeros(2, 3), { 4 }) end, 'layer_norm: given normalized_shape')
    H.raises(function() F.layer_norm(torch.zeros(3), { 1, 3 }) end, 'layer_norm', 'fewer dimensions')
  end)

  it('refuses bad calls', function()
    H.raises(function() F.layer_norm(torch.zeros(2, 3), 3, torch.ones(4)) end,
      'layer_norm: expected weight of shape [3] (normalized_shape), got [4]')
    H.raises(function() F.layer_norm(torch.zeros(2, 3, 4), { 3, 4 }, nil, torch.ones(12)) end,
      'expected bias of shape [3, 4]', 'got [12]')
    H.raises(function() F.layer_norm(torch.zeros(2, 3, { dtype = torch.int64 }), 3) end, 'layer_norm', 'int64')
    H.raises(function() torch._nn.layer_norm(torch.zeros(2, 3), 3, nil, nil, 1e-5) end,
      'layer_norm: cannot normalise over the last 3 dimensions of a 2-dimensional input')
    H.raises(function() torch._nn.layer_norm(torch.zeros(2, 3), 0, nil, nil, 1e-5) end,
      'layer_norm: cannot normalise over the last 0 dimensions')
    H.raises(function() torch._nn.layer_norm(torch.zeros(2, 3), -1, nil, nil, 1e-5) end,
      'layer_norm: cannot normalise over the last -1 dimensions')
    H.raises(function() torch._nn.layer_norm(torch.zeros(2, 3), 1, 'w', nil, 1e-5) end,
      'layer_norm: expected weight (argument 3) to be a tensor or nil, got string')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('nll_loss', function()
  local reductions = { 'none', 'mean', 'sum' }

  it('[N, C] every reduction, with and without weight and ignore_index', function()
    local lp = F.log_softmax(randn({ 7, 5 }, 80), 2)
    local tg = torch.tensor({ 1, 5, 3, 2, 5, 4, 3 })
    local w = randn({ 5 }, 81):abs() + 0.1
    for _, red in ipairs(reductions) do
      for _, wt in ipairs { false, true } do
        for _, ign in ipairs { false, 5 } do
          local o = { reduction = red, weight = wt and w or nil, ignore_index = ign or nil }
          local per, sum, wsum = ref_nll(flat(lp), { 7, 5 }, flat(tg), wt and flat(w), ign or nil)
          local got = F.nll_loss(lp, tg, o)
          H.assert_values(got, reduce_ref(per, sum, wsum, red), 1e-12, red)
          if red == 'none' then assert.are.same({ 7 }, shape_of(got)) else assert.are.equal(0, got:dim()) end
        end
      end
    end
  end)

  it('a 1-D input with a 0-dim target, and int32 targets', function()
    local lp = F.log_softmax(randn({ 6 }, 82), 1)
    local vals = flat(lp)
    H.assert_values(F.nll_loss(lp, torch.tensor(4)), { -vals[4] }, 1e-12)
    H.assert_values(F.nll_loss(lp, torch.tensor(4), { reduction = 'none' }), { -vals[4] }, 1e-12)
    local lp2 = F.log_softmax(randn({ 3, 4 }, 83), 2)
    local t32 = torch.tensor({ 2, 4, 1 }, { dtype = torch.int32 })
    local per, sum, wsum = ref_nll(flat(lp2), { 3, 4 }, { 2, 4, 1 })
    H.assert_values(F.nll_loss(lp2, t32), { sum / wsum }, 1e-12)
  end)

  it('K-dimensional inputs [N, C, d1, d2] every reduction, weights, ignore_index', function()
    local lp = F.log_softmax(randn({ 2, 4, 3, 2 }, 84), 2)
    torch.manual_seed(85)
    local tg = torch.randint(1, 5, { 2, 3, 2 })
    local w = randn({ 4 }, 86):abs() + 0.1
    for _, red in ipairs(reductions) do
      for _, ign in ipairs { false, 2 } do
        local per, sum, wsum = ref_nll(flat(lp), { 2, 4, 3, 2 }, flat(tg), flat(w), ign or nil)
        local got = F.nll_loss(lp, tg, { reduction = red, weight = w, ignore_index = ign or nil })
        H.assert_values(got, reduce_ref(per, sum, wsum, red), 1e-12, 'K-dim ' .. red)
        if red == 'none' then assert.are.same({ 2, 3, 2 }, shape_of(got)) end
      end
    end
    local lp3 = F.log_softmax(randn({ 2, 3, 5 }, 87), 2)
    torch.manual_seed(88)
    local tg3 = torch.randint(1, 4, { 2, 5 })
    local per, sum, wsum = ref_nll(flat(lp3), { 2, 3, 5 }, flat(tg3))
    H.assert_values(F.nll_loss(lp3, tg3), { sum / wsum }, 1e-12, '3-D')
  end)

  it('mean over all-ignored targets is NaN, as in PyTorch, with zero gradients', function()
    local lp = F.log_softmax(randn({ 3, 4 }, 89), 2):detach():requires_grad_()
    local l = F.nll_loss(lp, torch.tensor({ 2, 2, 2 }), { ignore_index = 2 })
    assert.is_true(l:item() ~= l:item())
    l:backward()
    H.assert_values(lp.grad, flat(torch.zeros(3, 4)), 0)
    H.assert_values(F.nll_loss(lp, torch.tensor({ 2, 2, 2 }), { ignore_index = 2, reduction = 'sum' }), { 0 }, 0)
  end)

  it('non-contiguous logp and target', function()
    local lp = F.log_softmax(randn({ 5, 4 }, 90), 1):t() -- [4, 5]
    local tg = torch.tensor({ { 1, 2 }, { 5, 3 }, { 4, 4 }, { 2, 1 } }):t():contiguous():t()[{ {}, 1 }]
    assert.is_false(lp:is_contiguous())
    local per, sum, wsum = ref_nll(flat(lp), { 4, 5 }, flat(tg))
    H.assert_values(F.nll_loss(lp, tg, { reduction = 'sum' }), { sum }, 1e-12)
  end)

  it('float32, float16 and bfloat16 against float64', function()
    local lp = F.log_softmax(randn({ 6, 5 }, 91), 2)
    local tg = rand_targets(6, 5, 92)
    for _, dt in ipairs { torch.float32, torch.float16, torch.bfloat16 } do
      local lpd = lp:to(dt)
      local per, sum, wsum = ref_nll(flat(lpd), { 6, 5 }, flat(tg))
      local got = F.nll_loss(lpd, tg)
      assert.are.equal(dt, got.dtype)
      local tol = dt == torch.float32 and 1e-6 or dt == torch.float16 and 2e-3 or 1e-2
      H.assert_values(got, { sum / wsum }, tol, tostring(dt))
    end
  end)

  it('gradients with respect to logp (gradcheck): every reduction, weight, ignore_index, K-dim', function()
    local w = randn({ 4 }, 93):abs() + 0.1
    local tg = torch.tensor({ 1, 4, 2 })
    for _, red in ipairs(reductions) do
      local o = { reduction = red, weight = w, ignore_index = 2 }
      assert.is_true(gradcheck(function(a) return F.nll_loss(a, tg, o) end, { leaf({ 3, 4 }, 94) }))
      assert.is_true(gradcheck(function(a) return F.nll_loss(a, tg, { reduction = red }) end, { leaf({ 3, 4 }, 95) }))
    end
    torch.manual_seed(96)
    local tgk = torch.randint(1, 4, { 2, 2, 2 })
    assert.is_true(gradcheck(function(a) return F.nll_loss(a, tgk, { weight = w:narrow(1, 1, 3) }) end,
      { leaf({ 2, 3, 2, 2 }, 97) }))
    local l = F.nll_loss(leaf({ 3, 4 }, 98), tg)
    assert.are.equal('NllLossBackward0', l.grad_fn.name)
  end)

  it('refuses bad calls with messages in 1-based numbers', function()
    local lp = torch.zeros(3, 10)
    H.raises(function() F.cross_entropy(lp, torch.tensor({ 1, 11, 2 })) end,
      'cross_entropy: target 11 is out of bounds for 10 classes')
    H.raises(function() F.nll_loss(lp, torch.tensor({ 0, 1, 2 })) end,
      'nll_loss: target 0 is out of bounds for 10 classes', '1-based')
    H.raises(function() F.nll_loss(lp, torch.tensor({ -100, 1, 2 })) end, 'target -100 is out of bounds')
    H.raises(function() F.cross_entropy(lp, torch.tensor({ 1, 2, 3, 4 })) end,
      'cross_entropy: Expected input batch_size (3) to match target batch_size (4)')
    H.raises(function() F.nll_loss(lp, torch.tensor({ 1.0, 2.0, 3.0 })) end, 'nll_loss',
      'target of class indices of dtype int64 or int32, got float32')
    H.raises(function() F.nll_loss(lp, torch.tensor({ 1, 2, 3 }), { weight = torch.ones(5) }) end,
      'nll_loss: weight tensor should be defined either for all 10 classes or no classes but got weight tensor of shape: [5]')
    H.raises(function() F.nll_loss(torch.zeros(2, 3, 4), torch.ones(2, 5, { dtype = torch.int64 })) end,
      'nll_loss: expected a target of shape [2, 4]', 'got [2, 5]')
    H.raises(function() F.nll_loss(lp, torch.ones(3, 1, { dtype = torch.int64 })) end, 'expected a target of shape [3]')
    H.raises(function() F.nll_loss(torch.zeros(4), torch.tensor({ 1, 2 })) end, 'nll_loss: expected a 0-dim target')
    H.raises(function() F.nll_loss(torch.tensor(1.0), torch.tensor(1)) end, 'nll_loss', '1 or more dimensions')
    H.raises(function() F.nll_loss(torch.zeros(3, 4, { dtype = torch.int64 }), torch.tensor({ 1, 2, 3 })) end,
      'nll_loss', 'floating point')
    H.raises(function() F.nll_loss(lp, torch.tensor({ 1, 2, 3 }), { reduction = 'avg' }) end,
      "nll_loss: reduction must be 'mean', 'sum' or 'none', got avg")
    H.raises(function() torch._nn.nll_loss('nll_loss', lp, torch.tensor({ 1, 2, 3 }), nil, nil, 7) end,
      'nll_loss: invalid reduction code 7')
    H.raises(function() torch._nn.nll_loss('nll_loss', lp, {}, nil, nil, 1) end,
      'nll_loss: expected target (argument 3) to be a tensor, got table')
    H.raises(function() torch._nn.nll_loss('nll_loss', lp, torch.tensor({ 1, 2, 3 }), nil, 1.5, 1) end,
      'nll_loss: expected ignore_index (argument 5) to be an integer')
  end)
end)

---------------------------------------------------------------------------------------------------
describe('cross_entropy', function()
  -- PyTorch's formula (aten's cross_entropy_loss_label_smoothing), on Lua arrays
  local function ref_ce(x, shape, tg, o)
    local C = #shape == 1 and shape[1] or shape[2]
    local lp = ref_softmax(x, shape, #shape == 1 and 1 or 2, true)
    local w, ign, eps = o.weight and flat(o.weight), o.ignore_index, o.label_smoothing or 0
    local red = o.reduction or 'mean'
    local per, sum, wsum = ref_nll(lp, shape, tg, w, ign)
    local nll = reduce_ref(per, sum, wsum, red)
    if eps == 0 then return nll end
    local N, S = #shape == 1 and 1 or shape[1], prod(shape, 3)
    local smooth, ssum, kept = {}, 0, 0
    for n = 0, N - 1 do
      for s = 0, S - 1 do
        local i = n * S + s + 1
        local v = 0
        if not (ign and tg[i] == ign) then
          for c = 1, C do v = v - lp[(n * C + c - 1) * S + s + 1] * (w and w[c] or 1) end
          kept = kept + 1
        end
        smooth[i] = v
        ssum = ssum + v
      end
    end
    local ret
    if red == 'none' then ret = smooth
    elseif red == 'sum' then ret = { ssum }
    elseif w then ret = { ssum / wsum }
    else ret = { ssum / kept } end
    local out = {}
    for i = 1, #nll do out[i] = (1 - eps) * nll[i] + ret[i] * eps / C end
    return out
  end

  it('matches log_softmax + nll_loss and PyTorch label smoothing (weights, reductions)', function()
    local x = randn({ 6, 5 }, 100)
    local tg = torch.tensor({ 1, 5, 3, 2, 5, 4 })
    local w = randn({ 5 }, 101):abs() + 0.1
    for _, red in ipairs { 'none', 'mean', 'sum' } do
      for _, wt in ipairs { false, true } do
        for _, ls in ipairs { 0, 0.1, 0.3 } do
          local o = { reduction = red, weight = wt and w or nil, label_smoothing = ls }
          H.assert_values(F.cross_entropy(x, tg, o), ref_ce(flat(x), { 6, 5 }, flat(tg), o), 1e-12,
            string.format('%s weight=%s ls=%g', red, wt, ls))
        end
      end
    end
  end)

  it('with ignore_index, with and without weight and label smoothing', function()
    local x = randn({ 6, 5 }, 102)
    local tg = torch.tensor({ 1, 5, 3, 5, 2, 4 })
    local w = randn({ 5 }, 103):abs() + 0.1
    for _, red in ipairs { 'none', 'mean', 'sum' } do
      for _, wt in ipairs { false, true } do
        for _, ls in ipairs { 0, 0.2 } do
          local o = { reduction = red, weight = wt and w or nil, label_smoothing = ls, ignore_index = 5 }
          H.assert_values(F.cross_entropy(x, tg, o), ref_ce(flat(x), { 6, 5 }, flat(tg), o), 1e-12,
            string.format('%s weight=%s ls=%g', red, wt, ls))
        end
      end
    end
  end)

  it('K-dimensional input with label smoothing, and a 1-D input', function()
    local x = randn({ 2, 3, 4 }, 104)
    torch.manual_seed(105)
    local tg = torch.randint(1, 4, { 2, 4 })
    for _, red in ipairs { 'none', 'sum' } do
      local o = { reduction = red, label_smoothing = 0.1 }
      H.assert_values(F.cross_entropy(x, tg, o), ref_ce(flat(x), { 2, 3, 4 }, flat(tg), o), 1e-12, red)
    end
    local o = { label_smoothing = 0.1 }
    H.assert_values(F.cross_entropy(x, tg, o), ref_ce(flat(x), { 2, 3, 4 }, flat(tg), o), 1e-12, 'mean')
    local v = randn({ 5 }, 106)
    H.assert_values(F.cross_entropy(v, torch.tensor(3)), ref_ce(flat(v), { 5 }, { 3 }, {}), 1e-12, '1-D')
  end)

  it('gradients through log_softmax and nll_loss (gradcheck), with label smoothing', function()
    local tg = torch.tensor({ 2, 1, 4 })
    local w = randn({ 4 }, 107):abs() + 0.1
    assert.is_true(gradcheck(function(a) return F.cross_entropy(a, tg) end, { leaf({ 3, 4 }, 108) }))
    assert.is_true(gradcheck(function(a) return F.cross_entropy(a, tg, { weight = w, label_smoothing = 0.2 }) end,
      { leaf({ 3, 4 }, 109) }))
    assert.is_true(gradcheck(function(a) return F.cross_entropy(a, tg, { ignore_index = 1, reduction = 'sum' }) end,
      { leaf({ 3, 4 }, 110) }))
  end)

  it('the float32 (64, 10) training step: loss and gradient against float64', function()
    local x = randn({ 64, 10 }, 111) * 3
    local tg = rand_targets(64, 10, 112)
    local x64, x32 = x:clone():requires_grad_(), x:float():requires_grad_()
    local l64, l32 = F.cross_entropy(x64, tg), F.cross_entropy(x32, tg)
    H.close(l32:item(), l64:item(), 1e-6)
    l64:backward()
    l32:backward()
    H.assert_values(x32.grad, flat(x64.grad), 1e-6)
  end)
end)

---------------------------------------------------------------------------------------------------
-- inputs large enough for the threaded loops, against references composed of other tensor ops
-- (autograd through them for the gradients) or plain Lua
describe('large inputs (threaded loops)', function()
  local prev_threads
  setup(function()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(math.max(prev_threads, 2)) -- the threaded paths even on one core
  end)
  teardown(function() torch.set_num_threads(prev_threads) end)

  it('softmax and log_softmax along the last and a middle dim, forward and backward', function()
    for _, log in ipairs { false, true } do
      local fn = log and F.log_softmax or F.softmax
      for _, case in ipairs { { { 64, 2048 }, 2 }, { { 8, 300, 40 }, 2 } } do
        local sh, d = case[1], case[2]
        local x = randn(sh, 120)
        H.assert_values(fn(x, d), ref_softmax(flat(x), sh, d, log), 1e-12, 'forward')
        local xa, xb = x:clone():requires_grad_(), x:clone():requires_grad_()
        local g = randn(sh, 121)
        fn(xa, d):backward(g)
        local m = xb:amax(d, true):detach()
        local e = (xb - m):exp()
        local ref = log and (xb - m - e:sum(d, true):log()) or e / e:sum(d, true)
        ref:backward(g)
        H.assert_values(xa.grad, flat(xb.grad), 1e-10, 'backward')
      end
    end
  end)

  local function composed_norm(x, dims, w, b, eps)
    local mu = x:mean(dims, true)
    local var = ((x - mu) ^ 2):mean(dims, true)
    local y = (x - mu) / (var + eps):sqrt()
    if w then y = y * w end
    if b then y = y + b end
    return y
  end

  it('batch_norm [N, C] and [N, C, L] in training, forward and backward', function()
    for _, sh in ipairs { { 4096, 24 }, { 64, 8, 160 } } do
      local C = sh[2]
      local x = randn(sh, 122)
      local view = #sh == 2 and { 1, C } or { 1, C, 1 }
      local dims = #sh == 2 and { 1 } or { 1, 3 }
      local w, b = randn({ C }, 123), randn({ C }, 124)
      local xa, wa, ba = x:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
      local xb, wb, bb = x:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
      local rm, rv = torch.zeros(C, { dtype = torch.float64 }), torch.ones(C, { dtype = torch.float64 })
      local y = F.batch_norm(xa, rm, rv, wa, ba, { training = true })
      local ref = composed_norm(xb, dims, wb:view(view), bb:view(view), 1e-5)
      H.assert_values(y, flat(ref), 1e-10, 'forward')
      local M = x:numel() // C
      local var_u = ((x - x:mean(dims, true)) ^ 2):sum(dims) / (M - 1)
      H.assert_values(rm, flat(x:mean(dims) * 0.1), 1e-12, 'running_mean')
      H.assert_values(rv, flat(var_u * 0.1 + 0.9), 1e-12, 'running_var')
      local g = randn(sh, 125)
      y:backward(g)
      ref:backward(g)
      H.assert_values(xa.grad, flat(xb.grad), 1e-9, 'x.grad')
      H.assert_values(wa.grad, flat(wb.grad), 1e-9, 'w.grad')
      H.assert_values(ba.grad, flat(bb.grad), 1e-9, 'b.grad')
    end
  end)

  it('layer_norm of [300, 256], forward and backward', function()
    local x, w, b = randn({ 300, 256 }, 126), randn({ 256 }, 127), randn({ 256 }, 128)
    local xa, wa, ba = x:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
    local xb, wb, bb = x:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
    local y = F.layer_norm(xa, 256, wa, ba)
    local ref = composed_norm(xb, { 2 }, wb, bb, 1e-5)
    H.assert_values(y, flat(ref), 1e-10, 'forward')
    local g = randn({ 300, 256 }, 129)
    y:backward(g)
    ref:backward(g)
    H.assert_values(xa.grad, flat(xb.grad), 1e-9, 'x.grad')
    H.assert_values(wa.grad, flat(wb.grad), 1e-9, 'w.grad')
    H.assert_values(ba.grad, flat(bb.grad), 1e-9, 'b.grad')
  end)

  it('nll_loss over [2, 3, 200, 200] with weights and ignore_index, forward and backward', function()
    local sh = { 2, 3, 200, 200 }
    local lp = F.log_softmax(randn(sh, 130), 2):detach():requires_grad_()
    torch.manual_seed(131)
    local tg = torch.randint(1, 4, { 2, 200, 200 })
    local w = torch.tensor({ 0.5, 2.0, 1.5 }, { dtype = torch.float64 })
    local lpv, tgv = flat(lp), flat(tg)
    local per, sum, wsum = ref_nll(lpv, sh, tgv, { 0.5, 2.0, 1.5 }, 3)
    local l = F.nll_loss(lp, tg, { weight = w, ignore_index = 3 })
    H.close(l:item(), sum / wsum, 1e-12)
    H.assert_values(F.nll_loss(lp, tg, { weight = w, ignore_index = 3, reduction = 'none' }), per, 1e-12)
    l:backward()
    local want = {}
    for i = 1, #lpv do want[i] = 0 end
    local S, wv = 200 * 200, { 0.5, 2.0, 1.5 }
    for i = 1, #tgv do
      local t = tgv[i]
      if t ~= 3 then
        local n, s = (i - 1) // S, (i - 1) % S
        want[(n * 3 + t - 1) * S + s + 1] = -wv[t] / wsum
      end
    end
    H.assert_values(lp.grad, want, 1e-12, 'grad')
  end)
end)

describe('empty inputs', function()
  it('give empty results (and NaN for a mean over nothing)', function()
    assert.are.same({ 0, 3 }, shape_of(F.softmax(torch.zeros(0, 3), 2)))
    assert.are.same({ 3, 0 }, shape_of(F.log_softmax(torch.zeros(3, 0), 2)))
    assert.are.same({ 0, 4 }, shape_of(F.layer_norm(torch.zeros(0, 4), 4)))
    local lp = torch.zeros(0, 3)
    local tg = torch.zeros(0, { dtype = torch.int64 })
    assert.are.same({ 0 }, shape_of(F.nll_loss(lp, tg, { reduction = 'none' })))
    H.assert_values(F.nll_loss(lp, tg, { reduction = 'sum' }), { 0 }, 0)
    local m = F.nll_loss(lp, tg):item()
    assert.is_true(m ~= m)
  end)
end)
