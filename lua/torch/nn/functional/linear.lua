-- F.bilinear, composed of a matrix product and a sum (autograd differentiates it).
return function(F, u)
  local check_tensor = u.check_tensor

  --- F.bilinear(x1, x2, weight, bias) -> y with y[..., k] = x1[...]^T weight[k] x2[...] + bias[k]:
  -- x1 of (*, in1), x2 of (*, in2) with the same leading dims, weight out x in1 x in2, bias out
  -- values or nil
  function F.bilinear(x1, x2, w, b)
    local op = 'bilinear'
    check_tensor(x1, op, 'input1')
    check_tensor(x2, op, 'input2')
    check_tensor(w, op, 'weight')
    if w:dim() ~= 3 then error(op .. ': expected a 3-D weight (out_features, in1_features, in2_features), got ' .. w:dim() .. '-D', 2) end
    if x1:dim() < 1 or x1:dim() ~= x2:dim() then
      error(string.format('%s: input1 and input2 must have the same number of dimensions (at least 1), got %d and %d',
        op, x1:dim(), x2:dim()), 2)
    end
    local out, in1, in2 = w:size(1), w:size(2), w:size(3)
    local lead = {}
    for d = 1, x1:dim() - 1 do
      if x1:size(d) ~= x2:size(d) then
        error(string.format('%s: input1 of shape %s and input2 of shape %s differ in their leading dims', op,
          tostring(x1.shape), tostring(x2.shape)), 2)
      end
      lead[d] = x1:size(d)
    end
    if x1:size(-1) ~= in1 or x2:size(-1) ~= in2 then
      error(string.format('%s: input1 of last size %d and input2 of last size %d do not match the weight of shape %s',
        op, x1:size(-1), x2:size(-1), tostring(w.shape)), 2)
    end
    if b ~= nil then
      check_tensor(b, op, 'bias')
      if b:dim() ~= 1 or b:size(1) ~= out then
        error(string.format('%s: expected a bias of %d values, got shape %s', op, out, tostring(b.shape)), 2)
      end
    end
    -- (B x in1) (in1 x out in2) -> B x out x in2, times x2 and summed over in2
    local a = x1:reshape(-1, in1)
    local t = a:matmul(w:permute(2, 1, 3):reshape(in1, out * in2)):view(a:size(1), out, in2)
    local y = (t * x2:reshape(-1, 1, in2)):sum(3)
    if b ~= nil then y = y + b end
    lead[#lead + 1] = out
    return y:reshape(lead)
  end
end
