-- nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder, nn.TransformerDecoderLayer,
-- nn.TransformerDecoder and nn.Transformer, with PyTorch's arguments, parameter names (in_proj_weight,
-- in_proj_bias, out_proj, or q/k/v_proj_weight with kdim/vdim; self_attn, multihead_attn, linear1,
-- linear2, norm1..3), initialisation and equations (PyTorch 1.13's multi_head_attention_forward and
-- layers), composed of tensor ops.
--
--   local mha = nn.MultiheadAttention(64, 8, {batch_first = true})
--   local out, weights = mha(x, x, x, {key_padding_mask = pad})   -- pad: true where a key is padding
--   local layer = nn.TransformerEncoderLayer(64, 8, {dim_feedforward = 256, batch_first = true})
--   local encoder = nn.TransformerEncoder(layer, 4)
--   local y = encoder(x, {mask = causal, src_key_padding_mask = pad})
--   local model = nn.Transformer(64, 8, {num_encoder_layers = 2, num_decoder_layers = 2})
--   local out = model(src, tgt, {tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt:size(1))})
local torch = require 'torch'
local Module = require 'torch.nn.module'
local class = require 'torch.class'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'
local Linear = require('torch.nn.linear').Linear
local Dropout = require('torch.nn.dropout').Dropout
local LayerNorm = require('torch.nn.normalization').LayerNorm
local ModuleList = require('torch.nn.container').ModuleList
local as_int = require('torch.composite').as_int

local M = {}

-- an options table (or {} for nil) whose keys are all known, as F's functions check them
local function opts_of(o, op, keys) return F._opts_of(o, op, keys) end

-- ---- MultiheadAttention ----

-- MultiheadAttention(embed_dim, num_heads, {dropout = 0, bias = true, batch_first = false, kdim, vdim,
-- device, dtype})
local MHA = Module:extend('MultiheadAttention')
M.MultiheadAttention = MHA

function MHA:init(embed_dim, num_heads, o)
  o = opts_of(o, 'MultiheadAttention',
    { 'dropout', 'bias', 'batch_first', 'kdim', 'vdim', 'add_bias_kv', 'add_zero_attn', 'device', 'dtype' })
  embed_dim = as_int(embed_dim)
  num_heads = as_int(num_heads)
  if math.type(embed_dim) ~= 'integer' or embed_dim <= 0 or math.type(num_heads) ~= 'integer' or num_heads <= 0 then
    error(string.format('MultiheadAttention: embed_dim and num_heads must be positive integers, got %s and %s',
      tostring(embed_dim), tostring(num_heads)), 3)
  end
  if embed_dim % num_heads ~= 0 then error('MultiheadAttention: embed_dim must be divisible by num_heads', 3) end
  local kdim, vdim = as_int(o.kdim or embed_dim), as_int(o.vdim or embed_dim)
  for name, d in pairs { kdim = kdim, vdim = vdim } do
    if math.type(d) ~= 'integer' or d <= 0 then
      error(string.format('MultiheadAttention: %s must be a positive integer, got %s', name, tostring(d)), 3)
    end
  end
  self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
  self.kdim, self.vdim = kdim, vdim
  -- one packed (3 E, E) projection when keys and values have the query's size, three otherwise
  self._qkv_same_embed_dim = kdim == embed_dim and vdim == embed_dim
  self.dropout = o.dropout or 0.0
  self.batch_first = o.batch_first and true or false
  local f = { dtype = o.dtype, device = o.device }
  local bias = o.bias == nil or o.bias
  if self._qkv_same_embed_dim then
    self.in_proj_weight = Parameter(torch.empty(3 * embed_dim, embed_dim, f))
  else
    self.q_proj_weight = Parameter(torch.empty(embed_dim, embed_dim, f))
    self.k_proj_weight = Parameter(torch.empty(embed_dim, kdim, f))
    self.v_proj_weight = Parameter(torch.empty(embed_dim, vdim, f))
  end
  if bias then
    self.in_proj_bias = Parameter(torch.empty(3 * embed_dim, f))
  else
    self:register_parameter('in_proj_bias', nil)
  end
  self.out_proj = Linear(embed_dim, embed_dim, { bias = bias, dtype = o.dtype, device = o.device })
  if o.add_bias_kv then
    self.bias_k = Parameter(torch.empty(1, 1, embed_dim, f))
    self.bias_v = Parameter(torch.empty(1, 1, embed_dim, f))
  end
  self.add_zero_attn = o.add_zero_attn and true or false
  -- PyTorch's _reset_parameters, in its order (out_proj's weight keeps Linear's draw)
  if self._qkv_same_embed_dim then
    init.xavier_uniform_(self.in_proj_weight)
  else
    init.xavier_uniform_(self.q_proj_weight)
    init.xavier_uniform_(self.k_proj_weight)
    init.xavier_uniform_(self.v_proj_weight)
  end
  if bias then
    init.constant_(self.in_proj_bias, 0)
    init.constant_(self.out_proj.bias, 0)
  end
  if o.add_bias_kv then
    init.xavier_normal_(self.bias_k)
    init.xavier_normal_(self.bias_v)
  end
