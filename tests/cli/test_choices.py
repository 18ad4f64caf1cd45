"""The CLI spells its flags' closed sets of values itself (``kubeletemu.cli.choices``), so that building the
parser imports no engine module; each must equal the engine's own constant, in the same order."""

from __future__ import annotations

from kubeletemu.cli import choices
from kubeletemu.config.emulator_config import LOG_LEVELS
from kubeletemu.config.kubelet_config import TOPOLOGY_MANAGER_POLICIES, TOPOLOGY_MANAGER_SCOPES
from kubeletemu.podresources import fingerprint
from kubeletemu.podresources.nrt import RTE_UPDATES
from kubeletemu.scheduler.live import FLAVOURS
from kubeletemu.topologymanager import POLICY_NAMES
from kubeletemu.versions import SUPPORTED


def test_the_cli_choices_are_the_engines() -> None:
    assert choices.TOPOLOGY_MANAGER_POLICIES == TOPOLOGY_MANAGER_POLICIES == POLICY_NAMES
    assert choices.TOPOLOGY_MANAGER_SCOPES == TOPOLOGY_MANAGER_SCOPES
    assert choices.KUBELET_VERSIONS == SUPPORTED
    assert choices.LOG_LEVELS == LOG_LEVELS
    assert choices.FINGERPRINT_METHODS == fingerprint.METHODS
    assert choices.FINGERPRINT_METHODS_PUBLISHED == fingerprint.METHODS_PUBLISHED
    assert choices.FINGERPRINT_METHOD_DEFAULT == fingerprint.METHOD_WITH_EXCLUSIVE_RESOURCES
    assert choices.RTE_UPDATES == RTE_UPDATES
    assert choices.FLAVOURS == FLAVOURS
