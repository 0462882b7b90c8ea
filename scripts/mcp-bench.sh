#!/usr/bin/env bash
# llctop mcp's speed (issue "Agents"; not a timed test): the tools' answer time on 2 and
# 256 CPUs (examples/mcp_bench.rs), the stdio round trip of `findings` and `snapshot`
# through the official MCP Python SDK on this machine (p50/p99 over 200 calls), and the
# idle server's resident memory and CPU use at a 1 s interval over IDLE seconds (default
# 60; from /proc/PID/status and /proc/PID/stat). Root: the BPF source (as a user:
# procfs). Figures go to docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
IDLE=${IDLE:-60}
cargo build --quiet --release --bin llctop
cargo run --quiet --release --example mcp_bench
echo
python3 - "$PWD/target/release/llctop" "$IDLE" <<'PY'
import asyncio, os, sys, time
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

exe, idle = sys.argv[1], float(sys.argv[2])
tick = os.sysconf("SC_CLK_TCK")

def server_pid():
    me = os.getpid()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                st = open(f"/proc/{p}/stat").read()
                if int(st.rsplit(")", 1)[1].split()[1]) == me and "llctop" in open(f"/proc/{p}/cmdline").read():
                    return int(p)
            except OSError:
                pass

def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick

def rss_kb(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])

async def main():
    params = StdioServerParameters(command=exe, args=["--interval", "1s", "mcp"], env=dict(os.environ))
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.call_tool("findings", {})
            for name, args in [("findings", {}), ("snapshot", {})]:
                ms = []
                for _ in range(200):
                    t = time.perf_counter()
                    await s.call_tool(name, args)
                    ms.append((time.perf_counter() - t) * 1e3)
                ms.sort()
                print(f"stdio round trip {name:<9} p50 {ms[100]:.2f} ms  p99 {ms[197]:.2f} ms")
            pid = server_pid()
            c0, t0 = cpu_s(pid), time.monotonic()
            await asyncio.sleep(idle)
            c1, t1 = cpu_s(pid), time.monotonic()
            print(f"idle {t1 - t0:.0f} s: CPU {100 * (c1 - c0) / (t1 - t0):.2f}% of one CPU, resident {rss_kb(pid) / 1024:.1f} MiB")

asyncio.run(main())
PY
