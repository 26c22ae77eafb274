-- lutorch: tensor printing, a faithful port of PyTorch 1.13's torch/_tensor_str.py.
--
--   local format = require 'torch.format'
--   format.format(x)                    --> the string tostring(x) gives
--   format.set_printoptions{precision = 4, threshold = 1000, edgeitems = 3,
--                           linewidth = 80, sci_mode = nil, profile = 'default'}
--   format.get_printoptions()           --> a copy of the current options
--
-- Pure Lua 5.4; depends on nothing else in lutorch. The tensor is opaque: only
-- x:dim(), x:size(d) (1-based), x:numel(), x:_flat(), x.dtype, x.device,
-- x.requires_grad and x.grad_fn are used.
--
-- Differences from PyTorch's suffixes, as lutorch's API decides: the device is
-- named whenever it is not cpu:0 (device='cpu:1', device='cuda:0').

local M = {}

local floor, huge, max = math.floor, math.huge, math.max
local sformat, srep, concat = string.format, string.rep, table.concat

-- PRINT_OPTS
local opts = {
  precision = 4,
  threshold = 1000,
  edgeitems = 3,
  linewidth = 80,
  sci_mode = nil,
}

-- The default floating dtype, whose name is never printed: 'torch.float32' unless
-- torch.set_default_dtype changed it (read each time: the setting is process-wide).
function M.default_dtype()
  local torch = package.loaded.torch
  if type(torch) == 'table' and torch.get_default_dtype then return 'torch.' .. torch.get_default_dtype().name end
  return 'torch.float32'
end

local PROFILES = {
  default = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 },
  short = { precision = 2, threshold = 1000, edgeitems = 2, linewidth = 80 },
  full = { precision = 4, threshold = huge, edgeitems = 3, linewidth = 80 },
}

local KNOWN_OPTIONS = {
  precision = true, threshold = true, edgeitems = true, linewidth = true,
  profile = true, sci_mode = true,
}

local function check_int(name, v, lo, hi)
  if math.type(v) == 'float' and v == floor(v) and v >= -2^53 and v <= 2^53 then
    v = math.tointeger(v)
  end
  if math.type(v) ~= 'integer' or v < lo or (hi and v > hi) then
    error(sformat('set_printoptions: %s must be an integer %s, got %s', name,
      hi and ('from ' .. lo .. ' to ' .. hi) or ('>= ' .. lo), tostring(v)), 3)
  end
  return v
end

--- Sets the printing options, as torch.set_printoptions does. Options not given
-- keep their value, except sci_mode, which (as in PyTorch) is reset to automatic
-- (nil) unless given. `profile` ('default', 'short' or 'full') is applied first.
function M.set_printoptions(o)
  if o == nil then o = {} end
  if type(o) ~= 'table' then
    error('set_printoptions: expected a table of options, got ' .. type(o), 2)
  end
  for k in pairs(o) do
    if not KNOWN_OPTIONS[k] then
      error('set_printoptions: unknown option ' .. tostring(k) ..
        ' (expected precision, threshold, edgeitems, linewidth, profile or sci_mode)', 2)
    end
  end
  -- validate everything before changing anything
  local new = {}
  if o.profile ~= nil then
    local p = PROFILES[o.profile]
    if not p then
      error("set_printoptions: unknown profile '" .. tostring(o.profile) ..
        "' (expected 'default', 'short' or 'full')", 2)
    end
    for k, v in pairs(p) do new[k] = v end
  end
  -- Lua's string.format accepts at most two digits of precision
  if o.precision ~= nil then new.precision = check_int('precision', o.precision, 0, 99) end
  if o.threshold ~= nil then
    if type(o.threshold) ~= 'number' or o.threshold ~= o.threshold then
      error('set_printoptions: threshold must be a number, got ' .. tostring(o.threshold), 2)
    end
    new.threshold = o.threshold
  end
  if o.edgeitems ~= nil then new.edgeitems = check_int('edgeitems', o.edgeitems, 0) end
  if o.linewidth ~= nil then new.linewidth = check_int('linewidth', o.linewidth, 0) end
  if o.sci_mode ~= nil and type(o.sci_mode) ~= 'boolean' then
    error('set_printoptions: sci_mode must be a boolean or nil, got ' .. tostring(o.sci_mode), 2)
  end
  for k, v in pairs(new) do opts[k] = v end
  opts.sci_mode = o.sci_mode
