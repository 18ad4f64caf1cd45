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
# v1.33.13, v1.34.9, v1.35.6 and v1.36.3), but for 1.35: the proxy serves k8s.io/kubernetes v1.35.6 but not
# all its staging modules (2026-12-02: k8s.io/kube-proxy and k8s.io/externaljwt v0.35.6 403,
# k8s.io/mount-utils v0.35.6 unknown to sum.golang.org), so 1.35 builds v1.35.4, whose are served. 1.37.2
# is the newest release served. 1.33.13 is served though the proxy does not list it (asked by its exact tag,
# 2026-12-02); the modules of 1.33, 1.34 and 1.35 were written then (`go mod tidy` resolved every package of
# their commands) but are built only on demand: CI builds the newest.
# etcd 3.6 is the series the API server supports at each of these releases (3.5 being the older).
ETCD_VERSION = "3.6.16"
PINS: dict[str, Pin] = {
    "1.33": Pin("1.33.13", ETCD_VERSION),
    "1.34": Pin("1.34.9", ETCD_VERSION),
    "1.35": Pin("1.35.4", ETCD_VERSION),
    "1.36": Pin("1.36.3", ETCD_VERSION),
    "1.37": Pin("1.37.2", ETCD_VERSION),
}
NEWEST = max(PINS, key=lambda minor: tuple(int(part) for part in minor.split(".")))


# scheduler-plugins' scheduler (NodeResourceTopologyMatch) and kube-scheduler of the same Kubernetes release,
# built in ONE `go build` from tests/upstream/scheduler-plugins/v<minor>/ so that they share its compilation.
# v0.34.7 is the only scheduler-plugins release the module proxy serves (2026-12-02: it lists none; v0.35.0
# and later tags are refused), and its go.mod requires k8s.io/kubernetes v1.34.7 with every staging module at
# v0.34.7: the module is built at exactly that release (not the 1.34 pin's v1.34.9, which would change the
# code scheduler-plugins was released against). Its kube-scheduler is the e2e tests' second kube-scheduler
# version (against the newest API server: a 1.34 scheduler and a 1.37 API server are within the version
# skew policy, which lets kube-scheduler be up to three minors older).
# One staging module is taken at another patch: the proxy refuses k8s.io/csi-translation-lib v0.34.7 (and
# v0.34.6) with 403 (2026-12-02), and v0.34.8 is the nearest one served; its code equals v0.34.5's, file for
# file (only its go.mod's requirements moved), so v0.34.7's cannot differ.
@dataclass(frozen=True)
class SchedulerPluginsPin:
    version: str  # "0.34.7": the sigs.k8s.io/scheduler-plugins tag without its "v"
    kubernetes: Pin  # the release its go.mod requires
    substitutes: tuple[tuple[str, str], ...] = ()  # (staging module, tag) where the release's is not served

    @property
    def module_dir(self) -> Path:
        return UPSTREAM_DIR / "scheduler-plugins" / f"v{'.'.join(self.version.split('.')[:2])}"


SCHEDULER_PLUGINS = SchedulerPluginsPin(
    "0.34.7", Pin("1.34.7", ETCD_VERSION), (("k8s.io/csi-translation-lib", "v0.34.8"),)
)


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


def unwritten() -> list[str]:
    """Pinned minors whose Go module is not committed yet (``python -m tests.upstream.gomod <minor>`` writes
    it: its `go mod tidy` downloads the release's module graph)."""
    return [m for m, pin in PINS.items() if not (pin.kubernetes_module_dir / "go.sum").is_file()]
