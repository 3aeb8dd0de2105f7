#!/usr/bin/env python3
"""Write a synthetic Debrief REP file of about N MB: 20 tracks reporting once a minute.

The same lines as `synthetic_rep` in crates/plot/benches/plot.rs, so the criterion bench and
the whole-process comparison in benches/README.md read the same kind of file.
Usage: synthetic_rep.py MEGABYTES OUT.rep
"""
import sys

target = int(float(sys.argv[1]) * 1024 * 1024)
out = []
size = 0
minute = 0
while size < target:
    for t in range(20):
        day, hh, mm = 1 + (minute // 1440) % 28, (minute // 60) % 24, minute % 60
        lat_m = (t * 3 + minute // 7) % 60
        lon_m = (t * 5 + minute // 11) % 60
        line = (
            f"9512{day:02} {hh:02}{mm:02}00.000 SHIP{t:02} @C 22 {lat_m:02} "
            f"{(minute % 60) * 0.97:.2f} N 021 {lon_m:02} {(minute % 60) * 0.53:.2f} W "
            f"{(minute * 7 % 360):.1f} {4.0 + (t % 5):.1f} 0\n"
        )
        out.append(line)
        size += len(line)
    minute += 1
with open(sys.argv[2], "w", encoding="ascii") as f:
    f.write("".join(out))
