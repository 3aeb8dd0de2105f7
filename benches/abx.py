"""Start-up of several toolgate binaries side by side: exec in-process, exec through the sandbox
worker, --version; 150 runs of each, alternating the order run by run so every binary sees the
same machine. Prints p50 and p90 per binary.

usage: python3 benches/abx.py BINARY [BINARY ...]   (needs an empty folder /tmp/ws)
"""
import subprocess, sys, time, statistics, os
bins = sys.argv[1:]
env = dict(os.environ, TOOLGATE_DATA_DIR="/tmp/tgd")
rows = [("exec --in-process '1+1'", ["exec", "--in-process", "--workspace", "/tmp/ws", "--code", "1+1"]),
        ("exec '1+1' (worker)", ["exec", "--workspace", "/tmp/ws", "--code", "1+1"]),
        ("--version", ["--version"])]
for name, args in rows:
    t = {b: [] for b in bins}
    for i in range(150):
        order = bins if i % 2 == 0 else bins[::-1]
        for b in order:
            s = time.perf_counter()
            subprocess.run([b] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
            t[b].append((time.perf_counter() - s) * 1000)
    print(name, " | ".join(f"{os.path.basename(b)} p50 {statistics.median(v):.2f} p90 {sorted(v)[int(len(v)*0.9)]:.2f}" for b, v in t.items()))
