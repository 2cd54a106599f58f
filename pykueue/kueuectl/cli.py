"""Command-line parsing with kueuectl's rules (cobra commands over pflag flags).

kueuectl users type flags anywhere (``kubectl kueue -n ns list lq`` and ``list lq -n ns``
are the same), glue values on (``-nns``, ``--output=json``), repeat list flags and give
them comma-separated values. Commands are found first by walking the words that are not
flags, then every flag of the chain (global, inherited and the command's own) is parsed,
and errors read as kueuectl's do (``unknown flag: --foo``).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

FlagKind = Literal["string", "bool", "int", "stringSlice", "stringArray", "stringToString", "boolSlice"]


class UsageError(Exception):
    """A command line kueuectl rejects before running anything."""


class ShowHelp(Exception):
    """``-h``/``--help``, or a command that only groups others."""


@dataclass(frozen=True)
class Flag:
    name: str
    kind: FlagKind
    help: str
    short: str = ""
    default: Any = None
    hidden: bool = False

    def initial(self) -> Any:
        if self.default is not None:
            return list(self.default) if isinstance(self.default, list) else self.default
        return {"string": "", "bool": False, "int": 0, "stringToString": {}}.get(self.kind, [])


@dataclass
class Invocation:
    """One parsed command line, handed to the command that runs it."""

    command: Command
    args: list[str]
    values: dict[str, Any]
    changed: set[str]
    argv: list[str]
    out: TextIO
    err: TextIO

    def string(self, name: str) -> str:
        return str(self.values.get(name, ""))

    def boolean(self, name: str) -> bool:
        return bool(self.values.get(name, False))

    def strings(self, name: str) -> list[Any]:
        return list(self.values.get(name) or [])


Runner = Callable[[Invocation], int]
Completer = Callable[[Invocation, str], tuple[list[str], int]]


@dataclass
class Command:
    name: str
    summary: str
    aliases: tuple[str, ...] = ()
    usage: str = ""
    flags: tuple[Flag, ...] = ()
    # Flags every subcommand inherits (kueuectl's --dry-run on create/stop/resume).
    persistent: tuple[Flag, ...] = ()
    children: list[Command] = field(default_factory=list)
    run: Runner | None = None
    # Exact number of positional arguments, or None for any.
    nargs: int | None = None
    required: tuple[str, ...] = ()
    hidden: bool = False
    # Pass-through commands accept flags they do not know (kubectl will).
    unknown_flags_ok: bool = False
    complete_args: Completer | None = None
    complete_flags: dict[str, Completer] = field(default_factory=dict)
    parent: Command | None = field(default=None, repr=False, compare=False)

    def add(self, *children: Command) -> Command:
        for child in children:
            child.parent = self
            self.children.append(child)
        return self

    def find_child(self, word: str) -> Command | None:
        for child in self.children:
            if word == child.name or word in child.aliases:
                return child
        return None

    def chain(self) -> list[Command]:
        out: list[Command] = []
        node: Command | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def path(self) -> str:
        return " ".join(c.name for c in self.chain())

    def all_flags(self) -> list[Flag]:
        """The command's own flags, then inherited ones nearest first, then -h."""
        flags = list(self.flags) + list(self.persistent)
        for ancestor in reversed(self.chain()[:-1]):
            flags.extend(ancestor.persistent)
        flags.append(HELP)
        return flags


HELP = Flag("help", "bool", "help for this command", short="h")


def _takes_value(word: str, flags: Sequence[Flag]) -> bool:
    """Whether a flag word without ``=`` consumes the next word (cobra treats unknown
    long flags as taking one)."""
    if word.startswith("--"):
        flag = next((f for f in flags if f.name == word[2:]), None)
        return flag is None or flag.kind != "bool"
    flag = next((f for f in flags if f.short == word[1:]), None)
    return flag is None or flag.kind != "bool"


def _strip_flags(args: Sequence[str], flags: Sequence[Flag]) -> list[str]:
    """The words that are not flags or flag values (cobra's stripFlags)."""
    words: list[str] = []
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--":
            break
        if word.startswith("-") and "=" not in word and (word.startswith("--") or len(word) == 2) \
                and _takes_value(word, flags):
            if len(rest) <= 1:
                break
            rest.pop(0)
        elif word and not word.startswith("-"):
            words.append(word)
    return words


def _minus_first(args: list[str], word: str, flags: Sequence[Flag]) -> list[str]:
    """``args`` without the first occurrence of the command word (cobra's argsMinusFirstX)."""
    pos = 0
    while pos < len(args):
        item = args[pos]
        if item == "--":
            break
        if item.startswith("-") and "=" not in item and (item.startswith("--") or len(item) == 2) \
                and _takes_value(item, flags):
            pos += 2
            continue
        if not item.startswith("-") and item == word:
            return args[:pos] + args[pos + 1:]
        pos += 1
    return args


def find(root: Command, args: list[str]) -> tuple[Command, list[str]]:
    """The command the words name and the arguments left for it."""
    command = root
    while True:
        words = _strip_flags(args, command.all_flags())
        if not words:
            return command, args
        child = command.find_child(words[0])
        if child is None:
            return command, args
        args = _minus_first(args, words[0], command.all_flags())
        command = child


