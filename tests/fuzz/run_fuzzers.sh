#!/usr/bin/env bash
# Runs each libFuzzer target of a build for FUZZ_SECONDS, one after the other (a fuzzer per core
# would starve everything else on a shared machine), then merges what it found into the checked-in
# seed corpus with -merge=1, which keeps only inputs that add coverage.
#
#   tests/fuzz/run_fuzzers.sh BUILD_DIR [TARGET...]
#   FUZZ_SECONDS=600   time per target
#   FUZZ_ARGS=...      extra libFuzzer flags, e.g. -jobs=2 or -only_ascii=1
#
# New finds go to BUILD_DIR/fuzz-out/<target> first; crashes to tests/fuzz/crashes/<target>-*,
# where the replay tests pick them up as regression inputs once they are fixed.
set -euo pipefail

build=${1:?usage: run_fuzzers.sh BUILD_DIR [TARGET...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
seconds=${FUZZ_SECONDS:-600}
targets=("$@")
((${#targets[@]})) || targets=(stun_message_fuzz channel_data_fuzz turn_server_fuzz config_fuzz
  stream_framing_fuzz dtls_listener_fuzz cds_message_fuzz k8s_manifest_fuzz)

max_len() {
  case $1 in
    turn_server_fuzz) echo 4096 ;;
    config_fuzz) echo 8192 ;;
    cds_message_fuzz) echo 4096 ;;
    k8s_manifest_fuzz) echo 16384 ;;
    *) echo 2048 ;;
  esac
}
dict() {
  case $1 in
    config_fuzz | cds_message_fuzz) echo "$here/dict/config.dict" ;;
    k8s_manifest_fuzz) echo "$here/dict/k8s.dict" ;;
    *) echo "$here/dict/stun.dict" ;;
  esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mkdir -p "$here/crashes"
status=0
for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/$t
  corpus=$here/corpus/$t
  out=$build/fuzz-out/$t
  mkdir -p "$out" "$corpus"
  log=$build/fuzz-out/$t.log
  echo "fuzz: $t for ${seconds}s (log: $log)"
  # New inputs land in $out (the first corpus directory); the seeds are only read.
  if ! "$bin" -max_total_time="$seconds" -max_len="$(max_len "$t")" -dict="$(dict "$t")" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$here/crashes/$t-" ${FUZZ_ARGS:-} "$out" "$corpus" >"$log" 2>&1; then
    echo "fuzz: $t FAILED, see $log and tests/fuzz/crashes/$t-*" >&2
    status=1
  fi
  grep -E '^#[0-9]+.*(DONE|pulse)|^stat::' "$log" | tail -6 || true
  "$bin" -merge=1 -max_len="$(max_len "$t")" "$corpus" "$out" >"$build/fuzz-out/$t.merge.log" 2>&1
  echo "fuzz: $t corpus now $(find "$corpus" -type f | wc -l) files," \
       "$(du -sk "$corpus" | cut -f1) KiB"
done
exit $status
