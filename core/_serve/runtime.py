"""The runtime: the per-process state of serving an assembly, and which assembly that is.

Everything that changes while the server runs lives here, apart from the frozen
:class:`~mcp_providers._host.assembly.Assembly`: which providers failed to start, the providers'
entered lifespans, the subscription hub (its bus), the invoker (its coalescer), the audit sink.
Each shared part sits behind a small seam (the hub's bus, the invoker's coalescer) so that a
cluster backend can replace it with one kept in an external store without touching the pipeline.

The assembly served is the current :class:`Generation`'s; a reload (:mod:`mcp_providers._serve.reload`)
swaps in another in one step (:meth:`Runtime.swap`). A request runs wholly on the generation it
started on; lifespans of providers the new one no longer serves end once the old one is idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from mcp_providers._host.assembly import Assembly
from mcp_providers._host.contain import contain_tasks
from mcp_providers._serve.lifespans import (
    EXIT_MARGIN,
    IDLE,
    STOP_SECONDS,
    Hosted,
    exit_if_stuck,
    opens_nothing,
    restore,
    stopped,
)
from mcp_providers._serve.methods.subscriptions import SubscriptionHub
from mcp_providers._serve.methods.tasks import STOP_SECONDS as TASKS_STOP_SECONDS
from mcp_providers._serve.methods.tasks import Body, Tasks
from mcp_providers._serve.state.cluster import RedisBackend, Shared, shared_for
from mcp_providers._serve.state.credentials import broker_for, identity_fingerprint
from mcp_providers._serve.state.tasks import store_for
from mcp_providers._serve.steps.audit import FLUSH_SECONDS, AuditLog
from mcp_providers._serve.steps.exchange import Method
from mcp_providers._serve.steps.gate import Authorizer, Gate
from mcp_providers._serve.steps.invoker import Invoker
from mcp_providers._serve.steps.ratelimit import RateLimiter
from mcp_providers._sideeffects import install, install_scoped, outside_scope
from mcp_providers.config import ClusterSettings, LimitsSettings, ServerSettings
from mcp_providers.identity import Principal
from mcp_providers.models import Freshness
from mcp_providers.providers import ResourceProvider

if TYPE_CHECKING:
    from mcp_providers._serve.state.sealing import Sealing

log = logging.getLogger("mcp_providers.composition")


MethodTable = Callable[["Runtime", Assembly], Mapping[str, Method[Any, Any, Any]]]
"""``(runtime, assembly) -> {method name: method}``: what a generation serves (``binding.method_table``)."""


class Generation:
    """One assembly as served: its methods and its authorizer, and the requests running on it.

    A request takes the current generation once, when it starts (:meth:`serving`), and runs all its
    stages on it; so a swap never leaves a request half on one assembly and half on the next, and
    the old generation is idle once its last request has finished (:meth:`idle`).
    """

    def __init__(self, assembly: Assembly, methods: Mapping[str, Method[Any, Any, Any]], number: int) -> None:
        self.assembly = assembly
        self.methods = methods
        self.number = number
        """1 for the assembly composed at start-up, one more for each reload applied."""
        self.authorizer = Authorizer(assembly.authorize)
        self.inflight = 0
        self._idle: anyio.Event | None = None

    def serving(self) -> Generation:
        """``with generation.serving():`` counts one request running on this generation while
        inside. The generation is its own context manager (no generator per request): the
        per-request path writes ``with generation:``, one call fewer."""
        return self

    def __enter__(self) -> None:
        self.inflight += 1

    def __exit__(self, *exc_info: object) -> None:
        self.inflight -= 1
        if not self.inflight and self._idle is not None:
            self._idle.set()

    async def idle(self) -> None:
        """Return once no request is running on this generation."""
        while self.inflight:
            self._idle = anyio.Event()
            await self._idle.wait()


SHUTTING_DOWN = "the server is shutting down: the reload was not applied"
"""What :class:`NotServing` says (a reload's one problem; logged at ``info``: nothing is wrong)."""


class NotServing(RuntimeError):
    """The runtime stopped serving (its server shuts down) while a swap was under way."""


class Runtime:
    """Per-process state of the served assembly (see the module docstring).

    :param methods: what a generation of ``assembly`` serves (the binding's method table).
    :param task_body: runs a task's ``tools/call`` (:data:`~mcp_providers._serve.methods.tasks.Body`).
    """

    def __init__(self, assembly: Assembly, methods: MethodTable, task_body: Body) -> None:
        settings = assembly.config.server
        self.startup_failures: dict[str, str] = {}
        """Provider name -> why its ``lifespan`` failed to start; its requests get an upstream error."""
        self.audit = AuditLog(settings.audit_sinks(), settings.audit.drop_log_seconds if settings.audit else 30.0)
        """The audit sinks (``[server] audit_log``, ``[server.audit]``); shipped ones drain in the background."""
        self.process_guards = settings.embedded_side_effects == "enforce"
        """Starting installs every process-wide guard and the task factory (``serve``, an opted-in
        embedder, :mod:`mcp_providers.testing`), else the audit hook only (see ``_sideeffects.levels``)."""
        self.shared: Shared = shared_for(assembly.config.cluster)
        """The shared parts: in process, or in Redis with ``[cluster]`` (see :mod:`.cluster`)."""
        self.sealing: Sealing | None = None
        """Seals per-user values kept in Redis (:mod:`.state.sealing`); ``None`` without ``[cluster]`` or its key."""
        if isinstance(self.shared, RedisBackend):
            from mcp_providers._serve.state.sealing import sealing_for  # [cluster] only: not on every start-up

            self.sealing = self.shared.sealing = sealing_for(settings.credentials)
        self.invoker = self._invoker(settings)
        self.credentials = broker_for(
            settings.credentials, assembly.config.cluster, self.shared, identity=identity_fingerprint(settings.auth)
        )
        """The broker of upstream credentials providers obtain for callers (:mod:`mcp_providers.credentials`):
        in the process, or in Redis, encrypted, with ``[cluster]`` (:mod:`.state.credentials`)."""
        backend = self.shared
        self.limiter = self._limiter(settings, assembly.config.cluster)
        """``[server.limits]``: counted here, or in the cluster's Redis (see :mod:`.steps.ratelimit`)."""
        self.hub = SubscriptionHub(
            assembly.catalog,
            self._may_watch,
            max_per_session=settings.max_subscriptions_per_session,
            max_uri_length=settings.max_uri_length,
            shared=self.shared,
            limits=settings.limits,
            invoker=self.invoker,
        )
        if isinstance(backend, RedisBackend):
            backend.on_recovered = self.hub.reannounce  # the bus is back: nothing missed goes untold
        self.tasks = Tasks(
            store_for(self.shared, settings.tasks, sealing=self.sealing),
            settings.tasks,
            assembly.config.cluster.lease_seconds if assembly.config.cluster else None,
            task_body,
        )
        """Tool calls running as tasks (:mod:`.methods.tasks`): in memory, or in Redis with ``[cluster]``."""
        self.swapped: list[Callable[[Generation], None]] = []
        """Called with the new generation after each :meth:`swap` (the binding registers new methods)."""
        self.background: list[Callable[[], Coroutine[Any, Any, None]]] = []
        """Tasks run beside the providers while serving (a reload's signal and file watches)."""
        self._method_table = methods
        self.generation = Generation(assembly, methods(self, assembly), 1)
        """What is served now; replaced in one step by :meth:`swap`."""
        self._hosted: dict[int, Hosted] = {}  # id(provider) -> its running lifespan
        self._draining: list[Generation] = []  # replaced, with requests still running on them
        self._tasks: anyio.abc.TaskGroup | None = None
        self._starting: anyio.CancelScope | None = None  # while lifespans are awaited (stop_starting)
        self.owns_process = False
        """Set by ``serve``: its process ends if the stop outlasts its steps' bounds (:meth:`stop_bound`)."""
        self._host = _Host(self._start, self.stop_bound)

    def _limiter(self, settings: ServerSettings, cluster: ClusterSettings | None) -> RateLimiter:
        backend = self.shared
        connected = (lambda: backend.connected) if isinstance(backend, RedisBackend) else None
        return RateLimiter(settings.limits, cluster, connected, self.sealing.name if self.sealing is not None else None)

    def _invoker(self, settings: ServerSettings) -> Invoker:
        """The invoker; its coalescer, the seam for sharing reads, goes through Redis across replicas."""
        shared_reads = None
        if isinstance(self.shared, RedisBackend) and settings.coalesce_reads:
            from mcp_providers._serve.state.shared_reads import SharedReads  # [cluster] only

            shared_reads = SharedReads(self.shared, self._freshness_of, self.sealing)
        return Invoker(
            self.startup_failures,
            settings.read_timeout,
            settings.coalesce_reads,
            dict(settings.side_effects),
            shared_reads,
            (settings.limits or LimitsSettings()).provider_threads,
        )

    @property
    def assembly(self) -> Assembly:
        """The assembly served now (the current generation's)."""
        return self.generation.assembly

    @property
    def authorizer(self) -> Authorizer:
        """The current generation's authorizer."""
        return self.generation.authorizer

    @property
    def serving(self) -> bool:
        """Whether the providers have been started (:meth:`running` entered) and not stopped."""
        return self._host.up

    def _freshness_of(self, uri: str) -> Freshness | None:
        route = self.assembly.catalog.find(uri)
        return None if route is None else route.declaration.freshness  # not served: the read says so

    def _may_watch(self, principal: Principal, uri: str) -> bool:
        """Whether ``principal`` may still be told of ``uri`` (a canonical URI): the questions the
        watch and a read ask (``expand`` on its template, then ``subscribe`` and ``read``), against
        the catalog and policy served now; a URI no longer served is no."""
        gate = Gate(self.authorizer, principal, max_uri_length=self.hub.max_uri_length)
        route = self.assembly.catalog.find(uri)
        if route is None:
            return False
        return gate.allows_route("subscribe", route, uri) and gate.allows_route("read", route, uri)

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Enter every served provider's ``lifespan`` and open the audit log: once for however many
        callers are inside at a time (sessions in tasks of their own, say), until the last one leaves
        (see :class:`_Host`)."""
        return self._host.using()

    async def swap(self, assembly: Assembly) -> Generation:
        """Serve ``assembly`` from the next request on; returns the generation it replaced.

        The providers it adds are started first, side by side (their ``lifespan`` entered, each
        within :data:`START_SECONDS`), so no request reaches one that has not started; those it drops
        are stopped in the background once the old generation is idle. Provider objects both
        serve keep running as they are. A runtime not serving swaps at once: its providers start
        when it serves.

        :raises NotServing: the runtime stopped serving while the providers were starting (the
            server shuts down); nothing was swapped.
        """
        new = Generation(assembly, self._method_table(self, assembly), self.generation.number + 1)
        tasks = self._tasks  # while serving; each start below awaits, and the server may stop meanwhile
        if tasks is not None:
            adding = [d for d in assembly.declared if id(d.provider) not in self._hosted]
            added = [id(d.provider) for d in adding]
            before = {d.provider.name: self.startup_failures.get(d.provider.name) for d in adding}
            try:
                await self._host_providers([(d.plugin, d.provider) for d in adding], tasks, START_SECONDS)
            except BaseException:  # cancelled (the reload's caller left): nothing will serve them
                await stopped([h for key in added if (h := self._hosted.pop(key, None)) is not None], abandon=True)
                restore(self.startup_failures, before)  # by name: a serving provider may share one
                raise
            if self._tasks is not tasks:  # stopped: its task group is gone, and with it every lifespan started here
                for key in added:
                    self._hosted.pop(key, None)
                raise NotServing(SHUTTING_DOWN)
        old, self.generation = self.generation, new
        self.hub.catalog = assembly.catalog
        for call in self.swapped:
            call(new)
        for name in set(self.startup_failures) - {d.provider.name for d in assembly.declared}:
            del self.startup_failures[name]
        if tasks is not None:
            self._draining.append(old)
            tasks.start_soon(self._retire, old)
        return old

    def start_soon(self, work: Callable[[], Coroutine[Any, Any, Any]]) -> bool:
        """Run ``work`` in the runtime's task group (while serving); ``False`` when not serving.
        Outside any side-effect scope, even when a read asks (a reload): it is the runtime's work."""
        if self._tasks is None:
            return False
        with outside_scope():  # the task copies the context it is started in
            self._tasks.start_soon(work)
        return True

    async def _retire(self, old: Generation) -> None:
        """Once ``old`` is idle, stop the lifespans of its providers that neither the current
        generation nor another still running requests serves."""
        await old.idle()
        self._draining.remove(old)
        in_use = {id(d.provider) for g in (self.generation, *self._draining) for d in g.assembly.declared}
        leaving = []
        for d in old.assembly.declared:
            hosted = self._hosted.get(id(d.provider))
            if hosted is not None and id(d.provider) not in in_use:
                del self._hosted[id(d.provider)]
                leaving.append(hosted)
        await stopped(leaving)

    async def _host_providers(
        self, providers: list[tuple[str, Any]], tasks: anyio.abc.TaskGroup, within: float | None = None
    ) -> None:
        """Start the lifespans of ``(plugin, provider)`` pairs side by side, each in a task of its
        own in ``tasks``; return once every one is serving or has failed (or ``within`` seconds, each).
        Side by side, N sources that take T seconds to answer (or never do, each bounded by its own
        timeout) hold the start up for about T, not N * T."""
        hosting = []
        for plugin, provider in providers:
            if isinstance(provider, ResourceProvider):
                provider.publisher = self.hub.publisher(provider)
            if opens_nothing(provider):  # serving at once, as its lifespan would be, clearing an earlier failure
                self._hosted[id(provider)] = IDLE
                self.startup_failures.pop(provider.name, None)
                continue
            hosted = Hosted(provider.lifespan, provider.name, plugin, self.startup_failures)
            self._hosted[id(provider)] = hosted
            hosted.launch(tasks)  # now, while ``tasks`` is known to be open
            hosting.append(hosted)
        with anyio.CancelScope() as waiting:  # stop_starting() cancels the waits: the server stops
            self._starting = waiting
            async with anyio.create_task_group() as starting:
                for hosted in hosting:
                    starting.start_soon(hosted.started, within)
        self._starting = None
        if waiting.cancel_called:  # those the stop left on their way in are not waited for
            for hosted in hosting:
                hosted.abandon("did not start: the server was stopping")

    def stop_bound(self) -> float | None:
        """Seconds the stop may take before ``serve``'s process ends regardless: the sum of its
        steps' bounds (task bodies, lifespans, audit sinks, the cluster backend) and a margin;
        ``None`` unless the process is ``serve``'s (:attr:`owns_process`)."""
        if not self.owns_process:
            return None
        bound = TASKS_STOP_SECONDS + STOP_SECONDS + EXIT_MARGIN + (FLUSH_SECONDS if self.audit.shipped else 0.0)
        if isinstance(self.shared, RedisBackend):
            bound += self.shared.settings.timeout_seconds
        return bound

    def stop_starting(self) -> None:
        """The server is stopping (``SIGTERM``): stop waiting for the lifespans on their way in,
        each then recorded as not started, so the stop does not wait out :data:`START_SECONDS`."""
        if self._starting is not None:
            self._starting.cancel()

    async def _start(self) -> contextlib.AsyncExitStack:
        stack = contextlib.AsyncExitStack()
        await stack.__aenter__()
        try:
            await self._start_on(stack)
        except BaseException as exc:  # cancelled on the way in (stdin ended): what was started is left
            for hosted in self._hosted.values():  # those still on their way in are not waited for
                hosted.abandon("did not start: the server was stopping")
            await stack.__aexit__(type(exc), exc, exc.__traceback__)  # in this task: it holds a task group
            raise
        return stack

    async def _start_on(self, stack: contextlib.AsyncExitStack) -> None:
        self.audit.open()
        stack.callback(self.audit.close)
        if self.process_guards:
            install()  # every guard, once, before the first read rather than inside it
            contain_tasks()  # a SystemExit in a task a provider starts must not leave the event loop
        else:
            install_scoped()  # embedded: the audit hook only (files, processes); nothing patched
        await stack.enter_async_context(self.shared.running())  # before any provider polls or publishes
        stack.push_async_callback(self.limiter.aclose)
        tasks = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tasks.cancel_scope.cancel)  # runs first on the way out: the task group then exits
        tasks.start_soon(self.hub.relay)
        if self.audit.shipped:  # syslog and webhook sinks: drained here, never in a request
            await tasks.start(self.audit.ship)
            stack.push_async_callback(self.audit.flush)  # runs before the cancel: queued lines go out
        self.startup_failures.clear()
        stack.push_async_callback(self._stop_hosted)
        await self._host_providers([(d.plugin, d.provider) for d in self.assembly.declared], tasks, START_SECONDS)
        tasks.start_soon(self.tasks.host)
        stack.push_async_callback(self.tasks.stop)  # before the providers stop: a body's clean-up still has them
        for run in self.background:
            tasks.start_soon(run)
        self._tasks = tasks
        stack.callback(setattr, self, "_tasks", None)

    async def _stop_hosted(self) -> None:
        """Stop every running lifespan, side by side (see :func:`~mcp_providers._serve.lifespans.stopped`)."""
        hosted, self._hosted = list(self._hosted.values()), {}
        await stopped(hosted)


