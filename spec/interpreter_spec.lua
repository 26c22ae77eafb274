-- Tests for the interpreter build/lutorch (bindings/main.c, bindings/repl.c).
-- Run from the repository root: busted spec/interpreter_spec.lua
-- LUTORCH_BIN overrides the binary under test.

local BIN = os.getenv('LUTORCH_BIN') or 'build/lutorch'

local SH = require 'spec.support.shell'
local shell_quote, write_temp = SH.quote, SH.write_temp

-- Runs a shell command line; returns its output (stdout, and stderr when
-- merged by the command line itself) and its exit status.
local function sh(cmdline)
  local p = assert(io.popen(cmdline .. '; echo "rc=$?"', 'r'))
  local out = p:read('a')
  p:close()
  local body, rc = out:match('^(.-)rc=(%d+)\n?$')
  return body, tonumber(rc)
end

-- Runs lutorch with the given (already quoted) arguments.
-- opts.stdin: text piped to stdin (else stdin is /dev/null);
-- opts.merge: stderr goes to stdout as well; opts.stderr: a file for it;
-- else it is discarded.
local function run(args, opts)
  opts = opts or {}
  local cmd = shell_quote(BIN) .. ' ' .. (args or '')
  local tmp
  if opts.stdin then
    tmp = write_temp(opts.stdin)
    cmd = cmd .. ' < ' .. shell_quote(tmp)
  else
    cmd = cmd .. ' < /dev/null'
  end
  if opts.merge then
    cmd = cmd .. ' 2>&1'
  else
    cmd = cmd .. ' 2>' .. shell_quote(opts.stderr or '/dev/null')
  end
  local out, rc = sh(cmd)
  if tmp then os.remove(tmp) end
  return out, rc
end

-- Runs lutorch, returning stdout and stderr separately, and the status.
local function run_split(args, stdin)
  local errf = os.tmpname()
  local out, rc = run(args, { stdin = stdin, stderr = errf })
  local f = assert(io.open(errf, 'r'))
  local err = f:read('a')
  f:close()
  os.remove(errf)
  return out, err, rc
end

