# Schedulers (issue "Schedulers"), 7.2 on the 8-vCPU shape, with real sched_ext schedulers
# (scx_bpfland, scx_lavd) in /bin and the kernel's config at /lab/kconfig:
#  - one started outside llctop: detected (header field, recording, report), the fair-class
#    knobs marked, `knobs set scheduler` refused, and it is left running;
#  - the knob: `--set scheduler=scx_bpfland` for a recording, stopped at its end;
#    `knobs set scheduler scx_lavd` (kept), then `knobs restore`;
#  - a SIGKILLed llctop's scheduler stopped by its parent-death signal, `knobs restore`
#    clearing the journal;
#  - bad input: an unknown name, a program that is not a scheduler (exits; never attaches);
#  - `ab scheduler=eevdf,scx_bpfland -- CMD`, CMD two threads sharing a working set.
# Each step's state is read from /sys/kernel/sched_ext, not from llctop.
S=/sys/kernel/sched_ext
mkdir -p /boot
cp /lab/kconfig "/boot/config-$(uname -r)"
lab state_boot "$(cat $S/state)"
# wait_state STATE: until sched_ext's state is STATE (30 s).
wait_state() {
  n=0
  until [ "$(cat $S/state)" = "$1" ]; do
    usleep 50000; n=$((n + 1)); [ $n -lt 600 ] || return 1
  done
}

# 1. A scheduler llctop did not start.
t0=$(date +%s)
scx_bpfland >/tmp/theirs.out 2>&1 &
theirs=$!
wait_state enabled
lab theirs_enable_s $(( $(date +%s) - t0 ))
lab theirs_ops "$(cat $S/root/ops)"
lab theirs_switch_all "$(cat $S/switch_all)"
lab_block proc_sched grep -e '^ext' -e policy /proc/self/sched
llctop --interval 500ms --source bpf record --duration 2s -o /tmp/theirs.jsonl >/dev/null 2>&1
lab_block theirs_report llctop report /tmp/theirs.jsonl
lab_block theirs_knobs llctop knobs list
rc=0; llctop knobs set scheduler eevdf >/tmp/foreign.out 2>/tmp/foreign.err || rc=$?
lab foreign_rc $rc
lab_block foreign_err cat /tmp/foreign.err
kill -0 $theirs && lab theirs_alive 1
lab theirs_state_after "$(cat $S/state)"
kill -INT $theirs
wait $theirs || true
wait_state disabled
lab state_after_theirs "$(cat $S/state)"

# 2. The knob for a run, then kept by a one-shot command and restored.
rc=0; llctop --interval 500ms --source bpf record --set scheduler=scx_bpfland --duration 3s \
  -o /tmp/knob.jsonl >/tmp/knob.out 2>/tmp/knob.err || rc=$?
lab knob_rc $rc
lab state_after_knob "$(cat $S/state)"
lab_block knob_err cat /tmp/knob.err
gzip /tmp/knob.jsonl
lab_file knob_recording /tmp/knob.jsonl.gz
# scx_lavd takes longer to load than scx_bpfland under TCG.
t0=$(date +%s)
rc=0; LLCTOP_SCHEDULER_TIMEOUT=180 llctop knobs set scheduler scx_lavd >/tmp/lavd.out 2>&1 || rc=$?
lab lavd_set_rc $rc
lab lavd_set_s $(( $(date +%s) - t0 ))
lab lavd_state "$(cat $S/state)"
lab lavd_ops "$(cat $S/root/ops 2>/dev/null)"
lab_block lavd_out cat /tmp/lavd.out
rc=0; llctop knobs restore >/tmp/lavd_restore.out 2>&1 || rc=$?
lab lavd_restore_rc $rc
lab state_after_lavd_restore "$(cat $S/state)"

# 3. A SIGKILLed llctop: its scheduler is told by its parent-death signal (SIGTERM) and
#    detaches; `knobs restore` finds it gone and clears the journal.
llctop --interval 500ms --source procfs live --set scheduler=scx_bpfland >/dev/null 2>&1 &
victim=$!
wait_state enabled
kill -KILL $victim
wait $victim || true
wait_state disabled
usleep 500000
lab state_after_kill "$(cat $S/state)"
lab scx_alive_after_kill "$(pidof scx_bpfland || echo none)"
rc=0; llctop knobs restore >/tmp/restore.out 2>&1 || rc=$?
lab restore_rc $rc
lab_block restore_out cat /tmp/restore.out
lab state_after_restore "$(cat $S/state)"
lab scx_alive_after_restore "$(pidof scx_bpfland || echo none)"

# 4. Bad input.
rc=0; llctop knobs set scheduler scx_bpflnd >/tmp/typo.out 2>&1 || rc=$?
lab typo_rc $rc
lab_block typo_out cat /tmp/typo.out
mkdir -p /tmp/notscx
printf '#!/bin/sh\nexit 2\n' > /tmp/notscx/scx_false
printf '#!/bin/sh\nexec sleep 100\n' > /tmp/notscx/scx_sleep
chmod +x /tmp/notscx/scx_false /tmp/notscx/scx_sleep
rc=0; PATH=/tmp/notscx:$PATH llctop knobs set scheduler scx_false >/tmp/false.out 2>&1 || rc=$?
lab false_rc $rc
lab_block false_out cat /tmp/false.out
rc=0; PATH=/tmp/notscx:$PATH LLCTOP_SCHEDULER_TIMEOUT=3 llctop knobs set scheduler scx_sleep \
  >/tmp/sleep.out 2>&1 || rc=$?
lab sleep_rc $rc
lab_block sleep_out cat /tmp/sleep.out
lab sleep_left "$(pidof sleep || echo none)"
lab state_after_bad "$(cat $S/state)"

# 5. A/B: EEVDF against scx_bpfland, the command run once per window.
rc=0; llctop --interval 500ms --source bpf ab scheduler=eevdf,scx_bpfland --window 3s \
  --warmup 1s --rounds 4 --json -o /tmp/ab.jsonl.gz -- sh -c 'llctop-workload share 2 3 >/dev/null' \
  >/tmp/ab.json 2>/tmp/ab.err || rc=$?
lab ab_rc $rc
lab state_after_ab "$(cat $S/state)"
lab_block ab_json cat /tmp/ab.json
lab_block ab_err cat /tmp/ab.err
lab_file ab_recording /tmp/ab.jsonl.gz
lab_block ab_compare llctop report --compare /tmp/ab.jsonl.gz
