-- nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder, with PyTorch's
-- arguments, parameter names (in_proj_weight, in_proj_bias, out_proj; self_attn, linear1, linear2,
-- norm1, norm2), initialisation and equations (PyTorch 1.13's multi_head_attention_forward and
-- encoder layer), composed of tensor ops.
--
--   local mha = nn.MultiheadAttention(64, 8, {batch_first = true})
--   local out, weights = mha(x, x, x, {key_padding_mask = pad})   -- pad: true where a key is padding
--   local layer = nn.TransformerEncoderLayer(64, 8, {dim_feedforward = 256, batch_first = true})
--   local encoder = nn.TransformerEncoder(layer, 4)
--   local y = encoder(x, {mask = causal, src_key_padding_mask = pad})
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'
local Linear = require('torch.nn.linear').Linear
local Dropout = require('torch.nn.dropout').Dropout
local LayerNorm = require('torch.nn.normalization').LayerNorm
local ModuleList = require('torch.nn.container').ModuleList

local M = {}

-- an options table (or {} for nil) whose keys are all known, as F's functions check them
local function opts_of(o, op, keys) return F._opts_of(o, op, keys) end

-- ---- MultiheadAttention ----

-- MultiheadAttention(embed_dim, num_heads, {dropout = 0, bias = true, batch_first = false, kdim, vdim,
-- device, dtype})
local MHA = Module:extend('MultiheadAttention')
M.MultiheadAttention = MHA

function MHA:init(embed_dim, num_heads, o)
  o = opts_of(o, 'MultiheadAttention', { 'dropout', 'bias', 'batch_first', 'kdim', 'vdim', 'device', 'dtype' })
  if math.type(embed_dim) ~= 'integer' or embed_dim <= 0 or math.type(num_heads) ~= 'integer' or num_heads <= 0 then
    error(string.format('MultiheadAttention: embed_dim and num_heads must be positive integers, got %s and %s',
      tostring(embed_dim), tostring(num_heads)), 3)
  end
  if embed_dim % num_heads ~= 0 then error('MultiheadAttention: embed_dim must be divisible by num_heads', 3) end
  local kdim, vdim = o.kdim or embed_dim, o.vdim or embed_dim
  if kdim ~= embed_dim or vdim ~= embed_dim then
    error('MultiheadAttention: kdim and vdim other than embed_dim are not supported', 3)
  end
  self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
  self.kdim, self.vdim = kdim, vdim
  self.dropout = o.dropout or 0.0
  self.batch_first = o.batch_first and true or false
  local f = { dtype = o.dtype, device = o.device }
  local bias = o.bias == nil or o.bias
  self.in_proj_weight = Parameter(torch.empty(3 * embed_dim, embed_dim, f))
  if bias then
    self.in_proj_bias = Parameter(torch.empty(3 * embed_dim, f))
  else
    self:register_parameter('in_proj_bias', nil)
  end
  self.out_proj = Linear(embed_dim, embed_dim, { bias = bias, dtype = o.dtype, device = o.device })
  init.xavier_uniform_(self.in_proj_weight)
  if bias then
    init.constant_(self.in_proj_bias, 0)
    init.constant_(self.out_proj.bias, 0)
  end
end

-- a mask as an additive float mask of dtype dt: bool true (masked out) becomes -inf
local function additive(mask, dt)
  if mask.dtype == torch.bool then return torch.zeros(mask.shape, { dtype = dt, device = mask.device }):masked_fill(mask, -math.huge) end
  return mask:to(dt)
end

