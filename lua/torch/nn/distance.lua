-- nn.CosineSimilarity and nn.PairwiseDistance over F.cosine_similarity and F.pairwise_distance.
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'

local M = {}
local pyrepr = Module._pyrepr

-- CosineSimilarity({dim = 2, eps = 1e-8})
local CosineSimilarity = Module:extend('CosineSimilarity')
M.CosineSimilarity = CosineSimilarity

function CosineSimilarity:init(o)
  o = F._opts_of(o, 'CosineSimilarity', { 'dim', 'eps' })
  self.dim, self.eps = o.dim or 2, o.eps or 1e-8
end

function CosineSimilarity:forward(x1, x2) return F.cosine_similarity(x1, x2, { dim = self.dim, eps = self.eps }) end

function CosineSimilarity:extra_repr() return string.format('dim=%d, eps=%s', self.dim, pyrepr(self.eps)) end

-- PairwiseDistance({p = 2, eps = 1e-6, keepdim = false})
local PairwiseDistance = Module:extend('PairwiseDistance')
M.PairwiseDistance = PairwiseDistance

function PairwiseDistance:init(o)
  o = F._opts_of(o, 'PairwiseDistance', { 'p', 'eps', 'keepdim' })
  self.norm, self.eps, self.keepdim = o.p or 2, o.eps or 1e-6, o.keepdim or false
end

function PairwiseDistance:forward(x1, x2)
  return F.pairwise_distance(x1, x2, { p = self.norm, eps = self.eps, keepdim = self.keepdim })
end

function PairwiseDistance:extra_repr() return '' end

return M
