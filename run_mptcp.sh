#!/usr/bin/env bash
# sudo ./run_mptcp.sh K [WORKLOAD|all] [options]   (./run_mptcp.sh --help)
# sudo ./run_mptcp.sh wifi3g [options]              (./run_mptcp.sh wifi3g --help)
# sudo ./run_mptcp.sh dhft [options]                (./run_mptcp.sh dhft --help)
# sudo ./run_mptcp.sh linkfailure [options]         (./run_mptcp.sh linkfailure --help)
# sudo ./run_mptcp.sh oversub [options]             (./run_mptcp.sh oversub --help)
# sudo ./run_mptcp.sh topologies [options]          (./run_mptcp.sh topologies --help)
# sudo ./run_mptcp.sh algorithms|hotspot [options]  (./run_mptcp.sh algorithms --help)
# sudo ./run_mptcp.sh model [options]               (./run_mptcp.sh model --help)
# Checks the input, installs what is missing, runs the experiment, draws the
# figures. Bad input: one line on stderr, exit status 2, nothing started.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cli=(-m harness.cli)

for a in "$@"; do
  case "$a" in -h|--help)
    exec env PYTHONPATH="$here" /usr/bin/python3 "${cli[@]}" "$@" ;;
  esac
done
# Reject bad arguments before installing anything (stdlib-only check).
if [ -x /usr/bin/python3 ]; then
  PYTHONPATH="$here" /usr/bin/python3 "${cli[@]}" --validate-only "$@" || exit $?
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "run_mptcp.sh: error: must be run as root (it builds network namespaces): try sudo" >&2
  exit 2
fi
"$here/bootstrap.sh" || { echo "run_mptcp.sh: error: set-up failed (see above)" >&2; exit 1; }
exec env PYTHONPATH="$here" PYTHONUNBUFFERED=1 "$here/.venv/bin/python" "${cli[@]}" "$@"
