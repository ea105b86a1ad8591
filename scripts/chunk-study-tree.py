#!/usr/bin/env python3
"""Versions of a tree for the chunk-size study (docs/DEDUP.md), seeded.

    python3 scripts/chunk-study-tree.py OUT VERSIONS [linux-source-6.1.tar.xz]

OUT/v1 is the Linux 6.1 source (Debian's linux-source-6.1) beside a 256 MiB
database-like file (4 KiB pages, half random, half repeated rows) and an
8 MiB log. Each next version is the one before (hard-linked, then changed
files written anew) with 300 source files edited (a line inserted, one
replaced, one appended), 30 added, 30 removed, one directory renamed, 8
scattered 4 KiB pages of the database rewritten and 2 MiB of rows appended,
and 1 MiB added to the log. A stand-in until the daily series
(scripts/daily-series.*) exists.
"""

import os
import random
import shutil
import subprocess
import sys

PAGE = 4096


def db_page(rng):
    row = b"row %08d|status=ok|amount=%010d|note=nothing to see here\n" % (rng.randrange(10**8), rng.randrange(10**10))
    rows = (row * (PAGE // 2 // len(row) + 1))[: PAGE // 2]
    return rng.randbytes(PAGE // 2) + rows


def log_lines(rng, day, size):
    out, n = [], 0
    while n < size:
        line = b"2026-12-%02d %02d:%02d:%02d host svc[%d]: request %d served in %d ms\n" % (
            day, rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1, 65536),
            rng.randrange(10**9), rng.randrange(1000))
        out.append(line)
        n += len(line)
    return b"".join(out)[:size]


def rewrite(path, data):
    os.unlink(path)  # break the hard link to the version before
    with open(path, "wb") as f:
        f.write(data)


def first_version(out, tarball):
    v1 = os.path.join(out, "v1")
    os.makedirs(v1)
    subprocess.run(["tar", "-xJf", tarball, "-C", v1], check=True)
    rng = random.Random(1)
    with open(os.path.join(v1, "db.bin"), "wb") as f:
        for _ in range((256 << 20) // PAGE):
            f.write(db_page(rng))
    with open(os.path.join(v1, "app.log"), "wb") as f:
        f.write(log_lines(rng, 1, 8 << 20))


def next_version(out, n):
    prev, cur = os.path.join(out, f"v{n - 1}"), os.path.join(out, f"v{n}")
    subprocess.run(["cp", "-al", prev, cur], check=True)
    rng = random.Random(n)
    src = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(cur, "linux-source-6.1")) for f in fs
                 if f.endswith((".c", ".h")) and not os.path.islink(os.path.join(d, f)))
    picked = rng.sample(src, 360)
    for path in picked[:300]:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
        lines.insert(rng.randrange(len(lines) + 1), b"/* edited on day %d */" % n)
        lines[rng.randrange(len(lines))] = b"\tchanged_line_%d();" % rng.randrange(10**6)
        lines.append(b"/* appended on day %d */" % n)
        rewrite(path, b"\n".join(lines))
    for path in picked[300:330]:
        os.unlink(path)
    added = os.path.join(cur, "linux-source-6.1", f"drivers/new_on_day_{n}")
    os.makedirs(added)
    for i, path in enumerate(picked[330:360]):
        with open(path, "rb") as f:
            data = f.read()
        with open(os.path.join(added, f"file{i}.c"), "wb") as f:
            f.write(b"/* new file */\n" + data[len(data) // 3:])
    dirs = sorted(d for d, ds, fs in os.walk(os.path.join(cur, "linux-source-6.1", "drivers")) if 5 <= len(fs) <= 40 and not ds)
    victim = rng.choice(dirs)
    shutil.move(victim, victim + f"_renamed{n}")
    db = os.path.join(cur, "db.bin")
    with open(db, "rb") as f:
        data = bytearray(f.read())
    for _ in range(8):
        at = rng.randrange(len(data) // PAGE) * PAGE
        data[at:at + PAGE] = db_page(rng)
    data += b"".join(db_page(rng) for _ in range((2 << 20) // PAGE))
    rewrite(db, bytes(data))
    log = os.path.join(cur, "app.log")
    with open(log, "rb") as f:
        data = f.read()
    rewrite(log, data + log_lines(rng, n, 1 << 20))


def main():
    out, versions = sys.argv[1], int(sys.argv[2])
    tarball = sys.argv[3] if len(sys.argv) > 3 else "/usr/src/linux-source-6.1.tar.xz"
    first_version(out, tarball)
    for n in range(2, versions + 1):
        next_version(out, n)


if __name__ == "__main__":
    main()
