"""The ``mcp-providers`` command: ``serve``, ``plugins``, ``check``, ``new`` and ``demo``.

Exit codes: 0 success; 1 a check failed, a plugin was rejected or a configured source is unavailable
under ``--strict``, or the config is wrong; 2 usage errors (typer's). A configured source that serves
nothing (an upstream MCP server that cannot be started or listed, an OpenAPI document that cannot
be read, a provider whose ``lifespan`` fails to start) fails ``check`` and ``serve --strict``;
plain ``serve`` warns and serves the rest (:mod:`mcp_providers._serve.sources`).

Human output goes to stdout for ``plugins``/``check``/``demo``; while ``serve`` speaks MCP over
stdio, stdout belongs to the protocol and logs go to stderr.
"""

# No ``from __future__ import annotations`` here: typer reads every command's signature at each
# run, and string annotations made it evaluate some 220 of them (about 5 ms of every start).
import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from mcp_providers import _gc
from mcp_providers._cli import logs
from mcp_providers._cli.console import err, escape, out
from mcp_providers._cli.logs import LogFormat, LogLevel
from mcp_providers._cli.version import version_line

with _gc.paused(promote=True):  # the MCP SDK and the serving core: long-lived objects almost only (mcp_providers._gc)
    import anyio
    import typer

    from mcp_providers._cli import report
    from mcp_providers._cli.near_groups import near_misses
    from mcp_providers._cli.serving import bracketed, serve_http, traces
    from mcp_providers._cli.stdio import compose_checked as _compose
    from mcp_providers._cli.stdio import load as _load
    from mcp_providers._cli.stdio import logged as _logged
    from mcp_providers._cli.stdio import run
    from mcp_providers._cli.stdio import serve_over as _serve_stdio
    from mcp_providers._cli.stdio import started as _started
    from mcp_providers._cli.workers import FD_ENV, WHY_CLUSTER, WHY_STATELESS, serve_workers
    from mcp_providers._serve.composition import Composition
    from mcp_providers._serve.reload import hold_sighup
    from mcp_providers._serve.transport.http_policy import is_wildcard
    from mcp_providers._serve.transport.stdio_fds import guarded_stdout
    from mcp_providers.config import CONFIG_ENV, Config
    from mcp_providers.errors import CompositionError

app = typer.Typer(
    name="mcp-providers",
    help="Compose one MCP server out of installed provider plugins.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


__all__ = [
    "app",
    "main",
]


ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help=f"TOML config file (default: ${CONFIG_ENV}, else none).", show_default=False),
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict", help="Fail if any plugin is rejected, any check fails or any configured source is unavailable."
    ),
]
VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Log with timestamps and the tracebacks of plugin and source failures.")
]
SetOption = Annotated[
    str | None,
    typer.Option("--set", help="Use the config's plugin set NAME (default: the config's set key).", show_default=False),
]


def _print_version(value: bool) -> None:
    if value:
        out.print(version_line(), markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and the MCP SDK's, then exit."
        ),
    ] = False,
) -> None:
    """Compose one MCP server out of installed provider plugins."""


