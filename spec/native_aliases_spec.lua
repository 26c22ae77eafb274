-- PyTorch's native_ and low-level op forms (lua/torch/nn/native_aliases.lua), SyncBatchNorm's
-- primitives torch.batch_norm_* (lua/torch/nn/sync_batchnorm.lua), the functional RNNs torch.lstm,
-- torch.gru, torch.rnn_tanh, torch.rnn_relu (lua/torch/nn/rnn.lua), and the tensor methods of
-- lua/torch/layout.lua: values and gradients against PyTorch 1.13 (spec/data/native_aliases_reference.lua,
-- made by tools/gen_native_aliases_reference.py), the extra outputs against plain formulas, float32
-- and non-contiguous inputs, and the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local ref = dofile('spec/data/native_aliases_reference.lua')
local f64 = { dtype = torch.float64 }

-- det(shape, k, scale) as tools/gen_native_aliases_reference.py makes it, a leaf requiring grad
local function det(shape, k, scale)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = math.sin(i * 0.7071 + k * 1.3) * (scale or 1) + i * 1e-4 end
  return torch.tensor(v, f64):reshape(shape):requires_grad_()
end

local function same(got, want, tol, what)
  assert(table.concat(got.shape, ',') == table.concat(want.shape, ','),
    string.format('%s: shape [%s], expected [%s]', what, table.concat(got.shape, ', '), table.concat(want.shape, ', ')))
  H.assert_values(got:detach():to(torch.float64), want.data, tol or 1e-10, what)
end

-- the gradients of sum(output_i * det(shape, 500 + i)) with respect to `ins`, against want
local function same_grads(outs, ins, want, tol, what)
  local loss
  for i, o in ipairs(outs) do
    local t = (o * det(o.shape, 500 + i - 1):detach():to(o.dtype)):sum()
    loss = loss and loss + t or t
  end
  local gs = torch.autograd.grad(loss, ins)
  for i = 1, #ins do same(gs[i], want[i], tol, (what or 'grad') .. ' ' .. i) end
end

