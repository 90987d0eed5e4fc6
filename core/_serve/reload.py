"""Reload: compose a new assembly off the serving path, check it, and swap it in, or keep serving
the old one and say why.

::

    trigger (SIGHUP, a config file watch, POST /admin/reload, Reloader.reload())
      -> read and validate the config -> refuse what needs a restart
      -> rescan entry points and compose (in a worker thread; requests go on being served)
      -> refuse any failure the serving assembly did not have (import, collision, policy, ...)
      -> Runtime.swap -> notifications/*/list_changed for the lists that changed

An unchanged plugin (the same imported object, equal settings) keeps its provider objects and
their running lifespans; module code is never imported again, so a plugin distribution upgraded
on disk keeps serving its old code until a restart, and the attempt says so. What an attempt did is
kept (:attr:`Reloader.last`, counted in :attr:`Reloader.outcomes`) for ``/readyz``, ``/metrics``
and ``mcp-providers reload``.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from mcp_providers import _gc
from mcp_providers._host import compat
from mcp_providers._host.assembly import Assembly, assemble
from mcp_providers._metadata import forget_installed
from mcp_providers._serve.composition import Composition
from mcp_providers._serve.runtime import SHUTTING_DOWN, NotServing
from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers.config import Config

log = logging.getLogger("mcp_providers.reload")

Outcome = Literal["applied", "unchanged", "failed"]

RELOADABLE_SERVER_KEYS = frozenset({"page_size", "max_read_bytes", "max_result_bytes", "max_embed_bytes",
                                    "require_plugins"})  # fmt: skip
"""``[server]`` keys a reload applies; any other ``[server]`` key, and ``[cluster]``, is read at
start-up only (transport, identity, audit sinks, limits, shared state), so changing one is refused."""


COMPOSE_SECONDS = 120.0
"""How long composing a reload's assembly may take (rescanning entry points, importing new plugins,
running their hooks), in seconds; past it the reload fails and the old assembly goes on serving."""


def config_digest(config: Config) -> str:
    """A short SHA-256 digest (16 hex digits) of the validated config, environment overrides
    included: equal for equal configs however the file is written. Secrets are not in a config
    (it names the environment variables that hold them)."""
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Attempt:
    """What one reload did."""

    trigger: str
    """What asked for it: ``"SIGHUP"``, ``"file"``, ``"admin"``, ``"cluster"`` (another replica) or ``"api"``."""
    outcome: Outcome
    at: float
    """When it ended, Unix time in seconds."""
    digest: str
    """The config digest it read (``""`` when the config could not be read)."""
    generation: int
    """The generation serving after it (one more than before when applied)."""
    problems: tuple[str, ...] = ()
    """Why it failed: one line each, saying what to fix."""
    warnings: tuple[str, ...] = ()
    """What it serves with a caveat: stale plugin code, providers that failed to start, and each
    listed declaration left out because it collided (``left-out``, naming both sides)."""
    changed: tuple[str, ...] = ()
    """The lists clients were told about (``resources``, ``tools``, ``prompts``)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Reloader:
    """Reloads one composition from where its config comes from.

    :param composition: what is served; its runtime's generation is what a reload replaces.
    :param load: reads and validates the config again (``load_config`` with the path and the
        ``--set`` of start-up); may raise :class:`~mcp_providers.errors.ConfigError`.
    :param load_entrypoints: and ``plugins``: as given to :func:`~mcp_providers.compose`.
    """

    def __init__(
        self,
        composition: Composition,
        load: Callable[[], Config],
        *,
        load_entrypoints: bool = True,
        plugins: Mapping[str, object] | None = None,
    ) -> None:
        self.composition = composition
        self._load = load
        self._compose = functools.partial(_assemble, load_entrypoints=load_entrypoints, plugins=plugins)
        self.digest = config_digest(composition.config)
        """The digest of the config being served."""
        self.last: Attempt | None = None
        self.outcomes: collections.Counter[str] = collections.Counter()
        self._lock = anyio.Lock()
        self._imported = imported_versions(composition.assembly, {})
        """Plugin name -> the version of its distribution when its code was imported (read now:
        a later upgrade or uninstall rewrites the files this would be read from)."""
        composition.runtime.hub.reload_requested = self._requested

    def _requested(self, trigger: str) -> None:
        """A provider's declarations changed at their source: reload in the background."""
        self.composition.runtime.start_soon(functools.partial(self.reload, trigger))

    async def reload(self, trigger: str = "api") -> Attempt:
        """Compose again and swap it in if it passes; one at a time. Never raises for what the new
        config or plugins do wrong: that is a ``failed`` attempt and the old assembly keeps serving."""
        async with self._lock:
            _gc.thaw()  # what start-up froze may be replaced now: let the collector have it again
            try:
                attempt = await self._attempt(trigger)
            except NotServing as exc:  # the server shuts down: nothing to reload, nothing wrong
                attempt = self._ended(trigger, "failed", "", [str(exc)])
                log.info("reload (%s) not applied: the server is shutting down", trigger)
            except Exception as exc:  # a bug of ours, not the operator's: still keep serving
                log.exception("reload failed unexpectedly")
                attempt = self._ended(trigger, "failed", "", [f"reload failed: {type(exc).__name__}: {exc}"])
            else:
                _log(attempt)
            self.last = attempt
            self.outcomes[attempt.outcome] += 1
            return attempt

    async def _attempt(self, trigger: str) -> Attempt:
        """What reloading did; :raises NotServing: the server stopped serving while it composed."""
        serving = self.composition.runtime.serving
        try:
            config = await anyio.to_thread.run_sync(self._load)  # a slow disk must not stall requests
        except Exception as exc:  # ConfigError, or an OSError reading it
            return self._ended(trigger, "failed", "", [f"the config could not be read: {exc}"])
        digest = config_digest(config)
        old = self.composition.assembly
        problems = restart_only(old.config, config)
        if problems:
            return self._ended(trigger, "failed", digest, problems)
        try:
            new = await _in_daemon_thread(self._compose, config, old, seconds=COMPOSE_SECONDS)
        except ComposeTimeout:
            why = (f"composing the new config took longer than {COMPOSE_SECONDS} s: a plugin's import or hook did "
                   "not return (it is left running in the background)")  # fmt: skip
            return self._ended(trigger, "failed", digest, [why])
        except Exception as exc:  # ConfigError: a selection naming a plugin no longer installed
            return self._ended(trigger, "failed", digest, [str(exc)])
        problems = new_failures(old, new)
        if problems:
            return self._ended(trigger, "failed", digest, problems)
        warnings = stale_code(self._imported, old, new) + [str(p) for p in new.left_out]
        if digest == self.digest and _same_providers(old, new):
            return self._ended(trigger, "unchanged", digest, warnings=warnings)
        changed = changed_lists(old, new)
        if serving and not self.composition.runtime.serving:  # it stopped while this composed
            raise NotServing(SHUTTING_DOWN)
        await self.composition.runtime.swap(new)
        warnings += failed_to_start(old, new, self.composition.runtime.startup_failures)
        self.digest = digest
        self._imported = imported_versions(new, self._imported)
        await self.composition.runtime.hub.lists_changed(changed)
        return self._ended(trigger, "applied", digest, warnings=warnings, changed=sorted(changed))

    def _ended(
        self,
        trigger: str,
        outcome: Outcome,
        digest: str,
        problems: list[str] | None = None,
        *,
        warnings: list[str] | None = None,
        changed: list[str] | None = None,
    ) -> Attempt:
        generation = self.composition.runtime.generation.number
        return Attempt(trigger, outcome, time.time(), digest, generation, tuple(problems or ()),
                       tuple(warnings or ()), tuple(changed or ()))  # fmt: skip


