-- Integer-only parameters (sizes, dims, indices, counts, layer and kernel sizes, seeds) take a float
-- with an exact integer value as that integer, as Lua 5.4's own library does (n / 2 and 1e3 are
-- floats): each call below, made with integral floats where integers go, gives what the call with
-- integers gives (values, shapes, dtypes, and integers where the result holds numbers); 2.5, NaN,
-- inf and 1e300 stay refused with an error naming the op.
local torch = require 'torch'
local nn = torch.nn
local F = nn.functional
local H = require 'spec.helpers'

-- a, b equal: tensors by shape, dtype and values; numbers by value and integer/float subtype;
-- tables deeply
local function same(a, b, where)
  if torch.is_tensor(a) then
    assert(torch.is_tensor(b), where .. ': a tensor against a ' .. type(b))
    assert(a.dtype == b.dtype, string.format('%s: dtype %s vs %s', where, tostring(a.dtype), tostring(b.dtype)))
    assert.same(a:size(), b:size(), where)
    assert(torch.equal(a, b), where .. ': values differ')
  elseif type(a) == 'number' then
    assert(math.type(a) == math.type(b) and a == b,
      string.format('%s: %s (%s) vs %s (%s)', where, tostring(a), math.type(a), tostring(b), math.type(b)))
  elseif type(a) == 'table' and getmetatable(a) == nil or getmetatable(a) == torch.Size then
    assert(type(b) == 'table', where .. ': a table against a ' .. type(b))
    for k, v in pairs(a) do same(v, b[k], where .. '.' .. tostring(k)) end
    for k in pairs(b) do assert(a[k] ~= nil, where .. ': extra key ' .. tostring(k)) end
  else
    assert(a == b, where .. ': ' .. tostring(a) .. ' vs ' .. tostring(b))
  end
end

local function as_is(v) return v end
local function as_float(v) return v + 0.0 end

local x34 = H.grid(3, 4)
local x5 = torch.tensor({ 5, 1, 4, 2, 3 }, { dtype = torch.float64 })
local img = torch.arange(0, 2 * 3 * 6 * 6, { dtype = torch.float32 }):reshape(2, 3, 6, 6):div(100):sin()
local vol = torch.arange(0, 1 * 2 * 4 * 4 * 4, { dtype = torch.float32 }):reshape(1, 2, 4, 4, 4):cos()

-- a module built from i-converted arguments, run on input (seeded: same init both ways), with
-- the integer fields it keeps
local function module(build, input, fields)
  return function(i)
    torch.manual_seed(7)
    local m = build(i)
    local out = { y = m(input) }
    for _, k in ipairs(fields or {}) do out[k] = m[k] end
    return out
  end
end

