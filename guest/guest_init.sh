#!/bin/sh
# PID 1 of a guest run, started by the initramfs from the "harness-run" 9p
# share (so it is read afresh at each boot and needs no image rebuild).
# It prepares what a host booted with systemd would have and the harness
# relies on, runs the command from the checkout, leaves its exit status in
# the share, and powers the guest off. No systemd: the harness starts its own
# Open vSwitch daemons, and Debian's ovs-ctl works without systemd too.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
run=/harness-run
control=$run/control
venv=/opt/harness-venv

say() { echo "guest init: $*" >/dev/console; }
power_off() {
    sync
    echo o >/proc/sysrq-trigger
    sleep 60
}
fail() {
    say "$*"
    power_off
}

mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/lock /run/netns /dev/pts /dev/shm
mount -t devpts -o ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t bpf bpf /sys/fs/bpf || say "no bpffs"
if grep -qw cgroup2 /proc/filesystems; then
    mount -t cgroup2 cgroup2 /sys/fs/cgroup || say "no cgroup2"
fi
# virtio_console carries the command's stdout and stderr (built into 6.12,
# a module on 6.1); overlay makes the read-only checkout writable.
modprobe virtio_console || fail "modprobe virtio_console failed"
modprobe overlay || fail "modprobe overlay failed"
sysctl -q -w net.mptcp.enabled=1 || say "net.mptcp.enabled=1 failed"
ip link set lo up
hostname "harness-$(cat $control/target)"

# The checkout, at the same absolute path as on the host: read-only 9p below,
# a tmpfs above, so builds and results stay inside the guest.
checkout=$(cat $control/checkout)
mkdir -p /run/harness/lower /run/harness/rw "$checkout" || fail "mkdir $checkout failed"
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose checkout \
    /run/harness/lower || fail "cannot mount the checkout share"
mount -t tmpfs tmpfs /run/harness/rw
mkdir -p /run/harness/rw/upper /run/harness/rw/work
mount -t overlay overlay \
    -o lowerdir=/run/harness/lower,upperdir=/run/harness/rw/upper,workdir=/run/harness/rw/work \
    "$checkout" || fail "cannot mount the overlay on $checkout"

# .venv is the image's venv (made at build time: no network here). A bind
# mount hides the host's .venv folder instantly; removing it through the
# overlay would whiteout every file of it, one by one.
if [ -d "$checkout/.venv" ] && [ ! -L "$checkout/.venv" ]; then
    mount --bind "$venv" "$checkout/.venv"
else
    rm -f "$checkout/.venv"
    ln -s "$venv" "$checkout/.venv"
fi
# bootstrap.sh's stamps, so it sees the requirements installed.
for r in requirements.txt requirements-dev.txt; do
    [ -f "$checkout/$r" ] && sha256sum "$checkout/$r" | cut -c1-16 >"$venv/.stamp-$r"
done

# The virtio serial ports named by the host; devtmpfs makes their nodes.
out= err=
for port in /sys/class/virtio-ports/*; do
    case "$(cat "$port/name")" in
        harness.stdout) out=/dev/${port##*/} ;;
        harness.stderr) err=/dev/${port##*/} ;;
    esac
done
i=0
while { [ ! -c "$out" ] || [ ! -c "$err" ]; } && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -c "$out" ] && [ -c "$err" ] || fail "no harness.stdout/harness.stderr port"

export HARNESS_GUEST_OUTPUT=$run/output
# Tests that only make sense in a guest (guest-sized runs) look for this.
export HARNESS_GUEST="$(cat $control/target)" HARNESS_GUEST_ACCEL="$(cat $control/accel)"
cd "$checkout" || fail "cd $checkout failed"
# The host boots a guest again only if it stopped before this line (boot.py).
: >"$control/started"
/bin/sh "$control/command.sh" </dev/null >"$out" 2>"$err"
echo $? >"$control/exit-status"
power_off
