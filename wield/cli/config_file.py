"""``--config FILE`` and ``--set KEY=VALUE`` for every ``wield`` command that takes options.

A configuration file is TOML (read with ``tomllib``), YAML (``.yaml`` / ``.yml``, read with PyYAML's safe
loader) or JSON (``.json``); the three hold the same table. Its top-level keys are the command's options, named as
on the command line or by their destination (``documents = 500``, ``size-weight = 1``,
``metric = "work"``, ``cost_cache = false`` for ``--no-cost-cache``); lists give options that take several
values. The table ``[agent]`` holds the learner's hyperparameters (``learning_rate = 3e-4``; docs:
``wield.agents.hyperparameters``), and its key ``name`` chooses the learner (``--agent`` or ``--method``,
whichever the command has). ``--set KEY=VALUE`` (repeatable) sets one key after the file is read:
``--set documents=500``, ``--set agent.learning_rate=1e-3``; the value is read as TOML (``3e-4``,
``true``, ``[64, 64]``, ``"text"``; a bare word is text).

Options given as flags override the file and ``--set``: the file's values are placed in front of the
command line's own, and the later flag wins. An unknown key, a value of the wrong type (``episodes = "ten"``,
``episodes = 2.5``) or outside an option's choices is a one-line error naming the key and what it allows; a
key set to null (YAML, JSON) is left unset, as when it is absent.

A command may accept a file written for another command and skip the keys that are that command's alone: its
parser's default ``config_ignores`` (``parser.set_defaults(config_ignores=(...))``) names them (``wield tune``
reads a run's ``config.toml``, whose ``trials`` and ``workers`` are the run's experiment options, not tune's).

Every single run writes ``config.toml`` into its record (``wield.command_config``; ``options_table`` builds it):
``wield run NAME --config RECORD/config.toml --out OTHER`` reruns it with the same options.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from wield.errors import ConfigError, DataError
from wield.given_options import OPTIONS_GIVEN, options_seen

AGENT_TABLE = "agent"
AGENT_OPTION = "--agent-param"  # what a case study that configures its learners' hyperparameters declares
_OWN = {"config", "set", "help"}
YAML_SUFFIXES = (".yaml", ".yml")
# what config.toml leaves out: where the run writes (a rerun's directory is its own) and how the command prints
NOT_RECORDED = frozenset({"out", "quiet", "json", "verbose"})
IGNORES = "config_ignores"  # a parser default: keys of another command's file that this command skips


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """``--config`` and ``--set`` on ``parser`` (for its help and its own parse)."""
    group = parser.add_argument_group("configuration file")
    group.add_argument("--config", metavar="FILE.toml", default=None,
                       help="read options from a TOML file (or YAML: .yaml/.yml, JSON: .json; top-level keys: this "
                            "command's options; [agent]: the learner's hyperparameters), e.g. a run record's "
                            "config.toml; flags given here override it")
    group.add_argument("--set", dest="set", metavar="KEY=VALUE", action="append", default=None,
                       help="set one key after the file (repeatable): --set episodes=50 --set agent.learning_rate=1e-3")


def add_agent_parameter_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--agent-param KEY=VALUE`` (repeatable): a case study whose learners take hyperparameters declares it
    and reads them with ``agent_parameters(args)``; a config file's ``[agent]`` table becomes these."""
    parser.add_argument(AGENT_OPTION, dest="agent_params", metavar="KEY=VALUE", action="append", default=None,
                        help="one hyperparameter of the learner (repeatable), e.g. learning_rate=3e-4; a config "
                             "file's [agent] table (see 'wield.agents.hyperparameters' for every learner's keys)")


