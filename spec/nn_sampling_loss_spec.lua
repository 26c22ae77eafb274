-- F.affine_grid, F.grid_sample, and the losses MultiMarginLoss, MultiLabelMarginLoss and CTCLoss:
-- values against references computed here in Lua loops (grid_sample pixel by pixel with PyTorch's
-- coordinate rules, 4-D and 5-D, bilinear, nearest and bicubic; the CTC loss by summing over every
-- alignment), float32 and float64, non-contiguous inputs, gradients by finite differences
-- (gradcheck, float64), and the errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional
local gradcheck = torch.autograd.gradcheck

local f64 = torch.float64
local function leaf(shape) return torch.randn(shape, { dtype = f64 }):requires_grad_() end
local function tol(dt) return dt == f64 and 1e-10 or 2e-5 end

describe('F.affine_grid', function()
  -- the normalised coordinate of pixel j (0-based) of n
  local function lin(j, n, align)
    if n == 1 then return 0 end
    if align then return -1 + 2 * j / (n - 1) end
    return (2 * j + 1) / n - 1
  end

  -- the grid for size (4 or 5 entries): theta[n] (nested tables) applied to (x, y, 1) or (x, y, z, 1),
  -- x along the last size
  local function ref(tt, size, align)
    local nsp = #size - 2
    local out = {}
    for n = 1, size[1] do
      local function fill(level, idx)
        if level > nsp then
          local p = {}
          for k = 1, nsp do p[k] = lin(idx[nsp - k + 1], size[2 + nsp - k + 1], align) end
          p[nsp + 1] = 1
          local r = {}
          for k = 1, nsp do
            r[k] = 0
            for j = 1, nsp + 1 do r[k] = r[k] + tt[n][k][j] * p[j] end
          end
          return r
        end
        local t = {}
        for i = 0, size[2 + level] - 1 do
          idx[level] = i
          t[i + 1] = fill(level + 1, idx)
        end
        return t
      end
      out[n] = fill(1, {})
    end
    return out
  end

  it('applies theta to the (x, y, 1) of each output pixel (4-D sizes) or the (x, y, z, 1) of each voxel (5-D), '
    .. 'with and without align_corners, float32 and float64', function()
    torch.manual_seed(40)
    for _, dt in ipairs { f64, torch.float32 } do
      local thetas = {
        torch.randn(2, 3, 2, { dtype = dt }):transpose(2, 3), -- 2 x 2 x 3, not contiguous
        torch.randn(2, 4, 3, { dtype = dt }):transpose(2, 3), -- 2 x 3 x 4
      }
      for _, size in ipairs { { 2, 3, 4, 5 }, { 2, 1, 1, 3 }, { 2, 1, 3, 1 }, { 2, 3, 2, 4, 5 }, { 2, 1, 1, 3, 2 },
        { 2, 1, 3, 1, 1 } } do
        local theta = thetas[#size - 3]
        for _, align in ipairs { false, true } do
          local g = F.affine_grid(theta, size, { align_corners = align })
          local shape = { table.unpack(size) }
          table.remove(shape, 2)
          shape[#shape + 1] = #size - 2
          assert.are.same(shape, { table.unpack(g.shape) })
          H.assert_values(g, ref(theta:totable(), size, align), tol(dt))
        end
      end
    end
    assert.is_true(gradcheck(function(t) return F.affine_grid(t, { 1, 1, 3, 2 }) end, { leaf({ 1, 2, 3 }) }))
    assert.is_true(gradcheck(function(t) return F.affine_grid(t, { 1, 1, 2, 3, 2 }, { align_corners = true }) end,
      { leaf({ 1, 3, 4 }) }))
  end)

  it('names bad input', function()
    local theta = torch.randn(2, 2, 3)
    H.raises(function() return F.affine_grid(theta, { 2, 3, 4 }) end, 'affine_grid', '4-D', '5-D', 'got 3 entries')
    H.raises(function() return F.affine_grid(theta, { 2, 3, 4, 4, 4, 4 }) end, 'affine_grid', 'got 6 entries')
    H.raises(function() return F.affine_grid(theta, { 3, 1, 4, 4 }) end, 'affine_grid', 'Nx2x3')
    H.raises(function() return F.affine_grid(torch.randn(2, 3, 3), { 2, 1, 4, 4 }) end, 'affine_grid', 'Nx2x3')
    -- a 2-D transform for a 5-D size, a 3-D one for a 4-D size
    H.raises(function() return F.affine_grid(theta, { 2, 1, 3, 4, 4 }) end, 'affine_grid', '3D affine matrices', 'Nx3x4')
    H.raises(function() return F.affine_grid(torch.randn(2, 3, 4), { 2, 1, 4, 4 }) end, 'affine_grid', 'Nx2x3')
    H.raises(function() return F.affine_grid(torch.randn(1, 3, 4), { 2, 1, 3, 4, 4 }) end, 'affine_grid', 'Nx3x4')
    H.raises(function() return F.affine_grid(theta, { 2, 1, 0, 4 }) end, 'affine_grid', 'positive output size')
    H.raises(function() return F.affine_grid(torch.randn(2, 3, 4), { 2, 1, 3, 0, 4 }) end, 'affine_grid', 'positive output size')
    H.raises(function() return F.affine_grid(theta:long(), { 2, 1, 4, 4 }) end, 'affine_grid', 'floating point')
    H.raises(function() return F.affine_grid(theta, { 2, 1, 4, 4 }, { align = true }) end, 'affine_grid', 'align')
  end)
end)

describe('F.grid_sample', function()
  -- PyTorch's rules (aten/src/ATen/native/GridSampler.h) for one coordinate, written on numbers
  local function unnormalize(g, n, align)
    if align then return (g + 1) / 2 * (n - 1) end
    return ((g + 1) * n - 1) / 2
  end
  local function reflect(c, twice_low, twice_high)
    if twice_low == twice_high then return 0 end
    local lo, span = twice_low / 2, (twice_high - twice_low) / 2
    c = math.abs(c - lo)
    local extra, flips = math.fmod(c, span), math.floor(c / span)
    if flips % 2 == 0 then return extra + lo end
    return span - extra + lo
  end
  -- compute_coordinates: a coordinate padded
  local function padded(c, n, pad, align)
    if pad == 'border' then
      c = math.min(n - 1, math.max(c, 0))
    elseif pad == 'reflection' then
      c = align and reflect(c, 0, 2 * (n - 1)) or reflect(c, -1, 2 * n - 1)
      c = math.min(n - 1, math.max(c, 0))
    end
    return c
  end
  local function source(g, n, pad, align) return padded(unnormalize(g, n, align), n, pad, align) end
  -- round half to even, as nearbyint
  local function rint(v)
    local f = math.floor(v)
    local d = v - f
    if d > 0.5 then return f + 1 end
    if d < 0.5 then return f end
    return f % 2 == 0 and f or f + 1
  end
  -- Keys' cubic convolution kernel, A = -0.75, at a distance t
  local function cubic(t)
    local A = -0.75
    t = math.abs(t)
    if t <= 1 then return ((A + 2) * t - (A + 3)) * t * t + 1 end
    if t < 2 then return A * t ^ 3 - 5 * A * t ^ 2 + 8 * A * t - 4 * A end
    return 0
  end

  -- xt: N x C x H x W or N x C x D x H x W (nested tables); gt: the grid, N x H_out x W_out x 2 or
  -- N x D_out x H_out x W_out x 3
  local function ref(xt, gt, mode, pad, align)
    local out = {}
    for n, xn in ipairs(xt) do
      out[n] = {}
      for c, vol in ipairs(xn) do
        local three = type(vol[1][1]) == 'table'
        local sizes = three and { #vol[1][1], #vol[1], #vol } or { #vol[1], #vol } -- x's first
        -- the value at 0-based pixel {x, y(, z)}, 0 outside
        local function at(x, y, z)
          if x < 0 or x > sizes[1] - 1 or y < 0 or y > sizes[2] - 1 then return 0 end
          if not three then return vol[y + 1][x + 1] end
          if z < 0 or z > sizes[3] - 1 then return 0 end
          return vol[z + 1][y + 1][x + 1]
        end
        local function point(g)
          if mode == 'nearest' then
            return at(rint(source(g[1], sizes[1], pad, align)), rint(source(g[2], sizes[2], pad, align)),
              three and rint(source(g[3], sizes[3], pad, align)))
          elseif mode == 'bilinear' then
            local x, y = source(g[1], sizes[1], pad, align), source(g[2], sizes[2], pad, align)
            local x0, y0 = math.floor(x), math.floor(y)
            local dx, dy = x - x0, y - y0
            local function plane(z)
              return at(x0, y0, z) * (1 - dx) * (1 - dy) + at(x0 + 1, y0, z) * dx * (1 - dy)
                + at(x0, y0 + 1, z) * (1 - dx) * dy + at(x0 + 1, y0 + 1, z) * dx * dy
            end
            if not three then return plane() end
            local z = source(g[3], sizes[3], pad, align)
            local z0 = math.floor(z)
            return plane(z0) * (1 - (z - z0)) + plane(z0 + 1) * (z - z0)
          end
          -- bicubic: 4 x 4 pixels around the unpadded point, each pixel's coordinates padded
          local x, y = unnormalize(g[1], sizes[1], align), unnormalize(g[2], sizes[2], align)
          local v = 0
          for j = math.floor(y) - 1, math.floor(y) + 2 do
            for i = math.floor(x) - 1, math.floor(x) + 2 do
              v = v + cubic(x - i) * cubic(y - j) * at(padded(i, sizes[1], pad, align), padded(j, sizes[2], pad, align))
            end
          end
          return v
        end
        local function walk(t)
          if type(t[1]) == 'number' then return point(t) end
          local r = {}
          for i, s in ipairs(t) do r[i] = walk(s) end
          return r
        end
        out[n][c] = walk(gt[n])
      end
    end
    return out
  end

  it('matches the reference for each mode, padding mode and align_corners, float32 and float64, non-contiguous input', function()
    torch.manual_seed(41)
    for _, dt in ipairs { f64, torch.float32 } do
      local x = torch.randn(2, 3, 5, 4, { dtype = dt }):transpose(3, 4) -- 2 x 3 x 4 x 5
      local grid = torch.rand(2, 3, 6, 2, { dtype = dt }) * 4 - 2 -- well outside -1 .. 1 too
      -- a few exact half-pixel and border positions
      grid[1][1][1][1], grid[1][1][1][2] = 1, -1
      grid[1][1][2][1], grid[1][1][2][2] = 0, 0.25
      local xt, gt = x:totable(), grid:totable()
      for _, mode in ipairs { 'bilinear', 'nearest', 'bicubic' } do
        for _, pad in ipairs { 'zeros', 'border', 'reflection' } do
          for _, align in ipairs { false, true } do
            local y = F.grid_sample(x, grid, { mode = mode, padding_mode = pad, align_corners = align })
            assert.are.equal(dt, y.dtype)
            H.assert_values(y, ref(xt, gt, mode, pad, align), dt == f64 and 1e-10 or 1e-5,
              mode .. ' ' .. pad .. ' ' .. tostring(align))
          end
        end
      end
      -- positional options; the default is bilinear, zeros, align_corners false
      H.assert_values(F.grid_sample(x, grid, 'nearest', 'border', true), ref(xt, gt, 'nearest', 'border', true), tol(dt))
      H.assert_values(F.grid_sample(x, grid), ref(xt, gt, 'bilinear', 'zeros', false), dt == f64 and 1e-10 or 1e-5)
    end
  end)

  it('samples 5-D input (trilinear and nearest) for each padding mode and align_corners, float32 and float64', function()
    torch.manual_seed(46)
    for _, dt in ipairs { f64, torch.float32 } do
      local x = torch.randn(2, 2, 5, 4, 3, { dtype = dt }):permute(1, 2, 5, 4, 3) -- 2 x 2 x 3 x 4 x 5
      local grid = (torch.rand(2, 3, 2, 4, 3, { dtype = dt }) * 4 - 2):transpose(2, 3) -- 2 x 2 x 3 x 4 x 3
      grid[1][1][1][1][1], grid[1][1][1][1][2], grid[1][1][1][1][3] = 1, -1, 0.5
      local xt, gt = x:totable(), grid:totable()
      for _, mode in ipairs { 'bilinear', 'nearest' } do
        for _, pad in ipairs { 'zeros', 'border', 'reflection' } do
          for _, align in ipairs { false, true } do
            local y = F.grid_sample(x, grid, { mode = mode, padding_mode = pad, align_corners = align })
            assert.are.same({ 2, 2, 2, 3, 4 }, { table.unpack(y.shape) })
            H.assert_values(y, ref(xt, gt, mode, pad, align), dt == f64 and 1e-10 or 1e-5,
              mode .. ' ' .. pad .. ' ' .. tostring(align))
          end
        end
      end
    end
  end)

  it('with affine_grid: the identity reproduces the input, a shift of one pixel moves it', function()
    torch.manual_seed(42)
    local x = torch.randn(2, 3, 4, 5, { dtype = f64 })
    local id = torch.tensor({ { 1, 0, 0 }, { 0, 1, 0 } }, { dtype = f64 }):view(1, 2, 3):expand(2, 2, 3)
    for _, align in ipairs { false, true } do
      for _, mode in ipairs { 'bilinear', 'nearest', 'bicubic' } do
        local g = F.affine_grid(id, { 2, 3, 4, 5 }, { align_corners = align })
        H.assert_values(F.grid_sample(x, g, { mode = mode, align_corners = align }), x:totable(), 1e-12)
      end
    end
    local v = torch.randn(2, 3, 2, 4, 5, { dtype = f64 })
    local id3 = torch.eye(3, 4, { dtype = f64 }):view(1, 3, 4):expand(2, 3, 4)
    for _, align in ipairs { false, true } do
      for _, mode in ipairs { 'bilinear', 'nearest' } do
        local g = F.affine_grid(id3, { 2, 3, 2, 4, 5 }, { align_corners = align })
        H.assert_values(F.grid_sample(v, g, { mode = mode, align_corners = align }), v:totable(), 1e-12)
      end
    end
    -- x + 2 / (W - 1) in normalised coordinates is one pixel right with align_corners
    local shift = torch.tensor({ { { 1, 0, 0.5 }, { 0, 1, 0 } } }, { dtype = f64 })
    local y = F.grid_sample(x:narrow(1, 1, 1), F.affine_grid(shift, { 1, 3, 4, 5 }, { align_corners = true }),
      { align_corners = true, padding_mode = 'zeros' })
    H.assert_values(y:narrow(4, 1, 4), x:narrow(1, 1, 1):narrow(4, 2, 4):totable(), 1e-12)
    H.assert_values(y:select(4, 5), torch.zeros(1, 3, 4):totable(), 1e-12)
  end)

  it('passes gradcheck in the input and the grid for each padding mode, and in the input for nearest', function()
    torch.manual_seed(43)
    for _, pad in ipairs { 'zeros', 'border', 'reflection' } do
      for _, align in ipairs { false, true } do
        for _, mode in ipairs { 'bilinear', 'bicubic' } do
          local grid = (torch.rand(1, 2, 3, 2, { dtype = f64 }) * 3 - 1.5):requires_grad_()
          assert.is_true(gradcheck(function(x, g)
            return F.grid_sample(x, g, { mode = mode, padding_mode = pad, align_corners = align })
          end, { leaf({ 1, 2, 3, 4 }), grid }))
        end
        local grid3 = (torch.rand(1, 2, 1, 2, 3, { dtype = f64 }) * 3 - 1.5):requires_grad_()
        assert.is_true(gradcheck(function(x, g) return F.grid_sample(x, g, { padding_mode = pad, align_corners = align }) end,
          { leaf({ 1, 2, 2, 3, 3 }), grid3 }))
      end
    end
    local grid = torch.rand(1, 2, 2, 2, { dtype = f64 }) * 2 - 1
    assert.is_true(gradcheck(function(x) return F.grid_sample(x, grid, { mode = 'nearest' }) end, { leaf({ 1, 2, 3, 3 }) }))
    local grid3 = torch.rand(1, 2, 2, 1, 3, { dtype = f64 }) * 2 - 1
    assert.is_true(gradcheck(function(x) return F.grid_sample(x, grid3, { mode = 'nearest' }) end, { leaf({ 1, 2, 2, 3, 3 }) }))
  end)

  it('names bad input', function()
    local x, g = torch.randn(2, 1, 3, 3), torch.rand(2, 2, 2, 2)
    local v, g3 = torch.randn(2, 1, 2, 3, 3), torch.rand(2, 2, 2, 2, 3)
    H.raises(function() return F.grid_sample(x, g, { mode = 'cubic' }) end, 'grid_sample', 'mode', 'cubic')
    H.raises(function() return F.grid_sample(v, g3, { mode = 'bicubic' }) end, 'grid_sample', 'bicubic', '4-D', '5-D')
    H.raises(function() return F.grid_sample(x, g, { padding_mode = 'wrap' }) end, 'grid_sample', 'padding_mode')
    H.raises(function() return F.grid_sample(x[1], g) end, 'grid_sample', '4-D', '5-D', 'got 3-D')
    H.raises(function() return F.grid_sample(torch.randn(1, 1, 1, 2, 2, 2), g) end, 'grid_sample', 'got 6-D')
    H.raises(function() return F.grid_sample(x, g:narrow(1, 1, 1)) end, 'grid_sample', 'grid of shape')
    H.raises(function() return F.grid_sample(x, torch.rand(2, 2, 2, 3)) end, 'grid_sample', 'grid of shape')
    H.raises(function() return F.grid_sample(x, g3) end, 'grid_sample', 'grid of shape (N, H_out, W_out, 2)')
    H.raises(function() return F.grid_sample(v, g) end, 'grid_sample', 'grid of shape (N, D_out, H_out, W_out, 3)')
    H.raises(function() return F.grid_sample(v, torch.rand(2, 2, 2, 2, 2)) end, 'grid_sample', 'grid of shape')
    H.raises(function() return F.grid_sample(torch.randn(2, 1, 0, 3, 3), g3) end, 'grid_sample', 'non-empty spatial')
    H.raises(function() return F.grid_sample(x, g:double()) end, 'grid_sample', 'same dtype')
    H.raises(function() return F.grid_sample(x:long(), g:long()) end, 'grid_sample', 'floating point')
    H.raises(function() return F.grid_sample(x, g, { bogus = 1 }) end, 'grid_sample', 'bogus')
  end)
end)

describe('F.multi_margin_loss and nn.MultiMarginLoss', function()
  local function ref(xt, t, p, margin, w)
    local out = {}
    for n, row in ipairs(xt) do
      local y, s = t[n], 0
      for i = 1, #row do
        if i ~= y then
          local z = math.max(0, margin - row[y] + row[i]) ^ p
          s = s + z * (w and w[y] or 1)
        end
      end
      out[n] = s / #row
    end
    return out
  end
  local function mean(t)
    local s = 0
    for _, v in ipairs(t) do s = s + v end
    return s / #t
  end

  it('matches the reference for p, margin, weight and reduction, float32 and float64, transposed input', function()
    torch.manual_seed(44)
    for _, dt in ipairs { f64, torch.float32 } do
      local x = torch.randn(5, 4, { dtype = dt }):t() -- 4 x 5
      local t = torch.tensor({ 1, 5, 3, 3 })
      local w = torch.rand(5, { dtype = dt })
      local xt, tt, wt = x:totable(), t:totable(), w:totable()
      for _, g in ipairs { { 1, 1, false }, { 2, 0.7, true }, { 1, 2.5, true }, { 2, 1, false } } do
        local p, margin, use_w = table.unpack(g)
        local want = ref(xt, tt, p, margin, use_w and wt or nil)
        local o = { p = p, margin = margin, weight = use_w and w or nil }
        o.reduction = 'none'
        H.assert_values(F.multi_margin_loss(x, t, o), want, tol(dt))
        o.reduction = 'sum'
        H.close(F.multi_margin_loss(x, t, o):item(), mean(want) * 4, tol(dt))
        o.reduction = nil
        H.close(F.multi_margin_loss(x, t, o):item(), mean(want), tol(dt))
        H.close(nn.MultiMarginLoss(o)(x, t):item(), mean(want), tol(dt))
      end
      -- one sample: a 1-D input, its target a number tensor or a 1-element one
      local one = ref({ xt[2] }, { 5 }, 1, 1)[1]
      local l0 = F.multi_margin_loss(x[2], torch.tensor(5), { reduction = 'none' })
      assert.are.equal(0, l0:dim())
      H.close(l0:item(), one, tol(dt))
      assert.are.same({ 1 }, { table.unpack(F.multi_margin_loss(x[2], torch.tensor({ 5 }), { reduction = 'none' }).shape) })
    end
  end)

  it('passes gradcheck; the module keeps its weight as a buffer and prints as PyTorch', function()
    torch.manual_seed(45)
    local t = torch.tensor({ 2, 1, 3 })
    for _, p in ipairs { 1, 2 } do
      assert.is_true(gradcheck(function(x, w) return F.multi_margin_loss(x, t, { p = p, weight = w, margin = 0.5 }) end,
        { leaf({ 3, 4 }), (torch.rand(4, { dtype = f64 }) + 0.5):requires_grad_() }))
    end
    local m = nn.MultiMarginLoss({ weight = torch.ones(3) })
    assert.are.equal(1, #m:buffers())
    assert.are.equal('MultiMarginLoss()', tostring(m))
  end)

  it('names bad input', function()
    local x = torch.randn(3, 4)
    H.raises(function() return F.multi_margin_loss(x, torch.tensor({ 1, 2, 5 })) end, 'multi_margin_loss', 'out of range')
    H.raises(function() return F.multi_margin_loss(x, torch.tensor({ 0, 2, 3 })) end, 'multi_margin_loss', 'out of range')
    H.raises(function() return F.multi_margin_loss(x, torch.tensor({ 1, 2 })) end, 'multi_margin_loss', 'target size')
    H.raises(function() return F.multi_margin_loss(x, torch.tensor({ 1.0, 2.0, 3.0 })) end, 'multi_margin_loss', 'int64')
    H.raises(function() return F.multi_margin_loss(x, torch.tensor({ 1, 2, 3 }), { p = 3 }) end, 'multi_margin_loss', 'p == 1')
    H.raises(function() return F.multi_margin_loss(x, torch.tensor({ 1, 2, 3 }), { weight = torch.ones(3) }) end,
      'multi_margin_loss', 'weight size')
    H.raises(function() return F.multi_margin_loss(torch.randn(2, 3, 4), torch.tensor({ 1, 2 })) end, 'multi_margin_loss',
      'vector or matrix')
    H.raises(function() return nn.MultiMarginLoss({ p = 0 }) end, 'MultiMarginLoss', 'p == 1')
    H.raises(function() return nn.MultiMarginLoss({ reduction = 'avg' }) end, 'MultiMarginLoss', 'reduction')
  end)
end)

describe('F.multilabel_margin_loss and nn.MultiLabelMarginLoss', function()
  -- the targets of a row are its entries before the first 0 or -1
  local function ref(xt, tt)
    local out = {}
    for n, row in ipairs(xt) do
      local targets, is_target = {}, {}
      for _, k in ipairs(tt[n]) do
        if k < 1 then break end
        targets[#targets + 1] = k
        is_target[k] = true
      end
      local s = 0
      for _, j in ipairs(targets) do
        for i = 1, #row do
          if not is_target[i] then s = s + math.max(0, 1 - (row[j] - row[i])) end
        end
      end
      out[n] = s / #row
    end
    return out
  end

  it('matches the reference with 0 and -1 terminators, repeats and full rows, float32 and float64, transposed input', function()
    torch.manual_seed(46)
    for _, dt in ipairs { f64, torch.float32 } do
      local x = torch.randn(5, 5, { dtype = dt }):t()
      local t = torch.tensor({ { 2, 5, 0, 1, 1 }, { 1, 1, -1, 3, 0 }, { 0, 2, 3, 4, 5 }, { 4, 3, 2, 1, 5 }, { 3, -1, 2, 2, 2 } })
      local want = ref(x:totable(), t:totable())
      H.assert_values(F.multilabel_margin_loss(x, t, { reduction = 'none' }), want, tol(dt))
      local s = 0
      for _, v in ipairs(want) do s = s + v end
      H.close(F.multilabel_margin_loss(x, t, { reduction = 'sum' }):item(), s, tol(dt))
      H.close(F.multilabel_margin_loss(x, t):item(), s / 5, tol(dt))
      H.close(nn.MultiLabelMarginLoss()(x, t):item(), s / 5, tol(dt))
      H.close(F.multilabel_margin_loss(x, t:int()):item(), s / 5, tol(dt))
      -- one sample (1-D): a 0-D loss
      local l = F.multilabel_margin_loss(x[1], t[1], { reduction = 'none' })
      assert.are.equal(0, l:dim())
      H.close(l:item(), want[1], tol(dt))
    end
    -- the hand-computed value: x = (0.1, 0.2, 0.4, 0.8), targets 4 and 1:
    -- (1 - (0.8 - 0.2)) + (1 - (0.8 - 0.4)) + (1 - (0.1 - 0.2)) + (1 - (0.1 - 0.4)) = 3.4, over 4
    H.close(F.multilabel_margin_loss(torch.tensor({ { 0.1, 0.2, 0.4, 0.8 } }, { dtype = f64 }),
      torch.tensor({ { 4, 1, 0, 0 } })):item(), 0.85, 1e-12)
  end)

  it('passes gradcheck and names bad input', function()
    torch.manual_seed(47)
    local t = torch.tensor({ { 2, 3, 0, 0 }, { 4, -1, 1, 1 } })
    assert.is_true(gradcheck(function(x) return F.multilabel_margin_loss(x, t, { reduction = 'none' }) end, { leaf({ 2, 4 }) }))
    local x = torch.randn(2, 4)
    H.raises(function() return F.multilabel_margin_loss(x, torch.tensor({ { 5, 0, 0, 0 }, { 1, 0, 0, 0 } })) end,
      'multilabel_margin_loss', 'out of range')
    H.raises(function() return F.multilabel_margin_loss(x, torch.tensor({ { -2, 0, 0, 0 }, { 1, 0, 0, 0 } })) end,
      'multilabel_margin_loss', 'out of range')
    H.raises(function() return F.multilabel_margin_loss(x, torch.tensor({ 1, 2 })) end, 'multilabel_margin_loss', 'target size')
    H.raises(function() return F.multilabel_margin_loss(x, x) end, 'multilabel_margin_loss', 'int64')
    H.raises(function() return nn.MultiLabelMarginLoss({ weight = torch.ones(4) }) end, 'MultiLabelMarginLoss', 'weight')
  end)
end)

describe('F.ctc_loss and nn.CTCLoss', function()
  -- -log of the sum, over every path of t steps whose collapse (repeats merged, blanks removed) is
  -- the target, of the product of its probabilities
  local function brute(lp, n, steps, target, blank)
    local classes = #lp[1][n]
    local total = 0
    local path = {}
    local function walk(t, p)
      if t > steps then
        local out, prev = {}, nil
        for _, c in ipairs(path) do
          if c ~= prev and c ~= blank then out[#out + 1] = c end
          prev = c
        end
        if #out ~= #target then return end
        for i = 1, #out do if out[i] ~= target[i] then return end end
        total = total + p
        return
      end
      for c = 1, classes do
        path[t] = c
        walk(t + 1, p * math.exp(lp[t][n][c]))
      end
      path[t] = nil
    end
    walk(1, 1)
    return -math.log(total)
  end

  it('matches the sum over alignments for padded and concatenated targets, each reduction and blank, float32 and float64', function()
    torch.manual_seed(48)
    for _, dt in ipairs { f64, torch.float32 } do
      local lp = torch.randn(5, 4, 4, { dtype = dt }):log_softmax(3)
      local lpt = lp:totable()
      local targets = { { 2, 3, 3 }, { 4, 2 }, { 3 }, {} }
      local tin, tlen = { 5, 4, 3, 2 }, { 3, 2, 1, 0 }
      local want = {}
      for n = 1, 4 do want[n] = brute(lpt, n, tin[n], targets[n], 1) end
      -- padded (the padding, 0 here, is never read) and concatenated
      local padded = torch.tensor({ { 2, 3, 3 }, { 4, 2, 0 }, { 3, 0, 0 }, { 0, 0, 0 } })
      local concat = torch.tensor({ 2, 3, 3, 4, 2, 3 })
      local t_tol = dt == f64 and 1e-10 or 1e-5
      H.assert_values(F.ctc_loss(lp, padded, tin, tlen, { reduction = 'none' }), want, t_tol)
      H.assert_values(F.ctc_loss(lp, concat, torch.tensor(tin), torch.tensor(tlen), { reduction = 'none' }), want, t_tol)
      local s, m = 0, 0
      for n = 1, 4 do s, m = s + want[n], m + want[n] / math.max(tlen[n], 1) end
      H.close(F.ctc_loss(lp, padded, tin, tlen, { reduction = 'sum' }):item(), s, t_tol)
      H.close(F.ctc_loss(lp, padded, tin, tlen):item(), m / 4, t_tol)
      H.close(nn.CTCLoss()(lp, padded, tin, tlen):item(), m / 4, t_tol)
      -- another blank: class 3, targets of classes 1, 2 and 4
      local t3 = { { 1, 4 }, { 2, 2 }, { 4 }, { 1 } }
      local pb = torch.tensor({ { 1, 4 }, { 2, 2 }, { 4, 0 }, { 1, 0 } })
      local w3 = {}
      for n = 1, 4 do w3[n] = brute(lpt, n, tin[n], t3[n], 3) end
      H.assert_values(nn.CTCLoss({ blank = 3, reduction = 'none' })(lp, pb, tin, { 2, 2, 1, 1 }), w3, t_tol)
      -- unbatched
      local u = F.ctc_loss(lp:select(2, 1), torch.tensor({ 2, 3, 3 }), 5, 3, { reduction = 'none' })
      assert.are.equal(0, u:dim())
      H.close(u:item(), want[1], t_tol)
    end
  end)

  it('gives inf for a target that cannot be aligned, 0 with zero_infinity (and no gradient)', function()
    local lp = torch.randn(3, 2, 3, { dtype = f64 }):log_softmax(3):requires_grad_()
    -- 2 2 needs 3 steps (2, blank, 2); 2 steps cannot hold it
    local t = torch.tensor({ { 2, 2 }, { 2, 3 } })
    local l = F.ctc_loss(lp, t, { 2, 3 }, { 2, 2 }, { reduction = 'none' })
    assert.are.equal(math.huge, l[1])
    assert.is_true(l[2] < math.huge)
    local z = F.ctc_loss(lp, t, { 2, 3 }, { 2, 2 }, { reduction = 'sum', zero_infinity = true })
    H.close(z:item(), l[2], 1e-12)
    z:backward()
    H.assert_values(lp.grad:select(2, 1), torch.zeros(3, 3):totable(), 0)
    -- no input steps: an empty target has probability 1, any other 0
    local e = F.ctc_loss(lp:detach(), t, { 0, 0 }, { 0, 1 }, { reduction = 'none' })
    H.assert_values(e, { 0, math.huge }, 0)
  end)

  it('passes gradcheck with respect to the log-probabilities and through log_softmax', function()
    torch.manual_seed(49)
    local t = torch.tensor({ { 2, 3 }, { 3, 3 } })
    assert.is_true(gradcheck(function(lp) return F.ctc_loss(lp, t, { 4, 4 }, { 2, 2 }, { reduction = 'none' }) end,
      { leaf({ 4, 2, 3 }) }))
    assert.is_true(gradcheck(function(z) return F.ctc_loss(z:log_softmax(3), t, { 4, 3 }, { 2, 1 }) end,
      { leaf({ 4, 2, 3 }) }))
  end)

  it('names bad input', function()
    local lp = torch.randn(4, 2, 3):log_softmax(3)
    local t = torch.tensor({ { 2, 3 }, { 3, 2 } })
    H.raises(function() return F.ctc_loss(lp, torch.tensor({ { 1, 2 }, { 2, 3 } }), { 4, 4 }, { 2, 2 }) end, 'ctc_loss', 'blank')
    H.raises(function() return F.ctc_loss(lp, torch.tensor({ { 4, 2 }, { 2, 3 } }), { 4, 4 }, { 2, 2 }) end, 'ctc_loss', 'out of range')
    H.raises(function() return F.ctc_loss(lp, t, { 5, 4 }, { 2, 2 }) end, 'ctc_loss', 'at most 4')
    H.raises(function() return F.ctc_loss(lp, t, { 4, 4 }, { 3, 2 }) end, 'ctc_loss', 'size at least 3')
    H.raises(function() return F.ctc_loss(lp, t, { 4 }, { 2, 2 }) end, 'ctc_loss', 'input_lengths')
    H.raises(function() return F.ctc_loss(lp, t, { 4, 4 }, { 2, -1 }) end, 'ctc_loss', 'non-negative')
    H.raises(function() return F.ctc_loss(lp:half(), t, { 4, 4 }, { 2, 2 }) end, 'ctc_loss', 'float32 or float64')
    H.raises(function() return F.ctc_loss(lp, t:double(), { 4, 4 }, { 2, 2 }) end, 'ctc_loss', 'integer')
    H.raises(function() return F.ctc_loss(lp, torch.tensor({ 2, 3 }), { 4, 4 }, { 2, 2 }) end, 'ctc_loss', 'sum to more')
    H.raises(function() return F.ctc_loss(lp, t, { 4, 4 }, { 2, 2 }, { blank = 0 }) end, 'ctc_loss', 'blank')
    H.raises(function() return nn.CTCLoss({ blank = 0 }) end, 'CTCLoss', 'blank')
    assert.are.equal('CTCLoss()', tostring(nn.CTCLoss()))
  end)
end)
