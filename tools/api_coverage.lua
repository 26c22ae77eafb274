-- The lutorch side of tools/api_coverage.py: reads lines `family name` on stdin (families torch,
-- Tensor, nn.functional, linalg, special, fft) and prints those that lutorch lacks, one a line, in
-- the same form; a family whose table lutorch has none of prints `family *` once.
-- Run by the Python script: build/lutorch tools/api_coverage.lua < names
local torch = require 'torch'

-- tensors to read properties from: a plain one, a non-leaf (x.grad_fn) and a leaf with a
-- gradient (x.grad)
local leaf = torch.zeros(2, 2, { requires_grad = true })
local probes = { torch.zeros(2, 2), leaf * 2 }
probes[2]:sum():backward()
probes[3] = leaf
local tables = {
  torch = torch,
  ['nn.functional'] = torch.nn.functional,
  linalg = torch.linalg,
  special = torch.special,
  fft = rawget(torch, 'fft'),
}

-- whether lutorch has the name in the family: a function or value of its table; for Tensor a
-- method or a property of one of the probes
local function has(family, name)
  if family == 'Tensor' then
    if torch.Tensor[name] ~= nil then return true end
    for _, x in ipairs(probes) do
      local ok, v = pcall(function() return x[name] end)
      if ok and v ~= nil then return true end
    end
    return false
  end
  local ok, v = pcall(function() return tables[family][name] end)
  return ok and v ~= nil
end

local absent = {}
for line in io.lines() do
  local family, name = line:match('^(%S+) (%S+)$')
  if family then
    if family ~= 'Tensor' and tables[family] == nil then
      if not absent[family] then print(family .. ' *') end
      absent[family] = true
    elseif not has(family, name) then
      print(family .. ' ' .. name)
    end
  end
end