end

-- forward(query, key, value, {key_padding_mask, need_weights = true, attn_mask,
-- average_attn_weights = true}) -> output, weights (nil without need_weights). Inputs (L, N, E), or
-- (N, L, E) with batch_first, or (L, E) unbatched; key_padding_mask (N, S), true (or -inf) at keys to
-- ignore; attn_mask (L, S) or (N * num_heads, L, S), true (or -inf) at pairs that may not attend.
-- F.multi_head_attention_forward with the module's parameters.
function MHA:forward(query, key, value, o)
  o = opts_of(o, 'MultiheadAttention', { 'key_padding_mask', 'need_weights', 'attn_mask', 'average_attn_weights' })
  for _, t in ipairs { query, key, value } do
    if not torch.is_tensor(t) then error('MultiheadAttention: query, key and value must be tensors', 2) end
  end
  local transpose = self.batch_first and query:dim() == 3
  if transpose then query, key, value = query:transpose(1, 2), key:transpose(1, 2), value:transpose(1, 2) end
  local out, weights = F.multi_head_attention_forward(query, key, value, self.embed_dim, self.num_heads,
    self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
    self.out_proj.weight, self.out_proj.bias, { training = self.training, key_padding_mask = o.key_padding_mask,
      need_weights = o.need_weights, attn_mask = o.attn_mask, use_separate_proj_weight = not self._qkv_same_embed_dim,
      q_proj_weight = self.q_proj_weight, k_proj_weight = self.k_proj_weight, v_proj_weight = self.v_proj_weight,
      average_attn_weights = o.average_attn_weights })
  if transpose then out = out:transpose(1, 2) end
  return out, weights
end

function MHA:extra_repr() return '' end

-- ---- TransformerEncoderLayer ----

local ACTIVATIONS = { relu = F.relu, gelu = F.gelu }

-- a layer's activation: 'relu' (the default), 'gelu' or a function
local function activation_of(act, op)
  act = act or 'relu'
  if type(act) == 'string' then
    if not ACTIVATIONS[act] then error(op .. ': activation should be relu/gelu, not ' .. act, 5) end
    return ACTIVATIONS[act]
  elseif type(act) ~= 'function' then
    error(op .. ': activation must be a name or a function, got ' .. type(act), 5)
  end
  return act
end

-- TransformerEncoderLayer(d_model, nhead, {dim_feedforward = 2048, dropout = 0.1, activation = 'relu',
-- layer_norm_eps = 1e-5, batch_first = false, norm_first = false, device, dtype}); activation 'relu',
-- 'gelu' or a function
local Layer = Module:extend('TransformerEncoderLayer')
M.TransformerEncoderLayer = Layer

local LAYER_KEYS = { 'dim_feedforward', 'dropout', 'activation', 'layer_norm_eps', 'batch_first', 'norm_first', 'device', 'dtype' }

