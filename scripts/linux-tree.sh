#!/usr/bin/env bash
# Unpacks the Linux 6.1 source tree (Debian's `linux-source-6.1`: about
# 78,000 files, 1.2 GiB) into DIR/linux-source-6.1 for the harness's
# `--tree`, installing the package when it is missing. Never committed:
# DIR defaults to target/corpora-real (ignored by git).
#
#   scripts/linux-tree.sh [DIR]     # prints the tree's path
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$repo/target/corpora-real}
tarball=/usr/src/linux-source-6.1.tar.xz
tree=$dir/linux-source-6.1

if [ ! -f "$tarball" ]; then
    echo "linux-tree.sh: installing linux-source-6.1 (apt)" >&2
    if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo -n); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends linux-source-6.1
fi
# A stamp marks a complete unpack: an interrupted one is done again.
if [ ! -f "$tree.unpacked" ]; then
    rm -rf "$tree"
    mkdir -p "$dir"
    echo "linux-tree.sh: unpacking $tarball into $dir" >&2
    tar -xJf "$tarball" -C "$dir"
    touch "$tree.unpacked"
fi
echo "$tree"
