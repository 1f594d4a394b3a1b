"""The fabrics a sweep can be built on, by the name `--fabric` takes (which
one a run gets when it does not say: experiments.config.default_fabric)."""
from emulator.fabrics.l3 import L3Fabric
from emulator.fabrics.model import ModelFabric
from emulator.fabrics.openflow import OpenFlowFabric, ReactiveOpenFlowFabric

FABRICS = {cls.name: cls for cls in (L3Fabric, OpenFlowFabric, ReactiveOpenFlowFabric, ModelFabric)}
