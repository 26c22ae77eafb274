-- torch.optim: Adamax, NAdam, RAdam and Adadelta against plain-Lua loops of PyTorch's documented
-- algorithms (element by element, in double), for the default and other options, on float64,
-- float32, float16 and bfloat16 parameters, contiguous and transposed; first steps computed by
-- hand; state (float32 for float16/bfloat16 parameters), state_dict/load_state_dict, parameters
-- without a gradient, and the constructors' errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local OH = require 'spec.support.optim_harness'
local optim = torch.optim

local f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16

-- RAdam's rho_t passes 5 at step 6 (beta2 = 0.999 or 0.9): 8 steps run both of its branches
local NSTEPS = 8

-- the parameters: a 2x3 matrix and a 4-vector
local P1 = { { 0.5, -1.25, 2.0 }, { -0.75, 1.5, 0.1 } }
local P2 = { 1.0, -0.5, 0.25, 3.0 }

-- the gradients of step s: changing sign, of scales 0.1 to 100, an element exactly 0 at step 1
local function grads_of(s)
  local g1, g2 = {}, {}
  for i = 1, 2 do
    g1[i] = {}
    for j = 1, 3 do g1[i][j] = math.sin(1.3 * s + 0.7 * (3 * i + j)) * (0.2 + 0.3 * j) end
  end
  for k = 1, 4 do g2[k] = math.cos(0.9 * s - 0.4 * k) * 10 ^ (k - 2) end
  if s == 1 then g2[1] = 0 end
  return { g1, g2 }
end

-- ---- plain-Lua references of the documented algorithms, over flat arrays ----
-- Each does one step of the flat array p (updated) with gradient g; st is its state, o the options.

local function betas_of(o)
  if o.betas then return o.betas[1], o.betas[2] end
  return 0.9, 0.999
end

-- Adamax: m = b1 m + (1 - b1) g, u = max(b2 u, |g| + eps), p -= lr / (1 - b1^t) * m / u
local function ref_adamax(p, g, st, o)
  local lr, eps, wd = o.lr or 2e-3, o.eps or 1e-8, o.weight_decay or 0
  local b1, b2 = betas_of(o)
  if st.t == nil then st.t, st.m, st.u = 0, {}, {} end
  st.t = st.t + 1
  local t = st.t
  for i = 1, #p do
    local d = o.maximize and -g[i] or g[i]
    d = d + wd * p[i]
    st.m[i] = b1 * (st.m[i] or 0) + (1 - b1) * d
    st.u[i] = math.max(b2 * (st.u[i] or 0), math.abs(d) + eps)
    p[i] = p[i] - lr / (1 - b1 ^ t) * st.m[i] / st.u[i]
  end
end

-- NAdam: mu_t = b1 (1 - 0.5 * 0.96^(t psi)); mhat = mu_{t+1} m / (1 - prod_{i<=t+1} mu_i)
-- + (1 - mu_t) g / (1 - prod_{i<=t} mu_i); vhat = v / (1 - b2^t); p -= lr mhat / (sqrt(vhat) + eps)
local function ref_nadam(p, g, st, o)
  local lr, eps, wd, psi = o.lr or 2e-3, o.eps or 1e-8, o.weight_decay or 0, o.momentum_decay or 4e-3
  local b1, b2 = betas_of(o)
  if st.t == nil then st.t, st.prod, st.m, st.v = 0, 1, {}, {} end
  st.t = st.t + 1
  local t = st.t
  local mu = b1 * (1 - 0.5 * 0.96 ^ (t * psi))
  local mu_next = b1 * (1 - 0.5 * 0.96 ^ ((t + 1) * psi))
  st.prod = st.prod * mu
  for i = 1, #p do
    local d = o.maximize and -g[i] or g[i]
    if o.decoupled_weight_decay then p[i] = p[i] * (1 - lr * wd) else d = d + wd * p[i] end
    st.m[i] = b1 * (st.m[i] or 0) + (1 - b1) * d
    st.v[i] = b2 * (st.v[i] or 0) + (1 - b2) * d * d
    local mhat = mu_next * st.m[i] / (1 - st.prod * mu_next) + (1 - mu) * d / (1 - st.prod)
    local vhat = st.v[i] / (1 - b2 ^ t)
    p[i] = p[i] - lr * mhat / (math.sqrt(vhat) + eps)
  end
