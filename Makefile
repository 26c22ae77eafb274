# lutorch: `make` builds build/lutorch (the interpreter) and build/torch.so (the Lua module);
# `make test` runs every test, `make demo` the demo, `make bench` the benchmarks beside PyTorch.
# Options: SANITIZE=1 (AddressSanitizer + UBSan, in build/san), TSAN=1 (ThreadSanitizer, in build/tsan;
# make tsan-test), NATIVE=0 (no -march=native),
# CUDA=1 (the CUDA backend, in build/cuda: kernels/cuda/*.cu by nvcc, the CUDA runtime and cuBLAS).

SHELL := /bin/bash
.DEFAULT_GOAL := all
CC ?= gcc
NATIVE ?= 1
PREFIX ?= /usr/local
LUA_INC ?= /usr/include/lua5.4

ifeq ($(SANITIZE),1)
  BUILD ?= build/san$(if $(filter 1,$(CUDA)),-cuda)
  OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDSAN := -fsanitize=address,undefined
  WERROR :=   # the normal build enforces warnings; -O1 only adds false positives
else ifeq ($(TSAN),1)
  # ThreadSanitizer, for the embedding API's two-states test (make tsan-test), in build/tsan
  BUILD ?= build/tsan
  OPT := -O1 -g -fsanitize=thread -fno-omit-frame-pointer
  LDSAN := -fsanitize=thread
  WERROR :=
else
  BUILD ?= build$(if $(filter 1,$(CUDA)),/cuda)
  OPT := -O2 -g -fvect-cost-model=dynamic  # -O2's cheap model leaves kernel loops scalar
  LDSAN :=
  WERROR := -Werror
endif
ifeq ($(NATIVE),1)
  OPT += -march=native
endif

CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) -fopenmp -fPIC -fno-math-errno $(OPT) \
          -I. -Icore -Ikernels -I$(LUA_INC) -MMD -MP
LDLIBS := -llua5.4 -lz -ldl -lm -lpthread
LDFLAGS := -fopenmp $(LDSAN)

