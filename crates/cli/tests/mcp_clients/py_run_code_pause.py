"""A `run_code` program that pauses at the calls needing a person, driven by the official MCP
Python SDK.

Usage: py_run_code_pause.py --mode legacy|auto --confirm approve|decline|token --workspace DIR
                            (--url URL | STDIO_COMMAND...)
The server's user config asks before `create` ([tools] confirm) and, over MCP, before `bash`.
The program `create(a.txt); bash(echo hi > b.txt); print(view(a.txt))` pauses twice: inline
elicitation (2025-11-25), MRTR (2026-07-28) or a token each time; it resumes from the paused
call, so `create` runs once (the Rust side counts it in the telemetry). A decline raises
PermissionError the program handles; forged, replayed and cross-program tokens are refused
and run nothing. Prints one JSON line per check; exits non-zero on the first failure.
"""
import argparse
import asyncio
import json
import os

from mcp import types
from mcp_common import check, make_client, text

PROGRAM = """
create(path="a.txt", file_text="hello from a")
bash(command="echo hi > b.txt")
print(view(path="a.txt"))
"""

DECLINED = """
try:
    bash(command="echo no > c.txt")
    r = "ran"
except PermissionError as e:
    r = "handled: " + str(e)
r
"""


def meta_status(r):
    return ((r.meta or {}).get("io.toolgate/status") or {}).get("status")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True)
    ap.add_argument("--confirm", required=True, choices=["approve", "decline", "token"])
    ap.add_argument("--url")
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--plot-session", action="store_true",
                    help="the server has plot sessions: open a plot first and check the session stays usable while the program is paused")
    ap.add_argument("stdio", nargs="*")
    args = ap.parse_args()
    ws = args.workspace

    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        if args.confirm == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    def exists(name):
        return os.path.exists(os.path.join(ws, name))

    async with make_client(args, None if args.confirm == "token" else elicit) as c:
        if args.confirm == "approve":
            r = await c.call_tool("run_code", {"code": PROGRAM})
            env = json.loads(text(r))
            check("asked twice, create then bash", len(asked) == 2 and "a.txt" in asked[0] and "echo hi > b.txt" in asked[1], asked)
            check("the second question says what already ran", "create(a.txt) ok" in asked[1], asked[1])
            check("the program ended after both answers", env.get("success") is True and not r.is_error and "hello from a" in env.get("stdout", ""), env)
            check("both files written", exists("a.txt") and exists("b.txt"), os.listdir(ws))

        elif args.confirm == "decline":
            r = await c.call_tool("run_code", {"code": DECLINED})
            env = json.loads(text(r))
            check("asked once", len(asked) == 1 and "echo no > c.txt" in asked[0], asked)
            rv = env.get("return_value") or ""
            check("the decline raised PermissionError, which the program handled", env.get("success") is True and rv.startswith("handled: ") and "declined by the user" in rv, env)
            check("nothing of the declined call ran", not exists("c.txt"), os.listdir(ws))

        else:
            if args.plot_session:
                r = await c.call_tool("debrief_searchPlots", {"text": "Alpha — Day 1", "open": True})
                check("a plot is open", "opened" in text(r), text(r))
            r = await c.call_tool("run_code", {"code": PROGRAM})
            first = json.loads(text(r))
            if args.plot_session:
                # A paused program holds no session lock: the session answers meanwhile.
                s = await asyncio.wait_for(c.call_tool("debrief_summarizeCurrentPlot", {}), 10)
                check("the plot session answers while the program is paused", not s.is_error and "Alpha" in text(s), text(s)[:300])
            check("paused at create, waiting (not an error)", first.get("status") == "waiting" and not r.is_error and meta_status(r) == "waiting", first)
            check("the preview names the paused call", "a.txt" in first.get("preview", "") and "Create File" in first.get("preview", ""), first)
            check("nothing of it ran yet", not exists("a.txt"), os.listdir(ws))

            r = await c.call_tool("run_code", {"code": PROGRAM, "confirm": "confirm-forged000000000000"})
            check("a forged token is refused", r.is_error and meta_status(r) == "refused", text(r))
            check("a forged token ran nothing", not exists("a.txt"), os.listdir(ws))

            r = await c.call_tool("run_code", {"code": PROGRAM, "confirm": first["confirm"]})
            second = json.loads(text(r))
            check("resumed, then paused again at bash", second.get("status") == "waiting" and "echo hi > b.txt" in second.get("preview", ""), second)
            check("the preview says what already ran", "create(a.txt) ok" in second.get("preview", ""), second)
            check("create ran, bash not yet", exists("a.txt") and not exists("b.txt"), os.listdir(ws))

            r = await c.call_tool("run_code", {"code": PROGRAM, "confirm": first["confirm"]})
            check("a replayed token is refused", r.is_error and meta_status(r) == "refused", text(r))

            r = await c.call_tool("run_code", {"code": PROGRAM, "confirm": second["confirm"]})
            env = json.loads(text(r))
            check("the program ended", env.get("success") is True and not r.is_error and "hello from a" in env.get("stdout", ""), env)
            check("both files written", exists("a.txt") and exists("b.txt"), os.listdir(ws))

            # A token is bound to its program: another program cannot use it, and the attempt
            # spends it.
            r = await c.call_tool("run_code", {"code": DECLINED})
            paused = json.loads(text(r))
            check("the second program paused", paused.get("status") == "waiting", paused)
            r = await c.call_tool("run_code", {"code": "print('other')", "confirm": paused["confirm"]})
            check("a token for another program is refused", r.is_error and "different call" in text(r), text(r))
            r = await c.call_tool("run_code", {"code": DECLINED, "confirm": paused["confirm"]})
            check("and it was spent", r.is_error, text(r))
            check("nothing of it ran", not exists("c.txt"), os.listdir(ws))

            r = await c.call_tool("run_code", {"code": DECLINED})
            paused = json.loads(text(r))
            r = await c.call_tool("run_code", {"code": DECLINED, "decline": paused["confirm"]})
            env = json.loads(text(r))
            rv = env.get("return_value") or ""
            check("declined by token: PermissionError handled by the program", env.get("success") is True and rv.startswith("handled: "), env)
            check("nothing of the declined call ran", not exists("c.txt"), os.listdir(ws))

    print(json.dumps({"done": True, "mode": args.mode, "confirm": args.confirm}))


asyncio.run(main())
