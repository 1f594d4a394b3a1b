"""A coordinator in a process of its own, for the tests that Ctrl-C or kill
it: builds FatTree(4) over the servers named in argv[1] (JSON: remotes, ssh
options, placement), prints "built", and waits to be stopped."""
import json
import sys
import time

from emulator.cluster import Cluster, Remote

if __name__ == "__main__":
    given = json.loads(sys.argv[1])
    remotes = [Remote(**r) for r in given["remotes"]]
    with Cluster(remotes, tuple(given["options"])) as cluster:
        cluster.build(given["spec"], given["where"])
        print("built", flush=True)
        time.sleep(300)
