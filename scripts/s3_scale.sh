#!/usr/bin/env bash
# The 1 GiB measurements of s3:// archives (docs/BENCHMARKS.md, "Archives on
# S3-compatible storage"), against s3s-fs (a Rust S3 server on a directory)
# on 127.0.0.1:
#   - the server's own bound: the archive PUT whole and read back by 4 MiB
#     ranged GETs (one at a time and 8 in flight) with curl;
#   - the scale-mixed-1g tree plus 640 MiB of random data (about 1.1 GiB
#     archived, 69,441 entries): create to a local file and to s3://,
#     list -l and extract of both, compared byte for byte (cmp, diff -r,
#     find), verify;
#   - wall time of create, extract and verify, local file against s3://
#     (S3_SCALE_ROUNDS rounds, default 3, alternating), with the client's
#     CPU and the server's;
#   - the same extract and verify from a plain HTTP range server that costs
#     almost nothing (Python, sendfile), to tell the client's cost from the
#     S3 server's;
#   - `cat` of small files from the remote archive: GETs and bytes counted by
#     the S3 reader (the ignored test revault_lockbox_api/tests/s3_scale.rs)
#     and GETs counted at the server (its request log).
#
#   scripts/s3_scale.sh [WORK_DIR]      # default target/s3-scale; needs ~7 GiB
#
# s3s-fs is taken from $S3S_FS, else PATH, else installed into
# target/s3s-fs (`cargo install s3s-fs`: about 25 minutes on 2 busy cores).
# Uses the dev build (dependencies optimised): the comparison is between two
# runs of the same binary. KDF at the cheapest cost (it is not measured).
set -euo pipefail
cd "$(dirname "$0")/.."
# chacha20's AVX-512 backend even when the environment sets RUSTFLAGS.
. scripts/cargo-env.sh
work=${1:-target/s3-scale}
mkdir -p "$work"
work=$(cd "$work" && pwd)
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
cargo build -q -p revault_cli
cargo build -q -p corpora --example generate
built=${CARGO_TARGET_DIR:-$PWD/target}/debug
lockbox=$built/lockbox
export LOCKBOX_PASSWORD=s3-scale-password
cheap=(--kdf-memory 1 --kdf-passes 1 --kdf-lanes 1)

# 0.14.1: the newest release that builds with rustc 1.95; `binary` builds
# the server, not only the library.
s3s_fs=${S3S_FS:-$(command -v s3s-fs || echo "$PWD/target/s3s-fs/bin/s3s-fs")}
if [ ! -x "$s3s_fs" ]; then
  cargo install -q s3s-fs --version 0.14.1 --locked --features binary --root "$PWD/target/s3s-fs"
fi

if [ ! -d "$work/src/scale-mixed-1g" ]; then
  "$built/examples/generate" scale-mixed-1g "$work/src" 1.0 >/dev/null
  head -c 640M /dev/urandom > "$work/src/scale-mixed-1g/random-640m.bin"
fi

export AWS_ACCESS_KEY_ID=scale AWS_SECRET_ACCESS_KEY=scale-secret AWS_REGION=us-east-1
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
endpoint=http://127.0.0.1:$port
rm -rf "$work/s3root"
mkdir -p "$work/s3root/scale" # a bucket is a directory
server=
start_server() { # RUST_LOG for the server, if any
  stop_server
  RUST_LOG=${1:-error} "$s3s_fs" --host 127.0.0.1 --port "$port" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
    "$work/s3root" > "$work/server.log" 2>&1 &
  server=$!
  wait_for_server s3s-fs
}
wait_for_server() { # its name; its output is in $work/server.log
  for _ in $(seq 100); do curl -s -o /dev/null "$endpoint" && return; sleep 0.1; done
  echo "$1 did not start: $(cat "$work/server.log")" >&2
  exit 1
}
stop_server() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
  server=
}
trap stop_server EXIT
start_server
s3=(--endpoint "$endpoint" --allow-http)
url=s3://scale/mixed-1g.lbox

