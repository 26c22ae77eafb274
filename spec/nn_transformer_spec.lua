-- F.scaled_dot_product_attention, nn.MultiheadAttention, nn.TransformerEncoderLayer and
-- nn.TransformerEncoder: the attention formula written here in plain Lua, masks, layouts, copies,
-- dropout, errors, and a small model that learns. Values and gradients against PyTorch are in
-- nn_parity_spec.lua.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional

-- softmax(q k^T * scale + mask) v for one (L x d), (S x d), (S x dv) problem, in plain Lua
local function ref_attention(q, k, v, scale, allowed)
  local L, S, dv = #q, #k, #v[1]
  local out = {}
  for i = 1, L do
    local w, m = {}, -math.huge
    for j = 1, S do
      local dot = 0
      for t = 1, #q[i] do dot = dot + q[i][t] * k[j][t] end
      w[j] = (allowed == nil or allowed(i, j)) and dot * scale or -math.huge
      m = math.max(m, w[j])
    end
    local z = 0
    for j = 1, S do w[j] = math.exp(w[j] - m); z = z + w[j] end
    out[i] = {}
    for t = 1, dv do
      local acc = 0
      for j = 1, S do acc = acc + w[j] / z * v[j][t] end
      out[i][t] = acc
    end
  end
  return out
end

describe('F.scaled_dot_product_attention', function()
  it('is softmax(q k^T / sqrt(d) + mask) v, with bool masks (true attends), float masks and is_causal', function()
    torch.manual_seed(1)
    local q, k, v = torch.randn(2, 4, 3, { dtype = torch.float64 }), torch.randn(2, 5, 3, { dtype = torch.float64 }),
      torch.randn(2, 5, 2, { dtype = torch.float64 })
    local out = F.scaled_dot_product_attention(q, k, v)
    for b = 1, 2 do
      H.assert_values(out[b], ref_attention(q[b]:totable(), k[b]:totable(), v[b]:totable(), 1 / math.sqrt(3)), 1e-12)
    end
    local allow = torch.tensor({ { true, false, true, true, false }, { true, true, true, true, true },
      { false, false, true, false, false }, { true, true, false, true, true } })
    local masked = F.scaled_dot_product_attention(q, k, v, { attn_mask = allow, scale = 0.7 })
    local at = allow:totable()
    for b = 1, 2 do
      H.assert_values(masked[b], ref_attention(q[b]:totable(), k[b]:totable(), v[b]:totable(), 0.7,
        function(i, j) return at[i][j] end), 1e-12)
    end
    -- a float mask of 0 and -inf is the same as the bool one
    local fmask = torch.zeros(4, 5, { dtype = torch.float64 }):masked_fill(allow:logical_not(), -math.huge)
    H.assert_values(F.scaled_dot_product_attention(q, k, v, { attn_mask = fmask, scale = 0.7 }), masked:totable(), 1e-12)
    local kk = torch.randn(2, 4, 3, { dtype = torch.float64 })
    local causal = F.scaled_dot_product_attention(q, kk, v:narrow(2, 1, 4), { is_causal = true })
    for b = 1, 2 do
      H.assert_values(causal[b], ref_attention(q[b]:totable(), kk[b]:totable(), v[b]:narrow(1, 1, 4):totable(),
        1 / math.sqrt(3), function(i, j) return j <= i end), 1e-12)
    end
    H.raises(function() F.scaled_dot_product_attention(q, k, v, { attn_mask = allow, is_causal = true }) end,
      'attn_mask and is_causal cannot both be given')
  end)
  it('passes gradients to q, k and v (finite differences)', function()
    torch.manual_seed(2)
    local q = torch.randn(2, 3, 4, { dtype = torch.float64 }):requires_grad_()
    local k = torch.randn(2, 5, 4, { dtype = torch.float64 }):requires_grad_()
    local v = torch.randn(2, 5, 3, { dtype = torch.float64 }):transpose(2, 3):contiguous():transpose(2, 3):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(a, b, c) return F.scaled_dot_product_attention(a, b, c) end, { q, k, v }))
  end)
