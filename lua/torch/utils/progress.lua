-- torch.utils.progress: a progress bar for long loops.
--
--   for x, y in torch.utils.progress(loader, {desc = 'epoch 1'}) do ... end
--   local bar = torch.utils.progress(loader)
--   for x, y in bar do ...; bar:set{loss = l} end          -- user fields shown after the rate
--   for i in torch.utils.progress(100) do ... end            -- a count: i = 1..100
--   local bar = torch.utils.progress(n); bar:update(k); bar:close()   -- by hand
--
-- On a terminal it redraws one line (count, bar, elapsed, ETA, rate, fields) at most 10 times a
-- second; otherwise it writes a plain line every `log_every` seconds (default 10) and at the end.
-- Options: desc, total (when the iterable has no length), stream ('stderr' default, or
-- 'stdout'), file (instead of a stream: any object with write and flush, e.g. an open file; not a
-- terminal unless tty = true), width (of the line, default 80), log_every, leave (keep the last line,
-- default true), disable.
local torch = require 'torch'
local clock, isatty = torch.utils.clock, torch.utils.isatty

local Bar = {}
Bar.__index = Bar
Bar.__name = 'torch.utils.progress'

local function fmt_time(s)
  if s ~= s or s == math.huge then return '?' end
  s = math.floor(s + 0.5)
  local h, m = s // 3600, (s // 60) % 60
  if h > 0 then return string.format('%d:%02d:%02d', h, m, s % 60) end
  return string.format('%02d:%02d', m, s % 60)
end

local function fmt_value(v)
  if torch.is_tensor(v) then v = v:item() end
  if math.type(v) == 'float' then
    local a = math.abs(v)
    if a ~= 0 and (a < 1e-3 or a >= 1e5) then return string.format('%.3e', v) end
    return string.format('%.4g', v)
  end
  return tostring(v)
end

local function fmt_rate(r)
  if r < 10 then return string.format('%.2f', r) end
  return string.format('%.1f', r)
end

function Bar:_fields()
  if #self.keys == 0 then return '' end
  local parts = {}
  for i, k in ipairs(self.keys) do parts[i] = k .. '=' .. fmt_value(self.values[k]) end
  return ', ' .. table.concat(parts, ', ')
end

function Bar:_line(now)
  local el = now - self.t0
  local rate = el > 0 and self.n / el or 0
  local total = self.total
  local desc = self.desc and (self.desc .. ': ') or ''
  local stats
  if total then
    local eta = rate > 0 and (total - self.n) / rate or math.huge
    stats = string.format(' %d/%d [%s<%s, %s it/s%s]', self.n, total, fmt_time(el), fmt_time(eta),
      fmt_rate(rate), self:_fields())
  else
    stats = string.format(' %d [%s, %s it/s%s]', self.n, fmt_time(el), fmt_rate(rate), self:_fields())
  end
  if not total or not self.tty then return desc .. stats:sub(2) end
  local frac = total > 0 and math.min(1, self.n / total) or 1
  local pct = string.format('%3d%%', math.floor(frac * 100))
  local room = self.width - #desc - #pct - #stats - 2
  if room < 5 then return desc .. pct .. stats end
  local full = math.floor(frac * room)
  return desc .. pct .. '|' .. string.rep('#', full) .. string.rep(' ', room - full) .. '|' .. stats
end

function Bar:_draw(now, final)
  if self.disable then return end
  local line = self:_line(now)
  if self.tty then
    local pad = self.last_len and self.last_len > #line and string.rep(' ', self.last_len - #line) or ''
    self.out:write('\r', line, pad, final and '\n' or '')
    self.last_len = #line
  else
    self.out:write(line, '\n')
  end
  self.out:flush()
  self.last_draw = now
end

function Bar:_maybe_draw()
  local now = clock()
  local every = self.tty and 0.1 or self.log_every
  if now - self.last_draw >= every then self:_draw(now, false) end
end

-- advance by k (default 1); fields as in set
function Bar:update(k, fields)
  if type(k) == 'table' then k, fields = 1, k end
  self.n = self.n + (k or 1)
  if fields then self:set(fields, true) end
  self:_maybe_draw()
end

-- set the user fields shown on the line: {loss = 0.31, acc = 0.9} (numbers, tensors, strings)
function Bar:set(fields, quiet)
  if type(fields) ~= 'table' then error('progress: set expects a table of fields, got ' .. type(fields), 2) end
  for k, v in pairs(fields) do
    if self.values[k] == nil then
      self.keys[#self.keys + 1] = k
      table.sort(self.keys)
    end
    self.values[k] = v
  end
  if not quiet then self:_maybe_draw() end
end

function Bar:close()
  if self.closed then return end
  self.closed = true
  if self.disable then return end
  if self.leave or not self.tty then
    self:_draw(clock(), true)
  elseif self.tty then
    self.out:write('\r', string.rep(' ', self.last_len or 0), '\r')
    self.out:flush()
  end
end
Bar.__close = Bar.close

-- the generic-for iterator: `for ... in bar do`
function Bar:__call()
  if self.started then self.n = self.n + 1 end -- the body finished the previous item
  self.started = true
  local r = table.pack(self.next())
  if r[1] == nil then
    self:close()
    return nil
  end
  self:_maybe_draw()
  return table.unpack(r, 1, r.n)
end

local function iterator_of(it, total)
  if math.type(it) == 'integer' then
    local i = 0
    return function()
      if i >= it then return nil end
      i = i + 1
      return i
    end, it
  end
  if type(it) == 'table' or type(it) == 'userdata' then
    local mt = getmetatable(it)
    if type(it.iter) == 'function' then -- a DataLoader, a sampler
      local n = total
      if n == nil and mt and mt.__len then n = #it end
      local f, s, c = it:iter()
      return function()
        local r = table.pack(f(s, c))
        c = r[1]
        return table.unpack(r, 1, r.n)
      end, n
    end
    if type(it) == 'table' then -- an array: its values
      local i = 0
      return function()
        i = i + 1
        local v = it[i]
        if v == nil then return nil end
        return v
      end, total or #it
    end
  end
  if type(it) == 'function' then return it, total end
  error('torch.utils.progress: expected a count, an array, a function or an object with :iter(), got '
    .. type(it), 3)
end

return function(it, opts)
  opts = opts or {}
  if type(opts) ~= 'table' then error('torch.utils.progress: options must be a table', 2) end
  local nxt, total = iterator_of(it, opts.total)
  local stream = opts.stream or 'stderr'
  if stream ~= 'stderr' and stream ~= 'stdout' then
    error("torch.utils.progress: stream must be 'stderr' or 'stdout', got " .. tostring(stream), 2)
  end
  local now = clock()
  local self = setmetatable({
    next = nxt, total = opts.total or total, desc = opts.desc, n = 0, t0 = now, last_draw = now,
    out = opts.file or (stream == 'stdout' and io.stdout or io.stderr), tty = not opts.file and isatty(stream),
    width = opts.width or 80, log_every = opts.log_every or 10, keys = {}, values = {},
    leave = opts.leave ~= false, disable = opts.disable or false,
  }, Bar)
  if opts.tty ~= nil then self.tty = opts.tty end
  return self, nil, nil, self
end
