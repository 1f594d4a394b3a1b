#!/bin/sh
# PID 1 of the guest's initramfs (busybox): load the modules a virtio ext4
# root needs, mount it, and hand over to the run's own init script, which the
# host puts on the "harness-run" 9p share. That script is read at every boot,
# so changing it does not rebuild the image; this file is part of the image.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

die() {
    echo "guest initramfs: $*" >/dev/console
    echo o >/proc/sysrq-trigger
    sleep 60
}

# The KVM probe boots this initramfs only to learn whether the kernel gets
# this far; the host waits for this line.
if grep -q harness.kvm_probe /proc/cmdline; then
    echo "harness-kvm-probe-reached-userspace" >/dev/console
    echo o >/proc/sysrq-trigger
    sleep 60
fi

for m in $(cat /modules/load-order); do
    insmod "/modules/$m.ko" || die "insmod $m failed"
done

# virtio_blk probes asynchronously: wait up to 20 s for the disk.
i=0
while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 /dev/vda /newroot || die "cannot mount /dev/vda"
for fs in proc sys dev; do mount --move "/$fs" "/newroot/$fs"; done

# Stage 2 runs in the root filesystem (its modprobe, its 9p modules).
exec switch_root /newroot /bin/sh -c '
    export PATH=/usr/sbin:/usr/bin:/sbin:/bin
    modprobe 9pnet_virtio && modprobe 9p && mkdir -p /harness-run &&
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 harness-run /harness-run &&
    exec /bin/sh /harness-run/control/guest_init.sh
    echo "guest: cannot mount the harness-run share" >/dev/console
    echo o >/proc/sysrq-trigger; sleep 60'
