-- torch.optim: Rprop and ASGD against plain-Lua loops of PyTorch 1.13's algorithms (element by
-- element, in double) for several steps, with maximize, weight decay and clamped step sizes, on
-- float64, float32, float16 and bfloat16 parameters; LBFGS against a plain-Lua port of the same
-- algorithm (two-loop recursion, strong-Wolfe line search) on the Rosenbrock function, reaching the
-- same iterates after every step, and converging on a quadratic; state_dict round trips; the errors.
-- torch.optim.swa_utils: AveragedModel against running means computed in Lua, SWALR's rates against
-- the formula, update_bn against the statistics of the data computed directly.
local torch = require 'torch'
local H = require 'spec.helpers'
local OH = require 'spec.support.optim_harness'
local optim = torch.optim
local nn = torch.nn

local f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16

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

-- ---- plain-Lua references, over flat arrays: one step of p (updated) with gradient g ----

-- Rprop: s = g * prev; the step size times etaplus (s > 0), etaminus (s < 0, and g = 0) or 1,
-- clamped; p -= sign(g) * step_size; prev = g
local function ref_rprop(p, g, st, o)
  local lr = o.lr or 1e-2
  local em, ep = table.unpack(o.etas or { 0.5, 1.2 })
  local smin, smax = table.unpack(o.step_sizes or { 1e-6, 50 })
  if st.prev == nil then
    st.t, st.prev, st.size = 0, {}, {}
    for i = 1, #p do st.prev[i], st.size[i] = 0, lr end
  end
  st.t = st.t + 1
  for i = 1, #p do
    local d = o.maximize and -g[i] or g[i]
    local s = d * st.prev[i]
    local factor = 1
    if s > 0 then factor = ep elseif s < 0 then factor = em end
    st.size[i] = math.min(math.max(st.size[i] * factor, smin), smax)
    if st.size[i] == smin then st.hit_min = true end
    if st.size[i] == smax then st.hit_max = true end
    if s < 0 then d = 0 end
    local sign = d > 0 and 1 or (d < 0 and -1 or 0)
    p[i] = p[i] - sign * st.size[i]
    st.prev[i] = d
  end
end

-- ASGD: p = p (1 - lambd eta) - eta (g + wd p); ax = p (mu = 1) or ax + mu (p - ax);
-- eta = lr / (1 + lambd lr t)^alpha, mu = 1 / max(1, t - t0)
local function ref_asgd(p, g, st, o)
  local lr, lambd, alpha, t0, wd = o.lr or 1e-2, o.lambd or 1e-4, o.alpha or 0.75, o.t0 or 1e6, o.weight_decay or 0
  if st.t == nil then st.t, st.eta, st.mu, st.ax = 0, lr, 1, {} end
  st.t = st.t + 1
  for i = 1, #p do
    local d = o.maximize and -g[i] or g[i]
    d = d + wd * p[i]
    p[i] = p[i] * (1 - lambd * st.eta)
    p[i] = p[i] - st.eta * d
    if st.mu ~= 1 then st.ax[i] = st.ax[i] + st.mu * (p[i] - st.ax[i]) else st.ax[i] = p[i] end
  end
  st.eta = lr / (1 + lambd * lr * st.t) ^ alpha
  st.mu = 1 / math.max(1, st.t - t0)
end

local REFS = { Rprop = ref_rprop, ASGD = ref_asgd }
local NAMES = { 'Rprop', 'ASGD' }

local CASES = {
  Rprop = {
    {},
    { lr = 0.05, etas = { 0.3, 1.5 }, maximize = true },
    -- both clamps reached: the sizes start below the minimum and grow past the maximum
    { lr = 0.001, etas = { 0.4, 2.0 }, step_sizes = { 0.005, 0.02 } },
  },
  ASGD = {
    {},
    -- averaging from step 3 on, a fast-decaying eta
    { lr = 0.05, lambd = 0.5, alpha = 0.6, t0 = 2, weight_decay = 0.1 },
    { lr = 0.02, lambd = 0.1, t0 = 4, weight_decay = 0.05, maximize = true },
  },
}

-- the problem, and its run against the references (spec/support/optim_harness.lua)
local PB = OH.problem({ P1, P2 }, grads_of, NSTEPS)
local function make_params(dtype, noncontig) return PB:make_params(dtype, noncontig) end
local function set_grads(ps, s) PB:set_grads(ps, s) end
local describe_opts, TOL = OH.describe_opts, OH.TOL

-- the optimizers' states against the references' after every step
local function check_state(cname, dtype)
  return function(opt, p, st, what)
    local state = opt.state[p]
    if cname == 'Rprop' then
      H.assert_values(state.step_size, st.size, 1e-6, what .. ' step_size')
      H.assert_values(state.prev, st.prev, TOL[dtype], what .. ' prev')
    else
      H.assert_values(state.ax, st.ax, TOL[dtype], what .. ' ax')
      H.close(state.eta, st.eta, 1e-15, what .. ' eta')
      H.close(state.mu, st.mu, 1e-15, what .. ' mu')
    end
  end
end

local function check_against_ref(cname, opts, dtype, noncontig)
  local rst, opt = PB:check(cname, REFS[cname], opts, dtype, noncontig, check_state(cname, dtype))
  assert.are.equal(NSTEPS, opt.state[opt.param_groups[1].params[1]].step)
  return rst
end

