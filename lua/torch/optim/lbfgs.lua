-- torch.optim.LBFGS(params, {lr = 1, max_iter = 20, max_eval = max_iter * 5 // 4, tolerance_grad = 1e-7,
-- tolerance_change = 1e-9, history_size = 100, line_search_fn = nil | 'strong_wolfe'}): limited-memory
-- BFGS, a port of PyTorch 1.13's (itself after minFunc and Torch7's optim.lbfgs):
-- opt:step(closure) calls closure() (which zeroes the gradients, computes the loss, calls backward and
-- returns the loss) up to max_eval times and makes up to max_iter iterations; it returns the first
-- loss. Each iteration takes the direction of the two-loop recursion over the last history_size
-- pairs (y = change of gradient, s = step; a pair is kept when y.s > 1e-10), scaled by
-- H_diag = y.s / y.y; the step length is lr (min(1, 1 / |g|_1) * lr at the very first iteration),
-- or the one found by the strong-Wolfe line search (c1 = 1e-4, c2 = 0.9, 25 evaluations at most,
-- cubic interpolation, as PyTorch's _strong_wolfe). It stops when |g|_inf <= tolerance_grad, the
-- directional derivative is above -tolerance_change, the step or the change of the loss is below
-- tolerance_change, or max_iter / max_eval is reached.
-- One parameter group only (as PyTorch); the parameters are handled as one flat vector (all on one
-- device). The state lives under the first parameter, as PyTorch's: func_evals, n_iter, d, t,
-- old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss (scalars are Lua numbers where PyTorch
-- has 0-dim tensors; PyTorch's scratch list `al` is not kept).
local torch = require 'torch'
local Optimizer = require 'torch.optim.optimizer'
local as_int = require('torch.composite').as_int

local LBFGS = Optimizer:extend('LBFGS')

local defaults = { lr = 1, max_iter = 20, tolerance_grad = 1e-7, tolerance_change = 1e-9, history_size = 100 }
local optional = { max_eval = true, line_search_fn = true }

function LBFGS:init(params, opts)
  if type(opts) == 'number' then opts = { lr = opts } end
  if opts ~= nil and type(opts) ~= 'table' then error('LBFGS: expected an options table, got ' .. type(opts)) end
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do
    if defaults[k] == nil and not optional[k] then error("LBFGS: unknown option '" .. tostring(k) .. "'") end
    o[k] = v
  end
  for _, k in ipairs { 'lr', 'tolerance_grad', 'tolerance_change' } do
    if type(o[k]) ~= 'number' then error(('LBFGS: %s must be a number, got %s'):format(k, tostring(o[k]))) end
  end
  for _, k in ipairs { 'max_iter', 'history_size' } do
    o[k] = as_int(o[k])
    if math.type(o[k]) ~= 'integer' or o[k] < 1 then
      error(('LBFGS: %s must be a positive integer, got %s'):format(k, tostring(o[k])))
    end
  end
  if o.max_eval == nil then o.max_eval = o.max_iter * 5 // 4 end
  if type(o.max_eval) ~= 'number' then error('LBFGS: max_eval must be a number, got ' .. tostring(o.max_eval)) end
  if o.line_search_fn ~= nil and o.line_search_fn ~= 'strong_wolfe' then
    error("LBFGS: only 'strong_wolfe' is supported as line_search_fn, got " .. tostring(o.line_search_fn))
  end
  Optimizer.init(self, params, o)
  if #self.param_groups ~= 1 then error("LBFGS doesn't support per-parameter options (parameter groups)") end
end

-- ---- the parameters as one flat vector ----
local function params_of(self) return self.param_groups[1].params end

local function gather_flat_grad(params)
  local views = {}
  for i, p in ipairs(params) do
    local g = p.grad
    if g == nil then
      views[i] = torch.zeros(p:numel(), { dtype = p.dtype, device = p.device })
    else
      views[i] = g:reshape(-1)
    end
  end
  return torch.cat(views, 1)
end

-- p += step_size * (p's slice of update)
local function add_grad(params, step_size, update)
  local offset = 0
  for _, p in ipairs(params) do
    local n = p:numel()
    p:add_(update:narrow(1, offset + 1, n):view(p.shape), { alpha = step_size })
    offset = offset + n
  end
end

local function clone_params(params)
  local c = {}
  for i, p in ipairs(params) do c[i] = p:clone() end
  return c
end

local function set_params(params, values)
  for i, p in ipairs(params) do p:copy_(values[i]) end
end

local function number(v)
  if torch.is_tensor(v) then return v:item() end
  if type(v) ~= 'number' then error('LBFGS: the closure must return the loss (a tensor or a number), got ' .. type(v)) end
  return v
end

local function absmax(t) return t:abs():max():item() end
local function dot(a, b) return a:dot(b):item() end

-- ---- the strong-Wolfe line search (PyTorch's _cubic_interpolate and _strong_wolfe) ----
-- the minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), within bounds
local function cubic_interpolate(x1, f1, g1, x2, f2, g2, xmin_bound, xmax_bound)
  if xmin_bound == nil then
    if x1 <= x2 then xmin_bound, xmax_bound = x1, x2 else xmin_bound, xmax_bound = x2, x1 end
  end
  local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
  local d2_square = d1 * d1 - g1 * g2
  if d2_square >= 0 then
    local d2 = math.sqrt(d2_square)
    local min_pos
    if x1 <= x2 then
      min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else
      min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    end
    return math.min(math.max(min_pos, xmin_bound), xmax_bound)
  end
  return (xmin_bound + xmax_bound) / 2
end
LBFGS._cubic_interpolate = cubic_interpolate

-- obj_func(x, t, d) -> loss, flat gradient at x + t d; returns f, g, t, the number of evaluations
local function strong_wolfe(obj_func, x, t, d, f, g, gtd, c1, c2, tolerance_change, max_ls)
  c1, c2, tolerance_change, max_ls = c1 or 1e-4, c2 or 0.9, tolerance_change or 1e-9, max_ls or 25
  local d_norm = absmax(d)
  g = g:clone()
  local f_new, g_new = obj_func(x, t, d)
  local ls_func_evals = 1
  local gtd_new = dot(g_new, d)

  -- bracket an interval containing a point satisfying the Wolfe criteria
  local t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
  local done = false
  local ls_iter = 0
  local bracket, bracket_f, bracket_g, bracket_gtd
  while ls_iter < max_ls do
    if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev) then
      bracket, bracket_f = { t_prev, t }, { f_prev, f_new }
      bracket_g, bracket_gtd = { g_prev, g_new:clone() }, { gtd_prev, gtd_new }
      break
    end
    if math.abs(gtd_new) <= -c2 * gtd then
      bracket, bracket_f, bracket_g = { t }, { f_new }, { g_new }
      done = true
      break
    end
    if gtd_new >= 0 then
      bracket, bracket_f = { t_prev, t }, { f_prev, f_new }
      bracket_g, bracket_gtd = { g_prev, g_new:clone() }, { gtd_prev, gtd_new }
      break
    end
    -- interpolate
    local min_step = t + 0.01 * (t - t_prev)
    local max_step = t * 10
    local tmp = t
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, min_step, max_step)
    -- next step
    t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new:clone(), gtd_new
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = ls_func_evals + 1
    gtd_new = dot(g_new, d)
    ls_iter = ls_iter + 1
  end
  -- reached the maximum number of iterations?
  if ls_iter == max_ls then
    bracket, bracket_f, bracket_g = { 0, t }, { f, f_new }, { g, g_new }
  end

  -- zoom phase: refine the bracket until a point satisfies the criteria
  local insuf_progress = false
  local low_pos, high_pos = 1, 2
  if not (bracket_f[1] <= bracket_f[#bracket_f]) then low_pos, high_pos = 2, 1 end
  while not done and ls_iter < max_ls do
    -- the bracket is too small
    if math.abs(bracket[2] - bracket[1]) * d_norm < tolerance_change then break end
    t = cubic_interpolate(bracket[1], bracket_f[1], bracket_gtd[1], bracket[2], bracket_f[2], bracket_gtd[2])
    -- a t too close to a boundary (or beyond it) after insufficient progress, or at a boundary, is
    -- moved to 0.1 of the bracket's length from the nearest boundary
    local bmax, bmin = math.max(bracket[1], bracket[2]), math.min(bracket[1], bracket[2])
    local eps = 0.1 * (bmax - bmin)
    if math.min(bmax - t, t - bmin) < eps then
      if insuf_progress or t >= bmax or t <= bmin then
        if math.abs(t - bmax) < math.abs(t - bmin) then t = bmax - eps else t = bmin + eps end
        insuf_progress = false
      else
        insuf_progress = true
      end
    else
      insuf_progress = false
    end
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = ls_func_evals + 1
    gtd_new = dot(g_new, d)
    ls_iter = ls_iter + 1

    if f_new > f + c1 * t * gtd or f_new >= bracket_f[low_pos] then
      -- Armijo condition not satisfied or not lower than the lowest point
      bracket[high_pos], bracket_f[high_pos] = t, f_new
      bracket_g[high_pos], bracket_gtd[high_pos] = g_new:clone(), gtd_new
      if bracket_f[1] <= bracket_f[2] then low_pos, high_pos = 1, 2 else low_pos, high_pos = 2, 1 end
    else
      if math.abs(gtd_new) <= -c2 * gtd then
        done = true -- the Wolfe conditions hold
      elseif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0 then
        -- the old high becomes the new low
        bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
        bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
      end
      -- the new point becomes the new low
      bracket[low_pos], bracket_f[low_pos] = t, f_new
      bracket_g[low_pos], bracket_gtd[low_pos] = g_new:clone(), gtd_new
    end
  end
  return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals
end
LBFGS._strong_wolfe = strong_wolfe

local function copy_list(l)
  local c = {}
  for i, v in ipairs(l or {}) do c[i] = v end
  return c
end

function LBFGS:step(closure)
  if type(closure) ~= 'function' and not (type(getmetatable(closure)) == 'table' and getmetatable(closure).__call) then
    error('LBFGS: step requires a closure that reevaluates the model and returns the loss')
  end
  if #self.param_groups ~= 1 then error("LBFGS doesn't support per-parameter options (parameter groups)") end
  local _ <close> = torch.no_grad()
  local group = self.param_groups[1]
  local params = params_of(self)
  local lr, max_iter, max_eval = group.lr, group.max_iter, group.max_eval
  local tolerance_grad, tolerance_change = group.tolerance_grad, group.tolerance_change
  local line_search_fn, history_size = group.line_search_fn, group.history_size
  local function eval() return Optimizer._closure(closure) end

  local state = self:_state(params[1])
  state.func_evals = state.func_evals or 0
  state.n_iter = state.n_iter or 0

  -- the initial f(x) and df/dx
  local orig_loss = eval()
  local loss = number(orig_loss)
  local current_evals = 1
  state.func_evals = state.func_evals + 1
  local flat_grad = gather_flat_grad(params)
  if absmax(flat_grad) <= tolerance_grad then return orig_loss end

  -- the state of the previous step (the lists copied: a state_dict taken before keeps its own)
  local d, t = state.d, state.t
  local old_dirs, old_stps, ro = copy_list(state.old_dirs), copy_list(state.old_stps), copy_list(state.ro)
  for i = 1, #ro do ro[i] = number(ro[i]) end
  local H_diag = state.H_diag ~= nil and number(state.H_diag) or nil
  if t ~= nil then t = number(t) end
  local prev_flat_grad, prev_loss = state.prev_flat_grad, state.prev_loss

  local n_iter = 0
  while n_iter < max_iter do
    n_iter = n_iter + 1
    state.n_iter = state.n_iter + 1

    -- the descent direction
    if state.n_iter == 1 then
      d = flat_grad:neg()
      old_dirs, old_stps, ro = {}, {}, {}
      H_diag = 1
    else
      -- update the memory
      local y = flat_grad:sub(prev_flat_grad)
      local s = d:mul(t)
      local ys = dot(y, s)
      if ys > 1e-10 then
        if #old_dirs == history_size then -- shift the history by one
          table.remove(old_dirs, 1)
          table.remove(old_stps, 1)
          table.remove(ro, 1)
        end
        old_dirs[#old_dirs + 1] = y
        old_stps[#old_stps + 1] = s
        ro[#ro + 1] = 1 / ys
        H_diag = ys / dot(y, y)
      end
      -- the two-loop recursion: the inverse Hessian approximation times the gradient
      local num_old = #old_dirs
      local al = {}
      local q = flat_grad:neg()
      for i = num_old, 1, -1 do
        al[i] = dot(old_stps[i], q) * ro[i]
        q:add_(old_dirs[i], { alpha = -al[i] })
      end
      local r = q:mul(H_diag)
      for i = 1, num_old do
        local be_i = dot(old_dirs[i], r) * ro[i]
        r:add_(old_stps[i], { alpha = al[i] - be_i })
      end
      d = r
    end
    prev_flat_grad = flat_grad:clone()
    prev_loss = loss

    -- the step length
    if state.n_iter == 1 then
      t = math.min(1, 1 / flat_grad:abs():sum():item()) * lr
    else
      t = lr
    end
    -- the directional derivative
    local gtd = dot(flat_grad, d)
    if gtd > -tolerance_change then break end

    local ls_func_evals = 0
    local opt_cond = false
    if line_search_fn ~= nil then
      local x_init = clone_params(params)
      local function obj_func(x, step, dir)
        add_grad(params, step, dir)
        local f = number(eval())
        local g = gather_flat_grad(params)
        set_params(params, x)
        return f, g
      end
      loss, flat_grad, t, ls_func_evals = strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd)
      add_grad(params, t, d)
      opt_cond = absmax(flat_grad) <= tolerance_grad
    else
      -- no line search: a fixed step
      add_grad(params, t, d)
      if n_iter ~= max_iter then
        -- re-evaluate the function only when another iteration follows
        loss = number(eval())
        flat_grad = gather_flat_grad(params)
        opt_cond = absmax(flat_grad) <= tolerance_grad
        ls_func_evals = 1
      end
    end
    current_evals = current_evals + ls_func_evals
    state.func_evals = state.func_evals + ls_func_evals

    -- the stopping conditions
    if n_iter == max_iter then break end
    if current_evals >= max_eval then break end
    if opt_cond then break end
    if absmax(d:mul(t)) <= tolerance_change then break end
    if math.abs(loss - prev_loss) < tolerance_change then break end
  end

  state.d, state.t = d, t
  state.old_dirs, state.old_stps, state.ro = old_dirs, old_stps, ro
  state.H_diag = H_diag
  state.prev_flat_grad, state.prev_loss = prev_flat_grad, prev_loss
  return orig_loss
end

return LBFGS