def agent_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--agent-param`` values as a dict of typed values (later ones override earlier ones)."""
    params: dict[str, Any] = {}
    for item in getattr(args, "agent_params", None) or ():
        key, value = _split(item, AGENT_OPTION)
        learner, dot, name = key.partition(".")  # LEARNER.KEY: a value for that learner only
        if dot:
            table = params.setdefault(learner, {})
            if not isinstance(table, dict):
                raise ConfigError(AGENT_OPTION, item, reason=f"'{learner}' is a value, not a learner's table")
            table[name] = parse_value(value)
        else:
            params[key] = parse_value(value)
    return params


def parse_value(text: str) -> Any:
    """A value written on the command line, read as TOML (``3e-4``, ``true``, ``[1, 2]``, ``"x"``); a bare
    word that is not TOML is text."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def _split(item: str, option: str) -> tuple[str, str]:
    key, sep, value = str(item).partition("=")
    if not sep or not key.strip():
        raise ConfigError(option, item, reason="expected KEY=VALUE")
    return key.strip(), value.strip()


def read_config_file(path: str) -> dict[str, Any]:
    """The file's table: TOML, YAML (``.yaml`` / ``.yml``) or JSON (``.json``) by its suffix; a missing,
    unreadable or malformed file, or one that holds no table, is a one-line error naming it."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError("config", path, reason="no such file")
    suffix = file.suffix.lower()
    kind = "YAML" if suffix in YAML_SUFFIXES else "JSON" if suffix == ".json" else "TOML"
    try:
        data = file.read_bytes()
        if kind == "TOML":
            table: Any = tomllib.loads(data.decode("utf-8"))
        elif kind == "JSON":
            from wield.io import parse_json

            table = parse_json(data.decode("utf-8"), path)
        else:
            table = _load_yaml(data.decode("utf-8"), path)
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{path}: not valid TOML ({exc})") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not valid {kind} (not UTF-8 text)") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(table, dict):
        raise DataError(f"{path}: holds a {type(table).__name__}, not a table of options (key: value)")
    return table


def _load_yaml(text: str, path: str) -> Any:
    """YAML's safe loader (plain values, lists and mappings only); a malformed file is a ``DataError``."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f"line {where.line + 1}: " if where is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise DataError(f"{path}: {line}not valid YAML ({problem})") from None
    except RecursionError:
        raise DataError(f"{path}: YAML nested too deeply to read") from None


def apply_overrides(table: dict[str, Any], assignments: Sequence[str]) -> dict[str, Any]:
    """``table`` with each ``KEY=VALUE`` of ``--set`` applied (``agent.x`` sets ``x`` in ``[agent]``)."""
    merged = {key: dict(value) if isinstance(value, dict) else value for key, value in table.items()}
    for item in assignments:
        key, value = _split(item, "--set")
        head, dot, rest = key.partition(".")
        if dot:
            if head != AGENT_TABLE:
                raise ConfigError("--set", key, reason=f"only the [{AGENT_TABLE}] table takes dotted keys")
            section = merged.setdefault(AGENT_TABLE, {})
            if not isinstance(section, dict):
                raise ConfigError("--set", key, reason=f"'{AGENT_TABLE}' is not a table in the config file")
            section[rest] = parse_value(value)
        else:
            merged[key] = parse_value(value)
    return merged


def _leaf(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[argparse.ArgumentParser, list[str]]:
    """The sub-parser that parsed the chosen command, and the sub-command names leading to it."""
    names: list[str] = []
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or chosen is None or chosen not in sub.choices:
            return parser, names
        names.append(str(chosen))
        parser = sub.choices[chosen]


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every optional of ``parser`` by destination and by its long names without dashes."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if not action.option_strings or action.dest in _OWN or action.dest == argparse.SUPPRESS:
            continue
        found.setdefault(action.dest, action)
        for option in action.option_strings:
            if option.startswith("--"):
                found.setdefault(option[2:], action)
    return found


def _tokens(key: str, value: Any, action: argparse.Action) -> list[str]:
    """The command-line tokens that give ``action`` the value ``value`` from the file's ``key``."""
    flag = next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])
    if isinstance(action, argparse.BooleanOptionalAction):
        if not isinstance(value, bool):
            raise ConfigError(key, value, reason="must be true or false")
        return [flag] if value else ["--no-" + flag[2:]]
    if action.nargs == 0:  # store_true / store_false / store_const
        if not isinstance(value, bool):
            raise ConfigError(key, value, reason="must be true or false")
        const_is_true = action.const is not False
        if value == const_is_true:
            return [flag]
        if value == action.default:
            return []
        raise ConfigError(key, value, reason=f"the option {flag} can only be switched on; leave the key out")
    values = value if isinstance(value, list) else [value]
    if isinstance(value, list) and action.nargs in (None, "?"):
        text = ",".join(_text(item) for item in values)  # comma-separated lists (--methods dqn,random)
        _check_value(key, value, text, action)
        return [f"{flag}={text}"]
    if isinstance(value, dict):
        raise ConfigError(key, value, reason="must be a value, not a table")
    if action.nargs in (None, "?") or not isinstance(value, list):
        _check_value(key, value, _text(value), action)
        return [f"{flag}={_text(value)}"]
    for item in values:
        _check_value(key, item, _text(item), action)
    return [flag, *(_text(item) for item in values)]