def guard_config_file(path: str | None, load: Callable[..., Config]) -> Callable[[], Config]:
    """``load`` (``load_config`` with the path and the CLI's options), asked to read the file as a
    reload must: a regular file that holds something (``load_config(..., reloading=True)``). A file
    being written in place, caught between truncation and write, would otherwise compose every
    installed plugin with its defaults, policy rules gone, until the write lands; a FIFO's read
    would wait for ever. Both are judged on the one read that is parsed, so a truncation between a
    look and the read cannot slip past (round 4 item 8).

    :param path: the config file (``None``: no file, nothing to judge).
    :raises ConfigError: either of those (else whatever ``load`` raises).
    """
    if path is None:
        return lambda: load()
    return lambda: load(reloading=True)


class ComposeTimeout(Exception):
    """Composing took longer than its ``seconds`` (the first argument)."""


async def _in_daemon_thread(work: Callable[..., Any], *args: Any, seconds: float) -> Any:
    """``work(*args)`` in a daemon thread of its own; its result, or what it raised.

    :raises ComposeTimeout: it took longer than ``seconds``; it is left running (a daemon thread:
        it keeps neither this reload, the next ones, nor the process's exit waiting; a worker
        thread of ``anyio.to_thread`` would be joined at exit).
    """
    done, outcome = anyio.Event(), {}
    token = anyio.lowlevel.current_token()

    def run() -> None:
        try:
            outcome["value"] = work(*args)
        except BaseException as exc:  # handed back to the awaiting task
            outcome["error"] = exc
        with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody waits
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=run, name="mcp-providers reload", daemon=True).start()
    with anyio.move_on_after(seconds):
        await done.wait()
    if not done.is_set():
        raise ComposeTimeout(seconds)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _log(attempt: Attempt) -> None:
    if attempt.outcome == "failed":
        log.error("reload (%s) failed; still serving the previous config: %s", attempt.trigger,
                  "; ".join(attempt.problems))  # fmt: skip
        return
    log.info("reload (%s) %s: config %s, generation %d, lists changed: %s", attempt.trigger, attempt.outcome,
             attempt.digest, attempt.generation, ", ".join(attempt.changed) or "none")  # fmt: skip
    for line in attempt.warnings:
        log.warning("reload: %s", line)


