"""Two toolgate binaries side by side, alternating run by run (so both see the same machine):
exec (worker, in-process), --version, plot summary, an 8 MB REP import. Medians, as Markdown.

usage: python3 benches/ab.py OLD_BINARY NEW_BINARY [OLD_LABEL NEW_LABEL]   (needs /tmp/syn8.rep from
       `python3 benches/synthetic_rep.py 8 /tmp/syn8.rep` and an empty folder /tmp/ws)
"""
import subprocess, sys, time, statistics, os, shutil
A, B = sys.argv[1], sys.argv[2]
LA, LB = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else ("old", "new")
rows = [
  ("exec worker", lambda b: [b, "exec", "--workspace", "/tmp/ws", "--code", "1+1"], 40),
  ("exec --in-process", lambda b: [b, "exec", "--in-process", "--workspace", "/tmp/ws", "--code", "1+1"], 40),
  ("--version", lambda b: [b, "--version"], 40),
  ("plot summary --json", lambda b: [b, "plot", "summary", "--json"], 15),
  ("import 8 MB", lambda b: [b, "import", "--store", "/tmp/abstore", "/tmp/syn8.rep"], 15),
]
env = dict(os.environ, TOOLGATE_DATA_DIR="/tmp/tgd")
print(f"| row | {LA} (median) | {LB} (median) | runs each, alternating |")
print("|---|---:|---:|---:|")
for name, cmd, n in rows:
    t = {A: [], B: []}
    for i in range(n):
        for b in ((A, B) if i % 2 == 0 else (B, A)):
            shutil.rmtree("/tmp/abstore", ignore_errors=True)
            s = time.perf_counter()
            subprocess.run(cmd(b), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
            t[b].append((time.perf_counter() - s) * 1000)
    print(f"| {name} | {statistics.median(t[A]):.1f} ms | {statistics.median(t[B]):.1f} ms | {n} |")
