"""A guest has no network: every Debian package bootstrap.sh installs must be
in the guests' root filesystem (guest/guests.py), or bootstrap there fails."""
from __future__ import annotations

import re

from guest.guests import BOOTSTRAP_PACKAGES
from tests.conftest import ROOT


def test_the_guests_carry_every_package_bootstrap_installs():
    text = (ROOT / "bootstrap.sh").read_text()
    listed = re.search(r"apt_packages=\(([^)]*)\)", text).group(1).split()
    dev = re.search(r"apt_packages\+=\(([^)]*)\)", text).group(1).split()
    missing = (set(listed) | set(dev)) - set(BOOTSTRAP_PACKAGES)
    assert not missing, f"bootstrap.sh installs {sorted(missing)}, which the guests lack"
