-- nn.utils.rnn (pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
-- PackedSequence, unpad_sequence, unpack_sequence) and nn.RNN, nn.LSTM, nn.GRU over packed
-- sequences: layouts against plain-Lua loops, the layers against the same layer run on each sequence
-- alone (a batch of one, its true length), gradients by finite differences and against those
-- per-sequence runs, one packed LSTM against PyTorch (spec/data/rnn_packed_reference.lua, made by
-- tools/gen_rnn_packed_reference.py), and the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local R = nn.utils.rnn
local f64 = { dtype = torch.float64 }

-- sequences of the given lengths, each (L, ...) with distinct values
local function sequences(lengths, ...)
  local out = {}
  for i, l in ipairs(lengths) do out[i] = torch.randn(l, ..., f64) end
  return out
end

-- plain Lua: the padded (T, B, *) table of sequences (as tables), padding value v
local function pad_loop(seqs, T, v)
  local out = {}
  for t = 1, T do
    out[t] = {}
    for b, s in ipairs(seqs) do
      local row = s[t]
      if row == nil then
        row = type(seqs[1][1]) == 'table' and {} or v
        if type(row) == 'table' then for j = 1, #seqs[1][1] do row[j] = v end end
      end
      out[t][b] = row
    end
  end
  return out
end

