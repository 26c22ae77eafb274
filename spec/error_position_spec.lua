-- Errors raised inside the library name the user's line that called into it, not the library's own
-- (bindings/error_position.c): for a sample of errors across the modules, raised from line 3 of a
-- chunk named user_script.lua, the message is that place followed by the message the library
-- writes, unchanged (the texts below are the messages before the change, without their place);
-- the rules for library code called through C functions and for errors caught and raised again;
-- the same from a script run by the interpreter and by the stock lua5.4 with torch.so; and
-- lauxlib's argument checks in the bindings (luaL_checkinteger and the others), which name the
-- user's line when library code passed the bad value on, with lauxlib's messages.
local torch = require 'torch'
local SH = require 'spec.support.shell'

local BUILD = os.getenv('LUTORCH_BUILD') or 'build'
local BIN = os.getenv('LUTORCH_BIN') or 'build/lutorch'
local SANITIZED = BUILD:match('[^/]+$'):match('^san') ~= nil

local HEAD = "local torch = require 'torch'\nlocal nn, F = torch.nn, torch.nn.functional\n"

-- the error that code raises, run as line 3 of a chunk named user_script.lua
local function raised(code)
  local f = assert(load(HEAD .. code .. '\n', '@user_script.lua'))
  local ok, err = pcall(f)
  assert(not ok, 'no error from ' .. code)
  return err
end

