"""The emulator: a topology built into namespaces on a fabric (fabrics/),
its links shaped (links.py, delayline.py), every host made ready for TCP and
MPTCP (network.py), and traffic driven through it (traffic/). It knows no
experiment: experiments/ is built on it."""
