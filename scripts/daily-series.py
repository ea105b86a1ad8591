#!/usr/bin/env python3
"""The daily backup series of issue 48: a real tree changed a little each day.

Reproducible (seeded, python3 stdlib only): the same commands give the same
bytes, paths and mtimes on any machine, so a backup tool's size on day N is
comparable between builds and between tools.

    scripts/daily-series.py init ROOT        # day 1
    scripts/daily-series.py step ROOT N      # day N (2..10), after day N-1
    scripts/daily-series.py all ROOT [DAYS]  # init, then steps up to DAYS (10)
    scripts/daily-series.py check ROOT N DIR # DIR (a restore of ROOT/tree) equals day N

Day 1, under ROOT/tree:
  linux/   the Linux 6.1 source from /usr/src/linux-source-6.1.tar.xz
           (Debian's linux-source-6.1: `apt-get install linux-source-6.1`),
           about 78,000 files and 1.2 GiB, mtimes as in the tarball;
  db.bin   a 256 MiB database-like file of 4 KiB pages, each half random
           bytes, a quarter zeros and a quarter text rows;
  app.log  a 4 MiB log of text lines.
Each later day changes the tree in place as a project changes: a few hundred
source files edited (lines inserted or replaced), some added (half copies of
an existing file with a new header, half new text), some removed, and on days
4, 7 and 10 one directory of 50-500 files and at most 16 MiB renamed; db.bin
gets 8 scattered 4 KiB page writes and 2 MiB of appended rows; app.log grows
by 1 MiB. Only what changes is written: every other file keeps its mtime, and
what changed (files, and directories whose entries changed) gets the day's
mtime, 2026-01-01 22:00 UTC plus N-1 days for day N.

ROOT/manifests/dayN.tsv lists every directory, file and symlink of that day
(path, kind, size, mtime, sha256; a symlink's size and hash are its
target's), so `check` can tell whether a restore of day N is exact without
keeping copies of old days. `step` rehashes only what changed since the day
before (by size and mtime, which the generator alone sets).
"""

import hashlib
import os
import random
import stat
import subprocess
import sys
import time

TARBALL = "/usr/src/linux-source-6.1.tar.xz"
TARBALL_TOP = "linux-source-6.1"
SEED = 48  # issue 48
DAYS = 10
PAGE = 4096
DB_BYTES = 256 << 20
DB_SCATTERED_WRITES = 8
DB_APPEND_BYTES = 2 << 20
LOG_DAY1_BYTES = 4 << 20
LOG_GROWTH_BYTES = 1 << 20
RENAME_DAYS = (4, 7, 10)
RENAME_FILES = (50, 500)
# A rename moves a module, not a third of the tree (amd/include is 378 MB).
RENAME_MAX_BYTES = 16 << 20
# Day 1 at 22:00 UTC on 2026-01-01; day N is N-1 days later.
DAY1_TIME = 1767304800
# Sources a day's edits and copies pick from: text a developer edits.
EDIT_SUFFIXES = (".c", ".h", ".S", ".rst", ".txt", ".dts", ".dtsi", ".yaml", ".py", ".sh")
EDIT_NAMES = ("Makefile", "Kconfig")

LOG_COMPONENTS = ("api", "db", "auth", "cache", "sched", "http", "queue", "mailer")
LOG_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")
LOG_EVENTS = ("request served", "query done", "cache miss", "job queued", "retrying",
              "session opened", "session closed", "slow response", "connection reset")


def die(msg):
    print(f"daily-series: {msg}", file=sys.stderr)
    sys.exit(1)


def day_time(day):
    return DAY1_TIME + (day - 1) * 86400


def rng_for(day, what):
    # One stream per day and purpose, so changing one kind of change never
    # shifts the others.
    return random.Random(f"{SEED}/{day}/{what}")


# ---- db.bin and app.log ----

def db_page(rng, row):
    """A 4 KiB page: 2 KiB random, 1 KiB of text rows, 1 KiB of zeros."""
    # 16 rows of 64 bytes.
    text = b"".join(b"row=%010d acct=%06d amount=%09d state=OPEN flag=000\n"
                    % (row * 16 + i, rng.randrange(10**6), rng.randrange(10**9))
                    for i in range(16))
    page = rng.randbytes(2048) + text + bytes(1024)
    assert len(page) == PAGE
    return page


