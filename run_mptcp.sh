#!/usr/bin/env bash
# sudo ./run_mptcp.sh K [WORKLOAD|all] [options]   the FatTree sweep (paper Fig. 2-3)
# sudo ./run_mptcp.sh NAME [options]               any other experiment
# ./run_mptcp.sh list                               every experiment, its runs and time here
# ./run_mptcp.sh NAME --plan                        what NAME would run and cost (no root)
# ./run_mptcp.sh [NAME] --help                      its options
# Checks the input, installs what is missing, runs the experiment, draws the
# figures. Bad input: one line on stderr, exit status 2, nothing started.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cli=(-m harness.cli)
system_python=/usr/bin/python3

# Questions that build nothing are answered by the system Python, without root.
query=0
[ "${1:-}" = list ] && query=1
for a in "$@"; do
  case "$a" in -h|--help|--plan) query=1 ;; esac
done
if [ "$query" -eq 1 ]; then
  exec env PYTHONPATH="$here" "$system_python" "${cli[@]}" "$@"
fi
# Reject bad arguments before installing anything (stdlib-only check).
if [ -x "$system_python" ]; then
  PYTHONPATH="$here" "$system_python" "${cli[@]}" --validate-only "$@" || exit $?
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "run_mptcp.sh: error: must be run as root (it builds network namespaces): try sudo" >&2
  exit 2
fi
"$here/bootstrap.sh" || { echo "run_mptcp.sh: error: set-up failed (see above)" >&2; exit 1; }
exec env PYTHONPATH="$here" PYTHONUNBUFFERED=1 "$here/.venv/bin/python" "${cli[@]}" "$@"
