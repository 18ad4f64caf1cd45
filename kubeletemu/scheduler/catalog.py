"""The scheduler setups worth comparing, each as the KubeSchedulerConfiguration a cluster would run: the
NUMA-blind default and every modelled NUMA-aware plugin with its usual strategies (for ``measure`` and the
benchmark; the fleet's matrix names them the same way)."""

from __future__ import annotations

from dataclasses import dataclass

from kubeletemu.scheduler.live import FLAVOUR_KOORDLET, FLAVOUR_RTE
from kubeletemu.scheduler.profile import MODELS, Profile, default_profile, parse_profiles

_TEMPLATE = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {name}
  plugins:
    multiPoint:
      enabled: [{{name: {plugin}}}]
  pluginConfig:
  - name: {plugin}
    args: {args}
"""

# label -> (plugin, args as flow YAML)
SETUPS: dict[str, tuple[str, str]] = {
    "NodeResourceTopologyMatch/LeastAllocated": (
        "NodeResourceTopologyMatch",
        "{scoringStrategy: {type: LeastAllocated}}",
    ),
    "NodeResourceTopologyMatch/LeastNUMANodes": (
        "NodeResourceTopologyMatch",
        "{scoringStrategy: {type: LeastNUMANodes}}",
    ),
    "NodeNUMAResource": ("NodeNUMAResource", "{}"),
    "NodeNUMAResourceDesign": ("NodeNUMAResourceDesign", "{}"),
}


def setup_config(label: str) -> str:
    plugin, args = SETUPS[label]
    return _TEMPLATE.format(name=label.replace("/", "-").lower(), plugin=plugin, args=args)


@dataclass(frozen=True)
class Setup:
    """A scheduler configuration and the exporter whose NRTs it reads (Koordinator reads koordlet's)."""

    label: str
    profile: Profile
    flavour: str = FLAVOUR_RTE


def setups() -> list[Setup]:
    """The default scheduler, then every setup whose plugin is modelled, on top of the default plugins."""
    out = [Setup("NodeResourcesFit (default)", default_profile())]
    for label, (plugin, _) in SETUPS.items():
        if plugin in MODELS:
            [profile] = parse_profiles(setup_config(label), label).values()
            flavour = FLAVOUR_KOORDLET if plugin.startswith("NodeNUMAResource") else FLAVOUR_RTE
            out.append(Setup(label, profile, flavour))
    return out
