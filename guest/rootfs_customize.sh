#!/bin/sh
# mmdebstrap customize hook: runs on the host with $1 = the root filesystem
# being built (mmdebstrap has mounted its /proc, /sys, /dev and copied the
# host's resolv.conf in), $2 = the folder holding requirements*.txt.
# The guest has no network, so the harness's Python packages are installed
# now, into a venv made with --system-site-packages so Debian's Mininet stays
# importable, exactly as bootstrap.sh makes .venv on a host.
set -eu
root=$1
recipe=$2
venv=/opt/harness-venv

mkdir -p "$root/tmp/harness-recipe"
cp "$recipe"/requirements.txt "$recipe"/requirements-dev.txt "$root/tmp/harness-recipe/"
# pip runs in the chroot but reaches PyPI as the host does: through the
# host's CA bundle (a host behind a TLS-inspecting proxy trusts its CA only
# there; the chroot's ca-certificates does not know it), its proxy and index
# settings; host paths in PIP_* (PIP_CERT, PIP_FIND_LINKS) would not resolve
# in the chroot, hence the clean environment.
for ca in "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}" \
          /etc/ssl/certs/ca-certificates.crt; do
    [ -n "$ca" ] && [ -f "$ca" ] && break
done
cp "$ca" "$root/tmp/harness-recipe/host-ca.crt"
pass=""
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY \
         PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_DEFAULT_TIMEOUT; do
    eval "val=\${$v:-}"
    [ -n "$val" ] && pass="$pass $v=$val"
done
chroot "$root" /usr/bin/python3 -m venv --system-site-packages "$venv"
# shellcheck disable=SC2086  # $pass is a list of NAME=value words
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 $pass \
    "$venv/bin/pip" install -q --no-cache-dir --disable-pip-version-check \
    --cert /tmp/harness-recipe/host-ca.crt \
    -r /tmp/harness-recipe/requirements.txt -r /tmp/harness-recipe/requirements-dev.txt
rm -rf "$root/tmp/harness-recipe"
# matplotlib's font cache (in /root/.cache/matplotlib), built now: the guest's
# overlay is fresh at every boot, so each run drawing figures built it again,
# at full emulation's pace (part of the 34 s before the first figure of the
# main command in a Debian 13 guest, 2026-11-26).
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    "$venv/bin/python" -c "import matplotlib.font_manager"

# Nothing from the build host should be in the image: the guest has no
# network, and a stale resolver is misleading.
echo "harness-guest" >"$root/etc/hostname"
echo "127.0.0.1 localhost harness-guest" >"$root/etc/hosts"
: >"$root/etc/resolv.conf"
