-- Tests of lutorch inside other programs and stock Lua (issue 9): the embed example
-- (examples/embed/classify.c) against a checkpoint of examples/fashion_mnist_mlp.lua, `make install`
-- into a temporary prefix (lua5.4 requiring the module, a pkg-config build of a C program,
-- `make uninstall`), and the REPL's help, who, timing and ~/.lutorchrc through its stdin.
-- The C API itself is tested by spec/c/embed_test.c (make test runs it). Runs inside the lutorch
-- interpreter (busted under build/lutorch), so torch is at hand for the references.
local torch = require 'torch'

local BUILD = os.getenv('LUTORCH_BUILD') or 'build'
local BIN = os.getenv('LUTORCH_BIN') or (BUILD .. '/lutorch')

-- the make options that made BUILD (the Makefile's BUILD names): build, build/san, build/cuda, build/san-cuda
local function make_options()
  local o = { 'BUILD=' .. BUILD }
  local tail = BUILD:match('[^/]+$')
  if tail:match('^san') then o[#o + 1] = 'SANITIZE=1' end
  if tail:match('cuda') then o[#o + 1] = 'CUDA=1' end
  return table.concat(o, ' ')
end
local SANITIZED = BUILD:match('[^/]+$'):match('^san') ~= nil

local SH = require 'spec.support.shell'
local q, sh = SH.quote, SH.run

local function tmpdir()
  local out = sh('mktemp -d')
  return (out:gsub('%s+$', ''))
end

local function write(path, text)
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end

local function exists(path)
  local f = io.open(path, 'r')
  if f then f:close() end
  return f ~= nil
end

local CLASSES = { 'T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag',
  'Ankle boot' }

describe('embedding: examples/embed/classify', function()
  local dir, ckpt
  setup(function()
    local out, err, rc = sh('make --no-print-directory examples ' .. make_options())
    assert(rc == 0, 'make examples failed:\n' .. out .. err)
    dir = tmpdir()
    -- a short training run makes the checkpoint quickly
    out, err, rc = sh(q(BIN) .. ' examples/fashion_mnist_mlp.lua --epochs 1 --limit 60 --quiet --out ' .. q(dir))
    assert(rc == 0, 'training failed:\n' .. out .. err)
    ckpt = dir .. '/checkpoint.safetensors'
  end)
  teardown(function()
    if dir then sh('rm -rf ' .. q(dir)) end
  end)

  it('classifies the first test images as the same model does in Lua', function()
    local n = 64
    local out, err, rc = sh(q(BUILD .. '/examples/classify') .. ' ' .. q(ckpt) .. ' ' .. n)
    assert.are.equal(0, rc, err)
    -- the reference: the checkpoint's model run here, on the dataset as torch.data reads it
    local nn = torch.nn
    local model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    model:load_state_dict(torch.load(ckpt).model)
    local ds = torch.data.datasets.FashionMNIST { train = false }
    local x = ds.data:narrow(1, 1, n):double():div(255):view(n, 784)
    local ref = torch.no_grad(function() return model:double()(x):argmax(2) end)
    local lines, correct = {}, 0
    for l in out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.are.equal(n + 1, #lines, out)
    for i = 1, n do
      local p, y = ref[i], ds.targets[i] -- numbers: rows of 1-D tensors
      local ok = p == y
      if ok then correct = correct + 1 end
      local want = string.format('image %d: %s (label %s)%s', i, CLASSES[p], CLASSES[y], ok and '' or ' wrong')
      assert.are.equal(want, lines[i])
    end
    assert.are.equal(string.format('accuracy: %d/%d', correct, n), lines[n + 1])
    assert.is_true(correct > n / 2, "a short run already classifies most images (chance: 1 in 10): " .. correct)
  end)

  it('reports a missing checkpoint with the Lua traceback', function()
    local out, err, rc = sh(q(BUILD .. '/examples/classify') .. ' /nonexistent/model.safetensors 3')
    assert.are.equal(1, rc)
    assert.are.equal('', out)
    assert.is_truthy(err:find('torch.load: /nonexistent/model.safetensors', 1, true), err)
    assert.is_truthy(err:find('stack traceback:', 1, true), err)
  end)

  it('checks its arguments', function()
    local _, err, rc = sh(q(BUILD .. '/examples/classify'))
    assert.are.equal(2, rc)
    assert.is_truthy(err:find('usage:', 1, true), err)
    _, err, rc = sh(q(BUILD .. '/examples/classify') .. ' x 0')
    assert.are.equal(2, rc)
    assert.is_truthy(err:find('N must be 1 to 10000', 1, true), err)
  end)
end)

describe('make install', function()
  local prefix
  setup(function()
    prefix = tmpdir()
    local out, err, rc = sh('make --no-print-directory install ' .. make_options() .. ' PREFIX=' .. q(prefix))
    assert(rc == 0, 'make install failed:\n' .. out .. err)
  end)
  teardown(function()
    if prefix then sh('rm -rf ' .. q(prefix)) end
  end)

  it('installs every part where it belongs', function()
    for _, f in ipairs { 'bin/lutorch', 'lib/liblutorch.so', 'lib/liblutorch.so.0', 'lib/liblutorch.so.0.1.0',
      'include/lutorch.h', 'lib/pkgconfig/lutorch.pc', 'share/man/man1/lutorch.1', 'lib/lua/5.4/torch.so',
      'share/lua/5.4/torch/nn/linear.lua', 'share/lua/5.4/torch/optim/sgd.lua' } do
      assert.is_true(exists(prefix .. '/' .. f), f .. ' is missing')
    end
    -- init.lua would shadow torch.so: the path is searched before the cpath
    assert.is_false(exists(prefix .. '/share/lua/5.4/torch/init.lua'))
    local out, _, rc = sh('readelf -d ' .. q(prefix .. '/lib/liblutorch.so.0.1.0'))
    assert.are.equal(0, rc)
    assert.is_truthy(out:find('[liblutorch.so.0]', 1, true), out) -- the soname
    out, _, rc = sh(q(prefix .. '/bin/lutorch') .. ' -e "print(torch.ones(3):sum():item())"')
    assert.are.equal(0, rc)
    assert.are.equal('3.0\n', out)
    -- the MPI plugin, where the build has one: found by the installed interpreter beside its lib/
    local plugin = exists(BUILD .. '/lutorch_mpi.so')
    assert.are.equal(plugin, exists(prefix .. '/lib/lutorch/lutorch_mpi.so'))
    assert.are.equal(plugin, exists(prefix .. '/lib/lua/5.4/lutorch/lutorch_mpi.so'))
    out, _, rc = sh(q(prefix .. '/bin/lutorch') .. ' -e "print(torch.distributed.is_mpi_available())"')
    assert.are.equal(0, rc)
    assert.are.equal(tostring(plugin) .. '\n', out)
    out, _, rc = sh('man -l ' .. q(prefix .. '/share/man/man1/lutorch.1') .. ' 2>&1 | col -b')
    if rc == 0 and out ~= '' then
      assert.is_truthy(out:find('lutorch %- Lua 5%.4 interpreter'), out)
      assert.is_truthy(out:find('.lutorchrc', 1, true), out)
    end
  end)

  it('the stock lua5.4 requires torch from the prefix', function()
    if SANITIZED then pending('a sanitized torch.so needs the sanitizer runtime loaded first') return end
    local env = 'LUA_PATH=' .. q(prefix .. '/share/lua/5.4/?.lua;' .. prefix .. '/share/lua/5.4/?/init.lua;;') ..
      ' LUA_CPATH=' .. q(prefix .. '/lib/lua/5.4/?.so;;')
    local code = [[
local torch = require 'torch'
local a = torch.tensor({{1, 2}, {3, 4}}, {dtype = torch.float64})
local b = torch.tensor({{5, 6}, {7, 8}}, {dtype = torch.float64})
local c = torch.matmul(a, b)
local ok = true
for i = 1, 2 do for j = 1, 2 do
  local s = 0
  for k = 1, 2 do s = s + a[i][k] * b[k][j] end
  ok = ok and c[i][j] == s
end end
local lin = torch.nn.Linear(3, 2)
print(ok, lin(torch.ones(4, 3)).shape[1], package.searchpath('torch', package.cpath) ~= nil,
  torch.distributed.is_mpi_available())
]]
    local out, err, rc = sh(env .. ' lua5.4 -', code)
    assert.are.equal(0, rc, err)
    assert.are.equal('true\t4\ttrue\t' .. tostring(exists(BUILD .. '/lutorch_mpi.so')) .. '\n', out)
  end)

  it('builds a C program with pkg-config --cflags --libs lutorch', function()
    local dir = tmpdir()
    write(dir .. '/prog.c', [[
#include <lutorch.h>
#include <stdio.h>
int main(void) {
  lua_State *L = lutorch_newstate();
  if (!L) { fprintf(stderr, "%s\n", lutorch_errmsg(NULL)); return 1; }
  double v[4] = {1, 2, 3, 4};
  int64_t sizes[2] = {2, 2};
  if (lutorch_push_tensor(L, v, 2, sizes, LUTORCH_FLOAT64, lutorch_cpu(0)) != LUTORCH_OK) return 1;
  lua_setglobal(L, "x");
  if (lutorch_dostring(L, "y = x:t():matmul(x)", NULL) != LUTORCH_OK) { fprintf(stderr, "%s\n", lutorch_errmsg(L)); return 1; }
  lutorch_tensor y;
  if (lutorch_get_global_tensor(L, "y", &y) != LUTORCH_OK) return 1;
  const double *d = y.data;
  printf("%g %g %g %g\n", d[0], d[1], d[2], d[3]);
  lutorch_tensor_release(&y);
  lutorch_close(L);
  return 0;
}
]])
    local pc = 'PKG_CONFIG_PATH=' .. q(prefix .. '/lib/pkgconfig')
    local flags, err, rc = sh(pc .. ' pkg-config --cflags --libs lutorch')
    assert.are.equal(0, rc, err)
    assert.is_truthy(flags:find('-llutorch', 1, true), flags)
    assert.is_truthy(flags:find('-I' .. prefix .. '/include', 1, true), flags)
    local san = SANITIZED and ' -fsanitize=address,undefined' or ''
    local out
    out, err, rc = sh('cc -std=c11 -o ' .. q(dir .. '/prog') .. ' ' .. q(dir .. '/prog.c') .. san .. ' $(' .. pc ..
      ' pkg-config --cflags --libs lutorch)')
    assert.are.equal(0, rc, out .. err)
    out, err, rc = sh(q(dir .. '/prog'))
    assert.are.equal(0, rc, err)
    -- x^T x for x = [[1, 2], [3, 4]]: [[1*1+3*3, 1*2+3*4], [2*1+4*3, 2*2+4*4]]
    assert.are.equal('10 14 14 20\n', out)
    sh('rm -rf ' .. q(dir))
  end)

  it('make uninstall removes what install put there', function()
    local p2 = tmpdir()
    local out, err, rc = sh('make --no-print-directory install ' .. make_options() .. ' PREFIX=/usr/local DESTDIR=' .. q(p2))
    assert.are.equal(0, rc, out .. err)
    assert.is_true(exists(p2 .. '/usr/local/lib/lua/5.4/torch.so'))
    out, err, rc = sh('make --no-print-directory uninstall ' .. make_options() .. ' PREFIX=/usr/local DESTDIR=' .. q(p2))
    assert.are.equal(0, rc, out .. err)
    local left = sh('find ' .. q(p2) .. ' ! -type d')
    assert.are.equal('', left)
    sh('rm -rf ' .. q(p2))
  end)
end)

describe('the REPL', function()
  local home
  before_each(function() home = tmpdir() end)
  after_each(function() sh('rm -rf ' .. q(home)) end)

  -- runs the REPL (-i, stdin piped) with HOME set; returns what the chunks printed (prompts
  -- removed), stderr and the status
  local function repl(input)
    local out, err, rc = sh('HOME=' .. q(home) .. ' ' .. q(BIN) .. ' -i', input)
    return table.concat(SH.repl_lines(out), '\n'), err, rc
  end

  it('?name and help(name) print the documentation of C functions, methods, Lua functions, classes and modules', function()
    local out, err, rc = repl(table.concat({
      '?torch.matmul', 'help(torch.zeros)', 'x = torch.ones(2)', '?x:sum', "help 'Tensor:view'",
      '?torch.nn.Linear', 'help(torch.nn.Conv2d)', '?torch.F.cross_entropy', 'help(torch.save)', '?torch.nn',
      '?torch.optim.AdamW', '?torch.nn.Tanh', '?nonexistent.name', 'help(torch.nn.Linear.forward)' }, '\n') .. '\n')
    assert.are.equal(0, rc, err)
    for _, want in ipairs {
      'torch.matmul(a, b) -> tensor', 'torch.zeros(size1, size2, ... | {sizes}', 'x:sum() | x:sum(dim, keepdim)',
      'x:view(sizes...) -> tensor', 'Linear(in_features, out_features, {bias = true, device, dtype})',
      'Conv2d(in_channels, out_channels, kernel_size', 'F.cross_entropy(x, target, {weight',
      'torch.save(path, value', 'torch.nn: the module system', 'torch.optim.AdamW(params',
      'Tanh(): tanh(x) elementwise', 'help: no nonexistent.name', 'help: no documentation for' } do
      assert.is_truthy(out:find(want, 1, true), want .. ' not in:\n' .. out)
    end
    assert.are.equal('', err)
  end)

  it('?name and ?expr take a comment after them', function()
    local out, err, rc = repl('?torch.matmul   -- the product\n?torch.nn.Linear.forward -- a Lua method\n'
      .. '?torch.ones(2)  -- an expression: help(value)\n')
    assert.are.equal(0, rc, err)
    assert.is_truthy(out:find('torch.matmul(a, b) -> tensor', 1, true), out)
    assert.is_truthy(out:find('help: no documentation for tensor([1., 1.])', 1, true), out)
    assert.are.equal('', err)
    assert.is_falsy(out:find('expected', 1, true), out)
  end)

  it('help() lists the documented names and the usage', function()
    local out = repl('help()\n?\n')
    assert.is_truthy(out:find('help(name) or ?name', 1, true), out)
    local _, n = out:find('torch.matmul', 1, true)
    assert.is_truthy(n, out)
    assert.is_truthy(out:find('Tensor:backward', 1, true), out)
  end)

  it('who() lists the globals the user defined, with their types', function()
    local out, err, rc = repl('a = 5\nw = torch.zeros(2, 3, {dtype = torch.int32})\nf = function() end\ns = "hi"\nlocal hidden = 1\nwho()\n')
    assert.are.equal(0, rc, err)
    local want = table.concat({ 'a  number 5', 'f  function', 's  string "hi"', 'w  tensor [2, 3] int32 cpu:0' }, '\n')
    assert.are.equal(want, out)
  end)

  it('prints the time of a command that runs longer than 0.1 s, only of those', function()
    local out, err, rc = repl('local t = torch.utils.clock() while torch.utils.clock() - t < 0.25 do end\nprint(1)\n')
    assert.are.equal(0, rc)
    assert.are.equal('1', out)
    local s = err:match('^time: (%d+%.%d%d) s\n$')
    assert.is_truthy(s, err)
    assert.is_true(tonumber(s) >= 0.25 and tonumber(s) < 5, s)
  end)

  it('runs ~/.lutorchrc at start; its globals are the user\'s', function()
    write(home .. '/.lutorchrc', 'rcvalue = 6 * 7\nfunction greet() return "hello" end\n')
    local out, err, rc = repl('print(rcvalue, greet())\nwho()\n')
    assert.are.equal(0, rc, err)
    assert.are.equal('42\thello\ngreet    function\nrcvalue  number 42', out)
  end)

  it('reports an error in ~/.lutorchrc and goes on', function()
    write(home .. '/.lutorchrc', 'before = 1\nerror("broken rc")\n')
    local out, err, rc = repl('print(before, 2 + 2)\n')
    assert.are.equal(0, rc)
    assert.are.equal('1\t4', out)
    assert.is_truthy(err:find('lutorch: ' .. home .. '/.lutorchrc:2: broken rc', 1, true), err)
    write(home .. '/.lutorchrc', 'x = = 1\n')
    out, err, rc = repl('print(3)\n')
    assert.are.equal(0, rc)
    assert.are.equal('3', out)
    assert.is_truthy(err:find('.lutorchrc:1:', 1, true), err)
  end)

  it('does not run ~/.lutorchrc for scripts, -e or stdin', function()
    write(home .. '/.lutorchrc', 'rcvalue = 1\n')
    local env = 'HOME=' .. q(home) .. ' ' .. q(BIN)
    local out = sh(env .. " -e 'print(rcvalue, help, who)'")
    assert.are.equal('nil\tnil\tnil\n', out)
    out = sh(env .. ' -', 'print(rcvalue)\n')
    assert.are.equal('nil\n', out)
  end)

  it('keeps history in ~/.lutorch_history across sessions on a terminal (readline, loaded at the start)', function()
    local ok = sh('command -v script')
    if ok == '' then pending('script(1) is not installed: no terminal to drive readline') return end
    local run = 'HOME=' .. q(home) .. ' TERM=dumb script -qfec ' .. q(q(BIN)) .. ' /dev/null'
    sh(run, 'y = 6 * 7\n')
    local f = io.open(home .. '/.lutorch_history')
    local hist = f and f:read('a') or ''
    if f then f:close() end
    assert.is_truthy(hist:find('y = 6 * 7', 1, true), hist)
    -- Ctrl-P brings the last session's line back; running it again defines y in this one
    local out = sh(run, '\16\nprint(y + 1)\n')
    assert.is_truthy(out:find('43', 1, true), out)
  end)

  it('completes file names inside strings, absolute paths too', function()
    local ok = sh('command -v script')
    if ok == '' then pending('script(1) is not installed: no terminal to drive readline') return end
    write(home .. '/unique_name_for_completion.txt', '')
    local input = "s = '" .. home .. "/unique_na\t\nprint(#s, s)\n"
    -- script gives the REPL a terminal, so readline completes the Tab
    local out = sh('HOME=' .. q(home) .. ' TERM=dumb script -qfec ' .. q(q(BIN)) .. ' /dev/null', input)
    local want = home .. '/unique_name_for_completion.txt'
    assert.is_truthy(out:find(#want .. '\t' .. want, 1, true), out)
  end)
end)
