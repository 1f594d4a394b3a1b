"""The tracepoint watches (monitor/cwnd_watch.py): their trace lines
parsed, and on this kernel a transfer over loopback seen by the huge-window
watch through a low threshold and by the state-change watch, with nothing
of either left afterwards."""
from __future__ import annotations

import socket
import threading
from pathlib import Path

from monitor.cwnd_watch import HugeWindowWatch, StateChangeWatch, mounted_tracefs, parse_line
from tests.conftest import needs_root

LINE = ("          iperf3-1234    [001] ..s1.  1234.567890: tcp_probe: family=AF_INET "
        "src=10.0.0.2:5201 dest=10.0.1.2:40000 mark=0x0 data_len=0 snd_nxt=0x1234 snd_una=0x1200 "
        "snd_cwnd=667073280 ssthresh=2147483647 snd_wnd=65535 srtt=23 rcv_wnd=65535 sock_cookie=2a")


STATE_LINE = ("          iperf3-7585    [001] ..s2.  1221.900711: tcp_cong_state_set: family=AF_INET "
              "sport=5201 dport=32883 saddr=10.3.1.3 daddr=10.0.0.2 saddrv6=::ffff:10.3.1.3 "
              "daddrv6=::ffff:10.0.0.2 cong_state=3")


def test_a_trace_line_is_parsed():
    got = parse_line(LINE)
    assert got["t_s"] == 1234.56789 and got["src"] == "10.0.0.2:5201" and got["event"] == "tcp_probe"
    assert (got["snd_cwnd"], got["ssthresh"], got["data_len"]) == (667073280, 0x7FFFFFFF, 0)


def test_a_state_change_line_is_parsed():
    got = parse_line(STATE_LINE)
    assert got["event"] == "tcp_cong_state_set" and got["t_s"] == 1221.900711
    assert (got["saddr"], got["daddr"], got["cong_state"]) == ("10.3.1.3", "10.0.0.2", 3)


def _transfer(nbytes: int) -> int:
    """nbytes over loopback; returns the sender's local port."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    got = []

    def serve():
        conn, _ = listener.accept()
        with conn:
            while data := conn.recv(65536):
                got.append(len(data))
    server = threading.Thread(target=serve)
    server.start()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(b"x" * nbytes)
    server.join(timeout=10)
    listener.close()
    assert sum(got) == nbytes
    return port


@needs_root
def test_the_watch_sees_windows_above_its_threshold_and_leaves_nothing():
    mounted_before = mounted_tracefs()
    watch = HugeWindowWatch(threshold=4)
    watch.start()
    try:
        port = _transfer(4 << 20)
    finally:
        events = watch.stop()
    # Segments received by either end while its window was above 4: the
    # sender's ACKs at least (initial window 10).
    ours = [e for e in events if e.get("dest", "").endswith(f":{port}") or e.get("src", "").endswith(f":{port}")]
    assert ours and all(e["snd_cwnd"] > 4 for e in ours), events[:3]
    assert watch.instance is None and watch.our_mount is None
    assert mounted_tracefs() == mounted_before
    assert "mptcp-dc-tracefs-" not in Path("/proc/mounts").read_text()


@needs_root
def test_the_state_watch_sees_a_new_connection_open_and_leaves_nothing():
    mounted_before = mounted_tracefs()
    watch = StateChangeWatch()
    watch.start()
    try:
        port = _transfer(1 << 16)
    finally:
        events = watch.stop()
    # The accepted socket is put into Open as it is created (tcp_ca_openreq_child).
    ours = [e for e in events if e.get("sport") == str(port) and e.get("saddr") == "127.0.0.1"]
    assert ours and all(e["cong_state"] == 0 for e in ours), events[:3]
    assert watch.instance is None and mounted_tracefs() == mounted_before
