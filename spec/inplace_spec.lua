-- The in-place ops composed in Lua (lua/torch/inplace.lua): in-place comparisons and logicals,
-- in-place composites, their aliases and torch.* forms, the in-place view ops, resize_,
-- fill_diagonal_, and the small helpers. Values against plain-Lua loops in float64, over dtypes and
-- on non-contiguous self and operands; autograd (gradcheck through the in-place op on a non-leaf,
-- the leaf error, the saved-tensor version error); the bad calls.
local torch = require 'torch'
local H = require 'spec.helpers'
local mat, map, leaf = H.mat, H.map, H.leaf
local gradcheck = torch.autograd.gradcheck

local v = function(i, j) return (i * 7 + j * 3) % 11 / 4 - 1.2 end
local w = function(i, j) return (i * 5 + j) % 7 / 3 - 0.9 end

describe('in-place comparisons and logicals', function()
  local cmp = {
    eq = function(a, b) return a == b end, ne = function(a, b) return a ~= b end,
    lt = function(a, b) return a < b end, le = function(a, b) return a <= b end,
    gt = function(a, b) return a > b end, ge = function(a, b) return a >= b end,
    greater = function(a, b) return a > b end, greater_equal = function(a, b) return a >= b end,
    less = function(a, b) return a < b end, less_equal = function(a, b) return a <= b end,
    not_equal = function(a, b) return a ~= b end,
  }
  local function b01(c) return c and 1 or 0 end

  it('write 1 and 0 in self\'s dtype, with tensor and number operands, on contiguous and transposed self', function()
    local vi = function(i, j) return (i * 3 + j) % 4 end
    local wi = function(i, j) return (i + j * 2) % 3 end
    for _, dt in ipairs { torch.float32, torch.float64, torch.int32, torch.int64, torch.int16, torch.uint8 } do
      for name, f in pairs(cmp) do
        local a, at, ta = mat(3, 4, vi, dt)
        local b, bt, tb = mat(3, 4, wi, dt)
        for _, pair in ipairs { { a, b }, { at, bt }, { a, bt }, { at, b } } do
          -- self contiguous, or transposed with the same values
          local self = pair[1] == at and at:t():clone():t() or a:clone()
          assert.are.equal(pair[1] == a, self:is_contiguous())
          local r = self[name .. '_'](self, pair[2])
          assert.are.equal(self, r)
          assert.are.equal(dt, self.dtype)
          H.assert_values(self, map(ta, function(p, q) return b01(f(p, q)) end, tb), 0, name .. '_ ' .. dt.name)
        end
        local s = a:clone()
        s[name .. '_'](s, 2)
        H.assert_values(s, map(ta, function(p) return b01(f(p, 2)) end), 0, name .. '_ with a number')
      end
    end
  end)

  it('on bool self', function()
    local a = torch.tensor({ true, false, true, false })
    local b = torch.tensor({ true, true, false, false })
    H.assert_values(a:clone():eq_(b), { true, false, false, true })
    H.assert_values(a:clone():logical_and_(b), { true, false, false, false })
    H.assert_values(a:clone():logical_or_(b), { true, true, true, false })
    H.assert_values(a:clone():logical_xor_(b), { false, true, true, false })
    H.assert_values(a:clone():logical_not_(), { false, true, false, true })
    assert.are.equal(torch.bool, a:clone():lt_(b).dtype)
  end)

  it('logicals on float and int self, with a non-contiguous operand', function()
    local a, _, ta = mat(3, 4, function(i, j) return (i + j) % 3 - 1 end)
    local _, bt, tb = mat(3, 4, function(i, j) return (i * j) % 2 end)
    local nz = function(e) return e ~= 0 end
    local cases = {
      logical_and = function(p, q) return nz(p) and nz(q) end,
      logical_or = function(p, q) return nz(p) or nz(q) end,
      logical_xor = function(p, q) return nz(p) ~= nz(q) end,
    }
    for name, f in pairs(cases) do
      for _, dt in ipairs { torch.float32, torch.float64, torch.int64 } do
        local x = a:to(dt):clone()
        x[name .. '_'](x, bt)
        H.assert_values(x, map(ta, function(p, q) return b01(f(p, q)) end, tb), 0, name .. '_')
      end
    end
    local x = a:t():clone():t() -- a transposed self
    x:logical_not_()
    H.assert_values(x, map(ta, function(p) return b01(p == 0) end), 0, 'logical_not_')
  end)

  it('broadcast the operand to self\'s shape, never self to another shape', function()
    local x = torch.tensor({ { 1.0, 2, 3 }, { 4, 5, 6 } })
    x:gt_(torch.tensor({ 1.0, 5, 3 }))
    H.assert_values(x, { { 0, 0, 0 }, { 1, 0, 1 } })
    H.raises(function() torch.zeros(3):eq_(torch.zeros(2, 3)) end, 'eq_', "doesn't match the broadcast shape")
    H.raises(function() torch.zeros(3):less_(torch.zeros(4)) end, 'less_')
    H.raises(function() torch.zeros(1):ge_(torch.zeros(3)) end, 'ge_', "doesn't match")
  end)

  it('pass a zero gradient through a non-leaf, refuse a leaf, and bump the version', function()
    local a = torch.randn(4, { dtype = torch.float64, requires_grad = true })
    local o = torch.randn(4, { dtype = torch.float64, requires_grad = true })
    local b = a * 2
    b:lt_(o)
    assert.is_true(b.requires_grad)
    b:sum():backward()
    H.assert_values(a.grad, { 0, 0, 0, 0 })
    H.assert_values(o.grad, { 0, 0, 0, 0 })
    local y = a * 3
    y:logical_not_()
    H.assert_values(y, a:eq(0):double():totable())
    H.raises(function() a:eq_(0) end, 'eq_', 'a leaf Variable that requires grad is being used in an in-place operation')
    H.raises(function() a:logical_and_(o) end, 'logical_and_', 'leaf Variable')
    -- under no_grad a leaf may be written
    local l = torch.randn(3, { requires_grad = true })
    torch.no_grad(function() l:ge_(0) end)
    -- a tensor saved for backward, then compared in place
    local p = a * 1
    local z = p * p
    p:ne_(0)
    H.raises(function() z:sum():backward() end, 'modified by an inplace operation')
  end)

  it('bad calls', function()
    H.raises(function() torch.zeros(2):eq_('x') end, 'eq_')
    H.raises(function() torch.zeros(2):logical_not_(1) end, 'logical_not_', 'no arguments')
    H.raises(function() torch.Tensor.gt_(3, 1) end, 'gt_', 'tensor')
    H.raises(function() torch.zeros(2):lt_(torch.zeros(2, { device = 'cpu:1' })) end, 'lt_')
  end)
end)

