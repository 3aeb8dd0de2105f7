"""Drives `toolgate mcp` / `toolgate serve` with the official MCP Python SDK (PyPI `mcp`).

Usage: py_scenarios.py --mode legacy|auto --confirm approve|decline|token
                       (--stdio BIN [ARGS...] | --url URL) --store DIR
Prints one JSON line per check and exits non-zero on the first failure, with what was seen.
The 8 Debrief scenarios (H1–H5, F1–F3) run end to end: search → open → summarise → list → run
with confirmation (elicitation or the token fallback) → decline applies nothing.
"""
import argparse
import asyncio
import json

from mcp import types
from mcp_common import check, make_client, text, tree_hash

PLOT = "stac://demo/alpha-day1/item.json"


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True)
    ap.add_argument("--confirm", required=True, choices=["approve", "decline", "token"])
    ap.add_argument("--url")
    ap.add_argument("--store", required=True)
    ap.add_argument("--upstream", action="store_true", help="also call the proxied everything server")
    ap.add_argument("stdio", nargs="*")
    args = ap.parse_args()

    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        if args.confirm == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    disk_before = tree_hash(args.store)
    async with make_client(args, None if args.confirm == "token" else elicit) as c:
        version = c.protocol_version
        expected = "2025-11-25" if args.mode == "legacy" else "2026-07-28"
        check(f"negotiated protocol {expected}", version == expected, version)
        tools = (await c.list_tools()).tools
        names = [t.name for t in tools]
        check("tools/list is the fixed surface", names == [
            "debrief_searchPlots", "debrief_summarizeCurrentPlot", "debrief_listTools",
            "debrief_runTool", "run_code"], names)
        by = {t.name: t for t in tools}
        check("summarise is read-only", by["debrief_summarizeCurrentPlot"].annotations.read_only_hint is True, by["debrief_summarizeCurrentPlot"].annotations)
        check("runTool is destructive", by["debrief_runTool"].annotations.destructive_hint is True, by["debrief_runTool"].annotations)

        # F1 first: nothing is open in a fresh session.
        r = await c.call_tool("debrief_runTool", {"toolId": "set-track-color", "params": {"color": "red"}})
        check("F1 no plot open", "No plot is open" in text(r), text(r))
        check("F1 is a typed refusal: isError", r.is_error is True, r)
        check("F1 carries its kind", (r.meta or {}).get("io.toolgate/status", {}).get("reason") == "no_plot", r.meta)

        # H1
        r = await c.call_tool("debrief_searchPlots", {"text": "Alpha — Day 1", "open": True})
        reply = json.loads(text(r))
        check("H1 search opens the plot", reply.get("opened") == PLOT, reply)
        check("H1 a success is not an error", r.is_error is False, r)

        # H2
        r = await c.call_tool("debrief_summarizeCurrentPlot", {})
        summary = json.loads(text(r))
        check("H2 summary lists features", summary.get("total", 0) > 0 and summary.get("tokens", 0) > 0, summary)

        # listTools
        r = await c.call_tool("debrief_listTools", {})
        listing = json.loads(text(r))
        stc = [t for t in listing if t["id"] == "set-track-color"]
        check("listTools shows set-track-color as mutating", stc and stc[0]["mutating"] is True, listing[:3])

        # H3: run with confirmation
        call = {"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["HMS Nelson"],
                "utterance": "colour the Nelson track red"}
        r = await c.call_tool("debrief_runTool", call)
        t = text(r)
        if args.confirm == "token":
            check("H3 token fallback previews and asks", "Confirmation needed" in t and "Set Track Color" in t, t)
            token = t.split('"confirm": "')[1].split('"')[0]
            r2 = await c.call_tool("debrief_runTool", {**call, "confirm": "confirm-forged000000000000"})
            check("a forged token is refused", r2.is_error and "nothing was applied" in text(r2), text(r2))
            r2 = await c.call_tool("debrief_runTool", {**call, "params": {"color": "blue"}, "confirm": token})
            check("a token for another call is refused", r2.is_error and "different call" in text(r2), text(r2))
            # that attempt consumed the token: ask again
            r = await c.call_tool("debrief_runTool", call)
            token = text(r).split('"confirm": "')[1].split('"')[0]
            r = await c.call_tool("debrief_runTool", {**call, "confirm": token})
            t = text(r)
            check("H3 token applies the edit, unsaved", "dirty" in t and "unsaved" in t, t)
            r2 = await c.call_tool("debrief_runTool", {**call, "confirm": token})
            check("a token is single-use", r2.is_error, text(r2))
        elif args.confirm == "approve":
            check("H3 elicitation was asked with the preview", len(asked) == 1 and "Set Track Color" in asked[0] and "HMS Nelson" in asked[0], asked)
            check("H3 approved edit applied, unsaved", "dirty" in t and "unsaved" in t, t)
        else:
            check("H3 elicitation was asked", len(asked) == 1, asked)
            check("H3 declined: nothing changed", "declined" in t and "nothing was run or changed" in t, t)
            check("H3 a decline is an answer, typed", r.is_error is False and (r.meta or {}).get("io.toolgate/status", {}).get("status") == "declined", r)
        r = await c.call_tool("debrief_summarizeCurrentPlot", {})
        dirty = json.loads(text(r)).get("dirty")
        check("dirty flag matches the answer", bool(dirty) == (args.confirm != "decline"), text(r)[:400])

        # H4 analytical: no confirmation
        n_asked = len(asked)
        r = await c.call_tool("debrief_runTool", {"toolId": "speed-filter", "params": {"max_knots": 5}, "featureNames": ["HMS Nelson"]})
        check("H4 analytical result goes to the Results panel", "Results panel" in text(r), text(r))
        check("H4 asked nothing", len(asked) == n_asked, asked)

        # H5
        r = await c.call_tool("debrief_summarizeCurrentPlot", {"selectionOnly": True})
        check("H5 selection-only summary", json.loads(text(r)).get("selectionOnly") is True, text(r)[:300])

        # F2 nothing selected
        r = await c.call_tool("debrief_runTool", {"toolId": "set-track-color", "params": {"color": "red"}, "scope": "selection"})
        check("F2 nothing selected", "nothing is selected" in text(r).lower(), text(r))
        check("F2 is a typed refusal: isError", r.is_error is True, r)
        # The seed's case: no scope at all, nothing selected — a mutation is not guessed.
        r = await c.call_tool("debrief_runTool", {"toolId": "set-track-color", "params": {"color": "red"}})
        check("F2 default target of a mutation is not 'all'", r.is_error is True and "I will not guess" in text(r), text(r))

        # F3 invented tool
        r = await c.call_tool("debrief_runTool", {"toolId": "make-it-pretty", "params": {}})
        check("F3 unknown tool id", "Unknown tool id" in text(r), text(r))
        check("F3 is a typed refusal: isError", r.is_error is True and (r.meta or {}).get("io.toolgate/status", {}).get("reason") == "unknown_tool", r)
        r = await c.call_tool("debrief_runTool", {"toolId": "set-track-color", "params": {"colour": "red"}, "scope": "all"})
        check("invalid parameters are a typed refusal", r.is_error is True and "unknown parameter" in text(r), text(r))
        r = await c.call_tool("debrief_runTool", {"toolId": "set-track-color", "params": {"color": "red"}, "featureNames": ["Nobody At All"]})
        check("an unknown feature name is a typed refusal", r.is_error is True and (r.meta or {}).get("io.toolgate/status", {}).get("reason") == "target", text(r))

        # run_code: a program that calls a tool and returns a value
        r = await c.call_tool("run_code", {"code": "x = [n * 2 for n in range(5)]\nsum(x)"})
        env = json.loads(text(r))
        check("run_code returns one result", env.get("success") is True and env.get("return_value") == 20, env)

        if args.upstream:
            r = await c.call_tool("debrief_listTools", {})
            ids = [t["id"] for t in json.loads(text(r))]
            check("upstream tools are listed namespaced", "everything__echo" in ids and "everything__get_sum" in ids, ids)
            r = await c.call_tool("run_code", {"code": "r = everything__get_sum(a=2, b=3)\nr"})
            env = json.loads(text(r))
            check("run_code calls a proxied upstream tool", env.get("success") is True and "5" in json.dumps(env.get("return_value")), env)
            r = await c.call_tool("debrief_runTool", {"toolId": "everything__echo", "params": {"message": "hello upstream"}})
            t = text(r)
            if args.confirm == "token":
                check("upstream tool (unknown effect) needs confirmation", "Confirmation needed" in t, t)
                token = t.split('"confirm": "')[1].split('"')[0]
                r = await c.call_tool("debrief_runTool", {"toolId": "everything__echo", "params": {"message": "hello upstream"}, "confirm": token})
                t = text(r)
            if args.confirm != "decline":
                check("upstream tool called directly", "hello upstream" in t, t)

    check("nothing was written to disk", tree_hash(args.store) == disk_before, "store changed")
    print(json.dumps({"done": True, "mode": args.mode, "confirm": args.confirm}))


asyncio.run(main())
