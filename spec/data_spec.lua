-- torch.data: the IDX reader (files written here byte by byte, plain and gzipped by the gzip tool,
-- every corruption), the real Fashion-MNIST files checked against their raw bytes read in plain
-- Lua, datasets, samplers, default_collate and the DataLoader.
local torch = require 'torch'
local H = require 'spec.helpers'
local data = require 'torch.data'

local FASHION = '/usr/share/datasets/fashion-mnist'

local tmpdir
local function shape(t)
  local s = {}
  for d = 1, t:dim() do s[d] = t:size(d) end
  return s
end
local function tmp(name) return tmpdir .. '/' .. name end

local function write(path, bytes)
  local f = assert(io.open(path, 'wb'))
  assert(f:write(bytes))
  assert(f:close())
end
local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('a')
  f:close()
  return s
end
local function gzip(path) -- path -> path.gz, keeping path
  assert(os.execute(string.format("gzip -c '%s' > '%s.gz'", path, path)))
  return path .. '.gz'
end
-- the decompressed bytes of a gzip file, by the gzip tool (head: only the first n bytes)
local function gunzip(path, n)
  local cmd = string.format("gzip -dc '%s'", path)
  if n then cmd = cmd .. ' | head -c ' .. n end
  local p = assert(io.popen(cmd, 'r'))
  local s = p:read('a')
  p:close()
  return s
end

-- an IDX file: the magic (type byte, ndim), big-endian dimensions, big-endian values
local TYPES = {
  { code = 0x08, fmt = '>B', dtype = torch.uint8, values = { 0, 1, 127, 128, 200, 255 } },
  { code = 0x09, fmt = '>b', dtype = torch.int8, values = { -128, -1, 0, 1, 100, 127 } },
  { code = 0x0B, fmt = '>i2', dtype = torch.int16, values = { -32768, -300, -1, 0, 258, 32767 } },
  { code = 0x0C, fmt = '>i4', dtype = torch.int32, values = { -2147483648, -65536, -1, 0, 16909060, 2147483647 } },
  { code = 0x0D, fmt = '>f', dtype = torch.float32, values = { -1.5, 0, 0.25, 3.0e38, -1.0e-30, 1234.5 } },
  { code = 0x0E, fmt = '>d', dtype = torch.float64, values = { -1.5, 0, 0.1, 1.0e300, -2.0e-300, math.pi } },
}

