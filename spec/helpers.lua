-- Shared helpers for the specs: tolerant comparisons against plain-Lua references.
local torch = require 'torch'
local H = {}

-- flatten a nested Lua table into an array
function H.flatten(t, out)
  out = out or {}
  if type(t) ~= 'table' then out[#out + 1] = t; return out end
  for _, v in ipairs(t) do H.flatten(v, out) end
  return out
end

-- assert two numbers are close (relative and absolute), NaN equal to NaN
function H.close(a, b, tol, msg)
  tol = tol or 1e-6
  if a ~= a and b ~= b then return end
  if a == b then return end
  local d = math.abs(a - b)
  if not (d <= tol * (1 + math.abs(b))) then
    error(string.format('%s: %.17g vs %.17g (tolerance %g)', msg or 'values differ', a, b, tol), 2)
  end
end

-- assert a tensor's values equal a nested Lua table (or flat array) within tol
function H.assert_values(x, expected, tol, msg)
  local got = H.flatten(x:totable())
  local want = H.flatten(expected)
  assert(#got == #want, string.format('%s: %d values, expected %d', msg or 'tensor', #got, #want))
  for i = 1, #want do
    local g, w = got[i], want[i]
    if type(w) == 'boolean' or type(g) == 'boolean' then
      assert(g == w, string.format('%s: element %d is %s, expected %s', msg or 'tensor', i, tostring(g), tostring(w)))
    else
      H.close(g, w, tol or 0, (msg or 'tensor') .. ' element ' .. i)
    end
  end
end

-- a matrix of distinct values for tests: v(i, j) = i * 10 + j (+ 0.5 for floats)
function H.grid(rows, cols, dtype)
  local t = {}
  for i = 1, rows do
    t[i] = {}
    for j = 1, cols do t[i][j] = i * 10 + j end
  end
  return torch.tensor(t, {dtype = dtype or torch.float32})
end

-- a tensor from a reference file's {shape = ..., data = ...} (float64 unless dtype says otherwise)
function H.from_ref(r, dtype)
  return torch.tensor(r.data, { dtype = dtype or torch.float64 }):reshape(r.shape)
end

-- the keys of a module's state_dict, in order
function H.state_keys(m)
  local out = {}
  for k in pairs(m:state_dict()) do out[#out + 1] = k end
  return out
end

-- expect an error whose message contains every given fragment (plain text)
function H.raises(fn, ...)
  local ok, err = pcall(fn)
  assert(not ok, 'expected an error, got none')
  err = tostring(err)
  for _, frag in ipairs { ... } do
    assert(err:find(frag, 1, true), ('error %q does not mention %q'):format(err, frag))
  end
  return err
end

H.float_dtypes = { torch.float32, torch.float64, torch.float16, torch.bfloat16 }
H.int_dtypes = { torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8 }
H.all_dtypes = { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
  torch.int16, torch.int8, torch.uint8, torch.bool }

-- trains the parameters of `modules` with Adam at `lr` for `steps` steps of loss_fn() (a scalar
-- loss); returns the first and the last loss
function H.fit(modules, steps, lr, loss_fn)
  local params = {}
  for _, m in ipairs(modules) do
    for _, p in ipairs(m:parameters()) do params[#params + 1] = p end
  end
  local opt = torch.optim.Adam(params, { lr = lr })
  local first, last
  for s = 1, steps do
    opt:zero_grad()
    local loss = loss_fn()
    loss:backward()
    opt:step()
    if s == 1 then first = loss:item() end
    last = loss:item()
  end
  return first, last
end

-- an m x n nested Lua table of zeros
function H.zeros_table(m, n)
  local t = {}
  for i = 1, m do
    t[i] = {}
    for j = 1, n do t[i][j] = 0 end
  end
  return t
end

-- the product of two matrices as nested Lua tables
function H.matmul_table(a, b)
  local c = H.zeros_table(#a, #b[1])
  for i = 1, #a do
    for j = 1, #b[1] do
      local s = 0
      for k = 1, #b do s = s + a[i][k] * b[k][j] end
      c[i][j] = s
    end
  end
  return c
end

-- A^-1 B by Gauss-Jordan elimination with partial pivoting, on nested Lua tables
function H.solve_ref(a, b)
  local n, k = #a, #b[1]
  local m = {}
  for i = 1, n do
    m[i] = {}
    for j = 1, n do m[i][j] = a[i][j] end
    for j = 1, k do m[i][n + j] = b[i][j] end
  end
  for c = 1, n do
    local p = c
    for r = c + 1, n do if math.abs(m[r][c]) > math.abs(m[p][c]) then p = r end end
    m[c], m[p] = m[p], m[c]
    for r = 1, n do
      if r ~= c then
        local f = m[r][c] / m[c][c]
        for j = c, n + k do m[r][j] = m[r][j] - f * m[c][j] end
      end
    end
  end
  local x = {}
  for i = 1, n do
    x[i] = {}
    for j = 1, k do x[i][j] = m[i][n + j] / m[i][i] end
  end
  return x
end

-- tolerance suited to a dtype
function H.tol(dtype)
  if dtype == torch.float16 then return 2e-3 end
  if dtype == torch.bfloat16 then return 1e-2 end
  if dtype == torch.float32 then return 1e-6 end
  return 1e-12
end

-- assert expected (a number or nested table) and got agree within tol relative to max(1, |expected|)
-- (1e-12 by default); a NaN expects a NaN
function H.near(expected, got, tol, what)
  tol = tol or 1e-12
  if type(expected) == 'table' then
    assert(#expected == #got, string.format('%s: length %d, expected %d', what or '', #got, #expected))
    for i = 1, #expected do H.near(expected[i], got[i], tol, (what or '') .. '[' .. i .. ']') end
    return
  end
  if expected ~= expected then
    assert(got ~= got, string.format('%s: expected nan, got %.17g', what or 'value', got))
    return
  end
  local ok = expected == got or math.abs(expected - got) <= tol * math.max(1, math.abs(expected))
  assert(ok, string.format('%s: expected %.17g, got %.17g', what or 'value', expected, got))
end

-- a non-contiguous copy of the 2-D tensor t (the transpose of a contiguous transpose)
function H.noncontig(t)
  local r = t:t():contiguous():t()
  assert(not r:is_contiguous())
  return r
end

-- a [r, c] tensor of values v(i, j) (contiguous), the same values as a transposed (non-contiguous)
-- view, and the Lua table of them (float64 unless dtype is given)
function H.mat(r, c, v, dtype)
  local t, tt = {}, {}
  for i = 1, r do
    t[i] = {}
    for j = 1, c do t[i][j] = v(i, j) end
  end
  for j = 1, c do
    tt[j] = {}
    for i = 1, r do tt[j][i] = t[i][j] end
  end
  local y = torch.tensor(tt, { dtype = dtype or torch.float64 }):t()
  assert(not y:is_contiguous() or r == 1 or c == 1)
  return torch.tensor(t, { dtype = dtype or torch.float64 }), y, t
end

-- f over every element of the nested table t (and the matching element of u, when given)
function H.map(t, f, u)
  local r = {}
  for i, v in ipairs(t) do
    if type(v) == 'table' then r[i] = H.map(v, f, u and u[i]) else r[i] = f(v, u and u[i]) end
  end
  return r
end

-- the most memory that f() allocates on device d beyond what was allocated before (bytes)
function H.peak_bytes(d, f)
  collectgarbage()
  collectgarbage()
  local base = torch.memory.allocated(d)
  torch.memory.reset_peak(d)
  f()
  return torch.memory.max_allocated(d) - base
end

-- a float64 leaf of the shape with values drawn in [lo, hi) (0.5 to 1.5 by default)
function H.leaf(shape, lo, hi)
  lo, hi = lo or 0.5, hi or 1.5
  return (torch.rand(shape, { dtype = torch.float64 }) * (hi - lo) + lo):requires_grad_()
end

-- ---- reference data as the PyTorch generators in tools/ write it: tensors {s = shape, v = values} ----

-- the upstream gradient of the sweeps: u(j) = ((7 j) % 11 - 5) / 4 at the row-major position j
-- (0-based), a float64 tensor of the shape
function H.upstream(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for j = 0, n - 1 do v[j + 1] = ((7 * j) % 11 - 5) / 4 end
  return torch.tensor(v, { dtype = torch.float64 }):reshape(shape)
end

-- the float64 tensor of a reference {s = shape, v = row-major values}
function H.ref_tensor(r) return torch.tensor(r.v, { dtype = torch.float64 }):reshape(r.s) end

-- assert the tensor got has the shape and, within tol (relative to max(1, |expected|)), the values
-- of the reference want {s, v}
function H.ref_values(got, want, tol, what)
  local shape = { table.unpack(got.shape) }
  local same = #shape == #want.s
  for i = 1, #shape do same = same and shape[i] == want.s[i] end
  assert(same, ('%s: shape {%s}, expected {%s}'):format(what, table.concat(shape, ', '), table.concat(want.s, ', ')))
  H.near(want.v, got:detach():double():reshape(-1):totable(), tol, what)
end

return H
