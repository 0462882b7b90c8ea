#!/bin/busybox sh
# /init of the lab guest: mount the kernel filesystems, run /lab/scenario.sh, power off.
# Result protocol on the console (parsed by tests/lab/main.rs):
#   @@LAB key value...            one value
#   @@BEGIN name / @@END name     a block of text
#   @@FILE name <base64 lines> @@END name   a binary file (base64)
#   @@DONE rc                     the scenario finished with exit code rc
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs none /sys/kernel/debug 2>/dev/null
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
mount -t tmpfs tmp /tmp

lab() { echo "@@LAB $*"; }
lab_block() { name=$1; shift; echo "@@BEGIN $name"; "$@" 2>&1; echo "@@END $name"; }
lab_file() { echo "@@FILE $1"; base64 "$2"; echo "@@END $1"; }

# Scenarios wait for events, never for time; each wait gives up after a bound (and so
# fails the scenario under its set -e).
# wait_line FILE PATTERN [PID]: until a line of FILE matches, or PID has ended (60 s).
wait_line() {
  n=0
  until grep -q -e "$2" "$1" 2>/dev/null || { [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; }; do
    usleep 50000; n=$((n + 1)); [ $n -lt 1200 ] || return 1
  done
}
# A recording in the background: record_start FILE ARGS... runs `llctop record -o FILE
# ARGS` (stdout /tmp/record.out, stderr /tmp/record.err; FILE plain JSON Lines, so its
# snapshots can be counted), record_snaps counts them, record_wait N waits for N (120 s),
# record_stop ends it with SIGTERM (restoring its knobs; exit 143) and gzips FILE.
record_start() {
  rec_file=$1; shift
  llctop record -o "$rec_file" "$@" >/tmp/record.out 2>/tmp/record.err &
  rec_pid=$!
}
record_snaps() { n=$(grep -c '"type":"snapshot"' "$rec_file" 2>/dev/null); echo "${n:-0}"; }
# What the recorder has cost so far: snapshots, utime and stime (USER_HZ ticks, 1/100 s;
# /proc/PID/stat fields 14 and 15), peak resident KiB (VmHWM).
record_cost() {
  echo "$(record_snaps) $(cut -d' ' -f14,15 /proc/$rec_pid/stat) $(awk '/^VmHWM/ {print $2}' /proc/$rec_pid/status)"
}
# record_wait N: until the recording has N snapshots (a hang guard of 4,800 looks, 4 min
# at least: a loaded TCG guest stretches 1 s intervals to 3 s and more).
record_wait() {
  n=0
  until [ "$(record_snaps)" -ge "$1" ]; do
    kill -0 "$rec_pid" 2>/dev/null || { cat /tmp/record.err; return 1; }
    usleep 50000; n=$((n + 1)); [ $n -lt 4800 ] || return 1
  done
}
# kernel_gathered PID: snapshots of the recording in which llctop shows the kernel's
# preferred LLC for PID with its threads switching in there (hit >= 0.9);
# wait_gathered PID N: until there are N of them (45 s), then prints how many.
kernel_gathered() {
  grep -cE "\"pid\":$1,[^}]*\"preferred_llc\":[0-9]+,\"preferred_kind\":\"kernel\",\"preferred_hit\":(1\.0|0\.9[0-9]*)" \
    "$rec_file" 2>/dev/null || true
}
wait_gathered() {
  n=0
  until [ "$(kernel_gathered "$1")" -ge "$2" ] || [ $n -ge 900 ]; do usleep 50000; n=$((n + 1)); done
  kernel_gathered "$1"
}
# task_cpus PID: its threads but the main one, each as TID:CPU (/proc/PID/task/TID/stat
# field 39: the CPU it last ran on), on one line.
task_cpus() {
  for t in /proc/$1/task/*; do
    [ "${t##*/}" = "$1" ] || echo "${t##*/}:$(cut -d' ' -f39 "$t/stat")"
  done | tr '\n' ' '
}
# cpus_after_snapshots PID N: from the recording's next snapshot on, PID's threads'
# CPUs (task_cpus) after each of N snapshots, on one line; then `lab KEY_during` and
# `lab KEY_snaps "FROM FROM+N"` for KEY (the third argument).
cpus_after_snapshots() {
  from=$(record_snaps)
  during=""
  i=1
  while [ "$i" -le "$2" ]; do
    record_wait $((from + i))
    during="$during$(task_cpus "$1")"
    i=$((i + 1))
  done
  lab "$3_during" "$during"
  lab "$3_snaps" "$from $((from + $2))"
}
record_stop() {
  kill -TERM "$rec_pid"
  # 143: stopped by SIGTERM (128 + 15), cleanly.
  rc=0; wait "$rec_pid" || rc=$?
  [ $rc -eq 143 ] || { echo "record exit $rc"; cat /tmp/record.err; return 1; }
  gzip "$rec_file"
}

lab kernel "$(uname -r)"
( set -e; . /lab/scenario.sh )
echo "@@DONE $?"
sync
poweroff -f
