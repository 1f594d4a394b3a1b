"""Boots a built guest under qemu and runs one command in it.

The channels between host and guest:
  - serial console (ttyS0) -> a file, shown only when the guest fails early;
  - two virtio serial ports -> unix sockets -> our stdout and stderr, so the
    command's output arrives byte for byte and without the kernel's;
  - 9p "checkout": the repository, read-only (the guest puts an overlay on it);
  - 9p "harness-run": a fresh folder holding the run's init script and
    command, and receiving the exit status and the command's output files.
"""
import os
import platform
import select
import shlex
import shutil
import socket
import sys
import tempfile
import threading
import time

from . import procs

GUEST_DIR = os.path.dirname(os.path.abspath(__file__))
QEMU = "qemu-system-x86_64"
# TCG is 5-10x slower than hardware, but the only choice where KVM cannot run
# a stock kernel (kvm-pvm: the decompressor hangs, PVH entry hits "KVM
# internal error ... emulation failure").
TCG = ["-accel", "tcg,thread=multi", "-cpu", "max"]
KVM = ["-accel", "kvm", "-cpu", "host"]
# loglevel=5: kernel warnings, errors, oopses and panics reach the console
# file, which is shown when a guest stops early. Under loglevel=0 a Debian 13
# guest once stopped in mid-suite with an empty console, so the cause could
# not be told. Notices and info stay off the slow emulated serial line.
KERNEL_ARGS = "console=ttyS0 panic=-1 loglevel=5"
MEMORY_MB = 4096
CPUS = 2
EXIT_TIMEOUT = 124    # as timeout(1)
EXIT_GUEST_FAILED = 125
# run_command's answer when the guest stopped before the command started
# (guest_init.sh had not reached it): nothing of the command ran, so the
# caller may boot again. Seen once under TCG: a Debian 13
# guest's kernel panicked 3 s into its boot ("Fatal exception in interrupt",
# in sched_tick), and the next boot of the same guest ran.
NOT_STARTED = -1


def opt(path: str) -> str:
    """A path inside a qemu -option value, where a comma must be doubled."""
    return path.replace(",", ",,")


def qemu_base(accel: list[str], vmlinuz: str, initrd: str, console_log: str,
              append: str) -> list[str]:
    return [QEMU, *accel, "-smp", str(CPUS), "-m", str(MEMORY_MB),
            "-display", "none", "-monitor", "none", "-no-reboot", "-nic", "none",
            "-serial", f"file:{opt(console_log)}",
            "-kernel", vmlinuz, "-initrd", initrd, "-append", f"{KERNEL_ARGS} {append}"]


def tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 8000))
            text = f.read().decode(errors="replace").replace("\r", "")
    except OSError:
        return ""
    # qemu's notes that it waits for our socket connections are no news
    return "\n".join([line for line in text.strip().splitlines()
                      if "QEMU waiting for connection" not in line][-lines:])