def db_append(path, rng, nbytes, first_page):
    with open(path, "ab") as f:
        for i in range(nbytes // PAGE):
            f.write(db_page(rng, first_page + i))


def db_scatter(path, rng, day):
    pages = os.path.getsize(path) // PAGE
    with open(path, "r+b") as f:
        for _ in range(DB_SCATTERED_WRITES):
            p = rng.randrange(pages)
            f.seek(p * PAGE)
            f.write(db_page(rng, p + day * 10**7))


def log_append(path, rng, nbytes, day):
    base = day_time(day) - 86400
    lines, size = [], 0
    while size < nbytes:
        t = base + size * 86400 // nbytes
        line = "%s.%03d %-5s %s: %s id=%08x took=%dms\n" % (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)), rng.randrange(1000),
            rng.choice(LOG_LEVELS), rng.choice(LOG_COMPONENTS), rng.choice(LOG_EVENTS),
            rng.getrandbits(32), rng.randrange(2000))
        lines.append(line)
        size += len(line)
    with open(path, "a", encoding="ascii") as f:
        f.write("".join(lines))


# ---- the source tree ----

def walk_files(top):
    """Sorted relative paths of the regular files under top."""
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        rel = os.path.relpath(dirpath, top)
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            if stat.S_ISREG(os.lstat(p).st_mode):
                out.append(name if rel == "." else os.path.join(rel, name))
    return out


def editable(rel):
    name = os.path.basename(rel)
    return name.endswith(EDIT_SUFFIXES) or name in EDIT_NAMES


def edit_file(path, rng, day):
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    if not lines:
        lines = [b"\n"]
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        if rng.random() < 0.5:
            # Replace a line by itself with a changed number or identifier.
            line = lines[i].rstrip(b"\n")
            lines[i] = line + b" /* %d */\n" % rng.randrange(10**4) if len(line) < 100 else b"\n"
        else:
            # Insert a few lines taken from elsewhere in the file, slightly changed.
            src = rng.randrange(len(lines))
            block = lines[src:src + rng.randint(1, 6)]
            block = [b.replace(b"0", b"1", 1) for b in block]
            lines[i:i] = [b"/* day %d: change %d */\n" % (day, rng.randrange(10**6))] + block
    with open(path, "wb") as f:
        f.write(b"".join(lines))


def new_text(tree, rng, pool, day):
    """A new source file made of runs of lines from a few existing ones."""
    parts = [b"// SPDX-License-Identifier: GPL-2.0\n/* added on day %d */\n" % day]
    for src in rng.sample(pool, 3):
        with open(os.path.join(tree, src), "rb") as f:
            lines = f.read().splitlines(keepends=True)
        if lines:
            a = rng.randrange(len(lines))
            parts.extend(lines[a:a + rng.randint(20, 200)])
    return b"".join(parts)


def pick_rename(tree, files, rng):
    """A directory (depth >= 2) holding 50-500 files and at most 16 MiB."""
    counts, sizes = {}, {}
    for rel in files:
        size = os.lstat(os.path.join(tree, rel)).st_size
        d = os.path.dirname(rel)
        while d.count(os.sep) >= 1:
            counts[d] = counts.get(d, 0) + 1
            sizes[d] = sizes.get(d, 0) + size
            d = os.path.dirname(d)
    fits = sorted(d for d, n in counts.items()
                  if RENAME_FILES[0] <= n <= RENAME_FILES[1] and sizes[d] <= RENAME_MAX_BYTES)
    return rng.choice(fits)


