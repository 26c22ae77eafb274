-- torch.nn.functional across its options against PyTorch 1.13 (spec/data/functional_sweep_reference.lua,
-- made by tools/gen_functional_sweep.py): for each case the float64 outputs, the gradients of the
-- inputs for a fixed upstream gradient, the running statistics a call updates, and the outputs in
-- those of float32, float16 and bfloat16 that PyTorch computes the case in on the CPU, compared with
-- the float64 ones within the dtype's tolerance relative to the largest output (the inputs are
-- exact in every dtype, so only the rounding of the computation differs). Every case runs twice: on
-- contiguous inputs, and on the same values every other element of larger tensors.
--
-- Left out, as lutorch does not have them: embedding_bag's scale_grad_by_freq, conv_tbc (embedding's
-- scale_grad_by_freq is checked in spec/torch_names_spec.lua).
local torch = require 'torch'
local H = require 'spec.helpers'
local F = torch.nn.functional
local ref = dofile('spec/data/functional_sweep_reference.lua')

-- Departures from PyTorch kept on purpose, by the start of the cases' names:
local DEPARTURES = {
  -- PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32, in float64 too; lutorch's
  -- is 1/6 in the dtype
  ['hardsigmoid'] = { grad_tol = 1e-7 },
  -- kl_div's gradient in a target of 0 (log_target = false), where the derivative log t + 1 - x is
  -- -inf: PyTorch's is NaN (through xlogy), lutorch's finite; the input's gradient agrees
  ['kl_div zero targets'] = { no_grad = { t = true } },
  -- 1 - tanh(x)^2 cancels where |tanh(x)| is near 1: the gradients agree to 1e-9 of their size
  ['tanh large inputs'] = { grad_tol = 1e-8 },
}
-- Others, outside the cases: ctc_loss's gradient is that of the loss in log_probs (PyTorch's assumes
-- a log_softmax before it and is taken here through one); the gradient of an inf-norm distance
-- (pdist, cdist) at tied largest entries is shared among them by lutorch, given whole to each by
-- PyTorch (the cases have no ties); binary_cross_entropy's gradient in the target where the input
-- is 0 or 1 is PyTorch's -inf or inf, lutorch's the difference of the logs clamped at -100; an
-- adaptive max pooling to an output size of 0 is an error in lutorch, an empty tensor in PyTorch;
-- a size table for adaptive pooling is not checked for its length, as its nil entries (keep the
-- input's size) cannot be counted ({2, 2} for 3-D keeps the last size, PyTorch refuses it).

local function departure(name)
  for k, d in pairs(DEPARTURES) do
    if name:sub(1, #k) == k then return d end
  end
  return {}
end

local DTYPES = { float64 = torch.float64, float32 = torch.float32, float16 = torch.float16, bfloat16 = torch.bfloat16 }
-- relative to the largest magnitude of the expected tensor
local TOL = { float64 = 1e-10, float32 = 2e-5, float16 = 4e-3, bfloat16 = 3e-2 }

-- the generator's inputs: odd / 64 values, scaled and shifted (exact in every float dtype)
local function gen(g)
  local shape, k, scale, shift = g[1], g[2], g[3], g[4]
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = (2 * ((i * 37 + k * 11) % 97) - 95) / 64 * scale + shift end
  return torch.tensor(v, { dtype = torch.float64 }):reshape(shape)
end

local function input(spec, dtype, strided)
  local t
  if spec.gen then
    t = gen(spec.gen):to(dtype)
  elseif spec.ints then
    t = torch.tensor(spec.ints, { dtype = torch.int64 }):reshape(spec.shape)
  else
    t = torch.tensor(spec.data, { dtype = torch.float64 }):reshape(spec.shape):to(dtype)
  end
  -- the same values every other element of a larger tensor: strides of twice the size
  if strided and t:dim() > 0 then t = torch.stack({ t, torch.zeros_like(t) }, -1):select(-1, 1) end
  return t
end

-- an argument of the call: {ref = name} is an input (its log_softmax along a dim with
-- log_softmax = dim), {none = true} nil, other tables copied through
local function resolve(v, ts)
  if type(v) ~= 'table' then return v end
  if v.ref then return v.log_softmax and F.log_softmax(ts[v.ref], v.log_softmax) or ts[v.ref] end
  if v.none then return nil end
  local r = {}
  for k, x in pairs(v) do r[k] = resolve(x, ts) end
  return r
end

local function call(c, dtype, grads, strided)
  local ts = {}
  for name, spec in pairs(c.inputs) do
    ts[name] = input(spec, dtype, strided)
    if grads and grads[name] then ts[name]:requires_grad_() end
  end
  local args = {}
  for i = 1, c.nargs do args[i] = resolve(c.args[i], ts) end
  local space, name = c.fn:match('^(%w+)%.([%w_]+)$')
  local fn = (space == 'F' and F or torch)[name]
  assert(fn, c.fn .. ' is missing')
  return ts, table.pack(fn(table.unpack(args, 1, c.nargs)))
end

local function dims(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

-- got (a tensor) against want's values (a flat list) and shape, within tol of the largest |want|
local function compare(got, shape, want, tol, what)
  assert(torch.is_tensor(got), what .. ': not a tensor')
  if shape then
    local gs = dims(got)
    assert(#gs == #shape and table.concat(gs, ',') == table.concat(shape, ','),
      string.format('%s: shape {%s}, expected {%s}', what, table.concat(gs, ','), table.concat(shape, ',')))
  end
  local g = H.flatten((got.dtype.is_floating_point and got:detach():to(torch.float64) or got):totable())
  assert(#g == #want, string.format('%s: %d values, expected %d', what, #g, #want))
  local scale = 0
  for _, w in ipairs(want) do
    if w == w and math.abs(w) ~= math.huge then scale = math.max(scale, math.abs(w)) end
  end
  for i, w in ipairs(want) do
    local v = g[i]
    local ok = v == w or (v ~= v and w ~= w) or math.abs(v - w) <= tol * (math.abs(w) + scale)
    if not ok then error(string.format('%s: element %d is %.17g, expected %.17g', what, i, v, w), 0) end
  end
end

local function compare_ref(got, r, tol, what)
  compare(got, r.shape, r.data or r.ints, r.data and tol or 0, what)
end

local function check(c, strided)
      local dep = departure(c.name)
      local ts, outs = call(c, torch.float64, c.grads, strided)
      for j, r in ipairs(c.outputs) do compare_ref(outs[j], r, TOL.float64, 'output ' .. j) end
      for name, r in pairs(c.mutated or {}) do compare_ref(ts[name], r, TOL.float64, name .. ' after the call') end
      if c.grads then
        outs[1]:backward(gen { dims(outs[1]), 5, 0.5, 0 })
        for name, r in pairs(c.grads) do
          if not (dep.no_grad and dep.no_grad[name]) then
            local g = ts[name].grad or torch.zeros_like(ts[name])
            compare_ref(g, r, dep.grad_tol or TOL.float64, 'gradient of ' .. name)
          end
        end
      end
      for _, dname in ipairs(c.low or {}) do
        local dtype = DTYPES[dname]
        local _, louts = call(c, dtype, nil, strided)
        assert(louts[1].dtype == dtype, string.format('%s output has dtype %s', dname, tostring(louts[1].dtype)))
        compare_ref(louts[1], c.outputs[1], TOL[dname], dname .. ' output')
      end
end

describe('torch.nn.functional against PyTorch across options', function()
  for _, c in ipairs(ref) do
    it(c.name, function() check(c, false) end)
  end
end)

describe('torch.nn.functional against PyTorch across options, on non-contiguous inputs', function()
  for _, c in ipairs(ref) do
    it(c.name, function() check(c, true) end)
  end
end)

describe('F.embedding and nn.Embedding with max_norm', function()
  it("renormalise the rows looked up, to max_norm / (norm + 1e-7) of themselves, in place", function()
    local w = torch.tensor({ { 3, 4 }, { 0.3, 0.4 }, { 0, 2 } }, { dtype = torch.float64 })
    local m = torch.nn.Embedding.from_pretrained(w:clone(), { max_norm = 1, norm_type = 2 })
    local y = m(torch.tensor({ { 1, 2 }, { 1, 1 } }))
    local s = 1 / (5 + 1e-7)
    H.assert_values(y, { { { 3 * s, 4 * s }, { 0.3, 0.4 } }, { { 3 * s, 4 * s }, { 3 * s, 4 * s } } }, 1e-15)
    -- row 3 is not looked up: left as it was
    H.assert_values(m.weight, { { 3 * s, 4 * s }, { 0.3, 0.4 }, { 0, 2 } }, 1e-15)
  end)
end)