describe('in-place composites', function()
  -- { name, in-place call on (x, a, b), reference on the elements (p, q) or nil, domain shift }
  local cases = {
    { 'addcmul_', function(x, a, b) return x:addcmul_(a, b, { value = 0.5 }) end, function(p, q) return p + 0.5 * p * q end },
    { 'addcdiv_', function(x, a, b) return x:addcdiv_(a, b + 3, { value = 2 }) end, function(p, q) return p + 2 * p / (q + 3) end },
    { 'lerp_', function(x, _, b) return x:lerp_(b, 0.3) end, function(p, q) return p + 0.3 * (q - p) end },
    { 'lerp_ (tensor weight)', function(x, _, b) return x:lerp_(b, torch.full(x.shape, 0.8, { dtype = x.dtype })) end,
      function(p, q) return p + 0.8 * (q - p) end },
    { 'hypot_', function(x, _, b) return x:hypot_(b) end, function(p, q) return math.sqrt(p * p + q * q) end },
    { 'xlogy_', function(x, _, b) return x:xlogy_(b:abs() + 0.5) end, function(p, q) return p * math.log(math.abs(q) + 0.5) end },
    { 'heaviside_', function(x, _, b) return x:heaviside_(b) end,
      function(p, q) return p > 0 and 1 or (p == 0 and q or 0) end },
    { 'floor_divide_', function(x, _, b) return x:floor_divide_(b:abs() + 1) end,
      function(p, q) return math.floor(p / (math.abs(q) + 1)) end },
    { 'sinc_', function(x) return x:sinc_() end,
      function(p) return p == 0 and 1 or math.sin(math.pi * p) / (math.pi * p) end },
    { 'deg2rad_', function(x) return x:deg2rad_() end, function(p) return p * math.pi / 180 end },
    { 'rad2deg_', function(x) return x:rad2deg_() end, function(p) return p * 180 / math.pi end },
    { 'logit_', function(x) return x:abs_():div_(3):add_(0.1):logit_() end,
      function(p) p = math.abs(p) / 3 + 0.1; return math.log(p / (1 - p)) end },
    { 'logit_ (eps)', function(x) return x:logit_(0.25) end,
      function(p) p = math.min(math.max(p, 0.25), 0.75); return math.log(p / (1 - p)) end },
    { 'sgn_', function(x) return x:sgn_() end, function(p) return p > 0 and 1 or (p < 0 and -1 or 0) end },
    { 'fix_', function(x) return x:fix_() end, function(p) return p < 0 and math.ceil(p) or math.floor(p) end },
    { 'absolute_', function(x) return x:absolute_() end, function(p) return math.abs(p) end },
    { 'negative_', function(x) return x:negative_() end, function(p) return -p end },
    { 'divide_', function(x, _, b) return x:divide_(b + 2) end, function(p, q) return p / (q + 2) end },
    { 'true_divide_', function(x, _, b) return x:true_divide_(b + 2) end, function(p, q) return p / (q + 2) end },
    { 'multiply_', function(x, _, b) return x:multiply_(b) end, function(p, q) return p * q end },
    { 'subtract_', function(x, _, b) return x:subtract_(b, { alpha = 2 }) end, function(p, q) return p - 2 * q end },
    { 'arctan2_', function(x, _, b) return x:arctan2_(b) end, function(p, q) return math.atan(p, q) end },
    { 'arctan_', function(x) return x:arctan_() end, function(p) return math.atan(p) end },
    { 'arcsin_', function(x) return x:div_(2):arcsin_() end, function(p) return math.asin(p / 2) end },
    { 'arccos_', function(x) return x:div_(2):arccos_() end, function(p) return math.acos(p / 2) end },
    { 'mvlgamma_', function(x) return x:abs_():add_(1):mvlgamma_(2) end, function(p)
      p = math.abs(p) + 1
      local function lgamma(z) -- Lanczos (g = 7, n = 9), float64 accuracy for z > 0.5
        local c = { 0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
          -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
          1.5056327351493116e-7 }
        z = z - 1
        local s = c[1]
        for i = 1, 8 do s = s + c[i + 1] / (z + i) end
        local t = z + 7.5
        return 0.5 * math.log(2 * math.pi) + (z + 0.5) * math.log(t) - t + math.log(s)
      end
      return math.log(math.pi) / 2 + lgamma(p) + lgamma(p - 0.5)
    end },
    { 'nan_to_num_', function(x) return x:nan_to_num_() end, function(p) return p end },
  }

  for _, c in ipairs(cases) do
    it(c[1] .. ': values against a loop, on contiguous and transposed self and operands', function()
      local a, at, ta = mat(3, 4, v)
      local b, bt, tb = mat(3, 4, w)
      for _, pair in ipairs { { a, b }, { at, bt }, { a, bt } } do
        local x = pair[1]:clone()
        if pair[1] == at then x = at:clone():t():clone():t() end -- non-contiguous self
        assert.are.equal(pair[1] == a, x:is_contiguous())
        local r = c[2](x, pair[1], pair[2])
        assert.are.equal(x, r)
        assert.are.equal(torch.float64, x.dtype)
        H.assert_values(x, map(ta, c[3], tb), 1e-12, c[1])
      end
      -- float32 self: the same values to float32's precision
      local x32 = a:float()
      c[2](x32, a:float(), b:float())
      H.assert_values(x32, map(ta, c[3], tb), 2e-5, c[1] .. ' float32')
    end)
  end

  it('nan_to_num_ replaces NaN and the infinities in place', function()
    local x = torch.tensor({ 0 / 0, math.huge, -math.huge, 1.5 }, { dtype = torch.float64 })
    x:nan_to_num_({ nan = 1, posinf = 2, neginf = -3 })
    H.assert_values(x, { 1, 2, -3, 1.5 })
    local y = torch.tensor({ 0 / 0, math.huge }, { dtype = torch.float32 })
    y:nan_to_num_()
    H.assert_values(y, { 0, torch.finfo(torch.float32).max })
  end)

  it('cumsum_ and cumprod_ along each dim, on int and float self, transposed too', function()
    local a, at, ta = mat(3, 4, v)
    for _, x0 in ipairs { a, at } do
      for dim = 1, 2 do
        local s, p = x0:clone(), x0:clone()
        if x0 == at then s, p = at:t():clone():t(), at:t():clone():t() end
        s:cumsum_(dim)
        p:cumprod_(dim)
        local rs, rp = {}, {}
        for i = 1, 3 do
          rs[i], rp[i] = {}, {}
          for j = 1, 4 do
            local acc, prod = 0, 1
            if dim == 1 then
              for k = 1, i do acc, prod = acc + ta[k][j], prod * ta[k][j] end
            else
              for k = 1, j do acc, prod = acc + ta[i][k], prod * ta[i][k] end
            end
            rs[i][j], rp[i][j] = acc, prod
          end
        end
        H.assert_values(s, rs, 1e-12, 'cumsum_')
        H.assert_values(p, rp, 1e-12, 'cumprod_')
      end
    end
    local i32 = torch.tensor({ 1, 2, 3, 4 }, { dtype = torch.int32 })
    i32:cumsum_(1)
    assert.are.equal(torch.int32, i32.dtype)
    H.assert_values(i32, { 1, 3, 6, 10 })
    local f = torch.tensor({ 1, 2, 3 }, { dtype = torch.float32 })
    f:cumsum_(1, { dtype = torch.float64 })
    assert.are.equal(torch.float32, f.dtype)
    H.assert_values(f, { 1, 3, 6 })
  end)

  it('floor_divide_ on integer self', function()
    local x = torch.tensor({ 7, -7, 9, -1 }, { dtype = torch.int64 })
    x:floor_divide_(torch.tensor({ 2, 2, -4, 3 }))
    H.assert_values(x, { 3, -4, -3, -1 })
    H.raises(function() torch.tensor({ 1, 2 }):floor_divide_(0) end, 'ZeroDivisionError')
  end)

  it('float_power_ needs float64 self', function()
    local x = torch.tensor({ 1.5, 2, 3 }, { dtype = torch.float64 })
    x:float_power_(2)
    H.assert_values(x, { 2.25, 4, 9 })
    x:float_power_(torch.tensor({ 1, 0.5, 2 }, { dtype = torch.float32 }))
    H.assert_values(x, { 2.25, 2, 81 })
    H.raises(function() torch.ones(2):float_power_(2) end, 'float_power_', 'float32', 'float64')
    H.raises(function() torch.ones(2, { dtype = torch.int64 }):float_power_(2) end, 'float_power_', 'int64')
  end)

  it('the matrix products: addmm_, addmv_, addr_, addbmm_, baddbmm_ against loops', function()
    local m, mt = mat(3, 4, v)
    local n = mat(4, 2, w)
    local c = mat(3, 2, function(i, j) return i - j end)
    local function mm(a, b)
      local r = {}
      for i = 1, a:size(1) do
        r[i] = {}
        for j = 1, b:size(2) do
          local s = 0
          for k = 1, a:size(2) do s = s + a[i][k] * b[k][j] end
          r[i][j] = s
        end
      end
      return r
    end
    local prod = mm(m, n)
    for _, self in ipairs { c:clone(), c:t():clone():t() } do
      self:addmm_(mt:t():t(), n, { beta = 0.5, alpha = 2 })
      H.assert_values(self, map(c:totable(), function(p, q) return 0.5 * p + 2 * q end, prod), 1e-12, 'addmm_')
    end
    local vec = torch.tensor({ 1.0, -2, 0.5, 3 }, { dtype = torch.float64 })
    local y = torch.tensor({ 1.0, 2, 3 }, { dtype = torch.float64 })
    y:addmv_(mt, vec, { beta = 2 })
    local want = {}
    for i = 1, 3 do
      local s = 0
      for k = 1, 4 do s = s + m[i][k] * vec[k] end
      want[i] = 2 * (i) + s
    end
    H.assert_values(y, want, 1e-12, 'addmv_')
    local o = c:clone()
    o:addr_(torch.tensor({ 1.0, 2, 3 }, { dtype = torch.float64 }), torch.tensor({ 4.0, 5 }, { dtype = torch.float64 }),
      { alpha = 3 })
    H.assert_values(o, map(c:totable(), function(p, q) return p + 3 * q end, { { 4, 5 }, { 8, 10 }, { 12, 15 } }), 1e-12,
      'addr_')
    local A = torch.stack({ m, m * 2 })
    local B = torch.stack({ n, n * -1 })
    local bb = torch.stack({ c, c }):clone()
    bb:baddbmm_(A, B)
    H.assert_values(bb[1], map(c:totable(), function(p, q) return p + q end, prod), 1e-12, 'baddbmm_ 1')
    H.assert_values(bb[2], map(c:totable(), function(p, q) return p - 2 * q end, prod), 1e-12, 'baddbmm_ 2')
    local ab = c:clone()
    ab:addbmm_(A, B, { beta = 0 })
    H.assert_values(ab, map(prod, function(q) return -q end), 1e-12, 'addbmm_')
    H.raises(function() torch.zeros(2, 2):addmm_(torch.zeros(3, 4), torch.zeros(4, 2)) end, 'addmm')
    H.raises(function() torch.zeros(1, 2):addmm_(torch.zeros(3, 4), torch.zeros(4, 2)) end, "doesn't match the broadcast shape")
  end)

  it('refuse results that self\'s dtype cannot hold, and results of another shape', function()
    H.raises(function() torch.tensor({ 1, 2 }):sinc_() end, 'sinc_', "can't be cast", 'int64')
    H.raises(function() torch.tensor({ 1, 2 }, { dtype = torch.int32 }):hypot_(torch.tensor({ 1, 2 })) end, 'hypot_')
    H.raises(function() torch.tensor({ 1, 2 }):deg2rad_() end, 'deg2rad_', "can't be cast")
    H.raises(function() torch.tensor({ 1, 2 }):true_divide_(2) end, "can't be cast")
    H.raises(function() torch.zeros(3):lerp_(torch.zeros(2, 3), 0.5) end, 'lerp_', "doesn't match the broadcast shape")
    H.raises(function() torch.zeros(3):addcmul_(torch.zeros(4), torch.zeros(4)) end, 'addcmul_:', 'cannot be broadcast')
    H.raises(function() torch.zeros(3):addcmul_(torch.zeros(3), torch.zeros(3), { valu = 1 }) end, "unknown option 'valu'")
    H.raises(function() torch.zeros(3):mvlgamma_(0) end, 'mvlgamma')
  end)

  it('errors point at the caller', function()
    local _, err = pcall(function() torch.zeros(3):xlogy_(torch.zeros(2)) end)
    assert.matches('inplace_spec.lua:%d+:', err)
    _, err = pcall(function() torch.zeros(3):addmm_(torch.zeros(3, 2), torch.zeros(5, 2)) end)
    assert.matches('inplace_spec.lua:%d+:', err)
  end)

  describe('autograd', function()
    local unary = { 'sinc_', 'deg2rad_', 'rad2deg_', 'sgn_', 'fix_', 'absolute_', 'negative_', 'arctan_', 'nan_to_num_' }
    for _, name in ipairs(unary) do
      it(name .. ' on a non-leaf: gradcheck', function()
        assert.is_true(gradcheck(function(a)
          local y = a * 1
          y[name](y)
          return y
        end, { leaf({ 2, 3 }, -0.9, 0.9) }))
      end)
    end
    local binary = {
      { 'addcmul_', function(y, a, b) return y:addcmul_(a, b, { value = 0.7 }) end },
      { 'addcdiv_', function(y, a, b) return y:addcdiv_(a, b, { value = 0.7 }) end },
      { 'lerp_', function(y, _, b) return y:lerp_(b, 0.3) end },
      { 'lerp_ (tensor weight)', function(y, a, b) return y:lerp_(b, a) end },
      { 'hypot_', function(y, _, b) return y:hypot_(b) end },
      { 'xlogy_', function(y, _, b) return y:xlogy_(b) end },
      { 'divide_', function(y, _, b) return y:divide_(b) end },
      { 'multiply_', function(y, _, b) return y:multiply_(b) end },
      { 'subtract_', function(y, _, b) return y:subtract_(b, { alpha = 3 }) end },
      { 'arctan2_', function(y, _, b) return y:arctan2_(b) end },
      { 'float_power_', function(y, _, b) return y:float_power_(b) end },
      { 'logit_', function(y) return y:mul_(0.5):logit_() end },
      { 'mvlgamma_', function(y) return y:add_(1):mvlgamma_(2) end },
      { 'cumsum_', function(y) return y:cumsum_(2) end },
      { 'cumprod_', function(y) return y:cumprod_(1) end },
    }
    for _, c in ipairs(binary) do
      it(c[1] .. ' on a non-leaf: gradcheck with respect to self and the operands', function()
        assert.is_true(gradcheck(function(x, a, b)
          local y = x * 1
          c[2](y, a, b)
          return y
        end, { leaf({ 2, 3 }), leaf({ 2, 3 }), leaf({ 2, 3 }) }))
      end)
    end
    it('the matrix products on a non-leaf: gradcheck', function()
      assert.is_true(gradcheck(function(x, a, b)
        local y = x * 1
        return y:addmm_(a, b, { beta = 0.5, alpha = 2 })
      end, { leaf({ 2, 2 }), leaf({ 2, 3 }), leaf({ 3, 2 }) }))
      assert.is_true(gradcheck(function(x, a, b)
        local y = x * 1
        return y:addmv_(a, b)
      end, { leaf({ 2 }), leaf({ 2, 3 }), leaf({ 3 }) }))
      assert.is_true(gradcheck(function(x, a, b)
        local y = x * 1
        return y:addr_(a, b, { beta = 2 })
      end, { leaf({ 2, 3 }), leaf({ 2 }), leaf({ 3 }) }))
      assert.is_true(gradcheck(function(x, a, b)
        local y = x * 1
        return y:baddbmm_(a, b)
      end, { leaf({ 2, 2, 2 }), leaf({ 2, 2, 3 }), leaf({ 2, 3, 2 }) }))
      assert.is_true(gradcheck(function(x, a, b)
        local y = x * 1
        return y:addbmm_(a, b)
      end, { leaf({ 2, 2 }), leaf({ 2, 2, 3 }), leaf({ 2, 3, 2 }) }))
    end)
    it('an operand that requires grad writes into a self that does not', function()
      local b = leaf({ 3 })
      local x = torch.ones(3, { dtype = torch.float64 })
      x:hypot_(b)
      assert.is_true(x.requires_grad)
      x:sum():backward()
      H.assert_values(b.grad, (b / (b * b + 1):sqrt()):detach():totable(), 1e-12)
    end)
    it('refuse a leaf that requires grad before computing anything', function()
      local a = leaf({ 3 })
      for _, f in ipairs {
        function() a:hypot_(a) end, function() a:sinc_() end, function() a:cumsum_(1) end,
        function() a:addcmul_(a, a) end, function() a:float_power_(2) end, function() a:nan_to_num_() end,
      } do
        H.raises(f, 'a leaf Variable that requires grad is being used in an in-place operation')
      end
      H.raises(function() a:lerp_(a, 0.5) end, 'lerp_:', 'leaf Variable')
      -- sgn_, fix_ and the other aliases are the C kernels, which name their own op
      H.raises(function() a:sgn_() end, 'leaf Variable')
      torch.no_grad(function() a:deg2rad_() end) -- allowed without grad mode
    end)
    it('a tensor saved for backward, then changed in place: backward refuses it', function()
      for _, f in ipairs {
        function(y) y:hypot_(torch.ones(2, 2, { dtype = torch.float64 })) end, function(y) y:sinc_() end,
        function(y) y:cumsum_(1) end, function(y) y:lerp_(torch.zeros(2, 2, { dtype = torch.float64 }), 0.5) end,
        function(y) y:addmm_(y:detach(), y:detach()) end, function(y) y:fill_diagonal_(0) end,
        function(y) y:logit_(0.1) end,
      } do
        local a = leaf({ 2, 2 })
        local y = a * 1
        local z = y * y -- saves y
        f(y)
        H.raises(function() z:sum():backward() end, 'modified by an inplace operation', 'MulBackward0')
        -- what was computed after the change is fine
        local b = leaf({ 2, 2 })
        local u = b * 1
        f(u)
        u:sum():backward()
        assert.are.same({ 2, 2 }, { table.unpack(b.grad.shape) })
      end
    end)
    it('in-place composites on a view of a tensor with history are refused', function()
      local a = leaf({ 2, 3 })
      local y = a * 1
      H.raises(function() y[1]:xlogy_(torch.ones(3, { dtype = torch.float64 })) end, 'xlogy_', 'views')
    end)
  end)
end)

