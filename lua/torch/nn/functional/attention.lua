-- F.multi_head_attention_forward: PyTorch 1.13's functional multi-head attention (nn.MultiheadAttention
-- runs it with its parameters), composed of tensor ops that autograd differentiates.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

return function(F, u)
  local check_tensor, opts_of = u.check_tensor, u.opts_of

  -- a mask with one more key (column), not masked: false for a bool mask, 0 for a float one
  local function pad_key(mask) return F.pad(mask, { 0, 1 }) end

  -- a mask as an additive float mask of dtype dt: bool true (masked out) becomes -inf
  local function additive(mask, dt)
    if mask.dtype == torch.bool then
      return torch.zeros(mask.shape, { dtype = dt, device = mask.device }):masked_fill(mask, -math.huge)
    end
    return mask:to(dt)
  end

  --- F.multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
  -- in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
  -- {training = true, key_padding_mask, need_weights = true, attn_mask, use_separate_proj_weight = false,
  -- q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights = true})
  -- -> output, weights (nil without need_weights). query (L, N, E) or unbatched (L, E), key and value
  -- (S, N, kdim / vdim); in_proj_weight (3 E, E), or the three separate weights with
  -- use_separate_proj_weight; key_padding_mask (N, S), true (or -inf) at keys to ignore; attn_mask
  -- (L, S) or (N * num_heads, L, S), true (or -inf) at pairs that may not attend; static_k / static_v
  -- (N * num_heads, S, E / num_heads) used as the projected keys / values. weights: (N, L, S) averaged
  -- over the heads, or (N, num_heads, L, S) without average_attn_weights.
  function F.multi_head_attention_forward(query, key, value, E, Hn, in_w, in_b, bias_k, bias_v, add_zero_attn,
                                          dropout_p, out_w, out_b, o)
    local op = 'multi_head_attention_forward'
    o = opts_of(o, op, { 'training', 'key_padding_mask', 'need_weights', 'attn_mask', 'use_separate_proj_weight',
      'q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'static_k', 'static_v', 'average_attn_weights' })
    check_tensor(query, op, 'query')
    check_tensor(key, op, 'key')
    check_tensor(value, op, 'value')
    check_tensor(out_w, op, 'out_proj_weight')
    E = as_int(E)
    Hn = as_int(Hn)
    if math.type(E) ~= 'integer' or math.type(Hn) ~= 'integer' or Hn <= 0 then
      error(string.format('%s: embed_dim_to_check and num_heads must be integers (num_heads positive), got %s and %s',
        op, tostring(E), tostring(Hn)), 2)
    end
    if type(dropout_p) ~= 'number' or dropout_p < 0 or dropout_p > 1 then
      error(op .. ': dropout_p must be a number between 0 and 1, got ' .. tostring(dropout_p), 2)
    end
    local batched = query:dim() == 3
    if not batched and query:dim() ~= 2 then
      error(string.format('%s: query should be unbatched 2D or batched 3D tensor but received %dD', op, query:dim()), 2)
    end
    if key:dim() ~= query:dim() or value:dim() ~= query:dim() then
      error(op .. ': query, key and value must have the same number of dimensions', 2)
    end
    if query:size(-1) ~= E then
      error(string.format('%s: was expecting embedding dimension of %d, but got %d', op, E, query:size(-1)), 2)
    end
    if E % Hn ~= 0 then error(string.format('%s: embed_dim %d not divisible by num_heads %d', op, E, Hn), 2) end
    local q, k, v = query, key, value
    local kpm = o.key_padding_mask
    if not batched then
      q, k, v = q:unsqueeze(2), k:unsqueeze(2), v:unsqueeze(2)
      if kpm ~= nil then kpm = kpm:unsqueeze(1) end
    end
    local L, N, S = q:size(1), q:size(2), k:size(1)
    if k:size(2) ~= N or v:size(2) ~= N or v:size(1) ~= S then
      error(op .. ": key and value must have the same batch and sequence sizes, matching the query's batch", 2)
    end
    local separate = o.use_separate_proj_weight
    local ws
    if separate then
      ws = { o.q_proj_weight, o.k_proj_weight, o.v_proj_weight }
      for i, name in ipairs { 'q_proj_weight', 'k_proj_weight', 'v_proj_weight' } do
        if ws[i] == nil then error(op .. ': use_separate_proj_weight is true but ' .. name .. ' is nil', 2) end
        check_tensor(ws[i], op, name)
      end
    else
      if in_w == nil then error(op .. ': use_separate_proj_weight is false but in_proj_weight is nil', 2) end
      check_tensor(in_w, op, 'in_proj_weight')
      ws = { in_w:narrow(1, 1, E), in_w:narrow(1, E + 1, E), in_w:narrow(1, 2 * E + 1, E) }
    end
    local kdim, vdim = ws[2]:size(-1), ws[3]:size(-1)
    if k:size(3) ~= kdim or v:size(3) ~= vdim then
      error(string.format('%s: expected keys of size %d and values of size %d, got %d and %d', op, kdim, vdim,
        k:size(3), v:size(3)), 2)
    end
    local hd = E // Hn
    local function proj(x, i)
      return F.linear(x, ws[i + 1], in_b and in_b:narrow(1, i * E + 1, E) or nil)
    end
    q, k, v = proj(q, 0), proj(k, 1), proj(v, 2)
    local am = o.attn_mask
    if (bias_k == nil) ~= (bias_v == nil) then error(op .. ': bias_k and bias_v must be given together', 2) end
    if bias_k ~= nil then -- one more key and value, learned, for every sequence
      if o.static_k ~= nil or o.static_v ~= nil then error(op .. ': bias cannot be added to static key or value', 2) end
      k = torch.cat({ k, bias_k:expand(1, N, E) }, 1)
      v = torch.cat({ v, bias_v:expand(1, N, E) }, 1)
      if am ~= nil then am = pad_key(am) end
      if kpm ~= nil then kpm = pad_key(kpm) end
      S = S + 1
    end
    -- (L, N, E) -> (N * heads, L, head_dim)
    q = q:reshape(L, N * Hn, hd):transpose(1, 2)
    k = k:reshape(S, N * Hn, hd):transpose(1, 2)
    v = v:reshape(S, N * Hn, hd):transpose(1, 2)
    for name, s in pairs { static_k = o.static_k, static_v = o.static_v } do
      if s ~= nil then
        check_tensor(s, op, name)
        if s:dim() ~= 3 or s:size(1) ~= N * Hn or s:size(3) ~= hd then
          error(string.format('%s: expecting %s of shape (%d, S, %d), got [%s]', op, name, N * Hn, hd,
            table.concat(s.shape, ', ')), 2)
        end
      end
    end
    if o.static_k ~= nil then k = o.static_k; S = k:size(2) end
    if o.static_v ~= nil then
      if o.static_v:size(2) ~= S then error(op .. ': static_v must have as many keys as the keys', 2) end
      v = o.static_v
    end
    -- the masks as one additive mask of (N * heads or 1, L, S)
    local mask
    if am ~= nil then
      check_tensor(am, op, 'attn_mask')
      if am:dim() == 2 then
        if am:size(1) ~= L or am:size(2) ~= S then
          error(string.format('%s: The shape of the 2D attn_mask is [%s], but should be (%d, %d).', op,
            table.concat(am.shape, ', '), L, S), 2)
        end
        am = am:unsqueeze(1)
      elseif am:dim() ~= 3 or am:size(1) ~= N * Hn or am:size(2) ~= L or am:size(3) ~= S then
        error(string.format('%s: The shape of the 3D attn_mask is [%s], but should be (%d, %d, %d).', op,
          table.concat(am.shape, ', '), N * Hn, L, S), 2)
      end
      mask = additive(am, q.dtype)
    end
    if kpm ~= nil then
      check_tensor(kpm, op, 'key_padding_mask')
      if kpm:dim() ~= 2 or kpm:size(1) ~= N or kpm:size(2) ~= S then
        error(string.format('%s: expecting key_padding_mask shape of (%d, %d), but got [%s]', op, N, S,
          table.concat(kpm.shape, ', ')), 2)
      end
      local km = additive(kpm, q.dtype):view(N, 1, 1, S):expand(N, Hn, 1, S):reshape(N * Hn, 1, S)
      mask = mask and mask + km or km
    end
    if add_zero_attn then -- and a key and value of zeros, which the masks let through
      local z = torch.zeros(N * Hn, 1, hd, { dtype = k.dtype, device = k.device })
      k, v = torch.cat({ k, z }, 2), torch.cat({ v, z }, 2)
      if mask ~= nil then mask = pad_key(mask) end
      S = S + 1
    end
    local scores = torch.matmul(q / math.sqrt(hd), k:transpose(2, 3))
    if mask ~= nil then scores = scores + mask end
    local attn = F.softmax(scores, 3)
    local training = o.training
    if training == nil then training = true end
    if dropout_p > 0 and training then attn = F.dropout(attn, dropout_p, true) end
    local out = torch.matmul(attn, v) -- (N * heads, L, head_dim)
    out = out:transpose(1, 2):reshape(L * N, E)
    out = F.linear(out, out_w, out_b):view(L, N, E)
    local weights
    if o.need_weights ~= false then
      weights = attn:view(N, Hn, L, S)
      if o.average_attn_weights ~= false then weights = weights:sum(2) / Hn end
      if not batched then weights = weights:squeeze(1) end
    end
    if not batched then out = out:squeeze(2) end
    return out, weights
  end
end