describe('Rprop and ASGD against PyTorch 1.13\'s algorithms', function()
  for _, cname in ipairs(NAMES) do
    for _, opts in ipairs(CASES[cname]) do
      for _, dtype in ipairs { f64, f32, f16, bf16 } do
        it(('%s (%s), %s, contiguous and transposed'):format(cname, describe_opts(opts), tostring(dtype)), function()
          for _, noncontig in ipairs { false, true } do
            local rst = check_against_ref(cname, opts, dtype, noncontig)
            if cname == 'Rprop' and opts.step_sizes then
              -- both clamps were reached
              assert.is_true((rst[1].hit_min or rst[2].hit_min) and (rst[1].hit_max or rst[2].hit_max))
            end
          end
        end)
      end
    end
  end
end)

describe('Rprop and ASGD', function()
  it('first steps computed by hand', function()
    -- Rprop: the first step moves by lr against the sign; a gradient of 0 does not move
    local p = torch.tensor({ 1.0, 2.0, 3.0 }, { dtype = f64, requires_grad = true })
    local opt = optim.Rprop({ p })
    p.grad = torch.tensor({ 0.5, -2.0, 0.0 }, { dtype = f64 })
    opt:step()
    H.assert_values(p:detach(), { 0.99, 2.01, 3.0 }, 1e-15)
    -- the same signs: 1.2 lr; a sign change: 0.5 lr and no move
    p.grad = torch.tensor({ 0.1, 3.0, 1.0 }, { dtype = f64 })
    opt:step()
    H.assert_values(p:detach(), { 0.99 - 0.012, 2.01, 3.0 - 0.01 }, 1e-15)
    H.assert_values(opt.state[p].step_size, { 0.012, 0.005, 0.01 }, 1e-15)
    H.assert_values(opt.state[p].prev, { 0.1, 0, 1.0 }, 0)
    -- ASGD: p = 1 * (1 - 1e-4 * 0.01) - 0.01 * 0.5; eta = 0.01 / (1 + 1e-6)^0.75
    local q = torch.tensor({ 1.0 }, { dtype = f64, requires_grad = true })
    local a = optim.ASGD({ q })
    q.grad = torch.tensor({ 0.5 }, { dtype = f64 })
    a:step()
    H.assert_values(q:detach(), { 0.999999 - 0.005 }, 1e-15)
    local s = a.state[q]
    assert.are.equal(1, s.step)
    H.close(s.eta, 0.01 / (1 + 1e-6) ^ 0.75, 1e-15)
    assert.are.equal(1, s.mu)
    H.assert_values(s.ax, { 0.999999 - 0.005 }, 1e-15)
  end)

  it('keep float32 state for float16 and bfloat16 parameters, and step as a number', function()
    for _, cname in ipairs(NAMES) do
      for _, dtype in ipairs { f16, bf16 } do
        local p = torch.ones(3, { dtype = dtype, requires_grad = true })
        local opt = optim[cname]({ p }, { lr = 0.1 })
        p.grad = torch.full({ 3 }, 0.5, { dtype = dtype })
        opt:step()
        assert.are.equal(dtype, p.dtype)
        for k, v in pairs(opt.state[p]) do
          if torch.is_tensor(v) then assert.are.equal(f32, v.dtype, cname .. ' ' .. k) end
        end
        assert.are.equal('number', type(opt.state[p].step))
        assert.is_true(p:detach():to(f64):totable()[1] < 1, cname)
      end
    end
  end)

  for _, cname in ipairs(NAMES) do
    it(cname .. ': a fresh optimizer loaded with the state continues exactly as the original', function()
      local o = CASES[cname][2]
      local pa = make_params(f64)
      local a = optim[cname](pa, o)
      for s = 1, 3 do set_grads(pa, s); a:step() end
      local pb = { pa[1]:detach():clone():requires_grad_(true), pa[2]:detach():clone():requires_grad_(true) }
      local b = optim[cname](pb, { lr = 123 })
      b:load_state_dict(a:state_dict())
      assert.are.equal(o.lr, b.param_groups[1].lr)
      assert.are.equal(a.param_groups[1].maximize, b.param_groups[1].maximize)
      for s = 4, NSTEPS do
        set_grads(pa, s); a:step()
        set_grads(pb, s); b:step()
        for j = 1, 2 do assert.is_true(pa[j]:equal(pb[j]), cname .. ' step ' .. s .. ' param ' .. j) end
      end
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

  it("ASGD loads PyTorch's form of the state (step, eta and mu as scalar tensors)", function()
    local o = CASES.ASGD[2]
    local pa = make_params(f64)
    local a = optim.ASGD(pa, o)
    for s = 1, 4 do set_grads(pa, s); a:step() end
    local sd = a:state_dict()
    for _, st in pairs(sd.state) do
      st.step = torch.tensor(st.step, { dtype = f32 })
      st.eta = torch.tensor(st.eta, { dtype = f64 })
      st.mu = torch.tensor(st.mu, { dtype = f64 })
    end
    local pb = { pa[1]:detach():clone():requires_grad_(true), pa[2]:detach():clone():requires_grad_(true) }
    local b = optim.ASGD(pb, o)
    b:load_state_dict(sd)
    for s = 5, 7 do
      set_grads(pa, s); a:step()
      set_grads(pb, s); b:step()
      for j = 1, 2 do assert.is_true(pa[j]:equal(pb[j]), 'step ' .. s .. ' param ' .. j) end
    end
    assert.are.equal('number', type(b.state[pb[1]].eta))
    assert.are.equal(7, b.state[pb[2]].step)
  end)

  it('parameters without a gradient are left alone, and step(closure) returns the loss', function()
    for _, cname in ipairs(NAMES) do
      local ps = make_params(f64)
      local opt = optim[cname](ps, { lr = 0.1 })
      local loss = opt:step(function()
        opt:zero_grad()
        local l = (ps[2] * ps[2]):sum()
        l:backward()
        return l
      end)
      H.close(loss:item(), 1 + 0.25 + 0.0625 + 9, 1e-15)
      H.assert_values(ps[1]:detach(), P1, 0, cname)
      assert.is_nil(opt.state[ps[1]], cname)
      local moved = ps[2]:detach():totable()
      for k = 1, 4 do assert.is_true(math.abs(moved[k]) < math.abs(P2[k]), cname) end
    end
  end)

  it('take the defaults of PyTorch 1.13, and raise its errors', function()
    local q = { torch.zeros(1, { requires_grad = true }) }
    local g = optim.Rprop(q).param_groups[1]
    assert.are.same({ 1e-2, { 0.5, 1.2 }, { 1e-6, 50 }, false }, { g.lr, g.etas, g.step_sizes, g.maximize })
    g = optim.ASGD(q).param_groups[1]
    assert.are.same({ 1e-2, 1e-4, 0.75, 1e6, 0, false }, { g.lr, g.lambd, g.alpha, g.t0, g.weight_decay, g.maximize })
    assert.are.equal(0.25, optim.Rprop(q, 0.25).param_groups[1].lr)
    H.raises(function() optim.Rprop(q, { lr = -1 }) end, 'Rprop: Invalid learning rate: -1')
    H.raises(function() optim.Rprop(q, { etas = { 1.5, 1.2 } }) end, 'Rprop: Invalid eta values: 1.5, 1.2')
    H.raises(function() optim.Rprop(q, { etas = { 0.5, 0.9 } }) end, 'Rprop: Invalid eta values: 0.5, 0.9')
    H.raises(function() optim.Rprop(q, { etas = 0.5 }) end, 'Rprop: etas must be a pair')
    H.raises(function() optim.Rprop(q, { weight_decay = 0.1 }) end, "Rprop: unknown option 'weight_decay'")
    H.raises(function() optim.ASGD(q, { lr = -1 }) end, 'ASGD: Invalid learning rate: -1')
    H.raises(function() optim.ASGD(q, { weight_decay = -1 }) end, 'ASGD: Invalid weight_decay value: -1')
    H.raises(function() optim.ASGD(q, { betas = { 0.9, 0.99 } }) end, "ASGD: unknown option 'betas'")
    -- the groups' etas are copies
    local e = { 0.4, 1.3 }
    local r = optim.Rprop(q, { etas = e })
    assert.is_false(rawequal(e, r.param_groups[1].etas))
  end)
end)

-- ---- LBFGS ----
-- a plain-Lua port of PyTorch 1.13's LBFGS over a flat array x, with f_and_g(x) -> f, g (array)

local function vdot(a, b)
  local s = 0
  for i = 1, #a do s = s + a[i] * b[i] end
  return s
end
local function vcopy(a)
  local c = {}
  for i = 1, #a do c[i] = a[i] end
  return c
end
local function vscale(a, s)
  local c = {}
  for i = 1, #a do c[i] = a[i] * s end
  return c
end
local function vaxpy_(a, s, b) -- a += s * b
  for i = 1, #a do a[i] = a[i] + s * b[i] end
  return a
end
local function vabsmax(a)
  local m = 0
  for i = 1, #a do m = math.max(m, math.abs(a[i])) end
  return m
end
local function vabssum(a)
  local s = 0
  for i = 1, #a do s = s + math.abs(a[i]) end
  return s
end

local function ref_cubic(x1, f1, g1, x2, f2, g2, lo, hi)
  if lo == nil then
    if x1 <= x2 then lo, hi = x1, x2 else lo, hi = x2, x1 end
  end
  local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
  local d2sq = d1 * d1 - g1 * g2
  if d2sq >= 0 then
    local d2 = math.sqrt(d2sq)
    local m
    if x1 <= x2 then
      m = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else
      m = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    end
    return math.min(math.max(m, lo), hi)
  end
  return (lo + hi) / 2
end

-- PyTorch's _strong_wolfe; obj(t) -> f, g at x + t d
local function ref_wolfe(obj, t, d, f, g, gtd)
  local c1, c2, tol, max_ls = 1e-4, 0.9, 1e-9, 25
  local d_norm = vabsmax(d)
  local f_new, g_new = obj(t)
  local evals = 1
  local gtd_new = vdot(g_new, d)
  local t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
  local done, ls_iter = false, 0
  local br, bf, bg, bgtd
  while ls_iter < max_ls do
    if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev) then
      br, bf, bg, bgtd = { t_prev, t }, { f_prev, f_new }, { g_prev, g_new }, { gtd_prev, gtd_new }
      break
    end
    if math.abs(gtd_new) <= -c2 * gtd then
      br, bf, bg, done = { t }, { f_new }, { g_new }, true
      break
    end
    if gtd_new >= 0 then
      br, bf, bg, bgtd = { t_prev, t }, { f_prev, f_new }, { g_prev, g_new }, { gtd_prev, gtd_new }
      break
    end
    local tmp = t
    t = ref_cubic(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, t + 0.01 * (t - t_prev), t * 10)
    t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
    f_new, g_new = obj(t)
    evals = evals + 1
    gtd_new = vdot(g_new, d)
    ls_iter = ls_iter + 1
  end
  if ls_iter == max_ls then br, bf, bg = { 0, t }, { f, f_new }, { g, g_new } end
  local insuf = false
  local lo, hi = 1, 2
  if not (bf[1] <= bf[#bf]) then lo, hi = 2, 1 end
  while not done and ls_iter < max_ls do
    if math.abs(br[2] - br[1]) * d_norm < tol then break end
    t = ref_cubic(br[1], bf[1], bgtd[1], br[2], bf[2], bgtd[2])
    local bmax, bmin = math.max(br[1], br[2]), math.min(br[1], br[2])
    local eps = 0.1 * (bmax - bmin)
    if math.min(bmax - t, t - bmin) < eps then
      if insuf or t >= bmax or t <= bmin then
        if math.abs(t - bmax) < math.abs(t - bmin) then t = bmax - eps else t = bmin + eps end
        insuf = false
      else
        insuf = true
      end
    else
      insuf = false
    end
    f_new, g_new = obj(t)
    evals = evals + 1
    gtd_new = vdot(g_new, d)
    ls_iter = ls_iter + 1
    if f_new > f + c1 * t * gtd or f_new >= bf[lo] then
      br[hi], bf[hi], bg[hi], bgtd[hi] = t, f_new, g_new, gtd_new
      if bf[1] <= bf[2] then lo, hi = 1, 2 else lo, hi = 2, 1 end
    else
      if math.abs(gtd_new) <= -c2 * gtd then
        done = true
      elseif gtd_new * (br[hi] - br[lo]) >= 0 then
        br[hi], bf[hi], bg[hi], bgtd[hi] = br[lo], bf[lo], bg[lo], bgtd[lo]
      end
      br[lo], bf[lo], bg[lo], bgtd[lo] = t, f_new, g_new, gtd_new
    end
  end
  return bf[lo], bg[lo], br[lo], evals
end

-- one step(closure) of PyTorch's LBFGS on x (updated in place); st persists between calls
local function ref_lbfgs_step(x, f_and_g, st, o)
  local lr, max_iter = o.lr or 1, o.max_iter or 20
  local max_eval = o.max_eval or max_iter * 5 // 4
  local tol_grad, tol_change = o.tolerance_grad or 1e-7, o.tolerance_change or 1e-9
  local history = o.history_size or 100
  st.func_evals, st.n_iter = st.func_evals or 0, st.n_iter or 0
  local orig_loss, flat_grad = f_and_g(x)
  local loss = orig_loss
  local current_evals = 1
  st.func_evals = st.func_evals + 1
  if vabsmax(flat_grad) <= tol_grad then return orig_loss end
  local d, t, dirs, stps, ro, H_diag, prev_g, prev_loss = st.d, st.t, st.dirs, st.stps, st.ro, st.H_diag, st.prev_g,
    st.prev_loss
  local n_iter = 0
  while n_iter < max_iter do
    n_iter = n_iter + 1
    st.n_iter = st.n_iter + 1
    if st.n_iter == 1 then
      d = vscale(flat_grad, -1)
      dirs, stps, ro, H_diag = {}, {}, {}, 1
    else
      local y = vaxpy_(vcopy(flat_grad), -1, prev_g)
      local s = vscale(d, t)
      local ys = vdot(y, s)
      if ys > 1e-10 then
        if #dirs == history then
          table.remove(dirs, 1); table.remove(stps, 1); table.remove(ro, 1)
        end
        dirs[#dirs + 1], stps[#stps + 1], ro[#ro + 1] = y, s, 1 / ys
        H_diag = ys / vdot(y, y)
      end
      local al = {}
      local q = vscale(flat_grad, -1)
      for i = #dirs, 1, -1 do
        al[i] = vdot(stps[i], q) * ro[i]
        vaxpy_(q, -al[i], dirs[i])
      end
      d = vscale(q, H_diag)
      for i = 1, #dirs do
        local be = vdot(dirs[i], d) * ro[i]
        vaxpy_(d, al[i] - be, stps[i])
      end
    end
    prev_g, prev_loss = vcopy(flat_grad), loss
    if st.n_iter == 1 then t = math.min(1, 1 / vabssum(flat_grad)) * lr else t = lr end
    local gtd = vdot(flat_grad, d)
    if gtd > -tol_change then break end
    local evals = 0
    local opt_cond = false
    if o.line_search_fn then
      local function obj(step)
        local xt = vaxpy_(vcopy(x), step, d)
        return f_and_g(xt)
      end
      loss, flat_grad, t, evals = ref_wolfe(obj, t, d, loss, flat_grad, gtd)
      vaxpy_(x, t, d)
      opt_cond = vabsmax(flat_grad) <= tol_grad
    else
      vaxpy_(x, t, d)
      if n_iter ~= max_iter then
        loss, flat_grad = f_and_g(x)
        opt_cond = vabsmax(flat_grad) <= tol_grad
        evals = 1
      end
    end
    current_evals = current_evals + evals
    st.func_evals = st.func_evals + evals
    if n_iter == max_iter or current_evals >= max_eval or opt_cond then break end
    if vabsmax(vscale(d, t)) <= tol_change then break end
    if math.abs(loss - prev_loss) < tol_change then break end
  end
  st.d, st.t, st.dirs, st.stps, st.ro, st.H_diag, st.prev_g, st.prev_loss = d, t, dirs, stps, ro, H_diag, prev_g,
    prev_loss
  return orig_loss
end

-- the extended Rosenbrock function of x (array) and its gradient
local function rosen(x)
  local f, g = 0, {}
  for i = 1, #x do g[i] = 0 end
  for i = 1, #x - 1 do
    local a, b = x[i], x[i + 1]
    f = f + 100 * (b - a * a) ^ 2 + (1 - a) ^ 2
    g[i] = g[i] - 400 * a * (b - a * a) - 2 * (1 - a)
    g[i + 1] = g[i + 1] + 200 * (b - a * a)
  end
  return f, g
end

-- the same of a 1-D tensor
local function rosen_t(x)
  local n = x:size(1)
  local a, b = x:narrow(1, 1, n - 1), x:narrow(1, 2, n - 1)
  return ((b - a * a) ^ 2 * 100 + (1 - a) ^ 2):sum()
end

local X0 = { -1.2, 1.0, -0.5, 0.8 }

-- the parameters: a 3-vector and a 1x1 matrix, which together are X0
local function rosen_params()
  return { torch.tensor({ X0[1], X0[2], X0[3] }, { dtype = f64, requires_grad = true }),
    torch.tensor({ { X0[4] } }, { dtype = f64, requires_grad = true }) }
end

local function rosen_closure(opt, ps)
  return function()
    opt:zero_grad()
    local loss = rosen_t(torch.cat({ ps[1], ps[2]:reshape(-1) }))
    loss:backward()
    return loss
  end
end

local function flat(ps)
  return H.flatten({ ps[1]:detach():totable(), H.flatten(ps[2]:detach():totable()) })
end

describe('LBFGS', function()
  local LCASES = {
    { lr = 1, max_iter = 5, history_size = 3 },
    { lr = 0.5, max_iter = 6, history_size = 10, max_eval = 4 },
    { max_iter = 8, history_size = 4, line_search_fn = 'strong_wolfe' },
    { max_iter = 6, line_search_fn = 'strong_wolfe' },
  }
  for _, o in ipairs(LCASES) do
    it('reaches the iterates of a plain-Lua port on the Rosenbrock function (' .. describe_opts(o) .. ')', function()
      local ps = rosen_params()
      local opt = optim.LBFGS(ps, o)
      local closure = rosen_closure(opt, ps)
      local x, st = vcopy(X0), {}
      local f0 = rosen(X0)
      for call = 1, 4 do
        local loss = opt:step(closure)
        local ref_loss = ref_lbfgs_step(x, rosen, st, o)
        local what = ('step %d'):format(call)
        -- the same decisions (the counts are equal); the values differ by rounding (the gradients of
        -- autograd against the formula's), which the Rosenbrock valley amplifies to ~1e-8 in 26 iterations
        H.close(loss:item(), ref_loss, 1e-6, what .. ' loss')
        H.assert_values(torch.tensor(flat(ps), { dtype = f64 }), x, 1e-6, what)
        local s = opt.state[ps[1]]
        assert.are.equal(st.func_evals, s.func_evals, what .. ' func_evals')
        assert.are.equal(st.n_iter, s.n_iter, what .. ' n_iter')
        assert.are.equal(#st.dirs, #s.old_dirs, what .. ' history')
        H.close(s.t, st.t, 1e-6, what .. ' t')
        H.close(s.H_diag, st.H_diag, 1e-6, what .. ' H_diag')
      end
      -- it made progress, and the history was cut to its size
      assert.is_true(rosen(x) < f0 / 10)
      assert.is_true(#st.dirs <= (o.history_size or 100))
    end)
  end

  it('the history is shifted when full', function()
    local ps = rosen_params()
    local opt = optim.LBFGS(ps, { max_iter = 12, history_size = 2, line_search_fn = 'strong_wolfe' })
    opt:step(rosen_closure(opt, ps))
    local s = opt.state[ps[1]]
    assert.are.equal(2, #s.old_dirs)
    assert.are.equal(2, #s.old_stps)
    assert.are.equal(2, #s.ro)
  end)

  -- f(x) = 0.5 x'Ax - b'x with A symmetric positive definite: the minimum solves Ax = b
  local N = 6
  local A, B = {}, {}
  for i = 1, N do
    A[i] = {}
    B[i] = math.cos(i)
  end
  for i = 1, N do
    for j = 1, N do
      local s = 0
      for k = 1, N do s = s + math.sin(i * k + 0.3) * math.sin(j * k + 0.3) end
      A[i][j] = s + (i == j and 1 or 0)
    end
  end
  local function residual(x) -- |Ax - b|_inf, in Lua
    local r = 0
    for i = 1, N do
      local s = -B[i]
      for j = 1, N do s = s + A[i][j] * x[j] end
      r = math.max(r, math.abs(s))
    end
    return r
  end

  for _, ls in ipairs { false, true } do
    it('converges on a quadratic' .. (ls and ' with the strong-Wolfe line search' or ''), function()
      local x = torch.zeros(N, { dtype = f64, requires_grad = true })
      local At, bt = torch.tensor(A, { dtype = f64 }), torch.tensor(B, { dtype = f64 })
      local opt = optim.LBFGS({ x }, { line_search_fn = ls and 'strong_wolfe' or nil, tolerance_grad = 1e-12,
        tolerance_change = 1e-14 })
      local function closure()
        opt:zero_grad()
        local loss = 0.5 * x:dot(At:mv(x)) - bt:dot(x)
        loss:backward()
        return loss
      end
      assert.is_true(residual(x:detach():totable()) > 0.5)
      -- (PyTorch's takes 20 iterations to 1.8e-7 on this problem, then stalls near 1.5e-7 where the
      -- loss changes by less than tolerance_change)
      for _ = 1, 3 do opt:step(closure) end
      assert.is_true(residual(x:detach():totable()) < 1e-6, 'residual ' .. residual(x:detach():totable()))
    end)
  end

  it('returns at once when the gradient is below tolerance_grad', function()
    local x = torch.ones(3, { dtype = f64, requires_grad = true })
    local opt = optim.LBFGS({ x })
    local calls = 0
    local loss = opt:step(function()
      calls = calls + 1
      opt:zero_grad()
      local l = ((x - 1) ^ 2):sum()
      l:backward()
      return l
    end)
    assert.are.equal(0, loss:item())
    assert.are.equal(1, calls)
    assert.are.equal(1, opt.state[x].func_evals)
    assert.are.equal(0, opt.state[x].n_iter)
  end)

  it('a fresh optimizer loaded with the state continues exactly as the original', function()
    for _, o in ipairs { { max_iter = 4, history_size = 3 }, { max_iter = 4, line_search_fn = 'strong_wolfe' } } do
      local pa = rosen_params()
      local a = optim.LBFGS(pa, o)
      a:step(rosen_closure(a, pa))
      local sd = a:state_dict()
      local pb = { pa[1]:detach():clone():requires_grad_(true), pa[2]:detach():clone():requires_grad_(true) }
      local b = optim.LBFGS(pb, { lr = 7 })
      b:load_state_dict(sd)
      assert.are.equal(1, b.param_groups[1].lr)
      assert.are.equal(o.line_search_fn, b.param_groups[1].line_search_fn)
      for _ = 1, 3 do
        a:step(rosen_closure(a, pa))
        b:step(rosen_closure(b, pb))
        for j = 1, 2 do assert.is_true(pa[j]:equal(pb[j]), describe_opts(o) .. ' param ' .. j) end
      end
      -- the state dict taken after the first step kept its history
      assert.are.equal(4, sd.state[1].n_iter)
      assert.is_true(#sd.state[1].old_dirs <= 3)
      assert.are.equal(a.state[pa[1]].func_evals, b.state[pb[1]].func_evals)
    end
  end)

  it('defaults and errors', function()
    local q = { torch.zeros(1, { requires_grad = true }) }
    local g = optim.LBFGS(q).param_groups[1]
    assert.are.same({ 1, 20, 25, 1e-7, 1e-9, 100 },
      { g.lr, g.max_iter, g.max_eval, g.tolerance_grad, g.tolerance_change, g.history_size })
    assert.is_nil(g.line_search_fn)
    assert.are.equal(12, optim.LBFGS(q, { max_iter = 10 }).param_groups[1].max_eval)
    H.raises(function() optim.LBFGS({ { params = q }, { params = { torch.zeros(1, { requires_grad = true }) } } }) end,
      "LBFGS doesn't support per-parameter options (parameter groups)")
    H.raises(function() optim.LBFGS(q, { line_search_fn = 'armijo' }) end,
      "LBFGS: only 'strong_wolfe' is supported as line_search_fn, got armijo")
    H.raises(function() optim.LBFGS(q, { momentum = 0.9 }) end, "LBFGS: unknown option 'momentum'")
    H.raises(function() optim.LBFGS(q, { max_iter = 0 }) end, 'LBFGS: max_iter must be a positive integer')
    H.raises(function() optim.LBFGS(q):step() end, 'LBFGS: step requires a closure')
    local opt = optim.LBFGS(q)
    H.raises(function() opt:step(function() return 'x' end) end, 'LBFGS: the closure must return the loss')
  end)
end)

-- ---- swa_utils ----

describe('swa_utils.AveragedModel', function()
  local swa = optim.swa_utils

  local function net()
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)):double()
  end

  -- new values for every parameter (and buffer) of m, from step s
  local function perturb(m, s)
    torch.no_grad(function()
      local k = 0
      for _, t in ipairs(m:parameters()) do
        k = k + 1
        local n = t:numel()
        local v = {}
        for i = 1, n do v[i] = math.sin(s * 1.7 + k * 0.9 + i * 0.31) end
        t:copy_(torch.tensor(v, { dtype = f64 }):view(t.shape))
      end
      for _, t in ipairs(m:buffers()) do
        if t:is_floating_point() then t:add_(s * 0.25) else t:add_(s) end
      end
    end)
  end

  it('is a deep copy whose parameters are the running means of the updates', function()
    local m = net()
    local avg = swa.AveragedModel(m)
    local mp, ap = m:parameters(), avg:parameters()
    assert.are.equal(#mp, #ap)
    assert.are.equal(0, avg.n_averaged:item())
    assert.are.equal(torch.int64, avg.n_averaged.dtype)
    for i = 1, #mp do
      assert.is_false(rawequal(mp[i], ap[i]))
      assert.is_true(mp[i]:equal(ap[i]))
      assert.is_true(ap[i].requires_grad and ap[i].is_leaf)
      assert.is_true(nn.parameter.is_parameter(ap[i]))
    end
    -- the running means, in Lua
    local sums = {}
    for i = 1, #mp do sums[i] = {} end
    local buffers0 = {}
    for i, b in ipairs(avg.module:buffers()) do buffers0[i] = H.flatten(b:totable()) end
    for s = 1, 5 do
      perturb(m, s)
      avg:update_parameters(m)
      assert.are.equal(s, avg.n_averaged:item())
      for i, p in ipairs(mp) do
        local v = H.flatten(p:detach():totable())
        for e = 1, #v do sums[i][e] = (sums[i][e] or 0) + v[e] end
        local mean = {}
        for e = 1, #v do mean[e] = sums[i][e] / s end
        H.assert_values(ap[i]:detach(), mean, 1e-14, ('update %d parameter %d'):format(s, i))
      end
    end
    -- the buffers were not averaged (use_buffers = false)
    for i, b in ipairs(avg.module:buffers()) do H.assert_values(b, buffers0[i], 0, 'buffer ' .. i) end
    -- forward is the copy's
    local x = torch.randn(5, 3, { dtype = f64 })
    avg:eval()
    assert.is_true(avg(x):equal(avg.module(x)))
    -- the state dict has the copy under module. and n_averaged
    local sd = avg:state_dict()
    assert.is_not_nil(sd['module.1.weight'])
    assert.are.equal(5, sd.n_averaged:item())
  end)

  it('averages the buffers too with use_buffers, and takes avg_fn', function()
    local m = net()
    local avg = swa.AveragedModel(m, { use_buffers = true })
    local ema = swa.AveragedModel(m, {
      avg_fn = function(a, cur, n)
        assert.is_true(torch.is_tensor(n))
        return a * 0.75 + cur * 0.25
      end,
    })
    local mine = {}
    for i, t in ipairs(m:parameters()) do mine[i] = t end
    for _, t in ipairs(m:buffers()) do mine[#mine + 1] = t end
    local sums, emas = {}, {}
    for s = 1, 4 do
      perturb(m, s)
      avg:update_parameters(m)
      ema:update_parameters(m)
      local theirs = {}
      for i, t in ipairs(avg.module:parameters()) do theirs[i] = t end
      for _, t in ipairs(avg.module:buffers()) do theirs[#theirs + 1] = t end
      for i, t in ipairs(mine) do
        local v = H.flatten(t:detach():totable())
        sums[i] = sums[i] or {}
        local want = {}
        for e = 1, #v do
          if s == 1 then
            sums[i][e] = v[e]
          elseif t:is_floating_point() then
            sums[i][e] = sums[i][e] + (v[e] - sums[i][e]) / s
          else -- num_batches_tracked: the int64 buffer keeps the truncated mean
            local mean = sums[i][e] + (v[e] - sums[i][e]) / s
            sums[i][e] = mean >= 0 and math.floor(mean) or math.ceil(mean)
          end
          want[e] = sums[i][e]
        end
        H.assert_values(theirs[i]:detach(), want, 1e-14, ('use_buffers update %d tensor %d'):format(s, i))
      end
      for i, p in ipairs(ema:parameters()) do
        local v = H.flatten(mine[i]:detach():totable())
        emas[i] = emas[i] or {}
        for e = 1, #v do emas[i][e] = s == 1 and v[e] or emas[i][e] * 0.75 + v[e] * 0.25 end
        H.assert_values(p:detach(), emas[i], 1e-14, ('ema update %d parameter %d'):format(s, i))
      end
    end
  end)

  it('puts the copy on a device, and copies the forward hooks', function()
    local m = nn.Linear(2, 2)
    local calls = 0
    m:register_forward_hook(function() calls = calls + 1 end)
    local avg = swa.AveragedModel(m, 'cpu:1')
    assert.are.equal('cpu:1', tostring(avg.module.weight.device))
    assert.are.equal('cpu:0', tostring(m.weight.device))
    avg:update_parameters(m)
    assert.is_true(avg.module.weight:to('cpu'):equal(m.weight))
    avg(torch.ones(1, 2, { device = 'cpu:1' }))
    assert.are.equal(1, calls)
    -- the original is left alone by the copy's updates
    torch.no_grad(function() avg.module.weight:fill_(5) end)
    assert.is_false(m.weight:eq(5):any():item())
    H.raises(function() swa.AveragedModel(m, { decay = 0.9 }) end, "AveragedModel: unknown option 'decay'")
    H.raises(function() swa.AveragedModel(42) end, 'AveragedModel: expected a module')
  end)
end)

describe('swa_utils.SWALR', function()
  local swa = optim.swa_utils

  local function closed_form(lr0, swa_lr, step, epochs, strategy)
    if epochs == 0 then step = math.max(1, step) end
    local t = math.max(0, math.min(1, step / math.max(1, epochs)))
    local a = strategy == 'linear' and t or (1 - math.cos(math.pi * t)) / 2
    return swa_lr * a + lr0 * (1 - a)
  end

  for _, strategy in ipairs { 'cos', 'linear' } do
    for _, epochs in ipairs { 0, 1, 5 } do
      it(('anneals to swa_lr (%s, anneal_epochs = %d)'):format(strategy, epochs), function()
        local a, b = torch.zeros(1, { requires_grad = true }), torch.zeros(1, { requires_grad = true })
        local opt = optim.SGD({ { params = { a } }, { params = { b }, lr = 0.2 } }, { lr = 0.5, momentum = 0.9 })
        local sched = swa.SWALR(opt, { 0.05, 0.01 }, { anneal_epochs = epochs, anneal_strategy = strategy })
        local lr0, swa_lrs = { 0.5, 0.2 }, { 0.05, 0.01 }
        for step = 0, 9 do
          if step > 0 then
            opt:step()
            sched:step()
          end
          local got = sched:get_last_lr()
          for i = 1, 2 do
            H.close(got[i], closed_form(lr0[i], swa_lrs[i], step, epochs, strategy), 1e-12,
              ('step %d group %d'):format(step, i))
            assert.are.equal(got[i], opt.param_groups[i].lr)
          end
        end
        assert.are.equal(0.05, opt.param_groups[1].swa_lr)
      end)
    end
  end

  it('takes swa_lr in the options, keeps its state, and raises PyTorch\'s errors', function()
    local a = torch.zeros(1, { requires_grad = true })
    local opt = optim.SGD({ a }, { lr = 1 })
    local sched = swa.SWALR(opt, { swa_lr = 0.1, anneal_epochs = 4, anneal_strategy = 'linear' })
    sched:step()
    H.close(opt.param_groups[1].lr, 0.75 + 0.025, 1e-15)
    local sd = sched:state_dict()
    assert.are.equal(4, sd.anneal_epochs)
    assert.are.equal('linear', sd.anneal_strategy)
    assert.is_nil(sd.optimizer)
    H.raises(function() swa.SWALR(opt, 0.1, { anneal_strategy = 'exp' }) end,
      "SWALR: anneal_strategy must by one of 'cos' or 'linear', instead got exp")
    H.raises(function() swa.SWALR(opt, 0.1, { anneal_epochs = -1 }) end,
      'SWALR: anneal_epochs must be equal or greater than 0, got -1')
    H.raises(function() swa.SWALR(opt, 0.1, { anneal_epochs = 2.5 }) end, 'SWALR: anneal_epochs must be')
    H.raises(function() swa.SWALR(opt, { 0.1, 0.2 }) end,
      'SWALR: swa_lr must have the same length as optimizer.param_groups: swa_lr has 2, optimizer.param_groups has 1')
    H.raises(function() swa.SWALR(opt, 0.1, { gamma = 2 }) end, "SWALR: unknown option 'gamma'")
  end)
end)

describe('swa_utils.update_bn', function()
  local swa = optim.swa_utils

  -- 20 samples of 3 features, each feature with its own mean and spread
  local X = {}
  for i = 1, 20 do
    X[i] = {}
    for j = 1, 3 do X[i][j] = j + math.sin(i * 1.1 + j * 2.3) * j end
  end

  local function column_stats(rows, first, last)
    local mean, var = {}, {}
    local n = last - first + 1
    for j = 1, 3 do
      local s = 0
      for i = first, last do s = s + rows[i][j] end
      mean[j] = s / n
      local q = 0
      for i = first, last do q = q + (rows[i][j] - mean[j]) ^ 2 end
      var[j] = q / (n - 1)
    end
    return mean, var
  end

  local function model()
    local bn = nn.BatchNorm1d(3):double()
    local cumulative = nn.BatchNorm1d(3, { momentum = false }):double()
    local m = nn.Sequential(bn, nn.Linear(3, 3):double(), cumulative)
    -- stale statistics, to be reset
    torch.no_grad(function()
      bn.running_mean:fill_(7)
      bn.running_var:fill_(9)
      bn.num_batches_tracked:fill_(100)
    end)
    return m, bn, cumulative
  end

  it('recomputes the statistics over one pass of a DataLoader as cumulative averages', function()
    local m, bn, cumulative = model()
    m:eval()
    local x = torch.tensor(X, { dtype = f64 })
    local ds = torch.data.TensorDataset(x, torch.zeros(20))
    local loader = torch.data.DataLoader(ds, { batch_size = 5 })
    swa.update_bn(loader, m)
    -- four batches of 5: the mean of the batch means is the mean of the data; the running variance
    -- is the mean of the batches' unbiased variances
    local mean = column_stats(X, 1, 20)
    local var = { 0, 0, 0 }
    for k = 0, 3 do
      local _, v = column_stats(X, 5 * k + 1, 5 * k + 5)
      for j = 1, 3 do var[j] = var[j] + v[j] / 4 end
    end
    H.assert_values(bn.running_mean, mean, 1e-13)
    H.assert_values(bn.running_var, var, 1e-13)
    assert.are.equal(4, bn.num_batches_tracked:item())
    -- the momenta and the mode are restored
    assert.are.equal(0.1, bn.momentum)
    assert.is_nil(cumulative.momentum)
    assert.is_false(m.training)
    assert.is_false(bn.training)
  end)

  it('over one batch gives the statistics of the whole data; arrays of batches and tables work', function()
    local m, bn = model()
    local x = torch.tensor(X, { dtype = f64 })
    swa.update_bn({ { x, 'label' } }, m)
    local mean, var = column_stats(X, 1, 20)
    H.assert_values(bn.running_mean, mean, 1e-13)
    H.assert_values(bn.running_var, var, 1e-13)
    assert.are.equal(1, bn.num_batches_tracked:item())
    assert.is_true(m.training)
    -- an iterator function; to a device
    local m2, bn2 = model()
    m2:to('cpu:1')
    local batches = { x:narrow(1, 1, 10), x:narrow(1, 11, 10) }
    local i = 0
    swa.update_bn(function()
      i = i + 1
      return batches[i]
    end, m2, 'cpu:1')
    H.assert_values(bn2.running_mean:to('cpu'), mean, 1e-13)
    assert.are.equal(2, bn2.num_batches_tracked:item())
    -- a model without BatchNorm is left alone
    local lin = nn.Linear(3, 1)
    swa.update_bn({ x:float() }, lin)
  end)
end)