-- {name, line 3 of the chunk, the message after the place}
local CASES = {
  { 'linear', "nn.Linear(8, 2)(torch.zeros(3, 7))",
    'linear: input of shape torch.Size([3, 7]) cannot be multiplied by a weight of shape torch.Size([2, 8]) (expected the last dimension to be 8)' },
  { 'conv2d', "nn.Conv2d(3, 4, 3)(torch.zeros(1, 2, 5, 5))",
    'conv2d: given groups=1, weight of size [4, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 channels, but got 2 channels instead' },
  { 'batchnorm', "nn.BatchNorm1d(4)(torch.zeros(2, 3))",
    'batch_norm: expected weight of shape [3] (one value per channel), got [4]' },
  { 'embedding', "nn.Embedding(10, 3)(torch.tensor({11}))",
    'embedding: index 11 is out of range 1..10 (indices are 1-based rows of the weight)' },
  { 'lstm', "nn.LSTM(4, 8)(torch.zeros(5, 2, 3))",
    'LSTM: input.size(-1) must be equal to input_size. Expected 4, got 3' },
  { 'sequential', "nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(5, 2))(torch.zeros(2, 4))",
    'linear: input of shape torch.Size([2, 3]) cannot be multiplied by a weight of shape torch.Size([2, 5]) (expected the last dimension to be 5)' },
  { 'mha', "nn.MultiheadAttention(5, 2)",
    'MultiheadAttention: embed_dim must be divisible by num_heads' },
  { 'load_state_dict', "nn.Linear(4, 3):load_state_dict({})",
    'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "weight", "bias". ' },
  { 'cross_entropy', "nn.CrossEntropyLoss()(torch.zeros(2, 3), torch.zeros(3):long())",
    'cross_entropy: Expected input batch_size (2) to match target batch_size (3).' },
  { 'linear_ctor', "nn.Linear(4)",
    'Linear: in_features and out_features must be non-negative integers, got 4 and nil' },
  { 'conv1d', "F.conv1d(torch.zeros(1, 2, 5), torch.zeros(3, 3, 2))",
    'conv1d: given groups=1, weight of size [3, 3, 1, 2], expected input[1, 2, 1, 5] to have 3 channels, but got 2 channels instead' },
  { 'pad', "F.pad(torch.zeros(2, 3), {1, 2, 3})",
    'pad: Padding length must be divisible by 2' },
  { 'dropout', "F.dropout(torch.zeros(3), 1.5)",
    'dropout: probability has to be between 0 and 1, but got 1.5' },
  { 'interpolate', "F.interpolate(torch.zeros(1, 1, 4), {size = 2, scale_factor = 2})",
    'interpolate: exactly one of size or scale_factor must be given' },
  { 'softmax', "F.softmax(torch.zeros(2, 3), 3)",
    'softmax: dimension out of range (expected to be in range of [-2, 2], but got 3)' },
  { 'sgd', "torch.optim.SGD(nn.Linear(2, 2):parameters(), {lr = -1})",
    'SGD: Invalid learning rate: -1' },
  { 'adam', "torch.optim.Adam(nn.Linear(2, 2):parameters(), {betas = {1.5, 0.9}})",
    'Adam: Invalid beta parameter at index 1: 1.5' },
  { 'steplr', "torch.optim.lr_scheduler.StepLR(torch.optim.SGD(nn.Linear(2, 2):parameters(), {lr = 0.1}))",
    'StepLR: step_size must be an integer, got nil' },
  { 'dataloader', "torch.data.DataLoader(torch.data.TensorDataset(torch.zeros(4)), {batch_size = 0})",
    'DataLoader: batch_size should be a positive integer value, but got batch_size=0' },
  { 'tensordataset', "torch.data.TensorDataset(torch.zeros(3), torch.zeros(4))",
    'TensorDataset: Size mismatch between tensors: tensor 1 has 3 rows, tensor 2 has 4' },
  { 'random_split', "torch.data.random_split(torch.data.TensorDataset(torch.zeros(4)), {2, 3})",
    'random_split: sum of input lengths (5) does not equal the length of the input dataset (4)' },
  { 'normal', "torch.distributions.Normal(torch.zeros(2), torch.ones(3))",
    'Normal: the parameters do not broadcast to one shape (loc torch.Size([2]), scale torch.Size([3]))' },
  { 'categorical', "torch.distributions.Categorical()",
    'Categorical: either probs or logits must be specified, but not both' },
  { 'normal_sample', "torch.distributions.Normal(0, 1):sample('x')",
    'Normal.sample: sample_shape must be sizes or a table of sizes, got string' },
  { 'lbfgs_closure', "torch.optim.LBFGS(nn.Linear(2, 2):parameters()):step(function() return 'x' end)",
    'LBFGS: the closure must return the loss (a tensor or a number), got string' },
  { 'load', "torch.load('/nonexistent/dir/file.safetensors')",
    'torch.load: /nonexistent/dir/file.safetensors: No such file or directory' },
  { 'save', "torch.save('/nonexistent/dir/file.safetensors', {a = torch.zeros(2)})",
    'torch.save: /nonexistent/dir/file.safetensors: cannot create a temporary file in /nonexistent/dir: No such file or directory' },
  { 'xlogy_', "torch.zeros(3):xlogy_(torch.zeros(2))",
    'xlogy_: mul: the shapes [3] and [2] cannot be broadcast together (size 3 and size 2 at dimension 1)' },
  { 'argsort', "torch.argsort(torch.zeros(3), 5)",
    'argsort: dimension out of range (expected to be in range of [-1, 1], but got 5)' },
  { 'einsum', "torch.einsum('ij,jk->ik', torch.zeros(2, 3))",
    'einsum: fewer operands were provided than specified in the equation' },
  { 'cdist', "torch.cdist(torch.zeros(2, 3), torch.zeros(2, 4))",
    'cdist: X1 and X2 must have the same number of columns. X1: 3 X2: 4' },
  { 'index', "local x = torch.zeros(3); local y = x[5]",
    'select: index 5 out of range for tensor of size [3] at dimension 1' },
  { 'adv_index', "local x = torch.zeros(3); local y = x[torch.tensor({5})]",
    'index_select: index 5 out of range for dimension 1 (of size 3)' },
  { 'index_put', "local x = torch.zeros(3); x[{torch.tensor({1, 2})}] = torch.zeros(3)",
    'index assignment: shape mismatch: value tensor of shape torch.Size([3]) cannot be broadcast to indexing result of shape torch.Size([2])' },
  { 'inv', "torch.linalg.inv(torch.zeros(2, 3))",
    'linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices' },
  { 'autograd_grad', "local x = torch.ones(2, {requires_grad = true}); torch.autograd.grad(torch.ones(2):sum(), x)",
    'backward: element 1 of tensors does not require grad and does not have a grad_fn' },
  { 'add', "local z = torch.zeros(2) + torch.zeros(3)",
    'add: the shapes [2] and [3] cannot be broadcast together (size 2 and size 3 at dimension 1)' },
  { 'clip_grad', "nn.utils.clip_grad_norm_(nn.Linear(2, 2):parameters())",
    'clip_grad_norm_: max_norm must be a number, got nil' },
  { 'one_hot', "F.one_hot(torch.tensor({1.5}))",
    'one_hot: class values must be an int64 tensor, got torch.float32' },
  { 'addcmul', "torch.zeros(2):addcmul(torch.zeros(2), {})",
    "bad argument #2 to 'mul' (tensor or number expected, got table)" },
  { 'dist', "torch.zeros(2):dist({})",
    "bad argument #2 to 'sub' (tensor or number expected, got table)" },
  { 'gradcheck', "torch.autograd.gradcheck(function(x) return x end, {torch.zeros(2)})",
    'gradcheck: no input requires grad' },
}