describe('aliases and torch.* forms', function()
  it('the non-in-place aliases', function()
    local x = torch.tensor({ -0.5, 0.25, 0.75 }, { dtype = torch.float64 })
    local y = torch.tensor({ 1.0, -2, 0.5 }, { dtype = torch.float64 })
    for alias, name in pairs { arccos = 'acos', arcsin = 'asin', arctan = 'atan' } do
      H.assert_values(x[alias](x), x[name](x):totable(), 0, alias)
      H.assert_values(torch[alias](x), x[name](x):totable(), 0, 'torch.' .. alias)
    end
    H.assert_values(torch.arctan2(x, y), torch.atan2(x, y):totable(), 0, 'arctan2')
    H.assert_values(x:arctan2(y), torch.atan2(x, y):totable(), 0, 'arctan2')
    assert.are.equal(x, x:positive())
    assert.are.equal(x, torch.positive(x))
    H.raises(function() torch.tensor({ true }):positive() end, 'positive', 'bool')
    H.assert_values(torch.negative(x), { 0.5, -0.25, -0.75 })
  end)

  it('torch.<op>_ writes into its argument and returns it', function()
    local unary = { 'abs_', 'acos_', 'asin_', 'atan_', 'arccos_', 'arcsin_', 'arctan_', 'asinh_', 'arcsinh_', 'atanh_',
      'arctanh_', 'ceil_', 'cos_', 'cosh_', 'deg2rad_', 'rad2deg_', 'erf_', 'erfc_', 'exp_', 'exp2_', 'expm1_', 'fix_',
      'floor_', 'frac_', 'i0_', 'log_', 'log10_', 'log1p_', 'log2_', 'logit_', 'nan_to_num_', 'neg_', 'negative_',
      'reciprocal_', 'relu_', 'round_', 'rsqrt_', 'selu_', 'sigmoid_', 'sin_', 'sinc_', 'sinh_', 'sqrt_', 'square_',
      'tan_', 'tanh_', 'trunc_', 'zero_' }
    for _, name in ipairs(unary) do
      assert.is_function(rawget(torch, name), 'torch.' .. name)
      local x = torch.tensor({ 0.25, 0.5, 0.75 }, { dtype = torch.float64 })
      local want = x:clone()
      want[name](want)
      local r = torch[name](x)
      assert.are.equal(x, r)
      H.assert_values(x, want:totable(), 0, 'torch.' .. name)
    end
    local x = torch.tensor({ -2.0, 0.5, 3 })
    torch.clamp_(x, -1, 1)
    H.assert_values(x, { -1, 0.5, 1 })
    torch.clamp_min_(x, 0)
    H.assert_values(x, { 0, 0.5, 1 })
    torch.clamp_max_(x, 0.75)
    H.assert_values(x, { 0, 0.5, 0.75 })
    torch.clip_(x, 0.25, 0.5)
    H.assert_values(x, { 0.25, 0.5, 0.5 })
    torch.fill_(x, 7)
    H.assert_values(x, { 7, 7, 7 })
    local g = torch.tensor({ 12, 18 })
    torch.gcd_(g, torch.tensor({ 8, 12 }))
    H.assert_values(g, { 4, 6 })
    torch.lcm_(g, torch.tensor({ 6, 4 }))
    H.assert_values(g, { 12, 12 })
    local l = torch.tensor({ 1.0, 2 })
    torch.ldexp_(l, torch.tensor({ 2, 3 }))
    H.assert_values(l, { 4, 16 })
    local xl = torch.tensor({ 0.0, 2 }, { dtype = torch.float64 })
    torch.xlogy_(xl, 3)
    H.assert_values(xl, { 0, 2 * math.log(3) }, 1e-12)
    local mv = torch.zeros(2, { dtype = torch.float64 })
    torch.addmv_(mv, torch.eye(2, { dtype = torch.float64 }), torch.tensor({ 1.0, 2 }, { dtype = torch.float64 }))
    H.assert_values(mv, { 1, 2 })
    local d = torch.ones(2, { requires_grad = true }) * 2
    torch.detach_(d)
    assert.is_false(d.requires_grad)
    local ip = torch.zeros(3)
    torch.index_put_(ip, { torch.tensor({ 1, 3 }) }, torch.tensor(5.0))
    H.assert_values(ip, { 5, 0, 5 })
    H.assert_values(torch.celu_(torch.tensor({ -1.0, 1 })), { math.exp(-1) - 1, 1 }, 1e-6)
    H.assert_values(torch.threshold_(torch.tensor({ -1.0, 1 }), 0, 7), { 7, 1 })
    local dr = torch.ones(4)
    assert.are.equal(dr, torch.dropout_(dr, 0.5, false))
    -- the methods-only ops of PyTorch stay methods only
    assert.is_nil(rawget(torch, 'add_'))
    assert.is_nil(rawget(torch, 'sgn_'))
    assert.is_nil(rawget(torch, 'cumsum_'))
  end)
end)

