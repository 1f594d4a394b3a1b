"""The guests this runner can boot, as data.

A target pairs a stock Debian kernel (taken from the archive, never installed
on the host) with a Debian root filesystem of the same release, so that a
guest looks like the machine a researcher on that release has.
"""
from dataclasses import dataclass

# What the root filesystem gets. Debian's packages only: the guest has no
# network, so everything the harness and bootstrap.sh need must be in the
# image. The first group is bootstrap.sh's apt_packages (it checks them with
# dpkg and would try apt-get without network if one were missing); keep the
# two in step (openssh-server is its --dev list's). mptcpd-plugins is listed because mmdebstrap skips Recommends.
BOOTSTRAP_PACKAGES = (
    "mininet", "openvswitch-switch", "iperf3", "mptcpd", "ethtool", "iproute2",
    "procps", "iptables", "iputils-ping", "tcpdump", "python3", "python3-venv",
    "clang", "llvm", "bpftool", "libbpf-dev", "libelf-dev", "zlib1g-dev",
    "make", "gcc", "libc6-dev", "openssh-client", "openssh-server",
)
EXTRA_PACKAGES = (
    "systemd-sysv", "udev", "mptcpd-plugins", "mptcpize", "python3-pip",
    "kmod", "util-linux",
)
ROOTFS_PACKAGES = tuple(sorted(set(BOOTSTRAP_PACKAGES + EXTRA_PACKAGES)))

# Modules the initramfs needs to mount a virtio ext4 root. Their dependencies
# are added from the kernel's modules.dep, and ones built into the kernel
# (modules.builtin) are skipped, so one list serves 6.1 and 6.12.
# crc32c_generic is named because ext4 asks for crc32c through the crypto API,
# which modules.dep does not record.
INITRAMFS_MODULES = ("virtio_pci", "virtio_blk", "crc32c_generic", "ext4")


@dataclass(frozen=True)
class Target:
    name: str             # what the user types
    description: str
    suite: str            # Debian release of the kernel and the root filesystem
    kernel_meta: str      # package whose Depends names the current kernel image
    kernel_version_prefix: str  # sanity check on what the meta package resolved to

    def apt_suites(self) -> list[tuple[str, str]]:
        """(archive, suite) pairs: the release, its updates and security."""
        return [("debian", self.suite), ("debian", f"{self.suite}-updates"),
                ("debian-security", f"{self.suite}-security")]


TARGETS = {t.name: t for t in (
    Target("debian12", "Debian 12 (bookworm), kernel 6.1", "bookworm",
           "linux-image-amd64", "6.1."),
    Target("debian13", "Debian 13 (trixie), kernel 6.12", "trixie",
           "linux-image-amd64", "6.12."),
)}

# Where built guests live; one folder per target and recipe key.
CACHE_ROOT = "/var/cache/mptcp-dc-harness/guests"
