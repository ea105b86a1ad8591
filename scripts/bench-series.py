#!/usr/bin/env python3
"""Backs up issue 48's daily series with lockbox, restic and borg, day by day.

    scripts/bench-series.py ROOT [--days 10] [--runs 1] [--check 1,5,10|all]
                            [--lockbox PATH] [--quiet CMD]

ROOT is a series root of scripts/daily-series.py at day 0 (empty; this
script runs `init`) or at day 1, with no ROOT/bench yet. For each day: apply
that day's step (not timed), then back up ROOT/tree with the three tools, in
the order lockbox, restic, borg on odd days of odd runs and even days of
even runs, the reverse otherwise, each under /usr/bin/time (wall, user,
sys, max RSS):
  lockbox create -o A -C ROOT tree, then lockbox update --delete-missing A -C ROOT tree
          (password mode, the default Argon2id, --password-file)
  restic backup --host series ROOT/tree      (restic init on day 1, not timed)
  borg create --compression zstd,3 R::dayN tree, from ROOT
          (borg init -e repokey-blake2 on day 1, not timed)
and record each repository's size after (lockbox: the archive's size;
restic and borg: du -sb of the repository; their caches apart). With
--runs N the whole series is made and backed up N times from day 1 (the
tree unpacked again, new repositories), and the report gives each figure's
median over the runs and each tool's sizes after the last day run by run
(restic and borg key their chunkers per repository: sizes vary). After the
last day of the last run, `lockbox extract --session N` of each day named
by --check is compared with that day's manifest (daily-series.py check).
Writes
ROOT/bench/results.tsv and ROOT/bench/report.md (markdown tables, versions,
machine) and prints the report; --report-only does the checks and the report
again from an earlier run's ROOT/bench.

--quiet CMD runs `CMD stop` before each day's backups and `CMD cont` after
(always, also on failure or interrupt), to pause other work on a shared
machine while the tools are timed.

Needs restic and borg on PATH (`apt-get install restic borgbackup`) and a
release lockbox (`cargo build --release -p revault_cli`, the default
--lockbox is target/release/lockbox of this checkout).
"""

import argparse
import importlib.util
import os
import shutil
import signal
import statistics
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