def _check_value(key: str, value: Any, text: str, action: argparse.Action) -> None:
    """Refuse a file's value that the option would refuse on the command line, as a one-line ``ConfigError``
    naming the key and what it allows (argparse would print its usage block, then the error)."""
    convert = action.type
    if isinstance(value, bool) and convert in (int, float):
        raise ConfigError(key, value, reason=f"must be {_kind(convert)}, not true or false")
    converted: Any = text
    if callable(convert):
        try:
            converted = convert(text)
        except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
            reason = f"must be {_kind(convert)}" if convert in (int, float) else str(exc) or "not a valid value"
            raise ConfigError(key, value, reason=reason) from None
    if action.choices is not None and converted not in action.choices:
        raise ConfigError(key, value, list(action.choices))


def _kind(convert: Any) -> str:
    return {int: "an integer", float: "a number"}.get(convert, f"a {getattr(convert, '__name__', 'valid')} value")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def config_tokens(parser: argparse.ArgumentParser, table: Mapping[str, Any], command: str) -> list[str]:
    """The tokens ``table`` (a config file with ``--set`` applied) stands for on ``parser``'s command line."""
    options = _options(parser)
    ignored = set(parser.get_default(IGNORES) or ())
    tokens: list[str] = []
    for key, value in table.items():
        if key in ignored:
            continue
        if key == AGENT_TABLE and isinstance(value, dict):
            tokens += _agent_tokens(parser, options, value, command)
            continue
        action = options.get(key) or options.get(key.replace("-", "_"))
        if value is None and action is not None:  # null in YAML / JSON: unset, as when the key is absent
            continue
        if action is None:
            allowed = sorted({a.dest for a in options.values() if a.dest != "agent_params"}
                             | ({f"[{AGENT_TABLE}]"} if AGENT_OPTION[2:] in options else set()))
            raise ConfigError("config key", key, allowed, reason=f"not an option of '{command}'")
        tokens += _tokens(key, value, action)
    return tokens


def _agent_tokens(parser: argparse.ArgumentParser, options: dict[str, argparse.Action], table: Mapping[str, Any],
                  command: str) -> list[str]:
    tokens: list[str] = []
    params = {key: value for key, value in table.items() if value is not None}  # null: unset, as when absent
    if "name" in params:  # the learner itself
        learner = options.get("agent") or options.get("method")
        if learner is None:
            raise ConfigError("agent.name", params["name"], reason=f"'{command}' has no --agent or --method option")
        tokens += _tokens("agent.name", params.pop("name"), learner)
    if params and AGENT_OPTION[2:] not in options:
        raise ConfigError(f"{AGENT_TABLE}.{next(iter(params))}", params[next(iter(params))],
                          reason=f"'{command}' takes no learner hyperparameters (only agent.name)")
    for key, value in params.items():
        if isinstance(value, dict) and key != "policy_kwargs":  # [agent.LEARNER]: that learner's values
            tokens += [f"{AGENT_OPTION}={key}.{name}={_toml(item)}" for name, item in value.items()]
        else:
            tokens.append(f"{AGENT_OPTION}={key}={_toml(value)}")
    return tokens


