-- Fashion-MNIST with an MLP 784-512-256-10 (ReLU), cross-entropy, SGD lr 0.05 momentum 0.9, batch
-- 64: the recipe of PyTorch's reference (bench/torch_mlp.py). About 0.87 test accuracy after 5 epochs.
-- Run: build/lutorch examples/fashion_mnist_mlp.lua [--epochs 5] [--resume] [--out DIR] ...
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local torch = require 'torch'
local nn = torch.nn

require('fashion_mnist').run {
  name = 'fashion_mnist_mlp',
  shape = 'flat',
  epochs = 5,
  argv = arg,
  make_model = function()
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
  end,
}
