"""``wield db``: start, stop and inspect a throwaway database server for experiments.

    wield db start postgres --dir DIR    # prints the connection URI (no password: it names DIR/pgpass)
    wield db status --dir DIR
    wield db stop --dir DIR [--remove]
"""

from __future__ import annotations

import argparse
import sys

from case_studies.indexing.engines import postgres_server
from wield.cli.output import print_json


def add_db_command(commands, formatter_class=argparse.HelpFormatter) -> None:
    """Register ``wield db`` on the top-level subparsers (entry point ``wield.commands``)."""
    db = commands.add_parser(
        "db", help="start / stop a throwaway database server (PostgreSQL)",
        description="A throwaway PostgreSQL server in a directory of your choosing, listening on a free "
                    "loopback port. Durability is off: it is for experiments only. The URI it prints carries "
                    "no password: the password is in DIR/pgpass (mode 0600, DIR is 0700), which the URI's "
                    "passfile parameter names; 'wield run indexing --engine postgres --server-dir DIR' finds "
                    "the server and its password from DIR alone (and survives a restart on a new port). "
                    "Experiments connect as the role 'wield', which is not a superuser. As root the server "
                    "runs as the unprivileged 'postgres' user (or $WIELD_PG_USER), which must be able to "
                    "reach DIR (e.g. a directory under /tmp). DIR must not be a symbolic link and must belong "
                    "to you (or the server's user); no shell ever sees it. One 'wield db' command works on a "
                    "DIR at a time; a start or stop that was killed is finished by the next one.",
        formatter_class=formatter_class)
    actions = db.add_subparsers(dest="db_action", metavar="ACTION", required=True)
    start = actions.add_parser("start", help="initialise (first time) and start a server; prints its URI "
                                             "(without password) on stdout")
    start.add_argument("engine", choices=postgres_server.ENGINES, help="database engine")
    start.add_argument("--dir", required=True, metavar="DIR", help="directory holding the server's data")
    start.add_argument("--port", type=int, default=None, help="TCP port (default: a free one)")
    start.add_argument("--json", action="store_true", help="print all server facts as JSON")
    start.set_defaults(handler=_start)
    stop = actions.add_parser("stop", help="stop the server of DIR")
    stop.add_argument("--dir", required=True, metavar="DIR")
    stop.add_argument("--remove", action="store_true",
                      help="also delete DIR and all its data (a server left running by a killed start included)")
    stop.set_defaults(handler=_stop)
    status = actions.add_parser("status", help="is the server of DIR running, and its URI")
    status.add_argument("--dir", required=True, metavar="DIR")
    status.set_defaults(handler=_status)


def _start(args: argparse.Namespace) -> int:
    info = postgres_server.start_server(args.dir, args.engine, port=args.port)
    if args.json:
        print_json("database-server", info.as_dict())
    else:
        print(info.uri)
    print(f"wield db: the URI carries no password; role '{info.role}' finds it in {info.passfile} (mode 0600), "
          f"named by the URI's passfile parameter. Use --uri with that URI, or --server-dir {info.directory}.",
          file=sys.stderr)
    return 0


def _stop(args: argparse.Namespace) -> int:
    if args.remove:
        removed = postgres_server.remove_server(args.dir)
        print(f"stopped and removed {args.dir}" if removed else f"{args.dir} does not exist: nothing to remove")
        return 0
    stopped = postgres_server.stop_server(args.dir)
    print(f"stopped the server of {args.dir}" if stopped else f"the server of {args.dir} was not running")
    return 0


def _status(args: argparse.Namespace) -> int:
    info = postgres_server.server_info(args.dir)
    if info is None:
        print(f"no server was started in {args.dir}")
        return 1
    running = postgres_server.is_running(args.dir)
    print(f"{info.engine} {'running' if running else 'stopped'}  {info.uri if running else ''}".rstrip())
    return 0 if running else 1
