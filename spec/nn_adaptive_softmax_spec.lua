-- nn.AdaptiveLogSoftmaxWithLoss: PyTorch 1.13's output, loss, log_prob, predict and gradients for
-- the same weights and inputs (spec/data/nnmore_reference.lua, made by
-- tools/gen_nnmore_reference.py), a plain-Lua softmax of the head and tails in float64, float32,
-- non-contiguous input, a model that learns, and bad calls. Classes are 1-based.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local ref = dofile('spec/data/nnmore_reference.lua')
local T = H.from_ref

-- PyTorch's parameter name (tail.0.1.weight) as lutorch's (tail.1.2.weight)
local function lutorch_name(name)
  return (name:gsub('%.(%d+)', function(d) return '.' .. (tonumber(d) + 1) end))
end

-- the module of a reference case, its weights PyTorch's
local function module_of(c, dtype)
  local m = nn.AdaptiveLogSoftmaxWithLoss(c.in_features, c.n_classes, c.cutoffs,
    { div_value = c.div_value, head_bias = c.head_bias, dtype = dtype })
  local sd = {}
  for _, w in ipairs(c.weights) do sd[lutorch_name(w.name)] = T(w.value, dtype) end
  m:load_state_dict(sd)
  return m
end

-- log p(class) for one row x (a Lua array) in plain Lua: the head's log-softmax, plus the cluster's
local function plain_log_prob(m, x)
  local function matvec(w, v)
    local out = {}
    for i, row in ipairs(w:totable()) do
      local s = 0
      for j, a in ipairs(row) do s = s + a * v[j] end
      out[i] = s
    end
    return out
  end
  local function log_softmax(v)
    local mx = -math.huge
    for _, a in ipairs(v) do mx = math.max(mx, a) end
    local z = 0
    for _, a in ipairs(v) do z = z + math.exp(a - mx) end
    local out = {}
    for i, a in ipairs(v) do out[i] = a - mx - math.log(z) end
    return out
  end
  local head = matvec(m.head.weight, x)
  if m.head.bias ~= nil then
    for i, b in ipairs(m.head.bias:totable()) do head[i] = head[i] + b end
  end
  head = log_softmax(head)
  local lp = {}
  for i = 1, m.shortlist_size do lp[i] = head[i] end
  for i = 1, m.n_clusters do
    local tail = log_softmax(matvec(m.tail[i][2].weight, matvec(m.tail[i][1].weight, x)))
    for j, v in ipairs(tail) do lp[m.cutoffs[i] + j] = v + head[m.shortlist_size + i] end
  end
  return lp
end