cpu_of() { # a process's user + system CPU seconds so far
  awk -v tck="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / tck }' "/proc/$1/stat"
}
timed() { # label, then the command; prints "label: wall, client CPU (user +
  # system), the server's CPU meanwhile (when $server runs), load average"
  local label=$1 s0=0 s1=0 load wall user sys
  shift
  load=$(cut -d' ' -f1 /proc/loadavg)
  if [ -n "$server" ]; then s0=$(cpu_of "$server"); fi
  # bash's own `time`: it also times shell functions, children included.
  local TIMEFORMAT='%R %U %S'
  { time "$@" 2>&3; } 3>&2 2> "$work/time.txt"
  if [ -n "$server" ]; then s1=$(cpu_of "$server"); fi
  read -r wall user sys < "$work/time.txt"
  printf '%-32s %6.2f s   client %5.2f + %5.2f s CPU   server %5.2f s CPU   load %s\n' \
    "$label" "$wall" "$user" "$sys" "$(echo "$s1 - $s0" | bc -l)" "$load"
}

rm -f "$work/local.lbox"
timed "create (file)" "$lockbox" -q create "${cheap[@]}" -o "$work/local.lbox" -C "$work/src" scale-mixed-1g
size=$(stat -c %s "$work/local.lbox")
echo "archive: $size bytes"

