-- torch.cuda and CUDA tensors. Without a GPU (this machine and CI) the GPU cases are pending with
-- the reason and the no-GPU behaviour is tested; with one, every CUDA result is compared with the
-- CPU backend's on the same inputs.
local torch = require 'torch'
local H = require 'spec.helpers'

local available = torch.cuda.is_available()
local reason = torch._cuda.unavailable_reason() or ''

-- a GPU case: runs when a device is present, else is reported pending with the reason
local function gpu_it(name, fn)
  if available then it(name, fn) else pending('no CUDA device: ' .. reason .. ' -- ' .. name) end
end

-- exact equality of two CPU tensors (shape, dtype, values; NaN equal to NaN)
local function same(a, b, tol, msg)
  assert.are.equal(tostring(a:size()), tostring(b:size()), msg)
  assert.are.equal(a.dtype, b.dtype, msg)
  H.assert_values(a, b:totable(), tol or 0, msg)
end

describe('torch.cuda without a GPU', function()
  if available then return end

  it('reports no devices', function()
    assert.is_false(torch.cuda.is_available())
    assert.are.equal(0, torch.cuda.device_count())
    assert.are.equal(0, torch.cuda.memory_allocated())
    assert.are.equal(0, torch.cuda.max_memory_reserved())
    assert.are.same({}, torch.cuda.memory_stats())
    torch.cuda.empty_cache() -- nothing to free: no error, as PyTorch
  end)

  it('refuses every CUDA request with the reason', function()
    local x = torch.ones(2)
    if torch.cuda.is_built() then -- the device string parses; the device is missing, and why
      H.raises(function() return x:to('cuda:0') end, 'cuda:0', 'CUDA is not available', 'cudaError')
      H.raises(function() return x:to('cuda') end, 'CUDA is not available', 'cudaError')
      H.raises(function() return x:to(torch.device('cuda', 0)) end, 'CUDA is not available')
      H.raises(function() return torch.zeros(2, { device = 'cuda:0' }) end, 'CUDA is not available')
    else -- the type itself is missing
      H.raises(function() return x:to('cuda:0') end, "'cuda'", 'not available in this build')
      H.raises(function() return torch.zeros(2, { device = 'cuda:0' }) end, "'cuda'", 'not available')
    end
    H.raises(function() return x:cuda() end, 'CUDA is not available')
    H.raises(function() return torch.cuda.device(0) end, 'torch.cuda.device', 'CUDA is not available')
    H.raises(function() return torch.cuda.current_device() end, 'CUDA is not available')
    H.raises(function() torch.cuda.set_device(0) end, 'set_device', 'CUDA is not available')
    H.raises(function() return torch.cuda.get_device_name() end, 'get_device_name', 'CUDA is not available')
    H.raises(function() return torch.cuda.get_device_properties(0) end, 'get_device_properties', 'not available')
    H.raises(function() return torch.cuda.mem_get_info() end, 'mem_get_info', 'CUDA is not available')
    H.raises(function() torch.cuda.synchronize() end, 'synchronize', 'CUDA is not available')
    H.raises(function() torch.cuda.reset_peak_memory_stats() end, 'reset_peak_memory_stats', 'not available')
    H.raises(function() return torch.cuda.Stream() end, 'Stream', 'CUDA is not available')
    H.raises(function() return torch.cuda.current_stream() end, 'current_stream', 'CUDA is not available')
    H.raises(function() return torch.cuda.default_stream() end, 'default_stream', 'CUDA is not available')
    H.raises(function() return torch.cuda.Event({ enable_timing = true }) end, 'Event', 'CUDA is not available')
    H.raises(function() return torch.cuda.stream(torch.Stream('cpu')) end, 'torch.cuda.stream', 'expected a cuda stream')
    if torch.cuda.is_built() then
      H.raises(function() return torch.Stream('cuda') end, 'Stream', 'CUDA is not available')
      H.raises(function() return torch.Event('cuda:0') end, 'Event', 'CUDA is not available')
    end
    H.raises(function() return x:pin_memory() end, 'pin_memory', 'CUDA is not available')
    assert.is_false(x:is_pinned())
  end)

  it('accepts cuda device objects in a CUDA build, as PyTorch', function()
    if not torch.cuda.is_built() then
      H.raises(function() return torch.device('cuda:0') end, 'not available in this build')
      return
    end
    local d = torch.device('cuda:1')
    assert.are.equal('cuda:1', tostring(d))
    assert.are.equal('cuda', d.type)
    assert.are.equal(1, d.index)
  end)

  it('keeps seeds and no-op device contexts', function()
    torch.cuda.manual_seed(123)
    assert.are.equal(123, torch.cuda.initial_seed())
    torch.cuda.manual_seed_all(7)
    assert.are.equal(7, torch.cuda.initial_seed())
    do local _ <close> = torch.cuda.device(nil) end
    assert.are.equal(42, torch.cuda.device(-1, function() return 42 end))
  end)

  it('leaves CPU work unaffected', function()
    local x = torch.tensor({ 1.5, -2, 3 })
    H.assert_values((x * 2 + 1):exp(), { math.exp(4), math.exp(-3), math.exp(7) }, 1e-6)
  end)
end)

