#!/usr/bin/env bash
# Damage (not a cut) in the middle of a real tree's index (issue 23): one
# byte flipped in an entries leaf of the archive scripts/cut-test.sh makes
# (WORK_DIR/linux.lbox, one session), a quarter, half and three quarters
# of the way along, then `extract --keep-going` of each. Checks that every
# restored file equals the source (SHA-256), and that the files not
# restored are one contiguous run of the index order (`lockbox list` of the
# intact archive), starting at the path the report names for the lost leaf
# when it can name one: every file outside the damaged leaf comes back.
#
# Usage: scripts/leaf-damage-test.sh [WORK_DIR]   (default /tmp/cut-test;
# what scripts/cut-test.sh needs, it needs)
set -euo pipefail
WORK=${1:-/tmp/cut-test}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCKBOX=${LOCKBOX:-$ROOT/target/debug/lockbox}
export LOCKBOX_PASSWORD=cut-test
mkdir -p "$WORK"
cd "$WORK"
# The archive and the source's manifest, as the cut test makes them.
[ -f linux.lbox ] && [ -f manifest ] || CUTS=0 "$ROOT/scripts/cut-test.sh" "$WORK"

# The entries leaves (frame kind 2, table 1, level 0) of the one session,
# walked by their frames (FORMAT.md §3.4, §3.9): a byte flipped inside the
# sealed bytes of the leaf $1 quarters of the way along (1, 2 or 3).
damage() {
python3 - linux.lbox damaged.lbox "$1" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
slot_len = int.from_bytes(data[30:32], "little")
at = 32 + 16 * slot_len
at += 64 + int.from_bytes(data[at + 60:at + 64], "little")
leaves = []
while not data[at:at + 8] == b"LBOXTAIL":
    f = data[at:at + 20]
    if (f[0], f[1], f[2]) == (2, 1, 0):
        leaves.append((at, int.from_bytes(f[4:12], "little")))
    at += 20 + int.from_bytes(f[16:20], "little")
at, seq = leaves[len(leaves) * int(sys.argv[3]) // 4]
data[at + 20 + 100] ^= 1
open(sys.argv[2], "wb").write(data)
print(f"{len(leaves)} entries leaves; flipped byte {at + 120} in leaf #{seq}", file=sys.stderr)
EOF
}

# The restored files against the source and the intact archive's order.
check() {
python3 - manifest got order report <<'EOF'
import re, sys

def digests(listing):
    """Path (without its leading ./) to SHA-256, from sha256sum's output."""
    out = {}
    for line in open(listing, encoding="utf-8", errors="surrogateescape"):
        digest, path = line.rstrip("\n").split("  ", 1)
        out[path[2:]] = digest
    return out

manifest, got = digests(sys.argv[1]), digests(sys.argv[2])
order = [l.rstrip("\n") for l in open(sys.argv[3], encoding="utf-8", errors="surrogateescape")]
wrong = sum(1 for p, d in got.items() if manifest.get(p) != d)
files = [p for p in order if p in manifest]
missing = [i for i, p in enumerate(files) if p not in got]
report = open(sys.argv[4], encoding="utf-8", errors="surrogateescape").read()
m = re.search(r"entries leaf #(\d+) was lost \(its entries from (.+?) on\)", report)
contiguous = bool(missing) and missing == list(range(missing[0], missing[-1] + 1))
# Between the path the report names (when a surviving internal node
# records the lost leaf's first path) and the first file not restored, no
# file: the run starts where the lost leaf does.
named = m.group(2).strip('"') if m else None
starts = None if named is None else bool(missing) and named in order and all(
    p not in manifest for p in order[order.index(named):order.index(files[missing[0]])])
print(f"files {len(files)}, restored {len(got)}, wrong {wrong}, not restored {len(missing)}"
      f" (one contiguous run of the index: {contiguous}; from the path the report names:"
      f" {'not named' if starts is None else starts})")
ok = wrong == 0 and contiguous and starts is not False and len(got) + len(missing) == len(files)
sys.exit(0 if ok else 1)
EOF
}

"$LOCKBOX" -q list linux.lbox > order
status=0
for quarter in 1 2 3; do
    damage "$quarter"
    rm -rf out && mkdir out
    "$LOCKBOX" extract -q --keep-going -C out damaged.lbox > /dev/null 2> report || true
    grep -E "lost: " report | head -5
    (cd out && find . -type f -print0 | xargs -0 -r sha256sum | LC_ALL=C sort) > got
    check || status=1
done
rm -rf out got report damaged.lbox
exit $status