-- a stand-in for a library module: a chunk named as the embedded modules are, with their `error`
local LIB = assert(load([[
local error = require 'torch._error'
local M = {}
function M.raise(msg, level) error(msg, level) end
function M.deep(msg, level) M.raise(msg, level) end
function M.call(f, ...) local r = f(...); return r end
function M.pcall_again(f, ...) local ok, e = pcall(f, ...); if not ok then error(e, 2) end end
function M.sort_raise(msg) table.sort({ 2, 1 }, function() M.raise(msg) end) end
function M.seed(g, s) local r = g:manual_seed(s); return r end
return M
]], '@lua/torch/spec_stand_in.lua'))()

-- the error of code run in a chunk named user.lua, whose first line starts with
-- `local LIB, T = ...; ` (T: a table)
local function at_user(code, t)
  local f = assert(load('local LIB, T = ...; ' .. code, '@user.lua'))
  local ok, err = pcall(f, LIB, t)
  assert(not ok, 'no error from ' .. code)
  return err
end

describe("the library's error", function()
  it("names the user's line at levels 1 and 2, across the library's frames", function()
    assert.are.equal('user.lua:1: m1', at_user("LIB.raise('m1')"))
    assert.are.equal('user.lua:1: m2', at_user("LIB.raise('m2', 2)"))
    assert.are.equal('user.lua:1: m3', at_user("LIB.deep('m3', 1)"))
    assert.are.equal('user.lua:1: m4', at_user("LIB.deep('m4', 2)"))
  end)

  it("names the level asked for when that frame is the user's", function()
    assert.are.equal('user.lua:4: m', at_user("local function g()\nLIB.raise('m', 3)\nend\ng()"))
  end)

  it("keeps level 0, tables and numbers as Lua's error does", function()
    assert.are.equal('m', at_user("LIB.raise('m', 0)"))
    local t = {}
    assert.are.equal(t, at_user('LIB.raise(T)', t))
    assert.are.equal(42, at_user('LIB.raise(42, 2)'))
  end)

  it("names the line of a user's function that the library called", function()
    assert.are.equal('user.lua:2: m', at_user("LIB.call(function()\nLIB.raise('m')\nend)"))
  end)

  it('looks past the C functions the library calls, not past one the user calls', function()
    assert.are.equal('user.lua:1: m', at_user("LIB.sort_raise('m')"))
    -- a library function called by the user's pcall: no place, as Lua's error(msg, 2) gives there
    assert.are.same({ false, 'm' }, { pcall(LIB.deep, 'm', 1) })
    assert.are.same({ false, 'm' }, { pcall(LIB.raise, 'm', 2) })
  end)

  it('raises an error the library caught and raises again with the place once', function()
    assert.are.equal('user.lua:1: m', at_user("LIB.pcall_again(LIB.raise, 'm')"))
    assert.are.equal('user.lua:1: m', at_user("LIB.pcall_again(LIB.deep, 'm', 2)"))
  end)

  it("leaves the user's own errors as they are", function()
    assert.are.equal('user.lua:1: mine', at_user("error('mine')"))
    assert.are.equal('m', at_user("local ok, e = pcall(LIB.raise, 'm', 2); error(e, 0)"))
  end)
end)

