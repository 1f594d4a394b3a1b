"""base/ssh.py against real sshd servers: two server namespaces on a LAN
(emulator/tunnels.local_servers), each with its own sshd, reached from this
machine's root namespace as a coordinator reaches its servers."""
from __future__ import annotations

import time

import pytest

from base.procs import ProcessTracker
from base.ssh import CONNECT_TIMEOUT_S, SshError, SshServer
from emulator.local_sshd import sshd_on
from emulator.tunnels import local_servers
from tests.conftest import needs_root
from tests.sshd import kill_master, ssh_sessions_to

pytestmark = needs_root


@pytest.fixture
def servers(tmp_path, no_leftovers):
    """(servers, ssh options): two sshd servers, torn down on the way out."""
    with local_servers(2, reachable=True) as servers, sshd_on(servers, tmp_path) as options:
        yield servers, options


def test_every_command_runs_on_its_server_over_one_connection(servers):
    servers, options = servers
    tracker = ProcessTracker()
    remotes = [SshServer(f"root@{s.address}", options) for s in servers]
    try:
        for r in remotes:
            r.open(tracker)
        for s, r in zip(servers, remotes):
            for _ in range(5):
                addresses = r.run(["ip", "-4", "-o", "addr", "show"], 10).stdout
                assert f"inet {s.address}/24" in addresses
            assert ssh_sessions_to(s.address) == 1    # five commands, one TCP connection
        assert remotes[0].run(["sh", "-c", "exit 3"], 10, check=False).returncode == 3
        with pytest.raises(SshError, match=rf"^root@{servers[0].address}: false exited 1"):
            remotes[0].run(["false"], 10)
    finally:
        for r in remotes:
            r.close(tracker)
    assert not tracker.running()
    assert all(ssh_sessions_to(s.address) == 0 for s in servers)


def test_a_lost_connection_is_one_line_naming_its_server(servers):
    servers, options = servers
    tracker = ProcessTracker()
    lost, kept = (SshServer(f"root@{s.address}", options) for s in servers)
    try:
        lost.open(tracker)
        kept.open(tracker)
        kill_master(lost)
        with pytest.raises(SshError) as caught:
            lost.run(["true"], 10)
        assert str(caught.value) == f"root@{servers[0].address}: the ssh connection is closed"
        assert kept.run(["true"], 10).returncode == 0    # the other server is unaffected
    finally:
        lost.close(tracker)
        kept.close(tracker)
    assert not tracker.running()


def test_a_server_without_sshd_is_refused_in_one_line(servers):
    servers, options = servers
    tracker = ProcessTracker()
    nobody = SshServer("root@10.254.0.99", options)     # on the LAN, but no such host
    started = time.monotonic()
    with pytest.raises(SshError) as caught:
        nobody.open(tracker)
    assert time.monotonic() - started < CONNECT_TIMEOUT_S + 10
    assert str(caught.value).startswith("root@10.254.0.99: ") and "\n" not in str(caught.value)
    assert not tracker.running()
