"""`mcp-code-mode`: serve, exec, tools, runs, ui (and the agent's `run`, Pyodide's `setup`)."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CodeModeError
from .serve_options import add_log_level, add_serve_arguments
from .settings import Settings, env_files

if TYPE_CHECKING:
    from .config import GatewayConfig
    from .gateway import Gateway

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-code-mode", description="MCP gateway that runs agent code against MCP tools."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    add_serve_arguments(commands.add_parser("serve", help="run the MCP server (stdio or http)"))

    run = commands.add_parser("exec", help="run one snippet against the configured servers")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--code", help="Python source")
    source.add_argument("--file", help="file holding Python source")
    source.add_argument(
        "stdin", nargs="?", choices=["-"], metavar="-", help="'-' reads the source from stdin"
    )
    run.add_argument("--input", help="JSON value passed to the code as `input`")
    run.add_argument("--timeout", type=float, help="seconds (default MCP_CODE_TIMEOUT_S)")
    _common(run)

    tools = commands.add_parser("tools", help="list or search the upstream catalog")
    tools.add_argument("--search", metavar="QUERY", help="rank the tools for this query")
    tools.add_argument("--server", metavar="NAME", help="only this server's tools")
    tools.add_argument("--limit", type=int, default=10, help="hits to show (default 10)")
    _common(tools)

    task = commands.add_parser("run", help="natural-language task through the DSPy agent")
    task.add_argument("task", help="what to do, in plain words")
    _common(task)

    check = commands.add_parser(
        "check", help="try the config: start each server, list its tools, show the settings"
    )
    _common(check)

    runs = commands.add_parser("runs", help="the recorded runs, newest first, or one run")
    runs.add_argument("id", nargs="?", help="show this run with its nested calls")
    runs.add_argument(
        "--last", type=_at_least_one, default=20, metavar="N", help="runs to list (20)"
    )
    _common(runs)

    ui = commands.add_parser("ui", help="serve the runs page on 127.0.0.1")
    ui.add_argument("--port", type=int, default=8766, help="port (default 8766; 0: any free one)")
    ui.add_argument("--config", help="mcp_servers.json path (default: MCP_SERVERS_CONFIG)")
    add_log_level(ui)

    setup = commands.add_parser("setup", help="install optional runtimes")
    setup.add_argument("what", choices=["pyodide"], help="the runtime to install")
    return parser


def _at_least_one(text: str) -> int:
    """A count of 1 or more (`--last 0` said "no runs recorded yet" with runs there)."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, not {text!r}")
    return int(text)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp-code-mode")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="mcp_servers.json path (default: MCP_SERVERS_CONFIG)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_log_level(parser)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show "…": "?" (148)
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    level = getattr(logging, getattr(args, "log_level", "warning").upper())
    logging.basicConfig(level=level, stream=sys.stderr, format="%(message)s")
    try:
        settings = Settings.load(getattr(args, "config", None))
        return _COMMANDS[args.command](settings, args)
    except CodeModeError as exc:
        print(f"mcp-code-mode: {exc}", file=sys.stderr)
        return 1 if args.command == "check" else 2  # check: 1 on any problem (contract §1)
    except UnicodeDecodeError as exc:  # a `.env` read by dotenv (outside attack 140)
        print(f"mcp-code-mode: {_not_text(getattr(args, 'config', None), exc)}", file=sys.stderr)
        return 1 if args.command == "check" else 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `mcp-code-mode runs | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 0


def _not_text(config: str | None, exc: UnicodeDecodeError) -> str:
    """Which `.env` is not UTF-8 text, and where: a traceback was all it said."""
    for path in env_files(config or "mcp_servers.json"):  # the cwd's .env, too
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as found:
            return f"{path}: not UTF-8 text ({found.reason} at byte {found.start})"
        except OSError:
            continue
    return f"a file it reads is not UTF-8 text ({exc.reason} at byte {exc.start})"


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from .executor_server import serve  # the MCP server's stack: only to serve

    asyncio.run(
        serve(
            settings,
            config_path=args.config,
            transport=args.transport,
            host=args.host,
            port=args.port,
        )
    )
    return 0


def _runs(settings: Settings, args: argparse.Namespace) -> int:
    from .runs_cli import show_runs

    return show_runs(settings, last=args.last, run_id=args.id, as_json=args.json)


def _ui(settings: Settings, args: argparse.Namespace) -> int:
    from .runs_page import runs_reader, serve_ui

    asyncio.run(serve_ui(runs_reader(settings), port=args.port))
    return 0


def _check(settings: Settings, args: argparse.Namespace) -> int:
    from .check import check

    return asyncio.run(check(settings, as_json=args.json))


def _setup(settings: Settings, args: argparse.Namespace) -> int:
    from .sandbox.pyodide_setup import setup_pyodide

    print(f"Pyodide is ready in {setup_pyodide(settings.cache_dir)}")
    return 0


_COMMANDS: dict[str, Callable[[Settings, argparse.Namespace], int]] = {
    "serve": _serve,
    "exec": lambda settings, args: asyncio.run(_exec(settings, args)),
    "tools": lambda settings, args: asyncio.run(_tools(settings, args)),
    "run": lambda settings, args: asyncio.run(_run(settings, args)),
    "runs": _runs,
    "ui": _ui,
    "check": _check,
    "setup": _setup,
}


def _read_source(args: argparse.Namespace) -> str:
    if args.code is not None:
        return str(args.code)
    if args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as f:
                return f.read()
        except OSError as exc:
            raise CodeModeError(f"cannot read --file {args.file}: {exc.strerror}") from None
    return sys.stdin.read()


async def _exec(settings: Settings, args: argparse.Namespace) -> int:
    from .gateway import Gateway
    from .terminal_ask import ask_on_terminal

    code = _read_source(args)
    value: Any = None
    if args.input is not None:
        try:
            value = json.loads(args.input)
        except ValueError as exc:
            raise CodeModeError(f"--input is not valid JSON: {exc}") from None
    # Calls that need approval (contract §8) are asked about on the terminal; without one,
    # `exec` is a client that cannot ask.
    approver = ask_on_terminal if sys.stdin.isatty() else None

    # Only the upstreams the code uses start (see `reach`), each when first needed.
    config = _exec_config(settings, args.config)
    async with Gateway(settings, config, connect="on_demand") as gateway:
        waits = asyncio.create_task(_say_waits(gateway)) if sys.stderr.isatty() else None
        try:
            result = await gateway.execute(
                code, input=value, timeout_s=args.timeout, approver=approver, client="cli exec"
            )
        finally:
            if waits is not None:
                waits.cancel()
        _warn_down_servers(gateway)
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        _print_result(result.to_json())
    return 0 if result.ok else 1


_DEFAULT_CONFIG = "mcp_servers.json"


def _exec_config(settings: Settings, given: str | None) -> GatewayConfig:
    """The config `exec` runs against: the one named (`--config`, MCP_SERVERS_CONFIG), else
    `mcp_servers.json` when there is one, else no upstream servers at all (said on stderr)."""
    from .config import GatewayConfig, load_config

    path = given or settings.servers_config
    if given is None and path == _DEFAULT_CONFIG and not Path(path).exists():
        print(f"mcp-code-mode: no {path} here: running with no upstream servers", file=sys.stderr)
        return GatewayConfig(servers={})
    return load_config(path)


def _print_result(data: dict[str, Any]) -> None:
    if data["stdout"]:
        print("--- stdout ---")
        print(_printable(data["stdout"].rstrip("\n")))
    if data["logs"]:
        print("--- logs ---")
        print(_printable("\n".join(data["logs"])))
    if data["ok"]:
        if data["stdout"] or data["logs"]:
            print("--- result ---")
        value = data["result"]
        print(_printable(value) if isinstance(value, str) else json.dumps(value, indent=2))
    else:
        error = data["error"]
        where = f" (line {error['line']})" if error.get("line") else ""
        print(f"error: {error['type']}{where}\n{_printable(error['message'])}", file=sys.stderr)
    calls = data["tool_calls"]
    print(f"[{len(calls)} tool call(s), {data['duration_ms']:.1f} ms]", file=sys.stderr)


def _printable(text: str) -> str:
    """Text a run produced as the terminal may be shown it: no escape sequences or control
    characters (upstream text may carry them; `--json` keeps them, escaped), lone
    surrogates as U+FFFD."""
    from .encodable import clean_text

    return clean_text(text)


async def _tools(settings: Settings, args: argparse.Namespace) -> int:
    from .encodable import clean_text
    from .gateway import Gateway

    async with Gateway.from_settings(settings, args.config) as gateway:
        _warn_down_servers(gateway)
        catalog = gateway.catalog
        if args.search:
            rows = gateway.search_tools(args.search, args.limit, server=args.server)
        else:
            entries = catalog.tools_of(args.server) if args.server else list(catalog.entries)
            rows = [
                {
                    "server": e.server,
                    "tool": clean_text(e.tool),  # shown: an upstream's name may hold escapes
                    "signature": catalog.signature(e),
                    "description": clean_text((e.schema.description or "").strip().split("\n")[0]),
                }
                for e in entries
            ]
            rows = gateway.config.redact_rows(rows, "description")  # as search_tools' are
        if args.json:
            print(
                json.dumps(
                    {
                        "tools": rows,
                        "servers": gateway.list_servers(),
                        "sandbox": gateway.sandbox_info(),
                    },
                    ensure_ascii=False,
                )
            )
        else:
            for row in rows:  # hits and rows hold upstream text cleaned for the terminal
                print(clean_text(row["signature"]))
                if row["description"]:
                    print(f"    {clean_text(row['description'])}")
            if not rows:  # nothing at all was as silent as a broken search (M)
                what = f"no tool fits {args.search!r}" if args.search else "no tools"
                print(f"mcp-code-mode: {clean_text(what)}", file=sys.stderr)
    return 0


async def _run(settings: Settings, args: argparse.Namespace) -> int:
    from . import agent  # imports dspy: only for `run`
    from .agent_lm import acheck_lm, lm_call_limit_s
    from .gateway import Gateway
    from .terminal_ask import ask_on_terminal

    lm = agent.make_lm(settings)
    # a wrong URL or key is told before anything starts
    await acheck_lm(lm, lm_call_limit_s(settings.dspy_timeout_s, settings.dspy_num_retries))

    async def show(number: int, step: agent.Step) -> None:
        if args.json:
            return
        # the model's text as a terminal may show it (escapes, surrogates: attack 129)
        print(_printable(f"--- step {number} ---\n{step.code}"))
        if step.ok:
            print(_printable("=> " + json.dumps(step.result, ensure_ascii=False)[:2000]))
        else:
            error = step.error or {}
            print(_printable(f"=> {error.get('type')}: {error.get('message')}"))

    # On a terminal a person is asked, as `exec` asks: the calls the model writes are the
    # ones approval is for (they ran unasked under `auto`: outside attack 129).
    approver = ask_on_terminal if sys.stdin.isatty() else None
    async with Gateway.from_settings(settings, args.config) as gateway:
        _warn_down_servers(gateway)
        try:
            result = await agent.run_task(gateway, lm, args.task, show, approver=approver)
        except Exception as exc:  # a failure of ours (the model's are steps): told clearly
            raise CodeModeError(f"the agent failed: {type(exc).__name__}: {exc}") from None
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(_printable(f"--- answer ---\n{result['answer']}"))
        tokens, error = result["tokens"], result["error"]
        print(
            f"[{'finished' if result['finished'] else 'not finished'}: "
            f"{len(result['steps'])} step(s), {len(result['tool_calls'])} tool call(s), "
            f"{tokens['prompt']} + {tokens['completion']} tokens]",
            file=sys.stderr,
        )
        if error is not None:
            print(_printable(f"{error['type']}: {error['message']}"), file=sys.stderr)
    return 0 if result["finished"] else 1


async def _say_waits(gateway: Gateway, after_s: float = 1.0) -> None:
    """On a terminal, a line for each upstream the run is still waiting for, once it has
    taken longer than `after_s` (a first start can take seconds: a person should know)."""
    said: set[str] = set()
    await asyncio.sleep(after_s)
    while True:
        for row in gateway.list_servers():
            waiting = row["status"] == "starting" and "not started yet" not in (row["error"] or "")
            if waiting and row["name"] not in said:
                said.add(row["name"])
                print(f"mcp-code-mode: starting upstream {row['name']}…", file=sys.stderr)
        await asyncio.sleep(0.5)


def _warn_down_servers(gateway: Gateway) -> None:
    """A warning on stderr for each upstream that tried to connect and failed."""
    for row in gateway.list_servers():
        if row["status"] == "error":
            print(f"warning: server {row['name']!r}: {row['error']}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
