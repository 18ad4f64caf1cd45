"""The argument parser every ``kubeletemu`` command is built with: argparse, with the CLI's conventions
for usage errors.

- One line on standard error, exit status 2: ``kubeletemu: --policy: invalid choice: 'bogus' (…)``, not
  argparse's usage block followed by the error.
- Unknown arguments are reported before missing ones: ``would-admit --fille pod.yaml`` names ``--fille``
  instead of asking for ``-f``. argparse checks required arguments inside ``parse_known_args`` and only then
  hands the unknown ones back, so the required checks are done here, after the unknown ones; ``--help``
  still shows them as required (``-f FILE``, not ``[-f FILE]``).
- A misspelt command or value gets the nearest one: ``kubeletemu lsit`` → ``did you mean 'list'?``.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

PROG = "kubeletemu"


def _action_name(action: argparse.Action) -> str:
    """How argparse names an argument in its messages: ``-f/--filename``, else the metavar or dest."""
    if action.option_strings:
        return "/".join(action.option_strings)
    if isinstance(action.metavar, str):
        return action.metavar
    return str(action.dest)


class CommandParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with one-line errors and unknown arguments reported first; subcommand
    parsers are of the same class (``add_subparsers`` uses the parent's class)."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        required = [action for action in self._actions if action.required]
        groups = [group for group in self._mutually_exclusive_groups if group.required]
        self._set_required(required, groups, False)
        # --help runs inside argparse's parse: its usage shows these as declared, required.
        self._declared_required = required, groups
        try:
            parsed, extras = super().parse_known_args(args, namespace)
        finally:
            self._set_required(required, groups, True)
            self._declared_required = [], []
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        # Not given: the value is still the default argparse put there (None for every required one here).
        missing = [_action_name(a) for a in required if getattr(parsed, a.dest, a.default) is a.default]
        if missing:
            self.error(f"the following arguments are required: {', '.join(missing)}")
        for group in groups:
            members = group._group_actions
            if all(getattr(parsed, a.dest, a.default) is a.default for a in members):
                names = " ".join(_action_name(a) for a in members if a.help is not argparse.SUPPRESS)
                self.error(f"one of the arguments {names} is required")
        return parsed, extras

    @staticmethod
    def _set_required(
        actions: list[argparse.Action], groups: list[argparse._MutuallyExclusiveGroup], required: bool
    ) -> None:
        for action in actions:
            action.required = required
        for group in groups:
            group.required = required

    _declared_required: tuple[list[argparse.Action], list[argparse._MutuallyExclusiveGroup]] = ([], [])

    @contextlib.contextmanager
    def _as_declared(self) -> Iterator[None]:
        required, groups = self._declared_required
        self._set_required(required, groups, True)
        try:
            yield
        finally:
            self._set_required(required, groups, False)

    def format_usage(self) -> str:
        with self._as_declared():
            return super().format_usage()

    def format_help(self) -> str:
        with self._as_declared():
            return super().format_help()

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check, naming the nearest choice for a misspelt command or value (difflib's ratio
        ≥ 0.6, as Python 3.14's ``suggest_on_error`` does)."""
        choices = action.choices
        if isinstance(value, str) and choices is not None and value not in choices:
            import difflib  # only on this error: not every command's start-up

            close = difflib.get_close_matches(value, [str(c) for c in choices], n=1)
            if close:
                known = ", ".join(map(repr, choices))
                raise argparse.ArgumentError(
                    action, f"invalid choice: {value!r}: did you mean {close[0]!r}? (choose from {known})"
                )
        super()._check_value(action, value)

    def error(self, message: str) -> NoReturn:
        """``kubeletemu: MESSAGE`` and exit 2. A message about one argument names it as the CLI's other
        errors do (``--kubelet-version: …``); one about the command line as a whole points to the help."""
        if message.startswith("argument "):
            text = message.removeprefix("argument ")
        else:
            text = f"{message} (see {self.prog} --help)"
        self.exit(2, f"{PROG}: {' '.join(text.split())}\n")


class CommandListFormatter(argparse.HelpFormatter):
    """``kubeletemu --help``: each command beside its help. argparse measures the commands one indent short
    of where it prints them, so the longest (``least-numa-nodes``) went past the help column and its help
    onto the next line; they are measured here where they are printed."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        subactions = action._get_subactions() if isinstance(action, argparse._SubParsersAction) else []
        if subactions and action.help is not argparse.SUPPRESS:
            widest = max(len(self._format_action_invocation(sub)) for sub in subactions)
            printed_at = self._current_indent + self._indent_increment
            self._action_max_length = max(self._action_max_length, widest + printed_at)


class ExamplesEpilogFormatter(argparse.HelpFormatter):
    """Wraps the description to the terminal as argparse does, and keeps text laid out in lines (an
    epilog's table of examples) as written, as ``RawDescriptionHelpFormatter`` keeps both."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def describe_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Each command's one-line ``help`` (the list in ``kubeletemu --help``) is also the description its own
    ``--help`` opens with, unless it has a longer one."""
    for choice in subparsers._choices_actions:
        parser = subparsers.choices[choice.dest]
        if parser.description is None:
            parser.description = choice.help