local function attention_of(d_model, nhead, p, o)
  return MHA(d_model, nhead, { dropout = p, batch_first = o.batch_first, dtype = o.dtype, device = o.device })
end

-- the parts of an encoder (attns = {'self_attn'}, 2 norms) or decoder (self_attn, multihead_attn, 3
-- norms) layer, registered in PyTorch's order: the attentions, linear1, dropout, linear2, norm1..n,
-- dropout1..n; the activation and the config its stacks copy it by
local function build_layer(self, op, d_model, nhead, o, attns, nnorms)
  o = opts_of(o, op, LAYER_KEYS)
  local act = activation_of(o.activation, op)
  local ff, p, eps = o.dim_feedforward or 2048, o.dropout or 0.1, o.layer_norm_eps or 1e-5
  local f = { dtype = o.dtype, device = o.device }
  rawset(self, '_config', { d_model, nhead, o })
  for _, name in ipairs(attns) do self[name] = attention_of(d_model, nhead, p, o) end
  self.linear1 = Linear(d_model, ff, f)
  self.dropout = Dropout(p)
  self.linear2 = Linear(ff, d_model, f)
  self.norm_first = o.norm_first and true or false
  for i = 1, nnorms do self['norm' .. i] = LayerNorm(d_model, { eps = eps, dtype = o.dtype, device = o.device }) end
  for i = 1, nnorms do self['dropout' .. i] = Dropout(p) end
  rawset(self, '_activation', act)
end

-- the feed-forward block, then the layer's last dropout (its name: dropout2 or dropout3)
local function feed_forward(self, x, last)
  return self[last](self.linear2(self.dropout(rawget(self, '_activation')(self.linear1(x)))))
end

function Layer:init(d_model, nhead, o)
  build_layer(self, 'TransformerEncoderLayer', d_model, nhead, o, { 'self_attn' }, 2)
end

-- forward(src, {src_mask, src_key_padding_mask}) -> tensor of src's shape
function Layer:forward(src, o)
  o = opts_of(o, 'TransformerEncoderLayer', { 'src_mask', 'src_key_padding_mask', 'is_causal' })
  local function sa(x)
    local y = self.self_attn(x, x, x, { attn_mask = o.src_mask, key_padding_mask = o.src_key_padding_mask, need_weights = false })
    return self.dropout1(y)
  end
  local function ffn(x) return feed_forward(self, x, 'dropout2') end
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

