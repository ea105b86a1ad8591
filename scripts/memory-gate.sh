#!/usr/bin/env bash
# The memory gate (CI): create and extract one 256 MiB file with the default
# profile under GNU time, and fail if either one's peak RSS passes the limit.
# Two inputs: random bytes (zstd skipped) and base64 text (zstd at work).
# Argon2id's 64 MiB is most of the peak; the limit leaves the data path about
# 30 MiB.
#
#   scripts/memory-gate.sh [LOCKBOX_BINARY] [LIMIT_MIB]
set -euo pipefail
cd "$(dirname "$0")/.."

lockbox=${1:-target/debug/lockbox}
limit_mib=${2:-96}
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
done
exit "$failed"
