-- F.interpolate's modes 'bicubic', 'area' and 'nearest-exact' (and nn.Upsample with them), its
-- antialias option ('bilinear' and 'bicubic'), F.pdist,
-- F.triplet_margin_with_distance_loss with nn.TripletMarginWithDistanceLoss, and the deprecated
-- F.upsample aliases: values against references computed here in plain Lua (float64) output pixel by
-- output pixel, and against PyTorch's (spec/data/interpolate_reference.lua, written by
-- tools/gen_interpolate_reference.py); float32 and float64, non-contiguous inputs, gradcheck, errors.
local torch = require 'torch'
local H = require 'spec.helpers'
local nn, F = torch.nn, torch.nn.functional
local gradcheck = torch.autograd.gradcheck
local REF = require 'spec.data.interpolate_reference'

local f64 = torch.float64
local function leaf(...) return torch.randn({ ... }, { dtype = f64 }):requires_grad_() end
local function tol(dt) return dt == f64 and 1e-10 or 2e-5 end

-- the reference file's inputs: sin(0.37 k + 0.1), k = 0, 1, ... in row-major order
local function data(shape, dtype)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local t = {}
  for k = 0, n - 1 do t[k + 1] = math.sin(0.37 * k + 0.1) end
  return torch.tensor(t, { dtype = dtype or f64 }):reshape(shape)
end

-- the taps of output d of an axis n_in -> n_out: a list of {0-based source index, weight}, by the formulas
local function cubic(t, A)
  local at = math.abs(t)
  if at <= 1 then return ((A + 2) * at - (A + 3)) * at * at + 1 end
  if at < 2 then return ((A * at - 5 * A) * at + 8 * A) * at - 4 * A end
  return 0
