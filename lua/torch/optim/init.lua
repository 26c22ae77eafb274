-- torch.optim: SGD, Adam, AdamW, RMSprop and Adagrad over a common Optimizer base, and the lr schedulers.
return {
  Optimizer = require 'torch.optim.optimizer',
  SGD = require 'torch.optim.sgd',
  Adam = require 'torch.optim.adam',
  AdamW = require 'torch.optim.adamw',
  RMSprop = require 'torch.optim.rmsprop',
  Adagrad = require 'torch.optim.adagrad',
  lr_scheduler = require 'torch.optim.lr_scheduler',
}
