#!/usr/bin/env bash
# Soak benchmark for `llctop serve` (issue "Fleet"; not a timed test): serve with an
# INTERVAL (default 1s), scraped every SCRAPE_S seconds (default 1) for DURATION seconds
# (default 600) while short-lived processes come and go (SPAWN_PER_S /bin/true a second,
# default 50; 0: none). The fleet setting (issue "Always on"):
#   INTERVAL=10s SCRAPE_S=10 SPAWN_PER_S=0 scripts/soak-serve.sh
# FLIGHT=1: with the flight recorder on (a temporary directory, --keep 30m), as the
# package's unit runs it; its bytes on disk are printed at the end. Prints llctop's
# resident memory (first minute vs last minute, max), its CPU use (utime+stime over the
# wall time, from /proc/PID/stat) and the scrape latency percentiles. Run as root for
# the BPF source (as a user: procfs). Figures go to docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-600}
SPAWN_PER_S=${SPAWN_PER_S:-50}
INTERVAL=${INTERVAL:-1s}
SCRAPE_S=${SCRAPE_S:-1}
cargo build --quiet --release --bin llctop
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
flight=()
fdir=""
if [ "${FLIGHT:-0}" = 1 ]; then
  fdir=$(mktemp -d)
  flight=(--flight-recorder "$fdir/flight")
fi
target/release/llctop --interval "$INTERVAL" serve --listen "127.0.0.1:$port" "${flight[@]}" 2>/tmp/llctop-soak.err &
serve=$!
churn() {
  [ "$SPAWN_PER_S" -gt 0 ] || return 0
  while kill -0 "$serve" 2>/dev/null; do
    for _ in $(seq "$SPAWN_PER_S"); do /bin/true; done
    sleep 1
  done
}
churn &
churner=$!
trap 'kill "$serve" "$churner" 2>/dev/null || true; [ -z "$fdir" ] || rm -rf "$fdir"' EXIT
python3 - "$serve" "$port" "$DURATION" "$SCRAPE_S" <<'PY'
import os, sys, time, urllib.request
pid, port, duration = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
every = float(sys.argv[4])
tick = os.sysconf("SC_CLK_TCK")
def rss_kb():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
def cpu_s():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
url = f"http://127.0.0.1:{port}/metrics"
for _ in range(100):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2); break
    except Exception:
        time.sleep(0.2)
start, c0 = time.monotonic(), cpu_s()
lat, rss, series = [], [], 0
while time.monotonic() - start < duration:
    t = time.monotonic()
    body = urllib.request.urlopen(url, timeout=5).read()
    lat.append((time.monotonic() - t) * 1000)
    series = sum(1 for l in body.decode().splitlines() if l and not l.startswith("#"))
    rss.append((t - start, rss_kb()))
    time.sleep(max(0.0, every - (time.monotonic() - t)))
wall, c1 = time.monotonic() - start, cpu_s()
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(p / 100 * len(lat)))]
first = [r for t, r in rss if t < 60]
last = [r for t, r in rss if t >= wall - 60]
mean = lambda v: sum(v) / len(v)
print(f"soak: {wall:.0f} s, {len(lat)} scrapes, {series} series per scrape")
print(f"RSS: first minute {mean(first)/1024:.1f} MiB, last minute {mean(last)/1024:.1f} MiB "
      f"({(mean(last)/mean(first)-1)*100:+.1f}%), max {max(r for _, r in rss)/1024:.1f} MiB")
print(f"CPU: {100*(c1-c0)/wall:.2f}% of one CPU")
print(f"scrape latency: p50 {pct(50):.1f} ms, p99 {pct(99):.1f} ms, max {lat[-1]:.1f} ms")
PY
if [ -n "$fdir" ]; then
  echo "flight recorder: $(du -sb "$fdir/flight" | cut -f1) bytes in $(find "$fdir/flight" -maxdepth 1 -name 'seg-*' | wc -l) segments (+ the one being written)"
fi