local function lines(s)
  local t = {}
  for l in s:gmatch('([^\n]*)\n') do t[#t + 1] = l end
  return t
end

-- what the chunks printed through the REPL's pipe, with the version line (spec/support/shell.lua)
local function repl_output(out) return SH.repl_lines(out, true) end

describe('lutorch interpreter', function()
  it('has an executable', function()
    local f = io.open(BIN, 'r')
    assert.is_not_nil(f, BIN .. ' is missing (build it first)')
    f:close()
  end)

  it('-v prints the version line', function()
    local out, rc = run('-v')
    assert.are.equal(0, rc)
    assert.is_truthy(out:match('^lutorch %d+%.%d+%.%d+ %(Lua 5%.4%.%d+%)\n$'), out)
  end)

  it('-h and --help print the usage on stdout', function()
    for _, opt in ipairs({ '-h', '--help' }) do
      local out, rc = run(opt)
      assert.are.equal(0, rc)
      assert.is_truthy(out:find('usage: lutorch', 1, true), out)
      assert.is_truthy(out:find('-e stat', 1, true), out)
    end
  end)

  it('-e runs code, several in order', function()
    local out, rc = run("-e 'print(6*7)' -e 'x = 3' -e 'print(x + 1)'")
    assert.are.equal(0, rc)
    assert.are.equal('42\n4\n', out)
  end)

  it('-e with a concatenated argument', function()
    local out, rc = run("'-eprint(\"joined\")'")
    assert.are.equal(0, rc)
    assert.are.equal('joined\n', out)
  end)

  it('has torch as a global and require returns the same table', function()
    local out, rc = run("-e 'print(type(torch), require(\"torch\") == torch, package.loaded.torch == torch)'")
    assert.are.equal(0, rc)
    assert.are.equal('table\ttrue\ttrue\n', out)
  end)

  it("errors in torch's own Lua code name the user's line, the traceback its file and line (its modules run as bytecode)", function()
    local out, rc = run("-e 'torch.nn.Linear(2, 3)(torch.ones(5))'", { merge = true })
    assert.are.equal(1, rc)
    assert.is_truthy(out:find('(command line):1: linear: input of shape', 1, true), out)
    -- the line of linear.lua that calls F.linear, found in the source the bytecode came from
    local n, line = 0, nil
    for l in io.lines('lua/torch/nn/linear.lua') do
      n = n + 1
      if not line and l:find('F.linear(', 1, true) then line = n end
    end
    assert.is_not_nil(line)
    assert.is_truthy(out:find('\tlua/torch/nn/linear.lua:' .. line .. ': in ', 1, true), out)
    assert.is_truthy(out:find('in function <lua/torch/nn/linear.lua:', 1, true), out)
  end)

  it('runs a script with arg and ...', function()
    local script = write_temp([[
print(arg[0] == SCRIPT_NAME_PLACEHOLDER)
print(arg[1], arg[2], #arg)
print(select('#', ...), ...)
print(arg[-1] ~= nil)
]])
    -- put the real name into the script
    local f = assert(io.open(script, 'r'))
    local text = f:read('a')
    f:close()
    f = assert(io.open(script, 'w'))
    f:write((text:gsub('SCRIPT_NAME_PLACEHOLDER', string.format('%q', script))))
    f:close()
    local out, rc = run(shell_quote(script) .. ' alpha "b c"')
    os.remove(script)
    assert.are.equal(0, rc)
    assert.are.same({ 'true', 'alpha\tb c\t2', '2\talpha\tb c', 'true' }, lines(out))
  end)

  it('gives negative arg indices to the interpreter and its options', function()
    local script = write_temp('print(arg[-1], arg[-2], arg[-3] ~= nil, arg[-4])\n')
    local out, rc = run("-e 'y=1' " .. shell_quote(script) .. ' z')
    os.remove(script)
    assert.are.equal(0, rc)
    assert.are.equal('y=1\t-e\ttrue\tnil\n', out)
  end)

  it('skips a #! first line', function()
    local script = write_temp('#!/usr/bin/env lutorch\nprint("shebang ok")\n')
    local out, rc = run(shell_quote(script))
    os.remove(script)
    assert.are.equal(0, rc)
    assert.are.equal('shebang ok\n', out)
  end)

  it('- runs stdin as a script with arguments', function()
    local out, rc = run('- p q', { stdin = 'print("from stdin", ...)\nprint(arg[0], #arg)\n' })
    assert.are.equal(0, rc)
    assert.are.equal('from stdin\tp\tq\n-\t2\n', out)
  end)

  it('runs stdin as a script when it is not a terminal and no script is given', function()
    local out, rc = run('', { stdin = 'print(1 + 2)\n' })
    assert.are.equal(0, rc)
    assert.are.equal('3\n', out)
  end)

  it('-- stops option handling', function()
    local script = write_temp('print(...)\n')
    local out, rc = run('-- ' .. shell_quote(script) .. ' -v')
    os.remove(script)
    assert.are.equal(0, rc)
    assert.are.equal('-v\n', out)
  end)

  it('-l requires a module into a global', function()
    local out, rc = run("-l string -l S=string -e 'print(S == string, S.rep(\"ab\", 2))'")
    assert.are.equal(0, rc)
    assert.are.equal('true\tabab\n', out)
  end)

  it('reports a script error with lutorch: and a traceback, exit 1', function()
    local script = write_temp('local function f() error("boom") end\nf()\nprint("not reached")\n')
    local out, err, rc = run_split(shell_quote(script))
    os.remove(script)
    assert.are.equal(1, rc)
    assert.are.equal('', out)
    assert.is_truthy(err:match('^lutorch: [^\n]*:1: boom\n'), err)
    assert.is_truthy(err:find('stack traceback:', 1, true), err)
  end)

  it('reports an -e error with exit 1 and stops there', function()
    local out, rc = run("-e 'error(\"bad\")' -e 'print(\"not reached\")'", { merge = true })
    assert.are.equal(1, rc)
    assert.is_truthy(out:find('lutorch: (command line):1: bad', 1, true), out)
    assert.is_falsy(out:find('not reached', 1, true))
  end)

  it('reports a syntax error and a missing file with exit 1', function()
    local out, rc = run("-e 'x = = 1'", { merge = true })
    assert.are.equal(1, rc)
    assert.is_truthy(out:match('^lutorch: '), out)
    out, rc = run(shell_quote(os.tmpname() .. '.no_such_file.lua'), { merge = true })
    assert.are.equal(1, rc)
    assert.is_truthy(out:find('cannot open', 1, true), out)
  end)

  it("sets a short OpenMP spin unless the user chose a wait policy, keeping arguments and stdin", function()
    local q = shell_quote(BIN)
    local show = [[ -e 'io.write(tostring(os.getenv("GOMP_SPINCOUNT")))']]
    assert.are.same({ '10000', 0 }, { sh('env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY ' .. q .. show) })
    assert.are.same({ '77', 0 }, { sh('env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=77 ' .. q .. show) })
    assert.are.same({ 'nil', 0 }, { sh('env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active ' .. q .. show) })
    -- libgomp's own value (OMP_DISPLAY_ENV prints what it read, once per start): set before its
    -- constructor through the shell's `_` entry, which the script then sees as it was
    local shown = [[ OMP_DISPLAY_ENV=verbose ]] .. q .. [[ -e 'io.write(tostring(os.getenv("_")))' 2>&1 | ]] ..
      [[sed -n "s/.*GOMP_SPINCOUNT = '\([0-9]*\)'.*/spin \1/p; /^[^ ][^ ]*$/p"]]
    assert.are.same({ 'spin 10000\n/marker', 0 },
      { sh('env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY _=/marker' .. shown) })
    assert.are.same({ 'spin 77\n/marker', 0 }, { sh('env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=77 _=/marker' .. shown) })
    -- without `_` (env -i), the program starts again with the variable set (libgomp shows its
    -- default, then the short spin), and sees the same arguments, stdin and status
    assert.are.same({ 'spin 300000\nspin 10000\nnil', 0 }, { sh('env -i' .. shown) })
    local out, rc = sh([[printf 'io.write(table.concat(arg, ","), io.read("a")) os.exit(3)' | ]] ..
      'env -i ' .. q .. " - 'a b' c")
    assert.are.same({ 'a b,c', 3 }, { out, rc })
  end)

  it('exits with the status given to os.exit', function()
    local _, rc = run("-e 'os.exit(3)'")
    assert.are.equal(3, rc)
  end)

  it('rejects an unknown option with the usage on stderr, exit 1', function()
    local out, err, rc = run_split('-Z')
    assert.are.equal(1, rc)
    assert.are.equal('', out)
    assert.is_truthy(err:find("unrecognized option '-Z'", 1, true), err)
    assert.is_truthy(err:find('usage: lutorch', 1, true), err)
  end)

  it('rejects -e without an argument, exit 1', function()
    local _, err, rc = run_split('-e')
    assert.are.equal(1, rc)
    assert.is_truthy(err:find("'-e' needs argument", 1, true), err)
  end)

  it('honours LUA_INIT and LUA_INIT_5_4, and -E ignores them', function()
    local cmd = 'LUA_INIT=' .. shell_quote('print("init")') .. ' ' .. shell_quote(BIN)
    local out = sh(cmd .. " -e 'print(2)' </dev/null")
    assert.are.equal('init\n2\n', out)
    out = sh('LUA_INIT_5_4=' .. shell_quote('print("init54")') .. ' ' .. cmd .. " -e 'print(2)' </dev/null")
    assert.are.equal('init54\n2\n', out)
    out = sh(cmd .. " -E -e 'print(2)' </dev/null")
    assert.are.equal('2\n', out)
    local init = write_temp('print("from file")\n')
    out = sh('LUA_INIT=@' .. shell_quote(init) .. ' ' .. shell_quote(BIN) .. " -e 'print(2)' </dev/null")
    os.remove(init)
    assert.are.equal('from file\n2\n', out)
  end)

  describe('REPL through a pipe', function()
    it('prints expressions, hides results after ;, handles multi-line input', function()
      local input = '1+1\nx = 5;\nx\nfunction f()\nreturn 7\nend\nf()\n'
      local out, rc = run('-i', { stdin = input })
      assert.are.equal(0, rc)
      local got = repl_output(out)
      assert.is_truthy(got[1]:match('^lutorch %d'), got[1]) -- -i implies -v
      assert.are.same({ '2', '5', '7' }, { got[2], got[3], got[4] })
      assert.are.equal(4, #got)
    end)

    it('prints the prompts, > and >> for continuation lines', function()
      local out = run('-i', { stdin = 'if true then\nprint(1)\nend\n' })
      local l = lines(out)
      assert.are.equal('> >> >> 1', l[2])
      assert.are.equal('> ', l[3])
    end)

    it('suppresses the value of an expression ending in ;', function()
      local out = run('-i', { stdin = 'torch.zeros ~= nil;\n"shown"\n42;\n' })
      local got = repl_output(out)
      assert.are.same({ 'shown' }, { table.unpack(got, 2) })
    end)

    it('prints several results separated by tabs, with tostring', function()
      local input = '1, "a", nil, true\nsetmetatable({}, {__tostring = function() return "OBJ" end})\n'
      local got = repl_output(run('-i', { stdin = input }))
      assert.are.same({ '1\ta\tnil\ttrue', 'OBJ' }, { got[2], got[3] })
    end)

    it('prints a tensor through its __tostring', function()
      local out, rc = run('-i', { stdin = 't = torch.zeros(3)\nt\n' })
      assert.are.equal(0, rc)
      local direct = run("-e 'io.write(tostring(torch.zeros(3)))'")
      assert.is_truthy(#direct > 0)
      assert.is_falsy(direct:match('^userdata: '), direct)
      local body = out:gsub('^[^\n]*\n', '', 1) -- the version line
      assert.are.equal('> > ' .. direct .. '\n> \n', body)
    end)

    it('accepts a multi-line expression and the =expr shorthand', function()
      local got = repl_output(run('-i', { stdin = '{\n1,\n2\n}\n=10\n#{1,2,3}\n' }))
      assert.is_truthy(got[2]:match('^table: '), got[2])
      assert.are.same({ '10', '3' }, { got[3], got[4] })
    end)

    it('keeps going after an error and reports it on stderr', function()
      local input = 'error("oops")\nnil + 1\n"still here"\nx = = 1\n3*3\n'
      local out, err, rc = run_split('-i', input)
      assert.are.equal(0, rc)
      local got = repl_output(out)
      assert.are.same({ 'still here', '9' }, { got[2], got[3] })
      assert.is_truthy(err:find('stdin:1: oops', 1, true), err)
      assert.is_truthy(err:find('stack traceback:', 1, true), err)
      assert.is_truthy(err:find('attempt to perform arithmetic', 1, true), err)
      assert.is_truthy(err:find("stdin:1: unexpected symbol near '='", 1, true), err)
      assert.is_falsy(err:find('lutorch:', 1, true), err) -- no program name in the REPL
    end)

    it('ends the session at exit, quit, exit() or quit() alone, unless the script defined them', function()
      for _, word in ipairs { 'exit', 'quit', 'exit()', '  quit() ;' } do
        local got = repl_output(run('-i', { stdin = '1+1\n' .. word .. '\n"not reached"\n' }))
        assert.are.same({ '2' }, { table.unpack(got, 2) }, word)
      end
      -- a global of that name, or exit used in an expression, is Lua as usual
      local got = repl_output(run('-i', { stdin = 'function exit() return "mine" end\nexit()\nquit\n"not reached"\n' }))
      assert.are.same({ 'mine' }, { table.unpack(got, 2) })
      local _, err = run_split('-i', 'exit(1)\n"after"\n')
      assert.is_truthy(err:find("global 'exit'", 1, true), err)
    end)

    it('reports an incomplete chunk at end of input', function()
      local out, err, rc = run_split('-i', 'function g()\n')
      assert.are.equal(0, rc)
      assert.is_truthy(err:find("'end' expected", 1, true), err)
      assert.are.equal(1, #repl_output(out))
    end)

    it('enters the REPL after a script with -i and keeps its globals', function()
      local script = write_temp('answer = 41\n')
      local got = repl_output(run('-i ' .. shell_quote(script), { stdin = 'answer + 1\n' }))
      os.remove(script)
      assert.are.same({ '42' }, { got[2] })
    end)

    it('SIGINT interrupts a running chunk and the session goes on', function()
      -- the loop ends by itself after 20 s, so a missed signal cannot hang
      local loop = 'local t0 = os.time() while os.time() - t0 < 20 do end'
      local out, rc = sh('(echo ' .. shell_quote(loop) .. '; sleep 2; echo \'"after"\') | '
        .. shell_quote(BIN) .. ' -i 2>&1 & sleep 1; kill -INT $!; wait $!')
      assert.are.equal(0, rc)
      assert.is_truthy(out:find('interrupted!', 1, true), out)
      assert.is_truthy(out:find('\n> after\n', 1, true), out)
    end)

    it('honours _PROMPT and _PROMPT2', function()
      local out = run('-i', { stdin = '_PROMPT = "lt> "; _PROMPT2 = "..> "\ndo\nend\n' })
      local l = lines(out)
      assert.are.equal('> lt> ..> lt> ', l[2])
    end)
  end)
end)