describe('torch.linalg on CUDA tensors', function()
  gpu_it('runs the factorisations on CPU copies and gives CUDA results equal to the CPU ones, with gradients', function()
    torch.manual_seed(3)
    local x = torch.randn(2, 5, 5, { dtype = torch.float64 })
    local a = x:matmul(x:transpose(2, 3)) + torch.eye(5, { dtype = torch.float64 }) * 5
    local ac = a:cuda()
    for _, f in ipairs { torch.linalg.cholesky, torch.linalg.inv, torch.linalg.det, torch.linalg.svdvals,
      torch.linalg.eigvalsh, function(t) return (torch.linalg.qr(t)) end, torch.linalg.pinv } do
      local r, rc = f(a), f(ac)
      assert.are.equal('cuda', rc.device.type)
      H.assert_values(rc:cpu(), r:totable(), 1e-10, 'a CUDA factorisation')
    end
    local g = ac:clone():requires_grad_()
    local _, l = torch.linalg.slogdet(g)
    l:sum():backward()
    assert.are.equal('cuda', g.grad.device.type)
    H.assert_values(g.grad:cpu(), torch.linalg.inv(a):transpose(2, 3):totable(), 1e-10, 'd logdet / dA = A^-T')
    H.raises(function() return torch.linalg.solve(ac, torch.ones(2, 5, 1, { dtype = torch.float64 })) end, 'same device')
  end)
end)

