-- Tensors from raw bytes: torch.frombuffer (a Lua string's bytes) and torch.from_file (a file's),
-- in the machine's byte order, as PyTorch reads them. Both copy the bytes into a new CPU tensor:
-- Lua strings are immutable, so there is no buffer to share, and lutorch tensors do not live in
-- file mappings (from_file's shared = true is refused).
local torch = require 'torch'
local opts_of = require('torch.options').check
local as_int = require('torch.composite').as_int

local from_bytes = torch._from_bytes
torch._from_bytes = nil

-- the tensor of count elements of dtype from s's bytes at the 0-based offset (bool: any non-zero
-- byte is true, so that no other byte value reaches a bool tensor)
local function decode(s, offset, count, dtype)
  if dtype == torch.bool then return from_bytes(s, offset, count, torch.uint8):ne(0) end
  return from_bytes(s, offset, count, dtype)
end

local function finish(t, o)
  if o.device ~= nil then t = t:to(o.device) end
  if o.requires_grad then t:requires_grad_() end
  return t
end

--- torch.frombuffer(s, {dtype, count = -1, offset = 0, requires_grad = false}) -> a 1-D tensor of
--- the string s's bytes read as dtype (required, as in PyTorch): count elements (-1: all that the
--- bytes after offset hold, which must then be a whole number of them) from the 0-based byte
--- offset. A copy: PyTorch's shares the buffer's memory, but a Lua string cannot be written.
function torch.frombuffer(s, o)
  local op = 'frombuffer'
  if type(s) ~= 'string' then error(op .. ': expected a string of bytes, got ' .. type(s), 2) end
  o = opts_of(o, op, { 'dtype', 'count', 'offset', 'requires_grad' })
  local dtype, count, offset = o.dtype, o.count or -1, o.offset or 0
  if dtype == nil then error(op .. ': the dtype option is required', 2) end
  count = as_int(count)
  offset = as_int(offset)
  if math.type(count) ~= 'integer' or math.type(offset) ~= 'integer' then
    error(op .. ': count and offset must be integers', 2)
  end
  local len, es = #s, torch.tensor({}, { dtype = dtype }):element_size()
  if len == 0 or count == 0 then
    error(string.format('%s: both buffer length (%d) and count (%d) must not be 0', op, len, count), 2)
  end
  if offset < 0 or offset > len - 1 then
    error(string.format('%s: offset (%d bytes) must be non-negative and no greater than buffer length (%d bytes) minus 1',
      op, offset, len), 2)
  end
  if count < 0 then
    if count ~= -1 then error(op .. ': count must be -1 (all) or positive, got ' .. count, 2) end
    if (len - offset) % es ~= 0 then
      error(string.format('%s: buffer length (%d bytes) after offset (%d bytes) must be a multiple of element size (%d)',
        op, len - offset, offset, es), 2)
    end
    count = (len - offset) // es
  elseif count * es > len - offset then
    error(string.format('%s: requested buffer length (%d * %d bytes) after offset (%d bytes) must not be greater than actual buffer length (%d bytes)',
      op, count, es, offset, len), 2)
  end
  return finish(decode(s, offset, count, dtype), o)
end

--- torch.from_file(filename, shared, size = 0, {dtype, device, requires_grad}) (or
--- torch.from_file(filename, {shared, size, dtype, device, requires_grad})) -> a 1-D tensor of the
--- first size elements of dtype (default: the default dtype) stored in the file. shared = true,
--- which in PyTorch maps the file so that writes to the tensor reach it, is refused: lutorch reads
--- a copy.
function torch.from_file(filename, shared, size, o)
  local op = 'from_file'
  if type(shared) == 'table' then
    o = opts_of(shared, op, { 'shared', 'size', 'dtype', 'device', 'requires_grad' })
    shared, size = o.shared, o.size
  else
    o = opts_of(o, op, { 'dtype', 'device', 'requires_grad' })
  end
  if type(filename) ~= 'string' then error(op .. ': filename must be a string, got ' .. type(filename), 2) end
  if shared ~= nil and type(shared) ~= 'boolean' then error(op .. ': shared must be a boolean, got ' .. type(shared), 2) end
  if shared then
    error(op .. ': shared = true (a tensor mapped onto the file, its writes reaching the file) is not supported; '
      .. 'lutorch tensors cannot live in a file mapping. Leave shared false to read a copy', 2)
  end
  size = size or 0
  size = as_int(size)
  if math.type(size) ~= 'integer' or size < 0 then
    error(op .. ': size must be a non-negative integer, got ' .. tostring(size), 2)
  end
  local dtype = o.dtype or torch.get_default_dtype()
  local need = size * torch.tensor({}, { dtype = dtype }):element_size()
  local f, why = io.open(filename, 'rb')
  if not f then error(string.format('%s: unable to open file <%s> in read-only mode: %s', op, filename, why), 2) end
  local bytes = f:read(need) or ''
  f:close()
  if #bytes < need then
    error(string.format('%s: file <%s> size (%d bytes) is smaller than the required size (%d bytes)', op, filename,
      #bytes, need), 2)
  end
  return finish(decode(bytes, 0, size, dtype), o)
end
