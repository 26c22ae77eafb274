-- torch.linalg (lua/torch/linalg.lua): the norms against loops over the elements, multi_dot and
-- matrix_power against products taken in order, gradients by finite differences, the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local linalg = torch.linalg
local gradcheck = torch.autograd.gradcheck

describe('torch.linalg norms', function()
  it('vector_norm for every ord, over all elements or a dim, keepdim, transposed', function()
    torch.manual_seed(1)
    local x = torch.randn(3, 4, { dtype = torch.float64 })
    x[2][3] = 0
    local rows = x:totable()
    local function ref(vals, ord)
      local s, mx, mn, nz = 0, 0, math.huge, 0
      for _, v in ipairs(vals) do
        local a = math.abs(v)
        mx, mn = math.max(mx, a), math.min(mn, a)
        if a ~= 0 then nz = nz + 1 end
        if ord ~= 0 and ord ~= math.huge and ord ~= -math.huge then s = s + a ^ ord end
      end
      if ord == math.huge then return mx elseif ord == -math.huge then return mn elseif ord == 0 then return nz end
      return s ^ (1 / ord)
    end
    for _, ord in ipairs { 2, 1, 3, 0.5, 0, math.huge, -math.huge } do
      H.close(linalg.vector_norm(x, ord):item(), ref(H.flatten(rows), ord), 1e-12, 'ord ' .. ord)
      local by_row = linalg.vector_norm(x, ord, 2)
      local by_col = linalg.vector_norm(x:t(), ord, 1, true)
      for r = 1, 3 do
        H.close(by_row[r], ref(rows[r], ord), 1e-12, 'row ' .. r .. ' ord ' .. ord)
        H.close(by_col[1][r], ref(rows[r], ord), 1e-12, 'transposed row ' .. r .. ' ord ' .. ord)
      end
    end
    local k = linalg.vector_norm(x, { ord = 1, keepdim = true })
    assert.are.same({ 1, 1 }, { k:size(1), k:size(2) })
    H.raises(function() return linalg.vector_norm(torch.tensor({ 1, 2 })) end, 'vector_norm', 'floating point')
    H.raises(function() return linalg.vector_norm(x, { p = 2 }) end, "unknown option 'p'")
  end)

  it("matrix_norm ('fro', 1, -1, inf, -inf) against column and row sums, batched, and linalg.norm's choices", function()
    local a = torch.tensor({ { 1.0, -2, 3 }, { -4, 5, -6 } }, { dtype = torch.float64 })
    H.close(linalg.matrix_norm(a):item(), math.sqrt(91), 1e-12)
    H.close(linalg.matrix_norm(a, 1):item(), 9, 0)        -- column sums 5, 7, 9
    H.close(linalg.matrix_norm(a, -1):item(), 5, 0)
    H.close(linalg.matrix_norm(a, math.huge):item(), 15, 0) -- row sums 6, 15
    H.close(linalg.matrix_norm(a, -math.huge):item(), 6, 0)
    local b = torch.stack({ a, a * 2 })
    H.assert_values(linalg.matrix_norm(b, 1), { 9, 18 })
    H.assert_values(linalg.matrix_norm(b:transpose(2, 3), math.huge, { -2, -1 }), { 9, 18 })
    local kd = linalg.matrix_norm(b, 'fro', { -2, -1 }, true)
    assert.are.same({ 2, 1, 1 }, { kd:size(1), kd:size(2), kd:size(3) })
    H.close(linalg.norm(a):item(), math.sqrt(91), 1e-12)
    H.close(linalg.norm(a, 1):item(), 9, 0)
    H.close(linalg.norm(torch.tensor({ 3.0, -4 }), 1):item(), 7, 0)
    H.assert_values(linalg.norm(a, nil, 2), { math.sqrt(14), math.sqrt(77) }, 1e-12)
    H.raises(function() return linalg.matrix_norm(a, 'nuc') end, 'matrix_norm', 'singular values')
    H.raises(function() return linalg.matrix_norm(a, 3) end, 'matrix_norm', 'ord must be')
    H.raises(function() return linalg.matrix_norm(torch.ones(3)) end, 'matrix_norm', 'at least 2')
    assert.is_true(gradcheck(function(t) return linalg.matrix_norm(t) end, { torch.randn(3, 3, { dtype = torch.float64 }):requires_grad_() }))
    assert.is_true(gradcheck(function(t) return linalg.vector_norm(t, 3, 2) end, { (torch.rand(2, 3, { dtype = torch.float64 }) + 0.5):requires_grad_() }))
  end)
end)

