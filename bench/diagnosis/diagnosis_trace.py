"""The kernel's own state of every data connection of a run, per host
namespace, every interval: bench/diagnosis/k8_diagnosis.py's sampler.

One pass per interval reads every host: one sock_diag dump of its TCP
sockets (tcp_info and the subflow's MPTCP token) and one of its MPTCP
sockets (mptcp_info and socket memory), over a netlink socket opened in the
host's namespace when the traffic starts (bench/diagnosis/diagnosis_kernel.py). No
process is started per sample; each dump is bounded by the socket's 2 s
timeout. Every host is a sender and a receiver, so one pass gives both
ends of every connection:

* sender subflows (tcp_info): window, ssthresh, RTT, RTO, backoff, CA
  state, in flight, not sent, retransmissions, bytes sent and acked, the
  busy / rwnd-limited / sndbuf-limited clocks, RTO count and time in RTO
  recovery, the peer's window;
* receiver subflows: bytes received, out-of-order packets, the window
  advertised;
* sender connections (mptcp_info): data written and not yet DATA_ACKed
  (write_seq - snd_una), bytes sent and acked at MPTCP level (so in flight
  and not yet sent on any subflow), MPTCP-level retransmissions, send
  buffer;
* receiver connections: in-order bytes delivered (goodput), receive memory
  held (in-order unread plus the out-of-order queue) against the receive
  buffer.

Rows are kept in typed arrays (8 bytes a value): FatTree(8) MPTCP-8 over
15 minutes at 2 s is about 60 MB.

Once, at `check_at_s`, the dumps are cross-checked against `ss -tinHM` in
`check_hosts` hosts (ss, dump, ss; a field that only grows is compared
where both ss reads agree): a decoding error in struct offsets would show
there.
"""
from __future__ import annotations

import time
from array import array

from base.procs import CommandError, run
from kernel import netlink as nl
from monitor.sampler import Sampler

import diagnosis_kernel as dk

SUB_SND = ("t_ms", "cwnd", "ssthresh", "rtt_us", "rttvar_us", "rto_us", "backoff", "ca_state",
           "unacked", "notsent", "lost", "retrans", "total_retrans", "bytes_sent", "bytes_retrans",
           "bytes_acked", "delivered", "busy_us", "rwnd_limited_us", "sndbuf_limited_us",
           "total_rto", "total_rto_recoveries", "total_rto_time_ms", "snd_wnd", "mss",
           "last_data_sent_ms", "last_ack_recv_ms")
SUB_RCV = ("t_ms", "bytes_received", "rcv_ooopack", "rcv_wnd", "last_data_recv_ms")
CONN_SND = ("t_ms", "pending", "bytes_sent", "bytes_acked", "bytes_retrans", "retransmits",
            "subflows", "wmem_queued", "sndbuf", "last_data_sent_ms", "last_ack_recv_ms", "flags")
CONN_RCV = ("t_ms", "bytes_received", "rmem_alloc", "rcvbuf", "drops", "rqueue", "last_data_recv_ms")
SS_TIMEOUT_S = 5
_LAYOUT = dk.tcp_layout(set(SUB_SND + SUB_RCV))
# The run-time cross-check compares fields that only grow (or never
# change): equal in two ss reads, they cannot have differed in between.
# A window or in-flight count can move and come back (seen: unacked 6
# against 5 and 5 at 20 Mb/s).
CHECK_TCP = ("token", "mss", "bytes_acked", "bytes_sent", "bytes_received", "delivered",
             "total_retrans")
CHECK_MPTCP = ("token", "write_seq", "snd_una", "rcv_nxt")


class Series:
    """Rows of fixed fields, flattened into one unsigned 64-bit array."""

    def __init__(self, fields: tuple[str, ...]):
        self.fields = fields
        self.data = array("Q")

    def add(self, t_ms: int, rec: dict, missing: set) -> None:
        row = [t_ms]
        for f in self.fields[1:]:
            v = rec.get(f)
            if v is None:
                missing.add(f)
                v = 0
            row.append(v & 0xFFFFFFFFFFFFFFFF)
        self.data.extend(row)

    def rows(self) -> list[list[int]]:
        n = len(self.fields)
        return [list(self.data[i:i + n]) for i in range(0, len(self.data), n)]

    def __len__(self) -> int:
        return len(self.data) // len(self.fields)


