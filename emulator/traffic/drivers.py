"""The traffic drivers by name (experiments/config.py's DRIVERS), one interface:
endpoints() gives a run's flows their ports, run() sends them and returns
what each receiver got."""
from emulator.traffic.socket_driver import SocketDriver
from emulator.traffic.iperf_driver import IperfDriver

DRIVERS = {cls.name: cls for cls in (IperfDriver, SocketDriver)}
