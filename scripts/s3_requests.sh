#!/usr/bin/env bash
# Requests per command on an s3:// archive of a real tree (docs/SCALE.md,
# "Measured on the Linux tree's archive"), counted at the server: moto in
# server mode on 127.0.0.1, every request line of its log for the bucket
# (GET, HEAD, LIST, PUT, POST) between a command's start and end.
#
#   scripts/s3_requests.sh TREE [SAMPLE]    # e.g. $(scripts/linux-tree.sh)
#
# Creates TREE's archive on the server (default profile, the cheapest KDF:
# it is not measured), then counts `log`, `key list`, `info`, `list`, and
# `cat` of SAMPLE (default 40) files under 100 KiB picked with a fixed seed,
# each compared with the file on disk; with root and /dev/fuse, a mount's
# first `ls` too. Prints a line per command, and the cat counts' spread.
# Uses the dev build; moto_server from PATH (pip install 'moto[server]').
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cargo-env.sh
tree=$(cd "${1:?usage: s3_requests.sh TREE [SAMPLE]}" && pwd)
sample=${2:-40}
cargo build -q -p revault_cli --all-features
lockbox=${CARGO_TARGET_DIR:-$PWD/target}/debug/lockbox
work=$(mktemp -d)
server=
cleanup() {
  set +e
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  mountpoint -q "$work/m" 2>/dev/null && "$lockbox" umount "$work/m"
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
endpoint=http://127.0.0.1:$port
moto_server -H 127.0.0.1 -p "$port" 2>"$work/moto.log" >/dev/null &
server=$!
until curl -s "$endpoint/" >/dev/null; do sleep 0.2; done
export AWS_ACCESS_KEY_ID=count AWS_SECRET_ACCESS_KEY=count-secret AWS_REGION=us-east-1
export LOCKBOX_PASSWORD=s3-requests-password
curl -s -X PUT "$endpoint/count" >/dev/null
archive=s3://count/tree.lbox
lb() { "$lockbox" -q --endpoint "$endpoint" --allow-http "$@"; }
requests() { grep -c '"[A-Z]* /count[/? ]' "$work/moto.log" || true; }
# count NAME COMMAND...: the requests COMMAND made, its output in $work/out.
count() {
  local name=$1 before
  shift
  before=$(requests)
  "$@" >"$work/out"
  echo "$name: $(($(requests) - before)) requests"
}

(cd "$(dirname "$tree")" && lb create --kdf-memory 1 --kdf-passes 1 --kdf-lanes 1 -o "$archive" "$(basename "$tree")")
count log lb log "$archive"
count "key list" lb key list "$archive"
count info lb info "$archive"
count list lb list "$archive"

base=$(basename "$tree")
(cd "$(dirname "$tree")" && find "$base" -type f -size -100k | sort) | python3 -c "
import random, sys
random.seed(51)
print('\n'.join(random.sample(sys.stdin.read().split('\n')[:-1], $sample)))" >"$work/sample"
while read -r path; do
  before=$(requests)
  lb cat "$archive" "$path" >"$work/out"
  cmp -s "$work/out" "$(dirname "$tree")/$path" || { echo "cat $path: bytes differ" >&2; exit 1; }
  echo "$(($(requests) - before)) $path"
done <"$work/sample" >"$work/cats"
echo "cat of $sample files under 100 KiB (requests: files):"
cut -d' ' -f1 "$work/cats" | sort -n | uniq -c | awk '{print "  " $2 ": " $1}'

if [ "$(id -u)" -eq 0 ] && [ -e /dev/fuse ]; then
  mkdir "$work/m"
  before=$(requests)
  lb mount "$archive" "$work/m" &
  mount=$!
  until mountpoint -q "$work/m"; do sleep 0.2; done
  ls "$work/m" >/dev/null
  echo "mount, then ls of its top: $(($(requests) - before)) requests"
  "$lockbox" umount "$work/m"
  wait "$mount"
fi
