-- A Dataset for spec/dtype_info_spec.lua, rebuilt in DataLoader workers by requiring this module:
-- sample i is torch.tensor({i + 0.5}) (a Lua float: a tensor of the default dtype of the state
-- that makes it) and the id of the worker that made it (0 in the main thread).
local torch = require 'torch'
local data = require 'torch.data'
local dataloader = require 'torch.data.dataloader'

local M = {}

local Halves = data.Dataset:extend('Halves')
M.Halves = Halves
function Halves:init(n) self.n = n end
function Halves:__len() return self.n end
function Halves:get(i)
  local info = dataloader.get_worker_info()
  return torch.tensor({ i + 0.5 }), info and info.id or 0
end

return M
