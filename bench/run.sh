#!/usr/bin/env bash
# Runs lutorch's benchmarks beside PyTorch's (Debian's python3-torch) in one run, and prints
# every figure with the ratio. `make bench` calls this after installing python3-torch.
set -uo pipefail
cd "$(dirname "$0")/.."
# --quick: the per-op, matrix-product, training-step, DataParallel, autocast and sequence rows only
# (about 5 minutes instead of about 40: no linalg, volumetric, DDP or Fashion-MNIST runs)
QUICK=; [ "${1:-}" = --quick ] && QUICK=1
LT=${LUTORCH_BIN:-build/lutorch}
PY=/usr/bin/python3
# glibc gives freed large blocks back to the kernel and maps fresh pages for the next, and a page
# fault costs up to ~10 us on some virtual machines (this project's, on some days): PyTorch, which
# allocates every tensor with malloc, then spends most of `c = a + b` on 1e7 floats faulting pages
# in. Both sides run with freed memory kept in the heap, PyTorch's best setting here (lutorch's
# caching allocator keeps its blocks anyway).
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() { echo "+ $*" >&2; "$@" 2>&1 | tee -a "$out" | grep -v '^RESULT' >&2; }

echo "# $(date -u +%Y-%m-%d) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

# start-up: median of 21 runs of `lutorch -e ''`, and of 3 `import torch`; the clock is bash's own
# (EPOCHREALTIME, microseconds), as `date` would add the start of a process of its own (~5 ms here)
ms() { local t0 t1; t0=${EPOCHREALTIME//[.,]/}; "$@" >/dev/null 2>&1; t1=${EPOCHREALTIME//[.,]/}; echo $(( t1 - t0 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
s=$(for _ in $(seq 21); do ms "$LT" -e ''; done | median)
echo "RESULT name=lutorch_startup value=$(awk "BEGIN{print $s/1000}") unit=ms" | tee -a "$out"
s=$(for _ in $(seq 3); do ms $PY -c 'import torch'; done | median)
echo "RESULT name=torch_startup value=$(awk "BEGIN{print $s/1000}") unit=ms" | tee -a "$out"

run "$LT" bench/overhead.lua
run $PY bench/torch_overhead.py --iters 200000 --samples 5

run "$LT" bench/ops.lua
run $PY bench/torch_ops.py --threads 2 --tag _t2
run $PY bench/torch_ops.py --threads 1 --tag _t1

run "$LT" bench/elementwise.lua
OMP_PROC_BIND=true run $PY bench/torch_elementwise.py --threads 2
sed -i 's/name=torch_elementwise_\([a-z]*\) /name=torch_elementwise_\1_t2 /' "$out"
run $PY bench/torch_elementwise.py --threads 1
sed -i 's/name=torch_elementwise_\([a-z]*\) /name=torch_elementwise_\1_t1 /' "$out"

# the cores' float32 FMA ceiling in these minutes, beside the matrix product (this machine's
# speed moves from day to day: the product's GFLOP/s read against it)
mkdir -p build && gcc -O3 -march=native -fopenmp bench/fma_peak.c -o build/fma_peak && run build/fma_peak
run "$LT" bench/mm.lua
OPENBLAS_NUM_THREADS=2 OPENBLAS_CORETYPE=SkylakeX run $PY bench/torch_mm.py --tag _skylakex
OPENBLAS_NUM_THREADS=2 run $PY bench/torch_mm.py --tag _default

# the training steps in rounds, lutorch and PyTorch's four settings in turns: this machine's speed
# drifts by up to 1.5x within minutes, so each round's ratio compares runs of the same minute; the
# table gives the medians over rounds (LUTORCH_BENCH_TRAIN_ROUNDS, 3)
TRAIN_ROUNDS=${LUTORCH_BENCH_TRAIN_ROUNDS:-3}
for r in $(seq "$TRAIN_ROUNDS"); do
  run "$LT" bench/train.lua --tag _r$r
  run $PY bench/torch_train.py --threads 2 --tag _t2_r$r
  run $PY bench/torch_train.py --threads 1 --tag _t1_r$r
  OPENBLAS_CORETYPE=SkylakeX run $PY bench/torch_train.py --threads 2 --tag _skx_t2_r$r
  OPENBLAS_CORETYPE=SkylakeX run $PY bench/torch_train.py --threads 1 --tag _skx_t1_r$r
done

if [ -z "$QUICK" ]; then
# torch.linalg: LAPACK's factorisations and the LU solves, one matrix and batches of small ones
run "$LT" bench/linalg.lua
run $PY bench/torch_linalg.py --threads 2 --tag _t2
run $PY bench/torch_linalg.py --threads 1 --tag _t1
fi

# DataParallel over the CPU devices, beside PyTorch's plain step (its DataParallel does not split
# work between CPU threads)
run "$LT" bench/data_parallel.lua
run $PY bench/torch_data_parallel.py --threads 2 --tag _t2
run $PY bench/torch_data_parallel.py --threads 1 --tag _t1

# bfloat16 autocast against float32: the MLP step, lutorch and PyTorch
run "$LT" bench/amp.lua
run $PY bench/torch_amp.py --threads 2 --tag _t2

# sequence models: a 2-layer LSTM and a 2-layer Transformer encoder training step
run "$LT" bench/sequence.lua
run $PY bench/torch_sequence.py --threads 2 --tag _t2
run $PY bench/torch_sequence.py --threads 1 --tag _t1

if [ -z "$QUICK" ]; then
# volumetric layers: Conv3d 8->16 3x3x3 on 4x8x16^3, MaxPool3d(2)
run "$LT" bench/conv3d.lua
run $PY bench/torch_conv3d.py --threads 2 --tag _t2
run $PY bench/torch_conv3d.py --threads 1 --tag _t1

# DistributedDataParallel: 2 ranks under mpirun (one core each) against one process on one core
command -v mpirun >/dev/null && run "$LT" bench/ddp.lua

# Fashion-MNIST: PyTorch's reference scripts (../shared/bench, copied to bench/reference) at their
# settings, under the same OpenBLAS kernels as lutorch (SkylakeX) and Debian's default; peak memory
# of the MLP runs from /usr/bin/time
rss() { local name=$1; shift; /usr/bin/time -f "RESULT name=${name}_peak_rss value=%M unit=KiB" "$@"; }
run rss lutorch_mlp "$LT" bench/fashion_mnist.lua mlp --epochs 5
REF=bench/reference
OPENBLAS_CORETYPE=SkylakeX run rss torch_mlp $PY $REF/torch_mlp.py --epochs 5 --threads 1 --tag _skx_t1
OPENBLAS_CORETYPE=SkylakeX OMP_PROC_BIND=true run $PY $REF/torch_mlp.py --epochs 5 --threads 2 --tag _skx_t2
run $PY $REF/torch_mlp.py --epochs 5 --threads 1 --tag _default_t1
run "$LT" bench/fashion_mnist.lua cnn --epochs 2
OPENBLAS_CORETYPE=SkylakeX OMP_PROC_BIND=true run $PY $REF/torch_cnn.py --epochs 2 --threads 2 --tag _skx_t2
OPENBLAS_CORETYPE=SkylakeX run $PY $REF/torch_cnn.py --epochs 0 --threads 1 --tag _skx_t1

# the CNN demo fed by two DataLoader workers that flip each sample in Lua (examples/
# fashion_mnist_data.lua): the share of the epoch the training loop waits for data (target < 10%)
demo_out=$(mktemp -d)
run "$LT" examples/fashion_mnist_cnn.lua --epochs 1 --workers 2 --augment --quiet --out "$demo_out"
rm -rf "$demo_out"
w=$(grep -oE '[0-9.]+% waiting for data' "$out" | head -n 1 | grep -oE '^[0-9.]+')
[ -n "$w" ] && echo "RESULT name=lutorch_cnn_loader_wait value=$w unit=%" | tee -a "$out"

# test accuracy over seeds (one seed says little: the same recipe moves by about 0.01 from seed to
# seed, for both): seed 0 ran above; seeds 1-4 for the MLP, 1-2 for the CNN, on both sides
for s in 1 2 3 4; do
  run "$LT" bench/fashion_mnist.lua mlp --epochs 5 --seed $s
  OPENBLAS_CORETYPE=SkylakeX run $PY $REF/torch_mlp.py --epochs 5 --threads 1 --seed $s --tag _seed$s
done
for s in 1 2; do
  run "$LT" bench/fashion_mnist.lua cnn --epochs 2 --seed $s
  OPENBLAS_CORETYPE=SkylakeX OMP_PROC_BIND=true run $PY $REF/torch_cnn.py --epochs 2 --time-steps 20 --threads 2 --seed $s --tag _seed$s
done
fi
mean() { local sum=0 k=0 v; for n in "$@"; do v=$(val "$n"); [ -z "$v" ] && continue; sum=$(awk "BEGIN{print $sum+$v}"); k=$((k + 1)); done
  [ $k -gt 0 ] && awk "BEGIN{printf \"%.4f\", $sum/$k}"; }

# the table: lutorch's figure, PyTorch's (at its best setting where there are several), ratio
val() { grep -E "^RESULT name=$1 " "$out" | head -n 1 | sed -E 's/.* value=([^ ]+) .*/\1/'; }
rounds() { grep -E "^RESULT name=$1 " "$out" | head -n 1 | sed -nE 's/.* rounds=([^ ]+).*/(rounds \1)/p'; }
best() { # smallest (time) or largest (rate) of the named results
  local mode=$1; shift; local b=""
  for n in "$@"; do v=$(val "$n"); [ -z "$v" ] && continue
    if [ -z "$b" ]; then b=$v; elif [ "$mode" = min ]; then b=$(awk "BEGIN{print ($v<$b)?$v:$b}"); else b=$(awk "BEGIN{print ($v>$b)?$v:$b}"); fi
  done; echo "$b"; }
printf '\n%-34s %12s %12s %10s  %s\n' "benchmark" "lutorch" "PyTorch" "ratio" "(ratio > 1: lutorch is better)"
row() { # name unit lower_is_better lutorch torch
  local r="n/a"
  if [ -n "$4" ] && [ -n "$5" ]; then
    if [ "$3" = 1 ]; then r=$(awk "BEGIN{printf \"%.2fx\", $5/$4}"); else r=$(awk "BEGIN{printf \"%.2fx\", $4/$5}"); fi
  fi
  printf '%-34s %12s %12s %10s\n' "$1 ($2)" "$4" "$5" "$r"; }
row "start-up" ms 1 "$(val lutorch_startup)" "$(val torch_startup)"
row "c = a + b, 16 floats" ns 1 "$(val lutorch_overhead_add_out)" "$(val torch_overhead_add_out)"
row "a:add_(b), 16 floats" ns 1 "$(val lutorch_overhead_add_inplace)" "$(val torch_overhead_add_inplace)"
row "Linear(16,16) train step" ns 1 "$(val lutorch_overhead_linear_step)" "$(val torch_overhead_linear_step)"
row "cross_entropy 256x10 fwd+bwd" ns 1 "$(val lutorch_overhead_cross_entropy)" "$(val torch_overhead_cross_entropy)"
# common ops one at a time (bench/ops.lua): PyTorch's figure is its better of 1 and 2 threads
for op in $(grep -oE '^RESULT name=lutorch_ops_[a-z0-9_]+' "$out" | sed 's/^RESULT name=lutorch_ops_//'); do
  row "$op" us 1 "$(val lutorch_ops_$op)" "$(best min torch_ops_${op}_t1 torch_ops_${op}_t2)"
done
for op in add exp sum; do
  row "$op, 1e7 floats" ms 1 "$(val lutorch_elementwise_$op)" "$(best min torch_elementwise_${op}_t1 torch_elementwise_${op}_t2)"
done
for n in 256 1024 2048; do
  row "mm n=$n (torch SkylakeX)" GFLOP/s 0 "$(val lutorch_mm_n$n)" "$(val torch_mm_skylakex_n$n)"
  row "mm n=$n (torch default)" GFLOP/s 0 "$(val lutorch_mm_n$n)" "$(val torch_mm_default_n$n)"
done
share() { [ -n "$1" ] && [ -n "$2" ] && awk "BEGIN{printf \"mm n=1024 at %.0f%%\", 100*$1/$2}"; }
printf '%-34s %12s %12s %10s\n' "  FMA ceiling, all cores (GFLOP/s)" "$(val machine_fma_peak)" "" \
  "$(share "$(val lutorch_mm_n1024)" "$(val machine_fma_peak)")"
# a training-step row from the rounds: the medians of lutorch's figures and of PyTorch's best
# setting's, and the median of the rounds' ratios (each round's best PyTorch over lutorch), listed
round_row() { # label case
  local l=() t=() q=() r lv tv
  for r in $(seq "$TRAIN_ROUNDS"); do
    lv=$(val lutorch_$2_r$r); tv=$(best min torch_$2_t1_r$r torch_$2_t2_r$r torch_$2_skx_t1_r$r torch_$2_skx_t2_r$r)
    [ -z "$lv" ] || [ -z "$tv" ] && continue
    l+=("$lv"); t+=("$tv"); q+=("$(awk "BEGIN{printf \"%.2f\", $tv/$lv}")")
  done
  if [ ${#q[@]} -eq 0 ]; then row "$1" ms 1 "" ""; return; fi
  local list; list=$(IFS=,; echo "${q[*]}")
  printf '%-34s %12s %12s %10s  %s\n' "$1 (ms)" "$(printf '%s\n' "${l[@]}" | median)" \
    "$(printf '%s\n' "${t[@]}" | median)" "$(printf '%s\n' "${q[@]}" | median)x" "(rounds $list)"
}
round_row "MLP 784-512-256-10 step, batch 64" mlp_step
round_row "Conv2d 32->64 3x3 fwd+bwd, 64x14x14" conv_fwd_bwd
for c in inv_256 solve_256x16 det_1000x8x8 cholesky_256 cholesky_1000x8x8 qr_512x256 eigh_256 eigh_1000x8x8 svd_256 svd_1000x8x8; do
  row "linalg $c" ms 1 "$(val lutorch_linalg_$c)" "$(best min torch_linalg_${c}_t1 torch_linalg_${c}_t2)"
done
for c in conv3d_fwd conv3d_fwd_bwd max_pool3d_fwd_bwd; do
  row "$c, 4x8x16^3" ms 1 "$(val lutorch_$c)" "$(best min torch_${c}_t1 torch_${c}_t2)"
done
row "DataParallel MLP step, batch 256" ms 1 "$(val lutorch_dp_mlp_step_data_parallel)" "$(best min torch_dp_mlp_step_t1 torch_dp_mlp_step_t2)"
printf '%-34s %12s %12s %10s  %s\n' "  DP vs one device on one core" "$(val lutorch_dp_speedup_vs_one_core)x" "" "(target 1.6x)" "$(rounds lutorch_dp_speedup_vs_one_core)"
printf '%-34s %12s %12s %10s  %s\n' "  DP vs one device on all cores" "$(val lutorch_dp_speedup_vs_all_cores)x" "" "(target 1x)" "$(rounds lutorch_dp_speedup_vs_all_cores)"
row "MLP step bf16 autocast, batch 64" ms 1 "$(val lutorch_mlp_step_bf16_autocast)" "$(val torch_mlp_step_bf16_autocast_t2)"
printf '%-34s %12s %12s %10s\n' "  bf16 autocast vs float32 step" "$(val lutorch_mlp_bf16_autocast_speedup)x" "$(val torch_mlp_bf16_autocast_speedup_t2)x" "(target >= 1x)"
row "LSTM 2x128 step, batch 32 x 32" ms 1 "$(val lutorch_lstm_step)" "$(best min torch_lstm_step_t1 torch_lstm_step_t2)"
row "Transformer 2x128 step, 32 x 32" ms 1 "$(val lutorch_transformer_step)" "$(best min torch_transformer_step_t1 torch_transformer_step_t2)"
printf '%-34s %12s %12s %10s  %s\n' "DDP 2 ranks vs 1 rank, MLP b128" "$(val ddp_mlp_b128_speedup_2ranks)x" "" "(target 1.7x)" "$(rounds ddp_mlp_b128_speedup_2ranks)"
printf '%-34s %12s %12s %10s\n' "  communication per step (exposed)" "$(val ddp_mlp_b128_comm_per_step) ms" "$(val ddp_mlp_b128_comm_exposed_per_step) ms" ""
row "Fashion-MNIST MLP epoch" s 1 "$(val lutorch_mlp_epoch)" "$(best min torch_mlp_epoch_skx_t1 torch_mlp_epoch_skx_t2 torch_mlp_epoch_default_t1)"
row "Fashion-MNIST MLP peak memory" KiB 1 "$(val lutorch_mlp_peak_rss)" "$(val torch_mlp_peak_rss)"
row "Fashion-MNIST MLP test accuracy" fraction 0 "$(val lutorch_mlp_test_acc)" "$(val torch_mlp_test_acc_skx_t1)"
row "Fashion-MNIST CNN epoch (extrapolated)" s 1 "$(val lutorch_cnn_epoch_extrap)" "$(best min torch_cnn_epoch_extrap_skx_t2 torch_cnn_epoch_extrap_skx_t1)"
printf '%-34s %12s %12s %10s\n' "  CNN, 2 workers + Lua transform" "$(val lutorch_cnn_loader_wait)%" "" "(target < 10% waiting)"
row "Fashion-MNIST CNN test accuracy" fraction 0 "$(val lutorch_cnn_test_acc)" "$(val torch_cnn_test_acc_skx_t2)"
row "  MLP accuracy, mean of seeds 0-4" fraction 0 "$(mean lutorch_mlp_test_acc lutorch_mlp_test_acc_seed{1,2,3,4})" \
  "$(mean torch_mlp_test_acc_skx_t1 torch_mlp_test_acc_seed{1,2,3,4})"
row "  CNN accuracy, mean of seeds 0-2" fraction 0 "$(mean lutorch_cnn_test_acc lutorch_cnn_test_acc_seed{1,2})" \
  "$(mean torch_cnn_test_acc_skx_t2 torch_cnn_test_acc_seed{1,2})"
