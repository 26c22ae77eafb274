-- Fashion-MNIST with a small CNN: conv(1->32, 3x3, pad 1)-ReLU-maxpool 2, conv(32->64, 3x3, pad 1)-
-- ReLU-maxpool 2, flatten, Linear(3136->128)-ReLU, Linear(128->10); SGD lr 0.05 momentum 0.9, batch
-- 64: the recipe of PyTorch's reference (bench/torch_cnn.py). About 0.90 test accuracy after 2 epochs.
-- Run: build/lutorch examples/fashion_mnist_cnn.lua [--epochs 2] [--resume] [--out DIR] ...
package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
local torch = require 'torch'
local nn = torch.nn

require('fashion_mnist').run {
  name = 'fashion_mnist_cnn',
  shape = 'image',
  epochs = 2,
  argv = arg,
  make_model = function()
    return nn.Sequential(
      nn.Conv2d(1, 32, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
      nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
      nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
  end,
}
