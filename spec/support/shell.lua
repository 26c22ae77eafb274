-- What the specs that run programs share: quoting for the shell, running a command line with
-- stdin from a string and stdout and stderr apart, and reading the REPL's output through a pipe.
local M = {}

-- s quoted for a POSIX shell
function M.quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- a new temporary file holding text; its name
function M.write_temp(text)
  local name = os.tmpname()
  local f = assert(io.open(name, 'w'))
  f:write(text)
  f:close()
  return name
end

-- runs the shell command line cmd with stdin from the string `stdin` (or /dev/null); returns
-- stdout, stderr and the exit status
function M.run(cmd, stdin)
  local errf = os.tmpname()
  local inf = stdin and M.write_temp(stdin)
  local p = assert(io.popen('(' .. cmd .. ') 2>' .. M.quote(errf) .. ' <' .. M.quote(inf or '/dev/null')
    .. '; echo "rc=$?"'))
  local out = p:read('a')
  p:close()
  local f = assert(io.open(errf))
  local err = f:read('a')
  f:close()
  os.remove(errf)
  if inf then os.remove(inf) end
  local body, rc = out:match('^(.-)rc=(%d+)\n?$')
  return body, err, tonumber(rc)
end

-- The REPL writes its prompts ("> ", ">> ") to stdout even when stdin is a pipe (as lua.c does
-- without readline) and does not echo the input, so a result appears right after the prompt(s)
-- of the line that produced it. The non-empty lines of out with the prompts removed; without the
-- version line `lutorch x.y.z (Lua 5.4.n)` unless keep_banner.
function M.repl_lines(out, keep_banner)
  local t = {}
  for l in out:gmatch('([^\n]*)\n') do
    local rest = l
    repeat
      local before = rest
      rest = rest:gsub('^>>? ', '', 1)
    until rest == before
    if rest ~= '' and (keep_banner or not rest:match('^lutorch %d+%.%d+%.%d+ %(Lua')) then t[#t + 1] = rest end
  end
  return t
end

return M
