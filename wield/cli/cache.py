"""``wield cache list|clear``: what the cache root holds (sizes per entry) and removing it.

The cache root (``$WIELD_CACHE_DIR`` or ``~/.cache/wield``, see ``wield.cache``) holds what case studies can
rebuild: loaded base databases, traced graphs, operation costs. Nothing evicts it, so this is how to see and
reclaim the space. ``clear`` removes only what is Wield's (``wield.cache.clear_cache``) and asks first unless
``--yes``; with no terminal to ask on (a script, a pipe) and no ``--yes`` it refuses and removes nothing.
"""

from __future__ import annotations

import argparse
import sys

from wield.cache import cache_entries, cache_root, clear_cache, clearable, human_size
from wield.errors import ConfigError
from wield.cli.output import print_json


def add_cache_command(commands) -> None:
    parser = commands.add_parser("cache", help="list or clear the cache (loaded databases, graphs, op costs)",
                                 description="The cache root is $WIELD_CACHE_DIR or ~/.cache/wield. Every entry "
                                             "can be rebuilt, so clearing it loses no result, only time.")
    actions = parser.add_subparsers(dest="cache_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every entry with its size")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_list)
    clear = actions.add_parser("clear", help="remove the named entries, or every entry")
    clear.add_argument("entries", nargs="*", metavar="ENTRY", help="entry names from 'wield cache list' "
                                                                   "(default: all)")
    clear.add_argument("--yes", "-y", action="store_true", help="remove without asking")
    clear.set_defaults(handler=_clear)


def _list(args: argparse.Namespace) -> int:
    entries = cache_entries()
    if args.json:
        print_json("cache", {"root": str(cache_root()), "entries": [
            {"name": e.name, "bytes": e.bytes, "modified": e.modified, "directory": e.directory} for e in entries]})
        return 0
    print(f"cache root: {cache_root()}")
    for entry in entries:
        print(f"  {entry.describe()}")
    print(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, {human_size(sum(e.bytes for e in entries))}")
    return 0


def _clear(args: argparse.Namespace) -> int:
    root = cache_root()
    if not args.yes:
        chosen = clearable(args.entries, root)
        if not chosen:
            print(f"nothing to remove in {root}")
            return 0
        if not sys.stdin.isatty():
            raise ConfigError("--yes", "not given", reason=(
                f"'wield cache clear' asks before removing {len(chosen)} entries "
                f"({human_size(sum(e.bytes for e in chosen))}) from {root}, and stdin is not a terminal: "
                "pass --yes to remove them without asking"))
        answer = input(f"remove {len(chosen)} entries ({human_size(sum(e.bytes for e in chosen))}) "
                       f"from {root}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing removed")
            return 0
    removed = clear_cache(args.entries, root)
    for entry in removed:
        print(f"removed {entry.name} ({human_size(entry.bytes)})")
    print(f"freed {human_size(sum(e.bytes for e in removed))} in {cache_root()}")
    return 0
