"""The closed sets of values the CLI's flags take, spelled here so that building the argument parser
imports no engine module (``kubeletemu --version`` and ``--help`` start in tens of milliseconds).

Each tuple repeats a constant of the engine, in the engine's order; ``tests/cli/test_choices.py`` checks
them equal, so a value added there and not here fails a test instead of being refused by the CLI.
"""

from __future__ import annotations

# kubeletemu.config.kubelet_config: the kubelet's topologyManagerPolicy / topologyManagerScope values.
TOPOLOGY_MANAGER_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_MANAGER_SCOPES = ("container", "pod")

# kubeletemu.versions.SUPPORTED: the kubelets the emulator is exact to.
KUBELET_VERSIONS = ("1.33", "1.34", "1.35", "1.36", "1.37", "master")

# kubeletemu.config.emulator_config.LOG_LEVELS: the daemon's log levels.
LOG_LEVELS = ("debug", "info", "warning", "error")

# kubeletemu.podresources.fingerprint: which listed pods a fingerprint covers (METHODS), and those an
# exporter publishes (METHODS_PUBLISHED); resource-topology-exporter's default first.
FINGERPRINT_METHOD_DEFAULT = "with-exclusive-resources"
FINGERPRINT_METHODS = ("all", "with-exclusive-resources", "exclude-terminal")
FINGERPRINT_METHODS_PUBLISHED = ("with-exclusive-resources", "all")

# kubeletemu.podresources.nrt.RTE_UPDATES: the k8stopoawareschedwg/rte-update annotation's values.
RTE_UPDATES = ("periodic", "reactive")

# kubeletemu.scheduler.live.FLAVOURS: whose NodeResourceTopology the daemon's node is published as.
FLAVOURS = ("rte", "koordlet", "nfd")
