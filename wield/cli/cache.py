"""``wield cache list|clear``: what the cache root holds (sizes per entry) and removing it.

The cache root (``$WIELD_CACHE_DIR`` or ``~/.cache/wield``, see ``wield.cache``) holds what case studies can
rebuild: loaded base databases, traced graphs, operation costs. Nothing evicts it, so this is how to see and
reclaim the space.
"""

from __future__ import annotations

import argparse

from wield.cache import cache_entries, cache_root, clear_cache, human_size
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
    print(f"{len(entries)} entries, {human_size(sum(e.bytes for e in entries))}")
    return 0


def _clear(args: argparse.Namespace) -> int:
    removed = clear_cache(args.entries)
    for entry in removed:
        print(f"removed {entry.name} ({human_size(entry.bytes)})")
    print(f"freed {human_size(sum(e.bytes for e in removed))} in {cache_root()}")
    return 0
