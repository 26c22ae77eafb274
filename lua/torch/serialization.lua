-- torch.save / torch.load in the safetensors format, and torch.serialization's helpers.
--
-- A flat table of tensors keyed by strings (a module's state_dict) is written exactly as PyTorch's
-- safetensors.torch.save_file would write it: one tensor per key, no metadata (unless some tensor is
-- off cpu:0 or requires grad, which only adds metadata). Any other value (a single tensor, nested
-- tables, numbers, strings, booleans: an optimizer's state_dict, a checkpoint) is written as its
-- tensors, named by their dotted key paths ('state.1.exp_avg'), plus a description of the whole
-- value in the metadata entry 'lutorch.structure', which torch.load uses to rebuild it:
--   value := ["tensor", NAME] | ["int", DECIMAL] | ["float", "%.17g" (shortest exact) | "inf" | "-inf" | "nan"]
--          | ["string", S] | ["bytes", HEX] | ["bool", true|false] | ["table", [[KEY, value], ...]]
--   KEY   := a value that is an int, float, string, bytes or bool
-- ("bytes" holds a Lua string that is not UTF-8, which JSON cannot carry.) Tensor names are only
-- labels that the structure points to, so a key containing a dot cannot be confused with nesting;
-- a name already taken gets '#2', '#3', ... appended. With the structure, the metadata also holds
-- "format": "pt" (what Hugging Face's loaders look for).
-- Other metadata entries: 'lutorch.devices' = {"name": "cuda:0", ...} for tensors saved from a
-- device other than cpu:0, 'lutorch.requires_grad' = ["name", ...].
local torch = require 'torch'

local M = {}

local STRUCTURE, DEVICES, REQUIRES_GRAD = 'lutorch.structure', 'lutorch.devices', 'lutorch.requires_grad'

-- ---- a small JSON writer and a strict reader for the metadata entries ----

local escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
  ['\r'] = '\\r', ['\t'] = '\\t' }
local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '\127' then return c end
    return escapes[c] or string.format('\\u%04x', c:byte())
  end) .. '"'
end

local function is_utf8(s) return utf8.len(s) ~= nil end

local function json_encode(v)
  local t = type(v)
  if t == 'string' then return json_string(v) end
  if t == 'boolean' then return tostring(v) end
  if t == 'table' then
    local parts = {}
    if v[1] ~= nil or next(v) == nil then
      for i = 1, #v do parts[i] = json_encode(v[i]) end
      return '[' .. table.concat(parts, ',') .. ']'
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    for i, k in ipairs(keys) do parts[i] = json_string(k) .. ':' .. json_encode(v[k]) end
    return '{' .. table.concat(parts, ',') .. '}'
  end
  error('json_encode: ' .. t)
end

-- Decodes s (objects, arrays, strings, true/false/null; no numbers: the encoding never writes them).
-- Errors are plain messages for the caller to wrap.
local function json_decode(s)
  local pos = 1
  local function fail(msg) error({ json = msg .. ' at byte ' .. pos }, 0) end
  local function ws() pos = s:find('[^ \t\r\n]', pos) or #s + 1 end
  local function str()
    if s:sub(pos, pos) ~= '"' then fail('expected a string') end
    pos = pos + 1
    local out = {}
    while true do
      local a, b = s:find('^[^"\\%c]+', pos)
      if a then out[#out + 1] = s:sub(a, b); pos = b + 1 end
      local c = s:sub(pos, pos)
      if c == '"' then pos = pos + 1; return table.concat(out) end
      if c ~= '\\' then fail('unterminated string or control character') end
      local e = s:sub(pos + 1, pos + 1)
      local simple = ({ ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' })[e]
      if simple then
        out[#out + 1] = simple
        pos = pos + 2
      elseif e == 'u' then
        local h = s:match('^%x%x%x%x', pos + 2)
        if not h then fail('bad \\u escape') end
        local cp = tonumber(h, 16)
        pos = pos + 6
        if cp >= 0xD800 and cp <= 0xDBFF then
          local l = s:match('^\\u(%x%x%x%x)', pos)
          local lo = l and tonumber(l, 16)
          if not lo or lo < 0xDC00 or lo > 0xDFFF then fail('lone surrogate') end
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
          pos = pos + 6
        elseif cp >= 0xDC00 and cp <= 0xDFFF then
          fail('lone surrogate')
        end
        out[#out + 1] = utf8.char(cp)
      else
        fail('bad escape')
      end
    end
  end
  local value
  local function container(depth, close, item)
    local out = {}
    ws()
    if s:sub(pos, pos) == close then pos = pos + 1; return out end
    while true do
      item(out, depth)
      ws()
      local c = s:sub(pos, pos)
      pos = pos + 1
      if c == close then return out end
      if c ~= ',' then pos = pos - 1; fail("expected ',' or '" .. close .. "'") end
    end
  end
  value = function(depth)
    if depth > 200 then fail('nested too deeply') end
    ws()
    local c = s:sub(pos, pos)
    if c == '"' then return str() end
    if c == '[' then
      pos = pos + 1
      return container(depth, ']', function(out, d) out[#out + 1] = value(d + 1) end)
    end
    if c == '{' then
      pos = pos + 1
      return container(depth, '}', function(out, d)
        ws()
        local k = str()
        ws()
        if s:sub(pos, pos) ~= ':' then fail("expected ':'") end
        pos = pos + 1
        if out[k] ~= nil then fail('duplicate key') end
        out[k] = value(d + 1)
      end)
    end
    for word, v in pairs { ['true'] = true, ['false'] = false } do
      if s:sub(pos, pos + #word - 1) == word then pos = pos + #word; return v end
    end
    fail('unexpected character')
  end
  local ok, r = pcall(function()
    local v = value(0)
    ws()
    if pos <= #s then fail('unexpected text after the value') end
    return v
  end)
  if ok then return r end
  if type(r) == 'table' and r.json then return nil, r.json end
  error(r, 0)
end

-- ---- saving ----

local function is_device(v)
  local mt = type(v) == 'userdata' and getmetatable(v)
  return mt and mt.__name == 'torch.device' or false
end

-- keys in a fixed order: numbers, then strings, then booleans
local kind_order = { number = 1, string = 2, boolean = 3 }
local function key_less(a, b)
  local ka, kb = kind_order[type(a)], kind_order[type(b)]
  if ka ~= kb then return ka < kb end
  if type(a) == 'boolean' then return not a and b end
  return a < b
end

local function fmt_float(x)
  if x ~= x then return 'nan' end
  if x == math.huge then return 'inf' end
  if x == -math.huge then return '-inf' end
  local s
  for digits = 15, 17 do -- the shortest form that reads back as the same double
    s = string.format('%.' .. digits .. 'g', x)
    if tonumber(s) == x then break end
  end
  if not s:find('[.e]') then s = s .. '.0' end
  return s
end

-- a label for a key inside a tensor name (UTF-8: bytes that are not become <xx>)
local function key_label(k)
  local s
  if math.type(k) == 'float' then s = fmt_float(k) else s = tostring(k) end
  if not is_utf8(s) then s = s:gsub('[\128-\255]', function(c) return string.format('<%02x>', c:byte()) end) end
  return s
end

local function scalar_node(v, where)
  local t = type(v)
  if t == 'number' then
    if math.type(v) == 'integer' then return { 'int', tostring(v) } end
    return { 'float', fmt_float(v) }
  elseif t == 'string' then
    if is_utf8(v) then return { 'string', v } end
    return { 'bytes', (v:gsub('.', function(c) return string.format('%02x', c:byte()) end)) }
  elseif t == 'boolean' then
    return { 'bool', v }
  end
  error(string.format('torch.save: cannot save a %s%s', t, where), 0)
end

local function where_of(path)
  if #path == 0 then return '' end
  local parts = {}
  for i, k in ipairs(path) do parts[i] = key_label(k) end
  return " (at key '" .. table.concat(parts, '.') .. "')"
end

-- The flat case: string keys (valid names) to tensors.
local function is_flat(value)
  if type(value) ~= 'table' then return false end
  for k, v in next, value do
    if type(k) ~= 'string' or k == '__metadata__' or not is_utf8(k) or not torch.is_tensor(v) then return false end
  end
  return true
end

-- Collect the tensors: names[i], tensors[i]; the structure node of value.
local function flatten(value, path, names, tensors, used, visiting)
  if torch.is_tensor(value) then
    local parts = {}
    for i, k in ipairs(path) do parts[i] = key_label(k) end
    local base = #parts > 0 and table.concat(parts, '.') or 'tensor'
    local name, n = base, 1
    while used[name] or name == '__metadata__' do
      n = n + 1
      name = base .. '#' .. n
    end
    used[name] = true
    names[#names + 1] = name
    tensors[#tensors + 1] = value
    return { 'tensor', name }
  end
  if type(value) ~= 'table' then return scalar_node(value, where_of(path)) end
  if visiting[value] then error('torch.save: the value contains a cycle' .. where_of(path), 0) end
  if getmetatable(value) then
    local ok, sd = pcall(function() return value.state_dict end)
    if ok and type(sd) == 'function' then
      error('torch.save: cannot save an object with methods' .. where_of(path) ..
        '; save its state_dict() instead', 0)
    end
  end
  visiting[value] = true
  local keys = {}
  for k in next, value do
    if kind_order[type(k)] == nil then
      error(string.format('torch.save: cannot save a table with a %s key%s', type(k), where_of(path)), 0)
    end
    keys[#keys + 1] = k
  end
  table.sort(keys, key_less)
  local items = {}
  for i, k in ipairs(keys) do
    path[#path + 1] = k
    items[i] = { scalar_node(k, where_of(path)), flatten(value[k], path, names, tensors, used, visiting) }
    path[#path] = nil
  end
  visiting[value] = nil
  return { 'table', items }
end

--- torch.save(path, value, {metadata = {key = 'value'}}): value is a tensor or a table of tensors,
--- numbers, strings, booleans and such tables. opts.metadata adds string entries to __metadata__.
function M.save(path, value, opts)
  if type(path) ~= 'string' then
    error(string.format("torch.save: expected a file name as the first argument, got a %s (the order is " ..
      "torch.save(path, value))", torch.is_tensor(path) and 'tensor' or type(path)), 2)
  end
  if value == nil then error('torch.save: ' .. path .. ': nothing to save (value is nil)', 2) end
  if opts ~= nil and type(opts) ~= 'table' then
    error('torch.save: expected an options table {metadata = ...} as the third argument, got a ' .. type(opts), 2)
  end
  local names, tensors, meta = {}, {}, {}
  local needs_meta = false
  if is_flat(value) then
    for k in next, value do names[#names + 1] = k end
    table.sort(names)
    for i, k in ipairs(names) do tensors[i] = value[k] end
  else
    local ok, node = pcall(flatten, value, {}, names, tensors, {}, {})
    if not ok then error(node, 2) end
    meta[STRUCTURE] = json_encode(node)
    needs_meta = true
  end
  local devices, grads = {}, {}
  for i, t in ipairs(tensors) do
    local d = tostring(t.device)
    if d ~= 'cpu:0' then devices[names[i]] = d end
    if t.requires_grad then grads[#grads + 1] = names[i] end
  end
  if next(devices) then meta[DEVICES] = json_encode(devices); needs_meta = true end
  if #grads > 0 then meta[REQUIRES_GRAD] = json_encode(grads); needs_meta = true end
  if opts and opts.metadata ~= nil then
    if type(opts.metadata) ~= 'table' then error('torch.save: opts.metadata must be a table of strings', 2) end
    for k, v in pairs(opts.metadata) do
      if type(k) ~= 'string' or type(v) ~= 'string' then
        error('torch.save: opts.metadata must map strings to strings, got ' .. type(k) .. ' = ' .. type(v), 2)
      end
      if meta[k] ~= nil or k:sub(1, 8) == 'lutorch.' then
        error("torch.save: opts.metadata key '" .. k .. "' is reserved", 2)
      end
      meta[k] = v
      needs_meta = true
    end
  end
  if needs_meta and meta.format == nil then meta.format = 'pt' end
  local ok, err = pcall(torch._safetensors_write, path, names, tensors, needs_meta and meta or nil)
  if not ok then error(err, 2) end
end

-- ---- loading ----

local function parse_device(s)
  local typ, idx = s:match('^(%a+):(%d+)$')
  if not typ then typ = s:match('^(%a+)$') end
  return typ, idx and tonumber(idx)
end

-- PyTorch's default_restore_location: the tensor (on cpu:0) to the device tag names, refusing
-- devices this process does not have.
local function restore(path, name, t, tag)
  local typ, idx = parse_device(tag)
  local prefix = 'torch.load: ' .. path .. ": tensor '" .. name .. "': "
  if typ == 'cuda' then
    if not torch.cuda.is_available() then
      error(prefix .. 'Attempting to deserialize object on a CUDA device (' .. tag .. ') but ' ..
        'torch.cuda.is_available() is false. If you are running on a CPU-only machine, please use ' ..
        "torch.load(path, {map_location = 'cpu'}) to map your tensors to the CPU.", 0)
    end
    local count = torch.cuda.device_count()
    if idx and idx >= count then
      error(prefix .. 'Attempting to deserialize object on CUDA device ' .. idx .. ' but ' ..
        'torch.cuda.device_count() is ' .. count .. '. Please use torch.load with map_location to map ' ..
        'your tensors to an existing device.', 0)
    end
  elseif typ == 'cpu' then
    if idx == nil or idx == 0 then
      if idx == 0 or torch.cpu.current_device() == 0 then return t end
    else
      local count = torch.cpu.device_count()
      if idx >= count then
        error(prefix .. 'Attempting to deserialize object on CPU device ' .. idx .. ' but ' ..
          'torch.cpu.device_count() is ' .. count .. '. Please use torch.load with map_location to map ' ..
          'your tensors to an existing device.', 0)
      end
    end
  else
    error(prefix .. "unknown device '" .. tostring(tag) .. "'", 0)
  end
  local ok, r = pcall(t.to, t, tag)
  if not ok then error(prefix .. 'cannot move it to ' .. tag .. ': ' .. tostring(r), 0) end
  return r
end

local function as_tag(v, path, name)
  if type(v) == 'string' then return v end
  if is_device(v) then return tostring(v) end
  error('torch.load: ' .. path .. ": map_location gave a " .. type(v) .. " for tensor '" .. name ..
    "', expected a device, a device string or nil", 0)
end

local function map_tensor(path, name, t, tag, map_location)
  local ml = map_location
  if ml == nil then return restore(path, name, t, tag) end
  if type(ml) == 'string' or is_device(ml) then return restore(path, name, t, tostring(ml)) end
  if type(ml) == 'table' then
    local to = ml[tag]
    if to == nil and tag == 'cpu' then to = ml['cpu:0'] end
    if to == nil then return restore(path, name, t, tag) end
    return restore(path, name, t, as_tag(to, path, name))
  end
  -- a function (tensor, saved_device) -> tensor | device | nil
  local r = ml(t, tag)
  if r == nil then return restore(path, name, t, tag) end
  if torch.is_tensor(r) then return r end
  return restore(path, name, t, as_tag(r, path, name))
end

local function bad_file(path, what) error('torch.load: ' .. path .. ': ' .. what, 0) end

local function decode_meta(path, meta, key)
  local s = meta[key]
  if s == nil then return nil end
  local v, err = json_decode(s)
  if v == nil then bad_file(path, "the metadata entry '" .. key .. "' is not valid: " .. err) end
  return v
end

local function rebuild(path, node, tensors, depth, used)
  local function bad(msg) bad_file(path, "the metadata entry '" .. STRUCTURE .. "' is not valid: " .. msg) end
  if depth > 200 then bad('nested too deeply') end
  if type(node) ~= 'table' or type(node[1]) ~= 'string' or #node ~= 2 then bad('expected [kind, value]') end
  local kind, v = node[1], node[2]
  if kind == 'tensor' then
    if type(v) ~= 'string' then bad('a tensor name must be a string') end
    local t = tensors[v]
    if t == nil then bad("it names a tensor '" .. v .. "' that the file does not hold") end
    used[v] = true
    return t
  elseif kind == 'int' then
    local n = type(v) == 'string' and v:match('^%-?%d+$') and math.tointeger(tonumber(v))
    if not n then bad("bad integer '" .. tostring(v) .. "'") end
    return n
  elseif kind == 'float' then
    if v == 'inf' then return math.huge elseif v == '-inf' then return -math.huge elseif v == 'nan' then return 0 / 0 end
    local x = type(v) == 'string' and v:match('^[-+%d.eE]+$') and tonumber(v)
    if not x then bad("bad float '" .. tostring(v) .. "'") end
    return math.type(x) == 'float' and x or x + 0.0 -- (-0.0 + 0.0 would lose the sign)
  elseif kind == 'string' then
    if type(v) ~= 'string' then bad('a string must be a string') end
    return v
  elseif kind == 'bytes' then
    if type(v) ~= 'string' or #v % 2 ~= 0 or v:find('[^%x]') then bad('bad bytes') end
    return (v:gsub('%x%x', function(h) return string.char(tonumber(h, 16)) end))
  elseif kind == 'bool' then
    if type(v) ~= 'boolean' then bad('a bool must be true or false') end
    return v
  elseif kind == 'table' then
    if type(v) ~= 'table' then bad('a table must hold an array of [key, value] pairs') end
    local out = {}
    for _, kv in ipairs(v) do
      if type(kv) ~= 'table' or #kv ~= 2 then bad('a table must hold an array of [key, value] pairs') end
      if type(kv[1]) ~= 'table' or kv[1][1] == 'table' or kv[1][1] == 'tensor' then bad('bad key') end
      local k = rebuild(path, kv[1], tensors, depth + 1, used)
      if k ~= k then bad('a key is NaN') end
      out[k] = rebuild(path, kv[2], tensors, depth + 1, used)
    end
    return out
  end
  bad("unknown kind '" .. kind .. "'")
end

--- torch.load(path, {map_location = ...}): map_location is a device or device string (every tensor
--- goes there), a table mapping saved device strings to device strings ('cpu' for cpu:0), or a
--- function (tensor, saved_device) returning a tensor, a device, or nil for the default.
function M.load(path, opts)
  if type(path) ~= 'string' then error('torch.load: expected a file name, got a ' .. type(path), 2) end
  if opts ~= nil and type(opts) ~= 'table' then
    error('torch.load: expected an options table {map_location = ...}, got a ' .. type(opts), 2)
  end
  local ml = opts and opts.map_location
  if ml ~= nil and type(ml) ~= 'string' and type(ml) ~= 'table' and type(ml) ~= 'function' and not is_device(ml) then
    error('torch.load: map_location must be a device, a device string, a table or a function, got a ' .. type(ml), 2)
  end
  if type(ml) == 'string' then
    local ok, err = pcall(torch.device, ml)
    if not ok then error('torch.load: map_location: ' .. tostring(err), 2) end
  end
  local ok, tensors, meta, names = pcall(torch._safetensors_read, path)
  if not ok then error(tensors, 2) end
  local ok2, result = pcall(function()
    local devices = decode_meta(path, meta, DEVICES) or {}
    if type(devices) ~= 'table' then bad_file(path, "the metadata entry '" .. DEVICES .. "' is not an object") end
    local grads = {}
    for _, n in ipairs(decode_meta(path, meta, REQUIRES_GRAD) or {}) do grads[n] = true end
    for _, name in ipairs(names) do
      local tag = devices[name] or 'cpu'
      if type(tag) ~= 'string' then bad_file(path, "the device of tensor '" .. name .. "' is not a string") end
      local t = map_tensor(path, name, tensors[name], tag, ml)
      if grads[name] then t.requires_grad = true end
      tensors[name] = t
    end
    local structure = decode_meta(path, meta, STRUCTURE)
    if structure == nil then return tensors end
    return rebuild(path, structure, tensors, 0, {})
  end)
  if not ok2 then error(result, 2) end
  return result
end

--- The raw contents of a safetensors file: {name = tensor} (on cpu:0), the metadata table, and
--- the names in the order of their data.
function M.load_safetensors(path)
  local ok, tensors, meta, names = pcall(torch._safetensors_read, path)
  if not ok then error(tensors, 2) end
  return tensors, meta, names
end

--- nn.utils.consume_prefix_in_state_dict_if_present(state_dict, prefix): strips prefix from the
--- keys that have it, in place, in sorted key order as PyTorch does (so 'module.' from a
--- DataParallel checkpoint).
function M.consume_prefix_in_state_dict_if_present(state_dict, prefix)
  if type(state_dict) ~= 'table' then
    error('consume_prefix_in_state_dict_if_present: expected a state_dict table, got a ' .. type(state_dict), 2)
  end
  if type(prefix) ~= 'string' then
    error('consume_prefix_in_state_dict_if_present: expected a prefix string, got a ' .. type(prefix), 2)
  end
  local keys = {}
  for k in pairs(state_dict) do if type(k) == 'string' then keys[#keys + 1] = k end end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if k:sub(1, #prefix) == prefix then
      local v = state_dict[k]
      state_dict[k] = nil
      state_dict[k:sub(#prefix + 1)] = v
    end
  end
end

M._json_encode, M._json_decode = json_encode, json_decode

torch.save, torch.load = M.save, M.load
torch.serialization = M
return M
