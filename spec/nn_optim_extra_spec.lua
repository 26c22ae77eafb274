-- nn.Softshrink / nn.Hardshrink (F.softshrink / F.hardshrink) against plain-Lua definitions, with
-- gradcheck, non-contiguous inputs, every floating dtype and their errors; and
-- optim.lr_scheduler.CyclicLR against PyTorch 1.13's rates and momenta
-- (spec/data/cyclic_lr_reference.lua, written by tools/gen_cyclic_lr_reference.py) and against its
-- formulas written out in Lua.
local torch = require 'torch'
local nn, F, optim = torch.nn, torch.F, torch.optim
local REF = dofile('spec/data/cyclic_lr_reference.lua')

local VALUES = { -2.0, -0.75, -0.5, -0.25, 0.0, 0.3, 0.5, 0.5001, 1.25, 3.0, 0 / 0 }

local function soft_ref(v, l)
  if v > l then return v - l elseif v < -l then return v + l else return 0.0 end
end
local function hard_ref(v, l)
  if v >= -l and v <= l then return 0.0 end
  return v
end

local function same_values(expected, got, tol, what)
  assert.are.equal(#expected, #got, what)
  for i = 1, #expected do
    local e, g = expected[i], got[i]
    if e ~= e then
      assert(g ~= g, string.format('%s[%d]: expected nan, got %.17g', what, i, g))
    else
      assert(math.abs(e - g) <= tol * math.max(1, math.abs(e)), string.format('%s[%d]: expected %.17g, got %.17g', what, i, e, g))
    end
  end
end

describe('Softshrink and Hardshrink', function()
  local cases = { { 'softshrink', soft_ref, nn.Softshrink }, { 'hardshrink', hard_ref, nn.Hardshrink } }

  it('match their definitions in every floating dtype, for several lambd (NaN as PyTorch)', function()
    for _, c in ipairs(cases) do
      local name, ref = c[1], c[2]
      for _, dt in ipairs { torch.float64, torch.float32, torch.float16, torch.bfloat16 } do
        local x = torch.tensor(VALUES, { dtype = dt })
        local xs = x:double():totable()
        for _, l in ipairs { 0.5, 0.0, 1.0, 0.25 } do
          local exp = {}
          for i, v in ipairs(xs) do exp[i] = ref(v, l) end
          local y = F[name](x, l)
          assert.are.equal(dt, y.dtype)
          local tol = (dt == torch.float64 and 1e-15) or (dt == torch.float32 and 1e-6) or 1e-2
          same_values(exp, y:double():totable(), tol, name .. ' ' .. dt.name .. ' lambd ' .. l)
        end
      end
    end
    -- defaults: lambd = 0.5; the options table form
    local x = torch.tensor(VALUES, { dtype = torch.float64 })
    assert.is_true(F.softshrink(x):isclose(F.softshrink(x, 0.5), { equal_nan = true }):all():item())
    assert.is_true(F.hardshrink(x, { lambd = 1.0 }):isclose(F.hardshrink(x, 1.0), { equal_nan = true }):all():item())
    -- hardshrink takes a negative lambd (nothing is zeroed), as PyTorch's
    same_values({ -2.0, 0.3 }, F.hardshrink(torch.tensor({ -2.0, 0.3 }, { dtype = torch.float64 }), -1):totable(), 0, 'neg')
  end)

  it('take non-contiguous inputs', function()
    local base = torch.randn(4, 6, { dtype = torch.float64 })
    local x = base:t()
    assert.is_false(x:is_contiguous())
    for _, c in ipairs(cases) do
      assert.is_true(F[c[1]](x, 0.3):equal(F[c[1]](x:contiguous(), 0.3)))
    end
  end)

  it('pass gradients: 1 outside [-lambd, lambd], 0 inside (gradcheck and the values)', function()
    for _, c in ipairs(cases) do
      -- points away from the kinks, where finite differences are defined
      local x = torch.tensor({ { -2.0, -0.7, -0.2 }, { 0.1, 0.45, 1.3 } }, { dtype = torch.float64, requires_grad = true })
      assert.is_true(torch.autograd.gradcheck(function(a) return F[c[1]](a, 0.5) end, { x }))
      local m = c[3](0.5)
      m(x):sum():backward()
      assert.are.same({ { 1, 1, 0 }, { 0, 0, 1 } }, x.grad:totable())
    end
  end)

  it('are modules with a lambd field, printed as PyTorch prints them', function()
    local s, h = nn.Softshrink(), nn.Hardshrink(0.3)
    assert.are.equal(0.5, s.lambd)
    assert.are.equal(0.3, h.lambd)
    assert.are.equal('Softshrink(0.5)', tostring(s))
    assert.are.equal('Hardshrink(0.3)', tostring(h))
    assert.are.equal('Softshrink(1.0)', tostring(nn.Softshrink({ lambd = 1 })))
    assert.are.equal(0, #s:parameters())
    local x = torch.tensor({ -1.0, 0.2, 0.9 })
    assert.are.same(F.softshrink(x, 0.5):totable(), s(x):totable())
    assert.are.same(F.hardshrink(x, 0.3):totable(), h(x):totable())
  end)

  it('refuse bad arguments with clear errors', function()
    assert.has_error(function() F.softshrink(torch.zeros(2), -1) end, 'softshrink: lambd must be greater or equal to 0, got -1')
    assert.has_error(function() nn.Softshrink(-0.5) end, 'Softshrink: lambd must be greater or equal to 0, got -0.5')
    assert.has_error(function() F.softshrink(torch.tensor({ 1, 2 })) end, 'softshrink: expected a floating point input, got torch.int64')
    assert.has_error(function() F.hardshrink(torch.tensor({ 1, 2 }, { dtype = torch.int32 })) end,
      'hardshrink: expected a floating point input, got torch.int32')
    assert.has_error(function() F.hardshrink(torch.zeros(2), 'big') end, 'hardshrink: lambd must be a number, got string')
    assert.has_error(function() F.softshrink({ 1, 2 }) end, 'softshrink: expected input to be a tensor, got table')
    assert.has_error(function() F.hardshrink(torch.zeros(2), { lamda = 1 }) end)
    assert.has_error(function() nn.Hardshrink('x') end, 'Hardshrink: lambd must be a number, got string')
  end)
end)

describe('optim.lr_scheduler.CyclicLR', function()
  local function inverse(x) return 1 / (1 + 0.1 * x) end

  local function make_opt()
    local ps = { nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(3)) }
    return optim.SGD({ { params = { ps[1] } }, { params = { ps[2] }, lr = 0.5 } }, { lr = 0.1, momentum = 0.5 })
  end
  local function run(opts, steps)
    local o = {}
    for k, v in pairs(opts) do o[k] = v end
    if o.scale_fn == 'inverse' then o.scale_fn = inverse end
    local base, top = o.base_lr, o.max_lr
    o.base_lr, o.max_lr = nil, nil
    local opt = make_opt()
    local s = optim.lr_scheduler.CyclicLR(opt, base, top, o)
    local lrs, moms = {}, {}
    for k = 1, steps do
      lrs[k] = s:get_last_lr()
      moms[k] = { opt.param_groups[1].momentum, opt.param_groups[2].momentum }
      opt:step()
      s:step()
    end
    return lrs, moms, s, opt
  end

  -- the policy written out: triangle wave x in [0, 1] of the step, its amplitude scaled
  local function closed_form(o, t, base, top, bm, mm)
    local up = o.step_size_up
    local down = o.step_size_down or up
    local cycle = math.floor(1 + t / (up + down))
    local pos = t - (cycle - 1) * (up + down) -- steps into the cycle
    local frac = pos <= up and pos / up or 1 - (pos - up) / down
    local scale
    if o.scale_fn then scale = inverse((o.scale_mode or 'cycle') == 'cycle' and cycle or t)
    elseif o.mode == 'triangular2' then scale = 0.5 ^ (cycle - 1)
    elseif o.mode == 'exp_range' then scale = o.gamma ^ t
    else scale = 1 end
    return base + (top - base) * frac * scale, mm and (mm - (mm - bm) * frac * scale)
  end
  local function at(v, i) return type(v) == 'table' and v[i] or v end

  it("gives PyTorch 1.13's rates and momenta, step by step, in every mode", function()
    for _, c in ipairs(REF) do
      local lrs, moms = run(c.opts, #c.lrs)
      for k = 1, #c.lrs do
        for g = 1, 2 do
          assert.are.equal(c.lrs[k][g], lrs[k][g], string.format('%s: lr of group %d at step %d', c.name, g, k - 1))
          assert.are.equal(c.momenta[k][g], moms[k][g], string.format('%s: momentum of group %d at step %d', c.name, g, k - 1))
        end
      end
    end
  end)

  it('agrees with the policy written out', function()
    for _, c in ipairs(REF) do
      local lrs, moms = run(c.opts, 25)
      local o = c.opts
      for k = 1, 25 do
        for g = 1, 2 do
          local cm = o.cycle_momentum ~= false
          local lr, m = closed_form(o, k - 1, at(o.base_lr, g), at(o.max_lr, g), at(o.base_momentum or 0.8, g),
            cm and at(o.max_momentum or 0.9, g) or nil)
          assert(math.abs(lr - lrs[k][g]) < 1e-12, string.format('%s lr step %d: %.17g vs %.17g', c.name, k - 1, lr, lrs[k][g]))
          if cm then assert(math.abs(m - moms[k][g]) < 1e-12, c.name .. ' momentum') else assert.are.equal(0.5, moms[k][g]) end
        end
      end
    end
  end)

  it('saves and restores its state (a built-in mode), and step(epoch) jumps', function()
    local o = { base_lr = 0.01, max_lr = 0.1, step_size_up = 3, mode = 'triangular2' }
    local lrs, _, s = run(o, 7)
    local sd = s:state_dict()
    local opt2 = make_opt()
    local s2 = optim.lr_scheduler.CyclicLR(opt2, 0.01, 0.1, { step_size_up = 3, mode = 'triangular2' })
    s2:load_state_dict(sd)
    s:step(); s2:step()
    assert.are.same(s:get_last_lr(), s2:get_last_lr())
    s2:step(3)
    assert.are.same({ 0.1, 0.1 }, s2:get_last_lr())
    assert.are.equal(0.01, lrs[1][1])
  end)

  it('refuses bad arguments with clear errors', function()
    local opt = make_opt()
    local C = optim.lr_scheduler.CyclicLR
    assert.has_error(function() C(opt, 0.01, 0.1, { mode = 'square' }) end,
      "CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' when scale_fn is not given, got square")
    assert.has_error(function() C(opt, { 0.01 }, 0.1) end, 'CyclicLR: expected 2 values for base_lr, got 1')
    assert.has_error(function() C(opt, 0.01, 0.1, { step_size_up = 0 }) end,
      'CyclicLR: step_size_up must be a positive number, got 0')
    assert.has_error(function() C(opt, 0.01, 0.1, { scale_fn = inverse, scale_mode = 'epoch' }) end,
      "CyclicLR: scale_mode must be 'cycle' or 'iterations', got epoch")
    assert.has_error(function() C(opt, 0.01, 0.1, { scale_fn = 2 }) end, 'CyclicLR: scale_fn must be a function, got number')
    assert.has_error(function() C(opt, 0.01, 0.1, { cycle = 1 }) end, "CyclicLR: unknown option 'cycle'")
    local adam = optim.Adam({ nn.Parameter(torch.zeros(2)) }, { lr = 0.1 })
    assert.has_error(function() C(adam, 0.01, 0.1) end, 'CyclicLR: optimizer must support momentum with `cycle_momentum` option enabled')
    assert.has_no.errors(function() C(adam, 0.01, 0.1, { cycle_momentum = false }) end)
  end)
end)
