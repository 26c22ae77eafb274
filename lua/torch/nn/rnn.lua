-- Recurrent layers: nn.RNN, nn.LSTM, nn.GRU and their cells nn.RNNCell, nn.LSTMCell, nn.GRUCell, with
-- PyTorch's arguments, parameter names and order (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0,
-- then _reverse for the backward direction, layer after layer), gate order (LSTM: i, f, g, o; GRU:
-- r, z, n), initialisation U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) and equations. Composed of
-- tensor ops, so autograd and every device come with them: each layer projects the whole input
-- sequence in one product, then steps through time.
--
--   local lstm = nn.LSTM(10, 20, {num_layers = 2, batch_first = true})
--   local out, state = lstm(x)                -- state = {h_n, c_n}
--   out, state = lstm(x2, state)              -- carry the state on
--   local gru = nn.GRU(10, 20); local out, h_n = gru(x, h0)
--   local cell = nn.LSTMCell(10, 20); local h, c = cell(x_t, {h, c})
local torch = require 'torch'
local Module = require 'torch.nn.module'
local Parameter = require('torch.nn.parameter').Parameter
local F = require 'torch.nn.functional'
local init = require 'torch.nn.initializers'
local rnn_utils = require 'torch.nn.rnn_utils'
local as_int = require('torch.composite').as_int

local M = {}
local pyrepr = Module._pyrepr

local GATES = { RNN_TANH = 1, RNN_RELU = 1, LSTM = 4, GRU = 3 }

local function positive(name, what, v)
  v = as_int(v)
  if math.type(v) ~= 'integer' or v <= 0 then error(string.format('%s: %s must be a positive integer, got %s', name, what, tostring(v)), 4) end
  return v
end

-- whether a mode's step takes b_hh folded into the input's projection (gi = x W_ih^T + b_ih + b_hh,
-- made once for all steps): the gates then come from one addmm a step. GRU needs h W_hh^T + b_hh
-- apart (its candidate gate scales it by r).
local function folds_bias(mode) return mode ~= 'GRU' end

-- the dtypes of the fused cell (torch._nn.lstm_cell: core/rnn.c, one op and one node for the
-- gates' elementwise math, one vectorised loop on the CPU and one kernel launch on a GPU instead of
-- ten ops: a 2-layer LSTM step 12-20% faster on one CPU thread); float16 and bfloat16 (autocast)
-- take the composed ops
local FUSED = { [torch.float32] = true, [torch.float64] = true }
local lstm_cell = torch._nn.lstm_cell

-- one step of a cell: gi = the input's projection (with bias_ih, and bias_hh where folds_bias), h
-- (and c) the state; w_hh, b_hh the recurrent weights. Returns the new h (and c).
local function step(mode, gi, h, c, w_hh, b_hh)
  if mode == 'LSTM' then
    local g = torch.addmm(gi, h, w_hh:t())
    if FUSED[g.dtype] and g:dim() == 2 then return lstm_cell(g, c) end
    local H = h:size(-1)
    local sif = g:narrow(-1, 1, 2 * H):sigmoid() -- the input and forget gates, side by side
    local i, f = sif:narrow(-1, 1, H), sif:narrow(-1, H + 1, H)
    local gg = g:narrow(-1, 2 * H + 1, H):tanh()
    local o = g:narrow(-1, 3 * H + 1, H):sigmoid()
    local c2 = f * c + i * gg
    return o * c2:tanh(), c2
  elseif mode ~= 'GRU' then
    local g = torch.addmm(gi, h, w_hh:t())
    if mode == 'RNN_RELU' then return g:relu() end
    return g:tanh()
  end
  local gh = F.linear(h, w_hh, b_hh) -- GRU
  local H = h:size(-1)
  local r = (gi:narrow(-1, 1, H) + gh:narrow(-1, 1, H)):sigmoid()
  local z = (gi:narrow(-1, H + 1, H) + gh:narrow(-1, H + 1, H)):sigmoid()
  local n = (gi:narrow(-1, 2 * H + 1, H) + r * gh:narrow(-1, 2 * H + 1, H)):tanh()
  return (1 - z) * n + z * h
end

