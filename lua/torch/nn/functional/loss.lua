-- F.multi_margin_loss and F.multilabel_margin_loss: PyTorch's hinge losses over classes
-- (aten/src/ATen/native/LossMulti.h), composed of gather, scatter and sums, with 1-based classes.
local torch = require 'torch'

return function(F, u)
  local check_tensor, opts_of, reduce, fp32 = u.check_tensor, u.opts_of, u.reduce, u.fp32

  -- x as N x C (a 1-D x is one sample), refused unless 1-D or 2-D and non-empty
  local function samples(x, op)
    if (x:dim() ~= 1 and x:dim() ~= 2) or x:numel() == 0 then
      error(string.format('%s: Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s', op,
        tostring(x.shape)), 3)
    end
    if not x.dtype.is_floating_point then error(op .. ': expected a floating point input, got ' .. tostring(x.dtype), 3) end
    if x:dim() == 1 then return x:reshape(1, x:size(1)) end
    return x
  end

  local function check_classes(t, op)
    if t.dtype ~= torch.int64 and t.dtype ~= torch.int32 then
      error(op .. ': expected a target of dtype int64 or int32 (1-based classes), got ' .. tostring(t.dtype), 3)
    end
  end

  --- F.multi_margin_loss(x, target, {p = 1, margin = 1, weight, reduction = 'mean'}) -> for each
  -- sample, sum over the classes i other than its target y of w[y] max(0, margin - x[y] + x[i])^p,
  -- over C; x of N x C (or C), target of N 1-based classes (or one), p 1 or 2, weight a value a class
  function F.multi_margin_loss(x, target, o)
    local op = 'multi_margin_loss'
    o = opts_of(o, op, { 'p', 'margin', 'weight', 'reduction' })
    check_tensor(x, op)
    check_tensor(target, op, 'target')
    local p, margin, w = o.p or 1, o.margin or 1, o.weight
    if p ~= 1 and p ~= 2 then error(op .. ': only p == 1 and p == 2 supported, got ' .. tostring(p), 2) end
    if type(margin) ~= 'number' then error(op .. ': margin must be a number, got ' .. type(margin), 2) end
    local xx = samples(x, op)
    local n, c = xx:size(1), xx:size(2)
    check_classes(target, op)
    if target:numel() ~= n or target:dim() > 1 or (x:dim() == 2 and target:dim() ~= 1) then
      error(string.format('%s: inconsistent target size, expected %d but got %s', op, n, tostring(target.shape)), 2)
    end
    local t = target:reshape(n, 1):long()
    local lo, hi = t:min():item(), t:max():item()
    if lo < 1 or hi > c then
      error(string.format('%s: target %d is out of range 1..%d (targets are 1-based classes)', op, lo < 1 and lo or hi, c), 2)
    end
    if w ~= nil then
      check_tensor(w, op, 'weight')
      if w:dim() ~= 1 or w:size(1) ~= c then
        error(string.format('%s: inconsistent weight size, expected %d but got %s', op, c, tostring(w.shape)), 2)
      end
    end
    xx, w = fp32(xx, w)
    local z = (xx - xx:gather(2, t) + margin):clamp(0, nil)
    if p == 2 then z = z * z end
    z = z:scatter(2, t, 0)
    if w ~= nil then z = z * w:index_select(1, t:reshape(n)):view(n, 1) end
    local l = z:sum(2) / c
    if x:dim() == 1 then l = l:reshape(target.shape) end
    return reduce(l, o.reduction, op)
  end

  --- F.multilabel_margin_loss(x, target, {reduction = 'mean'}) -> for each sample, the sum over its
  -- target classes j and its other classes i of max(0, 1 - (x[j] - x[i])), over C. target has x's
  -- shape (N x C or C) and holds each sample's 1-based target classes first, ended by the first 0 or
  -- -1 (PyTorch's terminator, kept so that its padded targets need only their classes shifted);
  -- what follows it is ignored
  function F.multilabel_margin_loss(x, target, o)
    local op = 'multilabel_margin_loss'
    o = opts_of(o, op, { 'reduction' })
    check_tensor(x, op)
    check_tensor(target, op, 'target')
    local xx = samples(x, op)
    local n, c = xx:size(1), xx:size(2)
    check_classes(target, op)
    if target.shape ~= x.shape then
      error(string.format('%s: inconsistent target size: %s for input of size: %s', op, tostring(target.shape),
        tostring(x.shape)), 2)
    end
    local t = target:reshape(n, c):long()
    local lo, hi = t:min():item(), t:max():item()
    if lo < -1 or hi > c then
      error(string.format('%s: target %d is out of range (1-based classes 1..%d, 0 or -1 ending the list)', op,
        lo < -1 and lo or hi, c), 2)
    end
    xx = fp32(xx)
    -- the slots before each row's first terminator, their classes (1 in the others), and the classes
    -- that are targets
    local valid = t:ge(1):long():cumprod(2):bool()
    local classes = torch.where(valid, t, 1)
    local is_target = torch.zeros(n, c, { dtype = xx.dtype, device = xx.device })
      :scatter_add(2, classes, valid:to(xx.dtype)):gt(0)
    -- N x slots x classes: 1 - (x[target of slot] - x[class])
    local hinge = (xx:unsqueeze(2) - xx:gather(2, classes):unsqueeze(3) + 1):clamp(0, nil)
    local counted = valid:unsqueeze(3):logical_and(is_target:logical_not():unsqueeze(2))
    local l = torch.where(counted, hinge, 0):sum({ 2, 3 }) / c
    if x:dim() == 1 then l = l:reshape({}) end
    return reduce(l, o.reduction, op)
  end
end
