-- torch.nn.functional against PyTorch itself: spec/data/nn_reference.lua holds PyTorch 1.13's
-- outputs and gradients (of sum(y * gy)) for fixed float64 inputs (tools/gen_nn_reference.py).
local torch = require 'torch'
local F = torch.nn.functional

local cases = dofile('spec/data/nn_reference.lua')

local function tensor_of(r)
  local t = torch.tensor(r.data, { dtype = torch[r.dtype] })
  if #r.shape == 0 then return t:reshape({}) end
  return t:reshape(r.shape)
end

-- each case as lutorch writes it; `a` holds the inputs (tensors), `c` the case
local run = {
  conv2d_basic = function(a) return F.conv2d(a.x, a.w, a.b, { padding = 1 }) end,
  conv2d_strided_dilated_groups = function(a)
    return F.conv2d(a.x, a.w, a.b, { stride = { 2, 1 }, padding = { 1, 2 }, dilation = { 1, 2 }, groups = 2 })
  end,
  conv2d_depthwise_nobias = function(a) return F.conv2d(a.x, a.w, nil, { stride = 2, groups = 3 }) end,
  conv2d_1x1 = function(a) return F.conv2d(a.x, a.w, a.b) end,
  conv2d_unbatched = function(a) return F.conv2d(a.x, a.w, a.b, { padding = 2, dilation = 2 }) end,
  max_pool2d_ceil = function(a)
    return F.max_pool2d(a.x, 3, { stride = 2, padding = 1, ceil_mode = true, return_indices = true })
  end,
  max_pool2d_dilated = function(a)
    return F.max_pool2d(a.x, { 2, 3 }, { stride = { 1, 2 }, dilation = { 2, 1 }, return_indices = true })
  end,
  avg_pool2d_ceil_nopad_count = function(a)
    return F.avg_pool2d(a.x, 3, { stride = 2, padding = 1, ceil_mode = true, count_include_pad = false })
  end,
  avg_pool2d_include_pad = function(a) return F.avg_pool2d(a.x, { 3, 2 }, { stride = { 2, 2 }, padding = { 1, 1 } }) end,
  avg_pool2d_divisor = function(a) return F.avg_pool2d(a.x, 2, { divisor_override = 3 }) end,
  adaptive_avg_pool2d = function(a) return F.adaptive_avg_pool2d(a.x, { 3, 4 }) end,
  softmax_dim2 = function(a) return F.softmax(a.x, 2) end,
  log_softmax_last = function(a) return F.log_softmax(a.x, -1) end,
  log_softmax_large = function(a) return F.log_softmax(a.x, 1) end,
  batch_norm_train_3d = function(a)
    local rm, rv = a.rm:clone(), a.rv:clone()
    local y = F.batch_norm(a.x, rm, rv, a.w, a.b, { training = true, momentum = 0.2, eps = 1e-4 })
    return y, torch.cat({ rm, rv })
  end,
  batch_norm_train_4d_noaffine = function(a) return F.batch_norm(a.x, nil, nil, nil, nil, { training = true }) end,
  batch_norm_eval_2d = function(a)
    return F.batch_norm(a.x, a.rm, a.rv, a.w, a.b, { training = false, eps = 1e-3 })
  end,
  layer_norm_2dims = function(a) return F.layer_norm(a.x, { 4, 5 }, a.w, a.b, { eps = 1e-5 }) end,
  layer_norm_noaffine = function(a) return F.layer_norm(a.x, { 6 }) end,
  gelu = function(a) return F.gelu(a.x) end,
  gelu_tanh = function(a) return F.gelu(a.x, { approximate = 'tanh' }) end,
  embedding_padding = function(a, c) return F.embedding(a.idx, a.w, { padding_idx = c.padding_idx }) end,
  linear_3d = function(a) return F.linear(a.x, a.w, a.b) end,
  cross_entropy_weight_ignore_smooth = function(a, c)
    return F.cross_entropy(a.x, a.target, { weight = a.weight, ignore_index = c.ignore_index, label_smoothing = 0.1 })
  end,
  cross_entropy_ignore_smooth = function(a, c)
    return F.cross_entropy(a.x, a.target, { ignore_index = c.ignore_index, label_smoothing = 0.3 })
  end,
  cross_entropy_plain = function(a) return F.cross_entropy(a.x, a.target) end,
  cross_entropy_smooth_sum = function(a)
    return F.cross_entropy(a.x, a.target, { label_smoothing = 0.2, reduction = 'sum' })
  end,
  cross_entropy_kdim_none = function(a) return F.cross_entropy(a.x, a.target, { reduction = 'none' }) end,
  nll_loss_weight_sum = function(a) return F.nll_loss(a.x, a.target, { weight = a.weight, reduction = 'sum' }) end,
  mse_loss = function(a) return F.mse_loss(a.x, a.y) end,
  l1_loss_sum = function(a) return F.l1_loss(a.x, a.y, { reduction = 'sum' }) end,
  bce_with_logits_posweight = function(a)
    return F.binary_cross_entropy_with_logits(a.x, a.y, { weight = a.weight, pos_weight = a.pos_weight })
  end,
}

local function close(got, want, what)
  assert.are.same(want.shape, { table.unpack(got.shape) }, what .. ': shape')
  local g = got:double():reshape(-1):tolist()
  local w = want.data
  for i = 1, #w do
    local tol = 1e-9 * math.max(1, math.abs(w[i]))
    if not (math.abs(g[i] - w[i]) <= tol) then
      error(string.format('%s: element %d is %.17g, PyTorch gives %.17g', what, i, g[i], w[i]), 2)
    end
  end
end

describe('nn.functional parity with PyTorch', function()
  for _, c in ipairs(cases) do
    it(c.name, function()
      local fn = run[c.name]
      assert.is_function(fn, 'no lutorch form for case ' .. c.name)
      local a = {}
      for k, r in pairs(c.inputs) do
        a[k] = tensor_of(r)
        if c.grads and c.grads[k] then a[k]:requires_grad_() end
      end
      local y, y2 = fn(a, c)
      close(y, c.out, c.name .. ' output')
      if c.out2 then
        local want = c.out2
        if want.dtype == 'int64' then -- PyTorch's 0-based indices; lutorch's are 1-based
          local shifted = {}
          for i, v in ipairs(want.data) do shifted[i] = v + 1 end
          want = { shape = want.shape, data = shifted }
        end
        close(y2, want, c.name .. ' second output')
      end
      if c.grads then
        (y * tensor_of(c.gy)):sum():backward()
        for k, r in pairs(c.grads) do
          assert.is_not_nil(a[k].grad, c.name .. ': no gradient for ' .. k)
          close(a[k].grad, r, c.name .. ' gradient of ' .. k)
        end
      end
    end)
  end
end)
