#!/usr/bin/env bash
# What one format costs against another (issue 23: v3's frames, session
# headers and BLAKE3 commitments beside v2): the same corpora archived by
# two lockbox binaries with the same password and defaults, on tmpfs, the
# order of the two alternating every iteration. Prints, per corpus, both
# archive sizes and the medians of wall and CPU time (user + system) of
# create and of extract --no-sync, with the median of the paired ratios
# NEW/OLD and their range.
#
#   scripts/format-cost.sh OLD_LOCKBOX NEW_LOCKBOX [ITERATIONS] -- DIR...
#
# Each DIR is archived by its last component (-C its parent). Archives and
# extractions live under /dev/shm/format-cost, removed at the end.
set -euo pipefail
old=$1 new=$2
shift 2
iterations=5
if [ "${1-}" != "--" ]; then iterations=$1; shift; fi
[ "${1-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: $0 OLD NEW [ITERATIONS] -- DIR..." >&2; exit 2; }
work=/dev/shm/format-cost
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
printf 'format-cost\n' > "$work/pw"
times=$work/times.tsv
: > "$times"

# Appends "corpus side op wall cpu" for one timed command.
timed() {
    local corpus=$1 side=$2 op=$3
    shift 3
    /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" > /dev/null
    read -r wall user sys < "$work/t"
    echo "$corpus $side $op $wall $(awk "BEGIN { print $user + $sys }")" >> "$times"
}

run_side() {
    local corpus=$1 dir=$2 side=$3 bin=$4
    local archive=$work/$side.lbox out=$work/x-$side
    rm -f "$archive"
    timed "$corpus" "$side" create "$bin" create -q --password-file "$work/pw" -o "$archive" \
        -C "$(dirname "$dir")" "$(basename "$dir")"
    stat -c "%s" "$archive" > "$work/size-$corpus-$side"
    rm -rf "$out"
    mkdir "$out"
    timed "$corpus" "$side" extract "$bin" extract -q --no-sync --password-file "$work/pw" -C "$out" "$archive"
    rm -rf "$out" "$archive"
}

uptime
for dir in "$@"; do
    corpus=$(basename "$dir")
    for i in $(seq 1 "$iterations"); do
        if [ $((i % 2)) -eq 1 ]; then
            run_side "$corpus" "$dir" old "$old"
            run_side "$corpus" "$dir" new "$new"
        else
            run_side "$corpus" "$dir" new "$new"
            run_side "$corpus" "$dir" old "$old"
        fi
    done
    echo "$corpus size $(cat "$work/size-$corpus-old") $(cat "$work/size-$corpus-new")" >> "$times"
done
uptime

python3 - "$times" "$iterations" <<'EOF'
import statistics, sys
from collections import defaultdict
rows = [line.split() for line in open(sys.argv[1])]
n = int(sys.argv[2])
runs = defaultdict(list)
sizes, order = {}, []
for r in rows:
    if r[1] == "size":
        sizes[r[0]] = (int(r[2]), int(r[3]))
        continue
    if r[0] not in order:
        order.append(r[0])
    runs[(r[0], r[1], r[2])].append((float(r[3]), float(r[4])))
print(f"{n} iterations, order alternating; medians in seconds, ratio = new/old paired per iteration (min-max)\n")
print("| corpus | old bytes | new bytes | size | op | old wall | new wall | wall ratio | old CPU | new CPU | CPU ratio |")
print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
for c in order:
    o, nw = sizes[c]
    for op in ("create", "extract"):
        a, b = runs[(c, "old", op)], runs[(c, "new", op)]
        cells = []
        for k in (0, 1):  # wall, then CPU
            ratios = [y[k] / x[k] for x, y in zip(a, b) if x[k] > 0]
            cells += [f"{statistics.median(x[k] for x in a):.3f}", f"{statistics.median(y[k] for y in b):.3f}",
                      f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"]
        size = f"{nw / o:.4f}" if op == "create" else ""
        print(f"| {c} | {o:,} | {nw:,} | {size} | {op} | " + " | ".join(cells) + " |")
EOF