describe('an error raised inside the library', function()
  for _, c in ipairs(CASES) do
    it("names the user's line: " .. c[1], function()
      assert.are.equal('user_script.lua:3: ' .. c[3], raised(c[2]))
    end)
  end

  it("names the line in the user's forward, not the model's call", function()
    local err = raised("local Net = nn.Module:extend('Net')\n" ..
      'function Net:init() self.fc = nn.Linear(4, 2) end\n' ..
      'function Net:forward(x) local y = self.fc(x:view(-1, 3)); return y end\n' ..
      'Net()(torch.zeros(2, 6))')
    assert.are.equal('user_script.lua:5: linear: input of shape torch.Size([4, 3]) cannot be multiplied by a weight of '
      .. 'shape torch.Size([2, 4]) (expected the last dimension to be 4)', err)
  end)

  it('has no place when the user\'s pcall calls the library, as Lua\'s error and the C functions', function()
    assert.are.same({ false, CASES[1][3] }, { pcall(torch.nn.Linear(8, 2), torch.zeros(3, 7)) })
    assert.are.same({ false, 'add: the shapes [2] and [3] cannot be broadcast together (size 2 and size 3 at dimension 1)' },
      { pcall(torch.add, torch.zeros(2), torch.zeros(3)) })
    -- the optimizers and the distributions too (they raise with the library's error)
    assert.are.same({ false, 'SGD: Invalid learning rate: -1' }, { pcall(torch.optim.SGD, torch.nn.Linear(2, 2):parameters(), { lr = -1 }) })
    assert.are.same({ false, 'Normal: the parameters do not broadcast to one shape (loc torch.Size([2]), scale torch.Size([3]))' },
      { pcall(torch.distributions.Normal, torch.zeros(2), torch.ones(3)) })
  end)
end)

describe('a script that raises inside the library', function()
  local SCRIPT = [[
local torch = require 'torch'
local model = torch.nn.Linear(8, 2)
local y = model(torch.zeros(3, 7))
]]
  local BODY = CASES[1][3]

  it('run by the interpreter: the message names its line, the traceback the library\'s frames', function()
    local path = SH.write_temp(SCRIPT)
    local _, err, rc = SH.run(SH.quote(BIN) .. ' ' .. SH.quote(path))
    os.remove(path)
    assert.are.equal(1, rc)
    assert.is_truthy(err:find(path .. ':3: ' .. BODY, 1, true), err)
    assert.is_truthy(err:find('lua/torch/nn/linear.lua:%d+: in '), err)
  end)

  it('run by the stock lua5.4 with torch.so: the same message', function()
    if SANITIZED then pending('a sanitized torch.so needs the sanitizer runtime loaded first') return end
    if select(3, SH.run('command -v lua5.4')) ~= 0 then pending('no lua5.4') return end
    local path = SH.write_temp(SCRIPT)
    local _, err, rc = SH.run('LUA_CPATH=' .. SH.quote(BUILD .. '/?.so;;') .. ' lua5.4 ' .. SH.quote(path))
    os.remove(path)
    assert.are.equal(1, rc)
    assert.is_truthy(err:find(path .. ':3: ' .. BODY, 1, true), err)
  end)

  it('typed at the REPL: the place of the line typed, as for the C functions', function()
    local _, err = SH.run(SH.quote(BIN) .. ' -i', 'local y = torch.nn.Linear(8, 2)(torch.zeros(3, 7))\n' ..
      'local z = torch.zeros(2) + torch.zeros(3)\n')
    assert.is_truthy(err:find('stdin:1: ' .. BODY, 1, true), err)
    assert.is_truthy(err:find('stdin:1: add: ', 1, true), err)
    -- an expression, which the REPL runs as `return ...`: a tail call, which leaves no frame of the
    -- line to name
    _, err = SH.run(SH.quote(BIN) .. ' -i', 'torch.nn.Linear(8, 2)(torch.zeros(3, 7))\n')
    assert.are.equal(BODY, err:match('^[^\n]*'))
  end)
end)

-- lauxlib's argument checks in the bindings (luaL_checkinteger and the others, bindings/binding.h):
-- the message lauxlib writes, at the place above. Each call below is written on one line, in a
-- function of its own, so that the place is this file's line where the function is written.
describe("lauxlib's argument checks in the bindings", function()
  -- the error of f() and the place of f's line in this file
  local function raised_here(f)
    local ok, err = pcall(f)
    assert(not ok, 'no error')
    local info = debug.getinfo(f, 'S')
    return err, info.short_src .. ':' .. info.linedefined .. ': '
  end
  local function check(msg, f)
    local err, at = raised_here(f)
    assert.is_truthy(at:find('error_position_spec.lua:', 1, true), at)
    assert.are.equal(at .. msg, err)
  end
  local nn, G = torch.nn, torch.Generator()

  it("name the user's line for a bad value the library's Lua code passes on", function()
    -- luaL_optnumber: nn.init.uniform_(t, a, b) calls t:uniform_(a, b), trunc_normal_ t:normal_(mean,
    -- std), torch.bernoulli(x, p) x:bernoulli_(p)
    check("bad argument #1 to 'uniform_' (number expected, got string)", function() nn.init.uniform_(torch.zeros(3), 'a') end)
    check("bad argument #2 to 'normal_' (number expected, got string)", function() nn.init.trunc_normal_(torch.zeros(3), 0, 'x') end)
    check("bad argument #1 to 'bernoulli_' (number expected, got string)", function() torch.bernoulli(torch.zeros(3), 'a') end)
    -- luaL_checkinteger: x:narrow_copy(dim, start, length) calls x:narrow, torch.cuda.manual_seed(s)
    -- the binding's manual_seed
    check("bad argument #3 to 'narrow' (number has no integer representation)", function() torch.narrow_copy(torch.zeros(4), 1, 1, 1.5) end)
    check("bad argument #1 to 'manual_seed' (number expected, got string)", function() torch.cuda.manual_seed('x') end)
    check("bad argument #1 to 'manual_seed' (number has no integer representation)", function() torch.cuda.manual_seed(1.5) end)
    -- luaL_checknumber: torch.rsub(x, y, {alpha}) calls torch.sub(y, x, {alpha = alpha}), which
    -- checks the option on top of the stack (lauxlib's argument -1)
    check("bad argument #-1 to 'sub' (number expected, got string)", function() torch.rsub(torch.zeros(3), torch.zeros(3), { alpha = 'x' }) end)
  end)

  it("name the user's line for every check, the binding called by the library's code", function()
    -- the checks that no module passes a user's value to unchecked: a stand-in module calls the
    -- binding (as f, or as g:manual_seed)
    check("bad argument #1 to 'f' (string expected, got table)", function() LIB.call(torch._read_idx, {}) end)
    check("bad argument #1 to 'f' (string expected, got boolean)", function() LIB.call(torch._set_autocast_state, true) end)
    check("bad argument #2 to 'f' (string expected, got table)", function() LIB.call(torch._qr, torch.eye(2), {}) end)
    check("bad argument #1 to 'f' (table expected, got string)", function() LIB.call(torch._lua_threads_run, 'x') end)
    check("bad argument #3 to 'f' (table expected, got string)", function() LIB.call(torch.div, torch.zeros(1), torch.zeros(1), 'x') end)
    check("bad argument #3 to 'f' (number expected, got string)", function() LIB.call(torch._lua_threads_run, {}, function() end, 'x') end)
    check("bad argument #3 to 'f' (number has no integer representation)", function() LIB.call(torch._lua_threads_run, {}, function() end, 0.5) end)
    check("bad argument #1 to 'f' (invalid option 'x')", function() LIB.call(torch.utils.isatty, 'x') end)
    check("bad argument #1 to 'f' (torch.Generator expected, got table)", function() LIB.call(G.manual_seed, {}, 1) end)
    check("bad argument #1 to 'f' (torch.Generator expected, got torch.Tensor)", function() LIB.call(G.manual_seed, torch.zeros(1), 1) end)
    check("bad argument #1 to 'manual_seed' (number expected, got string)", function() LIB.seed(G, 'x') end)
    check("calling 'manual_seed' on bad self (torch.Generator expected, got table)", function() LIB.seed({ manual_seed = G.manual_seed }, 1) end)
    check("bad argument #1 to 'f' (number has no integer representation)", function() LIB.call(torch.randperm, '1.5') end)
    check("bad argument #1 to 'f' (number expected, got no value)", function() LIB.call(torch.randperm) end)
    check("bad argument #1 to 'f' (number expected, got table)", function() LIB.call(torch.linspace, {}, 1, 3) end)
    -- luaL_checkany: a DataLoader's worker pool, pool:send(k, seq, task)
    local pool = torch.data.DataLoader(torch.data.TensorDataset(torch.zeros(2)), { num_workers = 1 }):_new_pool(1)
    local ok, err = pcall(function() check("bad argument #4 to 'f' (value expected)", function() LIB.call(pool.send, pool, 1, 1) end) end)
    pool:shutdown()
    assert(ok, err)
  end)

  -- {the call, its message; a function of Lua's standard library that makes the same check, its
  -- message}: called by the user, a binding's message is lauxlib's
  local DIRECT = {
    { function() torch.randperm(1.5) end, "bad argument #1 to 'randperm' (number has no integer representation)",
      function() string.char(1.5) end, "bad argument #1 to 'char' (number has no integer representation)" },
    { function() torch.randperm(2 ^ 63) end, "bad argument #1 to 'randperm' (number has no integer representation)",
      function() string.char(2 ^ 63) end, "bad argument #1 to 'char' (number has no integer representation)" },
    { function() torch.randperm('1.5') end, "bad argument #1 to 'randperm' (number has no integer representation)",
      function() string.char('1.5') end, "bad argument #1 to 'char' (number has no integer representation)" },
    { function() torch.randperm('x') end, "bad argument #1 to 'randperm' (number expected, got string)",
      function() string.char('x') end, "bad argument #1 to 'char' (number expected, got string)" },
    { function() torch.randperm() end, "bad argument #1 to 'randperm' (number expected, got no value)",
      function() select() end, "bad argument #1 to 'select' (number expected, got no value)" },
    { function() torch.linspace({}, 1, 3) end, "bad argument #1 to 'linspace' (number expected, got table)",
      function() math.abs({}) end, "bad argument #1 to 'abs' (number expected, got table)" },
    { function() torch.zeros(3):uniform_('a') end, "bad argument #1 to 'uniform_' (number expected, got string)",
      function() ('x'):rep('a') end, "bad argument #1 to 'rep' (number expected, got string)" },
    { function() torch._read_idx({}) end, "bad argument #1 to '_read_idx' (string expected, got table)",
      function() string.upper({}) end, "bad argument #1 to 'upper' (string expected, got table)" },
    { function() torch._set_autocast_state(true) end, "bad argument #1 to '_set_autocast_state' (string expected, got boolean)",
      function() string.upper(true) end, "bad argument #1 to 'upper' (string expected, got boolean)" },
    { function() torch._qr(torch.eye(2), {}) end, "bad argument #2 to '_qr' (string expected, got table)",
      function() table.concat({}, {}) end, "bad argument #2 to 'concat' (string expected, got table)" },
    { function() torch._lua_threads_run('x') end, "bad argument #1 to '_lua_threads_run' (table expected, got string)",
      function() setmetatable('x', {}) end, "bad argument #1 to 'setmetatable' (table expected, got string)" },
    { function() torch._lua_threads_run({}, function() end, 'x') end, "bad argument #3 to '_lua_threads_run' (number expected, got string)",
      function() string.sub('x', 1, 'y') end, "bad argument #3 to 'sub' (number expected, got string)" },
    { function() torch.utils.isatty('x') end, "bad argument #1 to 'isatty' (invalid option 'x')",
      function() collectgarbage('x') end, "bad argument #1 to 'collectgarbage' (invalid option 'x')" },
    { function() G.manual_seed(torch.zeros(1), 1) end, "bad argument #1 to 'manual_seed' (torch.Generator expected, got torch.Tensor)",
      function() io.close(torch.zeros(1)) end, "bad argument #1 to 'close' (FILE* expected, got torch.Tensor)" },
    { function() local t = { manual_seed = G.manual_seed }; t:manual_seed(1) end, "calling 'manual_seed' on bad self (torch.Generator expected, got table)",
      function() local t = { close = io.stdout.close }; t:close() end, "calling 'close' on bad self (FILE* expected, got table)" },
  }

  it("called by the user: the message lauxlib gives, as Lua's own functions do", function()
    for _, c in ipairs(DIRECT) do
      check(c[2], c[1])
      check(c[4], c[3])
    end
    -- luaL_checkany: pool:send(k, seq, task), as rawset(t, k, v)
    local pool = torch.data.DataLoader(torch.data.TensorDataset(torch.zeros(2)), { num_workers = 1 }):_new_pool(1)
    local ok, err = pcall(function() check("bad argument #3 to 'send' (value expected)", function() pool:send(1, 1) end) end)
    pool:shutdown()
    assert(ok, err)
    check("bad argument #3 to 'rawset' (value expected)", function() rawset({}, 1) end)
  end)

  it("take what lauxlib takes: numbers as strings, strings that convert to numbers, floats with an integer value", function()
    assert.are.equal(3, torch.randperm('3'):numel())
    assert.are.equal(3, torch.randperm(' 0x3 '):numel())
    assert.are.equal(3, torch.randperm(3.0):numel())
    assert.are.same({ 0, 0.5, 1 }, torch.linspace('0', '1', '3'):totable())
    assert.are.same({ 2, 2 }, torch.zeros(2):uniform_('2', '2.0'):totable())
    assert.are.same({ 1, 1 }, torch.zeros(2):bernoulli_('1'):totable())
    assert.are.equal(0, torch._lua_threads_run({}, function() end, '2'))
    -- the luaL_opt ones: nil is the default
    assert.are.equal(0, torch._lua_threads_run({}, function() end, nil))
    assert.are.equal(torch.utils.isatty('stdout'), torch.utils.isatty(nil))
    local q = torch._qr(torch.eye(2), nil)
    assert.are.same({ 2, 2 }, { q:size(1), q:size(2) })
  end)
end)

describe("tracebacks", function()
  it("name the library's functions by the name users call them by", function()
    -- Lua names a C function in a traceback by the first loaded module holding it: a part of the
    -- library that returned the torch table made torch.add read 'torch.layout.add' (or another
    -- part's name, by the order of package.loaded)
    for name, v in pairs(package.loaded) do
      if name ~= 'torch' then assert(v ~= torch, name .. ' is loaded as the torch table') end
    end
    local f = assert(load("local torch = require 'torch'\nreturn torch.add(torch.ones(2), torch.ones(3))", '@user_script.lua'))
    local ok, tb = xpcall(f, debug.traceback)
    assert.is_false(ok)
    assert.truthy(tb:find("in function 'torch.add'", 1, true), tb)
  end)
end)
