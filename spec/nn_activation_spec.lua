-- The activations beyond ReLU/GELU/Tanh/Sigmoid: silu, mish, softplus, hardswish, hardsigmoid,
-- logsigmoid, selu, softsign, tanhshrink, relu6, exp2 and frac (C kernels from the op table) and
-- leaky_relu, elu, celu, softplus with beta/threshold, hardtanh, threshold, prelu, glu and softmin
-- (composed), as functions, tensor methods and modules. Values against the formulas written here in
-- plain Lua (float64), on every floating dtype and on non-contiguous inputs; gradients by finite
-- differences; options, reprs and errors. PyTorch's own values are in nn_parity_spec.lua.
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional
local nn = torch.nn

local SCALE, ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
local function sigmoid(v) return 1 / (1 + math.exp(-v)) end
local function softplus(v) return v > 20 and v or math.log(1 + math.exp(v)) end
local function tanh(v) return (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1) end

-- each op's value at v, as PyTorch defines it
local REF = {
  silu = function(v) return v * sigmoid(v) end,
  mish = function(v) return v * tanh(softplus(v)) end,
  softplus = softplus,
  hardswish = function(v) return v <= -3 and 0 or v >= 3 and v or v * (v + 3) / 6 end,
  hardsigmoid = function(v) return v <= -3 and 0 or v >= 3 and 1 or v / 6 + 0.5 end,
  logsigmoid = function(v) return math.min(v, 0) - math.log(1 + math.exp(-math.abs(v))) end,
  selu = function(v) return v > 0 and SCALE * v or SCALE * ALPHA * (math.exp(v) - 1) end,
  softsign = function(v) return v / (1 + math.abs(v)) end,
  tanhshrink = function(v) return v - tanh(v) end,
  relu6 = function(v) return math.min(math.max(v, 0), 6) end,
  exp2 = function(v) return 2 ^ v end,
  frac = function(v) return v - (v < 0 and math.ceil(v) or math.floor(v)) end,
}
local OPS = { 'silu', 'mish', 'softplus', 'hardswish', 'hardsigmoid', 'logsigmoid', 'selu', 'softsign', 'tanhshrink',
  'relu6', 'exp2', 'frac' }

-- points across the kinks and thresholds (none exactly on one: finite differences need smoothness)
local POINTS = { -35.5, -21.3, -6.2, -3.1, -2.9, -1.7, -0.45, -0.05, 0.05, 0.6, 1.3, 2.95, 3.05, 5.9, 6.1,
  19.7, 20.4, 27.25 }

local function values(x) return H.flatten(x:double():totable()) end

local function check_values(got, want_fn, xs, tol, what)
  local g = values(got)
  for i, v in ipairs(xs) do
    local w = want_fn(v)
    local scale = math.max(1, math.abs(w))
    assert(math.abs(g[i] - w) <= tol * scale,
      string.format('%s at %g: %.17g, want %.17g', what, v, g[i], w))
  end
end

