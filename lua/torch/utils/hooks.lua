-- torch.utils.hooks: the handles that hook registrations return (PyTorch's RemovableHandle).
-- A hook list is an array of {id = n, fn = hook} in registration order; add appends one and returns
-- its handle: h:remove() takes it out (again: nothing), and the handle is also a to-be-closed value
-- (`local h <close> = x:register_hook(fn)`).
-- 3.0 as 3 (composite's as_int: composite is loaded after torch.autograd, which loads this file)
local function as_int(v) return math.type(v) and math.tointeger(v) or v end
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

-- ---- module backward hooks (m:register_full_backward_hook), as PyTorch's BackwardHook: a module
-- call with such hooks passes its tensor inputs and outputs that require grad through identity
-- autograd functions. The outputs' one, in backward, keeps the gradients of the outputs; the inputs'
-- one, reached after the module's own backward, calls each hook(module, grad_input, grad_output)
-- (arrays by argument and result position, nil where there is no tensor or no gradient); a table a
-- hook returns replaces grad_input for the next hook and the inputs.
local BackwardHook = {}
BackwardHook.__index = BackwardHook

function M.BackwardHook(module, user_hooks)
  return setmetatable({ module = module, user_hooks = user_hooks }, BackwardHook)
end

local Identity -- the identity function, made on first use (torch.autograd is built after this file)

-- the positions of the tensors of args (packed) that require grad, when grad mode is on
local function wanting(torch, args)
  if not torch.is_grad_enabled() then return nil end
  local idx = {}
  for i = 1, args.n do
    if torch.is_tensor(args[i]) and args[i].requires_grad then idx[#idx + 1] = i end
  end
  return #idx > 0 and idx or nil
end

-- args with its tensors at idx passed through the identity, whose backward calls on_grad(grads)
local function through_identity(torch, args, idx, on_grad)
  if Identity == nil then
    Identity = torch.autograd.Function:extend('BackwardHookFunction')
    function Identity.forward(ctx, fn, ...)
      ctx.fn = fn
      return ...
    end
    function Identity.backward(ctx, ...) return nil, ctx.fn(table.pack(...)) end
  end
  local ts = {}
  for k, i in ipairs(idx) do ts[k] = args[i] end
  local outs = table.pack(Identity.apply(on_grad, table.unpack(ts, 1, #idx)))
  local r = table.pack(table.unpack(args, 1, args.n))
  for k, i in ipairs(idx) do r[i] = outs[k] end
  return r
end

local function all_nil(t)
  if t == nil then return true end
  for _ in pairs(t) do return false end
  return true
end

-- input (packed) -> the arguments to call forward with
function BackwardHook:setup_input_hook(input)
  local torch = require 'torch'
  self.n_inputs = input.n
  local idx = wanting(torch, input)
  self.input_idx = idx
  if idx == nil then return input end
  return through_identity(torch, input, idx, function(grads)
    if self.grad_outputs == nil then return table.unpack(grads, 1, grads.n) end
    local res = {}
    for k, i in ipairs(idx) do res[i] = grads[k] end
    for _, hook in ipairs(self.user_hooks) do
      local out = hook(self.module, res, self.grad_outputs)
      if out ~= nil then
        if type(out) ~= 'table' then
          error('register_full_backward_hook: a backward hook should return a table of grad_input or nil, got '
            .. type(out), 0)
        end
        for k in pairs(out) do
          k = as_int(k)
          if math.type(k) ~= 'integer' or k < 1 or k > self.n_inputs then
            error(string.format('Backward hook returned an invalid number of grad_input, got %s, but expected %d',
              tostring(out.n or #out), self.n_inputs), 0)
          end
        end
        res = out
      end
    end
    self.grad_outputs = nil
    local r = {}
    for k, i in ipairs(idx) do
      local g = res[i]
      if g ~= nil and not torch.is_tensor(g) then
        error(string.format('register_full_backward_hook: grad_input[%d] should be a tensor or nil, got %s', i,
          type(g)), 0)
      end
      r[k] = g
    end
    return table.unpack(r, 1, #idx)
  end)
end

-- output (packed) -> the results the call returns
function BackwardHook:setup_output_hook(output)
  local torch = require 'torch'
  local idx = wanting(torch, output)
  if idx == nil then return output end
  return through_identity(torch, output, idx, function(grads)
    local go = {}
    for k, i in ipairs(idx) do go[i] = grads[k] end
    self.grad_outputs = go
    if self.input_idx == nil then -- no input wants a gradient: the hooks run here
      for _, hook in ipairs(self.user_hooks) do
        local res = hook(self.module, {}, go)
        if not all_nil(res) then
          error('Backward hook for Modules where no input requires gradient should always return None or None '
            .. 'for all gradients.', 0)
        end
      end
      self.grad_outputs = nil
    end
    return table.unpack(grads, 1, grads.n)
  end)
end

return M
