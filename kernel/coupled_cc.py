"""Coupled MPTCP congestion control (LIA, OLIA, EWTCP, LIA with the
penalization of slow subflows, liap, and LIA with a send hold on a subflow
whose data would block the receive window, liab) registered in the
kernel for as long as an experiment's networks exist.

The algorithms are BPF struct_ops built from kernel/bpf/ by the bootstrap
(kernel/bpf/README.md has their rules). Registering a congestion control is
machine-wide, so one loader process (kernel/bpf/build/cc_loader) holds them:

  * it prints "ready lia olia ewtcp liap liab" once they are registered;
  * it unregisters them when its stdin closes or on SIGTERM/SIGINT/SIGHUP.
    Its stdin is a pipe from us, so if the harness dies in any way, even by
    SIGKILL, the pipe closes and the algorithms go with it. For the same
    reason it is told of its parent's death by SIGTERM, not SIGKILL.

A network namespace whose default is one of them keeps a reference to it, so
the networks are torn down before the loader is stopped; the kernel then
frees the programs and maps (deferred, within about a second). A TCP socket
that outlives its namespace (seen: one LIA subflow at a time, held for hours
after every process and namespace of its run was gone; docs/cleanup.md)
keeps them loaded though unregistered; stop() says so rather than wait for
it.

libbpf 1.1 (Debian 12) registers without a BPF link, so a loader killed
from outside with SIGKILL (by a supervisor tearing down a whole process
tree) leaves its algorithms registered with no process holding them.
start() removes such orphans: ours by their object's BTF, held by nobody.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import logging
import time
from pathlib import Path

from base.errors import ConfigError
from base.procs import CommandError, ProcessTracker, run, wait_readable

# The coupled algorithms kernel/bpf implements, by the name each registers.
COUPLED = ("lia", "olia", "ewtcp", "liap", "liab")
BPF_DIR = Path(__file__).resolve().parent / "bpf"
LOADER = BPF_DIR / "build" / "cc_loader"
OBJECT = BPF_DIR / "build" / "mptcp_cc.bpf.o"
BSS_MAP = "mptcp_cc.bss"     # the object's global variables, as bpftool names them
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
READY_TIMEOUT_S = 20
GONE_TIMEOUT_S = 5
EXIT_ALREADY_REGISTERED = 3
# The numbers kernel/bpf/repair_log.h records a corrupted window with, by name.
REPAIR_HOOKS = {1: "cong_avoid", 2: "after_cong_avoid", 3: "ssthresh", 4: "set_state",
                5: "in_ack_event", 6: "undo_cwnd"}
REPAIR_KINDS = {1: "cwnd_over_cap", 2: "infinite_ssthresh_in_reduction", 4: "ssthresh_over_cap",
                8: "undo_over_cap"}
TCP_CA_STATES = ("Open", "Disorder", "CWR", "Recovery", "Loss")    # include/net/tcp.h
# Our BPF maps as the kernel names them: one struct_ops map per algorithm,
# the per-connection state, the globals.
OUR_MAPS = (*COUPLED, "mptcp_cc_conns", BSS_MAP)

log = logging.getLogger(__name__)


class CoupledCCError(ConfigError):
    """The coupled algorithms cannot be registered (exit status 2)."""


def available() -> list[str]:
    return AVAILABLE.read_text().split()


def bpf_maps() -> list[dict]:
    """bpftool's record of every BPF map in the kernel now."""
    return json.loads(run(["bpftool", "-j", "map", "list"], timeout=10).stdout or "[]")


def loaded_maps() -> dict[int, str]:
    """Our maps in the kernel now, id -> name, whichever loader made them."""
    return {m["id"]: m["name"] for m in bpf_maps() if m.get("name") in OUR_MAPS}


def kernel_held_note() -> str:
    """One line where the kernel still holds maps of ours that no loader
    registered: an earlier run's algorithms, unregistered, kept alive by TCP
    sockets that outlived their namespace (docs/cleanup.md).
    They take no traffic and do not stop a new loader; nothing of ours can free them."""
    try:
        held = loaded_maps()
    except (CommandError, ValueError, OSError):
        return ""
    if not held or any(n in available() for n in COUPLED):
        return ""
    return (f"note: the kernel still holds {len(held)} BPF map(s) of an earlier run's coupled "
            f"congestion control ({', '.join(sorted(set(held.values())))}), kept by sockets that "
            "outlived their namespace; they are unregistered and do not affect this run")


