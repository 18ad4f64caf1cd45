"""``policy_none.go``: no exclusive CPUs; every container runs on all CPUs."""

from __future__ import annotations

from collections.abc import Mapping

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import PolicyOptionsError
from kubeletemu.cpumanager.state.state import State
from kubeletemu.golang import go_format_string_map
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager import ProviderHints

POLICY_NONE = "none"


class NonePolicy:
    def __init__(self, cpu_policy_options: Mapping[str, str] | None = None) -> None:
        """``NewNonePolicy``: any option is refused."""
        if cpu_policy_options:
            raise PolicyOptionsError(
                f"None policy: received unsupported options={go_format_string_map(cpu_policy_options)}"
            )

    @property
    def name(self) -> str:
        return POLICY_NONE

    def start(self, state: State) -> None:
        return None

    def allocate(self, state: State, pod: Pod, container: Container) -> None:
        return None

    def allocate_pod(self, state: State, pod: Pod) -> None:
        return None

    def remove_container(self, state: State, pod_uid: str, container_name: str) -> None:
        return None

    def get_topology_hints(self, state: State, pod: Pod, container: Container) -> ProviderHints:
        return None

    def get_pod_topology_hints(self, state: State, pod: Pod) -> ProviderHints:
        return None

    def get_allocatable_cpus(self, state: State) -> CPUSet:
        return CPUSet()
