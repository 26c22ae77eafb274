-- LuaRocks description of the torch module (torch.so for Lua 5.4, with the Lua modules built in).
-- In a checkout: `luarocks make lutorch-scm-1.rockspec` builds with the Makefile and installs
-- torch.so in the rocks tree's C module directory and the Lua sources in its Lua directory.
-- source.url is the repository to fetch for `luarocks install`: set it to the published one.
rockspec_format = "3.0"
package = "lutorch"
version = "scm-1"
source = {
  url = "git+https://example.invalid/lutorch.git", -- placeholder: the public repository is not fixed yet
}
description = {
  summary = "A training environment for Lua 5.4 with PyTorch's semantics",
  detailed = [[
Tensors (CPU, and CUDA in a CUDA build), automatic differentiation, torch.nn layers and losses,
optimizers, data loaders and safetensors checkpoints, from `require 'torch'`. The build also makes
the lutorch interpreter and the embedding library (see `make install` for those).]],
  -- license: the project has not declared one yet (no LICENSE file)
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
external_dependencies = {
  -- BLAS is found at run time (OpenBLAS by dlopen); zlib is linked
  ZLIB = { header = "zlib.h" },
}
build = {
  type = "make",
  build_target = "build",
  build_variables = {
    CC = "$(CC)",
    LUA_INC = "$(LUA_INCDIR)",
  },
  install_target = "install-module",
  install_variables = {
    LUA_CMOD_DIR = "$(LIBDIR)",
    LUA_LMOD_DIR = "$(LUADIR)",
  },
  copy_directories = { "doc", "examples" },
}
