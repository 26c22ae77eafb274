-- PyTorch's indexing forms in lutorch's table form: steps {first, last, step}, '...', torch.newaxis,
-- index tensors (int64/int32, bool masks) mixed with numbers and ranges, several broadcast together.
-- Reads, writes and gradients against PyTorch 1.13's values (spec/data/index_reference.lua, written
-- by tools/gen_index_reference.py, where each expression is also written in PyTorch's syntax), on
-- contiguous and non-contiguous sources; then the errors, and the same cases on a GPU when one is
-- present.
local torch = require 'torch'
local H = require 'spec.helpers'
local REF = dofile('spec/data/index_reference.lua')

local SHAPES = { [3] = { 4, 5, 6 }, [4] = { 3, 4, 5, 2 } }

local function source(nd) return H.from_ref({ shape = SHAPES[nd], data = REF['x' .. nd] }) end

-- the key of a case, built from its Lua source
local function key_of(case) return assert(load('return ' .. case.key, case.name, 't', { torch = torch }))() end

-- the key with its index tensors moved by f (a key that is a tensor itself too)
local function moved_key(key, f)
  if torch.is_tensor(key) then return f(key) end
  local r = {}
  for i, k in ipairs(key) do r[i] = torch.is_tensor(k) and f(k) or k end
  return r
end

-- the dims of an nd-tensor in reverse order
local function reversed(nd)
  local r = {}
  for d = 1, nd do r[d] = nd + 1 - d end
  return r
end

-- x's values every other element along the last dim of a zero tensor twice as wide
local function stepped(x, nd)
  local wide, strides, acc = {}, {}, 1
  for d, s in ipairs(SHAPES[nd]) do wide[d] = d == nd and 2 * s or s end
  for d = nd, 1, -1 do
    strides[d] = d == nd and 2 or acc
    acc = acc * wide[d]
  end
  return torch.zeros(wide, { dtype = torch.float64 }):as_strided(SHAPES[nd], strides, 0):copy_(x)
end

-- the source's values stored three ways (each call a new tensor): contiguous, with reversed
-- strides, and stepped
local function variants(nd)
  local x, rev = source(nd), reversed(nd)
  return {
    { 'contiguous', function() return x:clone() end },
    { 'reversed strides', function() return x:permute(rev):contiguous():permute(rev) end },
    { 'stepped', function() return stepped(x, nd) end },
  }
end

local function shape_str(s) return '{' .. table.concat(s, ', ') .. '}' end

-- r (a tensor, or a number for a 0-dim result) has the case's shape and values
local function check_read(r, case, msg)
  if #case.shape == 0 then
    assert(type(r) == 'number', msg .. ': a 0-dim result is a number')
  else
    assert(torch.is_tensor(r), msg .. ': a tensor')
    assert(shape_str(r.shape) == shape_str(case.shape),
      ('%s: shape %s, expected %s (PyTorch: %s)'):format(msg, shape_str(r.shape), shape_str(case.shape), case.python))
  end
  H.assert_values(type(r) == 'number' and torch.tensor({ r }) or r, case.values, 0, msg)
end

-- k % m + 1 for k = 0..n-1, as a float64 tensor of the shape
local function weights(n, m, shape)
  local w = {}
  for k = 0, n - 1 do w[k + 1] = k % m + 1 end
  return torch.tensor(w, { dtype = torch.float64 }):reshape(shape)
end

-- -(1..n) as a float64 tensor of the shape
local function descending(n, shape)
  local v = {}
  for k = 1, n do v[k] = -k end
  return torch.tensor(v, { dtype = torch.float64 }):reshape(shape)
end

