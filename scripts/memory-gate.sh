#!/usr/bin/env bash
# The memory gate (CI): create and extract one 256 MiB file with the default
# profile under GNU time, and fail if either one's peak RSS passes the limit.
# Two inputs: random bytes (zstd skipped) and base64 text (zstd at work).
# Argon2id's 64 MiB is most of the peak; the limit leaves the data path about
# 30 MiB.
#
# Then memory flat in the number of entries: `extract` of archives of
# $small and $large files of 100 bytes (scripts/gen-tar-stream.py, read with
# `create --from-tar -`), locked with a key file so that no KDF hides the
# index's and the content walk's share. The larger one may peak at most
# 10 % above the smaller one, and under the limit. (Thousands of 100-byte
# files share each 4 MiB page: what a walk holds per file shows.)
#
#   scripts/memory-gate.sh [LOCKBOX_BINARY] [LIMIT_MIB] [SMALL LARGE]
set -euo pipefail
cd "$(dirname "$0")/.."

lockbox=${1:-target/debug/lockbox}
limit_mib=${2:-96}
small=${3:-100000}
large=${4:-300000}
[ -x "$lockbox" ] || { echo "memory-gate: no binary at $lockbox (cargo build -p revault_cli)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "memory-gate: GNU time (/usr/bin/time) is missing" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/lockbox-memory-gate.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LOCKBOX_PASSWORD="memory gate"

size=$((256 * 1024 * 1024))
head -c "$size" /dev/urandom > "$work/random.bin"
# (head stops reading early: base64 then dies of SIGPIPE, which is fine.)
head -c $((size * 3 / 4)) /dev/urandom | base64 -w 76 | head -c "$size" > "$work/text.txt" || true
[ "$(stat -c %s "$work/text.txt")" -eq "$size" ]

failed=0
# run LABEL COMMAND...: runs COMMAND under GNU time and checks its peak RSS.
run() {
  local label=$1
  shift
  /usr/bin/time -f "%M" -o "$work/rss" "$@"
  local kib
  kib=$(tail -n 1 "$work/rss")
  local verdict=ok
  if [ "$kib" -gt $((limit_mib * 1024)) ]; then
    verdict="OVER the ${limit_mib} MiB limit"
    failed=1
  fi
  printf '%-22s peak RSS %6d KiB  %s\n' "$label" "$kib" "$verdict"
}

for input in random.bin text.txt; do
  run "create $input" "$lockbox" create -q -o "$work/$input.lbox" -C "$work" "$input"
  mkdir "$work/out-$input"
  run "extract $input" "$lockbox" extract -q "$work/$input.lbox" -C "$work/out-$input"
  cmp "$work/$input" "$work/out-$input/$input"
  rm -rf "$work/out-$input" "$work/$input"
done

"$lockbox" keygen --symmetric -o "$work/key"
# The files go to a tmpfs where there is one: removing 300,000 files from a
# disk takes minutes.
out=$work
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  out=$(mktemp -d /dev/shm/lockbox-memory-gate.XXXXXX)
  trap 'rm -rf "$work" "$out"' EXIT
fi
declare -A peak
for n in "$small" "$large"; do
  python3 scripts/gen-tar-stream.py "$n" | "$lockbox" create -q --from-tar - --key-file "$work/key" -o "$work/many-$n.lbox"
  mkdir "$out/out-$n"
  run "extract $n files" "$lockbox" extract -q --key-file "$work/key" "$work/many-$n.lbox" -C "$out/out-$n"
  peak[$n]=$(tail -n 1 "$work/rss")
  count=$(find "$out/out-$n" -type f | wc -l)
  [ "$count" -eq "$n" ] || { echo "memory-gate: extract of $n files gave $count" >&2; exit 1; }
  rm -rf "$out/out-$n"
done
if [ "${peak[$large]}" -gt $((peak[$small] * 110 / 100)) ]; then
  echo "memory-gate: extract of $large files peaks $((peak[$large] * 100 / peak[$small] - 100)) % above $small files (at most 10 %): memory grows with entries"
  failed=1
fi
exit "$failed"