end
local function taps(mode, d, n_in, n_out, factor, align, antialias)
  local scale
  if align then scale = n_out > 1 and (n_in - 1) / (n_out - 1) or 0
  elseif factor then scale = 1 / factor
  else scale = n_in / n_out end
  if antialias then
    -- the filter (a triangle, or the cubic with A = -0.5) centred at scale (d + 0.5) and widened by the
    -- scale when it is above 1, on the pixels whose centre i + 0.5 lies within its support (support 1,
    -- 2, times the widening, rounded as PyTorch's), normalised to sum 1
    local widen = math.max(scale, 1)
    local half = (mode == 'bilinear' and 1 or 2) * widen
    local centre = scale * (d + 0.5)
    local out, total = {}, 0
    for i = 0, n_in - 1 do
      if i >= math.floor(centre - half + 0.5) and i < math.floor(centre + half + 0.5) then
        local v = math.abs(i + 0.5 - centre) / widen
        local w = mode == 'bilinear' and math.max(0, 1 - v) or cubic(v, -0.5)
        out[#out + 1] = { i, w }
        total = total + w
      end
    end
    for _, tp in ipairs(out) do tp[2] = tp[2] / total end
    return out
  end
  if mode == 'nearest-exact' then return { { math.min(math.floor((d + 0.5) * scale), n_in - 1), 1 } } end
  if mode == 'area' then
    local lo, hi = math.floor(d * n_in / n_out), math.ceil((d + 1) * n_in / n_out)
    local out = {}
    for i = lo, hi - 1 do out[#out + 1] = { i, 1 / (hi - lo) } end
    return out
  end
  local src = align and d * scale or (d + 0.5) * scale - 0.5
  local f = math.floor(src)
  local out = {}
  for i = f - 1, f + 2 do out[#out + 1] = { math.max(0, math.min(i, n_in - 1)), cubic(src - i, -0.75) } end
  return out
end

-- the reference: each output pixel as the sum over its taps in every spatial dim of the product of the
-- weights times the input there; x a nested table, opts as F.interpolate's
local function reference(xt, shape, o)
  local nsp = #shape - 2
  local sizes, factors = {}, {}
  for i = 1, nsp do
    local n = shape[2 + i]
    if o.size then sizes[i] = type(o.size) == 'table' and o.size[i] or o.size
    else
      local f = type(o.scale_factor) == 'table' and o.scale_factor[i] or o.scale_factor
      sizes[i] = math.floor(n * f)
      if not o.recompute_scale_factor then factors[i] = f end
    end
  end
  local function at(t, idx) for _, i in ipairs(idx) do t = t[i + 1] end return t end
  local out = {}
  for b = 1, shape[1] do
    out[b] = {}
    for c = 1, shape[2] do
      local function fill(k, oidx)
        if k > nsp then
          -- the sum over the tap product
          local tl = {}
          for i = 1, nsp do
            tl[i] = taps(o.mode, oidx[i], shape[2 + i], sizes[i], factors[i], o.align_corners, o.antialias)
          end
          local function sum(j, sidx, w)
            if j > nsp then return w * at(xt[b][c], sidx) end
            local s = 0
            for _, tp in ipairs(tl[j]) do
              sidx[j] = tp[1]
              s = s + sum(j + 1, sidx, w * tp[2])
            end
            return s
          end
          return sum(1, {}, 1)
        end
        local r = {}
        for d = 0, sizes[k] - 1 do
          oidx[k] = d
          r[d + 1] = fill(k + 1, oidx)
        end
        return r
      end
      out[b][c] = fill(1, {})
    end
  end
  return out
end

describe("F.interpolate's bicubic, area and nearest-exact modes, and antialias", function()
  local CASES = {
    -- antialias: downsampling (the filter widened by the scale), upsampling, one axis of each
    { { 2, 2, 9, 8 }, { size = { 4, 3 }, mode = 'bilinear', antialias = true } },
    { { 1, 2, 9, 8 }, { size = { 4, 3 }, mode = 'bicubic', antialias = true } },
    { { 1, 1, 7, 10 }, { scale_factor = 0.35, mode = 'bilinear', antialias = true } },
    { { 1, 1, 7, 10 }, { scale_factor = { 0.5, 0.3 }, mode = 'bicubic', recompute_scale_factor = true, antialias = true } },
    { { 1, 2, 8, 9 }, { size = { 3, 5 }, mode = 'bilinear', align_corners = true, antialias = true } },
    { { 1, 1, 8, 9 }, { size = { 5, 2 }, mode = 'bicubic', align_corners = true, antialias = true } },
    { { 1, 1, 4, 9 }, { size = { 7, 4 }, mode = 'bicubic', antialias = true } },
    { { 1, 1, 3, 4 }, { size = { 5, 7 }, mode = 'bilinear', antialias = true } },
    { { 1, 1, 3, 4 }, { size = { 5, 7 }, mode = 'bicubic', antialias = true } },
    { { 1, 1, 6, 3 }, { size = { 1, 1 }, mode = 'bicubic', antialias = true } },
    { { 2, 3, 4, 5 }, { size = { 7, 3 }, mode = 'bicubic' } },
    { { 1, 2, 4, 5 }, { size = { 3, 8 }, mode = 'bicubic', align_corners = true } },
    { { 1, 2, 5, 4 }, { size = { 1, 1 }, mode = 'bicubic', align_corners = true } },
    { { 1, 1, 4, 5 }, { scale_factor = 1.7, mode = 'bicubic' } },
    { { 1, 1, 4, 5 }, { scale_factor = { 0.6, 2.5 }, mode = 'bicubic', recompute_scale_factor = true } },
    { { 2, 3, 7 }, { size = 3, mode = 'area' } },
    { { 1, 2, 5, 7 }, { size = { 3, 9 }, mode = 'area' } },
    { { 1, 2, 3, 4, 5 }, { size = { 2, 3, 4 }, mode = 'area' } },
    { { 1, 2, 6, 5 }, { scale_factor = 0.5, mode = 'area' } },
    { { 2, 2, 5 }, { scale_factor = 1.5, mode = 'nearest-exact' } },
    { { 1, 2, 4, 5 }, { size = { 7, 3 }, mode = 'nearest-exact' } },
    { { 1, 1, 4, 6, 5 }, { scale_factor = { 0.75, 1.5, 2 }, mode = 'nearest-exact' } },
  }

  it('matches the per-pixel formulas, float32 and float64, on non-contiguous inputs', function()
    torch.manual_seed(1)
    for _, case in ipairs(CASES) do
      local shape, o = case[1], case[2]
      for _, dt in ipairs { f64, torch.float32 } do
        -- the input as the transpose of a contiguous tensor of the last two dims swapped
        local swapped = { table.unpack(shape) }
        swapped[#shape], swapped[#shape - 1] = shape[#shape - 1], shape[#shape]
        local x = torch.randn(swapped, { dtype = dt }):transpose(-1, -2)
        assert.is_false(x:is_contiguous())
        local y = F.interpolate(x, o)
        H.assert_values(y, reference(x:totable(), shape, o), tol(dt), o.mode)
      end
    end
  end)

  it("matches PyTorch's values", function()
    for _, r in ipairs(REF.interpolate) do
      H.assert_values(F.interpolate(data(r.shape), r.opts), r.out, 1e-12, r.opts.mode)
    end
    H.assert_values(F.upsample_bilinear(data { 1, 2, 3, 4 }, { 5, 3 }), REF.upsample_bilinear, 1e-12, 'upsample_bilinear')
  end)

  it('passes gradcheck in each mode', function()
    for _, o in ipairs {
      { size = { 5, 3 }, mode = 'bicubic' }, { size = { 2, 4 }, mode = 'bicubic', align_corners = true },
      { size = { 2, 5 }, mode = 'area' }, { size = 4, mode = 'area' }, { size = { 2, 3, 2 }, mode = 'area' },
      { scale_factor = 1.5, mode = 'nearest-exact' },
      { size = { 2, 3 }, mode = 'bilinear', antialias = true }, { size = { 2, 2 }, mode = 'bicubic', antialias = true },
      { size = { 5, 2 }, mode = 'bicubic', align_corners = true, antialias = true },
      { scale_factor = 0.6, mode = 'bilinear', antialias = true },
    } do
      local n = type(o.size) == 'table' and #o.size or (o.size and 1 or 2)
      local x = n == 1 and leaf(1, 2, 5) or n == 2 and leaf(1, 2, 3, 4) or leaf(1, 1, 3, 4, 3)
      assert.is_true(gradcheck(function(t) return F.interpolate(t, o) end, { x }), o.mode)
    end
  end)

  it('nn.Upsample takes the new modes', function()
    local x = torch.randn(1, 2, 3, 4, { dtype = f64 })
    for _, mode in ipairs { 'bicubic', 'area', 'nearest-exact' } do
      local up = nn.Upsample { size = { 5, 6 }, mode = mode }
      H.assert_values(up(x), F.interpolate(x, { size = { 5, 6 }, mode = mode }):totable(), 0, mode)
    end
  end)

  it('refuses a wrong dimension for a mode, bad sizes, align_corners where it does not apply, antialias but for '
    .. 'bilinear and bicubic', function()
    H.raises(function() F.interpolate(torch.randn(1, 2, 5), { size = 3, mode = 'bicubic' }) end, 'interpolate', 'bicubic', '3-D')
    H.raises(function() F.interpolate(torch.randn(1, 2, 3, 4, 5), { size = 3, mode = 'bicubic' }) end, 'interpolate', 'bicubic')
    H.raises(function() F.interpolate(torch.randn(2, 5), { size = 3, mode = 'area' }) end, 'interpolate', '2-D')
    H.raises(function() F.interpolate(torch.randn(1, 2, 5, 5), { size = { 3 }, mode = 'area' }) end, 'interpolate', 'size')
    H.raises(function() F.interpolate(torch.randn(1, 2, 5, 5), { size = 0, mode = 'nearest-exact' }) end, 'interpolate',
      'positive')
    H.raises(function() F.interpolate(torch.randn(1, 2, 5, 5), { size = 3, mode = 'area', align_corners = true }) end,
      'interpolate', 'align_corners')
    H.raises(function() F.interpolate(torch.randn(1, 2, 5, 5), { size = 3, mode = 'nearest', antialias = true }) end,
      'interpolate', 'antialias', "'nearest'")
    H.raises(function() F.interpolate(torch.randn(1, 2, 5, 5), { size = 3, mode = 'area', antialias = true }) end,
      'interpolate', 'antialias', "'area'")
    H.raises(function() F.interpolate(torch.randn(1, 2, 5), { size = 3, mode = 'linear', antialias = true }) end,
      'interpolate', 'antialias', '3-D')
    H.raises(function() F.interpolate(torch.randn(1, 2, 3, 4, 5), { size = 3, mode = 'trilinear', antialias = true }) end,
      'interpolate', 'antialias', '5-D')
  end)

  it("antialias: upsampling by the triangle filter (align_corners false) is plain bilinear interpolation", function()
    -- (not so with align_corners, nor for bicubic: PyTorch's antialiased filters keep their own
    -- centres and their own cubic, A = -0.5, when upsampling)
    local x = torch.randn(2, 3, 4, 5, { dtype = f64 })
    for _, size in ipairs { { 7, 9 }, { 4, 11 }, { 8, 10 } } do
      H.assert_values(F.interpolate(x, { size = size, mode = 'bilinear', antialias = true }),
        F.interpolate(x, { size = size, mode = 'bilinear' }):totable(), 1e-12)
    end
  end)
end)

describe('the deprecated F.upsample aliases', function()
  it('are F.interpolate, nearest, and bilinear with align_corners', function()
    local x = torch.randn(1, 2, 3, 4, { dtype = f64 })
    H.assert_values(F.upsample(x, { size = { 4, 5 }, mode = 'bicubic' }),
      F.interpolate(x, { size = { 4, 5 }, mode = 'bicubic' }):totable(), 0)
    H.assert_values(F.upsample_nearest(x, nil, 2), F.interpolate(x, { scale_factor = 2 }):totable(), 0)
    H.assert_values(F.upsample_nearest(x, { scale_factor = 2 }), F.interpolate(x, { scale_factor = 2 }):totable(), 0)
    H.assert_values(F.upsample_bilinear(x, { 5, 7 }),
      F.interpolate(x, { size = { 5, 7 }, mode = 'bilinear', align_corners = true }):totable(), 0)
  end)
end)

describe('F.pdist', function()
  local function norm(a, b, p)
    local s = 0
    for k = 1, #a do s = s + math.abs(a[k] - b[k]) ^ p end
    return s ^ (1 / p)
  end

  it('gives the distances of the row pairs i < j in order, float32 and float64, non-contiguous', function()
    torch.manual_seed(2)
    for _, dt in ipairs { f64, torch.float32 } do
      for _, p in ipairs { 2, 1, 3, 0.5 } do
        local x = torch.randn(4, 6, { dtype = dt }):t() -- 6 x 4
        local xt, want = x:totable(), {}
        for i = 1, 6 do
          for j = i + 1, 6 do want[#want + 1] = norm(xt[i], xt[j], p) end
        end
        local y = F.pdist(x, p)
        assert.are.same({ 15 }, { table.unpack(y.shape) })
        H.assert_values(y, want, tol(dt), 'p = ' .. p)
      end
    end
    assert.are.equal(0, F.pdist(torch.randn(1, 3)):numel())
  end)

  it("matches PyTorch's values and passes gradcheck", function()
    for _, r in ipairs(REF.pdist) do H.assert_values(F.pdist(data(r.shape), r.p), r.out, 1e-12, 'p = ' .. r.p) end
    for _, p in ipairs { 2, 1, 3 } do
      assert.is_true(gradcheck(function(t) return F.pdist(t, p) end, { leaf(4, 3) }))
    end
  end)

  it('refuses a non-2-D input and a negative p', function()
    H.raises(function() F.pdist(torch.randn(2, 3, 4)) end, 'pdist', '2-D')
    H.raises(function() F.pdist(torch.randn(3, 4), -1) end, 'pdist', 'p')
  end)
end)

describe('F.triplet_margin_with_distance_loss', function()
  local function l2(a, b)
    local s = 0
    for k = 1, #a do s = s + (a[k] - b[k] + 1e-6) ^ 2 end
    return math.sqrt(s)
  end
  local function l1(a, b)
    local s = 0
    for k = 1, #a do s = s + math.abs(a[k] - b[k]) end
    return s
  end

  -- the loss of each triplet by the formula, reduced
  local function reference(a, p, n, dist, margin, swap, reduction)
    local at, pt, nt = a:totable(), p:totable(), n:totable()
    local l, total = {}, 0
    for i = 1, #at do
      local dn = dist(at[i], nt[i])
      if swap then dn = math.min(dn, dist(pt[i], nt[i])) end
      l[i] = math.max(0, margin + dist(at[i], pt[i]) - dn)
      total = total + l[i]
    end
    if reduction == 'none' then return l end
    return reduction == 'sum' and total or total / #at
  end

  it('is max(0, margin + d(a, p) - d(a, n)) with a Lua distance function, swap and each reduction', function()
    torch.manual_seed(3)
    local manhattan = function(x, y) return (x - y):abs():sum(-1) end
    for _, dt in ipairs { f64, torch.float32 } do
      local a, p, n = torch.randn(4, 6, { dtype = dt }):t(), torch.randn(6, 4, { dtype = dt }), torch.randn(6, 4, { dtype = dt })
      for _, c in ipairs {
        { nil, l2, 1, false, 'mean' }, { manhattan, l1, 2, false, 'sum' }, { manhattan, l1, 3, true, 'none' },
        { nil, l2, 0.5, true, 'mean' },
      } do
        local o = { distance_function = c[1], margin = c[3], swap = c[4], reduction = c[5] }
        local want = reference(a, p, n, c[2], c[3], c[4], c[5])
        local got = F.triplet_margin_with_distance_loss(a, p, n, o)
        local m = nn.TripletMarginWithDistanceLoss(o)(a, p, n)
        if type(want) == 'table' then
          H.assert_values(got, want, tol(dt)); H.assert_values(m, want, tol(dt))
        else
          H.close(got:item(), want, tol(dt)); H.close(m:item(), want, tol(dt))
        end
      end
    end
  end)

  it("matches PyTorch's values and passes gradcheck", function()
    local a = data { 4, 5 }
    local p, n = a:flip(1) * 0.8, a:flip(2) * 1.3
    local cosine = function(x, y) return 1 - F.cosine_similarity(x, y) end
    for _, r in ipairs(REF.triplet) do
      local o = { margin = r.opts.margin, swap = r.opts.swap, reduction = r.opts.reduction,
        distance_function = r.distance == 'cosine' and cosine or nil }
      local got = F.triplet_margin_with_distance_loss(a, p, n, o)
      if type(r.out) == 'table' then H.assert_values(got, r.out, 1e-12) else H.close(got:item(), r.out, 1e-12) end
    end
    assert.is_true(gradcheck(function(x, y, z)
      return F.triplet_margin_with_distance_loss(x, y, z, { distance_function = cosine, swap = true, margin = 3 })
    end, { leaf(3, 4), leaf(3, 4), leaf(3, 4) }))
  end)

  it('refuses a bad margin, a non-function distance and inputs of different dims', function()
    local a = torch.randn(3, 4)
    H.raises(function() F.triplet_margin_with_distance_loss(a, a, a, { margin = 0 }) end,
      'triplet_margin_with_distance_loss', 'margin')
    H.raises(function() F.triplet_margin_with_distance_loss(a, a, a, { distance_function = 3 }) end,
      'triplet_margin_with_distance_loss', 'distance_function')
    H.raises(function() F.triplet_margin_with_distance_loss(a, a, torch.randn(3)) end,
      'triplet_margin_with_distance_loss', 'dimension')
    H.raises(function() nn.TripletMarginWithDistanceLoss { margin = -1 } end, 'TripletMarginWithDistanceLoss', 'margin')
  end)
end)
