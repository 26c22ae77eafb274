-- The training driver shared by examples/fashion_mnist_mlp.lua and examples/fashion_mnist_cnn.lua:
-- Fashion-MNIST from Debian's dataset-fashion-mnist, a DataLoader, SGD with momentum, a progress
-- bar, test accuracy per epoch, a CSV log and an SVG plot of the curves, a checkpoint every epoch,
-- and --resume from it to the same numbers as an uninterrupted run.
--
-- Options (after the script name): --epochs N, --batch N, --lr X, --seed N, --workers N,
-- --device D (default cuda where a GPU is present, else cpu; the images travel as uint8 from pinned
-- memory and become float32 there), --out DIR (default build/<name>), --resume, --quiet (no progress
-- bar), --limit N (at most N
-- training batches per epoch and N * 1000 test images: for quick checks), --augment (a random
-- horizontal flip per sample, in Lua, by the DataLoader's workers when --workers N > 0).
-- Each epoch also reports how long the loop waited for the loader, as a share of the epoch.
local torch = require 'torch'
local nn, F, optim, data = torch.nn, torch.F, torch.optim, torch.data

local M = {}

local function parse(argv, defaults)
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  local i = 1
  while argv[i] do
    local a = argv[i]
    local key = a:match('^%-%-([%w_]+)$')
    local known = key and (defaults[key] ~= nil or key == 'resume' or key == 'quiet' or key == 'limit' or
      key == 'augment')
    if not known then error('unknown argument ' .. a .. ' (options: --epochs N --batch N --lr X --seed N '
      .. '--workers N --device D --out DIR --resume --quiet --limit N --augment)', 0) end
    if key == 'resume' or key == 'quiet' or key == 'augment' then
      o[key] = true
      i = i + 1
    else
      local v = argv[i + 1]
      if v == nil then error('--' .. key .. ' needs a value', 0) end
      o[key] = tonumber(v) or v
      i = i + 2
    end
  end
  return o
end

-- images stay uint8 in memory (a quarter of float32's size); batches become float32 in [0, 1],
-- flattened or as 1x28x28 planes; classes are 1..10
local function load(train)
  local ds = data.datasets.FashionMNIST { train = train }
  return ds.data, ds.targets
end

local function as_input(x, shape, device)
  local n = x:size(1)
  x = x:to(device):float():div_(255)
  if shape == 'flat' then return x:view(n, 784) end
  return x:view(n, 1, 28, 28)
end

local function evaluate(model, X, Y, shape, device)
  model:eval()
  local correct, loss = 0, 0
  torch.no_grad(function()
    for i = 1, X:size(1), 1000 do
      local j = math.min(i + 999, X:size(1))
      local out = model(as_input(X[{ { i, j } }], shape, device))
      local y = Y[{ { i, j } }]:to(device)
      loss = loss + F.cross_entropy(out, y, { reduction = 'sum' }):item()
      correct = correct + out:argmax(2):eq(y):sum():item()
    end
  end)
  model:train()
  return loss / X:size(1), correct / X:size(1)
end

-- a small SVG with two panels: training and test loss, and test accuracy, per epoch
local function plot(path, log, title)
  local W, H, pad = 640, 300, 48
  local parts = {
    string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
      .. 'font-size="12">', W, H),
    string.format('<rect width="%d" height="%d" fill="white"/>', W, H),
    string.format('<text x="%d" y="18" text-anchor="middle" font-size="14">%s</text>', W / 2, title),
  }
  local function panel(x0, label, series)
    local pw, ph = W / 2 - pad - 16, H - 2 * pad
    local lo, hi = math.huge, -math.huge
    for _, s in ipairs(series) do
      for _, r in ipairs(log) do lo, hi = math.min(lo, r[s.key]), math.max(hi, r[s.key]) end
    end
    if hi - lo < 1e-9 then lo, hi = lo - 0.5, hi + 0.5 end
    local n = #log
    local function px(i) return x0 + (n > 1 and (i - 1) / (n - 1) or 0.5) * pw end
    local function py(v) return pad + (1 - (v - lo) / (hi - lo)) * ph end
    parts[#parts + 1] = string.format('<rect x="%g" y="%d" width="%g" height="%g" fill="none" stroke="#888"/>',
      x0, pad, pw, ph)
    parts[#parts + 1] = string.format('<text x="%g" y="%d">%s</text>', x0, pad - 8, label)
    parts[#parts + 1] = string.format('<text x="%g" y="%g" text-anchor="end">%.3g</text>', x0 - 4, pad + 4, hi)
    parts[#parts + 1] = string.format('<text x="%g" y="%g" text-anchor="end">%.3g</text>', x0 - 4, pad + ph, lo)
    parts[#parts + 1] = string.format('<text x="%g" y="%g" text-anchor="middle">epoch 1..%d</text>',
      x0 + pw / 2, pad + ph + 18, n)
    for k, s in ipairs(series) do
      local pts = {}
      for i, r in ipairs(log) do pts[i] = string.format('%.1f,%.1f', px(i), py(r[s.key])) end
      parts[#parts + 1] = string.format('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>',
        s.color, table.concat(pts, ' '))
      parts[#parts + 1] = string.format('<text x="%g" y="%g" fill="%s">%s</text>', x0 + pw - 90,
        pad + 16 * k, s.color, s.key)
    end
  end
  panel(pad, 'loss', { { key = 'train_loss', color = '#1f77b4' }, { key = 'test_loss', color = '#d62728' } })
  panel(W / 2 + pad, 'test accuracy', { { key = 'test_acc', color = '#2ca02c' } })
  parts[#parts + 1] = '</svg>\n'
  local f = assert(io.open(path, 'w'))
  f:write(table.concat(parts, '\n'))
  assert(f:close())
end

local function write_csv(path, log)
  local f = assert(io.open(path, 'w'))
  f:write('epoch,train_loss,test_loss,test_acc,seconds\n')
  for _, r in ipairs(log) do
    f:write(string.format('%d,%.6f,%.6f,%.4f,%.3f\n', r.epoch, r.train_loss, r.test_loss, r.test_acc, r.seconds))
  end
  assert(f:close())
end

-- M.run{name, make_model = function() ... end, shape = 'flat' | 'image', epochs, argv}
function M.run(spec)
  local o = parse(spec.argv or {}, { epochs = spec.epochs or 5, batch = 64, lr = 0.05, seed = 0, workers = 0,
    out = 'build/' .. spec.name, device = torch.cuda.is_available() and 'cuda' or 'cpu' })
  -- a bad or unavailable device fails here, before the data is read
  local ok, device = pcall(torch.device, tostring(o.device))
  if ok and device.type == 'cuda' and not torch.cuda.is_available() then
    ok, device = false, 'CUDA is not available: ' .. tostring(torch._cuda.unavailable_reason())
  end
  if not ok then error('--device ' .. tostring(o.device) .. ': ' .. tostring(device):gsub('^.-torch%.device: ', ''), 0) end
  local cuda = device.type == 'cuda'
  local ckpt = o.out .. '/checkpoint.safetensors'
  if o.resume then -- a bad argument fails before the data is read
    local f = io.open(ckpt, 'rb')
    if not f then error('--resume: no checkpoint at ' .. ckpt, 0) end
    f:close()
  end
  torch.manual_seed(o.seed)
  local Xtr, Ytr = load(true)
  local Xte, Yte = load(false)
  if o.limit then Xte, Yte = Xte:narrow(1, 1, math.min(Xte:size(1), o.limit * 1000)), Yte:narrow(1, 1, math.min(Yte:size(1), o.limit * 1000)) end
  local model = spec.make_model():to(device)
  local opt = optim.SGD(model:parameters(), { lr = o.lr, momentum = 0.9 })
  os.execute('mkdir -p "' .. o.out .. '"')
  local log, start = {}, 1
  if o.resume then
    local state = torch.load(ckpt, { map_location = tostring(device) })
    model:load_state_dict(state.model)
    opt:load_state_dict(state.optim)
    log = state.log
    start = state.epoch + 1
    print(string.format('resumed from %s after epoch %d', ckpt, state.epoch))
  end
  print(model)
  print('training on ' .. tostring(model:parameters()[1].device))
  local train = data.TensorDataset(Xtr, Ytr)
  if o.augment then train = require('fashion_mnist_data').FlippedFashionMNIST(true) end
  for epoch = start, o.epochs do
    -- a fresh shuffle per epoch from (seed, epoch): a resumed run sees the same batches
    local loader = data.DataLoader(train, { batch_size = o.batch, shuffle = true, seed = o.seed * 1000 + epoch,
      num_workers = o.workers, pin_memory = cuda })
    local bar = torch.utils.progress(loader, { desc = string.format('epoch %d/%d', epoch, o.epochs),
      disable = o.quiet })
    local t0 = torch.utils.clock()
    local sum, seen = 0, 0
    local batches, wait, last = 0, 0, torch.utils.clock()
    for x, y in bar do
      wait = wait + (torch.utils.clock() - last)
      batches = batches + 1
      if o.limit and batches > o.limit then break end
      local loss = F.cross_entropy(model(as_input(x, spec.shape, device)), y:to(device))
      opt:zero_grad()
      loss:backward()
      opt:step()
      local l = loss:item()
      sum, seen = sum + l * x:size(1), seen + x:size(1)
      bar:set({ loss = sum / seen })
      last = torch.utils.clock()
    end
    local seconds = torch.utils.clock() - t0
    local test_loss, test_acc = evaluate(model, Xte, Yte, spec.shape, device)
    log[#log + 1] = { epoch = epoch, train_loss = sum / seen, test_loss = test_loss, test_acc = test_acc,
      seconds = seconds }
    print(string.format('epoch %d  train loss %.4f  test loss %.4f  test accuracy %.4f  (%.2f s, %.1f%% waiting '
      .. 'for data)', epoch, sum / seen, test_loss, test_acc, seconds, 100 * wait / seconds))
    torch.save(ckpt, { model = model:state_dict(), optim = opt:state_dict(), epoch = epoch, log = log })
    write_csv(o.out .. '/log.csv', log)
    plot(o.out .. '/curves.svg', log, spec.name)
  end
  print(string.format('wrote %s/{checkpoint.safetensors,log.csv,curves.svg}', o.out))
  return log, model
end

return M