class KernelTrace(Sampler):
    """sock_diag state of the watched flows' data connections, both ends."""

    thread_name = "kernel-trace"

    def __init__(self, hosts: dict[str, int], interval_s: float, check_at_s: float | None = None,
                 check_hosts: int = 2, at_check=None):
        """`at_check(trace)`: called once in the sampling thread at
        `check_at_s`, after the ss cross-check (the benchmark walks the
        subflows' paths there, while the traffic runs)."""
        self._init_sampler(interval_s)
        self.hosts = dict(hosts)
        self.check_at_s, self.check_hosts, self.at_check = check_at_s, check_hosts, at_check
        self.flows: list = []
        self._socks: dict[str, nl.DumpSocket] = {}
        self._reset()

    def watch(self, flows) -> None:
        """The run's FlowEndpoints (index, src, dst, src_ip, client_port,
        dst_ip, server_port): their data connections are traced."""
        self.flows = list(flows)
        self._snd_of = {}
        self._rcv_of = {}
        for i, f in enumerate(self.flows):
            self._snd_of.setdefault(f.src, []).append(i)
            self._rcv_of.setdefault(f.dst, []).append(i)

    def _reset(self) -> None:
        self.snd_sub: dict[tuple[int, int], Series] = {}    # (flow, sender port) -> rows
        self.rcv_sub: dict[tuple[int, int], Series] = {}
        self.snd_conn: dict[int, Series] = {}
        self.rcv_conn: dict[int, Series] = {}
        self.missing: set[str] = set()
        self.passes, self.pass_s, self.fallbacks = 0, [], set()
        self.ss_check: dict | None = None

    def open(self) -> None:
        nl.open_dump_sockets(self._socks, self.hosts, nl.NETLINK_SOCK_DIAG)

    def close(self) -> None:
        nl.close_dump_sockets(self._socks)

    def _sample(self) -> None:
        started = time.monotonic()
        t_ms = int(self.now() * 1000)
        for host in self.hosts:
            if host not in self._snd_of and host not in self._rcv_of:
                continue
            try:
                tcp, msk = dk.read_host(self._socks[host], _LAYOUT)
            except OSError as exc:          # one host's dump timed out: the others still count
                self._error(OSError(f"{host}: {exc}"))
                continue
            self._keep(host, t_ms, tcp, msk)
        self.passes += 1
        self.pass_s.append(time.monotonic() - started)
        if self.check_at_s is not None and self.ss_check is None and self.now() >= self.check_at_s:
            self.ss_check = self.cross_check()
            if self.at_check is not None:
                self.at_check(self)

    def _keep(self, host: str, t_ms: int, tcp: list[dict], msk: list[dict]) -> None:
        by_token: dict[int, list[dict]] = {}
        for s in tcp:
            if "token" in s:
                by_token.setdefault(s["token"], []).append(s)
        by_ends = {(m["saddr"], m["sport"], m["daddr"], m["dport"]): m for m in msk}
        for i in self._snd_of.get(host, ()):
            f = self.flows[i]
            m = by_ends.get((f.src_ip, f.client_port, f.dst_ip, f.server_port))
            if m is None:
                continue
            if m.get("flags", 0) & dk.MPTCP_FALLBACK:
                self.fallbacks.add(i)
            m["pending"] = (m["write_seq"] - m["snd_una"]) % (1 << 64)
            self.snd_conn.setdefault(i, Series(CONN_SND)).add(t_ms, m, self.missing)
            for s in by_token.get(m["token"], ()):
                self.snd_sub.setdefault((i, s["sport"]), Series(SUB_SND)).add(t_ms, s, self.missing)
        for i in self._rcv_of.get(host, ()):
            f = self.flows[i]
            m = by_ends.get((f.dst_ip, f.server_port, f.src_ip, f.client_port))
            if m is None:
                continue
            self.rcv_conn.setdefault(i, Series(CONN_RCV)).add(t_ms, m, self.missing)
            for s in by_token.get(m["token"], ()):
                self.rcv_sub.setdefault((i, s["dport"]), Series(SUB_RCV)).add(t_ms, s, self.missing)

    def subflow_tuples(self) -> list[tuple[str, str, int, str, int]]:
        """(src host, saddr, sport, daddr, dport) of every sender subflow seen."""
        return [(self.flows[i].src, self.flows[i].src_ip, port, self.flows[i].dst_ip,
                 self.flows[i].server_port) for i, port in sorted(self.snd_sub)]

    def cross_check(self) -> dict:
        """ss, sock_diag, ss in a few hosts that send: fields ss printed alike
        both times, compared with the dump's (CHECK_TCP, CHECK_MPTCP)."""
        hosts = [h for h in self.hosts if h in self._snd_of][:self.check_hosts]
        compared, differ, unstable, errors = 0, [], 0, []
        for host in hosts:
            try:
                first = dk.parse_ss(run(["ss", "-tinHM"], SS_TIMEOUT_S, ns_pid=self.hosts[host]).stdout)
                tcp, msk = dk.read_host(self._socks[host])
                second = dk.parse_ss(run(["ss", "-tinHM"], SS_TIMEOUT_S, ns_pid=self.hosts[host]).stdout)
            except (CommandError, OSError) as exc:
                errors.append(f"{host}: {exc}")
                continue
            for diag, a, b, fields in ((tcp, first[0], second[0], CHECK_TCP),
                                       (msk, first[1], second[1], CHECK_MPTCP)):
                later = {_ends(r): r for r in b}
                stable = []
                for r in a:
                    other = later.get(_ends(r))
                    if other is None:
                        unstable += 1
                        continue
                    same = {f: r[f] for f in fields if f in r and other.get(f) == r[f]}
                    unstable += sum(1 for f in fields if f in r and f not in same)
                    stable.append({**{k: r[k] for k in ("saddr", "sport", "daddr", "dport")}, **same})
                compared += sum(len(r) - 4 for r in stable)
                differ += [f"{host} {d}" for d in dk.disagreements(diag, stable, fields)
                           if "not in" not in d]
        return {"at_s": round(self.now(), 1), "hosts": hosts, "fields_compared": compared,
                "fields_changed_between_ss_reads": unstable, "disagreements": differ[:20],
                "disagreement_count": len(differ), "errors": errors}


