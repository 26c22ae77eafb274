-- Classes for the Lua side: `local Net = Base:extend('Net')`, `function Net:init(...)` as the
-- constructor, `Net(...)` makes an instance, and a class can be extended again. A class is the
-- metatable of its instances; methods are found through the chain of parents (each class's own
-- metatable indexes its parent). Metamethods are not looked up through __index by Lua, so a new class
-- copies its parent's at extend time.
local class = {}

-- Lua reads metamethods raw from an instance's metatable: a class gets those of its parents when
-- it is made and, for ones a parent defined later, again when its first instance is made.
local METAMETHODS = { '__len', '__tostring', '__eq', '__lt', '__le', '__concat', '__call', '__close', '__gc',
  '__add', '__sub', '__mul', '__div', '__mod', '__pow', '__unm', '__idiv', '__band', '__bor', '__bxor', '__shl',
  '__shr', '__bnot', '__newindex', '__pairs' }

local function inherit_metamethods(cls)
  if rawget(cls, '__ready') then return end
  for _, k in ipairs(METAMETHODS) do
    if rawget(cls, k) == nil then
      local v = cls[k]
      if v ~= nil then rawset(cls, k, v) end
    end
  end
  rawset(cls, '__ready', true)
end

local function instantiate(cls, ...)
  inherit_metamethods(cls)
  local alloc = cls.__alloc
  local obj = alloc and alloc(cls) or setmetatable({}, cls)
  local init = cls.init
  if init then init(obj, ...) end
  return obj
end

-- Torch7's constructor name: defining `__init` or `init` on a class defines both, so Torch7 code
-- (`function Net:__init() Parent.__init(self) ... end`) runs unchanged and `Parent.__init` is the
-- parent's constructor whichever name it was written under.
local function define(cls, k, v)
  if k == 'init' or k == '__init' then
    rawset(cls, 'init', v)
    rawset(cls, '__init', v)
  else
    rawset(cls, k, v)
  end
end

local function class_tostring(cls) return "class '" .. tostring(rawget(cls, '__name')) .. "'" end

local function new_class(name, parent)
  if type(name) ~= 'string' or name == '' then
    error('extend: expected a class name (a non-empty string), got ' .. type(name), 3)
  end
  local cls = {}
  if parent then
    for k, v in pairs(parent) do
      if type(k) == 'string' and k:sub(1, 2) == '__' and k ~= '__index' and k ~= '__name' and k ~= '__ready'
        and k ~= '__init' then
        cls[k] = v
      end
    end
    -- an __index that is a function (custom lookup) is inherited; the plain form points at the class
    local pidx = rawget(parent, '__index')
    if pidx ~= nil and pidx ~= parent then cls.__index = pidx else cls.__index = cls end
  else
    cls.__index = cls
  end
  cls.__name = name
  cls.super = parent
  return setmetatable(cls, { __index = parent, __call = instantiate, __tostring = class_tostring,
    __newindex = define })
end

-- the root of every class made here
local Object = new_class('Object')
class.Object = Object

function Object:extend(name) return new_class(name, self) end

-- an instance prints as its class name unless the class says otherwise
function Object:__tostring() return (rawget(getmetatable(self), '__name') or 'Object') .. ' instance' end

-- class(name) or class(name, parent): a new class (parent defaults to Object)
setmetatable(class, {
  __call = function(_, name, parent) return new_class(name, parent or Object) end,
})

-- is cls (or a class that extends it) the class of obj? torch.Tensor matches tensors.
function class.isinstance(obj, cls)
  if type(cls) ~= 'table' then error('isinstance: expected a class as the second argument, got ' .. type(cls), 2) end
  local torch = package.loaded.torch
  if torch and rawequal(cls, torch.Tensor) then return torch.is_tensor(obj) end
  if type(obj) ~= 'table' then return false end
  local mt = getmetatable(obj)
  while type(mt) == 'table' do
    if rawequal(mt, cls) then return true end
    mt = rawget(mt, 'super')
  end
  return false
end

-- does class a extend class b (or equal it)?
function class.issubclass(a, b)
  local c = a
  while type(c) == 'table' do
    if rawequal(c, b) then return true end
    c = rawget(c, 'super')
  end
  return false
end

-- the class of an instance made here (nil for anything else)
function class.classof(obj)
  if type(obj) ~= 'table' then return nil end
  local mt = getmetatable(obj)
  if type(mt) == 'table' and rawget(mt, '__name') and getmetatable(mt) and getmetatable(mt).__call == instantiate then
    return mt
  end
  return nil
end

return class
