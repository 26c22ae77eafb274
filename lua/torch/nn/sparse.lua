-- nn.Embedding: a lookup table of rows, indexed by 1-based indices; nn.EmbeddingBag: sums, means or
-- maxima of bags of its rows.
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'
local as_int = require('torch.composite').as_int

local M = {}

-- Embedding(num_embeddings, embedding_dim, {padding_idx, max_norm, norm_type = 2, device, dtype, _weight,
-- _freeze}); padding_idx is a 1-based row (negative counts from the end) whose row starts at zero and
-- gets no gradient; with max_norm the rows looked up are renormalised in place (F.embedding)
local Embedding = Module:extend('Embedding')
M.Embedding = Embedding

function Embedding:init(num_embeddings, embedding_dim, o)
  o = o or {}
  num_embeddings = as_int(num_embeddings)
  embedding_dim = as_int(embedding_dim)
  if math.type(num_embeddings) ~= 'integer' or math.type(embedding_dim) ~= 'integer' or num_embeddings < 0
    or embedding_dim < 0 then
    error(string.format('Embedding: num_embeddings and embedding_dim must be non-negative integers, got %s and %s',
      tostring(num_embeddings), tostring(embedding_dim)), 3)
  end
  if o.sparse then error('Embedding: sparse is not supported by lutorch', 3) end
  if o.scale_grad_by_freq ~= nil and type(o.scale_grad_by_freq) ~= 'boolean' then
    error('Embedding: scale_grad_by_freq must be a boolean, got ' .. type(o.scale_grad_by_freq), 3)
  end
  local pad = o.padding_idx
  if pad ~= nil then
    pad = as_int(pad)
    if math.type(pad) ~= 'integer' or pad == 0 or pad > num_embeddings or pad < -num_embeddings then
      error(string.format('Embedding: padding_idx must be within num_embeddings (a 1-based row in 1..%d, or '
        .. 'negative from the end), got %s', num_embeddings, tostring(pad)), 3)
    end
    if pad < 0 then pad = num_embeddings + pad + 1 end
  end
  self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, pad
  self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = o.max_norm, o.norm_type or 2.0,
    o.scale_grad_by_freq or false, false
  if o._weight ~= nil then
    local w = o._weight
    if not torch.is_tensor(w) or w:dim() ~= 2 or w:size(1) ~= num_embeddings or w:size(2) ~= embedding_dim then
      error('Embedding: shape of weight does not match num_embeddings and embedding_dim', 3)
    end
    self.weight = Parameter(w, not o._freeze)
  else
    self.weight = Parameter(torch.empty(num_embeddings, embedding_dim, { dtype = o.dtype, device = o.device }),
      not o._freeze)
    self:reset_parameters()
  end
end

function Embedding:reset_parameters()
  init.normal_(self.weight)
  self:_fill_padding_idx_with_zero()
end

function Embedding:_fill_padding_idx_with_zero()
  if self.padding_idx ~= nil then
    torch.no_grad(function() self.weight[self.padding_idx]:fill_(0) end)
  end
end

function Embedding:forward(idx)
  return F.embedding(idx, self.weight, { padding_idx = self.padding_idx, max_norm = self.max_norm,
    norm_type = self.norm_type, scale_grad_by_freq = self.scale_grad_by_freq })
end

function Embedding:extra_repr()
  local s = string.format('%d, %d', self.num_embeddings, self.embedding_dim)
  if self.padding_idx ~= nil then s = s .. ', padding_idx=' .. self.padding_idx end
  if self.max_norm ~= nil then s = s .. ', max_norm=' .. self.max_norm end
  if self.norm_type ~= 2 then s = s .. ', norm_type=' .. self.norm_type end
  if self.scale_grad_by_freq then s = s .. ', scale_grad_by_freq=True' end
  return s
end

-- Embedding.from_pretrained(embeddings, {freeze = true, padding_idx, max_norm, norm_type})
function Embedding.from_pretrained(embeddings, o)
  o = o or {}
  if not torch.is_tensor(embeddings) or embeddings:dim() ~= 2 then
    error('Embedding.from_pretrained: embeddings parameter is expected to be 2-dimensional', 2)
  end
  local freeze = o.freeze
  if freeze == nil then freeze = true end
  return Embedding(embeddings:size(1), embeddings:size(2), { _weight = embeddings, _freeze = freeze,
    padding_idx = o.padding_idx, max_norm = o.max_norm, norm_type = o.norm_type,
    scale_grad_by_freq = o.scale_grad_by_freq })
end

-- EmbeddingBag(num_embeddings, embedding_dim, {max_norm, norm_type = 2, mode = 'mean',
-- include_last_offset = false, padding_idx, device, dtype, _weight, _freeze}); forward(input, offsets,
-- per_sample_weights) as F.embedding_bag (1-based indices and offsets). padding_idx (a 1-based row,
-- negative from the end) starts at zero and is left out of every bag; with max_norm the rows looked up
-- are renormalised in place. scale_grad_by_freq and sparse are not supported.
local EmbeddingBag = Module:extend('EmbeddingBag')
M.EmbeddingBag = EmbeddingBag

