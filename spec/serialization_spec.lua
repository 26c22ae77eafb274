-- torch.save / torch.load (safetensors): the format's test vectors byte for byte, a file written by
-- an independent writer (tools/gen_safetensors_reference.py, values from PyTorch), round trips of
-- every dtype and of nested values, map_location, atomic saves and corrupt files.
-- Run with LUTORCH_CPU_DEVICES=2 (the map_location cases move tensors between cpu:0 and cpu:1).
local torch = require 'torch'
local H = require 'spec.helpers'

local tmpdir = io.popen('mktemp -d'):read('l')
local function tmp(name) return tmpdir .. '/' .. name end

local function read_bytes(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('a')
  f:close()
  return s
end
local function write_bytes(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end
local function bytes_of(list)
  local t = {}
  for i, b in ipairs(list) do t[i] = string.char(b) end
  return table.concat(t)
end
local function header_of(path)
  local s = read_bytes(path)
  local n = string.unpack('<I8', s)
  return s:sub(9, 8 + n), n
end
local function ls(dir)
  local p = io.popen('ls -A ' .. dir)
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- exact equality of tensors (dtype, shape, values; NaN equal to NaN, -0.0 distinct from 0.0)
local function same_value(a, b)
  if a ~= a and b ~= b then return true end
  if a == 0 and b == 0 and math.type(a) == 'float' and math.type(b) == 'float' then return 1 / a == 1 / b end
  return a == b and math.type(a) == math.type(b)
end
local function assert_same_tensor(got, want, msg)
  msg = msg or 'tensor'
  assert(torch.is_tensor(got), msg .. ': not a tensor')
  assert(got.dtype == want.dtype, ('%s: dtype %s, expected %s'):format(msg, tostring(got.dtype), tostring(want.dtype)))
  assert(got.shape == want.shape, ('%s: shape %s, expected %s'):format(msg, tostring(got.shape), tostring(want.shape)))
  local g, w = H.flatten(got:totable()), H.flatten(want:totable())
  if want:dim() == 0 then g, w = { got:item() }, { want:item() } end
  assert(#g == #w, msg .. ': value count')
  for i = 1, #w do
    assert(same_value(g[i], w[i]), ('%s: element %d is %s, expected %s'):format(msg, i, tostring(g[i]), tostring(w[i])))
  end
end

-- deep equality of loaded values (tensors compared as above; math.type of numbers kept)
local function assert_deep(got, want, path)
  path = path or 'value'
  if torch.is_tensor(want) then return assert_same_tensor(got, want, path) end
  if type(want) ~= 'table' then
    assert(type(got) == type(want), ('%s: %s, expected %s'):format(path, type(got), type(want)))
    if type(want) == 'number' then
      assert(same_value(got, want), ('%s: %s (%s), expected %s (%s)'):format(path, tostring(got),
        math.type(got), tostring(want), math.type(want)))
    else
      assert(got == want, ('%s: %q, expected %q'):format(path, tostring(got), tostring(want)))
    end
    return
  end
  assert(type(got) == 'table', path .. ': expected a table, got ' .. type(got))
  for k, v in pairs(want) do assert_deep(got[k], v, path .. '.' .. tostring(k)) end
  for k in pairs(got) do assert(want[k] ~= nil, path .. ': unexpected key ' .. tostring(k)) end
end

-- a safetensors file from a header text and data bytes
local function craft(header, data) return string.pack('<I8', #header) .. header .. (data or '') end

local function load_error(bytes, ...)
  local p = tmp('corrupt.safetensors')
  write_bytes(p, bytes)
  return H.raises(function() torch.load(p) end, 'torch.load', p, ...)
end

describe('safetensors test vectors (huggingface/safetensors tensor.rs)', function()
  it('writes the empty file: length 8, {} and six spaces', function()
    local p = tmp('empty.safetensors')
    torch._safetensors_write(p, {}, {}, nil)
    assert.are.equal(bytes_of { 8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32 }, read_bytes(p))
    torch.save(p, {})
    assert.are.equal(bytes_of { 8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32 }, read_bytes(p))
    assert_deep(torch.load(p), {})
  end)

  it('writes metadata first, padded to 40 bytes', function()
    local p = tmp('meta.safetensors')
    torch._safetensors_write(p, {}, {}, { framework = 'pt' })
    assert.are.equal(bytes_of { 40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97,
      95, 95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112, 116, 34, 125, 125,
      32, 32, 32, 32, 32 }, read_bytes(p))
  end)

  it("writes attn.0 ([1, 2, 3] float32) with N = 64 and no padding, as torch.save of a state_dict", function()
    local expected = bytes_of { 64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34,
      100, 116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58, 91, 49, 44,
      50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44, 50,
      52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64 }
    local x = torch.tensor({ 0, 1, 2, 3, 4, 5 }, { dtype = torch.float32 }):view(1, 2, 3)
    local p = tmp('attn.safetensors')
    torch._safetensors_write(p, { 'attn.0' }, { x }, nil)
    assert.are.equal(expected, read_bytes(p))
    torch.save(p, { ['attn.0'] = x })
    assert.are.equal(expected, read_bytes(p))
    assert_same_tensor(torch.load(p)['attn.0'], x)
  end)

  it('pads attn0 ([1, 1, 2, 3]) with seven spaces to N = 72', function()
    local x = torch.tensor({ 0, 1, 2, 3, 4, 5 }, { dtype = torch.float32 }):view(1, 1, 2, 3)
    local p = tmp('attn0.safetensors')
    torch.save(p, { attn0 = x })
    local s = read_bytes(p)
    assert.are.equal(string.pack('<I8', 72) ..
      '{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}' .. string.rep(' ', 7) ..
      string.pack('<ffffff', 0, 1, 2, 3, 4, 5), s)
  end)

  it("sorts tensors by the reference's dtype order (descending), then by name", function()
    local names, tensors = {}, {}
    for i, dt in ipairs(H.all_dtypes) do
      names[#names + 1] = 'b' .. i
      tensors[#tensors + 1] = torch.zeros(1, { dtype = dt })
      names[#names + 1] = 'a' .. i
      tensors[#tensors + 1] = torch.zeros(2, { dtype = dt })
    end
    local p = tmp('order.safetensors')
    torch._safetensors_write(p, names, tensors, nil)
    local header = header_of(p)
    local order = {}
    for dt in header:gmatch('"dtype":"(%w+)"') do order[#order + 1] = dt end
    local expect = {}
    for _, dt in ipairs { 'I64', 'F64', 'F32', 'I32', 'BF16', 'F16', 'I16', 'I8', 'U8', 'BOOL' } do
      expect[#expect + 1] = dt
      expect[#expect + 1] = dt
    end
    assert.are.same(expect, order)
    -- within a dtype, by name (bytewise): a<i> before b<i>; offsets contiguous from 0
    local first = header:match('^{"(%w+)":')
    assert.are.equal('a5', first) -- int64 is H.all_dtypes[5]
    local prev = 0
    for b, e in header:gmatch('"data_offsets":%[(%d+),(%d+)%]') do
      assert.are.equal(prev, tonumber(b))
      prev = tonumber(e)
    end
  end)

  it('escapes names as serde_json does', function()
    local p = tmp('escape.safetensors')
    torch._safetensors_write(p, { 'a"b\\c\1\n\t\127/ñ' }, { torch.zeros(0) }, nil)
    local header = header_of(p)
    assert.are.equal('{"a\\"b\\\\c\\u0001\\n\\t\127/ñ":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}',
      header:gsub(' +$', ''))
    local t = torch.serialization.load_safetensors(p)
    assert.truthy(t['a"b\\c\1\n\t\127/ñ'])
  end)
end)

describe('a file from an independent writer (tools/gen_safetensors_reference.py)', function()
  local ref = dofile('spec/data/safetensors_reference.lua')
  local path = 'spec/data/reference.safetensors'

  it('the fixture is the one the generator recorded', function()
    local hex = read_bytes(path):gsub('.', function(c) return string.format('%02x', c:byte()) end)
    assert.are.equal(ref.hex, hex)
  end)

  it('loads every tensor with PyTorch’s dtype, shape and values, and the metadata', function()
    local tensors, meta, names = torch.serialization.load_safetensors(path)
    assert.are.same(ref.names, names)
    assert.are.same(ref.metadata, meta)
    local n = 0
    for name, want in pairs(ref.tensors) do
      n = n + 1
      local t = tensors[name]
      assert(t, 'missing ' .. name)
      assert.are.equal(torch[want.dtype], t.dtype)
      assert.are.same(want.shape, { table.unpack(t.shape) })
      assert.are.equal(tostring(torch.device('cpu:0')), tostring(t.device))
      local got = t:dim() == 0 and { t:item() } or H.flatten(t:totable())
      assert.are.equal(#want.values, #got)
      for i = 1, #got do
        assert(same_value(got[i], want.values[i]) or (want.dtype ~= 'float64' and got[i] == want.values[i]),
          ('%s[%d]: %s, expected %s'):format(name, i, tostring(got[i]), tostring(want.values[i])))
      end
    end
    assert.are.equal(#ref.names, n)
    -- torch.load gives the same flat table (no lutorch structure in a foreign file)
    local loaded = torch.load(path)
    for name in pairs(ref.tensors) do assert_same_tensor(loaded[name], tensors[name], name) end
  end)

  it('writing the loaded tensors back reproduces the file byte for byte', function()
    local tensors, meta, names = torch.serialization.load_safetensors(path)
    local list = {}
    -- any input order: the writer sorts
    local shuffled = {}
    for i = #names, 1, -1 do shuffled[#shuffled + 1] = names[i] end
    for i, n in ipairs(shuffled) do list[i] = tensors[n] end
    local p = tmp('rewrite.safetensors')
    torch._safetensors_write(p, shuffled, list, meta)
    assert.are.equal(read_bytes(path), read_bytes(p))
  end)
end)

describe('torch.save / torch.load round trips', function()
  it('keeps every dtype exactly, including 0-d and empty tensors', function()
    torch.manual_seed(3)
    local sd = {}
    for _, dt in ipairs(H.all_dtypes) do
      local x
      if dt == torch.bool then x = torch.randint(0, 2, { 3, 4 }):to(dt)
      elseif dt == torch.uint8 then x = torch.randint(0, 256, { 3, 4 }):to(dt)
      elseif dt == torch.int8 then x = torch.randint(-128, 128, { 3, 4 }):to(dt)
      elseif not dt.is_floating_point then x = torch.randint(-30000, 30000, { 3, 4 }):to(dt)
      else x = (torch.randn(3, 4, { dtype = torch.float64 }) * 100):to(dt) end
      sd['w.' .. dt.name] = x
      sd['s.' .. dt.name] = x:select(1, 2):select(1, 3) -- 0-d
      sd['e.' .. dt.name] = torch.zeros(0, 5, { dtype = dt })
    end
    sd['big.int64'] = torch.tensor({ math.maxinteger, math.mininteger, 2 ^ 53 + 1 | 0 })
    sd['special.f64'] = torch.tensor({ 1 / 0, -1 / 0, 0 / 0, -0.0, 5e-324 }, { dtype = torch.float64 })
    local p = tmp('dtypes.safetensors')
    torch.save(p, sd)
    local back = torch.load(p)
    assert_deep(back, sd)
    -- a flat state_dict: exactly its keys as names and no metadata
    local header = header_of(p)
    assert.is_nil(header:find('__metadata__', 1, true))
    local _, _, names = torch.serialization.load_safetensors(p)
    local keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    table.sort(keys)
    table.sort(names)
    assert.are.same(keys, names)
  end)

  it('saves non-contiguous tensors (transposed, stepped, expanded) by their values', function()
    local base = torch.arange(24, { dtype = torch.float64 }):view(4, 6)
    local cases = {
      t = base:t(),
      narrow = base:narrow(2, 2, 3),
      step = base:t():narrow(1, 2, 3):narrow(2, 1, 2),
      expanded = torch.tensor({ 1, 2, 3 }, { dtype = torch.int16 }):view(3, 1):expand(3, 4),
      half_t = base:to(torch.float16):t(),
    }
    for _, x in pairs(cases) do assert.is_false(x:is_contiguous()) end
    local p = tmp('noncontig.safetensors')
    torch.save(p, cases)
    local back = torch.load(p)
    for k, x in pairs(cases) do
      assert_same_tensor(back[k], x, k)
      assert.is_true(back[k]:is_contiguous())
      -- values checked against plain Lua indexing of the original view
      local rows, cols = x.shape[1], x.shape[2]
      for i = 1, rows do
        for j = 1, cols do assert.are.equal(x[i][j], back[k][i][j]) end
      end
    end
    -- the file holds 4*6*... bytes per tensor: the expanded one as 12 int16, not 3
    local header = header_of(p)
    local b, e = header:match('"expanded":{"dtype":"I16","shape":%[3,4%],"data_offsets":%[(%d+),(%d+)%]')
    assert.are.equal(24, tonumber(e) - tonumber(b))
  end)

  it('saves tensors that share storage as separate data', function()
    local base = torch.arange(6, { dtype = torch.float32 })
    local value = { a = base:narrow(1, 1, 4), b = base:narrow(1, 3, 4), c = base }
    local p = tmp('shared.safetensors')
    torch.save(p, value)
    base:fill_(-1) -- after the save: the file must not change
    local back = torch.load(p)
    H.assert_values(back.a, { 0, 1, 2, 3 })
    H.assert_values(back.b, { 2, 3, 4, 5 })
    H.assert_values(back.c, { 0, 1, 2, 3, 4, 5 })
    back.a:fill_(9)
    H.assert_values(back.b, { 2, 3, 4, 5 })
    H.assert_values(back.c, { 0, 1, 2, 3, 4, 5 })
  end)

  it('rebuilds nested tables of tensors, numbers, strings and booleans', function()
    local value = {
      state = {
        [1] = { step = 3, exp_avg = torch.ones(2), exp_avg_sq = torch.zeros(2, { dtype = torch.float64 }) },
        [2] = { step = 3, exp_avg = torch.ones(3):neg() },
      },
      param_groups = { { lr = 0.001, betas = { 0.9, 0.999 }, eps = 1e-8, amsgrad = false, params = { 1, 2 } } },
      epoch = 7,
      loss = 0.25,
      best = 1 / 0,
      worst = -1 / 0,
      nan = 0 / 0,
      negzero = -0.0,
      whole_float = 3.0,
      big = math.maxinteger,
      small = math.mininteger,
      name = 'run "1"\n\tü',
      blob = '\0\1\255\254 binary',
      flags = { [true] = 'yes', [false] = 'no' },
      [2.5] = 'float key',
      [-3] = 'negative key',
      ['a.b'] = torch.tensor({ 1 }),
      a = { b = torch.tensor({ 2 }) },
      ['__metadata__'] = torch.tensor({ 3 }),
      empty = {},
    }
    local p = tmp('nested.safetensors')
    torch.save(p, value)
    local back = torch.load(p)
    assert_deep(back, value)
    assert.are.equal('integer', math.type(back.epoch))
    assert.are.equal('float', math.type(back.whole_float))
    -- readable names: dotted key paths; taken names get #2
    local tensors, meta = torch.serialization.load_safetensors(p)
    assert.truthy(tensors['state.1.exp_avg'])
    assert.truthy(tensors['state.2.exp_avg'])
    assert.truthy(tensors['a.b'] and tensors['a.b#2'])
    assert.truthy(tensors['__metadata__#2'])
    assert.are.equal('pt', meta.format)
    assert.truthy(meta['lutorch.structure'])
  end)

  it('saves a single tensor and plain values at the root', function()
    local p = tmp('root.safetensors')
    local x = torch.arange(5, { dtype = torch.int32 })
    torch.save(p, x)
    assert_same_tensor(torch.load(p), x)
    for _, v in ipairs { 42, -1.5, 'text', true, false } do
      torch.save(p, v)
      assert_deep(torch.load(p), v)
    end
  end)

  it('keeps requires_grad (as PyTorch, a non-leaf loads as a leaf that requires grad)', function()
    local w = torch.tensor({ 1.5, -2 }, { requires_grad = true })
    local y = (w * 2):sum()
    local p = tmp('grad.safetensors')
    torch.save(p, { w = w, y = y, d = y:detach() })
    local back = torch.load(p)
    assert.is_true(back.w.requires_grad)
    assert.is_true(back.y.requires_grad)
    assert.is_nil(back.y.grad_fn)
    assert.is_false(back.d.requires_grad)
    H.assert_values(back.w, { 1.5, -2 })
    H.assert_values(back.y, { -1 })
  end)

  it('replaces the previous file', function()
    local p = tmp('replace.safetensors')
    torch.save(p, { a = torch.ones(100) })
    torch.save(p, { b = torch.zeros(1) })
    local back = torch.load(p)
    assert.is_nil(back.a)
    H.assert_values(back.b, { 0 })
    assert.are.equal(8 + #header_of(p) + 4, #read_bytes(p))
  end)

  it('adds string metadata from opts.metadata', function()
    local p = tmp('usermeta.safetensors')
    torch.save(p, { w = torch.ones(1) }, { metadata = { author = 'me' } })
    local _, meta = torch.serialization.load_safetensors(p)
    assert.are.equal('me', meta.author)
    assert.are.equal('pt', meta.format)
    H.raises(function() torch.save(p, {}, { metadata = { x = 1 } }) end, 'torch.save', 'metadata')
    H.raises(function() torch.save(p, {}, { metadata = { ['lutorch.structure'] = '[]' } }) end, 'torch.save',
      'reserved')
  end)
end)

describe('torch.save errors', function()
  it('refuses values it cannot store, naming where they are', function()
    local p = tmp('bad.safetensors')
    H.raises(function() torch.save(p, { a = { b = print } }) end, 'torch.save', 'function', 'a.b')
    local cyc = {}
    cyc.self = cyc
    H.raises(function() torch.save(p, { x = cyc }) end, 'torch.save', 'cycle', 'x.self')
    H.raises(function() torch.save(p, { [{}] = 1 }) end, 'torch.save', 'table key')
    H.raises(function() torch.save(torch.ones(1), p) end, 'torch.save', 'torch.save(path, value)')
    H.raises(function() torch.save(p) end, 'torch.save', 'nothing to save')
    H.raises(function() torch._safetensors_write(p, { 'a', 'a' }, { torch.ones(1), torch.ones(2) }) end,
      'duplicate tensor name')
    H.raises(function() torch._safetensors_write(p, { '__metadata__' }, { torch.ones(1) }) end, 'reserved')
    H.raises(function() torch._safetensors_write(p, { 'a\255' }, { torch.ones(1) }) end, 'not valid UTF-8')
    assert.is_nil(io.open(p, 'rb'))
  end)

  it('names the path when the directory does not exist or is not a directory', function()
    local p = tmp('no/such/dir/x.safetensors')
    H.raises(function() torch.save(p, { a = torch.ones(1) }) end, 'torch.save', p, 'No such file or directory')
    write_bytes(tmp('plainfile'), 'x')
    local q = tmp('plainfile/x.safetensors')
    H.raises(function() torch.save(q, { a = torch.ones(1) }) end, 'torch.save', q, 'Not a directory')
    H.raises(function() torch.save(tmpdir, { a = torch.ones(1) }) end, 'torch.save', tmpdir)
  end)

  it('leaves the old file intact when the disk fills up mid-save', function()
    local dir = tmp('atomic')
    os.execute('mkdir -p ' .. dir)
    local p = dir .. '/ckpt.safetensors'
    torch.save(p, { w = torch.arange(10, { dtype = torch.float32 }) })
    local old = read_bytes(p)
    for _, limit in ipairs { 0, 7, 8, 40, 200, 4000 - 1 } do
      torch._safetensors_set_write_limit(limit)
      local ok, err = pcall(torch.save, p, { w = torch.zeros(1000), step = 5 })
      torch._safetensors_set_write_limit(-1)
      assert.is_false(ok)
      assert.truthy(tostring(err):find('No space left on device', 1, true), err)
      assert.truthy(tostring(err):find(p, 1, true), err)
      assert.are.equal(old, read_bytes(p))
      assert.are.same({ 'ckpt.safetensors' }, ls(dir)) -- no temporary file left behind
    end
    H.assert_values(torch.load(p).w, { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 })
  end)
end)

describe('torch.save and the file system', function()
  it('writes through a symbolic link and keeps the old permissions', function()
    local dir = tmp('links')
    os.execute('mkdir -p ' .. dir)
    local real, link = dir .. '/real.safetensors', dir .. '/link.safetensors'
    torch.save(real, { a = torch.ones(1) })
    os.execute('chmod 600 ' .. real .. ' && ln -s real.safetensors ' .. link)
    torch.save(link, { b = torch.zeros(2) })
    H.assert_values(torch.load(real).b, { 0, 0 })
    assert.are.equal('link', io.popen('stat -c %F ' .. link):read('l'):match('link'))
    assert.are.equal('600', io.popen('stat -c %a ' .. real):read('l'))
  end)

  it('handles file names up to the system limit', function()
    local p = tmp(string.rep('n', 250))
    torch.save(p, { a = torch.ones(3) })
    H.assert_values(torch.load(p).a, { 1, 1, 1 })
  end)

  it('fails cleanly in a read-only directory, keeping the old file (needs a non-root user)', function()
    local dir = tmp('readonly')
    os.execute('mkdir -p ' .. dir)
    local p = dir .. '/ckpt.safetensors'
    torch.save(p, { a = torch.ones(1) })
    local old = read_bytes(p)
    os.execute('chmod 555 ' .. dir)
    local probe = io.open(dir .. '/probe', 'w')
    if probe then -- root ignores the permission: the full-disk test above covers the failure path
      probe:close()
      os.remove(dir .. '/probe')
    else
      H.raises(function() torch.save(p, { b = torch.zeros(1) }) end, 'torch.save', p, 'Permission denied')
      assert.are.equal(old, read_bytes(p))
    end
    os.execute('chmod 755 ' .. dir)
  end)
end)

describe('torch.load map_location', function()
  local function save_on_devices()
    local p = tmp('devices.safetensors')
    local a = torch.tensor({ 1, 2 }, { dtype = torch.float32 })
    local b = torch.tensor({ 3, 4 }, { dtype = torch.float64 }):to('cpu:1')
    torch.save(p, { a = a, b = b })
    return p
  end

  it('restores tensors to the devices they were saved from by default', function()
    local back = torch.load(save_on_devices())
    assert.are.equal('cpu:0', tostring(back.a.device))
    assert.are.equal('cpu:1', tostring(back.b.device))
    H.assert_values(back.b, { 3, 4 })
  end)

  it('moves every tensor to a device given as a string or a device', function()
    local p = save_on_devices()
    local back = torch.load(p, { map_location = 'cpu:0' })
    assert.are.equal('cpu:0', tostring(back.b.device))
    H.assert_values(back.b, { 3, 4 })
    back = torch.load(p, { map_location = torch.device('cpu:1') })
    assert.are.equal('cpu:1', tostring(back.a.device))
    assert.are.equal('cpu:1', tostring(back.b.device))
    H.assert_values(back.a, { 1, 2 })
  end)

  it('maps saved devices through a table (cpu:0 is saved as "cpu")', function()
    local p = save_on_devices()
    local back = torch.load(p, { map_location = { ['cpu:1'] = 'cpu:0' } })
    assert.are.equal('cpu:0', tostring(back.b.device))
    back = torch.load(p, { map_location = { cpu = torch.device('cpu:1') } })
    assert.are.equal('cpu:1', tostring(back.a.device))
    assert.are.equal('cpu:1', tostring(back.b.device))
    back = torch.load(p, { map_location = { ['cuda:0'] = 'cpu' } }) -- unmatched: saved devices
    assert.are.equal('cpu:1', tostring(back.b.device))
  end)

  it('calls a function with the tensor and its saved device', function()
    local p = save_on_devices()
    local seen = {}
    local back = torch.load(p, { map_location = function(t, dev)
      seen[#seen + 1] = dev .. ':' .. t:numel()
      return nil -- default restore
    end })
    table.sort(seen)
    assert.are.same({ 'cpu:1:2', 'cpu:2' }, seen)
    assert.are.equal('cpu:1', tostring(back.b.device))
    back = torch.load(p, { map_location = function(_, dev) return dev == 'cpu:1' and 'cpu' or nil end })
    assert.are.equal('cpu:0', tostring(back.b.device))
    back = torch.load(p, { map_location = function(t) return t * 10 end })
    H.assert_values(back.a, { 10, 20 })
    H.assert_values(back.b, { 30, 40 })
    H.raises(function() torch.load(p, { map_location = function() return 5 end }) end, 'torch.load', 'map_location')
  end)

  it('rejects bad map_location values', function()
    local p = save_on_devices()
    H.raises(function() torch.load(p, { map_location = 5 }) end, 'torch.load', 'map_location')
    H.raises(function() torch.load(p, { map_location = 'gpu' }) end, 'torch.load', 'map_location')
    H.raises(function() torch.load(p, 'cpu') end, 'torch.load', 'options table')
  end)

  it('refuses a device index this process does not have', function()
    local p = tmp('cpu7.safetensors')
    torch._safetensors_write(p, { 'w' }, { torch.ones(1) }, { ['lutorch.devices'] = '{"w":"cpu:7"}' })
    H.raises(function() torch.load(p) end, 'torch.load', p, "'w'", 'CPU device 7', 'device_count() is 2', 'map_location')
    assert.are.equal('cpu:0', tostring(torch.load(p, { map_location = 'cpu' }).w.device))
  end)

  describe('a tensor saved from cuda:0 on a machine without CUDA', function()
    local p = tmp('cuda.safetensors')
    torch._safetensors_write(p, { 'w', 'b' }, { torch.ones(2, 2), torch.zeros(2) },
      { ['lutorch.devices'] = '{"w":"cuda:0","b":"cuda:1"}', format = 'pt' })

    it('raises the error that suggests map_location = cpu', function()
      if torch.cuda.is_available() then pending('a GPU is present: the no-CUDA error cannot arise') return end
      H.raises(function() torch.load(p) end, 'torch.load', p, 'CUDA device', 'torch.cuda.is_available() is false',
        "map_location = 'cpu'")
      H.raises(function() torch.load(p, { map_location = { ['cuda:0'] = 'cpu' } }) end, 'cuda:1',
        'torch.cuda.is_available() is false')
      H.raises(function() torch.load(p, { map_location = function() end }) end, 'torch.cuda.is_available() is false')
    end)

    it('loads with map_location = cpu, a table or a function', function()
      local back = torch.load(p, { map_location = 'cpu' })
      assert.are.equal('cpu:0', tostring(back.w.device))
      H.assert_values(back.w, { { 1, 1 }, { 1, 1 } })
      back = torch.load(p, { map_location = { ['cuda:0'] = 'cpu', ['cuda:1'] = 'cpu:1' } })
      assert.are.equal('cpu:1', tostring(back.b.device))
      local tags = {}
      back = torch.load(p, { map_location = function(_, dev) tags[#tags + 1] = dev; return 'cpu' end })
      table.sort(tags)
      assert.are.same({ 'cuda:0', 'cuda:1' }, tags)
      H.assert_values(back.b, { 0, 0 })
    end)
  end)
end)

describe('torch.load of corrupt files', function()
  local good_header = '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
  local good_data = string.pack('<ff', 1, 2)

  it('the crafted good file loads (the cases below differ from it in one way)', function()
    local p = tmp('good.safetensors')
    write_bytes(p, craft(good_header, good_data))
    H.assert_values(torch.load(p).w, { 1, 2 })
  end)

  it('missing, empty, short and non-regular files', function()
    H.raises(function() torch.load(tmp('missing.safetensors')) end, 'torch.load', 'missing.safetensors', 'No such file')
    load_error('', 'too short')
    load_error('\1\0\0', 'too short')
    H.raises(function() torch.load(tmpdir) end, 'torch.load', tmpdir, 'not a regular file')
    local fifo = tmp('fifo')
    os.execute('mkfifo ' .. fifo)
    H.raises(function() torch.load(fifo) end, 'torch.load', fifo, 'not a regular file') -- and no hang
  end)

  it('header lengths past the limit or the file', function()
    load_error(string.pack('<I8', 1 << 40) .. good_header, 'header length 1099511627776 exceeds the limit')
    load_error(string.rep('\255', 8) .. good_header, 'exceeds the limit')
    load_error(string.pack('<I8', 100000001) .. good_header, 'exceeds the limit')
    load_error(string.pack('<I8', 1000) .. good_header, 'header length 1000 exceeds the file size')
    -- a truncated header
    load_error(craft(good_header, good_data):sub(1, 30), 'exceeds the file size')
  end)

  it('a wrong header length', function()
    local s = craft(good_header, good_data)
    load_error(string.pack('<I8', #good_header - 1) .. s:sub(9), 'not valid JSON')
    load_error(string.pack('<I8', #good_header + 4) .. s:sub(9), 'not valid UTF-8') -- data bytes 0 0 128 63
    load_error(string.pack('<I8', #good_header + 1) .. s:sub(9), 'not valid JSON', 'after the header')
  end)

  it('truncated or extended data', function()
    load_error(craft(good_header, good_data:sub(1, 5)), 'truncated', '8 bytes', 'holds 5')
    load_error(craft(good_header, ''), 'truncated')
    load_error(craft(good_header, good_data .. 'xx'), 'holds 10 bytes', 'only 8')
  end)

  it('offsets outside the data, overlapping, with gaps or reversed', function()
    load_error(craft('{"w":{"dtype":"F32","shape":[250],"data_offsets":[0,1000]}}', good_data), 'truncated')
    load_error(craft('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[2],' ..
      '"data_offsets":[4,12]}}', good_data .. good_data), "'v'", 'overlap')
    load_error(craft('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[1],' ..
      '"data_offsets":[12,16]}}', good_data .. good_data), "'v'", 'gap')
    load_error(craft('{"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', good_data .. good_data), 'gap')
    load_error(craft('{"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}', good_data), 'end before they begin')
    load_error(craft('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}}', good_data), 'data_offsets')
    load_error(craft('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}}', good_data), 'data_offsets')
    load_error(craft('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]}}', good_data),
      'too large')
  end)

  it('shape and size mismatches, huge shapes, too many dimensions', function()
    load_error(craft('{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', good_data), "'w'", 'needs 12 bytes',
      'hold 8')
    load_error(craft('{"w":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}', good_data), 'needs 16 bytes')
    load_error(craft('{"w":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,8]}}',
      good_data), 'too large')
    load_error(craft('{"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', good_data), 'non-negative integers')
    load_error(craft('{"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}', good_data), 'non-negative integers')
    load_error(craft('{"w":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}}', good_data), 'non-negative integers')
    load_error(craft('{"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}}', good_data), "expected '['")
    load_error(craft('{"w":{"dtype":"F32","shape":[' .. string.rep('1,', 16) .. '2],"data_offsets":[0,8]}}',
      good_data), 'more than 16 dimensions')
  end)

  it('unknown or unsupported dtypes, missing and duplicate fields, duplicate names', function()
    load_error(craft('{"w":{"dtype":"F128","shape":[2],"data_offsets":[0,8]}}', good_data), "unknown dtype 'F128'")
    load_error(craft('{"w":{"dtype":"U16","shape":[4],"data_offsets":[0,8]}}', good_data), 'U16',
      'does not support')
    load_error(craft('{"w":{"dtype":7,"shape":[2],"data_offsets":[0,8]}}', good_data), 'expected a string')
    load_error(craft('{"w":{"dtype":"F32","data_offsets":[0,8]}}', good_data), "'w'", 'no "shape"')
    load_error(craft('{"w":{"dtype":"F32","shape":[2]}}', good_data), 'no "data_offsets"')
    load_error(craft('{"w":{"dtype":"F32","shape":[2],"shape":[2],"data_offsets":[0,8]}}', good_data),
      'duplicate field "shape"')
    load_error(craft('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],' ..
      '"data_offsets":[4,8]}}', good_data), "duplicate tensor name 'w'")
    load_error(craft('{"w":[1,2]}', good_data), "'w'", 'expected an object')
    -- unknown fields of later versions are skipped
    local p = tmp('extra.safetensors')
    write_bytes(p, craft('{"w":{"x":{"y":[1.5e3,null,true,"s"]},"dtype":"F32","shape":[2],"data_offsets":[0,8]}}',
      good_data))
    H.assert_values(torch.load(p).w, { 1, 2 })
  end)

  it('bad JSON, bad UTF-8 and bad metadata', function()
    load_error(craft('{"w":', ''), 'not valid JSON')
    load_error(craft('{"w" 1}', ''), 'not valid JSON', "expected ':'")
    load_error(craft('[]', ''), 'not valid JSON')
    load_error(craft('nul', ''), 'not valid JSON')
    load_error(craft('{} x', ''), 'not valid JSON', 'after the header')
    load_error(craft('{"a\\q":1}', ''), 'bad escape')
    load_error(craft('{"a\\ud800":1}', ''), 'surrogate')
    load_error(craft('{"a\1":1}', ''), 'control character')
    load_error(craft('{"\255":{}}', ''), 'not valid UTF-8')
    load_error(craft('{"\237\160\128":{}}', ''), 'not valid UTF-8') -- an encoded surrogate
    load_error(craft('{"w":{"x":' .. string.rep('[', 100) .. string.rep(']', 100) .. '}}', ''), 'nested too deeply')
    load_error(craft('{"__metadata__":{"a":1}}', ''), "metadata 'a' must be a string")
    load_error(craft('{"__metadata__":[]}', ''), '__metadata__')
    load_error(craft('{"__metadata__":{"a":"1","a":"2"}}', ''), "duplicate metadata key 'a'")
    load_error(craft('{"__metadata__":{},"__metadata__":{}}', ''), 'duplicate "__metadata__"')
    -- valid: metadata null, whitespace around the header
    local p = tmp('ws.safetensors')
    write_bytes(p, craft(' \n{ "__metadata__" : null , "w" : {"dtype":"F32","shape":[2],"data_offsets":[0,8]} }\t ',
      good_data))
    H.assert_values(torch.load(p).w, { 1, 2 })
  end)

  it('corrupt lutorch metadata', function()
    local function with_meta(meta)
      local p = tmp('badmeta.safetensors')
      torch._safetensors_write(p, { 'w' }, { torch.ones(1) }, meta)
      return p
    end
    H.raises(function() torch.load(with_meta { ['lutorch.structure'] = '["tensor", "nope"]' }) end, 'torch.load',
      'lutorch.structure', "'nope'")
    H.raises(function() torch.load(with_meta { ['lutorch.structure'] = '["table", [[' }) end, 'lutorch.structure')
    H.raises(function() torch.load(with_meta { ['lutorch.structure'] = '["int", "1.5"]' }) end, 'bad integer')
    H.raises(function() torch.load(with_meta { ['lutorch.structure'] = '["code", "os.exit()"]' }) end,
      "unknown kind 'code'")
    H.raises(function() torch.load(with_meta { ['lutorch.structure'] = string.rep('[', 1000) }) end,
      'nested too deeply')
    H.raises(function() torch.load(with_meta { ['lutorch.devices'] = '{"w":5}' }) end, 'lutorch.devices')
    H.raises(function() torch.load(with_meta { ['lutorch.devices'] = '{"w":"tpu:0"}' }) end, "unknown device 'tpu:0'")
  end)

  it('every truncation and many single-byte corruptions raise an error or load, never crash', function()
    local p = tmp('src.safetensors')
    torch.save(p, { w = torch.arange(6, { dtype = torch.float32 }):view(2, 3), step = 4,
      m = torch.tensor({ true, false }) })
    local good = read_bytes(p)
    local q = tmp('mutant.safetensors')
    for len = 0, #good - 1 do
      write_bytes(q, good:sub(1, len))
      local ok, err = pcall(torch.load, q)
      assert(not ok, 'a truncation to ' .. len .. ' bytes loaded')
      assert.truthy(tostring(err):find('torch.load', 1, true), err)
    end
    local n = 0
    for pos = 1, #good do
      for _, b in ipairs { 0, 0x22, 0x5b, 0x7d, 0x39, 0xff } do
        local s = good:sub(1, pos - 1) .. string.char(b) .. good:sub(pos + 1)
        write_bytes(q, s)
        local ok, err = pcall(torch.load, q)
        if not ok then assert.truthy(tostring(err):find('torch.load', 1, true), err) end
        n = n + 1
      end
    end
    assert(n > 1000)
  end)
end)

describe('torch.serialization.consume_prefix_in_state_dict_if_present', function()
  it('strips the prefix in place, in sorted key order as PyTorch', function()
    local a, b, c = torch.ones(1), torch.zeros(1), torch.ones(2)
    local sd = { ['module.a'] = a, ['module.m.b'] = b, other = c }
    torch.serialization.consume_prefix_in_state_dict_if_present(sd, 'module.')
    assert.are.equal(a, sd.a)
    assert.are.equal(b, sd['m.b'])
    assert.are.equal(c, sd.other)
    assert.is_nil(sd['module.a'])
    -- sorted, 'm.m.x' comes first and its new key 'm.x' replaces the old one, which then becomes
    -- 'x': PyTorch 1.13 gives {'x': <the value of 'm.m.x'>} for this input too
    local x, y = torch.ones(1), torch.zeros(1)
    sd = { ['m.x'] = x, ['m.m.x'] = y }
    torch.serialization.consume_prefix_in_state_dict_if_present(sd, 'm.')
    assert.are.equal(y, sd.x)
    assert.is_nil(sd['m.x'])
    assert.is_nil(sd['m.m.x'])
    H.raises(function() torch.serialization.consume_prefix_in_state_dict_if_present(sd) end, 'prefix')
  end)
end)

teardown(function() os.execute('rm -rf ' .. tmpdir) end)
