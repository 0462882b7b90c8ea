#!/usr/bin/env python3
"""The official MCP Python SDK (PyPI `mcp`) as llctop mcp's client: a real stdio session,
the oracle for tests/mcp.rs. It initializes, lists resources, tools and prompts, reads
every resource, calls every tool (the SDK validates each structured result against the
tool's advertised output schema), feeds it bad input, and prints what the Rust test
compares as one JSON object on stdout. Any failed expectation exits non-zero.

usage: mcp_client.py CASE LLCTOP [ARGS...]
  With $MCP_URL set, the client connects to a server already serving streamable HTTP
  there (llctop mcp --listen) instead of starting LLCTOP on stdio; $MCP_TOKEN, when set, is
  sent as its bearer token.
  CASE: session  every resource, tool and prompt; bad input; 100 concurrent requests
        watch    watch(N) (N from $WATCH_SECONDS) while the caller records the same
                 seconds; prints the summary
        ab       ab(numa_balancing, a, b) on a server started with --allow-writes
        cancel   starts ab and exits mid-experiment (the test checks the knob)
        cancel-request  starts ab, abandons the call (notifications/cancelled), stays
                 connected: prints the knob before, during and after
        ab-command  ab with a command by name ($AB_COMMAND), one the server does not
                 allow, and a program given as an argv (refused: the schema takes a name)
        ping     initialize and list the tools (over HTTP: with $MCP_TOKEN)
        trace-twice  two trace(3) calls at once: one runs, the other is told the server is
                 busy
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

TOOLS = {"snapshot", "top_processes", "process", "watch", "findings", "explain",
         "record", "report", "diff", "compare", "ab", "trace"}
RESOURCES = {"llctop://topology", "llctop://snapshot/latest", "llctop://findings",
             "llctop://knobs", "llctop://metrics"}
PROMPTS = {"cache-local", "prove-knob", "explain-recording"}


def fail(msg):
    print(f"mcp_client: {msg}", file=sys.stderr)
    sys.exit(1)


def structured(r, name):
    if r.is_error:
        fail(f"{name} failed: {[c.text for c in r.content]}")
    if r.structured_content is None:
        fail(f"{name}: no structured content")
    if not r.content or not r.content[0].text:
        fail(f"{name}: no text summary")
    return r.structured_content


async def expect_error(s, name, args, want):
    """A JSON-RPC error (MCPError) or an error result whose message contains `want`."""
    try:
        r = await s.call_tool(name, args)
    except MCPError as e:
        msg = e.error.message
    else:
        if not r.is_error:
            fail(f"{name}({args}) succeeded; an error was expected")
        msg = " ".join(c.text for c in r.content)
    if want.lower() not in msg.lower():
        fail(f"{name}({args}): error {msg!r} does not say {want!r}")
    return msg


async def session_case(s, out):
    tools = {t.name: t for t in (await s.list_tools()).tools}
    if set(tools) != TOOLS:
        fail(f"tools {sorted(tools)}")
    for t in tools.values():
        if not t.output_schema or not t.input_schema:
            fail(f"{t.name}: schemas")
    res = {r.uri.unicode_string() if hasattr(r.uri, "unicode_string") else str(r.uri)
           for r in (await s.list_resources()).resources}
    if res != RESOURCES:
        fail(f"resources {sorted(res)}")
    for uri in sorted(RESOURCES):
        r = await s.read_resource(uri)
        json.loads(r.contents[0].text)
    prompts = {p.name for p in (await s.list_prompts()).prompts}
    if prompts != PROMPTS:
        fail(f"prompts {sorted(prompts)}")
    for p, args in [("cache-local", {}), ("prove-knob", {"knob": "numa_balancing"}),
                    ("explain-recording", {"path": "/tmp/x.jsonl"})]:
        g = await s.get_prompt(p, args)
        if not g.messages:
            fail(f"prompt {p}")

    snap = structured(await s.call_tool("snapshot", {}), "snapshot")
    only = structured(await s.call_tool("snapshot", {"fields": ["llcs"]}), "snapshot(fields)")
    if set(only["snapshot"]) != {"seq", "llcs"}:
        fail(f"snapshot(fields): {sorted(only['snapshot'])}")
    top = structured(await s.call_tool("top_processes", {"sort": "cpu", "n": 5}), "top_processes")
    if not 1 <= len(top["rows"]) <= 5:
        fail(f"top_processes rows {len(top['rows'])}")
    # Pages: n=1 then the next page from its cursor, of the same snapshot.
    one = structured(await s.call_tool("top_processes", {"sort": "cpu", "n": 1}), "top_processes(n=1)")
    if one["matched"] > 1:
        nxt = structured(await s.call_tool("top_processes", {"sort": "cpu", "n": 1, "cursor": one["next_cursor"]}), "next page")
        if nxt["seq"] != one["seq"] or nxt["rows"][0]["pid"] == one["rows"][0]["pid"]:
            fail(f"pages: {one} then {nxt}")
    await expect_error(s, "top_processes", {"cursor": "nonsense"}, "cursor")
    pid = top["rows"][0]["pid"]
    proc = structured(await s.call_tool("process", {"pid": pid}), "process")
    watch = structured(await s.call_tool("watch", {"seconds": 2}), "watch")
    finds = structured(await s.call_tool("findings", {}), "findings")
    expl = structured(await s.call_tool("explain", {"name": "rq_wait_ns"}), "explain")
    rec = structured(await s.call_tool("record", {"seconds": 2}), "record")
    rep = structured(await s.call_tool("report", {"path": rec["path"]}), "report")
    if "Findings (" not in rep["text"] or rep["offset"] != 0 or rep["total"] < len(rep["text"]):
        fail("report text")
    diff = structured(await s.call_tool("diff", {"a": rec["path"], "b": rec["path"]}), "diff")
    await expect_error(s, "compare", {"path": rec["path"]}, "experiment")
    await expect_error(s, "ab", {"knob": "numa_balancing", "a": "0", "b": "1"}, "read-only")
    # A program is never an argument: the command is a name from the operator's list.
    await expect_error(s, "ab", {"knob": "numa_balancing", "a": "0", "b": "1",
                                 "command": ["/bin/sh", "-c", "id"]}, "invalid type")
    # trace: BPF, so root; without it the tool says why (an error result).
    tr = await s.call_tool("trace", {"seconds": 1})
    if os.geteuid() == 0:
        out["trace"] = structured(tr, "trace")
    elif not tr.is_error:
        fail("trace without root succeeded")
    await expect_error(s, "trace", {"seconds": 61}, "seconds must be")

    # Bad input: JSON-RPC errors (or error results) that say what is wrong.
    bad = {
        "unknown tool": await expect_error(s, "no_such_tool", {}, "unknown tool"),
        "wrong type": await expect_error(s, "top_processes", {"n": "ten"}, "n: invalid type"),
        "huge n": await expect_error(s, "top_processes", {"n": 10**9}, "n must be"),
        "unknown field": await expect_error(s, "watch", {"secs": 2}, "secs"),
        "seconds 0": await expect_error(s, "watch", {"seconds": 0}, "seconds must be"),
        "no such pid": await expect_error(s, "process", {"pid": 4294967295}, "not among"),
        # Only the server's own recordings are read; elsewhere, existing or not, gets one
        # answer that says nothing of what is there.
        "outside": await expect_error(s, "report", {"path": "/proc/self/status"}, "no recording of that name"),
        "missing file": await expect_error(s, "report", {"path": "/nonexistent/r.jsonl"}, "no recording of that name"),
        "shadow": await expect_error(s, "report", {"path": "/etc/shadow"}, "no recording of that name"),
        "corrupt": await expect_error(s, "report", {"path": os.environ["CORRUPT"]}, "not a recording"),
        "explain nothing": await expect_error(s, "explain", {"name": "zzzz-none"}, "nothing named"),
        "snapshot field": await expect_error(s, "snapshot", {"fields": ["nope"]}, "no field"),
    }
    # 100 concurrent requests, then the server still serves.
    rs = await asyncio.gather(*[
        s.call_tool("findings" if i % 2 else "snapshot", {"fields": ["system"]} if i % 2 == 0 else {})
        for i in range(100)])
    if any(r.is_error for r in rs):
        fail("concurrent requests failed")
    # A wrong argument is a tool result the model can read, not a protocol error.
    r = await s.call_tool("top_processes", {"n": "ten"})
    if not r.is_error or "invalid type" not in r.content[0].text:
        fail(f"a wrong-typed argument: {r}")
    again = structured(await s.call_tool("snapshot", {"fields": ["system"]}), "snapshot after")
    out.update({
        "snapshot_seq": snap["seq"], "truncated": snap.get("truncated"),
        "process_pid": proc["pid"], "watch": watch, "findings": len(finds["findings"]),
        "explain": len(expl["definitions"]), "record": rec, "diff_bytes": len(diff["text"]),
        "bad": bad, "concurrent": len(rs), "after_seq": again["seq"],
    })


async def ab_command_case(s, out):
    name = os.environ["AB_COMMAND"]
    r = await s.call_tool("ab", {"knob": "numa_balancing", "a": "0", "b": "1",
                                 "window": 1, "rounds": 1, "command": name})
    out["ab"] = structured(r, "ab(command)")
    out["text"] = r.content[0].text
    out["not_allowed"] = await expect_error(
        s, "ab", {"knob": "numa_balancing", "a": "0", "b": "1", "command": "sh"}, "no command")
    out["argv"] = await expect_error(
        s, "ab", {"knob": "numa_balancing", "a": "0", "b": "1",
                  "command": ["/bin/sh", "-c", "id > /tmp/llctop-pwned"]}, "invalid type")


async def trace_twice_case(s, out):
    rs = await asyncio.gather(s.call_tool("trace", {"seconds": 3}),
                              s.call_tool("trace", {"seconds": 3}))
    ok = [r for r in rs if not r.is_error]
    busy = [r.content[0].text for r in rs if r.is_error]
    out["ran"] = [structured(r, "trace")["path"] for r in ok]
    out["busy"] = busy


async def main():
    case, exe, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    params = StdioServerParameters(command=exe, args=args, env=dict(os.environ))
    url = os.environ.get("MCP_URL")
    token = os.environ.get("MCP_TOKEN")
    out = {}
    http = (streamable_http_client(url, http_client=create_mcp_http_client(
        headers={"Authorization": f"Bearer {token}"})) if token else streamable_http_client(url)) if url else None
    async with (http if url else stdio_client(params)) as (r, w):
        async with ClientSession(r, w) as s:
            init = await s.initialize()
            out["protocol"] = init.protocol_version
            out["server"] = init.server_info.name
            if case == "session":
                await session_case(s, out)
            elif case == "ping":
                out["tools"] = len((await s.list_tools()).tools)
            elif case == "ab-command":
                await ab_command_case(s, out)
            elif case == "trace-twice":
                await trace_twice_case(s, out)
            elif case == "watch":
                n = int(os.environ.get("WATCH_SECONDS", "5"))
                print("watching", flush=True, file=sys.stderr)
                call = asyncio.create_task(s.call_tool("watch", {"seconds": n}))
                # $GO_FILE, when given, is created a second into the watch: the caller's
                # signal to start its workload inside the window, however loaded the
                # machine was while this client and the server started.
                if os.environ.get("GO_FILE"):
                    await asyncio.sleep(1.0)
                    open(os.environ["GO_FILE"], "w").close()
                out["watch"] = structured(await call, "watch")
            elif case == "ab":
                seen = []

                async def progress(p, total, message):
                    seen.append((p, total, message))

                r = await s.call_tool("ab", {"knob": "numa_balancing", "a": "0", "b": "1",
                                             "window": 1, "rounds": 1},
                                      progress_callback=progress)
                out["ab"] = structured(r, "ab")
                out["progress"] = seen
                out["text"] = r.content[0].text
            elif case == "cancel":
                # A first: the value it is not now, so the knob is changed at once.
                now = open("/proc/sys/kernel/numa_balancing").read().strip()
                other = "1" if now == "0" else "0"
                task = asyncio.create_task(s.call_tool(
                    "ab", {"knob": "numa_balancing", "a": other, "b": now, "window": 5, "rounds": 4}))
                await asyncio.sleep(float(os.environ.get("CANCEL_AFTER", "4")))
                print(open("/proc/sys/kernel/numa_balancing").read().strip(), flush=True)
                os._exit(0)
            elif case == "cancel-request":
                # The client abandons the call (the SDK sends notifications/cancelled) and
                # stays connected: the knob comes back while the server goes on serving.
                now = open("/proc/sys/kernel/numa_balancing").read().strip()
                other = "1" if now == "0" else "0"
                task = asyncio.create_task(s.call_tool(
                    "ab", {"knob": "numa_balancing", "a": other, "b": now, "window": 5, "rounds": 4}))
                await asyncio.sleep(float(os.environ.get("CANCEL_AFTER", "4")))
                out["during"] = open("/proc/sys/kernel/numa_balancing").read().strip()
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                t0 = time.monotonic()
                while time.monotonic() - t0 < 30:
                    out["after"] = open("/proc/sys/kernel/numa_balancing").read().strip()
                    if out["after"] == now:
                        break
                    await asyncio.sleep(0.1)
                out["before"] = now
                out["restored_after_s"] = round(time.monotonic() - t0, 2)
                out["still_serving"] = structured(await s.call_tool("findings", {}), "findings after")["seq"] is not None
            else:
                fail(f"case {case}")
    print(json.dumps(out))


asyncio.run(main())
