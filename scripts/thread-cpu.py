#!/usr/bin/env python3
"""Where each thread of one command spends its life: running, waiting for
a core, or blocked (on a channel, a lock, a turn, I/O).

    scripts/thread-cpu.py lockbox verify --password-file pw.txt big.lbox

Polls /proc/PID/task/*/ every 5 ms while the command runs and prints its
wall time, then per thread group (threads named `lockbox-opener-0`,
`lockbox-opener-1`, ... count as `lockbox-opener`; the main thread is
named after the binary) the seconds

  run    on a core (schedstat; user + system),
  ready  runnable but waiting for a core (schedstat's run-queue delay:
         the machine's share, high when other work shares the cores),
  block  alive and neither: sleeping on the pipeline or the disk.

`block` is the pipeline's idle time whatever else runs on the machine;
`ready` says how much a busy machine stretched the run. A thread that
lives under 5 ms can be missed. Needs schedstats (Linux: present when
/proc/self/schedstat exists).
"""
import collections
import os
import subprocess
import sys
import time

if len(sys.argv) < 2:
    sys.exit(__doc__)
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
first_seen = {}
last = {}
start = time.perf_counter()
while child.poll() is None:
    now = time.perf_counter()
    try:
        tids = os.listdir(f"/proc/{child.pid}/task")
    except OSError:
        break
    for tid in tids:
        try:
            with open(f"/proc/{child.pid}/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{child.pid}/task/{tid}/schedstat") as f:
                run_ns, ready_ns = (int(x) for x in f.read().split()[:2])
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        first_seen.setdefault(tid, now)
        last[tid] = (name, run_ns / 1e9, ready_ns / 1e9, now - first_seen[tid])
    time.sleep(0.005)
wall = time.perf_counter() - start
groups = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
for name, run, ready, alive in last.values():
    g = groups[name.rstrip("0123456789").rstrip("-")]
    g[0] += run
    g[1] += ready
    g[2] += max(0.0, alive - run - ready)
    g[3] += 1
total = sum(g[0] for g in groups.values())
print(f"wall {wall:.2f} s, CPU {total:.2f} s, {total / wall:.2f} CPUs utilized")
for name, (run, ready, block, n) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
    print(f"  {name:<24} x{n:<3} run {run:6.2f} s  ready {ready:6.2f} s  block {block:6.2f} s")
sys.exit(child.returncode)
