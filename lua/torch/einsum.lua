-- torch.einsum: Einstein summation over labelled dimensions, with PyTorch's equations, rules and
-- error texts (subscripts in [a-zA-Z], '...' for broadcast dimensions, '->' for an explicit output,
-- size-1 dimensions broadcast; an implicit output lists the ellipsis dimensions, then the labels seen
-- once, in alphabetical order). Composed of tensor ops, so autograd and every device come with it:
-- a label repeated in one operand takes the diagonal, labels no later operand or the output needs
-- are summed away early, and operands are contracted left to right, two at a time, by one batched
-- matrix product each.
--
--   torch.einsum('ij,jk->ik', a, b)         -- a @ b
--   torch.einsum('bhqd,bhkd->bhqk', q, k)   -- attention scores
--   torch.einsum('ii', m)                   -- the trace
--   torch.einsum('...ij->...ji', {x})       -- operands may also come as one array
local torch = require 'torch'

-- (errors carry no position: they come from several depths, and all name einsum)
local function fail(fmt, ...) error('einsum: ' .. string.format(fmt, ...)) end

-- a term ('ij...k') as an array of labels (letters as strings, '...' as itself); pos is the 0-based
-- index of the term's first character in the equation, for the error texts
local function parse_term(term, pos)
  local out, i, seen_ellipsis = {}, 1, false
  while i <= #term do
    local ch = term:sub(i, i)
    if ch == '.' then
      if term:sub(i, i + 2) ~= '...' or seen_ellipsis then
        fail('found \'.\' for operand that is not part of any ellipsis at index %d in the equation string', pos + i - 1)
      end
      seen_ellipsis = true
      out[#out + 1] = '...'
      i = i + 3
    elseif ch:match('%a') then
      out[#out + 1] = ch
      i = i + 1
    else
      fail('invalid subscript given at index %d in the equation string, subscripts must be in [a-zA-Z]', pos + i - 1)
    end
  end
  return out
end

-- a tensor's dims and labels: d-th dim of x carries labels[d]; ellipsis dims get labels '.1' ..
-- '.E', right-aligned against the widest ellipsis E (as broadcasting aligns them)
local function expand_labels(term, nd, E)
  local labels, n_letters = {}, 0
  for _, l in ipairs(term) do if l ~= '...' then n_letters = n_letters + 1 end end
  local e = nd - n_letters
  for _, l in ipairs(term) do
    if l == '...' then
      for k = 1, e do labels[#labels + 1] = '.' .. (E - e + k) end
    else
      labels[#labels + 1] = l
    end
  end
  return labels
end

-- x with the dims of labels[d1] == labels[d2] (d1 < d2, equal sizes) replaced by their diagonal at d1
local function diagonal(x, d1, d2)
  local n = x:size(d1)
  local shape = {}
  for d = 1, x:dim() do shape[d] = 1 end
  shape[d1], shape[d2] = n, n
  local eye = torch.eye(n, { dtype = x.dtype, device = x.device }):view(table.unpack(shape))
  return (x * eye):sum(d2)
end

-- x (dims labelled by labels) summed over the dims whose labels keep(label) refuses
local function sum_unneeded(x, labels, keep)
  for d = #labels, 1, -1 do
    if not keep(labels[d]) then
      x = x:sum(d)
      table.remove(labels, d)
    end
  end
  return x, labels
end

-- x with its dims permuted to the order of labels `to` (a permutation of `from`)
local function permute_to(x, from, to)
  local at = {}
  for d, l in ipairs(from) do at[l] = d end
  local perm, same = {}, true
  for d, l in ipairs(to) do
    perm[d] = at[l]
    if perm[d] ~= d then same = false end
  end
  if same or #to == 0 then return x end
  return x:permute(table.unpack(perm))
end

local function product(sizes, labels)
  local n = 1
  for _, l in ipairs(labels) do n = n * sizes[l] end
  return n
end

-- a (labels la) contracted with b (labels lb) over the labels in both that needed() refuses; the
-- result's labels: those in both (kept), a's own, b's own
local function contract(a, la, b, lb, needed, sizes)
  local in_a, in_b = {}, {}
  for d, l in ipairs(la) do in_a[l] = d end
  for d, l in ipairs(lb) do in_b[l] = d end
  -- size-1 dims against a larger size in the other operand broadcast
  local function grown(x, labels)
    local shape, grow = {}, false
    for d, l in ipairs(labels) do
      shape[d] = sizes[l]
      if x:size(d) ~= sizes[l] then grow = true end
    end
    return grow and x:expand(table.unpack(shape)) or x
  end
  a, b = grown(a, la), grown(b, lb)
  local batch, summed, a_own, b_own = {}, {}, {}, {}
  for _, l in ipairs(la) do
    if in_b[l] then
      if needed(l) then batch[#batch + 1] = l else summed[#summed + 1] = l end
    else
      a_own[#a_own + 1] = l
    end
  end
  for _, l in ipairs(lb) do if not in_a[l] then b_own[#b_own + 1] = l end end
  local function cat(...)
    local t = {}
    for _, part in ipairs { ... } do for _, l in ipairs(part) do t[#t + 1] = l end end
    return t
  end
  local nb, na, nc, no = product(sizes, batch), product(sizes, a_own), product(sizes, summed), product(sizes, b_own)
  local a3 = permute_to(a, la, cat(batch, a_own, summed)):reshape(nb, na, nc)
  local b3 = permute_to(b, lb, cat(batch, summed, b_own)):reshape(nb, nc, no)
  local labels = cat(batch, a_own, b_own)
  local shape = {}
  for d, l in ipairs(labels) do shape[d] = sizes[l] end
  local r = torch.bmm(a3, b3)
  if #shape == 0 then return r:reshape({}), labels end
  return r:reshape(table.unpack(shape)), labels
end

--- torch.einsum(equation, a, b, ...) or torch.einsum(equation, {a, b, ...}) -> tensor
function torch.einsum(equation, ...)
  if type(equation) ~= 'string' then fail('expected an equation string, got %s', type(equation)) end
  local ops = { ... }
  if #ops == 1 and type(ops[1]) == 'table' and not torch.is_tensor(ops[1]) then ops = ops[1] end
  if #ops == 0 then fail('must provide at least one operand') end
  for i, t in ipairs(ops) do
    if not torch.is_tensor(t) then fail('operand %d is not a tensor (%s)', i, type(t)) end
    if t.dtype ~= ops[1].dtype then
      fail('operands must have the same dtype, got %s for operand 1 and %s for operand %d', tostring(ops[1].dtype),
        tostring(t.dtype), i)
    end
  end
  local eq = equation:gsub(' ', '')
  local arrow = eq:find('->', 1, true)
  local lhs, rhs = eq, nil
  if arrow then lhs, rhs = eq:sub(1, arrow - 1), eq:sub(arrow + 2) end
  -- the input terms
  local terms, pos = {}, 0
  for term in (lhs .. ','):gmatch('([^,]*),') do
    terms[#terms + 1] = parse_term(term, pos)
    pos = pos + #term + 1
  end
  if #terms > #ops then fail('fewer operands were provided than specified in the equation') end
  if #terms < #ops then fail('more operands were provided than specified in the equation') end
  local E = 0
  for i, term in ipairs(terms) do
    local letters, ell = 0, false
    for _, l in ipairs(term) do if l == '...' then ell = true else letters = letters + 1 end end
    local nd = ops[i]:dim()
    if (not ell and letters ~= nd) or (ell and letters > nd) then
      fail('the number of subscripts in the equation (%d) %s the number of dimensions (%d) for operand %d%s', letters,
        ell and 'is more than' or 'does not match', nd, i - 1, ell and '' or ' and no ellipsis was given')
    end
    if ell and nd - letters > E then E = nd - letters end
  end
  -- labels, sizes (broadcast), counts
  local labels, sizes, count = {}, {}, {}
  for i, term in ipairs(terms) do
    labels[i] = expand_labels(term, ops[i]:dim(), E)
    local own = {}
    for d, l in ipairs(labels[i]) do
      local n = ops[i]:size(d)
      if own[l] and own[l] ~= n then
        fail('subscript %s is repeated for operand %d but the sizes don\'t match, %d != %d', l, i - 1, n, own[l])
      end
      own[l] = n
      count[l] = (count[l] or 0) + 1
      if sizes[l] == nil or sizes[l] == 1 then
        sizes[l] = n
      elseif n ~= 1 and n ~= sizes[l] then
        if l:sub(1, 1) == '.' then
          fail('operands do not broadcast with remapped shapes (original->remapped) at operand %d', i - 1)
        end
        fail('subscript %s has size %d for operand %d which does not broadcast with previously seen size %d', l, n, i - 1,
          sizes[l])
      end
    end
  end
  -- the output's labels
  local out = {}
  if rhs then
    local seen = {}
    for _, l in ipairs(parse_term(rhs, arrow + 1)) do
      if l == '...' then
        for k = 1, E do out[#out + 1] = '.' .. k end
      else
        if seen[l] then fail('output subscript %s appears more than once in the output', l) end
        if not count[l] then fail('output subscript %s does not appear in the equation for any input operand', l) end
        seen[l] = true
        out[#out + 1] = l
      end
    end
  else
    for k = 1, E do out[#out + 1] = '.' .. k end
    local once = {}
    for l, c in pairs(count) do if c == 1 and l:sub(1, 1) ~= '.' then once[#once + 1] = l end end
    table.sort(once)
    for _, l in ipairs(once) do out[#out + 1] = l end
  end
  local in_out = {}
  for _, l in ipairs(out) do in_out[l] = true end
  -- each operand: diagonals of repeated labels, then the labels only it has and the output lacks summed
  local xs = {}
  for i, x in ipairs(ops) do
    local ls = labels[i]
    local d2 = #ls
    while d2 > 1 do
      local d1
      for d = 1, d2 - 1 do if ls[d] == ls[d2] then d1 = d end end
      if d1 then
        x = diagonal(x, d1, d2)
        table.remove(ls, d2)
      end
      d2 = d2 - 1
    end
    local others = {}
    for j = 1, #ops do
      if j ~= i then for _, l in ipairs(labels[j]) do others[l] = true end end
    end
    xs[i], labels[i] = sum_unneeded(x, ls, function(l) return in_out[l] or others[l] end)
  end
  -- contract left to right; a label stays while the output or a later operand needs it
  local r, lr = xs[1], labels[1]
  for i = 2, #xs do
    local later = {}
    for j = i + 1, #xs do for _, l in ipairs(labels[j]) do later[l] = true end end
    local function needed(l) return in_out[l] or later[l] end
    local in_next = {}
    for _, l in ipairs(labels[i]) do in_next[l] = true end
    r, lr = sum_unneeded(r, lr, function(l) return needed(l) or in_next[l] end)
    r, lr = contract(r, lr, xs[i], labels[i], needed, sizes)
  end
  return permute_to(r, lr, out)
end

return torch.einsum
