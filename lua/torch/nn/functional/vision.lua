-- F.channel_shuffle, F.affine_grid and F.grid_sample (4-D input: N x C x H x W), composed of reshapes,
-- matrix products and gathers, so that autograd differentiates grid_sample with respect to both the
-- input and the grid. Coordinates follow PyTorch (aten/src/ATen/native/GridSampler.h): -1 and 1 are
-- the centres of the corner pixels with align_corners, their outer edges without.
local torch = require 'torch'
local args = require('torch.options').args
local as_int = require('torch.composite').as_int

return function(F, u)
  local check_tensor, opts_of = u.check_tensor, u.opts_of

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

  --- F.affine_grid(theta, size, {align_corners = false}) -> N x H x W x 2 sampling grid for
  -- F.grid_sample: theta (N x 2 x 3) applied to the normalised (x, y, 1) of each output pixel; size is
  -- {N, C, H, W} (4-D only)
  function F.affine_grid(theta, size, o)
    local op = 'affine_grid'
    o = opts_of(o, op, { 'align_corners' })
    check_tensor(theta, op, 'theta')
    if not theta.dtype.is_floating_point then
      error(op .. ': Expected theta to have floating point type, but got ' .. tostring(theta.dtype), 2)
    end
    if type(size) ~= 'table' or torch.is_tensor(size) then error(op .. ': size must be a table {N, C, H, W}', 2) end
    if #size ~= 4 then
      error(string.format('%s: only 4-D sizes {N, C, H, W} (2-D affine transforms) are supported, got %d entries', op, #size), 2)
    end
    size = { table.unpack(size, 1, 4) }
    for i = 1, 4 do
      size[i] = as_int(size[i])
      if math.type(size[i]) ~= 'integer' or size[i] < 1 then
        error(string.format('%s: Expected non-zero, positive output size. Got {%s}', op, table.concat(size, ', ')), 2)
      end
    end
    local n, h, w = size[1], size[3], size[4]
    if theta:dim() ~= 3 or theta:size(1) ~= n or theta:size(2) ~= 2 or theta:size(3) ~= 3 then
      error(string.format('%s: Expected a batch of 2D affine matrices of shape Nx2x3 for size {%s}. Got %s.', op,
        table.concat(size, ', '), tostring(theta.shape)), 2)
    end
    local f = { dtype = theta.dtype, device = theta.device }
    local xs = axis(w, o.align_corners, f):view(1, w):expand(h, w)
    local ys = axis(h, o.align_corners, f):view(h, 1):expand(h, w)
    local base = torch.stack({ xs, ys, torch.ones(h, w, f) }, 3):reshape(1, h * w, 3):expand(n, h * w, 3)
    return base:bmm(theta:transpose(2, 3)):view(n, h, w, 2)
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

  -- grid values (-1 .. 1) as pixel coordinates (0 .. n - 1) of an axis of n pixels, padded
  local function source(g, n, padding_mode, align_corners)
    local c
    if align_corners then c = (g + 1) * ((n - 1) / 2) else c = ((g + 1) * n - 1) / 2 end
    if padding_mode == 'border' then
      c = c:clamp(0, n - 1)
    elseif padding_mode == 'reflection' then
      if align_corners then c = reflect(c, 0, 2 * (n - 1)) else c = reflect(c, -1, 2 * n - 1) end
      c = c:clamp(0, n - 1)
    end
    return c
  end

  local MODES = { bilinear = true, nearest = true }
  local PADDINGS = { zeros = true, border = true, reflection = true }

  --- F.grid_sample(input, grid, {mode = 'bilinear' | 'nearest', padding_mode = 'zeros' | 'border' |
  -- 'reflection', align_corners = false}) (or those positionally) -> N x C x H_out x W_out: input
  -- (N x C x H x W) sampled at grid (N x H_out x W_out x 2, x then y, -1 .. 1); outside the input,
  -- zeros, the border's values, or the values reflected at the border
  function F.grid_sample(input, grid, ...)
    local op = 'grid_sample'
    check_tensor(input, op)
    check_tensor(grid, op, 'grid')
    local mode, padding_mode, align_corners = args(op, { ... }, { 'mode', 'padding_mode', 'align_corners' },
      { 'bilinear', 'zeros', false })
    if not MODES[mode] then
      error(op .. ": mode must be 'bilinear' or 'nearest' ('bicubic' is not supported by lutorch), got " .. tostring(mode), 2)
    end
    if not PADDINGS[padding_mode] then
      error(op .. ": padding_mode must be 'zeros', 'border' or 'reflection', got " .. tostring(padding_mode), 2)
    end
    if input:dim() ~= 4 then
      error(op .. ': expected a 4-D input (N, C, H, W), got ' .. input:dim() .. '-D (volumetric sampling is not supported)', 2)
    end
    if grid:dim() ~= 4 or grid:size(4) ~= 2 or grid:size(1) ~= input:size(1) then
      error(string.format('%s: expected a grid of shape (N, H_out, W_out, 2) with N = %d, got %s', op, input:size(1),
        tostring(grid.shape)), 2)
    end
    if input.dtype ~= grid.dtype then
      error(string.format('%s: expected input and grid to have the same dtype, but input has %s and grid has %s', op,
        tostring(input.dtype), tostring(grid.dtype)), 2)
    end
    if not input.dtype.is_floating_point then error(op .. ': expected a floating point input, got ' .. tostring(input.dtype), 2) end
    local n, c, h, w = input:size(1), input:size(2), input:size(3), input:size(4)
    if h == 0 or w == 0 then
      error(string.format('%s: expected input to have non-empty spatial dimensions, but input has sizes %s', op,
        tostring(input.shape)), 2)
    end
    local ho, wo = grid:size(2), grid:size(3)
    local m = ho * wo
    local x = source(grid:select(4, 1), w, padding_mode, align_corners)
    local y = source(grid:select(4, 2), h, padding_mode, align_corners)
    local flat = input:reshape(n, c, h * w)
    -- the values at integer pixel (xi, yi) (N x H_out x W_out, float), times wt; zero outside the input
    local function tap(xi, yi, wt)
      local inside = xi:ge(0):logical_and(xi:le(w - 1)):logical_and(yi:ge(0)):logical_and(yi:le(h - 1))
      local xc = torch.where(inside, xi, 0):long()
      local yc = torch.where(inside, yi, 0):long()
      local at = (yc * w + xc + 1):view(n, 1, m):expand(n, c, m)
      return flat:gather(3, at) * torch.where(inside, wt, 0):view(n, 1, m)
    end
    local out
    if mode == 'nearest' then
      out = tap(x:round():detach(), y:round():detach(), torch.ones_like(x))
    else
      local x0, y0 = x:floor():detach(), y:floor():detach()
      local x1, y1 = x0 + 1, y0 + 1
      local wx1, wy1 = x - x0, y - y0
      local wx0, wy0 = 1 - wx1, 1 - wy1
      out = tap(x0, y0, wx0 * wy0) + tap(x1, y0, wx1 * wy0) + tap(x0, y1, wx0 * wy1) + tap(x1, y1, wx1 * wy1)
    end
    return out:view(n, c, ho, wo)
  end
end