def step_tree(root, day):
    tree = os.path.join(root, "tree", "linux")
    t = day_time(day)
    rng = rng_for(day, "tree")
    files = walk_files(tree)
    pool = [f for f in files if editable(f)]
    touched_dirs = set()
    changed = set()

    for rel in rng.sample(pool, rng.randint(250, 400)):
        edit_file(os.path.join(tree, rel), rng, day)
        changed.add(rel)

    removed = set(rng.sample([f for f in files if f not in changed], rng.randint(20, 60)))
    for rel in sorted(removed):
        os.unlink(os.path.join(tree, rel))
        touched_dirs.add(os.path.dirname(rel))

    live = [f for f in pool if f not in removed]
    for k in range(rng.randint(40, 80)):
        like = rng.choice(live)
        stem, ext = os.path.splitext(like)
        rel = "%s_d%d_%d%s" % (stem, day, k, ext)
        if rng.random() < 0.5:
            with open(os.path.join(tree, like), "rb") as f:
                body = b"/* copied on day %d */\n" % day + f.read()
        else:
            body = new_text(tree, rng, live, day)
        with open(os.path.join(tree, rel), "wb") as f:
            f.write(body)
        changed.add(rel)
        touched_dirs.add(os.path.dirname(rel))

    for rel in changed:
        os.utime(os.path.join(tree, rel), (t, t))

    if day in RENAME_DAYS:
        old = pick_rename(tree, [f for f in files if f not in removed], rng)
        new = old + "-v%d" % day
        os.rename(os.path.join(tree, old), os.path.join(tree, new))
        touched_dirs.add(os.path.dirname(old))
        print(f"daily-series: day {day}: renamed linux/{old} to linux/{new}", file=sys.stderr)

    for d in touched_dirs:
        p = os.path.join(tree, d)
        if os.path.isdir(p):
            os.utime(p, (t, t))
    print(f"daily-series: day {day}: {len(changed)} files written, {len(removed)} removed",
          file=sys.stderr)


# ---- manifests ----

def manifest_path(root, day):
    return os.path.join(root, "manifests", "day%d.tsv" % day)


def read_manifest(path):
    out = {}
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            if line.startswith("#"):
                continue
            rel, kind, size, mtime, digest = line.rstrip("\n").split("\t")
            out[rel] = (kind, int(size), int(mtime), digest)
    return out


