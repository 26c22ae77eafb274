-- torch.utils.progress: the lines it writes, on a terminal and not, and the iteration it wraps.
local torch = require 'torch'
local progress = torch.utils.progress

-- a file-like sink that keeps what was written
local function sink()
  local s = { parts = {} }
  function s:write(...) for _, v in ipairs({ ... }) do self.parts[#self.parts + 1] = tostring(v) end end
  function s:flush() end
  function s:text() return table.concat(self.parts) end
  return s
end

describe('torch.utils.progress', function()
  it('counts 1..n for a count and logs plain lines when not on a terminal', function()
    local out = sink()
    local seen = {}
    local bar = progress(4, { desc = 'train', file = out, log_every = 1e9 })
    for i in bar do
      seen[#seen + 1] = i
      bar:set({ loss = i / 4 })
    end
    assert.are.same({ 1, 2, 3, 4 }, seen)
    local text = out:text()
    -- the periodic lines are suppressed by log_every; the final line has the whole count and fields
    assert.matches('^train: 4/4 %[00:00<00:00, [%d.]+ it/s, loss=1%]\n$', text)
  end)

  it('redraws one line with a bar on a terminal and ends it with a newline', function()
    local out = sink()
    for _ in progress({ 'a', 'b', 'c' }, { file = out, tty = true, width = 60 }) do end
    local text = out:text()
    assert.matches('\r100%%|#+|', text)
    assert.matches('3/3', text)
    assert.are.equal('\n', text:sub(-1))
    assert.is_nil(text:sub(1, -2):find('\n'), 'only the final newline')
  end)

  it('passes through every value a DataLoader yields', function()
    local ds = torch.data.TensorDataset(torch.arange(0, 10), torch.arange(10, 20))
    local loader = torch.data.DataLoader(ds, { batch_size = 4 })
    local out = sink()
    local sums = {}
    for x, y in progress(loader, { file = out }) do sums[#sums + 1] = x:sum():item() + y:sum():item() end
    assert.are.same({ 6 + 46, 22 + 62, 17 + 37 }, sums)
    assert.matches('^3/3 ', out:text())
  end)

  it('can be advanced by hand, shows tensors as numbers, and stops early with break', function()
    local out = sink()
    local bar = progress(10, { file = out, desc = 'd' })
    bar:update(3, { acc = torch.tensor(0.5) })
    bar:close()
    assert.matches('d: 3/10 %[.*acc=0.5%]', out:text())
    local out2 = sink()
    do
      local b <close> = progress(100, { file = out2 })
      for i in b do if i == 5 then break end end
    end
    assert.matches('^4/100 ', out2:text())
  end)

  it('names bad arguments', function()
    assert.has_error(function() progress(true) end,
      'torch.utils.progress: expected a count, an array, a function or an object with :iter(), got boolean')
    assert.has_error(function() progress(3, { stream = 'tty' }) end,
      "torch.utils.progress: stream must be 'stderr' or 'stdout', got tty")
  end)
end)
