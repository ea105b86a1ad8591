#!/usr/bin/env bash
# A real round trip on a generated example tree: create, list, extract, compare.
#
#   scripts/demo.sh [WORK_DIR]        (default: target/demo)
#   scripts/demo.sh --build           (build only, with cargo's usual output)
#
# Builds the `lockbox` binary (target/debug/lockbox, which the README's
# quick start puts on PATH) and the corpus generator, generates a small
# source-like tree (text, binaries, symlinks, hard links, empty files and
# directories, a non-UTF-8 name), archives it, lists it, extracts it, and
# checks that every byte, mode, mtime and link came back.
#
# The build is the test build's first part: the dev profile, and the
# features `cargo test --workspace --all-features` (scripts/test.sh)
# resolves, which the example puts in (building an example brings in the
# workspace's dev-dependencies, whose features then apply to every crate,
# as in a test build). So the tests compile only what is theirs, and
# nothing here again; .ci/run checks that. Without the example, or with
# `-p revault_cli` alone, cargo would resolve other features and the
# tests would compile most of the dependencies a second time.
set -euo pipefail
cd "$(dirname "$0")/.."
# chacha20's AVX-512 backend even when the environment sets RUSTFLAGS.
. scripts/cargo-env.sh

build=(cargo build --workspace --all-features --bin lockbox --example generate)
if [ "${1-}" = --build ]; then
  exec "${build[@]}"
fi
work=${1:-target/demo}
export LOCKBOX_PASSWORD=${LOCKBOX_PASSWORD:-"demo password, use your own"}

"${build[@]}" --quiet
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
echo "== lockbox is $PWD/$lockbox: export PATH=\"$PWD/target/debug:\$PATH\" for the README's quick start"
