-- The GPU benchmarks of issue 5, run wherever a GPU is present (build/cuda/lutorch
-- bench/cuda_bench.lua); without one it says so and measures nothing. Each of lutorch's figures is
-- set beside the same work done by the CUDA libraries called directly (torch._cuda.bench_*), timed
-- with CUDA events on the same stream:
--   float16 / bfloat16 matrix product, n = 8192: lutorch's matmul against cublasGemmEx (target >= 0.9)
--   elementwise add of 1e8 floats: its bandwidth against device-to-device cudaMemcpy's (>= 0.85)
--   pinned host-to-device copy of 256 MiB with non_blocking against cudaMemcpyAsync's (>= 0.8)
--   a training step of the Fashion-MNIST CNN at batch 256 (bench/torch_cuda_cnn.py times PyTorch's
--   where a CUDA PyTorch is installed beside it)
local torch = require 'torch'
local B = require 'bench.lib'
local F = torch.nn.functional

if not torch.cuda.is_available() then
  local _, why = pcall(torch.ones, 1, { device = 'cuda' })
  print('no CUDA device, nothing measured: ' .. tostring(why))
  return
end
local dev = torch.device('cuda:0')
print('# ' .. torch.cuda.get_device_name(0))

-- ms per call of f (run `iters` times after one warm-up), timed with events on the current stream
local gpu_ms = B.gpu_ms

-- matrix products
for _, dt in ipairs { torch.float16, torch.bfloat16, torch.float32 } do
  local n = 8192
  local a = torch.randn(n, n, { device = dev }):to(dt)
  local b = torch.randn(n, n, { device = dev }):to(dt)
  local ours = gpu_ms(function() return a:matmul(b) end, 10)
  local raw = torch._cuda.bench_gemm(n, dt, 10, a, b) -- the same operands: the GPU is faster on zeros
  local name = tostring(dt):gsub('torch%.', '')
  B.result('lutorch_cuda_mm_' .. name .. '_n8192', 2 * n ^ 3 / ours / 1e9, 'TFLOP/s')
  B.result('cublas_mm_' .. name .. '_n8192', 2 * n ^ 3 / raw / 1e9, 'TFLOP/s')
  B.result('ratio_cuda_mm_' .. name, raw / ours, 'x', '(target >= 0.9)')
end

-- elementwise add of 1e8 floats against the copy bandwidth
do
  local n = 100000000
  local a, b = torch.ones(n, { device = dev }), torch.ones(n, { device = dev })
  -- the result's memory comes back from the caching allocator each time, as in a training loop
  local ours = gpu_ms(function() return a + b end, 20)
  local copy = torch._cuda.bench_memcpy(4 * n, false, 20)
  local bw_add, bw_copy = 3 * 4 * n / ours / 1e6, 2 * 4 * n / copy / 1e6
  B.result('lutorch_cuda_add_1e8_bandwidth', bw_add, 'GB/s')
  B.result('cuda_memcpy_d2d_bandwidth', bw_copy, 'GB/s')
  B.result('ratio_cuda_add_vs_copy', bw_add / bw_copy, 'x', '(target >= 0.85)')
end

-- inputs read in place: a row broadcast over 1e8 floats ([1e4, 1e4] + [1e4]) and a transposed
-- operand; their bandwidth (the bytes an ideal kernel moves) against the same copy
do
  local r = 10000
  local a, row = torch.ones(r, r, { device = dev }), torch.ones(r, { device = dev })
  local at = torch.ones(r, r, { device = dev }):t()
  local bc = gpu_ms(function() return a + row end, 20)
  local tr = gpu_ms(function() return a + at end, 20)
  -- the former path, for comparison: the operand copied contiguous, then a contiguous add
  local bc_old = gpu_ms(function() return a + row:expand(r, r):contiguous() end, 20)
  local tr_old = gpu_ms(function() return a + at:contiguous() end, 20)
  local copy = torch._cuda.bench_memcpy(4 * r * r, false, 20)
  local bw_copy = 2 * 4 * r * r / copy / 1e6
  B.result('lutorch_cuda_add_broadcast_row_bandwidth', 2 * 4 * r * r / bc / 1e6, 'GB/s',
    string.format('(%.3f ms; %.2fx of the copy)', bc, 2 * 4 * r * r / bc / 1e6 / bw_copy))
  B.result('lutorch_cuda_add_transposed_bandwidth', 3 * 4 * r * r / tr / 1e6, 'GB/s',
    string.format('(%.3f ms; %.2fx of the copy)', tr, 3 * 4 * r * r / tr / 1e6 / bw_copy))
  B.result('ratio_cuda_broadcast_in_place_vs_copied_first', bc_old / bc, 'x', string.format('(%.3f ms copied first)', bc_old))
  B.result('ratio_cuda_transposed_in_place_vs_copied_first', tr_old / tr, 'x', string.format('(%.3f ms copied first)', tr_old))
end

-- pinned host-to-device copy of 256 MiB
do
  local n = 64 * 1024 * 1024
  local host = torch.ones(n):pin_memory()
  local ours = gpu_ms(function() return host:to(dev, { non_blocking = true }) end, 10)
  local raw = torch._cuda.bench_memcpy(4 * n, true, 10)
  B.result('lutorch_cuda_h2d_pinned_256MiB', 4 * n / ours / 1e6, 'GB/s')
  B.result('cuda_memcpy_h2d_pinned_256MiB', 4 * n / raw / 1e6, 'GB/s')
  B.result('ratio_cuda_h2d_pinned', raw / ours, 'x', '(target >= 0.8)')
end

-- the Fashion-MNIST CNN training step at batch 256
do
  local model, opt, x, y = B.cnn_step_setup(dev)
  local ms = gpu_ms(function()
    opt:zero_grad()
    F.cross_entropy(model(x), y):backward()
    opt:step()
  end, 50)
  B.result('lutorch_cuda_cnn_step_b256', ms, 'ms')
  -- the same step under float16 autocast with a GradScaler
  local scaler = torch.amp.GradScaler { device = 'cuda' }
  ms = gpu_ms(function()
    opt:zero_grad()
    local loss
    do
      local ac <close> = torch.autocast('cuda')
      loss = F.cross_entropy(model(x), y)
    end
    scaler:scale(loss):backward()
    scaler:step(opt)
    scaler:update()
  end, 50)
  B.result('lutorch_cuda_cnn_step_b256_fp16_autocast', ms, 'ms')
end