describe('native_ normalisation', function()
  it('native_layer_norm: output, mean, rstd and gradients as PyTorch; float32 and a non-contiguous input', function()
    local r = ref.layer_norm
    local x, w, b = det({ 2, 3, 4 }, 1), det({ 4 }, 2, 0.5), det({ 4 }, 3, 0.5)
    local out, mean, rstd = torch.native_layer_norm(x, { 4 }, w, b, 1e-5)
    same(out, r.out, 1e-10, 'out'); same(mean, r.mean, 1e-12, 'mean'); same(rstd, r.rstd, 1e-10, 'rstd')
    same_grads({ out }, { x, w, b }, r.grads)
    -- float32, and x as a non-contiguous view of the same values
    local xt = x:detach():float():transpose(1, 3):contiguous():transpose(1, 3)
    assert(not xt:is_contiguous())
    local o32, m32, s32 = torch.native_layer_norm(xt, 4, w:detach():float(), b:detach():float(), 1e-5)
    assert(o32.dtype == torch.float32)
    same(o32, r.out, 1e-5, 'out f32'); same(m32, r.mean, 1e-5, 'mean f32'); same(s32, r.rstd, 1e-5, 'rstd f32')
  end)

  it('native_batch_norm: training output, save_mean, save_invstd, running statistics and gradients; eval', function()
    local r = ref.batch_norm
    local x, w, b = det({ 4, 3, 5 }, 4), det({ 3 }, 5, 0.5), det({ 3 }, 6, 0.5)
    local rm, rv = det({ 3 }, 7, 0.1):detach(), (det({ 3 }, 8) ^ 2 + 1):detach()
    local out, sm, si = torch.native_batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5)
    same(out, r.out, 1e-10, 'out'); same(sm, r.save_mean, 1e-12, 'save_mean'); same(si, r.save_invstd, 1e-10, 'save_invstd')
    same(rm, r.running_mean, 1e-12, 'running_mean'); same(rv, r.running_var, 1e-12, 'running_var')
    same_grads({ out }, { x, w, b }, r.grads)
    local e = ref.batch_norm_eval
    out, sm, si = torch.native_batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5)
    same(out, e.out, 1e-10, 'eval out'); same(sm, e.save_mean, 0, 'eval save_mean'); assert(si:numel() == 0)
    same_grads({ out }, { x, w, b }, e.grads)
  end)

  it('native_group_norm: output, mean and rstd (N x group) and gradients', function()
    local r = ref.group_norm
    local x, w, b = det({ 2, 6, 5 }, 9), det({ 6 }, 10, 0.5), det({ 6 }, 11, 0.5)
    local out, mean, rstd = torch.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5)
    same(out, r.out, 1e-10, 'out'); same(mean, r.mean, 1e-12, 'mean'); same(rstd, r.rstd, 1e-10, 'rstd')
    same_grads({ out }, { x, w, b }, r.grads)
  end)

  it('refuse bad arguments, naming the op', function()
    local x = torch.randn(2, 3, 4)
    H.raises(function() torch.native_layer_norm(x, { 3 }, nil, nil, 1e-5) end, 'native_layer_norm', 'normalized_shape=[3]')
    H.raises(function() torch.native_layer_norm(x, { 4 }, nil, nil) end, 'native_layer_norm', 'eps', 'number')
    H.raises(function() torch.native_layer_norm(x:long(), { 4 }, nil, nil, 1e-5) end, 'native_layer_norm', 'floating')
    H.raises(function() torch.native_batch_norm(x, nil, nil, nil, nil, 1, 0.1, 1e-5) end, 'native_batch_norm', 'training', 'boolean')
    H.raises(function() torch.native_batch_norm(torch.randn(3), nil, nil, nil, nil, true, 0.1, 1e-5) end, 'native_batch_norm', '2 dimensions')
    H.raises(function() torch.native_group_norm(x, nil, nil, 2, 3, 5, 1, 1e-5) end, 'native_group_norm', '[2, 3, 4]')
    H.raises(function() torch.native_group_norm(x, nil, nil, 2, 3, 4, 2, 1e-5) end, 'native_group_norm', 'divisible')
    H.raises(function() torch.native_group_norm('x', nil, nil, 2, 3, 4, 1, 1e-5) end, 'native_group_norm', 'input', 'tensor')
  end)
end)

describe('native_dropout', function()
  it('returns input * mask / (1 - p) and the boolean mask of the kept elements', function()
    torch.manual_seed(3)
    local x = torch.randn(200, 50):transpose(1, 2) -- non-contiguous
    local y, mask = torch.native_dropout(x, 0.3, true)
    assert(mask.dtype == torch.bool and table.concat(mask.shape, ',') == '50,200')
    local kept = mask:sum():item() / mask:numel()
    assert(math.abs(kept - 0.7) < 0.02, 'kept fraction ' .. kept)
    H.assert_values(y, (x * mask:double():float() / 0.7):totable(), 1e-6, 'output')
    local z, m1 = torch.native_dropout(x, 1, true)
    assert(z:abs():sum():item() == 0 and not m1:any():item())
    local c, m2 = torch.native_dropout(x, 0.3, false)
    H.assert_values(c, x:totable(), 0, 'eval output'); assert(m2:all():item())
    local d, m3 = torch.native_dropout(x, 0.5, nil) -- None: training
    assert(not m3:all():item() and d.shape[1] == 50)
    -- the gradient is the mask's scale
    local leaf = torch.ones(4, 5, { requires_grad = true })
    local o, m = torch.native_dropout(leaf, 0.5, true)
    o:sum():backward()
    H.assert_values(leaf.grad, (m:float() * 2):totable(), 0, 'grad')
    H.raises(function() torch.native_dropout(x, 1.5, true) end, 'native_dropout', 'between 0 and 1')
    H.raises(function() torch.native_dropout(x, 0.5, 1) end, 'native_dropout', 'train', 'boolean')
    H.raises(function() torch.native_dropout(x:long(), 0.5, true) end, 'native_dropout', 'floating')
  end)
end)

