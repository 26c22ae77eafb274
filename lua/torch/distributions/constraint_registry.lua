-- torch.distributions.biject_to and transform_to, as PyTorch 1.13's constraint_registry: from a
-- constraint to a transform from the reals (of the right shape) onto the constrained set.
-- biject_to(c) is a bijection (for HMC and the like: c must allow one); transform_to(c) need not be
-- (SoftmaxTransform onto the simplex, LowerCholeskyTransform onto lower Cholesky factors), for
-- optimisation. A registry maps a constraint's class to a factory fn(constraint) -> transform:
-- registry:register(C.positive, fn) (an instance stands for its class) or
-- registry:register(C.greater_than)(fn). The registrations are PyTorch's, in its order, so that the
-- later ones win as there: biject_to(constraints.positive) is ComposeTransform{ExpTransform(),
-- AffineTransform(0.0, 1)}, as greater_than's factory replaced positive's in PyTorch.
-- positive_definite has no transform in 1.13 (nor here).
local class = require 'torch.class'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local T = require 'torch.distributions.transforms'

local R = {}

local ConstraintRegistry = class('ConstraintRegistry')
R.ConstraintRegistry = ConstraintRegistry

--- ConstraintRegistry(name): an empty registry (name is used in its errors)
function ConstraintRegistry:init(name)
  self._registry = {}
  self._name = name or 'ConstraintRegistry'
end

--- registry:register(constraint, factory): factory(c) makes the transform of the constraints of
--- constraint's class (a Constraint subclass, or an instance of it); without factory, a function
--- that takes it (a decorator)
function ConstraintRegistry:register(constraint, factory)
  if factory == nil then return function(f) return self:register(constraint, f) end end
  local cls
  if class.isinstance(constraint, C.Constraint) then
    cls = getmetatable(constraint)
  elseif type(constraint) == 'table' and class.issubclass(constraint, C.Constraint) then
    cls = constraint
  else
    U.raise('%s.register: expected constraint to be either a Constraint subclass or instance, but got %s',
      self._name, tostring(constraint))
  end
  if type(factory) ~= 'function' then
    U.raise('%s.register: expected the factory to be a function, got %s', self._name, type(factory))
  end
  self._registry[cls] = factory
  return factory
end

--- registry(constraint): the transform onto the constraint's set
function ConstraintRegistry:__call(constraint)
  if not class.isinstance(constraint, C.Constraint) then
    U.raise('%s: expected a constraint, got %s', self._name, type(constraint))
  end
  local cls = getmetatable(constraint)
  local factory = self._registry[cls]
  if factory == nil then U.raise('%s: cannot transform %s constraints', self._name, rawget(cls, '__name')) end
  return factory(constraint)
end

local biject_to = ConstraintRegistry('biject_to')
local transform_to = ConstraintRegistry('transform_to')
R.biject_to, R.transform_to = biject_to, transform_to

-- fn registered for each constraint in each registry
local function register(registries, constraints, fn)
  for _, r in ipairs(registries) do
    for _, c in ipairs(constraints) do r:register(c, fn) end
  end
end
local both = { biject_to, transform_to }

register(both, { C.real }, function() return T.identity_transform end)

register({ biject_to }, { C.independent }, function(c)
  return T.IndependentTransform(biject_to(c.base_constraint), c.reinterpreted_batch_ndims)
end)
register({ transform_to }, { C.independent }, function(c)
  return T.IndependentTransform(transform_to(c.base_constraint), c.reinterpreted_batch_ndims)
end)

register(both, { C.positive, C.nonnegative }, function() return T.ExpTransform() end)

register(both, { C.greater_than, C.greater_than_eq }, function(c)
  return T.ComposeTransform { T.ExpTransform(), T.AffineTransform(c.lower_bound, 1) }
end)

register(both, { C.less_than }, function(c)
  return T.ComposeTransform { T.ExpTransform(), T.AffineTransform(c.upper_bound, -1) }
end)

register(both, { C.interval, C.half_open_interval }, function(c)
  local lo, hi = c.lower_bound, c.upper_bound
  -- the unit interval, with bounds given as numbers
  if type(lo) == 'number' and lo == 0 and type(hi) == 'number' and hi == 1 then return T.SigmoidTransform() end
  return T.ComposeTransform { T.SigmoidTransform(), T.AffineTransform(lo, hi - lo) }
end)

register({ biject_to }, { C.simplex }, function() return T.StickBreakingTransform() end)
register({ transform_to }, { C.simplex }, function() return T.SoftmaxTransform() end)

-- (no bijection onto lower Cholesky factors in PyTorch 1.13)
register({ transform_to }, { C.lower_cholesky }, function() return T.LowerCholeskyTransform() end)

register(both, { C.corr_cholesky }, function() return T.CorrCholeskyTransform() end)

for _, r in ipairs(both) do
  r:register(C.cat, function(c)
    local ts = {}
    for i, ci in ipairs(c.cseq) do ts[i] = r(ci) end
    return T.CatTransform(ts, c.dim, c.lengths)
  end)
  r:register(C.stack, function(c)
    local ts = {}
    for i, ci in ipairs(c.cseq) do ts[i] = r(ci) end
    return T.StackTransform(ts, c.dim)
  end)
end

return R
