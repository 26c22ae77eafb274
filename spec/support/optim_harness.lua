-- What the optimizer specs share: two parameters (a 2x3 matrix, contiguous or as a transposed
-- view, and a 4-vector) as leaves of any dtype, the gradients of each step, the tolerance per dtype,
-- and the run of an optimizer for several steps against a plain-Lua reference of its algorithm
-- (element by element, in double, on the values as the dtype holds them), compared after each step.
local torch = require 'torch'
local H = require 'spec.helpers'

local f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16

local M = {}

-- float16/bfloat16 parameters are updated in float32 and rounded once per step, as the references
-- are; float32 state and arithmetic (and a rounding moved by one unit) against the double reference
M.TOL = { [f64] = 1e-12, [f32] = 2e-6, [f16] = 2e-3, [bf16] = 1.6e-2 }

-- values (a flat table) rounded to what the dtype holds
function M.round_to(values, dtype)
  if dtype == f32 or dtype == f64 then return values end
  return H.flatten(torch.tensor(values, { dtype = f64 }):to(dtype):totable())
end

-- an options table as text, its keys sorted: 'defaults' when empty
function M.describe_opts(o)
  local keys = {}
  for k in pairs(o) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = o[k]
    if type(v) == 'table' then v = '{' .. table.concat(v, ', ') .. '}' end
    parts[#parts + 1] = k .. ' = ' .. tostring(v)
  end
  return #parts == 0 and 'defaults' or table.concat(parts, ', ')
end

-- A problem: params = { 2x3 nested table, 4-element table }, grads_of(s) = the two gradients of
-- step s (tables of the same shapes), nsteps the steps a check runs.
local Problem = {}
Problem.__index = Problem

function M.problem(params, grads_of, nsteps)
  return setmetatable({ params = params, grads_of = grads_of, nsteps = nsteps }, Problem)
end

-- the parameters as leaves of a dtype requiring grad; noncontig: the matrix is a transposed view
function Problem:make_params(dtype, noncontig)
  local a = self.params[1]
  local p1
  if noncontig then
    local at = {}
    for j = 1, 3 do at[j] = { a[1][j], a[2][j] } end
    p1 = torch.tensor(at, { dtype = dtype }):t()
    p1:requires_grad_(true)
    assert(not p1:is_contiguous() and p1.is_leaf)
  else
    p1 = torch.tensor(a, { dtype = dtype, requires_grad = true })
  end
  return { p1, torch.tensor(self.params[2], { dtype = dtype, requires_grad = true }) }
end

function Problem:set_grads(ps, s)
  local gs = self.grads_of(s)
  for j, p in ipairs(ps) do p.grad = torch.tensor(gs[j], { dtype = p.dtype }) end
end

-- nsteps steps of optim[cname](params, opts) against ref(p, g, st, opts) (one step of the flat p,
-- updated in place, with the flat gradient g as the dtype holds it; st its state), compared after
-- every step; check_state(opt, p, st, what), when given, compares the optimizer's state of p with
-- the reference's. Returns the reference states (one a parameter) and the optimizer.
function Problem:check(cname, ref, opts, dtype, noncontig, check_state)
  local ps = self:make_params(dtype, noncontig)
  local opt = torch.optim[cname](ps, opts)
  local rp, rst = {}, {}
  for j, p in ipairs(ps) do rp[j], rst[j] = H.flatten(p:detach():totable()), {} end
  for s = 1, self.nsteps do
    self:set_grads(ps, s)
    opt:step()
    for j, p in ipairs(ps) do
      local what = ('%s (%s) %s%s step %d param %d'):format(cname, M.describe_opts(opts), tostring(dtype),
        noncontig and ' transposed' or '', s, j)
      ref(rp[j], H.flatten(p.grad:totable()), rst[j], opts)
      if check_state then check_state(opt, p, rst[j], what) end
      rp[j] = M.round_to(rp[j], dtype)
      H.assert_values(p:detach(), rp[j], M.TOL[dtype], what)
    end
  end
  return rst, opt
end

return M
