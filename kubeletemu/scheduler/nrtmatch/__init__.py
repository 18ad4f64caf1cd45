"""scheduler-plugins' NodeResourceTopologyMatch (``pkg/noderesourcetopology``) Filter and Score, exact to
kubernetes-sigs/scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``
(``shared/spec/scheduler-side.md`` §1)."""

from kubeletemu.scheduler.nrtcache.interface import TopologyNotFresh
from kubeletemu.scheduler.nrtmatch.args import NodeResourceTopologyMatchArgs, parse_args
from kubeletemu.scheduler.nrtmatch.model import (
    NodeResourceTopologyMatch,
    PassthroughTopology,
    TopologySource,
)
from kubeletemu.scheduler.nrtmatch.nodeconfig import TopologyManagerConfig, topology_manager_config

__all__ = [
    "NodeResourceTopologyMatch",
    "NodeResourceTopologyMatchArgs",
    "PassthroughTopology",
    "TopologyManagerConfig",
    "TopologyNotFresh",
    "TopologySource",
    "parse_args",
    "topology_manager_config",
]