describe('in-place view ops', function()
  it('squeeze_, unsqueeze_, t_, transpose_, swapaxes_, swapdims_ change self\'s shape and strides, not its elements', function()
    local base = torch.arange(1, 7, { dtype = torch.float64 })
    local x = base:view(2, 1, 3)
    local ptr = x:data_ptr()
    assert.are.equal(x, x:squeeze_(2))
    assert.are.same({ 2, 3 }, { table.unpack(x.shape) })
    x:unsqueeze_(1)
    assert.are.same({ 1, 2, 3 }, { table.unpack(x.shape) })
    x:unsqueeze_(-1)
    assert.are.same({ 1, 2, 3, 1 }, { table.unpack(x.shape) })
    x:squeeze_()
    assert.are.same({ 2, 3 }, { table.unpack(x.shape) })
    x:t_()
    assert.are.same({ 3, 2 }, { table.unpack(x.shape) })
    assert.is_false(x:is_contiguous())
    H.assert_values(x, { { 1, 4 }, { 2, 5 }, { 3, 6 } })
    x:transpose_(1, 2)
    H.assert_values(x, { { 1, 2, 3 }, { 4, 5, 6 } })
    x:swapaxes_(-1, -2)
    H.assert_values(x, { { 1, 4 }, { 2, 5 }, { 3, 6 } })
    x:swapdims_(1, 2)
    H.assert_values(x, { { 1, 2, 3 }, { 4, 5, 6 } })
    assert.are.equal(ptr, x:data_ptr())
    -- still a view of base
    x[2][3] = 60
    assert.are.equal(60, base[6])
    local one = torch.tensor({ 1.0, 2 })
    one:t_()
    assert.are.same({ 2 }, { table.unpack(one.shape) })
    local s = torch.zeros(1)
    s:squeeze_()
    assert.are.equal(0, s:dim())
  end)

  it('as_strided_', function()
    local x = torch.arange(1, 10, { dtype = torch.float64 })
    x:as_strided_({ 2, 2 }, { 3, 1 }, 1)
    H.assert_values(x, { { 2, 3 }, { 5, 6 } })
    assert.are.equal(1, x:storage_offset())
    x:as_strided_({ 3 }, { 4 }, 0)
    H.assert_values(x, { 1, 5, 9 })
    H.raises(function() x:as_strided_({ 4 }, { 4 }, 0) end, 'as_strided_', 'storage')
  end)

  it('gradcheck through the in-place view ops on a non-leaf', function()
    local wts = torch.arange(1, 7, { dtype = torch.float64 })
    local checks = {
      function(y) y:t_() return y * wts:reshape(3, 2) end,
      function(y) y:transpose_(1, 2) return y * wts:reshape(3, 2) end,
      function(y) y:swapaxes_(1, 2):unsqueeze_(2) return y * wts:reshape(3, 1, 2) end,
      function(y) y:unsqueeze_(1):squeeze_(1) return y:exp() end,
      function(y) y:as_strided_({ 2, 2 }, { 1, 2 }, 1) return y * wts:narrow(1, 1, 4):reshape(2, 2) end,
    }
    for k, f in ipairs(checks) do
      assert.is_true(gradcheck(function(a) return f(a * 1) end, { leaf({ 2, 3 }) }), 'check ' .. k)
    end
    -- the history leads through the view op to the old history
    local a = leaf({ 2, 1 })
    local y = a * 3
    y:squeeze_()
    y:sum():backward()
    H.assert_values(a.grad, { { 3 }, { 3 } })
  end)

  it('refuse a leaf that requires grad, and bump the version counter', function()
    local a = leaf({ 2, 3 })
    for _, f in ipairs {
      function() a:t_() end, function() a:squeeze_() end, function() a:unsqueeze_(1) end,
      function() a:transpose_(1, 2) end, function() a:swapaxes_(1, 2) end, function() a:as_strided_({ 2 }, { 1 }) end,
    } do
      H.raises(f, 'a leaf Variable that requires grad is being used in an in-place operation')
    end
    assert.are.same({ 2, 3 }, { table.unpack(a.shape) })
    torch.no_grad(function() a:t_() end)
    assert.are.same({ 3, 2 }, { table.unpack(a.shape) })
    local y = a * 1
    local z = y * y
    y:t_()
    H.raises(function() z:sum():backward() end, 'modified by an inplace operation')
  end)

  it('bad calls', function()
    local x = torch.zeros(2, 3)
    H.raises(function() x:transpose_(1, 3) end, 'transpose_', 'out of range')
    H.raises(function() x:squeeze_(5) end, 'squeeze_')
    H.raises(function() x:unsqueeze_(5) end, 'unsqueeze_')
    H.raises(function() torch.zeros(2, 2, 2):t_() end, 't_')
    H.raises(function() x:as_strided_({ 2 }) end, 'as_strided_')
    assert.are.same({ 2, 3 }, { table.unpack(x.shape) })
  end)
end)

