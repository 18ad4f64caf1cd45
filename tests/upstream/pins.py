"""Which upstream release each emulated Kubernetes minor builds, and where its Go module lives.

Each minor has a Go module of its own under ``tests/upstream/kubernetes/v<minor>/`` requiring
``k8s.io/kubernetes`` at the pinned tag with every staging module it requires at ``v0.0.0`` replaced by the
published staging module of the same release (``v0.<minor>.<patch>``), which is how modules outside the
Kubernetes tree (scheduler-plugins' go.mod among them) depend on it. etcd has its own module
(``tests/upstream/etcd/v<minor>/``), since its dependencies conflict with those the API server pins.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

UPSTREAM_DIR = Path(__file__).resolve().parent

# The binaries built from k8s.io/kubernetes, all in one `go build` so that they share its compilation.
KUBERNETES_COMPONENTS = ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl", "kubelet")
ETCD = "etcd"
COMPONENTS = (*KUBERNETES_COMPONENTS, ETCD)


@dataclass(frozen=True)
class Pin:
    """One Kubernetes release and the etcd built beside it."""

    kubernetes: str  # "1.37.2": the k8s.io/kubernetes tag without its "v"
    etcd: str  # "3.6.16": the go.etcd.io/etcd/server/v3 tag without its "v"

    @property
    def minor(self) -> str:
        return ".".join(self.kubernetes.split(".")[:2])

    @property
    def staging(self) -> str:
        """The staging modules' tag of the same release: v1.37.2 -> v0.37.2."""
        return "0." + self.kubernetes.split(".", 1)[1]

    @property
    def kubernetes_module_dir(self) -> Path:
        return UPSTREAM_DIR / "kubernetes" / f"v{self.minor}"

    @property
    def etcd_module_dir(self) -> Path:
        return UPSTREAM_DIR / "etcd" / f"v{'.'.join(self.etcd.split('.')[:2])}"


# The patch releases are the trees kubeletemu's version data was read at (kubeletemu/versions/data cites
# v1.33.13, v1.34.9, v1.35.6 and v1.36.3); 1.37.2 is the newest the Go module proxy served on 2026-12-02.
# etcd 3.6 is the series the API server supports at each of these releases (3.5 being the older).
ETCD_VERSION = "3.6.16"
PINS: dict[str, Pin] = {
    "1.33": Pin("1.33.13", ETCD_VERSION),
    "1.34": Pin("1.34.9", ETCD_VERSION),
    "1.35": Pin("1.35.6", ETCD_VERSION),
    "1.36": Pin("1.36.3", ETCD_VERSION),
    "1.37": Pin("1.37.2", ETCD_VERSION),
}
NEWEST = max(PINS, key=lambda minor: tuple(int(part) for part in minor.split(".")))


def pin_for(version: str | None) -> Pin:
    """The pin of a minor ("1.36", "v1.36") or of its exact pinned release ("1.36.3"); the newest for None."""
    if version is None:
        return PINS[NEWEST]
    wanted = version.removeprefix("v")
    minor = ".".join(wanted.split(".")[:2])
    pin = PINS.get(minor)
    if pin is None or wanted not in (minor, pin.kubernetes):
        known = ", ".join(f"{p.minor} ({p.kubernetes})" for p in PINS.values())
        raise ValueError(f"no pinned Kubernetes release for {version!r}; pinned: {known}")
    return pin