end)

describe('MultiheadAttention and the Transformer encoder', function()
  it("have PyTorch's parameters, initialisation and reprs", function()
    local m = nn.MultiheadAttention(8, 2)
    local names = {}
    for name in m:named_parameters() do names[#names + 1] = name end
    assert.are.same({ 'in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias' }, names)
    H.assert_values(m.in_proj_bias, torch.zeros(24):totable(), 0)
    H.assert_values(m.out_proj.bias, torch.zeros(8):totable(), 0)
    local bound = math.sqrt(6 / (24 + 8)) -- xavier_uniform over (3 E, E)
    assert.is_true(m.in_proj_weight:abs():max():item() <= bound)
    local layer = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16 })
    local keys = {}
    for k in pairs(layer:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ 'linear1.bias', 'linear1.weight', 'linear2.bias', 'linear2.weight', 'norm1.bias', 'norm1.weight',
      'norm2.bias', 'norm2.weight', 'self_attn.in_proj_bias', 'self_attn.in_proj_weight', 'self_attn.out_proj.bias',
      'self_attn.out_proj.weight' }, keys)
    assert.matches('TransformerEncoderLayer%(\n  %(self_attn%): MultiheadAttention%(', tostring(layer))
  end)

  it('gives the same output batch-first, sequence-first and unbatched; weights that sum to 1; padding ignored', function()
    torch.manual_seed(3)
    local m = nn.MultiheadAttention(6, 3, { dtype = torch.float64 })
    local mb = nn.MultiheadAttention(6, 3, { batch_first = true, dtype = torch.float64 })
    mb:load_state_dict(m:state_dict())
    local x = torch.randn(5, 2, 6, { dtype = torch.float64 })
    local out, w = m(x, x, x)
    local outb = mb(x:transpose(1, 2), x:transpose(1, 2), x:transpose(1, 2))
    H.assert_values(outb:transpose(1, 2), out:totable(), 1e-12)
    local o1, w1 = m(x:select(2, 1), x:select(2, 1), x:select(2, 1))
    H.assert_values(o1, out:select(2, 1):totable(), 1e-12)
    H.assert_values(w1, w[1]:totable(), 1e-12)
    H.assert_values(w:sum(3), torch.ones(2, 5):totable(), 1e-12)
    assert.is_nil(select(2, m(x, x, x, { need_weights = false })))
    -- a padded key gets no weight, and changing it changes nothing
    local pad = torch.tensor({ { false, false, false, false, true }, { false, false, false, false, false } })
    local a, wa = m(x, x, x, { key_padding_mask = pad })
    H.assert_values(wa[1]:select(2, 5), torch.zeros(5):totable(), 0)
    local x2 = x:clone()
    x2[5][1]:fill_(7)
    local b = m(x, x2, x2, { key_padding_mask = pad })
    H.assert_values(b:select(2, 1), a:select(2, 1):totable(), 1e-12)
    -- per-head weights
    local _, wh = m(x, x, x, { average_attn_weights = false })
    assert.are.same({ 2, 3, 5, 5 }, { table.unpack(wh.shape) })
    H.assert_values(wh:mean(2), w:totable(), 1e-12)
  end)

  it('copies the layer into the encoder with the same weights; dropout in training only', function()
    torch.manual_seed(4)
    local layer = nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8 })
    local enc = nn.TransformerEncoder(layer, 3)
    assert.are.equal(3, #enc.layers)
    for i = 1, 3 do
      assert.is_true(torch.equal(enc.layers[i].linear1.weight, layer.linear1.weight))
      assert.are_not.equal(enc.layers[i].linear1.weight, layer.linear1.weight) -- copies, not the same tensor
    end
    local x = torch.randn(6, 2, 4)
    enc:eval()
    assert.is_true(torch.equal(enc(x), enc(x)))
    enc:train()
    assert.is_false(torch.equal(enc(x), enc(x)))
  end)

  it('learns to copy the first token of a sequence to every position', function()
    torch.manual_seed(5)
    local d = 16
    local embed = nn.Linear(1, d)
    local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 2, { dim_feedforward = 32, dropout = 0, batch_first = true }), 2)
    local head = nn.Linear(d, 1)
    local x = torch.rand(32, 6, 1)
    local y = x:narrow(2, 1, 1):expand(32, 6, 1)
    local first, last = H.fit({ embed, enc, head }, 600, 0.003, function() return F.mse_loss(head(enc(embed(x))), y) end)
    -- predicting the mean costs 1/12 (0.083): the copy is learnt
    assert(last < 0.01, first .. ' -> ' .. last)
  end)

  it('names bad arguments', function()
    H.raises(function() nn.MultiheadAttention(6, 4) end, 'embed_dim must be divisible by num_heads')
    H.raises(function() nn.MultiheadAttention(6, 2, { kdim = 0 }) end, 'kdim must be a positive integer')
    H.raises(function() nn.MultiheadAttention(6, 2, { kdim = 3 })(torch.randn(5, 2, 6), torch.randn(4, 2, 6), torch.randn(4, 2, 6)) end,
      'expected keys of size 3 and values of size 6, got 6 and 6')
    H.raises(function() nn.MultiheadAttention(6, 2, { heads = 2 }) end, "unknown option 'heads'")
    local m = nn.MultiheadAttention(6, 2)
    local x = torch.randn(5, 2, 6)
    H.raises(function() m(torch.randn(5, 2, 4), x, x) end, 'was expecting embedding dimension of 6, but got 4')
    H.raises(function() m(x, x, x, { attn_mask = torch.zeros(4, 5) }) end, 'The shape of the 2D attn_mask is [4, 5], but should be (5, 5).')
    H.raises(function() m(x, x, x, { key_padding_mask = torch.zeros(3, 5, { dtype = torch.bool }) }) end,
      'expecting key_padding_mask shape of (2, 5)')
    H.raises(function() m(torch.randn(2, 3, 4, 6), x, x) end, 'query should be unbatched 2D or batched 3D tensor')
    H.raises(function() nn.TransformerEncoderLayer(6, 2, { activation = 'tanh' }) end, 'activation should be relu/gelu, not tanh')
    H.raises(function() nn.TransformerEncoder(nn.Linear(2, 2), 2) end, 'TransformerEncoder: expected a TransformerEncoderLayer')
  end)
