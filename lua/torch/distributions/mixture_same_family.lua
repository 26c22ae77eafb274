-- MixtureSameFamily(mixture_distribution, component_distribution): a mixture whose components
-- are one distribution batched along its rightmost batch dimension (of size K), chosen by a
-- Categorical over K (whose 1-based samples pick the components). No rsample, as in PyTorch.
local torch = require 'torch'
local U = require 'torch.distributions.utils'
local class = require 'torch.class'
local Distribution = require 'torch.distributions.distribution'
local Categorical = require 'torch.distributions.categorical'

local MixtureSameFamily = Distribution:extend('MixtureSameFamily')

--- MixtureSameFamily(mixture_distribution, component_distribution, {validate_args})
function MixtureSameFamily:init(...)
  local a = U.args('MixtureSameFamily', { 'mixture_distribution', 'component_distribution', 'validate_args' }, ...)
  local mix, comp = a.mixture_distribution, a.component_distribution
  if not class.isinstance(mix, Categorical) then
    U.raise('MixtureSameFamily: the mixture distribution needs to be an instance of torch.distributions.Categorical')
  end
  if not class.isinstance(comp, Distribution) then
    U.raise('MixtureSameFamily: the component distribution needs to be an instance of torch.distributions.Distribution')
  end
  local mdbs = mix._batch_shape
  local cbs = comp._batch_shape
  if #cbs < 1 then U.raise('MixtureSameFamily: the component distribution needs a batch dimension for the components') end
  local cdbs = U.slice(cbs, 1, #cbs - 1)
  for i = 0, math.min(#mdbs, #cdbs) - 1 do
    local s1, s2 = mdbs[#mdbs - i], cdbs[#cdbs - i]
    if s1 ~= 1 and s2 ~= 1 and s1 ~= s2 then
      U.raise('MixtureSameFamily: mixture_distribution.batch_shape (%s) is not compatible with '
        .. 'component_distribution.batch_shape (%s)', tostring(mdbs), tostring(cdbs))
    end
  end
  local km, kc = mix._num_events, cbs[#cbs]
  if km ~= kc then
    U.raise('MixtureSameFamily: mixture_distribution component (%d) does not equal '
      .. 'component_distribution.batch_shape[-1] (%d)', km, kc)
  end
  self._mixture_distribution, self._component_distribution = mix, comp
  self._num_component = km
  self._event_ndims = #comp._event_shape
  Distribution.init(self, cdbs, comp._event_shape, a.validate_args)
end

function MixtureSameFamily:expand(...)
  local shape = U.sample_shape('MixtureSameFamily.expand', ...)
  local new = self:_new_instance()
  new._component_distribution = self._component_distribution:expand(U.cat(shape, { self._num_component }))
  new._mixture_distribution = self._mixture_distribution:expand(shape)
  new._num_component, new._event_ndims = self._num_component, self._event_ndims
  return self:_init_expanded(new, shape, new._component_distribution._event_shape)
end

-- x with a dimension for the components before the event dimensions
function MixtureSameFamily:_pad(x) return x:unsqueeze(-1 - self._event_ndims) end

-- the mixture's probabilities reshaped to broadcast with the components' batch and event
function MixtureSameFamily:_pad_mixture_dimensions(x)
  local dist_batch_ndims = #self._batch_shape
  local cat_batch_ndims = #self._mixture_distribution._batch_shape
  local pad_ndims = cat_batch_ndims == 1 and 0 or dist_batch_ndims - cat_batch_ndims
  local xs = x.shape
  local shape = U.slice(xs, 1, #xs - 1)
  for _ = 1, pad_ndims do shape[#shape + 1] = 1 end
  shape[#shape + 1] = xs[#xs]
  for _ = 1, self._event_ndims do shape[#shape + 1] = 1 end
  return x:reshape(shape)
end

local props = MixtureSameFamily.properties
function props.support(d) return d._component_distribution.support end
function props.mixture_distribution(d) return d._mixture_distribution end
function props.component_distribution(d) return d._component_distribution end
function props.mean(d)
  local probs = d:_pad_mixture_dimensions(d._mixture_distribution.probs)
  return (probs * d._component_distribution.mean):sum(-1 - d._event_ndims)
end
function props.variance(d)
  local probs = d:_pad_mixture_dimensions(d._mixture_distribution.probs)
  local comp = d._component_distribution
  local mean_cond_var = (probs * comp.variance):sum(-1 - d._event_ndims)
  local var_cond_mean = (probs * (comp.mean - d:_pad(d.mean)):pow(2)):sum(-1 - d._event_ndims)
  return mean_cond_var + var_cond_mean
end

function MixtureSameFamily:cdf(x)
  x = self:_pad(x)
  local cdf_x = self._component_distribution:cdf(x)
  return (cdf_x * self._mixture_distribution.probs):sum(-1)
end

function MixtureSameFamily:log_prob(x)
  if self._validate_args then self:_validate_sample(x) end
  x = self:_pad(x)
  local log_prob_x = self._component_distribution:log_prob(x)
  local log_mix_prob = torch.log_softmax(self._mixture_distribution.logits, -1)
  return (log_prob_x + log_mix_prob):logsumexp(-1)
end

function MixtureSameFamily:sample(...)
  local sample_shape = U.sample_shape('MixtureSameFamily.sample', ...)
  local _ <close> = torch.no_grad()
  local gather_dim = #sample_shape + #self._batch_shape + 1
  local es = self._event_shape
  local mix_sample = self._mixture_distribution:sample(sample_shape)
  local mix_shape = mix_sample.shape
  local comp_samples = self._component_distribution:sample(sample_shape)
  -- the chosen component's 1-based index, broadcast over the event, gathered along the K dim
  local idx_shape = U.cat(mix_shape, { 1 })
  for _ = 1, #es do idx_shape[#idx_shape + 1] = 1 end
  local idx = mix_sample:reshape(idx_shape):expand(U.cat(mix_shape, { 1 }, es))
  return comp_samples:gather(gather_dim, idx):squeeze(gather_dim)
end

function MixtureSameFamily:__tostring()
  return 'MixtureSameFamily(\n  ' .. tostring(self._mixture_distribution) .. ',\n  '
    .. tostring(self._component_distribution) .. ')'
end

return MixtureSameFamily