def _assemble(
    config: Config, previous: Assembly, *, load_entrypoints: bool, plugins: Mapping[str, object] | None
) -> Assembly:
    """A new assembly for ``config``, seeing distributions installed or removed since ``previous``."""
    forget_installed()
    compat.forget()
    return assemble(config, load_entrypoints=load_entrypoints, plugins=plugins, previous=previous)


def restart_only(old: Config, new: Config) -> list[str]:
    """One line per setting the new config changes that a reload cannot apply."""
    before, after = old.server.model_dump(), new.server.model_dump()
    lines = [
        f"[server] {key} changed; it is read at start-up only: restart to apply it, or put it back"
        for key in sorted(set(before) | set(after))
        if key not in RELOADABLE_SERVER_KEYS and before.get(key) != after.get(key)
    ]
    if old.cluster != new.cluster:
        lines.append("[cluster] changed; it is read at start-up only: restart to apply it, or put it back")
    return lines


def new_failures(old: Assembly, new: Assembly) -> list[str]:
    """What is wrong with ``new`` that was not wrong with ``old`` (a broken plugin left out at
    start-up does not block every later reload), and every reason serving would refuse."""
    known = set(old.failures)
    lines = [line for line in new.failures if line not in known]
    lines += [f"refusing to serve: required_plugins not met: {line}" for line in new.unmet_requirements]
    lines += [  # a required plugin not served is in both lists: said once, as what it is
        f"refusing to serve without its authorization policy: {line}"
        for line in new.policy_failures
        if line not in lines
    ]
    return list(dict.fromkeys(lines))


def failed_to_start(old: Assembly, new: Assembly, failures: Mapping[str, str]) -> list[str]:
    """One line per provider ``new`` added whose ``lifespan`` failed to start (``failures``, the
    runtime's). Why is logged, not said here: ``/readyz`` shows the attempt to anyone, and a
    plugin's exception may hold what it was given."""
    before = {id(d.provider) for d in old.declared}
    return [
        f"provider {d.provider.name!r} (plugin {d.plugin!r}) failed to start; its requests get an upstream "
        "error until a reload or a restart starts it; the server log says why"
        for d in new.declared
        if id(d.provider) not in before and d.provider.name in failures
    ]


