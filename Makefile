# lutorch: `make` builds build/lutorch (the interpreter) and build/torch.so (the Lua module);
# `make test` runs every test, `make demo` the demo, `make bench` the benchmarks beside PyTorch.
# Options: SANITIZE=1 (AddressSanitizer + UBSan, in build/san), NATIVE=0 (no -march=native),
# CUDA=1 (the CUDA backend, in build/cuda: kernels/cuda/*.cu by nvcc, the CUDA runtime and cuBLAS).

SHELL := /bin/bash
CC ?= gcc
NATIVE ?= 1
PREFIX ?= /usr/local
LUA_INC ?= /usr/include/lua5.4

ifeq ($(SANITIZE),1)
  BUILD ?= build/san$(if $(filter 1,$(CUDA)),-cuda)
  OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDSAN := -fsanitize=address,undefined
  WERROR :=   # the normal build enforces warnings; -O1 only adds false positives
else
  BUILD ?= build$(if $(filter 1,$(CUDA)),/cuda)
  OPT := -O2 -g -fvect-cost-model=dynamic  # -O2's cheap model leaves kernel loops scalar
  LDSAN :=
  WERROR := -Werror
endif
ifeq ($(NATIVE),1)
  OPT += -march=native
endif

CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) -fopenmp -fPIC $(OPT) \
          -I. -Icore -Ikernels -I$(LUA_INC) -MMD -MP
LDLIBS := -llua5.4 -lreadline -lz -ldl -lm -lpthread
LDFLAGS := -fopenmp $(LDSAN)

CORE_SRC := $(wildcard core/*.c) $(wildcard kernels/cpu/*.c)
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
# when mpicc exists, else they compile to stubs that say the backend is not available. NCCL is
# built in the CUDA build where the toolkit ships nccl.h.
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
  LDLIBS += $(MPI_LIBS)
endif
$(BUILD)/obj/core/comm_mpi.o $(BUILD)/obj/core/comm_nccl.o: CFLAGS += $(MPI_CFLAGS)

BIN_OBJ := $(BUILD)/obj/bindings/main.o $(BUILD)/obj/bindings/repl.o
C_TESTS := $(patsubst spec/c/%.c,$(BUILD)/test/%,$(wildcard spec/c/*.c))

DEPS := lua5.4 liblua5.4-dev lua-busted libopenblas-dev libreadline-dev zlib1g-dev dataset-fashion-mnist \
        libopenmpi-dev openmpi-bin

.PHONY: all deps build test demo bench clean install uninstall c-tests fuzz

all: deps
	@$(MAKE) --no-print-directory build

build: $(BUILD)/lutorch $(BUILD)/torch.so

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
	@$(CC) $(LDFLAGS) -shared $^ -lz -ldl -lm -lpthread $(CUDA_LIBS) $(MPI_LIBS) -o $@

$(BUILD)/test/%: spec/c/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "CC $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) $< $(filter-out $(BUILD)/obj/bindings/%,$(LIB_OBJ)) $(LDLIBS) -o $@

c-tests: $(C_TESTS)

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

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
