"""The traffic drivers by name (harness/config.py's DRIVERS), one interface:
endpoints() gives a run's flows their ports, run() sends them and returns
what each receiver got."""
from harness.socket_driver import SocketDriver
from harness.traffic import IperfDriver

DRIVERS = {cls.name: cls for cls in (IperfDriver, SocketDriver)}
