-- The fused LSTM cell (torch._nn.lstm_cell: core/rnn.c over kernels/rnn.h), which nn.LSTM and
-- nn.LSTMCell run for float32 and float64: values against the cell's formula in plain Lua, on
-- contiguous and strided inputs, gradients by finite differences with either output unused,
-- second derivatives, and its errors. The layers' parity with PyTorch is in nn_parity_spec.
local torch = require 'torch'
local H = require 'spec.helpers'

local cell = torch._nn.lstm_cell
local f64 = torch.float64

local function sig(v) return 1 / (1 + math.exp(-v)) end

-- h and c2 of the cell in plain Lua from tables g (N rows of 4H) and c (N rows of H)
local function reference(g, c)
  local h, c2 = {}, {}
  for n = 1, #c do
    h[n], c2[n] = {}, {}
    local Hn = #c[n]
    for j = 1, Hn do
      local i, f = sig(g[n][j]), sig(g[n][Hn + j])
      local gg, o = math.tanh(g[n][2 * Hn + j]), sig(g[n][3 * Hn + j])
      c2[n][j] = f * c[n][j] + i * gg
      h[n][j] = o * math.tanh(c2[n][j])
    end
  end
  return h, c2
end

describe('the fused LSTM cell', function()
  it('computes the cell as its formula does, float64 and float32, contiguous or not', function()
    torch.manual_seed(3)
    local g = torch.randn(5, 12, { dtype = f64 }) * 3 -- saturated gates too
    local c = torch.randn(5, 3, { dtype = f64 })
    local wh, wc = reference(g:totable(), c:totable())
    local h, c2 = cell(g, c)
    H.assert_values(h, wh, 1e-14, 'h')
    H.assert_values(c2, wc, 1e-14, 'c2')
    -- strided: g the transpose of a [4H, N] tensor, c a column slice of a wider one
    local gt = g:t():contiguous():t()
    local wide = torch.cat({ c, torch.zeros(5, 2, { dtype = f64 }) }, 2)
    local cs = wide:narrow(2, 1, 3)
    assert.is_false(gt:is_contiguous())
    assert.is_false(cs:is_contiguous())
    local h2, c22 = cell(gt, cs)
    H.assert_values(h2, wh, 1e-14, 'h strided')
    H.assert_values(c22, wc, 1e-14, 'c2 strided')
    local hf, cf = cell(g:float(), c:float())
    assert.are.equal(torch.float32, hf.dtype)
    H.assert_values(hf, wh, 2e-6, 'h float32')
    H.assert_values(cf, wc, 2e-6, 'c2 float32')
    -- on another CPU device, results there
    local hd = cell(g:to('cpu:1'), c:to('cpu:1'))
    assert.are.equal('cpu:1', tostring(hd.device))
  end)

  it('gives the gradients of finite differences, with either output unused, and second derivatives', function()
    torch.manual_seed(4)
    local g = torch.randn(3, 8, { dtype = f64 }):requires_grad_()
    local c = torch.randn(3, 2, { dtype = f64 }):requires_grad_()
    local u, v = torch.randn(3, 2, { dtype = f64 }), torch.randn(3, 2, { dtype = f64 })
    local uses = {
      both = function(a, b) local h, c2 = cell(a, b); return (h * u):sum() + (c2 * v):sum() end,
      h = function(a, b) local h = cell(a, b); return (h * u):sum() end,
      c2 = function(a, b) local _, c2 = cell(a, b); return (c2 * v):sum() end,
    }
    for name, f in pairs(uses) do
      assert.is_true(torch.autograd.gradcheck(f, { g, c }), name)
      assert.is_true(torch.autograd.gradgradcheck(function(a, b) return f(a, b) end, { g, c }), name .. ' twice')
      -- the gradients made of recorded ops (create_graph) are the fused backward's
      local plain = torch.autograd.grad({ f(g, c) }, { g, c })
      local graph = torch.autograd.grad({ f(g, c) }, { g, c }, { create_graph = true })
      for k = 1, 2 do
        assert.is_not_nil(graph[k].grad_fn, name .. ': a gradient with history')
        H.assert_values(graph[k]:detach(), plain[k]:totable(), 1e-14, name .. ': create_graph gradient ' .. k)
      end
    end
    -- the node PyTorch's CUDA LSTM records
    local h = cell(g, c)
    assert.are.equal('ThnnFusedLstmCellBackward0', h.grad_fn.name)
  end)

  it('matches the composed ops of nn.LSTM, float32', function()
    torch.manual_seed(5)
    local m = torch.nn.LSTM(4, 6)
    local x = torch.randn(7, 3, 4)
    local y, s = m(x)
    -- the same step composed of tensor ops
    local h = torch.zeros(3, 6)
    local c = torch.zeros(3, 6)
    local wih, whh = m.weight_ih_l0, m.weight_hh_l0
    local b = m.bias_ih_l0 + m.bias_hh_l0
    for t = 1, 7 do
      local g = x[t]:matmul(wih:t()) + h:matmul(whh:t()) + b
      local i, f = g:narrow(2, 1, 6):sigmoid(), g:narrow(2, 7, 6):sigmoid()
      local gg, o = g:narrow(2, 13, 6):tanh(), g:narrow(2, 19, 6):sigmoid()
      local hf, cf = cell(g, c)
      c = f * c + i * gg
      h = o * c:tanh()
      H.assert_values(hf:detach(), h:totable(), 1e-6, 'the fused h at step ' .. t)
      H.assert_values(cf:detach(), c:totable(), 1e-6, 'the fused c at step ' .. t)
      H.assert_values(y[t]:detach(), h:totable(), 1e-5, 'step ' .. t)
    end
    H.assert_values(s[2][1]:detach(), c:totable(), 1e-5, 'c_n')
  end)

  it('gives the gradients of the composed ops on rows long enough for the vector loop, float32', function()
    -- H = 37: two 16-wide vectors and a tail of 5 in each row, with either output unused
    torch.manual_seed(6)
    local N, Hn = 5, 37
    local g0 = torch.randn(N, 4 * Hn) * 2
    local c0 = torch.randn(N, Hn)
    local u, v = torch.randn(N, Hn), torch.randn(N, Hn)
    local function composed(g, c)
      local i, f = g:narrow(2, 1, Hn):sigmoid(), g:narrow(2, Hn + 1, Hn):sigmoid()
      local gg, o = g:narrow(2, 2 * Hn + 1, Hn):tanh(), g:narrow(2, 3 * Hn + 1, Hn):sigmoid()
      local c2 = f * c + i * gg
      return o * c2:tanh(), c2
    end
    for _, use in ipairs { 'both', 'h', 'c2' } do
      local grads = {}
      for k, fn in ipairs { cell, composed } do
        local g, c = g0:clone():requires_grad_(), c0:clone():requires_grad_()
        local h, c2 = fn(g, c)
        local loss = use == 'c2' and (c2 * v):sum() or (h * u):sum()
        if use == 'both' then loss = loss + (c2 * v):sum() end
        loss:backward()
        grads[k] = { g.grad, c.grad }
      end
      H.assert_values(grads[1][1], grads[2][1]:totable(), 1e-5, use .. ': the gates\' gradient')
      H.assert_values(grads[1][2], grads[2][2]:totable(), 1e-5, use .. ': the cell state\'s gradient')
    end
  end)

  it('refuses bad gates and states, naming the op', function()
    local g, c = torch.randn(2, 8), torch.randn(2, 2)
    H.raises(function() cell(g:long(), c:long()) end, 'lstm_cell', 'float32 or float64')
    H.raises(function() cell(g, c:double()) end, 'lstm_cell', 'one dtype')
    H.raises(function() cell(torch.randn(2, 7), c) end, 'lstm_cell', '[N, 4H]')
    H.raises(function() cell(torch.randn(3, 8), c) end, 'lstm_cell', '[N, 4H]')
    H.raises(function() cell(g, c:to('cpu:1')) end, 'lstm_cell', 'cpu:1')
    H.raises(function() cell(g) end, 'bad argument #2', 'tensor expected')
  end)
end)