describe('activation kernels', function()
  for _, op in ipairs(OPS) do
    it(op .. ': values on every floating dtype, contiguous and transposed; method, in-place and torch.* forms', function()
      local xs = POINTS
      if op == 'exp2' then xs = { -20.5, -3.3, -0.7, 0.1, 2.6, 9.9, 15.2 } end -- below float16's overflow
      for _, dt in ipairs(H.float_dtypes) do
        -- the inputs as the dtype holds them, so the reference sees what the kernel sees
        local x = torch.tensor(xs, { dtype = torch.float64 }):to(dt)
        local held = values(x)
        local tol = dt == torch.float64 and 1e-13 or (dt == torch.float32 and 4e-6 or 4 * H.tol(dt))
        check_values(x[op](x), REF[op], held, tol, op .. ' ' .. tostring(dt))
        assert.are.equal(dt, x[op](x).dtype)
        -- a transposed 2-D view
        local m = torch.tensor({ held, held }, { dtype = dt }):t()
        assert.is_false(m:is_contiguous())
        local y = m[op](m)
        for j = 1, 2 do check_values(y:select(2, j), REF[op], held, tol, op .. ' transposed ' .. tostring(dt)) end
        -- torch.op(x) and x:op_()
        check_values(torch[op](x), REF[op], held, tol, 'torch.' .. op)
        local c = x:clone()
        assert.are.equal(c, c[op .. '_'](c))
        check_values(c, REF[op], held, tol, op .. '_')
      end
    end)
  end

  it('keep NaN as NaN', function()
    for _, op in ipairs(OPS) do
      local y = torch.tensor({ 0 / 0 })[op](torch.tensor({ 0 / 0 }))
      assert.is_true(y:isnan():all():item(), op)
    end
  end)

  it('take integer inputs as float32, except relu6, which stays integer, and frac, which refuses them, as PyTorch', function()
    local i = torch.tensor({ -4, 2, 9 })
    for _, op in ipairs(OPS) do
      if op == 'frac' then
        H.raises(function() return i:frac() end, 'frac', 'int64')
      elseif op == 'relu6' then
        local y = i:relu6()
        assert.are.equal(torch.int64, y.dtype)
        H.assert_values(y, { 0, 2, 6 }, 0)
      else
        local y = i[op](i)
        assert.are.equal(torch.float32, y.dtype, op)
        check_values(y, REF[op], { -4, 2, 9 }, 1e-5, op .. ' of int64')
      end
    end
  end)

  it('have the derivatives of their formulas (finite differences, float64, non-contiguous)', function()
    for _, op in ipairs(OPS) do
      local x = torch.tensor({ POINTS, POINTS }, { dtype = torch.float64 }):t():requires_grad_()
      if op == 'exp2' then x = (x / 4):detach():requires_grad_() end
      assert.is_true(torch.autograd.gradcheck(function(a) return a[op](a) end, { x }), op)
    end
  end)

  it('match known values', function()
    local one = torch.tensor({ 1 }, { dtype = torch.float64 })
    H.close(one:silu():item(), 0.7310585786300049, 1e-15, 'silu(1)')
    H.close(one:mish():item(), 0.8650983882673103, 1e-15, 'mish(1)')
    H.close(one:softplus():item(), 1.3132616875182228, 1e-15, 'softplus(1)')
    H.close((-one):logsigmoid():item(), -1.3132616875182228, 1e-15, 'logsigmoid(-1)')
    H.close(one:selu():item(), 1.0507009873554805, 1e-15, 'selu(1)')
    H.close(one:hardswish():item(), 2 / 3, 1e-15, 'hardswish(1)')
    -- far in the tails: no overflow, no cancellation to 0
    local big = torch.tensor({ -800, 800 }, { dtype = torch.float64 })
    H.assert_values(big:logsigmoid(), { -800, 0 }, 1e-15)
    H.assert_values(big:softplus(), { 0, 800 }, 1e-15)
    H.assert_values(big:silu(), { 0, 800 }, 1e-15)
  end)
end)

