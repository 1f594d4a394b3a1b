#!/bin/sh
# Runs a command in a qemu guest with a stock Debian kernel: see guest/README.md
# or ./guest/run.sh --help. The logic is Python (standard library only) in
# this folder; it checks the input first, then installs the host tools it
# lacks (qemu, mmdebstrap, busybox-static, cpio) with apt-get.
# /usr/bin/python3 on purpose: the system Python, not a venv or pyenv one.
here=$(cd "$(dirname "$0")" && pwd)
exec env PYTHONPATH="$here/.." PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m guest "$@"
