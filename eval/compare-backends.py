"""Whole-turn latency per prompt, in-process model against the model server, from two probe
reports of the same scenarios (eval/local-models.sh with BACKEND=in-process and BACKEND=server).

usage: python3 eval/compare-backends.py IN_PROCESS.json SERVER.json   (prints a Markdown table)
"""
import json
import statistics
import sys


def per_scenario(path):
    report = json.load(open(path))
    out = {}
    for run in report["runs"]:
        r = out.setdefault(run["scenario"], {"wall": [], "prompt": 0, "completion": 0, "turns": 0, "outcome": 0})
        r["wall"].append(run["wall_ms"] / 1000)
        r["prompt"] += run["prompt_tokens"]
        r["completion"] += run["completion_tokens"]
        r["turns"] += run["turns"]
        r["outcome"] += int(run["outcome"])
    return out


local, server = per_scenario(sys.argv[1]), per_scenario(sys.argv[2])
print("| prompt | in-process s (median) | server s (median) | in-process / server | model requests (in-process / server) | completion tokens (in-process / server) | outcome (in-process / server) |")
print("|---|---:|---:|---:|---:|---:|---|")
ratios, lw, sw = [], [], []
for name in sorted(local):
    l, s = local[name], server.get(name)
    if s is None:
        continue
    ml, ms = statistics.median(l["wall"]), statistics.median(s["wall"])
    lw += l["wall"]
    sw += s["wall"]
    ratios.append(ml / ms)
    print(f"| {name} | {ml:.1f} | {ms:.1f} | {ml / ms:.2f} | {l['turns']} / {s['turns']} | {l['completion']} / {s['completion']} "
          f"| {l['outcome']}/{len(l['wall'])} / {s['outcome']}/{len(s['wall'])} |")
print(f"| **all runs** | {statistics.median(lw):.1f} | {statistics.median(sw):.1f} | {statistics.median(lw) / statistics.median(sw):.2f} (median of per-prompt ratios {statistics.median(ratios):.2f}) | | | |")