describe('composed activations', function()
  local xs = { -3.7, -1.2, -0.3, 0.2, 0.8, 1.9, 4.4 }
  local function x64() return torch.tensor(xs, { dtype = torch.float64 }) end

  it('leaky_relu, elu, celu, softplus, hardtanh and threshold give their formulas, with positional and table options', function()
    local x = x64()
    local lr = function(s) return function(v) return v > 0 and v or s * v end end
    check_values(F.leaky_relu(x), lr(0.01), xs, 1e-15, 'leaky_relu')
    check_values(F.leaky_relu(x, 0.2), lr(0.2), xs, 1e-15, 'leaky_relu 0.2')
    check_values(F.leaky_relu(x, { negative_slope = 0.3 }), lr(0.3), xs, 1e-15, 'leaky_relu {0.3}')
    local elu = function(a) return function(v) return v > 0 and v or a * (math.exp(v) - 1) end end
    check_values(F.elu(x), elu(1), xs, 1e-15, 'elu')
    check_values(F.elu(x, 0.5), elu(0.5), xs, 1e-15, 'elu 0.5')
    local celu = function(a) return function(v) return math.max(0, v) + math.min(0, a * (math.exp(v / a) - 1)) end end
    check_values(F.celu(x, { alpha = 2 }), celu(2), xs, 1e-15, 'celu 2')
    local sp = function(b, t) return function(v) return b * v > t and v or math.log(1 + math.exp(b * v)) / b end end
    check_values(F.softplus(x, 2, 1), sp(2, 1), xs, 1e-15, 'softplus 2 1')
    check_values(F.softplus(x, { beta = 0.5 }), sp(0.5, 20), xs, 1e-15, 'softplus beta 0.5')
    check_values(F.hardtanh(x), function(v) return math.min(math.max(v, -1), 1) end, xs, 0, 'hardtanh')
    check_values(F.hardtanh(x, { min_val = 0, max_val = 2 }), function(v) return math.min(math.max(v, 0), 2) end, xs, 0,
      'hardtanh 0 2')
    check_values(F.threshold(x, 0.5, -7), function(v) return v > 0.5 and v or -7 end, xs, 0, 'threshold')
  end)

  it('prelu, glu and softmin give their formulas', function()
    local x = torch.tensor({ { { -1, 2 }, { 3, -4 } }, { { -5, 6 }, { -7, 8 } } }, { dtype = torch.float64 })
    local w = torch.tensor({ 0.1, 0.5 }, { dtype = torch.float64 })
    H.assert_values(F.prelu(x, w), { { { -0.1, 2 }, { 3, -2 } }, { { -0.5, 6 }, { -3.5, 8 } } }, 1e-15)
    H.assert_values(F.prelu(x, torch.tensor({ 0.25 }, { dtype = torch.float64 })),
      { { { -0.25, 2 }, { 3, -1 } }, { { -1.25, 6 }, { -1.75, 8 } } }, 1e-15)
    local g = torch.tensor({ { 1, 2, 3, 4 } }, { dtype = torch.float64 })
    H.assert_values(F.glu(g), { { 1 * sigmoid(3), 2 * sigmoid(4) } }, 1e-15)
    H.assert_values(F.glu(g:t(), 1), { { 1 * sigmoid(3) }, { 2 * sigmoid(4) } }, 1e-15)
    local sm = F.softmin(torch.tensor({ 1, 2, 3 }, { dtype = torch.float64 }), 1)
    local z = math.exp(-1) + math.exp(-2) + math.exp(-3)
    H.assert_values(sm, { math.exp(-1) / z, math.exp(-2) / z, math.exp(-3) / z }, 1e-15)
  end)

  it('in place: the input holds the result and is returned', function()
    for _, f in ipairs {
      function(t) return F.leaky_relu(t, 0.1, true) end, function(t) return F.elu(t, { inplace = true }) end,
      function(t) return F.hardtanh(t, -1, 1, true) end, function(t) return F.silu(t, { inplace = true }) end,
      function(t) return F.relu6(t, true) end, function(t) return F.threshold(t, 0, 1, true) end } do
      local t = x64()
      local want = values(f(x64():clone()))
      assert.are.equal(t, f(t))
      H.assert_values(t, want, 0)
    end
  end)

  it('have the right gradients (finite differences, non-contiguous inputs and weights)', function()
    local base = torch.tensor({ xs, xs }, { dtype = torch.float64 })
    local x = base:t():requires_grad_()
    local cases = {
      function(a) return F.leaky_relu(a, 0.2) end, function(a) return F.elu(a, 0.7) end,
      function(a) return F.celu(a, 1.5) end, function(a) return F.softplus(a, 2, 3) end,
      function(a) return F.hardtanh(a, -0.5, 1) end, function(a) return F.threshold(a, 0.5, 2) end,
      function(a) return F.glu(a, 2) end, function(a) return F.softmin(a, 1) end,
    }
    for i, f in ipairs(cases) do assert.is_true(torch.autograd.gradcheck(f, { x }), 'case ' .. i) end
    -- prelu: the input and the per-channel weight
    local inp = torch.tensor({ { -1.5, 0.7, -0.2 }, { 2.1, -3.3, 0.4 } }, { dtype = torch.float64 }):requires_grad_()
    local w = torch.tensor({ 0.2, 0.6, -0.1 }, { dtype = torch.float64 }):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(F.prelu, { inp, w }))
  end)

  -- leaky_relu, elu and celu of floating tensors are one kernel each (and expm1 a vectorised one):
  -- values and gradients against the formulas in float64 on every floating dtype, transposed
  -- inputs, the infinities, NaN and -0
  local function expm1(v)
    if math.abs(v) < 1e-5 then return v + v * v / 2 + v * v * v / 6 end
    return math.exp(v) - 1
  end
  local KERNELS = {
    { 'leaky_relu', function(t) return F.leaky_relu(t, 0.2) end, function(v) return v > 0 and v or 0.2 * v end,
      function(v) return v > 0 and 1 or 0.2 end },
    { 'elu', function(t) return F.elu(t, 0.7) end, function(v) return v > 0 and v or 0.7 * expm1(v) end,
      function(v) return v > 0 and 1 or 0.7 * math.exp(v) end },
    { 'celu', function(t) return F.celu(t, 1.5) end, function(v) return v > 0 and v or 1.5 * expm1(v / 1.5) end,
      function(v) return v > 0 and 1 or math.exp(v / 1.5) end },
    { 'expm1', function(t) return t:expm1() end, expm1 },
  }
  local PTS = { -120, -35.5, -17.1, -6.2, -0.45, -0.3, -1e-7, 0, 1e-7, 0.3, 0.35, 0.36, 5.9, 17.3, 19.7, 70.5 }

  local function same(got, want, tol)
    if want ~= want then return got ~= got end
    if want == math.huge or want == -math.huge then return got == want end
    return math.abs(got - want) <= tol * math.max(math.abs(want), 1e-30)
  end

  it('leaky_relu, elu, celu and expm1: values on every floating dtype, contiguous and transposed, as the formulas', function()
    for _, k in ipairs(KERNELS) do
      local name, f, ref = k[1], k[2], k[3]
      for _, dt in ipairs(H.float_dtypes) do
        local pts = {}
        for _, v in ipairs(PTS) do
          -- float16 and bfloat16: no overflow, no subnormal results
          if dt == torch.float64 or dt == torch.float32 or (math.abs(v) < 11 and math.abs(v) ~= 1e-7) then
            pts[#pts + 1] = v
          end
        end
        local x = torch.tensor(pts, { dtype = torch.float64 }):to(dt)
        local held = values(x)
        local tol = dt == torch.float64 and 1e-14 or dt == torch.float32 and 2.4e-7 or 2 * H.tol(dt)
        local function check(y, what)
          assert.are.equal(dt, y.dtype, what)
          local got = values(y)
          for i, v in ipairs(held) do
            assert(same(got[i], ref(v), tol), string.format('%s %s at %.9g: %.17g, want %.17g', what, tostring(dt), v,
              got[i], ref(v)))
          end
        end
        check(f(x), name)
        local m = torch.tensor({ held, held }, { dtype = dt }):t()
        assert.is_false(m:is_contiguous())
        local y = f(m)
        for j = 1, 2 do check(y:select(2, j), name .. ' transposed') end
        -- the infinities, NaN and -0 (whose sign each keeps)
        local s = values(f(torch.tensor({ 1 / 0, -1 / 0, 0 / 0, -0.0 }, { dtype = dt })))
        assert.are.equal(1 / 0, s[1], name .. '(inf)')
        assert(same(s[2], ref(-1 / 0), tol), name .. '(-inf): ' .. s[2])
        assert.is_true(s[3] ~= s[3], name .. '(nan)')
        assert.are.equal(-1 / 0, 1 / s[4], name .. '(-0) is -0')
      end
    end
  end)

  -- (expm1's gradient is g (y + 1), PyTorch's formula, which cancels in float32 where y nears -1)
  it('leaky_relu, elu and celu: gradients on every floating dtype are the derivatives of the formulas', function()
    for _, k in ipairs { KERNELS[1], KERNELS[2], KERNELS[3] } do
      local name, f, dref = k[1], k[2], k[4]
      for _, dt in ipairs(H.float_dtypes) do
        local pts = { -6.2, -1.3, -0.45, -1e-3, 1e-3, 0.3, 2.5 }
        local x = torch.tensor({ pts, pts }, { dtype = torch.float64 }):to(dt):t():requires_grad_()
        local g = torch.tensor({ { 0.5, -1.5 } }, { dtype = dt }):expand(#pts, 2)
        f(x):backward(g)
        local held = values(x:detach():select(2, 1))
        local tol = dt == torch.float64 and 1e-14 or dt == torch.float32 and 4e-7 or 4 * H.tol(dt)
        for j, gj in ipairs { 0.5, -1.5 } do
          local got = values(x.grad:select(2, j))
          for i, v in ipairs(held) do
            local want = gj * dref(v)
            assert(same(got[i], want, tol), string.format('%s %s gradient at %g: %.17g, want %.17g', name,
              tostring(dt), v, got[i], want))
          end
        end
      end
    end
  end)

  it('keep float16 and bfloat16 inputs in their dtype', function()
    for _, dt in ipairs { torch.float16, torch.bfloat16 } do
      local x = x64():to(dt)
      for _, f in ipairs { F.leaky_relu, F.elu, F.celu, F.softplus, F.hardtanh, function(t) return F.softmin(t, 1) end } do
        assert.are.equal(dt, f(x).dtype)
      end
      check_values(F.elu(x), function(v) return v > 0 and v or math.exp(v) - 1 end, values(x), 4 * H.tol(dt), 'elu ' .. tostring(dt))
    end
  end)

  it('name bad arguments', function()
    local x = x64()
    H.raises(function() F.leaky_relu(x, 'a') end, 'leaky_relu: negative_slope must be a number')
    H.raises(function() F.elu(x, { alfa = 1 }) end, "elu: unknown option 'alfa'")
    H.raises(function() F.hardtanh(x, 2, 1) end, 'hardtanh: min_val (2) must not exceed max_val (1)')
    H.raises(function() F.threshold(x) end, 'threshold: threshold must be a number')
    H.raises(function() F.celu(x, 0) end, 'celu: alpha must not be 0')
    H.raises(function() F.glu(torch.ones(3)) end, 'glu: halving dimension must be even, but dimension -1 is size 3')
    H.raises(function() F.glu(torch.ones(2), 3) end, 'glu: dim 3 is out of range for a 1-D input')
    H.raises(function() F.prelu(torch.ones(2, 3), torch.ones(2)) end, 'prelu: weight has 2 elements, but the input has 3 channels')
    H.raises(function() F.softmin(x) end, 'softmin: dim is required')
    H.raises(function() F.silu(x, { inplcae = true }) end, "silu: unknown option 'inplcae'")
    H.raises(function() F.mish('x') end, 'mish: expected input to be a tensor, got string')
  end)
end)

describe('activation modules', function()
  it("print as PyTorch's", function()
    local want = {
      { nn.LeakyReLU(), 'LeakyReLU(negative_slope=0.01)' }, { nn.LeakyReLU(0.2, true), 'LeakyReLU(negative_slope=0.2, inplace=True)' },
      { nn.ELU(), 'ELU(alpha=1.0)' }, { nn.CELU({ alpha = 2 }), 'CELU(alpha=2.0)' },
      { nn.Softplus(), 'Softplus(beta=1.0, threshold=20.0)' }, { nn.Softplus({ beta = 2, threshold = 5 }), 'Softplus(beta=2.0, threshold=5.0)' },
      { nn.Hardtanh(), 'Hardtanh(min_val=-1.0, max_val=1.0)' }, { nn.Threshold(0.1, 20), 'Threshold(threshold=0.1, value=20.0)' },
      { nn.ReLU6(), 'ReLU6()' }, { nn.SiLU(true), 'SiLU(inplace=True)' }, { nn.Mish(), 'Mish()' },
      { nn.Hardswish(), 'Hardswish()' }, { nn.Hardsigmoid(), 'Hardsigmoid()' }, { nn.SELU(), 'SELU()' },
      { nn.LogSigmoid(), 'LogSigmoid()' }, { nn.Softsign(), 'Softsign()' }, { nn.Tanhshrink(), 'Tanhshrink()' },
      { nn.PReLU(), 'PReLU(num_parameters=1)' }, { nn.PReLU(3), 'PReLU(num_parameters=3)' },
      { nn.GLU(), 'GLU(dim=-1)' }, { nn.Softmin(2), 'Softmin(dim=2)' },
    }
    for _, p in ipairs(want) do assert.are.equal(p[2], tostring(p[1])) end
  end)

  it('run their functions', function()
    torch.manual_seed(5)
    local x = torch.randn(4, 6, { dtype = torch.float64 })
    local pairs_ = {
      { nn.LeakyReLU(0.3), F.leaky_relu(x, 0.3) }, { nn.ELU(0.4), F.elu(x, 0.4) }, { nn.CELU(1.2), F.celu(x, 1.2) },
      { nn.Softplus(3, 2), F.softplus(x, 3, 2) }, { nn.Hardtanh(-0.2, 0.3), F.hardtanh(x, -0.2, 0.3) },
      { nn.Threshold(0.1, -1), F.threshold(x, 0.1, -1) }, { nn.ReLU6(), F.relu6(x) }, { nn.SiLU(), F.silu(x) },
      { nn.Mish(), F.mish(x) }, { nn.Hardswish(), F.hardswish(x) }, { nn.Hardsigmoid(), F.hardsigmoid(x) },
      { nn.SELU(), F.selu(x) }, { nn.LogSigmoid(), F.logsigmoid(x) }, { nn.Softsign(), F.softsign(x) },
      { nn.Tanhshrink(), F.tanhshrink(x) }, { nn.GLU(), F.glu(x) }, { nn.Softmin(1), F.softmin(x, 1) },
    }
    for i, p in ipairs(pairs_) do assert.is_true(torch.equal(p[1](x), p[2]), 'module ' .. i) end
  end)

  it('PReLU learns its slopes: 0.25 at first, one per channel, gradients by finite differences', function()
    local m = nn.PReLU(3)
    assert.are.equal(1, #m:parameters())
    H.assert_values(m.weight, { 0.25, 0.25, 0.25 }, 0)
    local m1 = nn.PReLU({ init = 0.1 })
    H.assert_values(m1.weight, { 0.1 }, 1e-7)
    local x = torch.tensor({ { -1, 2, -3 }, { 4, -5, 6 } })
    m(x):sum():backward()
    H.assert_values(m.weight.grad, { -1, -5, -3 }, 0)
    local d = nn.PReLU({ num_parameters = 2, dtype = torch.float64 })
    assert.are.equal(torch.float64, d.weight.dtype)
    H.raises(function() nn.PReLU(0) end, 'PReLU: num_parameters must be a positive integer')
    H.raises(function() nn.Hardtanh(1, 0) end, 'Hardtanh: min_val (1) must not exceed max_val (0)')
    H.raises(function() nn.LeakyReLU({ slope = 1 }) end, "LeakyReLU: unknown option 'slope'")
  end)

  it('train a small model with each (the loss goes down)', function()
    for _, act in ipairs { nn.SiLU(), nn.Mish(), nn.LeakyReLU(0.1), nn.ELU(), nn.Softplus(), nn.Hardswish(), nn.SELU(), nn.PReLU(8) } do
      torch.manual_seed(3)
      local model = nn.Sequential(nn.Linear(4, 8), act, nn.Linear(8, 1))
      local x = torch.randn(64, 4)
      local y = (x:narrow(2, 1, 1) * 2 - x:narrow(2, 2, 1)):tanh()
      local first, last = H.fit({ model }, 150, 0.02, function() return F.mse_loss(model(x), y) end)
      assert(last < first / 4, tostring(act) .. ': loss ' .. first .. ' -> ' .. last)
    end
  end)
end)
