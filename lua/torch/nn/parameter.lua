-- nn.Parameter: a leaf tensor that shares its data with the tensor it was made from and that modules
-- register when it is assigned to one of their fields. Tensors are C userdata, so a parameter is an
-- ordinary tensor remembered in a weak-keyed set (its identity is stable while someone holds it).
local torch = require 'torch'

local parameter = {}
local params = setmetatable({}, { __mode = 'k' })

-- nn.Parameter(t, requires_grad = true); nn.Parameter() is an empty parameter of the default dtype
function parameter.Parameter(t, requires_grad)
  if t == nil then t = torch.empty(0) end
  if not torch.is_tensor(t) then
    error('Parameter: expected a tensor, got ' .. type(t), 2)
  end
  if type(requires_grad) == 'table' then requires_grad = requires_grad.requires_grad end
  if requires_grad == nil then requires_grad = true end
  local p = t:detach()
  if requires_grad then
    if not p:is_floating_point() then
      error('Parameter: only tensors of floating point dtype can require gradients, got ' .. tostring(p.dtype), 2)
    end
    p:requires_grad_(true)
  end
  params[p] = true
  return p
end

function parameter.is_parameter(t) return params[t] == true end

-- marks an existing leaf tensor as a parameter without copying (used when a module's tensor is
-- replaced in place and must stay recognised)
function parameter._mark(t) params[t] = true; return t end

return parameter
