#!/usr/bin/env bash
# Installs what the harness needs, and nothing twice: Debian packages that are
# missing, a virtual environment made from the system Python (so that Debian's
# Mininet is importable), the pinned Python packages, and the coupled
# congestion control (kernel/bpf: BPF objects and their loader, rebuilt by make
# only when a source or the running kernel's BTF changed; not built on a kernel
# that cannot load them).
#   bootstrap.sh          what a run needs
#   bootstrap.sh --dev    and what the tests need
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# One bootstrap at a time: two at once would rebuild .venv under each other.
# The kernel drops the lock when its holder exits, however it exits.
exec 9>/run/mptcp-dc-harness-bootstrap.lock
if ! flock -n 9; then
  echo "bootstrap: another bootstrap is running; waiting for it (at most 30 minutes)"
  flock -w 1800 9 || { echo "bootstrap: the other bootstrap did not finish in 30 minutes" >&2; exit 1; }
fi

apt_packages=(mininet openvswitch-switch iperf3 mptcpd ethtool iproute2 procps iptables
              iputils-ping tcpdump python3 python3-venv openssh-client
              clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev make gcc libc6-dev)
requirements=("$here/requirements.txt")
# The tests' servers run sshd in namespaces (tests/sshd.py).
[ "${1:-}" = "--dev" ] && requirements+=("$here/requirements-dev.txt") && apt_packages+=(openssh-server)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  # 9>&-: a service the packages start must not inherit, and so keep, the lock.
  if ! { timeout 600 apt-get update -qq && timeout 1200 apt-get install -y -qq "${missing[@]}"; } >"$log" 2>&1 9>&-; then
    tail -20 "$log" >&2; rm -f "$log"
    echo "bootstrap: apt-get failed" >&2; exit 1
  fi
  rm -f "$log"
fi

venv="$here/.venv"
if ! "$venv/bin/python" -c "import mininet.node" 2>/dev/null; then
  echo "bootstrap: creating $venv from /usr/bin/python3"
  rm -rf "$venv"
  timeout 300 /usr/bin/python3 -m venv --system-site-packages "$venv" 9>&-
fi

# One stamp per requirements file, so a run and a test run do not undo each
# other's check.
for r in "${requirements[@]}"; do
  stamp_file="$venv/.stamp-$(basename "$r")"
  stamp=$(sha256sum "$r" | cut -c1-16)
  if [ "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]; then
    echo "bootstrap: installing $(basename "$r") into $venv"
    timeout 1200 "$venv/bin/pip" install -q --disable-pip-version-check -r "$r" 9>&-
    echo "$stamp" >"$stamp_file"
  fi
done

# The modelled fabric's engine (engine/, C11 and libc): make rebuilds it only
# when a source changed.
if ! out=$(timeout 300 make -s -C "$here/engine" 2>&1 9>&-); then
  echo "$out" | tail -20 >&2
  echo "bootstrap: building engine/ (the modelled fabric) failed" >&2; exit 1
fi

# kernel/bpf only where the kernel can load it: the coupled algorithms need the
# bpf_rdonly_cast kfunc (Linux 6.2+), and without it --cc lia is refused before
# anything starts (every run says so in its cc note). On Debian 12's 6.1 the
# build would only cost time: 55 s of make in a guest under full emulation.
# The same check as the harness's (experiments/config/common.py).
loadable=0
PYTHONPATH="$here" timeout 60 "$venv/bin/python" -c 'import sys
from experiments.config.common import coupled_cc_supported
sys.exit(0 if coupled_cc_supported() else 3)' 9>&- || loadable=$?
case $loadable in
  0) if ! out=$(timeout 300 make -s -C "$here/kernel/bpf" 2>&1 9>&-); then
       echo "$out" | tail -20 >&2
       echo "bootstrap: building kernel/bpf (coupled congestion control) failed" >&2; exit 1
     fi ;;
  3) ;;
  *) echo "bootstrap: could not check the kernel's BTF for the coupled congestion control (status $loadable)" >&2
     exit 1 ;;
esac