-- forward(query, key, value, {key_padding_mask, need_weights = true, attn_mask,
-- average_attn_weights = true}) -> output, weights (nil without need_weights). Inputs (L, N, E), or
-- (N, L, E) with batch_first, or (L, E) unbatched; key_padding_mask (N, S), true (or -inf) at keys to
-- ignore; attn_mask (L, S) or (N * num_heads, L, S), true (or -inf) at pairs that may not attend
function MHA:forward(query, key, value, o)
  o = opts_of(o, 'MultiheadAttention', { 'key_padding_mask', 'need_weights', 'attn_mask', 'average_attn_weights' })
  for _, t in ipairs { query, key, value } do
    if not torch.is_tensor(t) then error('MultiheadAttention: query, key and value must be tensors', 2) end
  end
  local batched = query:dim() == 3
  if not batched and query:dim() ~= 2 then
    error(string.format('MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received %dD', query:dim()), 2)
  end
  if key:dim() ~= query:dim() or value:dim() ~= query:dim() then
    error('MultiheadAttention: query, key and value must have the same number of dimensions', 2)
  end
  local E = self.embed_dim
  if query:size(-1) ~= E then
    error(string.format('MultiheadAttention: was expecting embedding dimension of %d, but got %d', E, query:size(-1)), 2)
  end
  local q, k, v = query, key, value
  local kpm = o.key_padding_mask
  if not batched then
    q, k, v = q:unsqueeze(2), k:unsqueeze(2), v:unsqueeze(2)
    if kpm ~= nil then kpm = kpm:unsqueeze(1) end
  elseif self.batch_first then
    q, k, v = q:transpose(1, 2), k:transpose(1, 2), v:transpose(1, 2)
  end
  local L, N, S = q:size(1), q:size(2), k:size(1)
  if k:size(2) ~= N or v:size(2) ~= N or v:size(1) ~= S then
    error('MultiheadAttention: key and value must have the same batch and sequence sizes, matching the query\'s batch', 2)
  end
  local Hn, hd = self.num_heads, self.head_dim
  local w, b = self.in_proj_weight, self.in_proj_bias
  local function proj(x, i)
    return F.linear(x, w:narrow(1, i * E + 1, E), b and b:narrow(1, i * E + 1, E) or nil)
  end
  q, k, v = proj(q, 0), proj(k, 1), proj(v, 2)
  -- the masks as one additive mask of (N * heads or 1, L, S)
  local mask
  if o.attn_mask ~= nil then
    local am = o.attn_mask
    if am:dim() == 2 then
      if am:size(1) ~= L or am:size(2) ~= S then
        error(string.format('MultiheadAttention: The shape of the 2D attn_mask is [%s], but should be (%d, %d).',
          table.concat(am.shape, ', '), L, S), 2)
      end
      am = am:unsqueeze(1)
    elseif am:dim() ~= 3 or am:size(1) ~= N * Hn or am:size(2) ~= L or am:size(3) ~= S then
      error(string.format('MultiheadAttention: The shape of the 3D attn_mask is [%s], but should be (%d, %d, %d).',
        table.concat(am.shape, ', '), N * Hn, L, S), 2)
    end
    mask = additive(am, q.dtype)
  end
  if kpm ~= nil then
    if kpm:dim() ~= 2 or kpm:size(1) ~= N or kpm:size(2) ~= S then
      error(string.format('MultiheadAttention: expecting key_padding_mask shape of (%d, %d), but got [%s]', N, S,
        table.concat(kpm.shape, ', ')), 2)
    end
    local km = additive(kpm, q.dtype):view(N, 1, 1, S):expand(N, Hn, 1, S):reshape(N * Hn, 1, S)
    mask = mask and mask + km or km
  end
  -- (L, N, E) -> (N * heads, L, head_dim)
  q = q:reshape(L, N * Hn, hd):transpose(1, 2)
  k = k:reshape(S, N * Hn, hd):transpose(1, 2)
  v = v:reshape(S, N * Hn, hd):transpose(1, 2)
  local scores = torch.matmul(q / math.sqrt(hd), k:transpose(2, 3))
  if mask ~= nil then scores = scores + mask end
  local attn = F.softmax(scores, 3)
  if self.dropout > 0 and self.training then attn = F.dropout(attn, self.dropout, true) end
  local out = torch.matmul(attn, v) -- (N * heads, L, head_dim)
  out = out:transpose(1, 2):reshape(L * N, E)
  out = self.out_proj(out):view(L, N, E)
  local weights
  if o.need_weights ~= false then
    weights = attn:view(N, Hn, L, S)
    if o.average_attn_weights ~= false then weights = weights:sum(2) / Hn end
    if not batched then weights = weights:squeeze(1) end
  end
  if not batched then out = out:squeeze(2)
  elseif self.batch_first then out = out:transpose(1, 2) end
  return out, weights
end

function MHA:extra_repr() return '' end

-- ---- TransformerEncoderLayer ----

local ACTIVATIONS = { relu = F.relu, gelu = F.gelu }

-- TransformerEncoderLayer(d_model, nhead, {dim_feedforward = 2048, dropout = 0.1, activation = 'relu',
-- layer_norm_eps = 1e-5, batch_first = false, norm_first = false, device, dtype}); activation 'relu',
-- 'gelu' or a function
local Layer = Module:extend('TransformerEncoderLayer')
M.TransformerEncoderLayer = Layer