describe('resize_ and resize_as_', function()
  it('shrink in the same storage, keeping the elements in storage order', function()
    local x = torch.arange(1, 7, { dtype = torch.float32 })
    local ptr = x:data_ptr()
    assert.are.equal(x, x:resize_(2, 2))
    H.assert_values(x, { { 1, 2 }, { 3, 4 } })
    assert.are.equal(ptr, x:data_ptr())
    x:resize_({ 3, 2 })
    H.assert_values(x, { { 1, 2 }, { 3, 4 }, { 5, 6 } })
    x:resize_(x:t().shape)
    assert.are.same({ 2, 3 }, { table.unpack(x.shape) })
    assert.is_true(x:is_contiguous())
    x:resize_(0)
    assert.are.equal(0, x:numel())
  end)

  it('grow into a larger storage holding the old elements first', function()
    for _, dt in ipairs { torch.float64, torch.int32, torch.uint8, torch.bool } do
      local x = torch.tensor({ 1, 0, 1 }, { dtype = dt })
      x:resize_(2, 4)
      assert.are.equal(dt, x.dtype)
      H.assert_values(x:reshape(-1):narrow(1, 1, 3), torch.tensor({ 1, 0, 1 }, { dtype = dt }):totable(), 0, dt.name)
      x:fill_(1)
      H.assert_values(x, torch.ones(2, 4, { dtype = dt }):totable())
    end
    -- a view with an offset keeps it
    local base = torch.arange(1, 7, { dtype = torch.float64 })
    local tail = base:narrow(1, 3, 2)
    tail:resize_(6)
    assert.are.equal(2, tail:storage_offset())
    H.assert_values(tail:narrow(1, 1, 4), { 3, 4, 5, 6 })
    -- a non-contiguous self takes contiguous strides
    local t = torch.arange(1, 7, { dtype = torch.float64 }):reshape(2, 3):t()
    t:resize_(3, 2)
    assert.is_true(t:is_contiguous())
    H.assert_values(t, { { 1, 2 }, { 3, 4 }, { 5, 6 } })
  end)

  it('resize_as_ takes the other tensor\'s sizes', function()
    local x = torch.arange(1, 5, { dtype = torch.float64 })
    torch.resize_as_(x, torch.zeros(2, 2))
    H.assert_values(x, { { 1, 2 }, { 3, 4 } })
    x:resize_as_(torch.zeros(3))
    H.assert_values(x, { 1, 2, 3 })
  end)

  it('bad calls', function()
    H.raises(function() leaf({ 3 }):resize_(2) end, 'resize_', 'cannot resize variables that require grad')
    H.raises(function() (leaf({ 3 }) * 1):resize_(2) end, 'cannot resize variables that require grad')
    H.raises(function() leaf({ 3 }):resize_as_(torch.zeros(2)) end, 'resize_as_', 'require grad')
    H.raises(function() torch.zeros(2):resize_(-1) end, 'resize_', 'negative dimension')
    H.raises(function() torch.zeros(2):resize_(1.5) end, 'resize_', 'integers')
    H.raises(function() torch.zeros(2):resize_({ 2 }, 3) end, 'resize_')
    H.raises(function() torch.zeros(2):resize_as_(3) end, 'resize_as_', 'tensor')
    local _, err = pcall(function() torch.zeros(2):resize_(-1) end)
    assert.matches('inplace_spec.lua:%d+:', err)
  end)
end)

