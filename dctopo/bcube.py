"""BCube(n, k): hosts with one interface per level that relay between
levels, with the routes they and the switches need."""
from __future__ import annotations

from dctopo.base import DCTopo, Route, SourceRule, dpid


BCUBE_TABLE = 200           # + L: what a host sends itself from its level-L address
BCUBE_RELAY_TABLE = 210     # + L: what a host relays that started on level L
BCUBE_DETOUR_TABLE = 220    # + port: a switch member's detours
BCUBE_RULE_PRIORITY = 500


class BCube(DCTopo):
    """BCube(n, k) (Guo et al., SIGCOMM 2009), as the paper uses it (§4.3.1,
    Fig. 4-5, and its many-to-one table): n^(k+1) hosts, each with k+1
    interfaces, one per level; at each level n^k switches of n ports. A
    host's name spells its digits base n, highest level first (h0_3 in
    BCube(4,1) has digit 0 at level 1 and 3 at level 0); the level-l switch
    s{l}_{rest} joins the n hosts that differ only in digit l, on the port
    given by that digit.

    Hosts relay: a path corrects one digit per level it crosses. Each source
    interface starts its own path (BCube's k+1 parallel paths, BuildPathSet
    of Guo et al. §4.1): the first hop is always on the source's level-L
    interface. Where source and destination differ in digit L it corrects
    it; where they agree it is a detour to the level-L neighbour whose digit
    L is one higher (mod n), and digit L is corrected back last. Between,
    relays correct the other digits in the order L-1, ..., 0, k, ..., L+1,
    skipping digits already equal. So a neighbour that differs in one digit
    has one path of one hop and k of three: the paper's many-to-one case,
    where extra subflows take the long paths. `path_levels` gives the order,
    `relay_next_level` what a relay forwards on, `detour` the first relay.

    Routing (kernel-routing fabric only): a packet's source address says
    which level its path started on. A host routes what it sends itself by
    the source table of that level (rule `from 10.(L+1).0.0/16 iif lo` ->
    BCUBE_TABLE + L: every destination out on level L), and what it relays
    by the relay table (the same prefix from any other interface ->
    BCUBE_RELAY_TABLE + L, whose route to each host leaves on the level
    `relay_next_level` gives). A level-l switch sends each destination to
    the host on the port of the destination's digit l: the destination
    itself, or the relay that corrected digit l; and, by a rule per member
    on the source address (`switch_rules`), a member's detour to the member
    whose digit l is one higher.

      ===========  ===========  =================================
      node         name         address
      ===========  ===========  =================================
      host         h{digits}    10.(l+1).(i // 256).(i % 256) on
                                h..-eth{l}, i its index, l = level
      switch       s{l}_{rest}  router id 10.(100+l).(j // 256).(j % 256 + 1)
      ===========  ===========  =================================
    """

    def build(self, n: int = 4, k: int = 1):
        if n < 2 or k < 0 or n ** (k + 1) > 4096:
            raise ValueError(f"BCube({n}, {k}): n >= 2, k >= 0, at most 4096 hosts")
        self.n, self.k = n, k
        self.levels = k + 1
        hosts = n ** (k + 1)
        self.names = [self.host_name(i) for i in range(hosts)]
        for i, name in enumerate(self.names):
            self.addHost(name, role="host", rack=self.switch_name(i, 0)[1:])
        for level in range(self.levels):
            for j in range(n ** k):
                members = [i for i in range(hosts) if self._rest(i, level) == j]
                sw = self.addSwitch(self.switch_name(members[0], level), role=f"level{level}",
                                    dpid=dpid(1 + level, 0, j),
                                    router_id=f"10.{100 + level}.{j // 256}.{j % 256 + 1}")
                for i in members:
                    self.addLink(self.names[i], sw, port1=level, port2=self.digits(i)[level],
                                 params1={"ip": f"{self.address(i, level)}/32"})

    # -- digits and names ------------------------------------------------------
    def digits(self, i: int) -> list[int]:
        """Host i's digits base n, index = level (digits[0] is level 0)."""
        return [(i // self.n ** level) % self.n for level in range(self.levels)]

    def index(self, digits: list[int]) -> int:
        return sum(d * self.n ** level for level, d in enumerate(digits))

    def host_name(self, i: int) -> str:
        return "h" + "_".join(str(d) for d in reversed(self.digits(i)))

    def _rest(self, i: int, level: int) -> int:
        """Host i's digits without the one at `level`: which switch of that level."""
        d = self.digits(i)
        rest = d[:level] + d[level + 1:]
        return sum(x * self.n ** p for p, x in enumerate(rest))

    def switch_name(self, i: int, level: int) -> str:
        rest = [d for lv, d in enumerate(self.digits(i)) if lv != level]
        return f"s{level}_" + ("_".join(str(d) for d in reversed(rest)) or "0")

    def address(self, i: int, level: int) -> str:
        return f"10.{level + 1}.{i // 256}.{i % 256}"

    # -- paths -------------------------------------------------------------------
    def path_levels(self, src: int, dst: int, start: int) -> list[int]:
        """The levels a path from host src to host dst crosses, in order,
        when it leaves on src's level-`start` interface (class docstring)."""
        if src == dst:
            return []
        a, b = self.digits(src), self.digits(dst)
        between = [(start - s) % self.levels for s in range(1, self.levels)]
        return ([start] + [level for level in between if a[level] != b[level]]
                + ([start] if a[start] == b[start] else []))

    def relay_next_level(self, here: int, dst: int, start: int) -> int | None:
        """The level a relay `here` forwards on towards dst, on a path that
        started on level `start` (None: here is dst): the order L-1, ..., 0,
        k, ..., L+1, L, skipping equal digits. Every relay agrees with
        path_levels, since each correction leaves the later digits as they
        were, and digit L comes last only after a detour left it wrong."""
        a, b = self.digits(here), self.digits(dst)
        order = [(start - s) % self.levels for s in range(1, self.levels + 1)]
        return next((level for level in order if a[level] != b[level]), None)

    def detour(self, i: int, level: int) -> int:
        """The level-`level` neighbour of host i a detour goes through: its
        digit at that level one higher, mod n."""
        d = self.digits(i)
        d[level] = (d[level] + 1) % self.n
        return self.index(d)

    def walk(self, src: int, dst: int, start: int) -> list[int]:
        """The hosts a packet visits after src, dst last, from src's
        level-`start` interface: what the routes below make of path_levels."""
        here, hosts = src, []
        level: int | None = start if src != dst else None
        while level is not None:
            d = self.digits(here)
            d[level] = self.digits(dst)[level] if d[level] != self.digits(dst)[level] \
                else (d[level] + 1) % self.n
            here = self.index(d)
            hosts.append(here)
            level = self.relay_next_level(here, dst, start)
        return hosts

    # -- routing ---------------------------------------------------------------
    hosts_forward = True

    def source_rules(self, host: str) -> list[SourceRule]:
        own = [SourceRule(f"10.{level + 1}.0.0/16", BCUBE_TABLE + level,
                          BCUBE_RULE_PRIORITY + level, iif="lo") for level in range(self.levels)]
        relayed = [SourceRule(f"10.{level + 1}.0.0/16", BCUBE_RELAY_TABLE + level,
                              BCUBE_RULE_PRIORITY + self.levels + level) for level in range(self.levels)]
        return own + relayed

    def host_routes(self, host: str) -> list[Route]:
        i = self.names.index(host)
        routes = []
        for start in range(self.levels):
            for j in range(len(self.names)):
                if j == i:
                    continue
                for table, level in ((BCUBE_TABLE + start, start),
                                     (BCUBE_RELAY_TABLE + start, self.relay_next_level(i, j, start))):
                    via = self.nodeInfo(self.switch_name(i, level))["router_id"]
                    routes += [Route(self.address(j, lv), level, via, table) for lv in range(self.levels)]
        return routes

    def switch_routes(self, switch: str) -> list[Route]:
        level = self._switch_level(switch)
        on_port = {intf.port: self.names.index(intf.peer) for intf in self.interfaces(switch)}
        routes = []
        for j in range(len(self.names)):
            port = self.digits(j)[level]
            relay = on_port[port]
            via = None if relay == j else self.address(relay, level)
            routes += [Route(self.address(j, lv), port, via) for lv in range(self.levels)]
        # Detours: from member i's level address, to every other host that
        # agrees with i in this digit, through the member one digit higher.
        for port, i in on_port.items():
            c = self.detour(i, level)
            for j in range(len(self.names)):
                if j != i and self.digits(j)[level] == port:
                    routes += [Route(self.address(j, lv), self.digits(c)[level], self.address(c, level),
                                     BCUBE_DETOUR_TABLE + port) for lv in range(self.levels)]
        return routes

    def switch_rules(self, switch: str) -> list[SourceRule]:
        level = self._switch_level(switch)
        return [SourceRule(f"{self.address(self.names.index(intf.peer), level)}/32",
                           BCUBE_DETOUR_TABLE + intf.port, BCUBE_RULE_PRIORITY + intf.port)
                for intf in self.interfaces(switch)]

    @staticmethod
    def _switch_level(switch: str) -> int:
        return int(switch[1:].split("_")[0])

    def neighbours(self, i: int) -> list[int]:
        """Hosts sharing a switch with host i, every level (the paper's
        many-to-one: each host reads from these, 12 in BCube(4,3))."""
        out = []
        for level in range(self.levels):
            d = self.digits(i)
            for v in range(self.n):
                if v != d[level]:
                    out.append(self.index(d[:level] + [v] + d[level + 1:]))
        return out
