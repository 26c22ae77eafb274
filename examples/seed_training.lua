-- The plain training loop: a small model learns y = 3 x1 - 2 x2 + 1 (plus noise) with MSE and
-- SGD for ten epochs, printing the loss, then predicts under no_grad in eval mode.
-- Run: build/lutorch examples/seed_training.lua
local torch = require 'torch'
local nn, optim = torch.nn, torch.optim

torch.manual_seed(0)
local X = torch.randn(256, 2)
local Y = (X[{ {}, 1 }] * 3 - X[{ {}, 2 }] * 2 + 1):view(-1, 1) + torch.randn(256, 1) * 0.05

local Net = nn.Module:extend('Net')
function Net:init(hidden)
  self.fc1 = nn.Linear(2, hidden)
  self.act = nn.Tanh()
  self.fc2 = nn.Linear(hidden, 1)
end
function Net:forward(x)
  return self.fc2(self.act(self.fc1(x)))
end

local model = Net(16)
print(model)
local opt = optim.SGD(model:parameters(), { lr = 0.1, momentum = 0.9 })
local loss_fn = nn.MSELoss()

local batch = 32
for epoch = 1, 10 do
  local total = 0
  for i = 1, X:size(1), batch do
    local x, y = X[{ { i, i + batch - 1 } }], Y[{ { i, i + batch - 1 } }]
    local loss = loss_fn(model(x), y)
    opt:zero_grad()
    loss:backward()
    opt:step()
    total = total + loss:item() * x:size(1)
  end
  print(string.format('epoch %2d  loss %.5f', epoch, total / X:size(1)))
end

model:eval()
torch.no_grad(function()
  local x = torch.tensor({ { 1.0, 1.0 }, { 0.0, 0.5 } })
  print('predictions for (1, 1) and (0, 0.5):', model(x):view(-1))
  print('expected about:                      ', torch.tensor({ 2.0, 0.0 }))
end)
