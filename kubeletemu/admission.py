"""Pod admission results, mirroring ``pkg/kubelet/cm/admission`` and ``lifecycle.PodAdmitResult``."""

from __future__ import annotations

from dataclasses import dataclass

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


@dataclass(frozen=True)
class PodAdmitResult:
    admit: bool
    reason: str = ""
    message: str = ""


class AdmissionError(Exception):
    """An error with a ``Type()``: it becomes the admit result's reason, its text the message.

    Subclasses set ``reason`` (``TopologyAffinityError``, ``SMTAlignmentError``, ...).
    """

    reason: str = UNEXPECTED_ADMISSION_ERROR


def get_pod_admit_result(err: BaseException | None) -> PodAdmitResult:
    """``admission.GetPodAdmitResult``: typed errors keep their type; anything else is unexpected."""
    if err is None:
        return PodAdmitResult(admit=True)
    if isinstance(err, AdmissionError):
        return PodAdmitResult(admit=False, reason=err.reason, message=str(err))
    return PodAdmitResult(
        admit=False,
        reason=UNEXPECTED_ADMISSION_ERROR,
        message=f"Allocate failed due to {err}, which is unexpected",
    )
