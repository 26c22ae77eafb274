-- The CUDA kernels of casts, reductions, matrix products and conv2d (cuBLAS), pooling, softmax /
-- nll_loss / layer_norm / batch_norm and the fused optimizer steps, each compared with the CPU
-- backend on the same inputs (contiguous and non-contiguous, every dtype the op takes). Errors are
-- normalised by the reference's largest magnitude: float32 1e-5, float16 1e-2, bfloat16 2e-2,
-- float64 1e-12 (times a small factor where the CPU and GPU sum in different orders); integer and
-- index results must be equal. Without a GPU (this machine and CI) the GPU cases are pending with
-- the reason, and the no-GPU behaviour of each op family is tested.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional

local available = torch.cuda.is_available()
local reason = torch.cuda.is_built() and (torch._cuda.unavailable_reason() or '') or 'not a CUDA build'

local function gpu_it(name, fn)
  if available then it(name, fn) else pending('no CUDA device: ' .. reason .. ' -- ' .. name) end
end

local f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
local FLOATS = { f32, f64, f16, bf16 }
local TOL = { [f32] = 1e-5, [f64] = 1e-12, [f16] = 1e-2, [bf16] = 2e-2 }

-- a float64 CPU tensor with values in [lo, hi] (fixed by the seed)
local function rnd(shape, seed, lo, hi)
  torch.manual_seed(seed)
  lo, hi = lo or -2, hi or 2
  return torch.rand(shape, { dtype = f64 }) * (hi - lo) + lo
end

-- got (any device) against the CPU reference: shape, dtype, then values within tol * max|ref|
local function cmp(got, ref, tol, msg)
  got = got:cpu()
  assert.are.equal(tostring(ref:size()), tostring(got:size()), msg .. ': shape')
  assert.are.equal(ref.dtype, got.dtype, msg .. ': dtype')
  local g, r = H.flatten(got:totable()), H.flatten(ref:totable())
  if ref.dtype == torch.bool or ref.dtype == torch.int64 or ref.dtype == torch.int32 or ref.dtype == torch.int16
      or ref.dtype == torch.int8 or ref.dtype == torch.uint8 then
    tol = 0
  end
  local scale = 0
  for i = 1, #r do
    local v = r[i]
    if type(v) == 'number' and v == v and math.abs(v) ~= math.huge then scale = math.max(scale, math.abs(v)) end
  end
  if scale == 0 then scale = 1 end
  for i = 1, #r do
    local a, b = g[i], r[i]
    if type(b) == 'boolean' or tol == 0 then
      assert(a == b or (a ~= a and b ~= b), ('%s: element %d is %s, expected %s'):format(msg, i, tostring(a), tostring(b)))
    elseif not (b ~= b and a ~= a) and a ~= b then
      local err = math.abs(a - b) / scale
      assert(err <= tol, ('%s: element %d is %.9g, expected %.9g (normalised error %.3g > %g)'):format(
        msg, i, a, b, err, tol))
    end
  end
end

-- x on the CPU and its CUDA copy, and a non-contiguous view of each (the transpose of dims 1, last)
local function pair(x)
  local xc = x:to('cuda')
  return x, xc, x:transpose(1, x:dim()), xc:transpose(1, x:dim())
end

-------------------------------------------------------------------------------------------------
describe('CUDA op families without a GPU', function()
  if available then return end
  -- each family's entry: making its CUDA operands fails, naming CUDA
  local function refuses(fn, what)
    local ok, err = pcall(fn)
    assert.is_false(ok, what .. ' should fail without a GPU')
    assert(tostring(err):lower():find('cuda', 1, true), ('%s: error %q does not name CUDA'):format(what, tostring(err)))
  end
  it('casts', function()
    refuses(function() return torch.ones(2, { device = 'cuda' }):to(f16) end, 'cast')
    refuses(function() return torch.ones(2, { dtype = f64 }):cuda():to(f16) end, 'cast after a move')
  end)
  it('reductions', function()
    refuses(function() return torch.ones(2, 3, { device = 'cuda' }):sum(1) end, 'sum')
    refuses(function() return torch.ones(2, 3):cuda():argmax() end, 'argmax')
  end)
  it('matrix products', function()
    refuses(function() return torch.mm(torch.ones(2, 3, { device = 'cuda' }), torch.ones(3, 2, { device = 'cuda' })) end,
      'mm')
    refuses(function() return F.linear(torch.ones(2, 3):cuda(), torch.ones(4, 3):cuda()) end, 'linear')
  end)
  it('conv2d', function()
    refuses(function() return F.conv2d(torch.ones(1, 1, 3, 3, { device = 'cuda' }), torch.ones(1, 1, 2, 2):cuda()) end,
      'conv2d')
  end)
  it('pooling', function()
    refuses(function() return F.max_pool2d(torch.ones(1, 1, 4, 4, { device = 'cuda' }), 2) end, 'max_pool2d')
    refuses(function() return F.avg_pool2d(torch.ones(1, 4, 4):cuda(), 2) end, 'avg_pool2d')
  end)
  it('softmax, nll_loss, layer_norm and batch_norm', function()
    refuses(function() return F.softmax(torch.ones(2, 3, { device = 'cuda' }), 2) end, 'softmax')
    refuses(function() return F.nll_loss(torch.ones(2, 3):cuda(), torch.tensor({ 1, 2 }):cuda()) end, 'nll_loss')
    refuses(function() return F.layer_norm(torch.ones(2, 3, { device = 'cuda' }), { 3 }) end, 'layer_norm')
    refuses(function()
      return F.batch_norm(torch.ones(4, 3, { device = 'cuda' }), nil, nil, nil, nil, { training = true })
    end, 'batch_norm')
  end)
  it('optimizer steps', function()
    refuses(function()
      local p = torch.ones(3, { device = 'cuda' })
      torch._optim.sgd_step(p, torch.ones(3, { device = 'cuda' }), nil, false, 0.1, 0, 0, 0, false, false)
    end, 'sgd_step')
  end)
  it('CPU tensors keep working in this build', function()
    assert.are.equal(6, torch.ones(2, 3):sum():item())
    H.assert_values(torch.mm(torch.ones(2, 3), torch.ones(3, 2)), { { 3, 3 }, { 3, 3 } })
  end)
end)

