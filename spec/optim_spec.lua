-- torch.optim: SGD, Adam, AdamW against PyTorch's updates (spec/data/optim_reference.lua, written by
-- tools/gen_optim_reference.py) and against plain-Lua loops of the documented algorithms, on the
-- fused C path and the tensor-op path, float32 and float64 (and float16/bfloat16 and non-contiguous
-- parameters, which take the tensor-op path); param groups, zero_grad, state dicts, errors; the lr
-- schedulers against PyTorch's rates.
local torch = require 'torch'
local H = require 'spec.helpers'
local OH = require 'spec.support.optim_harness'
local optim = torch.optim
local REF = dofile('spec/data/optim_reference.lua')

local f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16

-- ---- plain-Lua references of the documented algorithms, in double over flat arrays ----

-- one SGD step of the flat arrays p (updated) from g; st holds the momentum buffer
local function ref_sgd(p, g, st, o)
  local lr, mom, damp, wd = o.lr or 1e-3, o.momentum or 0, o.dampening or 0, o.weight_decay or 0
  for i = 1, #p do
    local d = g[i]
    if o.maximize then d = -d end
    d = d + wd * p[i]
    if mom ~= 0 then
      if st.buf == nil then st.buf = {} ; st.first = true end
      local b = st.first and d or mom * st.buf[i] + (1 - damp) * d
      st.buf[i] = b
      if o.nesterov then d = d + mom * b else d = b end
    end
    p[i] = p[i] - lr * d
  end
  st.first = false
end

-- one Adam/AdamW step: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, bias-corrected update
local function ref_adam(p, g, st, o, decoupled)
  local lr, eps = o.lr or 1e-3, o.eps or 1e-8
  local wd = o.weight_decay or (decoupled and 1e-2 or 0)
  local b1, b2 = 0.9, 0.999
  if o.betas then b1, b2 = o.betas[1], o.betas[2] end
  if st.t == nil then st.t, st.m, st.v, st.vmax = 0, {}, {}, {} end
  st.t = st.t + 1
  local t = st.t
  for i = 1, #p do
    local grad = o.maximize and -g[i] or g[i]
    if decoupled then p[i] = p[i] * (1 - lr * wd) else grad = grad + wd * p[i] end
    st.m[i] = b1 * (st.m[i] or 0) + (1 - b1) * grad
    st.v[i] = b2 * (st.v[i] or 0) + (1 - b2) * grad * grad
    local v = st.v[i]
    if o.amsgrad then
      st.vmax[i] = math.max(st.vmax[i] or 0, v)
      v = st.vmax[i]
    end
    local mhat = st.m[i] / (1 - b1 ^ t)
    p[i] = p[i] - lr * mhat / (math.sqrt(v) / math.sqrt(1 - b2 ^ t) + eps)
  end
end

-- one RMSprop step: square_avg, optionally centered by grad_avg, momentum buffer
local function ref_rmsprop(p, g, st, o)
  local lr, alpha, eps, wd, mom = o.lr or 1e-2, o.alpha or 0.99, o.eps or 1e-8, o.weight_decay or 0, o.momentum or 0
  if st.sq == nil then st.sq, st.ga, st.buf = {}, {}, {} end
  for i = 1, #p do
    local d = o.maximize and -g[i] or g[i]
    d = d + wd * p[i]
    st.sq[i] = alpha * (st.sq[i] or 0) + (1 - alpha) * d * d
    local avg
    if o.centered then
      st.ga[i] = alpha * (st.ga[i] or 0) + (1 - alpha) * d
      avg = math.sqrt(st.sq[i] - st.ga[i] * st.ga[i]) + eps
    else
      avg = math.sqrt(st.sq[i]) + eps
    end
    if mom > 0 then
      st.buf[i] = mom * (st.buf[i] or 0) + d / avg
      p[i] = p[i] - lr * st.buf[i]
    else
      p[i] = p[i] - lr * d / avg
    end
  end
end

-- one Adagrad step at step t: lr / (1 + (t - 1) lr_decay) over sqrt of the summed squares
local function ref_adagrad(p, g, st, o)
  local lr, decay, wd, eps = o.lr or 1e-2, o.lr_decay or 0, o.weight_decay or 0, o.eps or 1e-10
  if st.t == nil then st.t, st.sum = 0, {} end
  st.t = st.t + 1
  local clr = lr / (1 + (st.t - 1) * decay)
  for i = 1, #p do
    local d = o.maximize and -g[i] or g[i]
    d = d + wd * p[i]
    st.sum[i] = (st.sum[i] or o.initial_accumulator_value or 0) + d * d
    p[i] = p[i] - clr * d / (math.sqrt(st.sum[i]) + eps)
  end
end

local REFS = {
  RMSprop = ref_rmsprop,
  Adagrad = ref_adagrad,
  SGD = ref_sgd,
  Adam = function(p, g, st, o) return ref_adam(p, g, st, o, false) end,
  AdamW = function(p, g, st, o) return ref_adam(p, g, st, o, true) end,
}

-- ---- helpers ----

-- count the fused C calls while fn runs
local function count_fused(fn)
  local C = torch._optim
  local orig_sgd, orig_adam = C.sgd_step, C.adam_step
  local n = 0
  C.sgd_step = function(...) n = n + 1; return orig_sgd(...) end
  C.adam_step = function(...) n = n + 1; return orig_adam(...) end
  local ok, err = pcall(fn)
  C.sgd_step, C.adam_step = orig_sgd, orig_adam
  if not ok then error(err, 0) end
  return n
end

local function with(t, extra)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end