describe('fill_diagonal_', function()
  -- NumPy's fill_diagonal on row-major positions: every (cols + 1)-th element from 0, below
  -- cols * cols (all of the matrix with wrap)
  local function reference(r, c, value, wrap)
    local out = {}
    for i = 1, r do
      out[i] = {}
      for j = 1, c do out[i][j] = 0 end
    end
    local stop = wrap and r * c or math.min(c * c, r * c)
    for p = 0, stop - 1, c + 1 do out[p // c + 1][p % c + 1] = value end
    return out
  end

  it('square, wide and tall matrices, with and without wrap, contiguous or not', function()
    for _, rc in ipairs { { 3, 3 }, { 2, 5 }, { 5, 2 }, { 7, 3 }, { 9, 3 }, { 4, 3 }, { 1, 1 }, { 6, 1 } } do
      for _, wrap in ipairs { false, true } do
        local r, c = rc[1], rc[2]
        local x = torch.zeros(r, c, { dtype = torch.float64 })
        assert.are.equal(x, x:fill_diagonal_(2.5, wrap))
        H.assert_values(x, reference(r, c, 2.5, wrap), 0, string.format('%dx%d wrap %s', r, c, tostring(wrap)))
        local y = torch.zeros(c, r, { dtype = torch.float64 }):t()
        y:fill_diagonal_(2.5, wrap)
        H.assert_values(y, reference(r, c, 2.5, wrap), 0, 'transposed')
      end
    end
  end)

  it('wraps tall matrices over many blocks, in slices of larger tensors and transposed ones', function()
    for _, rc in ipairs { { 11, 3 }, { 13, 2 }, { 20, 4 }, { 10, 4 }, { 15, 4 }, { 5, 3 } } do
      local r, c = rc[1], rc[2]
      for _, wrap in ipairs { false, true } do
        local what = string.format('%dx%d wrap %s', r, c, tostring(wrap))
        -- a slice (a storage offset, a row stride wider than the matrix), its transpose's transpose
        local big = torch.full({ r + 2, c + 3 }, -1.0, { dtype = torch.float64 })
        local x = big[{ { 2, r + 1 }, { 3, c + 2 } }]
        x:zero_():fill_diagonal_(2.5, wrap)
        H.assert_values(x, reference(r, c, 2.5, wrap), 0, what)
        assert.are.equal(-1, big[1][1])
        assert.are.equal(-1, big[r + 2][c + 3])
        assert.are.equal((r + 2) * (c + 3) - r * c, big:eq(-1):sum():item(), what .. ': outside the slice')
        local y = torch.zeros(c + 1, r, { dtype = torch.float64 })
        y:narrow(1, 2, c):t():fill_diagonal_(2.5, wrap)
        H.assert_values(y:narrow(1, 2, c):t(), reference(r, c, 2.5, wrap), 0, what .. ' transposed')
        assert.are.equal(0, y[1]:abs():sum():item(), what .. ': the row before the slice')
      end
    end
  end)

  it('writes through views of the diagonal: no memory the size of the tensor', function()
    local d = 'cpu:1'
    local x = torch.zeros({ 1000, 1000 }, { device = d })
    local tall = torch.zeros({ 3000, 300 }, { device = d })
    collectgarbage()
    collectgarbage()
    local base = torch.memory.allocated(d)
    torch.memory.reset_peak(d)
    x:fill_diagonal_(3)
    tall:fill_diagonal_(1, true)
    local used = torch.memory.max_allocated(d) - base
    assert.is_true(used < 64 * 1024, string.format('fill_diagonal_ allocated %d bytes', used))
    assert.are.equal(3000, x:sum():item())
    -- the wrapped diagonal of a 3000 x 300: every 301st row-major position, 2990 of them
    assert.are.equal((3000 * 300 + 300) // 301, tall:sum():item())
  end)

  it('N-D with equal sizes, over dtypes', function()
    local x = torch.zeros(3, 3, 3, { dtype = torch.int32 })
    x:fill_diagonal_(7)
    for i = 1, 3 do
      for j = 1, 3 do
        for k = 1, 3 do
          assert.are.equal((i == j and j == k) and 7 or 0, x[i][j][k])
        end
      end
    end
    local b = torch.zeros(2, 2, { dtype = torch.bool }):fill_diagonal_(true)
    H.assert_values(b, { { true, false }, { false, true } })
  end)

  it('autograd: gradcheck on a non-leaf (no gradient through the diagonal), the leaf error', function()
    assert.is_true(gradcheck(function(a) return (a * 1):fill_diagonal_(0.5) end, { leaf({ 3, 4 }) }))
    local a = leaf({ 2, 2 })
    local y = a * 2
    y:fill_diagonal_(1)
    y:sum():backward()
    H.assert_values(a.grad, { { 0, 2 }, { 2, 0 } })
    H.raises(function() a:fill_diagonal_(0) end, 'fill_diagonal_', 'leaf Variable')
    -- wrapped, and twice differentiable (the gradient's diagonal zeroed is the same op)
    local b = leaf({ 7, 2 })
    local z = b * 3
    z:fill_diagonal_(1, true)
    ;(z * z):sum():backward()
    local want = {}
    local filled = reference(7, 2, 1, true)
    for i = 1, 7 do
      want[i] = {}
      for j = 1, 2 do want[i][j] = filled[i][j] == 1 and 0 or 18 * b[i][j] end
    end
    H.assert_values(b.grad, want, 1e-12)
    assert.is_true(torch.autograd.gradgradcheck(function(t) return (t * t):fill_diagonal_(0.5, true) end,
      { leaf({ 5, 2 }) }))
  end)

  it('bad calls', function()
    H.raises(function() torch.zeros(3):fill_diagonal_(1) end, 'fill_diagonal_', 'dimensions')
    H.raises(function() torch.zeros(2, 3, 2):fill_diagonal_(1) end, 'fill_diagonal_', 'equal length')
    H.raises(function() torch.zeros(2, 2):fill_diagonal_(torch.ones(1)) end, 'fill_diagonal_', 'number')
    H.raises(function() torch.zeros(2, 2):fill_diagonal_(1, 1) end, 'fill_diagonal_', 'wrap')
  end)
end)

describe('small helpers', function()
  it('is_same_size, is_signed, is_complex, is_inference', function()
    assert.is_true(torch.zeros(2, 3):is_same_size(torch.ones(2, 3, { dtype = torch.int32 })))
    assert.is_false(torch.zeros(2, 3):is_same_size(torch.ones(3, 2)))
    assert.is_true(torch.is_same_size(torch.zeros({}), torch.ones({})))
    H.raises(function() torch.zeros(2):is_same_size({ 2 }) end, 'is_same_size', 'tensor')
    local signed = { float32 = true, float64 = true, float16 = true, bfloat16 = true, int64 = true, int32 = true,
      int16 = true, int8 = true, uint8 = false, bool = false }
    for _, dt in ipairs(H.all_dtypes) do
      assert.are.equal(signed[dt.name], torch.zeros(1, { dtype = dt }):is_signed(), dt.name)
      assert.are.equal(signed[dt.name], torch.is_signed(torch.zeros(1, { dtype = dt })), dt.name)
      assert.is_false(torch.zeros(1, { dtype = dt }):is_complex())
    end
    assert.is_false(torch.is_complex(torch.zeros(1)))
    assert.is_false(torch.zeros(1):is_inference())
    assert.is_false(torch.is_inference(torch.zeros(1)))
    local inf
    torch.inference_mode(function() inf = torch.zeros(1) end)
    assert.is_true(torch.is_inference(inf))
  end)

  it('new_empty_strided', function()
    local x = torch.zeros(2, { dtype = torch.float64 })
    local e = x:new_empty_strided({ 2, 3 }, { 1, 2 })
    assert.are.same({ 2, 3 }, { table.unpack(e.shape) })
    assert.are.same({ 1, 2 }, e:stride())
    assert.are.equal(torch.float64, e.dtype)
    local f = x:new_empty_strided({ 2 }, { 1 }, { dtype = torch.int32, requires_grad = false })
    assert.are.equal(torch.int32, f.dtype)
    assert.is_true(x:new_empty_strided({ 2 }, { 1 }, { requires_grad = true }).requires_grad)
    H.raises(function() x:new_empty_strided({ 2 }, { 1 }, { dtyp = torch.int32 }) end, "unknown option 'dtyp'")
  end)

  it('split_with_sizes, unsafe_split, unsafe_chunk, narrow_copy', function()
    local x = torch.arange(1, 11)
    local p = x:split_with_sizes({ 3, 7 })
    assert.are.equal(2, #p)
    H.assert_values(p[1], { 1, 2, 3 })
    H.assert_values(p[2], { 4, 5, 6, 7, 8, 9, 10 })
    local m = torch.arange(1, 7):reshape(2, 3)
    local q = torch.split_with_sizes(m, { 1, 2 }, 2)
    H.assert_values(q[2], { { 2, 3 }, { 5, 6 } })
    H.raises(function() x:split_with_sizes(3) end, 'split_with_sizes', 'table')
    H.raises(function() x:split_with_sizes({ 3, 3 }) end, 'split')
    H.assert_values(x:unsafe_split(4)[3], { 9, 10 })
    H.assert_values(torch.unsafe_split(x, 4)[1], { 1, 2, 3, 4 })
    H.assert_values(x:unsafe_chunk(2)[2], { 6, 7, 8, 9, 10 })
    H.assert_values(torch.unsafe_chunk(m, 3, 2)[3], { { 3 }, { 6 } })
    H.assert_values(x:unsafe_split_with_sizes({ 5, 5 })[2], { 6, 7, 8, 9, 10 })
    local n = m:narrow_copy(2, 2, 2)
    H.assert_values(n, { { 2, 3 }, { 5, 6 } })
    assert.is_true(n:is_contiguous())
    n[1][1] = 100
    assert.are.equal(2, m[1][2]) -- a copy, not a view
    H.assert_values(torch.narrow_copy(x, 1, 9, 2), { 9, 10 })
  end)

  it('torch.range: the end included, the default dtype, float64 arithmetic, a deprecation warning', function()
    -- PyTorch's warning, once, on stderr
    local real, said = io.stderr, {}
    io.stderr = { write = function(_, ...) for _, m in ipairs { ... } do said[#said + 1] = m end end }
    local ok, r = pcall(torch.range, 1, 4)
    torch.range(1, 2)
    io.stderr = real
    assert(ok, r)
    assert.is_true(#said <= 1)
    if #said == 1 then assert.matches('torch.range is deprecated', said[1], 1, true) end
    assert.are.equal(torch.get_default_dtype(), r.dtype)
    H.assert_values(r, { 1, 2, 3, 4 })
    H.assert_values(torch.range(0, 1, 0.25), { 0, 0.25, 0.5, 0.75, 1 })
    H.assert_values(torch.range(5, 1, -2), { 5, 3, 1 })
    H.assert_values(torch.range(0, 0.95, 0.1), { 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9 }, 1e-6)
    local i = torch.range(1, 3, { dtype = torch.int64 })
    assert.are.equal(torch.int64, i.dtype)
    H.assert_values(i, { 1, 2, 3 })
    assert.is_true(torch.range(0, 1, 0.5, { requires_grad = true }).requires_grad)
    H.raises(function() torch.range(1, 2, 0) end, 'range', 'nonzero')
    H.raises(function() torch.range(1, 0) end, 'range', 'inconsistent with step sign')
    H.raises(function() torch.range(0, 2, -1) end, 'range', 'step sign')
    H.raises(function() torch.range('a', 2) end, 'range', 'number')
  end)

  it('torch.scalar_tensor', function()
    local s = torch.scalar_tensor(3)
    assert.are.equal(0, s:dim())
    assert.are.equal(torch.get_default_dtype(), s.dtype)
    assert.are.equal(3, s:item())
    assert.are.equal(1, torch.scalar_tensor(true):item())
    assert.are.equal(torch.int64, torch.scalar_tensor(2, { dtype = torch.int64 }).dtype)
    H.raises(function() torch.scalar_tensor(torch.ones(1)) end, 'scalar_tensor', 'number')
    H.raises(function() torch.scalar_tensor({ 1 }) end, 'scalar_tensor')
  end)

  it('torch.as_tensor and torch.asarray', function()
    local t = torch.tensor({ 1.0, 2 })
    assert.are.equal(t, torch.as_tensor(t))
    assert.are.equal(t, torch.as_tensor(t, { dtype = torch.float32, device = 'cpu' }))
    local d = torch.as_tensor(t, { dtype = torch.float64 })
    assert.are.equal(torch.float64, d.dtype)
    d[1] = 5
    assert.are.equal(1, t[1])
    H.assert_values(torch.as_tensor({ { 1, 2 }, { 3, 4 } }), { { 1, 2 }, { 3, 4 } })
    assert.are.equal(torch.int64, torch.as_tensor({ 1, 2 }).dtype)
    assert.are.equal(torch.float64, torch.as_tensor(2.5, { dtype = torch.float64 }).dtype)
    -- the history is kept through a conversion
    local a = leaf({ 2 })
    local c = torch.as_tensor(a, { dtype = torch.float32 })
    c:sum():backward()
    H.assert_values(a.grad, { 1, 1 })
    H.raises(function() torch.as_tensor('x') end, 'as_tensor')
    H.raises(function() torch.as_tensor(t, { copy = true }) end, "unknown option 'copy'")

    assert.are.equal(t, torch.asarray(t))
    local cp = torch.asarray(t, { copy = true })
    assert.are_not.equal(t, cp)
    cp[1] = 9
    assert.are.equal(1, t[1])
    assert.are.equal(torch.int32, torch.asarray(t, { dtype = torch.int32 }).dtype)
    H.raises(function() torch.asarray(t, { copy = false, dtype = torch.int32 }) end, 'asarray', "can't alias", 'int32')
    H.raises(function() torch.asarray(t, { copy = false, device = 'cpu:1' }) end, 'asarray', "can't alias")
    local rg = torch.asarray(t, { requires_grad = true })
    assert.is_true(rg.requires_grad)
    assert.is_true(rg.is_leaf)
    rg:detach()[2] = 7 -- shares t's memory
    assert.are.equal(7, t[2])
    H.assert_values(torch.asarray({ 1, 2, 3 }, { dtype = torch.float64 }), { 1, 2, 3 })
  end)
end)
