-- torch.utils.hooks: the handles that hook registrations return (PyTorch's RemovableHandle).
-- A hook list is an array of {id = n, fn = hook} in registration order; add appends one and returns
-- its handle: h:remove() takes it out (again: nothing), and the handle is also a to-be-closed value
-- (`local h <close> = x:register_hook(fn)`).
local M = {}

local count = 0

local RemovableHandle = {}
RemovableHandle.__index = RemovableHandle
RemovableHandle.__name = 'RemovableHandle'
function RemovableHandle:remove()
  local list = self.hooks
  for i = 1, #list do
    if list[i].id == self.id then table.remove(list, i); break end
  end
end
RemovableHandle.__close = RemovableHandle.remove
M.RemovableHandle = RemovableHandle

function M.add(list, fn)
  count = count + 1
  list[#list + 1] = { id = count, fn = fn }
  return setmetatable({ hooks = list, id = count }, RemovableHandle)
end

-- whether v can be called: a function or an object whose metatable has __call
function M.callable(v)
  local mt = getmetatable(v)
  return type(v) == 'function' or (type(mt) == 'table' and mt.__call ~= nil)
end

-- a copy of a hook list's functions, so that a hook may remove itself (or add others) while it runs
function M.snapshot(list)
  local c = {}
  for i = 1, #list do c[i] = list[i].fn end
  return c
end

return M
