"""Builds a guest (kernel, initramfs, root filesystem image) into the cache.

A guest lives in CACHE_ROOT/<target>-<key>/, key being a hash of what went
into it: the resolved kernel package and version, the package list, and the
recipe files (requirements*.txt included). It is built in a temporary folder
beside it and renamed into place as the last step, so a folder with the final
name is always complete; builds of one target are serialised with flock.
"""
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time

from . import aptrepo, initramfs, procs
from .guests import CACHE_ROOT, INITRAMFS_MODULES, ROOTFS_PACKAGES, Target

GUEST_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(GUEST_DIR)
# What decides the image's content. boot.py and guest_init.sh are left out on
# purpose: they are read at each boot, so changing them needs no rebuild.
RECIPE_FILES = [os.path.join(GUEST_DIR, f) for f in (
    "guests.py", "build.py", "initramfs.py", "initramfs_init.sh", "rootfs_customize.sh")] + [
    os.path.join(REPO, f) for f in ("requirements.txt", "requirements-dev.txt")]
IMAGE_SIZE = "4G"  # sparse; about 1.5 GB is used, the rest is room for the guest
MANIFEST = "manifest.json"


def recipe_key(target: Target, kernel_package: str, kernel_version: str) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([target.name, target.suite, kernel_package, kernel_version,
                              ROOTFS_PACKAGES, INITRAMFS_MODULES]).encode())
    for path in RECIPE_FILES:
        digest.update(os.path.basename(path).encode() + b"\0" + open(path, "rb").read())
    return digest.hexdigest()[:12]


def resolve_kernel(apt: aptrepo.AptContext, target: Target) -> tuple[str, str]:
    """The kernel image package the release's linux-image-amd64 points at now."""
    depends = apt.show(target.kernel_meta).get("Depends", "")
    found = re.search(r"\b(linux-image-\S+-amd64)\b", depends)
    if not found:
        raise procs.GuestError(f"{target.kernel_meta}: no kernel image in Depends: {depends!r}")
    package = found.group(1)
    if not package.startswith("linux-image-" + target.kernel_version_prefix):
        raise procs.GuestError(f"{target.name}: {target.kernel_meta} points at {package}, "
                               f"expected linux-image-{target.kernel_version_prefix}*")
    return package, apt.show(package)["Version"]