-- x W_ih^T + b_ih, and + b_hh where the mode folds it in
local function projection(mode, x, w_ih, b_ih, b_hh)
  local gi = F.linear(x, w_ih, b_ih)
  if b_hh and folds_bias(mode) then gi = gi + b_hh end
  return gi
end

-- one direction of one layer over a padded (T, N, gates) projection gi, from h0 (and c0): the
-- outputs (T, N, H) and the final h (and c)
local function padded_direction(mode, gi, reverse, h, c, w_hh, b_hh)
  local T, steps = gi:size(1), {}
  for s = 1, T do
    local t = reverse and T - s + 1 or s
    h, c = step(mode, gi[t], h, c, w_hh, b_hh)
    steps[t] = h
  end
  return torch.stack(steps, 1), h, c
end

-- one direction of one layer over packed data (rows of step t at offs[t], bs[t] of them, the longest
-- sequences first), as PyTorch's reference does it: the input's projection for all rows at once, then
-- the cell step by step over the shrinking batch. Forward, a sequence whose last step has passed
-- leaves the batch with its state (its final one); backward, each sequence joins the batch at its
-- own last step, from its initial state. Returns the output rows (in data's order) and the final
-- h (and c), one row a sequence.
local function packed_direction(mode, gi, reverse, h0, c0, w_hh, b_hh, bs, offs)
  local T, steps = #bs, {}
  if not reverse then
    local h, c, done_h, done_c = h0, c0, {}, {}
    for t = 1, T do
      local n, live = bs[t], h:size(1)
      if n < live then -- the last live - n sequences have ended: keep their final state
        table.insert(done_h, 1, h:narrow(1, n + 1, live - n)); h = h:narrow(1, 1, n)
        if c then table.insert(done_c, 1, c:narrow(1, n + 1, live - n)); c = c:narrow(1, 1, n) end
      end
      h, c = step(mode, gi:narrow(1, offs[t], n), h, c, w_hh, b_hh)
      steps[t] = h
    end
    table.insert(done_h, 1, h)
    if c then table.insert(done_c, 1, c) end
    return torch.cat(steps, 1), torch.cat(done_h, 1), c and torch.cat(done_c, 1)
  end
  local h, c = h0:narrow(1, 1, bs[T]), c0 and c0:narrow(1, 1, bs[T])
  for t = T, 1, -1 do
    local n, live = bs[t], h:size(1)
    if n > live then -- sequences whose last step is t join, from their initial state
      h = torch.cat({ h, h0:narrow(1, live + 1, n - live) }, 1)
      if c then c = torch.cat({ c, c0:narrow(1, live + 1, n - live) }, 1) end
    end
    h, c = step(mode, gi:narrow(1, offs[t], n), h, c, w_hh, b_hh)
    steps[t] = h
  end
  return torch.cat(steps, 1), h, c
end

-- every layer and direction over x (features along feature_dim) of a stack described by cfg (mode,
-- num_layers, bidirectional, dropout, training), whose weights(cfg, l, d) gives layer l's (from 0)
-- direction d's (0 forward, 1 reverse) w_ih, w_hh, b_ih, b_hh: each direction's input projection for
-- every step at once, then run(mode, gi, reverse, h0, c0, w_hh, b_hh, ...) -> its outputs and final
-- h (and c); dropout between layers in training. Returns the last layer's output, h_n and c_n.
local function run_layers(cfg, weights, x, h0, c0, feature_dim, run, ...)
  local dirs = cfg.bidirectional and 2 or 1
  local hn, cn = {}, {}
  local layer_in = x
  for l = 0, cfg.num_layers - 1 do
    local outs = {}
    for d = 0, dirs - 1 do
      local k = l * dirs + d + 1
      local w_ih, w_hh, b_ih, b_hh = weights(cfg, l, d)
      local gi = projection(cfg.mode, layer_in, w_ih, b_ih, b_hh)
      outs[d + 1], hn[k], cn[k] = run(cfg.mode, gi, d == 1, h0[k], c0 and c0[k], w_hh, b_hh, ...)
    end
    layer_in = dirs == 2 and torch.cat(outs, feature_dim) or outs[1]
    if cfg.dropout > 0 and cfg.training and l < cfg.num_layers - 1 then
      layer_in = F.dropout(layer_in, cfg.dropout, true)
    end
  end
  return layer_in, torch.stack(hn, 1), c0 and torch.stack(cn, 1) or nil
end

-- the offsets of packed data's steps (1-based rows) from its batch sizes
local function step_offsets(bs)
  local offs, at = {}, 1
  for t = 1, #bs do offs[t], at = at, at + bs[t] end
  return offs
end

-- ---- the sequence layers ----

local function rnn_class(name, mode)
  local cls = Module:extend(name)

  -- Name(input_size, hidden_size, {num_layers = 1, bias = true, batch_first = false, dropout = 0,
  -- bidirectional = false, nonlinearity = 'tanh' (RNN), device, dtype}) (or the same positionally
  -- after hidden_size: num_layers)
  function cls:init(input_size, hidden_size, o)
    o = as_int(o)
    if math.type(o) == 'integer' then o = { num_layers = o } end
    o = o or {}
    input_size = positive(name, 'input_size', input_size)
    hidden_size = positive(name, 'hidden_size', hidden_size)
    local layers = o.num_layers or 1
    layers = positive(name, 'num_layers', layers)
    local dropout = o.dropout or 0
    if type(dropout) ~= 'number' or dropout < 0 or dropout > 1 then
      error(name .. ': dropout should be a number in range [0, 1] representing the probability of an element being zeroed', 3)
    end
    self.mode = mode
    if name == 'RNN' then
      local nl = o.nonlinearity or 'tanh'
      if nl ~= 'tanh' and nl ~= 'relu' then error("RNN: Unknown nonlinearity '" .. tostring(nl) .. "'. Select from 'tanh' or 'relu'.", 3) end
      self.nonlinearity = nl
      self.mode = nl == 'relu' and 'RNN_RELU' or 'RNN_TANH'
    end
    self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, layers
    self.bias = o.bias == nil or o.bias and true or false
    self.batch_first = o.batch_first and true or false
    self.dropout = dropout
    self.bidirectional = o.bidirectional and true or false
    local dirs = self.bidirectional and 2 or 1
    local gates = GATES[self.mode] * hidden_size
    local f = { dtype = o.dtype, device = o.device }
    -- more than the device has free (or, where that is unknown, than an address space holds:
    -- 2^47 bytes) fails at once: the loop would build small layers until the memory ran out. Each
    -- layer's four tensors also cost ~0.5 KB of bookkeeping whatever their size. Below 256 MiB (as
    -- the allocator, which checks larger single blocks itself) the free memory is not read.
    local per_layer = dirs * (gates * (math.max(input_size, hidden_size * dirs) + hidden_size) + 2.0 * gates)
    local need = layers * (per_layer * (o.dtype or torch.get_default_dtype()).itemsize + dirs * 4 * 512.0)
    if need > 2.0 ^ 28 then
      local dev = torch.device(o.device or 'cpu')
      local avail = torch._available_memory(dev)
      local limit = avail and string.format('the %.3g bytes available on %s', avail, tostring(dev))
        or 'an address space holds'
      if need > (avail or 2.0 ^ 47) then
        error(string.format('%s: num_layers = %d of hidden_size %d needs about %.3g bytes, more than %s', name,
          layers, hidden_size, need, limit), 3)
      end
    end
    for l = 0, layers - 1 do
      local in_size = l == 0 and input_size or hidden_size * dirs
      for d = 0, dirs - 1 do
        local sfx = 'l' .. l .. (d == 1 and '_reverse' or '')
        self['weight_ih_' .. sfx] = Parameter(torch.empty(gates, in_size, f))
        self['weight_hh_' .. sfx] = Parameter(torch.empty(gates, hidden_size, f))
        if self.bias then
          self['bias_ih_' .. sfx] = Parameter(torch.empty(gates, f))
          self['bias_hh_' .. sfx] = Parameter(torch.empty(gates, f))
        end
      end
    end
    self:reset_parameters()
  end

  function cls:reset_parameters()
    local k = 1 / math.sqrt(self.hidden_size)
    for _, p in ipairs(self:parameters()) do init.uniform_(p, -k, k) end
  end

  -- the weights of layer l (from 0), direction d (0 forward, 1 reverse)
  local function weights(self, l, d)
    local sfx = 'l' .. l .. (d == 1 and '_reverse' or '')
    return self['weight_ih_' .. sfx], self['weight_hh_' .. sfx], self['bias_ih_' .. sfx], self['bias_hh_' .. sfx]
  end

  -- h_0 (and c_0) from hx, checked to be (num_layers * directions, N, hidden_size) ((.., hidden_size)
  -- unbatched, then given a batch of one), or zeros like x when hx is nil
  local function initial_state(self, name, hx, N, batched, x)
    local dirs, H = self.bidirectional and 2 or 1, self.hidden_size
    if hx == nil then
      local h0 = torch.zeros(self.num_layers * dirs, N, H, { dtype = x.dtype, device = x.device })
      return h0, self.mode == 'LSTM' and h0 or nil
    end
    local h0, c0
    if self.mode == 'LSTM' then
      if type(hx) ~= 'table' or torch.is_tensor(hx) or #hx ~= 2 then error('LSTM: hx must be a table {h_0, c_0}', 3) end
      h0, c0 = hx[1], hx[2]
    else
      h0 = hx
    end
    local want = batched and { self.num_layers * dirs, N, H } or { self.num_layers * dirs, H }
    for _, t in ipairs { h0, c0 } do
      if not torch.is_tensor(t) or table.concat(t.shape, ',') ~= table.concat(want, ',') then
        error(string.format('%s: Expected hidden size (%s), got %s', name, table.concat(want, ', '),
          torch.is_tensor(t) and '[' .. table.concat(t.shape, ', ') .. ']' or type(t)), 3)
      end
    end
    if not batched then
      h0 = h0:unsqueeze(2)
      if c0 then c0 = c0:unsqueeze(2) end
    end
    return h0, c0
  end

  -- forward over a PackedSequence: the same layers, each direction stepped by packed_direction over
  -- the shrinking batch; hx and the final states in the batch's original order
  local function forward_packed(self, seq, hx)
    local data = seq.data
    if data:dim() ~= 2 or data:size(2) ~= self.input_size then
      error(string.format('%s: a packed input must have data of shape (*, %d), got [%s]', name, self.input_size,
        table.concat(data.shape, ', ')), 3)
    end
    local bs = seq.batch_sizes:totable()
    local offs = step_offsets(bs)
    local h0, c0 = initial_state(self, name, hx, bs[1], true, data)
    if hx ~= nil and seq.sorted_indices then -- into the packed (sorted) order
      h0 = h0:index_select(2, seq.sorted_indices)
      if c0 then c0 = c0:index_select(2, seq.sorted_indices) end
    end
    local out_data, h_n, c_n = run_layers(self, weights, data, h0, c0, 2, packed_direction, bs, offs)
    if seq.unsorted_indices then -- back to the original order
      h_n = h_n:index_select(2, seq.unsorted_indices)
      if c_n then c_n = c_n:index_select(2, seq.unsorted_indices) end
    end
    local out = rnn_utils.PackedSequence(out_data, seq.batch_sizes, seq.sorted_indices, seq.unsorted_indices)
    if c_n then return out, { h_n, c_n } end
    return out, h_n
  end

  -- forward(input, hx) -> output, h_n (LSTM: output, {h_n, c_n}); input (T, N, input_size), or
  -- (N, T, input_size) with batch_first, or (T, input_size) unbatched, or a PackedSequence (output
  -- then a PackedSequence too, h_n taken at each sequence's own last step); hx (num_layers *
  -- directions, N, hidden_size) (LSTM: {h_0, c_0}), zeros when nil
  function cls:forward(input, hx)
    if rnn_utils.is_packed_sequence(input) then return forward_packed(self, input, hx) end
    if not torch.is_tensor(input) then error(name .. ': expected an input tensor, got ' .. type(input), 2) end
    local batched = input:dim() == 3
    if not batched and input:dim() ~= 2 then
      error(string.format('%s: Expected input to be 2D or 3D, got %dD instead', name, input:dim()), 2)
    end
    if input:size(-1) ~= self.input_size then
      error(string.format('%s: input.size(-1) must be equal to input_size. Expected %d, got %d', name, self.input_size,
        input:size(-1)), 2)
    end
    local x = input
    if not batched then x = x:unsqueeze(2)
    elseif self.batch_first then x = x:transpose(1, 2) end
    local lstm = self.mode == 'LSTM'
    local h0, c0 = initial_state(self, name, hx, x:size(2), batched, x)
    local out, h_n, c_n = run_layers(self, weights, x, h0, c0, 3, padded_direction)
    if not batched then
      out = out:squeeze(2)
      h_n = h_n:squeeze(2)
      if c_n then c_n = c_n:squeeze(2) end
    elseif self.batch_first then
      out = out:transpose(1, 2)
    end
    if lstm then return out, { h_n, c_n } end
    return out, h_n
  end

  function cls:extra_repr()
    local s = string.format('%d, %d', self.input_size, self.hidden_size)
    if self.num_layers ~= 1 then s = s .. ', num_layers=' .. self.num_layers end
    if name == 'RNN' and self.nonlinearity ~= 'tanh' then s = s .. ", nonlinearity='" .. self.nonlinearity .. "'" end
    if not self.bias then s = s .. ', bias=False' end
    if self.batch_first then s = s .. ', batch_first=True' end
    if self.dropout ~= 0 then s = s .. ', dropout=' .. pyrepr(self.dropout + 0.0) end
    if self.bidirectional then s = s .. ', bidirectional=True' end
    return s
  end
  return cls