-- num_layers copies of a layer made by class cls (checked, for op's errors), as PyTorch's deep copies: the same weights, on the
-- layer's device and dtype whatever it was moved to after its making, and no random numbers drawn
-- (the generator's state is given back), so that one seed still gives PyTorch's next draws
local function copies_of(layer, cls, num_layers, op)
  if not (Module.is_module(layer) and class.isinstance(layer, cls)) then
    error(string.format('%s: expected a %sLayer, got %s', op, op, tostring(layer)), 4)
  end
  num_layers = as_int(num_layers)
  if math.type(num_layers) ~= 'integer' or num_layers < 1 then
    error(op .. ': num_layers must be a positive integer, got ' .. tostring(num_layers), 4)
  end
  local cfg = rawget(layer, '_config')
  local sd = layer:state_dict()
  local p = layer:parameters()[1]
  local copies = {}
  local state = torch.get_rng_state()
  for i = 1, num_layers do
    local c = cls(cfg[1], cfg[2], cfg[3])
    c:load_state_dict(sd)
    c:to(p.device, p.dtype)
    copies[i] = c
  end
  torch.set_rng_state(state)
  return copies
end

-- ---- TransformerEncoder ----

-- TransformerEncoder(encoder_layer, num_layers, {norm}): num_layers copies of encoder_layer (the same
-- initial weights, as PyTorch's deep copies), then norm when given
local Encoder = Module:extend('TransformerEncoder')
M.TransformerEncoder = Encoder

function Encoder:init(layer, num_layers, o)
  o = opts_of(o, 'TransformerEncoder', { 'norm', 'enable_nested_tensor', 'mask_check' })
  self.layers = ModuleList(copies_of(layer, Layer, num_layers, 'TransformerEncoder'))
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

-- ---- TransformerDecoderLayer ----

-- TransformerDecoderLayer(d_model, nhead, {the options of TransformerEncoderLayer}): self-attention
-- over the target, attention from the target to the encoder's output (memory), a feed-forward block
local DecLayer = Module:extend('TransformerDecoderLayer')
M.TransformerDecoderLayer = DecLayer

function DecLayer:init(d_model, nhead, o)
  build_layer(self, 'TransformerDecoderLayer', d_model, nhead, o, { 'self_attn', 'multihead_attn' }, 3)
end

local DEC_KEYS = { 'tgt_mask', 'memory_mask', 'tgt_key_padding_mask', 'memory_key_padding_mask', 'tgt_is_causal',
  'memory_is_causal' }

-- forward(tgt, memory, {tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask}) ->
-- tensor of tgt's shape; the masks as MultiheadAttention's attn_mask and key_padding_mask
function DecLayer:forward(tgt, memory, o)
  o = opts_of(o, 'TransformerDecoderLayer', DEC_KEYS)
  if not torch.is_tensor(memory) then
    error('TransformerDecoderLayer: expected the encoder\'s output (memory) as a tensor, got ' .. type(memory), 2)
  end
  local function sa(x)
    local y = self.self_attn(x, x, x, { attn_mask = o.tgt_mask, key_padding_mask = o.tgt_key_padding_mask,
      need_weights = false })
    return self.dropout1(y)
  end
  local function mha(x)
    local y = self.multihead_attn(x, memory, memory, { attn_mask = o.memory_mask,
      key_padding_mask = o.memory_key_padding_mask, need_weights = false })
    return self.dropout2(y)
  end
  local function ffn(x) return feed_forward(self, x, 'dropout3') end
  local x = tgt
  if self.norm_first then
    x = x + sa(self.norm1(x))
    x = x + mha(self.norm2(x))
    x = x + ffn(self.norm3(x))
  else
    x = self.norm1(x + sa(x))
    x = self.norm2(x + mha(x))
    x = self.norm3(x + ffn(x))
  end
  return x
end

-- ---- TransformerDecoder ----

-- TransformerDecoder(decoder_layer, num_layers, {norm}): num_layers copies of decoder_layer, then norm
local Decoder = Module:extend('TransformerDecoder')
M.TransformerDecoder = Decoder

function Decoder:init(layer, num_layers, o)
  o = opts_of(o, 'TransformerDecoder', { 'norm' })
  self.layers = ModuleList(copies_of(layer, DecLayer, num_layers, 'TransformerDecoder'))
  self.num_layers = num_layers
  if o.norm ~= nil then self.norm = o.norm end
end

-- forward(tgt, memory, {tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask})
function Decoder:forward(tgt, memory, o)
  o = opts_of(o, 'TransformerDecoder', DEC_KEYS)
  local x = tgt
  for i = 1, self.num_layers do x = self.layers[i](x, memory, o) end
  if self.norm ~= nil then x = self.norm(x) end
  return x
end

-- ---- Transformer ----

-- Transformer(d_model, nhead, {...}) or Transformer{d_model = 512, nhead = 8, num_encoder_layers = 6, num_decoder_layers = 6,
-- dim_feedforward = 2048, dropout = 0.1, activation = 'relu', custom_encoder, custom_decoder,
-- layer_norm_eps = 1e-5, batch_first = false, norm_first = false, device, dtype}): PyTorch's
-- keyword arguments as one options table; an encoder and a decoder, each ending in a LayerNorm, every
-- parameter of two or more dims drawn again by xavier_uniform_ (PyTorch's _reset_parameters)
local Transformer = Module:extend('Transformer')
M.Transformer = Transformer

function Transformer:init(d_model, nhead, o)
  if type(d_model) == 'table' and nhead == nil then -- Transformer{d_model = ..., nhead = ...}
    o = d_model
  else -- Transformer(d_model, nhead, {...})
    local t = {}
    if o ~= nil and type(o) ~= 'table' then error('Transformer: expected an options table, got ' .. type(o), 3) end
    for k, v in pairs(o or {}) do t[k] = v end
    t.d_model, t.nhead = d_model, nhead
    o = t
  end
  o = opts_of(o, 'Transformer', { 'd_model', 'nhead', 'num_encoder_layers', 'num_decoder_layers', 'dim_feedforward',
    'dropout', 'activation', 'custom_encoder', 'custom_decoder', 'layer_norm_eps', 'batch_first', 'norm_first',
    'device', 'dtype' })
  d_model, nhead = o.d_model or 512, o.nhead or 8
  local lo = { dim_feedforward = o.dim_feedforward, dropout = o.dropout, activation = o.activation,
    layer_norm_eps = o.layer_norm_eps, batch_first = o.batch_first, norm_first = o.norm_first, device = o.device,
    dtype = o.dtype }
  local function norm() return LayerNorm(d_model, { eps = o.layer_norm_eps or 1e-5, dtype = o.dtype, device = o.device }) end
  if o.custom_encoder ~= nil then
    self.encoder = o.custom_encoder
  else
    self.encoder = M.TransformerEncoder(Layer(d_model, nhead, lo), o.num_encoder_layers or 6, { norm = norm() })
  end
  if o.custom_decoder ~= nil then
    self.decoder = o.custom_decoder
  else
    self.decoder = Decoder(DecLayer(d_model, nhead, lo), o.num_decoder_layers or 6, { norm = norm() })
  end
  for _, p in ipairs(self:parameters()) do
    if p:dim() > 1 then init.xavier_uniform_(p) end
  end
  self.d_model, self.nhead = d_model, nhead
  self.batch_first = o.batch_first and true or false
end

-- forward(src, tgt, {src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask,
-- memory_key_padding_mask}) -> the decoder's output, of tgt's shape
function Transformer:forward(src, tgt, o)
  o = opts_of(o, 'Transformer', { 'src_mask', 'tgt_mask', 'memory_mask', 'src_key_padding_mask',
    'tgt_key_padding_mask', 'memory_key_padding_mask', 'src_is_causal', 'tgt_is_causal', 'memory_is_causal' })
  if not torch.is_tensor(src) or not torch.is_tensor(tgt) then error('Transformer: src and tgt must be tensors', 2) end
  if src:dim() == 3 then
    local bd = self.batch_first and 1 or 2
    if tgt:dim() ~= 3 or src:size(bd) ~= tgt:size(bd) then
      error('Transformer: the batch number of src and tgt must be equal', 2)
    end
  end
  if src:size(-1) ~= self.d_model or tgt:size(-1) ~= self.d_model then
    error('Transformer: the feature number of src and tgt must be equal to d_model', 2)
  end
  local memory = self.encoder(src, { mask = o.src_mask, src_key_padding_mask = o.src_key_padding_mask })
  return self.decoder(tgt, memory, { tgt_mask = o.tgt_mask, memory_mask = o.memory_mask,
    tgt_key_padding_mask = o.tgt_key_padding_mask, memory_key_padding_mask = o.memory_key_padding_mask })
end

--- Transformer.generate_square_subsequent_mask(sz, {device, dtype}) -> (sz, sz) float mask, -inf
-- above the diagonal (a position may not attend to later ones), 0 elsewhere
function Transformer.generate_square_subsequent_mask(sz, o)
  sz = as_int(sz)
  if math.type(sz) ~= 'integer' or sz < 0 then
    error('generate_square_subsequent_mask: sz must be a non-negative integer, got ' .. tostring(sz), 2)
  end
  o = o or {}
  return torch.full({ sz, sz }, -math.huge, { dtype = o.dtype, device = o.device }):triu(1)
end

return M
