"""Drives Ferret's MCP server with the official MCP Python SDK (PyPI `mcp`).

Usage: client.py stdio FERRET_BINARY ARG...   (starts `FERRET_BINARY ARG...` as a stdio server)
       client.py http URL                      (a streamable HTTP server, e.g. http://127.0.0.1:8080/mcp)

Over HTTP, with FERRET_MCP_TOKEN set, it first checks that a request without the token is
refused (401), then sends it as `Authorization: Bearer <token>`.

Initialises, lists the tools, searches, fetches a cited hit, finds the model file
FERRET_MCP_MODEL_FILE names (a LoRA) when it is set, and checks that a call with a wrong
argument type, an unknown tool and missing arguments are errors the server survives. Prints
`ok` and exits 0, or says what failed and exits 1.
"""

import asyncio
import os
import sys

import httpx2

from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

QUESTION = "how often should keys be rotated?"
EXPECTED = "90 days"


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def exercise(session):
    await session.initialize()
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    check({"search", "fetch"} <= set(tools), f"tools listed: {sorted(tools)}")
    check(len(tools["search"].description or "") > 40, "search says what it is for")

    found = await session.call_tool("search", {"question": QUESTION})
    check(not found.is_error, f"search failed: {found.content}")
    result = found.structured_content
    check(result["response_type"] == "results", f"an answer: {result}")
    check(EXPECTED in result["answer"], f"the answer states {EXPECTED!r}: {result['answer']}")
    check(result["citations"], "the answer cites its sources")
    check(result["hits"], "hits are listed")

    cited = result["citations"][0]["hit_id"]
    fetched = await session.call_tool("fetch", {"id": cited})
    check(not fetched.is_error, f"fetch failed: {fetched.content}")
    check(EXPECTED in fetched.structured_content["text"], "the cited hit's text holds the answer")

    wrong = await session.call_tool("search", {"question": 7})
    check(wrong.is_error, "a question that is not a string is an error result")
    missing = await session.call_tool("fetch", {})
    check(missing.is_error, "a call missing its argument is an error result")
    unknown_id = await session.call_tool("fetch", {"id": "no-such-hit"})
    check(unknown_id.is_error, "an id no search returned is an error result")
    try:
        await session.call_tool("no_such_tool", {})
        check(False, "an unknown tool is refused")
    except MCPError:
        pass

    model_file = os.environ.get("FERRET_MCP_MODEL_FILE")
    if model_file:
        check("find_model" in tools, f"find_model listed: {sorted(tools)}")
        found = await session.call_tool("find_model", {"file_name": model_file, "model_type": "lora"})
        check(not found.is_error, f"find_model failed: {found.content}")
        result = found.structured_content
        check(result["status"] == "FOUND", f"the file is found: {result}")
        best = result["candidates"][0]
        check(best["file_name"] == model_file, f"the exact file first: {best}")
        check(best["folder"] == "models/loras", f"its folder: {best}")
        path_like = await session.call_tool("find_model", {"file_name": "../" + model_file})
        check(path_like.is_error, "a path-like name is an error result")
        workflow = {
            "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
            "10": {"class_type": "LoraLoader", "inputs": {"lora_name": model_file, "model": ["4", 0], "clip": ["4", 1]}},
        }
        whole = await session.call_tool("find_model", {"workflow": workflow})
        check(not whole.is_error, f"find_model of a workflow failed: {whole.content}")
        files = {f["file_name"]: f for f in whole.structured_content["files"]}
        check(files[model_file]["status"] == "FOUND", f"the workflow's LoRA is found: {files}")
        check(whole.structured_content.get("base_model") == "SDXL", f"the checkpoint gives the base: {whole.structured_content}")
        not_a_workflow = await session.call_tool("find_model", {"workflow": {"nodes": 3}})
        check(not_a_workflow.is_error, "a workflow that is not one is an error result")

    again = await session.call_tool("search", {"question": QUESTION, "limit": 3})
    check(not again.is_error, "the server keeps serving after the errors")
    check(len(again.structured_content["hits"]) <= 3, "the limit is honoured")


async def main(argv):
    if argv[1] == "stdio":
        # The server gets this process's environment (FERRET_HOME above all), not the SDK's
        # short default list.
        params = StdioServerParameters(command=argv[2], args=argv[3:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await exercise(session)
    elif argv[1] == "http":
        headers = {}
        token = os.environ.get("FERRET_MCP_TOKEN")
        if token:
            async with httpx2.AsyncClient() as bare:
                refused = await bare.post(argv[2], json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            check(refused.status_code == 401, f"a request without the token is refused: {refused.status_code}")
            headers["Authorization"] = f"Bearer {token}"
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            async with streamable_http_client(argv[2], http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await exercise(session)
    else:
        raise SystemExit(f"unknown transport {argv[1]!r}")


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv))
    except AssertionError as failed:
        print(f"failed: {failed}")
        sys.exit(1)
    print("ok")
