-- The PyTorch 1.13 names that tools/api_coverage.py found missing and lutorch now has: the view
-- copies torch.*_copy, torch.angle, torch.fill, torch.frobenius_norm and torch.nuclear_norm against
-- PyTorch's values and float64 gradients (spec/data/api_coverage_reference.lua, written by
-- tools/gen_api_coverage_reference.py), on contiguous inputs and on a transposed view; the copies
-- own their memory; the functional recurrent cells (torch.lstm_cell, ...) and
-- torch.max_pool1d_with_indices against PyTorch's values and gradients; x.is_cuda, x.is_cpu,
-- x:get_device(), the autocast queries by device, torch.concatenate, torch.detach, x:prelu and
-- x:hardshrink; the errors.
local torch = require 'torch'
local H = require 'spec.helpers'

local REF = dofile('spec/data/api_coverage_reference.lua')

-- the upstream gradient at row-major positions first .. first + n - 1 (0-based): ((7 j) % 11 - 5) / 4
local function upstream(first, n)
  local u = {}
  for j = first, first + n - 1 do u[#u + 1] = ((7 * j) % 11 - 5) / 4 end
  return torch.tensor(u, { dtype = torch.float64 })
end

-- a float64 leaf with the values of x (2 x 3 x 4), and the named input as a function of it (xt its
-- transposed view, m and r slices of it copied, e, n and its slice nm their own values); the gradient of the input from
-- the leaf's
local function input(name)
  local r = REF.inputs[name == 'xt' and 'x' or name]
  local leaf = torch.tensor(r.v, { dtype = torch.float64 }):reshape(r.s):requires_grad_()
  if name == 'xt' then
    local t = leaf:transpose(1, 3)
    assert(not t:is_contiguous())
    return t, function() return leaf.grad:transpose(1, 3) end
  end
  return leaf, function() return leaf.grad end
end

local function check_out(got, want, what)
  assert.are.same(want.s, { table.unpack(got.shape) }, what .. ' shape')
  assert.are.equal(torch.float64, got.dtype, what .. ' dtype')
  H.near(want.v, H.flatten(got:totable()), 1e-12, what)
end

describe('the names api_coverage.py found missing, against PyTorch 1.13', function()
  for i, c in ipairs(REF.cases) do
    local what = string.format('#%d %s(%s)', i, c.op, c.x)
    it(what, function()
      local x, grad_of = input(c.x)
      local out = torch[c.op](x, table.unpack(c.a))
      local outs = torch.is_tensor(out) and { out } or out
      local wants = c.o.s and { c.o } or c.o
      assert.are.equal(#wants, #outs, what .. ': number of outputs')
      local loss, at = nil, 0
      for k, o in ipairs(outs) do
        check_out(o, wants[k], what .. ' output ' .. k)
        if o.requires_grad then
          local l = (o:reshape(-1) * upstream(at, o:numel())):sum()
          loss = loss and loss + l or l
        end
        at = at + o:numel()
      end
      if c.g then
        loss:backward()
        -- (fill's input gets no gradient at all where PyTorch's gets zeros)
        local g = grad_of() or torch.zeros_like(x)
        H.near(c.g, H.flatten(g:totable()), 1e-12, what .. ' gradient')
      else -- (detach_copy: no gradient, as PyTorch has no derivative)
        assert.is_false(outs[1].requires_grad, what .. ' requires grad')
      end
    end)
  end
end)

describe('the view copies', function()
  it('own their memory: writing into one leaves the input as it was', function()
    local x = torch.arange(24, { dtype = torch.float32 }):reshape(2, 3, 4)
    local copies = {
      torch.alias_copy(x), torch.detach_copy(x), torch.view_copy(x, { 6, 4 }), torch.select_copy(x, 1, 2),
      torch.diagonal_copy(x, 0, 2, 3), torch.expand_copy(x[1][1]:view(1, 4), { 3, 4 }), torch.t_copy(x[1]),
      torch.permute_copy(x, { 2, 1, 3 }), torch.squeeze_copy(x:view(2, 1, 12)), torch.transpose_copy(x, 1, 2),
      torch.unsqueeze_copy(x, 1), torch.unfold_copy(x, 3, 2, 2), torch.as_strided_copy(x, { 2 }, { 1 }, 0),
      torch.slice_copy(x, 3, 1, 2), torch.split_copy(x, 1)[1], torch.split_with_sizes_copy(x, { 1, 1 })[2],
      torch.unbind_copy(x)[1],
    }
    for k, c in ipairs(copies) do
      assert.are.equal(torch.float32, c.dtype, 'copy ' .. k)
      c:fill_(-1)
      assert.is_true(x:equal(torch.arange(24, { dtype = torch.float32 }):reshape(2, 3, 4)), 'copy ' .. k)
    end
    -- every dtype: the values of the view
    for _, dt in ipairs(H.all_dtypes) do
      local y = torch.arange(6):reshape(2, 3):to(dt)
      assert.is_true(torch.t_copy(y):equal(y:t()), dt.name)
      assert.is_true(torch.slice_copy(y, 2, 2):equal(y:narrow(2, 2, 2)), dt.name)
    end
    -- an empty slice; a step past the end
    assert.are.same({ 2, 0, 4 }, { table.unpack(torch.slice_copy(x, 2, 3, 2).shape) })
    H.assert_values(torch.slice_copy(torch.arange(10), 1, 2, 100, 4), { 1, 5, 9 })
  end)

  it('raise errors that name the copy', function()
    local x = torch.zeros(2, 3)
    H.raises(function() return torch.t_copy(torch.zeros(2, 3, 4)) end, 't_copy')
    H.raises(function() return torch.select_copy(x, 3, 1) end, 'select_copy')
    H.raises(function() return torch.view_copy(x, { 4, 2 }) end, 'view_copy')
    H.raises(function() return torch.split_copy(x, 0) end, 'split_copy')
    H.raises(function() return torch.unbind_copy(x, 4) end, 'unbind_copy')
    H.raises(function() return torch.alias_copy(3) end, 'alias_copy', 'tensor')
    H.raises(function() return torch.slice_copy(x, 3) end, 'slice_copy', 'out of range')
    H.raises(function() return torch.slice_copy(x, 1, 1, 2, 0) end, 'slice_copy', 'step must be positive')
    H.raises(function() return torch.slice_copy(x, 1, 1.5) end, 'slice_copy', 'integers')
    H.raises(function() return torch.slice_copy(torch.tensor(1.0)) end, 'slice_copy', '0-D')
  end)
end)

describe('angle, fill, frobenius_norm and nuclear_norm', function()
  it('angle on special values and every dtype, with a zero gradient, as PyTorch', function()
    local A = REF.angle
    local special = { -1.5, 0.0, -0.0, 2.0, 0 / 0, math.huge, -math.huge }
    H.near(A.special, torch.angle(torch.tensor(special, { dtype = torch.float64 })):totable())
    H.near(A.float32, torch.tensor(special):angle():totable(), 1e-7)
    local h = torch.tensor({ -1.0, 2.0 }, { dtype = torch.float16 }):angle()
    assert.are.equal(torch.float16, h.dtype)
    H.near(A.float16, h:totable())
    local i = torch.angle(torch.tensor({ -3, 0, 5 }))
    assert.are.equal(torch[A.int64_dtype], i.dtype)
    H.near(A.int64, i:totable(), 1e-7)
    H.near(A.bool, torch.angle(torch.tensor({ true, false })):totable())
    local x = torch.tensor(special, { dtype = torch.float64, requires_grad = true })
    torch.angle(x):sum():backward()
    H.near({ 0, 0, 0, 0, 0, 0, 0 }, x.grad:totable())
  end)

  it('fill: a 0-D tensor value gets the sum of the upstream gradient', function()
    local x = torch.ones(2, 3, { dtype = torch.float64, requires_grad = true })
    local v = torch.tensor(2.5, { dtype = torch.float64, requires_grad = true })
    local y = torch.fill(x, v)
    H.assert_values(y, { { 2.5, 2.5, 2.5 }, { 2.5, 2.5, 2.5 } })
    local loss = (y * torch.tensor({ 1.0, 2, 3 }, { dtype = torch.float64 })):sum()
    loss:backward()
    H.near(12, v.grad:item())
    assert.is_nil(x.grad) -- (PyTorch's is zeros)
    assert.are.equal(torch.int32, torch.fill(torch.zeros(2, { dtype = torch.int32 }), 7).dtype)
    H.raises(function() return torch.fill(x, torch.ones(2, { requires_grad = true })) end, 'fill', '0-D')
    H.raises(function() return torch.fill(3, 1) end, 'fill', 'tensor')
  end)

  it('frobenius_norm and nuclear_norm: gradcheck and errors', function()
    local gradcheck = torch.autograd.gradcheck
    assert.is_true(gradcheck(function(a) return torch.frobenius_norm(a, { 1, 2 }) end, { H.leaf({ 3, 2, 2 }) }))
    assert.is_true(gradcheck(function(a) return torch.nuclear_norm(a, true) end, { H.leaf({ 3, 2 }) }))
    H.raises(function() return torch.frobenius_norm(torch.ones(2, 2, 2), { 1, 2, 3 }) end, 'frobenius_norm', 'at most 2')
    H.raises(function() return torch.frobenius_norm(torch.ones(2, 2), 3) end, 'frobenius_norm')
    H.raises(function() return torch.nuclear_norm(torch.ones(2, 2, 2)) end, 'nuclear_norm', '2-D')
    H.raises(function() return torch.nuclear_norm('x') end, 'nuclear_norm', 'tensor')
  end)
end)

describe('the functional recurrent cells and max_pool1d_with_indices', function()
  for _, c in ipairs(REF.cells) do
    it(string.format('%s (%s) against PyTorch, values and the gradients of every tensor', c.op,
      c.bias and 'with biases' or 'without biases'), function()
      local t = {}
      for k, r in pairs(c.t) do t[k] = torch.tensor(r.v, { dtype = torch.float64 }):reshape(r.s):requires_grad_() end
      local hx = c.op == 'lstm_cell' and { t.h, t.c } or t.h
      local outs = { torch[c.op](t.x, hx, t.w_ih, t.w_hh, t.b_ih, t.b_hh) }
      assert.are.equal(#c.o, #outs)
      local loss, at = nil, 0
      for k, o in ipairs(outs) do
        H.near(c.o[k], H.flatten(o:totable()), 1e-12, c.op .. ' output ' .. k)
        local l = (o:reshape(-1) * upstream(at, o:numel())):sum()
        loss, at = loss and loss + l or l, at + o:numel()
      end
      loss:backward()
      for k, g in pairs(c.g) do H.near(g, H.flatten(t[k].grad:totable()), 1e-12, c.op .. ' gradient of ' .. k) end
    end)
  end

  it('the cells take nn.RNNCell\'s, nn.GRUCell\'s and nn.LSTMCell\'s weights to the same step; their errors', function()
    torch.manual_seed(3)
    local x, h = torch.randn(2, 3), torch.randn(2, 4)
    local lstm = torch.nn.LSTMCell(3, 4)
    local h1, c1 = lstm(x, { h, h })
    local h2, c2 = torch.lstm_cell(x, { h, h }, lstm.weight_ih, lstm.weight_hh, lstm.bias_ih, lstm.bias_hh)
    assert.is_true(h1:allclose(h2) and c1:allclose(c2))
    local gru = torch.nn.GRUCell(3, 4, { bias = false })
    assert.is_true(gru(x, h):allclose(torch.gru_cell(x, h, gru.weight_ih, gru.weight_hh)))
    local rnn = torch.nn.RNNCell(3, 4, { nonlinearity = 'relu' })
    assert.is_true(rnn(x, h):allclose(torch.rnn_relu_cell(x, h, rnn.weight_ih, rnn.weight_hh, rnn.bias_ih, rnn.bias_hh)))
    H.raises(function() return torch.lstm_cell(x, h, lstm.weight_ih, lstm.weight_hh) end, 'lstm_cell', '{h, c}')
    H.raises(function() return torch.gru_cell(x, h, gru.weight_ih, lstm.weight_hh) end, 'gru_cell', 'w_hh should have 12 rows')
    H.raises(function() return torch.rnn_tanh_cell(x[1], h, rnn.weight_ih, rnn.weight_hh) end, 'rnn_tanh_cell', '2-D')
    H.raises(function() return torch.rnn_tanh_cell(x, nil, rnn.weight_ih, rnn.weight_hh) end, 'rnn_tanh_cell', 'hx must be a tensor')
  end)

  it('max_pool1d_with_indices: values and 1-based indices as PyTorch\'s', function()
    local P = REF.pool
    local v, i = torch.max_pool1d_with_indices(torch.tensor(P.x, { dtype = torch.float64 }):reshape(1, 1, #P.x), 3, 2, 1)
    assert.are.same(P.s, { table.unpack(v.shape) })
    H.near(P.v, H.flatten(v:totable()))
    H.assert_values(i, P.i)
    assert.are.equal(torch.int64, i.dtype)
  end)
end)

describe('device queries and aliases', function()
  it('x.is_cuda, x.is_cpu and x:get_device() (-1 on the CPU, as PyTorch)', function()
    local x = torch.zeros(2)
    assert.is_false(x.is_cuda)
    assert.is_true(x.is_cpu)
    assert.are.equal(-1, x:get_device())
    assert.are.equal(-1, torch.get_device(x))
    if torch.cpu.device_count() >= 2 then
      local y = x:to('cpu:1')
      assert.is_true(y.is_cpu)
      assert.are.equal(-1, y:get_device())
    end
    if torch.cuda.is_available() then
      local c = x:to('cuda:0')
      assert.is_true(c.is_cuda)
      assert.is_false(c.is_cpu)
      assert.are.equal(0, c:get_device())
    end
    H.raises(function() return torch.get_device('cpu') end, 'get_device', 'tensor')
  end)

  it('the autocast queries by device: is_autocast_cpu_enabled, get_autocast_cpu_dtype, get_autocast_gpu_dtype', function()
    assert.is_false(torch.is_autocast_cpu_enabled())
    assert.are.equal(torch.bfloat16, torch.get_autocast_cpu_dtype()) -- (PyTorch's defaults)
    assert.are.equal(torch.float16, torch.get_autocast_gpu_dtype())
    torch.autocast('cpu', { dtype = torch.float16 }, function()
      assert.is_true(torch.is_autocast_cpu_enabled())
      assert.are.equal(torch.float16, torch.get_autocast_cpu_dtype())
      assert.is_false(torch.is_autocast_enabled('cuda'))
      torch.clear_autocast_cache()
    end)
    assert.is_false(torch.is_autocast_cpu_enabled())
    assert.are.equal(torch.bfloat16, torch.get_autocast_cpu_dtype())
  end)

  it('torch.concatenate, torch.detach, x:prelu and x:hardshrink are the functions of their PyTorch names', function()
    assert.are.equal(torch.cat, torch.concatenate)
    H.assert_values(torch.concatenate({ torch.ones(1, 2), torch.zeros(1, 2) }, 2), { { 1, 1, 0, 0 } })
    local a = torch.ones(2, { requires_grad = true })
    local d = torch.detach(a * 2)
    assert.is_false(d.requires_grad)
    H.assert_values(d, { 2, 2 })
    H.assert_values(torch.tensor({ -1.0, 2 }):prelu(torch.tensor({ 0.25 })), { -0.25, 2 })
    H.assert_values(torch.tensor({ -1.0, 0.3, 0.75 }):hardshrink(0.5), { -1, 0, 0.75 })
  end)
end)