end

-- RAdam: mhat = m / (1 - b1^t); rho_t > 5: p -= lr mhat r_t l_t with l_t = sqrt(1 - b2^t) /
-- (sqrt(v) + eps), r_t = sqrt((rho_t - 4) (rho_t - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t));
-- else p -= lr mhat. st.rectified and st.plain count the steps of each branch.
local function ref_radam(p, g, st, o)
  local lr, eps, wd = o.lr or 1e-3, o.eps or 1e-8, o.weight_decay or 0
  local b1, b2 = betas_of(o)
  if st.t == nil then st.t, st.m, st.v, st.rectified, st.plain = 0, {}, {}, 0, 0 end
  st.t = st.t + 1
  local t = st.t
  local rho_inf = 2 / (1 - b2) - 1
  local rho_t = rho_inf - 2 * t * b2 ^ t / (1 - b2 ^ t)
  if rho_t > 5 then st.rectified = st.rectified + 1 else st.plain = st.plain + 1 end
  for i = 1, #p do
    local d = o.maximize and -g[i] or g[i]
    if o.decoupled_weight_decay then p[i] = p[i] * (1 - lr * wd) else d = d + wd * p[i] end
    st.m[i] = b1 * (st.m[i] or 0) + (1 - b1) * d
    st.v[i] = b2 * (st.v[i] or 0) + (1 - b2) * d * d
    local mhat = st.m[i] / (1 - b1 ^ t)
    if rho_t > 5 then
      local l = math.sqrt(1 - b2 ^ t) / (math.sqrt(st.v[i]) + eps)
      local r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
      p[i] = p[i] - lr * mhat * r * l
    else
      p[i] = p[i] - lr * mhat
    end
  end
end

-- Adadelta: v = rho v + (1 - rho) g^2; dx = sqrt(u + eps) / sqrt(v + eps) g;
-- u = rho u + (1 - rho) dx^2; p -= lr dx
local function ref_adadelta(p, g, st, o)
  local lr, rho, eps, wd = o.lr or 1.0, o.rho or 0.9, o.eps or 1e-6, o.weight_decay or 0
  if st.v == nil then st.v, st.u = {}, {} end
  for i = 1, #p do
    local d = o.maximize and -g[i] or g[i]
    d = d + wd * p[i]
    local v = rho * (st.v[i] or 0) + (1 - rho) * d * d
    local u = st.u[i] or 0
    local dx = math.sqrt(u + eps) / math.sqrt(v + eps) * d
    st.v[i], st.u[i] = v, rho * u + (1 - rho) * dx * dx
    p[i] = p[i] - lr * dx
  end
end

local REFS = { Adamax = ref_adamax, NAdam = ref_nadam, RAdam = ref_radam, Adadelta = ref_adadelta }
local NAMES = { 'Adamax', 'NAdam', 'RAdam', 'Adadelta' }

-- the default options, and others (weight decay, maximize, decoupled weight decay, other betas/rho)
local CASES = {
  Adamax = {
    {},
    { lr = 0.05, betas = { 0.8, 0.99 }, weight_decay = 0.1 },
    { lr = 0.02, betas = { 0.5, 0.9 }, eps = 1e-3, weight_decay = 0.01, maximize = true },
  },
  NAdam = {
    {},
    { lr = 0.05, betas = { 0.8, 0.99 }, weight_decay = 0.1, momentum_decay = 0.05 },
    { lr = 0.02, weight_decay = 0.05, decoupled_weight_decay = true, maximize = true },
    { lr = 0.01, betas = { 0.3, 0.9 }, eps = 1e-3, maximize = true },
  },
  RAdam = {
    {},
    { lr = 0.05, betas = { 0.8, 0.9 }, weight_decay = 0.1 },
    { lr = 0.02, weight_decay = 0.05, decoupled_weight_decay = true, maximize = true, eps = 1e-4 },
  },
  Adadelta = {
    {},
    { lr = 0.5, rho = 0.5, weight_decay = 0.1 },
    { rho = 0.95, eps = 1e-4, weight_decay = 0.02, maximize = true },
  },
}