# The server's own bound, on the same bytes: a PUT of the whole archive
# and the archive read back in 4 MiB ranges, as lockbox's read-ahead asks.
sign=(--aws-sigv4 "aws:amz:$AWS_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')
object=$endpoint/scale/bound.bin
timed "read the archive (file)" sh -c 'cat "$1" > /dev/null' sh "$work/local.lbox"
timed "curl PUT whole (server)" curl -sf "${sign[@]}" -T "$work/local.lbox" "$object" -o /dev/null
chunk=$((4 << 20))
ranges() { for ((at = 0; at < size; at += chunk)); do echo "$at-$((at + chunk - 1))"; done; }
get_ranges() { # in flight
  ranges | xargs -P "$1" -I{} curl -sf "${sign[@]}" -r {} "$object" -o /dev/null
}
timed "curl 4 MiB GETs, 1 in flight" get_ranges 1
timed "curl 4 MiB GETs, 8 in flight" get_ranges 8
curl -sf "${sign[@]}" -X DELETE "$object" -o /dev/null

timed "create (s3)" "$lockbox" -q "${s3[@]}" create --overwrite "${cheap[@]}" -o "$url" -C "$work/src" scale-mixed-1g
cmp "$work/local.lbox" "$work/s3root/scale/mixed-1g.lbox" >/dev/null 2>&1 \
  && echo "note: the two archives are byte-identical" \
  || echo "the two archives differ (random salts, keys and nonces), as expected"

"$lockbox" -q list -l "$work/local.lbox" > "$work/list-file.txt"
"$lockbox" -q "${s3[@]}" list -l "$url" > "$work/list-s3.txt"
cmp "$work/list-file.txt" "$work/list-s3.txt"
echo "list -l: identical, $(wc -l < "$work/list-s3.txt") entries"

# Extraction and verification, local file and s3:// alternating (medians:
# docs/BENCHMARKS.md). Trees go to $S3_SCALE_OUT (default: WORK_DIR; the
# measurements in BENCHMARKS extract to /dev/shm).
out=${S3_SCALE_OUT:-$work}
mkdir -p "$out"
rounds=${S3_SCALE_ROUNDS:-3}
extract() { # where from (file, s3, plain), then lockbox's options and the archive
  local from=$1
  shift
  rm -rf "$out/out-$from"
  mkdir -p "$out/out-$from"
  timed "extract --no-sync ($from) $round" "$lockbox" -q extract --no-sync -C "$out/out-$from" "$@"
}
from_file=("$work/local.lbox")
from_s3=("${s3[@]}" "$url")
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then
    extract file "${from_file[@]}"; extract s3 "${from_s3[@]}"
  else
    extract s3 "${from_s3[@]}"; extract file "${from_file[@]}"
  fi
done
diff -r --no-dereference "$out/out-file" "$out/out-s3"
diff -r --no-dereference "$work/src" "$out/out-s3"
meta() { (cd "$1" && find . -mindepth 1 -printf '%p %y %m %n %s %T@ %l\n' | sort); }
cmp <(meta "$out/out-file") <(meta "$out/out-s3")
echo "extract: file and s3 trees identical (diff -r, find), and equal to the source"
rm -rf "$out/out-file" "$out/out-s3"
for round in $(seq "$rounds"); do
  timed "verify (file) $round" "$lockbox" -q verify "$work/local.lbox"
  timed "verify (s3) $round" "$lockbox" -q "${s3[@]}" verify "$url"
done

# The client's own cost: the same reads from a server that costs almost
# nothing (Python, os.sendfile, TCP_NODELAY; no authentication, GET and HEAD
# only, so not an S3 server: it stands in for none in the tests). What the
# s3:// runs above spend beyond these is the S3 server's.
stop_server
mkdir -p "$work/plain/scale"
ln -f "$work/local.lbox" "$work/plain/scale/mixed-1g.lbox"
cat > "$work/range_server.py" <<'PY'
import email.utils, http.server, os, re, socket, stat, sys

root = sys.argv[2]

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def answer(self, body):
        path = os.path.join(root, self.path.split("?")[0].lstrip("/"))
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise IsADirectoryError(path)
        except OSError:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size, etag = st.st_size, '"%x-%x"' % (st.st_size, st.st_mtime_ns)
        if self.headers.get("If-Match", etag) != etag:
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start, end = 0, size
        asked = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", "").strip())
        if asked and asked.group(1) == "":
            start = max(0, size - int(asked.group(2)))
        elif asked:
            start = int(asked.group(1))
            end = min(size, int(asked.group(2)) + 1) if asked.group(2) else size
        self.send_response(206 if asked else 200)
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        self.send_header("Content-Length", str(end - start if body else size))
        if asked:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, size))
        self.end_headers()
        if body:
            with open(path, "rb") as f:
                while start < end:
                    sent = os.sendfile(self.connection.fileno(), f.fileno(), start, end - start)
                    if sent == 0:
                        break
                    start += sent

    def do_GET(self):
        self.answer(True)

    def do_HEAD(self):
        self.answer(False)

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
PY
python3 "$work/range_server.py" "$port" "$work/plain" > "$work/server.log" 2>&1 &
server=$!
wait_for_server "the range server"
for round in $(seq "$rounds"); do
  extract plain "${from_s3[@]}"
  timed "verify (plain) $round" "$lockbox" -q "${s3[@]}" verify "$url"
done
diff -r --no-dereference "$work/src" "$out/out-plain"
rm -rf "$out/out-plain"
stop_server

# GETs counted at the server: its log has one "resolved route" line per
# request, naming the operation.
start_server s3s::ops=debug
gets() { grep -ac 'resolved route.*GetObject' "$work/server.log" || true; }
for path in scale-mixed-1g/README.md $(cd "$work/src" && find scale-mixed-1g -type f -size -8k | sed -n '100p;20000p'); do
  before=$(gets)
  "$lockbox" -q "${s3[@]}" cat "$url" "$path" | cmp - "$work/src/$path"
  echo "cat $path: $(($(gets) - before)) GETs at the server"
  LOCKBOX_S3_ENDPOINT=$endpoint LOCKBOX_S3_ARCHIVE=$url LOCKBOX_S3_CAT=$path LOCKBOX_S3_CAT_SOURCE=$work/src/$path \
    cargo test -q -p revault_lockbox_api --features s3 --test s3_scale -- --ignored --nocapture 2>&1 | grep -E "^cat |panicked|FAILED" || true
done