def parse_bool(text: str) -> bool:
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def _csv(text: str) -> list[str]:
    if text == "":
        return []
    try:
        return next(csv.reader([text], strict=True))
    except csv.Error as exc:
        raise ValueError(f"parse error on line 1: {exc}") from exc


class _Parsed:
    def __init__(self, flags: Sequence[Flag]) -> None:
        self.flags = flags
        self.values: dict[str, Any] = {f.name: f.initial() for f in flags}
        self.changed: set[str] = set()

    def set(self, flag: Flag, text: str) -> None:
        try:
            self.values[flag.name] = self._value(flag, text)
        except ValueError as exc:
            label = f"-{flag.short}, --{flag.name}" if flag.short else f"--{flag.name}"
            raise UsageError(f'invalid argument "{text}" for "{label}" flag: {exc}') from None
        self.changed.add(flag.name)

    def _value(self, flag: Flag, text: str) -> Any:
        first = flag.name not in self.changed
        current = self.values[flag.name]
        if flag.kind == "string":
            return text
        if flag.kind == "bool":
            return parse_bool(text)
        if flag.kind == "int":
            try:
                return int(text, 0)
            except ValueError:
                raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
        if flag.kind == "stringArray":
            return [text] if first else [*current, text]
        if flag.kind == "stringSlice":
            items = _csv(text)
            return items if first else [*current, *items]
        if flag.kind == "boolSlice":
            bools = [parse_bool(item.strip()) for item in _csv(text)]
            return bools if first else [*current, *bools]
        # stringToString: pflag reads one pair as it is (commas included), several as CSV.
        pairs = [text.strip('"')] if text.count("=") == 1 else _csv(text) if "=" in text else None
        if pairs is None:
            raise ValueError(f"{text} must be formatted as key=value")
        parsed: dict[str, str] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                raise ValueError(f"{pair} must be formatted as key=value")
            parsed[key] = value
        return parsed if first else {**current, **parsed}


def parse_flags(command: Command, args: Sequence[str]) -> tuple[dict[str, Any], set[str], list[str]]:
    """Flag values, the flags given, and the positional arguments (pflag's rules)."""
    flags = command.all_flags()
    by_name = {f.name: f for f in flags}
    by_short = {f.short: f for f in flags if f.short}
    parsed = _Parsed(flags)
    positional: list[str] = []
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if len(word) < 2 or not word.startswith("-"):
            positional.append(word)
        elif word == "--":
            positional.extend(rest)
            break
        elif word.startswith("--"):
            rest = _long(word, rest, by_name, parsed, command.unknown_flags_ok)
        else:
            rest = _shorts(word[1:], rest, by_short, parsed, command.unknown_flags_ok)
    if parsed.values.get("help"):
        raise ShowHelp
    return parsed.values, parsed.changed, positional


def _long(word: str, rest: list[str], by_name: dict[str, Flag], parsed: _Parsed, lenient: bool) -> list[str]:
    name, sep, value = word[2:].partition("=")
    if not name or name[0] in "-=":
        raise UsageError(f"bad flag syntax: {word}")
    flag = by_name.get(name)
    if flag is None:
        if lenient:
            # pflag drops an unknown flag's value too when it looks like one.
            if not sep and rest and not rest[0].startswith("-"):
                rest = rest[1:]
            return rest
        raise UsageError(f"unknown flag: --{name}")
    if sep:
        parsed.set(flag, value)
    elif flag.kind == "bool":
        parsed.set(flag, "true")
    elif rest:
        parsed.set(flag, rest[0])
        rest = rest[1:]
    else:
        raise UsageError(f"flag needs an argument: {word}")
    return rest


def _shorts(shorthands: str, rest: list[str], by_short: dict[str, Flag], parsed: _Parsed,
            lenient: bool) -> list[str]:
    while shorthands:
        char = shorthands[0]
        flag = by_short.get(char)
        if flag is None:
            if not lenient:
                raise UsageError(f"unknown shorthand flag: '{char}' in -{shorthands}")
            if len(shorthands) > 2 and shorthands[1] == "=":
                return rest
            # pflag drops what looks like the unknown flag's value and goes on with the rest.
            if rest and not rest[0].startswith("-"):
                rest = rest[1:]
            shorthands = shorthands[1:]
            continue
        if len(shorthands) > 2 and shorthands[1] == "=":
            parsed.set(flag, shorthands[2:])
            return rest
        if flag.kind == "bool":
            parsed.set(flag, "true")
            shorthands = shorthands[1:]
        elif len(shorthands) > 1:
            parsed.set(flag, shorthands[1:])
            return rest
        elif rest:
            parsed.set(flag, rest[0])
            return rest[1:]
        else:
            raise UsageError(f"flag needs an argument: '{char}' in -{shorthands}")
    return rest


def check_args(command: Command, args: list[str], values: dict[str, Any], changed: set[str]) -> None:
    """Positional-argument count and required flags, in cobra's order."""
    if command.nargs == 0 and args:
        raise UsageError(f'unknown command "{args[0]}" for "{command.path()}"')
    if command.nargs is not None and len(args) != command.nargs:
        raise UsageError(f"accepts {command.nargs} arg(s), received {len(args)}")
    missing = [name for name in command.required if name not in changed]
    if missing:
        raise UsageError(f'required flag(s) "{", ".join(missing)}" not set')
