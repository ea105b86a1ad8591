#!/usr/bin/env bash
# Issue 50's damage trials: an archive with a 5 % recovery record beside
# the same archive protected by `par2create -r5`, each damaged the same way
# and repaired:
#   - TRIALS (default 20) contiguous overwrites of 4.5 % of the archive's
#     bytes, starting at offsets spread over it, the first at byte 0 and
#     the last ending at the last byte (so the first and last KiB are hit);
#   - 0.5 % of its 4 KiB blocks overwritten at random (seeded);
#   - the header and slot table zeroed (the first 64 KiB).
# Each: copy, damage, `lockbox repair` (then `cmp` with the undamaged
# archive) and, on another copy with the same damage, `par2repair` (then
# `cmp`); outcomes and wall times in a table.
#
# Usage: scripts/recovery-trials.sh ARCHIVE_OR_TREE [WORK_DIR]
#   ARCHIVE_OR_TREE: an archive made with `--recovery 5` and the password in
#   LOCKBOX_PASSWORD, or a directory, archived here with `--recovery 5`.
#   WORK_DIR: default /tmp/recovery-trials (removed at the end unless KEEP=1).
# PAR2=0 leaves par2 out (lockbox's side only, for an archive too large
# for par2's time).
# Needs par2 (apt-get install -y par2) and a built lockbox
# (cargo build -p revault_cli; LOCKBOX= to use another). Keep inputs small on
# a shared machine: each trial copies the archive twice.
set -euo pipefail
INPUT=${1:?usage: $0 ARCHIVE_OR_TREE [WORK_DIR]}
WORK=${2:-/tmp/recovery-trials}
TRIALS=${TRIALS:-20}
SEED=${SEED:-50}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCKBOX=${LOCKBOX:-$ROOT/target/debug/lockbox}
export LOCKBOX_PASSWORD=${LOCKBOX_PASSWORD:-recovery-trials}
PAR2=${PAR2:-1}
[ "$PAR2" = 0 ] || command -v par2 > /dev/null || { echo "par2 not found: apt-get install -y par2" >&2; exit 2; }
INPUT=$(realpath "$INPUT")
mkdir -p "$WORK"
cd "$WORK"
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"' EXIT

if [ -d "$INPUT" ]; then
    "$LOCKBOX" create -q --recovery 5 --kdf-memory 8 --kdf-passes 1 --kdf-lanes 1 \
        -o original.lbox -C "$(dirname "$INPUT")" "$(basename "$INPUT")"
else
    cp "$INPUT" original.lbox
fi
len=$(stat -c %s original.lbox)
echo "lockbox: $("$LOCKBOX" --version | head -1); par2: $(par2 -V 2>&1 | head -1)"
echo "archive: $len bytes with its recovery record"

# par2 over the same archive: 5 % redundancy; for random sectors, 4 KiB
# blocks (its block size must be a multiple of 4; smaller blocks are more
# blocks than par2 allows on large files, so the larger of 4 KiB and
# what 32,768 blocks need).
block=$(( (len / 32768 + 4095) / 4096 * 4096 ))
[ "$block" -lt 4096 ] && block=4096
mkdir par && cp original.lbox par/a.lbox
if [ "$PAR2" != 0 ]; then
    t0=$(date +%s.%N)
    par2 create -q -q -r5 -s"$block" par/a.lbox.par2 par/a.lbox > /dev/null
    t1=$(date +%s.%N)
    par_len=$(cat par/a.lbox*.par2 | wc -c)
    printf 'par2 create -r5 -s%s: %s bytes of parity, %.2f s\n' "$block" "$par_len" "$(echo "$t1 - $t0" | bc)"
fi

# damage FILE KIND ARG: overwrite bytes of FILE in place.
damage() {
    local file=$1 kind=$2 arg=$3
    case $kind in
        run)   # ARG: start offset; 4.5 % of the archive's bytes
            local n=$(( len * 45 / 1000 ))
            head -c "$n" /dev/urandom | dd of="$file" bs=1M seek="$arg" oflag=seek_bytes conv=notrunc status=none ;;
        sectors)   # ARG: seed; 0.5 % of the 4 KiB blocks
            local blocks=$(( len / 4096 )) count=$(( len / 4096 * 5 / 1000 + 1 ))
            python3 - "$file" "$blocks" "$count" "$arg" <<'EOF'
import os, random, sys
path, blocks, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
with open(path, "r+b") as f:
    for b in rng.sample(range(blocks), count):
        f.seek(b * 4096)
        f.write(os.urandom(4096))
EOF
            ;;
        head)  # the header and slot table: the first 64 KiB
            head -c 65536 /dev/zero | dd of="$file" conv=notrunc status=none ;;
    esac
}

printf '%-22s | %-28s %7s | %-12s %7s\n' trial lockbox-repair secs par2repair secs
ok_lockbox=0; ok_par=0; total=0
trial() {
    local label=$1 kind=$2 arg=$3
    total=$((total + 1))
    rm -f trial.lbox par/a.lbox && cp original.lbox trial.lbox
    damage trial.lbox "$kind" "$arg"
    cp trial.lbox par/a.lbox
    local t0 t1 outcome p0 p1 poutcome
    t0=$(date +%s.%N)
    if "$LOCKBOX" repair -q trial.lbox > repair.out 2>&1; then
        if cmp -s trial.lbox original.lbox; then outcome="identical"; ok_lockbox=$((ok_lockbox + 1))
        else outcome="repaired, NOT identical"; fi
    else
        outcome="failed (exit $?)"
    fi
    if grep -q "salvaging instead" repair.out; then outcome="salvaged, $outcome"; fi
    t1=$(date +%s.%N)
    p0=$(date +%s.%N)
    if [ "$PAR2" = 0 ]; then
        poutcome="not run"
    elif par2 repair -q -q par/a.lbox.par2 > /dev/null 2>&1 && cmp -s par/a.lbox original.lbox; then
        poutcome="identical"; ok_par=$((ok_par + 1))
    else
        poutcome="not repaired"
    fi
    p1=$(date +%s.%N)
    rm -f par/a.lbox.1 par/a.lbox.[0-9]*
    printf '%-22s | %-28s %7.2f | %-12s %7.2f\n' "$label" "$outcome" "$(echo "$t1 - $t0" | bc)" \
        "$poutcome" "$(echo "$p1 - $p0" | bc)"
}

run_len=$(( len * 45 / 1000 ))
for i in $(seq 0 $((TRIALS - 1))); do
    start=$(( (len - run_len) * i / (TRIALS - 1) ))
    trial "4.5 % at $start" run "$start"
done
trial "0.5 % random 4 KiB" sectors "$SEED"
trial "header+slots zeroed" head 0
echo "identical after repair: lockbox $ok_lockbox of $total, par2 $ok_par of $total"

# Extraction of the last lockbox repair equals extraction of the original.
mkdir -p x1 x2
"$LOCKBOX" extract -q -C x1 original.lbox
"$LOCKBOX" extract -q -C x2 trial.lbox
diff -r x1 x2 > /dev/null && echo "extraction after repair equals the original's"
if [ -d "$INPUT" ]; then
    diff -r --no-dereference "$INPUT" "x2/$(basename "$INPUT")" > /dev/null && echo "and equals the source tree" || echo "extraction DIFFERS from the source tree"
fi
