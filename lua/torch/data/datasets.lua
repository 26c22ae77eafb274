-- torch.data.datasets: FashionMNIST and MNIST from their IDX files (gzipped or not).
--   local ds = torch.data.datasets.FashionMNIST{train = true}     -- root defaults to the Debian package's
--   local img, label = ds:get(1)     -- a 28x28 uint8 tensor and a class number in 1..10
--   ds.data (N x 28 x 28 uint8), ds.targets (N, int64, 1-based classes), ds.classes (names)
-- As torchvision without a transform: images stay uint8; `transform` and `target_transform`
-- (functions) are applied by get.
local torch = require 'torch'
local D = require 'torch.data.dataset'
local S = require 'torch.data.sampler'

local M = {}

local FASHION_ROOT = '/usr/share/datasets/fashion-mnist'

local function exists(path)
  local f = io.open(path, 'rb')
  if f then f:close() end
  return f ~= nil
end

-- root/name.gz, root/name, and torchvision's root/<Class>/raw/ layout
local function find(cls, root, name, hint)
  local tried = {}
  for _, dir in ipairs { root, root .. '/' .. cls .. '/raw' } do
    for _, file in ipairs { name .. '.gz', name } do
      local p = dir .. '/' .. file
      if exists(p) then return p end
      tried[#tried + 1] = p
    end
  end
  error(string.format('%s: missing file %s(.gz) in %s (looked for %s); %s', cls, name, root,
    table.concat(tried, ', '), hint), 0)
end

local function load(cls, root, train, hint)
  local prefix = train and 'train' or 't10k'
  local ipath = find(cls, root, prefix .. '-images-idx3-ubyte', hint)
  local lpath = find(cls, root, prefix .. '-labels-idx1-ubyte', hint)
  local images, labels = torch._read_idx(ipath), torch._read_idx(lpath)
  if images.dtype ~= torch.uint8 or images:dim() ~= 3 then
    error(string.format('%s: %s: expected uint8 images N x rows x cols, got %s %s', cls, ipath,
      tostring(images.dtype), tostring(images.shape)), 0)
  end
  if labels.dtype ~= torch.uint8 or labels:dim() ~= 1 then
    error(string.format('%s: %s: expected a uint8 vector of labels, got %s %s', cls, lpath,
      tostring(labels.dtype), tostring(labels.shape)), 0)
  end
  if labels:size(1) ~= images:size(1) then
    error(string.format('%s: %d images in %s but %d labels in %s', cls, images:size(1), ipath, labels:size(1),
      lpath), 0)
  end
  if labels:numel() > 0 and labels:max():item() > 9 then
    error(string.format('%s: %s: label %d is not a class 0..9', cls, lpath, labels:max():item()), 0)
  end
  return images, labels:long() + 1
end

local function make(name, classes, default_root, hint)
  local cls = D.Dataset:extend(name)
  cls.classes = classes
  function cls:init(opts)
    opts = S.check_opts(name, opts,
      { root = true, train = true, transform = true, target_transform = true, download = true })
    local root = opts.root or default_root
    if type(root) ~= 'string' then
      error(name .. ': expected root = the directory holding the IDX files', 3)
    end
    if opts.download then
      error(name .. ': lutorch does not download datasets; ' .. hint, 3)
    end
    local train = opts.train
    if train == nil then train = true end
    if type(train) ~= 'boolean' then error(name .. ': train should be a boolean', 3) end
    for _, k in ipairs { 'transform', 'target_transform' } do
      if opts[k] ~= nil and type(opts[k]) ~= 'function' then
        error(string.format('%s: %s should be a function, got %s', name, k, type(opts[k])), 3)
      end
    end
    self.root, self.train = root, train
    self.transform, self.target_transform = opts.transform, opts.target_transform
    self.data, self.targets = load(name, root, train, hint)
    self._n = self.data:size(1)
  end
  function cls:__len() return self._n end
  function cls:get(i)
    i = D.check_index(name, i, self._n)
    local img, target = self.data[i], self.targets[i]
    if self.transform then img = self.transform(img) end
    if self.target_transform then target = self.target_transform(target) end
    return img, target
  end
  -- without transforms a sample is (data[i], targets[i]): the loader may batch with index_select
  function cls:_row_tensors()
    if self.transform or self.target_transform or self.get ~= cls.get then return nil end
    return { self.data, self.targets }
  end
  function cls:__tostring()
    return string.format('%s (%s split, %d samples, root %s)', name, self.train and 'train' or 'test', self._n,
      self.root)
  end
  return cls
end

M.FashionMNIST = make('FashionMNIST',
  { 'T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot' },
  FASHION_ROOT,
  '`apt-get install dataset-fashion-mnist` provides the files in ' .. FASHION_ROOT)

M.MNIST = make('MNIST',
  { '0 - zero', '1 - one', '2 - two', '3 - three', '4 - four', '5 - five', '6 - six', '7 - seven', '8 - eight',
    '9 - nine' },
  nil,
  'put train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (from the MNIST distribution) in root')

return M