# the distributed plugin's sources (core/comm_plugin.h): built into lutorch_mpi.so, not the core;
# core/comm_shm.c (no MPI in it) goes into both, the core's copy for spec/c/test_comm_shm.c
PLUGIN_ONLY := core/comm_mpi.c core/comm_nccl.c core/comm_shim.c
PLUGIN_SRC := $(PLUGIN_ONLY) core/comm_shm.c
CORE_SRC := $(filter-out $(PLUGIN_ONLY),$(wildcard core/*.c)) $(wildcard kernels/cpu/*.c)
BIND_SRC := $(filter-out bindings/main.c bindings/repl.c,$(wildcard bindings/*.c))
LUA_SRC := $(sort $(shell find lua -name '*.lua'))
LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(CORE_SRC) $(BIND_SRC)) $(BUILD)/obj/lua_modules.o

# The CUDA backend: without CUDA=1 nothing of CUDA is included or linked (core/cuda_*.c compile
# to stubs). Machine code for sm_80 and sm_90 plus compute_90 PTX for newer GPUs.
comma := ,
ifeq ($(CUDA),1)
  CUDA_HOME ?= /usr/local/cuda
  NVCC ?= $(CUDA_HOME)/bin/nvcc
  CFLAGS += -DLT_WITH_CUDA -I$(CUDA_HOME)/include
  NVCCFLAGS := -std=c++17 -O3 -DLT_WITH_CUDA -I. -Icore -Ikernels -Xcompiler -fPIC,-Wall,-Wextra$(if $(WERROR),$(comma)-Werror) \
               -Werror all-warnings -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90 -MMD -MP
  CU_SRC := $(wildcard kernels/cuda/*.cu)
  LIB_OBJ += $(patsubst %.cu,$(BUILD)/obj/%.o,$(CU_SRC))
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++
endif
# Distributed: core/comm_mpi.c (and comm_nccl.c, which needs MPI for its id) with Open MPI's flags
# in the plugin $(BUILD)/lutorch_mpi.so when mpicc exists (the core loads it on first use: linking
# Open MPI would cost every start-up ~4 ms); without it the MPI backend says it is not available.
# NCCL is built in the CUDA build where the toolkit ships nccl.h.
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
  MPI_CFLAGS := -DLT_WITH_MPI $(shell $(MPICC) --showme:compile)
  MPI_LIBS := $(shell $(MPICC) --showme:link)
  ifeq ($(CUDA),1)
    ifneq ($(wildcard $(CUDA_HOME)/include/nccl.h),)
      MPI_CFLAGS += -DLT_WITH_NCCL
      MPI_LIBS += -lnccl
    endif
  endif
  PLUGIN := $(BUILD)/lutorch_mpi.so
  $(BUILD)/obj/core/comm_plugin.o: CFLAGS += -DLT_WITH_MPI
endif
PLUGIN_OBJ := $(patsubst %.c,$(BUILD)/obj/plugin/%.o,$(PLUGIN_SRC))

$(BUILD)/obj/plugin/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $< (plugin)"
	@$(CC) $(CFLAGS) $(MPI_CFLAGS) -fvisibility=hidden -c $< -o $@

# -z defs: every symbol the plugin uses comes from its own objects, Open MPI or the C library
$(BUILD)/lutorch_mpi.so: $(PLUGIN_OBJ)
	@echo "LD $@"
	@$(CC) $(LDFLAGS) -shared -Wl,-z,defs $^ $(MPI_LIBS) $(CUDA_LIBS) -lpthread -o $@

BIN_OBJ := $(BUILD)/obj/bindings/main.o $(BUILD)/obj/bindings/repl.o
C_TESTS := $(patsubst spec/c/%.c,$(BUILD)/test/%,$(wildcard spec/c/*.c))

DEPS := lua5.4 liblua5.4-dev lua-busted libopenblas-dev libreadline-dev zlib1g-dev dataset-fashion-mnist \
        libopenmpi-dev openmpi-bin

.PHONY: all deps build test demo bench clean install uninstall c-tests fuzz examples lib tsan-test install-module

all: deps
	@$(MAKE) --no-print-directory build

build: $(BUILD)/lutorch $(BUILD)/torch.so $(PLUGIN)

# Installs, only where missing, the Debian packages the project needs (run as root).
deps:
	@missing=""; for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	@echo "NVCC $<"
	@$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/lua_modules.c: tools/embed.lua $(LUA_SRC)
	@mkdir -p $(dir $@)
	@lua5.4 tools/embed.lua $@ $(LUA_SRC)

$(BUILD)/obj/lua_modules.o: $(BUILD)/lua_modules.c
	@mkdir -p $(dir $@)
	@$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/lutorch: $(BIN_OBJ) $(LIB_OBJ)
	@echo "LD $@"
	@$(CC) $(LDFLAGS) -rdynamic $^ $(LDLIBS) -o $@

# The module for stock lua5.4: LUA_CPATH="build/?.so;;" lua5.4 -e "require 'torch'"
$(BUILD)/torch.so: $(LIB_OBJ)
	@echo "LD $@"
	@$(CC) $(LDFLAGS) -shared $^ -lz -ldl -lm -lpthread $(CUDA_LIBS) -o $@

# The shared library for programs that embed lutorch (bindings/lutorch.h); unlike torch.so it links
# Lua itself, since its users are C programs, not the lua5.4 interpreter.
LIB_VERSION := 0.1.0
LIB_SONAME := liblutorch.so.0
lib: $(BUILD)/liblutorch.so $(PLUGIN)

$(BUILD)/liblutorch.so: $(LIB_OBJ)
	@echo "LD $@"
	@$(CC) $(LDFLAGS) -shared -Wl,-soname,$(LIB_SONAME) $^ -llua5.4 -lz -ldl -lm -lpthread $(CUDA_LIBS) -o $@
	@ln -sf liblutorch.so $(BUILD)/$(LIB_SONAME)

# examples/embed: C programs built against the shared library, as a user's program would be
examples: $(BUILD)/examples/classify

$(BUILD)/examples/%: examples/embed/%.c bindings/lutorch.h $(BUILD)/liblutorch.so
	@mkdir -p $(dir $@)
	@echo "CC $@"
	@$(CC) -std=c11 -Wall -Wextra $(WERROR) $(OPT) -Ibindings -I$(LUA_INC) $< -L$(BUILD) \
	  -Wl,-rpath,'$$ORIGIN/..' -llutorch -llua5.4 -lz $(LDSAN) -o $@

$(BUILD)/test/%: spec/c/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "CC $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) $< $(filter-out $(BUILD)/obj/bindings/%,$(LIB_OBJ)) $(LDLIBS) -o $@

# The embedding API's test uses the bindings too (the other C tests only the core).
$(BUILD)/test/embed_test: spec/c/embed_test.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "CC $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) $< $(LIB_OBJ) $(LDLIBS) -o $@

c-tests: $(C_TESTS)

# Two Lua states training on two threads at once under ThreadSanitizer (spec/c/embed_test.c).
# libgomp and OpenBLAS are not instrumented, so their own synchronisation is invisible to TSan:
# one OpenMP and one BLAS thread per state keeps the report to lutorch's code.
tsan-test:
	@$(MAKE) --no-print-directory TSAN=1 build/tsan/test/embed_test
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  build/tsan/test/embed_test threads 200

test: all
	@$(MAKE) --no-print-directory c-tests
	@BUILD=$(BUILD) bash tools/run_tests.sh

# trains the MLP on Fashion-MNIST for 3 epochs; checkpoint, CSV log and SVG plot in build/fashion_mnist_mlp
demo: all
	$(BUILD)/lutorch examples/fashion_mnist_mlp.lua --epochs 3

bench: all
	@dpkg-query -W -f='$${Status}' python3-torch 2>/dev/null | grep -q 'install ok installed' || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch >/dev/null)
	bash bench/run.sh

# libFuzzer targets (spec/fuzz/*_fuzz.c) for the file parsers, each run for FUZZ_SECONDS from the
# seeds in spec/data; clang (with libFuzzer) is installed when missing. Findings go to build/fuzz.
FUZZ_SECONDS ?= 300
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=c11 \
               -D_GNU_SOURCE -I. -Icore -Ikernels
fuzz: all
	@command -v clang >/dev/null && [ -n "$$(find /usr/lib/llvm-* -name 'libclang_rt.fuzzer-x86_64.a' 2>/dev/null)" ] || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang >/dev/null)
	@mkdir -p build/fuzz
	@set -e; for t in safetensors idx; do \
	  objs=$$(find build/obj/core build/obj/kernels -name '[a-z]*.o' ! -name $$t.o); \
	  clang $(FUZZ_CFLAGS) spec/fuzz/$${t}_fuzz.c core/$$t.c $$objs -lz -lgomp -ldl -lm -lpthread \
	    -o build/fuzz/$$t; \
	  mkdir -p build/fuzz/$$t-corpus build/fuzz/$$t-findings; \
	  echo "fuzzing $$t for $(FUZZ_SECONDS) s"; \
	  ASAN_OPTIONS=allocator_may_return_null=1 build/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    -artifact_prefix=build/fuzz/$$t-findings/ -print_final_stats=1 build/fuzz/$$t-corpus spec/data/fuzz/$$t \
	    2>&1 | grep -E '^(stat::number_of_executed_units|Done|==[0-9]+==ERROR|SUMMARY)' ; \
	  [ -z "$$(ls -A build/fuzz/$$t-findings)" ] || { echo "fuzz: $$t: crash inputs in build/fuzz/$$t-findings"; exit 1; }; \
	done

# make install PREFIX=/usr/local DESTDIR=: the interpreter, the shared library and its header, a
# pkg-config file, the module for the stock lua5.4 (torch.so in its cpath; the Lua sources in its
# path, for reading: torch.so carries them already) and the man page. Lua's directories follow
# PREFIX as lua5.4's default package.path and package.cpath do (PREFIX/share/lua/5.4,
# PREFIX/lib/lua/5.4).
LUA_VERSION := 5.4
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
LUA_CMOD_DIR ?= $(PREFIX)/lib/lua/$(LUA_VERSION)
LUA_LMOD_DIR ?= $(PREFIX)/share/lua/$(LUA_VERSION)
# lua/torch/init.lua is left out: `require 'torch'` would find it as torch/init.lua on the path,
# which Lua searches before the cpath, instead of torch.so
LUA_INSTALL := $(filter-out lua/torch/init.lua,$(LUA_SRC))
DEST := $(DESTDIR)

install: build lib
	install -d $(DEST)$(BINDIR) $(DEST)$(LIBDIR)/pkgconfig $(DEST)$(INCLUDEDIR) $(DEST)$(MANDIR)/man1
	install -m 755 $(BUILD)/lutorch $(DEST)$(BINDIR)/lutorch
	install -m 755 $(BUILD)/liblutorch.so $(DEST)$(LIBDIR)/liblutorch.so.$(LIB_VERSION)
	ln -sf liblutorch.so.$(LIB_VERSION) $(DEST)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DEST)$(LIBDIR)/liblutorch.so
	install -m 644 bindings/lutorch.h $(DEST)$(INCLUDEDIR)/lutorch.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	  -e 's|@VERSION@|$(LIB_VERSION)|g' lutorch.pc.in > $(DEST)$(LIBDIR)/pkgconfig/lutorch.pc
	chmod 644 $(DEST)$(LIBDIR)/pkgconfig/lutorch.pc
	install -m 644 doc/lutorch.1 $(DEST)$(MANDIR)/man1/lutorch.1
	$(if $(PLUGIN),install -d $(DEST)$(LIBDIR)/lutorch && install -m 755 $(PLUGIN) $(DEST)$(LIBDIR)/lutorch/lutorch_mpi.so)
	@$(MAKE) --no-print-directory install-module

# the module alone (LuaRocks' install step: lutorch-scm-1.rockspec)
install-module: $(BUILD)/torch.so $(PLUGIN)
	install -d $(DEST)$(LUA_CMOD_DIR)
	install -m 755 $(BUILD)/torch.so $(DEST)$(LUA_CMOD_DIR)/torch.so
	$(if $(PLUGIN),install -d $(DEST)$(LUA_CMOD_DIR)/lutorch && install -m 755 $(PLUGIN) $(DEST)$(LUA_CMOD_DIR)/lutorch/lutorch_mpi.so)
	@set -e; for f in $(LUA_INSTALL); do \
	  rel=$${f#lua/}; install -d $(DEST)$(LUA_LMOD_DIR)/$$(dirname $$rel); \
	  install -m 644 $$f $(DEST)$(LUA_LMOD_DIR)/$$rel; \
	done; echo "installed $(words $(LUA_INSTALL)) Lua files in $(DEST)$(LUA_LMOD_DIR)/torch"

uninstall:
	rm -f $(DEST)$(BINDIR)/lutorch $(DEST)$(LIBDIR)/liblutorch.so $(DEST)$(LIBDIR)/$(LIB_SONAME) \
	  $(DEST)$(LIBDIR)/liblutorch.so.$(LIB_VERSION) $(DEST)$(INCLUDEDIR)/lutorch.h $(DEST)$(LIBDIR)/pkgconfig/lutorch.pc \
	  $(DEST)$(MANDIR)/man1/lutorch.1 $(DEST)$(LUA_CMOD_DIR)/torch.so \
	  $(DEST)$(LIBDIR)/lutorch/lutorch_mpi.so $(DEST)$(LUA_CMOD_DIR)/lutorch/lutorch_mpi.so
	@rmdir $(DEST)$(LIBDIR)/lutorch $(DEST)$(LUA_CMOD_DIR)/lutorch 2>/dev/null || true
	rm -f $(patsubst lua/%,$(DEST)$(LUA_LMOD_DIR)/%,$(LUA_INSTALL))
	@rmdir $(sort $(dir $(patsubst lua/%,$(DEST)$(LUA_LMOD_DIR)/%,$(LUA_INSTALL)))) 2>/dev/null || true
	@rmdir $(DEST)$(LUA_LMOD_DIR)/torch 2>/dev/null || true

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
