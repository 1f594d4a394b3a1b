"""The check that a long-flow run's MPTCP flows got their subflows, allowing
only what the kernel itself says: a flow that fell back to plain TCP in its
handshake (tests/test_mptcp_pm.py shows how queue losses at the start do it)."""
from __future__ import annotations

# A connection's handshake fell back: the server got the last ACK without
# MP_CAPABLE, the client got the SYN-ACK without it, or sent a SYN without it.
FALLBACK_COUNTERS = ("MPTcpExtMPCapableFallbackACK", "MPTcpExtMPCapableFallbackSYNACK",
                     "MPTcpExtMPCapableSYNTXDisabled")


def assert_subflows(record: dict, wanted: int) -> None:
    """Every flow of `record` has `wanted` subflows, or fell back to TCP;
    no more flows fell back than the kernel's counters count, and the run
    is flagged for it."""
    fell_back = [f for f in record["flows"] if f.get("fell_back_to_tcp")]
    short = [(f["src"], f["dst"], f["subflows_established"], f["error"]) for f in record["flows"]
             if f["subflows_established"] != wanted and not f.get("fell_back_to_tcp")]
    counted = sum(record["kernel_counters"].get(name, 0) for name in FALLBACK_COUNTERS)
    told = f"short of subflows: {short}; fell back: {len(fell_back)}, kernel's count {counted}; " \
           f"flags {record['flags']}"
    assert not short and len(fell_back) <= counted, told
    assert bool(fell_back) == ("mptcp_fallback" in record["flags"]), told
