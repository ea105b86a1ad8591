#!/usr/bin/env bash
# The 1 GiB measurements of s3:// archives (docs/BENCHMARKS.md, "Archives on
# S3-compatible storage"), against a moto server on 127.0.0.1:
#   - the scale-mixed-1g tree plus 640 MiB of random data (about 1.1 GiB
#     archived, 67,727 files): create to a local file and to s3://, list -l
#     and extract of both, compared byte for byte (diff -r, find), verify;
#   - wall time of create and extract, local file against s3://;
#   - `cat` of small files from the remote archive: GETs and bytes counted by
#     the S3 reader (the ignored test revault_lockbox_api/tests/s3_scale.rs)
#     and GETs counted at the server (moto's request log).
#
#   scripts/s3_scale.sh [WORK_DIR]      # default target/s3-scale; needs ~6 GiB
#
# Uses the dev build (dependencies optimised): the comparison is between two
# runs of the same binary. KDF at the cheapest cost (it is not measured).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-target/s3-scale}
mkdir -p "$work"
work=$(cd "$work" && pwd)
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
cargo build -q -p revault_cli
cargo build -q -p corpora --example generate
lockbox=$PWD/target/debug/lockbox
export LOCKBOX_PASSWORD=s3-scale-password
cheap=(--kdf-memory 1 --kdf-passes 1 --kdf-lanes 1)

if [ ! -d "$work/src/scale-mixed-1g" ]; then
  target/debug/examples/generate scale-mixed-1g "$work/src" 1.0 >/dev/null
  head -c 640M /dev/urandom > "$work/src/scale-mixed-1g/random-640m.bin"
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
moto_server -H 127.0.0.1 -p "$port" 2> "$work/moto.log" >/dev/null &
moto=$!
trap 'kill $moto 2>/dev/null; wait $moto 2>/dev/null || true' EXIT
endpoint=http://127.0.0.1:$port
for _ in $(seq 100); do curl -s -o /dev/null "$endpoint" && break; sleep 0.2; done
curl -s -X PUT -H 'Authorization: AWS4-HMAC-SHA256 Credential=scale/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0' "$endpoint/scale" >/dev/null
export AWS_ACCESS_KEY_ID=scale AWS_SECRET_ACCESS_KEY=scale-secret AWS_REGION=us-east-1
s3=(--endpoint "$endpoint" --allow-http)
url=s3://scale/mixed-1g.lbox

timed() { # label, then the command; prints "label: seconds"
  local label=$1 start end
  shift
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  printf '%-28s %6.2f s\n' "$label" "$(echo "$end - $start" | bc -l)"
}

rm -f "$work/local.lbox"
timed "create (file)" "$lockbox" -q create "${cheap[@]}" -o "$work/local.lbox" -C "$work/src" scale-mixed-1g
timed "create (s3)" "$lockbox" -q "${s3[@]}" create --overwrite "${cheap[@]}" -o "$url" -C "$work/src" scale-mixed-1g
ls -l "$work/local.lbox"

"$lockbox" -q list -l "$work/local.lbox" > "$work/list-file.txt"
"$lockbox" -q "${s3[@]}" list -l "$url" > "$work/list-s3.txt"
cmp "$work/list-file.txt" "$work/list-s3.txt"
echo "list -l: identical, $(wc -l < "$work/list-s3.txt") entries"

for round in 1 2; do
  rm -rf "$work/out-file" "$work/out-s3"
  mkdir -p "$work/out-file" "$work/out-s3"
  timed "extract --no-sync (file) $round" "$lockbox" -q extract --no-sync -C "$work/out-file" "$work/local.lbox"
  timed "extract --no-sync (s3) $round" "$lockbox" -q "${s3[@]}" extract --no-sync -C "$work/out-s3" "$url"
done
diff -r --no-dereference "$work/out-file" "$work/out-s3"
diff -r --no-dereference "$work/src" "$work/out-s3"
meta() { (cd "$1" && find . -printf '%p %y %m %n %s %T@ %l\n' | sort); }
cmp <(meta "$work/out-file") <(meta "$work/out-s3")
echo "extract: file and s3 trees identical (diff -r, find), and equal to the source"
rm -rf "$work/out-file" "$work/out-s3"
timed "verify (s3)" "$lockbox" -q "${s3[@]}" verify "$url"

for path in scale-mixed-1g/README.md $(cd "$work/src" && find scale-mixed-1g -type f -size -8k | sed -n '100p;20000p'); do
  before=$(grep -c "\"GET /scale/mixed-1g.lbox " "$work/moto.log" || true)
  "$lockbox" -q "${s3[@]}" cat "$url" "$path" | cmp - "$work/src/$path"
  after=$(grep -c "\"GET /scale/mixed-1g.lbox " "$work/moto.log" || true)
  echo "cat $path: $((after - before)) GETs at the server"
  LOCKBOX_S3_ENDPOINT=$endpoint LOCKBOX_S3_ARCHIVE=$url LOCKBOX_S3_CAT=$path LOCKBOX_S3_CAT_SOURCE=$work/src/$path \
    cargo test -q -p revault_lockbox_api --features s3 --test s3_scale -- --ignored --nocapture 2>&1 | grep -E "^cat |panicked|FAILED" || true
done