def _toml(value: Any) -> str:
    """``value`` written as a TOML value (``parse_value`` reads it back)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"
    return repr(value) if isinstance(value, float) else str(value)


HyperparametersUsed = Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]


def options_table(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  hyperparameters_used: HyperparametersUsed | None = None) -> dict[str, Any]:
    """What ``config.toml`` holds for the command ``args`` came from (``parser`` is the whole command line):
    every option of that command by destination with the value used, defaults included, except
    ``NOT_RECORDED`` and the unset ones (``None``); and ``[agent]``, the learner's hyperparameters (what the
    case study's ``hyperparameters_used(options, block)`` says when it has one, else the ``--agent-param`` /
    ``[agent]`` values given).
    ``--config`` reads it back to the same options."""
    leaf, _ = _leaf(parser, args)
    table: dict[str, Any] = {}
    for action in leaf._actions:
        if (not action.option_strings or action.dest in _OWN or action.dest in NOT_RECORDED
                or action.dest in (argparse.SUPPRESS, "agent_params")
                or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            continue
        value = getattr(args, action.dest, None)
        if value is not None:
            table[action.dest] = _plain(value)
    block = agent_parameters(args)
    used = hyperparameters_used(dict(table), block) if hyperparameters_used is not None else block
    learner = table.pop(AGENT_TABLE, None)  # an option named --agent: [agent]'s name, as the file reads it
    agent = {**({"name": learner} if learner is not None else {}), **_plain(dict(used))}
    if agent:
        table[AGENT_TABLE] = agent
    return table


def _plain(value: Any) -> Any:
    """``value`` as TOML can hold it: tuples as lists, mappings as dicts, anything else not a number or text as
    its text (a path)."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items() if item is not None}
    return str(value)


def parse_arguments(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)`` with ``--config`` / ``--set`` applied: the file's options are placed
    right after the sub-command, in front of the command line's own, which therefore win. The namespace's
    ``wield.plugins.OPTIONS_GIVEN`` holds the case-study options ``argv`` gives as flags or as ``--set`` keys (not
    a ``--config`` file's: a run's config.toml records every option, so its keys say nothing of intent)."""
    argv = list(argv)
    args = parser.parse_args(argv)
    given = options_seen(args)  # the case-study options the command line itself sets (CaseStudy.check_given)
    path, assignments = getattr(args, "config", None), getattr(args, "set", None) or []
    if path is not None or assignments:
        try:
            args = _with_config(parser, argv, args, path, assignments)
        except (ValueError, RecursionError) as exc:  # beyond Python's digit or recursion limit (wield.cli.exits)
            from wield.cli.exits import input_limit

            limit = input_limit(exc)
            if limit is None:
                raise
            raise ConfigError("--config" if path is not None else "--set", str(path or assignments[0]),
                              reason=limit) from None
        given |= {key for key, _ in (_split(item, "--set") for item in assignments) if "." not in key}
    setattr(args, OPTIONS_GIVEN, given)
    return args


def _with_config(parser: argparse.ArgumentParser, argv: list[str], args: argparse.Namespace, path: str | None,
                 assignments: list[str]) -> argparse.Namespace:
    table = read_config_file(path) if path is not None else {}
    table = apply_overrides(table, assignments)
    leaf, names = _leaf(parser, args)
    tokens = config_tokens(leaf, table, " ".join(["wield", *names]))
    position = 0
    for name in names:  # just after the last sub-command name
        position = argv.index(name, position) + 1
    return parser.parse_args(argv[:position] + tokens + argv[position:])


def add_to_every_command(parser: argparse.ArgumentParser) -> None:
    """``--config`` / ``--set`` on every sub-command of ``parser`` that takes options of its own (a case
    study's sub-command, whose options are added only when it is chosen, counts as taking them)."""
    from wield.cli.command_tree import every_command

    def visit(command: argparse.ArgumentParser, pending: bool) -> None:
        if command is parser:
            return  # a parser without sub-commands: only its sub-commands get them
        if pending or any(a.option_strings and a.dest != "help" for a in command._actions):
            if not any(a.dest == "config" for a in command._actions):
                add_config_options(command)

    every_command(parser, visit)  # a case study's sub-command now, before its options (it takes them)