end

M.RNN = rnn_class('RNN', 'RNN_TANH')
M.LSTM = rnn_class('LSTM', 'LSTM')
M.GRU = rnn_class('GRU', 'GRU')

-- ---- the cells ----

local function cell_class(name, mode)
  local cls = Module:extend(name)

  -- Name(input_size, hidden_size, {bias = true, nonlinearity = 'tanh' (RNNCell), device, dtype})
  function cls:init(input_size, hidden_size, o)
    o = o or {}
    input_size = positive(name, 'input_size', input_size)
    hidden_size = positive(name, 'hidden_size', hidden_size)
    self.mode = mode
    if name == 'RNNCell' then
      local nl = o.nonlinearity or 'tanh'
      if nl ~= 'tanh' and nl ~= 'relu' then error("RNNCell: Unknown nonlinearity: " .. tostring(nl), 3) end
      self.nonlinearity = nl
      self.mode = nl == 'relu' and 'RNN_RELU' or 'RNN_TANH'
    end
    self.input_size, self.hidden_size = input_size, hidden_size
    self.bias = o.bias == nil or o.bias and true or false
    local gates = GATES[self.mode] * hidden_size
    local f = { dtype = o.dtype, device = o.device }
    self.weight_ih = Parameter(torch.empty(gates, input_size, f))
    self.weight_hh = Parameter(torch.empty(gates, hidden_size, f))
    if self.bias then
      self.bias_ih = Parameter(torch.empty(gates, f))
      self.bias_hh = Parameter(torch.empty(gates, f))
    else
      self:register_parameter('bias_ih', nil)
      self:register_parameter('bias_hh', nil)
    end
    local k = 1 / math.sqrt(hidden_size)
    for _, p in ipairs(self:parameters()) do init.uniform_(p, -k, k) end
  end

  -- forward(x, hx) -> h' (LSTMCell: h', c'); x (N, input_size) or (input_size); hx the state (LSTMCell:
  -- {h, c}), zeros when nil
  function cls:forward(x, hx)
    if not torch.is_tensor(x) then error(name .. ': expected an input tensor, got ' .. type(x), 2) end
    if x:dim() ~= 1 and x:dim() ~= 2 then error(string.format('%s: Expected input to be 1D or 2D, got %dD instead', name, x:dim()), 2) end
    if x:size(-1) ~= self.input_size then
      error(string.format('%s: input has inconsistent input_size: got %d expected %d', name, x:size(-1), self.input_size), 2)
    end
    local batched = x:dim() == 2
    if not batched then x = x:unsqueeze(1) end
    local h, c
    if hx == nil then
      h = torch.zeros(x:size(1), self.hidden_size, { dtype = x.dtype, device = x.device })
      c = h
    elseif mode == 'LSTM' then
      if type(hx) ~= 'table' or torch.is_tensor(hx) or #hx ~= 2 then error('LSTMCell: hx must be a table {h, c}', 2) end
      h, c = hx[1], hx[2]
      if not batched then h, c = h:unsqueeze(1), c:unsqueeze(1) end
    else
      h = batched and hx or hx:unsqueeze(1)
    end
    local gi = projection(self.mode, x, self.weight_ih, self.bias_ih, self.bias_hh)
    local h2, c2 = step(self.mode, gi, h, c, self.weight_hh, self.bias_hh)
    if not batched then
      h2 = h2:squeeze(1)
      if c2 then c2 = c2:squeeze(1) end
    end
    if mode == 'LSTM' then return h2, c2 end
    return h2
  end

  function cls:extra_repr()
    local s = string.format('%d, %d', self.input_size, self.hidden_size)
    if not self.bias then s = s .. ', bias=False' end
    if name == 'RNNCell' and self.nonlinearity ~= 'tanh' then s = s .. ", nonlinearity='" .. self.nonlinearity .. "'" end
    return s
  end
  return cls