-- the reference parameters and gradients (spec/support/optim_harness.lua)
local PB = OH.problem(REF.params, function(step) return REF.grads[step] end, #REF.grads)
local function make_params(dtype, noncontig) return PB:make_params(dtype, noncontig) end
local function set_grads(ps, step) PB:set_grads(ps, step) end
local round_to = OH.round_to

-- run cname with opts over the reference gradients and compare with the plain-Lua reference
local function check_against_ref(cname, opts, dtype, noncontig)
  PB:check(cname, REFS[cname], opts, dtype, noncontig)
end

-- ---- specs ----

describe('torch.optim against PyTorch', function()
  for _, cname in ipairs { 'SGD', 'Adam', 'AdamW' } do
    for _, case in ipairs(REF[cname:lower()]) do
      for _, fused in ipairs { true, false } do
        it(('%s (%s), %s path, float64'):format(cname, case.name, fused and 'fused' or 'tensor-op'), function()
          local ps = make_params(f64)
          local opt = optim[cname](ps, with(case.opts, { fused = fused }))
          local calls = count_fused(function()
            for step = 1, #REF.grads do
              set_grads(ps, step)
              opt:step()
              for j, p in ipairs(ps) do
                H.assert_values(p:detach(), case.expected[step][j], 1e-12,
                  ('%s %s step %d param %d'):format(cname, case.name, step, j))
              end
            end
          end)
          assert.are.equal(fused and 2 * #REF.grads or 0, calls)
        end)
      end
    end
  end

  it('param groups with their own lr and momentum (both paths)', function()
    local R = REF.sgd_groups
    for _, fused in ipairs { true, false } do
      local ps = make_params(f64)
      local groups = {}
      for j, p in ipairs(ps) do groups[j] = with(R.groups[j], { params = { p } }) end
      local opt = optim.SGD(groups, with(R.opts, { fused = fused }))
      assert.are.equal(0.1, opt.param_groups[1].lr)
      assert.are.equal(0.01, opt.param_groups[2].lr)
      assert.are.equal(0.5, opt.param_groups[2].momentum)
      assert.are.equal(0.9, opt.param_groups[1].momentum)
      assert.are.equal(0, opt.param_groups[2].dampening) -- a default filled in
      for step = 1, #REF.grads do
        set_grads(ps, step)
        opt:step()
        for j, p in ipairs(ps) do H.assert_values(p:detach(), R.expected[step][j], 1e-12) end
      end
    end
  end)
end)

describe('RMSprop and Adagrad', function()
  for _, cname in ipairs { 'RMSprop', 'Adagrad' } do
    for _, case in ipairs(REF[cname:lower()]) do
      it(('%s (%s) against PyTorch, float64'):format(cname, case.name), function()
        local ps = make_params(f64)
        local opt = optim[cname](ps, case.opts)
        for step = 1, #REF.grads do
          set_grads(ps, step)
          opt:step()
          for j, p in ipairs(ps) do
            H.assert_values(p:detach(), case.expected[step][j], 1e-12, ('%s %s step %d param %d'):format(cname, case.name, step, j))
          end
        end
      end)
      for _, dtype in ipairs { f32, f16, bf16 } do
        it(('%s (%s) against the documented algorithm, %s, and a non-contiguous parameter'):format(cname, case.name,
          tostring(dtype)), function()
          check_against_ref(cname, case.opts, dtype)
          check_against_ref(cname, case.opts, dtype, true)
        end)
      end
    end
  end
  it('keep float32 state for float16 parameters, save and resume their state, and name bad options', function()
    for _, cname in ipairs { 'RMSprop', 'Adagrad' } do
      local p = torch.ones(3, { dtype = f16, requires_grad = true })
      local opt = optim[cname]({ p }, cname == 'RMSprop' and { lr = 0.01, momentum = 0.5, centered = true } or { lr = 0.1 })
      p.grad = torch.full({ 3 }, 0.5, { dtype = f16 })
      opt:step()
      for k, v in pairs(opt.state[p]) do
        if torch.is_tensor(v) then assert.are.equal(f32, v.dtype, cname .. ' ' .. k) end
      end
      -- a fresh optimizer loaded with the state continues exactly as the original
      local a = torch.tensor({ 1.0, -2.0 }, { dtype = f64, requires_grad = true })
      local b = torch.tensor({ 1.0, -2.0 }, { dtype = f64, requires_grad = true })
      local o1 = optim[cname]({ a }, { lr = 0.05 })
      a.grad = torch.tensor({ 0.3, -0.1 }, { dtype = f64 })
      o1:step()
      torch.no_grad(function() b:copy_(a) end)
      local o2 = optim[cname]({ b }, { lr = 0.05 })
      o2:load_state_dict(o1:state_dict())
      for _ = 1, 3 do
        a.grad = torch.tensor({ 0.2, 0.4 }, { dtype = f64 })
        b.grad = a.grad:clone()
        o1:step()
        o2:step()
      end
      assert.is_true(torch.equal(a, b), cname)
    end
    local q = { torch.zeros(1, { requires_grad = true }) }
    H.raises(function() optim.RMSprop(q, { lr = -1 }) end, 'RMSprop: Invalid learning rate: -1')
    H.raises(function() optim.RMSprop(q, { alpha = -0.1 }) end, 'RMSprop: Invalid alpha value')
    H.raises(function() optim.RMSprop(q, { betas = 1 }) end, "unknown option 'betas'")
    H.raises(function() optim.Adagrad(q, { lr_decay = -1 }) end, 'Adagrad: Invalid lr_decay value: -1')
    H.raises(function() optim.Adagrad(q, { initial_accumulator_value = -1 }) end, 'Adagrad: Invalid initial_accumulator_value')
  end)
end)

describe('torch.optim against the documented algorithms', function()
  local combos = {
    SGD = {
      { lr = 0.1 },
      { lr = 0.1, momentum = 0.9 },
      { lr = 0.05, momentum = 0.9, dampening = 0.3, weight_decay = 0.01 },
      { lr = 0.1, momentum = 0.8, nesterov = true, weight_decay = 0.05 },
      { lr = 0.1, momentum = 0.9, maximize = true, weight_decay = 0.02 },
    },
    Adam = {
      { lr = 0.01 },
      { lr = 0.05, betas = { 0.8, 0.99 }, weight_decay = 0.1 },
      { lr = 0.02, amsgrad = true, weight_decay = 0.01, maximize = true },
      { lr = 0.03, betas = { 0.3, 0.9 }, eps = 1e-3 },
    },
    AdamW = {
      {},
      { lr = 0.05, amsgrad = true, weight_decay = 0.1 },
      { lr = 0.02, maximize = true, betas = { 0.85, 0.95 } },
    },
  }
  local describe_opts = OH.describe_opts
  for _, cname in ipairs { 'SGD', 'Adam', 'AdamW' } do
    for _, o in ipairs(combos[cname]) do
      for _, dtype in ipairs { f32, f64, f16, bf16 } do
        for _, fused in ipairs { true, false } do
          it(('%s {%s} %s, %s path'):format(cname, describe_opts(o), tostring(dtype), fused and 'fused' or 'tensor-op'), function()
            local calls = count_fused(function() check_against_ref(cname, with(o, { fused = fused }), dtype) end)
            assert.are.equal(fused and 2 * #REF.grads or 0, calls)
          end)
        end
      end
      for _, dtype in ipairs { f64, f32, f16 } do
        it(('%s {%s} %s: a non-contiguous parameter takes the tensor-op path'):format(cname, describe_opts(o), tostring(dtype)), function()
          local calls = count_fused(function() check_against_ref(cname, o, dtype, true) end)
          assert.are.equal(#REF.grads, calls) -- only the contiguous vector was fused
        end)
      end
    end
  end

  -- both paths do the same float32 (or float64) operations in the same order: equal to the bit
  it('the fused and tensor-op paths agree exactly, on large parameters too (threaded loops)', function()
    local configs = {
      SGD = { { lr = 0.1, momentum = 0.9, weight_decay = 0.01, nesterov = true },
        { lr = 0.1, momentum = 0.5, dampening = 0.2, maximize = true } },
      Adam = { { lr = 0.01, amsgrad = true, weight_decay = 0.1 }, { lr = 0.01, betas = { 0.2, 0.9 }, maximize = true } },
      AdamW = { { lr = 0.01, amsgrad = true }, { lr = 0.01, betas = { 0.4, 0.5 }, eps = 1e-3 } },
    }
    for _, cname in ipairs { 'SGD', 'Adam', 'AdamW' } do
      for _, o in ipairs(configs[cname]) do
        for _, dtype in ipairs { f32, f64, f16, bf16 } do
          local n = (dtype == f32 or dtype == f64) and 70000 or 1000
          torch.manual_seed(7)
          local init = torch.randn(n, { dtype = dtype })
          local pa = init:clone():requires_grad_(true)
          local pb = init:clone():requires_grad_(true)
          local oa = optim[cname]({ pa }, with(o, { fused = true }))
          local ob = optim[cname]({ pb }, with(o, { fused = false }))
          for _ = 1, 3 do
            local g = torch.randn(n, { dtype = dtype })
            pa.grad, pb.grad = g:clone(), g:clone()
            oa:step()
            ob:step()
          end
          assert(not pa:equal(init), 'the parameter moved')
          assert(pa:equal(pb), ('%s %s: the paths differ by %g'):format(cname, tostring(dtype),
            (pa:double() - pb:double()):abs():max():item()))
          for k, v in pairs(oa.state[pa]) do
            if torch.is_tensor(v) then assert(v:equal(ob.state[pb][k]), k) end
          end
        end
      end
    end
  end)

  it('float16 and bfloat16 parameters keep float32 state (eps = 1e-8 does not vanish)', function()
    for _, dtype in ipairs { f16, bf16 } do
      for _, fused in ipairs { true, false } do
        local p = torch.tensor({ 1.0, -1.0, 0.5 }, { dtype = dtype, requires_grad = true })
        local opt = optim.Adam({ p }, { lr = 0.01, fused = fused })
        p.grad = torch.tensor({ 0.0, 0.5, -1.0 }, { dtype = dtype })
        opt:step()
        local s = opt.state[p]
        assert.are.equal(f32, s.exp_avg.dtype)
        assert.are.equal(f32, s.exp_avg_sq.dtype)
        H.assert_values(s.exp_avg, { 0, 0.05, -0.1 }, 1e-7)
        -- the zero gradient leaves its element exactly in place (PyTorch's float16 state gives 0/0)
        H.assert_values(p:detach():to(f64), round_to({ 1.0, -1.01, 0.51 }, dtype), 0)
      end
    end
  end)

  it('a non-contiguous gradient of a contiguous parameter is fused', function()
    local p = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 }, { 5.0, 6.0 } }, { dtype = f64, requires_grad = true })
    p.grad = torch.tensor({ { 0.5, -1.0, 2.0 }, { 0.25, 3.0, -0.5 } }, { dtype = f64 }):t()
    assert.is_false(p.grad:is_contiguous())
    local opt = optim.SGD({ p }, { lr = 0.5 })
    assert.are.equal(1, count_fused(function() opt:step() end))
    H.assert_values(p:detach(), { { 0.75, 1.875 }, { 3.5, 2.5 }, { 4.0, 6.25 } }, 0)
  end)

  it('SGD keeps state only with momentum, as PyTorch', function()
    local ps = make_params(f64)
    local plain = optim.SGD(ps, { lr = 0.1 })
    set_grads(ps, 1)
    plain:step()
    assert.is_nil(next(plain.state))
    assert.is_nil(next(plain:state_dict().state))
    local mom = optim.SGD(ps, { lr = 0.1, momentum = 0.9 })
    mom:step()
    -- the buffer starts as a copy of the gradient
    H.assert_values(mom.state[ps[2]].momentum_buffer, REF.grads[1][2], 0)
    assert.is_false(rawequal(mom.state[ps[2]].momentum_buffer, ps[2].grad))
  end)

  it('parameters without a gradient are left alone, and get no state', function()
    local ps = make_params(f64)
    local opt = optim.Adam(ps, { lr = 0.1 })
    ps[2].grad = torch.ones(4, { dtype = f64 })
    opt:step()
    H.assert_values(ps[1]:detach(), REF.params[1], 0)
    assert.is_nil(opt.state[ps[1]])
    assert.are.equal(1, opt.state[ps[2]].step)
  end)
end)

describe('Optimizer', function()
  it('zero_grad drops the gradients by default, or zeroes them in place', function()
    local ps = make_params(f32)
    local opt = optim.SGD(ps, { lr = 0.1 })
    set_grads(ps, 1)
    opt:zero_grad()
    assert.is_nil(ps[1].grad)
    assert.is_nil(ps[2].grad)
    set_grads(ps, 1)
    local g = ps[1].grad
    opt:zero_grad(false)
    H.assert_values(ps[1].grad, { { 0, 0, 0 }, { 0, 0, 0 } }, 0)
    H.assert_values(g, { { 0, 0, 0 }, { 0, 0, 0 } }, 0) -- the same tensor, zeroed in place
    set_grads(ps, 2)
    opt:zero_grad { set_to_none = false }
    H.assert_values(ps[2].grad, { 0, 0, 0, 0 }, 0)
  end)

  it('gradients accumulate after zero_grad(false) as after zero_grad()', function()
    local w = torch.tensor({ 1.0, -2.0 }, { requires_grad = true })
    local opt = optim.SGD({ w }, { lr = 0.1 })
    for _, none in ipairs { true, false } do
      opt:zero_grad(none)
      local loss = (w * w):sum()
      loss:backward()
      H.assert_values(w.grad, { 2 * w:detach()[1], 2 * w:detach()[2] }, 1e-6)
    end
  end)

  it('step(closure) evaluates the loss with grad enabled and returns it', function()
    local w = torch.tensor({ 3.0, -1.0 }, { dtype = f64, requires_grad = true })
    local opt = optim.SGD({ w }, { lr = 0.25 })
    local calls = 0
    local closure = function()
      calls = calls + 1
      opt:zero_grad()
      local loss = (w * w):sum()
      loss:backward()
      return loss
    end
    local loss = torch.no_grad(function() return opt:step(closure) end)
    assert.are.equal(1, calls)
    assert.are.equal(10, loss:item())
    H.assert_values(w:detach(), { 3 - 0.25 * 6, -1 + 0.25 * 2 }, 0)
    assert.is_nil(opt:step()) -- no closure, no loss
  end)

  it('a training loop fits a linear model (autograd, grad mode, in-place updates)', function()
    local x = torch.tensor({ { 1.0, 2.0 }, { 3.0, -1.0 }, { 0.5, 0.5 }, { -2.0, 1.0 } })
    local y = torch.tensor({ 5.0, 1.0, 1.5, 0.0 }) -- 1 * x1 + 2 * x2
    local w = torch.zeros(2, { requires_grad = true })
    local opt = optim.Adam({ w }, { lr = 0.1 })
    for _ = 1, 300 do
      opt:zero_grad()
      local loss = ((torch.mv(x, w) - y) ^ 2):mean()
      loss:backward()
      opt:step()
    end
    H.assert_values(w:detach(), { 1, 2 }, 1e-3)
  end)

  it('bumps the version of the parameter: a graph that saved it refuses backward', function()
    for _, fused in ipairs { true, false } do
      local w = torch.tensor({ 1.0, 2.0 }, { requires_grad = true })
      local opt = optim.SGD({ w }, { lr = 0.1, fused = fused })
      local y = (w * w):sum()
      w.grad = torch.ones(2)
      opt:step()
      H.raises(function() y:backward() end, 'modified by an inplace operation')
    end
  end)

  it('state_dict numbers the parameters 1, 2, ... in group order', function()
    local ps = make_params(f64)
    local p3 = torch.zeros(2, { dtype = f64, requires_grad = true })
    local opt = optim.Adam({ { params = { ps[1], ps[2] } }, { params = { p3 }, lr = 0.5 } }, { lr = 0.01, amsgrad = true })
    set_grads(ps, 1)
    opt:step()
    local sd = opt:state_dict()
    assert.are.same({ 1, 2 }, sd.param_groups[1].params)
    assert.are.same({ 3 }, sd.param_groups[2].params)
    assert.are.equal(0.5, sd.param_groups[2].lr)
    assert.are.equal(0.01, sd.param_groups[1].lr)
    assert.are.same({ 0.9, 0.999 }, sd.param_groups[1].betas)
    assert.are.equal(1, sd.state[1].step)
    assert.is_true(torch.is_tensor(sd.state[2].exp_avg))
    assert.is_true(torch.is_tensor(sd.state[2].max_exp_avg_sq))
    assert.is_nil(sd.state[3]) -- p3 had no gradient
    -- exp_avg after one step is (1 - beta1) * g
    H.assert_values(sd.state[2].exp_avg, { 0.4, -0.001, 0.05, -0.1 }, 1e-15)
  end)

  for _, cname in ipairs { 'SGD', 'Adam', 'AdamW' } do
    it(cname .. ': a fresh optimizer loaded with the state continues exactly as the original', function()
      local o = cname == 'SGD' and { lr = 0.1, momentum = 0.9, nesterov = true } or { lr = 0.05, amsgrad = true }
      local pa = make_params(f64)
      local a = optim[cname](pa, o)
      for step = 1, 2 do set_grads(pa, step); a:step() end
      local pb = { pa[1]:detach():clone():requires_grad_(true), pa[2]:detach():clone():requires_grad_(true) }
      local b = optim[cname](pb, { lr = 123 })
      b:load_state_dict(a:state_dict())
      assert.are.equal(o.lr, b.param_groups[1].lr)
      for step = 3, 4 do
        set_grads(pa, step); a:step()
        set_grads(pb, step); b:step()
        for j = 1, 2 do assert.is_true(pa[j]:equal(pb[j]), cname .. ' step ' .. step) end
      end
      -- the loaded state is a copy: stepping b did not move a's state twice
      local sa, sb = a.state[pa[1]], b.state[pb[1]]
      for k, v in pairs(sa) do
        if torch.is_tensor(v) then
          assert.is_true(v:equal(sb[k]), k)
          assert.is_false(rawequal(v, sb[k]))
        end
      end
    end)
  end

  it('load_state_dict casts state tensors to the parameter dtype and device', function()
    local pa = { torch.tensor({ 1.0, 2.0 }, { dtype = f64, requires_grad = true }) }
    local a = optim.Adam(pa, { lr = 0.1 })
    pa[1].grad = torch.tensor({ 0.5, -0.5 }, { dtype = f64 })
    a:step()
    local sd = a:state_dict()
    sd.state[1].step = torch.tensor(1.0) -- PyTorch's form of the step count
    local pb = { torch.tensor({ 1.0, 2.0 }, { dtype = f32, device = 'cpu:1', requires_grad = true }) }
    local b = optim.Adam(pb, { lr = 0.1 })
    b:load_state_dict(sd)
    local s = b.state[pb[1]]
    assert.are.equal(f32, s.exp_avg.dtype)
    assert.are.equal('cpu:1', tostring(s.exp_avg_sq.device))
    assert.are.equal(1, s.step)
    H.assert_values(s.exp_avg, { 0.05, -0.05 }, 1e-7)
    pb[1].grad = torch.tensor({ 0.5, -0.5 }, { device = 'cpu:1' })
    b:step() -- the fused step on cpu:1
    assert.are.equal(2, s.step)
  end)

  it('load_state_dict checks the groups', function()
    local ps = make_params(f64)
    local a = optim.SGD(ps, { lr = 0.1 })
    local b = optim.SGD({ { params = { ps[1] } }, { params = { ps[2] } } }, { lr = 0.1 })
    H.raises(function() b:load_state_dict(a:state_dict()) end,
      'loaded state dict has a different number of parameter groups')
    local c = optim.SGD({ ps[1] }, { lr = 0.1 })
    H.raises(function() c:load_state_dict(a:state_dict()) end,
      "loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
  end)

  it('add_param_group fills the defaults and refuses a parameter already present', function()
    local ps = make_params(f32)
    local opt = optim.SGD({ ps[1] }, { lr = 0.1, momentum = 0.9 })
    opt:add_param_group { params = ps[2], lr = 0.01 }
    assert.are.equal(2, #opt.param_groups)
    assert.are.equal(0.9, opt.param_groups[2].momentum)
    assert.are.equal(ps[2], opt.param_groups[2].params[1])
    H.raises(function() opt:add_param_group { params = { ps[1] } } end,
      'some parameters appear in more than one parameter group')
  end)

  it('constructor errors as PyTorch words them', function()
    local ps = make_params(f32)
    H.raises(function() optim.SGD(ps, { lr = -1 }) end, 'SGD: Invalid learning rate: -1')
    H.raises(function() optim.SGD(ps, { lr = 0.1, momentum = -0.5 }) end, 'Invalid momentum value: -0.5')
    H.raises(function() optim.SGD(ps, { lr = 0.1, weight_decay = -1.0 }) end, 'Invalid weight_decay value: -1.0')
    H.raises(function() optim.SGD(ps, { lr = 0.1, nesterov = true }) end,
      'Nesterov momentum requires a momentum and zero dampening')
    H.raises(function() optim.SGD(ps, { lr = 0.1, momentum = 0.9, dampening = 0.1, nesterov = true }) end,
      'Nesterov momentum requires a momentum and zero dampening')
    H.raises(function() optim.Adam(ps, { lr = -0.5 }) end, 'Adam: Invalid learning rate: -0.5')
    H.raises(function() optim.Adam(ps, { eps = -1e-8 }) end, 'Invalid epsilon value: -1e-08')
    H.raises(function() optim.Adam(ps, { betas = { 1.0, 0.999 } }) end, 'Invalid beta parameter at index 1: 1.0')
    H.raises(function() optim.AdamW(ps, { betas = { 0.9, -0.1 } }) end, 'AdamW: Invalid beta parameter at index 2: -0.1')
    H.raises(function() optim.AdamW(ps, { weight_decay = -0.01 }) end, 'Invalid weight_decay value: -0.01')
    H.raises(function() optim.Adam(ps, { lr = 0.1, momentum = 0.9 }) end, "Adam: unknown option 'momentum'")
    H.raises(function() optim.SGD({}, { lr = 0.1 }) end, 'optimizer got an empty parameter list')
    H.raises(function() optim.SGD(ps[1], { lr = 0.1 }) end,
      'params argument given to the optimizer should be an iterable of Tensors or dicts, but got torch.Tensor')
    H.raises(function() optim.SGD({ ps[1], 3 }, { lr = 0.1 }) end, 'optimizer can only optimize Tensors')
    H.raises(function() optim.SGD({ ps[1] * 2 }, { lr = 0.1 }) end, "can't optimize a non-leaf Tensor")
    H.raises(function() optim.SGD({ ps[1], ps[1] }, { lr = 0.1 }):add_param_group { params = ps[1] } end,
      'some parameters appear in more than one parameter group')
    -- the defaults as PyTorch 2.x's
    local a, w = optim.Adam(ps), optim.AdamW(ps)
    assert.are.equal(1e-3, a.param_groups[1].lr)
    assert.are.equal(0, a.param_groups[1].weight_decay)
    assert.are.equal(1e-2, w.param_groups[1].weight_decay)
    assert.are.equal(1e-8, w.param_groups[1].eps)
    assert.are.same({ 0.9, 0.999 }, w.param_groups[1].betas)
    local s = optim.SGD(ps)
    assert.are.equal(1e-3, s.param_groups[1].lr)
    assert.is_false(s.param_groups[1].nesterov)
  end)

  it('fused = true refuses a parameter the fused step cannot take', function()
    local p = torch.zeros(2, 3, { dtype = f16 }):t()
    p:requires_grad_(true)
    local opt = optim.SGD({ p }, { lr = 0.1, fused = true })
    p.grad = torch.ones(3, 2, { dtype = f16 })
    H.raises(function() opt:step() end, 'fused = true requires contiguous floating-point CPU or CUDA parameters',
      'float16', 'not contiguous')
  end)
end)

describe('torch._optim (the fused steps)', function()
  local C = torch._optim
  local function vec(v, dtype) return torch.tensor(v, { dtype = dtype or f64 }) end
  it('checks shapes, dtypes, devices, contiguity and aliasing', function()
    local p = vec { 1, 2, 3 }
    H.raises(function() C.sgd_step(p, vec { 1, 2 }, nil, false, 0.1, 0, 0, 0, false, false) end,
      "sgd: expected the gradient to have the parameter's shape [3], but got [2]")
    H.raises(function() C.sgd_step(p, vec({ 1, 2, 3 }, f32), nil, false, 0.1, 0, 0, 0, false, false) end,
      "sgd: expected the gradient to have the parameter's dtype float64, but got float32")
    H.raises(function() C.sgd_step(vec({ 1, 2, 3 }, torch.int64), vec({ 1, 2, 3 }, torch.int64), nil, false, 0.1, 0, 0, 0, false, false) end,
      'sgd: the fused step supports float32, float64, float16 and bfloat16 parameters, got int64')
    H.raises(function() C.sgd_step(vec({ 1, 2, 3 }, f16), vec({ 1, 2, 3 }, f16), vec({ 1, 2, 3 }, f16), true, 0.1, 0.9, 0, 0, false, false) end,
      'sgd: expected the momentum buffer to have dtype float32, but got float16')
    H.raises(function() C.sgd_step(p, vec { 1, 2, 3 }, nil, false, 0.1, 0.9, 0, 0, false, false) end,
      'sgd: momentum 0.9 needs a momentum buffer')
    H.raises(function() C.sgd_step(p, p, nil, false, 0.1, 0, 0, 0, false, false) end,
      'sgd: the parameter and the gradient share memory')
    H.raises(function() C.sgd_step(p, vec { 1, 2, 3 }:to('cpu:1'), nil, false, 0.1, 0, 0, 0, false, false) end,
      "sgd: expected the gradient on the parameter's device cpu:0, but it is on cpu:1")
    local m = torch.zeros(3, 2, { dtype = f64 }):t()
    H.raises(function() C.adam_step(vec { { 1, 2, 3 }, { 4, 5, 6 } }, torch.zeros(2, 3, { dtype = f64 }), m,
      torch.zeros(2, 3, { dtype = f64 }), nil, 1, 0.1, 0.9, 0.999, 1e-8, 0, false, false) end,
      'adam: the fused step needs a contiguous exp_avg')
    H.raises(function() C.adam_step(p, vec { 1, 2, 3 }, vec { 0, 0, 0 }, vec { 0, 0, 0 }, nil, 0, 0.1, 0.9, 0.999, 1e-8, 0, true, false) end,
      'adamw: the step count must be at least 1, got 0')
    H.raises(function() C.adam_step(p, vec { 1, 2, 3 }, vec { 0, 0 }, vec { 0, 0, 0 }, nil, 1, 0.1, 0.9, 0.999, 1e-8, 0, false, false) end,
      "adam: expected the exp_avg to have the parameter's shape [3], but got [2]")
    H.raises(function() C.adam_step(p, vec { 1, 2, 3 }, vec { 0, 0, 0 }, vec { 0, 0, 0 }, vec({ 0, 0, 0 }, f32), 1, 0.1, 0.9, 0.999, 1e-8, 0, false, false) end,
      "adam: expected the max_exp_avg_sq to have the parameter's dtype float64, but got float32")
  end)

  it('updates 0-dim and empty tensors', function()
    local p, g = torch.tensor(2.0, { dtype = f64 }), torch.tensor(4.0, { dtype = f64 })
    C.sgd_step(p, g, nil, false, 0.25, 0, 0, 0, false, false)
    assert.are.equal(1, p:item())
    local e = torch.zeros(0)
    C.adam_step(e, torch.zeros(0), torch.zeros(0), torch.zeros(0), nil, 1, 0.1, 0.9, 0.999, 1e-8, 0, false, false)
    assert.are.equal(0, e:numel())
  end)

  it('propagates NaN through amsgrad as torch.maximum does', function()
    local p = torch.tensor({ 1.0, 1.0 }, { dtype = f64 })
    local vmax = torch.tensor({ 0 / 0, 0.0 }, { dtype = f64 })
    C.adam_step(p, torch.tensor({ 1.0, 0 / 0 }, { dtype = f64 }), torch.zeros(2, { dtype = f64 }),
      torch.zeros(2, { dtype = f64 }), vmax, 1, 0.1, 0.9, 0.999, 1e-8, 0, false, false)
    local v = vmax:totable()
    assert.is_true(v[1] ~= v[1] and v[2] ~= v[2])
  end)
end)

describe('torch.optim.lr_scheduler against PyTorch', function()
  local S = optim.lr_scheduler
  local function run(make, R, epochs, lr, groups)
    lr = lr or 0.1
    local gs = {}
    for i = 1, groups or 2 do gs[i] = { params = { torch.zeros(1, { requires_grad = true }) }, lr = lr * i } end
    local opt = optim.SGD(gs, { lr = lr })
    local s = make(opt)
    -- initial_lr is the group's lr (OneCycleLR sets its own: max_lr / div_factor)
    if s.__name ~= 'OneCycleLR' then
      for i = 1, #gs do assert.are.equal(lr * i, opt.param_groups[i].initial_lr) end
    end
    local function check(e)
      local got = s:get_last_lr()
      for i = 1, #gs do
        H.close(got[i], R.lrs[e + 1][i], 1e-15, ('epoch %d group %d'):format(e, i))
        assert.are.equal(got[i], opt.param_groups[i].lr)
      end
    end
    check(0)
    for e = 1, epochs do
      opt:step()
      s:step()
      check(e)
    end
    return s, opt
  end

  it('StepLR', function()
    local R = REF.steplr
    run(function(o) return S.StepLR(o, R.step_size, { gamma = R.gamma }) end, R, #R.lrs - 1)
  end)
  it('MultiStepLR (a repeated milestone counts twice)', function()
    local R = REF.multisteplr
    run(function(o) return S.MultiStepLR(o, R.milestones, { gamma = R.gamma }) end, R, #R.lrs - 1)
  end)
  it('LambdaLR', function()
    local R = REF.lambdalr
    run(function(o) return S.LambdaLR(o, function(e) return 0.95 ^ e end) end, R, #R.lrs - 1)
  end)
  it('CosineAnnealingLR (past T_max, with eta_min)', function()
    local R = REF.cosine
    run(function(o) return S.CosineAnnealingLR(o, R.T_max, { eta_min = R.eta_min }) end, R, #R.lrs - 1)
  end)
  it('CosineAnnealingLR (one group, eta_min 0)', function()
    local R = REF.cosine0
    run(function(o) return S.CosineAnnealingLR(o, R.T_max) end, R, #R.lrs - 1, 0.5, 1)
  end)

  it('state_dict / load_state_dict resume the schedule', function()
    local R = REF.cosine
    local s, opt = run(function(o) return S.CosineAnnealingLR(o, R.T_max, { eta_min = R.eta_min }) end, R, 6)
    local sd = s:state_dict()
    assert.is_nil(sd.optimizer)
    assert.are.equal(6, sd.last_epoch)
    -- a fresh optimizer and scheduler, then both states loaded (PyTorch's way to resume)
    local gs = {}
    for i = 1, 2 do gs[i] = { params = { torch.zeros(1, { requires_grad = true }) } } end
    local opt2 = optim.SGD(gs, { lr = 0.7 })
    local s2 = S.CosineAnnealingLR(opt2, R.T_max, { eta_min = R.eta_min })
    opt2:load_state_dict(opt:state_dict())
    s2:load_state_dict(sd)
    assert.are.equal(0.2, opt2.param_groups[2].initial_lr)
    for e = 7, #R.lrs - 1 do
      s2:step()
      for i = 1, 2 do H.close(s2:get_last_lr()[i], R.lrs[e + 1][i], 1e-15) end
    end
  end)

  it('errors', function()
    local opt = optim.SGD({ torch.zeros(1, { requires_grad = true }) }, { lr = 0.1 })
    H.raises(function() S.StepLR(opt, 2, { last_epoch = 3 }) end,
      "param 'initial_lr' is not specified in param_groups[1] when resuming an optimizer")
    H.raises(function() S.StepLR(opt, 0) end, 'StepLR: step_size must be positive')
    H.raises(function() S.StepLR(opt, 2, { gama = 0.5 }) end, "StepLR: unknown option 'gama'")
    H.raises(function() S.LambdaLR(opt, { function() return 1 end, function() return 1 end }) end,
      'LambdaLR: Expected 1 lr_lambdas, but got 2')
    H.raises(function() S.CosineAnnealingLR({}, 10) end, 'CosineAnnealingLR: expected an optimizer')
  end)

  it('MultiplicativeLR, ExponentialLR, ConstantLR, LinearLR, PolynomialLR', function()
    run(function(o) return S.MultiplicativeLR(o, function(e) return 0.9 + 0.01 * e end) end, REF.multiplicativelr, 6)
    run(function(o) return S.ExponentialLR(o, 0.7) end, REF.exponentiallr, 6)
    run(function(o) return S.ConstantLR(o, { factor = 0.25, total_iters = 3 }) end, REF.constantlr, 6)
    run(function(o) return S.LinearLR(o, { start_factor = 0.2, end_factor = 0.9, total_iters = 4 }) end, REF.linearlr, 7)
    run(function(o) return S.PolynomialLR(o, { total_iters = 5, power = 2 }) end, REF.polynomiallr, 7)
  end)
  it('CosineAnnealingWarmRestarts (T_mult 2 with eta_min, and T_mult 1)', function()
    run(function(o) return S.CosineAnnealingWarmRestarts(o, 3, { T_mult = 2, eta_min = 0.01 }) end, REF.warm_restarts, 16)
    run(function(o) return S.CosineAnnealingWarmRestarts(o, 4) end, REF.warm_restarts1, 10, 0.1, 1)
    -- a fractional epoch, as PyTorch's example steps it inside an epoch
    local opt = optim.SGD({ torch.zeros(1, { requires_grad = true }) }, { lr = 1 })
    local s = S.CosineAnnealingWarmRestarts(opt, 4)
    s:step(1.5)
    H.close(s:get_last_lr()[1], (1 + math.cos(math.pi * 1.5 / 4)) / 2, 1e-15)
  end)
  it('OneCycleLR (cos, per-group max_lr; three phases, linear) and the momentum it cycles', function()
    run(function(o) return S.OneCycleLR(o, { 1.0, 2.0 }, { total_steps = 10 }) end, REF.onecycle, 10)
    run(function(o) return S.OneCycleLR(o, 0.5, { total_steps = 12, three_phase = true, anneal_strategy = 'linear',
      pct_start = 0.25 }) end, REF.onecycle3, 12, 0.1, 1)
    for _, name in ipairs { 'sgd', 'adam' } do
      local p = torch.zeros(1, { requires_grad = true })
      local opt = name == 'sgd' and optim.SGD({ p }, { lr = 0.1, momentum = 0.9 }) or optim.Adam({ p }, { lr = 0.1 })
      local s = S.OneCycleLR(opt, 0.4, { total_steps = 8, base_momentum = 0.8, max_momentum = 0.9 })
      for k = 1, 8 do
        local g = opt.param_groups[1]
        H.close(name == 'sgd' and g.momentum or g.betas[1], REF.onecycle_momentum[name][k], 1e-15, name .. ' step ' .. k)
        opt:step()
        s:step()
      end
    end
    local opt = optim.SGD({ torch.zeros(1, { requires_grad = true }) }, { lr = 0.1, momentum = 0.9 })
    local s = S.OneCycleLR(opt, 1, { epochs = 2, steps_per_epoch = 2 })
    for _ = 1, 4 do s:step() end
    H.raises(function() s:step() end, 'OneCycleLR: Tried to step 6 times. The specified number of total steps is 4')
    H.raises(function() S.OneCycleLR(opt, 1) end, 'You must define either total_steps OR (epochs AND steps_per_epoch)')
    H.raises(function() S.OneCycleLR(optim.Adagrad({ torch.zeros(1) }), 1, { total_steps = 3 }) end,
      'optimizer must support momentum')
  end)
  it('SequentialLR (a warm-up, then exponential decay) and ChainedScheduler', function()
    run(function(o)
      return S.SequentialLR(o, { S.LinearLR(o, { start_factor = 0.1, total_iters = 3 }), S.ExponentialLR(o, 0.8) }, { 3 })
    end, REF.sequential, 8)
    run(function(o)
      return S.ChainedScheduler({ S.ConstantLR(o, { factor = 0.5, total_iters = 2 }), S.ExponentialLR(o, 0.9) })
    end, REF.chained, 6)
    local opt = optim.SGD({ torch.zeros(1, { requires_grad = true }) }, { lr = 0.1 })
    H.raises(function() S.SequentialLR(opt, { S.ExponentialLR(opt, 0.9) }, { 2 }) end,
      'expects number of schedulers provided to be one more than the number of milestone points')
  end)
  it('ReduceLROnPlateau (min, relative, cooldown; max, absolute, per-group min_lr)', function()
    local R = REF.plateau
    for _, case in ipairs { { 'min_rel', { patience = 2, factor = 0.5, cooldown = 1 } },
      { 'max_abs', { mode = 'max', patience = 1, factor = 0.3, threshold = 0.05, threshold_mode = 'abs', min_lr = { 0.02, 0.05 } } } } do
      local gs = {}
      for i = 1, 2 do gs[i] = { params = { torch.zeros(1, { requires_grad = true }) }, lr = 0.1 * i } end
      local opt = optim.SGD(gs, { lr = 0.1 })
      local s = S.ReduceLROnPlateau(opt, case[2])
      for k, m in ipairs(R.metrics) do
        opt:step()
        s:step(k % 2 == 0 and torch.tensor(m, { dtype = f64 }) or m) -- a 0-dim tensor works too
        for i = 1, 2 do H.close(opt.param_groups[i].lr, R[case[1]][k][i], 1e-15, ('%s metric %d group %d'):format(case[1], k, i)) end
      end
      assert.are.same(s:get_last_lr(), { opt.param_groups[1].lr, opt.param_groups[2].lr })
    end
    local opt = optim.SGD({ torch.zeros(1, { requires_grad = true }) }, { lr = 0.1 })
    H.raises(function() S.ReduceLROnPlateau(opt, { factor = 1 }) end, 'Factor should be < 1.0.')
    H.raises(function() S.ReduceLROnPlateau(opt, { mode = 'up' }) end, 'mode up is unknown!')
    H.raises(function() S.ReduceLROnPlateau(opt):step('x') end, 'step expects the metric (a number), got string')
  end)

  it('step(epoch) uses the closed form', function()
    local opt = optim.SGD({ torch.zeros(1, { requires_grad = true }) }, { lr = 0.4 })
    local s = S.StepLR(opt, 2, { gamma = 0.5 })
    s:step(5)
    assert.are.equal(0.4 * 0.5 ^ 2, s:get_last_lr()[1])
  end)
end)
