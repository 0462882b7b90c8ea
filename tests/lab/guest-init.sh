#!/bin/busybox sh
# /init of the lab guest: mount the kernel filesystems, run /lab/scenario.sh, power off.
# Result protocol on the console (parsed by tests/lab.rs):
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

lab kernel "$(uname -r)"
( set -e; . /lab/scenario.sh )
echo "@@DONE $?"
sync
poweroff -f