class GuestCache:
    """The cache folder of one target, and its lock: shared while a guest is
    used, exclusive while one is built or stale ones are removed."""

    def __init__(self, target: Target):
        self.target = target
        os.makedirs(CACHE_ROOT, exist_ok=True)
        self.lock_file = open(os.path.join(CACHE_ROOT, f".lock-{target.name}"), "a")
        self.apt = aptrepo.AptContext(os.path.join(CACHE_ROOT, ".apt", target.suite),
                                      target.apt_suites())

    def lock(self, mode: int) -> None:
        try:
            fcntl.flock(self.lock_file, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            procs.say(f"waiting for another run or build of {self.target.name} (lock)")
            fcntl.flock(self.lock_file, mode)

    def ensure(self, on_kernel_ready=None) -> str:
        """The folder of an up-to-date guest, built if needed. Returns with
        the shared lock held (until the process exits)."""
        self.lock(fcntl.LOCK_SH)
        self.apt.refresh()
        package, version = resolve_kernel(self.apt, self.target)
        key = recipe_key(self.target, package, version)
        final = os.path.join(CACHE_ROOT, f"{self.target.name}-{key}")
        if os.path.exists(os.path.join(final, MANIFEST)):
            return final
        self.lock(fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(final, MANIFEST)):
            self._remove_others(keep=None)
            build_dir = os.path.join(CACHE_ROOT, f".build-{self.target.name}-{key}-{os.getpid()}")
            try:
                os.makedirs(build_dir)
                build_guest(self.target, self.apt, package, version, key, build_dir,
                            on_kernel_ready)
                os.rename(build_dir, final)
            finally:
                procs.remove_tree(build_dir)
        self._remove_others(keep=final)
        self.lock(fcntl.LOCK_SH)
        return final

    def _remove_others(self, keep: str | None) -> None:
        """Stale guests and interrupted builds of this target (we hold the
        exclusive lock, so nobody uses or builds them)."""
        name = self.target.name
        for path in (glob.glob(os.path.join(CACHE_ROOT, f"{name}-*"))
                     + glob.glob(os.path.join(CACHE_ROOT, f".build-{name}-*"))):
            if path != keep:
                procs.say(f"removing {path}")
                procs.remove_tree(path)


def _timed(step: str, timings: dict, fn, *args):
    start = time.monotonic()
    result = fn(*args)
    timings[step] = round(time.monotonic() - start, 1)
    return result


def fetch_kernel(apt, package: str, build_dir: str, timings: dict) -> dict:
    """Downloads and unpacks the kernel package (never installs it), copies
    vmlinuz out and builds the initramfs from its modules."""
    download_dir = os.path.join(build_dir, "download")
    os.makedirs(download_dir)
    deb = _timed("kernel download", timings, apt.download, package, download_dir)
    unpacked = os.path.join(build_dir, "kernel")
    procs.run(["dpkg-deb", "-x", deb, unpacked], 300, "dpkg-deb -x")
    os.unlink(deb)
    release = package.removeprefix("linux-image-")
    modules = next((d for d in (os.path.join(unpacked, "lib/modules", release),
                                os.path.join(unpacked, "usr/lib/modules", release))
                    if os.path.isdir(d)), None)
    if modules is None:
        raise procs.GuestError(f"{package}: no modules folder for {release}")
    shutil.copy2(os.path.join(unpacked, "boot", f"vmlinuz-{release}"),
                 os.path.join(build_dir, "vmlinuz"))
    loaded = _timed("initramfs", timings, initramfs.build, modules, INITRAMFS_MODULES,
                    build_dir, os.path.join(build_dir, "initrd.img"))
    return {"release": release, "modules_dir": modules, "initramfs_modules": loaded}


def bootstrap_rootfs(target: Target, build_dir: str, log_path: str) -> str:
    """mmdebstrap in a private mount namespace: if it is killed, the kernel
    drops the chroot's /proc, /sys and /dev mounts with the namespace."""
    recipe = os.path.join(build_dir, "recipe")
    os.makedirs(recipe)
    for f in ("requirements.txt", "requirements-dev.txt"):
        shutil.copy2(os.path.join(REPO, f), recipe)
    shutil.copy2(os.path.join(GUEST_DIR, "rootfs_customize.sh"), recipe)
    rootfs = os.path.join(build_dir, "rootfs")
    argv = ["unshare", "--mount", "--propagation", "private", "--",
            "mmdebstrap", "--mode=root", "--variant=apt", "--format=directory",
            # no fsync per unpacked file: 90 s instead of 200 s here, and a
            # build cut short is thrown away anyway
            "--dpkgopt=force-unsafe-io",
            "--include=" + ",".join(ROOTFS_PACKAGES),
            f"--customize-hook=sh {recipe}/rootfs_customize.sh \"$1\" {recipe}",
            target.suite, rootfs,
            *aptrepo.sources_lines(target.apt_suites())]
    procs.run(argv, 1500, "mmdebstrap", log_path=log_path)
    return rootfs


def build_guest(target: Target, apt, package: str, version: str, key: str,
                build_dir: str, on_kernel_ready=None) -> None:
    start = time.monotonic()
    procs.say(f"building {target.name} ({target.description}): kernel {package} {version}, "
              f"key {key}; a few minutes (log: {build_dir}/build.log)")
    timings: dict[str, float] = {}
    kernel: dict = {}
    errors: list[BaseException] = []

    # The kernel (download, initramfs) is ready long before the root
    # filesystem; meanwhile the caller may start its KVM probe with it.
    def kernel_step():
        try:
            kernel.update(fetch_kernel(apt, package, build_dir, timings))
            if on_kernel_ready:
                on_kernel_ready(os.path.join(build_dir, "vmlinuz"),
                                os.path.join(build_dir, "initrd.img"))
        except BaseException as e:  # re-raised in the main thread below
            errors.append(e)

    kernel_thread = threading.Thread(target=kernel_step, daemon=True)
    kernel_thread.start()
    log_path = os.path.join(build_dir, "build.log")
    try:
        rootfs = _timed("mmdebstrap", timings, bootstrap_rootfs, target, build_dir, log_path)
        kernel_thread.join()
    except BaseException:
        # Stop the kernel download too before the caller removes build_dir.
        procs.stop_all()
        kernel_thread.join(timeout=30)
        raise
    if errors:
        raise errors[0]

    # The kernel's modules, and their index made by the guest's own depmod.
    release = kernel["release"]
    shutil.copytree(kernel["modules_dir"], os.path.join(rootfs, "lib/modules", release),
                    symlinks=True)
    procs.run(["chroot", rootfs, "depmod", "-a", release], 300, "depmod", log_path=log_path)
    shutil.rmtree(os.path.join(build_dir, "kernel"))

    image = os.path.join(build_dir, "rootfs.img")
    _timed("mkfs.ext4", timings, procs.run,
           ["mkfs.ext4", "-q", "-F", "-L", "harness-root", "-d", rootfs, image, IMAGE_SIZE],
           600, "mkfs.ext4", log_path)
    used = int(subprocess.run(["du", "-sb", rootfs], capture_output=True, text=True,
                              timeout=120).stdout.split()[0])
    for scratch in (rootfs, os.path.join(build_dir, "download"), os.path.join(build_dir, "recipe")):
        procs.remove_tree(scratch)
    timings["total"] = round(time.monotonic() - start, 1)
    manifest = {"target": target.name, "key": key, "suite": target.suite,
                "kernel_package": package, "kernel_version": version,
                "kernel_release": release, "initramfs_modules": kernel["initramfs_modules"],
                "packages": list(ROOTFS_PACKAGES), "rootfs_bytes": used,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds": timings}
    with open(os.path.join(build_dir, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    procs.say(f"built {target.name} in {timings['total']:.0f} s "
              f"({', '.join(f'{k} {v:.0f} s' for k, v in timings.items() if k != 'total')})")
