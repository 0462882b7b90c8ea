#!/usr/bin/env bash
# The HTML report at users' scale (issue "Pictures"; a benchmark, not a timed test): a
# generated recording of SNAPSHOTS (default 3600: 1 h at 1 s) on 2 nodes × 16 LLCs × 8
# CPUs (256) → `llctop report --html`: its wall time and peak resident memory (GNU time),
# the page's size, then headless Chromium's time to load and screenshot it (against
# about:blank, so the browser's own start is not counted). Figures: docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
SNAPSHOTS=${SNAPSHOTS:-3600}
command -v chromium >/dev/null || { echo "html-bench: needs chromium (scripts/deps.sh)"; exit 1; }
[ -x /usr/bin/time ] || { echo "html-bench: needs GNU time (apt-get install time)"; exit 1; }
cargo build --quiet --release --bin llctop --example gen_recording
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
target/release/examples/gen_recording "$out/r.jsonl.gz" "$SNAPSHOTS" 2 16 8 >/dev/null
echo "recording: $SNAPSHOTS snapshots × 256 CPUs, $(du -k "$out/r.jsonl.gz" | cut -f1) KiB gzipped"
/usr/bin/time -f '%e %M' -o "$out/time" target/release/llctop report --html "$out/r.html" "$out/r.jsonl.gz" >/dev/null
read -r wall rss <"$out/time"
echo "report --html: ${wall} s wall, $((rss / 1024)) MiB peak resident, page $(du -k "$out/r.html" | cut -f1) KiB"
shot() {
  local t0 t1
  t0=$(date +%s.%N)
  chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --user-data-dir="$out/u" --window-size=1050,3000 --screenshot="$out/shot.png" "$1" >/dev/null 2>&1
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
blank=$(shot about:blank)
page=$(shot "file://$out/r.html")
printf 'chromium load + screenshot: %.2f s (about:blank %.2f s): the page %.2f s\n' \
  "$page" "$blank" "$(echo "$page - $blank" | bc -l)"
