"""A private apt configuration per Debian release, beside the guest cache.

The host's own apt sources stay untouched (the host is bookworm, a guest may
be trixie) and the guest kernels are downloaded, never installed: apt reads
its sources, lists and cache from a folder of ours, with the host's dpkg
status replaced by an empty file so nothing counts as installed.
"""
import fcntl
import glob
import os
import re
import time

from . import procs

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
DEFAULT_MIRRORS = {"debian": "http://deb.debian.org/debian",
                   "debian-security": "http://deb.debian.org/debian-security"}
# How old the package lists may be before a run refreshes them. A new kernel
# in the archive changes the cache key and so rebuilds the guest; refreshing
# once a day keeps cached runs offline-capable and fast.
LISTS_MAX_AGE = 24 * 3600


def host_mirrors() -> dict[str, str]:
    """The mirrors the host's apt uses (one-line and deb822 sources), so that
    a host behind a local mirror keeps using it; deb.debian.org otherwise."""
    mirrors = dict(DEFAULT_MIRRORS)
    files = (["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.list")
             + glob.glob("/etc/apt/sources.list.d/*.sources"))
    uris = []
    for path in files:
        try:
            text = open(path).read()
        except OSError:
            continue
        uris += re.findall(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M)
        uris += [u for line in re.findall(r"^URIs:\s*(.+)$", text, re.M)
                 for u in line.split()]
    for uri in uris:
        uri = uri.rstrip("/")
        for archive in mirrors:
            if uri.endswith("/" + archive) and mirrors[archive] == DEFAULT_MIRRORS[archive]:
                mirrors[archive] = uri
    return mirrors


def sources_lines(suites: list[tuple[str, str]]) -> list[str]:
    mirrors = host_mirrors()
    return [f"deb [signed-by={KEYRING}] {mirrors[archive]} {suite} main"
            for archive, suite in suites]


class AptContext:
    def __init__(self, state_dir: str, suites: list[tuple[str, str]]):
        self.dir = state_dir
        self.sources = os.path.join(state_dir, "sources.list")
        self.lists = os.path.join(state_dir, "lists")
        os.makedirs(os.path.join(self.lists, "partial"), exist_ok=True)
        os.makedirs(os.path.join(state_dir, "cache", "archives", "partial"), exist_ok=True)
        wanted = "\n".join(sources_lines(suites)) + "\n"
        if not os.path.exists(self.sources) or open(self.sources).read() != wanted:
            with open(self.sources, "w") as f:
                f.write(wanted)
            self._forget_lists()
        status = os.path.join(state_dir, "status")
        open(status, "a").close()
        self.options = [
            "-o", f"Dir::Etc::sourcelist={self.sources}",
            "-o", "Dir::Etc::sourceparts=/nonexistent",
            "-o", f"Dir::State::Lists={self.lists}",
            "-o", f"Dir::Cache={os.path.join(state_dir, 'cache')}",
            "-o", f"Dir::State::status={status}",
            # downloads land in our folder, which apt's _apt user cannot write
            "-o", "APT::Sandbox::User=root",
        ]

    def _stamp(self) -> str:
        return os.path.join(self.dir, "updated")

    def _forget_lists(self) -> None:
        try:
            os.unlink(self._stamp())
        except FileNotFoundError:
            pass

    def refresh(self) -> None:
        """apt-get update when the lists are missing or older than a day; an
        offline host goes on with the lists it has. Serialised: two runs of
        targets of the same release share these lists."""
        with open(os.path.join(self.dir, "refresh.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._refresh()

    def _refresh(self) -> None:
        try:
            age = time.time() - os.path.getmtime(self._stamp())
        except FileNotFoundError:
            age = None
        if age is not None and age < LISTS_MAX_AGE:
            return
        try:
            procs.run(["apt-get", *self.options, "-q", "update"], 600, "apt-get update")
        except procs.GuestError as e:
            if age is None:
                raise
            procs.say(f"package lists not refreshed, using the old ones: {str(e).splitlines()[0]}")
            return
        open(self._stamp(), "w").close()

    def show(self, package: str) -> dict[str, str]:
        """The candidate version's control fields."""
        out = procs.run(["apt-cache", *self.options, "--no-all-versions", "show", package],
                        120, f"apt-cache show {package}")
        return dict(re.findall(r"^([\w-]+): (.*)$", out, re.M))

    def download(self, package: str, dest_dir: str) -> str:
        procs.run(["apt-get", *self.options, "-q", "download", package], 900,
                  f"apt-get download {package}", cwd=dest_dir)
        debs = glob.glob(os.path.join(dest_dir, f"{package}_*.deb"))
        if len(debs) != 1:
            raise procs.GuestError(f"apt-get download {package}: no single .deb in {dest_dir}")
        return debs[0]
