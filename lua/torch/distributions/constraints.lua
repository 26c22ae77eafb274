-- torch.distributions.constraints: the sets that parameters and values must lie in. c:check(x)
-- is a bool tensor (one value per event: event_dim rightmost dimensions are reduced), tostring(c)
-- is PyTorch's repr (GreaterThan(lower_bound=0.0)). Integer sets (the supports of the discrete
-- distributions) hold the values themselves; the support of Categorical is 1..K, its classes'
-- 1-based indices.
local torch = require 'torch'
local class = require 'torch.class'
local U = require 'torch.distributions.utils'
local as_int = require('torch.composite').as_int

local C = {}

local Constraint = class('Constraint')
C.Constraint = Constraint
Constraint.is_discrete = false
Constraint.event_dim = 0
Constraint.is_dependent = false

function Constraint:check() U.raise('%s: check is not implemented', rawget(getmetatable(self), '__name')) end
function Constraint:__tostring() return rawget(getmetatable(self), '__name') .. '()' end

-- a bound as PyTorch prints it: 0.0, 1, or a tensor
local function bound(b) return tostring(b) end

-- x is a whole number (integer dtypes always are)
local function is_integral(x)
  if not x.dtype.is_floating_point then return torch.ones_like(x, { dtype = torch.bool }) end
  return x:eq(x:floor())
end

-- a constraint that cannot be checked (a parameter whose set depends on other parameters)
local Dependent = Constraint:extend('_Dependent')
function Dependent:init(o)
  o = o or {}
  self.is_discrete, self.event_dim = o.is_discrete, o.event_dim
end
Dependent.is_dependent = true
function Dependent:check() U.raise('constraints.dependent: cannot determine validity of dependent constraint') end
C.dependent = Dependent()
--- constraints.is_dependent(c)
function C.is_dependent(c) return type(c) == 'table' and c.is_dependent == true end

local Real = Constraint:extend('Real')
function Real:check(x) return x:eq(x) end -- false for NaN
C.real = Real()

local Boolean = Constraint:extend('Boolean')
Boolean.is_discrete = true
function Boolean:check(x) return x:eq(0):logical_or(x:eq(1)) end
C.boolean = Boolean()

local OneHot = Constraint:extend('OneHot')
OneHot.is_discrete = true
OneHot.event_dim = 1
function OneHot:check(x)
  return x:eq(0):logical_or(x:eq(1)):all(-1):logical_and(x:sum(-1):eq(1))
end
C.one_hot = OneHot()

local IntegerInterval = Constraint:extend('IntegerInterval')
IntegerInterval.is_discrete = true
function IntegerInterval:init(lower, upper) self.lower_bound, self.upper_bound = lower, upper end
function IntegerInterval:check(x)
  return is_integral(x):logical_and(x:ge(self.lower_bound)):logical_and(x:le(self.upper_bound))
end
function IntegerInterval:__tostring()
  return string.format('IntegerInterval(lower_bound=%s, upper_bound=%s)', bound(self.lower_bound), bound(self.upper_bound))
end
C.integer_interval = IntegerInterval

local IntegerGreaterThan = Constraint:extend('IntegerGreaterThan')
IntegerGreaterThan.is_discrete = true
function IntegerGreaterThan:init(lower) self.lower_bound = lower end
function IntegerGreaterThan:check(x) return is_integral(x):logical_and(x:ge(self.lower_bound)) end
function IntegerGreaterThan:__tostring() return string.format('IntegerGreaterThan(lower_bound=%s)', bound(self.lower_bound)) end
C.nonnegative_integer = IntegerGreaterThan(0)
C.positive_integer = IntegerGreaterThan(1)

local GreaterThan = Constraint:extend('GreaterThan')
function GreaterThan:init(lower) self.lower_bound = lower end
function GreaterThan:check(x) return x:gt(self.lower_bound) end
function GreaterThan:__tostring() return string.format('GreaterThan(lower_bound=%s)', bound(self.lower_bound)) end
C.greater_than = GreaterThan
C.positive = GreaterThan(0.0)

local GreaterThanEq = Constraint:extend('GreaterThanEq')
function GreaterThanEq:init(lower) self.lower_bound = lower end
function GreaterThanEq:check(x) return x:ge(self.lower_bound) end
function GreaterThanEq:__tostring() return string.format('GreaterThanEq(lower_bound=%s)', bound(self.lower_bound)) end
C.greater_than_eq = GreaterThanEq
C.nonnegative = GreaterThanEq(0.0)