def scan(top, previous=None):
    """path -> (kind, size, mtime, sha256) of everything under top.

    With previous, a regular file whose size and mtime are unchanged keeps
    its recorded hash (the generator is the only writer of the tree)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = name if rel_dir == "." else os.path.join(rel_dir, name)
            if "\t" in rel or "\n" in rel:
                die(f"{p}: a tab or newline in a path does not fit the manifest")
            st = os.lstat(p)
            mtime = int(st.st_mtime)
            if stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", 0, mtime, "-")
            elif stat.S_ISLNK(st.st_mode):
                target = os.fsencode(os.readlink(p))
                out[rel] = ("l", len(target), mtime, hashlib.sha256(target).hexdigest())
            elif stat.S_ISREG(st.st_mode):
                old = previous.get(rel) if previous else None
                if old and old[0] == "f" and old[1] == st.st_size and old[2] == mtime:
                    out[rel] = old
                else:
                    with open(p, "rb") as f:
                        digest = hashlib.file_digest(f, "sha256").hexdigest()
                    out[rel] = ("f", st.st_size, mtime, digest)
            else:
                die(f"{p}: neither a directory, a regular file nor a symlink")
    return out


def write_manifest(root, day, previous=None):
    entries = scan(os.path.join(root, "tree"), previous)
    os.makedirs(os.path.join(root, "manifests"), exist_ok=True)
    path = manifest_path(root, day)
    files = sum(1 for e in entries.values() if e[0] == "f")
    size = sum(e[1] for e in entries.values() if e[0] == "f")
    with open(path + ".tmp", "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(f"# daily series day {day}: {files} files, {size} bytes\n")
        for rel in sorted(entries):
            kind, sz, mtime, digest = entries[rel]
            f.write(f"{rel}\t{kind}\t{sz}\t{mtime}\t{digest}\n")
    os.replace(path + ".tmp", path)
    print(f"daily-series: day {day}: {files} files, {size} bytes; manifest {path}",
          file=sys.stderr)


def set_day(root, day):
    with open(os.path.join(root, "day.tmp"), "w") as f:
        f.write(f"{day}\n")
    os.replace(os.path.join(root, "day.tmp"), os.path.join(root, "day"))


def current_day(root):
    try:
        with open(os.path.join(root, "day")) as f:
            return int(f.read())
    except FileNotFoundError:
        return 0


# ---- commands ----

def init(root):
    if not os.path.isfile(TARBALL):
        die(f"{TARBALL} is missing: install it with `apt-get install linux-source-6.1`")
    tree = os.path.join(root, "tree")
    if os.path.exists(tree):
        die(f"{tree} exists: give a new ROOT, or remove it first")
    os.makedirs(tree)
    started = time.time() - 1
    subprocess.run(["tar", "-xJf", TARBALL, "--no-same-owner", "-C", tree], check=True)
    os.rename(os.path.join(tree, TARBALL_TOP), os.path.join(tree, "linux"))
    t = day_time(1)
    # GNU tar leaves some directories of this tarball at the time of the
    # unpack (its delayed directory times miss them): pin those to day 1.
    for dirpath, _, _ in os.walk(tree):
        if os.lstat(dirpath).st_mtime >= started:
            os.utime(dirpath, (t, t))
    db = os.path.join(tree, "db.bin")
    db_append(db, rng_for(1, "db"), DB_BYTES, 0)
    log = os.path.join(tree, "app.log")
    log_append(log, rng_for(1, "log"), LOG_DAY1_BYTES, 1)
    for p in (db, log, tree):
        os.utime(p, (t, t))
    write_manifest(root, 1)
    set_day(root, 1)


def step(root, day):
    if not 2 <= day <= DAYS:
        die(f"day {day}: the series has days 2 to {DAYS} after init")
    if current_day(root) != day - 1:
        die(f"{root} is at day {current_day(root)}: day {day} follows day {day - 1}")
    tree = os.path.join(root, "tree")
    step_tree(root, day)
    db = os.path.join(tree, "db.bin")
    rng = rng_for(day, "db")
    db_scatter(db, rng, day)
    db_append(db, rng, DB_APPEND_BYTES, os.path.getsize(db) // PAGE)
    log = os.path.join(tree, "app.log")
    log_append(log, rng_for(day, "log"), LOG_GROWTH_BYTES, day)
    t = day_time(day)
    for p in (db, log):
        os.utime(p, (t, t))
    write_manifest(root, day, read_manifest(manifest_path(root, day - 1)))
    set_day(root, day)


def check(root, day, restored):
    want = read_manifest(manifest_path(root, day))
    got = scan(restored)
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    differ = sorted(p for p in set(want) & set(got) if want[p][:2] + want[p][3:] != got[p][:2] + got[p][3:])
    # Directory and symlink mtimes depend on the restoring tool's order and
    # platform; a regular file's mtime is part of what a backup restores.
    mtime = sorted(p for p in set(want) & set(got)
                   if want[p][0] == "f" and p not in differ and want[p][2] != got[p][2])
    for label, paths in (("missing", missing), ("extra", extra), ("content differs", differ),
                         ("file mtime differs", mtime)):
        for p in paths[:5]:
            print(f"daily-series: check day {day}: {label}: {p}", file=sys.stderr)
    bad = len(missing) + len(extra) + len(differ) + len(mtime)
    print(f"daily-series: check day {day}: {len(want)} entries; {len(missing)} missing, "
          f"{len(extra)} extra, {len(differ)} differ, {len(mtime)} file mtimes differ",
          file=sys.stderr)
    return 1 if bad else 0


def main(argv):
    usage = __doc__.split("\n\n")[2]
    if len(argv) < 3:
        die("usage:\n" + usage)
    cmd, root = argv[1], os.path.abspath(argv[2])
    if cmd == "init" and len(argv) == 3:
        init(root)
    elif cmd == "step" and len(argv) == 4:
        step(root, int(argv[3]))
    elif cmd == "all" and len(argv) in (3, 4):
        last = int(argv[3]) if len(argv) == 4 else DAYS
        if current_day(root) == 0:
            init(root)
        for day in range(current_day(root) + 1, last + 1):
            step(root, day)
    elif cmd == "check" and len(argv) == 5:
        return check(root, int(argv[3]), argv[4])
    else:
        die("usage:\n" + usage)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
