"""`python -m controller SPEC PORT`: run the ECMP controller (controller/app.py)
listening for switches on PORT of every address of the namespace it is
started in (its loopback, and the fabric's management links).

Started by the openflow fabric (its own PID, stopped by PID with SIGTERM);
its log goes to standard error, which the fabric writes to the results.
"""
from __future__ import annotations

import logging
import os
import signal
import sys


def main(argv: list[str]) -> int:
    spec, port = argv
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # Imported here: os-ken reads its configuration at import time.
    from os_ken import cfg
    from os_ken.base.app_manager import AppManager
    import controller.app  # noqa: F401  (registers --ecmp-spec)
    # controller.app imports dctopo, which imports Mininet, whose mininet.log
    # makes every logger created afterwards a MininetLogger at level 25:
    # this app's INFO lines (switches connecting, SIGTERM) were dropped.
    logging.setLoggerClass(logging.Logger)

    cfg.CONF(args=[f"--ofp-tcp-listen-port={port}", "--ofp-listen-host=0.0.0.0",
                   f"--ecmp-spec={spec}"], project="os_ken")

    def on_term(_sig, _frame):
        # Nothing to flush (the status file is replaced atomically), and
        # os-ken's shutdown path fails with native threads: leave at once.
        logging.getLogger("controller").info("stopped by SIGTERM")
        logging.shutdown()
        os._exit(0)
    signal.signal(signal.SIGTERM, on_term)
    AppManager.run_apps(["controller.app"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