def _parse_hostport(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536 or "/" in host:
        raise typer.BadParameter(
            f"expected HOST:PORT with a port from 1 to 65535, such as 127.0.0.1:8000, got {value!r}",
            param_hint="--http",
        )
    return host.strip("[]") or "127.0.0.1", int(port)


_LogLevelOption = Annotated[
    LogLevel | None,
    typer.Option("--log-level", help="The log's level on stderr (default: [server] log_level, else warning)."),
]
_LogFormatOption = Annotated[
    LogFormat | None,
    typer.Option("--log-format", help="Log lines as text or json (default: [server] log_format, else text)."),
]


@app.command()
def serve(
    config: ConfigOption = None,
    plugin_set: SetOption = None,
    strict: StrictOption = False,
    http: Annotated[
        str | None,
        typer.Option("--http", help="Serve streamable HTTP on HOST:PORT (e.g. 127.0.0.1:8000) instead of stdio."),
    ] = None,
    stateless: Annotated[bool, typer.Option("--stateless", help="Streamable HTTP without sessions.")] = False,
    json_response: Annotated[
        bool, typer.Option("--json-response", help="Answer HTTP POSTs with JSON, not SSE.")
    ] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="A Host header (NAME or NAME:PORT) accepted over HTTP besides the bound address; "
            "required when binding 0.0.0.0 or ::.",
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option("--workers", min=1, help="Serve HTTP from N processes sharing the port; N > 1 needs [cluster]."),
    ] = 1,
    watch: Annotated[
        bool, typer.Option("--watch", help="Reload when the config file changes (SIGHUP always reloads).")
    ] = False,
    log_level: _LogLevelOption = None,
    log_format: _LogFormatOption = None,
) -> None:
    """Serve the composed MCP server over stdio (default) or streamable HTTP; SIGHUP reloads it."""
    hold_sighup()  # first: composing takes seconds, and an unheld SIGHUP would end the process
    logs.configure(log_level or "warning", log_format or "text")  # the config, once read, may say more
    address = _parse_hostport(http) if http is not None else None
    if address is None and (stateless or json_response or allow_host):
        raise typer.BadParameter("--stateless, --json-response and --allow-host go with --http HOST:PORT")
    if address is not None and is_wildcard(address[0]) and not allow_host:
        raise typer.BadParameter(
            f"binding {address[0]} accepts connections on every interface, but the server only answers Host "
            "headers it knows: name them with --allow-host (e.g. --allow-host myhost.example:8000), or bind "
            "127.0.0.1",
            param_hint="--http",
        )
    watched = watched_file(config) if watch else None
    if address is None:
        run(config, plugin_set, strict, watched, log_level, log_format, serving=_serve_stdio)
        return
    loaded = _logged(_load(config, plugin_set), log_level, log_format)
    if workers > 1 and not os.environ.get(FD_ENV):
        start_workers(workers, address, loaded, stateless)
    with traces():
        composition, server, reloader = _started(loaded, config, plugin_set, strict, watched)
        serve_http(composition, server, address, stateless, json_response, allow_host, reloader)


def watched_file(config: Path | None) -> str:
    """The config file ``--watch`` watches: ``-c``, else ``$MCP_PROVIDERS_CONFIG``."""
    path = config if config is not None else os.environ.get(CONFIG_ENV)
    if not path:
        raise typer.BadParameter("--watch needs a config file: pass -c FILE or set $MCP_PROVIDERS_CONFIG")
    return str(path)


def start_workers(workers: int, address: tuple[str, int] | None, config: Config, stateless: bool) -> None:
    """Run ``workers`` copies of this command on one socket (``_cli/workers.py``), then exit."""
    if address is None:
        raise typer.BadParameter("--workers goes with --http HOST:PORT", param_hint="--workers")
    if not stateless:
        raise typer.BadParameter(f"--workers {workers} needs --stateless: {WHY_STATELESS}", param_hint="--workers")
    if config.cluster is None:
        raise typer.BadParameter(
            f"--workers {workers} needs a [cluster] section: {WHY_CLUSTER}", param_hint="--workers"
        )
    err.print(f"serving MCP on http://{bracketed(address[0])}:{address[1]}/mcp with {workers} workers", highlight=False)
    raise typer.Exit(serve_workers(workers, *address))


