-- torch.nn.utils.rnn: variable-length sequences as PyTorch 1.13 has them. pad_sequence stacks
-- sequences of different lengths into one padded tensor; pack_padded_sequence and pack_sequence make
-- a PackedSequence (the steps of every sequence, time step after time step, the longest sequence
-- first, with batch_sizes[t] = how many sequences are longer than t - 1), which nn.RNN, nn.LSTM and
-- nn.GRU run without stepping over the padding; pad_packed_sequence turns it back into a padded
-- tensor and the lengths. Indices are 1-based, as everywhere in lutorch. Composed of differentiable
-- tensor ops (narrow, cat, stack, index_select), so gradients flow through packing and padding.
--
--   local packed = nn.utils.rnn.pack_padded_sequence(x, {5, 3, 2}, {batch_first = true})
--   local out, state = nn.LSTM(4, 8, {batch_first = true})(packed)
--   local padded, lengths = nn.utils.rnn.pad_packed_sequence(out, {batch_first = true})
local torch = require 'torch'
local opts_of = require('torch.options').check
local as_int = require('torch.composite').as_int

local rnn = {}

-- ---- PackedSequence ----

local PackedSequence = {}
PackedSequence.__index = PackedSequence
PackedSequence.__name = 'PackedSequence'

-- the permutation that undoes `perm` (an int64 tensor of 1-based indices)
local function invert_permutation(perm)
  if perm == nil then return nil end
  local n = perm:numel()
  return torch.empty_like(perm):scatter_(1, perm, torch.arange(1, n + 1, { dtype = perm.dtype, device = perm.device }))
end

-- PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices): data (sum(batch_sizes), *),
-- batch_sizes a 1-D int64 CPU tensor; sorted_indices[i] = the original batch index of the i-th longest
-- sequence (nil when the batch came sorted); unsorted_indices its inverse (made from sorted_indices
-- when nil)
function rnn.PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)
  if not torch.is_tensor(data) then error('PackedSequence: data must be a tensor, got ' .. type(data), 2) end
  if not torch.is_tensor(batch_sizes) or batch_sizes:dim() ~= 1 or batch_sizes.dtype ~= torch.int64
      or batch_sizes.device.type ~= 'cpu' then
    error('PackedSequence: batch_sizes must be a 1-D int64 tensor on the CPU', 2)
  end
  return setmetatable({ data = data, batch_sizes = batch_sizes, sorted_indices = sorted_indices,
    unsorted_indices = unsorted_indices or invert_permutation(sorted_indices) }, PackedSequence)
end

function rnn.is_packed_sequence(v) return getmetatable(v) == PackedSequence end

-- seq:to(device or dtype or options, ...): data moved or cast as Tensor:to does; the indices follow
-- data's device, batch_sizes stay on the CPU. Returns seq itself when data does not change.
function PackedSequence:to(...)
  local data = self.data:to(...)
  if rawequal(data, self.data) then return self end
  local function move(i) return i and i:to(data.device) end
  return setmetatable({ data = data, batch_sizes = self.batch_sizes, sorted_indices = move(self.sorted_indices),
    unsorted_indices = move(self.unsorted_indices) }, PackedSequence)
end

function PackedSequence:cpu() return self:to('cpu') end
function PackedSequence:cuda() return self:to('cuda') end
function PackedSequence:double() return self:to(torch.float64) end
function PackedSequence:float() return self:to(torch.float32) end
function PackedSequence:is_cuda() return self.data.device.type == 'cuda' end

function PackedSequence:__tostring()
  return string.format('PackedSequence(data=%s, batch_sizes=%s, sorted_indices=%s, unsorted_indices=%s)',
    tostring(self.data), tostring(self.batch_sizes), tostring(self.sorted_indices or 'nil'),
    tostring(self.unsorted_indices or 'nil'))
end

-- ---- padding ----