def imported_versions(assembly: Assembly, known: Mapping[str, str | None]) -> dict[str, str | None]:
    """Plugin name -> its distribution's version when its code was imported: ``known``, plus every
    plugin of ``assembly`` loaded for the first time, read now (a module is imported only once, so
    one off for a while and on again still runs the code imported first)."""
    versions = dict(known)
    for record in assembly.records:
        if record.status == "loaded" and record.name not in versions:
            versions[record.name] = _version_of(record)
    return versions


def _version_of(record: Any) -> str | None:
    """The version in the record's ``<name>-<version>.dist-info`` folder name (the wheel format's
    rule, so nothing is read at start-up), else its metadata's."""
    folder = os.path.basename(str(getattr(record.dist, "_path", "")))
    stem, dot, suffix = folder.rpartition(".")
    if suffix == "dist-info" and dot and "-" in stem:
        return stem.rsplit("-", 1)[1]  # names escape "-" as "_"; normalized versions have none
    return record.version  # type: ignore[no-any-return]


def stale_code(imported: Mapping[str, str | None], old: Assembly, new: Assembly) -> list[str]:
    """One line per plugin whose distribution's version on disk is no longer the one whose code
    was imported (``imported``) and keeps serving."""
    before = {r.name: r for r in old.records if r.status == "loaded"}
    lines = []
    for record in new.records:
        was = before.get(record.name)
        version = imported.get(record.name)
        if was is not None and was.plugin is record.plugin and version != record.version:
            lines.append(
                f"{record.name}: distribution {record.distribution} is now {record.version} on disk, but "
                f"{version}'s code was imported and keeps serving; restart to load {record.version}"
            )
    return lines


def _same_providers(old: Assembly, new: Assembly) -> bool:
    return [id(d.provider) for d in old.declared] == [id(d.provider) for d in new.declared]


def changed_lists(old: Assembly, new: Assembly) -> frozenset[str]:
    """Which lists a client would see change: ``resources`` (and templates), ``tools``, ``prompts``.
    A changed policy (which plugins answer ``authorize``, or their settings) changes every list
    either serves for some caller: each list is filtered by what its caller may list."""
    changed = set()
    policy_changed = _policy(old) != _policy(new)
    for kind, of in (("resources", _resource_list), ("tools", _tool_list), ("prompts", _prompt_list)):
        before, after = of(old), of(new)
        if before != after or (policy_changed and (before or after)):
            changed.add(kind)
    return frozenset(changed)


def _policy(a: Assembly) -> list[tuple[str, Any]]:
    return [(impl.plugin, impl.settings) for impl in a.authorize]


def _resource_list(a: Assembly) -> list[Any]:
    c = a.catalog
    return [e.declaration for e in c.resources] + [e.declaration for e in c.templates]


def _tool_list(a: Assembly) -> list[Any]:
    return [e.declaration for e in a.catalog.tools]


def _prompt_list(a: Assembly) -> list[Any]:
    return [e.declaration for e in a.catalog.prompts]


# -- triggers ----------------------------------------------------------------------------------


async def announce(reloader: Reloader) -> bool:
    """Ask every other replica of the ``[cluster]`` to reload (over its Redis channel); ``False``
    without ``[cluster]``. Each replica reads its own config file: give them one (one ConfigMap).

    :raises ClusterUnavailable: Redis did not take the announcement in time.
    """
    backend = reloader.composition.runtime.shared
    if not isinstance(backend, RedisBackend):
        return False
    await backend.announce_reload()
    return True


