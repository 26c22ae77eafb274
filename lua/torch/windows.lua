-- Window functions for spectral analysis, as PyTorch's: torch.hann_window, hamming_window,
-- blackman_window, bartlett_window and kaiser_window. Each takes window_length, then its
-- positional parameters (periodic = true; hamming's alpha = 0.54 and beta = 0.46; kaiser's
-- beta = 12), then an options table (the same parameters by name, dtype = the default dtype,
-- device, requires_grad). A periodic window of N points is the first N of the symmetric window of
-- N + 1 (for spectral analysis); a symmetric one is for filter design. Computed in float64 from
-- the closed forms, then converted to dtype.
local torch = require 'torch'
local opts_of = require('torch.options').check
local as_int = require('torch.composite').as_int

-- window_length, the positional parameters `names` and a trailing options table, as one table
local function parse(op, names, n, ...)
  n = as_int(n)
  if math.type(n) ~= 'integer' or n < 0 then
    error(string.format('%s: window_length must be a non-negative integer, got %s', op, tostring(n)), 3)
  end
  local given, o = table.pack(...), nil
  local v = {}
  for i = 1, given.n do
    local a = given[i]
    if type(a) == 'table' and i == given.n then
      o = a
    elseif i > #names then
      error(string.format('%s: expected at most %d arguments after window_length, got %d', op, #names, given.n), 3)
    else
      v[names[i]] = a
    end
  end
  local keys = { 'dtype', 'device', 'requires_grad' }
  for _, k in ipairs(names) do keys[#keys + 1] = k end
  o = opts_of(o, op, keys, 4)
  for _, k in ipairs(names) do
    if v[k] == nil then v[k] = o[k] end
  end
  if v.periodic == nil then v.periodic = true end
  if type(v.periodic) ~= 'boolean' then error(op .. ': periodic must be a boolean, got ' .. type(v.periodic), 3) end
  for _, k in ipairs(names) do
    if k ~= 'periodic' and v[k] ~= nil and type(v[k]) ~= 'number' then
      error(string.format('%s: %s must be a number, got %s', op, k, type(v[k])), 3)
    end
  end
  v.dtype, v.device, v.requires_grad = o.dtype or torch.get_default_dtype(), o.device, o.requires_grad
  if not v.dtype.is_floating_point then error(op .. ': expects a floating point dtype, got ' .. tostring(v.dtype), 3) end
  return v
end

-- the window of n points: f(k, N) over k = 0..n-1 (a float64 tensor) for the symmetric window of N
local function window(op, names, f, n, ...)
  local v = parse(op, names, n, ...)
  local w
  if n <= 1 then
    w = torch.ones(n, { dtype = torch.float64 })
  else
    w = f(torch.arange(0, n, { dtype = torch.float64 }), v.periodic and n + 1 or n, v)
  end
  w = w:to(v.dtype):to(v.device or 'cpu')
  if v.requires_grad then w:requires_grad_(true) end
  return w
end

local function cosine_sum(a)
  return function(k, N)
    local w = torch.full(k.shape, a[1], { dtype = torch.float64 })
    for j = 2, #a do w = w + ((k * (2 * math.pi * (j - 1) / (N - 1))):cos() * a[j]) end
    return w
  end
end

--- torch.hann_window(n, periodic = true, opts): 0.5 - 0.5 cos(2 pi k / (N - 1))
function torch.hann_window(n, ...)
  return window('hann_window', { 'periodic' }, cosine_sum { 0.5, -0.5 }, n, ...)
end

--- torch.hamming_window(n, periodic = true, alpha = 0.54, beta = 0.46, opts): alpha - beta cos(2 pi k / (N - 1))
function torch.hamming_window(n, ...)
  return window('hamming_window', { 'periodic', 'alpha', 'beta' }, function(k, N, v)
    return cosine_sum { v.alpha or 0.54, -(v.beta or 0.46) }(k, N)
  end, n, ...)
end

--- torch.blackman_window(n, periodic = true, opts): 0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))
function torch.blackman_window(n, ...)
  return window('blackman_window', { 'periodic' }, cosine_sum { 0.42, -0.5, 0.08 }, n, ...)
end

--- torch.bartlett_window(n, periodic = true, opts): 1 - |2 k / (N - 1) - 1|
function torch.bartlett_window(n, ...)
  return window('bartlett_window', { 'periodic' }, function(k, N)
    return 1 - (k * (2 / (N - 1)) - 1):abs()
  end, n, ...)
end

--- torch.kaiser_window(n, periodic = true, beta = 12, opts): I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta)
--- with a = (N - 1) / 2
function torch.kaiser_window(n, ...)
  return window('kaiser_window', { 'periodic', 'beta' }, function(k, N, v)
    local beta, a = v.beta or 12.0, (N - 1) / 2
    local r = (k - a) / a
    return torch.i0((1 - r * r):clamp(0, nil):sqrt() * beta) / torch.i0(torch.tensor(beta, { dtype = torch.float64 }))
  end, n, ...)
end
