-- F.channel_shuffle, F.affine_grid and F.grid_sample (4-D input N x C x H x W, and 5-D N x C x D x H x W),
-- composed of reshapes, matrix products and gathers, so that autograd differentiates grid_sample with
-- respect to both the input and the grid. Coordinates follow PyTorch (aten/src/ATen/native/GridSampler.h):
-- -1 and 1 are the centres of the corner pixels with align_corners, their outer edges without.
local torch = require 'torch'
local args = require('torch.options').args
local as_int = require('torch.composite').as_int

return function(F, u)
  local check_tensor, opts_of, cubic_weights = u.check_tensor, u.opts_of, u.cubic_weights

  --- F.channel_shuffle(x, groups) -> N x C x ... with the channels (dim 2) regrouped: C = g k, and
  -- channel (i - 1) k + j of the input becomes channel (j - 1) g + i
  function F.channel_shuffle(x, groups)
    local op = 'channel_shuffle'
    check_tensor(x, op)
    if x:dim() <= 2 then
      error(string.format('%s: expects input with > 2 dims, but got input with sizes %s', op, tostring(x.shape)), 2)
    end
    groups = as_int(groups)
    if math.type(groups) ~= 'integer' or groups < 1 then
      error(op .. ': Number of groups to divide channels in must be positive. Value of groups: ' .. tostring(groups), 2)
    end
    local c = x:size(2)
    if c % groups ~= 0 then
      error(string.format('%s: Number of channels must be divisible by groups. Got %d channels and %d groups.', op, c,
        groups), 2)
    end
    local split = { x:size(1), groups, c // groups }
    for d = 3, x:dim() do split[#split + 1] = x:size(d) end
    return x:reshape(split):transpose(2, 3):reshape(x.shape)
  end

  -- n positions from -1 to 1 (pixel centres with align_corners; scaled by (n - 1) / n without), 0 for n = 1
  local function axis(n, align_corners, f)
    if n <= 1 then return torch.zeros(n, f) end
    local r = torch.linspace(-1, 1, n, f)
    if not align_corners then r = r * ((n - 1) / n) end
    return r
  end

  --- F.affine_grid(theta, size, {align_corners = false}) -> the sampling grid of F.grid_sample:
  -- N x H x W x 2 for size {N, C, H, W}, theta (N x 2 x 3) applied to the normalised (x, y, 1) of each
  -- output pixel; N x D x H x W x 3 for size {N, C, D, H, W}, theta (N x 3 x 4) applied to (x, y, z, 1)
  function F.affine_grid(theta, size, o)
    local op = 'affine_grid'
    o = opts_of(o, op, { 'align_corners' })
    check_tensor(theta, op, 'theta')
    if not theta.dtype.is_floating_point then
      error(op .. ': Expected theta to have floating point type, but got ' .. tostring(theta.dtype), 2)
    end
    if type(size) ~= 'table' or torch.is_tensor(size) then
      error(op .. ': size must be a table {N, C, H, W} or {N, C, D, H, W}', 2)
    end
    if #size ~= 4 and #size ~= 5 then
      error(string.format('%s: only 4-D sizes {N, C, H, W} (2-D affine transforms) and 5-D sizes {N, C, D, H, W} '
        .. '(3-D affine transforms) are supported, got %d entries', op, #size), 2)
    end
    local nsp = #size - 2
    size = { table.unpack(size, 1, nsp + 2) }
    for i = 1, nsp + 2 do
      size[i] = as_int(size[i])
      if math.type(size[i]) ~= 'integer' or size[i] < 1 then
        error(string.format('%s: Expected non-zero, positive output size. Got {%s}', op, table.concat(size, ', ')), 2)
      end
    end
    local n = size[1]
    if theta:dim() ~= 3 or theta:size(1) ~= n or theta:size(2) ~= nsp or theta:size(3) ~= nsp + 1 then
      error(string.format('%s: Expected a batch of %dD affine matrices of shape Nx%dx%d for size {%s}. Got %s.', op, nsp,
        nsp, nsp + 1, table.concat(size, ', '), tostring(theta.shape)), 2)
    end
    local f = { dtype = theta.dtype, device = theta.device }
    local spatial = { table.unpack(size, 3) } -- {H, W} or {D, H, W}
    local points = 1
    for _, s in ipairs(spatial) do points = points * s end
    -- the columns x (along the last size), y (and z), and 1 of each output point
    local cols = {}
    for k = 1, nsp do
      local d = nsp - k + 1
      local shape = {}
      for j = 1, nsp do shape[j] = 1 end
      shape[d] = spatial[d]
      cols[k] = axis(spatial[d], o.align_corners, f):view(table.unpack(shape)):expand(table.unpack(spatial))
    end
    cols[nsp + 1] = torch.ones(spatial, f)
    local base = torch.stack(cols, nsp + 1):reshape(1, points, nsp + 1):expand(n, points, nsp + 1)
    local out = { n, table.unpack(spatial) }
    out[#out + 1] = nsp
    return base:bmm(theta:transpose(2, 3)):view(table.unpack(out))
  end

  -- a coordinate folded back into [twice_low / 2, twice_high / 2] by reflections at its ends
  local function reflect(c, twice_low, twice_high)
    if twice_low == twice_high then return c * 0 end
    local lo, span = twice_low / 2, (twice_high - twice_low) / 2
    local a = (c - lo):abs()
    local extra = a:fmod(span)
    local even = (a / span):floor():remainder(2):eq(0)
    return torch.where(even, extra + lo, (span + lo) - extra)
  end

  -- grid values (-1 .. 1) as pixel coordinates (0 .. n - 1) of an axis of n pixels
  local function unnormalize(g, n, align_corners)
    if align_corners then return (g + 1) * ((n - 1) / 2) end
    return ((g + 1) * n - 1) / 2
  end

  -- pixel coordinates of an axis of n pixels padded: clamped to the axis (border), or reflected at
  -- its ends and then clamped (reflection); unchanged for zeros (PyTorch's compute_coordinates)
  local function pad(c, n, padding_mode, align_corners)
    if padding_mode == 'border' then
      c = c:clamp(0, n - 1)
    elseif padding_mode == 'reflection' then
      if align_corners then c = reflect(c, 0, 2 * (n - 1)) else c = reflect(c, -1, 2 * n - 1) end
      c = c:clamp(0, n - 1)
    end
    return c
  end

  local MODES = { bilinear = true, nearest = true, bicubic = true }
  local PADDINGS = { zeros = true, border = true, reflection = true }
  local GRID_SHAPES = { '(N, H_out, W_out, 2)', '(N, D_out, H_out, W_out, 3)' }

  --- F.grid_sample(input, grid, {mode = 'bilinear' | 'nearest' | 'bicubic', padding_mode = 'zeros' |
  -- 'border' | 'reflection', align_corners = false}) (or those positionally): input N x C x H x W
  -- sampled at grid (N x H_out x W_out x 2, x then y, -1 .. 1) -> N x C x H_out x W_out, or input
  -- N x C x D x H x W (volumetric: 'bilinear' is trilinear; no 'bicubic') sampled at grid
  -- (N x D_out x H_out x W_out x 3, x, y, z) -> N x C x D_out x H_out x W_out. Outside the input,
  -- zeros, the border's values, or the values reflected at the border; 'bicubic' (Keys' cubic
  -- convolution, A = -0.75, on 4 x 4 pixels) pads each of its pixels so, as PyTorch does.
  function F.grid_sample(input, grid, ...)
    local op = 'grid_sample'
    check_tensor(input, op)
    check_tensor(grid, op, 'grid')
    local mode, padding_mode, align_corners = args(op, { ... }, { 'mode', 'padding_mode', 'align_corners' },
      { 'bilinear', 'zeros', false })
    if not MODES[mode] then
      error(op .. ": mode must be 'bilinear', 'nearest' or 'bicubic', got " .. tostring(mode), 2)
    end
    if not PADDINGS[padding_mode] then
      error(op .. ": padding_mode must be 'zeros', 'border' or 'reflection', got " .. tostring(padding_mode), 2)
    end
    local dim = input:dim()
    if dim ~= 4 and dim ~= 5 then
      error(op .. ': expected a 4-D input (N, C, H, W) or a 5-D one (N, C, D, H, W), got ' .. dim .. '-D', 2)
    end
    local nsp = dim - 2
    if mode == 'bicubic' and nsp ~= 2 then
      error(op .. ": mode 'bicubic' supports 4-D input (N, C, H, W) only, got 5-D", 2)
    end
    if grid:dim() ~= dim or grid:size(dim) ~= nsp or grid:size(1) ~= input:size(1) then
      error(string.format('%s: expected a grid of shape %s with N = %d for a %d-D input, got %s', op,
        GRID_SHAPES[nsp - 1], input:size(1), dim, tostring(grid.shape)), 2)
    end
    if input.dtype ~= grid.dtype then
      error(string.format('%s: expected input and grid to have the same dtype, but input has %s and grid has %s', op,
        tostring(input.dtype), tostring(grid.dtype)), 2)
    end
    if not input.dtype.is_floating_point then error(op .. ': expected a floating point input, got ' .. tostring(input.dtype), 2) end
    local n, c = input:size(1), input:size(2)
    -- the spatial sizes, x's first: W, H (, D)
    local sizes = {}
    for k = 1, nsp do
      sizes[k] = input:size(dim - k + 1)
      if sizes[k] == 0 then
        error(string.format('%s: expected input to have non-empty spatial dimensions, but input has sizes %s', op,
          tostring(input.shape)), 2)
      end
    end
    local out_shape, m = { n, c }, 1
    for d = 2, dim - 1 do
      out_shape[d + 1] = grid:size(d)
      m = m * grid:size(d)
    end
    local flat = input:reshape(n, c, -1)
    local g = grid:reshape(n, m, nsp)
    -- the values at integer pixel coordinates at[1..nsp] (N x M, float, x first), times wt; zero outside
    -- the input
    local function tap(at, wt)
      local inside = nil
      for k = 1, nsp do
        local ok = at[k]:ge(0):logical_and(at[k]:le(sizes[k] - 1))
        inside = inside and inside:logical_and(ok) or ok
      end
      local index, stride = 1, 1
      for k = 1, nsp do
        index = torch.where(inside, at[k], 0):long() * stride + index
        stride = stride * sizes[k]
      end
      return flat:gather(3, index:view(n, 1, m):expand(n, c, m)) * torch.where(inside, wt, 0):view(n, 1, m)
    end
    local coords = {}
    for k = 1, nsp do
      coords[k] = unnormalize(g:select(3, k), sizes[k], align_corners)
      -- bicubic pads the coordinates of its pixels instead
      if mode ~= 'bicubic' then coords[k] = pad(coords[k], sizes[k], padding_mode, align_corners) end
    end
    local out
    if mode == 'nearest' then
      local at = {}
      for k = 1, nsp do at[k] = coords[k]:round():detach() end
      out = tap(at, torch.ones_like(coords[1]))
    elseif mode == 'bilinear' then
      -- the 2^nsp corners around each point, x's bit first; a corner's weight is the product over the
      -- axes of 1 - the distance to it
      local lo, frac = {}, {}
      for k = 1, nsp do
        lo[k] = coords[k]:floor():detach()
        frac[k] = coords[k] - lo[k]
      end
      for corner = 0, (1 << nsp) - 1 do
        local at, wt = {}, nil
        for k = 1, nsp do
          local up = (corner >> (k - 1)) & 1 == 1
          at[k] = up and lo[k] + 1 or lo[k]
          local w = up and frac[k] or 1 - frac[k]
          wt = wt and wt * w or w
        end
        local v = tap(at, wt)
        out = out and out + v or v
      end
    else
      local x, y = coords[1], coords[2]
      local x0, y0 = x:floor():detach(), y:floor():detach()
      local wx, wy = cubic_weights(x - x0), cubic_weights(y - y0)
      local xs, ys = {}, {}
      for k = 1, 4 do
        xs[k] = pad(x0 + (k - 2), sizes[1], padding_mode, align_corners)
        ys[k] = pad(y0 + (k - 2), sizes[2], padding_mode, align_corners)
      end
      for j = 1, 4 do
        for i = 1, 4 do
          local v = tap({ xs[i], ys[j] }, wx[i] * wy[j])
          out = out and out + v or v
        end
      end
    end
    return out:view(table.unpack(out_shape))
  end
end
