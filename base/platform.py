"""What this machine's kernel offers, read without loading or creating
anything (standard library only: the CLI asks before anything is installed)."""
from __future__ import annotations

import functools
import gzip
import os
from pathlib import Path

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")


def harness_cache() -> Path:
    """Where the harness keeps what it measured of this machine (calibrations, run times)."""
    return Path(os.environ.get("MPTCP_HARNESS_CACHE", "/var/cache/mptcp-dc-harness"))


def calibration_file(fabric: str) -> str:
    """The name of a fabric's calibration in the harness cache."""
    return f"calibration-{fabric}.json"


def machine() -> dict:
    """What a calibration is valid for: kernel, cores and CPU model."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"kernel": kernel_release(), "cpus": os.cpu_count() or 1, "cpu_model": model}


def kernel_release() -> str:
    return os.uname().release


def _modules_dir() -> Path:
    return Path("/lib/modules") / kernel_release()


def kernel_config(option: str) -> str | None:
    """The value of CONFIG_`option` ('y', 'm', 'n' where unset) from
    /proc/config.gz or /boot/config-RELEASE; None where no configuration is found."""
    want = f"CONFIG_{option}="
    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{kernel_release()}")):
        try:
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith(want):
                        return line.strip().split("=", 1)[1]
            return "n"
        except OSError:
            continue
    return None


def _module_on_disk(name: str) -> bool:
    for listing in ("modules.builtin", "modules.dep"):
        try:
            if f"/{name}.ko" in (_modules_dir() / listing).read_text():
                return True
        except OSError:
            continue
    return False


def module_available(name: str, config_option: str) -> bool:
    """Whether the kernel has module `name`: built in, or a module that is
    loaded or on disk. Read from the kernel's configuration where there is
    one, else from /sys/module and the module lists."""
    value = kernel_config(config_option)
    if value == "y":
        return True
    if value == "m" or value is None:
        return Path(f"/sys/module/{name}").is_dir() or _module_on_disk(name)
    return False


def openvswitch_kernel_datapath() -> bool:
    """Open vSwitch can forward in the kernel (the `openvswitch` module)."""
    return module_available("openvswitch", "OPENVSWITCH")


@functools.lru_cache(maxsize=None)
def btf_has(name: str, btf: Path = VMLINUX_BTF) -> bool:
    """Whether the kernel's BTF names `name` (a function, kfunc or type).

    BTF keeps every name in one string section, each ended by a NUL; a name
    is present if it stands between two NULs. Read by hand because nothing in
    the standard library parses BTF, and this runs before anything is installed.
    Cached: the running kernel's BTF does not change, and building the
    options read its 5 MB about nine times per command (1100 reads took
    3.7 s of 120 validations in tests/test_inputs.py).
    """
    try:
        data = btf.read_bytes()
    except OSError:
        return False
    return b"\0" + name.encode() + b"\0" in data


def sysctl_exists(name: str) -> bool:
    """Whether this kernel has sysctl `name` (e.g. net.ipv4.fib_multipath_hash_seed,
    Linux 6.11 and later), read in this process's namespace."""
    return Path("/proc/sys", *name.split(".")).exists()


def netem_available() -> bool:
    """Whether this kernel has sch_netem, built in or as a module on disk.
    Nothing is loaded or created to find out."""
    return module_available("sch_netem", "NET_SCH_NETEM")
