"""A `run_code` program that edits the open plot, driven by the official MCP Python SDK.

Usage: py_run_code_plot.py --mode legacy|auto --confirm approve|decline|token --store DIR
                           [--workbench URL] (--url URL | STDIO_COMMAND...)
The program recolours one track and trims another. One preview must name both; one approval
applies both as one undo step (checked through the workbench API with --workbench), the plot
is dirty, the store on disk is untouched; a decline applies nothing; a forged or replayed token
applies nothing. Prints one JSON line per check; exits non-zero on the first failure.
"""
import argparse
import asyncio
import json

from mcp import types
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_common import auth, check, make_client, text, tree_hash

PLOT = "stac://demo/alpha-day1/item.json"
PROGRAM = """
set_track_color(color="red", feature_names=["HMS Nelson"])
trim_track(start_time="2026-03-01T01:00:00Z", end_time="2026-03-01T11:00:00Z", feature_names=["Contact"])
stats = track_stats(feature_names=["Contact"])
stats["point_count"]
"""


def names_both(s):
    return "HMS Nelson" in s and "Contact" in s and "Set Track Color" in s and "Trim Track" in s


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True)
    ap.add_argument("--confirm", required=True, choices=["approve", "decline", "token"])
    ap.add_argument("--url")
    ap.add_argument("--workbench")
    ap.add_argument("--store", required=True)
    ap.add_argument("stdio", nargs="*")
    args = ap.parse_args()

    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        if args.confirm == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    async def summary(c):
        r = await c.call_tool("debrief_summarizeCurrentPlot", {})
        return json.loads(text(r))

    disk_before = tree_hash(args.store)
    async with make_client(args, None if args.confirm == "token" else elicit) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        desc = tools["run_code"].description
        check("run_code's description lists the plot functions", "set_track_color(" in desc and "trim_track(" in desc, desc)

        r = await c.call_tool("run_code", {"code": 'set_track_color(color="red", feature_names=["HMS Nelson"])'})
        env = json.loads(text(r))
        check("without an open plot the plot functions say what to do", r.is_error and (env.get("error") or {}).get("type") == "NameError" and "no plot is open" in env["error"]["message"], env)

        r = await c.call_tool("debrief_searchPlots", {"text": "Alpha — Day 1", "open": True})
        check("the plot is open", json.loads(text(r)).get("opened") == PLOT, text(r))

        r = await c.call_tool("run_code", {"code": PROGRAM})
        env = json.loads(text(r))
        check("the program ran", env.get("return_value") is not None and env.get("error") is None, env)
        plot = env.get("plot") or {}

        if args.confirm == "token":
            check("the edits wait for a confirmation", plot.get("status") == "confirmation_needed" and not r.is_error, env)
            check("one preview names both edits", names_both(plot.get("preview", "")), plot)
            check("nothing applied before the token", not (await summary(c)).get("dirty"), "dirty")
            token = plot["confirm"]
            r2 = await c.call_tool("run_code", {"code": PROGRAM, "confirm": "confirm-forged000000000000"})
            check("a forged token is refused", r2.is_error and "nothing was applied" in text(r2), text(r2))
            check("a forged token applied nothing", not (await summary(c)).get("dirty"), "dirty")
            r = await c.call_tool("run_code", {"code": PROGRAM, "confirm": token})
            env = json.loads(text(r))
            plot = env.get("plot") or {}
            check("the token applies the previewed change", plot.get("status") == "applied" and env.get("success") is True and not r.is_error, env)
            r2 = await c.call_tool("run_code", {"code": PROGRAM, "confirm": token})
            check("a replayed token is refused", r2.is_error and "nothing was applied" in text(r2), text(r2))
        elif args.confirm == "approve":
            check("one confirmation, naming both edits", len(asked) == 1 and names_both(asked[0]), asked)
            check("applied", plot.get("status") == "applied" and env.get("success") is True and not r.is_error, env)
        else:
            check("one confirmation was asked", len(asked) == 1 and names_both(asked[0]), asked)
            check("declined: nothing applied, and the result says so (an answer, not an error)", plot.get("status") == "declined" and env.get("success") is False and not r.is_error and "nothing was applied" in plot.get("message", ""), env)

        s = await summary(c)
        applied = args.confirm != "decline"
        check("dirty matches the answer", bool(s.get("dirty")) is applied, s)

        if args.workbench and applied:
            async with create_mcp_http_client(headers=auth()) as http:
                state = (await http.get(f"{args.workbench}/api/state")).json()
                p = [p for p in state["plots"] if p["plotId"] == PLOT][0]
                check("the workbench sees the change, unsaved", p["dirty"] and p["canUndo"] and "CodeAct program" in (p["undoLabel"] or ""), p)
                log = (await http.get(f"{args.workbench}/api/activity")).json()["entries"]
                edits = [e for e in log if e["action"] == "edit" and e["plotId"] == PLOT]
                check("the activity log names the client and the program's edits", len(edits) == 1 and edits[0]["what"].startswith("run_code: ") and "Set Track Color" in edits[0]["what"] and edits[0]["who"] not in ("", "chat", "unknown"), log)
                r = await http.post(f"{args.workbench}/api/undo", json={"plotId": PLOT})
                check("undo", r.status_code == 200, r.text)
                state = (await http.get(f"{args.workbench}/api/state")).json()
                p = [p for p in state["plots"] if p["plotId"] == PLOT][0]
                check("one undo step removed both edits", not p["dirty"] and not p["canUndo"], p)

    check("nothing was written to disk", tree_hash(args.store) == disk_before, "store changed")
    print(json.dumps({"done": True, "mode": args.mode, "confirm": args.confirm}))


asyncio.run(main())
