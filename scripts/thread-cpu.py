#!/usr/bin/env python3
"""CPU seconds per thread of one command: which thread does the work.

    scripts/thread-cpu.py lockbox verify --password-file pw.txt big.lbox

Polls /proc/PID/task/*/stat every 5 ms while the command runs and prints
its wall time and each thread group's user + system CPU (threads named
`lockbox-opener-0`, `lockbox-opener-1`, ... count as `lockbox-opener`).
A thread that lives under 5 ms can be missed; the main thread is named
after the binary.
"""
import collections
import os
import subprocess
import sys
import time

if len(sys.argv) < 2:
    sys.exit(__doc__)
ticks = os.sysconf("SC_CLK_TCK")
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
last = {}
start = time.perf_counter()
while child.poll() is None:
    try:
        tids = os.listdir(f"/proc/{child.pid}/task")
    except OSError:
        break
    for tid in tids:
        try:
            with open(f"/proc/{child.pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        last[tid] = (name, (int(fields[11]) + int(fields[12])) / ticks)
    time.sleep(0.005)
wall = time.perf_counter() - start
groups = collections.defaultdict(float)
for name, cpu in last.values():
    groups[name.rstrip("0123456789").rstrip("-")] += cpu
print(f"wall {wall:.2f} s; " + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(groups.items(), key=lambda kv: -kv[1])))
sys.exit(child.returncode)
