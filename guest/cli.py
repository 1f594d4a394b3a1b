"""Command line of the guest runner: checks the input, installs the host tools
it lacks, builds or reuses the guest, picks the accelerator, runs the command.

Exit status: the command's; 2 for bad input; 1 when the guest could not be
built; 124 on --timeout; 125 when the guest stopped before the command ended;
128+N when stopped by signal N.
"""
import fcntl
import json
import math
import os
import shutil
import subprocess
import sys

from . import boot, procs
from .build import GuestCache
from .guests import CACHE_ROOT, TARGETS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TIMEOUT = 3600.0
USAGE = f"""\
usage: sudo ./guest/run.sh TARGET [--timeout S] [--keep-output DIR] -- CMD [ARGS...]
       sudo ./guest/run.sh TARGET --build-only
       ./guest/run.sh --help

Runs CMD as root in a qemu guest booted with a stock Debian kernel, from this
checkout (mounted at the same path, writable through a throw-away overlay).
TARGET: {', '.join(f'{name} ({t.description})' for name, t in TARGETS.items())}

  --timeout S        stop the guest after S seconds (boot included; default {DEFAULT_TIMEOUT:.0f})
  --keep-output DIR  copy what CMD wrote to $HARNESS_GUEST_OUTPUT into DIR
  --build-only       build (or check) the cached guest, run nothing

CMD's stdout and stderr are ours; its stdin is empty. The exit status is
CMD's (124: timeout, 125: the guest stopped early, 2: bad input, 1: build
failed). Guests are cached in {CACHE_ROOT}; see guest/README.md."""

# The host tools, and the Debian packages that bring them.
HOST_TOOLS = {"qemu-system-x86_64": "qemu-system-x86", "qemu-img": "qemu-utils",
              "mmdebstrap": "mmdebstrap", "cpio": "cpio", "unshare": "util-linux",
              "mkfs.ext4": "e2fsprogs", "dpkg-deb": "dpkg", "apt-get": "apt"}


class UsageError(Exception):
    pass


class Options:
    def __init__(self):
        self.target = None
        self.timeout = DEFAULT_TIMEOUT
        self.keep_output = None
        self.build_only = False
        self.command: list[str] = []


def parse(args: list[str]) -> Options | None:
    """None means --help was printed."""
    options_part, command = (args[:args.index("--")], args[args.index("--") + 1:]) \
        if "--" in args else (args, [])
    if not options_part or any(a in ("-h", "--help") for a in options_part):
        print(USAGE)
        return None
    opts = Options()
    opts.target, rest = options_part[0], options_part[1:]
    if opts.target not in TARGETS:
        raise UsageError(f"unknown target {opts.target!r} (known: {', '.join(TARGETS)})")
    while rest:
        flag = rest.pop(0)
        if flag == "--build-only":
            opts.build_only = True
        elif flag in ("--timeout", "--keep-output"):
            if not rest:
                raise UsageError(f"{flag} needs a value")
            value = rest.pop(0)
            if flag == "--keep-output":
                opts.keep_output = os.path.abspath(value)
                continue
            try:
                opts.timeout = float(value)
            except ValueError:
                opts.timeout = math.nan
            if not (math.isfinite(opts.timeout) and opts.timeout > 0):
                raise UsageError(f"--timeout wants a positive number of seconds, not {value!r}")
        else:
            raise UsageError(f"unknown option {flag!r} (the command goes after --)")
    if opts.build_only and command:
        raise UsageError("--build-only runs no command; leave out what follows --")
    if not opts.build_only and not command:
        raise UsageError("no command given: put it after --, e.g. -- uname -r")
    opts.command = command
    if os.geteuid() != 0:
        raise UsageError("needs root (qemu, mmdebstrap, mounts): run it with sudo")
    return opts


def ensure_host_tools() -> None:
    # One run at a time looks and installs (.ci/run builds both guests side by
    # side): apt-get update waits for no lock of its own, and the second run
    # then finds everything installed (its wait is bounded by the timeouts below).
    os.makedirs(CACHE_ROOT, exist_ok=True)
    lock = open(os.path.join(CACHE_ROOT, ".lock-host-tools"), "a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        _install_missing_host_tools()
    finally:
        lock.close()


def _install_missing_host_tools() -> None:
    needed = sorted({pkg for tool, pkg in HOST_TOOLS.items() if not shutil.which(tool)})
    # The initramfs needs the static busybox (it has no libc); the dynamic
    # busybox package would also provide /bin/busybox.
    static = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "busybox-static"],
                            capture_output=True, text=True, timeout=60).stdout
    if "install ok installed" not in static:
        needed.append("busybox-static")
    if not needed:
        return
    procs.say(f"installing host tools: {' '.join(needed)}")
    lock = ["-o", "DPkg::Lock::Timeout=900"]  # another apt-get may be running
    procs.run(["apt-get", *lock, "-q", "update"], 1200, "apt-get update")
    procs.run(["apt-get", *lock, "-q", "install", "-y", "--no-install-recommends", *needed],
              1800, "apt-get install", env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def choose_accelerator(probe: boot.KvmProbe, guest_dir: str, manifest: dict) -> list[str]:
    works, why = probe.verdict(os.path.join(guest_dir, "vmlinuz"),
                               os.path.join(guest_dir, "initrd.img"))
    kernel = manifest["kernel_release"]
    if works:
        procs.say(f"{manifest['target']} (kernel {kernel}) on KVM: {why}")
        return boot.KVM
    procs.say(f"{manifest['target']} (kernel {kernel}) on qemu TCG (full emulation, slow): "
              f"KVM is not used because {why}")
    return boot.TCG


def run_booting_again_once(guest_dir: str, manifest: dict, opts, accel: list[str]) -> int:
    """The command's exit status; a guest that stopped before the command
    started is booted once more, within what is left of --timeout."""
    deadline = procs.Deadline(opts.timeout)

    def boot_and_run() -> int:
        return boot.run_command(guest_dir, manifest, opts.command, deadline.left(),
                                opts.keep_output, accel, os.path.realpath(REPO))
    status = boot_and_run()
    if status == boot.NOT_STARTED and deadline.left() > 0:
        procs.say("nothing of the command ran: booting the guest once more")
        status = boot_and_run()
    return boot.EXIT_GUEST_FAILED if status == boot.NOT_STARTED else status


def main(args: list[str]) -> int:
    procs.install_signal_handlers()
    probe = None
    try:
        opts = parse(args)
        if opts is None:
            return 0
        ensure_host_tools()
        target = TARGETS[opts.target]
        probe = boot.KvmProbe(CACHE_ROOT)
        guest_dir = GuestCache(target).ensure(on_kernel_ready=probe.start)
        with open(os.path.join(guest_dir, "manifest.json")) as f:
            manifest = json.load(f)
        accel = choose_accelerator(probe, guest_dir, manifest)
        if opts.build_only:
            procs.say(f"{target.name} is ready in {guest_dir}")
            return 0
        return run_booting_again_once(guest_dir, manifest, opts, accel)
    except UsageError as e:
        print(f"guest/run.sh: {e}", file=sys.stderr)
        return 2
    except procs.GuestError as e:
        procs.say(str(e))
        return 1
    except KeyboardInterrupt:
        procs.say("interrupted; guest and temporary folders removed")
        return 130
    except procs.Interrupted as e:
        procs.say(f"stopped by {e}; guest and temporary folders removed")
        return e.exit_status
    finally:
        procs.stop_all()
        if probe and probe.thread:
            probe.thread.join(timeout=15)