end)

describe('MultiheadAttention with kdim/vdim, bias_kv and zero_attn; the Transformer decoder and nn.Transformer', function()
  it('projects keys and values of other sizes with their own weights, as PyTorch names them', function()
    torch.manual_seed(7)
    local m = nn.MultiheadAttention(6, 2, { kdim = 4, vdim = 3, dtype = torch.float64 })
    local names = {}
    for name, p in m:named_parameters() do names[#names + 1] = name .. ':' .. table.concat(p.shape, 'x') end
    assert.are.same({ 'q_proj_weight:6x6', 'k_proj_weight:6x4', 'v_proj_weight:6x3', 'in_proj_bias:18',
      'out_proj.weight:6x6', 'out_proj.bias:6' }, names)
    -- the same as the formula with the three projections written out
    local q, k, v = torch.randn(3, 1, 6, { dtype = torch.float64 }), torch.randn(5, 1, 4, { dtype = torch.float64 }),
      torch.randn(5, 1, 3, { dtype = torch.float64 })
    local out = m(q, k, v)
    local b = m.in_proj_bias
    local function proj(x, w, i) return F.linear(x:select(2, 1), w, b:narrow(1, 6 * i + 1, 6)) end
    local Q, K, V = proj(q, m.q_proj_weight, 0), proj(k, m.k_proj_weight, 1), proj(v, m.v_proj_weight, 2)
    local heads = {}
    for h = 1, 2 do
      local function part(x) return x:narrow(2, 3 * h - 2, 3):totable() end
      heads[h] = torch.tensor(ref_attention(part(Q), part(K), part(V), 1 / math.sqrt(3)), { dtype = torch.float64 })
    end
    local want = m.out_proj(torch.cat(heads, 2))
    H.assert_values(out:select(2, 1), want:totable(), 1e-12)
  end)

  it('adds a learned key and value (add_bias_kv) and a zero one (add_zero_attn) that every query may attend to', function()
    torch.manual_seed(8)
    local m = nn.MultiheadAttention(4, 1, { add_bias_kv = true, add_zero_attn = true, dtype = torch.float64 })
    assert.are.same({ 1, 1, 4 }, { table.unpack(m.bias_k.shape) })
    local x = torch.randn(3, 2, 4, { dtype = torch.float64 })
    local _, w = m(x, x, x)
    assert.are.same({ 2, 3, 5 }, { table.unpack(w.shape) }) -- 3 keys + bias_k + zero
    H.assert_values(w:sum(3), torch.ones(2, 3):totable(), 1e-12)
    -- the zero key scores 0, so the softmax gains a term exp(0) = 1: the other keys keep the
    -- weights the same module gives without it, scaled by 1 - the zero key's weight
    local m0 = nn.MultiheadAttention(4, 1, { add_zero_attn = true, dtype = torch.float64 })
    local m1 = nn.MultiheadAttention(4, 1, { dtype = torch.float64 })
    m1:load_state_dict(m0:state_dict())
    local _, w0 = m0(x, x, x)
    local _, w1 = m1(x, x, x)
    local z = w0:narrow(3, 4, 1)
    H.assert_values(w0:narrow(3, 1, 3), (w1 * (1 - z)):totable(), 1e-12)
    assert.is_true(z:gt(0):all():item())
    -- a padding mask still hides the padded key, not the added ones
    local pad = torch.tensor({ { false, false, true }, { false, false, false } })
    local _, wp = m(x, x, x, { key_padding_mask = pad })
    H.assert_values(wp[1]:select(2, 3), torch.zeros(3):totable(), 0)
    assert.is_true(wp[1]:select(2, 4):gt(0):all():item())
  end)

  it("has PyTorch's decoder layer structure; norm_first and batch_first give what the formulas give", function()
    torch.manual_seed(9)
    local layer = nn.TransformerDecoderLayer(8, 2, { dim_feedforward = 16 })
    local keys = {}
    for k in pairs(layer:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ 'linear1.bias', 'linear1.weight', 'linear2.bias', 'linear2.weight', 'multihead_attn.in_proj_bias',
      'multihead_attn.in_proj_weight', 'multihead_attn.out_proj.bias', 'multihead_attn.out_proj.weight', 'norm1.bias',
      'norm1.weight', 'norm2.bias', 'norm2.weight', 'norm3.bias', 'norm3.weight', 'self_attn.in_proj_bias',
      'self_attn.in_proj_weight', 'self_attn.out_proj.bias', 'self_attn.out_proj.weight' }, keys)
    -- the pre-norm layer, batch-first, written out
    local pre = nn.TransformerDecoderLayer(8, 2, { dim_feedforward = 16, dropout = 0, norm_first = true, batch_first = true,
      dtype = torch.float64 })
    local tgt, mem = torch.randn(2, 3, 8, { dtype = torch.float64 }), torch.randn(2, 4, 8, { dtype = torch.float64 })
    local mask = nn.Transformer.generate_square_subsequent_mask(3, { dtype = torch.float64 })
    local x = tgt
    local n1 = pre.norm1(x)
    x = x + pre.self_attn(n1, n1, n1, { attn_mask = mask })
    local n2 = pre.norm2(x)
    x = x + pre.multihead_attn(n2, mem, mem)
    x = x + pre.linear2(F.relu(pre.linear1(pre.norm3(x))))
    H.assert_values(pre(tgt, mem, { tgt_mask = mask }), x:totable(), 1e-12)
    -- causal: a later target position changes nothing before it
    local tgt2 = tgt:clone()
    tgt2:select(2, 3):fill_(5)
    H.assert_values(pre(tgt2, mem, { tgt_mask = mask }):narrow(2, 1, 2), x:narrow(2, 1, 2):totable(), 1e-12)
  end)

  it('builds nn.Transformer as PyTorch does: encoder and decoder with final norms, copies of one layer', function()
    torch.manual_seed(10)
    local t = nn.Transformer(8, 2, { num_encoder_layers = 2, num_decoder_layers = 3, dim_feedforward = 16, dropout = 0 })
    assert.are.equal(2, #t.encoder.layers); assert.are.equal(3, #t.decoder.layers)
    assert.is_not_nil(t.encoder.norm); assert.is_not_nil(t.decoder.norm)
    -- xavier_uniform_ drew every matrix again: each within its bound
    for name, p in t:named_parameters() do
      if p:dim() > 1 then
        local bound = math.sqrt(6 / (p:size(1) + p:size(2)))
        assert(p:abs():max():item() <= bound, name)
      end
    end
    local kw = nn.Transformer { d_model = 8, nhead = 2, num_encoder_layers = 1, num_decoder_layers = 1 }
    assert.are.equal(8, kw.d_model)
    local src, tgt = torch.randn(5, 2, 8), torch.randn(4, 2, 8)
    local y = t(src, tgt)
    assert.are.same({ 4, 2, 8 }, { table.unpack(y.shape) })
    -- the encoder then the decoder
    H.assert_values(y, t.decoder(tgt, t.encoder(src)):totable(), 1e-6)
    H.assert_values(nn.Transformer.generate_square_subsequent_mask(3),
      { { 0, -math.huge, -math.huge }, { 0, 0, -math.huge }, { 0, 0, 0 } }, 0)
  end)

  it('learns to reverse a sequence', function()
    torch.manual_seed(6)
    local d, S = 16, 5
    local embed, head = nn.Linear(1, d), nn.Linear(d, 1)
    local model = nn.Transformer(d, 2, { num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 32, dropout = 0,
      batch_first = true })
    local pos = nn.Embedding(S, d)
    local x = torch.rand(32, S, 1)
    local idx = torch.arange(1, S + 1, { dtype = torch.int64 })
    local first, last = H.fit({ embed, head, model, pos }, 300, 0.003, function()
      local p = pos(idx):unsqueeze(1):expand(32, S, d)
      return F.mse_loss(head(model(embed(x) + p, p)), x:flip(2))
    end)
    -- predicting the mean costs 1/12 (0.083)
    assert(last < 0.01, first .. ' -> ' .. last)
  end)

  it('names bad arguments', function()
    local t = nn.Transformer(8, 2, { num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 8 })
    H.raises(function() t(torch.randn(5, 2, 8), torch.randn(4, 3, 8)) end, 'the batch number of src and tgt must be equal')
    H.raises(function() t(torch.randn(5, 2, 8), torch.randn(4, 2, 6)) end,
      'the feature number of src and tgt must be equal to d_model')
    H.raises(function() nn.Transformer(8, 2, { layers = 2 }) end, "unknown option 'layers'")
    H.raises(function() nn.TransformerDecoder(nn.TransformerEncoderLayer(8, 2), 2) end,
      'TransformerDecoder: expected a TransformerDecoderLayer')
    H.raises(function() nn.TransformerEncoder(nn.TransformerDecoderLayer(8, 2), 2) end,
      'TransformerEncoder: expected a TransformerEncoderLayer')
    H.raises(function() nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2), 0) end, 'num_layers must be a positive integer')
    H.raises(function() nn.TransformerDecoderLayer(8, 2)(torch.randn(3, 2, 8)) end, 'expected the encoder\'s output (memory)')
    H.raises(function() nn.TransformerDecoderLayer(8, 2, { activation = 'tanh' }) end, 'activation should be relu/gelu, not tanh')
    H.raises(function() nn.Transformer.generate_square_subsequent_mask(-1) end, 'sz must be a non-negative integer')
  end)
end)
