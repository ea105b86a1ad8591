#!/usr/bin/env bash
# Cut a real source tree's archive at CUTS points (default 50) spread over
# its length, and count at each cut:
#   lockbox: files `extract --keep-going` restores whole (each compared with
#            the source by SHA-256), files it writes that differ (must be 0),
#            and the files whose entries record and content lie wholly
#            before the cut (from the `proof_ends` example run on the whole
#            archive: where each file's last needed unit ends);
#   tar | zstd | age, cut at the same fraction of its length: files
#            restored whole, and files left partial or wrong.
# Counts, not times: it may run on a loaded machine.
#
# Usage: scripts/cut-test.sh [WORK_DIR]   (default /tmp/cut-test)
# Needs /usr/src/linux-source-6.1.tar.xz (apt-get install -y linux-source-6.1),
# age, age-keygen, zstd, GNU tar, and built binaries:
#   cargo build -p revault_cli && cargo build -p revault_lockbox_api --example proof_ends
set -euo pipefail
WORK=${1:-/tmp/cut-test}
CUTS=${CUTS:-50}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCKBOX=${LOCKBOX:-$ROOT/target/debug/lockbox}
PROOF=${PROOF:-$ROOT/target/debug/examples/proof_ends}
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
export LOCKBOX_PASSWORD=cut-test
mkdir -p "$WORK"
cd "$WORK"
if [ ! -d src ]; then
    mkdir src.part
    tar -C src.part -xf "$TARBALL"
    mv src.part src
fi
tree=$(ls src)
[ -f manifest ] || (cd src && find . -type f -print0 | xargs -0 sha256sum | LC_ALL=C sort) > manifest
[ -f linux.lbox ] || "$LOCKBOX" create -q --kdf-memory 1024 --kdf-passes 1 --kdf-lanes 1 -o linux.lbox -C src "$tree"
[ -f key.txt ] || age-keygen -o key.txt 2>/dev/null
[ -f linux.tar.zst.age ] || tar -C src -cf - "$tree" | zstd -3 -q | age -r "$(age-keygen -y key.txt)" > linux.tar.zst.age
"$PROOF" linux.lbox > proof
files=$(wc -l < manifest)
len=$(stat -c %s linux.lbox)
len2=$(stat -c %s linux.tar.zst.age)
echo "tree: $tree, $files files; linux.lbox $len bytes; linux.tar.zst.age $len2 bytes"

# Files under out/ equal to the source, and the others.
count() {
    (cd "$1" && find . -type f -print0 | xargs -0 -r sha256sum | LC_ALL=C sort) > got
    local good
    good=$(LC_ALL=C comm -12 got manifest | wc -l)
    echo "$good $(( $(wc -l < got) - good ))"
}

printf '%4s %12s %9s %9s %9s %7s | %12s %9s %9s\n' cut bytes before restored wrong ratio tar-bytes restored partial
sum_before=0; sum_restored=0; sum_tar=0; worst=100
for i in $(seq 1 "$CUTS"); do
    cut=$(( len * i / (CUTS + 1) ))
    head -c "$cut" linux.lbox > cut.lbox
    rm -rf out && mkdir out
    "$LOCKBOX" extract -q --keep-going -C out cut.lbox > /dev/null 2>&1 || true
    read -r restored wrong < <(count out)
    before=$(awk -F'\t' -v c="$cut" '$1 <= c' proof | wc -l)
    cut2=$(( len2 * i / (CUTS + 1) ))
    rm -rf out && mkdir out
    head -c "$cut2" linux.tar.zst.age | age -d -i key.txt 2>/dev/null | zstd -dq 2>/dev/null \
        | tar -C out -xf - 2>/dev/null || true
    read -r tar_restored tar_partial < <(count out)
    ratio=$(awk -v r="$restored" -v b="$before" 'BEGIN { printf "%.2f", b ? 100 * r / b : 100 }')
    worst=$(awk -v w="$worst" -v r="$ratio" 'BEGIN { print (r < w) ? r : w }')
    printf '%4d %12d %9d %9d %9d %6s%% | %12d %9d %9d\n' "$i" "$cut" "$before" "$restored" "$wrong" "$ratio" \
        "$cut2" "$tar_restored" "$tar_partial"
    sum_before=$((sum_before + before)); sum_restored=$((sum_restored + restored)); sum_tar=$((sum_tar + tar_restored))
done
rm -rf out cut.lbox got
echo "total over $CUTS cuts: lockbox restored $sum_restored of $sum_before files before the cuts" \
     "(worst cut ${worst}%); tar | zstd | age restored $sum_tar"
