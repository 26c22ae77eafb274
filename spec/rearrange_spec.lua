-- flip, roll, tril, triu (lua/torch/rearrange.lua) and F.one_hot, F.pad, F.normalize against loops
-- written here in plain Lua, on every dtype and on non-contiguous inputs; their errors. Values and
-- gradients against PyTorch are in nn_parity_spec.lua.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional

-- a 3 x 4 tensor of dtype dt with distinct values (bool: a pattern), and its transposed view
local function sample(dt)
  local x = torch.arange(1, 13):view(3, 4)
  if dt == torch.bool then return x:remainder(3):eq(1) end
  return x:to(dt)
end

local function get(t, i, j) return t[i][j] end

describe('flip, roll, tril and triu', function()
  it('match plain loops on every dtype, contiguous and transposed', function()
    for _, dt in ipairs(H.all_dtypes) do
      for _, x in ipairs { sample(dt), sample(dt):t():contiguous():t() } do
        local v = x:totable()
        local m, n = #v, #v[1]
        local zero = 0
        if dt == torch.bool then zero = false end
        local f, r, lo, up = x:flip(1):totable(), x:roll({ 1, -1 }, { 1, 2 }):totable(), x:tril(1):totable(), x:triu(-1):totable()
        local fb = x:flip({ 1, 2 }):totable()
        for i = 1, m do
          for j = 1, n do
            local what = ('%s (%d, %d)'):format(tostring(dt), i, j)
            assert.are.equal(v[m + 1 - i][j], get(f, i, j), 'flip ' .. what)
            assert.are.equal(v[m + 1 - i][n + 1 - j], get(fb, i, j), 'flip both ' .. what)
            assert.are.equal(v[(i - 2) % m + 1][j % n + 1], get(r, i, j), 'roll ' .. what)
            local wl, wu = zero, zero
            if j - i <= 1 then wl = v[i][j] end
            if j - i >= -1 then wu = v[i][j] end
            assert.are.equal(wl, get(lo, i, j), 'tril ' .. what)
            assert.are.equal(wu, get(up, i, j), 'triu ' .. what)
          end
        end
        assert.are.equal(dt, x:tril().dtype)
      end
    end
  end)

  it('roll by every shift from -2n to 2n along either dim matches the loop', function()
    local x = torch.arange(1, 29):view(4, 7)
    local v = x:totable()
    for d = 1, 2 do
      local n = x:size(d)
      for sh = -2 * n, 2 * n do
        local r = x:roll(sh, d):totable()
        for i = 1, 4 do
          for j = 1, 7 do
            local si, sj = i, j
            if d == 1 then si = (i - 1 - sh) % n + 1 else sj = (j - 1 - sh) % n + 1 end
            assert.are.equal(v[si][sj], r[i][j], ('roll %d along %d at (%d, %d)'):format(sh, d, i, j))
          end
        end
      end
    end
  end)

  it('roll without dims rolls the flattened tensor; tril_ and triu_ work in place', function()
    local x = torch.arange(1, 7):view(2, 3)
    H.assert_values(x:roll(2), { { 5, 6, 1 }, { 2, 3, 4 } }, 0)
    H.assert_values(x:roll(-7), { { 2, 3, 4 }, { 5, 6, 1 } }, 0)
    local y = torch.ones(3, 3)
    assert.are.equal(y, y:triu_(1))
    H.assert_values(y, { { 0, 1, 1 }, { 0, 0, 1 }, { 0, 0, 0 } }, 0)
    local z = torch.ones(2, 2, 2)
    z:tril_()
    H.assert_values(z, { { { 1, 0 }, { 1, 1 } }, { { 1, 0 }, { 1, 1 } } }, 0)
  end)

  it('name bad arguments', function()
    local x = torch.ones(2, 3)
    H.raises(function() x:flip(3) end, 'flip: dimension 3 is out of range for a 2-D tensor')
    H.raises(function() x:flip({ 1, -2 }) end, 'flip: dim 1 appears multiple times')
    H.raises(function() x:flip() end, 'flip: dims is required')
    H.raises(function() x:roll({ 1, 2 }, { 1 }) end, 'roll: shifts and dimensions must align')
    H.raises(function() x:roll({ 1, 2 }) end, 'roll: shifts must have one element when dims is not given')
    H.raises(function() torch.ones(3):tril() end, 'tril: input tensor must have at least 2 dimensions')
    H.raises(function() x:triu(0.5) end, 'triu: diagonal must be an integer')
  end)
end)

