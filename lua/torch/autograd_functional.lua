-- torch.autograd.functional: jacobian, hessian, vjp, jvp, hvp and vhp of a Lua function, as
-- PyTorch 1.13's (reverse mode; jvp and hvp by the double-backward trick, which needs
-- create_graph). inputs is a tensor or an array of tensors; results follow PyTorch's structures:
-- a tensor where the inputs (or outputs) were a single tensor, arrays otherwise. The functions
-- returning (output, product) in PyTorch return the two as two values. A function may return
-- several tensors or an array of them for PyTorch's tuple of outputs. Indices in errors are 1-based.
local torch = require 'torch'
local options = require 'torch.options'

local autograd = torch.autograd
local functional = {}
autograd.functional = functional

-- (array, is_table) of a tensor or an array of tensors
local function as_tuple(x, what, fname)
  if torch.is_tensor(x) then return { x }, false end
  if type(x) == 'table' then
    for i, t in ipairs(x) do
      if not torch.is_tensor(t) then
        error(string.format('autograd.functional.%s: the %s given to %s must be either a Tensor or a table of '
          .. 'Tensors but the entry %d has type %s', fname, what, fname, i, type(t)), 3)
      end
    end
    return x, true
  end
  error(string.format('autograd.functional.%s: the %s given to %s must be either a Tensor or a table of Tensors '
    .. 'but got %s', fname, what, fname, type(x)), 3)
end

-- inputs made differentiable here: kept in the caller's graph under create_graph, detached otherwise
local function grad_preprocess(inputs, create_graph, need_graph)
  local res = {}
  for i, t in ipairs(inputs) do
    if create_graph and t.requires_grad then res[i] = t:view_as(t)
    else res[i] = t:detach():requires_grad_(need_graph) end
  end
  return res
end

