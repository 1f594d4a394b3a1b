"""BCube(n, k): hosts with one interface per level that relay between
levels, with the routes they and the switches need."""
from __future__ import annotations

from dctopo.base import DCTopo, Route, SourceRule, dpid


BCUBE_TABLE = 200
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
    interface starts its own path (BCube's k+1 parallel paths): from the
    level-L interface the digits are corrected in the order L, L-1, ..., 0,
    k, ..., L+1, skipping digits already equal. `path_levels` gives that
    order; `relay_next_level` what a host on the way forwards on.

    Routing (kernel-routing fabric only): a packet's source address says
    which level its path started on, so every host routes by it (rule
    `from 10.(L+1).0.0/16` -> table BCUBE_TABLE + L, whose route to each
    other host's addresses leaves on the level `relay_next_level` gives, to
    that level's switch). A level-l switch sends each destination to the
    host on the port of the destination's digit l: the destination itself,
    or the relay that corrected digit l.

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
        when it leaves on src's level-`start` interface."""
        a, b = self.digits(src), self.digits(dst)
        order = [(start - s) % self.levels for s in range(self.levels)]
        return [level for level in order if a[level] != b[level]]

    def relay_next_level(self, here: int, dst: int, start: int) -> int | None:
        """On a path that started on level `start`, the level host `here`
        forwards towards dst on (None: here is dst). Every host on the path
        agrees with path_levels, since each correction leaves the later
        digits as they were."""
        levels = self.path_levels(here, dst, start)
        return levels[0] if levels else None

    # -- routing ---------------------------------------------------------------
    hosts_forward = True

    def source_rules(self, host: str) -> list[SourceRule]:
        return [SourceRule(f"10.{level + 1}.0.0/16", BCUBE_TABLE + level, BCUBE_RULE_PRIORITY + level)
                for level in range(self.levels)]

    def host_routes(self, host: str) -> list[Route]:
        i = self.names.index(host)
        routes = []
        for start in range(self.levels):
            for j in range(len(self.names)):
                if j == i:
                    continue
                level = self.relay_next_level(i, j, start)
                via = self.nodeInfo(self.switch_name(i, level))["router_id"]
                routes += [Route(self.address(j, lv), level, via, BCUBE_TABLE + start)
                           for lv in range(self.levels)]
        return routes

    def switch_routes(self, switch: str) -> list[Route]:
        level = int(switch[1:].split("_")[0])
        on_port = {intf.port: self.names.index(intf.peer) for intf in self.interfaces(switch)}
        routes = []
        for j in range(len(self.names)):
            port = self.digits(j)[level]
            relay = on_port[port]
            via = None if relay == j else self.address(relay, level)
            routes += [Route(self.address(j, lv), port, via) for lv in range(self.levels)]
        return routes

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
