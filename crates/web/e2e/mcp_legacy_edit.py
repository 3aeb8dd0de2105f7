"""An MCP client on the 2025-11-25 protocol over streamable HTTP (the MCP Python SDK, as Claude
Code and VS Code connect today) that opens Exercise Alpha in its own session and colours HMS
Collingwood's track, approving the elicitation. Started by workbench.e2e.js with
  python mcp_legacy_edit.py URL COLOUR
and TOOLGATE_TOKEN in the environment; prints one JSON line {protocol, opened, reply}."""
import asyncio
import contextlib
import json
import os
import sys

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


@contextlib.asynccontextmanager
async def http_transport(url):
    headers = {"Authorization": f"Bearer {os.environ['TOOLGATE_TOKEN']}"}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


async def main(url, colour):
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    info = types.Implementation(name="e2e-legacy-client", version="1.0")
    async with Client(http_transport(url), mode="legacy", client_info=info, elicitation_callback=elicit) as c:
        r = await c.call_tool("debrief_searchPlots", {"text": "Alpha — Day 1", "open": True})
        opened = json.loads("".join(x.text for x in r.content if x.type == "text")).get("opened")
        r = await c.call_tool("debrief_runTool", {
            "toolId": "set-track-color", "params": {"color": colour},
            "featureNames": ["HMS Collingwood"], "utterance": f"colour Collingwood {colour}"})
        reply = "".join(x.text for x in r.content if x.type == "text")
        print(json.dumps({"protocol": c.protocol_version, "opened": opened, "reply": reply, "asked": asked}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
