-- DataParallel: one script, several devices. First the FooNet walk-through (three Linear layers, a
-- batch of 16 split between the devices, each replica printing the batch it sees), then the
-- Fashion-MNIST MLP trained with DataParallel over every device of the machine, with its throughput
-- beside the same training on one device.
-- Run: build/lutorch examples/data_parallel.lua [--steps 150] [--batch 256]
-- Without GPUs the devices are the virtual CPU devices: LUTORCH_CPU_DEVICES=N picks N; unset, the
-- script makes one per core (at least 2).
local torch = require 'torch'
local nn = torch.nn
local F = nn.functional

local opts = { steps = 150, batch = 256 }
for i = 1, #arg, 2 do
  local k = arg[i]:match('^%-%-(%w+)$')
  if not k or opts[k] == nil or not tonumber(arg[i + 1]) then
    io.stderr:write('usage: data_parallel.lua [--steps N] [--batch N]\n')
    os.exit(2)
  end
  opts[k] = math.tointeger(tonumber(arg[i + 1]))
end

local kind = torch.cuda.is_available() and 'cuda' or 'cpu'
if kind == 'cpu' and torch.cpu.device_count() == 1 then
  torch.cpu.set_device_count(math.max(2, torch.get_num_threads()))
end
local ndev = kind == 'cuda' and torch.cuda.device_count() or torch.cpu.device_count()
local first = torch.device(kind .. ':0')
print(string.format('%d %s device%s', ndev, kind, ndev == 1 and '' or 's'))

-- ---- FooNet ----
local FooNet = nn.Module:extend('FooNet')

function FooNet:init(n_in, hidden, n_out)
  nn.Module.init(self)
  self.fc1 = nn.Linear(n_in, hidden)
  self.fc2 = nn.Linear(hidden, hidden)
  self.fc3 = nn.Linear(hidden, n_out)
end

function FooNet:forward(x)
  print(string.format('  In FooNet on %s: input size %s', tostring(x.device), table.concat(x:size(), 'x')))
  return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))
end

torch.manual_seed(0)
local foo = nn.DataParallel(FooNet(5, 8, 2):to(first))
local input = torch.randn(16, 5, { device = first })
local output = foo(input)
print(string.format('Outside: input size %s, output size %s on %s', table.concat(input:size(), 'x'),
  table.concat(output:size(), 'x'), tostring(output.device)))

-- ---- the Fashion-MNIST MLP, with DataParallel and without ----
local ds = torch.data.datasets.FashionMNIST { train = true }
local X = ds.data:float():div_(255):view(-1, 784)
local Y = ds.targets

local function mlp()
  torch.manual_seed(1)
  return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)):to(first)
end

local function train(model, steps, batch)
  local opt = torch.optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
  local n = X:size(1)
  local loss
  local t0
  for s = 0, steps do
    if s == 1 then t0 = torch.utils.clock() end -- step 0 warms caches and threads up
    local i = (s * batch) % (n - batch) + 1
    local x, y = X:narrow(1, i, batch):to(first), Y:narrow(1, i, batch):to(first)
    opt:zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss:backward()
    opt:step()
  end
  local dt = torch.utils.clock() - t0
  return steps * batch / dt, loss:item()
end

local single, l1 = train(mlp(), opts.steps, opts.batch)
print(string.format('one device (%s, %d threads): %8.0f samples/s   loss %.4f', tostring(first),
  torch.get_num_threads(), single, l1))
local parallel, l2 = train(nn.DataParallel(mlp()), opts.steps, opts.batch)
print(string.format('DataParallel over %d device%s:     %8.0f samples/s   loss %.4f   (%.2fx)', ndev, ndev == 1 and '' or 's', parallel, l2,
  parallel / single))