-------------------------------------------------------------------------------------------------
describe('CUDA casts', function()
  local ALL = H.all_dtypes
  gpu_it('convert every pair of dtypes on the device as the CPU does', function()
    local base = torch.tensor({ -3.75, -1.5, -0.5, 0, 0.25, 0.5, 1.5, 2.5, 3.999, 100.3, 65519, 70000, -1e-8 },
      { dtype = f64 })
    for _, sdt in ipairs(ALL) do
      local src = base:to(sdt)
      local srcc = src:to('cuda')
      for _, ddt in ipairs(ALL) do
        local label = tostring(sdt) .. ' -> ' .. tostring(ddt)
        -- integer conversions out of the target's range are C's modular ones on both sides; the
        -- float -> narrow-integer ones of out-of-range values are undefined in C: keep them out
        local ok_src = src
        -- (float16's 70000 is inf, whose integer conversion is undefined too)
        local int_dst = ddt ~= torch.bool and not (ddt == f32 or ddt == f64 or ddt == f16 or ddt == bf16)
        if int_dst and (sdt == f32 or sdt == f64 or sdt == f16 or sdt == bf16) then
          ok_src = torch.tensor({ -3.75, -1.5, 0, 0.5, 2.5, 3.999, 100.3 }, { dtype = f64 }):to(sdt)
        end
        local g = ok_src:to('cuda'):to(ddt)
        cmp(g, ok_src:to(ddt), 0, label)
        assert(tostring(g.device):find('cuda', 1, true), label .. ': the result stays on the device')
      end
      -- a strided source goes through the same kernel after the copy's gather
      cmp(srcc:reshape(1, 13):expand(2, 13):t():to(f32), src:reshape(1, 13):expand(2, 13):t():to(f32), 0,
        tostring(sdt) .. ' expanded view -> float32')
    end
  end)
  gpu_it('round float32 to float16 and bfloat16 to nearest even', function()
    -- halfway cases: 1 + 2^-11 is between two float16 neighbours; 1 + 2^-8 between bfloat16 ones
    local x = torch.tensor({ 1 + 2 ^ -11, 1 + 3 * 2 ^ -11, 1 + 2 ^ -8, 1 + 3 * 2 ^ -8 }, { dtype = f32 })
    -- float16 (ulp 2^-10 at 1): ties go to the even neighbour; the last two are exact
    cmp(x:cuda():to(f16):to(f64), torch.tensor({ 1, 1 + 2 ^ -9, 1 + 2 ^ -8, 1 + 3 * 2 ^ -8 }, { dtype = f64 }), 0,
      'to float16')
    -- bfloat16 (ulp 2^-7 at 1)
    cmp(x:cuda():to(bf16):to(f64), torch.tensor({ 1, 1, 1, 1 + 2 ^ -6 }, { dtype = f64 }), 0, 'to bfloat16')
  end)
end)

-------------------------------------------------------------------------------------------------
describe('CUDA reductions', function()
  local SHAPE = { 5, 7, 9 }
  local function each(dtypes, fn)
    for _, dt in ipairs(dtypes) do
      local x64 = rnd(SHAPE, 11, -2, 2)
      local x, xc, xt, xct = pair(x64:to(dt))
      fn(dt, x, xc, '') ; fn(dt, xt, xct, ' (transposed)')
    end
  end
  gpu_it('sum, mean, prod over all elements and over each dim, keepdim or not', function()
    each(FLOATS, function(dt, x, xc, tag)
      local tol = TOL[dt] * 4
      cmp(xc:sum(), x:sum(), tol, tostring(dt) .. ' sum' .. tag)
      cmp(xc:mean(), x:mean(), tol, tostring(dt) .. ' mean' .. tag)
      for d = 1, 3 do
        for _, k in ipairs { false, true } do
          local l = ('%s dim %d keepdim %s%s'):format(tostring(dt), d, tostring(k), tag)
          cmp(xc:sum(d, k), x:sum(d, k), tol, 'sum ' .. l)
          cmp(xc:mean(d, k), x:mean(d, k), tol, 'mean ' .. l)
          cmp((xc * 0.5):prod(d, k), (x * 0.5):prod(d, k), tol, 'prod ' .. l)
        end
      end
      cmp(xc:sum({ 1, 3 }), x:sum({ 1, 3 }), tol, tostring(dt) .. ' sum over dims {1, 3}' .. tag)
    end)
  end)
  gpu_it('integer and bool sums, products and extremes are exact', function()
    for _, dt in ipairs(H.int_dtypes) do
      local x = (rnd(SHAPE, 12, 0, 9)):to(dt)
      local xc = x:cuda()
      cmp(xc:sum(), x:sum(), 0, tostring(dt) .. ' sum')
      cmp(xc:sum(2), x:sum(2), 0, tostring(dt) .. ' sum(2)')
      cmp(xc:transpose(1, 3):prod(1), x:transpose(1, 3):prod(1), 0, tostring(dt) .. ' prod of a transpose')
      cmp(xc:amax(3), x:amax(3), 0, tostring(dt) .. ' amax')
      cmp(xc:amin(1, true), x:amin(1, true), 0, tostring(dt) .. ' amin')
      cmp(xc:argmax(2), x:argmax(2), 0, tostring(dt) .. ' argmax')
    end
    local b = rnd(SHAPE, 13) :gt(0)
    cmp(b:cuda():any(2), b:any(2), 0, 'any')
    cmp(b:cuda():all(1), b:all(1), 0, 'all')
    cmp(b:cuda():sum(), b:sum(), 0, 'bool sum')
  end)
  gpu_it('max / min (values and indices), argmax / argmin, amax / amin', function()
    each(FLOATS, function(dt, x, xc, tag)
      cmp(xc:max(), x:max(), 0, tostring(dt) .. ' max' .. tag)
      cmp(xc:min(), x:min(), 0, tostring(dt) .. ' min' .. tag)
      cmp(xc:argmax(), x:argmax(), 0, tostring(dt) .. ' argmax' .. tag)
      cmp(xc:argmin(nil, true), x:argmin(nil, true), 0, tostring(dt) .. ' argmin keepdim' .. tag)
      for d = 1, 3 do
        local v, i = xc:max(d)
        local rv, ri = x:max(d)
        cmp(v, rv, 0, tostring(dt) .. ' max values dim ' .. d .. tag)
        cmp(i, ri, 0, tostring(dt) .. ' max indices dim ' .. d .. tag)
        v, i = xc:min(d, true)
        rv, ri = x:min(d, true)
        cmp(v, rv, 0, tostring(dt) .. ' min values dim ' .. d .. tag)
        cmp(i, ri, 0, tostring(dt) .. ' min indices dim ' .. d .. tag)
        cmp(xc:amax(d), x:amax(d), 0, tostring(dt) .. ' amax dim ' .. d .. tag)
      end
    end)
  end)
  gpu_it('var / std with corrections, norms, logsumexp', function()
    each(FLOATS, function(dt, x, xc, tag)
      local tol = TOL[dt] * 4
      for _, c in ipairs { 0, 1, 2 } do
        cmp(xc:var({ correction = c }), x:var({ correction = c }), tol, tostring(dt) .. ' var c=' .. c .. tag)
        cmp(xc:std(2, true, { correction = c }), x:std(2, true, { correction = c }), tol,
          tostring(dt) .. ' std(2) c=' .. c .. tag)
      end
      for _, p in ipairs { 0, 1, 2, 3, math.huge, -math.huge } do
        cmp(xc:norm(p), x:norm(p), tol, tostring(dt) .. ' norm p=' .. p .. tag)
        cmp(xc:norm(p, 3), x:norm(p, 3), tol, tostring(dt) .. ' norm dim 3 p=' .. p .. tag)
      end
      cmp(xc:logsumexp(1), x:logsumexp(1), tol, tostring(dt) .. ' logsumexp' .. tag)
    end)
  end)
  gpu_it('large reductions split over several blocks, NaN propagation and empty reductions', function()
    local x = rnd({ 1000, 1000 }, 14)
    for _, dt in ipairs(FLOATS) do
      local xd = x:to(dt)
      local xc = xd:cuda()
      cmp(xc:sum(), xd:sum(), TOL[dt] * 10, tostring(dt) .. ' sum of 1e6')
      cmp(xc:var(), xd:var(), TOL[dt] * 10, tostring(dt) .. ' var of 1e6')
      cmp(xc:argmax(), xd:argmax(), 0, tostring(dt) .. ' argmax of 1e6')
      cmp(xc:sum(1), xd:sum(1), TOL[dt] * 10, tostring(dt) .. ' column sums of 1000 x 1000')
    end
    -- many outputs over an outer dim (a thread each): the sum over a batch, as a bias gradient's
    local wide = rnd({ 64, 20000 }, 15)
    for _, dt in ipairs(FLOATS) do
      local wd = wide:to(dt)
      cmp(wd:cuda():sum(1), wd:sum(1), TOL[dt] * 4, tostring(dt) .. ' sum over the outer dim of 64 x 20000')
      local v, i = wd:cuda():max(1)
      local rv, ri = wd:max(1)
      cmp(v, rv, 0, tostring(dt) .. ' max values over the outer dim')
      cmp(i, ri, 0, tostring(dt) .. ' max indices over the outer dim')
    end
    local n = torch.tensor({ 1, 0 / 0, 3, 0 / 0 })
    cmp(n:cuda():max(), n:max(), 0, 'max with NaN')
    cmp(n:cuda():argmax(), torch.tensor(2), 0, 'argmax is the first NaN (index 2)')
    local e = torch.ones(0, 3)
    cmp(e:cuda():sum(1), e:sum(1), 0, 'empty sum')
    cmp(e:cuda():mean(1), e:mean(1), 0, 'empty mean (NaN)')
    H.raises(function() return e:cuda():amax(1) end, 'amax', 'non-zero size')
  end)
end)

-------------------------------------------------------------------------------------------------
describe('CUDA matrix products (cuBLAS)', function()
  gpu_it('mm, bmm, addmm, mv, dot, matmul with contiguous and transposed operands', function()
    for _, dt in ipairs(FLOATS) do
      local tol = TOL[dt] * 4
      local a, ac, at, act = pair(rnd({ 6, 5 }, 21):to(dt))    -- at: 5 x 6
      local b, bc, bt, bct = pair(rnd({ 5, 4 }, 22):to(dt))    -- bt: 4 x 5
      local l = tostring(dt)
      cmp(torch.mm(ac, bc), torch.mm(a, b), tol, l .. ' mm')
      cmp(torch.mm(bct, act), torch.mm(bt, at), tol, l .. ' mm of transposes')
      cmp(torch.mm(ac, act), torch.mm(a, at), tol, l .. ' mm of a and its transpose')
      local c = rnd({ 6, 4 }, 23):to(dt)
      cmp(torch.addmm(c:cuda(), ac, bc, { beta = 0.5, alpha = 2 }), torch.addmm(c, a, b, { beta = 0.5, alpha = 2 }),
        tol, l .. ' addmm')
      local row = rnd({ 4 }, 24):to(dt)
      cmp(torch.addmm(row:cuda(), ac, bc), torch.addmm(row, a, b), tol, l .. ' addmm with a broadcast bias')
      local x, xc = rnd({ 3, 6, 5 }, 25):to(dt), nil
      xc = x:cuda()
      local y = rnd({ 3, 5, 2 }, 26):to(dt)
      cmp(torch.bmm(xc, y:cuda()), torch.bmm(x, y), tol, l .. ' bmm')
      cmp(torch.bmm(xc:transpose(2, 3):contiguous():transpose(2, 3), y:cuda()), torch.bmm(x, y), tol,
        l .. ' bmm of a column-major batch')
      local v = rnd({ 5 }, 27):to(dt)
      cmp(torch.mv(ac, v:cuda()), torch.mv(a, v), tol, l .. ' mv')
      cmp(torch.mv(act, rnd({ 6 }, 28):to(dt):cuda()), torch.mv(at, rnd({ 6 }, 28):to(dt)), tol, l .. ' mv of a transpose')
      cmp(torch.dot(v:cuda(), v:cuda()), torch.dot(v, v), tol, l .. ' dot')
      local s = rnd({ 5, 2 }, 29):to(dt) -- columns: vectors of stride 2
      cmp(torch.dot(s:cuda():select(2, 1), s:cuda():select(2, 2)), torch.dot(s:select(2, 1), s:select(2, 2)),
        tol, l .. ' dot of strided vectors')
      local m4 = rnd({ 2, 1, 6, 5 }, 30):to(dt)
      local m3 = rnd({ 3, 5, 4 }, 31):to(dt)
      cmp(torch.matmul(m4:cuda(), m3:cuda()), torch.matmul(m4, m3), tol, l .. ' matmul broadcasting batches')
      cmp(torch.matmul(v:cuda(), m3:cuda()), torch.matmul(v, m3), tol, l .. ' matmul vector @ batch')
      cmp(torch.mm(torch.ones(3, 0, { dtype = dt }):cuda(), torch.ones(0, 2, { dtype = dt }):cuda()),
        torch.zeros(3, 2, { dtype = dt }), 0, l .. ' mm with k = 0 gives zeros')
      local c0 = rnd({ 3, 2 }, 35):to(dt)
      cmp(torch.addmm(c0:cuda(), torch.ones(3, 0, { dtype = dt }):cuda(), torch.ones(0, 2, { dtype = dt }):cuda(),
        { beta = 0.5 }), c0 * 0.5, tol, l .. ' addmm with k = 0 gives beta * self')
    end
  end)
  gpu_it('linear forward and backward', function()
    for _, dt in ipairs { f32, f64 } do
      local x, w, b = rnd({ 4, 5 }, 32):to(dt), rnd({ 3, 5 }, 33):to(dt), rnd({ 3 }, 34):to(dt)
      cmp(F.linear(x:cuda(), w:cuda(), b:cuda()), F.linear(x, w, b), TOL[dt] * 4, tostring(dt) .. ' linear')
      local xg, wg = x:cuda():requires_grad_(), w:cuda():requires_grad_()
      F.linear(xg, wg):sum():backward()
      local xr, wr = x:clone():requires_grad_(), w:clone():requires_grad_()
      F.linear(xr, wr):sum():backward()
      cmp(xg.grad, xr.grad, TOL[dt] * 4, tostring(dt) .. ' linear grad x')
      cmp(wg.grad, wr.grad, TOL[dt] * 4, tostring(dt) .. ' linear grad w')
    end
  end)
  gpu_it('refuses integer products naming the op', function()
    local i64 = torch.ones(2, 2, { dtype = torch.int64 }):cuda()
    H.raises(function() return torch.mm(i64, i64) end, 'mm', 'int64')
  end)
end)

-------------------------------------------------------------------------------------------------
describe('CUDA conv2d (im2col + cuBLAS)', function()
  local cases = {
    { x = { 2, 3, 7, 6 }, w = { 4, 3, 3, 3 }, o = {} },
    { x = { 3, 4, 9, 8 }, w = { 6, 2, 3, 2 }, o = { stride = { 2, 1 }, padding = { 1, 2 }, groups = 2 } },
    { x = { 2, 2, 8, 8 }, w = { 4, 1, 3, 3 }, o = { dilation = 2, padding = 1, groups = 2 } },
    { x = { 1, 5, 4, 4 }, w = { 3, 5, 1, 1 }, o = {} },
    { x = { 3, 6, 5 }, w = { 2, 3, 2, 2 }, o = { stride = 2 } },  -- unbatched
  }
  gpu_it('forward and backward (input, weight, bias) as on the CPU, every floating dtype', function()
    for _, dt in ipairs(FLOATS) do
      local tol = TOL[dt] * 8
      for k, c in ipairs(cases) do
        local l = ('%s conv2d case %d'):format(tostring(dt), k)
        local x, w, b = rnd(c.x, 100 + k):to(dt), rnd(c.w, 110 + k):to(dt), rnd({ c.w[1] }, 120 + k):to(dt)
        local xa, wa, ba = x:cuda():requires_grad_(), w:cuda():requires_grad_(), b:cuda():requires_grad_()
        local xr, wr, br = x:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
        local ya, yr = F.conv2d(xa, wa, ba, c.o), F.conv2d(xr, wr, br, c.o)
        cmp(ya, yr, tol, l)
        local g = rnd(yr.shape, 130 + k):to(dt)
        local sa = ya * g:cuda()
        sa:sum():backward()
        local sr = yr * g
        sr:sum():backward()
        cmp(xa.grad, xr.grad, tol, l .. ' grad x')
        cmp(wa.grad, wr.grad, tol, l .. ' grad w')
        cmp(ba.grad, br.grad, tol, l .. ' grad b')
      end
      -- a non-contiguous input, no bias
      local x = rnd({ 2, 3, 6, 7 }, 140):to(dt)
      local w = rnd({ 4, 3, 3, 3 }, 141):to(dt)
      cmp(F.conv2d(x:cuda():transpose(3, 4), w:cuda()), F.conv2d(x:transpose(3, 4), w), tol,
        tostring(dt) .. ' conv2d of a transposed input')
    end
  end)
end)

-------------------------------------------------------------------------------------------------
describe('CUDA pooling', function()
  -- fn(x) -> y for each pooling, the same options on both devices
  local pools = {
    { 'max_pool2d 2x2', function(x) return F.max_pool2d(x, 2) end },
    { 'max_pool2d 3x2 stride 2 padding 1 dilation 2 ceil', function(x)
      return F.max_pool2d(x, { 3, 2 }, { stride = 2, padding = 1, dilation = { 2, 1 }, ceil_mode = true })
    end },
    { 'avg_pool2d 3 stride 2 padding 1', function(x) return F.avg_pool2d(x, 3, { stride = 2, padding = 1 }) end },
    { 'avg_pool2d without padding in the count, ceil', function(x)
      return F.avg_pool2d(x, 2, { stride = 2, padding = 1, count_include_pad = false, ceil_mode = true })
    end },
    { 'avg_pool2d divisor_override', function(x) return F.avg_pool2d(x, 2, { divisor_override = 3 }) end },
    { 'adaptive_avg_pool2d 3x2', function(x) return F.adaptive_avg_pool2d(x, { 3, 2 }) end },
  }
  gpu_it('max, average and adaptive average pooling, forward and backward, as on the CPU', function()
    for _, dt in ipairs(FLOATS) do
      local tol = TOL[dt] * 4
      local x = rnd({ 2, 3, 7, 8 }, 150):to(dt)
      for _, pl in ipairs(pools) do
        local l = tostring(dt) .. ' ' .. pl[1]
        local xa, xr = x:cuda():requires_grad_(), x:clone():requires_grad_()
        local ya, yr = pl[2](xa), pl[2](xr)
        cmp(ya, yr, tol, l)
        local g = rnd(yr.shape, 151):to(dt)
        local sa = ya * g:cuda()
        sa:sum():backward()
        local sr = yr * g
        sr:sum():backward()
        cmp(xa.grad, xr.grad, tol, l .. ' backward')
        cmp(pl[2](x:cuda():transpose(3, 4)), pl[2](x:transpose(3, 4)), tol, l .. ' of a transpose')
      end
      local _, ia = F.max_pool2d(x:cuda(), 3, { stride = 2, return_indices = true })
      local _, ir = F.max_pool2d(x, 3, { stride = 2, return_indices = true })
      cmp(ia, ir, 0, tostring(dt) .. ' max_pool2d indices')
      cmp(F.max_pool2d(x[1]:cuda(), 2), F.max_pool2d(x[1], 2), 0, tostring(dt) .. ' unbatched max_pool2d')
    end
  end)
end)

-------------------------------------------------------------------------------------------------
describe('CUDA softmax, nll_loss, layer_norm and batch_norm', function()
  gpu_it('softmax and log_softmax forward and backward along each dim', function()
    for _, dt in ipairs(FLOATS) do
      local tol = TOL[dt] * 4
      local x, xc, xt, xct = pair(rnd({ 4, 6, 5 }, 41, -4, 4):to(dt))
      for _, fn in ipairs { { 'softmax', F.softmax }, { 'log_softmax', F.log_softmax } } do
        for d = 1, 3 do
          local l = ('%s %s dim %d'):format(tostring(dt), fn[1], d)
          cmp(fn[2](xc, d), fn[2](x, d), tol, l)
          cmp(fn[2](xct, d), fn[2](xt, d), tol, l .. ' (transposed)')
          local g = rnd({ 4, 6, 5 }, 42 + d):to(dt)
          local a = xc:clone():requires_grad_()
          local ya = fn[2](a, d) * g:cuda()
          ya:sum():backward()
          local r = x:clone():requires_grad_()
          local yr = fn[2](r, d) * g
          yr:sum():backward()
          cmp(a.grad, r.grad, tol, l .. ' backward')
        end
      end
    end
  end)
  gpu_it('nll_loss forward and backward with weights, ignore_index and each reduction', function()
    for _, dt in ipairs(FLOATS) do
      local tol = TOL[dt] * 4
      local logp = F.log_softmax(rnd({ 6, 5, 3 }, 51):to(dt), 2)
      torch.manual_seed(52)
      local target = torch.randint(1, 6, { 6, 3 })
      local w = rnd({ 5 }, 53, 0.5, 2):to(dt)
      for _, red in ipairs { 'mean', 'sum', 'none' } do
        for _, o in ipairs { {}, { weight = w }, { ignore_index = 3 }, { weight = w, ignore_index = 3 } } do
          local oc = { reduction = red, ignore_index = o.ignore_index, weight = o.weight and o.weight:cuda() }
          local oref = { reduction = red, ignore_index = o.ignore_index, weight = o.weight }
          local l = ('%s %s weight %s ignore %s'):format(tostring(dt), red, tostring(o.weight ~= nil),
            tostring(o.ignore_index))
          local a = logp:cuda():requires_grad_()
          local y = F.nll_loss(a, target:cuda(), oc)
          local r = logp:clone():requires_grad_()
          local yr = F.nll_loss(r, target, oref)
          cmp(y, yr, tol, l)
          y:sum():backward()
          yr:sum():backward()
          cmp(a.grad, r.grad, tol, l .. ' backward')
        end
      end
      cmp(F.nll_loss(logp[1]:t():cuda(), target[1]:cuda()), F.nll_loss(logp[1]:t(), target[1]), tol,
        tostring(dt) .. ' non-contiguous input')
    end
  end)
  gpu_it('layer_norm forward and backward, with and without weight and bias', function()
    for _, dt in ipairs(FLOATS) do
      local tol = TOL[dt] * 8
      local x = rnd({ 6, 4, 10 }, 55, -3, 5):to(dt)
      local w, b = rnd({ 4, 10 }, 56):to(dt), rnd({ 4, 10 }, 57):to(dt)
      local g = rnd({ 6, 4, 10 }, 58):to(dt)
      for _, wb in ipairs { { w, b }, { w, nil }, { nil, nil } } do
        local l = ('%s layer_norm weight %s bias %s'):format(tostring(dt), tostring(wb[1] ~= nil), tostring(wb[2] ~= nil))
        local xa = x:cuda():requires_grad_()
        local wa = wb[1] and wb[1]:cuda():requires_grad_() or nil
        local ba = wb[2] and wb[2]:cuda():requires_grad_() or nil
        local xr = x:clone():requires_grad_()
        local wr = wb[1] and wb[1]:clone():requires_grad_() or nil
        local br = wb[2] and wb[2]:clone():requires_grad_() or nil
        local ya = F.layer_norm(xa, { 4, 10 }, wa, ba, { eps = 1e-5 })
        local yr = F.layer_norm(xr, { 4, 10 }, wr, br, { eps = 1e-5 })
        cmp(ya, yr, tol, l)
        local sa = ya * g:cuda()
        sa:sum():backward()
        local sr = yr * g
        sr:sum():backward()
        cmp(xa.grad, xr.grad, tol, l .. ' grad x')
        if wa then cmp(wa.grad, wr.grad, tol, l .. ' grad w') end
        if ba then cmp(ba.grad, br.grad, tol, l .. ' grad b') end
      end
      cmp(F.layer_norm(x:cuda():transpose(1, 2), { 6, 10 }), F.layer_norm(x:transpose(1, 2), { 6, 10 }), tol,
        tostring(dt) .. ' layer_norm of a transpose')
    end
  end)
  gpu_it('batch_norm in training (running statistics updated) and evaluation, forward and backward', function()
    for _, dt in ipairs(FLOATS) do
      local tol = TOL[dt] * 8
      for _, shape in ipairs { { 8, 3, 5, 4 }, { 16, 5 } } do
        local C = shape[2]
        local x = rnd(shape, 160, -2, 4):to(dt)
        local w, b = rnd({ C }, 161):to(dt), rnd({ C }, 162):to(dt)
        local g = rnd(shape, 163):to(dt)
        for _, training in ipairs { true, false } do
          local l = ('%s batch_norm %s %s'):format(tostring(dt), table.concat(shape, 'x'),
            training and 'training' or 'evaluation')
          local rm, rv = rnd({ C }, 164, -1, 1), rnd({ C }, 165, 0.5, 2) -- float64 running statistics
          local rmc, rvc = rm:cuda(), rv:cuda()
          local xa, wa, ba = x:cuda():requires_grad_(), w:cuda():requires_grad_(), b:cuda():requires_grad_()
          local xr, wr, br = x:clone():requires_grad_(), w:clone():requires_grad_(), b:clone():requires_grad_()
          local ya = F.batch_norm(xa, rmc, rvc, wa, ba, { training = training, momentum = 0.2 })
          local yr = F.batch_norm(xr, rm, rv, wr, br, { training = training, momentum = 0.2 })
          cmp(ya, yr, tol, l)
          cmp(rmc, rm, 1e-12, l .. ' running_mean')
          cmp(rvc, rv, 1e-12 + (dt == f64 and 0 or TOL[dt]), l .. ' running_var')
          local sa = ya * g:cuda()
          sa:sum():backward()
          local sr = yr * g
          sr:sum():backward()
          cmp(xa.grad, xr.grad, tol, l .. ' grad x')
          cmp(wa.grad, wr.grad, tol, l .. ' grad w')
          cmp(ba.grad, br.grad, tol, l .. ' grad b')
        end
      end
    end
    -- float32 running statistics, no affine parameters, a non-contiguous input
    local x = rnd({ 4, 3, 6 }, 166):to(f32)
    local rm, rv = torch.zeros(3), torch.ones(3)
    local rmc, rvc = rm:cuda(), rv:cuda()
    cmp(F.batch_norm(x:cuda():transpose(1, 3):transpose(1, 3), rmc, rvc, nil, nil, { training = true }),
      F.batch_norm(x, rm, rv, nil, nil, { training = true }), TOL[f32] * 8, 'batch_norm without affine')
    cmp(rmc, rm, 1e-6, 'float32 running_mean')
    cmp(rvc, rv, 1e-6, 'float32 running_var')
  end)
  gpu_it('nll_loss refuses a target out of range, naming it', function()
    H.raises(function() return F.nll_loss(torch.zeros(2, 3):cuda(), torch.tensor({ 1, 4 }):cuda()) end,
      'nll_loss', 'target 4 is out of bounds')
    H.raises(function() return F.nll_loss(torch.zeros(2, 3):cuda(), torch.tensor({ 0, 1 }):cuda()) end,
      'target 0 is out of bounds')
  end)
end)

-------------------------------------------------------------------------------------------------
describe('CUDA fused optimizer steps', function()
  local C = torch._optim
  local function state_dt(dt) return (dt == f16 or dt == bf16) and f32 or dt end
  gpu_it('sgd_step (momentum, nesterov, weight decay, maximize) as on the CPU', function()
    local cases = {
      { 0, 0, 0, false, false }, { 0.9, 0, 0, false, false }, { 0.9, 0, 0.01, true, false },
      { 0.8, 0.1, 0.02, false, true },
    }
    for _, dt in ipairs(FLOATS) do
      for k, c in ipairs(cases) do
        local p, g = rnd({ 37 }, 60 + k):to(dt), rnd({ 37 }, 70 + k):to(dt)
        local pc, gc = p:cuda(), g:cuda()
        local buf = c[1] ~= 0 and torch.zeros(37, { dtype = state_dt(dt) }) or nil
        local bufc = buf and buf:cuda() or nil
        for step = 1, 3 do
          C.sgd_step(p, g, buf, step == 1, 0.1, c[1], c[2], c[3], c[4], c[5])
          C.sgd_step(pc, gc, bufc, step == 1, 0.1, c[1], c[2], c[3], c[4], c[5])
        end
        cmp(pc, p, TOL[dt], tostring(dt) .. ' sgd case ' .. k)
        if buf then cmp(bufc, buf, TOL[dt], tostring(dt) .. ' sgd buffer case ' .. k) end
      end
    end
  end)
  gpu_it('adam_step (Adam, AdamW, amsgrad, maximize) as on the CPU', function()
    local cases = { { 0, false, false, false }, { 0.01, false, true, false }, { 0.01, true, false, true },
      { 0.1, true, true, false } }
    for _, dt in ipairs(FLOATS) do
      for k, c in ipairs(cases) do
        local p, g = rnd({ 41 }, 80 + k):to(dt), rnd({ 41 }, 90 + k):to(dt)
        local sd = state_dt(dt)
        local m, v = torch.zeros(41, { dtype = sd }), torch.zeros(41, { dtype = sd })
        local vm = c[3] and torch.zeros(41, { dtype = sd }) or nil
        local pc, gc, mc, vc, vmc = p:cuda(), g:cuda(), m:cuda(), v:cuda(), vm and vm:cuda() or nil
        for step = 1, 3 do
          C.adam_step(p, g, m, v, vm, step, 1e-2, 0.9, 0.999, 1e-8, c[1], c[2], c[4])
          C.adam_step(pc, gc, mc, vc, vmc, step, 1e-2, 0.9, 0.999, 1e-8, c[1], c[2], c[4])
        end
        cmp(pc, p, TOL[dt], tostring(dt) .. ' adam case ' .. k)
        cmp(mc, m, TOL[dt], tostring(dt) .. ' exp_avg case ' .. k)
        cmp(vc, v, TOL[dt], tostring(dt) .. ' exp_avg_sq case ' .. k)
      end
    end
  end)
  gpu_it('refuses state on another device', function()
    local p = torch.ones(3):cuda()
    H.raises(function() C.sgd_step(p, torch.ones(3), nil, false, 0.1, 0, 0, 0, false, false) end,
      'sgd', "parameter's device")
  end)
end)

describe('CUDA random draws and indexing (through the host)', function()
  gpu_it('draws with the device generator: seeded, repeatable, the same as the host draws of that seed', function()
    torch.cuda.manual_seed(5)
    local a = torch.randn(1000, { device = 'cuda' })
    torch.cuda.manual_seed(5)
    local b = torch.randn(1000, { device = 'cuda' })
    assert.are.equal(0, (a - b):abs():max():item())
    -- the device generator is the CPU generator's code seeded with the device's seed
    torch.manual_seed(5)
    cmp(a, torch.randn(1000), 0, 'randn on cuda vs the host generator seeded alike')
    torch.cuda.manual_seed(9)
    local p = torch.randperm(50, { device = 'cuda' })
    assert.are.equal('cuda:0', tostring(p.device))
    local vals = p:cpu():totable()
    table.sort(vals)
    assert.are.equal(50, #vals)
    for i = 2, #vals do assert.are.equal(vals[i - 1] + 1, vals[i]) end
    local d = F.dropout(torch.ones(10000, { device = 'cuda' }), 0.5, true)
    local kept = d:ne(0):sum():item()
    assert.is_true(kept > 4500 and kept < 5500)
  end)
  gpu_it('index_select, gather, masked ops, scatter_add, index_add_, nonzero as on the CPU', function()
    local x = rnd({ 6, 5 }, 301)
    local xc = x:cuda()
    local idx = torch.tensor({ 3, 1, 6 })
    cmp(xc:index_select(1, idx:cuda()), x:index_select(1, idx), 0, 'index_select')
    local gi = torch.tensor({ { 1, 2 }, { 5, 3 }, { 2, 2 }, { 4, 1 }, { 3, 5 }, { 1, 1 } })
    cmp(xc:gather(2, gi:cuda()), x:gather(2, gi), 0, 'gather')
    local m = x:gt(0)
    cmp(xc:masked_select(m:cuda()), x:masked_select(m), 0, 'masked_select')
    cmp(xc:masked_fill(m:cuda(), 7), x:masked_fill(m, 7), 0, 'masked_fill')
    local z = torch.zeros(6, 5, { dtype = torch.float64 })
    cmp(z:cuda():scatter_add(2, gi:cuda(), xc:narrow(2, 1, 2)), z:scatter_add(2, gi, x:narrow(2, 1, 2)), 1e-12,
      'scatter_add')
    local y, yc = torch.zeros(6, 5, { dtype = torch.float64 }), torch.zeros(6, 5, { dtype = torch.float64 }):cuda()
    y:index_add_(1, idx, x:narrow(1, 1, 3))
    yc:index_add_(1, idx:cuda(), xc:narrow(1, 1, 3))
    cmp(yc, y, 1e-12, 'index_add_')
    cmp(m:cuda():nonzero(), m:nonzero(), 0, 'nonzero')
    -- an embedding lookup and its gradient on the device
    local w = rnd({ 10, 4 }, 302):requires_grad_(true)
    local wc = w:detach():cuda():requires_grad_(true)
    local ids = torch.tensor({ 2, 7, 2, 10 })
    F.embedding(ids, w):sum():backward()
    F.embedding(ids:cuda(), wc):sum():backward()
    cmp(wc.grad, w.grad, 0, 'embedding backward')
  end)

  gpu_it('sort, argsort and topk as on the CPU, with gradients', function()
    local x = rnd({ 7, 9 }, 303):round() -- ties
    local xc = x:cuda()
    for _, d in ipairs { 1, 2 } do
      for _, desc in ipairs { false, true } do
        local v, i = x:sort(d, desc)
        local vc, ic = xc:sort(d, desc)
        assert.are.equal('cuda:0', tostring(ic.device))
        cmp(vc, v, 0, 'sort values')
        cmp(ic, i, 0, 'sort indices')
        cmp(xc:t():argsort(d, desc), x:t():argsort(d, desc), 0, 'argsort transposed')
      end
    end
    local w = x:clone():requires_grad_(true)
    local wc = xc:clone():requires_grad_(true)
    local tv = w:topk(3, 2)
    local tvc = wc:topk(3, 2)
    cmp(tvc, tv, 0, 'topk')
    tv:sum():backward()
    tvc:sum():backward()
    cmp(wc.grad, w.grad, 0, 'topk backward')
  end)

  gpu_it('LSTM and GRU forward and backward as on the CPU', function()
    for _, cls in ipairs { torch.nn.LSTM, torch.nn.GRU } do
      torch.manual_seed(305)
      local m = cls(3, 4, { num_layers = 2, bidirectional = true, dtype = torch.float64 })
      local x = rnd({ 5, 2, 3 }, 306):requires_grad_(true)
      local out = m(x)
      out:sum():backward()
      local gw, gx = m.weight_hh_l0.grad:clone(), x.grad:clone()
      m:zero_grad()
      m:cuda()
      local xc = x:detach():cuda():requires_grad_(true)
      local outc = m(xc)
      outc:sum():backward()
      cmp(outc, out, 1e-12, tostring(cls) .. ' output')
      cmp(xc.grad, gx, 1e-12, tostring(cls) .. ' input gradient')
      cmp(m.weight_hh_l0.grad, gw, 1e-12, tostring(cls) .. ' weight gradient')
    end
  end)

  gpu_it('the fused LSTM cell, forward, backward and under create_graph, as on the CPU', function()
    for _, dt in ipairs { f32, f64 } do
      local g, c = rnd({ 5, 24 }, 330, -3, 3):to(dt), rnd({ 5, 6 }, 331):to(dt)
      local u = rnd({ 5, 6 }, 332):to(dt)
      local function run(dev, create)
        local a, b = g:to(dev):requires_grad_(), c:to(dev):requires_grad_()
        local h, c2 = torch._nn.lstm_cell(a, b)
        local loss = (h * u:to(dev)):sum() + (c2 * c2):sum()
        local ga, gb = table.unpack(torch.autograd.grad({ loss }, { a, b }, { create_graph = create }))
        return h, c2, ga, gb
      end
      for _, create in ipairs { false, true } do
        local h1, c21, ga1, gb1 = run('cpu', create)
        local h2, c22, ga2, gb2 = run('cuda', create)
        assert.are.equal('cuda', ga2.device.type)
        local tol, what = TOL[dt], tostring(dt) .. (create and ' create_graph' or '')
        cmp(h2:detach(), h1:detach(), tol, 'h ' .. what)
        cmp(c22:detach(), c21:detach(), tol, 'c2 ' .. what)
        cmp(ga2:detach(), ga1:detach(), tol, 'dg ' .. what)
        cmp(gb2:detach(), gb1:detach(), tol, 'dc ' .. what)
      end
    end
  end)

  gpu_it('a Transformer encoder forward and backward as on the CPU', function()
    torch.manual_seed(307)
    local enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2,
      { dim_feedforward = 16, dropout = 0, dtype = torch.float64 }), 2)
    local x = rnd({ 5, 3, 8 }, 308):requires_grad_(true)
    local pad = torch.tensor({ { false, false, false, true, true }, { false, false, false, false, false },
      { false, true, true, true, true } })
    -- a weighted sum: the plain sum of a layer-normalised output does not depend on x (its gradient is 0)
    local gy = rnd({ 5, 3, 8 }, 309)
    local loss = (enc(x, { src_key_padding_mask = pad }) * gy):sum()
    loss:backward()
    local gx, gw = x.grad:clone(), enc.layers[2].self_attn.in_proj_weight.grad:clone()
    enc:zero_grad()
    enc:cuda()
    local xc = x:detach():cuda():requires_grad_(true)
    local lossc = (enc(xc, { src_key_padding_mask = pad:cuda() }) * gy:cuda()):sum()
    lossc:backward()
    cmp(xc.grad, gx, 1e-10, 'encoder input gradient')
    cmp(enc.layers[2].self_attn.in_proj_weight.grad, gw, 1e-10, 'encoder weight gradient')
  end)

  gpu_it('nn.Transformer (kdim/vdim attention, bias_kv, zero_attn) and einsum forward and backward as on the CPU', function()
    torch.manual_seed(312)
    local t = torch.nn.Transformer(8, 2, { num_encoder_layers = 1, num_decoder_layers = 2, dim_feedforward = 16, dropout = 0,
      dtype = torch.float64 })
    local src, tgt = rnd({ 5, 3, 8 }, 313):requires_grad_(true), rnd({ 4, 3, 8 }, 314)
    local mask = torch.nn.Transformer.generate_square_subsequent_mask(4, { dtype = torch.float64 })
    local gy = rnd({ 4, 3, 8 }, 315)
    ;(t(src, tgt, { tgt_mask = mask }) * gy):sum():backward()
    local gs, gw = src.grad:clone(), t.decoder.layers[2].multihead_attn.in_proj_weight.grad:clone()
    t:zero_grad()
    t:cuda()
    local sc = src:detach():cuda():requires_grad_(true)
    ;(t(sc, tgt:cuda(), { tgt_mask = mask:cuda() }) * gy:cuda()):sum():backward()
    cmp(sc.grad, gs, 1e-10, 'Transformer source gradient')
    cmp(t.decoder.layers[2].multihead_attn.in_proj_weight.grad, gw, 1e-10, 'Transformer weight gradient')
    local m = torch.nn.MultiheadAttention(6, 2, { kdim = 4, vdim = 3, add_bias_kv = true, add_zero_attn = true,
      dtype = torch.float64 })
    local q, k, v = rnd({ 3, 2, 6 }, 316), rnd({ 5, 2, 4 }, 317), rnd({ 5, 2, 3 }, 318)
    local out, w = m(q, k, v)
    m:cuda()
    local outc, wc = m(q:cuda(), k:cuda(), v:cuda())
    cmp(outc, out, 1e-12, 'attention with kdim/vdim')
    cmp(wc, w, 1e-12, 'attention weights with kdim/vdim')
    local a, b = rnd({ 2, 3, 4 }, 319):requires_grad_(true), rnd({ 3, 4, 4 }, 320)
    local e = torch.einsum('bij,kjj->bik', a, b)
    e:sum():backward()
    local ac = a:detach():cuda():requires_grad_(true)
    local ec = torch.einsum('bij,kjj->bik', ac, b:cuda())
    ec:sum():backward()
    cmp(ec, e, 1e-12, 'einsum')
    cmp(ac.grad, a.grad, 1e-12, 'einsum gradient')
  end)

  gpu_it('flip, roll, tril, triu, pad, one_hot and normalize as on the CPU', function()
    local x = rnd({ 3, 4, 5 }, 304)
    local xc = x:cuda()
    cmp(xc:flip({ 1, 3 }), x:flip({ 1, 3 }), 0, 'flip')
    cmp(xc:roll({ 2, -1 }, { 2, 3 }), x:roll({ 2, -1 }, { 2, 3 }), 0, 'roll')
    cmp(xc:tril(1), x:tril(1), 0, 'tril')
    cmp(xc:triu(-1), x:triu(-1), 0, 'triu')
    for _, mode in ipairs { 'constant', 'reflect', 'replicate', 'circular' } do
      cmp(F.pad(xc, { 2, 1, 1, 2 }, mode), F.pad(x, { 2, 1, 1, 2 }, mode), 0, 'pad ' .. mode)
    end
    local t = torch.tensor({ { 1, 4 }, { 3, 3 } })
    cmp(F.one_hot(t:cuda(), 5), F.one_hot(t, 5), 0, 'one_hot')
    cmp(F.normalize(xc), F.normalize(x), 1e-12, 'normalize')
    local img, w = rnd({ 2, 4, 5, 6 }, 310), rnd({ 4, 3, 3, 3 }, 311)
    local ct = { stride = 2, padding = 1, output_padding = 1, groups = 2, dilation = 1 }
    cmp(F.conv_transpose2d(img:cuda(), w:cuda(), nil, ct), F.conv_transpose2d(img, w, nil, ct), 1e-12, 'conv_transpose2d')
    local up = { size = { 9, 7 }, mode = 'bilinear' }
    cmp(F.interpolate(img:cuda(), up), F.interpolate(img, up), 1e-12, 'interpolate bilinear')
  end)

  -- the Lua-side features of the last sessions on CUDA tensors: PyTorch's advanced indexing (index
  -- tensors, bool masks, steps, '...', newaxis; reads, writes, gradients), second derivatives
  -- (create_graph) and tensor hooks, each against the same on the CPU
  gpu_it('advanced indexing, double backward and tensor hooks as on the CPU', function()
    local x = rnd({ 4, 5, 6 }, 320)
    local xc = x:cuda()
    local rows, mask = torch.tensor({ 3, 1, 3 }), x:select(3, 1):gt(0)
    local keys = {
      { rows }, { {}, rows }, { mask }, { '...', 2 }, { { 1, -1, 2 }, torch.newaxis, { 2, 5, 2 } },
      { rows, {}, torch.tensor({ 1, 6, 2 }) }, { 2, mask:select(1, 2) },
    }
    for i, k in ipairs(keys) do
      local kc = {}
      for j, v in ipairs(k) do kc[j] = torch.is_tensor(v) and v:cuda() or v end
      local got = xc[kc]
      assert.are.equal('cuda', got.device.type, 'key ' .. i)
      cmp(got, x[k], 0, 'read key ' .. i)
      cmp(xc[k], x[k], 0, 'read key ' .. i .. ' with CPU index tensors')
      local w, wc = x:clone(), xc:clone()
      w[k] = 7.5
      wc[kc] = 7.5
      cmp(wc, w, 0, 'write key ' .. i)
      local l, lc = x:clone():requires_grad_(), xc:clone():requires_grad_()
      local s, sc = l[k], lc[kc]
      s:pow(2):sum():backward()
      sc:pow(2):sum():backward()
      cmp(lc.grad, l.grad, 1e-12, 'gradient of key ' .. i)
    end
    -- d/dx of the sum of the gradient of sum(tanh(x W)^2): a second derivative through matmul and tanh
    local wt = rnd({ 6, 3 }, 321)
    local function second(dev)
      local a = x:to(dev):requires_grad_()
      local y = torch.tanh(a:matmul(wt:to(dev))):pow(2):sum()
      local g = torch.autograd.grad({ y }, { a }, { create_graph = true })[1]
      local gg = torch.autograd.grad({ (g * g):sum() }, { a })[1]
      return g:detach(), gg
    end
    local g1, gg1 = second('cpu')
    local g2, gg2 = second('cuda')
    assert.are.equal('cuda', gg2.device.type)
    cmp(g2, g1, 1e-12, 'first derivative')
    cmp(gg2, gg1, 1e-12, 'second derivative')
    local seen = {}
    local h = xc:clone():requires_grad_()
    h:register_hook(function(grad) seen[#seen + 1] = grad.device.type; return grad * 2 end)
    h:mul(3):sum():backward()
    assert.are.same({ 'cuda' }, seen)
    cmp(h.grad, torch.full({ 4, 5, 6 }, 6.0, { dtype = f64 }), 0, 'a hook doubling the gradient')
  end)
end)
