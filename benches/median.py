#!/usr/bin/env python3
"""Median wall time of a whole command, run N times (after one warm-up run).

Usage: median.py N LABEL -- COMMAND [ARGS...]
Prints one line: LABEL, the median and the min/max in milliseconds. The command's output is
discarded; a run that exits non-zero stops the measurement (a failing command is not timed).
"""
import statistics
import subprocess
import sys
import time

n = int(sys.argv[1])
label = sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1 :]
subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
times = []
for _ in range(n):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    times.append((time.perf_counter() - t) * 1000)
    if r.returncode != 0:
        sys.exit(f"{label}: exit {r.returncode}: {r.stderr.decode(errors='replace')[-500:]}")
print(f"{label:<58} median {statistics.median(times):8.1f} ms   (min {min(times):.1f}, max {max(times):.1f}, n={n})")