async def on_announce(reloader: Reloader) -> None:
    """Reload whenever another replica announces a reload (with ``[cluster]``), until cancelled."""
    backend = reloader.composition.runtime.shared
    if not isinstance(backend, RedisBackend):
        return
    wake = anyio.Event()

    def announced() -> None:
        wake.set()

    backend.on_reload = announced
    try:
        while True:
            await wake.wait()
            wake = anyio.Event()
            await reloader.reload("cluster")
    finally:
        backend.on_reload = None


_EARLY_SIGHUP = {"pending": False}  # signals are the process's: so is this


def hold_sighup() -> None:
    """From now on, a ``SIGHUP`` that arrives before :func:`on_sighup` listens (while the server
    is still composing, for seconds) is kept for it, one reload once serving, instead of ending
    the process, the signal's default action. Main thread only; nothing where there is no SIGHUP."""
    import signal

    if not hasattr(signal, "SIGHUP"):
        return

    def keep(signum: int, frame: object) -> None:
        _EARLY_SIGHUP["pending"] = True

    signal.signal(signal.SIGHUP, keep)


async def on_sighup(reloader: Reloader) -> None:
    """Reload on every ``SIGHUP`` until cancelled (the main thread's event loop only; a signal
    arriving while a reload runs is one more reload after it, and one kept by :func:`hold_sighup`
    is one reload as this starts)."""
    import signal

    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        if _EARLY_SIGHUP["pending"]:
            _EARLY_SIGHUP["pending"] = False
            await reloader.reload("SIGHUP")
        async for _ in signals:
            await reloader.reload("SIGHUP")


WATCH_POLL_SECONDS = 1.0
"""How often ``serve --watch`` also looks at the file itself, in seconds: a folder watched that is
removed or replaced tells nothing more, so the file is looked at even without events, and the
folders are watched again once they are back."""


async def on_file_change(reloader: Reloader, path: str) -> None:
    """Reload whenever the file ``path`` names changes (``serve --watch``), until cancelled. Its
    folder is watched (``watchfiles``, changes settled for 200 ms), and any change there that
    changes what ``path`` resolves to (the file, its inode, size or modification time) reloads:
    so an editor that replaces the file, and a Kubernetes ConfigMap update (which swaps the
    ``..data`` symlink ``path`` goes through, never touching ``path`` itself), are seen too; so is
    a folder removed and made again (see :data:`WATCH_POLL_SECONDS`)."""
    import watchfiles

    target = os.path.abspath(path)
    seen = _signature(target)
    every = {"debounce": 200, "step": 50, "rust_timeout": int(WATCH_POLL_SECONDS * 1000), "yield_on_timeout": True}
    while True:
        folders = _folders(target)
        if folders:
            with contextlib.suppress(OSError):  # a folder gone as the watch starts: looked for again
                async for _ in watchfiles.awatch(*sorted(folders), watch_filter=None, **every):  # type: ignore[arg-type]
                    seen = await _reload_if_changed(reloader, target, seen)
                    if _folders(target) != folders:
                        break  # removed or replaced: watch what is there now
        else:  # none there (yet): look again in a while
            await anyio.sleep(WATCH_POLL_SECONDS)
        seen = await _reload_if_changed(reloader, target, seen)


async def _reload_if_changed(reloader: Reloader, target: str, seen: Any) -> Any:
    now = _signature(target)
    if now != seen:
        await reloader.reload("file")
    return now


def _folders(target: str) -> dict[str, tuple[int, int]]:
    """The folders to watch for ``target`` that exist, each with its ``(device, inode)``."""
    found = {}
    for folder in {os.path.dirname(target), os.path.dirname(os.path.realpath(target))}:
        with contextlib.suppress(OSError):
            info = os.stat(folder)
            found[folder] = (info.st_dev, info.st_ino)
    return found


def _signature(path: str) -> tuple[str, int, int, int] | None:
    """What ``path`` resolves to: ``(real path, inode, size, mtime in ns)``, ``None`` when missing."""
    try:
        real = os.path.realpath(path)
        info = os.stat(real)
    except OSError:
        return None
    return real, info.st_ino, info.st_size, info.st_mtime_ns