def _ends(r: dict) -> tuple:
    return r["saddr"], r["sport"], r["daddr"], r["dport"]


class TraceDuringRun:
    """The Sweep's `during_runs` hook around a KernelTrace: start() when the
    traffic starts, stop() when it ends (the network still up), returning
    the small record run.json keeps under `event`; `after_stop(trace)` is
    then called (the benchmark walks the subflows' paths there)."""

    def __init__(self, trace: KernelTrace, after_stop=None):
        self.trace = trace
        self.after_stop = after_stop
        self.result = None

    def start(self) -> None:
        self.trace.start()

    def stop(self) -> dict:
        self.trace.stop()
        t = self.trace
        record = {"what": "kernel trace (bench/diagnosis/k8_diagnosis.py)", "passes": t.passes,
                  "subflows_seen": len(t.snd_sub), "trace_errors": t.error_count,
                  "sampler_cpu_s": round(t.cpu_s, 2)}
        if self.after_stop is not None:
            try:
                self.result = self.after_stop(t)
            except Exception as exc:        # the run's own record must still be written
                record["after_trace_error"] = f"{type(exc).__name__}: {exc}"
        return record


def trace_record(trace: KernelTrace) -> dict:
    """Everything the trace holds, as plain data (JSON): per series its
    fields and rows; keys "flow:port" for subflows, "flow" for connections."""
    def series(d: dict) -> dict:
        return {(f"{k[0]}:{k[1]}" if isinstance(k, tuple) else str(k)): {"fields": v.fields, "rows": v.rows()}
                for k, v in sorted(d.items())}
    return {
        "interval_s": trace.interval_s,
        "flows": [{"index": i, "src": f.src, "dst": f.dst, "src_ip": f.src_ip, "dst_ip": f.dst_ip,
                   "client_port": f.client_port, "server_port": f.server_port}
                  for i, f in enumerate(trace.flows)],
        "snd_sub": series(trace.snd_sub), "rcv_sub": series(trace.rcv_sub),
        "snd_conn": series(trace.snd_conn), "rcv_conn": series(trace.rcv_conn),
        "fields_missing": sorted(trace.missing), "fallback_flows": sorted(trace.fallbacks),
        "passes": trace.passes, "pass_s_mean": (round(sum(trace.pass_s) / len(trace.pass_s), 4)
                                                if trace.pass_s else None),
        "pass_s_max": round(max(trace.pass_s), 4) if trace.pass_s else None,
        "sampler_cpu_s": round(trace.cpu_s, 3), "sampler_wall_s": round(trace.wall_s, 1),
        "sampler_errors": trace.errors, "sampler_error_count": trace.error_count,
        "ss_check": trace.ss_check,
    }
