-- Autograd hooks: tensor hooks (x:register_hook), module backward hooks, anomaly detection and
-- inference mode, checked against hand-derived gradients (closed forms worked out in the comments)
-- and PyTorch 1.13's behaviour (which hooks run, in which order, and its error messages).
local torch = require 'torch'
local H = require 'spec.helpers'

local function leaf(values) return torch.tensor(values, { dtype = torch.float64, requires_grad = true }) end

describe('x:register_hook on a leaf', function()
  it('replaces the gradient before .grad takes it', function()
    -- d/dx sum(3x) = 3, doubled by the hook
    local x = leaf({ 1, 2 })
    local seen
    x:register_hook(function(g) seen = g:clone(); return g * 2 end)
    ;(x * 3):sum():backward()
    H.assert_values(seen, { 3, 3 })
    H.assert_values(x.grad, { 6, 6 })
  end)

  it('runs once on the gradient summed over every use of the leaf', function()
    -- sum(x * x) + sum(5x): d/dx = 2x + 5 = {7, 9}; the hook squares it
    local x = leaf({ 1, 2 })
    local calls = {}
    x:register_hook(function(g) calls[#calls + 1] = g:clone(); return g * g end)
    ;((x * x):sum() + (x * 5):sum()):backward()
    assert.equal(1, #calls)
    H.assert_values(calls[1], { 7, 9 })
    H.assert_values(x.grad, { 49, 81 })
  end)

  it('runs the hooks in registration order, each on the previous result', function()
    -- (2 + 1) * 3 = 9, against 2 * 3 + 1 = 7 the other way round
    local x = leaf({ 1, 2 })
    x:register_hook(function(g) return g + 1 end)
    x:register_hook(function(g) return g * 3 end)
    ;(x * 2):sum():backward()
    H.assert_values(x.grad, { 9, 9 })
  end)

  it('leaves the gradient alone when it returns nothing, and accumulates across backwards', function()
    local x = leaf({ 1, 2 })
    local n = 0
    x:register_hook(function() n = n + 1 end)
    ;(x * 2):sum():backward()
    ;(x * 4):sum():backward()
    assert.equal(2, n)
    H.assert_values(x.grad, { 6, 6 })
  end)

  it('runs on a leaf that is itself the root', function()
    local x = torch.tensor(3.0, { requires_grad = true })
    x:register_hook(function(g) return g * 5 end)
    x:backward()
    H.assert_values(x.grad, { 5 })
  end)

  it('runs with grad mode off, as the rest of backward', function()
    local x = leaf({ 1 })
    local mode
    x:register_hook(function() mode = torch.is_grad_enabled() end)
    ;(x * 2):sum():backward()
    assert.is_false(mode)
  end)
end)

describe('x:register_hook on a non-leaf', function()
  it('changes the gradient that flows on to the inputs', function()
    -- y = x^2, loss = sum(y): dloss/dy = 1, times 5 by the hook; dloss/dx = 5 * 2x
    local x = leaf({ 1, -2 })
    local y = x ^ 2
    y:register_hook(function(g) return g * 5 end)
    y:sum():backward()
    H.assert_values(x.grad, { 10, -20 })
  end)

  it('sees the gradient summed over every use', function()
    -- y = 2x; loss = sum(y * y) + sum(y): dloss/dy = 2y + 1 = 4x + 1
    local x = leaf({ 1, 2 })
    local y = x * 2
    local seen
    y:register_hook(function(g) seen = g:clone() end)
    ;((y * y):sum() + y:sum()):backward()
    H.assert_values(seen, { 5, 9 })
    H.assert_values(x.grad, { 10, 18 })
  end)

  it('keeps retain_grad at its place among the hooks (PyTorch 1.13)', function()
    local x = leaf({ 1, 2 })
    local y = x * 2
    y:retain_grad()
    y:register_hook(function(g) return g * 2 end)
    y:sum():backward()
    H.assert_values(y.grad, { 1, 1 }) -- retained before the hook
    H.assert_values(x.grad, { 4, 4 })
    local x2 = leaf({ 1, 2 })
    local y2 = x2 * 2
    y2:register_hook(function(g) return g * 2 end)
    y2:retain_grad()
    y2:sum():backward()
    H.assert_values(y2.grad, { 2, 2 }) -- after it
  end)

  it('is not called for an output that no gradient reached', function()
    local x = leaf({ 1, 2, 3, 4 })
    local parts = x:split(2)
    local called = false
    parts[1]:register_hook(function() called = true end)
    parts[2]:sum():backward()
    assert.is_false(called)
    H.assert_values(x.grad, { 0, 0, 1, 1 })
    -- two outputs of one node: only b's gets a gradient; d/dx sum(3x) = 3
    local Two = torch.autograd.Function:extend('Two')
    function Two.forward(ctx, v) return v * 2, v * 3 end
    function Two.backward(ctx, ga, gb) return ga * 2 + gb * 3 end
    local z = leaf({ 1, 2 })
    local a, b = Two.apply(z)
    local calls = {}
    a:register_hook(function() calls[#calls + 1] = 'a' end)
    b:register_hook(function(g) calls[#calls + 1] = 'b'; return g * 10 end)
    b:sum():backward()
    assert.same({ 'b' }, calls)
    H.assert_values(z.grad, { 30, 30 })
  end)
end)

describe('tensor hooks with nn.DataParallel', function()
  local nn = torch.nn

  it('run once on a parameter\'s gradient summed over the replicas, in the caller\'s state', function()
    -- y = x W^T, loss = sum(y): dloss/dW = column sums of x, for each output row; the hook doubles it
    local m = nn.Linear(3, 2, { bias = false })
    local x = torch.arange(1, 13):reshape(4, 3):float()
    local calls = 0
    m.weight:register_hook(function(g) calls = calls + 1; return g * 2 end)
    local dp = nn.DataParallel(m, { device_ids = { 'cpu:0', 'cpu:1' } })
    dp(x):sum():backward()
    assert.equal(1, calls)
    -- column sums of x: 1+4+7+10, 2+5+8+11, 3+6+9+12
    H.assert_values(m.weight.grad, { { 44, 52, 60 }, { 44, 52, 60 } })
  end)

  it('refuse to run a hook registered in a replica\'s own Lua state', function()
    local M = nn.Module:extend('HookInForward')
    function M:init() nn.Module.init(self); self.lin = nn.Linear(3, 2) end
    function M:forward(v)
      local y = self.lin(v)
      y:register_hook(function(g) return g end)
      return y
    end
    local dp = nn.DataParallel(M(), { device_ids = { 'cpu:0', 'cpu:1' } })
    H.raises(function() dp(torch.ones(4, 3)):sum():backward() end,
      "register_hook: a tensor's hooks run only in the Lua state that registered them")
  end)
end)

describe('x.retains_grad', function()
  it('is true only for a non-leaf after retain_grad', function()
    local x = leaf({ 1 })
    local y = x * 2
    assert.is_false(y.retains_grad)
    y:retain_grad()
    assert.is_true(y.retains_grad)
    x:retain_grad()
    assert.is_false(x.retains_grad)
  end)
end)

describe('hooks with torch.autograd.grad', function()
  it('run on the tensors between the outputs and the inputs', function()
    -- y = 2x, hook * 10, out = sum(3y): d/dx = 3 * 10 * 2
    local x = leaf({ 1, 2 })
    local y = x * 2
    local calls = 0
    y:register_hook(function(g) calls = calls + 1; return g * 10 end)
    local g = torch.autograd.grad((y * 3):sum(), { x })[1]
    H.assert_values(g, { 60, 60 })
    assert.equal(1, calls)
    assert.is_nil(x.grad)
  end)

  it('do not run on the inputs themselves (PyTorch 1.13 takes their gradients before the hooks)', function()
    local x = leaf({ 1, 2 })
    local called = false
    x:register_hook(function(g) called = true; return g * 10 end)
    H.assert_values(torch.autograd.grad((x * 3):sum(), { x })[1], { 3, 3 })
    local y = x * 2
    y:register_hook(function(g) called = true; return g * 10 end)
    H.assert_values(torch.autograd.grad((y * 3):sum(), { y })[1], { 3, 3 })
    assert.is_false(called)
  end)

  it('do not run where the gradient is not computed', function()
    -- only a's gradient is asked for: x's branch does not run
    local x, a = leaf({ 1, 2 }), leaf({ 3, 4 })
    local y = x * 2
    local calls = {}
    y:register_hook(function() calls[#calls + 1] = 'y' end)
    x:register_hook(function() calls[#calls + 1] = 'x' end)
    H.assert_values(torch.autograd.grad((y * a):sum(), { a })[1], { 2, 4 })
    assert.same({}, calls)
    -- the same graph's backward runs both
    ;(y * a):sum():backward()
    assert.same({ 'y', 'x' }, calls)
  end)
end)

describe('hook handles', function()
  it('remove the hook, twice harmlessly, and close as to-be-closed values', function()
    local x = leaf({ 1, 2 })
    local h = x:register_hook(function(g) return g * 2 end)
    h:remove()
    h:remove()
    ;(x * 1):sum():backward()
    H.assert_values(x.grad, { 1, 1 })
    do
      local _ <close> = x:register_hook(function(g) return g * 100 end)
    end
    x.grad = nil
    ;(x * 1):sum():backward()
    H.assert_values(x.grad, { 1, 1 })
  end)

  it('let a hook remove itself while it runs', function()
    local x = leaf({ 1 })
    local h
    h = x:register_hook(function(g) h:remove(); return g * 2 end)
    x:register_hook(function(g) return g + 1 end)
    ;(x * 1):sum():backward()
    H.assert_values(x.grad, { 3 })
    x.grad = nil
    ;(x * 1):sum():backward()
    H.assert_values(x.grad, { 2 })
  end)
end)

describe('hook errors', function()
  it('refuses a tensor that does not require grad, and a non-function', function()
    H.raises(function() torch.zeros(2):register_hook(function() end) end,
      "cannot register a hook on a tensor that doesn't require gradient")
    H.raises(function() leaf({ 1 }):register_hook(42) end, 'register_hook: expected a function, got number')
  end)

  it('names the hook that changed the shape, dtype or type of the gradient', function()
    local x = leaf({ 1, 2 })
    local h = x:register_hook(function() return torch.zeros(3, { dtype = torch.float64 }) end)
    local err = H.raises(function() (x * 2):sum():backward() end, 'has changed the size of value (was [2] got [3])')
    assert.truthy(err:find("hook 'spec/autograd_hooks_spec.lua:%d+'"))
    h:remove()
    h = x:register_hook(function(g) return g:float() end)
    H.raises(function() (x * 2):sum():backward() end, 'has changed the type of value')
    h:remove()
    h = x:register_hook(function() return 'no' end)
    H.raises(function() (x * 2):sum():backward() end, 'should return a tensor or nil, got string')
    h:remove()
    assert.is_nil(x.grad)
  end)

  it('propagates an error raised in a hook out of backward, and backward works after it', function()
    local x = leaf({ 1, 2 })
    local y = x * 2
    local h = y:register_hook(function() error('boom in hook') end)
    H.raises(function() y:sum():backward(nil, { retain_graph = true }) end, 'boom in hook')
    h:remove()
    y:sum():backward()
    H.assert_values(x.grad, { 2, 2 })
  end)
end)

describe('m:register_full_backward_hook', function()
  local nn = torch.nn

  -- y = x W^T + b, loss = sum(y * w): grad_output = w, grad_input = w W, W.grad = w^T x
  local function linear_case()
    torch.manual_seed(3)
    local m = nn.Linear(3, 2):double()
    local x = torch.randn(4, 3, { dtype = torch.float64 }):requires_grad_()
    local w = torch.randn(4, 2, { dtype = torch.float64 })
    return m, x, w
  end

  -- plain-Lua matrix product of nested tables
  local function mm(a, b)
    local r = {}
    for i = 1, #a do
      r[i] = {}
      for j = 1, #b[1] do
        local s = 0
        for k = 1, #b do s = s + a[i][k] * b[k][j] end
        r[i][j] = s
      end
    end
    return r
  end

  it('gives grad_input and grad_output of a Linear in closed form', function()
    local m, x, w = linear_case()
    local calls, gi, go, mod = 0, nil, nil, nil
    m:register_full_backward_hook(function(md, grad_input, grad_output)
      calls, mod, gi, go = calls + 1, md, grad_input, grad_output
    end)
    ;(m(x) * w):sum():backward()
    assert.equal(1, calls)
    assert.equal(m, mod)
    H.assert_values(go[1], w:totable(), 1e-12)
    local want = mm(w:totable(), m.weight:detach():totable())
    H.assert_values(gi[1], want, 1e-12)
    H.assert_values(x.grad, want, 1e-12)
  end)

  it('replaces grad_input with the table the hook returns, not the parameters\' gradients', function()
    local m, x, w = linear_case()
    m:register_full_backward_hook(function(_, grad_input) return { grad_input[1] * 2 } end)
    ;(m(x) * w):sum():backward()
    local gx = mm(w:totable(), m.weight:detach():totable())
    for i = 1, #gx do for j = 1, #gx[i] do gx[i][j] = 2 * gx[i][j] end end
    H.assert_values(x.grad, gx, 1e-12)
    local wt = w:t():totable()
    H.assert_values(m.weight.grad, mm(wt, x:detach():totable()), 1e-12)
  end)

  it('has nil entries for arguments that are not tensors or need no gradient', function()
    -- out = a * b * k: d/da = b k, d/db = a k
    local M = nn.Module:extend('Prod3')
    function M:forward(a, k, b) return a * b * k end
    local m = M()
    local a, b = leaf({ 1, 1 }), leaf({ 3, 3 })
    local gi, go
    m:register_full_backward_hook(function(_, grad_input, grad_output) gi, go = grad_input, grad_output end)
    m(a, 2, b):sum():backward()
    H.assert_values(gi[1], { 6, 6 })
    assert.is_nil(gi[2])
    H.assert_values(gi[3], { 2, 2 })
    H.assert_values(go[1], { 1, 1 })
    local c = torch.tensor({ 5.0, 5.0 }, { dtype = torch.float64 })
    m(a, 2, c):sum():backward()
    H.assert_values(gi[1], { 10, 10 })
    assert.is_nil(gi[3])
  end)

  it('runs from the output when no input needs a gradient, and may not return gradients then', function()
    local m, _, w = linear_case()
    local x = torch.randn(4, 3, { dtype = torch.float64 })
    local gi, go
    local h = m:register_full_backward_hook(function(_, grad_input, grad_output) gi, go = grad_input, grad_output end)
    ;(m(x) * w):sum():backward()
    assert.same({}, gi)
    H.assert_values(go[1], w:totable())
    h:remove()
    m:register_full_backward_hook(function() return { torch.ones(4, 3) } end)
    H.raises(function() (m(x) * w):sum():backward() end,
      'Backward hook for Modules where no input requires gradient should always return None or None for all gradients.')
  end)

  it('refuses a table with more grad_input than arguments, and is removed by its handle', function()
    local m, x, w = linear_case()
    local h = m:register_full_backward_hook(function(_, grad_input) return { grad_input[1], grad_input[1] } end)
    H.raises(function() (m(x) * w):sum():backward() end,
      'Backward hook returned an invalid number of grad_input, got 2, but expected 1')
    h:remove()
    x.grad = nil
    local calls = 0
    local h2 = m:register_full_backward_hook(function() calls = calls + 1 end)
    h2:remove()
    ;(m(x) * w):sum():backward()
    assert.equal(0, calls)
    H.assert_values(x.grad, mm(w:totable(), m.weight:detach():totable()), 1e-12)
  end)

  it('keeps the forward hooks\' 1.13 arguments: (module, input) and (module, input, output)', function()
    local m, x, w = linear_case()
    local seen = {}
    m:register_forward_pre_hook(function(md, input) seen.pre = { md, input.n, input[1] } end)
    m:register_forward_hook(function(md, input, output) seen.post = { md, input.n, output }; return output * 2 end)
    local bw_go
    m:register_full_backward_hook(function(_, _, grad_output) bw_go = grad_output[1] end)
    local y = m(x)
    assert.equal(m, seen.pre[1]); assert.equal(1, seen.pre[2]); assert.equal(x, seen.pre[3])
    assert.equal(m, seen.post[1]); assert.equal(1, seen.post[2])
    H.assert_values(y, (seen.post[3] * 2):detach():totable())
    ;(y * w):sum():backward()
    -- the backward hook sees the gradient of the call's final result (after the forward hook)
    H.assert_values(bw_go, w:totable())
    local want = mm(w:totable(), m.weight:detach():totable())
    for i = 1, #want do for j = 1, #want[i] do want[i][j] = 2 * want[i][j] end end
    H.assert_values(x.grad, want, 1e-12)
  end)
end)

describe('anomaly detection', function()
  local function line() return debug.getinfo(2, 'l').currentline end

  it('is off by default, and on inside detect_anomaly (a to-be-closed value or a function)', function()
    assert.is_false(torch.is_anomaly_enabled())
    do
      local _ <close> = torch.autograd.detect_anomaly()
      assert.is_true(torch.is_anomaly_enabled())
    end
    assert.is_false(torch.is_anomaly_enabled())
    assert.equal(7, torch.autograd.detect_anomaly(function(a, b)
      assert.is_true(torch.is_anomaly_enabled())
      return a + b
    end, 3, 4))
    assert.is_false(torch.is_anomaly_enabled())
    assert.has_error(function() torch.autograd.detect_anomaly(function() error('inside') end) end)
    assert.is_false(torch.is_anomaly_enabled())
    do
      local _ <close> = torch.autograd.set_detect_anomaly(true)
      assert.is_true(torch.is_anomaly_enabled())
      torch.autograd.set_detect_anomaly(false)
      assert.is_false(torch.is_anomaly_enabled())
    end
    assert.is_false(torch.is_anomaly_enabled())
    H.raises(function() torch.autograd.set_detect_anomaly('yes') end, 'set_detect_anomaly: expected a boolean, got string')
  end)

  it('makes a backward function that returns NaN an error naming it and the forward call', function()
    -- d/dx sqrt(x) = 1 / (2 sqrt(x)): NaN at x = -1
    local x = leaf({ -1, 4 })
    local y, at
    torch.autograd.detect_anomaly(function()
      at = line(); y = x:sqrt()
      local err = H.raises(function() y:sum():backward() end,
        "Function 'SqrtBackward0' returned nan values in its 1st output.",
        'Error detected in SqrtBackward0. Traceback of forward call that caused the error:',
        'autograd_hooks_spec.lua:' .. at .. ':')
      assert.is_nil(err:find('in its 2nd', 1, true))
    end)
    -- without it the NaN goes into .grad
    x:sqrt():sum():backward()
    local g = x.grad:totable()
    assert.is_true(g[1] ~= g[1])
    H.close(g[2], 0.25)
  end)

  it('names the output that has the NaN', function()
    -- z = a / b at a = b = 0: dz/da = 1/b = inf, dz/db = -a/b^2 = NaN
    local a, b = leaf({ 0 }), leaf({ 0 })
    local name = (a / b).grad_fn.name
    torch.autograd.detect_anomaly(function()
      H.raises(function() (a / b):sum():backward() end, "Function '" .. name .. "' returned nan values in its 2nd output.")
    end)
  end)

  it('says which forward call made the node where backward fails', function()
    local x = leaf({ 1, 2 })
    local Bad = torch.autograd.Function:extend('Bad')
    function Bad.forward(_, a) return a * 1 end
    function Bad.backward() error('bad backward') end
    local w, at
    torch.autograd.detect_anomaly(function()
      at = line(); w = Bad.apply(x)
    end)
    local err = torch.autograd.detect_anomaly(function()
      return H.raises(function() w:sum():backward() end, 'bad backward', 'Error detected in BadBackward.',
        'autograd_hooks_spec.lua:' .. at .. ':')
    end)
    assert.truthy(err)
    -- a graph recorded with anomaly detection off has no trace to give
    local y = x:exp()
    local z = y * 2
    y:add_(1)
    torch.autograd.detect_anomaly(function()
      H.raises(function() z:sum():backward() end, 'modified by an inplace operation',
        'Error detected in ExpBackward0', 'not recorded')
    end)
    -- and with it off the error is the plain one
    local w2 = Bad.apply(x)
    local plain = H.raises(function() w2:sum():backward() end, 'bad backward')
    assert.is_nil(plain:find('Error detected', 1, true))
  end)
end)

describe('inference mode', function()
  local inference_msg = 'Inference tensors cannot be saved for backward. To work around you can make a clone to get '
    .. 'a normal tensor and use it in autograd.'
  local inplace_msg = 'Inplace update to inference tensor outside InferenceMode is not allowed.'

  it('records no graph and makes inference tensors, as a to-be-closed value or a function', function()
    local w = leaf({ 1, 2 })
    assert.is_false(torch.is_inference_mode_enabled())
    local x, y, v
    do
      local _ <close> = torch.inference_mode()
      assert.is_true(torch.is_inference_mode_enabled())
      assert.is_false(torch.is_grad_enabled())
      x = torch.ones(2, { dtype = torch.float64 })
      y = w * 2
      v = x:view(2, 1)
    end
    assert.is_false(torch.is_inference_mode_enabled())
    assert.is_true(torch.is_grad_enabled())
    assert.is_true(x:is_inference())
    assert.is_false(y.requires_grad)
    assert.is_true(y:is_inference())
    assert.is_true(v:is_inference()) -- a view of an inference tensor, made outside
    assert.is_true(x:view(2):is_inference())
    assert.is_false(w:is_inference())
    -- made outside: normal tensors, even from inference ones
    assert.is_false((x + 1):is_inference())
    assert.is_false(x:clone():is_inference())
    local r = table.pack(torch.inference_mode(function(a, b)
      return torch.is_inference_mode_enabled(), torch.zeros(1):is_inference(), a + b
    end, 1, 2))
    assert.same({ true, true, 3, n = 3 }, r)
    assert.has_error(function() torch.inference_mode(function() error('inside') end) end)
    assert.is_false(torch.is_inference_mode_enabled())
    assert.is_true(torch.is_grad_enabled())
  end)

  it('takes a mode: false leaves it (and turns grad mode on), as PyTorch\'s', function()
    torch.inference_mode(function()
      torch.inference_mode(false, function()
        assert.is_false(torch.is_inference_mode_enabled())
        assert.is_true(torch.is_grad_enabled())
        assert.is_false(torch.zeros(1):is_inference())
      end)
      assert.is_true(torch.is_inference_mode_enabled())
      assert.is_false(torch.is_grad_enabled())
      do
        local _ <close> = torch.inference_mode(false)
        assert.is_false(torch.is_inference_mode_enabled())
      end
      assert.is_true(torch.is_inference_mode_enabled())
    end)
    H.raises(function() torch.inference_mode(true, 42) end, 'inference_mode: expected a function, got number')
  end)

  it('refuses to save an inference tensor for backward outside inference mode', function()
    local w = leaf({ 1, 2 })
    local x = torch.inference_mode(function() return torch.tensor({ 3, 4 }, { dtype = torch.float64 }) end)
    H.raises(function() return x * w end, 'MulBackward0: ' .. inference_msg)
    -- an op that saves nothing may use it, as in PyTorch: d/dw sum(x + w) = 1
    local s = (x + w):sum()
    s:backward()
    H.assert_values(w.grad, { 1, 1 })
    -- a clone is a normal tensor: d/dw sum(x w) = x
    w.grad = nil
    ;(x:clone() * w):sum():backward()
    H.assert_values(w.grad, { 3, 4 })
  end)

  it('refuses in-place updates of inference tensors outside inference mode, even without grad', function()
    local x = torch.inference_mode(function() return torch.ones(3) end)
    H.raises(function() x:add_(1) end, inplace_msg)
    H.raises(function() torch.no_grad(function() x:mul_(2) end) end, inplace_msg)
    H.raises(function() x[1] = 5 end, inplace_msg)
    H.raises(function() x:fill_(0) end, inplace_msg)
    H.raises(function() x:copy_(torch.zeros(3)) end, inplace_msg)
    H.raises(function() x:uniform_() end, inplace_msg)
    H.raises(function() x:exp_() end, inplace_msg)
    H.raises(function() x:clamp_(0, 0.5) end, inplace_msg)
    H.raises(function() x:masked_fill_(torch.tensor({ true, false, true }), 0) end, inplace_msg)
    H.raises(function() x:requires_grad_() end,
      'Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.')
    H.assert_values(x, { 1, 1, 1 })
    -- inside inference mode they may, and so may a normal tensor
    torch.inference_mode(function() x:add_(1) end)
    H.assert_values(x, { 2, 2, 2 })
    local n = torch.ones(2)
    torch.inference_mode(function() n:add_(1) end)
    H.assert_values(n, { 2, 2 })
    assert.is_false(n:is_inference())
  end)
end)
