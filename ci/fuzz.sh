#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang-14, ASan and UBSan in build-fuzz/ and runs
# each for SECONDS (default 60) from seed corpora made of the bundled fixtures. Crashing inputs land
# in build-fuzz/findings/; exits 1 when there is any. Usage: bash ci/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if ! command -v clang++-14 > /dev/null || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang-14 libclang-rt-14-dev > /dev/null
fi
all=(safetensors_header checkpoint_index config decoder_stack step_record golden suite prompt_set
     vllm_metrics sglang_requests measured_tau)
targets=(${FUZZ_TARGETS:-${all[@]}})  # FUZZ_TARGETS="a b" runs a subset
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DDRAFTGATE_FUZZ=ON -DDRAFTGATE_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

corpus=build-fuzz/corpus
rm -rf "$corpus" && mkdir -p "$corpus" build-fuzz/findings
for t in "${all[@]}"; do mkdir -p "$corpus/$t"; done
# safetensors headers: [8-byte data size][header JSON] cut from every bundled safetensors file.
for f in fixtures/trained/*/model.safetensors fixtures/trained/step-records/*.safetensors; do
  len=$(od -An -t u8 -N8 "$f" | tr -d ' ')
  data=$(( $(stat -c %s "$f") - 8 - len ))
  out="$corpus/safetensors_header/$(echo "$f" | tr / _)"
  printf "$(printf '\\x%02x' $((data & 255)) $((data >> 8 & 255)) $((data >> 16 & 255)) \
    $((data >> 24 & 255)) $((data >> 32 & 255)) $((data >> 40 & 255)) $((data >> 48 & 255)) \
    $((data >> 56 & 255)))" > "$out"
  { tail -c +9 "$f" | head -c "$len" >> "$out"; } || true  # head closes the pipe early
done
for f in fixtures/real-layouts/*/model.safetensors.index.json; do
  cp "$f" "$corpus/checkpoint_index/$(echo "$f" | tr / _)"
  grep -o '^ *"[^"]*": "' "$f" | sed 's/^ *"//; s/": "$//' > "$corpus/decoder_stack/$(echo "$f" | tr / _)"
done
for f in fixtures/real-layouts/*/config.json fixtures/trained/*/config.json; do
  cp "$f" "$corpus/config/$(echo "$f" | tr / _)"
done
cp fixtures/trained/step-records/*.safetensors "$corpus/step_record/"
cp golden/*.json "$corpus/golden/"
cp fixtures/suites/*.json "$corpus/suite/"
cp fixtures/trained/prompts/*.jsonl "$corpus/prompt_set/"
# Serving-engine outputs written in the engines' formats (tests/fuzz/seeds/).
for d in tests/fuzz/seeds/*/; do cp "$d"* "$corpus/$(basename "$d")/"; done
# Inputs of past findings (fixed) stay in the seeds.
for d in tests/fuzz/regressions/*/; do cp "$d"* "$corpus/$(basename "$d")/"; done

status=0
printf '%-20s %12s %10s %s\n' target executions corpus result
for t in "${targets[@]}"; do
  log=build-fuzz/fuzz_$t.log
  if ./build-fuzz/fuzz/fuzz_"$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
      -rss_limit_mb=4096 -artifact_prefix="build-fuzz/findings/$t-" -print_final_stats=1 \
      "$corpus/$t" > "$log" 2>&1; then
    result=clean
  else
    result="FINDING (see $log)"
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  size=$(ls "$corpus/$t" | wc -l)
  printf '%-20s %12s %10s %s\n' "$t" "$execs" "$size" "$result"
done
exit $status
