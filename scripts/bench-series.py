#!/usr/bin/env python3
"""Backs up issue 48's daily series with lockbox, restic and borg, day by day.

    scripts/bench-series.py ROOT [--days 10] [--check 1,5,10|all]
                            [--lockbox PATH] [--quiet CMD]

ROOT is a series root of scripts/daily-series.py at day 0 (empty; this
script runs `init`) or at day 1, with no ROOT/bench yet. For each day: apply
that day's step (not timed), then back up ROOT/tree with the three tools, in
the order lockbox, restic, borg on odd days and the reverse on even days,
each under /usr/bin/time (wall, user, sys, max RSS):
  lockbox create -o A -C ROOT tree, then lockbox update --delete-missing A -C ROOT tree
          (password mode, the default Argon2id, --password-file)
  restic backup --host series ROOT/tree      (restic init on day 1, not timed)
  borg create --compression zstd,3 R::dayN tree, from ROOT
          (borg init -e repokey-blake2 on day 1, not timed)
and record each repository's size after (lockbox: the archive's size;
restic and borg: du -sb of the repository; their caches apart). After the
last day, `lockbox extract --session N` of each day named by --check is
compared with that day's manifest (daily-series.py check). Writes
ROOT/bench/results.tsv and ROOT/bench/report.md (markdown tables, versions,
machine) and prints the report.

--quiet CMD runs `CMD stop` before each day's backups and `CMD cont` after
(always, also on failure or interrupt), to pause other work on a shared
machine while the tools are timed.

Needs restic and borg on PATH (`apt-get install restic borgbackup`) and a
release lockbox (`cargo build --release -p revault_cli`, the default
--lockbox is target/release/lockbox of this checkout).
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERIES = os.path.join(REPO, "scripts", "daily-series.py")
TOOLS = ("lockbox", "restic", "borg")
PASSWORD = "daily series password 48\n"


def die(msg):
    print(f"bench-series: {msg}", file=sys.stderr)
    sys.exit(1)


def say(msg):
    print(f"bench-series: {msg}", file=sys.stderr, flush=True)


def run(cmd, log, env=None, cwd=None):
    with open(log, "ab") as out:
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    if r.returncode != 0:
        die(f"`{' '.join(cmd)}` exited {r.returncode}; see {log}")


def timed(cmd, log, timefile, env=None, cwd=None):
    """(wall s, cpu s, max RSS KiB) of cmd as a whole process."""
    run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", timefile] + cmd, log, env, cwd)
    with open(timefile) as f:
        wall, user, sys_, rss = f.read().split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss)


def du(path):
    return int(subprocess.run(["du", "-sb", path], check=True, capture_output=True,
                              text=True).stdout.split()[0])


def output(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return (r.stdout + r.stderr).strip()


def current_day(root):
    try:
        with open(os.path.join(root, "day")) as f:
            return int(f.read())
    except FileNotFoundError:
        return 0


def tree_size(root, day):
    with open(os.path.join(root, "manifests", f"day{day}.tsv")) as f:
        head = f.readline().split()
    # "# daily series day N: F files, B bytes"
    return int(head[5]), int(head[7])


class Bench:
    def __init__(self, root, lockbox):
        self.root = root
        self.bench = os.path.join(root, "bench")
        self.lockbox = lockbox
        self.archive = os.path.join(self.bench, "series.lbox")
        self.restic_repo = os.path.join(self.bench, "restic")
        self.borg_repo = os.path.join(self.bench, "borg")
        self.pwfile = os.path.join(self.bench, "password")
        self.logs = os.path.join(self.bench, "logs")
        env = dict(os.environ)
        env.update(RESTIC_PASSWORD_FILE=self.pwfile,
                   RESTIC_CACHE_DIR=os.path.join(self.bench, "restic-cache"),
                   BORG_PASSPHRASE=PASSWORD.strip(),
                   BORG_BASE_DIR=os.path.join(self.bench, "borg-base"))
        env.pop("LOCKBOX_PASSWORD", None)
        self.env = env

    def setup(self):
        os.makedirs(self.logs)
        with open(self.pwfile, "w") as f:
            f.write(PASSWORD)
        run(["restic", "-r", self.restic_repo, "init"], self.log("restic", 1), self.env)
        run(["borg", "init", "-e", "repokey-blake2", self.borg_repo], self.log("borg", 1),
            self.env)

    def log(self, tool, day):
        return os.path.join(self.logs, f"{tool}-day{day}.log")

    def command(self, tool, day):
        if tool == "lockbox":
            if day == 1:
                return [self.lockbox, "create", "--password-file", self.pwfile,
                        "-o", self.archive, "-C", self.root, "tree"], None
            return [self.lockbox, "update", "--delete-missing", "--password-file", self.pwfile,
                    self.archive, "-C", self.root, "tree"], None
        if tool == "restic":
            return ["restic", "-r", self.restic_repo, "backup", "--host", "series",
                    os.path.join(self.root, "tree")], None
        return ["borg", "create", "--compression", "zstd,3", f"{self.borg_repo}::day{day}",
                "tree"], self.root

    def size(self, tool):
        if tool == "lockbox":
            return os.path.getsize(self.archive)
        return du(self.restic_repo if tool == "restic" else self.borg_repo)

    def cache_size(self, tool):
        d = {"restic": "restic-cache", "borg": "borg-base"}.get(tool)
        p = os.path.join(self.bench, d) if d else None
        return du(p) if p and os.path.exists(p) else 0

    def day(self, day, quiet):
        order = TOOLS if day % 2 else tuple(reversed(TOOLS))
        times = {}
        if quiet:
            subprocess.run([quiet, "stop"], check=False)
        try:
            for tool in order:
                cmd, cwd = self.command(tool, day)
                tf = os.path.join(self.logs, f"{tool}-day{day}.time")
                times[tool] = timed(cmd, self.log(tool, day), tf, self.env, cwd)
        finally:
            if quiet:
                subprocess.run([quiet, "cont"], check=False)
        rows = []
        for tool in TOOLS:
            wall, cpu, rss = times[tool]
            rows.append((day, tool, order.index(tool) + 1, self.size(tool),
                         self.cache_size(tool), wall, cpu, rss))
        return rows

    def check(self, day, restore_parent):
        restore = tempfile.mkdtemp(prefix=f"bench-series-day{day}-", dir=restore_parent)
        try:
            run([self.lockbox, "extract", "--password-file", self.pwfile, "--session", str(day),
                 self.archive, "-C", restore], self.log("extract", day), self.env)
            r = subprocess.run([sys.executable, SERIES, "check", self.root, str(day),
                                os.path.join(restore, "tree")])
            return r.returncode == 0
        finally:
            shutil.rmtree(restore, ignore_errors=True)


def mib(n):
    return f"{n / 2**20:,.1f}"


def report(bench, rows, checks, root, days):
    by = {(r[0], r[1]): r for r in rows}
    cpu_flags = output(["sh", "-c", "grep -o -w 'avx2\\|avx512f\\|sha_ni' /proc/cpuinfo | sort -u"])
    model = output(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"])
    lines = [
        "Machine: %s, %d cores, flags %s; %s." % (
            model, os.cpu_count(), " ".join(cpu_flags.split()) or "(none of avx2/avx512f/sha_ni)",
            output(["uname", "-sr"])),
        "",
        "Versions: `%s`; `%s`; `%s`." % (
            output([bench.lockbox, "--version"]).splitlines()[0],
            output(["restic", "version"]), output(["borg", "--version"])),
        "",
        "Sizes in MiB (2^20 bytes); each tool's size after the day's backup, and in",
        "parentheses what that day added. restic and borg also keep a local cache",
        "beside the repository (not counted; its size after the last day is below).",
        "",
        "| day | tree: files, MiB | lockbox | restic | borg |",
        "|---:|---:|---:|---:|---:|",
    ]
    for day in range(1, days + 1):
        files, size = tree_size(root, day)
        cells = []
        for tool in TOOLS:
            now = by[(day, tool)][3]
            before = by[(day - 1, tool)][3] if day > 1 else 0
            cells.append(f"{mib(now)} (+{mib(now - before)})")
        lines.append(f"| {day} | {files:,}, {mib(size)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Each backup's wall time and CPU time (user + sys) in seconds and its peak",
        "RSS in MiB, from `/usr/bin/time -f '%e %U %S %M'`; the order the tools ran in",
        "alternates by day.",
        "",
        "| day | order | lockbox wall / CPU / RSS | restic wall / CPU / RSS | borg wall / CPU / RSS |",
        "|---:|---|---:|---:|---:|",
    ]
    for day in range(1, days + 1):
        order = sorted(TOOLS, key=lambda t: by[(day, t)][2])
        cells = ["%.2f / %.2f / %.0f" % (by[(day, t)][5], by[(day, t)][6], by[(day, t)][7] / 1024)
                 for t in TOOLS]
        lines.append(f"| {day} | {', '.join(order)} | " + " | ".join(cells) + " |")
    for label, first in (("days 1-%d" % days, 1), ("days 2-%d" % days, 2)):
        cells = []
        for t in TOOLS:
            ds = range(first, days + 1)
            rss = [by[(d, t)][7] / 1024 for d in ds]
            cells.append("%.1f / %.1f / %.0f-%.0f" % (sum(by[(d, t)][5] for d in ds),
                                                     sum(by[(d, t)][6] for d in ds),
                                                     min(rss), max(rss)))
        lines.append(f"| {label} | sum | " + " | ".join(cells) + " |")
    last = {t: by[(days, t)][3] for t in TOOLS}
    lines += [
        "",
        "After day %d: lockbox / restic = %.2f, lockbox / borg = %.2f (restic %s MiB of "
        "cache, borg %s MiB)." % (days, last["lockbox"] / last["restic"],
                                  last["lockbox"] / last["borg"],
                                  mib(by[(days, "restic")][4]), mib(by[(days, "borg")][4])),
        "",
        "Restores: " + ", ".join(
            f"`lockbox extract --session {d}` {'equals' if ok else 'DIFFERS FROM'} day {d}'s manifest"
            for d, ok in checks) + "." if checks else "Restores: not checked.",
    ]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--days", type=int, default=10)
    ap.add_argument("--check", default="all",
                    help="days whose restore is checked: all, none, or a list like 1,5,10")
    ap.add_argument("--lockbox", default=os.path.join(REPO, "target", "release", "lockbox"))
    ap.add_argument("--quiet", help="a command taking stop|cont, run around each day's backups")
    ap.add_argument("--restore-dir", default="/dev/shm",
                    help="where the checked restores are made (and removed)")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    for tool, hint in (("restic", "apt-get install restic"),
                       ("borg", "apt-get install borgbackup")):
        if not shutil.which(tool):
            die(f"{tool} is not on PATH: install it with `{hint}`")
    if not os.access("/usr/bin/time", os.X_OK):
        die("/usr/bin/time is missing: install it with `apt-get install time`")
    if not os.access(a.lockbox, os.X_OK):
        die(f"{a.lockbox} is not there: build it with `cargo build --release -p revault_cli`")
    if a.check == "all":
        checks = list(range(1, a.days + 1))
    elif a.check == "none":
        checks = []
    else:
        checks = [int(d) for d in a.check.split(",")]
    bench = Bench(root, a.lockbox)
    if os.path.exists(bench.bench):
        die(f"{bench.bench} exists: a run starts from a new series; remove it first")
    if current_day(root) > 1:
        die(f"{root} is at day {current_day(root)}: start from an empty root or day 1")
    # The quiet command's `cont` must run on SIGTERM too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    if current_day(root) == 0:
        say("generating day 1")
        subprocess.run([sys.executable, SERIES, "init", root], check=True)
    bench.setup()
    rows = []
    results = os.path.join(bench.bench, "results.tsv")
    with open(results, "w") as f:
        f.write("day\ttool\torder\trepo_bytes\tcache_bytes\twall_s\tcpu_s\tmax_rss_kib\n")
    for day in range(1, a.days + 1):
        if day > 1:
            subprocess.run([sys.executable, SERIES, "step", root, str(day)], check=True)
        day_rows = bench.day(day, a.quiet)
        rows += day_rows
        with open(results, "a") as f:
            for r in day_rows:
                f.write("\t".join(str(x) for x in r) + "\n")
        say("day %d: " % day + "; ".join(
            "%s %s MiB, %.1f s" % (r[1], mib(r[3]), r[5]) for r in day_rows))
    checked = []
    for day in checks:
        checked.append((day, bench.check(day, a.restore_dir)))
        say(f"day {day}: restore {'equals' if checked[-1][1] else 'DIFFERS FROM'} the manifest")
    text = report(bench, rows, checked, root, a.days)
    with open(os.path.join(bench.bench, "report.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0 if all(ok for _, ok in checked) else 1


if __name__ == "__main__":
    sys.exit(main())