describe('convolution forms', function()
  it('conv_tbc (and F.conv_tbc) as PyTorch, with gradients, float32 and non-contiguous', function()
    local r = ref.conv_tbc
    local x, w, b = det({ 7, 2, 3 }, 12), det({ 3, 3, 4 }, 13, 0.5), det({ 4 }, 14, 0.5)
    local out = torch.conv_tbc(x, w, b, 1)
    same(out, r.out, 1e-10, 'out')
    same_grads({ out }, { x, w, b }, r.grads)
    local xt = x:detach():float():transpose(1, 2):contiguous():transpose(1, 2)
    assert(not xt:is_contiguous())
    same(torch.F.conv_tbc(xt, w:detach():float(), b:detach():float(), 1), r.out, 1e-5, 'F out f32')
    H.raises(function() torch.conv_tbc(x, w, torch.randn(5, f64), 1) end, 'conv_tbc', 'Bias size (5)', 'dim 3')
    H.raises(function() torch.conv_tbc(x, torch.randn(3, 2, 4, f64), b, 1) end, 'conv_tbc', 'Input dim 3')
    H.raises(function() torch.conv_tbc(torch.randn(7, 3), w, b) end, 'conv_tbc', 'Input must have 3 dims')
    H.raises(function() torch.conv_tbc(x, w, nil) end, 'conv_tbc', 'bias', 'tensor')
  end)

  it('convolution: a grouped, strided, dilated 2-D one and a transposed 1-D one as PyTorch', function()
    local r = ref.convolution2d
    local x, w, b = det({ 2, 4, 6, 7 }, 15), det({ 6, 2, 3, 2 }, 16, 0.5), det({ 6 }, 17, 0.5)
    local out = torch.convolution(x, w, b, { 2, 1 }, { 1, 0 }, { 1, 2 }, false, { 0, 0 }, 2)
    same(out, r.out, 1e-10, 'out 2d')
    same_grads({ out }, { x, w, b }, r.grads)
    local t = ref.convolution_t1d
    local x1, w1 = det({ 2, 4, 5 }, 18), det({ 4, 3, 3 }, 19, 0.5)
    local o1 = torch.convolution(x1, w1, nil, { 2 }, { 1 }, { 1 }, true, { 1 }, 1)
    same(o1, t.out, 1e-10, 'out t1d')
    same_grads({ o1 }, { x1, w1 }, t.grads)
    H.raises(function() torch.convolution(x, w, b, 1, 0, 1, 'no', 0, 2) end, 'convolution', 'transposed', 'boolean')
    H.raises(function() torch.convolution(x1, w, b, 1, 0, 1, false, 0, 2) end, 'convolution', '4-D input')
    H.raises(function() torch.convolution(x, w, b, 'a', 0, 1, false, 0, 2) end, 'convolution', 'stride')
  end)
end)

