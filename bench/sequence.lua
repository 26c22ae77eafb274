-- Sequence models: one training step (forward, backward, Adam) of a 2-layer LSTM (hidden 128) and
-- of a 2-layer Transformer encoder (d_model 128, 4 heads, feed-forward 256), batch 32 of sequences
-- of 32, each with a linear head and an MSE loss (ms per step). bench/torch_sequence.py times the
-- same steps in PyTorch.
-- Run: build/lutorch bench/sequence.lua [--device cuda] (on a GPU: bench/torch_sequence.py --device cuda)
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'
local nn, F = torch.nn, torch.nn.functional

local dev = torch.device('cpu')
for i = 1, #arg do
  if arg[i] == '--device' then dev = torch.device(arg[i + 1]) end
end
local on_gpu = dev.type == 'cuda'

torch.manual_seed(0)
local N, T, D = 32, 32, 128
local x = torch.randn(N, T, D):to(dev)
local y = torch.randn(N, T, 1):to(dev)

local function stepper(body, head)
  body:to(dev)
  head:to(dev)
  local params = body:parameters()
  for _, p in ipairs(head:parameters()) do params[#params + 1] = p end
  local opt = torch.optim.Adam(params, { lr = 1e-3 })
  return function(k)
    for _ = 1, k do
      opt:zero_grad()
      local out = body(x)
      F.mse_loss(head(out), y):backward()
      opt:step()
    end
    if on_gpu then torch.cuda.synchronize() end
  end
end

local function time(name, f)
  if on_gpu then name = name:gsub('^lutorch_', 'lutorch_cuda_') end
  local med, lo, hi = B.time(f, B.calibrate(f, 0.5), 5)
  B.result(name, med * 1e3, 'ms', string.format('min=%.4g max=%.4g', lo * 1e3, hi * 1e3))
end

print('# threads=' .. torch.get_num_threads() .. (on_gpu and ' ' .. torch.cuda.get_device_name(0) or ''))
time('lutorch_lstm_step', stepper(nn.LSTM(D, D, { num_layers = 2, batch_first = true }), nn.Linear(D, 1)))
local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 4, { dim_feedforward = 2 * D, dropout = 0.1,
  batch_first = true }), 2)
time('lutorch_transformer_step', stepper(enc, nn.Linear(D, 1)))
