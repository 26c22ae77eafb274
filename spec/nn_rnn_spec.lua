-- nn.RNN, nn.LSTM, nn.GRU and their cells: parameters (PyTorch's names, order, shapes, bounds),
-- layouts (batch_first, unbatched), state passing, dropout between layers, gradients by finite
-- differences, errors, and a sequence task they learn. Values and gradients against PyTorch are in
-- nn_parity_spec.lua.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional

describe('recurrent layers', function()
  it("have PyTorch's parameter names, order, shapes, initial bounds and reprs", function()
    local m = nn.LSTM(3, 4, { num_layers = 2, bidirectional = true })
    local names, shapes = {}, {}
    for name, p in m:named_parameters() do
      names[#names + 1] = name
      shapes[#shapes + 1] = table.concat(p.shape, 'x')
      assert.is_true(p:abs():max():item() <= 0.5, name) -- U(-1/sqrt(4), 1/sqrt(4))
    end
    assert.are.same({ 'weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0', 'weight_ih_l0_reverse',
      'weight_hh_l0_reverse', 'bias_ih_l0_reverse', 'bias_hh_l0_reverse', 'weight_ih_l1', 'weight_hh_l1', 'bias_ih_l1',
      'bias_hh_l1', 'weight_ih_l1_reverse', 'weight_hh_l1_reverse', 'bias_ih_l1_reverse', 'bias_hh_l1_reverse' }, names)
    assert.are.same({ '16x3', '16x4', '16', '16', '16x3', '16x4', '16', '16', '16x8', '16x4', '16', '16', '16x8', '16x4',
      '16', '16' }, shapes)
    assert.are.equal('LSTM(3, 4, num_layers=2, bidirectional=True)', tostring(m))
    assert.are.equal('GRU(2, 3, bias=False, batch_first=True, dropout=0.5)',
      tostring(nn.GRU(2, 3, { bias = false, batch_first = true, dropout = 0.5 })))
    assert.are.equal("RNN(2, 3, nonlinearity='relu')", tostring(nn.RNN(2, 3, { nonlinearity = 'relu' })))
    assert.are.equal('LSTMCell(2, 3)', tostring(nn.LSTMCell(2, 3)))
    assert.are.equal('GRUCell(2, 3, bias=False)', tostring(nn.GRUCell(2, 3, { bias = false })))
    assert.are.equal(2, #nn.GRU(2, 3, { bias = false }):parameters())
    assert.are.same({ 9, 2 }, { table.unpack(nn.GRUCell(2, 3).weight_ih.shape) })
  end)

  it('give the same results batch-first, sequence-first and unbatched; a state carries a sequence on', function()
    torch.manual_seed(1)
    for _, cls in ipairs { nn.LSTM, nn.GRU, nn.RNN } do
      local m = cls(3, 4, { num_layers = 2, dtype = torch.float64 })
      local mb = cls(3, 4, { num_layers = 2, batch_first = true, dtype = torch.float64 })
      mb:load_state_dict(m:state_dict())
      local x = torch.randn(6, 2, 3, { dtype = torch.float64 })
      local out, st = m(x)
      local outb = mb(x:transpose(1, 2):contiguous())
      H.assert_values(outb:transpose(1, 2), out:totable(), 1e-12)
      local out1 = m(x:select(2, 2))
      H.assert_values(out1, out:select(2, 2):totable(), 1e-12)
      -- the first 4 steps, then the last 2 from their state: the whole run
      local a, sa = m(x:narrow(1, 1, 4))
      local b, sb = m(x:narrow(1, 5, 2), sa)
      H.assert_values(torch.cat({ a, b }, 1), out:totable(), 1e-12)
      local hn = cls == nn.LSTM and st[1] or st
      local hb = cls == nn.LSTM and sb[1] or sb
      H.assert_values(hb, hn:totable(), 1e-12)
      -- h_n of the last layer is the output's last step
      H.assert_values(hn[2], out[6]:totable(), 1e-12)
    end
  end)

  it('match their cells stepped by hand', function()
    torch.manual_seed(2)
    for _, pair in ipairs { { nn.LSTM, nn.LSTMCell }, { nn.GRU, nn.GRUCell }, { nn.RNN, nn.RNNCell } } do
      local m, cell = pair[1](3, 5, { dtype = torch.float64 }), pair[2](3, 5, { dtype = torch.float64 })
      torch.no_grad(function()
        cell.weight_ih:copy_(m.weight_ih_l0); cell.weight_hh:copy_(m.weight_hh_l0)
        cell.bias_ih:copy_(m.bias_ih_l0); cell.bias_hh:copy_(m.bias_hh_l0)
      end)
      local x = torch.randn(4, 2, 3, { dtype = torch.float64 })
      local out = m(x)
      local h, c
      for t = 1, 4 do
        if pair[1] == nn.LSTM then
          h, c = cell(x[t], h and { h, c } or nil)
        else
          h = cell(x[t], h)
        end
        H.assert_values(h, out[t]:totable(), 1e-12)
      end
    end
  end)

  it('pass gradients (finite differences, float64, a transposed input)', function()
    torch.manual_seed(3)
    for _, cls in ipairs { nn.LSTM, nn.GRU, nn.RNN } do
      local m = cls(2, 3, { bidirectional = true, dtype = torch.float64 })
      local x = torch.randn(2, 4, 2, { dtype = torch.float64 }):transpose(1, 2):requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(a) return (m(a)) end, { x }), tostring(m))
    end
    -- the cells, with their state as inputs too (the weights' gradients are checked against PyTorch)
    local cell = nn.LSTMCell(2, 3, { dtype = torch.float64 })
    local x = torch.randn(4, 2, { dtype = torch.float64 })
    local h = torch.randn(4, 3, { dtype = torch.float64 }):requires_grad_()
    local c = torch.randn(4, 3, { dtype = torch.float64 }):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(a, b, d)
      local h2, c2 = cell(a, { b, d })
      return h2 + c2
    end, { x:detach():requires_grad_(), h, c }))
  end)

  it('apply dropout between layers in training only', function()
    torch.manual_seed(4)
    local m = nn.GRU(3, 8, { num_layers = 2, dropout = 0.5 })
    local x = torch.randn(5, 2, 3)
    m:eval()
    assert.is_true(torch.equal(m(x), m(x)))
    m:train()
    assert.is_false(torch.equal(m(x), m(x)))
    local single = nn.GRU(3, 8, { dropout = 0.5 }) -- one layer: nothing between layers
    assert.is_true(torch.equal(single(x), single(x)))
  end)

  -- predicting the mean gives a loss of about 0.4 here (PyTorch's LSTM, same seed, same steps:
  -- the same losses); learning the sum takes it below 0.1
  it('learn to sum a sequence (the loss falls below what the mean gives)', function()
    for _, cls in ipairs { nn.LSTM, nn.GRU } do
      torch.manual_seed(5)
      local rnn, head = cls(1, 16, { batch_first = true }), nn.Linear(16, 1)
      local x = torch.rand(32, 6, 1)
      local y = x:sum(2)
      local first, last = H.fit({ rnn, head }, 300, 0.01, function() return F.mse_loss(head(rnn(x):select(2, 6)), y) end)
      assert(first > 5 and last < 0.1, tostring(cls) .. ': ' .. first .. ' -> ' .. last)
    end
  end)

  it('name bad inputs, states and arguments', function()
    local m = nn.LSTM(3, 4)
    H.raises(function() m(torch.ones(2, 3, 4, 5)) end, 'LSTM: Expected input to be 2D or 3D, got 4D instead')
    H.raises(function() m(torch.ones(5, 2, 2)) end, 'LSTM: input.size(-1) must be equal to input_size. Expected 3, got 2')
    H.raises(function() m(torch.ones(5, 2, 3), torch.zeros(1, 2, 4)) end, 'LSTM: hx must be a table {h_0, c_0}')
    H.raises(function() m(torch.ones(5, 2, 3), { torch.zeros(1, 3, 4), torch.zeros(1, 3, 4) }) end,
      'LSTM: Expected hidden size (1, 2, 4), got [1, 3, 4]')
    H.raises(function() nn.GRU(3, 4)(torch.ones(5, 2, 3), torch.zeros(2, 2, 4)) end, 'GRU: Expected hidden size (1, 2, 4)')
    H.raises(function() nn.RNN(3, 4, { nonlinearity = 'sigmoid' }) end, "RNN: Unknown nonlinearity 'sigmoid'")
    H.raises(function() nn.GRU(3, 0) end, 'GRU: hidden_size must be a positive integer, got 0')
    H.raises(function() nn.LSTM(3, 4, { dropout = 2 }) end, 'LSTM: dropout should be a number in range [0, 1]')
    -- at once, not after building layers until the memory runs out
    H.raises(function() nn.RNN(2, 3, 9007199254740992) end, 'RNN: num_layers = 9007199254740992', 'bytes available on cpu')
    H.raises(function() nn.LSTM(2, 4096, { num_layers = 1 << 30 }) end, 'LSTM: num_layers = 1073741824', 'bytes')
    -- tiny layers: within the address space, but more than the machine has free (~2 KB each)
    H.raises(function() nn.RNN(2, 3, 1e9) end, 'RNN: num_layers = 1000000000', 'bytes available on cpu')
    H.raises(function() nn.GRU(2, 3, { num_layers = 1e9, bidirectional = true }) end, 'GRU: num_layers = 1000000000',
      'bytes available on cpu')
    -- the free memory is the kernel's MemAvailable, or less under a cgroup's limit
    local f = assert(io.open('/proc/meminfo'))
    local kb = tonumber(f:read('a'):match('MemAvailable:%s*(%d+) kB'))
    f:close()
    local avail = torch._available_memory()
    assert.is_true(math.type(avail) == 'integer' and avail > 0, tostring(avail))
    assert.is_true(avail <= kb * 1024 + 256 * 1024 * 1024, avail .. ' bytes against MemAvailable ' .. kb .. ' kB')
    assert.is_true(math.abs(torch._available_memory('cpu:1') - avail) < 256 * 1024 * 1024)
    H.raises(function() torch._available_memory('cpu:7') end, 'cpu:7')
    H.raises(function() nn.LSTMCell(3, 4)(torch.ones(2, 5)) end, 'LSTMCell: input has inconsistent input_size: got 5 expected 3')
    H.raises(function() nn.GRUCell(3, 4)(torch.ones(2, 2, 3)) end, 'GRUCell: Expected input to be 1D or 2D, got 3D instead')
  end)
end)
