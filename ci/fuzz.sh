#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang-14, ASan and UBSan in build-fuzz/ and runs
# each for SECONDS (default 60) from seed corpora made of the bundled fixtures. Crashing inputs land
# in build-fuzz/findings/; exits 1 when there is any. Usage: [FUZZ_JOBS=N] bash ci/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if ! command -v clang++-14 > /dev/null || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang-14 libclang-rt-14-dev > /dev/null
fi
all=(safetensors_header checkpoint_index config decoder_stack step_record golden suite prompt_set
     vllm_metrics sglang_requests vllm_requests measured_tau)
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
# Hostile seeds: nesting past the depth limit and objects of many members (with a duplicate key at
# the end), as text for the JSON targets and behind an 8-byte length for the safetensors ones.
deep() { printf '%*s' "$1" '' | tr ' ' "$2"; }
many() { printf '{'; for i in $(seq 1 "$1"); do printf '"k%d":0,' "$i"; done; printf '"k1":1}'; }
frame() { local n; n=$(wc -c < "$1"); printf "$(printf '\\x%02x' $((n & 255)) $((n >> 8 & 255)) \
  $((n >> 16 & 255)) 0 0 0 0 0)"; cat "$1"; }
seeds=build-fuzz/seeds && rm -rf "$seeds" && mkdir -p "$seeds"
{ deep 20000 '['; printf 1; deep 20000 ']'; } > "$seeds/deep-array.json"
{ printf '{"num_hidden_layers": '; deep 8000 '{' | sed 's/{/{"a":/g'; printf 1; deep 8000 '}'; printf '}'; } \
  > "$seeds/deep-object.json"
many 4000 > "$seeds/many-members.json"
printf '{"__metadata__":{"a":"b"}}\0garbage' > "$seeds/nul-garbage.json"
for t in checkpoint_index config golden suite; do cp "$seeds"/*.json "$corpus/$t/"; done
for f in "$seeds"/*.json; do
  printf '\0\0\0\0\0\0\0\0' > "$corpus/safetensors_header/$(basename "$f")"
  cat "$f" >> "$corpus/safetensors_header/$(basename "$f")"
  frame "$f" > "$corpus/step_record/$(basename "$f").safetensors"
  { printf '{"id": "a", "input_ids": '; cat "$f"; printf '}\n'; } > "$corpus/prompt_set/$(basename "$f").jsonl"
done
for i in $(seq 0 1600); do echo "model.layers.$i.mlp.up_proj.weight"; done \
  > "$corpus/decoder_stack/many-layers"
printf 'model.layers.00.w\nmodel.layers.01.w\nmodel.layers.1.w\n' > "$corpus/decoder_stack/leading-zeros"
# Serving-engine outputs written in the engines' formats (tests/fuzz/seeds/).
for d in tests/fuzz/seeds/*/; do cp "$d"* "$corpus/$(basename "$d")/"; done
# Inputs of past findings (fixed) stay in the seeds.
for d in tests/fuzz/regressions/*/; do cp "$d"* "$corpus/$(basename "$d")/"; done

# Each target runs for SECONDS of wall time; FUZZ_JOBS targets at a time (default 1).
fuzz_one() {
  local t=$1 log=build-fuzz/fuzz_$1.log dict=()
  [ "$t" != decoder_stack ] && dict=(-dict=tests/fuzz/json.dict)
  if nice ./build-fuzz/fuzz/fuzz_"$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 "${dict[@]}" \
      -rss_limit_mb=4096 -artifact_prefix="build-fuzz/findings/$t-" -print_final_stats=1 \
      "$corpus/$t" > "$log" 2>&1; then
    echo clean > "build-fuzz/result_$t"
  else
    echo "FINDING (see $log)" > "build-fuzz/result_$t"
  fi
}
jobs_max=${FUZZ_JOBS:-1}
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait

status=0
printf '%-20s %12s %10s %s\n' target executions corpus result
for t in "${targets[@]}"; do
  result=$(cat "build-fuzz/result_$t")
  [ "$result" = clean ] || status=1
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/fuzz_$t.log" | grep -o '[0-9]*$' || echo 0)
  size=$(ls "$corpus/$t" | wc -l)
  printf '%-20s %12s %10s %s\n' "$t" "$execs" "$size" "$result"
done
exit $status
