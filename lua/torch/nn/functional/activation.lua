-- F.rrelu (randomized leaky ReLU) and F.gumbel_softmax, composed of tensor ops.
local torch = require 'torch'
local args = require('torch.options').args
local as_int = require('torch.composite').as_int

return function(F, u)
  local check_tensor = u.check_tensor

  --- F.rrelu(x, lower = 1/8, upper = 1/3, training = false, inplace = false) (or an options table
  -- after x) -> x where x > 0, else a x: while training a is drawn from U(lower, upper) for each
  -- element (its gradient is a there), otherwise a is (lower + upper) / 2
  function F.rrelu(x, ...)
    local op = 'rrelu'
    check_tensor(x, op)
    local lower, upper, training, inplace = args(op, { ... }, { 'lower', 'upper', 'training', 'inplace' },
      { 1 / 8, 1 / 3, false, false })
    if type(lower) ~= 'number' or type(upper) ~= 'number' then
      error(string.format('%s: lower and upper must be numbers, got %s and %s', op, type(lower), type(upper)), 2)
    end
    if lower > upper then
      error(string.format('%s: Lower bound should be less than or equal to the upper bound, got %g and %g', op, lower, upper), 2)
    end
    if not training then return F.leaky_relu(x, (lower + upper) / 2, inplace and true or false) end
    if not x.dtype.is_floating_point then error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), 2) end
    local slope = torch.empty_like(x):uniform_(lower, upper)
    local y = torch.where(x:le(0), x * slope, x)
    if inplace then return x:copy_(y) end
    return y
  end

  --- F.gumbel_softmax(logits, {tau = 1, hard = false, eps = 1e-10, dim = -1}) (or those positionally)
  -- -> softmax((logits + g) / tau, dim), g Gumbel(0, 1) noise drawn for each element; with hard,
  -- the one-hot vector of its maximum in the forward pass and the soft sample's gradient in the
  -- backward (straight through). eps is unused, as in PyTorch.
  function F.gumbel_softmax(logits, ...)
    local op = 'gumbel_softmax'
    check_tensor(logits, op, 'logits')
    local tau, hard, _, dim = args(op, { ... }, { 'tau', 'hard', 'eps', 'dim' }, { 1, false, 1e-10, -1 })
    if type(tau) ~= 'number' then error(op .. ': tau must be a number, got ' .. type(tau), 2) end
    dim = as_int(dim)
    if math.type(dim) ~= 'integer' then error(op .. ': dim must be an integer, got ' .. tostring(dim), 2) end
    if not logits.dtype.is_floating_point then
      error(op .. ': expected floating point logits, got ' .. tostring(logits.dtype), 2)
    end
    -- -log(E), E ~ Exp(1) drawn as -log(1 - U), kept above 0 so that the noise stays finite
    local e = (1 - torch.rand_like(logits)):log():neg():clamp(torch.finfo(logits.dtype).tiny, nil)
    local y = F.softmax((logits - e:log()) / tau, dim)
    if not hard then return y end
    local _, index = y:max(dim, true)
    local y_hard = torch.zeros_like(logits):scatter(dim, index, 1.0)
    return y_hard - y:detach() + y
  end
end
