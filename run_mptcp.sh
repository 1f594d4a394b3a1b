#!/usr/bin/env bash
# sudo ./run_mptcp.sh K [WORKLOAD|all] [options]   the FatTree sweep (paper Fig. 2-3)
# sudo ./run_mptcp.sh NAME [options]               any other experiment
# ./run_mptcp.sh list                               every experiment, its runs and time here
# ./run_mptcp.sh NAME --plan                        what NAME would run and cost (no root)
# ./run_mptcp.sh flowlevel|model [options]          computed, no network: no root once set up
# ./run_mptcp.sh [NAME] --help                      its options
# Checks the input, installs what is missing, runs the experiment, draws the
# figures. Bad input: one line on stderr, exit status 2, nothing started.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cli=(-m harness.cli)
system_python=/usr/bin/python3

# `run_mptcp.sh exec NODE -- CMD`: a command in a node of the running network
# (harness/exec_node.py); it takes no lock and installs nothing.
if [ "${1:-}" = exec ]; then
  shift
  exec env PYTHONPATH="$here" "$system_python" -m harness.exec_node "$@"
fi

# Questions that build nothing are answered by the system Python, without root;
# so is no argument at all (the usage, in one line).
query=0
[ $# -eq 0 ] && query=1
[ "${1:-}" = list ] && query=1
for a in "$@"; do
  case "$a" in -h|--help|--plan) query=1 ;; esac
done
if [ "$query" -eq 1 ]; then
  exec env PYTHONPATH="$here" "$system_python" "${cli[@]}" "$@"
fi
# Reject bad arguments before installing anything (stdlib-only check); the
# check also says whether the experiment builds a network ("network") or only
# computes ("computed"), which needs no root once the .venv is set up.
kind=network
if [ -x "$system_python" ]; then
  kind=$(PYTHONPATH="$here" "$system_python" "${cli[@]}" --validate-only "$@") || exit $?
fi
venv_python="$here/.venv/bin/python"
if [ "$(id -u)" -ne 0 ]; then
  if [ "$kind" != computed ]; then
    echo "run_mptcp.sh: error: must be run as root (it builds network namespaces): try sudo" >&2
    exit 2
  fi
  if ! "$venv_python" -c "import numpy, matplotlib" 2>/dev/null; then
    echo "run_mptcp.sh: error: not set up yet: run \`sudo ./bootstrap.sh\` once, then this command again (no root)" >&2
    exit 2
  fi
else
  "$here/bootstrap.sh" || { echo "run_mptcp.sh: error: set-up failed (see above)" >&2; exit 1; }
fi
exec env PYTHONPATH="$here" PYTHONUNBUFFERED=1 "$venv_python" "${cli[@]}" "$@"
