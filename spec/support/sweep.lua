-- Shared by the elementwise sweeps against PyTorch (spec/elementwise_sweep_spec.lua,
-- spec/inplace_sweep_spec.lua): the value comparison (integer and bool results and those of the
-- exact ops exactly, the sign of a zero counting but for the ops in ZERO_SIGN_FREE; the
-- transcendental ops' float results within a tolerance suited to the dtype; NaN equals NaN), the
-- names of cases, and one test per op.
local S = {}

-- ops whose float results are compared within TOL; the others' exactly. div is here for a number
-- divided by a tensor, which PyTorch computes as the number times the tensor's reciprocal (an ulp
-- off; lutorch divides); ldexp for its 2^e (pow: the GPU's is an ulp off the CPU's)
S.TRANSCENDENTAL = {}
for _, op in ipairs { 'sqrt', 'rsqrt', 'exp', 'exp2', 'expm1', 'log', 'log2', 'log10', 'log1p', 'sin', 'cos',
  'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh', 'sigmoid', 'logit', 'erf',
  'erfc', 'erfinv', 'lgamma', 'digamma', 'i0', 'sinc', 'pow', 'atan2', 'hypot', 'xlogy', 'logaddexp',
  'logaddexp2', 'div', 'ldexp' } do
  S.TRANSCENDENTAL[op] = true
end
-- ops where the sign of a zero result is not compared (PyTorch 1.13 gives either, by dtype)
S.ZERO_SIGN_FREE = { maximum = true, minimum = true, fmax = true, fmin = true, clamp = true }
S.TOL = { float32 = 2e-6, float64 = 1e-13, float16 = 2e-3, bfloat16 = 1.6e-2 }

-- the difference between got and want (flat tables) for op's result of dtype (a name), or nil
function S.differs(op, got, want, dtype)
  local exact, signed = not S.TRANSCENDENTAL[op], not S.ZERO_SIGN_FREE[op]
  local tol = S.TOL[dtype]
  if #got ~= #want then return ('%d values, expected %d'):format(#got, #want) end
  for i, w in ipairs(want) do
    local g = got[i]
    if type(w) == 'boolean' or not tol then
      if g ~= w then return ('element %d is %s, expected %s'):format(i, tostring(g), tostring(w)) end
    elseif w ~= w then
      if g == g then return ('element %d is %.17g, expected nan'):format(i, g) end
    elseif exact and (g ~= w or (signed and w == 0 and 1 / g ~= 1 / w)) then
      return ('element %d is %.17g, expected %.17g'):format(i, g, w)
    elseif not exact and not (g == w or math.abs(g - w) <= tol * (1 + math.abs(w))) then
      return ('element %d is %.17g, expected %.17g (tolerance %g)'):format(i, g, w, tol)
    end
  end
end

-- op(args..., {k=v, ...}) as the sweeps name a case in their failures
function S.describe(op, args, kw)
  local parts, kws = {}, {}
  for i, a in ipairs(args) do parts[i] = tostring(a) end
  for k, v in pairs(kw or {}) do kws[#kws + 1] = k .. '=' .. tostring(v) end
  table.sort(kws)
  return ('%s(%s%s)'):format(op, table.concat(parts, ', '), #kws > 0 and ', {' .. table.concat(kws, ', ') .. '}' or '')
end

-- one busted `it` (busted's, passed in) per op (the field key of a case), in the order the ops
-- first come, each checking every case of its op with check(case, fails) and failing with the
-- list of fails
function S.it_per_op(it, cases, key, check)
  local order, by_op = {}, {}
  for _, c in ipairs(cases) do
    local op = c[key]
    if not by_op[op] then by_op[op] = {}; order[#order + 1] = op end
    table.insert(by_op[op], c)
  end
  for _, op in ipairs(order) do
    it(op, function()
      local fails = {}
      for _, c in ipairs(by_op[op]) do check(c, fails) end
      assert(#fails == 0, #fails .. ' failures:\n' .. table.concat(fails, '\n'))
    end)
  end
end

-- inside a describe block: the sweep's tests again on the GPU (body() declares them), with
-- set_device('cuda') before them and set_device('cpu') after (the spec makes its inputs on that
-- device); reported pending, with the reason, where no GPU is present. dsl: busted's pending,
-- setup and teardown, which live in the spec's environment (as it_per_op takes `it`)
function S.on_gpu(dsl, set_device, body)
  local torch = require 'torch'
  if not torch.cuda.is_available() then
    dsl.pending('no CUDA device: ' .. (torch._cuda.unavailable_reason() or ''))
    return
  end
  dsl.setup(function() set_device('cuda') end)
  dsl.teardown(function() set_device('cpu') end)
  body()
end

return S
