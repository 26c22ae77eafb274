#!/usr/bin/env bash
# Runs the C unit tests and the busted specs against $BUILD (default build), and ends with one
# line `N passed, N failed` summing both.
set -u
BUILD=${BUILD:-build}
# out-of-memory is an error the specs test, not a sanitizer abort
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1}
# idle OpenMP workers spinning after each parallel kernel slow a loaded 2-core machine down
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
passed=0
failed=0
for t in "$BUILD"/test/*; do
  [ -x "$t" ] || continue
  out=$("$t" 2>&1)
  rc=$?
  line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  if [ -z "$line" ]; then
    printf '%s\n' "$out" | tail -n 20
    echo "$t: no result line (exit $rc)"
    failed=$((failed + 1))
    continue
  fi
  p=${line%% passed*}
  f=${line#*passed, }
  f=${f%% failed*}
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" != 0 ] || [ $rc != 0 ]; then
    printf '%s\n' "$out" | grep -v '^ok' | tail -n 30
    [ "$f" = 0 ] && failed=$((failed + 1))
  fi
  echo "$t: $line"
done
# busted runs inside the lutorch interpreter, so a SANITIZE build checks the bindings too. Files are
# not insulated: insulation unloads the modules a file loaded, and a later require loads a second
# copy of them beside the first (two nn.Module classes), which no real script does.
tap=$(LUTORCH_CPU_DEVICES=2 LUTORCH_BUILD="$BUILD" LUTORCH_BIN="$BUILD/lutorch" "$BUILD/lutorch" /usr/bin/busted --no-auto-insulate --output=TAP spec 2>&1)
rc=$?
ok=$(printf '%s\n' "$tap" | grep -c '^ok ')
nok=$(printf '%s\n' "$tap" | grep -c '^not ok ')
printf '%s\n' "$tap" | grep -v '^ok ' | grep -v '^#' | head -n 200
if [ "$ok" = 0 ] && [ "$nok" = 0 ]; then
  echo "busted: no test ran (exit $rc)"
  nok=1
elif [ "$rc" != 0 ] && [ "$nok" = 0 ]; then
  # the interpreter stopped part way (a sanitizer's abort, a crash): the rest never ran
  printf '%s\n' "$tap" | tail -n 20
  echo "busted: stopped after $ok tests with exit status $rc"
  nok=1
fi
echo "busted: $ok passed, $nok failed"
passed=$((passed + ok))
failed=$((failed + nok))
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
