"""A busybox initramfs that loads what a virtio ext4 root needs and switches
to it.

The Debian kernel package has no modules.dep (depmod makes it at install
time, and we never install), so dependencies are read from each module's own
.modinfo "depends=" entry. Modules are stored uncompressed because busybox's
insmod cannot read .ko.xz (6.12 ships its modules xz-compressed).
"""
import gzip
import lzma
import os
import re
import shutil
import subprocess

from . import procs

HERE = os.path.dirname(os.path.abspath(__file__))
BUSYBOX = "/bin/busybox"  # from busybox-static: the initramfs has no libc


def module_name(filename: str) -> str:
    return re.sub(r"\.ko(\.(xz|zst|gz))?$", "", os.path.basename(filename)).replace("-", "_")


def read_module(path: str) -> bytes:
    if path.endswith(".xz"):
        return lzma.decompress(open(path, "rb").read())
    if path.endswith(".gz"):
        return gzip.decompress(open(path, "rb").read())
    if path.endswith(".zst"):  # no zstd in the standard library
        return subprocess.run(["zstd", "-dcq", path], check=True, capture_output=True,
                              timeout=60).stdout
    return open(path, "rb").read()


def module_depends(image: bytes) -> list[str]:
    found = re.search(rb"\0depends=([^\0]*)\0", image)
    if not found or not found.group(1):
        return []
    return [d.decode().replace("-", "_") for d in found.group(1).split(b",")]


def load_order(modules_dir: str, wanted: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """(name, module image) for `wanted` and their dependencies, each after
    what it depends on, leaving out what the kernel has built in."""
    files = {}
    for root, _dirs, names in os.walk(os.path.join(modules_dir, "kernel")):
        for n in names:
            if ".ko" in n:
                files[module_name(n)] = os.path.join(root, n)
    builtin = set()
    builtin_list = os.path.join(modules_dir, "modules.builtin")
    if os.path.exists(builtin_list):
        builtin = {module_name(line.strip()) for line in open(builtin_list) if line.strip()}
    order: list[tuple[str, bytes]] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name in builtin:
            return
        seen.add(name)
        if name not in files:
            raise procs.GuestError(f"initramfs: module {name} is neither built in nor in {modules_dir}")
        image = read_module(files[name])
        for dep in module_depends(image):
            visit(dep)
        order.append((name, image))

    for name in wanted:
        visit(name)
    return order


def build(modules_dir: str, wanted: tuple[str, ...], work_dir: str, out_path: str) -> list[str]:
    """Writes a gzip'ed newc cpio to out_path; returns the module names it loads."""
    tree = os.path.join(work_dir, "initramfs")
    for d in ("bin", "dev", "proc", "sys", "newroot", "modules"):
        os.makedirs(os.path.join(tree, d), exist_ok=True)
    shutil.copy2(BUSYBOX, os.path.join(tree, "bin", "busybox"))
    os.symlink("busybox", os.path.join(tree, "bin", "sh"))
    shutil.copy2(os.path.join(HERE, "initramfs_init.sh"), os.path.join(tree, "init"))
    os.chmod(os.path.join(tree, "init"), 0o755)
    order = load_order(modules_dir, wanted)
    for name, image in order:
        with open(os.path.join(tree, "modules", f"{name}.ko"), "wb") as f:
            f.write(image)
    with open(os.path.join(tree, "modules", "load-order"), "w") as f:
        f.write("".join(f"{name}\n" for name, _ in order))
    listing = subprocess.run(["find", ".", "-mindepth", "1"], cwd=tree, check=True,
                             capture_output=True, timeout=60).stdout
    archive = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=tree,
                             input=listing, check=True, capture_output=True, timeout=60).stdout
    with open(out_path, "wb") as f:
        f.write(gzip.compress(archive, compresslevel=6))
    shutil.rmtree(tree)
    return [name for name, _ in order]
