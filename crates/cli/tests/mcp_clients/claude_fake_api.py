"""Claude Code's own MCP client drives a `run_code` program that pauses at the calls needing a
person, offline: a scripted fake of the Anthropic Messages API plays the model.

Usage: claude_fake_api.py --claude CLAUDE --toolgate BIN --workspace DIR --log FILE
                          --elicitations FILE --answer accept|none [--timeout SECS]
       claude_fake_api.py --hook FILE        (Claude Code's Elicitation hook: logs, accepts)
TOOLGATE_CONFIG (asking before `create`), TOOLGATE_TELEMETRY and TOOLGATE_DATA_DIR come from the
environment and reach `toolgate mcp --surface codeact` through the MCP config given to Claude
Code (`claude -p`, a scratch HOME, no network, no key: ANTHROPIC_BASE_URL points here).

The fake API (stdlib http.server on 127.0.0.1) answers POST /v1/messages streamed (SSE) or not
and logs every request to --log, one JSON line each. Its script: the first turn calls
`mcp__toolgate__run_code` with PROGRAM; while a tool result says {"status": "waiting",
"confirm": TOKEN} it calls run_code again with the same code and that token; on the finished
envelope (it has "success") it says "done" and ends the turn. A request that is not the
conversation (no run_code among its tools) gets a short text; count_tokens, GET and HEAD a
harmless answer.

Claude Code 2.1 declares elicitation (form and url) on every MCP server and speaks 2026-07-28, so
toolgate asks it through MRTR input requests, never the token. Headless (`-p`) it answers each
with "cancel" unless an Elicitation hook answers; with --answer accept this script is that hook
(--settings), accepting {"approve": true} and logging each question to --elicitations.
The program `create(a.txt); bash(echo hi > b.txt); print(view(a.txt))` then pauses twice
(create, then bash) inside the model's one run_code call and resumes from each paused call;
with --answer none Claude Code dismisses the question ("cancel"), so the program stays paused
and the model gets the preview and a token (it ends its turn asking the user); nothing runs. Prints one JSON line per check; exits non-zero on the
first failure; ends with {"done": true, ...} naming what Claude Code requested.
"""
import argparse
import itertools
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp_common import check

TOOL = "mcp__toolgate__run_code"
PROGRAM = 'create(path="a.txt", file_text="hello")\nbash(command="echo hi > b.txt")\nprint(view(path="a.txt"))'
MODEL = "claude-fake-1"

_ids = itertools.count(1)
_lock = threading.Lock()


def tool_result_text(block):
    c = block.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(p.get("text", "") for p in c or [] if p.get("type") == "text")


def last_tool_result(body):
    """The text of the last tool_result in the request's last user message, or None."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if not isinstance(content, list):
            return None
        results = [b for b in content if b.get("type") == "tool_result"]
        return tool_result_text(results[-1]) if results else None
    return None


def is_conversation(body):
    return any(t.get("name") == TOOL for t in body.get("tools") or [])


# Whether the scripted model answers a "waiting" result's token itself (set from --answer).
CONFIRMS_TOKENS = True


def next_turn(body):
    """The scripted assistant turn: ("tool_use", input) or ("text", str)."""
    if not is_conversation(body):
        return ("text", "ok")
    result = last_tool_result(body)
    if result is None:
        return ("tool_use", {"code": PROGRAM})
    try:
        env = json.loads(result)
    except ValueError:
        env = None
    if isinstance(env, dict) and env.get("status") == "waiting" and env.get("confirm"):
        if not CONFIRMS_TOKENS:
            # A model asks the person in its reply; headless, the turn ends there.
            return ("text", "waiting for your confirmation")
        return ("tool_use", {"code": PROGRAM, "confirm": env["confirm"]})
    if isinstance(env, dict) and "success" in env:
        return ("text", "done")
    # Anything else (an error, a refusal) ends the conversation; the checks say what it was.
    return ("text", "unexpected tool result")


def block_of(kind, value):
    if kind == "tool_use":
        return {"type": "tool_use", "id": f"toolu_fake{next(_ids):04d}", "name": TOOL, "input": value}
    return {"type": "text", "text": value}


def message(block, stop):
    return {
        "id": f"msg_fake{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def sse(block, stop):
    msg = message(block, None)
    msg["content"] = []
    if block["type"] == "tool_use":
        start = dict(block, input={})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    events = [
        ("message_start", {"type": "message_start", "message": msg}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 10}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


def make_handler(log_path):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def record(self, body):
            with _lock, open(log_path, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

        def send(self, status, ctype, data):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self):
            self.record(None)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            self.record(None)
            self.send(200, "application/json", b'{"data": [], "has_more": false}')

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"unparsed": raw.decode(errors="replace")}
            self.record(body)
            path = self.path.split("?")[0]
            if path.endswith("/count_tokens"):
                return self.send(200, "application/json", b'{"input_tokens": 10}')
            if not path.endswith("/v1/messages"):
                return self.send(200, "application/json", b"{}")
            kind, value = next_turn(body)
            block = block_of(kind, value)
            stop = "tool_use" if kind == "tool_use" else "end_turn"
            if body.get("stream"):
                self.send(200, "text/event-stream", sse(block, stop))
            else:
                self.send(200, "application/json", json.dumps(message(block, stop)).encode())

    return Handler


def run_code_rounds(log_path):
    """The run_code calls Claude Code made, in order, as (input, result text), from the
    conversation requests it sent (later requests repeat the history: deduplicated by id)."""
    uses, results = {}, {}
    with open(log_path) as f:
        for line in f:
            body = json.loads(line).get("body") or {}
            for m in body.get("messages") or []:
                if not isinstance(m.get("content"), list):
                    continue
                for b in m["content"]:
                    if b.get("type") == "tool_use" and b.get("name") == TOOL:
                        uses.setdefault(b["id"], b.get("input"))
                    elif b.get("type") == "tool_result":
                        results.setdefault(b["tool_use_id"], tool_result_text(b))
    return [(inp, results.get(i)) for i, inp in uses.items()]



def hook(log_path):
    """Claude Code's Elicitation hook: log what the server asked, approve it."""
    asked = json.load(sys.stdin)
    with open(log_path, "a") as f:
        f.write(json.dumps(asked) + "\n")
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"approve": True}}}))