class KvmProbe:
    """Whether KVM boots a stock kernel here: one test boot of the guest's
    kernel and initramfs with a time limit, its verdict kept per host kernel
    (a host kernel decides what its KVM can do)."""
    TIMEOUT = 60
    MARKER = b"harness-kvm-probe-reached-userspace"

    def __init__(self, cache_root: str):
        host = platform.uname()
        self.verdict_path = os.path.join(cache_root, f"kvm-probe-{host.release}.txt")
        self.cache_root = cache_root
        self.thread = None

    def cached(self) -> tuple[bool, str] | None:
        if not os.access("/dev/kvm", os.R_OK | os.W_OK):
            return False, "no usable /dev/kvm"
        try:
            works, reason = open(self.verdict_path).read().strip().split(" ", 1)
        except (OSError, ValueError):
            return None
        return works == "yes", f"{reason} (cached in {self.verdict_path})"

    def start(self, vmlinuz: str, initrd: str) -> None:
        """Probes in a thread (while the root filesystem is being built)."""
        if self.cached() is None and self.thread is None:
            self.thread = threading.Thread(target=self._probe_quietly, args=(vmlinuz, initrd),
                                           daemon=True)
            self.thread.start()

    def verdict(self, vmlinuz: str, initrd: str) -> tuple[bool, str]:
        if self.thread:
            self.thread.join()
        found = self.cached()
        if found is None:
            procs.say(f"probing KVM with a test boot (up to {self.TIMEOUT} s, once per host kernel)")
            self.probe(vmlinuz, initrd)
            found = self.cached()
        return found or (False, "KVM probe gave no verdict")

    def _probe_quietly(self, vmlinuz: str, initrd: str) -> None:
        try:
            self.probe(vmlinuz, initrd)
        except Exception as e:  # the main thread probes again if no verdict was kept
            procs.say(f"KVM probe failed: {e}")

    def probe(self, vmlinuz: str, initrd: str) -> None:
        # Hard links: the build folder may be renamed while qemu starts.
        work = tempfile.mkdtemp(prefix=".kvm-probe-", dir=self.cache_root)
        proc = qemu_log = None
        try:
            for src, name in ((vmlinuz, "vmlinuz"), (initrd, "initrd.img")):
                os.link(src, os.path.join(work, name))
            console = os.path.join(work, "console.log")
            qemu_log = open(os.path.join(work, "qemu.log"), "wb")
            argv = qemu_base(KVM, os.path.join(work, "vmlinuz"), os.path.join(work, "initrd.img"),
                             console, "harness.kvm_probe")
            argv[argv.index("-m") + 1] = "512"
            start = time.monotonic()
            proc = procs.start(argv, stdin=procs.subprocess.DEVNULL, stdout=qemu_log,
                               stderr=qemu_log)
            verdict = None
            while verdict is None:
                time.sleep(0.5)
                elapsed = time.monotonic() - start
                if os.path.exists(console) and self.MARKER in open(console, "rb").read():
                    verdict = f"yes the stock kernel reached userspace in {elapsed:.0f} s"
                elif proc.poll() is not None:
                    qemu_log.flush()
                    why = tail(os.path.join(work, "qemu.log"), 1) or f"exit status {proc.returncode}"
                    verdict = f"no qemu -accel kvm stopped: {why[:200]}"
                elif elapsed > self.TIMEOUT:
                    verdict = f"no the stock kernel did not reach userspace in {self.TIMEOUT} s"
            if procs.stopping.is_set():
                return
            # Written aside and renamed: two guests built side by side (.ci/run)
            # may probe at once, and a reader must never see half a verdict.
            partial = os.path.join(work, "verdict")
            with open(partial, "w") as f:
                f.write(verdict + "\n")
            os.replace(partial, self.verdict_path)
        finally:
            if proc:
                procs.stop(proc, grace=2.0)
            if qemu_log:
                qemu_log.close()
            procs.remove_tree(work)


def read_exit_status(path: str) -> int | None:
    try:
        return int(open(path).read().strip())
    except (OSError, ValueError):
        return None


def connect(path: str, proc, deadline: procs.Deadline) -> socket.socket:
    """qemu waits (server=on,wait=on) until we connect, so nothing is lost."""
    while True:
        if proc.poll() is not None:
            raise procs.GuestError("qemu exited before the guest started")
        if deadline.left() <= 0:
            raise procs.GuestError("qemu did not open its output sockets")
        if os.path.exists(path):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(path)
                return sock
            except (ConnectionRefusedError, FileNotFoundError):
                sock.close()
        time.sleep(0.05)


def forward(streams: dict, proc, deadline: procs.Deadline) -> bool:
    """Copies the guest's stdout/stderr to ours until qemu is gone; False on
    timeout. A closed stdout of ours (| head) stops the copying, not the run."""
    sinks = {s: out for s, out in streams.items()}
    while sinks:
        if deadline.left() <= 0:
            return False
        ready, _, _ = select.select(list(sinks), [], [], min(1.0, deadline.left()))
        for sock in ready:
            data = sock.recv(65536)
            if not data:
                del sinks[sock]
                continue
            try:
                sinks[sock].write(data)
                sinks[sock].flush()
            except (BrokenPipeError, OSError):
                sinks[sock] = open(os.devnull, "wb")
        if not ready and proc.poll() is not None:
            break
    return True


