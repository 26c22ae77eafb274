-- nn.utils.prune: masks against a plain-Lua sort of magnitudes and PyTorch's own masks
-- (spec/data/nnutils_reference.lua, made by tools/gen_nnutils_reference.py), the name_orig /
-- name_mask mechanics, repeated pruning, remove, and PyTorch's errors for bad amounts.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn = torch.nn
local prune = nn.utils.prune
local ref = dofile('spec/data/nnutils_reference.lua')

local f64 = { dtype = torch.float64 }
local T, keys = H.from_ref, H.state_keys

-- the mask that prunes the k smallest magnitudes, ties to the lower flat index (plain Lua)
local function l1_mask(values, k)
  local idx = {}
  for i = 1, #values do idx[i] = i end
  table.sort(idx, function(a, b)
    local x, y = math.abs(values[a]), math.abs(values[b])
    if x ~= y then return x < y end
    return a < b
  end)
  local mask = {}
  for i = 1, #values do mask[i] = 1 end
  for i = 1, k do mask[idx[i]] = 0 end
  return mask
end

describe('nn.utils.prune', function()
  it('l1_unstructured prunes the smallest magnitudes (a fraction or a count), as a plain-Lua sort', function()
    torch.manual_seed(3)
    for _, amount in ipairs { 0.3, 0.5, 4, 0, 12, 1.0 } do
      local m = nn.Linear(4, 3, f64)
      local w = H.flatten(m.weight:totable())
      local k = math.type(amount) == 'integer' and amount or math.floor(amount * 12 + 0.5)
      prune.l1_unstructured(m, 'weight', amount)
      H.assert_values(m.weight_mask, l1_mask(w, k), 0, 'mask ' .. amount)
      local got = H.flatten(m.weight:totable())
      for i = 1, 12 do H.close(got[i], w[i] * l1_mask(w, k)[i], 0, 'pruned weight') end
    end
    -- ties: among equal magnitudes the lower flat index is pruned first (PyTorch's topk picks
    -- among them by its selection algorithm: flat indices 8, 9 and 11 here)
    local m = nn.Linear(4, 3, f64)
    local tied = { 0.5, -0.25, 0.25, 1.0, -0.5, 0.25, 2.0, -0.125, 0.125, 3.0, -0.25, 0.5 }
    torch.no_grad(function() m.weight:copy_(torch.tensor(tied, f64):reshape(3, 4)) end)
    prune.l1_unstructured(m, 'weight', 3)
    H.assert_values(m.weight_mask, { 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1 }, 0, 'ties')
    H.assert_values(m.weight_mask, l1_mask(tied, 3), 0, 'ties')
    -- Python's round halves to even: 0.5 * 5 rounds to 2, 0.5 * 7 to 4
    assert.equal(2, prune._round_half_even(2.5))
    assert.equal(4, prune._round_half_even(3.5))
  end)

  it("gives PyTorch's masks for l1_unstructured, ln_structured and repeated pruning", function()
    for i, c in ipairs(ref.prune) do
      local w = T(c.weight)
      local m = w:dim() == 2 and nn.Linear(w:size(2), w:size(1), f64) or nn.Conv1d(3, 4, 2, { dtype = torch.float64 })
      torch.no_grad(function() m.weight:copy_(w) end)
      if c.kind == 'l1_unstructured' then
        prune.l1_unstructured(m, 'weight', c.amount)
      elseif c.kind == 'ln_structured' then
        prune.ln_structured(m, 'weight', c.amount, c.n, c.dim)
      else
        prune.l1_unstructured(m, 'weight', 0.3)
        prune.ln_structured(m, 'weight', 1, 2, 1)
        prune.l1_unstructured(m, 'weight', 3)
        assert.is_true(torch.class.isinstance(m._forward_pre_hooks[1].fn, prune.PruningContainer))
      end
      H.assert_values(m.weight_mask, c.mask.data, 0, 'case ' .. i .. ' ' .. c.kind)
    end
  end)

  it('keeps name_orig and name_mask, recomputes the weight before each forward, and removes', function()
    local m = nn.Linear(3, 2, f64)
    local orig = m.weight
    prune.random_unstructured(m, 'weight', 2)
    assert.same({ 'bias', 'weight_orig', 'weight_mask' }, keys(m))
    assert.is_true(rawequal(orig, m.weight_orig))
    assert.equal(4, m.weight_mask:sum():item())
    assert.is_true(prune.is_pruned(nn.Sequential(nn.ReLU(), m)))
    -- the weight follows name_orig at the next forward
    torch.no_grad(function() m.weight_orig:fill_(2) end)
    local x = torch.ones(1, 3, f64)
    local y = m(x)
    H.assert_values(m.weight, (m.weight_mask * 2):totable(), 0)
    y:sum():backward()
    H.assert_values(m.weight_orig.grad, m.weight_mask:totable(), 0, 'gradient is masked')
    local pruned = m.weight:detach():clone()
    prune.remove(m, 'weight')
    assert.is_true(m.weight:equal(pruned))
    assert.same({ 'bias', 'weight' }, keys(m))
    assert.is_true(rawequal(orig, m.weight))
    assert.is_false(prune.is_pruned(m))
    H.raises(function() prune.remove(m, 'weight') end, "Parameter 'weight' of module Linear has to be pruned")
  end)

  it('random_structured prunes whole channels; masks combine; identity and custom_from_mask', function()
    local m = nn.Linear(5, 4)
    prune.random_structured(m, 'weight', 0.5, 1)
    local rows = m.weight_mask:sum(2):totable()
    local zero = 0
    for _, r in ipairs(rows) do
      assert.is_true(r == 0 or r == 5)
      if r == 0 then zero = zero + 1 end
    end
    assert.equal(2, zero)
    -- pruning again only looks at the channels left
    prune.random_structured(m, 'weight', 1, 1)
    assert.equal(3 * 5, (1 - m.weight_mask):sum():item())
    prune.identity(m, 'bias')
    H.assert_values(m.bias_mask, { 1, 1, 1, 1 }, 0)
    local c = nn.Linear(2, 2)
    prune.custom_from_mask(c, 'weight', torch.tensor({ { 1, 0 }, { 0, 1 } }))
    prune.custom_from_mask(c, 'weight', torch.tensor({ { 1, 1 }, { 0, 0 } }))
    H.assert_values(c.weight_mask, { 1, 0, 0, 0 }, 0)
  end)

  it('global_unstructured prunes the smallest magnitudes over all the tensors at once', function()
    local a, b = nn.Linear(3, 3, f64), nn.Linear(2, 2, f64)
    local all = {}
    for _, v in ipairs(H.flatten(a.weight:totable())) do all[#all + 1] = v end
    for _, v in ipairs(H.flatten(b.weight:totable())) do all[#all + 1] = v end
    prune.global_unstructured({ { a, 'weight' }, { b, 'weight' } }, prune.L1Unstructured, { amount = 6 })
    local want = l1_mask(all, 6)
    local got = H.flatten(a.weight_mask:totable())
    for _, v in ipairs(H.flatten(b.weight_mask:totable())) do got[#got + 1] = v end
    for i = 1, #want do assert.equal(want[i], got[i]) end
    H.raises(function() prune.global_unstructured({ { a, 'weight' } }, prune.LnStructured, { amount = 1 }) end,
      'Only "unstructured" PRUNING_TYPE supported')
  end)

  it("gives PyTorch's errors for bad amounts and leaves the module as it was", function()
    local m = nn.Linear(2, 2)
    H.raises(function() prune.l1_unstructured(m, 'weight', -1) end,
      'amount=-1 should either be a float in the range [0, 1] or a non-negative integer')
    H.raises(function() prune.random_unstructured(m, 'weight', 1.5) end, 'float in the range [0, 1]')
    H.raises(function() prune.l1_unstructured(m, 'weight', 'half') end, 'Invalid type for amount')
    H.raises(function() prune.l1_unstructured(m, 'weight', 5) end,
      'amount=5 should be smaller than the number of parameters to prune=4')
    -- the parameter is registered again, after bias, as PyTorch does
    assert.same({ 'bias', 'weight' }, keys(m))
    assert.is_false(prune.is_pruned(m))
    H.raises(function() prune.ln_structured(m, 'bias', 1, 2, 1) end, 'Structured pruning can only be applied to multidimensional')
    H.raises(function() prune.ln_structured(m, 'weight', 1, 2, 3) end, 'out of range')
    H.raises(function() prune.l1_unstructured(m, 'nope', 1) end, "has no parameter 'nope'")
    H.raises(function() prune.custom_from_mask(m, 'weight', torch.ones(3)) end, 'the mask is of shape')
  end)
end)