-- ---- helpers ----

-- the problem, and its run against the references (spec/support/optim_harness.lua)
local PB = OH.problem({ P1, P2 }, grads_of, NSTEPS)
local function make_params(dtype, noncontig) return PB:make_params(dtype, noncontig) end
local function set_grads(ps, s) PB:set_grads(ps, s) end
local describe_opts = OH.describe_opts

local function check_against_ref(cname, opts, dtype, noncontig)
  local rst, opt = PB:check(cname, REFS[cname], opts, dtype, noncontig)
  assert.are.equal(NSTEPS, opt.state[opt.param_groups[1].params[1]].step)
  return rst
end

-- ---- specs ----

describe('Adamax, NAdam, RAdam and Adadelta against the documented algorithms', function()
  for _, cname in ipairs(NAMES) do
    for _, opts in ipairs(CASES[cname]) do
      for _, dtype in ipairs { f64, f32, f16, bf16 } do
        it(('%s (%s), %s, contiguous and transposed'):format(cname, describe_opts(opts), tostring(dtype)), function()
          for _, noncontig in ipairs { false, true } do
            local rst = check_against_ref(cname, opts, dtype, noncontig)
            if cname == 'RAdam' then
              -- both branches ran: the plain step while rho_t <= 5, then the rectified one
              assert.are.equal(5, rst[1].plain)
              assert.are.equal(NSTEPS - 5, rst[1].rectified)
            end
          end
        end)
      end
    end
  end
end)