local LessThan = Constraint:extend('LessThan')
function LessThan:init(upper) self.upper_bound = upper end
function LessThan:check(x) return x:lt(self.upper_bound) end
function LessThan:__tostring() return string.format('LessThan(upper_bound=%s)', bound(self.upper_bound)) end
C.less_than = LessThan

local Interval = Constraint:extend('Interval')
function Interval:init(lower, upper) self.lower_bound, self.upper_bound = lower, upper end
function Interval:check(x) return x:ge(self.lower_bound):logical_and(x:le(self.upper_bound)) end
function Interval:__tostring()
  return string.format('Interval(lower_bound=%s, upper_bound=%s)', bound(self.lower_bound), bound(self.upper_bound))
end
C.interval = Interval
C.unit_interval = Interval(0.0, 1.0)

local HalfOpenInterval = Constraint:extend('HalfOpenInterval')
function HalfOpenInterval:init(lower, upper) self.lower_bound, self.upper_bound = lower, upper end
function HalfOpenInterval:check(x) return x:ge(self.lower_bound):logical_and(x:lt(self.upper_bound)) end
function HalfOpenInterval:__tostring()
  return string.format('HalfOpenInterval(lower_bound=%s, upper_bound=%s)', bound(self.lower_bound),
    bound(self.upper_bound))
end
C.half_open_interval = HalfOpenInterval

-- a constraint whose rightmost `n` batch dimensions are part of the event
local Independent = Constraint:extend('IndependentConstraint')
function Independent:init(base, n)
  if type(base) ~= 'table' or not class.isinstance(base, Constraint) then
    U.raise('constraints.independent: expected a constraint, got %s', type(base))
  end
  n = as_int(n)
  if math.type(n) ~= 'integer' or n < 0 then
    U.raise('constraints.independent: reinterpreted_batch_ndims must be a non-negative integer, got %s', tostring(n))
  end
  self.base_constraint, self.reinterpreted_batch_ndims = base, n
  self.is_discrete = base.is_discrete
  self.event_dim = base.event_dim + n
