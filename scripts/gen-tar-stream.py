#!/usr/bin/env python3
"""A GNU tar stream on stdout: N files of 100 bytes in N/1000 directories (docs/BENCHMARKS.md, tar streams)."""
import tarfile, sys, io
n = int(sys.argv[1])
with tarfile.open(fileobj=sys.stdout.buffer, mode='w|', format=tarfile.GNU_FORMAT) as t:
    for d in range(n // 1000 + 1):
        ti = tarfile.TarInfo(f"dir{d:04d}"); ti.type = tarfile.DIRTYPE; ti.mode = 0o755; t.addfile(ti)
    for i in range(n):
        data = b"x" * 100
        ti = tarfile.TarInfo(f"dir{i // 1000:04d}/file-{i:08d}.txt"); ti.size = len(data); ti.mode = 0o644
        t.addfile(ti, io.BytesIO(data))
