-- torch.einsum against sums written out in plain Lua loops: products, batches, diagonals, traces,
-- ellipses with broadcasting, implicit outputs, three operands; non-contiguous operands, every
-- dtype it takes, gradients by finite differences, and the errors of bad equations. Values against
-- PyTorch itself are in nn_parity_spec.lua (the einsum_* cases).
local torch = require 'torch'
local H = require 'spec.helpers'

-- x as nested tables
local function T(x) return x:double():totable() end

describe('torch.einsum', function()
  it('multiplies matrices, batches and transposes as the loops of its equation do', function()
    torch.manual_seed(1)
    local a, b = torch.randn(3, 4, { dtype = torch.float64 }), torch.randn(4, 5, { dtype = torch.float64 })
    local A, B = T(a), T(b)
    local want = {}
    for i = 1, 3 do
      want[i] = {}
      for k = 1, 5 do
        local s = 0
        for j = 1, 4 do s = s + A[i][j] * B[j][k] end
        want[i][k] = s
      end
    end
    H.assert_values(torch.einsum('ij,jk->ik', a, b), want, 1e-12)
    H.assert_values(torch.einsum('ij,jk', a, b), want, 1e-12) -- implicit: i and k, sorted
    -- the output order follows the arrow: (k, i)
    local ki = T(torch.einsum('ij,jk->ki', a, b))
    for i = 1, 3 do for k = 1, 5 do assert.is_true(math.abs(ki[k][i] - want[i][k]) < 1e-12) end end
    -- batched, with the batch label last in the output
    local p, q = torch.randn(2, 3, 4, { dtype = torch.float64 }), torch.randn(2, 4, 3, { dtype = torch.float64 })
    local P, Q = T(p), T(q)
    local got = T(torch.einsum('bij,bjk->ikb', p, q))
    for bb = 1, 2 do
      for i = 1, 3 do
        for k = 1, 3 do
          local s = 0
          for j = 1, 4 do s = s + P[bb][i][j] * Q[bb][j][k] end
          assert.is_true(math.abs(got[i][k][bb] - s) < 1e-12)
        end
      end
    end
    -- a single operand: permutation and sums
    H.assert_values(torch.einsum('ij->ji', a), T(a:t()), 0)
    H.assert_values(torch.einsum('ij->', a), { a:sum():item() }, 1e-12)
    H.assert_values(torch.einsum('ij->j', a), T(a:sum(1)), 1e-12)
  end)

  it('takes diagonals and traces of repeated labels, outer products and three operands', function()
    torch.manual_seed(2)
    local m = torch.randn(4, 4, { dtype = torch.float64 })
    local M = T(m)
    local tr, diag = 0, {}
    for i = 1, 4 do tr = tr + M[i][i]; diag[i] = M[i][i] end
    assert.is_true(math.abs(torch.einsum('ii', m):item() - tr) < 1e-12)
    H.assert_values(torch.einsum('ii->i', m), diag, 0)
    local c = torch.randn(3, 2, 3, { dtype = torch.float64 })
    local C = T(c)
    local want = {}
    for j = 1, 2 do
      want[j] = 0
      for i = 1, 3 do want[j] = want[j] + C[i][j][i] end
    end
    H.assert_values(torch.einsum('iji->j', c), want, 1e-12)
    local u, v = torch.randn(3, { dtype = torch.float64 }), torch.randn(2, { dtype = torch.float64 })
    local U, V = T(u), T(v)
    local outer = {}
    for i = 1, 3 do outer[i] = {}; for j = 1, 2 do outer[i][j] = U[i] * V[j] end end
    H.assert_values(torch.einsum('i,j->ij', u, v), outer, 1e-15)
    -- a chain of three: (x @ y @ z)^T
    local x, y, z = torch.randn(2, 3, { dtype = torch.float64 }), torch.randn(3, 4, { dtype = torch.float64 }),
      torch.randn(4, 2, { dtype = torch.float64 })
    H.assert_values(torch.einsum('ab,bc,cd->da', x, y, z), T((x:mm(y):mm(z)):t()), 1e-12)
    H.assert_values(torch.einsum('ab,bc,cd->da', { x, y, z }), T((x:mm(y):mm(z)):t()), 1e-12)
  end)

  it('broadcasts ellipses and size-1 dims, and sums an ellipsis the output leaves out', function()
    torch.manual_seed(3)
    local x, y = torch.randn(2, 1, 3, 4, { dtype = torch.float64 }), torch.randn(5, 4, 2, { dtype = torch.float64 })
    local got = torch.einsum('...ij,...jk->...ik', x, y)
    assert.are.same({ 2, 5, 3, 2 }, { table.unpack(got.shape) })
    H.assert_values(got, T(torch.matmul(x, y)), 1e-12)
    H.assert_values(torch.einsum('...ij,...jk', x, y), T(torch.matmul(x, y)), 1e-12)
    -- the ellipsis summed away
    H.assert_values(torch.einsum('...ij->ij', x), T(x:sum(1):sum(1)), 1e-12)
    -- a size-1 labelled dim against a larger one
    local a, b = torch.randn(3, 1, { dtype = torch.float64 }), torch.randn(3, 4, { dtype = torch.float64 })
    H.assert_values(torch.einsum('ij,ij->ij', a, b), T(a * b), 1e-15)
  end)

  it('reads non-contiguous operands and keeps every dtype it takes', function()
    torch.manual_seed(4)
    local base = torch.randn(6, 5, { dtype = torch.float64 })
    local a = base:t():narrow(2, 2, 4) -- (5, 4), strided
    local b = torch.randn(3, 8, { dtype = torch.float64 }):narrow(2, 1, 5):t() -- (5, 3)
    assert.is_false(a:is_contiguous()); assert.is_false(b:is_contiguous())
    H.assert_values(torch.einsum('ji,jk->ik', a, b), T(a:t():mm(b)), 1e-12)
    for _, dt in ipairs { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32 } do
      local p = torch.arange(6, { dtype = torch.int64 }):view(2, 3):to(dt)
      local q = torch.arange(12, { dtype = torch.int64 }):view(3, 4):to(dt)
      local r = torch.einsum('ij,jk->ik', p, q)
      assert.are.equal(dt, r.dtype)
      H.assert_values(r, { { 20, 23, 26, 29 }, { 56, 68, 80, 92 } }, 0)
    end
  end)

  it('passes gradients to every operand (finite differences)', function()
    torch.manual_seed(5)
    local x = torch.randn(2, 3, 4, { dtype = torch.float64 }):requires_grad_()
    local y = torch.randn(4, 3, { dtype = torch.float64 }):t():requires_grad_()
    local z = torch.randn(3, 3, { dtype = torch.float64 }):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(a, b, c) return torch.einsum('bij,kj,ii->bk', a, b, c) end, { x, y, z }))
  end)

  it('names the problem in a bad equation', function()
    local a, b = torch.ones(2, 3), torch.ones(3, 4)
    H.raises(function() torch.einsum('ij,jk', a) end, 'einsum: fewer operands were provided than specified')
    H.raises(function() torch.einsum('ij', a, b) end, 'einsum: more operands were provided than specified')
    H.raises(function() torch.einsum('ijk', a) end, 'the number of subscripts in the equation (3) does not match')
    H.raises(function() torch.einsum('i1', a) end, 'invalid subscript given at index 1')
    H.raises(function() torch.einsum('i.j', a) end, 'not part of any ellipsis')
    H.raises(function() torch.einsum('ij,jk', a, torch.ones(4, 4)) end,
      'subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3')
    H.raises(function() torch.einsum('ii', a) end, "subscript i is repeated for operand 0 but the sizes don't match")
    H.raises(function() torch.einsum('ij->k', a) end, 'output subscript k does not appear')
    H.raises(function() torch.einsum('ij->ii', a) end, 'output subscript i appears more than once')
    H.raises(function() torch.einsum('ij,jk', a, b:double()) end, 'operands must have the same dtype')
    H.raises(function() torch.einsum('ij', 5) end, 'operand 1 is not a tensor')
    H.raises(function() torch.einsum(5, a) end, 'expected an equation string')
  end)
end)
