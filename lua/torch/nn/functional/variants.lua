-- PyTorch's other spellings of F's functions: the _with_indices forms of the max poolings (their
-- output and 1-based indices, always) and the in-place activations (F.relu_, F.elu_, ...: the
-- function with inplace = true, x itself returned).
local torch = require 'torch'

return function(F, u)
  local check_tensor, opts_of = u.check_tensor, u.opts_of

  -- o (an options table of op, or nil) with return_indices set
  local function with_indices(o, op, keys)
    o = opts_of(o, op, keys)
    local c = {}
    for k, v in pairs(o) do c[k] = v end
    c.return_indices = true
    return c
  end

  local WINDOW = { 'stride', 'padding', 'dilation', 'ceil_mode', 'return_indices' }
  for _, d in ipairs { '1d', '2d', '3d' } do
    local pool, adaptive = 'max_pool' .. d, 'adaptive_max_pool' .. d
    --- F.max_poolNd_with_indices(x, kernel_size, {stride, padding, dilation, ceil_mode}) -> output, indices
    F[pool .. '_with_indices'] = function(x, k, o)
      return F[pool](x, k, with_indices(o, pool .. '_with_indices', WINDOW))
    end
    --- F.adaptive_max_poolNd_with_indices(x, output_size) -> output, indices
    F[adaptive .. '_with_indices'] = function(x, size, ri)
      if ri ~= nil and type(ri) ~= 'boolean' then opts_of(ri, adaptive .. '_with_indices', { 'return_indices' }) end
      return F[adaptive](x, size, true)
    end
  end
  for _, d in ipairs { '2d', '3d' } do
    local pool = 'fractional_max_pool' .. d
    --- F.fractional_max_poolNd_with_indices(x, kernel_size, {output_size | output_ratio, _random_samples})
    -- -> output, indices
    F[pool .. '_with_indices'] = function(x, k, o)
      return F[pool](x, k, with_indices(o, pool .. '_with_indices',
        { 'output_size', 'output_ratio', 'return_indices', '_random_samples' }))
    end
  end

  --- F.relu_(x), F.selu_(x): in place
  function F.relu_(x) return F.relu(x, { inplace = true }) end
  function F.selu_(x) return F.selu(x, true) end
  --- F.elu_(x, alpha = 1), F.celu_(x, alpha = 1), F.leaky_relu_(x, negative_slope = 0.01),
  -- F.hardtanh_(x, min_val = -1, max_val = 1), F.threshold_(x, threshold, value),
  -- F.rrelu_(x, lower = 1/8, upper = 1/3, training = false): in place, the parameters positional or
  -- as an options table
  for name, params in pairs { elu = { 'alpha' }, celu = { 'alpha' }, leaky_relu = { 'negative_slope' },
    hardtanh = { 'min_val', 'max_val' }, threshold = { 'threshold', 'value' },
    rrelu = { 'lower', 'upper', 'training' } } do
    local op = name .. '_'
    F[op] = function(x, ...)
      check_tensor(x, op)
      local first = ...
      if type(first) == 'table' and not torch.is_tensor(first) then
        local o = {}
        for k, v in pairs(opts_of(first, op, params)) do o[k] = v end
        o.inplace = true
        return F[name](x, o)
      end
      local v = table.pack(...)
      if v.n > #params then error(string.format('%s: takes at most %d arguments after the input, got %d', op, #params, v.n), 2) end
      v[#params + 1] = true
      return F[name](x, table.unpack(v, 1, #params + 1))
    end
  end
end
