"""The fabrics a sweep can be built on, by the name `--fabric` takes, and
which one a run gets when it does not say."""
from controller.ovs import kernel_datapath_available
from harness.fabric_l3 import L3Fabric
from harness.fabric_openflow import OpenFlowFabric, ReactiveOpenFlowFabric

FABRICS = {cls.name: cls for cls in (L3Fabric, OpenFlowFabric, ReactiveOpenFlowFabric)}

# Why the OpenFlow fabric is not the default without the kernel datapath:
# measured on this platform by bench/fabric_compare.py (README, "Fabrics").
USERSPACE_FALLBACK = ("no openvswitch kernel module here, and Open vSwitch's userspace "
                      "datapath cannot carry FatTree(4) at the fidelity target "
                      "(bench/fabric_compare.py); --fabric openflow to use it anyway")


def default_fabric() -> tuple[str, str]:
    """(fabric, why): `openflow`, RipL-POX's fabric, where Open vSwitch can
    forward in the kernel; `l3` (kernel routing, the same ECMP hashing)
    where it cannot."""
    if kernel_datapath_available():
        return "openflow", "the openvswitch kernel module is available"
    return "l3", USERSPACE_FALLBACK
