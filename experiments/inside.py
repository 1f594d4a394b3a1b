"""Looking inside an experiment's network, the runner's service for `--hold`,
`--cli` and `--pcap` (harness/inside_options.py declares them).

* `--hold`: the first network, once built, is kept up with no runs until
  Ctrl-C or SIGTERM; `run_mptcp.sh exec NODE -- CMD` works in it meanwhile
  (as in any network running: base/noderegistry.py).
* `--cli`: a Mininet-style prompt (emulator/prompt.py) on the first network
  (of several: the runs of the next follow once it is left) once built, open
  while its runs go on (`h1 ss -tiM` shows a run's
  subflows); `--cli after`: on the last network after its last run. The
  network stays up until the prompt is left; leaving it during the runs
  stops the experiment as Ctrl-C does. The prompt is a child process given
  the terminal (its own foreground process group), so Ctrl-C reaches the
  command it runs and not the runs.
* `--pcap HOSTS`: emulator/capture.py around every run; the run is flagged
  `packet_capture` (capturing costs CPU the capacity guard does not count).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass

from base.errors import ConfigError
from base.procs import _die_with_parent
from emulator.capture import Capture

STOP_GRACE_S = 3


class HoldEnded(Exception):
    """Ctrl-C or SIGTERM ended `--hold`: the network is down, nothing ran."""


@dataclass
class Looked:
    """What looking inside adds to a run's record."""
    flags: list
    record: dict


def _fabric(net):
    return net.fabric


def _terminal() -> int | None:
    """The terminal's descriptor if we run in its foreground, else None."""
    try:
        return 0 if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp() else None
    except OSError:
        return None


def _give_terminal(fd: int, pgrp: int) -> None:
    """tcsetpgrp from a background group: with SIGTTOU blocked, as a shell does."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        os.tcsetpgrp(fd, pgrp)
    except OSError:
        pass
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _take_terminal_in_child() -> None:
    """In the prompt's child before exec: a process group of its own, in the
    terminal's foreground; dies with the harness."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    os.tcsetpgrp(0, os.getpgrp())
    signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    _die_with_parent(signal.SIGTERM)


class Inside:
    def __init__(self, cli: str | None = None, hold: bool = False, pcap: tuple | None = None,
                 say=print):
        """`cli`: None, "before" or "after"; `pcap`: None, ("all",) or host names."""
        self.cli, self.hold, self.pcap, self.say = cli, hold, pcap, say
        self.prompt: subprocess.Popen | None = None
        self.prompt_left = threading.Event()
        self.waiting = False
        self.lock = threading.Lock()

    def check(self, net) -> None:
        """Refuse a --pcap host the network does not have (before it is built)."""
        if self.pcap and self.pcap != ("all",):
            hosts = _fabric(net).hosts()
            missing = [h for h in self.pcap if h not in hosts]
            if missing:
                raise ConfigError(f"--pcap: no host {', '.join(missing)} in this topology "
                                  f"(its hosts: {', '.join(hosts[:4])} ... {hosts[-1]})")

    # -- around a network ------------------------------------------------------
    @contextlib.contextmanager
    def network(self, net, first: bool, last: bool):
        if first and self.hold:
            self._hold(net)
        if first and self.cli == "before":
            self._open_prompt()
        try:
            yield
            if last and self.cli == "after":
                self._open_prompt()
            if self.prompt is not None:
                self._wait_prompt(last)
        finally:
            self._close_prompt()

    def _hold(self, net) -> None:
        hosts = _fabric(net).hosts()
        self.say(f"holding the network ({len(_fabric(net).nodes)} nodes; hosts {hosts[0]} .. "
                 f"{hosts[-1]}) until Ctrl-C or SIGTERM; from another terminal:\n"
                 f"  sudo ./run_mptcp.sh exec {hosts[0]} -- ss -tiM\n"
                 f"  sudo ./run_mptcp.sh exec {hosts[0]} -- ping -c 3 {hosts[-1]}\n"
                 f"  sudo ./run_mptcp.sh exec --list")
        try:
            while True:
                signal.pause()
        except KeyboardInterrupt:
            raise HoldEnded() from None

    def _open_prompt(self) -> None:
        terminal = _terminal()
        self.say(f"the network's prompt (`help` lists its words; `exit` or Ctrl-D "
                 f"{'stops the experiment and ' if self.cli == 'before' else ''}tears it down)")
        self.prompt = subprocess.Popen(
            [sys.executable, "-m", "emulator.prompt", "--owner", str(os.getpid())],
            preexec_fn=_take_terminal_in_child if terminal is not None else _die_with_parent,
            pass_fds=())
        self.terminal = terminal
        threading.Thread(target=self._watch, args=(self.prompt,), daemon=True).start()

    def _watch(self, prompt: subprocess.Popen) -> None:
        """Left during the runs: stop the experiment, as Ctrl-C would."""
        prompt.wait()
        with self.lock:
            self.prompt_left.set()
            if not self.waiting:
                os.kill(os.getpid(), signal.SIGTERM)

    def _wait_prompt(self, last: bool) -> None:
        with self.lock:
            self.waiting = True
            left = self.prompt_left.is_set()
        if not left:
            self.say(("the runs are done" if last else "this network's runs are done (the next "
                      "network's follow, without a prompt)")
                     + "; the network stays up until the prompt is left (exit or Ctrl-D)")
            self.prompt_left.wait()

    def _close_prompt(self) -> None:
        prompt, self.prompt = self.prompt, None
        if prompt is None:
            return
        with self.lock:
            self.waiting = True         # our own ending, not the user's
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if prompt.poll() is not None:
                break
            prompt.send_signal(sig)
            try:
                prompt.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                continue
        if self.terminal is not None:
            _give_terminal(self.terminal, os.getpgrp())

    # -- around a run ----------------------------------------------------------
    @contextlib.contextmanager
    def run(self, net, folder):
        """Captures (if asked) around one run; yields what its record gains."""
        looked = Looked(flags=[], record={})
        if self.prompt is not None and not self.prompt_left.is_set():
            looked.record["cli_open"] = True    # what was typed shared the network with the run
        if not self.pcap:
            yield looked
            return
        fabric = _fabric(net)
        hosts = fabric.hosts() if self.pcap == ("all",) else list(self.pcap)
        with Capture(fabric, hosts, folder) as capture:
            yield looked
        looked.flags.append("packet_capture")
        looked.record["capture"] = capture.summary
        for intf, line in capture.capped().items():
            self.say(f"    capture of {intf} stopped at its cap: {line}")
