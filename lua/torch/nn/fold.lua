-- nn.Unfold and nn.Fold: sliding blocks of an image as columns and back, over F.unfold and F.fold.
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'

local M = {}
local pyrepr = Module._pyrepr

local KEYS = { 'dilation', 'padding', 'stride' }

-- Unfold(kernel_size, {dilation = 1, padding = 0, stride = 1})
local Unfold = Module:extend('Unfold')
M.Unfold = Unfold

function Unfold:init(kernel_size, o)
  o = F._opts_of(o, 'Unfold', KEYS)
  self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, o.dilation or 1, o.padding or 0, o.stride or 1
end

function Unfold:forward(x)
  return F.unfold(x, self.kernel_size, { dilation = self.dilation, padding = self.padding, stride = self.stride })
end

function Unfold:extra_repr()
  return string.format('kernel_size=%s, dilation=%s, padding=%s, stride=%s', pyrepr(self.kernel_size),
    pyrepr(self.dilation), pyrepr(self.padding), pyrepr(self.stride))
end

-- Fold(output_size, kernel_size, {dilation = 1, padding = 0, stride = 1})
local Fold = Module:extend('Fold')
M.Fold = Fold

function Fold:init(output_size, kernel_size, o)
  o = F._opts_of(o, 'Fold', KEYS)
  self.output_size, self.kernel_size = output_size, kernel_size
  self.dilation, self.padding, self.stride = o.dilation or 1, o.padding or 0, o.stride or 1
end

function Fold:forward(x)
  return F.fold(x, self.output_size, self.kernel_size, { dilation = self.dilation, padding = self.padding, stride = self.stride })
end

function Fold:extra_repr()
  return string.format('output_size=%s, kernel_size=%s, dilation=%s, padding=%s, stride=%s', pyrepr(self.output_size),
    pyrepr(self.kernel_size), pyrepr(self.dilation), pyrepr(self.padding), pyrepr(self.stride))
end

return M
