#!/usr/bin/env bash
# The real corpora of issue 28, on tmpfs, alternating the tools' order:
# the Linux 6.1 source tree (password mode, against tar | zstd -3 -T0 |
# age -r, tar | age -r and restic), then in key mode (X25519) the media
# corpus (1 GiB of 1-8 MiB incompressible files) and one 1 GiB random
# file. Corpora, archives and extractions all live under /dev/shm. gpg
# (minutes a run at these sizes) and lockbox's append row are skipped.
#
#   scripts/bench-real.sh [ITERATIONS]     # default 5
#
# Results: /dev/shm/lockbox-real/{linux,media,random-1g}.md; the Linux tree is
# unpacked by scripts/linux-tree.sh (installing linux-source-6.1 when
# missing) into /dev/shm/lockbox-real/corpora-real.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/cargo-env.sh"
iterations=${1:-5}
root=/dev/shm/lockbox-real
mkdir -p "$root"
tree=$("$repo/scripts/linux-tree.sh" "$root/corpora-real")
cd "$repo"
cargo build --release -q -p pgp_compare -p revault_cli
bench=$repo/target/release/pgp_compare
common=(--iterations "$iterations" --root "$root" --extract-root "$root/extract")
mkdir -p "$root/extract"
skip=(--skip gpg --skip add)
uptime
"$bench" "${common[@]}" "${skip[@]}" --tree "$tree" --output "$root/linux.md" >/dev/null
uptime
"$bench" "${common[@]}" "${skip[@]}" --mode key --scenario media-1g --output "$root/media.md" >/dev/null
uptime
# large-randomish (16 MiB of incompressible bytes) at 64 times its size: 1 GiB.
"$bench" "${common[@]}" "${skip[@]}" --mode key --scenario large-randomish --size-factor 64 \
    --output "$root/random-1g.md" >/dev/null
uptime
echo "results: $root/linux.md $root/media.md $root/random-1g.md"