def open_map_ids() -> dict[int, int]:
    """Map id -> a pid that has it open, for every BPF map a process holds.
    Read from /proc/PID/fdinfo (the kernel's `map_id:` line): bpftool lists
    holders only when built with BPF skeletons, which Debian's is not."""
    held: dict[int, int] = {}
    for fdinfo in Path("/proc").glob("[0-9]*/fdinfo/*"):
        try:
            text = fdinfo.read_text()
        except OSError:        # the process or the fd went away meanwhile
            continue
        for line in text.splitlines():
            if line.startswith("map_id:"):
                held.setdefault(int(line.split()[1]), int(fdinfo.parts[2]))
    return held


def _coupled_maps() -> list[dict]:
    """bpftool's records of our struct_ops maps: named like an algorithm of
    ours and made from our object (they share its BTF with our globals map)."""
    maps = bpf_maps()
    our_btf = {m.get("btf_id") for m in maps if m.get("name") == BSS_MAP}
    return [m for m in maps if m.get("type") == "struct_ops" and m.get("name") in COUPLED
            and m.get("btf_id") in our_btf]


def registered_by(maps: list[dict] | None = None) -> dict[str, int | None]:
    """Each of our algorithms registered now -> the pid of a process holding
    its map (a live loader), or None for an orphan no process holds.
    `maps`: _coupled_maps() if the caller has read them already."""
    registered = set(available()) & set(COUPLED)
    held = open_map_ids()
    owners: dict[str, int | None] = {}
    for m in _coupled_maps() if maps is None else maps:
        if m["name"] in registered:
            owners[m["name"]] = owners.get(m["name"]) or held.get(m["id"])
    return owners


def remove_orphans() -> list[str]:
    """Unregister our algorithms that no process holds (left by a loader
    killed with SIGKILL; see the module's docstring) and return their names.
    Every struct_ops map of such a name is tried: older maps of it may be
    in the kernel unregistered, and deleting their element just fails."""
    maps = _coupled_maps()
    orphans = sorted(n for n, pid in registered_by(maps).items() if pid is None)
    for m in maps:
        if m["name"] in orphans:
            run(["bpftool", "struct_ops", "unregister", "id", str(m["id"])], timeout=10,
                check=False)
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while any(n in available() for n in orphans) and time.monotonic() < deadline:
        time.sleep(0.05)
    if left := [n for n in orphans if n in available()]:
        raise CoupledCCError(f"congestion control {left[0]!r} was left registered by a killed "
                             f"run and could not be removed: `bpftool struct_ops unregister "
                             f"name {left[0]}`")
    return orphans


def check_built() -> None:
    """Preflight: the loader and the BPF object exist and none of our names
    is registered by a live process or by something that is not ours.
    Orphans of ours (registered, held by nobody) pass: start() removes them."""
    missing = [str(p) for p in (LOADER, OBJECT) if not p.exists()]
    if missing:
        raise CoupledCCError(f"coupled congestion control not built ({', '.join(missing)} missing): "
                             "run ./bootstrap.sh, which builds kernel/bpf")
    if not Path("/sys/kernel/btf/vmlinux").exists():
        raise CoupledCCError("this kernel has no BTF (/sys/kernel/btf/vmlinux): BPF congestion "
                             "control needs CONFIG_DEBUG_INFO_BTF=y")
    owners = registered_by()
    for name in (n for n in COUPLED if n in available()):
        if name not in owners:
            raise CoupledCCError(f"congestion control {name!r} is registered by something other "
                                 f"than this harness: unregister it first")
        if owners[name] is not None:
            raise CoupledCCError(f"congestion control {name!r} is registered by process "
                                 f"{owners[name]} (another run of the harness)")


