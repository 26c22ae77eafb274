-- The LU family, matrix_exp, householder_product, geqrf, the LDL factorisation, tensorinv,
-- tensorsolve and vander against PyTorch 1.13's values and gradients for fixed float64 inputs
-- (spec/data/linalg_lu_reference.lua, written by tools/gen_linalg_lu_reference.py): the gradients
-- are those of sum(W * output) with the generator's fixed weights, rebuilt here by the same formula.
local torch = require 'torch'
local H = require 'spec.helpers'
local REF = require 'spec.data.linalg_lu_reference'
local linalg = torch.linalg
local f64 = torch.float64

local function t(v) return torch.tensor(v, { dtype = f64 }) end

-- the generator's fixed(shape, seed): 2 sin(1.7 i + 0.3 + seed) + 0.1 cos(5.1 i), i = 0, 1, ...
local function fixed(shape, seed)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = 2 * math.sin(1.7 * i + 0.3 + seed) + 0.1 * math.cos(5.1 * i) end
  return t(v):reshape(shape)
end

-- the outputs of fn and the gradients of sum(W_k * output_k) in the inputs (tables of values)
local function grads(fn, inputs)
  local xs = {}
  for i, x in ipairs(inputs) do xs[i] = t(x):requires_grad_() end
  local outs = table.pack(fn(table.unpack(xs)))
  local loss
  for k = 1, outs.n do
    local o = outs[k]
    if o.dtype == f64 then
      local term = (o * fixed(o.shape, 9 + k - 1)):sum()
      loss = loss and loss + term or term
    end
  end
  loss:backward()
  local gs = {}
  for i, x in ipairs(xs) do gs[i] = x.grad end
  return outs, gs
end

describe('linalg against PyTorch 1.13', function()
  it('lu_factor and lu: the factors, the pivots and the gradients (square, tall, wide, batched)', function()
    for _, c in ipairs(REF.lu) do
      local a = t(c.A)
      local lu, piv = linalg.lu_factor(a)
      H.assert_values(lu, c.LU, 1e-13, c.name .. ' LU')
      assert.are.same(c.pivots, piv:totable())
      local outs, g = grads(function(x) return (linalg.lu_factor(x)) end, { c.A })
      H.assert_values(g[1], c.grad_lu_factor, 1e-10, c.name .. ' grad lu_factor')
      outs, g = grads(function(x) return linalg.lu(x) end, { c.A })
      H.assert_values(outs[1], c.P, 0, c.name .. ' P')
      H.assert_values(outs[2], c.L, 1e-13, c.name .. ' L')
      H.assert_values(outs[3], c.U, 1e-13, c.name .. ' U')
      H.assert_values(g[1], c.grad_lu, 1e-10, c.name .. ' grad lu')
    end
  end)

  it('lu_solve: left and right, adjoint, the gradients in LU and B', function()
    local r = REF.lu_solve
    local piv = torch.tensor(r.pivots, { dtype = torch.int32 })
    for _, c in ipairs(r.cases) do
      local o = { left = c.left, adjoint = c.adjoint }
      local outs, g = grads(function(f, b) return linalg.lu_solve(f, piv, b, o) end, { r.LU, c.B })
      local what = string.format('left %s adjoint %s', c.left, c.adjoint)
      H.assert_values(outs[1], c.X, 1e-12, what)
      H.assert_values(g[1], c.grad_LU, 1e-10, what .. ' grad LU')
      H.assert_values(g[2], c.grad_B, 1e-10, what .. ' grad B')
    end
  end)

  it('triangular_solve: the solutions and the gradients (the cloned coefficient included)', function()
    local r = REF.triangular_solve
    for _, c in ipairs(r.cases) do
      local outs, g = grads(function(a, b) return torch.triangular_solve(b, a, c.upper, c.transpose, c.unitriangular) end,
        { r.A, c.B })
      local what = string.format('upper %s transpose %s unit %s', c.upper, c.transpose, c.unitriangular)
      H.assert_values(outs[1], c.X, 1e-12, what)
      H.assert_values(g[1], c.grad_A, 1e-10, what .. ' grad A')
      H.assert_values(g[2], c.grad_B, 1e-10, what .. ' grad B')
    end
  end)

  it('matrix_exp and householder_product: values and gradients', function()
    local r = REF.matrix_exp
    local outs, g = grads(linalg.matrix_exp, { r.A })
    H.assert_values(outs[1], r.E, 1e-12, 'exp')
    H.assert_values(g[1], r.grad, 1e-10, 'exp grad')
    local q = REF.householder_product
    outs, g = grads(linalg.householder_product, { q.A, q.tau })
    H.assert_values(outs[1], q.Q, 1e-13, 'Q')
    H.assert_values(g[1], q.grad_A, 1e-12, 'grad A')
    H.assert_values(g[2], q.grad_tau, 1e-12, 'grad tau')
  end)

  it('geqrf: the factors and the reflectors\' scalars (tall, wide, batched)', function()
    for _, c in ipairs(REF.geqrf) do
      local a, tau = torch.geqrf(t(c.A))
      H.assert_values(a, c.a, 1e-13, 'geqrf')
      H.assert_values(tau, c.tau, 1e-13, 'tau')
    end
  end)

  it('ldl_factor and ldl_solve: the compact factors, the pivots, the solution', function()
    local r = REF.ldl
    local ld, piv = linalg.ldl_factor(t(r.A))
    H.assert_values(ld, r.LD, 1e-13, 'LD')
    assert.are.same(r.pivots, piv:totable())
    H.assert_values(linalg.ldl_solve(ld, piv, t(r.B)), r.X, 1e-12, 'X')
  end)

  it('tensorinv, tensorsolve and vander: values and gradients', function()
    local r = REF.tensorinv
    local outs, g = grads(function(x) return linalg.tensorinv(x, { ind = 1 }) end, { r.A })
    H.assert_values(outs[1], r.X, 1e-12, 'tensorinv')
    H.assert_values(g[1], r.grad, 1e-10, 'tensorinv grad')
    r = REF.tensorsolve
    outs, g = grads(linalg.tensorsolve, { r.A, r.B })
    H.assert_values(outs[1], r.X, 1e-12, 'tensorsolve')
    H.assert_values(g[1], r.grad_A, 1e-10, 'tensorsolve grad A')
    H.assert_values(g[2], r.grad_B, 1e-10, 'tensorsolve grad B')
    r = REF.vander
    outs, g = grads(function(x) return linalg.vander(x, { N = 4 }) end, { r.x })
    H.assert_values(outs[1], r.V, 1e-14, 'vander')
    H.assert_values(g[1], r.grad, 1e-12, 'vander grad')
  end)
end)
