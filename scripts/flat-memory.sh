#!/usr/bin/env bash
# Memory flat in the number of chunks (issue 48): archives of SMALL and
# LARGE distinct chunks (100,000 and 2,000,000 by default), each built from
# FILES files of random bytes cut to small chunks (64 / 256 / 1,024 bytes,
# set through CreateOptions::chunk_sizes by the example chunk_archive: the
# default code path, only the sizes change; at these sizes a chunk holds
# 292 bytes on average, measured), then under GNU time:
#   - the create itself (the example: the session's chunks spill past
#     131,072),
#   - `update` after a small change (4 KiB rewritten in one file),
#   - a second small change and `update` again, then
#   - `compact --keep-sessions 2` (drops the first state).
# Locked with a key file, so that no password KDF hides what scales. Fails
# if the larger archive's update or compact peaks more than 10 % above the
# smaller one's, or either passes LIMIT_MIB.
#
#   scripts/flat-memory.sh [LOCKBOX] [CHUNK_ARCHIVE] [SMALL LARGE] [LIMIT_MIB]
#
# LOCKBOX: target/debug/lockbox; CHUNK_ARCHIVE: target/debug/examples/
# chunk_archive (cargo build -p revault_cli; cargo build -p
# revault_lockbox_api --example chunk_archive). Work goes to $TMPDIR (the
# larger archive needs about 2 GiB there: its files, the archive, the
# compaction's new file).
set -euo pipefail
cd "$(dirname "$0")/.."

lockbox=${1:-target/debug/lockbox}
chunk_archive=${2:-target/debug/examples/chunk_archive}
small=${3:-100000}
large=${4:-2000000}
limit_mib=${5:-100}
files=${FILES:-200}
min=64 avg=256 max=1024 bytes_a_chunk=292
for bin in "$lockbox" "$chunk_archive"; do
  [ -x "$bin" ] || { echo "flat-memory: no binary at $bin (see the header)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "flat-memory: GNU time (/usr/bin/time) is missing" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/lockbox-flat-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$lockbox" keygen --symmetric -o "$work/key" >/dev/null

# measure LABEL COMMAND...: runs COMMAND under GNU time; prints a row and
# leaves the peak RSS in KiB in $work/kib, the command's output in $work/out.
measure() {
  local label=$1
  shift
  /usr/bin/time -f "%M %e %U %S" -o "$work/time" "$@" >"$work/out"
  read -r kib wall user sys < "$work/time"
  echo "$kib" > "$work/kib"
  printf '| %s | %s KiB | %s s wall | %s s user | %s s sys |\n' "$label" "$kib" "$wall" "$user" "$sys"
}

# change DIR SEED: rewrites 4 KiB in the middle of one file of DIR.
change() {
  python3 - "$1" "$2" <<'EOF'
import os, random, sys
d, seed = sys.argv[1], int(sys.argv[2])
names = sorted(os.listdir(d))
rng = random.Random(seed)
path = os.path.join(d, names[rng.randrange(len(names))])
with open(path, "r+b") as f:
    f.seek(os.path.getsize(path) // 2)
    f.write(rng.randbytes(4096))
EOF
}

declare -A update_kib compact_kib
for n in "$small" "$large"; do
  tree=$work/tree-$n
  mkdir "$tree"
  # n chunks of `bytes_a_chunk` bytes on average, in `files` files of random bytes.
  python3 - "$tree" "$n" "$files" "$bytes_a_chunk" <<'EOF'
import os, random, sys
d, n, files, avg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(n)
per_file = n * avg // files
for i in range(files):
    with open(os.path.join(d, f"f{i:05}"), "wb") as f:
        f.write(rng.randbytes(per_file))
EOF
  archive=$work/a-$n.lbox
  measure "create (example), $n chunks asked" "$chunk_archive" "$archive" "$work/key" "$tree" "$min" "$avg" "$max"
  chunks=$(cat "$work/out")
  echo "archive of $n: about $chunks chunks, $(stat -c %s "$archive") bytes"
  change "$tree" 1
  measure "update, $chunks chunks" "$lockbox" update -q --key-file "$work/key" "$archive" -C "$work" "tree-$n"
  update_kib[$n]=$(cat "$work/kib")
  echo "after update: $(stat -c %s "$archive") bytes"
  change "$tree" 2
  "$lockbox" update -q --key-file "$work/key" "$archive" -C "$work" "tree-$n"
  measure "compact --keep-sessions 2, $chunks chunks" \
    "$lockbox" compact -q --key-file "$work/key" --keep-sessions 2 "$archive"
  compact_kib[$n]=$(cat "$work/kib")
  echo "after compact: $(stat -c %s "$archive") bytes"
  rm -rf "$tree" "$archive"
done

failed=0
for what in update compact; do
  declare -n peaks="${what}_kib"
  for n in "$small" "$large"; do
    if [ "${peaks[$n]}" -gt $((limit_mib * 1024)) ]; then
      echo "flat-memory: $what of $n chunks peaks at ${peaks[$n]} KiB, over ${limit_mib} MiB"
      failed=1
    fi
  done
  if [ "${peaks[$large]}" -gt $((peaks[$small] * 110 / 100)) ]; then
    echo "flat-memory: $what of $large chunks peaks $((peaks[$large] * 100 / peaks[$small] - 100)) % above $small (at most 10 %)"
    failed=1
  fi
done
exit "$failed"
