#!/usr/bin/env bash
# The tests on a machine that has only Rust and the base system: installs
# the tools the tests use (apt-get, as root or through sudo), then runs
# `cargo test --workspace --all-features` with any arguments given
# (`scripts/test.sh -p revault_cli --test integration toolbox::`). .ci/run
# calls it, with every LOCKBOX_REQUIRE_* switch set: a test that cannot run
# for want of what this script installs then fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
# chacha20's AVX-512 backend even when the environment sets RUSTFLAGS.
. scripts/cargo-env.sh

# Tools the tests and the harness smoke run use: gpg (the comparison),
# tar (GNU tar: the tar round trips, and the comparison), zstd, GNU time
# (peak RSS), tzdata (the real-tree round trip), ssh-keygen and age-keygen
# (keys made by the real tools; age also joins the comparison), groff and
# man (the manual page is rendered by both), zsh and fish (their completion
# scripts are parsed by the real shells).
missing=()
command -v gpg >/dev/null || missing+=(gnupg)
tar --version 2>/dev/null | grep -q 'GNU tar' || missing+=(tar)
command -v zstd >/dev/null || missing+=(zstd)
[ -x /usr/bin/time ] || missing+=(time)
[ -d /usr/share/zoneinfo ] || missing+=(tzdata)
command -v ssh-keygen >/dev/null || missing+=(openssh-client)
command -v age-keygen >/dev/null || missing+=(age)
command -v groff >/dev/null || missing+=(groff-base)
command -v man >/dev/null || missing+=(man-db)
command -v zsh >/dev/null || missing+=(zsh)
command -v fish >/dev/null || missing+=(fish)
# restic: the harness smoke run's peer for trees (backup and restore).
command -v restic >/dev/null || missing+=(restic)
# setpriv runs an extraction as an unprivileged user in the CLI tests.
command -v setpriv >/dev/null || missing+=(util-linux)
# setfattr/getfattr and setfacl/getfacl: the --xattrs tests set and read
# attributes and ACLs with the real tools.
command -v setfattr >/dev/null || missing+=(attr)
command -v setfacl >/dev/null || missing+=(acl)

if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
  if command -v apt-get >/dev/null && { [ ${#sudo[@]} -eq 0 ] || sudo -n true 2>/dev/null; }; then
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "scripts/test.sh: cannot install ${missing[*]} (needs apt-get as root or passwordless sudo);" \
      "the tests that use them will fail or say they skipped (fail under LOCKBOX_REQUIRE_TOOLS)" >&2
  fi
fi

# A real S3-compatible server for the s3:// tests (revault_cli/tests/s3):
# moto from PyPI, with the machine's Python. Without it those tests skip
# with a message (unless LOCKBOX_REQUIRE_S3_SERVER=1, as CI sets).
if ! command -v moto_server >/dev/null && command -v python3 >/dev/null; then
  python3 -m pip install --quiet 'moto[server]' ||
    echo "scripts/test.sh: could not install moto; the s3:// tests will skip" >&2
  command -v pyenv >/dev/null && pyenv rehash
fi

exec cargo test --workspace --all-features "$@"
