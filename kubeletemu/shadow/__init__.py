"""Shadow mode: mirror the real kubelet of this node, read-only, and check ourselves against it.

The kubelet's configuration file, its checkpoints and its podresources API are read (never written); the
emulator's state is rebuilt from them (:mod:`.mirror`, pods from :mod:`.reconstruct`), what-if questions are
answered against that state, and every refresh replays the kubelet's admissions through the emulator and
reports each container where the two disagree (:mod:`.replay`). :mod:`.runner` keeps it current. Pure
engine: the podresources client is the daemon's (this package has no gRPC).
"""

from kubeletemu.shadow.errors import (
    READ_ONLY_MESSAGE,
    ShadowError,
    ShadowReadOnlyError,
    SourceInvalidError,
    SourceUnreadableError,
)
from kubeletemu.shadow.metrics import ShadowMetrics
from kubeletemu.shadow.mirror import Mirror, build_mirror
from kubeletemu.shadow.reconstruct import MirroredPod, Reconstruction, reconstruct
from kubeletemu.shadow.replay import Divergence, ReplayResult, replay
from kubeletemu.shadow.report import ShadowReport
from kubeletemu.shadow.runner import ShadowRunner
from kubeletemu.shadow.sources import KubeletPaths, KubeletSnapshot, PodResourcesSource, take_snapshot

__all__ = [
    "READ_ONLY_MESSAGE",
    "Divergence",
    "KubeletPaths",
    "KubeletSnapshot",
    "Mirror",
    "MirroredPod",
    "PodResourcesSource",
    "Reconstruction",
    "ReplayResult",
    "ShadowError",
    "ShadowMetrics",
    "ShadowReadOnlyError",
    "ShadowReport",
    "ShadowRunner",
    "SourceInvalidError",
    "SourceUnreadableError",
    "build_mirror",
    "reconstruct",
    "replay",
    "take_snapshot",
]
