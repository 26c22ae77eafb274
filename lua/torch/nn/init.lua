-- torch.nn: placeholder until the module system lands
local torch = require 'torch'
local nn = {}
nn.functional = require 'torch.nn.functional'
return nn
