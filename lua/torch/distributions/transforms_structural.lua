-- The transforms of parts and shapes, as PyTorch 1.13 has them: IndependentTransform (a transform
-- whose rightmost batch dimensions join the event), ReshapeTransform (the event reshaped, log |det J|
-- zero), CatTransform and StackTransform (one transform for each slice along a dimension, as
-- torch.cat and torch.stack join them). Dimensions are 1-based (negative ones count from the end):
-- PyTorch's default dim=0 is dim = 1 here. Loaded by transforms.lua, which it extends.
local torch = require 'torch'
local class = require 'torch.class'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'

return function(T)
  local Transform = T.Transform
  local name_of = T._name_of

  -- ts: a list of transforms (the argument `what` of op)
  local function transform_list(op, what, ts)
    if type(ts) ~= 'table' or getmetatable(ts) ~= nil then
      U.raise('%s: %s must be a list of transforms, got %s', op, what, type(ts))
    end
    for i, t in ipairs(ts) do
      if not class.isinstance(t, Transform) then U.raise('%s: %s[%d] is not a transform (%s)', op, what, i, type(t)) end
    end
    if #ts == 0 then U.raise('%s: %s must hold at least one transform', op, what) end
    return ts
  end

  -- ---- IndependentTransform ----

  local Independent = Transform:extend('IndependentTransform')
  T.IndependentTransform = Independent
  --- IndependentTransform(base_transform, reinterpreted_batch_ndims, {cache_size}): base_transform,
  --- with its log |det J| summed over that many more rightmost dimensions
  function Independent:init(...)
    local a = U.args('IndependentTransform', { 'base_transform', 'reinterpreted_batch_ndims', 'cache_size' }, ...)
    if not class.isinstance(a.base_transform, Transform) then
      U.raise('IndependentTransform: base_transform must be a transform, got %s', type(a.base_transform))
    end
    Transform.init(self, { cache_size = a.cache_size })
    self.base_transform = a.base_transform:with_cache(self._cache_size)
    self.reinterpreted_batch_ndims = U.count('IndependentTransform', 'reinterpreted_batch_ndims',
      a.reinterpreted_batch_ndims)
  end
  Independent.with_cache = T._with_cache_of(function(t) return { t.base_transform, t.reinterpreted_batch_ndims } end)
  local iprops = Independent.properties
  function iprops.domain(t) return C.independent(t.base_transform.domain, t.reinterpreted_batch_ndims) end
  function iprops.codomain(t) return C.independent(t.base_transform.codomain, t.reinterpreted_batch_ndims) end
  function iprops.bijective(t) return t.base_transform.bijective end
  function iprops.sign(t) return t.base_transform.sign end
  local function enough_dims(t, v, n)
    if not torch.is_tensor(v) then U.raise('%s: expected a tensor, got %s', name_of(t), type(v)) end
    if v:dim() < n then
      U.raise('%s: too few dimensions on input (%d, expected at least %d)', name_of(t), v:dim(), n)
    end
  end
  function Independent:_call(x)
    enough_dims(self, x, self.domain.event_dim)
    return self.base_transform(x)
  end
  function Independent:_inverse(y)
    enough_dims(self, y, self.codomain.event_dim)
    return self.base_transform.inv(y)
  end
  function Independent:log_abs_det_jacobian(x, y)
    return U.sum_rightmost(self.base_transform:log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)
  end
  function Independent:__tostring()
    return ('IndependentTransform(%s, %d)'):format(tostring(self.base_transform), self.reinterpreted_batch_ndims)
  end
  function Independent:forward_shape(shape) return self.base_transform:forward_shape(shape) end
  function Independent:inverse_shape(shape) return self.base_transform:inverse_shape(shape) end

  -- ---- ReshapeTransform ----

  local Reshape = Transform:extend('ReshapeTransform')
  T.ReshapeTransform = Reshape
  Reshape.bijective = true

  local function numel(shape)
    local n = 1
    for _, s in ipairs(shape) do n = n * s end
    return n
  end

  local function event_shape(what, s)
    if type(s) ~= 'table' or torch.is_tensor(s) then
      U.raise('ReshapeTransform: %s must be a table of sizes, got %s', what, type(s))
    end
    local out = {}
    for i = 1, #s do out[i] = U.count('ReshapeTransform', what, s[i]) end
    return U.size(out)
  end

  --- ReshapeTransform(in_shape, out_shape, {cache_size}): the rightmost in_shape of x reshaped to
  --- out_shape (of as many elements); (the shapes are positional: {} is a shape, not options)
  function Reshape:init(in_shape, out_shape, o)
    self.in_shape, self.out_shape = event_shape('in_shape', in_shape), event_shape('out_shape', out_shape)
    if numel(self.in_shape) ~= numel(self.out_shape) then
      U.raise('ReshapeTransform: in_shape %s and out_shape %s have different numbers of elements',
        tostring(self.in_shape), tostring(self.out_shape))
    end
    Transform.init(self, o)
  end
  Reshape.with_cache = T._with_cache_of(function(t) return { t.in_shape, t.out_shape } end)
  function Reshape.properties.domain(t) return C.independent(C.real, #t.in_shape) end
  function Reshape.properties.codomain(t) return C.independent(C.real, #t.out_shape) end

  -- shape with its rightmost `from` replaced by `to` (method names the check in errors)
  local function swap_event(t, method, shape, from, to)
    if type(shape) ~= 'table' or torch.is_tensor(shape) then
      U.raise('ReshapeTransform.%s: expected a shape (a table of sizes), got %s', method, type(shape))
    end
    local cut = #shape - #from
    if cut < 0 then
      U.raise('ReshapeTransform.%s: too few dimensions on input (%d, expected at least %d)', method, #shape, #from)
    end
    local tail = U.slice(shape, cut + 1)
    if tail ~= from then
      U.raise('ReshapeTransform.%s: expected the rightmost sizes %s, got %s', method, tostring(from), tostring(tail))
    end
    return U.cat(U.slice(shape, 1, cut), to)
  end
  local function tensor_arg(v)
    if not torch.is_tensor(v) then U.raise('ReshapeTransform: expected a tensor, got %s', type(v)) end
    return v
  end
  function Reshape:_call(x)
    return x:reshape(swap_event(self, 'forward', tensor_arg(x).shape, self.in_shape, self.out_shape))
  end
  function Reshape:_inverse(y)
    return y:reshape(swap_event(self, 'inverse', tensor_arg(y).shape, self.out_shape, self.in_shape))
  end
  function Reshape:log_abs_det_jacobian(x)
    return x:new_zeros(U.slice(x.shape, 1, x:dim() - #self.in_shape))
  end
  function Reshape:forward_shape(shape) return swap_event(self, 'forward_shape', shape, self.in_shape, self.out_shape) end
  function Reshape:inverse_shape(shape) return swap_event(self, 'inverse_shape', shape, self.out_shape, self.in_shape) end

  -- ---- CatTransform and StackTransform ----

  local function with_cache_all(ts, cache_size)
    if cache_size == 0 then return { table.unpack(ts) } end
    local out = {}
    for i, t in ipairs(ts) do out[i] = t:with_cache(cache_size) end
    return out
  end

  local function all_bijective(ts)
    for _, t in ipairs(ts) do
      if not t.bijective then return false end
    end
    return true
  end

  local Cat = Transform:extend('CatTransform')
  T.CatTransform = Cat
  --- CatTransform(tseq, dim = 1, lengths, {cache_size}): tseq[i] applied to the i-th slice along
  --- dim, of lengths[i] elements (1 each by default), the results joined as torch.cat does
  function Cat:init(...)
    local a = U.args('CatTransform', { 'tseq', 'dim', 'lengths', 'cache_size' }, ...)
    local ts = transform_list('CatTransform', 'tseq', a.tseq)
    Transform.init(self, { cache_size = a.cache_size })
    self.transforms = with_cache_all(ts, self._cache_size)
    local lengths = a.lengths
    if lengths == nil then
      lengths = {}
      for i = 1, #ts do lengths[i] = 1 end
    elseif type(lengths) ~= 'table' or #lengths ~= #ts then
      U.raise('CatTransform: lengths must be a list of %d lengths (one for each transform), got %s', #ts,
        type(lengths) == 'table' and #lengths .. ' of them' or type(lengths))
    end
    self.lengths = {}
    for i, n in ipairs(lengths) do self.lengths[i] = U.count('CatTransform', 'lengths[' .. i .. ']', n) end
    self.dim = U.dim_arg('CatTransform', a.dim)
  end
  Cat.with_cache = T._with_cache_of(function(t) return { t.transforms, t.dim, t.lengths } end)
  local cprops = Cat.properties
  function cprops.event_dim(t)
    local e = 0
    for _, p in ipairs(t.transforms) do e = math.max(e, p.event_dim) end
    return e
  end
  function cprops.length(t)
    local n = 0
    for _, l in ipairs(t.lengths) do n = n + l end
    return n
  end
  function cprops.bijective(t) return all_bijective(t.transforms) end
  local function parts_of(t, field)
    local out = {}
    for i, p in ipairs(t.transforms) do out[i] = p[field] end
    return out
  end
  function cprops.domain(t) return C.cat(parts_of(t, 'domain'), t.dim, t.lengths) end
  function cprops.codomain(t) return C.cat(parts_of(t, 'codomain'), t.dim, t.lengths) end

  -- fn(transform, slices...) on the slices of the tensors along dim, the results in a list
  local function each_slice(t, fn, ...)
    local vs = { ... }
    local ds = {}
    for i, v in ipairs(vs) do ds[i] = U.slice_dim(name_of(t), t.dim, v, t.length, i == 1 and 'input' or 'output') end
    local out, start = {}, 1
    for i, p in ipairs(t.transforms) do
      local n = t.lengths[i]
      local slices = {}
      for j, v in ipairs(vs) do slices[j] = v:narrow(ds[j], start, n) end
      out[i] = fn(p, table.unpack(slices))
      start = start + n
    end
    return out
  end
  -- (joined along dim as given, as PyTorch does)
  function Cat:_call(x) return torch.cat(each_slice(self, function(p, xs) return p(xs) end, x), self.dim) end
  function Cat:_inverse(y) return torch.cat(each_slice(self, function(p, ys) return p.inv(ys) end, y), self.dim) end
  function Cat:log_abs_det_jacobian(x, y)
    local event_dim = self.event_dim
    local terms = each_slice(self, function(p, xs, ys)
      local term = p:log_abs_det_jacobian(xs, ys)
      if p.event_dim < event_dim then term = U.sum_rightmost(term, event_dim - p.event_dim) end
      return term
    end, x, y)
    -- joined along dim where it is a batch dimension, summed where it is one of the event's
    local d = self.dim
    if d > 0 then d = d - 1 - x:dim() end
    d = d + event_dim
    if d < 0 then return torch.cat(terms, d) end
    local total = terms[1]
    for i = 2, #terms do total = total + terms[i] end
    return total
  end

  local Stack = Transform:extend('StackTransform')
  T.StackTransform = Stack
  --- StackTransform(tseq, dim = 1, {cache_size}): tseq[i] applied to x:select(dim, i), the results
  --- stacked as torch.stack does
  function Stack:init(...)
    local a = U.args('StackTransform', { 'tseq', 'dim', 'cache_size' }, ...)
    local ts = transform_list('StackTransform', 'tseq', a.tseq)
    Transform.init(self, { cache_size = a.cache_size })
    self.transforms = with_cache_all(ts, self._cache_size)
    self.dim = U.dim_arg('StackTransform', a.dim)
  end
  Stack.with_cache = T._with_cache_of(function(t) return { t.transforms, t.dim } end)
  local sprops = Stack.properties
  function sprops.bijective(t) return all_bijective(t.transforms) end
  function sprops.domain(t) return C.stack(parts_of(t, 'domain'), t.dim) end
  function sprops.codomain(t) return C.stack(parts_of(t, 'codomain'), t.dim) end

  -- fn(transform, slices...) on the i-th slices of the tensors, stacked along dim
  local function stack_slices(t, fn, ...)
    local vs = { ... }
    local ds = {}
    for i, v in ipairs(vs) do ds[i] = U.slice_dim(name_of(t), t.dim, v, #t.transforms, i == 1 and 'input' or 'output') end
    local out = {}
    for i, p in ipairs(t.transforms) do
      local slices = {}
      for j, v in ipairs(vs) do slices[j] = v:select(ds[j], i) end
      out[i] = fn(p, table.unpack(slices))
    end
    return torch.stack(out, t.dim)
  end
  function Stack:_call(x) return stack_slices(self, function(p, xs) return p(xs) end, x) end
  function Stack:_inverse(y) return stack_slices(self, function(p, ys) return p.inv(ys) end, y) end
  function Stack:log_abs_det_jacobian(x, y)
    return stack_slices(self, function(p, xs, ys) return p:log_abs_det_jacobian(xs, ys) end, x, y)
  end
end
