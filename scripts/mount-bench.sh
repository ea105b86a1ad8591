#!/usr/bin/env bash
# The `lockbox mount` targets of docs/BENCHMARKS.md ("Mount (issue 26)"),
# measured on one tree in one run, as root (the mount, bindfs and
# dropping caches need it):
#
#   scripts/mount-bench.sh                 # the Linux 6.1 tree (linux-source-6.1)
#   SRC=/some/tree scripts/mount-bench.sh  # any tree
#   BIG=/path/1M.lbox scripts/mount-bench.sh   # also: ls -lR of a 1M-entry archive, peak RSS
#
# Installs with apt-get what is missing: linux-source-6.1 (unless SRC is
# given), bindfs (the FUSE passthrough floor), GNU time, and restic when
# Debian has it (then restic's mount of the same tree joins). LOCKBOX= names
# the binary (default: target/release/lockbox, built if missing). Work goes
# to WORK= (default /var/tmp/lockbox-mount-bench). Run it on a quiet machine:
# the numbers are wall times of one run each, in alternating order.
set -euo pipefail
cd "$(dirname "$0")/.."
# chacha20's AVX-512 backend even when the environment sets RUSTFLAGS.
. scripts/cargo-env.sh

WORK=${WORK:-/var/tmp/lockbox-mount-bench}
LOCKBOX=${LOCKBOX:-target/release/lockbox}
export LOCKBOX_PASSWORD=${LOCKBOX_PASSWORD:-mount bench}
[ "$(id -u)" -eq 0 ] || { echo "mount-bench: run as root" >&2; exit 2; }

need=()
command -v bindfs >/dev/null || need+=(bindfs)
[ -x /usr/bin/time ] || need+=(time)
[ -n "${SRC:-}" ] || [ -f /usr/src/linux-source-6.1.tar.xz ] || need+=(linux-source-6.1)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
command -v restic >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq restic >/dev/null 2>&1 || true
[ -x "$LOCKBOX" ] || cargo build --release -p revault_cli

mkdir -p "$WORK"
if [ -z "${SRC:-}" ]; then
  SRC=$WORK/linux-source-6.1
  [ -d "$SRC" ] || tar -xf /usr/src/linux-source-6.1.tar.xz -C "$WORK"
