-- F.embedding_bag: sums, means or maxima of bags of embedding rows, composed of index_select,
-- index_add and max (autograd differentiates them). Indices and offsets are 1-based.
local torch = require 'torch'
local as_int = require('torch.composite').as_int

return function(F, u)
  local check_tensor, opts_of, check_max_norm, embedding_renorm_ = u.check_tensor, u.opts_of, u.check_max_norm,
    u.embedding_renorm_

  local MODES = { sum = true, mean = true, max = true }

  --- F.embedding_bag(input, weight, offsets, {mode = 'mean', per_sample_weights, include_last_offset = false,
  -- padding_idx, max_norm, norm_type = 2}) -> B x D: one reduction ('sum', 'mean' or 'max') of weight's
  -- rows a bag.
  -- input is 2-D (B bags of equal length, offsets nil; the options may then come third) or 1-D with
  -- offsets, the 1-based position in input where each bag starts (offsets[1] is 1; a bag ends where
  -- the next starts, the last at input's end, or with include_last_offset at offsets' last entry).
  -- Entries equal to padding_idx (a 1-based row; negative counts from the end) are left out of
  -- their bag (a bag of none gives zeros); per_sample_weights (input's shape) scale the rows, 'sum'
  -- only. With max_norm, every row input names whose norm_type-norm exceeds max_norm is first scaled,
  -- in place and outside autograd, to max_norm / (norm + 1e-7) of itself (as F.embedding).
  -- scale_grad_by_freq and sparse are not supported.
  function F.embedding_bag(input, w, offsets, o)
    local op = 'embedding_bag'
    if type(offsets) == 'table' and not torch.is_tensor(offsets) and o == nil then offsets, o = nil, offsets end
    o = opts_of(o, op, { 'mode', 'per_sample_weights', 'include_last_offset', 'padding_idx', 'max_norm', 'norm_type',
      'scale_grad_by_freq', 'sparse' })
    check_tensor(input, op, 'input')
    check_tensor(w, op, 'weight')
    for _, unsupported in ipairs { 'scale_grad_by_freq', 'sparse' } do
      if o[unsupported] then error(op .. ': ' .. unsupported .. ' is not supported by lutorch', 2) end
    end
    check_max_norm(o, op)
    if input.dtype ~= torch.int64 and input.dtype ~= torch.int32 then
      error(op .. ': expected input (indices) of dtype int64 or int32, got ' .. tostring(input.dtype), 2)
    end
    if w:dim() ~= 2 then error(op .. ': expected a 2-D weight (num_embeddings x embedding_dim), got ' .. w:dim() .. '-D', 2) end
    local mode = o.mode or 'mean'
    if not MODES[mode] then error(op .. ": mode has to be one of 'sum', 'mean' or 'max', got " .. tostring(mode), 2) end
    local psw = o.per_sample_weights
    if psw ~= nil then
      check_tensor(psw, op, 'per_sample_weights')
      if mode ~= 'sum' then
        error(string.format("%s: per_sample_weights is only supported for mode='sum' (got mode='%s')", op, mode), 2)
      end
      if psw.shape ~= input.shape then
        error(string.format('%s: per_sample_weights of shape %s differs from input of shape %s', op,
          tostring(psw.shape), tostring(input.shape)), 2)
      end
    end
    local n_rows, dim = w:size(1), w:size(2)
    local pad = o.padding_idx
    if pad ~= nil then
      pad = as_int(pad)
      if math.type(pad) ~= 'integer' or pad == 0 or pad > n_rows or pad < -n_rows then
        error(string.format('%s: padding_idx must be within num_embeddings (a 1-based row in 1..%d, or negative from '
          .. 'the end), got %s', op, n_rows, tostring(pad)), 2)
      end
      if pad < 0 then pad = n_rows + pad + 1 end
    end

    -- the bags as 1-based [first, last] ranges of positions in the flat input
    local flat = input:reshape(-1):long()
    local m = flat:numel()
    local first, last = {}, {}
    if input:dim() == 2 then
      if offsets ~= nil then
        error(op .. ': if input is 2-D, offsets has to be nil, as input is treated as a batch of fixed-length bags', 2)
      end
      local len = input:size(2)
      for b = 1, input:size(1) do first[b], last[b] = (b - 1) * len + 1, b * len end
    elseif input:dim() == 1 then
      if offsets == nil then error(op .. ': offsets has to be a 1-D tensor but got nil', 2) end
      check_tensor(offsets, op, 'offsets')
      if offsets:dim() ~= 1 then error(op .. ': offsets has to be a 1-D tensor, got ' .. offsets:dim() .. '-D', 2) end
      if offsets.dtype ~= torch.int64 and offsets.dtype ~= torch.int32 then
        error(op .. ': expected offsets of dtype int64 or int32, got ' .. tostring(offsets.dtype), 2)
      end
      local off = offsets:totable()
      if #off > 0 and off[1] ~= 1 then
        error(string.format('%s: offsets[1] has to be 1 (offsets are 1-based: the first bag starts at position 1), got %d',
          op, off[1]), 2)
      end
      for i = 2, #off do
        if off[i] < off[i - 1] then error(string.format('%s: offsets must be non-decreasing, got %d after %d', op, off[i], off[i - 1]), 2) end
      end
      if #off > 0 and off[#off] > m + 1 then
        error(string.format('%s: offsets[-1] can not be greater than the input\'s length + 1 (%d), got %d', op, m + 1, off[#off]), 2)
      end
      local bags = o.include_last_offset and #off - 1 or #off
      for b = 1, bags do first[b], last[b] = off[b], (off[b + 1] or m + 1) - 1 end
    else
      error(op .. ': input has to be a 1-D or 2-D tensor, got ' .. input:dim() .. '-D', 2)
    end
    local bags = #first

    if m > 0 then
      local lo, hi = flat:min():item(), flat:max():item()
      if lo < 1 or hi > n_rows then
        error(string.format('%s: index %d is out of range 1..%d (indices are 1-based rows of the weight)', op,
          lo < 1 and lo or hi, n_rows), 2)
      end
      if o.max_norm then embedding_renorm_(w, flat, o.max_norm, o.norm_type) end
    end
    local f = { dtype = w.dtype, device = w.device }
    if m == 0 or bags == 0 then return torch.zeros(bags, dim, f) end

    local dev = w.device
    local i64 = { dtype = torch.int64, device = dev }
    local first_t, last_t = torch.tensor(first, i64), torch.tensor(last, i64)
    -- the bag of each position: how many bags start at or before it (an empty bag starts where the
    -- next does, so its position goes to the next); the positions after the last bag's end
    -- (include_last_offset) are in none and are left out
    local seg = torch.zeros(m + 1, i64):index_add(1, first_t, torch.ones(bags, i64)):narrow(1, 1, m):cumsum(1)
    seg = seg:clamp(1, bags)
    local keep = torch.arange(1, m + 1, i64):le(last[bags])
    if pad ~= nil then keep = keep:logical_and(flat:ne(pad)) end
    local n_kept = torch.zeros(bags, f):index_add(1, seg, keep:to(w.dtype))
    local rows = w:index_select(1, flat)
    if mode == 'max' then
      -- bags x widest positions: each bag's, its last repeated (the maximum and the first of equals
      -- are unchanged; an empty bag reads position 1), the rows left out being -inf
      local widest = 1
      for b = 1, bags do widest = math.max(widest, last[b] - first[b] + 1) end
      local at = torch.minimum(first_t:view(bags, 1) + torch.arange(0, widest, i64):view(1, widest), last_t:view(bags, 1))
      at = at:masked_fill(last_t:lt(first_t):view(bags, 1), 1)
      local masked = torch.where(keep:view(m, 1), rows, -math.huge)
      local y = masked:index_select(1, at:reshape(-1)):view(bags, widest, dim):max(2)
      return torch.where(n_kept:gt(0):view(bags, 1), y, 0)
    end
    if psw ~= nil then rows = rows * psw:reshape(m, 1) end
    rows = torch.where(keep:view(m, 1), rows, 0)
    local y = torch.zeros(bags, dim, f):index_add(1, seg, rows)
    if mode == 'mean' then y = y / n_kept:clamp(1, nil):view(bags, 1) end
    return y
  end
end