describe('indexing with PyTorch\'s forms in the table form', function()
  it('reads x[key] as PyTorch does, from contiguous and non-contiguous sources', function()
    for _, case in ipairs(REF.cases) do
      for _, v in ipairs(variants(case.nd)) do
        check_read(v[2]()[key_of(case)], case, case.name .. ' (' .. v[1] .. ')')
      end
    end
  end)

  it('gives views for the basic forms and copies when an index tensor is in the key, as PyTorch', function()
    for _, case in ipairs(REF.cases) do
      if #case.shape > 0 and #case.values > 0 then
        local x = source(case.nd)
        local before = x:sum():item()
        x[key_of(case)]:fill_(1000)
        local changed = x:sum():item() ~= before
        assert(changed == case.view, ('%s: the result %s x (PyTorch: %s is %s)'):format(case.name,
          changed and 'writes through to' or 'does not write to', case.python, case.view and 'a view' or 'a copy'))
      end
    end
  end)

  it('writes x[key] = value (a tensor of the result\'s shape, a broadcast row, a number) as PyTorch', function()
    for _, case in ipairs(REF.cases) do
      if case.written then
        local n = #case.values
        for _, v in ipairs(variants(case.nd)) do
          local msg = case.name .. ' (' .. v[1] .. ')'
          local y = v[2]()
          y[key_of(case)] = descending(n, case.shape)
          H.assert_values(y, case.written, 0, msg .. ': value of the result\'s shape')
          y = v[2]() -- leading dims of size 1 are dropped from the value, as PyTorch does
          y[key_of(case)] = descending(n, { 1, 1, table.unpack(case.shape) })
          H.assert_values(y, case.written, 0, msg .. ': value with leading dims of size 1')
          y = v[2]()
          y[key_of(case)] = torch.tensor(case.row, { dtype = torch.float64 })
          H.assert_values(y, case.written_row, 0, msg .. ': a broadcast row')
          y = v[2]()
          y[key_of(case)] = 7.25
          H.assert_values(y, case.written_number, 0, msg .. ': a number')
        end
      end
    end
  end)

  it('works on another device (cpu:1) with index tensors on cpu:0 or on that device', function()
    for _, case in ipairs(REF.cases) do
      local key = key_of(case)
      local moved = moved_key(key, function(k) return k:to('cpu:1') end)
      for _, k in ipairs { key, moved } do
        local r = source(case.nd):to('cpu:1')[k]
        if torch.is_tensor(r) then assert.are.equal('cpu:1', tostring(r.device)) end
        check_read(torch.is_tensor(r) and r:cpu() or r, case, case.name .. ' on cpu:1')
        if case.written then
          local y = source(case.nd):to('cpu:1')
          y[k] = descending(#case.values, case.shape)
          H.assert_values(y:cpu(), case.written, 0, case.name .. ': written on cpu:1')
        end
      end
    end
  end)

  it('casts the written value to the tensor\'s dtype and takes index tensors of another dtype', function()
    local x = torch.zeros(2, 3, { dtype = torch.int32 })
    x[{ {}, torch.tensor({ 3, 1 }, { dtype = torch.int32 }) }] = torch.tensor({ 1.75, 2.25 }, { dtype = torch.float64 })
    H.assert_values(x, { { 2, 0, 1 }, { 2, 0, 1 } })
  end)

  it('passes gradients through reads (repeated positions add up)', function()
    for _, case in ipairs(REF.cases) do
      if #case.shape > 0 and case.grad then
        local x = source(case.nd):requires_grad_()
        local loss = (x[key_of(case)] * weights(#case.values, 7, case.shape)):sum()
        loss:backward()
        H.assert_values(x.grad, case.grad, 0, case.name .. ': gradient')
      end
    end
  end)

  it('passes gradients through assignments into a non-leaf, to the value and to the parts not written', function()
    for _, case in ipairs(REF.cases) do
      if case.put_grad_x then
        local x = source(case.nd):requires_grad_()
        local y = descending(#case.values, case.shape):requires_grad_()
        local z = x * 2
        z[key_of(case)] = y
        local loss = (z * weights(#REF['x' .. case.nd], 5, SHAPES[case.nd])):sum()
        loss:backward()
        H.assert_values(x.grad, case.put_grad_x, 0, case.name .. ': gradient of x')
        H.assert_values(y.grad, case.put_grad_y, 0, case.name .. ': gradient of the value')
      end
    end
  end)

  it('takes a 0-dim integer tensor key as the number it holds, as PyTorch (the reference cases: a view)', function()
    assert.are.equal(3, torch.tensor({ 1, 2, 3 })[torch.tensor(3)]) -- an element: a number, as x[3]
    assert.are.equal(2, torch.tensor({ 1, 2, 3 })[torch.tensor(-2, { dtype = torch.int32 })])
    H.raises(function() return source(3)[torch.tensor(0)] end, 'index 0 is invalid')
    local a = source(3):requires_grad_()
    assert.are.equal('SelectBackward0', a[torch.tensor(2)].grad_fn.name)
  end)

  it('records an assignment with a basic key on a tensor with history as one node, written through the view', function()
    local gradcheck, gradgradcheck = torch.autograd.gradcheck, torch.autograd.gradgradcheck
    local keys = { { { 1, 2 }, 3 }, 2, { {}, { 1, 4, 2 } }, { '...', -1 }, { torch.newaxis, 2, { 2, 3 } }, { 3, 4 } }
    for k, key in ipairs(keys) do
      local r = torch.zeros(3, 4)[key]
      local shape = type(r) == 'number' and {} or { table.unpack(r.shape) }
      local a, v, b = H.leaf({ 3, 4 }), H.leaf(shape), H.leaf({ 1 })
      local function assign(x, value)
        local z = x * x
        z[key] = value
        return z
      end
      assert.are.equal('CopySlices', assign(a, v).grad_fn.name, 'key ' .. k)
      assert.is_true(gradcheck(assign, { a, v }), 'key ' .. k)
      assert.is_true(gradcheck(function(x) return assign(x, 1.5) * x end, { a }), 'key ' .. k .. ', a number')
      assert.is_true(gradcheck(function(x, y) return assign(x, y * 2) end, { a, b }), 'key ' .. k .. ', broadcast')
      assert.is_true(gradgradcheck(function(x, y) return assign(x, y * y) * x end, { a, v }), 'key ' .. k .. ', twice')
      -- the same gradients as the assignment by put_ (Tensor._index_put, the path of index tensors)
      local w = torch.randn({ 3, 4 }, { dtype = torch.float64 })
      local function grads(put)
        local x, y = a:detach():requires_grad_(), v:detach():requires_grad_()
        local z = x * x
        if put then torch.Tensor._index_put(z, key, y) else z[key] = y end
        local loss = (z * w):sum()
        loss:backward()
        return x.grad, y.grad
      end
      local gx, gy = grads(false)
      local px, py = grads(true)
      H.assert_values(gx, px:totable(), 1e-12, 'key ' .. k .. ': x')
      H.assert_values(gy, py:dim() == 0 and { py:item() } or py:totable(), 1e-12, 'key ' .. k .. ': value')
    end
    -- into a tensor without history, a value that requires grad: the tensor takes history
    local v = H.leaf({ 4 })
    local z = torch.zeros(3, 4, { dtype = torch.float64 })
    z[2] = v
    assert.is_true(z.requires_grad)
    local loss = (z * 3):sum()
    loss:backward()
    H.assert_values(v.grad, { 3, 3, 3, 3 }, 0)
  end)

  it('writes a basic key under autograd without a pass over the whole tensor', function()
    local d = 'cpu:1'
    local a = torch.randn({ 1000, 1000 }, { device = d }):requires_grad_()
    local z = a * 1 -- 4 MB
    local v = torch.ones(3, { device = d })
    local used = H.peak_bytes(d, function() z[{ 2, { 1, 3 } }] = v end)
    assert.is_true(used < 64 * 1024, string.format('the assignment allocated %d bytes', used))
    z:sum():backward()
    H.assert_values(a.grad[{ { 1, 2 }, { 1, 4 } }], { { 1, 1, 1, 1 }, { 0, 0, 0, 1 } }, 0)
  end)

  it('keeps the meaning of a plain Lua table in the key: a range, not a list of indices', function()
    local x = source(3)
    H.assert_values(x[{ {}, { 2, 4 } }], x:narrow(2, 2, 3):totable())
    H.assert_values(x[{ {}, { 2, 4 } }], x[{ {}, torch.tensor({ 2, 3, 4 }) }]:totable())
    assert.are.equal(x:size(2), x[{ {}, torch.tensor({ 2, 4 }) }]:size(2) + 3)
  end)

  it('torch.newaxis is one value, printed by name, that cannot be changed', function()
    assert.are.equal('torch.newaxis', tostring(torch.newaxis))
    H.raises(function() torch.newaxis[1] = 1 end, 'torch.newaxis cannot be changed')
    assert.are.equal('torch.Size([1, 4, 5, 6])', tostring(source(3)[torch.newaxis].shape))
    local x = source(3)
    x[torch.newaxis] = 2
    H.assert_values(x, torch.full({ 4, 5, 6 }, 2):totable())
    -- a plain empty table is still a whole dim, not a new one
    assert.are.equal('torch.Size([4, 5, 6])', tostring(source(3)[{ {}, {} }].shape))
  end)
end)

describe('indexing errors', function()
  local x = source(3)
  local function idx(t) return torch.tensor(t) end
  it('name the dim and size for an index value out of range, and refuse 0', function()
    H.raises(function() return x[{ {}, idx({ 1, 6 }) }] end, 'index: index 6 is out of bounds for dimension 2 with size 5')
    H.raises(function() return x[{ 1, {}, idx({ -7 }) }] end, 'index -7 is out of bounds for dimension 3 with size 6')
    H.raises(function() return x[{ '...', idx({ 0 }) }] end, 'index 0 is out of bounds for dimension 3', '1-based')
    H.raises(function() x[{ {}, idx({ 6 }) }] = 1 end, 'index assignment: index 6 is out of bounds for dimension 2')
  end)
  it('refuse two ellipses, unknown strings and too many indices', function()
    H.raises(function() return x[{ '...', 1, '...' }] end, 'index: an index can only have a single ellipsis')
    H.raises(function() return x[{ 'none' }] end, "unknown index string 'none'", 'torch.newaxis')
    H.raises(function() return x[{ 1, 1, 1, '...', 1 }] end, 'too many indices for a tensor of dimension 3')
    H.raises(function() return x[{ 1, 1, 1, idx({ 1 }) }] end, 'too many indices for a tensor of dimension')
    H.raises(function() return x[{ 1, 1, idx({ { true, true } }) }] end, 'too many indices for a tensor of dimension')
  end)
  it('refuse negative and zero steps, and ranges that are not integers', function()
    H.raises(function() return x[{ { -1, 1, -1 } }] end, "index: a range's step must be positive, got -1", 'PyTorch')
    H.raises(function() return x[{ { 1, 2, 0 } }] end, "step must be positive, got 0")
    H.raises(function() return x[{ {}, { 1, idx({ 2 }) } }] end, 'a range is {first, last[, step]} of integers')
    H.raises(function() return x[{ { 1, 2, 1, 1 } }] end, 'a table of 4 elements')
  end)
  it('refuse a mask whose shape does not match the dims it covers', function()
    H.raises(function() return x[{ {}, idx({ true, false }) }] end, 'index: the mask of shape', '[2]', '[5]',
      'dimensions 2 to 2')
    H.raises(function() x[{ idx({ { true } }) }] = 0 end, 'index assignment: the mask of shape')
  end)
  it('refuse float and uint8 index tensors, naming the dtype', function()
    H.raises(function() return x[{ {}, torch.tensor({ 1.0 }) }] end, 'must be int64, int32 or bool, got float32')
    H.raises(function() return x[{ torch.tensor({ 1 }, { dtype = torch.uint8 }) }] end, 'got uint8')
  end)
  it('refuse index tensors that do not broadcast, and values that do not fit the result', function()
    H.raises(function() return x[{ idx({ 1, 2 }), idx({ 1, 2, 3 }) }] end, 'index: shape mismatch')
    H.raises(function() x[{ {}, idx({ 1, 2 }) }] = torch.zeros(3) end,
      'index assignment: shape mismatch: value tensor of shape', '[4, 2, 6]')
    H.raises(function() x[{ {}, idx({ 1, 2 }) }] = 'a' end, 'the value must be a number, a boolean or a tensor')
  end)
  it('refuse an in-place assignment into a leaf that requires grad', function()
    local l = source(3):requires_grad_()
    H.raises(function() l[{ {}, idx({ 1 }) }] = 0 end, 'index assignment: a leaf Variable that requires grad')
    H.raises(function() l[{ 1, {} }] = 0 end, 'index assignment: a leaf Variable that requires grad')
  end)
  it('leave the tensor unchanged when an assignment fails', function()
    local y = source(3)
    pcall(function() y[{ idx({ 1, 5 }) }] = 0 end)
    H.assert_values(y, REF.x3)
  end)
end)

local available = torch.cuda.is_available()
local reason = torch.cuda.is_built() and (torch._cuda.unavailable_reason() or '') or 'not a CUDA build'
describe('indexing on a GPU', function()
  local name = 'reads, writes and gradients of the reference cases on CUDA tensors, with CPU and CUDA index tensors'
  if not available then pending('no CUDA device: ' .. reason .. ' -- ' .. name) return end
  it(name, function()
    for _, case in ipairs(REF.cases) do
      local key = key_of(case)
      local on_gpu = moved_key(key, function(k) return k:cuda() end)
      for _, k in ipairs { key, on_gpu } do
        local x = source(case.nd):cuda()
        local r = x[k]
        check_read(type(r) == 'number' and r or r:cpu(), case, case.name .. ' on CUDA')
        if case.written then
          local y = source(case.nd):cuda()
          y[k] = descending(#case.values, case.shape):cuda()
          H.assert_values(y:cpu(), case.written, 0, case.name .. ': written on CUDA')
        end
        if #case.shape > 0 and case.grad then
          local xl = source(case.nd):cuda():requires_grad_()
          local loss = (xl[k] * weights(#case.values, 7, case.shape):cuda()):sum()
          loss:backward()
          H.assert_values(xl.grad:cpu(), case.grad, 0, case.name .. ': gradient on CUDA')
        end
      end
    end
  end)
end)