describe('torch.linalg products and powers', function()
  it('multi_dot equals the product taken in order, vectors at the ends included, and picks a cheap order', function()
    torch.manual_seed(2)
    local A, B, C, D = torch.randn(10, 100, { dtype = torch.float64 }), torch.randn(100, 5, { dtype = torch.float64 }),
      torch.randn(5, 50, { dtype = torch.float64 }), torch.randn(50, 3, { dtype = torch.float64 })
    H.assert_values(linalg.multi_dot({ A, B, C, D }), A:mm(B):mm(C):mm(D):totable(), 1e-10)
    local v, w = torch.randn(10, { dtype = torch.float64 }), torch.randn(3, { dtype = torch.float64 })
    local r = linalg.multi_dot({ v, A, B, C, D, w })
    assert.are.equal(0, r:dim())
    H.close(r:item(), v:dot(A:mm(B):mm(C):mm(D):mv(w)):item(), 1e-9)
    H.assert_values(torch.chain_matmul(A, B), A:mm(B):totable(), 1e-12)
    H.raises(function() return linalg.multi_dot({ A, C }) end, 'multi_dot', 'cannot be multiplied')
    H.raises(function() return linalg.multi_dot({ A }) end, 'multi_dot', 'at least two')
    assert.is_true(gradcheck(function(a, b, c) return linalg.multi_dot({ a, b, c }) end,
      { torch.randn(2, 3, { dtype = torch.float64 }):requires_grad_(), torch.randn(3, 4, { dtype = torch.float64 }):requires_grad_(),
        torch.randn(4, 2, { dtype = torch.float64 }):requires_grad_() }))
  end)

  it('matrix_power by squaring equals repeated products; 0 gives the identity; vecdot, cross, diagonal', function()
    torch.manual_seed(3)
    local a = torch.randn(2, 3, 3, { dtype = torch.float64 }) * 0.5
    local p = a
    for n = 1, 7 do
      H.assert_values(linalg.matrix_power(a, n), p:totable(), 1e-12, 'n = ' .. n)
      p = torch.matmul(p, a)
    end
    H.assert_values(a:matrix_power(0), torch.eye(3, { dtype = torch.float64 }):expand(2, 3, 3):totable())
    H.raises(function() return linalg.matrix_power(a, -1) end, 'matrix_power', 'inverse')
    H.raises(function() return linalg.matrix_power(torch.ones(2, 3), 2) end, 'matrix_power', 'square')
    local x, y = torch.randn(4, 3, { dtype = torch.float64 }), torch.randn(4, 3, { dtype = torch.float64 })
    H.assert_values(linalg.vecdot(x, y), (x * y):sum(2):totable(), 1e-12)
    H.assert_values(linalg.cross(x, y), torch.cross(x, y, 2):totable(), 1e-12)
    H.assert_values(linalg.diagonal(a), { { a[1][1][1], a[1][2][2], a[1][3][3] }, { a[2][1][1], a[2][2][2], a[2][3][3] } })
    assert.is_true(gradcheck(function(t) return linalg.matrix_power(t, 3) end, { torch.randn(3, 3, { dtype = torch.float64 }):requires_grad_() }))
  end)

  it('names what it has when asked for what it has not', function()
    H.raises(function() return linalg.inv end, "torch.linalg has no function 'inv'", 'vector_norm')
  end)
end)
