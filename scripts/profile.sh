#!/usr/bin/env bash
# Profiles lockbox on one pgp_compare scenario with `perf record -g`.
#
#   scripts/profile.sh large-randomish
#   ITERATIONS=1 CALL_GRAPH=dwarf scripts/profile.sh small-tree --size-factor 0.1
#
# Runs the harness (`--lockbox-only --scenario SCENARIO`, extra arguments
# passed on) under perf, then prints, for lockbox's create and extract
# processes apart: CPU time, the user/kernel split, the split by thread
# and the top symbols by self time. The harness runs each create and
# extract in a child process named `lockbox-create` / `lockbox-extract`
# (and `lockbox-nosync` for the extraction with sync off); page workers
# are `lockbox-page-N`.
# The harness's own work (corpus generation, checking each extraction
# against the source) is in the process named after the harness binary and
# is left out of the symbol tables.
#
# Environment: ITERATIONS (default 3), CALL_GRAPH (fp, the default, or
# dwarf: deeper stacks, much larger files), TOP (symbol rows, default 40),
# PROFILE_DIR (default target/lockbox-profile). Keeps
# PROFILE_DIR/SCENARIO.perf.data for `perf report -i`.
set -euo pipefail

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: scripts/profile.sh SCENARIO [harness options...]" >&2
    exit 2
fi
scenario=$1
shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# chacha20's AVX-512 backend even when the environment sets RUSTFLAGS.
. "$repo/scripts/cargo-env.sh"
out_dir=${PROFILE_DIR:-$repo/target/lockbox-profile}
iterations=${ITERATIONS:-3}
call_graph=${CALL_GRAPH:-fp}
top=${TOP:-40}

if ! command -v perf >/dev/null || ! perf --version >/dev/null 2>&1; then
    echo "profile.sh: installing perf (apt package linux-perf)" >&2
    if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf
fi

cd "$repo"
bin=$(cargo build --release -p pgp_compare --message-format=json \
    | grep -o '"executable":"[^"]*pgp_compare[^"]*"' | tail -n 1 | cut -d'"' -f4)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "profile.sh: could not find the pgp_compare binary" >&2
    exit 1
fi
mkdir -p "$out_dir"
data=$out_dir/$scenario.perf.data

# From the workspace root, like scripts/bench.sh: the default --root, and
# so the corpora, are shared with the comparison runs.
cd "$repo"
case $call_graph in
    fp) cg=(-g) ;;
    *) cg=(--call-graph "$call_graph") ;;
esac
echo "== perf record ${cg[*]}: $bin --lockbox-only --scenario $scenario --iterations $iterations $*" >&2
freq=999
perf record "${cg[@]}" -F "$freq" -o "$data" -- \
    "$bin" --lockbox-only --scenario "$scenario" --iterations "$iterations" \
    --output "$out_dir/$scenario.results.md" "$@" >/dev/null

report() {
    perf report -i "$data" --stdio --no-children -g none --percent-limit 0.3 "$@" 2>/dev/null \
        | grep -v '^#' | grep -v '^$' || true
}

echo
echo "== $scenario: samples by thread (all processes, % of all samples)"
report --sort comm | head -n 20 || true

# Processes by the name of their main thread (the one whose tid is the pid);
# other threads of the process inherit the name or are lockbox-page-N.
pids_of() {
    perf script -i "$data" -F comm,pid,tid 2>/dev/null \
        | awk -v want="$1" '{ split($2, t, "/"); if ($1 == want && t[1] == t[2]) print t[1] }' \
        | sort -un | paste -sd, -
}
# perf report --pid filters hist entries, not samples: with sort keys that
# merge threads (comm, sym) it keeps or drops whole entries. So sort by
# pid (one entry per thread) too, and add threads up here. Prints
# "percent<TAB>key" lines, key = the thread name ($2 = comm), "dso symbol"
# (sym) or kernel/user (space), as a share of the processes' samples,
# largest first.
phase_split() {
    perf report -i "$data" --stdio --no-children -g none --pid "$1" --sort pid,dso,sym 2>/dev/null \
        | awk -v by="$2" '
            /^ *[0-9.]+%/ {
                p = $1; sub("%", "", p)
                split($2, t, ":"); comm = t[2]
                rest = $0; sub(/^ *[0-9.]+% +[^ ]+ +/, "", rest); gsub(/  +/, " ", rest)
                sub(/^pgp_compare-[0-9a-f]+ /, "pgp_compare ", rest)
                key = (by == "comm") ? comm : (by == "space") ? (rest ~ /\[k\]/ ? "kernel" : "user") : rest
                sum[key] += p; total += p
            }
            END { for (k in sum) if (total > 0) printf "%.2f\t%s\n", 100 * sum[k] / total, k }' \
        | sort -t"$(printf '\t')" -k1,1 -rn \
        | awk -F'\t' '$1 >= 0.3 { printf "%7.2f%%  %s\n", $1, $2 }'
}
for phase in create extract nosync; do
    pids=$(pids_of "lockbox-$phase")
    if [ -z "$pids" ]; then
        echo "(no lockbox-$phase samples)"
        continue
    fi
    samples=$(perf script -i "$data" -F pid 2>/dev/null | awk -v pids="$pids" '
        BEGIN { n = split(pids, p, ","); for (i = 1; i <= n; i++) want[p[i]] = 1 }
        ($1 in want) { c++ } END { print c + 0 }')
    runs=$(echo "$pids" | tr ',' '\n' | wc -l)
    echo
    echo "== $scenario: lockbox $phase: $runs run(s), $samples samples at $freq Hz" \
        "(about $(awk -v s="$samples" -v f="$freq" -v r="$runs" 'BEGIN { printf "%.2f", s / f / r }') CPU-s a run)"
    phase_split "$pids" space | tr '\n' ' ' || true
    echo
    echo
    echo "== $scenario: lockbox $phase, by thread (% of the $phase processes' samples)"
    phase_split "$pids" comm | head -n 12 || true
    echo
    echo "== $scenario: lockbox $phase, top symbols by self time (% of the $phase processes' samples)"
    phase_split "$pids" sym | head -n "$top" || true
done
echo
echo "perf data: $data (perf report -i $data)"
