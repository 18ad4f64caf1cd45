"""Issue 27 item 9: ``kubeletemu --help`` gives every command a one-line description, every flag of every
command has help, and flags with a closed set of values list them (argparse ``choices``, so the CLI
refuses a wrong one). The parser is walked, so a command or flag added without help fails here."""

from __future__ import annotations

import argparse
import re

import pytest

from kubeletemu.cli import build_parser
from tests.cli.support import kubeletemu

# Flags whose values are a closed set, by dest: each must be parsed with choices.
CLOSED = {"output", "policy", "scope", "log_level", "method", "update", "flavour"}


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def command_helps() -> dict[str, str | None]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest: choice.help for choice in sub._choices_actions}


def test_every_command_has_a_one_line_description_in_the_top_level_help() -> None:
    helps = command_helps()
    assert set(helps) == set(commands())
    out = kubeletemu("--help")
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    for name, text in helps.items():
        assert text, f"{name} has no help"
        # On one line of an 80-column terminal, beside its name.
        assert any(re.fullmatch(rf"\s+{re.escape(name)}\s+{re.escape(text)}", line) for line in lines), (
            name,
            out.stdout,
        )
    assert max(map(len, lines)) <= 80


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_flag_has_help_and_closed_sets_list_their_choices(name: str) -> None:
    parser = commands()[name]
    assert parser.description, f"{name} has no description"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        flag = "/".join(action.option_strings) or action.dest
        assert action.help and action.help is not argparse.SUPPRESS, f"{name} {flag} has no help"
        if action.dest in CLOSED:
            assert action.choices, f"{name} {flag} takes a closed set of values: give it choices"
    out = kubeletemu(name, "--help")
    assert out.returncode == 0 and out.stdout.startswith(f"usage: kubeletemu {name} ")
    # argparse wraps at spaces and after hyphens: compared without white space.
    text = "".join(out.stdout.split())
    assert "".join(parser.description.split()) in text
    for action in parser._actions:
        for choice in action.choices or ():
            assert str(choice) in text, (name, action.dest, choice)


def test_what_needs_a_daemon_says_how_to_ask_it() -> None:
    """``--live`` is on the commands that run on their own as well as on the daemon's node; every command
    that talks to a daemon takes ``--socket`` to find it."""
    live = {name for name, p in commands().items() if any(a.dest == "live" for a in p._actions)}
    assert live == {"simulate", "schedule"}
    without_socket = {
        name for name, p in commands().items() if not any(a.dest == "socket" for a in p._actions)
    }
    assert without_socket == {"probe", "fleet", "nodes", "extender"}


@pytest.mark.parametrize("name", sorted(commands()))
def test_usage_shows_required_arguments_as_required(name: str) -> None:
    """Issue 41 item 7: ``-f FILE``, not ``[-f FILE]``, where the command then asks for it; a required
    choice of two in parentheses, ``(--uid UID | -f FILE)``."""
    parser = commands()[name]
    usage = " ".join(kubeletemu(name, "--help").stdout.split("\n\n", 1)[0].split())
    for action in parser._actions:
        if action.required and action.option_strings:
            shown = f"{action.option_strings[0]} {action.metavar or action.dest.upper()}"
            assert f" {shown}" in usage and f"[{shown}]" not in usage, (name, usage)
    for group in parser._mutually_exclusive_groups:
        if group.required:
            shown = " | ".join(
                f"{a.option_strings[0]} {a.metavar or a.dest.upper()}" for a in group._group_actions
            )
            assert f"({shown})" in usage, (name, usage)
    if name in ("admit", "would-admit", "least-numa-nodes", "simulate", "fleet", "schedule"):
        assert " -f FILE " in usage + " ", usage


@pytest.mark.parametrize("name", sorted(commands()))
def test_descriptions_are_sentences_wrapped_to_the_terminal(name: str) -> None:
    """Issue 41 item 7: each command's own help opens with a sentence (capital, full stop), wrapped to the
    terminal's 80 columns, however the rest of its help is laid out (schedule's examples table)."""
    description = commands()[name].description
    assert description and description[0].isupper() and description.endswith((".", ")")), (name, description)
    out = kubeletemu(name, "--help").stdout
    paragraph = out.split("\n\n")[1]
    assert "".join(paragraph.split()) == "".join(description.split()), out  # argparse breaks after hyphens
    assert max(map(len, paragraph.splitlines())) <= 80, paragraph
    assert len(paragraph.splitlines()) >= len(description) // 80 + 1
