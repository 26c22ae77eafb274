-- torch.distributed's collectives of Lua values (PyTorch's *_object functions): all_gather_object,
-- broadcast_object_list, gather_object, scatter_object_list. A value is made of nil, booleans,
-- numbers, strings, tensors and tables of them (tables without metatables, no cycles; a table
-- reached twice arrives as two copies); it travels as bytes in a uint8 tensor, through the tensor
-- collectives, each rank's bytes preceded by their length. The bytes are data only: decoding builds
-- values, it never loads code. Tensors arrive with their dtype, shape and device, as new tensors
-- (no autograd history).
local torch = require 'torch'

local C = torch._dist
local M = {}

local MAX_DEPTH = 200

-- the bytes of value v, appended to parts
local function encode(op, v, parts, depth, seen)
  local tv = type(v)
  if v == nil then parts[#parts + 1] = 'z'
  elseif tv == 'boolean' then parts[#parts + 1] = v and 'T' or 'F'
  elseif math.type(v) == 'integer' then parts[#parts + 1] = string.pack('<c1i8', 'i', v)
  elseif tv == 'number' then parts[#parts + 1] = string.pack('<c1d', 'f', v)
  elseif tv == 'string' then parts[#parts + 1] = string.pack('<c1s8', 's', v)
  elseif torch.is_tensor(v) then
    local sizes = v:size()
    parts[#parts + 1] = string.pack('<c1s1s1B', 't', tostring(v.dtype), tostring(v.device), #sizes)
    for _, n in ipairs(sizes) do parts[#parts + 1] = string.pack('<i8', n) end
    parts[#parts + 1] = string.pack('<s8', C.to_bytes(v))
  elseif tv == 'table' then
    if getmetatable(v) ~= nil then
      error(string.format('%s: cannot send a table with a metatable (%s): objects are made of nil, booleans, '
        .. 'numbers, strings, tensors and plain tables', op, tostring(v)), 0)
    end
    if seen[v] then error(op .. ': cannot send a table that contains itself', 0) end
    if depth > MAX_DEPTH then error(string.format('%s: the object is nested over %d deep', op, MAX_DEPTH), 0) end
    seen[v] = true
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    parts[#parts + 1] = string.pack('<c1i8', 'h', n)
    -- keys in a fixed order: the same object gives the same bytes
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      local ta, tb = type(a), type(b)
      if ta ~= tb then return ta < tb end
      if ta == 'number' or ta == 'string' then return a < b end
      return tostring(a) < tostring(b)
    end)
    for _, k in ipairs(keys) do
      encode(op, k, parts, depth + 1, seen)
      encode(op, v[k], parts, depth + 1, seen)
    end
    seen[v] = nil
  else
    error(string.format('%s: cannot send a %s: objects are made of nil, booleans, numbers, strings, tensors and '
      .. 'plain tables', op, tv), 0)
  end
end

function M.encode(op, v)
  local parts = {}
  encode(op, v, parts, 0, {})
  return table.concat(parts)
end

-- the value at s's (1-based) position pos, and the position after it
local function decode(op, s, pos, depth)
  if depth > MAX_DEPTH + 1 then error(op .. ': received an object nested too deep', 0) end
  local tag = s:sub(pos, pos)
  pos = pos + 1
  if tag == 'z' then return nil, pos
  elseif tag == 'T' then return true, pos
  elseif tag == 'F' then return false, pos
  elseif tag == 'i' then return string.unpack('<i8', s, pos)
  elseif tag == 'f' then return string.unpack('<d', s, pos)
  elseif tag == 's' then return string.unpack('<s8', s, pos)
  elseif tag == 't' then
    local dtype, device, nd
    dtype, device, nd, pos = string.unpack('<s1s1B', s, pos)
    local dt = torch[dtype:match('^torch%.(%w+)$') or '']
    if dt == nil or tostring(dt) ~= dtype then error(op .. ': received a tensor of an unknown dtype ' .. dtype, 0) end
    local sizes = {}
    for d = 1, nd do sizes[d], pos = string.unpack('<i8', s, pos) end
    local len
    len, pos = string.unpack('<i8', s, pos)
    local t = C.from_bytes(s, dt, sizes, pos - 1)
    if #s - (pos - 1) < len or t:numel() * t:element_size() ~= len then
      error(op .. ': received a tensor whose bytes do not match its shape', 0)
    end
    pos = pos + len
    if device ~= 'cpu:0' and device ~= 'cpu' then t = t:to(device) end
    return t, pos
  elseif tag == 'h' then
    local n
    n, pos = string.unpack('<i8', s, pos)
    local t = {}
    for _ = 1, n do
      local k, v
      k, pos = decode(op, s, pos, depth + 1)
      v, pos = decode(op, s, pos, depth + 1)
      if k == nil then error(op .. ': received a table with a nil key', 0) end
      t[k] = v
    end
    return t, pos
  end
  error(string.format('%s: received bytes that are not an object (tag %q at %d)', op, tag, pos - 1), 0)
end

function M.decode(op, s)
  local v, pos = decode(op, s, 1, 0)
  if pos ~= #s + 1 then error(op .. ': received bytes that are not one object', 0) end
  return v
end

local function lengthed(s) return string.pack('<s8', s) end

-- the object in a block of bytes (a uint8 tensor): its length, then its bytes
local function unblock(op, block)
  local s = C.to_bytes(block)
  local len = string.unpack('<i8', s)
  if len < 0 or len > #s - 8 then error(op .. ': received a block shorter than its length', 0) end
  return M.decode(op, s:sub(9, 8 + len))
end

-- s as a uint8 tensor of n bytes (s, then zeros)
local function padded(s, n)
  local t = torch.zeros(n, { dtype = torch.uint8 })
  if #s > 0 then t:narrow(1, 1, #s):copy_(C.from_bytes(s)) end
  return t
end

-- the largest of the ranks' n
local function max_over(dist, n, group)
  local t = torch.tensor({ n }, { dtype = torch.int64 })
  dist.all_reduce(t, dist.ReduceOp.MAX, group)
  return t:item()
end

-- Installs the functions into dist (lua/torch/distributed.lua); preamble reads a collective's
-- optional arguments and gives its C group (false: this rank is not in it) and its root rank in the
-- group (lua/torch/distributed.lua's).
function M.install(dist, preamble)
  -- all_gather_object(object_list, obj, group): object_list[k + 1] becomes the group's rank k's obj
  function dist.all_gather_object(object_list, obj, group)
    local o, cg = preamble('all_gather_object', nil, nil, { 'group' }, nil, nil, group)
    if type(object_list) ~= 'table' then
      error('all_gather_object: object_list must be a table, got ' .. type(object_list), 2)
    end
    if cg == false then return nil end
    local mine = lengthed(M.encode('all_gather_object', obj))
    local n = dist.get_world_size(o.group)
    local width = max_over(dist, #mine, o.group)
    local blocks = {}
    for k = 1, n do blocks[k] = torch.empty(width, { dtype = torch.uint8 }) end
    dist.all_gather(blocks, padded(mine, width), o.group)
    for k = 1, n do object_list[k] = unblock('all_gather_object', blocks[k]) end
  end

  -- broadcast_object_list(object_list, src = 0, group): object_list's entries (1 .. #object_list of
  -- rank src's) become rank src's
  function dist.broadcast_object_list(object_list, src, group)
    local o, cg, k = preamble('broadcast_object_list', nil, nil, { 'src', 'group' }, 'src', 0, src, group)
    if type(object_list) ~= 'table' then
      error('broadcast_object_list: object_list must be a table, got ' .. type(object_list), 2)
    end
    if cg == false then return nil end
    local me = dist.get_rank(o.group)
    local bytes = ''
    if me == k then
      local all = { n = #object_list }
      for i = 1, all.n do all[i] = object_list[i] end
      bytes = M.encode('broadcast_object_list', all)
    end
    local len = torch.tensor({ #bytes }, { dtype = torch.int64 })
    dist.broadcast(len, o.src or 0, o.group)
    local block = padded(bytes, len:item())
    dist.broadcast(block, o.src or 0, o.group)
    if me ~= k then
      local all = M.decode('broadcast_object_list', C.to_bytes(block))
      for i = 1, all.n do object_list[i] = all[i] end
    end
  end

  -- gather_object(obj, object_gather_list, dst = 0, group): on rank dst object_gather_list[k + 1]
  -- becomes the group's rank k's obj; the other ranks give no list
  function dist.gather_object(obj, object_gather_list, dst, group)
    local o, cg, k = preamble('gather_object', nil, nil, { 'object_gather_list', 'dst', 'group' }, 'dst', 0,
      object_gather_list, dst, group)
    if cg == false then return nil end
    local list = o.object_gather_list
    if list ~= nil and type(list) ~= 'table' then
      error('gather_object: object_gather_list must be a table, got ' .. type(list), 2)
    end
    local me = dist.get_rank(o.group)
    if me == k and list == nil then
      error('gather_object: Argument ``object_gather_list`` must be specified on destination rank.', 2)
    elseif me ~= k and list ~= nil then
      error('gather_object: Argument ``object_gather_list`` must NOT be specified on non-destination ranks.', 2)
    end
    local mine = lengthed(M.encode('gather_object', obj))
    local width = max_over(dist, #mine, o.group)
    local blocks
    if me == k then
      blocks = {}
      for r = 1, dist.get_world_size(o.group) do blocks[r] = torch.empty(width, { dtype = torch.uint8 }) end
    end
    dist.gather(padded(mine, width), blocks, o.dst or 0, o.group)
    if me == k then
      for r = 1, #blocks do list[r] = unblock('gather_object', blocks[r]) end
    end
  end

  -- scatter_object_list(output_list, input_list, src = 0, group): output_list[1] becomes rank src's
  -- input_list[k + 1] on the group's rank k; input_list is read on rank src only
  function dist.scatter_object_list(output_list, input_list, src, group)
    local o, cg, k = preamble('scatter_object_list', nil, nil, { 'src', 'group' }, 'src', 0, src, group)
    if type(output_list) ~= 'table' then
      error('scatter_object_list: scatter_object_output_list must be a table, got ' .. type(output_list), 2)
    end
    if cg == false then return nil end
    local me, n = dist.get_rank(o.group), dist.get_world_size(o.group)
    local blocks, width = nil, 0
    if me == k then
      if type(input_list) ~= 'table' or #input_list ~= n then
        error(string.format('scatter_object_list: scatter_object_input_list must be a table of %d objects (one a '
          .. 'rank) on the source rank, got %s', n, type(input_list) == 'table' and #input_list .. ' of them' or type(input_list)), 2)
      end
      local encoded = {}
      for r = 1, n do
        encoded[r] = lengthed(M.encode('scatter_object_list', input_list[r]))
        width = math.max(width, #encoded[r])
      end
      blocks = {}
      for r = 1, n do blocks[r] = padded(encoded[r], width) end
    end
    local w = torch.tensor({ width }, { dtype = torch.int64 })
    dist.broadcast(w, o.src or 0, o.group)
    local out = torch.empty(w:item(), { dtype = torch.uint8 })
    dist.scatter(out, blocks, o.src or 0, o.group)
    output_list[1] = unblock('scatter_object_list', out)
  end
end

return M