describe('Adamax, NAdam, RAdam and Adadelta', function()
  -- one parameter p = 1 with gradient 0.5 at each step, the default options
  local function one(cname, steps)
    local p = torch.tensor({ 1.0 }, { dtype = f64, requires_grad = true })
    local opt = optim[cname]({ p })
    for _ = 1, steps or 1 do
      p.grad = torch.tensor({ 0.5 }, { dtype = f64 })
      opt:step()
    end
    return p:detach():totable()[1], opt, p
  end

  it('first steps computed by hand', function()
    -- Adamax: m = 0.05, u = 0.5 + 1e-8; p = 1 - 2e-3 / 0.1 * 0.05 / (0.5 + 1e-8)
    H.close(one('Adamax'), 0.99800000004, 1e-14)
    -- NAdam: mu_1 = 0.9 (1 - 0.5 * 0.96^0.004) = 0.45007347359129607, mu_2 = 0.4501469351862175;
    -- p = 1 - 2e-3 (mu_2 * 0.05 / (1 - mu_1 mu_2) + 0.5) / (sqrt(0.00025 / 0.001) + 1e-8)
    H.close(one('NAdam'), 0.9978870964855473, 1e-14)
    -- RAdam: rho_1 = 1, the plain step: p = 1 - 1e-3 * 0.5
    H.close(one('RAdam'), 0.9995, 1e-15)
    -- five plain steps of 5e-4, then at step 6 rho_6 = 5.99416375..., r_6 = 0.02582111280185855 and
    -- p = 0.9975 - 1e-3 * 0.5 * r_6 * sqrt(1 - 0.999^6) / (0.5 sqrt(1 - 0.999^6) + 1e-8)
    H.close(one('RAdam', 5), 0.9975, 1e-14)
    H.close(one('RAdam', 6), 0.9974741788938737, 1e-14)
    -- Adadelta: square_avg = 0.1 * 0.25; p = 1 - sqrt(1e-6) / sqrt(0.025 + 1e-6) * 0.5
    H.close(one('Adadelta'), 0.9968377855834876, 1e-14)
    -- the state after that step
    local _, opt, p = one('Adadelta')
    local s = opt.state[p]
    assert.are.equal(1, s.step)
    H.assert_values(s.square_avg, { 0.025 }, 1e-15)
    local dx = math.sqrt(1e-6) / math.sqrt(0.025 + 1e-6) * 0.5
    H.assert_values(s.acc_delta, { 0.1 * dx * dx }, 1e-15)
    _, opt, p = one('NAdam', 2)
    assert.are.equal(2, opt.state[p].step)
    H.close(opt.state[p].mu_product, 0.45007347359129607 * 0.4501469351862175, 1e-15)
    _, opt, p = one('Adamax')
    H.assert_values(opt.state[p].exp_inf, { 0.5 + 1e-8 }, 1e-15)
  end)

  it('keep float32 state for float16 and bfloat16 parameters, and step as a number', function()
    for _, cname in ipairs(NAMES) do
      for _, dtype in ipairs { f16, bf16 } do
        local p = torch.ones(3, { dtype = dtype, requires_grad = true })
        -- Adadelta's first step is lr * 0.00316: below float16's spacing at 1 with lr = 0.01
        local opt = optim[cname]({ p }, { lr = cname == 'Adadelta' and 1 or 0.01 })
        p.grad = torch.full({ 3 }, 0.5, { dtype = dtype })
        opt:step()
        assert.are.equal(dtype, p.dtype)
        local n = 0
        for k, v in pairs(opt.state[p]) do
          if torch.is_tensor(v) then
            assert.are.equal(f32, v.dtype, cname .. ' ' .. k)
            n = n + 1
          end
        end
        assert.are.equal(2, n, cname)
        assert.are.equal('number', type(opt.state[p].step))
        -- the parameter moved down
        assert.is_true(p:detach():to(f64):totable()[1] < 1, cname)
      end
    end
    local p = torch.ones(2, { dtype = f64, requires_grad = true })
    local opt = optim.NAdam({ p })
    p.grad = torch.ones(2, { dtype = f64 })
    opt:step()
    assert.are.equal('number', type(opt.state[p].mu_product))
    assert.are.equal(f64, opt.state[p].exp_avg.dtype)
  end)

  for _, cname in ipairs(NAMES) do
    it(cname .. ': a fresh optimizer loaded with the state continues exactly as the original', function()
      local o = CASES[cname][3]
      local pa = make_params(f64)
      local a = optim[cname](pa, o)
      for s = 1, 3 do set_grads(pa, s); a:step() end
      local pb = { pa[1]:detach():clone():requires_grad_(true), pa[2]:detach():clone():requires_grad_(true) }
      local b = optim[cname](pb, { lr = 123 })
      b:load_state_dict(a:state_dict())
      assert.are.equal(o.lr or a.defaults.lr, b.param_groups[1].lr)
      assert.are.equal(a.param_groups[1].maximize, b.param_groups[1].maximize)
      -- steps 4 to 8: RAdam changes branch at step 6
      for s = 4, NSTEPS do
        set_grads(pa, s); a:step()
        set_grads(pb, s); b:step()
        for j = 1, 2 do assert.is_true(pa[j]:equal(pb[j]), cname .. ' step ' .. s .. ' param ' .. j) end
      end
      -- the loaded state is a copy: stepping b did not move a's state twice
      local sa, sb = a.state[pa[1]], b.state[pb[1]]
      assert.are.equal(NSTEPS, sb.step)
      for k, v in pairs(sa) do
        if torch.is_tensor(v) then
          assert.is_true(v:equal(sb[k]), k)
          assert.is_false(rawequal(v, sb[k]))
        else
          assert.are.equal(v, sb[k], k)
        end
      end
    end)
  end

  it("NAdam loads PyTorch's form of the state (step and mu_product as scalar tensors)", function()
    local pa = make_params(f64)
    local a = optim.NAdam(pa, { lr = 0.05 })
    for s = 1, 2 do set_grads(pa, s); a:step() end
    local sd = a:state_dict()
    for _, st in pairs(sd.state) do
      st.step = torch.tensor(st.step, { dtype = f32 })
      st.mu_product = torch.tensor(st.mu_product, { dtype = f64 })
    end
    local pb = { pa[1]:detach():clone():requires_grad_(true), pa[2]:detach():clone():requires_grad_(true) }
    local b = optim.NAdam(pb)
    b:load_state_dict(sd)
    for s = 3, 5 do
      set_grads(pa, s); a:step()
      set_grads(pb, s); b:step()
      for j = 1, 2 do assert.is_true(pa[j]:equal(pb[j]), 'step ' .. s .. ' param ' .. j) end
    end
    assert.are.equal('number', type(b.state[pb[1]].mu_product))
    assert.are.equal(5, b.state[pb[2]].step)
  end)

  it('parameters without a gradient are left alone, and get no state', function()
    for _, cname in ipairs(NAMES) do
      local ps = make_params(f64)
      local opt = optim[cname](ps, { lr = 0.1, weight_decay = 0.1 })
      ps[2].grad = torch.ones(4, { dtype = f64 })
      opt:step()
      opt:step()
      H.assert_values(ps[1]:detach(), P1, 0, cname)
      assert.is_nil(opt.state[ps[1]], cname)
      assert.are.equal(2, opt.state[ps[2]].step, cname)
      local moved = ps[2]:detach():totable()
      for k = 1, 4 do assert.is_true(moved[k] < P2[k], cname) end
    end
  end)

  it('step(closure) returns the loss, and param groups keep their own options', function()
    for _, cname in ipairs(NAMES) do
      local w = torch.tensor({ 3.0, -1.0 }, { dtype = f64, requires_grad = true })
      local v = torch.tensor({ 3.0, -1.0 }, { dtype = f64, requires_grad = true })
      local opt = optim[cname]({ { params = { w } }, { params = { v }, lr = 0 } }, { lr = 0.1 })
      assert.are.equal(0.1, opt.param_groups[1].lr)
      assert.are.equal(0, opt.param_groups[2].lr)
      local loss = opt:step(function()
        opt:zero_grad()
        local l = (w * w):sum() + (v * v):sum()
        l:backward()
        return l
      end)
      assert.are.equal(20, loss:item())
      H.assert_values(v:detach(), { 3, -1 }, 0, cname) -- lr 0
      local moved = w:detach():totable()
      assert.is_true(moved[1] < 3 and moved[2] > -1, cname)
    end
  end)

  it('take the defaults of PyTorch 2.x', function()
    local q = { torch.zeros(1, { requires_grad = true }) }
    local g = optim.Adamax(q).param_groups[1]
    assert.are.same({ 2e-3, { 0.9, 0.999 }, 1e-8, 0, false }, { g.lr, g.betas, g.eps, g.weight_decay, g.maximize })
    g = optim.NAdam(q).param_groups[1]
    assert.are.same({ 2e-3, { 0.9, 0.999 }, 1e-8, 0, 4e-3, false, false },
      { g.lr, g.betas, g.eps, g.weight_decay, g.momentum_decay, g.decoupled_weight_decay, g.maximize })
    g = optim.RAdam(q).param_groups[1]
    assert.are.same({ 1e-3, { 0.9, 0.999 }, 1e-8, 0, false, false },
      { g.lr, g.betas, g.eps, g.weight_decay, g.decoupled_weight_decay, g.maximize })
    g = optim.Adadelta(q).param_groups[1]
    assert.are.same({ 1.0, 0.9, 1e-6, 0, false }, { g.lr, g.rho, g.eps, g.weight_decay, g.maximize })
    -- a number is the learning rate
    assert.are.equal(0.25, optim.RAdam(q, 0.25).param_groups[1].lr)
    -- the defaults' betas are not shared with the groups
    local a = optim.NAdam(q, { betas = { 0.5, 0.6 } })
    assert.are.same({ 0.5, 0.6 }, a.param_groups[1].betas)
    assert.are.same({ 0.9, 0.999 }, optim.NAdam(q).param_groups[1].betas)
  end)

  it('constructor errors as PyTorch words them', function()
    local q = { torch.zeros(1, { requires_grad = true }) }
    for _, cname in ipairs { 'Adamax', 'NAdam', 'RAdam' } do
      H.raises(function() optim[cname](q, { lr = -1 }) end, cname .. ': Invalid learning rate: -1')
      H.raises(function() optim[cname](q, { eps = -1e-8 }) end, cname .. ': Invalid epsilon value: -1e-08')
      H.raises(function() optim[cname](q, { betas = { 1.0, 0.999 } }) end,
        cname .. ': Invalid beta parameter at index 1: 1.0')
      H.raises(function() optim[cname](q, { betas = { 0.9, -0.1 } }) end,
        cname .. ': Invalid beta parameter at index 2: -0.1')
      H.raises(function() optim[cname](q, { betas = 0.9 }) end, cname .. ': betas must be a pair {beta1, beta2}')
      H.raises(function() optim[cname](q, { weight_decay = -0.01 }) end, cname .. ': Invalid weight_decay value: -0.01')
      H.raises(function() optim[cname](q, { rho = 0.9 }) end, cname .. ": unknown option 'rho'")
    end
    H.raises(function() optim.NAdam(q, { momentum_decay = -1e-3 }) end, 'NAdam: Invalid momentum_decay value: -0.001')
    -- Adam and AdamW share the betas check (a number there once failed to index)
    H.raises(function() optim.Adam(q, { betas = 0.9 }) end, 'Adam: betas must be a pair {beta1, beta2}')
    H.raises(function() optim.AdamW(q, { betas = 0.9 }) end, 'AdamW: betas must be a pair {beta1, beta2}')
    H.raises(function() optim.Adamax(q, { decoupled_weight_decay = true }) end,
      "Adamax: unknown option 'decoupled_weight_decay'")
    H.raises(function() optim.RAdam(q, { momentum_decay = 0.1 }) end, "RAdam: unknown option 'momentum_decay'")
    H.raises(function() optim.Adadelta(q, { lr = -0.5 }) end, 'Adadelta: Invalid learning rate: -0.5')
    H.raises(function() optim.Adadelta(q, { rho = -0.1 }) end, 'Adadelta: Invalid rho value: -0.1')
    H.raises(function() optim.Adadelta(q, { rho = 1.5 }) end, 'Adadelta: Invalid rho value: 1.5')
    H.raises(function() optim.Adadelta(q, { eps = -1 }) end, 'Adadelta: Invalid epsilon value: -1')
    H.raises(function() optim.Adadelta(q, { weight_decay = -1 }) end, 'Adadelta: Invalid weight_decay value: -1')
    H.raises(function() optim.Adadelta(q, { betas = { 0.9, 0.99 } }) end, "Adadelta: unknown option 'betas'")
    -- rho = 0 and 1 are allowed, as in PyTorch
    optim.Adadelta(q, { rho = 0 })
    optim.Adadelta(q, { rho = 1 })
    H.raises(function() optim.NAdam({}) end, 'NAdam: optimizer got an empty parameter list')
    H.raises(function() optim.Adadelta(q[1]) end,
      'Adadelta: params argument given to the optimizer should be an iterable of Tensors or dicts, but got torch.Tensor')
    -- the error points at the caller's line
    local err = H.raises(function() optim.RAdam(q, { lr = -1 }) end, 'RAdam: Invalid learning rate')
    assert.truthy(err:find('optim_more_spec.lua', 1, true), err)
  end)
end)
