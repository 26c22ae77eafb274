#!/usr/bin/env bash
# Run on a GPU machine from a repository copy holding the .gpu/ of tools/gpu_bundle.sh: unpacks it,
# runs bench/cuda_bench.lua and bench/torch_cuda_cnn.py (unless the first argument is `specs`), then
# every spec file, 8 at a time, against the CUDA build. Results go to $OUT (default /tmp/gpu_check):
# summary.txt (a line a file) and fail.txt (the failing files' output); the last lines printed are
# `N passed, N failed` and the failures.
set -u
OUT=${OUT:-/tmp/gpu_check}
export OUT
mkdir -p "$OUT" /tmp/kit /tmp/gpu_logs build/cuda
tar xJf .gpu/kit.tar.xz -C /tmp/kit && tar xJf .gpu/build.tar.xz -C build/cuda || exit 1
mkdir -p /usr/share/lua/5.4 /usr/lib/x86_64-linux-gnu/lua/5.4
cp -rn /tmp/kit/share/. /usr/share/lua/5.4/ 2>/dev/null
cp -rn /tmp/kit/clib/. /usr/lib/x86_64-linux-gnu/lua/5.4/ 2>/dev/null
export LD_LIBRARY_PATH=/tmp/kit/lib PATH=/tmp/kit/bin:$PATH
nvidia-smi -L
if [ "${1:-all}" != specs ]; then
  timeout 150 build/cuda/lutorch bench/cuda_bench.lua 2>&1 | tee "$OUT/cuda_bench.txt"
  timeout 60 python3 bench/torch_cuda_cnn.py 2>&1 | tee "$OUT/torch_cnn.txt"
fi
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive LUTORCH_CPU_DEVICES=2 LUTORCH_BUILD=build/cuda LUTORCH_BIN=build/cuda/lutorch
: > "$OUT/summary.txt"
ls spec/*_spec.lua | xargs -P 8 -I{} sh -c 'f={}; b=$(basename $f .lua); s=$(date +%s)
  timeout 240 build/cuda/lutorch /tmp/kit/bin/busted --no-auto-insulate --output=TAP $f > /tmp/gpu_logs/$b.log 2>&1
  echo "$b rc=$? ok=$(grep -c "^ok " /tmp/gpu_logs/$b.log) nok=$(grep -c "^not ok " /tmp/gpu_logs/$b.log) $(( $(date +%s) - s ))s" >> "$OUT/summary.txt"'
sort -o "$OUT/summary.txt" "$OUT/summary.txt"
for f in /tmp/gpu_logs/*_spec.log; do
  if grep -q '^not ok' "$f" || ! grep -q '^ok' "$f"; then echo "=== $f"; grep -v '^ok ' "$f" | head -60; fi
done > "$OUT/fail.txt"
awk '{split($3, a, "="); split($4, b, "="); o += a[2]; n += b[2]} END {print o " passed, " n " failed"}' "$OUT/summary.txt"
grep -A3 '^not ok' "$OUT/fail.txt" | cut -c1-300 | head -150