describe('F.one_hot', function()
  it('puts a 1 at each 1-based class, for any shape', function()
    local t = torch.tensor({ { 2, 1 }, { 4, 2 } })
    local o = F.one_hot(t)
    assert.are.equal(torch.int64, o.dtype)
    assert.are.same({ 2, 2, 4 }, { table.unpack(o.shape) })
    local ot = o:totable()
    for i = 1, 2 do
      for j = 1, 2 do
        for c = 1, 4 do assert.are.equal(c == t[i][j] and 1 or 0, ot[i][j][c]) end
      end
    end
    assert.are.same({ 2, 2, 6 }, { table.unpack(F.one_hot(t, 6).shape) })
    assert.are.same({ 0, 3 }, { table.unpack(F.one_hot(torch.zeros(0, { dtype = torch.int64 }), 3).shape) })
  end)
  it('names classes out of range and bad arguments', function()
    H.raises(function() F.one_hot(torch.tensor({ 0, 1 })) end, 'Class values must be at least 1 (they are 1-based), got 0')
    H.raises(function() F.one_hot(torch.tensor({ 3 }), 2) end, 'Class values must be at most num_classes (2), got 3')
    H.raises(function() F.one_hot(torch.tensor({ 1.0 })) end, 'one_hot: class values must be an int64 tensor')
    H.raises(function() F.one_hot(torch.zeros(0, { dtype = torch.int64 })) end, 'Can not infer total number of classes')
    H.raises(function() F.one_hot(torch.tensor({ 1 }), 0) end, 'num_classes must be a positive integer or -1')
  end)
end)

describe('F.pad', function()
  it('pads every dtype with each mode, as index arithmetic says', function()
    for _, dt in ipairs(H.all_dtypes) do
      local x = sample(dt):t() -- 4 x 3, not contiguous
      local v = x:totable()
      local fill = dt == torch.bool and true or 7
      local c = F.pad(x, { 1, 2 }, { value = fill }):totable()
      local rep = F.pad(x, { 2, 1 }, 'replicate'):totable()
      local refl = F.pad(x, { 2, 2 }, 'reflect'):totable()
      local circ = F.pad(x, { 1, 3 }, 'circular'):totable()
      for i = 1, 4 do
        for j = 1, 6 do
          local what = ('%s (%d, %d)'):format(tostring(dt), i, j)
          local want = fill
          if j >= 2 and j <= 4 then want = v[i][j - 1] end -- (not `and/or`: v may hold false)
          assert.are.equal(want, c[i][j], 'constant ' .. what)
          assert.are.equal(v[i][math.min(math.max(j - 2, 1), 3)], rep[i][j], 'replicate ' .. what)
        end
        for j = 1, 7 do
          local k = j - 2
          if k < 1 then k = 2 - k elseif k > 3 then k = 6 - k end
          assert.are.equal(v[i][k], refl[i][j], 'reflect ' .. tostring(dt))
          assert.are.equal(v[i][(j - 2) % 3 + 1], circ[i][j], 'circular ' .. tostring(dt))
        end
      end
    end
  end)
  it('names bad arguments', function()
    local x = torch.ones(2, 3)
    H.raises(function() F.pad(x, { 1 }) end, 'pad: Padding length must be divisible by 2')
    H.raises(function() F.pad(x, { 1, 1, 1, 1, 1, 1 }) end, 'pad: Padding length too large')
    H.raises(function() F.pad(x, { 3, 0 }, 'reflect') end, 'Padding size should be less than the corresponding input dimension')
    H.raises(function() F.pad(x, { 4, 0 }, 'circular') end, 'Padding value causes wrapping around more than once')
    H.raises(function() F.pad(x, { 1, 1 }, 'mirror') end, "pad: mode must be 'constant'")
    H.raises(function() F.pad(x, { 1, 1 }, { mode = 'reflect', value = 2 }) end, "pad: value is only for mode 'constant'")
    H.raises(function() F.pad(x, { -2, -2 }) end, 'pad: cropping 4 elements from a dim of 3')
  end)
end)

describe('F.normalize and distances', function()
  it('normalizes along dim 2 by default, dim 1 for a vector, eps for zero rows', function()
    local x = torch.tensor({ { 3, 4 }, { 0, 0 } })
    H.assert_values(F.normalize(x:float()), { { 0.6, 0.8 }, { 0, 0 } }, 1e-7)
    H.assert_values(F.normalize(torch.tensor({ 3.0, 4.0 })), { 0.6, 0.8 }, 1e-7)
    H.assert_values(F.normalize(torch.tensor({ { 1.0, -3.0 } }), { p = 1 }), { { 0.25, -0.75 } }, 1e-7)
    H.raises(function() F.normalize(x:float(), { axis = 1 }) end, "normalize: unknown option 'axis'")
  end)
  it('cosine_similarity and pairwise_distance give their formulas', function()
    local a, b = torch.tensor({ { 1.0, 0.0 }, { 1.0, 1.0 } }), torch.tensor({ { 0.0, 1.0 }, { 2.0, 2.0 } })
    H.assert_values(F.cosine_similarity(a, b), { 0, 1 }, 1e-6)
    H.assert_values(F.pairwise_distance(a, b, { eps = 0 }), { math.sqrt(2), math.sqrt(2) }, 1e-6)
  end)
end)
