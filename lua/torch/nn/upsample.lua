-- nn.Upsample, nn.UpsamplingNearest2d and nn.UpsamplingBilinear2d over F.interpolate; nn.PixelShuffle,
-- nn.PixelUnshuffle and nn.ChannelShuffle over F.pixel_shuffle, F.pixel_unshuffle and F.channel_shuffle.
local Module = require 'torch.nn.module'
local F = require 'torch.nn.functional'
local as_int = require('torch.composite').as_int

local M = {}
local pyrepr = Module._pyrepr

-- Upsample({size, scale_factor, mode = 'nearest', align_corners}) (or Upsample(size) with a number or
-- a table of sizes); modes as F.interpolate's: 'nearest', 'nearest-exact', 'area', 'linear' (3-D input),
-- 'bilinear' and 'bicubic' (4-D), 'trilinear' (5-D)
local Upsample = Module:extend('Upsample')
M.Upsample = Upsample

function Upsample:init(o)
  if type(o) == 'number' or (type(o) == 'table' and #o > 0) then o = { size = o } end
  o = F._opts_of(o, 'Upsample', { 'size', 'scale_factor', 'mode', 'align_corners', 'recompute_scale_factor' })
  if (o.size == nil) == (o.scale_factor == nil) then error('Upsample: exactly one of size or scale_factor must be given', 3) end
  self.size, self.scale_factor = o.size, o.scale_factor
  self.mode = o.mode or 'nearest'
  self.align_corners = o.align_corners
  self.recompute_scale_factor = o.recompute_scale_factor
end

function Upsample:forward(x)
  return F.interpolate(x, { size = self.size, scale_factor = self.scale_factor, mode = self.mode,
    align_corners = self.align_corners, recompute_scale_factor = self.recompute_scale_factor })
end

-- PyTorch prints a scale factor as a float
function Upsample:extra_repr()
  local s
  if self.scale_factor ~= nil then
    local f = self.scale_factor
    if type(f) == 'table' then
      local t = {}
      for i, v in ipairs(f) do t[i] = v + 0.0 end
      f = t
    else
      f = f + 0.0
    end
    s = 'scale_factor=' .. pyrepr(f)
  else
    s = 'size=' .. pyrepr(self.size)
  end
  return s .. ', mode=' .. self.mode
end

-- UpsamplingNearest2d(size, scale_factor) and UpsamplingBilinear2d(size, scale_factor) (or either with
-- {size = ..., scale_factor = ...}): Upsample with mode 'nearest', and 'bilinear' with align_corners
for name, mode in pairs { UpsamplingNearest2d = 'nearest', UpsamplingBilinear2d = 'bilinear' } do
  local cls = Upsample:extend(name)
  M[name] = cls
  function cls:init(size, scale_factor)
    if type(size) == 'table' and #size == 0 then
      local o = F._opts_of(size, name, { 'size', 'scale_factor' }, 4)
      size, scale_factor = o.size, o.scale_factor
    end
    if (size == nil) == (scale_factor == nil) then error(name .. ': exactly one of size or scale_factor must be given', 3) end
    Upsample.init(self, { size = size, scale_factor = scale_factor, mode = mode,
      align_corners = mode == 'bilinear' or nil })
  end
end

-- ChannelShuffle(groups): N x C x ... with its channels regrouped (F.channel_shuffle)
local ChannelShuffle = Module:extend('ChannelShuffle')
M.ChannelShuffle = ChannelShuffle
function ChannelShuffle:init(groups)
  groups = as_int(groups)
  if math.type(groups) ~= 'integer' or groups < 1 then
    error('ChannelShuffle: groups must be a positive integer, got ' .. tostring(groups), 3)
  end
  self.groups = groups
end
function ChannelShuffle:forward(x) return F.channel_shuffle(x, self.groups) end
function ChannelShuffle:extra_repr() return 'groups=' .. self.groups end

-- PixelShuffle(upscale_factor) and PixelUnshuffle(downscale_factor)
for name, spec in pairs { PixelShuffle = { 'pixel_shuffle', 'upscale_factor' },
  PixelUnshuffle = { 'pixel_unshuffle', 'downscale_factor' } } do
  local cls = Module:extend(name)
  M[name] = cls
  local fn, field = spec[1], spec[2]
  cls.init = function(self, r)
    r = as_int(r)
    if math.type(r) ~= 'integer' or r < 1 then error(string.format('%s: %s must be a positive integer, got %s', name, field, tostring(r)), 3) end
    self[field] = r
  end
  cls.forward = function(self, x) return F[fn](x, self[field]) end
  cls.extra_repr = function(self) return string.format('%s=%d', field, self[field]) end
end

return M