describe('grid_sampler and affine_grid_generator', function()
  it('take PyTorch mode numbers: bicubic/reflection 2-D, bilinear/border 3-D, nearest/zeros; gradients', function()
    local r = ref.grid_sampler_2d
    local x, g = det({ 1, 2, 4, 5 }, 20), det({ 1, 3, 2, 2 }, 21, 1.2)
    local out = torch.grid_sampler_2d(x, g, 2, 2, true)
    same(out, r.out, 1e-10, 'out 2d')
    same_grads({ out }, { x, g }, r.grads, 1e-9)
    local r3 = ref.grid_sampler_3d
    local x3, g3 = det({ 1, 2, 3, 4, 3 }, 22), det({ 1, 2, 2, 3, 3 }, 23, 1.1)
    local o3 = torch.grid_sampler_3d(x3, g3, 0, 1, false)
    same(o3, r3.out, 1e-10, 'out 3d')
    same_grads({ o3 }, { x3, g3 }, r3.grads, 1e-9)
    same(torch.grid_sampler(det({ 1, 1, 3, 4 }, 24), det({ 1, 2, 3, 2 }, 25, 1.1), 1, 0, false), ref.grid_sampler_nearest.out,
      1e-12, 'nearest')
    same(torch.grid_sampler(x3:detach():float(), g3:detach():float(), 0, 1, false), r3.out, 1e-5, 'grid_sampler 3d f32')
    H.raises(function() torch.grid_sampler(x, g, 3, 0, false) end, 'grid_sampler', 'interpolation_mode', 'got 3')
    H.raises(function() torch.grid_sampler(x, g, 0, 5, false) end, 'grid_sampler', 'padding_mode')
    H.raises(function() torch.grid_sampler_3d(x, g, 0, 0, false) end, 'grid_sampler_3d', '5-D input')
    H.raises(function() torch.grid_sampler_2d(x, g, 0, 0) end, 'grid_sampler_2d', 'align_corners', 'boolean')
  end)

  it('affine_grid_generator as PyTorch, with the gradient of theta', function()
    local theta = det({ 2, 2, 3 }, 26)
    local out = torch.affine_grid_generator(theta, { 2, 1, 3, 4 }, false)
    same(out, ref.affine_grid.out, 1e-12, 'grid')
    same_grads({ out }, { theta }, ref.affine_grid.grads)
    H.raises(function() torch.affine_grid_generator(theta, { 2, 1, 3, 4 }) end, 'affine_grid_generator', 'align_corners')
  end)

  it('native_channel_shuffle (and F.native_channel_shuffle) is channel_shuffle', function()
    local x = torch.arange(24):float():view(2, 6, 2)
    H.assert_values(torch.native_channel_shuffle(x, 3), torch.channel_shuffle(x, 3):totable(), 0, 'shuffle')
    H.assert_values(torch.F.native_channel_shuffle(x, 2), torch.channel_shuffle(x, 2):totable(), 0, 'F shuffle')
    H.raises(function() torch.native_channel_shuffle(3, 2) end, 'native_channel_shuffle', 'tensor')
  end)
end)