local LAYER_KEYS = { 'dim_feedforward', 'dropout', 'activation', 'layer_norm_eps', 'batch_first', 'norm_first', 'device', 'dtype' }

local function attention_of(d_model, nhead, p, o)
  return MHA(d_model, nhead, { dropout = p, batch_first = o.batch_first, dtype = o.dtype, device = o.device })
end

function Layer:init(d_model, nhead, o)
  o = opts_of(o, 'TransformerEncoderLayer', LAYER_KEYS)
  local act = o.activation or 'relu'
  if type(act) == 'string' then
    if not ACTIVATIONS[act] then error("TransformerEncoderLayer: activation should be relu/gelu, not " .. act, 3) end
  elseif type(act) ~= 'function' then
    error('TransformerEncoderLayer: activation must be a name or a function, got ' .. type(act), 3)
  end
  local ff, p, eps = o.dim_feedforward or 2048, o.dropout or 0.1, o.layer_norm_eps or 1e-5
  local f = { dtype = o.dtype, device = o.device }
  rawset(self, '_config', { d_model, nhead, o }) -- for TransformerEncoder's copies
  self.self_attn = attention_of(d_model, nhead, p, o)
  self.linear1 = Linear(d_model, ff, f)
  self.dropout = Dropout(p)
  self.linear2 = Linear(ff, d_model, f)
  self.norm_first = o.norm_first and true or false
  self.norm1 = LayerNorm(d_model, { eps = eps, dtype = o.dtype, device = o.device })
  self.norm2 = LayerNorm(d_model, { eps = eps, dtype = o.dtype, device = o.device })
  self.dropout1 = Dropout(p)
  self.dropout2 = Dropout(p)
  rawset(self, '_activation', type(act) == 'string' and ACTIVATIONS[act] or act)
end

-- forward(src, {src_mask, src_key_padding_mask}) -> tensor of src's shape
function Layer:forward(src, o)
  o = opts_of(o, 'TransformerEncoderLayer', { 'src_mask', 'src_key_padding_mask', 'is_causal' })
  local function sa(x)
    local y = self.self_attn(x, x, x, { attn_mask = o.src_mask, key_padding_mask = o.src_key_padding_mask, need_weights = false })
    return self.dropout1(y)
  end
  local function ffn(x) return self.dropout2(self.linear2(self.dropout(rawget(self, '_activation')(self.linear1(x))))) end
  local x = src
  if self.norm_first then
    x = x + sa(self.norm1(x))
    x = x + ffn(self.norm2(x))
  else
    x = self.norm1(x + sa(x))
    x = self.norm2(x + ffn(x))
  end
  return x
end

-- ---- TransformerEncoder ----

-- TransformerEncoder(encoder_layer, num_layers, {norm}): num_layers copies of encoder_layer (the same
-- initial weights, as PyTorch's deep copies), then norm when given
local Encoder = Module:extend('TransformerEncoder')
M.TransformerEncoder = Encoder

function Encoder:init(layer, num_layers, o)
  o = opts_of(o, 'TransformerEncoder', { 'norm', 'enable_nested_tensor', 'mask_check' })
  if not (Module.is_module(layer) and rawget(layer, '_config')) then
    error('TransformerEncoder: expected a TransformerEncoderLayer, got ' .. tostring(layer), 3)
  end
  if math.type(num_layers) ~= 'integer' or num_layers < 1 then
    error('TransformerEncoder: num_layers must be a positive integer, got ' .. tostring(num_layers), 3)
  end
  local cfg = rawget(layer, '_config')
  local sd = layer:state_dict()
  local copies = {}
  for i = 1, num_layers do
    local c = Layer(cfg[1], cfg[2], cfg[3])
    c:load_state_dict(sd)
    -- on the layer's device and dtype, whatever it was moved to after its making
    local p = layer:parameters()[1]
    c:to(p.device, p.dtype)
    copies[i] = c
  end
  self.layers = ModuleList(copies)
  self.num_layers = num_layers
  if o.norm ~= nil then self.norm = o.norm end
end

-- forward(src, {mask, src_key_padding_mask}) -> tensor of src's shape
function Encoder:forward(src, o)
  o = opts_of(o, 'TransformerEncoder', { 'mask', 'src_key_padding_mask', 'is_causal' })
  local x = src
  for i = 1, self.num_layers do
    x = self.layers[i](x, { src_mask = o.mask, src_key_padding_mask = o.src_key_padding_mask })
  end
  if self.norm ~= nil then x = self.norm(x) end
  return x
end

return M