class _Host:
    """The runtime's started parts, opened by the first caller of :meth:`using` and closed when the
    last one leaves, in one task of their own.

    Callers are often sessions, each in its own task, ending in any order. What the parts hold
    (the providers' task group, the cluster connection's cancel scope) must be left in the task
    that entered it, so it is entered and left in a host task made for it, in an empty context:
    not the first caller's principal or request. Under an event loop other than asyncio, the first
    caller's task hosts them (one caller at a time).
    """

    def __init__(
        self, start: Callable[[], Awaitable[contextlib.AsyncExitStack]], stop_within: Callable[[], float | None]
    ) -> None:
        self._start = start
        self._stop_within = stop_within
        self._users = 0
        self._lock = anyio.Lock()
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stack: contextlib.AsyncExitStack | None = None  # hosted in the caller's task instead
        self.up = False

    @contextlib.asynccontextmanager
    async def using(self) -> AsyncIterator[None]:
        async with self._lock:
            if self._users == 0:
                await self._open()
            self._users += 1
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):  # the last one out must close, cancelled or not
                async with self._lock:
                    self._users -= 1
                    if self._users == 0:
                        await self._close()

    async def _open(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio, say)
            self._stack = await self._start()
            self.up = True
            return
        ready: asyncio.Future[None] = loop.create_future()
        self._stop = asyncio.Event()
        self._task = loop.create_task(self._host(ready, self._stop), context=contextvars.Context())
        try:
            await asyncio.shield(ready)
        except BaseException:
            self._task.cancel()  # still starting (the caller was cancelled) or already ended
            with anyio.CancelScope(shield=True):
                await asyncio.wait([self._task])
            self._task = None
            raise
        self.up = True

    async def _host(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            stack = await self._start()
        except BaseException as exc:
            ready.set_exception(exc) if not isinstance(exc, asyncio.CancelledError) else ready.cancel()
            return
        try:
            ready.set_result(None)
            await stop.wait()
        finally:
            await stack.aclose()

    async def _close(self) -> None:
        with exit_if_stuck(self._stop_within()):
            await self._closed()

    async def _closed(self) -> None:
        self.up = False
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.aclose()
        elif self._task is not None and self._stop is not None:
            task, self._task = self._task, None
            self._stop.set()
            await asyncio.wait([task])
            task.result()  # what failed while the parts closed reaches the last caller, as before


START_SECONDS = 60.0
"""How long the ``lifespan`` of a provider may take to start, at start-up or when a reload adds it,
in seconds; one that takes longer is cancelled and recorded as failed to start, so it cannot hold
up the server's start, the reload (and every later one) for ever."""
