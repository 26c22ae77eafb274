-- torch.utils.data: PyTorch's name for torch.data, the same table, loaded on first use.
local torch = require 'torch'
local SH = require 'spec.support.shell'
local BIN = os.getenv('LUTORCH_BIN') or 'build/lutorch'

describe('torch.utils.data', function()
  it('is torch.data itself, and require finds it under both names', function()
    local data = torch.utils.data
    assert.are.equal(torch.data, data)
    assert.are.equal(data, require 'torch.utils.data')
    assert.are.equal(torch.data.DataLoader, data.DataLoader)
    local ds = data.TensorDataset(torch.arange(1, 5, { dtype = torch.float64 }))
    local batches = {}
    for b in data.DataLoader(ds, { batch_size = 2 }):iter() do batches[#batches + 1] = b:totable() end
    assert.are.same({ { 1, 2 }, { 3, 4 } }, batches)
  end)

  it('loads nothing until it is used, and other names of torch.utils stay nil', function()
    local out, err, rc = SH.run(SH.quote(BIN) .. ' -e ' .. SH.quote(
      "print(package.loaded['torch.data'] == nil, torch.utils.nothing == nil); "
      .. "local d = torch.utils.data; print(package.loaded['torch.data'] == d, rawget(torch.utils, 'data') == d)"))
    assert.are.equal(0, rc, err)
    assert.are.equal('true\ttrue\ntrue\ttrue\n', out)
  end)
end)
