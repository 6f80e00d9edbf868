"""An MCP client made with the official Python SDK (`mcp` from PyPI), for server/tests/mcp.rs.

Usage: mcp_client.py URL KEY < calls.json

Connects to the Streamable HTTP endpoint URL with `x-api-key: KEY`, initializes, lists the
tools, makes each call of calls.json (`[{"tool": name, "args": {...}}, ...]`) and prints one
JSON document: {"server": name, "tools": [names], "results": [{"is_error": bool, "text": str}]}.
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, key = sys.argv[1], sys.argv[2]
    calls = json.load(sys.stdin)
    headers = {"x-api-key": key}
    async with httpx2.AsyncClient(headers=headers, timeout=60.0) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                results = []
                for call in calls:
                    result = await session.call_tool(call["tool"], call.get("args", {}))
                    text = "".join(c.text for c in result.content if c.type == "text")
                    results.append({"is_error": bool(result.is_error), "text": text})
    print(
        json.dumps(
            {
                "server": init.server_info.name,
                "tools": sorted(t.name for t in tools.tools),
                "results": results,
            }
        )
    )


asyncio.run(main())
