"""The openflow fabric's controller (controller/, os-ken) as a process:
started in the first switch namespace from a pickled spec and waited on
until it has configured every switch, its status file and first fit log
read, and what is wrong with it (exited, hung, deaf, connections lost), so
that the fabric flags a run and replaces it before the next.

ControllerProcess is a part of OpenFlowFabric (emulator/fabrics/openflow.py):
it uses the fabric's `topo`, `link`, `seed`, `mode`, `idle_timeout_s`,
`schedule_interval_s`, `log_dir`, `workdir`, `procs`, `daemons` and
`namespace_pid`."""
from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

from base.procs import CommandError

READY_TIMEOUT_S = 60
# The controller writes its status file every 0.5 s and echoes every switch
# as often (controller/app.py). It is hung when the status is this old (3 s
# flagged a fresh controller on a saturated machine in CI)...
HUNG_AFTER_S = 5.0
# ...and its event loop is stuck when no echo reply has been handled for this
# long: longer, as the replies also wait on switch daemons that a saturated
# machine slows down (their connections are checked on their own).
DEAF_AFTER_S = 10.0
# ovs-vswitchd refreshes the Controller table's `is_connected` only every few
# seconds: after a controller start it read false on all 20 switches of a
# FatTree(4) for 4.5-5 s (measured here), though every switch was connected.
# Until then the controller's own status, not that column, is believed.
OVS_STATUS_SETTLE_S = 10.0
CONTROLLER_PORT = 6653


class ControllerProcess:
    def _setup_controller(self) -> None:
        """None running yet: the fabric starts one once its switches are up."""
        self.controller: subprocess.Popen | None = None
        self.controller_starts = 0
        self._controller_started = 0.0
        self._controller_log = None

    def schedule_log_path(self) -> Path:
        """Where the controller logs its first fit rounds (JSON lines)."""
        return (self.log_dir or self.workdir) / "schedule.jsonl"

    def schedule_rounds(self) -> list[dict]:
        """The first fit rounds logged so far (empty without a scheduler)."""
        path = self.schedule_log_path()
        if self.schedule_interval_s is None or not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def start_controller(self) -> None:
        """Start a controller and wait until it has configured every switch."""
        assert self.workdir is not None
        status = self.workdir / "controller.status.json"
        status.unlink(missing_ok=True)
        spec = self.workdir / "controller.spec"
        spec.write_bytes(pickle.dumps({"topo": self.topo, "mode": self.mode, "seed": self.seed,
                                       "idle_timeout_s": self.idle_timeout_s,
                                       "status": str(status),
                                       "schedule_interval_s": self.schedule_interval_s,
                                       "link_bps": self.link.bw_mbps * 1e6,
                                       "schedule_log": str(self.schedule_log_path())}))
        log_path = (self.log_dir or self.workdir) / "controller.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._controller_log = open(log_path, "a")
        self.controller_starts += 1
        self._controller_started = time.time()
        self._controller_log.write(f"--- controller start {self.controller_starts} ({self.mode})\n")
        self._controller_log.flush()
        self.controller = self.procs.spawn(
            "controller", [sys.executable, "-m", "controller", str(spec), str(CONTROLLER_PORT)],
            ns_pid=self.namespace_pid(0), stdout=self._controller_log, stderr=subprocess.STDOUT,
            env=_controller_env(), death_signal=signal.SIGTERM)
        want = set(self.topo.switches())
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            ready = set(self.controller_status().get("ready", []))
            if ready >= want:
                return
            if self.controller.poll() is not None:
                raise CommandError(f"the controller exited at start (status {self.controller.returncode}); "
                                   f"see {log_path}")
            if time.monotonic() > deadline:
                missing = sorted(want - ready)
                raise CommandError(
                    f"the controller configured {len(ready)} of {len(want)} switches in "
                    f"{READY_TIMEOUT_S} s (missing: {', '.join(missing)}; Open vSwitch reports "
                    f"{self._connection_view(missing)}); see {log_path}"
                    + _log_excerpt(log_path, missing))
            time.sleep(0.1)

    def stop_controller(self) -> None:
        if self.controller is not None:
            self.procs.stop([self.controller], grace=3)
            self.controller = None
        if self._controller_log is not None:
            self._controller_log.close()
            self._controller_log = None

    def controller_status(self) -> dict:
        if self.workdir is None:
            return {}
        try:
            return json.loads((self.workdir / "controller.status.json").read_text())
        except (OSError, ValueError):
            return {}

    def _connection_view(self, switches: list[str]) -> str:
        """What Open vSwitch says of these switches' controller connections
        (for an error message: never raises)."""
        try:
            down = set(self.disconnected_switches())
        except (CommandError, OSError, ValueError, KeyError, IndexError) as exc:
            return f"nothing ({exc})"
        return (f"{len(down & set(switches))} of them not connected"
                f" and {len(set(switches) - down)} connected")

    def disconnected_switches(self) -> list[str]:
        """Bridges whose controller connection Open vSwitch reports down."""
        down = []
        for ovs in self.daemons:
            table = json.loads(ovs.vsctl("--format=json", "--columns=is_connected,_uuid",
                                         "list", "controller"))
            lost = {row[1][1] for row in table["data"] if row[0] is not True}
            if lost:
                bridges = json.loads(ovs.vsctl("--format=json", "--columns=name,controller",
                                               "list", "bridge"))
                down += [name for name, ctl in bridges["data"] if ctl[1] in lost]
        return sorted(down)

    def controller_problem(self) -> str | None:
        if self.controller is None or self.controller.poll() is not None:
            return "the controller exited"
        status, now = self.controller_status(), time.time()
        if now - status.get("time", 0.0) > HUNG_AFTER_S:
            return f"the controller wrote no status for over {HUNG_AFTER_S:g} s (hung)"
        # A fresh controller has handled no echo reply yet: count from its start
        # (counting from 0 replaced every new controller once, CI and here).
        last_echo = status.get("last_echo") or self._controller_started
        if now - last_echo > DEAF_AFTER_S:
            return f"the controller handled no echo reply for over {DEAF_AFTER_S:g} s"
        if now - self._controller_started < OVS_STATUS_SETTLE_S:
            return None
        try:
            down = self.disconnected_switches()
        except CommandError as exc:
            return f"the switches cannot be asked ({exc})"
        if down:
            return f"{len(down)} switches lost their controller connection"
        return None


def _log_excerpt(log_path: Path, missing: list[str], lines: int = 6) -> str:
    """The controller log's last lines of this start that name a missing
    switch or say something went wrong, for an error message that must
    explain itself where the log does not outlive the run (a CI guest)."""
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
        return ""
    this_start = text.rsplit("--- controller start", 1)[-1].splitlines()
    words = (*missing, "unknown", "rror", "Traceback", "arning")
    picked = [line.strip() for line in this_start if any(w in line for w in words)]
    return ("; the log says: " + " | ".join(picked[-lines:])) if picked else "; the log names none of them"


def _controller_env() -> dict[str, str]:
    """The controller imports our packages (controller, dctopo) by path."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
