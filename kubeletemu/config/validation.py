"""Kubernetes name rules (``k8s.io/apimachinery/pkg/util/validation`` and the core resource-name helpers),
with the API server's texts. Each check returns the problems found, empty when the name is valid."""

from __future__ import annotations

import re

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(f"^{_LABEL}$")
_DNS1123_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
HUGEPAGES_PREFIX = "hugepages-"
# Container resources without a domain that the API server knows (IsStandardContainerResourceName).
STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: container names, namespaces."""
    problems = []
    if len(value) > DNS1123_LABEL_MAX:
        problems.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _DNS1123_LABEL.match(value):
        problems.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
            "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    return problems


def dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: pod names, resource-name domains."""
    problems = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        problems.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        problems.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return problems


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_VALUE_MAX = 63


def label_value(value: str) -> list[str]:
    """``IsValidLabelValue``: empty, or at most 63 characters of alphanumerics, '-', '_' and '.' that
    start and end alphanumeric."""
    problems = []
    if len(value.encode()) > LABEL_VALUE_MAX:
        problems.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if not _LABEL_VALUE.match(value):
        problems.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
            "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return problems


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: an optional DNS-subdomain prefix and ``/``, then a name of at most 63 chars."""
    prefix, slash, name = value.rpartition("/")
    if slash and not prefix:
        return ["prefix part must be non-empty"]
    problems = [f"prefix part {p}" for p in dns1123_subdomain(prefix)] if slash else []
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME.match(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
            "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    return problems


def is_native_resource(name: str) -> bool:
    """``IsNativeResource``: no domain, or a ``kubernetes.io`` one."""
    return "/" not in name or "kubernetes.io/" in name


def is_hugepages_resource(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_extended_resource_name(name: str) -> bool:
    """``IsExtendedResourceName``: a domain-qualified name outside ``kubernetes.io`` (device plugins)."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not qualified_name("requests." + name)