@app.command()
def plugins(
    config: ConfigOption = None,
    plugin_set: SetOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    settings: Annotated[
        bool, typer.Option("--settings", help="Also show each loaded plugin's settings JSON schema.")
    ] = False,
    verbose: VerboseOption = False,
) -> None:
    """List every plugin found: loaded, rejected (with the reason) or disabled, and which rule chose it."""
    logs.for_report(verbose)
    with guarded_stdout() if as_json else contextlib.nullcontext(1) as machine_out:
        # with --json, stdout is machine-readable: plugins printing at import time go to stderr.
        composition = _compose(_load(config, plugin_set), strict=False)
        missed = [str(p) for p in near_misses()]  # plugins declared in a misspelled group
        if as_json:
            rows = _plugin_rows(composition, settings)
            document = {"plugins": rows, "problems": [str(p) for p in composition.problems], "warnings": missed}
            os.write(machine_out, json.dumps(document, indent=2).encode() + b"\n")
            return
    rows = _plugin_rows(composition, settings)
    from rich.table import Table

    table = Table(title="mcp-providers plugins")
    for column in ("plugin", "distribution", "status", "selection", "providers / reason"):
        table.add_column(column, overflow="fold")  # long names wrap instead of being cut
    for r in rows:
        dist = f"{r['distribution'] or '-'} {r['version'] or ''}".strip()
        detail = {
            "loaded": ", ".join(r["providers"]) or "(no providers)",
            "rejected": r["reason"] or "",
            "disabled": "-",  # the selection column says why
        }[r["status"]]
        color = {"loaded": "green", "rejected": "red", "disabled": "yellow"}[r["status"]]
        table.add_row(r["name"], dist, f"[{color}]{r['status']}[/{color}]", escape(r["selection"]), escape(detail))
    out.print(table)
    for line in missed:
        out.print(f"warning: {line}", markup=False, highlight=False)
    if settings:
        for r in rows:
            out.print(f"\nsettings of {r['name']} ([plugins.{r['name']}]):", markup=False, highlight=False)
            if r["settings_schema"] is None:
                why = "takes no settings" if r["status"] == "loaded" else f"{r['status']}, so its model is unknown"
                out.print(f"  ({why})", markup=False, highlight=False)
            else:
                out.print_json(json.dumps(r["settings_schema"]))


def _plugin_rows(composition: Composition, settings: bool) -> list[dict[str, Any]]:
    rows = [r.as_dict() for r in composition.records]
    if settings:
        from mcp_providers._cli.schemas import settings_schema  # JSON schemas only for --settings

        for row, record in zip(rows, composition.records, strict=True):
            model = record.settings_model
            row["settings_schema"] = settings_schema(model) if model is not None else None
    return rows


@app.command()
def check(config: ConfigOption = None, plugin_set: SetOption = None, verbose: VerboseOption = False) -> None:
    """Check every plugin, declaration and configured source; exit 1 with one line per problem."""
    logs.for_report(verbose, prints_failures=True)
    composition = _compose(_load(config, plugin_set), strict=False)
    failures = report.failures(composition)
    order, warnings = report.warnings(composition)
    if order is not None:
        err.print(order, markup=False, highlight=False)
    for line in [*warnings, *failures]:  # a warning names its fix but does not fail the check
        out.print(line, markup=False, highlight=False)
    if failures:
        out.print(
            f"check failed: {len(failures)} problem(s); {report.summary(composition)}", markup=False, highlight=False
        )
        raise typer.Exit(1)
    out.print(f"check passed: {report.summary(composition)}", markup=False, highlight=False)


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="Entry-point name of the new plugin, e.g. weather.")],
    dest: Annotated[
        Path | None,
        typer.Option("--dest", help="Folder to render into (default: ./mcp-providers-NAME).", show_default=False),
    ] = None,
) -> None:
    """Render a new third-party provider package from the plugin template (needs copier)."""
    from mcp_providers._cli.scaffold import ScaffoldError, next_steps, render_plugin_package

    try:
        where = render_plugin_package(name, dest)
    except ScaffoldError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    out.print(f"rendered plugin {name!r} into {where}", markup=False, highlight=False)
    steps = "".join(f"\n  {command}" for command in next_steps(where))
    out.print(f"next, in order:{steps}", markup=False, highlight=False)


@app.command()
def demo(
    samples: Annotated[int, typer.Option(min=1, help="How many resources to read and show.")] = 12,
    config: ConfigOption = None,
    plugin_set: SetOption = None,
) -> None:
    """Start the composed server as a subprocess, connect a real MCP client over stdio and tour it."""
    from mcp_providers._cli.demo import run_demo

    _load(config, plugin_set)  # a bad config is refused here, with the same message as serve's
    code = run_demo(out, samples=samples, config_path=config, plugin_set=plugin_set)
    raise typer.Exit(code)


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


