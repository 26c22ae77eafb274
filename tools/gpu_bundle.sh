#!/usr/bin/env bash
# Packs what the specs and benchmarks need on a GPU machine that has the CUDA driver but neither Lua
# nor busted nor OpenBLAS, into .gpu/ (ignored by git): the CUDA build (make CUDA=1 first), Lua 5.4's
# library, OpenBLAS with its Fortran runtime, busted and its modules, and tools/gpu_check.sh. On that
# machine, from a copy of the repository holding .gpu/: `bash tools/gpu_check.sh` (bench + every spec
# file), `bash tools/gpu_check.sh specs` (the specs alone). Specs needing what the bundle leaves out
# fail there for that reason: the Fashion-MNIST files, `make` (embed_spec), `env -i` runs (the
# interpreter's library path) and mpirun where the machine has none.
set -eu
[ -x build/cuda/lutorch ] || { echo "gpu_bundle: build/cuda/lutorch missing: run make CUDA=1 first" >&2; exit 1; }
lib=/usr/lib/$(gcc -print-multiarch)
kit=$(mktemp -d)
trap 'rm -rf "$kit"' EXIT
mkdir -p "$kit/lib" "$kit/share" "$kit/clib" "$kit/bin" .gpu
cp -L $lib/libopenblas.so.0 $lib/liblua5.4.so.0 $lib/libgfortran.so.5 $lib/libquadmath.so.0 "$kit/lib/"
cp -rL /usr/share/lua/5.4/. "$kit/share/"
cp -rL $lib/lua/5.4/. "$kit/clib/"
cp /usr/bin/busted /usr/bin/lua5.4 "$kit/bin/"
tar cJf .gpu/kit.tar.xz -C "$kit" .
tar cJf .gpu/build.tar.xz -C build/cuda lutorch torch.so $(cd build/cuda && ls lutorch_mpi.so 2>/dev/null)
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
ls -la .gpu
