-- torch.nn: the module system, the layers and losses, torch.nn.functional, nn.init and nn.utils.
local parameter = require 'torch.nn.parameter'

local nn = {}
nn.Module = require 'torch.nn.module'
nn.Parameter = parameter.Parameter
nn.parameter = parameter
nn.functional = require 'torch.nn.functional'
nn.init = require 'torch.nn.initializers'
nn.utils = require 'torch.nn.utils'

for _, file in ipairs { 'linear', 'conv', 'pooling', 'normalization', 'activation', 'dropout', 'sparse', 'flatten',
  'container', 'loss', 'rnn', 'transformer', 'upsample', 'padding', 'fold', 'distance', 'data_parallel', 'distributed',
  'sync_batchnorm', 'lazy', 'adaptive' } do
  for name, cls in pairs(require('torch.nn.' .. file)) do
    if name:sub(1, 1) ~= '_' then nn[name] = cls end
  end
end

return nn