describe("SyncBatchNorm's primitives", function()
  -- x (5, 3, 4) as two ranks' batches x[1:2] and x[3:5]: gathered, they are batch_norm over x
  local r = ref.sync

  it('batch_norm_stats and batch_norm_gather_stats_with_counts give the whole batch mean, invstd and running statistics', function()
    local x = det({ 5, 3, 4 }, 27):detach()
    local m1, i1 = torch.batch_norm_stats(x:narrow(1, 1, 2), 1e-5)
    local m2, i2 = torch.batch_norm_stats(x:narrow(1, 3, 3), 1e-5)
    local m, i = torch.batch_norm_stats(x, 1e-5)
    same(m, r.mean, 1e-12, 'stats mean'); same(i, r.invstd, 1e-10, 'stats invstd')
    local rm, rv = det({ 3 }, 30, 0.1):detach(), (det({ 3 }, 31) ^ 2 + 1):detach()
    local gm, gi = torch.batch_norm_gather_stats_with_counts(x, torch.stack({ m1, m2 }), torch.stack({ i1, i2 }), rm, rv, 0.1,
      1e-5, torch.tensor({ 8, 12 }, f64))
    same(gm, r.mean, 1e-12, 'gathered mean'); same(gi, r.invstd, 1e-9, 'gathered invstd')
    same(rm, r.running_mean, 1e-12, 'running_mean'); same(rv, r.running_var, 1e-9, 'running_var')
    -- equal counts: batch_norm_gather_stats; a rank with no rows (invstd 0, count 0) weighs nothing
    local a, c = torch.batch_norm_stats(x:narrow(1, 1, 1), 1e-5)
    local a2, c2 = torch.batch_norm_stats(x:narrow(1, 2, 1), 1e-5)
    local both, ib = torch.batch_norm_stats(x:narrow(1, 1, 2), 1e-5)
    local gm2, gi2 = torch.batch_norm_gather_stats(x, torch.stack({ a, a2 }), torch.stack({ c, c2 }), nil, nil, 0.1, 1e-5, 4)
    H.assert_values(gm2, both:totable(), 1e-12, 'gather_stats mean'); H.assert_values(gi2, ib:totable(), 1e-9, 'gather_stats invstd')
    local gm3, gi3 = torch.batch_norm_gather_stats_with_counts(x, torch.stack({ both, torch.zeros(3, f64) }),
      torch.stack({ ib, torch.zeros(3, f64) }), nil, nil, 0.1, 1e-5, torch.tensor({ 8, 0 }, f64))
    H.assert_values(gm3, both:totable(), 1e-12, 'empty rank mean'); H.assert_values(gi3, ib:totable(), 1e-9, 'empty rank invstd')
  end)

  it('batch_norm_elemt and the backward primitives give batch_norm and its gradients', function()
    local x = det({ 5, 3, 4 }, 27):detach()
    local w, b = det({ 3 }, 28, 0.5):detach(), det({ 3 }, 29, 0.5):detach()
    local mean, invstd = torch.batch_norm_stats(x, 1e-5)
    same(torch.batch_norm_elemt(x, w, b, mean, invstd, 1e-5), r.out, 1e-10, 'elemt')
    local dy = det({ 5, 3, 4 }, 500):detach()
    local sdy, sdyx, gw, gb = torch.batch_norm_backward_reduce(dy, x, mean, invstd, w, true, true, true)
    same(sdy, r.sum_dy, 1e-12, 'sum_dy'); same(sdyx, r.sum_dy_xmu, 1e-12, 'sum_dy_xmu')
    same(gw, r.grad_weight, 1e-10, 'grad_weight'); same(gb, r.grad_bias, 1e-12, 'grad_bias')
    local a, bb, c, d = torch.batch_norm_backward_reduce(dy, x, mean, invstd, w, false, false, true)
    assert(a == nil and bb == nil and c == nil and d ~= nil)
    -- each rank's rows from the all-reduced sums and both ranks' counts
    local counts = torch.tensor({ 2 * 4, 3 * 4 }, f64)
    local g1 = torch.batch_norm_backward_elemt(dy:narrow(1, 1, 2), x:narrow(1, 1, 2), mean, invstd, w, sdy, sdyx, counts)
    local g2 = torch.batch_norm_backward_elemt(dy:narrow(1, 3, 3), x:narrow(1, 3, 3), mean, invstd, w, sdy, sdyx, counts)
    same(torch.cat({ g1, g2 }, 1), r.grad_input, 1e-10, 'grad_input')
    -- float32, non-contiguous x
    local xf = x:float():transpose(1, 3):contiguous():transpose(1, 3)
    local mf, inf = torch.batch_norm_stats(xf, 1e-5)
    same(torch.batch_norm_elemt(xf, w:float(), b:float(), mf, inf, 1e-5), r.out, 1e-5, 'elemt f32')
  end)

  it('batch_norm_update_stats as PyTorch (mean, biased variance; running statistics updated)', function()
    local u = ref.update_stats
    local x = det({ 5, 3, 4 }, 27):detach()
    local rm, rv = det({ 3 }, 30, 0.1):detach(), (det({ 3 }, 31) ^ 2 + 1):detach()
    local m, v = torch.batch_norm_update_stats(x, rm, rv, 0.1)
    same(m, u.mean, 1e-12, 'mean'); same(v, u.var, 1e-12, 'var')
    same(rm, u.running_mean, 1e-12, 'running_mean'); same(rv, u.running_var, 1e-12, 'running_var')
  end)

  it('refuse bad arguments, naming the op', function()
    local x = torch.randn(4, 3, 2)
    H.raises(function() torch.batch_norm_stats(x:long(), 1e-5) end, 'batch_norm_stats', 'floating')
    H.raises(function() torch.batch_norm_stats(x) end, 'batch_norm_stats', 'eps')
    H.raises(function() torch.batch_norm_elemt(x, nil, nil, torch.zeros(2), torch.ones(3), 1e-5) end, 'batch_norm_elemt', 'mean of shape [3]')
    H.raises(function() torch.batch_norm_gather_stats_with_counts(x, torch.zeros(2, 3), torch.ones(2, 3), nil, nil, 0.1, 1e-5,
      torch.ones(3)) end, 'batch_norm_gather_stats_with_counts', 'shape [3, 3]')
    H.raises(function() torch.batch_norm_gather_stats(x, torch.zeros(2, 3), torch.ones(2, 3), nil, nil, 0.1, 1e-5, 1.5) end,
      'batch_norm_gather_stats', 'count', 'integer')
    H.raises(function() torch.batch_norm_backward_reduce(x, x, torch.zeros(3), torch.ones(3), nil, 1, true, true) end,
      'batch_norm_backward_reduce', 'input_g', 'boolean')
    H.raises(function() torch.batch_norm_backward_elemt(x:narrow(1, 1, 2), x, torch.zeros(3), torch.ones(3), nil, torch.zeros(3),
      torch.zeros(3), torch.ones(1)) end, 'batch_norm_backward_elemt', 'grad_out')
    H.raises(function() torch.batch_norm_update_stats(x, torch.zeros(4), nil, 0.1) end, 'batch_norm_update_stats', 'running_mean')
  end)
end)