describe('nn.AdaptiveLogSoftmaxWithLoss', function()
  for _, dtype in ipairs { torch.float64, torch.float32 } do
    it("matches PyTorch's output, loss, log_prob, predict and gradients (" .. tostring(dtype) .. ')', function()
      local tol = dtype == torch.float64 and 1e-12 or 2e-5
      for i, c in ipairs(ref.adaptive) do
        local m = module_of(c, dtype)
        -- PyTorch's tail sizes: in_features // div_value^i hidden units
        local sizes = {}
        for k = 1, m.n_clusters do
          sizes[#sizes + 1] = { m.tail[k][1].weight:size(1), m.tail[k][1].weight:size(2) }
          sizes[#sizes + 1] = { m.tail[k][2].weight:size(1), m.tail[k][2].weight:size(2) }
        end
        assert.same(c.tail_sizes, sizes)
        local x = T(c.x, dtype)
        if x:dim() == 2 then x = x:t():contiguous():t() end -- non-contiguous
        x:requires_grad_()
        local target = torch.tensor(c.target.data, { dtype = torch.int64 }):reshape(c.target.shape)
        local r = m(x, target)
        assert.equal(r.output, r[1])
        assert.equal(r.loss, r[2])
        H.assert_values(r.output, c.output.data, tol, 'output ' .. i)
        H.close(r.loss:item(), c.loss, tol, 'loss ' .. i)
        r.loss:backward()
        H.assert_values(x.grad, c.grad_x.data, tol * 10, 'grad x ' .. i)
        for k, p in ipairs(m:parameters()) do -- a tail no target reaches gets no gradient: PyTorch's zeros
          H.assert_values(p.grad or torch.zeros_like(p), c.grads[k].data, tol * 10, 'grad ' .. k .. ' of ' .. i)
        end
        local xs = x:detach():reshape(-1, c.in_features)
        H.assert_values(m:log_prob(xs), c.log_prob.data, tol, 'log_prob ' .. i)
        H.assert_values(m:predict(xs), c.predict.data, 0, 'predict ' .. i)
      end
    end)
  end

  it('log_prob is the plain-Lua head and tail softmaxes; its rows sum to probability 1; forward picks its targets', function()
    torch.manual_seed(5)
    local m = nn.AdaptiveLogSoftmaxWithLoss(6, 11, { 3, 7 }, { div_value = 2.0, head_bias = true, dtype = torch.float64 })
    local x = torch.randn(4, 6, { dtype = torch.float64 })
    local lp = m:log_prob(x)
    for r = 1, 4 do
      local want = plain_log_prob(m, x[r]:totable())
      H.assert_values(lp[r], want, 1e-12, 'row ' .. r)
      H.close(lp[r]:exp():sum():item(), 1, 1e-12)
    end
    local target = torch.tensor({ 1, 11, 5, 8 })
    local r = m(x, target)
    local picked = {}
    for k = 1, 4 do picked[k] = lp[k][target[k]] end
    H.assert_values(r.output, picked, 1e-12)
    local mean = 0
    for k = 1, 4 do mean = mean - picked[k] / 4 end
    H.close(r.loss:item(), mean, 1e-12)
    -- predict is the argmax of log_prob, rows in the shortlist or not
    local best = lp:argmax(2)
    H.assert_values(m:predict(x), best:totable(), 0)
    -- unbatched: a 1-D input with a 0-D target
    local one = m(x[2], torch.tensor(11))
    assert.equal(0, one.output:dim())
    H.close(one.output:item(), picked[2], 1e-12)
    H.close(one.loss:item(), -picked[2], 1e-12)
  end)

  it('gradients pass finite differences; a small model learns', function()
    torch.manual_seed(2)
    local m = nn.AdaptiveLogSoftmaxWithLoss(4, 9, { 2, 5 }, { div_value = 2.0, dtype = torch.float64 })
    local x = torch.randn(5, 4, { dtype = torch.float64 }):requires_grad_()
    local target = torch.tensor({ 1, 9, 3, 6, 2 })
    assert.is_true(torch.autograd.gradcheck(function(a) return m(a, target).loss end, { x }))
    local data = torch.randn(32, 4)
    local labels = (data:narrow(2, 1, 1):reshape(-1):gt(0)):to(torch.int64) * 7 + 1 -- classes 1 and 8
    local model = nn.AdaptiveLogSoftmaxWithLoss(4, 9, { 2, 5 }, { div_value = 2.0 })
    local first, last = H.fit({ model }, 150, 0.1, function() return model(data, labels).loss end)
    assert(last < first * 0.2, first .. ' -> ' .. last)
  end)

  it('names bad calls', function()
    local function make(...) return nn.AdaptiveLogSoftmaxWithLoss(...) end
    local cut = 'cutoffs should be a sequence of unique, positive integers sorted in an increasing order'
    H.raises(function() make(4, 10, { 5, 3 }) end, cut)
    H.raises(function() make(4, 10, { 3, 3 }) end, cut)
    H.raises(function() make(4, 10, { 0 }) end, cut)
    H.raises(function() make(4, 10, { 10 }) end, cut)
    H.raises(function() make(4, 10, {}) end, cut)
    H.raises(function() make(4, 10, { 2.5 }) end, cut)
    H.raises(function() make(0, 10, { 2 }) end, 'in_features must be a positive integer')
    H.raises(function() make(4, 10, { 2 }, { div = 2 }) end, "unknown option 'div'")
    H.raises(function() make(4, 10, { 2 }, { div_value = 0 }) end, 'div_value must be a positive number')
    local m = make(4, 10, { 2, 6 })
    local x = torch.randn(3, 4)
    H.raises(function() m(x, torch.tensor({ 1, 2, 11 })) end, 'Target values should be in [1, 10], but values in range [1, 11] were found.')
    H.raises(function() m(x, torch.tensor({ 0, 2, 3 })) end, 'Target values should be in [1, 10]')
    H.raises(function() m(x, torch.tensor({ 1, 2 })) end, 'Input and target should have the same size in the batch dimension.')
    H.raises(function() m(x, torch.tensor({ { 1 } })) end, '0D or 1D target tensor expected, multi-target not supported')
    H.raises(function() m(x, torch.tensor(1)) end, '0D target tensor expects 1D input tensors')
    H.raises(function() m(x[1], torch.tensor({ 1 })) end, '1D target tensor expects 2D input tensors')
    H.raises(function() m(x, torch.tensor({ 1.0, 2.0, 3.0 })) end, 'expected target of an integer dtype')
    H.raises(function() m(torch.randn(3, 5), torch.tensor({ 1, 2, 3 })) end, 'expected input with 4 features')
    H.raises(function() m(x, 3) end, 'expected target to be a tensor')
    H.raises(function() m:log_prob(x[1]) end, 'AdaptiveLogSoftmaxWithLoss.log_prob: expected a 2-D input')
    H.raises(function() m:predict(torch.randn(2, 3)) end, 'expected input with 4 features')
  end)
end)
