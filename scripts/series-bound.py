#!/usr/bin/env python3
"""What each day of issue 48's daily series must store at least, beside what lockbox stored.

    scripts/series-bound.py ROOT [--days 10] [--results RESULTS.tsv] [--study PATH]

Makes the series afresh in ROOT (scripts/daily-series.py init, then a step a
day; ROOT must not exist yet, about 1.6 GB), and after each day runs the
chunk study (examples/chunk_study.rs, `--avg 256`: the writer's default
sizes, 64 KiB / 256 KiB / 1 MiB, under a fixed key) over ROOT/tree with its
state carried from day to day. A day's **bound** is what a deduplicating
writer must add for it: the chunks no earlier day held, compressed with
zstd level 3 as one stream (as pages hold them), plus 48 bytes for each new
chunk (its chunk index entry). Files below the smallest chunk are one chunk,
so a renamed small file counts as stored already; a real writer also adds
the day's entries index, which the bound leaves out.

With --results (ROOT/bench/results.tsv of scripts/bench-series.py, over the
same series), each day's lockbox growth (the archive's size after the day
minus the size before; day 1 the whole archive) is set beside the bound,
with their ratio: issue 48's target is at most 1.1.

--study is the chunk_study binary (default: built now with
`cargo build --profile bench -p revault_lockbox_api --example chunk_study`).
Prints a markdown table; the study's own rows go to ROOT/bound/study.md.
"""

import argparse
import csv
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERIES = os.path.join(REPO, "scripts", "daily-series.py")
MIB = 1 << 20


def die(msg):
    print(f"series-bound: {msg}", file=sys.stderr)
    sys.exit(1)


def build_study():
    subprocess.run(["cargo", "build", "--quiet", "--profile", "bench", "-p", "revault_lockbox_api",
                    "--example", "chunk_study"], cwd=REPO, check=True)
    return os.path.join(REPO, "target", "release", "examples", "chunk_study")


def lockbox_growth(results):
    """Day -> bytes the lockbox archive grew by that day (median over runs)."""
    sizes = {}
    with open(results, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["tool"] == "lockbox":
                sizes.setdefault(int(row["day"]), []).append(int(row["repo_bytes"]))
    median = {day: sorted(v)[len(v) // 2] for day, v in sizes.items()}
    return {day: median[day] - median.get(day - 1, 0) for day in median}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root")
    ap.add_argument("--days", type=int, default=10)
    ap.add_argument("--results")
    ap.add_argument("--study")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if os.path.exists(root):
        die(f"{root} exists: the series is made afresh")
    study = args.study or build_study()
    growth = lockbox_growth(args.results) if args.results else {}
    os.makedirs(os.path.join(root, "bound"))
    state = os.path.join(root, "bound", "state")
    rows = []
    with open(os.path.join(root, "bound", "study.md"), "w") as log:
        for day in range(1, args.days + 1):
            step = ["init", root] if day == 1 else ["step", root, str(day)]
            subprocess.run([sys.executable, SERIES] + step, check=True, stdout=subprocess.DEVNULL)
            out = subprocess.run([study, "--avg", "256", "--state", state, os.path.join(root, "tree")],
                                 check=True, capture_output=True, text=True).stdout
            log.write(out)
            row = [c.strip() for c in out.strip().splitlines()[-1].strip("|").split("|")]
            # | version | avg | files | bytes | chunks | distinct | new | new zstd | new chunks | index | cost |
            new_zstd, new_chunks = float(row[7]) * MIB, int(row[8])
            rows.append((day, int(row[2]), float(row[6]), new_chunks, new_zstd + 48 * new_chunks))
            print(f"series-bound: day {day} done", file=sys.stderr)
    print("| day | files | new chunk bytes (MiB) | new chunks | bound: new, zstd -3, + 48 B a chunk (MiB) "
          "| lockbox's growth (MiB) | growth / bound |")
    print("|--:|--:|--:|--:|--:|--:|--:|")
    for day, files, new_mib, new_chunks, bound in rows:
        grew = growth.get(day)
        tail = f"{grew / MIB:.2f} | {grew / bound:.2f}" if grew is not None else " | "
        print(f"| {day} | {files} | {new_mib:.1f} | {new_chunks} | {bound / MIB:.2f} | {tail} |")


if __name__ == "__main__":
    main()