-- plain Lua: PyTorch's packing of sequences (tables) by decreasing length (ties in batch order):
-- data rows, batch_sizes, the 1-based sorted order
local function pack_loop(seqs)
  local order = {}
  for i = 1, #seqs do order[i] = i end
  table.sort(order, function(a, b) if #seqs[a] ~= #seqs[b] then return #seqs[a] > #seqs[b] end return a < b end)
  local data, bs = {}, {}
  for t = 1, #seqs[order[1]] do
    bs[t] = 0
    for _, i in ipairs(order) do
      if seqs[i][t] ~= nil then data[#data + 1] = seqs[i][t]; bs[t] = bs[t] + 1 end
    end
  end
  return data, bs, order
end

local function totables(seqs)
  local out = {}
  for i, s in ipairs(seqs) do out[i] = s:totable() end
  return out
end

describe('nn.utils.rnn', function()
  it('pad_sequence pads after each sequence, time-major or batch-first', function()
    torch.manual_seed(1)
    local seqs = sequences({ 2, 4, 1 }, 3)
    local want = pad_loop(totables(seqs), 4, -2)
    H.assert_values(R.pad_sequence(seqs, { padding_value = -2 }), want)
    H.assert_values(R.pad_sequence(seqs, { batch_first = true, padding_value = -2 }):transpose(1, 2), want)
    H.raises(function() R.pad_sequence({ torch.ones(2), 3 }) end, 'pad_sequence', 'element 2')
  end)

  it('pack_padded_sequence packs step after step, the longest sequence first, from a table or a tensor of lengths', function()
    torch.manual_seed(2)
    local lengths = { 3, 5, 1, 5, 2 }
    local seqs = sequences(lengths, 2)
    local data, bs, order = pack_loop(totables(seqs))
    local padded = R.pad_sequence(seqs)
    for _, ls in ipairs { lengths, torch.tensor(lengths, { dtype = torch.int64 }), torch.tensor(lengths, { dtype = torch.int32 }) } do
      for _, bf in ipairs { false, true } do
        local x = bf and padded:transpose(1, 2) or padded
        local p = R.pack_padded_sequence(x, ls, { batch_first = bf, enforce_sorted = false })
        assert.is_true(R.is_packed_sequence(p))
        H.assert_values(p.data, data)
        assert.are.same(bs, p.batch_sizes:totable())
        assert.are.equal(torch.int64, p.batch_sizes.dtype)
        assert.are.same(order, p.sorted_indices:totable())
        local inverse = {}
        for i, k in ipairs(order) do inverse[k] = i end
        assert.are.same(inverse, p.unsorted_indices:totable())
      end
    end
    -- sorted already: no permutation kept
    local sorted = { seqs[2], seqs[4], seqs[1], seqs[5], seqs[3] }
    local p = R.pack_padded_sequence(R.pad_sequence(sorted), { 5, 5, 3, 2, 1 })
    H.assert_values(p.data, data)
    assert.is_nil(p.sorted_indices)
    assert.is_nil(p.unsorted_indices)
    local q = R.pack_sequence(sorted)
    H.assert_values(q.data, data)
    assert.are.same(bs, q.batch_sizes:totable())
    local u = R.pack_sequence(seqs, { enforce_sorted = false })
    H.assert_values(u.data, data)
    assert.are.same(order, u.sorted_indices:totable())
  end)

  it('pad_packed_sequence undoes packing, in the original order, to total_length with padding_value', function()
    torch.manual_seed(3)
    local lengths = { 2, 4, 3 }
    local seqs = sequences(lengths, 2)
    local p = R.pack_sequence(seqs, { enforce_sorted = false })
    local padded, ls = R.pad_packed_sequence(p, { total_length = 6, padding_value = 7 })
    H.assert_values(padded, pad_loop(totables(seqs), 6, 7))
    assert.are.same(lengths, ls:totable())
    assert.are.equal(torch.int64, ls.dtype)
    local pb = R.pad_packed_sequence(p, { batch_first = true })
    H.assert_values(pb:transpose(1, 2), pad_loop(totables(seqs), 4, 0))
    local back = R.unpack_sequence(p)
    for i, s in ipairs(seqs) do H.assert_values(back[i], s:totable()) end
    local cut = R.unpad_sequence(pb, torch.tensor(lengths, { dtype = torch.int64 }), { batch_first = true })
    for i, s in ipairs(seqs) do H.assert_values(cut[i], s:totable()) end
    H.raises(function() R.pad_packed_sequence(p, { total_length = 3 }) end, 'pad_packed_sequence',
      'total_length=3 and max sequence length being 4')
  end)

  it('pass gradients through packing and padding', function()
    torch.manual_seed(4)
    local x = torch.randn(4, 3, 2, f64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(a)
      local p = R.pack_padded_sequence(a, { 2, 4, 1 }, { enforce_sorted = false })
      return (R.pad_packed_sequence(p, { batch_first = true, total_length = 5 }))
    end, { x }))
    -- the gradient reaches the packed steps only
    local p = R.pack_padded_sequence(x, { 2, 4, 1 }, { enforce_sorted = false })
    p.data:sum():backward()
    local want = {}
    for t = 1, 4 do
      want[t] = {}
      for b, l in ipairs { 2, 4, 1 } do want[t][b] = { t <= l and 1 or 0, t <= l and 1 or 0 } end
    end
    H.assert_values(x.grad, want)
  end)

  it('PackedSequence:to moves the data and the indices, batch_sizes stay on the CPU', function()
    local p = R.pack_sequence({ torch.ones(2, 3), torch.ones(3, 3) }, { enforce_sorted = false })
    local q = p:to('cpu:1')
    assert.are.equal('cpu:1', tostring(q.data.device))
    assert.are.equal('cpu:1', tostring(q.sorted_indices.device))
    assert.are.equal('cpu:1', tostring(q.unsorted_indices.device))
    assert.are.equal('cpu:0', tostring(q.batch_sizes.device))
    H.assert_values(R.pad_packed_sequence(q), R.pad_packed_sequence(p):totable())
    assert.are.equal(torch.float64, p:to(torch.float64).data.dtype)
    assert.are.equal(p, p:to('cpu:0'))
    assert.is_false(p:is_cuda())
    assert.is_truthy(tostring(p):find('PackedSequence(data=', 1, true))
  end)

  it('refuse bad lengths and arguments with errors naming the function', function()
    local x = torch.randn(3, 2, 1)
    local pp = R.pack_padded_sequence
    H.raises(function() pp(x, { 2, 3 }) end, 'pack_padded_sequence', 'sorted in decreasing order', 'enforce_sorted')
    H.raises(function() pp(x, { 4, 2 }) end, 'pack_padded_sequence', 'lengths[1] = 4 is longer than the input')
    H.raises(function() pp(x, { 3, 0 }) end, 'pack_padded_sequence', 'greater than 0')
    H.raises(function() pp(x, { 0, 3 }, { enforce_sorted = false }) end, 'pack_padded_sequence', 'greater than 0')
    H.raises(function() pp(x, { 3, 2, 1 }) end, 'pack_padded_sequence', 'equal to batch_size, but got 3 (batch_size=2)')
    H.raises(function() pp(x, { 3, 1.5 }) end, 'pack_padded_sequence', 'lengths[2] must be an integer')
    H.raises(function() pp(x, torch.tensor({ 3.0, 2.0 })) end, 'pack_padded_sequence', '1D CPU int64 tensor')
    H.raises(function() pp(x, torch.tensor({ { 3, 2 } })) end, 'pack_padded_sequence', 'got 2D')
    H.raises(function() pp(x, 3) end, 'pack_padded_sequence', 'lengths must be')
    H.raises(function() pp({}, { 1 }) end, 'pack_padded_sequence', 'input must be a tensor')
    H.raises(function() pp(x, { 3, 2 }, { sorted = false }) end, 'pack_padded_sequence', "unknown option 'sorted'")
    H.raises(function() R.pad_packed_sequence(x) end, 'pad_packed_sequence', 'expected a PackedSequence')
    H.raises(function() R.pack_sequence({ torch.ones(2), 'a' }) end, 'pack_sequence', 'element 2')
    H.raises(function() R.pack_sequence({ torch.ones(2), torch.ones(3) }) end, 'pack_padded_sequence', 'decreasing')
    H.raises(function() R.PackedSequence(torch.ones(3), torch.tensor({ 2.0, 1.0 })) end, 'PackedSequence', 'int64')
    H.raises(function() nn.LSTM(2, 3)(R.pack_sequence({ torch.ones(2, 4) })) end, 'LSTM', 'shape (*, 2)')
    H.raises(function() nn.GRU(1, 3)(R.pack_sequence({ torch.ones(2, 1) }), torch.zeros(1, 2, 3)) end,
      'GRU', 'Expected hidden size (1, 1, 3)')
  end)
end)

describe('recurrent layers over packed sequences', function()
  local function hidden(cls, st) return cls == nn.LSTM and st[1] or st end

  -- runs m on each sequence alone (a batch of one; with hx[:, i] as its state when hx is given):
  -- the outputs (L_i, H*dirs) and the final states (layers*dirs, H), h then c
  local function per_sequence(m, cls, seqs, hx)
    local outs, hs, cs = {}, {}, {}
    for i, s in ipairs(seqs) do
      local x = m.batch_first and s:unsqueeze(1) or s:unsqueeze(2)
      local h0
      if hx then
        h0 = cls == nn.LSTM and { hx[1]:narrow(2, i, 1), hx[2]:narrow(2, i, 1) } or hx:narrow(2, i, 1)
      end
      local o, st = m(x, h0)
      outs[i] = m.batch_first and o:squeeze(1) or o:squeeze(2)
      hs[i] = hidden(cls, st):squeeze(2)
      if cls == nn.LSTM then cs[i] = st[2]:squeeze(2) end
    end
    return outs, hs, cs
  end

  it('equal the same layer run on each sequence alone: 1 and 2 layers, bidirectional, batch_first, sorted or not, with a state', function()
    torch.manual_seed(5)
    local lengths = { 3, 6, 1, 6, 4 }
    for _, cls in ipairs { nn.LSTM, nn.GRU, nn.RNN } do
      for _, cfg in ipairs {
        { num_layers = 1 }, { num_layers = 2 }, { num_layers = 1, bidirectional = true },
        { num_layers = 2, bidirectional = true, batch_first = true },
      } do
        local m = cls(3, 4, { num_layers = cfg.num_layers, bidirectional = cfg.bidirectional,
          batch_first = cfg.batch_first, dtype = torch.float64 })
        local what = tostring(m)
        local seqs = sequences(lengths, 3)
        local dirs = cfg.bidirectional and 2 or 1
        for _, with_state in ipairs { false, true } do
          local hx
          if with_state then
            local h0 = torch.randn(cfg.num_layers * dirs, #lengths, 4, f64)
            hx = cls == nn.LSTM and { h0, torch.randn(cfg.num_layers * dirs, #lengths, 4, f64) } or h0
          end
          local p = R.pack_padded_sequence(R.pad_sequence(seqs, { batch_first = cfg.batch_first }), lengths,
            { batch_first = cfg.batch_first, enforce_sorted = false })
          local out, st = m(p, hx)
          assert.is_true(R.is_packed_sequence(out), what)
          assert.are.same(p.batch_sizes:totable(), out.batch_sizes:totable())
          assert.are.same(p.sorted_indices:totable(), out.sorted_indices:totable())
          local padded = R.pad_packed_sequence(out, { batch_first = cfg.batch_first })
          if cfg.batch_first then padded = padded:transpose(1, 2) end
          local outs, hs, cs = per_sequence(m, cls, seqs, hx)
          for i, l in ipairs(lengths) do
            local msg = what .. ' sequence ' .. i
            H.assert_values(padded:select(2, i):narrow(1, 1, l), outs[i]:totable(), 1e-12, msg)
            H.assert_values(hidden(cls, st):select(2, i), hs[i]:totable(), 1e-12, msg .. ' h_n')
            if cls == nn.LSTM then H.assert_values(st[2]:select(2, i), cs[i]:totable(), 1e-12, msg .. ' c_n') end
          end
        end
      end
    end
  end)

  it('sorted input gives the same as unsorted input, in its order', function()
    torch.manual_seed(6)
    local m = nn.GRU(2, 3, { bidirectional = true, dtype = torch.float64 })
    local seqs = sequences({ 5, 3, 3, 1 }, 2)
    local a, ha = m(R.pack_sequence(seqs))
    local b, hb = m(R.pack_sequence({ seqs[4], seqs[2], seqs[1], seqs[3] }, { enforce_sorted = false }))
    H.assert_values(b.data, a.data:totable(), 1e-12)
    H.assert_values(hb:index_select(2, torch.tensor({ 3, 2, 4, 1 }, { dtype = torch.int64 })), ha:totable(), 1e-12)
  end)

  it('pass gradients: by finite differences, and as the per-sequence runs do', function()
    torch.manual_seed(7)
    for _, cls in ipairs { nn.LSTM, nn.GRU, nn.RNN } do
      local m = cls(2, 2, { num_layers = 2, bidirectional = true, dtype = torch.float64 })
      local x = torch.randn(3, 3, 2, f64):requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(a)
        local out, st = m(R.pack_padded_sequence(a, { 2, 3, 1 }, { enforce_sorted = false }))
        return out.data:sum() + hidden(cls, st):sum() * 0.5
      end, { x }), tostring(m))
    end
    -- the weights' and the inputs' gradients equal those of the per-sequence runs
    local m = nn.LSTM(3, 3, { num_layers = 2, bidirectional = true, dtype = torch.float64 })
    local seqs = sequences({ 2, 5, 4 }, 3)
    for _, s in ipairs(seqs) do s:requires_grad_() end
    local function loss_of(out, hn, cn) return (out * out):sum() + hn:sum() + (cn * 0.3):sum() end
    local out, st = m(R.pack_sequence(seqs, { enforce_sorted = false }))
    loss_of(out.data, st[1], st[2]):backward()
    local grads, xgrads = {}, {}
    for name, p in m:named_parameters() do grads[name] = p.grad:clone(); p.grad = nil end
    for i, s in ipairs(seqs) do xgrads[i] = s.grad:clone(); s.grad = nil end
    local outs, hs, cs = per_sequence(m, nn.LSTM, seqs)
    local total = 0
    for i = 1, #seqs do total = total + loss_of(outs[i], hs[i], cs[i]) end
    total:backward()
    for name, p in m:named_parameters() do H.assert_values(grads[name], p.grad:totable(), 1e-10, name) end
    for i, s in ipairs(seqs) do H.assert_values(xgrads[i], s.grad:totable(), 1e-10, 'input ' .. i) end
  end)

  it("match PyTorch's packed LSTM: outputs, final states and gradients", function()
    local ref = dofile('spec/data/rnn_packed_reference.lua')
    local s = ref.sizes
    -- det(shape, k, scale) as tools/gen_rnn_packed_reference.py makes it
    local function det(shape, k, scale)
      local n = 1
      for _, d in ipairs(shape) do n = n * d end
      local v = {}
      for i = 0, n - 1 do v[i + 1] = math.sin(i * 0.7071 + k * 1.3) * (scale or 1) + i * 1e-4 end
      return torch.tensor(v, f64):reshape(shape)
    end
    local m = nn.LSTM(s.input_size, s.hidden_size, { num_layers = 2, bidirectional = true, dtype = torch.float64 })
    local names = {}
    for name, p in m:named_parameters() do
      names[#names + 1] = name
      torch.no_grad(function() p:copy_(det(p.shape, #names, 0.5)) end)
    end
    assert.are.same(ref.parameters, names)
    local x = det({ s.T, s.B, s.input_size }, 100):requires_grad_()
    local packed = R.pack_padded_sequence(x, ref.lengths, { enforce_sorted = false })
    H.assert_values(packed.data, ref.packed_data.data, 1e-15)
    assert.are.same(ref.batch_sizes, packed.batch_sizes:totable())
    assert.are.same(ref.sorted_indices, packed.sorted_indices:totable())
    assert.are.same(ref.unsorted_indices, packed.unsorted_indices:totable())
    local out, st = m(packed)
    H.assert_values(out.data, ref.output_data.data, 1e-12, 'output data')
    local padded, lengths = R.pad_packed_sequence(out, { total_length = s.T })
    H.assert_values(padded, ref.padded.data, 1e-12, 'padded')
    assert.are.same(ref.out_lengths, lengths:totable())
    H.assert_values(st[1], ref.h_n.data, 1e-12, 'h_n')
    H.assert_values(st[2], ref.c_n.data, 1e-12, 'c_n')
    local loss = (padded * det(padded.shape, 200)):sum() + (st[1] * det(st[1].shape, 201)):sum()
      + (st[2] * det(st[2].shape, 202)):sum()
    H.close(loss:item(), ref.loss, 1e-12, 'loss')
    loss:backward()
    H.assert_values(x.grad, ref.grad_x.data, 1e-12, 'grad x')
    H.assert_values(m.weight_hh_l0_reverse.grad, ref.grad_weight_hh_l0_reverse.data, 1e-12, 'grad weight_hh_l0_reverse')
    H.assert_values(m.weight_ih_l1.grad, ref.grad_weight_ih_l1.data, 1e-12, 'grad weight_ih_l1')
  end)
end)