local function grad_postprocess(ts, n, create_graph)
  if create_graph then return ts end
  local r = {}
  for i = 1, n do
    local t = ts[i]
    if torch.is_tensor(t) then r[i] = t:detach()
    elseif type(t) == 'table' then r[i] = grad_postprocess(t, #t, false)
    else r[i] = t end
  end
  return r
end

local function tuple_postprocess(res, is_tuple) return is_tuple and res or res[1] end

local function shape_str(t) return '[' .. table.concat(t.shape, ', ') .. ']' end

local function validate_v(fname, v, other, is_other_tuple)
  if #v ~= #other then
    if is_other_tuple then
      error(string.format('autograd.functional.%s: v is a table of invalid length: should be %d but got %d.', fname,
        #other, #v), 3)
    end
    error(string.format('autograd.functional.%s: The given v should contain a single Tensor.', fname), 3)
  end
  for i, e in ipairs(v) do
    local o = other[i]
    local same = e:dim() == o:dim()
    for d = 1, e:dim() do same = same and e.shape[d] == o.shape[d] end
    if not same then
      error(string.format('autograd.functional.%s: %sv has invalid size: should be %s but got %s.', fname,
        is_other_tuple and ('Entry ' .. i .. ' in ') or '', shape_str(o), shape_str(e)), 3)
    end
  end
end

local check_messages = {
  outputs = 'Output %d of the user-provided function does not require gradients. The outputs must be '
    .. 'computed in a differentiable manner from the input when running in strict mode.',
  grad_inputs = 'The gradient with respect to input %d is independent of the inputs of the user-provided '
    .. 'function. This is not allowed in strict mode.',
  jacobian = 'While computing the hessian, found that the jacobian of the user-provided function with respect '
    .. 'to input %d is independent of the input. This is not allowed in strict mode. You should ensure that '
    .. 'your function is twice differentiable and that the jacobian depends on the inputs (this would be '
    .. 'violated by a linear function for example).',
  hessian = 'The hessian of the user-provided function with respect to input %d is independent of the input. '
    .. 'This is not allowed in strict mode. You should ensure that your function is thrice differentiable and '
    .. 'that the hessian depends on the inputs.',
}

-- strict mode: every entry (n of them) present and requiring grad
local function check_requires_grad(fname, ts, n, kind, strict)
  if not strict then return end
  for i = 1, n do
    local t = ts[i]
    if not t then
      error(string.format('autograd.functional.%s: The output of the user-provided function is independent of '
        .. 'input %d. This is not allowed in strict mode.', fname, i), 3)
    end
    if not t.requires_grad then error(string.format('autograd.functional.%s: ' .. check_messages[kind], fname, i), 3) end
  end
end

-- autograd.grad of the outputs that require grad (grad_outputs beside them; nil: ones for a
-- one-element output); an array of n_in gradients, nil where an input was not used
local function ag_grad(outputs, n_out, inputs, grad_outputs, create_graph)
  local outs, gos = {}, {}
  for i = 1, n_out do
    local o = outputs[i]
    if o and o.requires_grad then
      outs[#outs + 1] = o
      local g = grad_outputs and grad_outputs[i]
      if not g then
        if o:numel() ~= 1 then error('autograd.grad: grad can be implicitly created only for scalar outputs', 3) end
        g = torch.ones_like(o)
      end
      gos[#gos + 1] = g
    end
  end
  local res = {}
  if #outs == 0 then return res end
  local r = autograd.grad(outs, inputs, { grad_outputs = gos, allow_unused = true, create_graph = create_graph,
    retain_graph = true })
  for i = 1, #inputs do res[i] = r[i] or nil end
  return res
end

local fill_messages = {
  back = 'The output of the user-provided function is independent of input %d. This is not allowed in strict mode.',
  back_trick = 'The gradient with respect to the input is independent of entry %d in the grad_outputs when using '
    .. 'the double backward trick to compute forward mode gradients. This is not allowed in strict mode.',
  double_back = 'The jacobian of the user-provided function is independent of input %d. This is not allowed in '
    .. 'strict mode.',
  double_back_trick = 'The hessian of the user-provided function is independent of entry %d in the grad_jacobian. '
    .. 'This is not allowed in strict mode as it prevents from using the double backward trick to replace forward '
    .. 'mode AD.',
}

-- zeros (like refs) where no gradient came; an error instead in strict mode
local function fill_in_zeros(fname, grads, refs, strict, stage)
  local r = {}
  for i, ref in ipairs(refs) do
    if grads[i] then r[i] = grads[i]
    elseif strict then error(string.format('autograd.functional.%s: ' .. fill_messages[stage], fname, i), 3)
    else r[i] = torch.zeros_like(ref) end
  end
  return r
end

-- func's outputs: a tensor, an array of tensors, or several tensors returned (a table, as PyTorch's tuple)
local function call(fname, func, inputs)
  local r = table.pack(func(table.unpack(inputs)))
  if r.n > 1 then return as_tuple({ table.unpack(r, 1, r.n) }, 'outputs of the user-provided function', fname) end
  return as_tuple(r[1], 'outputs of the user-provided function', fname)
end

-- runs fn with grad mode on, then restores the previous mode
local function with_grad(fn) return torch.enable_grad(fn) end

local function check_func(fname, func)
  if type(func) ~= 'function' and not (getmetatable(func) or {}).__call then
    error(string.format('autograd.functional.%s: expected a function, got %s', fname, type(func)), 3)
  end
end

--- jacobian(func, inputs, {create_graph = false, strict = false, vectorize = false,
--- strategy = 'reverse-mode'}) -> J: for one input tensor and one output, a tensor of shape
--- out.shape .. in.shape; J[j] per input for an array of inputs, J[i] per output for an array of
--- outputs, J[i][j] for both. vectorize gives the same values (computed one output element at a time).
function functional.jacobian(func, inputs, o)
  o = options.check(o, 'autograd.functional.jacobian', { 'create_graph', 'strict', 'vectorize', 'strategy' })
  check_func('jacobian', func)
  if o.strategy ~= nil and o.strategy ~= 'reverse-mode' then
    error("autograd.functional.jacobian: strategy '" .. tostring(o.strategy) .. "' is not supported "
      .. "(only 'reverse-mode': lutorch has no forward-mode AD)", 2)
  end
  local create_graph, strict = o.create_graph and true or false, o.strict and true or false
  local ins, is_inputs_tuple = as_tuple(inputs, 'inputs', 'jacobian')
  local jac, is_outputs_tuple
  with_grad(function()
    ins = grad_preprocess(ins, create_graph, true)
    local outs
    outs, is_outputs_tuple = call('jacobian', func, ins)
    check_requires_grad('jacobian', outs, #outs, 'outputs', strict)
    jac = {}
    for i, out in ipairs(outs) do
      local rows = {}
      for j = 1, #ins do rows[j] = {} end
      local flat = out:reshape(-1)
      for e = 1, out:numel() do
        local vj = ag_grad({ flat:select(1, e) }, 1, ins, nil, create_graph)
        for j, inp in ipairs(ins) do
          local g = vj[j]
          if g then
            if strict and create_graph and not g.requires_grad then
              error(string.format('autograd.functional.jacobian: The jacobian of the user-provided function is '
                .. 'independent of input %d. This is not allowed in strict mode when create_graph=True.', j), 0)
            end
          else
            if strict then
              error(string.format('autograd.functional.jacobian: Output %d of the user-provided function is '
                .. 'independent of input %d. This is not allowed in strict mode.', i, j), 0)
            end
            g = torch.zeros_like(inp)
          end
          rows[j][e] = g
        end
      end
      local ji = {}
      for j, inp in ipairs(ins) do
        local shape = {}
        for _, s in ipairs(out.shape) do shape[#shape + 1] = s end
        for _, s in ipairs(inp.shape) do shape[#shape + 1] = s end
        ji[j] = #rows[j] > 0 and torch.stack(rows[j], 1):reshape(shape) or torch.zeros(shape, { dtype = inp.dtype,
          device = inp.device })
      end
      jac[i] = ji
    end
  end)
  jac = grad_postprocess(jac, #jac, create_graph)
  if not is_inputs_tuple then
    for i, ji in ipairs(jac) do jac[i] = ji[1] end
  end
  return tuple_postprocess(jac, is_outputs_tuple)
end

--- hessian(func, inputs, {create_graph, strict, vectorize, outer_jacobian_strategy}) -> H: func
--- returns a one-element tensor; a tensor of shape in.shape .. in.shape for one input tensor,
--- H[i][j] for an array of inputs
function functional.hessian(func, inputs, o)
  o = options.check(o, 'autograd.functional.hessian',
    { 'create_graph', 'strict', 'vectorize', 'outer_jacobian_strategy' })
  check_func('hessian', func)
  local strict = o.strict and true or false
  local ins, is_inputs_tuple = as_tuple(inputs, 'inputs', 'hessian')
  local function single_output(...)
    local outs, is_tuple = call('hessian', func, table.pack(...))
    local out = outs[1]
    check_requires_grad('hessian', outs, #outs, 'outputs', strict)
    if is_tuple then error('autograd.functional.hessian: The function given to hessian should return a single Tensor', 0) end
    if out:numel() ~= 1 then
      error('autograd.functional.hessian: The Tensor returned by the function given to hessian should contain a '
        .. 'single element', 0)
    end
    return out:reshape({})
  end
  local function jac_func(...)
    local jac = functional.jacobian(single_output, table.pack(...), { create_graph = true })
    check_requires_grad('hessian', jac, #jac, 'jacobian', strict)
    return jac
  end
  local res = functional.jacobian(jac_func, ins, { create_graph = o.create_graph, strict = strict,
    vectorize = o.vectorize, strategy = o.outer_jacobian_strategy })
  if not is_inputs_tuple then return res[1][1] end
  return res
end

-- the shared start of vjp, jvp, hvp and vhp: inputs made differentiable, v checked against refs
local function prepare_v(fname, v, refs, is_refs_tuple, create_graph, none_msg)
  if v == nil then
    if #refs ~= 1 or refs[1]:numel() ~= 1 then error('autograd.functional.' .. fname .. ': ' .. none_msg, 3) end
    return nil
  end
  local vs = as_tuple(v, 'v', fname)
  vs = grad_preprocess(vs, create_graph, false)
  validate_v(fname, vs, refs, is_refs_tuple)
  return vs
end

local function check_opts(fname, o)
  return options.check(o, 'autograd.functional.' .. fname, { 'create_graph', 'strict' }, 5)
end

--- vjp(func, inputs, v = nil, {create_graph, strict}) -> func's output, v^T J (shaped as inputs)
function functional.vjp(func, inputs, v, o)
  o = check_opts('vjp', o)
  check_func('vjp', func)
  local create_graph, strict = o.create_graph and true or false, o.strict and true or false
  local ins, is_inputs_tuple = as_tuple(inputs, 'inputs', 'vjp')
  local outs, is_outputs_tuple, res
  with_grad(function()
    ins = grad_preprocess(ins, create_graph, true)
    outs, is_outputs_tuple = call('vjp', func, ins)
    check_requires_grad('vjp', outs, #outs, 'outputs', strict)
    local vs = prepare_v('vjp', v, outs, is_outputs_tuple, create_graph, 'The vector v can only be None if the '
      .. 'user-provided function returns a single Tensor with a single element.')
    local g = ag_grad(outs, #outs, ins, vs, create_graph)
    res = fill_in_zeros('vjp', g, ins, strict, 'back')
  end)
  outs = grad_postprocess(outs, #outs, create_graph)
  res = grad_postprocess(res, #res, create_graph)
  return tuple_postprocess(outs, is_outputs_tuple), tuple_postprocess(res, is_inputs_tuple)
end

--- jvp(func, inputs, v = nil, {create_graph, strict}) -> func's output, J v (shaped as the outputs),
--- by the double-backward trick
function functional.jvp(func, inputs, v, o)
  o = check_opts('jvp', o)
  check_func('jvp', func)
  local create_graph, strict = o.create_graph and true or false, o.strict and true or false
  local ins, is_inputs_tuple = as_tuple(inputs, 'inputs', 'jvp')
  local outs, is_outputs_tuple, res
  with_grad(function()
    ins = grad_preprocess(ins, create_graph, true)
    local vs = prepare_v('jvp', v, ins, is_inputs_tuple, create_graph, 'The vector v can only be None if the '
      .. 'input to the user-provided function is a single Tensor with a single element.')
    outs, is_outputs_tuple = call('jvp', func, ins)
    check_requires_grad('jvp', outs, #outs, 'outputs', strict)
    -- the backward is linear in grad_outputs: their values (zeros) do not matter, only their graph
    local us = {}
    for i, out in ipairs(outs) do us[i] = torch.zeros_like(out):requires_grad_() end
    local gin = ag_grad(outs, #outs, ins, us, true)
    check_requires_grad('jvp', gin, #ins, 'grad_inputs', strict)
    local g = ag_grad(gin, #ins, us, vs, create_graph)
    res = fill_in_zeros('jvp', g, outs, strict, 'back_trick')
  end)
  outs = grad_postprocess(outs, #outs, create_graph)
  res = grad_postprocess(res, #res, create_graph)
  return tuple_postprocess(outs, is_outputs_tuple), tuple_postprocess(res, is_outputs_tuple)
end

-- vhp and hvp: func's one-element output, and v^T H (directly) or H v (by the double-backward
-- trick: the gradient of the gradient's vector product u^T J with respect to u)
local function hessian_product(fname, func, inputs, v, o)
  o = check_opts(fname, o)
  check_func(fname, func)
  local create_graph, strict = o.create_graph and true or false, o.strict and true or false
  local ins, is_inputs_tuple = as_tuple(inputs, 'inputs', fname)
  local outs, res
  with_grad(function()
    ins = grad_preprocess(ins, create_graph, true)
    local vs = prepare_v(fname, v, ins, is_inputs_tuple, create_graph, 'The vector v can only be None if the '
      .. 'input to the user-provided function is a single Tensor with a single element.')
    local is_tuple
    outs, is_tuple = call(fname, func, ins)
    check_requires_grad(fname, outs, #outs, 'outputs', strict)
    if is_tuple then
      error(string.format('autograd.functional.%s: The function given to %s should return a single Tensor', fname,
        fname), 0)
    end
    if outs[1]:numel() ~= 1 then
      error(string.format('autograd.functional.%s: The Tensor returned by the function given to %s should contain '
        .. 'a single element', fname, fname), 0)
    end
    local jac = ag_grad(outs, 1, ins, nil, true)
    check_requires_grad(fname, jac, #ins, 'jacobian', strict)
    if fname == 'vhp' then
      res = fill_in_zeros(fname, ag_grad(jac, #ins, ins, vs, create_graph), ins, strict, 'double_back')
      return
    end
    local us = {}
    for i, x in ipairs(ins) do us[i] = torch.zeros_like(x):requires_grad_() end
    local double_back = ag_grad(jac, #ins, ins, us, true)
    check_requires_grad(fname, jac, #ins, 'hessian', strict)
    res = fill_in_zeros(fname, ag_grad(double_back, #ins, us, vs, create_graph), ins, strict, 'double_back_trick')
  end)
  outs = grad_postprocess(outs, 1, create_graph)
  res = grad_postprocess(res, #res, create_graph)
  return outs[1], tuple_postprocess(res, is_inputs_tuple)
end

--- vhp(func, inputs, v = nil, {create_graph, strict}) -> func's output, v^T H (shaped as inputs)
function functional.vhp(func, inputs, v, o) return hessian_product('vhp', func, inputs, v, o) end

--- hvp(func, inputs, v = nil, {create_graph, strict}) -> func's output, H v (shaped as inputs), by
--- the double-backward trick
function functional.hvp(func, inputs, v, o) return hessian_product('hvp', func, inputs, v, o) end

return functional
