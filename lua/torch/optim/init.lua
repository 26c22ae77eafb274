-- torch.optim: SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam and Adadelta over a common Optimizer base, and the lr schedulers.
return {
  Optimizer = require 'torch.optim.optimizer',
  SGD = require 'torch.optim.sgd',
  Adam = require 'torch.optim.adam',
  AdamW = require 'torch.optim.adamw',
  RMSprop = require 'torch.optim.rmsprop',
  Adagrad = require 'torch.optim.adagrad',
  Adamax = require 'torch.optim.adamax',
  NAdam = require 'torch.optim.nadam',
  RAdam = require 'torch.optim.radam',
  Adadelta = require 'torch.optim.adadelta',
  lr_scheduler = require 'torch.optim.lr_scheduler',
}