local BAG_MODES = { sum = true, mean = true, max = true }

function EmbeddingBag:init(num_embeddings, embedding_dim, o)
  o = F._opts_of(o, 'EmbeddingBag', { 'max_norm', 'norm_type', 'scale_grad_by_freq', 'mode', 'sparse',
    'include_last_offset', 'padding_idx', 'device', 'dtype', '_weight', '_freeze' }, 4)
  num_embeddings = as_int(num_embeddings)
  embedding_dim = as_int(embedding_dim)
  if math.type(num_embeddings) ~= 'integer' or math.type(embedding_dim) ~= 'integer' or num_embeddings < 0
    or embedding_dim < 0 then
    error(string.format('EmbeddingBag: num_embeddings and embedding_dim must be non-negative integers, got %s and %s',
      tostring(num_embeddings), tostring(embedding_dim)), 3)
  end
  for _, unsupported in ipairs { 'scale_grad_by_freq', 'sparse' } do
    if o[unsupported] then error('EmbeddingBag: ' .. unsupported .. ' is not supported by lutorch', 3) end
  end
  for _, name in ipairs { 'max_norm', 'norm_type' } do
    if o[name] ~= nil and type(o[name]) ~= 'number' then
      error(string.format('EmbeddingBag: %s must be a number, got %s', name, type(o[name])), 3)
    end
  end
  local mode = o.mode or 'mean'
  if not BAG_MODES[mode] then error("EmbeddingBag: mode has to be one of 'sum', 'mean' or 'max', got " .. tostring(mode), 3) end
  local pad = o.padding_idx
  if pad ~= nil then
    pad = as_int(pad)
    if math.type(pad) ~= 'integer' or pad == 0 or pad > num_embeddings or pad < -num_embeddings then
      error(string.format('EmbeddingBag: padding_idx must be within num_embeddings (a 1-based row in 1..%d, or '
        .. 'negative from the end), got %s', num_embeddings, tostring(pad)), 3)
    end
    if pad < 0 then pad = num_embeddings + pad + 1 end
  end
  self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, pad
  self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = o.max_norm, o.norm_type or 2.0, false, false
  self.mode = mode
  self.include_last_offset = o.include_last_offset and true or false
  if o._weight ~= nil then
    local w = o._weight
    if not torch.is_tensor(w) or w:dim() ~= 2 or w:size(1) ~= num_embeddings or w:size(2) ~= embedding_dim then
      error('EmbeddingBag: shape of weight does not match num_embeddings and embedding_dim', 3)
    end
    self.weight = Parameter(w, not o._freeze)
  else
    self.weight = Parameter(torch.empty(num_embeddings, embedding_dim, { dtype = o.dtype, device = o.device }),
      not o._freeze)
    self:reset_parameters()
  end
end

EmbeddingBag.reset_parameters = Embedding.reset_parameters
EmbeddingBag._fill_padding_idx_with_zero = Embedding._fill_padding_idx_with_zero

function EmbeddingBag:forward(input, offsets, per_sample_weights)
  return F.embedding_bag(input, self.weight, offsets, { mode = self.mode, per_sample_weights = per_sample_weights,
    include_last_offset = self.include_last_offset, padding_idx = self.padding_idx, max_norm = self.max_norm,
    norm_type = self.norm_type })
end

function EmbeddingBag:extra_repr()
  local s = string.format('%d, %d', self.num_embeddings, self.embedding_dim)
  if self.max_norm ~= nil then s = s .. ', max_norm=' .. Module._pyrepr(self.max_norm) end
  if self.norm_type ~= 2 then s = s .. ', norm_type=' .. Module._pyrepr(self.norm_type) end
  s = s .. ', mode=' .. self.mode
  if self.padding_idx ~= nil then s = s .. ', padding_idx=' .. self.padding_idx end
  return s
end

-- EmbeddingBag.from_pretrained(embeddings, {freeze = true, max_norm, norm_type = 2, mode = 'mean',
-- include_last_offset = false, padding_idx})
function EmbeddingBag.from_pretrained(embeddings, o)
  o = F._opts_of(o, 'EmbeddingBag.from_pretrained', { 'freeze', 'max_norm', 'norm_type', 'scale_grad_by_freq',
    'mode', 'sparse', 'include_last_offset', 'padding_idx' })
  if not torch.is_tensor(embeddings) or embeddings:dim() ~= 2 then
    error('EmbeddingBag.from_pretrained: embeddings parameter is expected to be 2-dimensional', 2)
  end
  local freeze = o.freeze
  if freeze == nil then freeze = true end
  return EmbeddingBag(embeddings:size(1), embeddings:size(2), { _weight = embeddings, _freeze = freeze,
    mode = o.mode, include_last_offset = o.include_last_offset, padding_idx = o.padding_idx, max_norm = o.max_norm,
    norm_type = o.norm_type, scale_grad_by_freq = o.scale_grad_by_freq, sparse = o.sparse })
end

return M
