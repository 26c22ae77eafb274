-- torch.optim: SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, Rprop, ASGD and LBFGS
-- over a common Optimizer base, the lr schedulers, and swa_utils (AveragedModel, SWALR, update_bn).
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
  Rprop = require 'torch.optim.rprop',
  ASGD = require 'torch.optim.asgd',
  LBFGS = require 'torch.optim.lbfgs',
  lr_scheduler = require 'torch.optim.lr_scheduler',
  swa_utils = require 'torch.optim.swa_utils',
}
