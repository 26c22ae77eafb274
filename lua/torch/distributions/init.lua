-- torch.distributions: probability distributions as PyTorch 1.13 has them, composed in Lua from
-- lutorch's differentiable, device-aware tensor ops: rsample, log_prob and entropy pass gradients
-- to the parameters, and samples take the parameters' device and dtype. Loaded on first use of
-- torch.distributions. Indices are 1-based as everywhere in lutorch: Categorical's samples are
-- 1..K. kl_divergence(p, q) and register_kl(P, Q, fn) are in kl.lua; the transforms of
-- TransformedDistribution in transforms.lua; the sets of constraints.lua are
-- torch.distributions.constraints; biject_to and transform_to (constraint to transform) are in
-- constraint_registry.lua.
local distributions = {
  Distribution = require 'torch.distributions.distribution',
  constraints = require 'torch.distributions.constraints',
  transforms = require 'torch.distributions.transforms',
  constraint_registry = require 'torch.distributions.constraint_registry',
}
distributions.biject_to = distributions.constraint_registry.biject_to
distributions.transform_to = distributions.constraint_registry.transform_to

for name, file in pairs {
  Normal = 'normal', Uniform = 'uniform', Bernoulli = 'bernoulli', Categorical = 'categorical',
  OneHotCategorical = 'one_hot_categorical', Binomial = 'binomial', Multinomial = 'multinomial', Beta = 'beta',
  Gamma = 'gamma', Chi2 = 'chi2', Dirichlet = 'dirichlet', Exponential = 'exponential', Laplace = 'laplace',
  Poisson = 'poisson', Geometric = 'geometric', Cauchy = 'cauchy', LogNormal = 'log_normal', StudentT = 'student_t',
  MultivariateNormal = 'multivariate_normal', LowRankMultivariateNormal = 'lowrank_multivariate_normal',
  Wishart = 'wishart', LKJCholesky = 'lkj_cholesky', Independent = 'independent',
  TransformedDistribution = 'transformed_distribution', MixtureSameFamily = 'mixture_same_family',
  HalfNormal = 'half_normal', HalfCauchy = 'half_cauchy', Gumbel = 'gumbel', Pareto = 'pareto', Weibull = 'weibull',
  Kumaraswamy = 'kumaraswamy', FisherSnedecor = 'fisher_snedecor', VonMises = 'von_mises',
  NegativeBinomial = 'negative_binomial', ContinuousBernoulli = 'continuous_bernoulli',
  LogitRelaxedBernoulli = 'logit_relaxed_bernoulli', RelaxedBernoulli = 'relaxed_bernoulli',
  ExpRelaxedCategorical = 'exp_relaxed_categorical', RelaxedOneHotCategorical = 'relaxed_one_hot_categorical',
  LogisticNormal = 'logistic_normal',
} do
  distributions[name] = require('torch.distributions.' .. file)
end

-- the transforms at the top level too, as in PyTorch
for name, t in pairs(distributions.transforms) do
  if name:sub(1, 1) ~= '_' then distributions[name] = t end
end

local kl = require 'torch.distributions.kl'
distributions.kl_divergence = kl.kl_divergence
distributions.register_kl = kl.register_kl
distributions.kl = kl

return distributions