end
function Independent:check(x)
  local r = self.base_constraint:check(x)
  if r:dim() < self.reinterpreted_batch_ndims then
    U.raise('constraints.independent: expected value.dim() >= %d but got %d', self.event_dim, x:dim())
  end
  local n = self.reinterpreted_batch_ndims
  if n == 0 then return r end
  local shape = U.slice(r.shape, 1, r:dim() - n)
  shape[#shape + 1] = -1
  return r:reshape(shape):all(-1)
end
function Independent:__tostring()
  return string.format('IndependentConstraint(%s, %d)', tostring(self.base_constraint), self.reinterpreted_batch_ndims)
end
C.independent = Independent
C.real_vector = Independent(C.real, 1)

local Simplex = Constraint:extend('Simplex')
Simplex.event_dim = 1
function Simplex:check(x) return x:ge(0):all(-1):logical_and((x:sum(-1) - 1):abs():lt(1e-6)) end
C.simplex = Simplex()

local Multinomial = Constraint:extend('Multinomial')
Multinomial.is_discrete = true
Multinomial.event_dim = 1
function Multinomial:init(upper) self.upper_bound = upper end
function Multinomial:check(x) return x:ge(0):all(-1):logical_and(x:sum(-1):le(self.upper_bound)) end
C.multinomial = Multinomial

local LowerTriangular = Constraint:extend('LowerTriangular')
LowerTriangular.event_dim = 2
function LowerTriangular:check(x) return x:tril():eq(x):flatten(-2):all(-1) end
C.lower_triangular = LowerTriangular()

local LowerCholesky = Constraint:extend('LowerCholesky')
LowerCholesky.event_dim = 2
function LowerCholesky:check(x)
  return x:tril():eq(x):flatten(-2):all(-1):logical_and(x:diagonal(0, -2, -1):gt(0):all(-1))
end
C.lower_cholesky = LowerCholesky()

-- lower Cholesky factors whose rows have unit norm (to eps * n * 10, PyTorch's tolerance): the
-- Cholesky factors of correlation matrices
local CorrCholesky = Constraint:extend('CorrCholesky')
CorrCholesky.event_dim = 2
function CorrCholesky:check(x)
  local tol = U.finfo(x.dtype).eps * x:size(-1) * 10
  local unit_rows = (x:detach():pow(2):sum(-1):sqrt() - 1):abs():le(tol):all(-1)
  return LowerCholesky.check(self, x):logical_and(unit_rows)
end
C.corr_cholesky = CorrCholesky()

local Square = Constraint:extend('Square')
Square.event_dim = 2
function Square:check(x)
  local batch = U.slice(x.shape, 1, x:dim() - 2)
  return torch.full(batch, x:size(-2) == x:size(-1), { dtype = torch.bool, device = x.device })
end
C.square = Square()

local Symmetric = Square:extend('Symmetric')
function Symmetric:check(x)
  local sq = Square.check(self, x)
  if not sq:all():item() then return sq end
  return x:isclose(x:transpose(-2, -1), { atol = 1e-6 }):all(-1):all(-1)
end
C.symmetric = Symmetric()

local PositiveDefinite = Symmetric:extend('PositiveDefinite')
function PositiveDefinite:check(x)
  local sym = Symmetric.check(self, x)
  if not sym:all():item() then return sym end
  local _, info = torch.linalg.cholesky_ex(x)
  return info:eq(0)
end
C.positive_definite = PositiveDefinite()

local PositiveSemidefinite = Symmetric:extend('PositiveSemidefinite')
function PositiveSemidefinite:check(x)
  local sym = Symmetric.check(self, x)
  if not sym:all():item() then return sym end
  return torch.linalg.eigvalsh(x):ge(0):all(-1)
end
C.positive_semidefinite = PositiveSemidefinite()

-- ---- constraints of the slices of a tensor (1-based dims; negative ones count from the end) ----

local function constraint_list(op, cseq)
  if type(cseq) ~= 'table' or getmetatable(cseq) ~= nil or #cseq == 0 then
    U.raise('%s: cseq must be a non-empty list of constraints, got %s', op, type(cseq))
  end
  for i, c in ipairs(cseq) do
    if not class.isinstance(c, Constraint) then U.raise('%s: cseq[%d] is not a constraint (%s)', op, i, type(c)) end
  end
  return { table.unpack(cseq) }
end

local function any_discrete(cseq)
  for _, c in ipairs(cseq) do
    if c.is_discrete then return true end
  end
  return false
end

local function max_event_dim(cseq)
  local e = 0
  for _, c in ipairs(cseq) do e = math.max(e, c.event_dim) end
  return e
end

--- constraints.cat(cseq, dim = 1, lengths): cseq[i] on the i-th slice along dim, of lengths[i]
--- elements (1 each by default), as torch.cat joins them
local Cat = Constraint:extend('Cat')
function Cat:init(cseq, dim, lengths)
  self.cseq = constraint_list('constraints.cat', cseq)
  if lengths == nil then
    lengths = {}
    for i = 1, #self.cseq do lengths[i] = 1 end
  end
  if type(lengths) ~= 'table' or #lengths ~= #self.cseq then
    U.raise('constraints.cat: lengths must be a list of %d lengths (one for each constraint)', #self.cseq)
  end
  self.lengths = {}
  for i, n in ipairs(lengths) do self.lengths[i] = U.count('constraints.cat', ('lengths[%d]'):format(i), n) end
  self.dim = U.dim_arg('constraints.cat', dim)
  self.is_discrete, self.event_dim = any_discrete(self.cseq), max_event_dim(self.cseq)
end
function Cat:check(x)
  local total = 0
  for _, n in ipairs(self.lengths) do total = total + n end
  local d = U.slice_dim('constraints.cat', self.dim, x, total, 'value')
  local checks, start = {}, 1
  for i, c in ipairs(self.cseq) do
    checks[i] = c:check(x:narrow(d, start, self.lengths[i]))
    start = start + self.lengths[i]
  end
  return torch.cat(checks, self.dim)
end
C.cat = Cat

--- constraints.stack(cseq, dim = 1): cseq[i] on x:select(dim, i), as torch.stack joins them
local Stack = Constraint:extend('Stack')
function Stack:init(cseq, dim)
  self.cseq = constraint_list('constraints.stack', cseq)
  self.dim = U.dim_arg('constraints.stack', dim)
  self.is_discrete = any_discrete(self.cseq)
  local e = max_event_dim(self.cseq)
  -- PyTorch's dim + event_dim < 0: a negative dim among the event's dimensions adds one to them
  if self.dim < 0 and self.dim + e < 0 then e = e + 1 end
  self.event_dim = e
end
function Stack:check(x)
  local d = U.slice_dim('constraints.stack', self.dim, x, #self.cseq, 'value')
  local checks = {}
  for i, c in ipairs(self.cseq) do checks[i] = c:check(x:select(d, i)) end
  return torch.stack(checks, self.dim)
end
C.stack = Stack

return C