@app.command()
def inspect(
    config: ConfigOption = None,
    plugin_set: SetOption = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """List every resource, template, tool and prompt the config serves, with its plugin and provider."""
    logs.for_report(verbose)
    from mcp_providers._cli.explore import inventory, print_inventory

    with guarded_stdout() if as_json else contextlib.nullcontext(1) as machine_out:
        composition = _compose(_load(config, plugin_set), strict=False)
        document = inventory(composition)
        if as_json:
            os.write(machine_out, json.dumps(document, indent=2).encode() + b"\n")
            return
    print_inventory(out, document)


def _refusing(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``; a composition that refuses to serve ends the command with its lines and exit 1."""
    try:
        return run()
    except CompositionError as exc:
        err.print(f"[red]{escape(exc.problems[0])}[/red]", highlight=False)
        for line in exc.problems[1:]:
            err.print(f"  {line}", highlight=False, markup=False)
        raise typer.Exit(1) from None


@app.command()
def read(
    uri: Annotated[str, typer.Argument(help="The resource URI, e.g. documcp://ssgs/available.")],
    config: ConfigOption = None,
    plugin_set: SetOption = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Read one resource through the whole pipeline (gate, scope, receipt) in this process; exit 1 on an error."""
    logs.for_report(verbose)
    from mcp_providers._cli.explore import print_result
    from mcp_providers._cli.explore import read as read_one

    with guarded_stdout() if as_json else contextlib.nullcontext(1) as machine_out:
        composition = _compose(_load(config, plugin_set), strict=False)
        result = _refusing(lambda: anyio.run(read_one, composition, uri))
        if as_json:
            os.write(machine_out, json.dumps(result, indent=2).encode() + b"\n")
            raise typer.Exit(1 if "error" in result else 0)
    raise typer.Exit(print_result(out, uri, result))


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="The tool's name.")],
    arg: Annotated[list[str] | None, typer.Option("--arg", help="An argument as KEY=VALUE (repeatable).")] = None,
    arguments_json: Annotated[
        str | None, typer.Option("--args-json", help="All arguments as one JSON object.", show_default=False)
    ] = None,
    config: ConfigOption = None,
    plugin_set: SetOption = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Call one tool through the whole pipeline in this process; exit 1 on an error or isError."""
    logs.for_report(verbose)
    from mcp_providers._cli.explore import call as call_one
    from mcp_providers._cli.explore import parse_arguments, print_result

    with guarded_stdout() if as_json else contextlib.nullcontext(1) as machine_out:
        composition = _compose(_load(config, plugin_set), strict=False)
        entry = next((e for e in composition.catalog.tools if e.declaration.name == tool), None)
        schema = entry.declaration.input_model.model_json_schema() if entry is not None else None
        try:
            arguments = parse_arguments(arg or [], arguments_json, schema)
        except ValueError as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
        result = _refusing(lambda: anyio.run(call_one, composition, tool, arguments))
        failed = "error" in result or bool(result.get("isError"))
        if as_json:
            os.write(machine_out, json.dumps(result, indent=2).encode() + b"\n")
            raise typer.Exit(1 if failed else 0)
    raise typer.Exit(print_result(out, tool, result))


ADMIN_TOKEN_ENV = "MCP_PROVIDERS_ADMIN_TOKEN"


@app.command()
def reload(
    url: Annotated[
        str | None,
        typer.Option("--url", help="The server's HTTP base, e.g. http://127.0.0.1:8000 (POSTs /admin/reload)."),
    ] = None,
    token_env: Annotated[
        str, typer.Option("--token-env", help="Environment variable holding the bearer token [server.admin] names.")
    ] = ADMIN_TOKEN_ENV,
    pid: Annotated[
        int | None, typer.Option("--pid", help="Send SIGHUP to this process instead (a stdio server, say).")
    ] = None,
    cluster: Annotated[
        bool, typer.Option("--cluster", help="Also announce it to every replica of the [cluster] (with --url).")
    ] = False,
) -> None:
    """Reload a running server's config and installed plugins; exit 1 when the reload failed
    (the server keeps serving its previous composition and says why)."""
    if (url is None) == (pid is None):
        raise typer.BadParameter("give either --url (a server serving HTTP) or --pid (any server)")
    from mcp_providers._cli.reload import ask_reload, signal_reload

    if pid is not None:
        raise typer.Exit(signal_reload(out, err, pid))
    raise typer.Exit(ask_reload(out, err, str(url), token_env, cluster=cluster))


def main() -> None:
    """Entry point of the ``mcp-providers`` script."""
    app()