class CoupledCC:
    """The loader process of one network; start() and stop() are no-ops
    when the network's algorithm is one the kernel ships."""

    def __init__(self, cc: str):
        self.cc = cc
        # Its own tracker: stopping the experiment's processes must not stop
        # the loader before the namespaces that use the algorithms are gone.
        self.procs = ProcessTracker()
        self.loader: subprocess.Popen | None = None
        # This loader's maps (id -> name): maps of an earlier loader may still
        # be in the kernel under the same names (see the module's docstring).
        self.maps: dict[int, str] = {}
        self.left_in_kernel: list[str] = []

    @property
    def needed(self) -> bool:
        return self.cc in COUPLED

    def start(self) -> None:
        if not self.needed or self.loader is not None:
            return
        check_built()
        for name in remove_orphans():
            log.warning("removed congestion control %s, left registered by a run that was "
                        "killed (no process held it)", name)
        before = loaded_maps()
        self.loader = self.procs.spawn("cc_loader", [str(LOADER), str(OBJECT)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, death_signal=signal.SIGTERM)
        line = self._read_line(self.loader.stdout, READY_TIMEOUT_S)
        if not line.startswith("ready") or self.cc not in line.split():
            why = line.strip()
            if not why and self.procs.wait([self.loader], time.monotonic() + 1) == []:
                lines = self.loader.stderr.read().decode(errors="replace").strip().splitlines()
                why = lines[-1] if lines else f"exit status {self.loader.returncode}"
            self.stop()
            raise CoupledCCError(f"cc_loader did not register {self.cc}: {why or 'no output'}")
        self.maps = {i: n for i, n in loaded_maps().items() if i not in before}

    def alive(self) -> bool:
        """False if the algorithms were registered and the loader has died
        since (then they are gone too)."""
        return not self.needed or (self.loader is not None and self.loader.poll() is None)

    def _globals(self) -> dict | None:
        """The object's global variables by name (its .bss map, through
        bpftool's BTF-formatted dump); None when nothing is loaded or they
        cannot be read."""
        bss = [i for i, name in self.maps.items() if name == BSS_MAP]
        if not self.needed or not self.alive() or len(bss) != 1:
            return None
        try:
            out = run(["bpftool", "-j", "map", "dump", "id", str(bss[0])], timeout=5).stdout
            merged: dict = {}
            for var in json.loads(out)[0]["formatted"]["value"][".bss"]:
                merged.update(var)
            return merged
        except (CommandError, ValueError, LookupError, TypeError, AttributeError):
            return None

    def counter(self, name: str) -> int | None:
        """One of the object's counters since the programs were loaded:
        `window_repairs` (corrupted windows repaired, mptcp_cc.bpf.c),
        `penalties` (windows liap halved, penalize.h) or `holds`
        (holds liab began, hold.h); None when nothing is loaded or it
        cannot be read."""
        found = self._globals()
        try:
            return None if found is None else int(found[name])
        except (KeyError, TypeError, ValueError):
            return None

    def window_repairs(self) -> int | None:
        """Corrupted windows repaired since the programs were loaded."""
        return self.counter("window_repairs")

    def repair_log(self, since: int = 0) -> tuple[int, list[dict]] | None:
        """(corrupted windows seen since the programs were loaded, the
        records kept of those after the first `since`), each record with its
        hook, kind and TCP state named (kernel/bpf/repair_log.h); None when
        nothing is loaded or it cannot be read. Only the first
        REPAIR_LOG_LEN are kept: later ones are counted, not recorded."""
        found = self._globals()
        try:
            seen = int(found["repair_log_seen"])
            kept = found["repair_log"][since:min(seen, len(found["repair_log"]))]
        except (KeyError, TypeError, ValueError):
            return None
        return seen, [named_repair(r) for r in kept]

    def stop(self) -> None:
        """Unregister: close the loader's stdin and wait for it, SIGTERM it if
        it does not exit; then wait until the names have left the kernel's list
        and the loader's maps are freed. Maps still held then are named in
        `left_in_kernel` and in a warning."""
        if self.loader is None:
            return
        loader, self.loader = self.loader, None
        try:
            loader.stdin.close()
        except OSError:
            pass
        self.procs.wait([loader], time.monotonic() + GONE_TIMEOUT_S)
        self.procs.stop([loader])      # SIGTERM if it is still there; forgets it either way
        for stream in (loader.stdout, loader.stderr):
            stream.close()
        deadline = time.monotonic() + GONE_TIMEOUT_S
        while any(n in available() for n in COUPLED) and time.monotonic() < deadline:
            time.sleep(0.05)
        mine, self.maps = self.maps, {}
        while (held := sorted(n for i, n in loaded_maps().items() if i in mine)) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        self.left_in_kernel = held
        if held:
            log.warning("coupled congestion control unregistered, but the kernel still holds its "
                        "maps (%s): a TCP socket of a closed namespace still uses it",
                        ", ".join(held))

    @staticmethod
    def _read_line(stream, timeout: float) -> str:
        """One line from a pipe, or what arrived before `timeout` or EOF."""
        fd, buf = stream.fileno(), b""
        deadline = time.monotonic() + timeout
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not wait_readable(fd, left):
                break
            chunk = os.read(fd, 256)
            if not chunk:
                break
            buf += chunk
        return buf.decode(errors="replace")


def named_repair(record: dict) -> dict:
    """One repair_log record with its numbers named: the hook, the kinds,
    the TCP states (the snapshot's too)."""
    def state(n) -> str:
        return TCP_CA_STATES[n] if isinstance(n, int) and 0 <= n < len(TCP_CA_STATES) else str(n)
    out = dict(record)
    out["hook"] = REPAIR_HOOKS.get(record.get("hook"), str(record.get("hook")))
    out["kind"] = [name for bit, name in REPAIR_KINDS.items() if int(record.get("kind", 0)) & bit]
    out["ca_state"] = state(record.get("ca_state"))
    last = dict(record.get("last") or {})
    last["hook"] = REPAIR_HOOKS.get(last.get("hook"), "none")
    last["ca_state"] = state(last.get("ca_state"))
    out["last"] = last
    return out