end

M.RNNCell = cell_class('RNNCell', 'RNN_TANH')
M.LSTMCell = cell_class('LSTMCell', 'LSTM')
M.GRUCell = cell_class('GRUCell', 'GRU')

-- one step of the cell of `mode` from its weights, as torch.rnn_tanh_cell, torch.rnn_relu_cell,
-- torch.gru_cell (-> h') and torch.lstm_cell (hx = {h, c}; -> h', c') take them: x (N, input_size),
-- h (N, hidden_size), w_ih (gates * hidden_size, input_size), w_hh (gates * hidden_size,
-- hidden_size), the biases b_ih and b_hh (gates * hidden_size) or nil
function M.cell_step(op, mode, x, hx, w_ih, w_hh, b_ih, b_hh)
  local h, c = hx, nil
  if mode == 'LSTM' then
    if type(hx) ~= 'table' or torch.is_tensor(hx) or #hx ~= 2 then error(op .. ': hx must be a table {h, c}', 3) end
    h, c = hx[1], hx[2]
  end
  for _, a in ipairs { { x, 'input' }, { h, 'hx' }, { w_ih, 'w_ih' }, { w_hh, 'w_hh' } } do
    if not torch.is_tensor(a[1]) then error(string.format('%s: %s must be a tensor, got %s', op, a[2], type(a[1])), 3) end
  end
  if x:dim() ~= 2 or h:dim() ~= 2 then
    error(string.format('%s: expected a 2-D input and hidden state (batch, features), got %d-D and %d-D', op, x:dim(),
      h:dim()), 3)
  end
  if w_hh:dim() ~= 2 or w_hh:size(1) ~= GATES[mode] * h:size(2) then
    error(string.format('%s: w_hh should have %d rows (%d gates of hidden size %d), got shape %s', op,
      GATES[mode] * h:size(2), GATES[mode], h:size(2), tostring(w_hh.shape)), 3)
  end
  return step(mode, projection(mode, x, w_ih, b_ih, b_hh), h, c, w_hh, b_hh)
end

-- ---- the functional forms: torch.rnn_tanh, torch.rnn_relu, torch.lstm, torch.gru ----

-- layer l's direction d's weights in a functional call's flat params: per layer, per direction,
-- w_ih, w_hh (then b_ih, b_hh with biases), as nn.RNN's parameters come
local function listed_weights(cfg, l, d)
  local per = cfg.has_biases and 4 or 2
  local i = (l * (cfg.bidirectional and 2 or 1) + d) * per
  local p = cfg.params
  if cfg.has_biases then return p[i + 1], p[i + 2], p[i + 3], p[i + 4] end
  return p[i + 1], p[i + 2]
end

local function shape_str(t) return '[' .. table.concat(t.shape, ', ') .. ']' end

--- M._sequence_op(op, mode, ...): PyTorch's two call forms of the sequence ops, told apart by the
-- fourth argument (has_biases, a boolean, in the first; params, a table, in the second):
--   (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
--     -> output, h_n (LSTM: output, h_n, c_n); input (T, N, input_size) ((N, T, ..) batch_first)
--   (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
--     -> the packed output data, h_n (LSTM: and c_n); data and batch_sizes a PackedSequence's
--     (its sequences sorted longest first, hx in that order)
-- hx: h_0 (num_layers * directions, N, hidden_size), for LSTM a table {h_0, c_0}; params a table of
-- the weights in nn.RNN's order (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, the _reverse
-- ones, then the next layer's)
function M._sequence_op(op, mode, ...)
  local a = table.pack(...)
  local packed = type(a[4]) == 'table'
  local x, bs_t, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first
  if packed then
    x, bs_t, hx, params, has_biases, num_layers, dropout, train, bidirectional = table.unpack(a, 1, 9)
    batch_first = false
  else
    x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = table.unpack(a, 1, 9)
  end
  local function fail(fmt, ...) error(op .. ': ' .. string.format(fmt, ...), 3) end
  if not torch.is_tensor(x) then fail('expected input to be a tensor, got %s', type(x)) end
  if packed and (not torch.is_tensor(bs_t) or bs_t:dim() ~= 1) then
    fail('expected batch_sizes to be a 1-D tensor, got %s', torch.is_tensor(bs_t) and shape_str(bs_t) or type(bs_t))
  end
  if type(params) ~= 'table' or torch.is_tensor(params) then fail('expected params to be a table of tensors, got %s', type(params)) end
  for _, f in ipairs { { 'has_biases', has_biases }, { 'train', train }, { 'bidirectional', bidirectional },
    { 'batch_first', batch_first } } do
    if type(f[2]) ~= 'boolean' then fail('expected %s to be a boolean, got %s', f[1], type(f[2])) end
  end
  num_layers = as_int(num_layers)
  if math.type(num_layers) ~= 'integer' or num_layers < 1 then fail('num_layers must be a positive integer, got %s', tostring(num_layers)) end
  if type(dropout) ~= 'number' or dropout < 0 or dropout > 1 then
    fail('dropout must be a number in range [0, 1], got %s', tostring(dropout))
  end
  local dirs = bidirectional and 2 or 1
  local per = has_biases and 4 or 2
  if #params ~= num_layers * dirs * per then
    fail('expected %d tensors in params (%d layers, %d directions, %d each), got %d', num_layers * dirs * per, num_layers,
      dirs, per, #params)
  end
  for i = 1, #params do
    if not torch.is_tensor(params[i]) then fail('params[%d] must be a tensor, got %s', i, type(params[i])) end
  end
  local want_dim = packed and 2 or 3
  if x:dim() ~= want_dim then fail('input must have %d dimensions, got %d', want_dim, x:dim()) end
  local H = params[2]:size(2)
  if params[1]:size(2) ~= x:size(-1) then
    fail('input.size(-1) must be equal to input_size. Expected %d, got %d', params[1]:size(2), x:size(-1))
  end
  local bs = packed and bs_t:totable()
  local N = packed and bs[1] or (batch_first and x:size(1) or x:size(2))
  local h0, c0 = hx, nil
  if mode == 'LSTM' then
    if type(hx) ~= 'table' or torch.is_tensor(hx) or #hx ~= 2 then fail('hx must be a table {h_0, c_0}') end
    h0, c0 = hx[1], hx[2]
  end
  local want = { num_layers * dirs, N, H }
  for _, t in ipairs { h0, c0 } do
    if not torch.is_tensor(t) or table.concat(t.shape, ',') ~= table.concat(want, ',') then
      fail('Expected hidden size (%s), got %s', table.concat(want, ', '), torch.is_tensor(t) and shape_str(t) or type(t))
    end
  end
  local cfg = { mode = mode, num_layers = num_layers, bidirectional = bidirectional, dropout = dropout, training = train,
    params = params, has_biases = has_biases }
  local out, h_n, c_n
  if packed then
    out, h_n, c_n = run_layers(cfg, listed_weights, x, h0, c0, 2, packed_direction, bs, step_offsets(bs))
  else
    out, h_n, c_n = run_layers(cfg, listed_weights, batch_first and x:transpose(1, 2) or x, h0, c0, 3, padded_direction)
    if batch_first then out = out:transpose(1, 2) end
  end
  if mode == 'LSTM' then return out, h_n, c_n end
  return out, h_n
end

return M