fi
ARCHIVE=$WORK/tree.lbox
MNT=$WORK/mnt
PASS=$WORK/bindfs
mkdir -p "$MNT" "$PASS"
[ -f "$ARCHIVE" ] || "$LOCKBOX" create -q -o "$ARCHIVE" -C "$(dirname "$SRC")" "$(basename "$SRC")"

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
mounted() { grep -q " $1 " /proc/self/mountinfo; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
start_mount() {
  "$LOCKBOX" mount "$ARCHIVE" "$MNT" 2>"$WORK/mount.err" &
  MOUNT_PID=$!
  while ! mounted "$MNT"; do sleep 0.005; done
}
stop_mount() { "$LOCKBOX" umount "$MNT"; wait "$MOUNT_PID"; }
trap 'mounted "$MNT" && umount "$MNT"; mounted "$PASS" && umount "$PASS"; true' EXIT

echo "== tree: $SRC ($(find "$SRC" -mindepth 1 | wc -l) paths); archive $(du -h "$ARCHIVE" | cut -f1)"

# The KDF alone: `cat` of a small file opens the archive and reads a page
# (caches dropped, as before the mount below).
small=$(cd "$(dirname "$SRC")" && find "$(basename "$SRC")" -type f -size -8k -print -quit)
[ -n "$small" ] || small=$(cd "$(dirname "$SRC")" && find "$(basename "$SRC")" -type f -print -quit)
drop_caches
t0=$(now); "$LOCKBOX" cat "$ARCHIVE" "$small" >/dev/null; t1=$(now)
echo "lockbox cat of one small file (KDF + open + read): $(secs "$t0" "$t1") s"

# Mount to first ls (the target: at most 0.2 s beyond the KDF above).
drop_caches
t0=$(now); start_mount; ls "$MNT/$(basename "$SRC")" >/dev/null; t1=$(now)
echo "mount to first ls: $(secs "$t0" "$t1") s"

# Bytes read for one small file: the mount process's read(2)/pread(2) bytes.
before=$(awk '/^rchar/ {print $2}' /proc/$MOUNT_PID/io)
cat "$MNT/$small" >/dev/null
after=$(awk '/^rchar/ {print $2}' /proc/$MOUNT_PID/io)
echo "one small file through the mount: $((after - before)) bytes read (target <= 1572864)"

# Whole tree: nothing differs; as many paths as `lockbox list`.
diff -r --no-dereference "$SRC" "$MNT/$(basename "$SRC")" && echo "diff -r: no difference"
echo "find paths: $(find "$MNT" -mindepth 1 | wc -l); lockbox list: $("$LOCKBOX" list "$ARCHIVE" | wc -l)"
stop_mount

# tar and grep over the mount beside the same over bindfs, two backing
# conditions: cold (caches dropped: each reads its own backing store from
# disk, the archive 0.2 GB or the tree 1.4 GB) and warm (the backing store
# read once before, so what is left is the FUSE path itself). CPU is the
# FUSE server's (user + system) over both commands.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
tick=$(getconf CLK_TCK)
bindfs --no-allow-other "$SRC" "$PASS"
BINDFS_PID=$(pgrep -n -x bindfs)
for round in 1 2; do
  order="lockbox bindfs"; [ "$round" = 2 ] && order="bindfs lockbox"
  for cond in cold warm; do
    for what in $order; do
      drop_caches
      if [ "$cond" = warm ]; then
        if [ "$what" = lockbox ]; then cat "$ARCHIVE" >/dev/null; else tar -cf - -C "$SRC" . | wc -c >/dev/null; fi
      fi
      if [ "$what" = lockbox ]; then start_mount; dir=$MNT/$(basename "$SRC"); pid=$MOUNT_PID; else dir=$PASS; pid=$BINDFS_PID; fi
      c0=$(cpu "$pid")
      t0=$(now); tar -cf - -C "$dir" . | wc -c >/dev/null; t1=$(now)
      t2=$(now); grep -r -l include "$dir" | wc -l >/dev/null; t3=$(now)
      c1=$(cpu "$pid")
      echo "round $round $cond $what: tar -cf - | wc -c $(secs "$t0" "$t1") s; grep -r $(secs "$t2" "$t3") s; server CPU $(echo "scale=1; ($c1 - $c0) / $tick" | bc) s"
      [ "$what" = lockbox ] && stop_mount
    done
  done
done
umount "$PASS"

if command -v restic >/dev/null; then
  export RESTIC_PASSWORD=$LOCKBOX_PASSWORD RESTIC_REPOSITORY=$WORK/restic
  [ -d "$RESTIC_REPOSITORY" ] || { restic init -q && restic backup -q "$SRC"; }
  restic mount "$PASS" >/dev/null 2>&1 &
  RESTIC_PID=$!
  while ! mounted "$PASS"; do sleep 0.05; done
  dir=$(find "$PASS/snapshots/latest/" -maxdepth 6 -type d -name "$(basename "$SRC")" -print -quit)
  drop_caches
  t0=$(now); tar -cf - -C "$dir" . | wc -c >/dev/null; t1=$(now)
  echo "restic mount: tar -cf - | wc -c $(secs "$t0" "$t1") s"
  umount "$PASS"; wait "$RESTIC_PID" || true
fi

# ls -lR of a large archive's mount: the mount process's peak RSS
# (target: at most 100 MiB for 1M entries).
if [ -n "${BIG:-}" ]; then
  ARCHIVE=$BIG
  start_mount
  ls -lR "$MNT" | wc -l
  echo "ls -lR of $BIG: mount peak RSS $(awk '/^VmHWM/ {print $2, $3}' /proc/$MOUNT_PID/status)"
  stop_mount
fi
