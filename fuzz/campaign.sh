#!/usr/bin/env bash
# A fuzz campaign on a quiet machine: the targets named, JOBS at a time (one
# a core, nothing else running), SECONDS_EACH seconds each from the committed
# corpus; then one Markdown row a target from its fuzzer_stats, the form of
# SECURITY.md's campaign tables. Build first (`cargo afl build`, fuzz/README).
#
#   fuzz/campaign.sh [-j JOBS] [-t SECONDS_EACH] TARGET...
#
# Output goes to fuzz/out/<target>/ (an existing one is moved aside to
# out/<target>.<time>, so a run always starts from the committed corpus).
set -euo pipefail
cd "$(dirname "$0")"

usage() { echo "usage: $0 [-j JOBS] [-t SECONDS_EACH] TARGET..." >&2; exit 2; }
jobs=$(nproc)
seconds=1800
while getopts "j:t:" opt; do
    case $opt in
        j) jobs=$OPTARG ;;
        t) seconds=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage
for t in "$@"; do
    [ -x "target/debug/$t" ] || { echo "$0: target/debug/$t missing (cargo afl build)" >&2; exit 2; }
    [ -d "corpus/$t" ] || { echo "$0: corpus/$t missing" >&2; exit 2; }
done

mkdir -p out
run() {
    local t=$1
    [ -e "out/$t" ] && mv "out/$t" "out/$t.$(date +%s)"
    # The two host checks skipped here need settings a container refuses
    # (fuzz/README, "Run").
    AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 \
        cargo afl fuzz -V "$seconds" -i "corpus/$t" -o "out/$t" "target/debug/$t" \
        > "out/$t.log" 2>&1
}

echo "start $(date -u +%FT%TZ), $jobs at a time, ${seconds} s each: $*" >&2
pending=("$@")
while [ ${#pending[@]} -gt 0 ]; do
    round=("${pending[@]:0:$jobs}")
    pending=("${pending[@]:$jobs}")
    echo "$(date -u +%T) round: ${round[*]}" >&2
    pids=()
    for t in "${round[@]}"; do run "$t" & pids+=($!); done
    # A run that failed (AFL++ refused its seeds, say) has no figures to print.
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { echo "$0: ${round[$i]} failed: out/${round[$i]}.log" >&2; exit 1; }
    done
done
echo "end $(date -u +%FT%TZ)" >&2

stat() { sed -n "s/^$2 *: //p" "out/$1/default/fuzzer_stats"; }
# 23121373 -> 23,121,373, as SECURITY.md writes counts.
grouped() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<< "$1"; }
echo "| target | executions | execs/s (mean) | run time | paths (corpus) | edges found / instrumented | crashes | hangs | stability | last new path (after start) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for t in "$@"; do
    start=$(stat "$t" start_time)
    last=$(stat "$t" last_find)
    if [ "$last" -gt 0 ]; then since="$((last - start)) s"; else since="—"; fi
    printf '| `%s` | %s | %s | %s s | %s | %s/%s | %s | %s | %s | %s |\n' "$t" \
        "$(grouped "$(stat "$t" execs_done)")" "$(grouped "$(printf %.0f "$(stat "$t" execs_per_sec)")")" "$(stat "$t" run_time)" \
        "$(stat "$t" corpus_count)" "$(stat "$t" edges_found)" "$(stat "$t" total_edges)" \
        "$(stat "$t" saved_crashes)" "$(stat "$t" saved_hangs)" "$(stat "$t" stability)" "$since"
done
