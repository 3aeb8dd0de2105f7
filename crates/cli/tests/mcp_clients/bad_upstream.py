"""A misbehaving MCP server over stdio, for robustness tests.

mode "hang": never answers anything.
mode "die": answers initialize and tools/list (one tool, "boom"), then exits on tools/call.
mode "slow": like "die" but the call sleeps forever instead of exiting.
Each tools/call appends a line to calls.log in the working directory (when it can).
"""
import json
import sys
import time

mode = sys.argv[1]
if mode == "hang":
    while True:
        time.sleep(3600)

for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method = msg.get("method")
    if "id" not in msg:
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "bad", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "boom", "description": "misbehaves", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        # The signal tests wait for: a call reached this server (its cwd, when writable).
        try:
            with open("calls.log", "a") as log:
                log.write("call\n")
        except OSError:
            pass
        if mode == "die":
            sys.exit(3)
        time.sleep(3600)
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
