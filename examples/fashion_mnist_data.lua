-- A Fashion-MNIST dataset with a per-sample transform written in Lua (a random horizontal flip),
-- for the examples' --augment option. It lives in a module of its own so that DataLoader workers
-- (num_workers > 0, each a thread with its own Lua state) can rebuild it by name.
local torch = require 'torch'
local data = torch.data

local M = {}

local Flipped = data.Dataset:extend('FlippedFashionMNIST')
M.FlippedFashionMNIST = Flipped

function Flipped:init(train)
  local ds = data.datasets.FashionMNIST { train = train }
  self.images, self.targets = ds.data, ds.targets
  self.reverse = torch.arange(28, 0, -1) -- 28..1: the columns mirrored
end

function Flipped:__len() return self.images:size(1) end

function Flipped:get(i)
  local img = self.images[i]
  if torch.rand(1):item() < 0.5 then img = img:index_select(2, self.reverse) end
  return img, self.targets[i]
end

return M