-- pad_sequence(sequences, {batch_first = false, padding_value = 0, padding_side = 'right'}): tensors
-- of L_i x * stacked into Lmax x B x * (B x Lmax x * with batch_first), padded with the value
function rnn.pad_sequence(seqs, o)
  if type(seqs) ~= 'table' or torch.is_tensor(seqs) or #seqs == 0 then
    error('pad_sequence: expected a non-empty table of tensors', 2)
  end
  o = opts_of(o, 'pad_sequence', { 'batch_first', 'padding_value', 'padding_side' })
  local side = o.padding_side or 'right'
  if side ~= 'right' and side ~= 'left' then error("pad_sequence: padding_side must be 'left' or 'right', got " .. tostring(side), 2) end
  local longest = 0
  for i, t in ipairs(seqs) do
    if not torch.is_tensor(t) then error(string.format('pad_sequence: element %d is not a tensor', i), 2) end
    if t:dim() == 0 then error(string.format('pad_sequence: element %d is 0-D; sequences need a length', i), 2) end
    if t:dim() ~= seqs[1]:dim() then
      error(string.format('pad_sequence: element %d has %d dimensions, the first %d', i, t:dim(), seqs[1]:dim()), 2)
    end
    for d = 2, t:dim() do
      if t:size(d) ~= seqs[1]:size(d) then
        error(string.format('pad_sequence: element %d is of shape %s; every sequence must share the trailing shape of the first, %s',
          i, tostring(t.shape), tostring(seqs[1].shape)), 2)
      end
    end
    longest = math.max(longest, t:size(1))
  end
  local F = require 'torch.nn.functional'
  local rows = {}
  for i, t in ipairs(seqs) do
    local pad = {}
    for _ = 2, t:dim() do pad[#pad + 1] = 0; pad[#pad + 1] = 0 end
    local missing = longest - t:size(1)
    if side == 'right' then pad[#pad + 1], pad[#pad + 2] = 0, missing else pad[#pad + 1], pad[#pad + 2] = missing, 0 end
    rows[i] = missing > 0 and F.pad(t, pad, { value = o.padding_value or 0 }) or t
  end
  local out = torch.stack(rows, 1)
  if not o.batch_first then out = out:transpose(1, 2) end
  return out
end

-- ---- packing ----

-- lengths (a Lua array of integers or an integer tensor on the CPU) as an array of integers, checked
-- against the batch of B sequences of at most T steps
local function lengths_of(op, lengths, B, T)
  local ls
  if torch.is_tensor(lengths) then
    if lengths:dim() ~= 1 or lengths.device.type ~= 'cpu' or lengths:is_floating_point() or lengths.dtype == torch.bool then
      error(string.format("%s: 'lengths' argument should be a 1D CPU int64 tensor, but got %dD %s %s tensor", op,
        lengths:dim(), tostring(lengths.device), tostring(lengths.dtype)), 3)
    end
    ls = lengths:totable()
  elseif type(lengths) == 'table' then
    ls = {}
    for i, l in ipairs(lengths) do
      l = as_int(l)
      if math.type(l) ~= 'integer' then
        error(string.format('%s: lengths[%d] must be an integer, got %s', op, i, math.type(l) or type(l)), 3)
      end
      ls[i] = l
    end
  else
    error(string.format('%s: lengths must be a table of integers or a CPU int64 tensor, got %s', op, type(lengths)), 3)
  end
  if #ls ~= B then
    error(string.format('%s: Expected `len(lengths)` to be equal to batch_size, but got %d (batch_size=%d)', op, #ls, B), 3)
  end
  for i, l in ipairs(ls) do
    if l <= 0 then
      error(string.format("%s: Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0 (lengths[%d] = %d)",
        op, i, l), 3)
    end
    if l > T then
      error(string.format('%s: lengths[%d] = %d is longer than the input, which has %d steps', op, i, l, T), 3)
    end
  end
  return ls
end

-- pack_padded_sequence(input, lengths, {batch_first = false, enforce_sorted = true}): input
-- (T, B, *) (or (B, T, *) with batch_first) padded after each sequence's lengths[b] steps, lengths
-- decreasing unless enforce_sorted is false (the batch is then sorted, and the PackedSequence keeps
-- the permutation)
function rnn.pack_padded_sequence(input, lengths, o)
  local op = 'pack_padded_sequence'
  o = opts_of(o, op, { 'batch_first', 'enforce_sorted' })
  if not torch.is_tensor(input) then error(op .. ': input must be a tensor, got ' .. type(input), 2) end
  if input:dim() < 2 then error(string.format('%s: input must have at least 2 dimensions (time and batch), got %dD', op, input:dim()), 2) end
  if input:numel() == 0 then error(op .. ': Cannot pack empty tensors.', 2) end
  local x = o.batch_first and input:transpose(1, 2) or input
  local ls = lengths_of(op, lengths, x:size(2), x:size(1))
  local sorted_indices
  if o.enforce_sorted == false then
    local order = {}
    for i = 1, #ls do order[i] = i end
    table.sort(order, function(a, b) if ls[a] ~= ls[b] then return ls[a] > ls[b] end return a < b end)
    local sorted = {}
    for i, k in ipairs(order) do sorted[i] = ls[k] end
    ls = sorted
    sorted_indices = torch.tensor(order, { dtype = torch.int64, device = input.device })
    x = x:index_select(2, sorted_indices)
  else
    for i = 2, #ls do
      if ls[i] > ls[i - 1] then
        error(op .. ': `lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass '
          .. '`enforce_sorted = false` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do '
          .. 'not need ONNX exportability.', 2)
      end
    end
  end
  -- batch_sizes[t] = how many sequences have a step t; the rows of step t are the first batch_sizes[t]
  local bs, steps = {}, {}
  for t = 1, ls[1] do
    local n = 0
    while n < #ls and ls[n + 1] >= t do n = n + 1 end
    bs[t] = n
    steps[t] = x:select(1, t):narrow(1, 1, n)
  end
  return rnn.PackedSequence(torch.cat(steps, 1), torch.tensor(bs, { dtype = torch.int64 }), sorted_indices)
end

-- pack_sequence(sequences, {enforce_sorted = true}): an array of tensors (L_i, *) packed
function rnn.pack_sequence(seqs, o)
  o = opts_of(o, 'pack_sequence', { 'enforce_sorted' })
  if type(seqs) ~= 'table' or torch.is_tensor(seqs) or #seqs == 0 then
    error('pack_sequence: expected a non-empty table of tensors', 2)
  end
  local ls = {}
  for i, s in ipairs(seqs) do
    if not torch.is_tensor(s) or s:dim() == 0 then
      error(string.format('pack_sequence: element %d must be a tensor of at least 1 dimension', i), 2)
    end
    ls[i] = s:size(1)
  end
  return rnn.pack_padded_sequence(rnn.pad_sequence(seqs), ls, { enforce_sorted = o.enforce_sorted })
end

-- ---- unpacking ----

-- pad_packed_sequence(sequence, {batch_first = false, padding_value = 0, total_length}) -> padded,
-- lengths: the inverse of pack_padded_sequence, padded (T, B, *) (or (B, T, *)), T = total_length or
-- the longest length, the batch in its original order; lengths an int64 CPU tensor
function rnn.pad_packed_sequence(seq, o)
  local op = 'pad_packed_sequence'
  o = opts_of(o, op, { 'batch_first', 'padding_value', 'total_length' })
  if not rnn.is_packed_sequence(seq) then error(op .. ': expected a PackedSequence, got ' .. (torch.is_tensor(seq) and 'a tensor' or type(seq)), 2) end
  local bs = seq.batch_sizes:totable()
  local T, B = #bs, bs[1]
  local total = o.total_length or T
  total = as_int(total)
  if math.type(total) ~= 'integer' then error(op .. ': total_length must be an integer, got ' .. tostring(total), 2) end
  if total < T then
    error(string.format('%s: Expected total_length to be at least the length of the longest sequence in input, but got '
      .. 'total_length=%d and max sequence length being %d', op, total, T), 2)
  end
  local data, pv = seq.data, o.padding_value or 0
  -- padding_value in a tensor of `lead` sizes followed by data's trailing ones
  local function fill(lead)
    for d = 2, data:dim() do lead[#lead + 1] = data:size(d) end
    return data:new_full(lead, pv)
  end
  local rows, at = {}, 1
  for t = 1, T do
    local r = data:narrow(1, at, bs[t])
    if bs[t] < B then r = torch.cat({ r, fill({ B - bs[t] }) }, 1) end
    rows[t], at = r, at + bs[t]
  end
  local padded = torch.stack(rows, 1)
  if total > T then padded = torch.cat({ padded, fill({ total - T, B }) }, 1) end
  local ls = {}
  for b = 1, B do
    local n = 0
    while n < T and bs[n + 1] >= b do n = n + 1 end
    ls[b] = n
  end
  local lengths = torch.tensor(ls, { dtype = torch.int64 })
  if seq.unsorted_indices then
    padded = padded:index_select(2, seq.unsorted_indices)
    lengths = lengths:index_select(1, seq.unsorted_indices:to(lengths.device))
  end
  if o.batch_first then padded = padded:transpose(1, 2) end
  return padded, lengths
end

-- unpad_sequence(padded, lengths, {batch_first = false}) -> an array of tensors, padded's b-th
-- sequence cut to lengths[b] steps
function rnn.unpad_sequence(padded, lengths, o)
  o = opts_of(o, 'unpad_sequence', { 'batch_first' })
  if not torch.is_tensor(padded) or padded:dim() < 2 then error('unpad_sequence: padded must be a tensor of at least 2 dimensions', 2) end
  local x = o.batch_first and padded or padded:transpose(1, 2)
  local ls = lengths_of('unpad_sequence', lengths, x:size(1), x:size(2))
  local out = {}
  for b, l in ipairs(ls) do out[b] = x:select(1, b):narrow(1, 1, l) end
  return out
end

-- unpack_sequence(packed) -> the array of sequences packed, in their original order
function rnn.unpack_sequence(packed)
  if not rnn.is_packed_sequence(packed) then error('unpack_sequence: expected a PackedSequence, got ' .. type(packed), 2) end
  local padded, lengths = rnn.pad_packed_sequence(packed, { batch_first = true })
  return rnn.unpad_sequence(padded, lengths, { batch_first = true })
end

return rnn