describe('torch.cuda with a GPU', function()
  local dtypes_all = H.all_dtypes
  local kernel_dtypes = { torch.float32, torch.float64, torch.float16, torch.bfloat16 }

  gpu_it('copies every dtype to the device and back, contiguous or not', function()
    for _, dt in ipairs(dtypes_all) do
      local x = H.grid(3, 4, dt)
      local g = x:to('cuda:0')
      assert.are.equal('cuda:0', tostring(g.device))
      assert.are.equal(dt, g.dtype)
      same(g:cpu(), x, 0, tostring(dt))
      same(x:t():to('cuda'):cpu(), x:t(), 0, tostring(dt) .. ' transposed')
      same(g:t():cpu(), x:t(), 0, tostring(dt) .. ' device view')
      same(g:to('cuda:0', { copy = true }):cpu(), x, 0, tostring(dt) .. ' device to device')
      same(g:to(torch.float64):cpu(), x:to(torch.float64), 0, tostring(dt) .. ' converted on device')
    end
  end)

  gpu_it('copies strided and broadcast views on the device, every dtype', function()
    for _, dt in ipairs(dtypes_all) do
      local x = H.grid(4, 5, dt)
      local x3 = torch.cat({ x, x, x }, 1):view(3, 4, 5)
      local g, g3 = x:cuda(), x3:cuda()
      local name = tostring(dt)
      same(g:t():contiguous():cpu(), x:t():contiguous(), 0, 'transpose ' .. name)
      same(g3:permute(3, 1, 2):contiguous():cpu(), x3:permute(3, 1, 2):contiguous(), 0, 'permute ' .. name)
      same(g3:narrow(3, 2, 3):narrow(2, 2, 2):contiguous():cpu(), x3:narrow(3, 2, 3):narrow(2, 2, 2):contiguous(), 0,
        'narrowed ' .. name)
      same(g[2]:expand(3, 4, 5):contiguous():cpu(), x[2]:expand(3, 4, 5):contiguous(), 0, 'expanded row ' .. name)
      same(g:narrow(2, 3, 1):expand(4, 6):contiguous():cpu(), x:narrow(2, 3, 1):expand(4, 6):contiguous(), 0,
        'expanded column ' .. name)
      local d, h = torch.zeros(3, 4, 5, { dtype = dt, device = 'cuda' }), torch.zeros(3, 4, 5, { dtype = dt })
      d:copy_(g[3])
      h:copy_(x[3])
      same(d:cpu(), h, 0, 'broadcast copy_ ' .. name)
      d:narrow(3, 2, 3):copy_(g3:narrow(3, 1, 3))
      h:narrow(3, 2, 3):copy_(x3:narrow(3, 1, 3))
      same(d:cpu(), h, 0, 'strided destination ' .. name)
      d:select(2, 3):copy_(g3:select(2, 4))
      h:select(2, 3):copy_(x3:select(2, 4))
      same(d:cpu(), h, 0, 'selected destination ' .. name)
      same(g:t():to(torch.float64):cpu(), x:t():to(torch.float64), 0, 'transposed and converted ' .. name)
      local e, f = torch.zeros(5, 4, { dtype = torch.float32, device = 'cuda' }), torch.zeros(5, 4)
      e:copy_(g:t())
      f:copy_(x:t())
      same(e:cpu(), f, 0, 'converted into a contiguous destination from a transpose ' .. name)
    end
  end)

  gpu_it('writes into strided device views', function()
    local c = torch.zeros(3, 4, { device = 'cuda' })
    c:narrow(2, 2, 2):copy_(torch.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }))
    H.assert_values(c:cpu(), { { 0, 1, 2, 0 }, { 0, 3, 4, 0 }, { 0, 5, 6, 0 } })
    local f = torch.full({ 2, 3 }, 2.5, { device = 'cuda', dtype = torch.float16 })
    H.assert_values(f:cpu(), { { 2.5, 2.5, 2.5 }, { 2.5, 2.5, 2.5 } })
    assert.are.equal(2.5, f[{ 2, 3 }])
    assert.are.equal(6, torch.ones(6, { device = 'cuda' }):cpu():sum():item())
  end)

  local unary = { 'abs', 'neg', 'exp', 'expm1', 'log', 'log1p', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh',
    'sigmoid', 'relu', 'floor', 'ceil', 'round', 'trunc', 'sign', 'reciprocal', 'erf', 'atan', 'silu', 'mish',
    'softplus', 'hardswish', 'hardsigmoid', 'logsigmoid', 'selu', 'softsign', 'tanhshrink', 'relu6', 'exp2', 'frac' }
  gpu_it('runs the unary ops as the CPU does', function()
    for _, dt in ipairs(kernel_dtypes) do
      local x = (torch.rand(7, 9) * 4 + 0.05):to(dt)
      local mixed = (torch.rand(7, 9) * 6 - 3):to(dt)
      for _, op in ipairs(unary) do
        local input = (op:match('log') or op:match('sqrt')) and x or mixed
        local want = input[op](input)
        local got = input:to('cuda')[op](input:to('cuda'))
        assert.are.equal('cuda:0', tostring(got.device))
        same(got:cpu(), want, 4 * H.tol(dt) + 1e-6, op .. ' ' .. tostring(dt))
        same(input:t():to('cuda')[op](input:t():to('cuda')):cpu(), input:t()[op](input:t()), 4 * H.tol(dt) + 1e-6,
          op .. ' transposed ' .. tostring(dt))
      end
    end
  end)

  gpu_it('runs the binary ops and comparisons as the CPU does, with broadcasting and numbers', function()
    for _, dt in ipairs(kernel_dtypes) do
      local a = (torch.rand(5, 6) * 4 - 2):to(dt)
      local b = (torch.rand(5, 6) * 4 + 0.5):to(dt)
      local row = (torch.rand(6) + 0.5):to(dt)
      local ga, gb, grow = a:to('cuda'), b:to('cuda'), row:to('cuda')
      local tol = 4 * H.tol(dt) + 1e-6
      for _, op in ipairs { 'add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'pow', 'atan2', 'hypot', 'fmod', 'remainder' } do
        local ta = op == 'pow' and b or a
        local ga2 = op == 'pow' and gb or ga
        same(ga2[op](ga2, gb):cpu(), ta[op](ta, b), tol, op .. ' ' .. tostring(dt))
        same(ga2[op](ga2, grow):cpu(), ta[op](ta, row), tol, op .. ' broadcast ' .. tostring(dt))
        same(ga2[op](ga2, 1.5):cpu(), ta[op](ta, 1.5), tol, op .. ' number ' .. tostring(dt))
      end
      same(ga:add(gb, { alpha = 2 }):cpu(), a:add(b, { alpha = 2 }), tol, 'add alpha')
      local special = torch.tensor({ math.huge, 0 / 0, -math.huge, 0 / 0, 2e38 }, { dtype = torch.float64 }):to(dt)
      local other = torch.tensor({ 0 / 0, -math.huge, 1, 2, -1e38 }, { dtype = torch.float64 }):to(dt)
      same(torch.hypot(special:cuda(), other:cuda()):cpu(), torch.hypot(special, other), tol, 'hypot inf, nan, overflow')
      for _, op in ipairs { 'eq', 'ne', 'lt', 'le', 'gt', 'ge' } do
        same(ga[op](ga, gb):cpu(), a[op](a, b), 0, op)
        same(ga[op](ga, 0):cpu(), a[op](a, 0), 0, op .. ' number')
      end
      same(torch.where(ga:gt(0), ga, gb):cpu(), torch.where(a:gt(0), a, b), 0, 'where')
      local c = ga:clone()
      c:narrow(2, 1, 3):add_(1)
      local w = a:clone()
      w:narrow(2, 1, 3):add_(1)
      same(c:cpu(), w, tol, 'in-place on a view')
    end
  end)

  -- igamma / igammac: kernels/special.h's Cephes loops (series, continued fraction) on the device,
  -- over each method's range of (a, x), broadcast, and the gradient in x
  gpu_it('runs igamma and igammac as the CPU does, with broadcasting and the gradient in x', function()
    for _, dt in ipairs(kernel_dtypes) do
      local a = (torch.rand(5, 6, { dtype = torch.float64 }) * 30 + 0.05):to(dt)
      local x = (torch.rand(5, 6, { dtype = torch.float64 }) * 40):to(dt)
      local row = (torch.rand(6, { dtype = torch.float64 }) * 3 + 0.1):to(dt)
      local tol = 4 * H.tol(dt) + 1e-6
      for _, op in ipairs { 'igamma', 'igammac' } do
        same(torch[op](a:cuda(), x:cuda()):cpu(), torch[op](a, x), tol, op .. ' ' .. tostring(dt))
        same(torch[op](a:cuda(), row:cuda()):cpu(), torch[op](a, row), tol, op .. ' broadcast ' .. tostring(dt))
      end
    end
    local a = torch.rand(7, { dtype = torch.float64 }) * 5 + 0.2
    local x = (torch.rand(7, { dtype = torch.float64 }) * 6 + 0.1):requires_grad_()
    local gx = x:detach():cuda():requires_grad_()
    torch.igammac(a:cuda(), gx):sum():backward()
    torch.igammac(a, x):sum():backward()
    same(gx.grad:cpu(), x.grad, 1e-12, 'igammac gradient')
  end)

  -- the kernels read strided and broadcast inputs in place (kernels/cuda/elementwise.h's geometry,
  -- up to 8 merged dims) and copy the others contiguous first: both against the CPU
  gpu_it('reads strided, sliced, permuted and broadcast inputs in place, every dtype, and falls back beyond 8 dims', function()
    for _, dt in ipairs(dtypes_all) do
      local name = tostring(dt)
      local function mk(shape, seed)
        torch.manual_seed(seed)
        local x = torch.rand(shape) * 8 - 2
        if dt == torch.bool then return x:gt(1) end
        if dt == torch.uint8 then x = x + 2 end
        return x:to(dt)
      end
      local tol = dt.is_floating_point and 4 * H.tol(dt) + 1e-6 or 0
      -- 5 dims against 3 broadcast ones, a size-1 dim in the middle of each
      local a, b = mk({ 2, 3, 1, 4, 5 }, 1), mk({ 4, 1, 5 }, 2)
      local ga, gb = a:cuda(), b:cuda()
      same((ga + gb):cpu(), a + b, tol, 'add broadcast ' .. name)
      same(ga:lt(gb):cpu(), a:lt(b), 0, 'lt broadcast ' .. name)
      -- a slice (an offset and row strides) with a permuted tensor
      local big = mk({ 6, 7, 5 }, 3)
      local sl, gsl = big[{ { 2, 5 }, { 3, 6 } }], big:cuda()[{ { 2, 5 }, { 3, 6 } }]
      local pm = mk({ 5, 4, 4 }, 4)
      local p, gp = pm:permute(3, 2, 1), pm:cuda():permute(3, 2, 1)
      same((gsl * gp):cpu(), sl * p, tol, 'mul slice by permuted ' .. name)
      same(gsl:maximum(gp):cpu(), sl:maximum(p), tol, 'maximum slice by permuted ' .. name)
      -- where: a broadcast condition, a transposed and an expanded operand
      local c = mk({ 4, 1 }, 5):to(torch.float32):gt(2)
      local x, y = mk({ 3, 4 }, 6):t(), mk({ 1, 3 }, 7):expand(4, 3)
      same(torch.where(c:cuda(), x:cuda(), y:cuda()):cpu(), torch.where(c, x, y), 0, 'where broadcast ' .. name)
      if dt ~= torch.bool then
        same(gsl:neg():cpu(), sl:neg(), tol, 'neg slice ' .. name)
        same(gp:abs():cpu(), p:abs(), tol, 'abs permuted ' .. name)
      end
      -- 8 dims that cannot merge (read in place) and 9 (copied first)
      for _, nd in ipairs { 8, 9 } do
        local shape, perm = {}, {}
        for d = 1, nd do shape[d], perm[d] = 2, nd + 1 - d end
        local q, r = mk(shape, 8), mk(shape, 9)
        local gq, gr = q:cuda():permute(table.unpack(perm)), r:cuda()
        same((gq + gr):cpu(), q:permute(table.unpack(perm)) + r, tol, nd .. ' permuted dims ' .. name)
      end
    end
    -- a gradient expanded from a number reaches relu's and tanh's backward as a broadcast input
    for _, dt in ipairs(kernel_dtypes) do
      local x = (torch.rand(6, 5) * 4 - 2):to(dt)
      local gx = x:cuda():requires_grad_()
      local cx = x:clone():requires_grad_()
      local lg, lc = (gx:relu() + gx:tanh()):sum(), (cx:relu() + cx:tanh()):sum()
      lg:backward()
      lc:backward()
      same(gx.grad:cpu(), cx.grad, 4 * H.tol(dt) + 1e-6, 'relu + tanh backward ' .. tostring(dt))
    end
  end)

  gpu_it('runs the integer and bool elementwise ops exactly as the CPU does', function()
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8 } do
      torch.manual_seed(3)
      local a = torch.randint(dt == torch.uint8 and 0 or -9, 10, { 5, 6 }, { dtype = dt })
      local b = torch.randint(1, 10, { 5, 6 }, { dtype = dt })
      local e = torch.randint(0, 4, { 5, 6 }, { dtype = dt })
      local row = torch.randint(1, 5, { 6 }, { dtype = dt })
      local ga, gb, ge, grow = a:cuda(), b:cuda(), e:cuda(), row:cuda()
      local name = tostring(dt)
      for _, op in ipairs { 'abs', 'neg', 'relu', 'sign', 'square', 'floor', 'ceil', 'round', 'trunc', 'exp', 'sqrt' } do
        same(ga[op](ga):cpu(), a[op](a), 1e-6, op .. ' ' .. name)
        same(ga:t()[op](ga:t()):cpu(), a:t()[op](a:t()), 1e-6, op .. ' transposed ' .. name)
      end
      for _, op in ipairs { 'add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'fmod', 'remainder' } do
        same(ga[op](ga, gb):cpu(), a[op](a, b), 1e-6, op .. ' ' .. name)
        same(ga[op](ga, grow):cpu(), a[op](a, row), 1e-6, op .. ' broadcast ' .. name)
        same(ga[op](ga, 3):cpu(), a[op](a, 3), 1e-6, op .. ' number ' .. name)
        same(ga:t()[op](ga:t(), gb:t()):cpu(), a:t()[op](a:t(), b:t()), 1e-6, op .. ' transposed ' .. name)
      end
      same(ga:pow(ge):cpu(), a:pow(e), 0, 'pow ' .. name)
      same(ga:add(gb, { alpha = 3 }):cpu(), a:add(b, { alpha = 3 }), 0, 'add alpha ' .. name)
      same(ga:sub(gb, { alpha = -2 }):cpu(), a:sub(b, { alpha = -2 }), 0, 'sub alpha ' .. name)
      same((ga * 100):cpu(), a * 100, 0, 'wrapping ' .. name)
      for _, op in ipairs { 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'logical_and', 'logical_or', 'logical_xor' } do
        same(ga[op](ga, ge):cpu(), a[op](a, e), 0, op .. ' ' .. name)
        same(ga[op](ga, 2):cpu(), a[op](a, 2), 0, op .. ' number ' .. name)
      end
      same(ga:argmax(2):cpu(), a:argmax(2), 0, 'argmax ' .. name)
      same(torch.where(ga:gt(2), ga, gb):cpu(), torch.where(a:gt(2), a, b), 0, 'where ' .. name)
      local c, w = ga:clone(), a:clone()
      c:narrow(2, 2, 3):add_(1)
      w:narrow(2, 2, 3):add_(1)
      same(c:cpu(), w, 0, 'in-place on a view ' .. name)
      local z = gb:clone()
      z[{ 2, 3 }] = 0
      H.raises(function() return ga:fmod(z) end, 'fmod', 'division by zero')
      H.raises(function() return ga:remainder(0) end, 'remainder', 'division by zero')
    end
    local p, q = torch.tensor({ true, false, true, false }), torch.tensor({ true, true, false, false })
    local gp, gq = p:cuda(), q:cuda()
    same((gp + gq):cpu(), p + q, 0, 'bool add')
    same((gp * gq):cpu(), p * q, 0, 'bool mul')
    same(gp:logical_xor(gq):cpu(), p:logical_xor(q), 0, 'bool xor')
    same(gp:eq(gq):cpu(), p:eq(q), 0, 'bool eq')
    same(gp:logical_not():cpu(), p:logical_not(), 0, 'logical_not')
    same((gp + 1):cpu(), p + 1, 0, 'bool + number')
  end)

  gpu_it('runs the bitwise ops exactly as the CPU does', function()
    for _, dt in ipairs { torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8 } do
      torch.manual_seed(5)
      local lo = dt == torch.uint8 and 0 or -100
      local a = torch.randint(lo, 100, { 5, 6 }, { dtype = dt })
      local b = torch.randint(lo, 100, { 5, 6 }, { dtype = dt })
      local s = torch.randint(dt == torch.uint8 and 0 or -3, 70, { 5, 6 }, { dtype = dt }) -- beyond the widths too
      local row = torch.randint(0, 9, { 6 }, { dtype = dt })
      local ga, gb, gs, grow = a:cuda(), b:cuda(), s:cuda(), row:cuda()
      local name = tostring(dt)
      for _, op in ipairs { 'bitwise_and', 'bitwise_or', 'bitwise_xor', 'bitwise_left_shift', 'bitwise_right_shift' } do
        local y, gy = op:find('shift') and s or b, op:find('shift') and gs or gb
        same(ga[op](ga, gy):cpu(), a[op](a, y), 0, op .. ' ' .. name)
        same(ga[op](ga, grow):cpu(), a[op](a, row), 0, op .. ' broadcast ' .. name)
        same(ga[op](ga, 3):cpu(), a[op](a, 3), 0, op .. ' number ' .. name)
        same(torch[op](3, gy):cpu(), torch[op](3, y), 0, op .. ' number first ' .. name)
        same(ga:t()[op](ga:t(), gy:t()):cpu(), a:t()[op](a:t(), y:t()), 0, op .. ' transposed ' .. name)
        local c, w = ga:clone(), a:clone()
        c:narrow(2, 2, 3)[op .. '_'](c:narrow(2, 2, 3), 5)
        w:narrow(2, 2, 3)[op .. '_'](w:narrow(2, 2, 3), 5)
        same(c:cpu(), w, 0, op .. '_ on a view ' .. name)
      end
      same((~ga):cpu(), ~a, 0, 'bitwise_not ' .. name)
      same((~ga:t()):cpu(), ~a:t(), 0, 'bitwise_not transposed ' .. name)
    end
    local p, q = torch.tensor({ true, false, true, false }), torch.tensor({ true, true, false, false })
    local gp, gq = p:cuda(), q:cuda()
    same((gp & gq):cpu(), p & q, 0, 'bool and')
    same((gp | gq):cpu(), p | q, 0, 'bool or')
    same((gp ~ gq):cpu(), p ~ q, 0, 'bool xor')
    same((~gp):cpu(), ~p, 0, 'bool not')
    local gf = torch.ones(3, { device = 'cuda' })
    H.raises(function() return gf & gf end, 'bitwise_and', 'float32')
  end)

  -- the scans (a kernel thread a line, kernels/reduce.h's math): the same values, indices and
  -- gradients as the CPU, on the device, every dtype, along each dim, on transposed inputs
  gpu_it('runs the scans (cumsum, cumprod, cummax, cummin, logcumsumexp) as the CPU does, with gradients', function()
    torch.manual_seed(11)
    for _, dt in ipairs(dtypes_all) do
      local x = dt == torch.bool and torch.rand(4, 5):gt(0.5) or (torch.rand(4, 5) * 6 - 3):to(dt)
      local gx = x:cuda()
      local floating = x:is_floating_point()
      for _, d in ipairs { 1, 2, -1 } do
        for _, v in ipairs { { x, gx, '' }, { x:t(), gx:t(), ' transposed' } } do
          local a, ga, how = v[1], v[2], tostring(dt) .. ' dim ' .. d .. v[3]
          same(ga:cumsum(d):cpu(), a:cumsum(d), 0, 'cumsum ' .. how)
          same(ga:cumprod(d):cpu(), a:cumprod(d), floating and 1e-6 or 0, 'cumprod ' .. how)
          if dt ~= torch.bool then
            for _, op in ipairs { 'cummax', 'cummin' } do
              local val, idx = a[op](a, d)
              local gval, gidx = ga[op](ga, d)
              assert.are.equal('cuda', gval.device.type)
              assert.are.equal('cuda', gidx.device.type)
              same(gval:cpu(), val, 0, op .. ' ' .. how)
              same(gidx:cpu(), idx, 0, op .. ' indices ' .. how)
            end
          end
          if floating then
            same(ga:logcumsumexp(d):cpu(), a:logcumsumexp(d), 4 * H.tol(dt) + 1e-6, 'logcumsumexp ' .. how)
          end
        end
      end
    end
    same(torch.cumsum(torch.ones(3, 4, { dtype = torch.int32, device = 'cuda' }), 2, { dtype = torch.float64 }):cpu(),
      torch.cumsum(torch.ones(3, 4, { dtype = torch.int32 }), 2, { dtype = torch.float64 }), 0, 'cumsum with a dtype')
    local a = torch.rand(3, 6, { dtype = torch.float64 }) + 0.5
    for _, op in ipairs { 'cumsum', 'cumprod', 'logcumsumexp', 'cummax', 'cummin' } do
      local l = a:clone():requires_grad_()
      local g = a:cuda():requires_grad_()
      local w = torch.rand(3, 6, { dtype = torch.float64 })
      local yl, yg = l[op](l, 2), g[op](g, 2) -- cummax, cummin: the values (their indices dropped)
      yl:mul(w):sum():backward()
      yg:mul(w:cuda()):sum():backward()
      assert.are.equal('cuda', g.grad.device.type)
      same(g.grad:cpu(), l.grad, 1e-12, op .. ' gradient')
    end
    H.raises(function() return torch.ones(3, { device = 'cuda' }):cumsum(3) end, 'cumsum', 'dim')
  end)

  -- few long lines are scanned in chunks (each chunk's accumulator, the prefixes of each line's
  -- chunks, then each chunk again from its prefix): the values of one pass along the line
  gpu_it('scans few long lines in chunks as the CPU does in one pass', function()
    torch.manual_seed(12)
    local n = 30011
    local ints = torch.randint(-3, 4, { 3, n }) -- ties for cummax and cummin
    local floats = torch.rand(3, n, { dtype = torch.float64 }) * 2 - 1
    for _, v in ipairs { { ints, ' rows' }, { ints:t():contiguous():t(), ' strided rows' } } do
      local x, how = v[1], v[2]
      local g = x:cuda()
      same(g:cumsum(2):cpu(), x:cumsum(2), 0, 'int64 cumsum' .. how)
      for _, op in ipairs { 'cummax', 'cummin' } do
        local val, idx = x[op](x, 2)
        local gval, gidx = g[op](g, 2)
        same(gval:cpu(), val, 0, op .. how)
        same(gidx:cpu(), idx, 0, op .. ' indices' .. how)
      end
    end
    local one = floats:select(1, 2)
    local g = one:cuda()
    local function rel(got, want, tol, what)
      local err = ((got:to(want.device) - want):abs() / (want:abs() + 1)):max():item()
      assert(err <= tol, what .. ': relative error ' .. err)
    end
    rel(g:cumsum(1), one:cumsum(1), 1e-12, 'float64 cumsum of one line')
    rel((g * 1e-3 + 1):cumprod(1), (one * 1e-3 + 1):cumprod(1), 1e-12, 'float64 cumprod')
    rel(g:logcumsumexp(1), one:logcumsumexp(1), 1e-12, 'float64 logcumsumexp')
    rel(g:float():cumsum(1), one:float():cumsum(1):double(), 1e-5, 'float32 cumsum')
    local fv, fi = one:cummax(1)
    local gv, gi = g:cummax(1)
    same(gv:cpu(), fv, 0, 'float64 cummax')
    same(gi:cpu(), fi, 0, 'float64 cummax indices')
  end)

  gpu_it('refuses the ops it has no kernels for, and mixed devices', function()
    local g = torch.ones(3, 3, { device = 'cuda', dtype = torch.int64 })
    H.raises(function() return g:mm(g) end, 'mm', 'not implemented for CUDA tensors of dtype int64')
    H.raises(function() return g:float() + torch.ones(3, 3) end, 'same device')
  end)

  gpu_it('reads values back from the device', function()
    local g = torch.tensor({ { 1.5, 2 }, { 3, 4 } }):to('cuda')
    assert.are.equal(1.5, g[1][1])
    assert.are.equal(1.5, g[{ 1, 1 }])
    assert.are.equal(7, g[2]:sum():item())
    assert.are.same({ { 1.5, 2 }, { 3, 4 } }, g:totable())
    assert.truthy(tostring(g):find("device='cuda:0'", 1, true))
  end)

  gpu_it('counts device memory in the caching allocator', function()
    collectgarbage()
    torch.cuda.empty_cache()
    local base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    local x = torch.empty(1000, { device = 'cuda' }) -- 4000 bytes: a 4096-byte block
    assert.are.equal(base + 4096, torch.cuda.memory_allocated())
    assert.are.equal(base + 4096, torch.cuda.max_memory_allocated(0))
    assert.is_true(torch.cuda.memory_reserved() >= base + 4096)
    assert.are.equal(torch.cuda.memory_allocated(), torch.cuda.memory_stats()['allocated_bytes.all.current'])
    x = nil
    collectgarbage()
    assert.are.equal(base, torch.cuda.memory_allocated('cuda:0'))
    assert.are.equal(base + 4096, torch.cuda.max_memory_allocated())
    local reserved = torch.cuda.memory_reserved()
    torch.cuda.empty_cache()
    assert.is_true(torch.cuda.memory_reserved() <= reserved - 4096)
    assert.truthy(torch.cuda.memory_summary():find('cuda:0', 1, true))
  end)

  gpu_it('reports the device: properties, free memory, the current device', function()
    local p = torch.cuda.get_device_properties(0)
    assert.are.equal('string', type(p.name))
    assert.is_true(#p.name > 0)
    assert.are.equal(p.name, torch.cuda.get_device_name())
    assert.is_true(p.major >= 3 and p.minor >= 0 and p.multi_processor_count > 0)
    local free, total = torch.cuda.mem_get_info()
    assert.is_true(free > 0 and free <= total)
    assert.is_true(math.abs(total - p.total_memory) <= p.total_memory // 10)
    torch.cuda.synchronize()
    assert.are.equal(0, torch.cuda.current_device())
    do
      local _ <close> = torch.cuda.device(0)
      assert.are.equal(0, torch.cuda.current_device())
    end
    assert.are.equal('ok', torch.cuda.device(0, function() return 'ok' end))
    H.raises(function() return torch.cuda.device(torch.cuda.device_count()) end, 'does not exist')
  end)

  gpu_it('pins host memory', function()
    local x = H.grid(4, 5)
    local p = x:pin_memory()
    assert.is_true(p:is_pinned())
    assert.is_false(x:is_pinned())
    same(p, x)
    same(p:to('cuda'):cpu(), x)
  end)

  gpu_it('makes streams, switches the current stream and device, and restores them', function()
    local s = torch.cuda.Stream()
    assert.are.equal('cuda:0', tostring(s.device))
    assert.is_true(torch.cuda.current_stream() == torch.cuda.default_stream())
    assert.is_false(s == torch.cuda.default_stream())
    do
      local _ <close> = torch.cuda.stream(s)
      assert.is_true(torch.cuda.current_stream() == s)
      local x = torch.ones(1000, { device = 'cuda' }) * 3 -- a kernel on s
      s:synchronize()
      assert.is_true(s:query())
      assert.are.equal(3000, x:cpu():sum():item())
    end
    assert.is_true(torch.cuda.current_stream() == torch.cuda.default_stream())
    local ok = pcall(torch.cuda.stream, s, function() error('inside') end)
    assert.is_false(ok)
    assert.is_true(torch.cuda.current_stream() == torch.cuda.default_stream())
    -- ordering across streams: s2 waits for s before reading what s wrote
    local s2 = torch.cuda.Stream()
    local a = torch.zeros(1 << 20, { device = 'cuda' })
    s:wait_stream(torch.cuda.current_stream()) -- the zeros are written on the default stream
    torch.cuda.stream(s, function() a:fill_(2) end)
    s2:wait_stream(s)
    local b = torch.cuda.stream(s2, function() return a + 1 end)
    b:record_stream(s2)
    torch.cuda.current_stream():wait_stream(s2) -- b:cpu() copies on the current stream
    assert.are.equal(3 * (1 << 20), b:cpu():sum():item())
    torch.cuda.synchronize()
  end)

  gpu_it('times work with events and refuses a CPU stream for a CUDA event', function()
    local e1 = torch.cuda.Event({ enable_timing = true })
    local e2 = torch.cuda.Event({ enable_timing = true })
    local x = torch.rand(1 << 22):to('cuda')
    e1:record()
    for _ = 1, 20 do x = x * 1.0001 end
    e2:record()
    e2:synchronize()
    assert.is_true(e1:query() and e2:query())
    local ms = e1:elapsed_time(e2)
    assert.is_true(ms > 0 and ms < 10000, 'elapsed ' .. ms)
    local e3 = torch.cuda.Event()
    e3:record()
    e3:synchronize()
    H.raises(function() return e1:elapsed_time(e3) end, "enable_timing=True")
    H.raises(function() return e1:elapsed_time(torch.cuda.Event({ enable_timing = true })) end, 'Both events must be recorded')
    H.raises(function() e3:record(torch.Stream('cpu')) end, 'Event.record', 'cuda:0', 'cpu:0')
    H.raises(function() torch.cuda.Stream():wait_event(torch.Event('cpu')) end, 'wait_event', 'cpu', 'cuda:0')
  end)

  gpu_it('copies with non_blocking from pinned memory and synchronously otherwise', function()
    local x = H.grid(64, 64)
    local p = x:pin_memory()
    local g = p:to('cuda', { non_blocking = true })
    torch.cuda.current_stream():synchronize()
    same(g:cpu(), x)
    -- pageable with non_blocking: synchronous, the values are there at once
    same(x:to('cuda', { non_blocking = true }):cpu(), x)
    -- device to host into pinned memory and back, on a side stream
    local s = torch.cuda.Stream()
    torch.cuda.stream(s, function()
      local back = g:to('cpu')
      same(back, x)
    end)
    -- the pinned block of a non_blocking copy is reused only after the copy completed
    p = nil
    collectgarbage()
    collectgarbage()
    local q = torch.zeros(64, 64):pin_memory()
    assert.is_true(q:is_pinned())
    same(q:to('cuda', { non_blocking = true }):cpu(), torch.zeros(64, 64))
  end)

  gpu_it('keeps cached blocks per stream and defers record_stream frees', function()
    collectgarbage()
    torch.cuda.empty_cache()
    local s = torch.cuda.Stream()
    local segs = torch.cuda.memory_stats()['segment.all.allocated']
    local x = torch.empty(1500, { device = 'cuda' })
    x = nil
    collectgarbage()
    local y = torch.cuda.stream(s, function() return torch.empty(1500, { device = 'cuda' }) end)
    assert.are.equal(segs + 2, torch.cuda.memory_stats()['segment.all.allocated'])
    y:record_stream(torch.cuda.default_stream())
    y = nil
    collectgarbage()
    torch.cuda.synchronize()
    torch.cuda.empty_cache() -- synchronises, so the deferred block is free and given back
    assert.are.equal(0, torch._memory_pending('cuda:0'))
    assert.are.equal(torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
    local total = select(2, torch.cuda.mem_get_info())
    H.raises(function() return torch.empty(1 << 50, { device = 'cuda', dtype = torch.uint8 }) end,
      'out of memory on cuda:0', 'tried to allocate', 'allocated', 'reserved', '(' .. total .. ' bytes) total memory')
  end)
end)
