#!/usr/bin/env bash
# The full lockbox vs gpg comparison (docs/BENCHMARKS.md).
#
#   scripts/bench.sh                                   # default scenarios, 3 iterations
#   scripts/bench.sh --size-factor 0.01 --iterations 1 # CI smoke, about 10 s
#   scripts/bench.sh --scale                           # adds the GiB-sized scenarios
#   scripts/bench.sh --extract-root /dev/shm           # every tool extracts into a tmpfs
#   scripts/bench.sh --scenario scale-many-files --scale-entries 100000 --lockbox-only
#   scripts/bench.sh --tree "$(scripts/linux-tree.sh)" --scenario media-1g  # real corpora
#
# Installs gpg, GNU time and zstd with apt-get when they are missing (and,
# best effort, age, 7-Zip and restic, which the comparison uses when present), then
# runs the pgp_compare harness. Extra arguments go to the harness; later
# ones win. Results: target/lockbox-gpg-bench/results.md
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# chacha20's AVX-512 backend even when the environment sets RUSTFLAGS.
. "$repo/scripts/cargo-env.sh"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "bench.sh: need root (or sudo) to run: $*" >&2
        return 1
    fi
}

missing=()
command -v gpg >/dev/null || missing+=(gnupg)
command -v tar >/dev/null || missing+=(tar)
command -v zstd >/dev/null || missing+=(zstd)
[ -x /usr/bin/time ] || missing+=(time)
optional=()
command -v age >/dev/null || optional+=(age)
command -v 7zz >/dev/null || optional+=(7zip)
command -v restic >/dev/null || optional+=(restic)

if [ ${#missing[@]} -gt 0 ] || [ ${#optional[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null; then
        as_root apt-get update -qq || true
        if [ ${#missing[@]} -gt 0 ]; then
            as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
        fi
        for pkg in "${optional[@]}"; do
            as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" \
                || echo "bench.sh: could not install $pkg; the harness will skip it" >&2
        done
    elif [ ${#missing[@]} -gt 0 ]; then
        echo "bench.sh: missing ${missing[*]} and no apt-get; the harness will skip what it cannot run" >&2
    fi
fi

cd "$repo"
exec cargo run --release -p pgp_compare -- \
    --iterations 3 --root target/lockbox-gpg-bench --output target/lockbox-gpg-bench/results.md "$@"