def load_series():
    """daily-series.py as a module: its manifests and day counter have one owner."""
    sys.dont_write_bytecode = True  # no __pycache__ left in scripts/
    spec = importlib.util.spec_from_file_location("daily_series", SERIES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


series = load_series()


def regular_files(root, day):
    """path -> (size, sha256) of day's regular files."""
    return {rel: (size, digest) for rel, (kind, size, _, digest)
            in series.read_manifest(series.manifest_path(root, day)).items() if kind == "f"}


def tree_size(root, day):
    files = regular_files(root, day)
    return len(files), sum(size for size, _ in files.values())


def changed_bytes(root, day):
    """Bytes of the regular files that are new or changed on day (all on day 1)."""
    now = regular_files(root, day)
    before = regular_files(root, day - 1) if day > 1 else {}
    return sum(size for rel, (size, digest) in now.items()
               if before.get(rel, (None, None))[1] != digest)


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

    def setup(self, run_no):
        # A run after the first starts again from an empty series and no repositories.
        if run_no > 1:
            for p in (os.path.join(self.root, "tree"), os.path.join(self.root, "manifests"),
                      self.restic_repo, self.borg_repo, os.path.join(self.bench, "restic-cache"),
                      os.path.join(self.bench, "borg-base")):
                shutil.rmtree(p, ignore_errors=True)
            for p in (self.archive, os.path.join(self.root, "day")):
                if os.path.exists(p):
                    os.unlink(p)
            subprocess.run([sys.executable, SERIES, "init", self.root], check=True)
        self.logs = os.path.join(self.bench, "logs", f"run{run_no}")
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

    def day(self, run_no, day, quiet):
        order = TOOLS if (day + run_no) % 2 == 0 else tuple(reversed(TOOLS))
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
            rows.append((run_no, day, tool, order.index(tool) + 1, self.size(tool),
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


def describe_days(days):
    """1,2,3,5 -> "1-3, 5"."""
    spans, days = [], sorted(days)
    for d in days:
        if spans and d == spans[-1][1] + 1:
            spans[-1][1] = d
        else:
            spans.append([d, d])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def report(bench, rows, checks, root):
    """Markdown: the machine, the versions, sizes by day, times by day."""
    # rows: (run, day, tool, order, repo bytes, cache bytes, wall s, cpu s, rss KiB)
    runs = max(r[0] for r in rows)
    days = max(r[1] for r in rows)
    at = {(r[0], r[1], r[2]): r for r in rows}

    def median(day, tool, i):
        return statistics.median(r[i] for r in rows if r[1] == day and r[2] == tool)

    def added(day, tool):
        return statistics.median(
            at[(n, day, tool)][4] - (at[(n, day - 1, tool)][4] if day > 1 else 0)
            for n in range(1, runs + 1))

    def spread(day, tool, i):
        values = [at[(n, day, tool)][i] for n in range(1, runs + 1)]
        return min(values), max(values)
    cpu_flags = output(["sh", "-c", "grep -o -w 'avx2\\|avx512f\\|sha_ni' /proc/cpuinfo | sort -u"])
    model = output(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"])
    commit = output(["git", "-C", REPO, "describe", "--always", "--dirty"])
    lines = [
        "Machine: %s, %d cores, flags %s; %s." % (
            model, os.cpu_count(), " ".join(cpu_flags.split()) or "(none of avx2/avx512f/sha_ni)",
            output(["uname", "-sr"])),
        "",
        "Versions: `%s` (%s; this checkout at `%s`); `%s`; `%s`." % (
            output([bench.lockbox, "--version"]).splitlines()[0],
            "; ".join(output([bench.lockbox, "--version"]).splitlines()[1:]), commit,
            output(["restic", "version"]), output(["borg", "--version"])),
        "",
        "Sizes in MiB (2^20 bytes): the tree, the files new or changed that day (by",
        "path and content: a renamed file counts), and each tool's size after the",
        "day's backup with, in parentheses, what that day added"
        + (f", medians of {runs} runs." if runs > 1 else ".") + " restic and borg also",
        "keep a local cache beside the repository, not counted here (its size after",
        "the last day is below).",
        "",
        "| day | tree: files, MiB | new or changed | lockbox | restic | borg |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for day in range(1, days + 1):
        files, size = tree_size(root, day)
        cells = [f"{mib(median(day, tool, 4))} (+{mib(added(day, tool))})" for tool in TOOLS]
        lines.append(f"| {day} | {files:,}, {mib(size)} | {mib(changed_bytes(root, day))} | "
                     + " | ".join(cells) + " |")
    lines += [
        "",
        "Each backup's wall time and CPU time (user + sys) in seconds and its peak",
        "RSS in MiB, from `/usr/bin/time -f '%e %U %S %M'`"
        + (f", medians of {runs} runs" if runs > 1 else ", one run") + "; the order the",
        "tools ran in alternates by day" + (" and by run." if runs > 1 else "."),
        "",
        "| day | lockbox wall / CPU / RSS | restic wall / CPU / RSS | borg wall / CPU / RSS |",
        "|---:|---:|---:|---:|",
    ]
    for day in range(1, days + 1):
        cells = ["%.2f / %.2f / %.0f" % (median(day, t, 6), median(day, t, 7),
                                         median(day, t, 8) / 1024) for t in TOOLS]
        lines.append(f"| {day} | " + " | ".join(cells) + " |")
    for first in (1, 2):
        cells = []
        for t in TOOLS:
            ds = range(first, days + 1)
            rss = [median(d, t, 8) / 1024 for d in ds]
            cells.append("%.1f / %.1f / %.0f-%.0f" % (sum(median(d, t, 6) for d in ds),
                                                     sum(median(d, t, 7) for d in ds),
                                                     min(rss), max(rss)))
        lines.append(f"| sum, days {first}-{days} | " + " | ".join(cells) + " |")
    end = {t: median(days, t, 4) for t in TOOLS}
    lines += [
        "",
        "After day %d: lockbox / restic = %.2f, lockbox / borg = %.2f (restic's cache %s MiB, "
        "borg's %s MiB)." % (days, end["lockbox"] / end["restic"], end["lockbox"] / end["borg"],
                             mib(median(days, "restic", 5)), mib(median(days, "borg", 5))),
    ]
    if runs > 1:
        lines.append("After day %d, run by run: " % days + "; ".join(
            "%s %s-%s MiB" % ((t,) + tuple(mib(v) for v in spread(days, t, 4))) for t in TOOLS)
            + ".")
    good = [d for d, ok in checks if ok]
    bad = [d for d, ok in checks if not ok]
    lines.append("")
    if not checks:
        lines.append("Restores: not checked.")
    if good:
        lines.append("Restores: `lockbox extract --session N` equals day N's manifest "
                     f"(`daily-series.py check`) for days {describe_days(good)}.")
    if bad:
        lines.append(f"Restores: `lockbox extract --session N` DIFFERS from day N's manifest "
                     f"for days {describe_days(bad)}.")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--days", type=int, default=10)
    ap.add_argument("--runs", type=int, default=1,
                    help="make and back up the whole series this many times (medians)")
    ap.add_argument("--check", default="all",
                    help="days whose restore is checked: all, none, or a list like 1,5,10")
    ap.add_argument("--lockbox", default=os.path.join(REPO, "target", "release", "lockbox"))
    ap.add_argument("--quiet", help="a command taking stop|cont, run around each day's backups")
    ap.add_argument("--report-only", action="store_true",
                    help="back up nothing: check the restores of ROOT/bench's archive and "
                         "report on its results.tsv again")
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
    results = os.path.join(bench.bench, "results.tsv")
    if a.report_only:
        with open(results) as f:
            rows = [(int(r[0]), int(r[1]), r[2], int(r[3]), int(r[4]), int(r[5]), float(r[6]),
                     float(r[7]), int(r[8])) for r in (line.split() for line in f.readlines()[1:])]
        if a.check == "all":
            # The days the results hold, not --days: a report on a shorter run.
            checks = list(range(1, max(r[1] for r in rows) + 1))
        return finish(bench, rows, checks, root, a.restore_dir)
    if os.path.exists(bench.bench):
        die(f"{bench.bench} exists: a run starts from a new series; remove it first")
    if series.current_day(root) > 1:
        die(f"{root} is at day {series.current_day(root)}: start from an empty root or day 1")
    # The quiet command's `cont` must run on SIGTERM too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    if series.current_day(root) == 0:
        say("generating day 1")
        subprocess.run([sys.executable, SERIES, "init", root], check=True)
    rows = []
    for run_no in range(1, a.runs + 1):
        bench.setup(run_no)
        if run_no == 1:
            with open(results, "w") as f:
                f.write("run\tday\ttool\torder\trepo_bytes\tcache_bytes\twall_s\tcpu_s"
                        "\tmax_rss_kib\n")
        for day in range(1, a.days + 1):
            if day > 1:
                subprocess.run([sys.executable, SERIES, "step", root, str(day)], check=True)
            day_rows = bench.day(run_no, day, a.quiet)
            rows += day_rows
            with open(results, "a") as f:
                for r in day_rows:
                    f.write("\t".join(str(x) for x in r) + "\n")
            say("run %d, day %d: " % (run_no, day) + "; ".join(
                "%s %s MiB, %.1f s" % (r[2], mib(r[4]), r[6]) for r in day_rows))
    return finish(bench, rows, checks, root, a.restore_dir)


def finish(bench, rows, checks, root, restore_dir):
    """Checks the last run's restores, then writes and prints the report."""
    checked = []
    for day in checks:
        checked.append((day, bench.check(day, restore_dir)))
        say(f"day {day}: restore {'equals' if checked[-1][1] else 'DIFFERS FROM'} the manifest")
    text = report(bench, rows, checked, root)
    with open(os.path.join(bench.bench, "report.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0 if all(ok for _, ok in checked) else 1


if __name__ == "__main__":
    sys.exit(main())
