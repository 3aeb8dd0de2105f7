"""1,000 `run_code` programs paused by one client (token path) against `toolgate mcp`: the
server keeps at most its cap of paused programs (each holds a sandbox worker), stops the
oldest, and its memory — the server's resident set plus its workers' — stays bounded.

Usage: py_pause_memory.py --workspace DIR [--count N] STDIO_COMMAND...
Prints one JSON line per check and a final {"done": true, "peak_rss_mib": …, "workers_max": …}.
"""
import argparse
import asyncio
import json
import os
import time

from mcp_common import check, make_client, text

PROGRAM = 'x = [i * i for i in range(1000)]\nbash(command="echo {n}")\nsum(x)'


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return out


def server_pid(me):
    # The stdio server is the python process's child that runs toolgate.
    for c in children(me):
        try:
            with open(f"/proc/{c}/cmdline", "rb") as f:
                if b"toolgate" in f.read():
                    return c
        except OSError:
            pass
    return None


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--mode", default="legacy")
    ap.add_argument("--url")
    ap.add_argument("stdio", nargs="*")
    args = ap.parse_args()

    peak, workers_max, first_token, first_sample = 0, 0, None, None
    started = time.monotonic()
    async with make_client(args, None) as c:
        pid = server_pid(os.getpid())
        check("found the server process", pid is not None, os.getpid())
        for n in range(args.count):
            r = await c.call_tool("run_code", {"code": PROGRAM.format(n=n)})
            body = json.loads(text(r))
            if body.get("status") != "waiting":
                check(f"program {n} paused", False, body)
            if first_token is None:
                first_token = body["confirm"]
            if n % 50 == 49 or n == args.count - 1:
                kids = children(pid)
                total = rss_kib(pid) + sum(rss_kib(k) for k in kids)
                peak = max(peak, total)
                if first_sample is None:
                    first_sample = total
                    per_process = {k: rss_kib(k) for k in [pid] + kids}
                workers_max = max(workers_max, len(kids))
        check("every program paused", True, None)
        r = await c.call_tool("run_code", {"code": PROGRAM.format(n=0), "confirm": first_token})
        check("the oldest was stopped and its client told", r.is_error and "evicted" in text(r), text(r))
    print(json.dumps({"done": True, "peak_rss_mib": round(peak / 1024, 1), "workers_max": workers_max,
                      "after_50_mib": round(first_sample / 1024, 1),
                      "after_50_per_process_mib": [round(v / 1024, 1) for v in per_process.values()],
                      "seconds": round(time.monotonic() - started, 1)}))


asyncio.run(main())
