"""What the MCP Python SDK drivers share (imported by py_scenarios.py, py_run_code_plot.py and
py_concurrency.py, which run as scripts from this folder): the store hash, a result's text, one
check line per assertion, and the client over stdio or streamable HTTP with `toolgate serve`'s
access token (TOOLGATE_TOKEN) on every request."""
import contextlib
import hashlib
import json
import os
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def tree_hash(root):
    h = hashlib.sha256()
    for d, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            p = os.path.join(d, f)
            h.update(p.encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def check(name, ok, seen):
    print(json.dumps({"check": name, "ok": bool(ok)}), flush=True)
    if not ok:
        print(f"FAILED {name}; saw:\n{seen}", file=sys.stderr, flush=True)
        sys.exit(1)


def auth():
    token = os.environ.get("TOOLGATE_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else None


@contextlib.asynccontextmanager
async def http_transport(url):
    async with create_mcp_http_client(headers=auth()) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def make_client(args, elicit):
    """A client for `--url URL` (streamable HTTP) or the stdio command in `args.stdio`."""
    kwargs = {"mode": args.mode}
    if elicit is not None:
        kwargs["elicitation_callback"] = elicit
    if args.url:
        return Client(http_transport(args.url), **kwargs)
    params = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:], env=dict(os.environ))
    return Client(params, **kwargs)
