"""The controller's entries in a switch's flow table: what they match on,
their priorities, and how one is added or changed."""
from __future__ import annotations

ETH_IPV4, ETH_ARP = 0x0800, 0x0806
PRIO_FLOW, PRIO_ROUTE, PRIO_ARP, PRIO_MISS = 300, 200, 100, 0


def send_flow_mod(dp, priority: int, match, actions, idle_timeout: int = 0,
                  modify: bool = False) -> None:
    """Add an entry; `modify`: change the actions of the entry with this
    exact match and priority instead (its counters stay)."""
    parser = dp.ofproto_parser
    inst = [parser.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, actions)] if actions else []
    command = dp.ofproto.OFPFC_MODIFY_STRICT if modify else dp.ofproto.OFPFC_ADD
    dp.send_msg(parser.OFPFlowMod(dp, command=command, priority=priority, match=match,
                                  instructions=inst, idle_timeout=idle_timeout))