def run_claude(args, port):
    with tempfile.TemporaryDirectory() as home:
        server_env = {k: os.environ[k] for k in ("TOOLGATE_CONFIG", "TOOLGATE_TELEMETRY", "TOOLGATE_DATA_DIR") if k in os.environ}
        mcp_config = os.path.join(home, "mcp.json")
        with open(mcp_config, "w") as f:
            json.dump({"mcpServers": {"toolgate": {
                "type": "stdio",
                "command": args.toolgate,
                "args": ["mcp", "--surface", "codeact", "--workspace", args.workspace],
                "env": server_env,
            }}}, f)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        env.update({
            "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "ANTHROPIC_API_KEY": "dummy",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "MCP_TIMEOUT": "60000",
            # MCP tools in the request itself, not deferred behind ToolSearch.
            "ENABLE_TOOL_SEARCH": "false",
        })
        cmd = [
            args.claude, "-p", "Run the program with run_code, confirming each paused call.",
            "--mcp-config", mcp_config, "--strict-mcp-config",
            "--allowedTools", TOOL,
            "--output-format", "json",
            "--no-session-persistence",
        ]
        if args.answer == "accept":
            me = os.path.abspath(__file__)
            command = f"{shlex.quote(sys.executable)} {shlex.quote(me)} --hook {shlex.quote(args.elicitations)}"
            cmd += ["--settings", json.dumps({"hooks": {"Elicitation": [{"hooks": [{"type": "command", "command": command}]}]}})]
        try:
            return subprocess.run(cmd, env=env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired as e:
            check("Claude Code finished in time", False, f"{e.stdout}\n{e.stderr}")


def main():
    if sys.argv[1:2] == ["--hook"]:
        return hook(sys.argv[2])
    ap = argparse.ArgumentParser()
    ap.add_argument("--claude", required=True)
    ap.add_argument("--toolgate", required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--elicitations", required=True)
    ap.add_argument("--answer", required=True, choices=["accept", "none"])
    ap.add_argument("--timeout", type=float, default=180)
    args = ap.parse_args()
    ws = args.workspace
    global CONFIRMS_TOKENS
    CONFIRMS_TOKENS = args.answer == "accept"

    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args.log))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    p = run_claude(args, server.server_address[1])
    server.shutdown()

    seen = f"exit {p.returncode}\n--- stdout ---\n{p.stdout}\n--- stderr ---\n{p.stderr}"
    check("Claude Code exited 0", p.returncode == 0, seen)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        out = {}
    expected_reply = "done" if args.answer == "accept" else "waiting for your confirmation"
    check(f"Claude Code's answer is the scripted {expected_reply!r}", out.get("result") == expected_reply and not out.get("is_error"), seen)

    with open(args.log) as f:
        requests = [json.loads(line) for line in f]
    conversation = [r for r in requests if is_conversation(r.get("body") or {})]
    check("Claude Code offered toolgate's run_code to the model", conversation, [r.get("path") for r in requests])

    rounds = run_code_rounds(args.log)
    check("the model called run_code once, with the program", len(rounds) == 1 and rounds[0][0] == {"code": PROGRAM}, rounds)
    try:
        env = json.loads(rounds[0][1] or "")
    except ValueError:
        env = {"unparsed": rounds[0][1]}
    asked = []
    if os.path.exists(args.elicitations):
        with open(args.elicitations) as f:
            asked = [json.loads(line) for line in f]
    written = sorted(os.listdir(ws))

    if args.answer == "accept":
        msgs = [a.get("message", "") for a in asked]
        check("Claude Code's hook was asked twice, by toolgate", len(asked) == 2 and all(a.get("mcp_server_name") == "toolgate" for a in asked), asked)
        check("the program paused at create first", "Create File" in msgs[0] and "a.txt" in msgs[0] and "no tool calls before this one" in msgs[0], msgs[0])
        check("then at bash, after create ran", "echo hi > b.txt" in msgs[1] and "create(a.txt) ok" in msgs[1], msgs[1])
        check("the program ended with all three calls", env.get("success") is True and env.get("stdout") == "hello\n" and env.get("tool_calls") == 3, env)
        check("both files written", written == ["a.txt", "b.txt"], written)
    else:
        check("nobody was asked through a hook", not asked, asked)
        # Claude Code dismissed the question ("cancel"): nobody decided, so nothing is declined;
        # the program stays paused at create and the model gets the preview and a token.
        check("dismissed, the program waits at create with a token", env.get("status") == "waiting" and "a.txt" in env.get("preview", "") and str(env.get("confirm", "")).startswith("confirm-"), env)
        check("nothing was written", written == [], written)

    kinds = sorted({f"{r['method']} {r['path'].split('?')[0]}" + (" (stream)" if (r.get("body") or {}).get("stream") else "")
                    for r in requests})
    print(json.dumps({"done": True, "answer": args.answer, "requests": len(requests), "conversation_requests": len(conversation), "kinds": kinds}))


if __name__ == "__main__":
    sys.exit(main())
