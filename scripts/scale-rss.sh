#!/usr/bin/env bash
# Peak RSS and wall time of `lockbox create`, `list`, `extract --no-sync`
# and `verify` on one tree, with GNU time (the measurements behind
# docs/BENCHMARKS.md, "Format v2 index (issue 8)").
#
#   scripts/scale-rss.sh LOCKBOX TREE_PARENT TREE_NAME ARCHIVE EXTRACT_DIR [LABEL]
#
# LOCKBOX: the release binary (v1 or v2); the tree is archived as
# `create -C TREE_PARENT TREE_NAME`; EXTRACT_DIR (e.g. under /dev/shm) is
# created, then deleted after the extract. KDF at its defaults (m=64 MiB,
# t=3, p=4). Prints one Markdown row per command:
#   | label | command | wall s | peak RSS MiB |
# Generate the tree first, e.g. 1M files:
#   cargo run --release -p corpora --example generate -- scale-many-files /work/trees 1.0
set -euo pipefail
bin=$1 parent=$2 name=$3 archive=$4 out=$5 label=${6:-$(basename "$bin")}
export LOCKBOX_PASSWORD=${LOCKBOX_PASSWORD:-bench-password}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() { # command-name, then the command
    local what=$1
    shift
    /usr/bin/time -v -o "$log" "$@" >/dev/null
    local kib wall
    kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
    # m:ss.ss or h:mm:ss
    wall=$(awk -v t="$wall" 'BEGIN { n = split(t, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f", s }')
    printf '| %s | %s | %s | %.1f |\n' "$label" "$what" "$wall" "$(echo "$kib / 1024" | bc -l)"
}

rm -f "$archive"
run create "$bin" -q create -o "$archive" -C "$parent" "$name"
run list "$bin" -q list "$archive"
rm -rf "$out"
mkdir -p "$out"
run "extract --no-sync" "$bin" -q extract --no-sync -C "$out" "$archive"
rm -rf "$out"
run verify "$bin" -q verify "$archive"
printf '| %s | archive bytes | %s | |\n' "$label" "$(stat -c %s "$archive")"
