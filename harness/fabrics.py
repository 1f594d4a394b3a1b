"""The fabrics a sweep can be built on, by the name `--fabric` takes."""
from harness.fabric_l3 import L3Fabric

FABRICS = {cls.name: cls for cls in (L3Fabric,)}
