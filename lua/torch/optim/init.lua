-- torch.optim: SGD, Adam and AdamW over a common Optimizer base, and the lr schedulers.
return {
  Optimizer = require 'torch.optim.optimizer',
  SGD = require 'torch.optim.sgd',
  Adam = require 'torch.optim.adam',
  AdamW = require 'torch.optim.adamw',
  lr_scheduler = require 'torch.optim.lr_scheduler',
}
