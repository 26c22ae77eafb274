-- VonMises(loc, concentration): the circular normal distribution, density
-- exp(k cos(x - loc)) / (2 pi I0(k)) on angles; log I0 and log I1 are PyTorch 1.13's polynomial
-- approximations (Abramowitz and Stegun 9.8.1-4), so log_prob and variance are PyTorch's. sample is
-- Best and Fisher's (1979) rejection sampler, as PyTorch's, run in float64 with the proposal's
-- parameter r computed in a form that does not cancel for small concentrations (PyTorch's loses
-- its digits there in float32); samples are in [-pi, pi). The mean and variance are the circular
-- ones. No rsample, as in PyTorch.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local C = require 'torch.distributions.constraints'
local Distribution = require 'torch.distributions.distribution'

local VonMises = Distribution:extend('VonMises')
VonMises.arg_constraints = Distribution.params { 'loc', C.real, 'concentration', C.positive }
VonMises.support = C.real

local COEF_SMALL = {
  [0] = { 1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2 },
  [1] = { 0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3 },
}
local COEF_LARGE = {
  [0] = { 0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
    -0.1647633e-1, 0.392377e-2 },
  [1] = { 0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
    0.1787654e-1, -0.420059e-2 },
}

-- coef[1] + y coef[2] + y^2 coef[3] + ... by Horner's rule
local function eval_poly(y, coef)
  local r = coef[#coef]
  for i = #coef - 1, 1, -1 do r = coef[i] + y * r end
  return r
end

--- VonMises.log_modified_bessel(x, order): log I_order(x) for x > 0, order 0 or 1
local function log_modified_bessel(x, order)
  local y = (x / 3.75):pow(2)
  local small = eval_poly(y, COEF_SMALL[order])
  if order == 1 then small = x:abs() * small end
  small = small:log()
  local large = x - 0.5 * x:log() + eval_poly(3.75 / x, COEF_LARGE[order]):log()
  return torch.where(x:lt(3.75), small, large)
end
VonMises.log_modified_bessel = log_modified_bessel

--- VonMises(loc, concentration, {validate_args})
function VonMises:init(...)
  local a = U.args('VonMises', { 'loc', 'concentration', 'validate_args' }, ...)
  self.loc, self.concentration = U.broadcast_all('VonMises', { 'loc', 'concentration' }, a.loc, a.concentration)
  Distribution.init(self, self.loc.shape, {}, a.validate_args)
end

function VonMises:expand(...) return self:_expand_params({ 'loc', 'concentration' }, ...) end

local props = VonMises.properties
function props.mean(d) return d.loc end
function props.mode(d) return d.loc end
function props.variance(d)
  local k = d.concentration
  return 1 - (log_modified_bessel(k, 1) - log_modified_bessel(k, 0)):exp()
end

function VonMises:log_prob(value)
  if self._validate_args then self:_validate_sample(value) end
  local k = self.concentration
  return k * torch.cos(value - self.loc) - math.log(2 * math.pi) - log_modified_bessel(k, 0)
end

-- Best and Fisher's r = (1 + rho^2) / (2 rho) with rho = (tau - sqrt(2 tau)) / (2 k) and
-- tau = 1 + sqrt(1 + 4 k^2), rho rewritten as 2 k tau / ((s + 1) (tau + sqrt(2 tau))), s = sqrt(1 + 4 k^2)
local function proposal_r(k)
  local s = (1 + 4 * k:pow(2)):sqrt()
  local tau = 1 + s
  local rho = 2 * k * tau / ((s + 1) * (tau + (2 * tau):sqrt()))
  return (1 + rho:pow(2)) / (2 * rho)
end

function VonMises:sample(...)
  local shape = self:_extended_shape(U.sample_shape('VonMises.sample', ...))
  local _ <close> = torch.no_grad()
  local f64 = { dtype = torch.float64, device = self.loc.device }
  local k = self.concentration:detach():to(f64.dtype):expand(shape)
  local r = proposal_r(k)
  local x = torch.zeros(shape, f64)
  local done = torch.zeros(shape, { dtype = torch.bool, device = f64.device })
  while x:numel() > 0 and not done:all():item() do
    local u1, u2, u3 = torch.rand(shape, f64), torch.rand(shape, f64), torch.rand(shape, f64)
    local z = torch.cos(math.pi * u1)
    local f = (1 + r * z) / (r + z)
    local c = k * (r - f)
    local accept = (c * (2 - c) - u2):gt(0):logical_or(((c / u2):log() + 1 - c):ge(0))
    accept = accept:logical_and(done:logical_not())
    x = torch.where(accept, (u3 - 0.5):sign() * f:clamp(-1, 1):acos(), x)
    done = done:logical_or(accept)
  end
  local loc = self.loc:detach():to(f64.dtype)
  return (torch.remainder(x + math.pi + loc, 2 * math.pi) - math.pi):to(self.loc.dtype)
end

return VonMises