describe('functional RNNs', function()
  it('torch.lstm: 2 layers, bidirectional, batch_first, as PyTorch with gradients', function()
    local r = ref.lstm
    local params, k = {}, 40
    for l = 0, 1 do
      for _ = 0, 1 do
        local in_size = l == 0 and 3 or 8
        for _, s in ipairs { { 16, in_size }, { 16, 4 }, { 16 }, { 16 } } do
          params[#params + 1] = det(s, k, 0.5); k = k + 1
        end
      end
    end
    local x, h0, c0 = det({ 2, 5, 3 }, 60), det({ 4, 2, 4 }, 61, 0.5), det({ 4, 2, 4 }, 62, 0.5)
    local out, hn, cn = torch.lstm(x, { h0, c0 }, params, true, 2, 0.0, false, true, true)
    same(out, r.out, 1e-10, 'out'); same(hn, r.h_n, 1e-10, 'h_n'); same(cn, r.c_n, 1e-10, 'c_n')
    same_grads({ out, hn, cn }, { x, h0, c0, params[1], params[10] }, r.grads)
    -- the same as nn.LSTM with those parameters
    local m = torch.nn.LSTM(3, 4, { num_layers = 2, bidirectional = true, batch_first = true, dtype = torch.float64 })
    for i, p in ipairs(m:parameters()) do torch.no_grad(function() p:copy_(params[i]) end) end
    local mo, st = m(x, { h0, c0 })
    H.assert_values(mo, out:totable(), 1e-12, 'nn.LSTM out'); H.assert_values(st[2], cn:totable(), 1e-12, 'nn.LSTM c_n')
  end)

  it('torch.gru in its packed form (data, batch_sizes, hx, params, ...) as PyTorch', function()
    local r = ref.gru_packed
    local params = {}
    for i, s in ipairs { { 6, 3 }, { 6, 2 }, { 6 }, { 6 }, { 6, 3 }, { 6, 2 }, { 6 }, { 6 } } do params[i] = det(s, 69 + i, 0.5) end
    local data, h0 = det({ 9, 3 }, 78), det({ 2, 3, 2 }, 79, 0.5)
    local out, hn = torch.gru(data, torch.tensor({ 3, 3, 2, 1 }), h0, params, true, 1, 0.0, false, true)
    same(out, r.out, 1e-10, 'out'); same(hn, r.h_n, 1e-10, 'h_n')
    same_grads({ out, hn }, { data, h0, params[2], params[6] }, r.grads)
  end)

  it('torch.rnn_relu and torch.rnn_tanh without biases as PyTorch; float32', function()
    local params = {}
    for i = 1, 4 do params[i] = det({ 3, 3 }, 79 + i, 0.5) end
    local x, h0 = det({ 4, 2, 3 }, 84), det({ 2, 2, 3 }, 85, 0.5)
    local out, hn = torch.rnn_relu(x, h0, params, false, 2, 0.0, false, false, false)
    same(out, ref.rnn_relu.out, 1e-10, 'relu out'); same(hn, ref.rnn_relu.h_n, 1e-10, 'relu h_n')
    same_grads({ out, hn }, { x, h0, params[3] }, ref.rnn_relu.grads)
    local p32 = {}
    for i, p in ipairs(params) do p32[i] = p:detach():float() end
    local o32, h32 = torch.rnn_tanh(x:detach():float(), h0:detach():float(), p32, false, 2, 0.0, false, false, false)
    same(o32, ref.rnn_tanh.out, 1e-5, 'tanh out f32'); same(h32, ref.rnn_tanh.h_n, 1e-5, 'tanh h_n f32')
  end)

  it('refuse bad arguments, naming the op', function()
    local x, h = torch.randn(4, 2, 3), torch.zeros(1, 2, 3)
    local p = { torch.randn(3, 3), torch.randn(3, 3) }
    H.raises(function() torch.rnn_tanh(x, h, p, true, 1, 0, false, false, false) end, 'rnn_tanh', 'expected 4 tensors in params')
    H.raises(function() torch.rnn_tanh(x, torch.zeros(2, 2, 3), p, false, 1, 0, false, false, false) end, 'rnn_tanh',
      'Expected hidden size (1, 2, 3)')
    H.raises(function() torch.rnn_relu(x[1], h, p, false, 1, 0, false, false, false) end, 'rnn_relu', 'input must have 3 dimensions')
    H.raises(function() torch.lstm(x, h, { torch.randn(12, 3), torch.randn(12, 3) }, false, 1, 0, false, false, false) end,
      'lstm', 'hx must be a table')
    H.raises(function() torch.gru(x, h, p, false, 0, 0, false, false, false) end, 'gru', 'num_layers')
    H.raises(function() torch.gru(x, h, p, false, 1, 2, false, false, false) end, 'gru', 'dropout')
    H.raises(function() torch.gru(torch.randn(4, 2, 5), h, { torch.randn(9, 3), torch.randn(9, 3) }, false, 1, 0, false, false,
      false) end, 'gru', 'input_size. Expected 3, got 5')
  end)
end)

describe('tensor layout and identity', function()
  it('layout, is_nested, output_nr, is_set_to', function()
    local x = torch.randn(4, 3, 5)
    assert(x.layout == torch.strided and tostring(torch.strided) == 'torch.strided' and torch.is_layout(x.layout))
    assert(x.is_nested == false)
    assert(x.output_nr == 0)
    local z = torch.randn(3, 3, { requires_grad = true })
    local _, vecs = torch.linalg.eigh(z + z:t())
    assert(vecs.output_nr == 1, 'eigenvectors are output 1 of their node, got ' .. tostring(vecs.output_nr))
    assert(x:is_set_to(x) and x:is_set_to(x:view(4, 3, 5)))
    assert(not x:is_set_to(x:clone()) and not x:is_set_to(x:transpose(1, 2)) and not x:is_set_to(x:view(12, 5)))
    assert(not x:is_set_to(x:narrow(1, 2, 3)) and not x:narrow(1, 1, 3):is_set_to(x:narrow(1, 2, 3)))
    H.raises(function() x:is_set_to(3) end, 'is_set_to', 'tensor')
  end)

  it("resize and resize_as are Torch7's, in place (resize_, resize_as_), returning the tensor", function()
    local x = torch.arange(1, 7):double()
    local y = x:resize(2, 3)
    assert.is_true(rawequal(x, y))
    H.assert_values(x, { { 1, 2, 3 }, { 4, 5, 6 } }, 0, 'resize')
    x:resize({ 4 }) -- fewer elements: the first ones, the storage kept
    H.assert_values(x, { 1, 2, 3, 4 }, 0, 'shrunk')
    x:resize(torch.Size({ 2, 2 }))
    H.assert_values(x, { { 1, 2 }, { 3, 4 } }, 0, 'a Size')
    local z = torch.zeros(1)
    assert.is_true(rawequal(z, z:resize_as(torch.zeros(2, 3))))
    assert.are.same({ 2, 3 }, { z:size(1), z:size(2) })
    z:resizeAs(torch.zeros(4)) -- Torch7's name
    assert.are.equal(4, z:numel())
    H.raises(function() x:resize(-1) end, 'resize_', 'negative')
    H.raises(function() x:resize_as(5) end, 'resize_as', 'tensor')
    H.raises(function() torch.zeros(2, { requires_grad = true }):resize(4) end, 'resize_')
  end)
end)
