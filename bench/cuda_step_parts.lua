-- The Fashion-MNIST CNN training step on a GPU (batch 256) timed by parts: the model's forward with
-- and without grad, backward, the optimizer, and single ops (conv2d, relu, max_pool2d, linear,
-- cross_entropy), with CUDA events (GPU time) and the process's CPU time (host cost). Two builds run
-- in turns compare where a step's time went. Usage: build/cuda/lutorch bench/cuda_step_parts.lua
local torch = require 'torch'
local B = require 'bench.lib'
local F = torch.nn.functional
local dev = 'cuda'
local gpu_ms = B.gpu_ms
local function host_us(f, iters)
  f(); torch.cuda.synchronize()
  local t0 = os.clock()
  for _ = 1, iters do f() end
  local t = (os.clock() - t0) / iters * 1e6
  torch.cuda.synchronize()
  return t
end
local function row(name, v, unit) print(string.format('%-34s %9.3f %s', name, v, unit)) end
local a, b = torch.rand(1024, { device = dev }), torch.rand(1024, { device = dev })
row('a + b 1024 (gpu time)', gpu_ms(function() return a + b end, 2000) * 1000, 'us')
row('a + b 1024 (host cpu time)', host_us(function() return a + b end, 2000), 'us')
local ag = a:clone():requires_grad_()
row('ag * 2 with grad (host)', host_us(function() return ag * 2 end, 2000), 'us')
local model, opt, x, y = B.cnn_step_setup(dev)
local h = torch.rand(256, 32, 14, 14, { device = dev })
row('model fwd no_grad', gpu_ms(function() torch.no_grad(function() return model(x) end) end, 50), 'ms')
row('model fwd with grad', gpu_ms(function() return model(x) end, 50), 'ms')
row('model fwd host', host_us(function() return model(x) end, 50), 'us host')
row('fwd+loss+bwd', gpu_ms(function() F.cross_entropy(model(x), y):backward() end, 50), 'ms')
row('fwd+loss+bwd host', host_us(function() F.cross_entropy(model(x), y):backward() end, 50), 'us host')
row('opt step', gpu_ms(function() opt:step() end, 50), 'ms')
row('zero_grad', gpu_ms(function() opt:zero_grad() end, 50), 'ms')
row('whole step', gpu_ms(function() opt:zero_grad(); F.cross_entropy(model(x), y):backward(); opt:step() end, 50), 'ms')
local w = torch.rand(64, 32, 3, 3, { device = dev })
row('conv2d 32->64 fwd', gpu_ms(function() return F.conv2d(h, w, nil, { padding = 1 }) end, 50), 'ms')
local hg, wg = h:clone():requires_grad_(), w:clone():requires_grad_()
row('conv2d 32->64 fwd+bwd', gpu_ms(function() F.conv2d(hg, wg, nil, { padding = 1 }):sum():backward() end, 50), 'ms')
row('max_pool2d fwd', gpu_ms(function() return F.max_pool2d(h, 2) end, 50), 'ms')
row('relu fwd', gpu_ms(function() return F.relu(h) end, 50), 'ms')
local l = torch.rand(256, 3136, { device = dev })
local lw = torch.rand(128, 3136, { device = dev })
row('linear 3136->128 fwd', gpu_ms(function() return F.linear(l, lw) end, 50), 'ms')
local lo = torch.rand(256, 10, { device = dev })
row('cross_entropy fwd', gpu_ms(function() return F.cross_entropy(lo, y) end, 50), 'ms')
