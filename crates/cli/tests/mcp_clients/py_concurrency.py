"""N concurrent streamable-HTTP clients (legacy sessions) against `toolgate serve` for D seconds.

Each client opens its own plot (even clients day 1, odd clients day 2), summarises it in a loop
and checks it still sees its own plot; even clients also make an edit through the token fallback
and check that only their own session is dirty. Prints a JSON report; exits 1 on any error.
"""
import asyncio
import json
import sys
import time

from mcp import Client
from mcp_common import http_transport, text

URL, N, DURATION = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
PLOTS = {0: ("Alpha — Day 1", "stac://demo/alpha-day1/item.json"),
         1: ("Alpha — Day 2", "stac://demo/alpha-day2/item.json")}


async def client(i, stats):
    query, plot = PLOTS[i % 2]
    async with Client(http_transport(URL), mode="legacy") as c:
        r = json.loads(text(await c.call_tool("debrief_searchPlots", {"text": query, "open": True})))
        assert r.get("opened") == plot, r
        edited = False
        end = time.monotonic() + DURATION
        while time.monotonic() < end:
            s = json.loads(text(await c.call_tool("debrief_summarizeCurrentPlot", {})))
            stats["calls"] += 1
            # Its own plot, and only it: another session's plot in this session would make the
            # summary carry plotId and openPlots (they appear only when several plots are open).
            if not s.get("title", "").endswith(query) or "openPlots" in s or "plotId" in s:
                raise AssertionError(f"client {i} sees another session's plot: {json.dumps(s)[:300]}")
            if bool(s.get("dirty")) != edited:
                raise AssertionError(f"client {i}: dirty={s.get('dirty')} but edited={edited}")
            if i % 2 == 0 and not edited:
                call = {"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["HMS Nelson"]}
                t = text(await c.call_tool("debrief_runTool", call))
                token = t.split('"confirm": "')[1].split('"')[0]
                t = text(await c.call_tool("debrief_runTool", {**call, "confirm": token}))
                assert "dirty" in t, t
                stats["calls"] += 2
                edited = True


async def main():
    stats = {"calls": 0}
    started = time.monotonic()
    results = await asyncio.gather(*(client(i, stats) for i in range(N)), return_exceptions=True)
    errors = [repr(r) for r in results if isinstance(r, BaseException)]
    print(json.dumps({"clients": N, "seconds": round(time.monotonic() - started, 1),
                      "calls": stats["calls"], "errors": errors[:5], "errorCount": len(errors)}))
    sys.exit(1 if errors else 0)


asyncio.run(main())
