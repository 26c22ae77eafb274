-- Fashion-MNIST training, timed the way the PyTorch references time it (../shared/bench
-- torch_mlp.py and torch_cnn.py, copied into bench/ by run.sh's caller or read from there):
--   mlp: MLP 784-512-256-10, SGD lr 0.05 momentum 0.9, batch 64; the median time of epochs 2..N
--        (the training loop only: batch gather + forward + backward + step), then test accuracy.
--   cnn: conv(1->32)-ReLU-maxpool-conv(32->64)-ReLU-maxpool-Linear(3136->128)-ReLU-Linear(128->10);
--        after 20 warm-up steps, 200 steps timed in chunks of 20: s/epoch = median ms/step x 937.5;
--        then the rest of epoch 1, epochs 2..N timed, and test accuracy.
-- Images stay uint8 in memory and each batch is converted to float32 in [0, 1] (as the examples do).
-- Run: build/lutorch bench/fashion_mnist.lua mlp [--epochs 5] [--seed 0]   or   ... cnn [--epochs 2]
-- --seed S seeds the initialisation with S and each epoch's shuffle with 1000 S + epoch (seed 0 as
-- before: the epoch); bench/run.sh averages the test accuracy over seeds, as the references do.
package.path = 'bench/?.lua;' .. package.path
local torch = require 'torch'
local B = require 'lib'
local nn, F, optim, data = torch.nn, torch.F, torch.optim, torch.data

local which = arg[1] or 'mlp'
local epochs = which == 'mlp' and 5 or 2
local seed = 0
for i = 2, #arg do
  if arg[i] == '--epochs' then epochs = tonumber(arg[i + 1]) end
  if arg[i] == '--seed' then seed = math.tointeger(tonumber(arg[i + 1])) end
end

torch.manual_seed(seed)
-- results of another seed than 0 carry it in their names (lutorch_mlp_test_acc_seed3)
local result = B.result
local tag = seed ~= 0 and ('_seed' .. seed) or ''
B = setmetatable({ result = function(name, ...) return result(name .. tag, ...) end }, { __index = B })
local train = data.datasets.FashionMNIST { train = true }
local test = data.datasets.FashionMNIST { train = false }
local shape = which == 'mlp' and { -1, 784 } or { -1, 1, 28, 28 }
local function input(x) return x:float():div_(255):view(shape) end

local model
if which == 'mlp' then
  model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
else
  model = nn.Sequential(
    nn.Conv2d(1, 32, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
end
local opt = optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
local ds = data.TensorDataset(train.data, train.targets)

local function step(x, y)
  local loss = F.cross_entropy(model(input(x)), y)
  opt:zero_grad()
  loss:backward()
  opt:step()
  return loss
end

local function accuracy()
  model:eval()
  local correct = 0
  torch.no_grad(function()
    for i = 1, test.data:size(1), 1000 do
      local x, y = test.data:narrow(1, i, 1000), test.targets:narrow(1, i, 1000)
      correct = correct + model(input(x)):argmax(2):eq(y):sum():item()
    end
  end)
  model:train()
  return correct / test.data:size(1)
end

local function median(t)
  local s = { table.unpack(t) }
  table.sort(s)
  return s[(#s + 1) // 2], s[1], s[#s]
end

local function loader(epoch)
  return data.DataLoader(ds, { batch_size = 64, shuffle = true, seed = seed * 1000 + epoch })
end

if which == 'mlp' then
  local times = {}
  for ep = 1, epochs do
    local t0 = torch.utils.clock()
    for x, y in loader(ep):iter() do step(x, y) end
    times[ep] = torch.utils.clock() - t0
    io.stderr:write(string.format('# epoch %d time_s=%.3f\n', ep, times[ep]))
  end
  local rest = { table.unpack(times, 2) }
  local med, lo, hi = median(#rest > 0 and rest or times)
  B.result('lutorch_mlp_epoch', med, 's/epoch', string.format('min=%.3f max=%.3f epoch1=%.3f epochs=%d', lo, hi,
    times[1], epochs))
  B.result('lutorch_mlp_throughput', string.format('%.0f', 60000 / med), 'samples/s')
  B.result('lutorch_mlp_test_acc', string.format('%.4f', accuracy()), 'fraction', 'epochs=' .. epochs)
else
  local it = loader(1):iter()
  local function next_batch() return it() end
  for _ = 1, 20 do step(next_batch()) end
  local chunks = {}
  for c = 1, 10 do
    local t0 = torch.utils.clock()
    for _ = 1, 20 do step(next_batch()) end
    chunks[c] = (torch.utils.clock() - t0) / 20
  end
  local med, lo, hi = median(chunks)
  B.result('lutorch_cnn_step', string.format('%.2f', med * 1e3), 'ms/step', string.format('min=%.2f max=%.2f',
    lo * 1e3, hi * 1e3))
  B.result('lutorch_cnn_epoch_extrap', string.format('%.2f', med * 937.5), 's/epoch')
  if epochs > 0 then
    for x, y in it do step(x, y) end -- the rest of epoch 1, not timed
    local times = {}
    for ep = 2, epochs do
      local t0 = torch.utils.clock()
      for x, y in loader(ep):iter() do step(x, y) end
      times[#times + 1] = torch.utils.clock() - t0
    end
    if #times > 0 then
      B.result('lutorch_cnn_epoch_measured', string.format('%.2f', median(times)), 's/epoch', 'epochs=2..' .. epochs)
    end
    B.result('lutorch_cnn_test_acc', string.format('%.4f', accuracy()), 'fraction', 'epochs=' .. epochs)
  end
end
