-- torch.data.worker: the code a DataLoader worker's Lua state runs (bindings/data_worker.c starts
-- it), and the two helpers that move objects between Lua states.
--
-- How a worker gets its dataset (no bytecode, no closures cross between states):
--   1. dataset_factory = 'mymodule.make' (a DataLoader option): each worker calls
--      require('mymodule').make(table.unpack(dataset_args)) and uses what it returns.
--   2. dataset_module = 'mymodule': each worker calls the class that require('mymodule') returns
--      (or require('mymodule')[<the dataset's class name>]) with table.unpack(dataset_args).
--   3. Otherwise the dataset object itself is sent: its class is found by the module that returns
--      it (a loaded module whose value is the class, or a table holding it, e.g. TensorDataset in
--      torch.data.dataset, FashionMNIST in torch.data.datasets), and its fields are copied:
--      tensors by reference (shared, not copied), numbers, strings, booleans, dtypes, devices,
--      tables of them, and objects of such classes. The worker requires the module and sets the
--      class on the copied fields; init is not run again. A function in a field (a transform) or a
--      class defined outside any module cannot be sent: the loader says so and names 1 and 2.
-- collate_fn and worker_init_fn cross as names ('mymodule.fn'); the default collate needs none.
local torch = require 'torch'

local M = {}

-- ---- finding and rebuilding classes ----
local SKIP = { _G = true }
local found = setmetatable({}, { __mode = 'k' })

local function class_name(mt)
  local n = rawget(mt, '__name')
  return type(n) == 'string' and n or tostring(mt)
end

-- class_path(mt, obj) -> module name, key (nil when the module is the class) | nil, why
function M.class_path(mt)
  local hit = found[mt]
  if hit then return hit[1], hit[2] end
  local loaded = package.loaded
  for name, mod in next, loaded do
    if not SKIP[name] and rawequal(mod, mt) then
      found[mt] = { name }
      return name, nil
    end
  end
  local best, best_key
  for name, mod in next, loaded do
    if not SKIP[name] and type(name) == 'string' and type(mod) == 'table' then
      for k, v in next, mod do
        -- the shortest module name wins, so that the choice does not depend on table order
        if rawequal(v, mt) and type(k) == 'string' and (not best or #name < #best or (#name == #best and name < best)) then
          best, best_key = name, k
        end
      end
    end
  end
  if best then
    found[mt] = { best, best_key }
    return best, best_key
  end
  return nil, string.format("is an object of class '%s', which no loaded module returns (a worker rebuilds an object by requiring the module that returns its class)",
    class_name(mt))
end

-- as torch.data.dataset's construct: a class made by Dataset:extend copies the metamethods it
-- inherits into itself when its first instance is made; an object rebuilt here is a first instance
local METAMETHODS = { '__len', '__tostring', '__eq', '__lt', '__le', '__concat', '__call', '__close',
  '__add', '__sub', '__mul', '__div', '__unm' }
local function ready(cls)
  local idx = rawget(cls, '__index') -- the class itself, or a lookup function (Dataset's)
  if (idx ~= cls and type(idx) ~= 'function') or rawget(cls, '__ready') then return end
  for _, k in ipairs(METAMETHODS) do
    if rawget(cls, k) == nil then
      local v = cls[k]
      if v ~= nil then rawset(cls, k, v) end
    end
  end
  rawset(cls, '__ready', true)
end

-- rebuild(module, key, fields): the object whose class require(module)[key] is, with these fields
function M.rebuild(modname, key, fields)
  local mod = require(modname)
  local cls = mod
  if key ~= nil then
    if type(mod) ~= 'table' then
      error(string.format("DataLoader: module '%s' returned a %s, expected a table holding class '%s'", modname,
        type(mod), key), 0)
    end
    cls = mod[key]
  end
  if type(cls) ~= 'table' then
    error(string.format("DataLoader: module '%s' has no class %s (got a %s)", modname, tostring(key or ''),
      type(cls)), 0)
  end
  ready(cls)
  return setmetatable(fields, cls)
end

-- 'a.b.fn' -> require('a.b').fn
function M.resolve(name, what)
  if type(name) ~= 'string' then
    error(string.format('DataLoader: %s should be a function name (a string), got %s', what, type(name)), 0)
  end
  local modname, fname = name:match('^(.+)%.([^.]+)$')
  if not modname then
    error(string.format("DataLoader: %s '%s' should be a module-qualified function name, as 'mymodule.fn'", what,
      name), 0)
  end
  local ok, mod = pcall(require, modname)
  if not ok then
    error(string.format("DataLoader: %s '%s': cannot require module '%s': %s", what, name, modname, tostring(mod)), 0)
  end
  local fn = type(mod) == 'table' and mod[fname] or nil
  if type(fn) ~= 'function' and not (type(fn) == 'table' and getmetatable(fn) and getmetatable(fn).__call) then
    error(string.format("DataLoader: %s '%s': module '%s' has no function '%s'", what, name, modname, fname), 0)
  end
  return fn
end

local function unpack_args(args)
  if args == nil then return end
  return table.unpack(args, 1, args.n or #args)
end

-- ---- in the worker ----
-- start(init, info) -> run(indices): builds this worker's dataset; run returns a batch packed as
-- table.pack(collate_fn(samples)).
--   init: dataset | factory, args | module, class, args; collate (name), worker_init (name)
--   info: id (1-based), num_workers, seed, own_generator
function M.start(init, info)
  os.exit = function() error('os.exit cannot be called in a DataLoader worker (it would end the process from a background thread)', 2) end
  -- seeded as PyTorch's workers (torch and random with the worker's seed); torch's generator is
  -- this thread's own only when the core provides per-thread generators
  math.randomseed(info.seed)
  if info.own_generator then torch.manual_seed(info.seed) end
  local L = require 'torch.data.dataloader'
  local winfo = { id = info.id, num_workers = info.num_workers, seed = info.seed }
  L._set_worker_info(winfo)
  local data = require 'torch.data'
  if rawget(data, 'get_worker_info') == nil then rawset(data, 'get_worker_info', L.get_worker_info) end
  local ds
  if init.factory then
    ds = M.resolve(init.factory, 'dataset_factory')(unpack_args(init.args))
    if ds == nil then error(string.format("DataLoader: dataset_factory '%s' returned nil", init.factory), 0) end
  elseif init.module then
    local mod = require(init.module)
    local cls = mod
    if type(mod) == 'table' and getmetatable(mod) == nil and init.class then cls = mod[init.class] end
    if cls == nil then
      error(string.format("DataLoader: dataset_module '%s' returns neither a class nor a table holding class '%s'",
        init.module, tostring(init.class)), 0)
    end
    ds = cls(unpack_args(init.args))
  else
    ds = init.dataset
  end
  winfo.dataset = ds
  if init.worker_init then M.resolve(init.worker_init, 'worker_init_fn')(info.id) end
  local collate = init.collate and M.resolve(init.collate, 'collate_fn') or L.default_collate
  if init.stream then return L._stream_fn(ds, collate, init.stream.batch_size, init.stream.drop_last) end
  return L._batch_fn(ds, collate)
end

return M
