"""A seeded 5-tuple hash that picks one of N equal-cost paths or ports.

Stable across processes and machines (keyed BLAKE2b, not Python's `hash()`,
which is salted per process), so a controller restart or a second controller
maps every flow to the same path. The seed is the hash key: switches with
different seeds make independent choices for the same flow, which avoids the
polarization of every tier picking the same index (the kernel fabric does
the same with a per-router `fib_multipath_hash_seed`, emulator/fabrics/l3.py).
"""
from __future__ import annotations

import hashlib
import ipaddress

# Protocols whose headers carry ports; for the rest (ICMP, ...) the hash
# covers addresses and protocol only, as fib_multipath_hash does.
PORTED_PROTOCOLS = frozenset({6, 17, 132})   # TCP, UDP, SCTP
SEED_BYTES = 8


def flow_key(src_ip: str, dst_ip: str, proto: int,
             src_port: int | None = None, dst_port: int | None = None) -> bytes:
    """The bytes hashed for a flow: packed addresses, protocol and, for
    ported protocols, both ports (so ICMP ignores any ports passed)."""
    key = ipaddress.ip_address(src_ip).packed + ipaddress.ip_address(dst_ip).packed
    key += proto.to_bytes(1, "big")
    if proto in PORTED_PROTOCOLS:
        if src_port is None or dst_port is None:
            raise ValueError(f"protocol {proto} needs source and destination ports")
        key += src_port.to_bytes(2, "big") + dst_port.to_bytes(2, "big")
    return key


def flow_hash(key: bytes, seed: int = 0) -> int:
    """A 64-bit hash of `key` under `seed` (0 <= seed < 2**64)."""
    digest = hashlib.blake2b(key, digest_size=8, key=seed.to_bytes(SEED_BYTES, "big"))
    return int.from_bytes(digest.digest(), "big")


def ecmp_index(n_paths: int, src_ip: str, dst_ip: str, proto: int,
               src_port: int | None = None, dst_port: int | None = None,
               seed: int = 0) -> int:
    """Which of `n_paths` a flow takes, in 0..n_paths-1. The modulo bias of
    a 64-bit hash over a handful of paths is negligible."""
    if n_paths < 1:
        raise ValueError(f"need at least one path, got {n_paths}")
    return flow_hash(flow_key(src_ip, dst_ip, proto, src_port, dst_port), seed) % n_paths


def switch_seed(seed: int, switch: str) -> int:
    """A per-switch seed derived from a run's seed, so every switch hashes
    independently yet reproducibly (same derivation as the kernel fabric's
    per-router seed, widened to 64 bits)."""
    digest = hashlib.sha256(f"{seed}:{switch}".encode()).digest()
    return int.from_bytes(digest[:SEED_BYTES], "big")
