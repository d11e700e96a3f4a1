#!/usr/bin/env bash
# Fuzzes ctxfast's core: fuzz/run.sh SECONDS [TARGET...]
#
# Builds every target (cargo-fuzz, nightly, no sanitizer: the core has no unsafe code; debug
# assertions and overflow checks on), then runs each TARGET (default: the CI set) for SECONDS
# with one job, as many targets at once as there are cores. Exits non-zero if any target crashes,
# panics, hangs (-timeout) or breaks an invariant; the input is left in fuzz/artifacts/TARGET/ and the log in fuzz/target/logs/.
#
#   fuzz/run.sh 25                      # CI's quick run
#   fuzz/run.sh 600                     # the longer run: 10 minutes per CI target
#   fuzz/run.sh 600 state_loader        # a target outside the CI set (see README.md)
#
# Environment: FUZZ_TIMEOUT (seconds one input may take, default 10), FUZZ_RSS_MB (default 2048),
# and the targets' own knobs (CTXFAST_FUZZ_STATE, CTXFAST_FUZZ_OPEN_BUGS; README.md).
set -euo pipefail

# The targets CI runs: all of them.
CI_TARGETS=(policy_parser ladder window_ops state_loader state_mutator chat_template bpe_engine pretokenizer)
ALL_TARGETS=(policy_parser ladder window_ops state_loader state_mutator chat_template bpe_engine pretokenizer)
CARGO_FUZZ_VERSION=0.13.2

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ || $1 -lt 1 ]]; then
    echo "usage: fuzz/run.sh SECONDS [TARGET...]   (targets: ${ALL_TARGETS[*]}; 'all' for every one)" >&2
    exit 2
fi
secs=$1
shift
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    targets=("${CI_TARGETS[@]}")
elif [[ ${targets[0]} == all ]]; then
    targets=("${ALL_TARGETS[@]}")
fi
for t in "${targets[@]}"; do
    [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || { echo "fuzz/run.sh: unknown target $t" >&2; exit 2; }
done

fuzz_dir=$(cd "$(dirname "$0")" && pwd)
cd "$fuzz_dir"

# cargo-fuzz needs a nightly toolchain. Use the installed one; install it only when absent.
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: no nightly toolchain; installing it (rustup toolchain install nightly --profile minimal)"
    if ! rustup toolchain install nightly --profile minimal; then
        echo "fuzz/run.sh: ERROR: cargo-fuzz needs a nightly toolchain, none is installed and rustup could not install one" >&2
        exit 3
    fi
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

start=$(date +%s)
cargo +nightly fuzz build --sanitizer none
built=$(date +%s)
echo "fuzz/run.sh: built the fuzz targets in $((built - start)) s"

host=$(rustc +nightly -vV | sed -n 's/^host: //p')
bin_dir="$fuzz_dir/target/$host/release"
# One target's run: its verdict line goes to $results/$t (ok or FAILED), its log stays in logs/.
run_target() {
    local t=$1
    local work="$fuzz_dir/target/corpus/$t" # what this machine's runs learnt (not committed)
    local seeds="$fuzz_dir/corpus/$t"       # the committed seeds
    local logs="$fuzz_dir/target/logs/$t"
    mkdir -p "$work" "$logs" "$fuzz_dir/artifacts/$t"
    local corpora=("$work")
    [[ -d $seeds ]] && corpora+=("$seeds")
    local t0 rc=0
    t0=$(date +%s)
    # -jobs=1: one worker process; libFuzzer writes its log to fuzz-0.log in the working dir.
    (cd "$logs" && rm -f fuzz-0.log && "$bin_dir/$t" \
        -artifact_prefix="$fuzz_dir/artifacts/$t/" \
        -max_total_time="$secs" -jobs=1 \
        -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
        -print_final_stats=1 "${corpora[@]}" >runner.log 2>&1) || rc=$?
    local log="$logs/fuzz-0.log"
    [[ -f $log ]] || log="$logs/runner.log"
    local stats
    stats=$(grep -E '^(stat::number_of_executed_units|stat::new_units_added)' "$log" | tr '\n' ' ' || true)
    if [[ $rc -ne 0 ]] || grep -qE '^(==[0-9]+== ERROR: libFuzzer|SUMMARY: libFuzzer)' "$log"; then
        {
            echo "fuzz/run.sh: FAILED $t (exit $rc) after $(( $(date +%s) - t0 )) s; log: $log"
            grep -E -A12 "panicked at|ERROR: libFuzzer" "$log" | head -40 || true
            grep -E "Test unit written to|^artifact_prefix" "$log" || true
        } >"$results/$t"
    else
        echo "fuzz/run.sh: ok $t in $(( $(date +%s) - t0 )) s  $stats" >"$results/$t"
    fi
}

# Targets run side by side, one per core (FUZZ_PARALLEL overrides): each is one process, so CI's
# two cores halve the wall time of the quick run.
parallel=${FUZZ_PARALLEL:-$(nproc 2>/dev/null || echo 1)}
results=$(mktemp -d)
running=0
for t in "${targets[@]}"; do
    echo "fuzz/run.sh: $t for ${secs} s"
    run_target "$t" &
    running=$((running + 1))
    if [[ $running -ge $parallel ]]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true
failed=()
passed=0
for t in "${targets[@]}"; do
    cat "$results/$t" 2>/dev/null || echo "fuzz/run.sh: FAILED $t: no verdict (the runner died)"
    if grep -qs "^fuzz/run.sh: ok $t " "$results/$t"; then passed=$((passed + 1)); else failed+=("$t"); fi
done
rm -rf "$results"
echo "fuzz/run.sh: build $((built - start)) s, total $(( $(date +%s) - start )) s"
echo "fuzz: ${passed} passed, ${#failed[@]} failed"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz/run.sh: failing targets: ${failed[*]}; reproduce with" >&2
    echo "  cargo +nightly fuzz run --sanitizer none TARGET fuzz/artifacts/TARGET/<file>" >&2
    exit 1
fi
