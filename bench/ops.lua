-- Common small and medium ops, one at a time (us per call): reductions over a classifier's 256 x 10
-- logits, activations and normalisations of a 64 x 512 layer, reductions of a 256 x 784 batch,
-- lookups and copies. bench/torch_ops.py times the same calls in PyTorch; bench/run.sh prints the
-- pairs with their ratios. Run: build/lutorch bench/ops.lua [threads]
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'
local F = torch.nn.functional

if arg[1] then torch.set_num_threads(tonumber(arg[1])) end
torch.manual_seed(0)
local x = torch.rand(256, 10)
local y = torch.randint(1, 11, { 256 })
local h = torch.rand(64, 512)
local hg = torch.rand(64, 512):requires_grad_()
local w512, b512 = torch.rand(512), torch.rand(512)
local big = torch.rand(256, 784)
local emb = torch.rand(1000, 64)
local idx = torch.randint(1, 1001, { 256 })
local rm, rv = torch.zeros(512), torch.ones(512)
local mask = h:gt(0.5)
local img = torch.rand(16, 8, 32, 32)
local wide = torch.rand(64, 1000)
local w16, b16 = torch.rand(16, 512), torch.rand(16)
local hs = h * 2 - 1 -- both signs (elu and leaky_relu take a branch per sign)

-- name, call: the names are bench/torch_ops.py's too
local cases = {
  { 'max_dim_256x10', function() return x:max(2) end },
  { 'argmax_256x10', function() return x:argmax(2) end },
  { 'sum_dim_256x10', function() return x:sum(2) end },
  { 'logsumexp_256x10', function() return x:logsumexp(2) end },
  { 'log_softmax_256x10', function() return F.log_softmax(x, 2) end },
  { 'accuracy_256x10', function() return x:argmax(2):eq(y):sum() end },
  { 'nll_loss_256x10', function() return F.nll_loss(x, y) end },
  { 'topk5_256x10', function() return x:topk(5, 2) end },
  { 'sort_256x10', function() return x:sort(2) end },
  { 'layer_norm_64x512', function() return F.layer_norm(h, { 512 }, w512, b512) end },
  { 'layer_norm_fwd_bwd_64x512', function() F.layer_norm(hg, { 512 }, w512, b512):sum():backward() end },
  { 'batch_norm_train_64x512', function() return F.batch_norm(h, rm, rv, w512, b512, { training = true }) end },
  { 'gelu_64x512', function() return F.gelu(h) end },
  { 'gelu_fwd_bwd_64x512', function() F.gelu(hg):sum():backward() end },
  { 'tanh_64x512', function() return h:tanh() end },
  { 'sigmoid_64x512', function() return h:sigmoid() end },
  { 'dropout_64x512', function() return F.dropout(h, 0.5, true) end },
  { 'clamp_64x512', function() return h:clamp(0.2, 0.8) end },
  { 'where_64x512', function() return torch.where(mask, h, w512) end },
  { 'sum_rows_256x784', function() return big:sum(2) end },
  { 'sum_cols_256x784', function() return big:sum(1) end },
  { 'max_256x784', function() return big:max() end },
  { 'std_rows_256x784', function() return big:std(2) end },
  { 'transpose_copy_256x784', function() return big:t():contiguous() end },
  { 'embedding_256_of_1000x64', function() return F.embedding(idx, emb) end },
  { 'index_select_256_of_1000x64', function() return emb:index_select(1, idx) end },
  { 'cat_2x128x10', function() return torch.cat({ x:narrow(1, 1, 128), x:narrow(1, 129, 128) }, 1) end },
  { 'gt_scalar_64x512', function() return h:gt(0.5) end },
  { 'mask_sum_64x512', function() return mask:sum() end },
  { 'mul_mask_64x512', function() return h * mask end },
  { 'pow2_64x512', function() return h:pow(2) end },
  { 'log_64x512', function() return h:log() end },
  { 'softplus_64x512', function() return F.softplus(h) end },
  { 'logsigmoid_64x512', function() return F.logsigmoid(h) end },
  { 'transpose_copy_64x512', function() return h:t():contiguous() end },
  { 'flip_64x512', function() return h:flip(2) end },
  { 'roll_64x512', function() return h:roll(3, 2) end },
  { 'arange_32768', function() return torch.arange(0, 32768) end },
  { 'global_avg_pool_16x8x32x32', function() return F.adaptive_avg_pool2d(img, 1) end },
  { 'topk5_64x1000', function() return wide:topk(5, 2) end },
  { 'elu_64x512', function() return F.elu(hs) end },
  { 'leaky_relu_64x512', function() return F.leaky_relu(hs, 0.2) end },
  { 'leaky_relu_fwd_bwd_64x512', function() F.leaky_relu(hg, 0.2):sum():backward() end },
  { 'one_minus_64x512', function() return 1 - h end },
  { 'pow3_64x512', function() return h:pow(3) end },
  { 'pad_16x8x32x32', function() return F.pad(img, { 1, 1, 1, 1 }) end },
  { 'interpolate_nearest_16x8x32x32', function() return F.interpolate(img, { scale_factor = 2, mode = 'nearest' }) end },
  { 'linear_64x512_to_16', function() return F.linear(h, w16, b16) end },
}
print('# threads=' .. torch.get_num_threads())
for _, c in ipairs(cases) do
  local f = c[2]
  local function loop(n) for _ = 1, n do f() end end
  local med, lo, hi = B.time(loop, B.calibrate(loop, 0.05), 5)
  B.result('lutorch_ops_' .. c[1], med * 1e6, 'us', string.format('min=%.2f max=%.2f', lo * 1e6, hi * 1e6))
end
