#!/usr/bin/env bash
# sudo ./run_tests.sh [pytest arguments]
# Installs what is missing (as run_mptcp.sh does, plus pytest) and runs the
# suite: unit tests and integration tests that build real networks.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "run_tests.sh: error: must be run as root (the tests build network namespaces): try sudo" >&2
  exit 2
fi
"$here/bootstrap.sh" --dev || { echo "run_tests.sh: error: set-up failed (see above)" >&2; exit 1; }
cd "$here"
# A hang guard, not a speed target: the host suite takes 1100-1400 s on
# this machine class (clean-clone CI; docs/development.md); the guests run
# the guest-marked subset.
# The whole suite unless the arguments name what to run (a path, or a test
# id path::name): `./run_tests.sh tests/test_lock.py` runs that file only. A
# path given as an option's value (`--deselect tests/x.py`) names nothing.
targets=(tests)
prev=""
for arg in "$@"; do
  case "$prev" in
    --deselect|--ignore|--ignore-glob|-k|-m|-p|-c|-o|--rootdir|--confcutdir) ;;
    *) case "$arg" in -*) ;; *) [ -e "${arg%%::*}" ] && targets=() ;; esac ;;
  esac
  prev=$arg
done
exec timeout 2400 "$here/.venv/bin/python" -m pytest -q -p no:cacheprovider "$@" "${targets[@]}"
