"""Configuration errors: one readable line naming the file, the document and the field."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration file that cannot be used.

    ``str()`` is ``<file>[ (document N)]: <field>: <problem>``.
    """