end

--- Returns a copy of the current printing options.
function M.get_printoptions()
  return {
    precision = opts.precision, threshold = opts.threshold, edgeitems = opts.edgeitems,
    linewidth = opts.linewidth, sci_mode = opts.sci_mode,
  }
end

---------------------------------------------------------------------------
-- scalar formatting (Python's str.format semantics)
---------------------------------------------------------------------------

local function nonfinite_str(v)
  if v ~= v then return 'nan' end -- Python never prints a sign on nan
  if v == huge then return 'inf' end
  if v == -huge then return '-inf' end
  return nil
end

local function is_finite(v)
  return v == v and v ~= huge and v ~= -huge
end

-- "{:.Pf}".format(v)
local function fmt_fixed(v, p)
  return nonfinite_str(v) or sformat('%.' .. p .. 'f', v)
end

-- "{:.Pe}".format(v)
local function fmt_sci(v, p)
  return nonfinite_str(v) or sformat('%.' .. p .. 'e', v)
end

-- "{}".format(v) for an integer or bool element
local function fmt_plain(v, kind)
  if kind == 'bool' then
    if v == true or (type(v) == 'number' and v ~= 0) then return 'True' end
    return 'False'
  end
  if math.type(v) == 'integer' then return sformat('%d', v) end
  if type(v) == 'boolean' then return v and '1' or '0' end
  local i = math.tointeger(v)
  if i then return sformat('%d', i) end
  return nonfinite_str(v) or sformat('%.0f', v)
end

local function lpad(s, w)
  local n = w - #s
  if n > 0 then return srep(' ', n) .. s end
  return s
end

---------------------------------------------------------------------------
-- _Formatter
---------------------------------------------------------------------------

-- vals: the elements that will be shown (the summarized data), a Lua array.
local function new_formatter(vals, kind)
  local f = { kind = kind, int_mode = true, sci_mode = false, max_width = 1 }
  local P = opts.precision
  if kind ~= 'float' then
    local w = 1
    for i = 1, #vals do
      local n = #fmt_plain(vals[i], kind)
      if n > w then w = n end
    end
    f.max_width = w
    -- (PRINT_OPTS.sci_mode is set on the formatter but unused for non-floats)
    if opts.sci_mode ~= nil then f.sci_mode = opts.sci_mode end
    return f
  end

  -- nonzero finite values
  local nz, count = {}, 0
  local vmin, vmax = huge, -huge
  for i = 1, #vals do
    local v = vals[i]
    if v ~= 0 and is_finite(v) then
      count = count + 1
      nz[count] = v
      local a = v < 0 and -v or v
      if a < vmin then vmin = a end
      if a > vmax then vmax = a end
      if f.int_mode and v ~= math.ceil(v) then f.int_mode = false end
    end
  end
  if count == 0 then
    -- no valid number: PyTorch returns here, before applying PRINT_OPTS.sci_mode
    return f
  end
  vmin, vmax = vmin + 0.0, vmax + 0.0

  local w = 1
  if f.int_mode then
    -- in int_mode for floats all numbers are integers; add 1 for the '.'
    if vmax / vmin > 1000.0 or vmax > 1.0e8 then
      f.sci_mode = true
      for i = 1, count do
        local n = #fmt_sci(nz[i], P)
        if n > w then w = n end
      end
    else
      for i = 1, count do
        local n = #fmt_fixed(nz[i], 0) + 1
        if n > w then w = n end
      end
    end
  else
    if vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4 then
      f.sci_mode = true
      for i = 1, count do
        local n = #fmt_sci(nz[i], P)
        if n > w then w = n end
      end
    else
      for i = 1, count do
        local n = #fmt_fixed(nz[i], P)
        if n > w then w = n end
      end
    end
  end
  f.max_width = w
  if opts.sci_mode ~= nil then f.sci_mode = opts.sci_mode end
  return f
end

local function format_value(f, v)
  local s
  if f.kind == 'float' then
    if f.sci_mode then
      -- "{:W.Pe}": right-aligned to max_width (then padded again, to no effect)
      s = lpad(fmt_sci(v, opts.precision), f.max_width)
    elseif f.int_mode then
      s = fmt_fixed(v, 0)
      if is_finite(v) then s = s .. '.' end
    else
      s = fmt_fixed(v, opts.precision)
    end
  else
    s = fmt_plain(v, f.kind)
  end
  return lpad(s, f.max_width)
end

---------------------------------------------------------------------------
-- layout
---------------------------------------------------------------------------

-- The 0-based indices shown along a dimension of size n. In PyTorch the last
-- dimension is cut with self[-E:], which is the whole dimension when E == 0;
-- the others with range(n - E, n).
local function shown_indices(n, summarize, E, last)
  local idx = {}
  if summarize and n > 2 * E then
    for i = 0, E - 1 do idx[#idx + 1] = i end
    local from = n - E
    if last and E == 0 then from = 0 end
    for i = from, n - 1 do idx[#idx + 1] = i end
    return idx, true
  end
  for i = 0, n - 1 do idx[i + 1] = i end
  return idx, false
end

-- get_summarized_data, flattened: collects the shown values in row-major order.
local function collect(flat, sizes, strides, d, off, summarize, E, out)
  local nd = #sizes
  if d > nd then
    out[#out + 1] = flat[off + 1]
    return
  end
  local idx = shown_indices(sizes[d], summarize, E, d == nd)
  local st = strides[d]
  if d == nd then
    for k = 1, #idx do out[#out + 1] = flat[off + idx[k] * st + 1] end
  else
    for k = 1, #idx do collect(flat, sizes, strides, d + 1, off + idx[k] * st, summarize, E, out) end
  end
end

local function vector_str(flat, n, off, st, indent, summarize, f)
  local element_length = f.max_width + 2
  local per_line = max(1, floor((opts.linewidth - indent) / element_length))
  local E = opts.edgeitems
  local idx, cut = shown_indices(n, summarize, E, true)
  local data = {}
  for k = 1, #idx do
    data[#data + 1] = format_value(f, flat[off + idx[k] * st + 1])
    if cut and k == E then data[#data + 1] = ' ...' end
  end
  if cut and E == 0 then table.insert(data, 1, ' ...') end
  local lines = {}
  for i = 1, #data, per_line do
    lines[#lines + 1] = concat(data, ', ', i, math.min(i + per_line - 1, #data))
  end
  return '[' .. concat(lines, ',\n' .. srep(' ', indent + 1)) .. ']'
end

local function tensor_str_rec(flat, sizes, strides, d, off, indent, summarize, f)
  local nd = #sizes
  if d > nd then
    return format_value(f, flat[off + 1]) -- _scalar_str
  end
  if d == nd then
    return vector_str(flat, sizes[d], off, strides[d], indent, summarize, f)
  end
  local E = opts.edgeitems
  local idx, cut = shown_indices(sizes[d], summarize, E, false)
  local slices = {}
  for k = 1, #idx do
    slices[#slices + 1] = tensor_str_rec(flat, sizes, strides, d + 1,
      off + idx[k] * strides[d], indent + 1, summarize, f)
    if cut and k == E then slices[#slices + 1] = '...' end
  end
  if cut and E == 0 then slices[#slices + 1] = '...' end
  local dim = nd - d + 1
  return '[' .. concat(slices, ',' .. srep('\n', dim - 1) .. srep(' ', indent + 1)) .. ']'
end

local function add_suffixes(tensor_str, suffixes, indent, force_newline)
  local parts = { tensor_str }
  -- Python: len(s) - s.rfind('\n') + 1, where rfind gives -1 when absent
  local last_nl = -1
  local p = 0
  while true do
    p = tensor_str:find('\n', p + 1, true)
    if not p then break end
    last_nl = p - 1
  end
  local last_line_len = #tensor_str - last_nl + 1
  for _, suffix in ipairs(suffixes) do
    local n = #suffix
    if force_newline or last_line_len + n + 2 > opts.linewidth then
      parts[#parts + 1] = ',\n' .. srep(' ', indent) .. suffix
      last_line_len = indent + n
      force_newline = false
    else
      parts[#parts + 1] = ', ' .. suffix
      last_line_len = last_line_len + n + 2
    end
  end
  parts[#parts + 1] = ')'
  return concat(parts)
end

-- field access that tolerates userdata whose __index raises for unknown keys
local function get_field(x, k)
  local ok, v = pcall(function() return x[k] end)
  if ok then return v end
  return nil
end

local function dtype_name(x)
  local dt = get_field(x, 'dtype')
  if dt == nil then return M.default_dtype() end
  local s = tostring(dt)
  if s:sub(1, 6) ~= 'torch.' then s = 'torch.' .. s end
  return s
end

local function dtype_kind(name, flat)
  if name == 'torch.bool' then return 'bool' end
  if name:find('float', 1, true) or name:find('double', 1, true) or name:find('half', 1, true) then
    return 'float'
  end
  if flat and type(flat[1]) == 'boolean' then return 'bool' end
  return 'int'
end

local function grad_fn_name(x)
  local g = get_field(x, 'grad_fn')
  if g == nil then return nil end
  local name = get_field(g, 'name')
  if type(name) == 'function' then
    local ok, n = pcall(name, g)
    name = ok and n or nil
  end
  if name == nil then return nil end
  name = tostring(name)
  return (name:match('::([^:]*)$')) or name
end

local function tuple_str(sizes)
  if #sizes == 1 then return '(' .. sizes[1] .. ',)' end
  return '(' .. concat(sizes, ', ') .. ')'
end

--- Returns the string that tostring(x) gives, as PyTorch 1.13 prints tensors.
function M.format(x)
  local prefix = 'tensor('
  local indent = #prefix
  local suffixes = {}

  local dev = get_field(x, 'device')
  if dev ~= nil then
    local ds = tostring(dev)
    if ds ~= 'cpu:0' then suffixes[#suffixes + 1] = "device='" .. ds .. "'" end
  end

  local nd = x:dim()
  local sizes = {}
  for d = 1, nd do sizes[d] = math.tointeger(x:size(d)) or x:size(d) end
  local numel = x:numel()
  local dname = dtype_name(x)
  local default_name = M.default_dtype()
  local tensor_str

  if numel == 0 then
    if nd ~= 1 then suffixes[#suffixes + 1] = 'size=' .. tuple_str(sizes) end
    if dname ~= default_name then suffixes[#suffixes + 1] = 'dtype=' .. dname end
    tensor_str = '[]'
  else
    if dname ~= default_name and dname ~= 'torch.int64' and dname ~= 'torch.bool' then
      suffixes[#suffixes + 1] = 'dtype=' .. dname
    end
    local flat = x:_flat()
    local kind = dtype_kind(dname, flat)
    local strides = {}
    local s = 1
    for d = nd, 1, -1 do strides[d] = s; s = s * sizes[d] end
    local summarize = numel > opts.threshold
    local shown
    if summarize then
      shown = {}
      collect(flat, sizes, strides, 1, 0, true, opts.edgeitems, shown)
    else
      shown = flat
    end
    local f = new_formatter(shown, kind)
    tensor_str = tensor_str_rec(flat, sizes, strides, 1, 0, indent, summarize, f)
  end

  local gname = grad_fn_name(x)
  if gname then
    suffixes[#suffixes + 1] = 'grad_fn=<' .. gname .. '>'
  elseif get_field(x, 'requires_grad') == true then
    suffixes[#suffixes + 1] = 'requires_grad=True'
  end

  return add_suffixes(prefix .. tensor_str, suffixes, indent, false)
end

return M