def run_command(guest_dir: str, manifest: dict, argv: list[str], timeout: float,
                keep_output: str | None, accel: list[str], repo: str) -> int:
    run_dir = tempfile.mkdtemp(prefix="mptcp-dc-guest-run-")
    proc = qemu_log = None
    socks = []
    try:
        share = os.path.join(run_dir, "share")
        control = os.path.join(share, "control")
        os.makedirs(control)
        os.makedirs(os.path.join(share, "output"))
        shutil.copy2(os.path.join(GUEST_DIR, "guest_init.sh"), control)
        for name, value in (("checkout", repo), ("target", manifest["target"]),
                            ("accel", "kvm" if accel == KVM else "tcg"),
                            ("command.sh", "exec " + shlex.join(argv))):
            with open(os.path.join(control, name), "w") as f:
                f.write(value + "\n")
        console = os.path.join(run_dir, "console.log")
        qemu_log_path = os.path.join(run_dir, "qemu.log")
        qemu_log = open(qemu_log_path, "wb")
        cmd = qemu_base(accel, os.path.join(guest_dir, "vmlinuz"),
                        os.path.join(guest_dir, "initrd.img"), console, "")
        # snapshot=on: the guest's writes go to a scratch file (in TMPDIR,
        # our run folder), so the cached image is never changed.
        cmd += ["-drive", f"file={opt(guest_dir)}/rootfs.img,format=raw,if=virtio,"
                          "cache=unsafe,snapshot=on",
                "-virtfs", f"local,path={opt(repo)},mount_tag=checkout,security_model=none,"
                           "readonly=on",
                "-virtfs", f"local,path={opt(share)},mount_tag=harness-run,security_model=none",
                "-device", "virtio-serial-pci,id=ports"]
        for name in ("stdout", "stderr"):
            cmd += ["-chardev", f"socket,id={name},path={opt(run_dir)}/{name}.sock,"
                                "server=on,wait=on",
                    "-device", f"virtserialport,bus=ports.0,chardev={name},name=harness.{name}"]
        deadline = procs.Deadline(timeout)
        proc = procs.start(cmd, stdin=procs.subprocess.DEVNULL, stdout=qemu_log,
                           stderr=qemu_log, env={**os.environ, "TMPDIR": run_dir})
        socks = [connect(os.path.join(run_dir, f"{n}.sock"), proc, deadline)
                 for n in ("stdout", "stderr")]
        finished = forward({socks[0]: sys.stdout.buffer, socks[1]: sys.stderr.buffer},
                           proc, deadline)
        if finished:
            try:
                proc.wait(timeout=max(1.0, min(30.0, deadline.left())))
            except procs.subprocess.TimeoutExpired:
                pass
        status = read_exit_status(os.path.join(control, "exit-status"))
        if not finished or (status is None and proc.poll() is None):
            procs.say(f"timed out after {timeout:.0f} s; guest stopped")
            return EXIT_TIMEOUT
        if status is None:
            qemu_log.flush()
            started = os.path.exists(os.path.join(control, "started"))
            procs.say("the guest stopped " + ("without running the command to its end"
                                              if started else "before the command started")
                      + "; last lines of its console and of qemu:\n"
                      + "\n".join(filter(None, (tail(console), tail(qemu_log_path)))))
            return EXIT_GUEST_FAILED if started else NOT_STARTED
        return status
    finally:
        for sock in socks:
            sock.close()
        if proc:
            procs.stop(proc, grace=3.0)
        if qemu_log:
            qemu_log.close()
        if keep_output and os.path.isdir(os.path.join(run_dir, "share", "output")):
            # symlinks=True: links are copied as links (pytest's "…current"
            # links point into the guest and would not resolve here).
            shutil.copytree(os.path.join(run_dir, "share", "output"), keep_output,
                            symlinks=True, dirs_exist_ok=True)
        procs.remove_tree(run_dir)
