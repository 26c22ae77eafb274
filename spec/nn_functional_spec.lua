-- torch.nn.functional: the parts composed of tensor ops (dropout, embedding, linear, the simple
-- losses), their argument checks and error messages. Values of every function against PyTorch
-- are in nn_parity_spec.lua; the C kernels have their own specs.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional

local function err(fn, ...)
  local ok, e = pcall(fn, ...)
  assert.is_false(ok, 'expected an error')
  return tostring(e)
end

describe('nn.functional', function()
  it('is torch.F and torch.nn.functional', function()
    -- (busted reloads modules between spec files, so the tables may differ from an earlier load)
    for _, name in ipairs { 'relu', 'conv2d', 'cross_entropy', 'layer_norm' } do
      assert.is_function(torch.F[name])
      assert.is_function(torch.nn.functional[name])
    end
  end)

  describe('dropout', function()
    it('zeroes about p of the elements and scales the rest by 1/(1-p)', function()
      torch.manual_seed(1)
      local x = torch.ones(20000, { dtype = torch.float64 })
      local y = F.dropout(x, 0.3, true)
      local kept = y:ne(0):sum():item()
      assert.is_true(math.abs(kept / 20000 - 0.7) < 0.02, 'kept fraction ' .. kept / 20000)
      local vals = y:masked_select(y:ne(0))
      assert.is_true(vals:eq(1 / 0.7):all():item())
    end)
    it('is the identity in eval mode and with p = 0; all zeros with p = 1', function()
      local x = torch.randn(5, 4)
      assert.are.equal(x, F.dropout(x, 0.5, false))
      assert.are.equal(x, F.dropout(x, 0, true))
      assert.is_true(F.dropout(x, 1, true):eq(0):all():item())
    end)
    it('refuses a probability that is not a number in [0, 1], naming it', function()
      local x = torch.randn(5, 4)
      H.raises(function() return F.dropout(x, { p = 0.5 }) end, 'dropout', 'p must be a number', 'table')
      H.raises(function() return F.dropout(x, 1.5) end, 'dropout', 'between 0 and 1')
    end)
    it('passes the gradient through the kept elements only, scaled', function()
      torch.manual_seed(2)
      local x = torch.randn(100, { dtype = torch.float64, requires_grad = true })
      local y = F.dropout(x, 0.5, true)
      y:sum():backward()
      local keep = y:ne(0)
      for i = 1, 100 do
        local want = keep[i] and 2 or 0
        assert.are.equal(want, x.grad[i])
      end
    end)
    it('changes the input in place when asked', function()
      local x = torch.ones(1000)
      local y = F.dropout(x, 0.5, true, true)
      assert.are.equal(x, y)
      assert.is_true(x:eq(0):any():item())
    end)
    it('rejects a probability outside [0, 1]', function()
      assert.matches('dropout: probability has to be between 0 and 1, but got 1.5', err(F.dropout, torch.ones(2), 1.5))
    end)
  end)

  describe('embedding', function()
    it('gathers 1-based rows for any index shape', function()
      local w = torch.arange(0, 12, { dtype = torch.float32 }):view(4, 3)
      local idx = torch.tensor({ { 4, 1 }, { 2, 2 } })
      local y = F.embedding(idx, w)
      assert.are.same({ 2, 2, 3 }, { table.unpack(y.shape) })
      for i = 1, 2 do
        for j = 1, 2 do
          local r = idx[i][j]
          for k = 1, 3 do assert.are.equal((r - 1) * 3 + k - 1, y[i][j][k]) end
        end
      end
    end)
    it('accumulates gradients of repeated rows, none for the padding row', function()
      local w = torch.randn(5, 2, { dtype = torch.float64, requires_grad = true })
      local idx = torch.tensor({ 2, 2, 3, 5, 3 })
      F.embedding(idx, w, { padding_idx = 3 }):sum():backward()
      local want = { 0, 2, 0, 0, 1 }
      for r = 1, 5 do
        for k = 1, 2 do assert.are.equal(want[r], w.grad[r][k]) end
      end
      w.grad = nil
      F.embedding(idx, w, { padding_idx = -1 }):sum():backward() -- -1 is the last row
      assert.are.equal(0, w.grad[5][1])
      assert.are.equal(2, w.grad[3][1])
    end)
    it('names out-of-range indices and bad dtypes', function()
      local w = torch.randn(4, 2)
      assert.matches('embedding: index 5 is out of range 1..4', err(F.embedding, torch.tensor({ 1, 5 }), w))
      assert.matches('embedding: index 0 is out of range 1..4', err(F.embedding, torch.tensor({ 0, 1 }), w))
      assert.matches('embedding: expected indices of dtype int64 or int32, got torch.float32',
        err(F.embedding, torch.tensor({ 1.0 }), w))
    end)
  end)

  describe('linear', function()
    it('is x w^T + b for 1-D, 2-D and 3-D inputs, contiguous or not', function()
      local w = torch.randn(3, 4, { dtype = torch.float64 })
      local b = torch.randn(3, { dtype = torch.float64 })
      local xt = torch.randn(4, 5, { dtype = torch.float64 }):t() -- non-contiguous 5 x 4
      local y = F.linear(xt, w, b)
      for i = 1, 5 do
        for j = 1, 3 do
          local s = b[j]
          for k = 1, 4 do s = s + xt[i][k] * w[j][k] end
          assert.is_true(math.abs(s - y[i][j]) < 1e-12)
        end
      end
      local y1 = F.linear(xt[2], w, b)
      assert.is_true((y1 - y[2]):abs():max():item() < 1e-12)
      local y3 = F.linear(xt:reshape(1, 5, 4), w)
      assert.is_true((y3[1] - (y - b)):abs():max():item() < 1e-12)
    end)
    it('names mismatched shapes', function()
      assert.matches('linear: input of shape torch.Size%(%[2, 3%]%) cannot be multiplied by a weight of shape '
        .. 'torch.Size%(%[4, 5%]%)', err(F.linear, torch.ones(2, 3), torch.ones(4, 5)))
      assert.matches('linear: weight must be 2%-D, got 1%-D', err(F.linear, torch.ones(2, 3), torch.ones(3)))
    end)
  end)

  describe('losses', function()
    it('reduce by mean, sum or not at all, and reject other reductions', function()
      local x = torch.tensor({ 1.0, 2.0, 4.0 }, { dtype = torch.float64 })
      local y = torch.tensor({ 0.0, 4.0, 4.5 }, { dtype = torch.float64 })
      assert.are.equal((1 + 4 + 0.25) / 3, F.mse_loss(x, y):item())
      assert.are.equal(1 + 4 + 0.25, F.mse_loss(x, y, { reduction = 'sum' }):item())
      assert.are.same({ 1, 4, 0.25 }, F.mse_loss(x, y, { reduction = 'none' }):tolist())
      assert.are.equal(3.5 / 3, F.l1_loss(x, y):item())
      assert.matches("mse_loss: reduction must be 'mean', 'sum' or 'none', got avg",
        err(F.mse_loss, x, y, { reduction = 'avg' }))
    end)
    it('name inputs and targets of different shapes', function()
      assert.matches('mse_loss: input of shape torch.Size%(%[3%]%) and target of shape torch.Size%(%[2%]%) differ',
        err(F.mse_loss, torch.ones(3), torch.ones(2)))
      assert.matches('binary_cross_entropy_with_logits: input of shape',
        err(F.binary_cross_entropy_with_logits, torch.ones(3), torch.ones(3, 1)))
    end)
    it('binary_cross_entropy_with_logits is stable for large logits', function()
      local x = torch.tensor({ 800.0, -800.0 }, { dtype = torch.float64 })
      local y = torch.tensor({ 0.0, 1.0 }, { dtype = torch.float64 })
      local l = F.binary_cross_entropy_with_logits(x, y, { reduction = 'none' })
      assert.are.same({ 800, 800 }, l:tolist())
    end)
    it('gelu rejects an unknown approximation', function()
      assert.matches("gelu: approximate must be 'none' or 'tanh', got fast", err(F.gelu, torch.ones(2), { approximate = 'fast' }))
    end)
    it('functions name a non-tensor input', function()
      assert.matches('relu: expected input to be a tensor, got number', err(F.relu, 3))
      assert.matches('conv2d: expected weight to be a tensor, got nil', err(F.conv2d, torch.ones(1, 1, 3, 3)))
    end)
  end)
end)