local function idx_bytes(code, dims, values, fmt)
  local parts = { string.char(0, 0, code, #dims) }
  for _, d in ipairs(dims) do parts[#parts + 1] = string.pack('>I4', d) end
  for _, v in ipairs(values or {}) do parts[#parts + 1] = string.pack(fmt, v) end
  return table.concat(parts)
end

setup(function()
  local p = assert(io.popen('mktemp -d', 'r'))
  tmpdir = p:read('l')
  p:close()
  assert(tmpdir and #tmpdir > 0)
end)
teardown(function()
  if tmpdir then os.execute("rm -rf '" .. tmpdir .. "'") end
end)

describe('IDX reader', function()
  for _, ty in ipairs(TYPES) do
    it(string.format('reads type 0x%02X (%s), plain and gzipped, in 1 to 4 dimensions', ty.code, ty.dtype.name), function()
      for _, dims in ipairs { { 6 }, { 2, 3 }, { 3, 1, 2 }, { 1, 2, 3, 1 } } do
        local path = tmp(string.format('t%02x_%d.idx', ty.code, #dims))
        write(path, idx_bytes(ty.code, dims, ty.values, ty.fmt))
        for _, p in ipairs { path, gzip(path) } do
          local t = torch._read_idx(p)
          assert.are.equal(ty.dtype, t.dtype)
          assert.are.same(dims, shape(t))
          assert.is_true(t:is_contiguous())
          -- values round-trip through string.pack's big-endian encoding and the native decoding
          local want = {}
          for k, v in ipairs(ty.values) do want[k] = string.unpack(ty.fmt, string.pack(ty.fmt, v)) end
          H.assert_values(t, want, 0, p)
        end
      end
    end)
  end

  it('reads an empty tensor (a zero dimension) and a large 1-D file', function()
    local path = tmp('empty.idx')
    write(path, idx_bytes(0x08, { 0, 28 }))
    local t = torch._read_idx(path)
    assert.are.same({ 0, 28 }, { t:size(1), t:size(2) })
    -- 200000 int32 values across many zlib buffers: a stride pattern checked in Lua
    local vals = {}
    for i = 1, 200000 do vals[i] = (i * 7919) % 1000003 - 500000 end
    path = tmp('big.idx')
    write(path, idx_bytes(0x0C, { #vals }, vals, '>i4'))
    local gz = torch._read_idx(gzip(path))
    local plain = torch._read_idx(path)
    assert.are.equal(#vals, gz:numel())
    local got = gz:totable()
    for i = 1, #vals, 997 do assert.are.equal(vals[i], got[i]) end
    assert.are.equal(vals[#vals], got[#vals])
    assert.is_true(gz:equal(plain))
    local sum = 0
    for i = 1, #vals do sum = sum + vals[i] end
    assert.are.equal(sum, gz:sum():item())
  end)

  local function raises(bytes, name, gz, ...)
    local path = tmp(name)
    write(path, bytes)
    if gz then path = gzip(path) end
    return H.raises(function() torch._read_idx(path) end, 'idx: ' .. path .. ': ', ...)
  end

  for _, gz in ipairs { false, true } do
    local how = gz and ' (gzipped)' or ' (plain)'
    it('rejects a wrong magic number' .. how, function()
      raises(string.char(1, 0, 8, 1) .. string.pack('>I4', 1) .. 'x', 'magic.idx', gz, 'not an IDX file',
        '0x01000801')
      raises(string.char(0, 0, 0x0A, 1) .. string.pack('>I4', 1) .. 'x', 'type.idx', gz,
        'unknown data type byte 0x0a')
    end)
    it('rejects zero or too many dimensions' .. how, function()
      raises(string.char(0, 0, 8, 0), 'dims0.idx', gz, '0 dimensions', 'expected 1 to 4')
      raises(idx_bytes(0x08, { 1, 1, 1, 1, 1 }, { 7 }, '>B'), 'dims5.idx', gz, '5 dimensions')
    end)
    it('rejects truncated headers and data' .. how, function()
      raises(string.char(0, 0), 'short.idx', gz, 'truncated: expected a 4-byte header, got 2 bytes')
      raises(string.char(0, 0, 8, 3) .. string.pack('>I4', 5), 'shortdims.idx', gz,
        'truncated: expected 3 dimensions (12 bytes) after the magic number, got 4 bytes')
      local values = {}
      for i = 1, 1234 do values[i] = i % 256 end
      if gz then
        -- incompressible bytes, so that the claim stays under what the compressed size could hold
        local v = 12345
        for i = 1, 1234 do
          v = (v * 1103515245 + 12345) % 2147483648
          values[i] = v >> 16 & 255
        end
        raises(idx_bytes(0x08, { 1000, 28, 28 }, values, '>B'), 'trunc.idx', gz,
          'truncated: expected 784000 bytes of data, got 1234')
      else
        raises(idx_bytes(0x08, { 60000, 28, 28 }, values, '>B'), 'trunc.idx', gz,
          'truncated: expected 47040000 bytes of data, got 1234')
      end
      raises(idx_bytes(0x0C, { 3 }, { 1, 2 }, '>i4'), 'trunc32.idx', gz,
        'truncated: expected 12 bytes of data, got 8')
    end)
    it('rejects bytes after the data' .. how, function()
      raises(idx_bytes(0x08, { 2, 2 }, { 1, 2, 3, 4, 5 }, '>B'), 'trail.idx', gz,
        '1 bytes after the data (the header announces 4 bytes of data)')
      raises(idx_bytes(0x0B, { 2 }, { 1, 2 }, '>i2') .. string.rep('z', 10000), 'trail2.idx', gz,
        'bytes after the data')
    end)
  end

  it('rejects dimensions whose product is absurd before allocating', function()
    raises(idx_bytes(0x0E, { 65536, 65536, 65536 }), 'huge.idx', false, 'make more than', 'bytes of data')
    raises(idx_bytes(0x08, { 4294967295, 4294967295, 4294967295, 4294967295 }), 'huge4.idx', true,
      'make more than')
    raises(idx_bytes(0x0E, { 4294967295, 4294967295, 4294967295, 4294967295 }), 'huge4d.idx', false,
      'dimensions 4294967295x4294967295x4294967295x4294967295 of float64 make more than')
    -- a zero dimension makes the data empty, but the others are still bounded
    raises(idx_bytes(0x0E, { 4294967295, 0, 4294967295 }), 'zero.idx', false, 'make more than')
    local path = tmp('zero2.idx')
    write(path, idx_bytes(0x0E, { 70000, 0, 1000 }))
    local z = torch._read_idx(path)
    assert.are.equal(0, z:numel())
    assert.are.same({ 70000, 0, 1000 }, shape(z))
    -- a 40000 x 40000 uint8 claim (1.6 GB) in a gzip file of a few dozen bytes cannot be true
    raises(idx_bytes(0x08, { 40000, 40000 }), 'claim.idx', true, 'truncated: expected 1600000000 bytes of data',
      'cannot hold more than')
  end)

  it('rejects corrupt gzip streams', function()
    local path = tmp('ok.idx')
    local values = {}
    for i = 1, 5000 do values[i] = (i * 37) % 256 end
    write(path, idx_bytes(0x08, { 50, 100 }, values, '>B'))
    local good = read(gzip(path))
    -- gzip's magic followed by garbage
    write(tmp('garbage.gz'), '\31\139' .. string.rep('\255', 100))
    H.raises(function() torch._read_idx(tmp('garbage.gz')) end, 'idx: ' .. tmp('garbage.gz'), 'corrupt gzip data')
    -- a damaged deflate stream
    local bad = good:sub(1, 30) .. string.char(good:byte(31) ~ 0xFF, good:byte(32) ~ 0x55) .. good:sub(33)
    write(tmp('damaged.gz'), bad)
    H.raises(function() torch._read_idx(tmp('damaged.gz')) end, 'idx: ' .. tmp('damaged.gz'))
    -- a wrong CRC in the trailer (the data itself decompresses)
    local n = #good
    local crc = good:sub(1, n - 8) .. string.char(good:byte(n - 7) ~ 1) .. good:sub(n - 6)
    write(tmp('crc.gz'), crc)
    H.raises(function() torch._read_idx(tmp('crc.gz')) end, 'idx: ' .. tmp('crc.gz'), 'corrupt gzip data',
      'incorrect data check')
    -- a gzip file cut short: in the data, and in the trailer only
    write(tmp('cut.gz'), good:sub(1, n // 2))
    H.raises(function() torch._read_idx(tmp('cut.gz')) end, 'idx: ' .. tmp('cut.gz'), 'truncated')
    write(tmp('cuttrailer.gz'), good:sub(1, n - 4))
    H.raises(function() torch._read_idx(tmp('cuttrailer.gz')) end, 'idx: ' .. tmp('cuttrailer.gz'),
      'truncated gzip stream')
    -- the intact file still reads
    assert.are.equal(values[4321], torch._read_idx(tmp('ok.idx.gz')):view(-1)[4321])
  end)

  it('rejects missing files, directories and a bad argument', function()
    H.raises(function() torch._read_idx(tmp('nope.idx')) end, 'idx: ' .. tmp('nope.idx') .. ': cannot open',
      'No such file')
    H.raises(function() torch._read_idx(tmpdir) end, 'is a directory')
    H.raises(function() torch._read_idx({}) end, 'bad argument')
    H.raises(function() torch._read_idx(tmp('a'), 2) end, '_read_idx')
  end)
end)

describe('Fashion-MNIST files', function()
  it('have the documented shapes, labels and pixels', function()
    local img = torch._read_idx(FASHION .. '/t10k-images-idx3-ubyte.gz')
    local lab = torch._read_idx(FASHION .. '/t10k-labels-idx1-ubyte.gz')
    assert.are.equal(torch.uint8, img.dtype)
    assert.are.same({ 10000, 28, 28 }, { img:size(1), img:size(2), img:size(3) })
    assert.are.same({ 10000 }, { lab:size(1) })
    -- the first three images and all labels from the raw bytes, decoded in plain Lua
    local raw = gunzip(FASHION .. '/t10k-images-idx3-ubyte.gz', 16 + 3 * 784)
    assert.are.equal(0x00000803, string.unpack('>I4', raw))
    for k = 1, 3 do
      local sum, first_row = 0, {}
      for j = 1, 784 do
        local b = raw:byte(16 + (k - 1) * 784 + j)
        sum = sum + b
        if j <= 28 * 14 and j > 28 * 13 then first_row[#first_row + 1] = b end
      end
      assert.are.equal(sum, img[k]:sum():item())
      H.assert_values(img[k][14], first_row, 0, 'image ' .. k .. ' row 14')
    end
    local rawl = gunzip(FASHION .. '/t10k-labels-idx1-ubyte.gz')
    assert.are.equal(8 + 10000, #rawl)
    local counts = {}
    for j = 9, #rawl do
      local c = rawl:byte(j)
      counts[c] = (counts[c] or 0) + 1
    end
    for c = 0, 9 do
      assert.are.equal(1000, counts[c]) -- Fashion-MNIST's test split has 1000 of each class
      assert.are.equal(counts[c], lab:eq(c):sum():item())
    end
  end)

  it('reads the training images: the last image matches the raw bytes', function()
    local img = torch._read_idx(FASHION .. '/train-images-idx3-ubyte.gz')
    assert.are.same({ 60000, 28, 28 }, { img:size(1), img:size(2), img:size(3) })
    local p = assert(io.popen("gzip -dc '" .. FASHION .. "/train-images-idx3-ubyte.gz' | tail -c 784", 'r'))
    local last = p:read('a')
    p:close()
    local want = {}
    for j = 1, 784 do want[j] = last:byte(j) end
    H.assert_values(img[60000], want, 0, 'last training image')
  end)
end)

describe('datasets.FashionMNIST and MNIST', function()
  it('give uint8 images, 1-based int64 targets, and transforms', function()
    local ds = data.datasets.FashionMNIST { train = false }
    assert.are.equal(10000, #ds)
    assert.are.equal(10000, ds:len())
    assert.are.same({ 10000, 28, 28 }, { ds.data:size(1), ds.data:size(2), ds.data:size(3) })
    assert.are.equal(torch.int64, ds.targets.dtype)
    assert.are.equal(1, ds.targets:min():item())
    assert.are.equal(10, ds.targets:max():item())
    local rawl = gunzip(FASHION .. '/t10k-labels-idx1-ubyte.gz', 8 + 20)
    local x, y = ds:get(7)
    assert.are.equal(rawl:byte(8 + 7) + 1, y)
    assert.are.equal(torch.uint8, x.dtype)
    assert.is_true(x:equal(ds.data[7]))
    assert.are.equal('Ankle boot', ds.classes[rawl:byte(9) + 1]) -- the first test image is class 9
    local tr = data.datasets.FashionMNIST { train = false, transform = function(im) return im:float() / 255 end,
      target_transform = function(t) return t - 1 end }
    local xf, yf = tr:get(7)
    assert.are.equal(torch.float32, xf.dtype)
    H.assert_values(xf, (x:double() / 255):totable(), 1e-6)
    assert.are.equal(y - 1, yf)
    H.raises(function() ds:get(10001) end, 'FashionMNIST:get: index 10001 out of range')
    H.raises(function() ds:get(1.5) end, 'expected an integer index')
  end)

  it('find files in torchvision\'s layout and uncompressed, and name what is missing', function()
    local root = tmp('mnist')
    os.execute(string.format("mkdir -p '%s/MNIST/raw'", root))
    write(root .. '/MNIST/raw/t10k-images-idx3-ubyte', idx_bytes(0x08, { 2, 2, 3 }, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }, '>B'))
    write(root .. '/t10k-labels-idx1-ubyte', idx_bytes(0x08, { 2 }, { 9, 0 }, '>B'))
    gzip(root .. '/t10k-labels-idx1-ubyte')
    local ds = data.datasets.MNIST { root = root, train = false }
    local x, y = ds:get(2)
    H.assert_values(x, { { 7, 8, 9 }, { 10, 11, 12 } }, 0)
    assert.are.equal(1, y)
    assert.are.equal(10, ds:get(1) and select(2, ds:get(1)))
    H.raises(function() data.datasets.MNIST { root = root, train = true } end,
      'MNIST: missing file train-images-idx3-ubyte(.gz) in ' .. root)
    H.raises(function() data.datasets.FashionMNIST { root = root } end,
      'FashionMNIST: missing file train-images-idx3-ubyte(.gz)', 'apt-get install dataset-fashion-mnist')
    H.raises(function() data.datasets.MNIST { train = true } end, 'MNIST: expected root')
    H.raises(function() data.datasets.FashionMNIST { trian = true } end, "FashionMNIST: unknown option 'trian'")
    -- labels out of range and count mismatches
    write(root .. '/t10k-labels-idx1-ubyte', idx_bytes(0x08, { 2 }, { 9, 10 }, '>B'))
    os.remove(root .. '/t10k-labels-idx1-ubyte.gz')
    H.raises(function() data.datasets.MNIST { root = root, train = false } end, 'label 10 is not a class 0..9')
    write(root .. '/t10k-labels-idx1-ubyte', idx_bytes(0x08, { 3 }, { 1, 2, 3 }, '>B'))
    H.raises(function() data.datasets.MNIST { root = root, train = false } end, '2 images', 'but 3 labels')
  end)
end)

-- a dataset of n samples (i as a float vector, i as an integer) for the loader tests
local function xy(n)
  local x = torch.arange(1, n + 1, { dtype = torch.float32 }):view(n, 1):expand(n, 3):contiguous()
  local y = torch.arange(1, n + 1, { dtype = torch.int64 })
  return x, y
end

describe('TensorDataset', function()
  it('returns rows (0-d tensors for 1-D inputs) and checks sizes', function()
    local x, y = xy(5)
    local ds = data.TensorDataset(x, y)
    assert.are.equal(5, #ds)
    local a, b = ds:get(4)
    H.assert_values(a, { 4, 4, 4 }, 0)
    assert.are.equal(0, b:dim())
    assert.are.equal(4, b:item())
    assert.are.equal(torch.int64, b.dtype)
    -- non-contiguous tensors: a transposed matrix's rows are its columns
    local m = H.grid(3, 4):t()
    local one = data.TensorDataset(m)
    assert.are.equal(4, #one)
    H.assert_values(one:get(2), { 12, 22, 32 }, 0)
    H.raises(function() data.TensorDataset(torch.zeros(3), torch.zeros(4)) end, 'Size mismatch between tensors',
      'tensor 1 has 3 rows, tensor 2 has 4')
    H.raises(function() data.TensorDataset() end, 'TensorDataset: expected at least one tensor')
    H.raises(function() data.TensorDataset(torch.zeros(2), 5) end, 'argument 2 is a number')
    H.raises(function() data.TensorDataset(torch.tensor(1)) end, '0-dimensional')
    H.raises(function() ds:get(0) end, 'index 0 out of range for a dataset of 5 samples')
    H.raises(function() ds:get(6) end, 'index 6 out of range')
  end)
end)

describe('Dataset:extend', function()
  it('makes classes with init, __len or len(), get, and subclasses', function()
    local Squares = data.Dataset:extend('Squares')
    function Squares:init(n) self.n = n end
    function Squares:__len() return self.n end
    function Squares:get(i) return i * i end
    local s = Squares(4)
    assert.are.equal(4, #s)
    assert.are.equal(4, s:len())
    assert.are.equal(9, s:get(3))
    assert.are.equal("class 'Squares'", tostring(Squares))
    -- a subclass inherits __len and init, and overrides get
    local Cubes = Squares:extend('Cubes')
    function Cubes:get(i) return i * i * i end
    local c = Cubes(3)
    assert.are.equal(3, #c)
    assert.are.equal(27, c:get(3))
    -- len() instead of __len
    local ByLen = data.Dataset:extend('ByLen')
    function ByLen:len() return 7 end
    assert.are.equal(7, #ByLen())
    -- neither: a clear error
    local Empty = data.Dataset:extend('Empty')
    H.raises(function() return #Empty() end, 'Empty: a Dataset needs __len or len()')
    H.raises(function() Empty():get(1) end, 'does not define get(i)')
    H.raises(function() data.Dataset:extend(3) end, 'expected a class name')
  end)

  it('says that a sample is ds:get(i) when indexed as ds[i], and keeps its own number keys', function()
    local Pairs = data.Dataset:extend('Pairs')
    function Pairs:init() self[1] = 'own' end -- a number key the dataset holds
    function Pairs:__len() return 3 end
    function Pairs:get(i) return i, -i end
    local p = Pairs()
    assert.are.equal('own', p[1])
    H.raises(function() return p[2] end, 'Pairs[2]: a sample is ds:get(2)')
    H.raises(function() return p[2.0] end, 'Pairs[2.0]: a sample is ds:get(2.0)')
    local ok, err = pcall(function() return p[3] end)
    assert.is_false(ok)
    assert.truthy(err:find('data_spec.lua:%d+: Pairs%[3%]'), err) -- the user's line
    local ds = data.TensorDataset(torch.arange(1, 4))
    H.raises(function() return ds[1] end, 'TensorDataset[1]: a sample is ds:get(1)')
    -- methods, fields and string keys a dataset lacks are looked up as before
    assert.are.equal(3, #p)
    assert.is_nil(p.missing)
    local a, b = p:get(2)
    assert.are.same({ 2, -2 }, { a, b })
  end)
end)

describe('default_collate', function()
  it('stacks tensors, types numbers as PyTorch, recurses into tables', function()
    local b = data.default_collate { torch.tensor({ 1, 2 }), torch.tensor({ 3, 4 }) }
    H.assert_values(b, { { 1, 2 }, { 3, 4 } }, 0)
    assert.are.equal(torch.int64, b.dtype)
    local ints = data.default_collate { 1, 3 }
    assert.are.equal(torch.int64, ints.dtype)
    H.assert_values(ints, { 1, 3 }, 0)
    local floats = data.default_collate { 2.0, 4.5 }
    assert.are.equal(torch.float64, floats.dtype)
    H.assert_values(floats, { 2.0, 4.5 }, 0)
    local mixed = data.default_collate { 1, 2.5 }
    assert.are.equal(torch.float64, mixed.dtype)
    local bools = data.default_collate { true, false }
    assert.are.equal(torch.bool, bools.dtype)
    assert.are.same({ 'a', 'b' }, data.default_collate { 'a', 'b' })
    -- PyTorch's [(1, 2.0, 'a'), (3, 4.0, 'b')] -> [tensor([1, 3]), tensor([2., 4.], float64), ('a', 'b')]
    local t = data.default_collate { { 1, 2.0, 'a' }, { 3, 4.0, 'b' } }
    H.assert_values(t[1], { 1, 3 }, 0)
    assert.are.equal(torch.int64, t[1].dtype)
    H.assert_values(t[2], { 2, 4 }, 0)
    assert.are.equal(torch.float64, t[2].dtype)
    assert.are.same({ 'a', 'b' }, t[3])
    -- dicts per key, nested
    local d = data.default_collate { { x = torch.zeros(2), meta = { id = 1 } }, { x = torch.ones(2), meta = { id = 2 } } }
    H.assert_values(d.x, { { 0, 0 }, { 1, 1 } }, 0)
    H.assert_values(d.meta.id, { 1, 2 }, 0)
    -- tensors keep their dtype; non-contiguous entries are stacked by value
    local g = H.grid(2, 3, torch.float64)
    local st = data.default_collate { g:t(), g:t() * 2 }
    assert.are.equal(torch.float64, st.dtype)
    H.assert_values(st[2], { { 22, 42 }, { 24, 44 }, { 26, 46 } }, 0)
  end)

  it('explains what it cannot collate', function()
    H.raises(function() data.default_collate { torch.zeros(2), torch.zeros(3) } end,
      'default_collate: stack expects each tensor to be equal size, but got [2] at entry 1 and [3] at entry 2')
    H.raises(function() data.default_collate { torch.zeros(2, 3), torch.zeros(2), torch.zeros(2, 3) } end,
      'got [2, 3] at entry 1 and [2] at entry 2')
    H.raises(function() data.default_collate { { 1, 2 }, { 1 } } end,
      'each element in list of batch should be of equal size')
    H.raises(function() data.default_collate { torch.zeros(1), 1 } end, 'entry 2 is a number but entry 1 is a tensor')
    H.raises(function() data.default_collate { { a = 1 }, { b = 1 } } end, "entry 2 has no field 'a'")
    H.raises(function() data.default_collate { print } end, 'cannot collate a function')
    H.raises(function() data.default_collate {} end, 'expected a non-empty array')
  end)
end)

-- every batch of a loader as Lua tables of its values
local function batches(loader)
  local out = {}
  for x, y in loader:iter() do out[#out + 1] = { x = x, y = y } end
  return out
end
local function labels_of(bs)
  local all = {}
  for _, b in ipairs(bs) do
    for _, v in ipairs(b.y:totable()) do all[#all + 1] = v end
  end
  return all
end
local function is_permutation(list, n)
  if #list ~= n then return false end
  local seen = {}
  for _, v in ipairs(list) do
    if math.type(v) ~= 'integer' or v < 1 or v > n or seen[v] then return false end
    seen[v] = true
  end
  return true
end

describe('DataLoader', function()
  it('batches in order with a partial last batch, or drops it', function()
    local x, y = xy(10)
    local ds = data.TensorDataset(x, y)
    local loader = data.DataLoader(ds, { batch_size = 4 })
    assert.are.equal(3, #loader)
    local bs = batches(loader)
    assert.are.equal(3, #bs)
    local sizes = {}
    for k, b in ipairs(bs) do sizes[k] = b.x:size(1) end
    assert.are.same({ 4, 4, 2 }, sizes)
    H.assert_values(bs[3].x, { { 9, 9, 9 }, { 10, 10, 10 } }, 0)
    assert.are.equal(torch.float32, bs[1].x.dtype)
    assert.are.equal(torch.int64, bs[1].y.dtype)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, labels_of(bs))
    local dl = data.DataLoader(ds, { batch_size = 4, drop_last = true })
    assert.are.equal(2, #dl)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, labels_of(batches(dl)))
    -- batch size 1 by default, and a batch larger than the dataset
    assert.are.equal(10, #data.DataLoader(ds))
    local big = batches(data.DataLoader(ds, { batch_size = 32 }))
    assert.are.equal(1, #big)
    assert.are.equal(10, big[1].x:size(1))
    assert.are.equal(0, #data.DataLoader(ds, { batch_size = 32, drop_last = true }))
    assert.are.equal(0, #batches(data.DataLoader(ds, { batch_size = 32, drop_last = true })))
  end)

  it('batches are copies, not views of the dataset', function()
    local x, y = xy(4)
    local bs = batches(data.DataLoader(data.TensorDataset(x, y), { batch_size = 2 }))
    bs[1].x:fill_(-1)
    assert.are.equal(1, x[1][1])
  end)

  it('shuffles to a permutation, repeatable with a seed or torch.manual_seed', function()
    local x, y = xy(50)
    local ds = data.TensorDataset(x, y)
    local l1 = data.DataLoader(ds, { batch_size = 8, shuffle = true, seed = 42 })
    local e1, e2 = labels_of(batches(l1)), labels_of(batches(l1))
    assert.is_true(is_permutation(e1, 50))
    assert.is_true(is_permutation(e2, 50))
    assert.are_not.same(e1, e2) -- each epoch reshuffles
    local l2 = data.DataLoader(ds, { batch_size = 8, shuffle = true, seed = 42 })
    assert.are.same(e1, labels_of(batches(l2)))
    assert.are.same(e2, labels_of(batches(l2)))
    assert.are_not.same(e1, labels_of(batches(data.DataLoader(ds, { batch_size = 8, shuffle = true, seed = 43 }))))
    -- the features follow their labels
    for _, b in ipairs(batches(l1)) do H.assert_values(b.x:select(2, 1), b.y:totable(), 0) end
    -- a seed leaves torch's generator alone
    torch.manual_seed(5)
    local r1 = torch.rand(3)
    torch.manual_seed(5)
    batches(l1)
    assert.is_true(torch.rand(3):equal(r1))
    -- without a seed: torch's generator
    torch.manual_seed(7)
    local a = labels_of(batches(data.DataLoader(ds, { batch_size = 8, shuffle = true })))
    torch.manual_seed(7)
    local b = labels_of(batches(data.DataLoader(ds, { batch_size = 8, shuffle = true })))
    assert.is_true(is_permutation(a, 50))
    assert.are.same(a, b)
  end)

  it('seeded shuffling is torch.randperm with a generator seeded so (PyTorch: seed 0 -> 4,7,3,0,6 at even places)', function()
    local s = data.RandomSampler(data.TensorDataset(torch.zeros(10)), { seed = 0 })
    local order = {}
    for i in s:iter() do order[#order + 1] = i end
    assert.are.same({ 5, 8, 4, 1, 7 }, { order[1], order[3], order[5], order[7], order[9] })
    assert.is_true(is_permutation(order, 10))
  end)

  it('the fast path (TensorDataset) and the general path give the same batches', function()
    local x, y = xy(23)
    x = x * torch.arange(1, 4, { dtype = torch.float32 }) -- distinct columns
    x = x:t():contiguous():t() -- non-contiguous, same values
    assert.is_false(x:is_contiguous())
    local fast = data.TensorDataset(x, y)
    local Slow = data.TensorDataset:extend('Slow')
    function Slow:get(i) return data.TensorDataset.get(self, i) end -- an override disables the fast path
    local slow = Slow(x, y)
    assert.is_nil(slow:_row_tensors())
    assert.is_not_nil(fast:_row_tensors())
    for _, opts in ipairs { { batch_size = 5 }, { batch_size = 5, shuffle = true, seed = 3 },
      { batch_size = 4, drop_last = true, shuffle = true, seed = 9 } } do
      local a, b = batches(data.DataLoader(fast, opts)), batches(data.DataLoader(slow, opts))
      assert.are.equal(#a, #b)
      for k = 1, #a do
        -- row i of x is i * (1, 2, 3)
        local want = {}
        for r, i in ipairs(a[k].y:totable()) do want[r] = { i, 2 * i, 3 * i } end
        H.assert_values(a[k].x, want, 0)
        assert.is_true(a[k].x:equal(b[k].x))
        assert.is_true(a[k].y:equal(b[k].y))
        assert.are.equal(b[k].y.dtype, a[k].y.dtype)
      end
    end
    -- 1-D float tensors keep their dtype both ways (0-d rows are stacked, not turned into numbers)
    local f = torch.tensor({ 0.5, 1.5, 2.5 })
    local fb = batches(data.DataLoader(data.TensorDataset(f), { batch_size = 3 }))
    assert.are.equal(torch.float32, fb[1].x.dtype)
    local sb = batches(data.DataLoader(Slow(f), { batch_size = 3 }))
    assert.are.equal(torch.float32, sb[1].x.dtype)
    H.assert_values(sb[1].x, { 0.5, 1.5, 2.5 }, 0)
  end)

  it('FashionMNIST batches through the fast path equal those through get', function()
    local ds = data.datasets.FashionMNIST { train = false }
    local slow = data.datasets.FashionMNIST { train = false, target_transform = function(t) return t end }
    local a = data.DataLoader(ds, { batch_size = 100, shuffle = true, seed = 1 }):iter()
    local b = data.DataLoader(slow, { batch_size = 100, shuffle = true, seed = 1 }):iter()
    -- the seeded order is the generator's permutation, drawn independently here
    local perm = torch._data_generator(1):randperm(10000):totable()
    for k = 1, 3 do
      local xa, ya = a()
      local xb, yb = b()
      for j = 1, 100, 33 do
        local i = perm[(k - 1) * 100 + j]
        assert.is_true(xa[j]:equal(ds.data[i]))
        assert.are.equal(ds.targets[i], ya[j])
      end
      assert.are.same({ 100, 28, 28 }, { xa:size(1), xa:size(2), xa:size(3) })
      assert.are.equal(torch.uint8, xa.dtype)
      assert.is_true(xa:equal(xb))
      assert.is_true(ya:equal(yb))
      assert.are.equal(torch.int64, yb.dtype)
      assert.is_true(ya:ge(1):all():item() and ya:le(10):all():item())
    end
    assert.are.equal(100, #data.DataLoader(ds, { batch_size = 100 }))
  end)

  it('takes a sampler (object or array of indices) and a batch_sampler', function()
    local x, y = xy(10)
    local ds = data.TensorDataset(x, y)
    assert.are.same({ 10, 3, 5 }, labels_of(batches(data.DataLoader(ds, { batch_size = 2, sampler = { 10, 3, 5 } }))))
    local Evens = data.Sampler:extend('Evens')
    function Evens:init(n) self.n = n end
    function Evens:__len() return self.n // 2 end
    function Evens:iter()
      local i = 0
      return function()
        i = i + 2
        if i <= self.n then return i end
      end
    end
    local l = data.DataLoader(ds, { batch_size = 2, sampler = Evens(10) })
    assert.are.equal(3, #l)
    assert.are.same({ 2, 4, 6, 8, 10 }, labels_of(batches(l)))
    local bsl = data.DataLoader(ds, { batch_sampler = { { 1, 2, 3 }, { 9 } } })
    assert.are.equal(2, #bsl)
    assert.are.same({ 1, 2, 3, 9 }, labels_of(batches(bsl)))
    local bsamp = data.BatchSampler(data.SequentialSampler(ds), 3, true)
    assert.are.equal(3, #bsamp)
    local got = {}
    for idx in bsamp:iter() do got[#got + 1] = idx end
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }, got)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, labels_of(batches(data.DataLoader(ds, { batch_size = 4,
      sampler = data.SequentialSampler(ds) }))))
    -- a sampler index outside the dataset
    H.raises(function() batches(data.DataLoader(ds, { sampler = { 1, 11 } })) end,
      'DataLoader: sampler index 11 out of range for a dataset of 10 samples')
  end)

  it('RandomSampler with replacement and num_samples', function()
    local ds = data.TensorDataset(torch.zeros(6))
    local s = data.RandomSampler(ds, { replacement = true, num_samples = 20, seed = 1 })
    assert.are.equal(20, #s)
    local seen = {}
    for i in s:iter() do
      assert.is_true(i >= 1 and i <= 6)
      seen[#seen + 1] = i
    end
    assert.are.equal(20, #seen)
    local s2 = data.RandomSampler(ds, { num_samples = 15, seed = 1 })
    local counts = {}
    local total = 0
    for i in s2:iter() do
      counts[i] = (counts[i] or 0) + 1
      total = total + 1
    end
    assert.are.equal(15, total)
    -- two whole permutations and the head of a third: every index 2 or 3 times
    for i = 1, 6 do assert.is_true(counts[i] == 2 or counts[i] == 3) end
    H.raises(function() data.RandomSampler(ds, { num_samples = 0 }) end,
      'num_samples should be a positive integer value, but got num_samples=0')
    H.raises(function() data.RandomSampler(ds, { replacement = 1 }) end, 'replacement should be a boolean')
  end)

  it('collates tables and numbers from a custom dataset, yields arrays as several values', function()
    local Pairs = data.Dataset:extend('Pairs')
    function Pairs:__len() return 5 end
    function Pairs:get(i) return { img = torch.full({ 2, 2 }, i, { dtype = torch.float32 }), label = i, w = i / 2, tag = 's' .. i } end
    local bs = {}
    for b in data.DataLoader(Pairs(), { batch_size = 2 }):iter() do bs[#bs + 1] = b end
    assert.are.equal(3, #bs)
    assert.are.same({ 2, 2, 2 }, { bs[1].img:size(1), bs[1].img:size(2), bs[1].img:size(3) })
    H.assert_values(bs[2].img:sum({ 2, 3 }), { 12, 16 }, 0)
    assert.are.equal(torch.int64, bs[1].label.dtype)
    H.assert_values(bs[1].label, { 1, 2 }, 0)
    assert.are.equal(torch.float64, bs[1].w.dtype)
    H.assert_values(bs[3].w, { 2.5 }, 0)
    assert.are.same({ 's3', 's4' }, bs[2].tag)
    -- several return values, or one array table: several batch values
    local Multi = data.Dataset:extend('Multi')
    function Multi:__len() return 4 end
    function Multi:get(i) return torch.tensor({ i, -i }), i, i > 2 end
    local Arr = data.Dataset:extend('Arr')
    function Arr:__len() return 4 end
    function Arr:get(i) return { torch.tensor({ i, -i }), i, i > 2 } end
    for _, ds in ipairs { Multi(), Arr() } do
      local n = 0
      for x, y, z in data.DataLoader(ds, { batch_size = 4 }):iter() do
        n = n + 1
        H.assert_values(x, { { 1, -1 }, { 2, -2 }, { 3, -3 }, { 4, -4 } }, 0)
        H.assert_values(y, { 1, 2, 3, 4 }, 0)
        H.assert_values(z, { false, false, true, true }, 0)
      end
      assert.are.equal(1, n)
    end
    -- unequal shapes from a dataset
    local Ragged = data.Dataset:extend('Ragged')
    function Ragged:__len() return 3 end
    function Ragged:get(i) return torch.zeros(i) end
    H.raises(function() batches(data.DataLoader(Ragged(), { batch_size = 3 })) end,
      'stack expects each tensor to be equal size, but got [1] at entry 1 and [2] at entry 2')
    local Nothing = data.Dataset:extend('Nothing')
    function Nothing:__len() return 1 end
    function Nothing:get() end
    H.raises(function() batches(data.DataLoader(Nothing())) end, 'dataset:get(1) returned nothing')
  end)

  it('calls a custom collate_fn with the samples', function()
    local x, y = xy(6)
    local seen
    local loader = data.DataLoader(data.TensorDataset(x, y), { batch_size = 4, collate_fn = function(samples)
      seen = samples
      local s = 0
      for _, smp in ipairs(samples) do s = s + smp[2]:item() end
      return s, #samples
    end })
    local got = {}
    for s, n in loader:iter() do got[#got + 1] = { s, n } end
    assert.are.same({ { 10, 4 }, { 11, 2 } }, got)
    assert.are.equal(2, #seen)
    H.assert_values(seen[1][1], { 5, 5, 5 }, 0)
  end)

  it('accepts num_workers and pin_memory', function()
    local x, y = xy(9)
    local ds = data.TensorDataset(x, y)
    local l = data.DataLoader(ds, { batch_size = 4, num_workers = 2, pin_memory = true, shuffle = true, seed = 2 })
    local l0 = data.DataLoader(ds, { batch_size = 4, shuffle = true, seed = 2 })
    assert.are.same(labels_of(batches(l0)), labels_of(batches(l)))
  end)

  it('rejects bad options as PyTorch does', function()
    local ds = data.TensorDataset(torch.zeros(4))
    H.raises(function() data.DataLoader(ds, { sampler = { 1 }, shuffle = true }) end,
      'sampler option is mutually exclusive with shuffle')
    H.raises(function() data.DataLoader(ds, { batch_sampler = { { 1 } }, batch_size = 2 }) end,
      'batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last')
    H.raises(function() data.DataLoader(ds, { num_workers = -1 }) end, 'num_workers option should be non-negative')
    H.raises(function() data.DataLoader(ds, { batch_size = 0 }) end,
      'batch_size should be a positive integer value, but got batch_size=0')
    H.raises(function() data.DataLoader(ds, { batch_size = 2.5 }) end, 'batch_size=2.5')
    H.raises(function() data.DataLoader(ds, { timeout = -1 }) end, 'timeout option should be non-negative')
    H.raises(function() data.DataLoader(ds, { persistent_workers = true }) end,
      'persistent_workers option needs num_workers > 0')
    H.raises(function() data.DataLoader(ds, { batchsize = 2 }) end, "DataLoader: unknown option 'batchsize'")
    H.raises(function() data.DataLoader(ds, { shuffle = 1 }) end, 'shuffle should be a boolean')
    H.raises(function() data.DataLoader(ds, { collate_fn = 3 }) end, 'collate_fn should be a function')
    H.raises(function() data.DataLoader(ds, { seed = 1.5 }) end, 'seed should be an integer')
    H.raises(function() data.DataLoader(ds, { sampler = 5 }) end, 'a sampler must have iter()')
    H.raises(function() data.DataLoader(42) end, 'DataLoader: expected a dataset, got number')
    H.raises(function() data.DataLoader({}) end, 'DataLoader: the dataset has no get(i) method')
    local NoLen = data.Dataset:extend('NoLen')
    function NoLen:get(i) return i end
    H.raises(function() data.DataLoader(NoLen()) end, 'DataLoader: the dataset has no length', 'NoLen: a Dataset needs __len')
  end)
end)
