#!/usr/bin/env bash
# A real round trip on a generated example tree: create, list, extract, compare.
#
#   scripts/demo.sh [WORK_DIR]        (default: target/demo)
#
# Builds the `lockbox` binary and the corpus generator, generates a small
# source-like tree (text, binaries, symlinks, hard links, empty files and
# directories, a non-UTF-8 name), archives it, lists it, extracts it, and
# checks that every byte, mode, mtime and link came back.
set -euo pipefail
cd "$(dirname "$0")/.."
# chacha20's AVX-512 backend even when the environment sets RUSTFLAGS.
. scripts/cargo-env.sh

work=${1:-target/demo}
export LOCKBOX_PASSWORD=${LOCKBOX_PASSWORD:-"demo password, use your own"}

cargo build --quiet -p revault_cli -p corpora --examples --bins
lockbox=target/debug/lockbox

rm -rf "$work"
mkdir -p "$work/restore"
target/debug/examples/generate mixed-tree "$work/src" 0.05 >/dev/null
echo "== generated $(find "$work/src" | wc -l) paths, $(du -sh "$work/src" | cut -f1) under $work/src"

echo "== lockbox create -o $work/demo.lbox -C $work/src ."
time "$lockbox" create --quiet -o "$work/demo.lbox" -C "$work/src" .
ls -l "$work/demo.lbox"

echo "== lockbox list -l (first 10 lines)"
"$lockbox" list -l "$work/demo.lbox" | head -n 10

echo "== lockbox extract -C $work/restore"
time "$lockbox" extract --quiet "$work/demo.lbox" -C "$work/restore"

echo "== comparing"
diff -r --no-dereference "$work/src" "$work/restore"
# Modes, mtimes (ns) and link targets, not only content.
stat_all() { (cd "$1" && find . -mindepth 1 -printf '%p %y %m %T@ %l\n' | sort); }
diff <(stat_all "$work/src") <(stat_all "$work/restore")
echo "== round trip exact: content, kinds, modes, mtimes and links match"