-- each case: a name and a function of i (as_is or as_float) that uses i wherever an integer goes
local cases = {
  { 'zeros', function(i) return torch.zeros(i(3), i(2)) end },
  { 'zeros table', function(i) return torch.zeros({ i(3), i(2) }, { dtype = torch.int32 }) end },
  { 'ones', function(i) return torch.ones({ i(2) }) end },
  { 'full', function(i) return torch.full({ i(2), i(2) }, 7) end },
  { 'empty shape', function(i) return torch.empty(i(2), i(0)):size() end },
  { 'eye', function(i) return torch.eye(i(3), i(2)) end },
  { 'randint', function(i) torch.manual_seed(3); return torch.randint(i(1), i(5), { i(3) }) end },
  { 'randint high', function(i) torch.manual_seed(3); return torch.randint(i(5), { i(4) }) end },
  { 'randn', function(i) torch.manual_seed(i(3)); return torch.randn(i(2), i(3)) end },
  { 'randperm', function(i) torch.manual_seed(3); return torch.randperm(i(6)) end },
  { 'linspace steps', function(i) return torch.linspace(0, 1, i(5)) end },
  { 'Generator seed', function(i) return torch.rand(3, { generator = torch.Generator():manual_seed(i(11)) }) end },
  { 'index', function(i) return x34[i(2)] end },
  { 'index negative', function(i) return x34[i(-1)][i(2)] end },
  { 'index range', function(i) return x34[{ { i(2), i(3) }, i(1) }] end },
  { 'index assignment', function(i)
    local y = x34:clone()
    y[i(2)] = 5
    y[{ i(3), i(-1) }] = 7
    return y
  end },
  { 'view', function(i) return x34:view(i(2), i(-1)) end },
  { 'view table', function(i) return x34:view({ i(6), i(2) }) end },
  { 'reshape', function(i) return x34:reshape(i(2), i(-1)) end },
  { 'expand', function(i) return x34[1]:expand(i(2), i(4)) end },
  { 'sum dim', function(i) return x34:sum(i(2)) end },
  { 'sum dims', function(i) return x34:sum({ i(1), i(2) }) end },
  { 'mean keepdim', function(i) return x34:mean(i(-1), true) end },
  { 'amax', function(i) return x34:amax(i(1)) end },
  { 'std', function(i) return x34:std(i(2)) end },
  { 'norm dim', function(i) return x34:norm(2, i(1)) end },
  { 'max dim', function(i) return { x34:max(i(2)) } end },
  { 'argmax', function(i) return x34:argmax(i(1)) end },
  { 'cumsum', function(i) return x34:cumsum(i(2)) end },
  { 'softmax', function(i) return x34:softmax(i(2)) end },
  { 'F.log_softmax', function(i) return F.log_softmax(x34, i(1)) end },
  { 'narrow', function(i) return x34:narrow(i(2), i(2), i(2)) end },
  { 'select', function(i) return x34:select(i(1), i(3)) end },
  { 'transpose', function(i) return x34:transpose(i(1), i(2)) end },
  { 'permute', function(i) return img:permute(i(4), i(1), i(3), i(2)) end },
  { 'unsqueeze', function(i) return x34:unsqueeze(i(2)) end },
  { 'squeeze', function(i) return x34:unsqueeze(i(1)):squeeze(i(1)) end },
  { 'flatten', function(i) return img:flatten(i(2), i(-1)) end },
  { 'unflatten', function(i) return x34:unflatten(i(2), { i(2), i(2) }) end },
  { 'movedim', function(i) return img:movedim(i(1), i(-1)) end },
  { 'flip', function(i) return x34:flip({ i(2) }) end },
  { 'roll', function(i) return x34:roll(i(1), i(2)) end },
  { 'split', function(i) return x34:split(i(2), i(2)) end },
  { 'split sizes', function(i) return x34:split({ i(1), i(3) }, i(2)) end },
  { 'chunk', function(i) return x34:chunk(i(2), i(2)) end },
  { 'cat', function(i) return torch.cat({ x34, x34 }, i(2)) end },
  { 'stack', function(i) return torch.stack({ x34, x34 }, i(2)) end },
  { 'gather', function(i) return x34:gather(i(2), torch.tensor({ { 1 }, { 2 }, { 4 } })) end },
  { 'index_select', function(i) return x34:index_select(i(2), torch.tensor({ 1, 3 })) end },
  { 'topk', function(i) return { x5:topk(i(2)) } end },
  { 'kthvalue', function(i) return { x5:kthvalue(i(2)) } end },
  { 'sort', function(i) return { x34:sort(i(1), true) } end },
  { 'repeat', function(i) return x34[1]:repeatTensor(i(2), i(1)) end },
  { 'repeat_interleave', function(i) return x5:repeat_interleave(i(2)) end },
  { 'unfold', function(i) return x5:unfold(i(1), i(2), i(2)) end },
  { 'tril', function(i) return x34:tril(i(-1)) end },
  { 'triu', function(i) return x34:triu(i(1)) end },
  { 'diag', function(i) return x34:diagonal(i(1)) end },
  { 'diag_embed', function(i) return torch.diag_embed(x5, i(1)) end },
  { 'tril_indices', function(i) return torch.tril_indices(i(3), i(3), i(0)) end },
  { 'combinations', function(i) return torch.combinations(x5, i(2)) end },
  { 'histc', function(i) return torch.histc(x5, i(4), 0, 6) end },
  { 'bincount', function(i) return torch.bincount(torch.tensor({ 1, 1, 3 }), nil, i(5)) end },
  { 'multinomial', function(i) torch.manual_seed(3); return torch.multinomial(x5, i(3)) end },
  { 'matrix_power', function(i) return torch.linalg.matrix_power(H.grid(2, 2), i(3)) end },
  { 'broadcast_shapes', function(i) return torch.broadcast_shapes({ i(3), i(1) }, { i(4) }) end },
  { 'torch.Size', function(i) return torch.Size({ i(2), i(3) }) end },
  { 'F.one_hot', function(i) return F.one_hot(torch.tensor({ 1, 3 }), i(4)) end },
  { 'F.pad', function(i) return F.pad(x34, { i(1), i(2) }) end },
  { 'F.max_pool2d', function(i) return F.max_pool2d(img, i(2)) end },
  { 'F.avg_pool2d', function(i) return F.avg_pool2d(img, i(3), { stride = i(2), padding = i(1) }) end },
  { 'F.conv2d', function(i)
    return F.conv2d(img, torch.ones(4, 3, 3, 3), nil, { stride = i(2), padding = i(1), groups = i(1) }) end },
  { 'F.unfold', function(i) return F.unfold(img, i(2), { stride = i(2) }) end },
  { 'F.interpolate', function(i) return F.interpolate(img, { size = { i(3), i(4) } }) end },
  { 'F.max_pool3d', function(i) return F.max_pool3d(vol, i(2)) end },
  { 'F.pixel_shuffle', function(i) return F.pixel_shuffle(torch.ones(1, 4, 2, 2), i(2)) end },
  { 'nn.Linear', module(function(i) return nn.Linear(i(4), i(2)) end, x34, { 'in_features', 'out_features' }) },
  { 'nn.Bilinear', function(i)
    torch.manual_seed(7)
    local m = nn.Bilinear(i(4), i(4), i(2))
    return { m(x34, x34), m.in1_features }
  end },
  { 'nn.Conv2d', module(function(i) return nn.Conv2d(i(3), i(4), i(3), { stride = i(2), padding = i(1) }) end,
    img, { 'in_channels', 'kernel_size', 'stride', 'padding' }) },
  { 'nn.Conv2d pairs', module(function(i) return nn.Conv2d(i(3), i(2), { i(3), i(1) }, { groups = i(1) }) end,
    img, { 'kernel_size', 'groups' }) },
  { 'nn.MaxPool2d', module(function(i) return nn.MaxPool2d(i(2), { stride = i(2) }) end, img) },
  { 'nn.BatchNorm2d', module(function(i) return nn.BatchNorm2d(i(3)) end, img, { 'num_features' }) },
  { 'nn.LayerNorm', module(function(i) return nn.LayerNorm(i(4)) end, x34, { 'normalized_shape' }) },
  { 'nn.GroupNorm', module(function(i) return nn.GroupNorm(i(1), i(3)) end, img) },
  { 'nn.Embedding', module(function(i) return nn.Embedding(i(10), i(3)) end, torch.tensor({ 1, 5 }),
    { 'num_embeddings', 'embedding_dim' }) },
  { 'nn.Flatten', module(function(i) return nn.Flatten(i(2), i(-1)) end, img) },
  { 'nn.Unflatten', module(function(i) return nn.Unflatten(i(2), { i(2), i(2) }) end, x34, { 'unflattened_size' }) },
  { 'nn.Softmax', module(function(i) return nn.Softmax(i(2)) end, x34) },
  { 'nn.LSTM', module(function(i) return nn.LSTM(i(4), i(3), { num_layers = i(2) }) end, x34:unsqueeze(2),
    { 'input_size', 'hidden_size', 'num_layers' }) },
  { 'nn.ZeroPad2d', module(function(i) return nn.ZeroPad2d(i(1)) end, img, { 'padding' }) },
  { 'nn.MaxPool2d pair', module(function(i) return nn.MaxPool2d({ i(2), i(3) }) end, img, { 'kernel_size' }) },
  { 'nn.AdaptiveAvgPool2d', module(function(i) return nn.AdaptiveAvgPool2d(i(2)) end, img, { 'output_size' }) },
  { 'nn.ConvTranspose2d', module(function(i)
    return nn.ConvTranspose2d(i(3), i(2), i(3), { stride = i(2), output_padding = i(1) }) end, img,
    { 'output_padding' }) },
  { 'nn.MultiheadAttention', function(i)
    torch.manual_seed(7)
    local m = nn.MultiheadAttention(i(4), i(2))
    local q = x34:unsqueeze(2)
    return { m(q, q, q), m.embed_dim, m.num_heads, m.head_dim, m.kdim }
  end },
  { 'nn.RNN positional num_layers', module(function(i) return nn.RNN(i(4), i(2), i(2)) end, x34:unsqueeze(2),
    { 'num_layers' }) },
  { 'F.ctc_loss lengths', function(i)
    local lp = torch.arange(0, 20, { dtype = torch.float64 }):reshape(5, 1, 4):sin():log_softmax(3)
    return F.ctc_loss(lp, torch.tensor({ { 2, 3 } }), { i(5) }, { i(2) })
  end },
  { 'pack_padded_sequence', function(i)
    local p = nn.utils.rnn.pack_padded_sequence(x34:reshape(3, 2, 2), { i(3), i(2) })
    return { p.data, p.batch_sizes }
  end },
  { 'Normal sample shape', function(i) torch.manual_seed(3); return torch.distributions.Normal(0, 1):sample({ i(2), i(3) }) end },
  { 'Multinomial total_count', function(i)
    torch.manual_seed(3)
    return torch.distributions.Multinomial(i(3), { probs = torch.tensor({ 0.5, 0.5 }) }):sample()
  end },
  { 'random_split', function(i)
    local parts = torch.data.random_split(torch.data.TensorDataset(x5), { i(2), i(3) }, { seed = i(4) })
    return { #parts[1], parts[2]:get(i(1)) }
  end },
  { 'DistributedSampler', function(i)
    local ds = torch.data.TensorDataset(x5)
    local s = torch.data.DistributedSampler(ds, { num_replicas = i(2), rank = i(1), seed = i(3) })
    s:set_epoch(i(1))
    local out = {}
    for v in s:iter() do out[#out + 1] = v end
    return out
  end },
  { 'nn.Sequential index', function(i)
    local s = nn.Sequential(nn.Tanh(), nn.ReLU())
    return tostring(s[i(2)]) end },
  { 'DataLoader', function(i)
    local out = {}
    local loader = torch.data.DataLoader(torch.data.TensorDataset(x34), { batch_size = i(2), num_workers = i(0) })
    for b in loader:iter() do out[#out + 1] = b end
    return { out, loader.batch_size }
  end },
  { 'LinearLR', function(i)
    local opt = torch.optim.SGD({ torch.zeros(2, { requires_grad = true }) }, { lr = 1 })
    local s = torch.optim.lr_scheduler.LinearLR(opt, { total_iters = i(3) })
    local lrs = {}
    for k = 1, 4 do s:step(); lrs[k] = opt.param_groups[1].lr end
    return { lrs, s.total_iters }
  end },
  { 'svd_lowrank', function(i) torch.manual_seed(5); return { torch.svd_lowrank(H.grid(4, 3), i(2), i(1)) } end },
}
describe('integer parameters given as integral floats', function()
  for _, c in ipairs(cases) do
    it(c[1] .. ' gives what the integers give', function()
      same(c[2](as_is), c[2](as_float), c[1])
    end)
  end
end)

-- each refusal: a function of one value put where an integer goes, and the name its error carries
local refusals = {
  { function(v) return torch.zeros(v) end, 'zeros' },
  { function(v) return torch.ones({ 2, v }) end, 'ones' },
  { function(v) return x34:view(v, -1) end, 'view' },
  { function(v) return x34:reshape({ 2, v }) end, 'reshape' },
  { function(v) return x34:sum(v) end, 'sum' },
  { function(v) return x34[v] end, 'index' },
  { function(v) x34:clone()[{ 1, v }] = 0 end, 'index' },
  { function(v) return x34:narrow(1, v, 1) end, 'narrow' },
  { function(v) return x34:split({ v, 1 }) end, 'split' },
  { function(v) return torch.randint(1, 5, { v }) end, 'randint' },
  { function(v) return F.log_softmax(x34, v) end, 'log_softmax' },
  { function(v) return F.conv2d(img, torch.ones(4, 3, 3, 3), nil, { stride = v }) end, 'conv2d' },
  { function(v) return x5:topk(v) end, 'topk' },
  { function(v) return x34:tril(v) end, 'tril' },
  { function(v) return F.one_hot(torch.tensor({ 1 }), v) end, 'one_hot' },
  { function(v) return nn.Linear(v, 2) end, 'Linear' },
  { function(v) return nn.Conv2d(3, 4, v) end, 'Conv2d' },
  { function(v) return nn.Flatten(v) end, 'Flatten' },
  { function(v) return torch.data.DataLoader(torch.data.TensorDataset(x34), { num_workers = v }) end, 'DataLoader' },
  { function(v) return torch.broadcast_shapes({ v }) end, 'broadcast_shapes' },
  -- these took any float equal to its floor, so inf and 1e300 got through as nil
  { function(v) return torch.data.TensorDataset(x34):get(v) end, 'TensorDataset' },
  { function(v) return torch.amp.GradScaler({ device = 'cpu', growth_interval = v }) end, 'growth_interval' },
  { function(v)
    local opt = torch.optim.SGD({ torch.zeros(2, { requires_grad = true }) }, { lr = 0.1 })
    return torch.optim.lr_scheduler.StepLR(opt, v)
  end, 'StepLR' },
}

describe('integer parameters refuse other numbers', function()
  for _, bad in ipairs { 2.5, 0 / 0, math.huge, 1e300 } do
    it('refuses ' .. tostring(bad) .. ' naming the op', function()
      for _, r in ipairs(refusals) do H.raises(function() return r[1](bad) end, r[2]) end
    end)
  end
end)

describe('values where integer and float differ keep their meaning', function()
  it('keeps the dtype of tensor values, fill values and arange bounds', function()
    assert.equal(torch.int64, torch.tensor({ 1 }).dtype)
    assert.equal(torch.get_default_dtype(), torch.tensor({ 1.0 }).dtype)
    assert.equal(torch.int64, torch.full({ 2 }, 2).dtype)
    assert.equal(torch.get_default_dtype(), torch.full({ 2 }, 2.0).dtype)
    assert.equal(torch.int64, torch.arange(3).dtype)
    assert.equal(torch.get_default_dtype(), torch.arange(3.0).dtype)
    assert.equal(torch.int64, (torch.tensor({ 1 }) + 1).dtype)
    assert.equal(torch.get_default_dtype(), (torch.tensor({ 1 }) + 1.0).dtype)
  end)
end)
