-- F.ctc_loss: the connectionist temporal classification loss, by the forward (alpha) recursion in
-- log space over the time steps, each step a few tensor ops over the batch and the extended target
-- (blanks around and between the labels), so autograd gives the gradient. Classes and the blank are
-- 1-based (PyTorch's blank 0 is class 1 here).
local torch = require 'torch'
local as_int = require('torch.composite').as_int

-- the log of a probability of 0: finite, so that no step of the recursion (nor its gradient) meets
-- -inf - -inf; a total below NEG / 2 means the target cannot be aligned (an infinite loss)
local NEG = -1e30

return function(F, u)
  local check_tensor, opts_of, fp32 = u.check_tensor, u.opts_of, u.fp32

  -- lengths (a tensor, a table or, unbatched, a number) as a Lua array of n integers
  local function lengths_of(v, n, op, what)
    local list
    if torch.is_tensor(v) then
      if v.dtype.is_floating_point or v.dtype == torch.bool then
        error(string.format('%s: %s must hold integers, got %s', op, what, tostring(v.dtype)), 3)
      end
      list = v:reshape(-1):totable()
    elseif type(v) == 'number' then
      list = { v }
    elseif type(v) == 'table' then
      list = v
    else
      error(string.format('%s: %s must be a tensor or a table of integers, got %s', op, what, type(v)), 3)
    end
    if #list ~= n then error(string.format('%s: %s must have %d entries (one a sample), got %d', op, what, n, #list), 3) end
    list = { table.unpack(list, 1, n) }
    for i = 1, n do
      list[i] = as_int(list[i])
      if math.type(list[i]) ~= 'integer' or list[i] < 0 then
        error(string.format('%s: %s must be non-negative integers, got %s', op, what, tostring(list[i])), 3)
      end
    end
    return list
  end

  -- log(exp(a) + exp(b) (+ exp(c))) elementwise, the maximum held constant (its gradient cancels)
  local function logsumexp(a, b, c)
    local m = torch.maximum(a, b)
    if c then m = torch.maximum(m, c) end
    m = m:detach()
    local s = (a - m):exp() + (b - m):exp()
    if c then s = s + (c - m):exp() end
    return m + s:log()
  end

  --- F.ctc_loss(log_probs, targets, input_lengths, target_lengths, {blank = 1, reduction = 'mean',
  -- zero_infinity = false}) -> -log p(target | input) summed over the alignments. log_probs: T x N x C
  -- (or T x C) log-probabilities; targets: N x S padded, or the N targets concatenated (1-D), of
  -- 1-based classes other than the blank; lengths: tensors or tables of N integers. 'mean' divides
  -- each loss by its target length (at least 1), then averages; zero_infinity makes the loss of a
  -- target that cannot be aligned 0 (it is inf otherwise), and its gradient 0. The gradient is that
  -- of the loss with respect to log_probs (PyTorch's adds exp(log_probs), which only the log_softmax
  -- it assumes before takes away again: through a log_softmax both give the same gradient).
  function F.ctc_loss(lp, targets, input_lengths, target_lengths, o)
    local op = 'ctc_loss'
    o = opts_of(o, op, { 'blank', 'reduction', 'zero_infinity' })
    check_tensor(lp, op, 'log_probs')
    check_tensor(targets, op, 'targets')
    lp = fp32(lp)
    if lp.dtype ~= torch.float32 and lp.dtype ~= torch.float64 then
      error(op .. ': expected log_probs of dtype float32 or float64, got ' .. tostring(lp.dtype), 2)
    end
    if lp:dim() ~= 2 and lp:dim() ~= 3 then
      error(op .. ': expected log_probs of 3 dimensions (T, N, C) or 2 (T, C), got ' .. lp:dim() .. '-D', 2)
    end
    if targets.dtype.is_floating_point or targets.dtype == torch.bool then
      error(op .. ': expected targets of an integer dtype (1-based classes), got ' .. tostring(targets.dtype), 2)
    end
    local reduction = o.reduction or 'mean'
    if reduction ~= 'mean' and reduction ~= 'sum' and reduction ~= 'none' then
      error(op .. ": reduction must be 'mean', 'sum' or 'none', got " .. tostring(reduction), 2)
    end
    local batched = lp:dim() == 3
    if not batched then
      lp = lp:unsqueeze(2)
      if targets:dim() ~= 1 then error(op .. ': expected 1-D targets with a 2-D log_probs, got ' .. targets:dim() .. '-D', 2) end
      targets = targets:reshape(1, -1)
    end
    local T, N, C = lp:size(1), lp:size(2), lp:size(3)
    if T == 0 or C == 0 then error(op .. ': expected log_probs with at least one time step and one class, got ' .. tostring(lp.shape), 2) end
    local blank = o.blank or 1
    blank = as_int(blank)
    if math.type(blank) ~= 'integer' or blank < 1 or blank > C then
      error(string.format('%s: blank must be a class in 1..%d (1-based), got %s', op, C, tostring(blank)), 2)
    end
    local tin = lengths_of(input_lengths, N, op, 'input_lengths')
    local tlen = lengths_of(target_lengths, N, op, 'target_lengths')
    for i = 1, N do
      if tin[i] > T then
        error(string.format('%s: Expected input_lengths to have value at most %d, but got value %d', op, T, tin[i]), 2)
      end
    end

    -- each sample's target as a Lua array
    local labels, smax = {}, 0
    if targets:dim() == 2 then
      if targets:size(1) ~= N then
        error(string.format('%s: expected targets of %d rows (one a sample), got %s', op, N, tostring(targets.shape)), 2)
      end
      local rows = targets:totable()
      for i = 1, N do
        if tlen[i] > targets:size(2) then
          error(string.format('%s: Expected tensor to have size at least %d at dimension 2, but got size %d for '
            .. "argument #2 'targets'", op, tlen[i], targets:size(2)), 2)
        end
        labels[i] = { table.unpack(rows[i], 1, tlen[i]) }
      end
    elseif targets:dim() == 1 then
      local all, at = targets:totable(), 0
      for i = 1, N do
        if at + tlen[i] > #all then
          error(string.format('%s: the target lengths sum to more than the %d concatenated targets', op, #all), 2)
        end
        labels[i] = { table.unpack(all, at + 1, at + tlen[i]) }
        at = at + tlen[i]
      end
    else
      error(op .. ': expected targets of 2 dimensions (N, S) or 1 (concatenated), got ' .. targets:dim() .. '-D', 2)
    end
    for i = 1, N do
      for _, k in ipairs(labels[i]) do
        if k < 1 or k > C or k == blank then
          error(string.format('%s: target class %d of sample %d is %s (classes are 1-based, 1..%d, blank %d)', op, k, i,
            k == blank and 'the blank' or 'out of range', C, blank), 2)
        end
      end
      smax = math.max(smax, #labels[i])
    end

    -- the extended targets (blank, l1, blank, l2, ..., blank), L = 2 smax + 1 positions, which
    -- positions may be reached from two back (a label unlike the one before it), and where each
    -- sample starts
    local L = 2 * smax + 1
    local ext, skip, start = {}, {}, {}
    for i = 1, N do
      local e, s, st = {}, {}, {}
      for p = 1, L do
        e[p] = p % 2 == 0 and (labels[i][p // 2] or blank) or blank
        s[p] = p >= 3 and e[p] ~= blank and e[p] ~= e[p - 2]
        st[p] = p == 1 or (p == 2 and #labels[i] > 0)
      end
      ext[i], skip[i], start[i] = e, s, st
    end
    local dev = lp.device
    local ext_t = torch.tensor(ext, { dtype = torch.int64, device = dev })
    local skip_t = torch.tensor(skip, { device = dev })
    -- T x N x L: the log-probability of each extended position at each step
    local lpe = lp:gather(3, ext_t:view(1, N, L):expand(T, N, L))
    local f = { dtype = lp.dtype, device = dev }
    local neg1 = torch.full({ N, 1 }, NEG, f)
    local neg2 = torch.full({ N, 2 }, NEG, f)
    local tmax = 0
    for i = 1, N do tmax = math.max(tmax, tin[i]) end

    local alpha = torch.where(torch.tensor(start, { device = dev }), lpe:select(1, 1), NEG)
    for t = 2, tmax do
      local from1 = torch.cat({ neg1, alpha:narrow(2, 1, L - 1) }, 2)
      local new
      if L >= 3 then
        local from2 = torch.where(skip_t, torch.cat({ neg2, alpha:narrow(2, 1, L - 2) }, 2), NEG)
        new = logsumexp(alpha, from1, from2)
      else
        new = logsumexp(alpha, from1)
      end
      local active = {}
      for i = 1, N do active[i] = { t <= tin[i] } end
      alpha = torch.where(torch.tensor(active, { device = dev }), new + lpe:select(1, t), alpha)
    end

    -- log p: the last two positions of each sample's extended target after its last step
    local last, before, has_label, no_steps, no_steps_logp = {}, {}, {}, {}, {}
    for i = 1, N do
      local li = 2 * #labels[i] + 1
      last[i], before[i] = { li }, { math.max(li - 1, 1) }
      has_label[i] = { #labels[i] > 0 }
      -- no input steps: probability 1 for an empty target, 0 otherwise
      no_steps[i], no_steps_logp[i] = tin[i] == 0, #labels[i] == 0 and 0.0 or NEG
    end
    local a_last = alpha:gather(2, torch.tensor(last, { dtype = torch.int64, device = dev }))
    local a_before = torch.where(torch.tensor(has_label, { device = dev }),
      alpha:gather(2, torch.tensor(before, { dtype = torch.int64, device = dev })), NEG)
    local logp = logsumexp(a_last, a_before):view(N)
    logp = torch.where(torch.tensor(no_steps, { device = dev }), torch.tensor(no_steps_logp, f), logp)
    local impossible = logp:lt(NEG / 2)
    local loss = torch.where(impossible, o.zero_infinity and 0 or math.huge, -logp)

    if reduction == 'none' then
      if not batched then return loss:view({}) end
      return loss
    end
    if reduction == 'sum' then return loss:sum() end
    local div = {}
    for i = 1, N do div[i] = math.max(tlen[i], 1) end
    return (loss / torch.tensor(div, f)):mean()
  end
end
