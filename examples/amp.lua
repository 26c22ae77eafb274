-- Mixed-precision training, PyTorch's AMP recipe: autocast around the forward pass and the loss, a
-- GradScaler around backward and the optimizer step. An MLP 784-512-256-10 on Fashion-MNIST, on
-- CUDA (float16) when a GPU is present, else on the CPU in bfloat16; prints the loss scale, the
-- steps skipped for inf/NaN gradients and the test accuracy per epoch.
-- Run: build/lutorch examples/amp.lua [--epochs 2] [--train N] [--dtype bfloat16|float16|float32]
--        [--device cpu|cuda] [--seed 0] [--quiet]
-- --dtype float32 runs the same loop with autocast and the scaler disabled (the baseline).
-- Loaded with loadfile, it takes the same options as a list and returns {accuracy, scale, skipped}.
local torch = require 'torch'
local nn, F, optim = torch.nn, torch.F, torch.optim

local argv = { ... }
local o = { epochs = 2, train = 60000, seed = 0, batch = 64, lr = 0.05 }
local i = 1
while argv[i] do
  local key = tostring(argv[i]):match('^%-%-([%w_]+)$')
  if key == 'quiet' then
    o.quiet, i = true, i + 1
  elseif key and (o[key] ~= nil or key == 'dtype' or key == 'device') and argv[i + 1] ~= nil then
    o[key] = tonumber(argv[i + 1]) or argv[i + 1]
    i = i + 2
  else
    error('unknown argument ' .. tostring(argv[i]) .. ' (options: --epochs N --train N --dtype D --device cpu|cuda '
      .. '--seed N --batch N --lr X --quiet)', 0)
  end
end
local device = o.device or (torch.cuda.is_available() and 'cuda' or 'cpu')
local dtype = o.dtype or (device == 'cuda' and 'float16' or 'bfloat16')
if dtype ~= 'float32' and dtype ~= 'bfloat16' and dtype ~= 'float16' then error('--dtype: ' .. dtype, 0) end
local use_amp = dtype ~= 'float32'
local function say(...) if not o.quiet then print(string.format(...)) end end

torch.manual_seed(o.seed)
local function load(train)
  local ds = torch.data.datasets.FashionMNIST { train = train }
  return ds.data, ds.targets
end
local Xtr, Ytr = load(true)
local Xte, Yte = load(false)
local n = math.min(o.train, Xtr:size(1))
Xtr, Ytr = Xtr:narrow(1, 1, n), Ytr:narrow(1, 1, n)
local function as_input(x) return x:to(device):float():div_(255):view(x:size(1), 784) end

local model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
model:to(device)
local opt = optim.SGD(model:parameters(), { lr = o.lr, momentum = 0.9 })
local scaler = torch.amp.GradScaler { device = device, enabled = use_amp }
local ac_opts = { dtype = torch[dtype], enabled = use_amp }
say('AMP on %s, %s, %d training images, %d epochs', device, dtype, n, o.epochs)

local function evaluate()
  model:eval()
  local correct = 0
  torch.no_grad(function()
    for s = 1, Xte:size(1), 1000 do
      local e = math.min(s + 999, Xte:size(1))
      local out = torch.autocast(device, ac_opts, function() return model(as_input(Xte[{ { s, e } }])) end)
      correct = correct + out:float():argmax(2):eq(Yte[{ { s, e } }]:to(device)):sum():item()
    end
  end)
  model:train()
  return correct / Xte:size(1)
end

local skipped, acc = 0, 0
for epoch = 1, o.epochs do
  local perm = torch.randperm(n)
  local total, steps = 0, 0
  for s = 1, n, o.batch do
    local idx = perm:narrow(1, s, math.min(o.batch, n - s + 1))
    local x, y = as_input(Xtr:index_select(1, idx)), Ytr:index_select(1, idx):to(device)
    local loss
    do
      local ac <close> = torch.autocast(device, ac_opts)
      loss = F.cross_entropy(model(x), y)
    end
    opt:zero_grad()
    scaler:scale(loss):backward()
    local before = scaler:get_scale()
    scaler:step(opt)
    scaler:update()
    if scaler:get_scale() < before then skipped = skipped + 1 end
    total, steps = total + loss:item(), steps + 1
  end
  acc = evaluate()
  say('epoch %d  loss %.4f  test accuracy %.4f  scale %g  skipped steps %d', epoch, total / steps, acc,
    scaler:get_scale(), skipped)
end

return { accuracy = acc, scale = scaler:get_scale(), skipped = skipped }
