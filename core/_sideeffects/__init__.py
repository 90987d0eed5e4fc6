"""The side-effect scope: no writes while a resource is read (its provider's ``check_watch``
included), a completion or prompt is rendered, or a tool declared ``effects="none"`` runs.

Design note
-----------
The core wraps each such call in a scope (:func:`enter_scope`/:func:`exit_scope`; tests use
:func:`side_effect_scope`); a provider's ``check_watch``, which the pipeline runs itself before a
watch is accepted, gets the scope a read of the URI gets. The scope is a
:class:`contextvars.ContextVar`, so it holds for the code running in the call's context and for
work that *inherits* that context: coroutines it awaits, asyncio/anyio tasks it starts,
``anyio.to_thread``/``asyncio.to_thread`` workers and anything run through
``contextvars.copy_context()``; process-wide, also a ``threading.Thread`` it starts, what it
passes to ``ThreadPoolExecutor.submit`` or ``loop.run_in_executor`` (:mod:`.threads`), and a task
it starts with a context of its own (``create_task(coro, context=contextvars.Context())``: the
runtime's task factory runs it in a copy of that context, in the call's scope:
:func:`.scope.carried`); embedded by default, nothing patched, these start with a context of their
own and are not followed. Such
work stays in the scope even if it outlives the call: once the call ended, its attempts are still
refused, and logged, and its scratch directory is gone (:attr:`Scope.ended`).
Concurrent requests, and work that was already running outside the call (a task a provider's
``lifespan()`` started, a thread started outside the call), are not in it; nor are the
``authorize`` hook (a policy may ask its decision point by POST), ``lifespan()``, registration
hooks and tools that declare effects.

What is installed, and when (:mod:`.levels`): an embedded composition, by default, installs only
the audit hook (files and processes, judged for code in a scope) and judges HTTP in the client
the framework hands providers (:func:`mcp_providers.http.client`); it patches nothing of its host.
``serve``, and an embedder who opts in, install every guard below, process-wide.

What is refused in the scope (``SideEffectRefused``, -32008, rule ``side-effect-in-resource-read``):

* HTTP: any method but GET, HEAD and OPTIONS, and a GET/HEAD/OPTIONS that carries a body. Embedded
  by default, in requests sent by :func:`mcp_providers.http.client` (every request it sends,
  redirects and auth flows included, whatever its transport). Process-wide, in three layers
  besides, each judging before anything is sent. (1) The client libraries, for messages
  that name the URL asked for: the connection pool of ``httpcore2`` (every ``httpx2`` client,
  transport, proxy, ``mounts=`` entry and environment proxy) and of ``httpcore`` (plain
  ``httpx``) when installed, ``http.client.HTTPConnection.putrequest``/``putheader`` (``urllib``,
  ``urllib3``, ``requests``) and ``aiohttp.ClientSession`` when installed. (2) Every ``httpcore2``
  connection class below the pool (``HTTPConnection``, ``HTTP11Connection``, ``HTTP2Connection``,
  sync and async), for a connection used bare. (3) The wire: every HTTP/1.x request head in the
  bytes a ``socket.socket`` (``send``, ``sendall``, ``sendto``, ``sendmsg``: asyncio's
  transports, ``makefile()``, ``http.client``'s raw ``send()``) or TLS object (``ssl.SSLSocket``,
  ``ssl.SSLObject``, the memory-BIO object asyncio's and anyio's TLS write through) sends: a
  request line with another method, any method's case, any version word starting ``HTTP/``
  (``HTTP/01.1``), or a ``Content-Length``/``Transfer-Encoding`` on a safe one, is refused when
  its line ends (a request line as soon as it reads as one: the end of a connection ends a line
  too), so a head split over several sends, or several socket objects and descriptors of one
  kernel socket, or pipelined after a GET, never reaches the server whole (what a short send
  left unsent is not read as sent). ``os.splice`` into a
  socket and a file object opened on a socket's descriptor are refused (their bytes cannot be read
  first). ``CONNECT`` (a proxy tunnel) passes; what goes
  through the tunnel is judged in turn. A hand-written HTTP/2 preface is refused (its binary
  frames are not parsed; HTTP/2 is judged in ``httpcore2``'s connection). What a layer judged is
  not judged again below it, so a request let through (:func:`exempt`, warn mode) is recorded once.
* Files, through a PEP 578 audit hook (both levels): opens with write, append, create or truncate flags,
  removal, rename/replace, mkdir/rmdir, chmod/chown/chflags, truncate, utime, links, extended
  attributes, ``shutil`` copies/moves/rmtree/archives, and ``os.chdir`` (process-wide); C writers
  that raise no "open" event (:mod:`.writers`): a SQLite database ``sqlite3.connect`` would create
  (its own event: both levels) and one a connection made in a read would create by ``ATTACH
  DATABASE`` or ``VACUUM INTO`` (process-wide), ``readline``'s history files and a Tcl interpreter made
  (``tkinter``), process-wide. A symlink
  made in the scratch directory may only lead further into it (no ``..``; absolute, under it) and
  a write there by a path with ``..`` is refused, so the call's own threads cannot make a checked
  path lead out between the check and the call, whatever opener or name they use. A path is
  judged where the OS will open it, in whatever form the call takes it (``str``, ``bytes``,
  ``os.PathLike``, or any bytes-like object: a Unix socket's ``bind`` takes a ``bytearray`` or
  ``memoryview``, ``os`` still does, deprecated): symlinks and ``..`` resolved, a ``dir_fd`` applied (the
  "open" audit event carries none, so ``os.open`` is wrapped process-wide to tell it; a relative ``os.open``
  through a reference the wrapper does not cover, ``posix.open`` say, lands in an unknown
  directory and is refused). Allowed, for *what* is written and never for who is on the stack (a
  provider can run any code under any module name): paths under the call's scratch directory
  (:func:`scratch_dir`); the import system's bytecode caches (PEP 3147/488/552) written as it
  writes them (:mod:`.bytecode` gives the rule): a temporary ``<cache>.<digits>`` file of a source
  that exists created ``O_EXCL`` (one per cache at a time, while the call runs), then replaced onto
  its cache only when its bytes are what the import system would write for that source then
  (magic, the flags it would write there: a hash-based cache only over a hash-based one whose
  hash it checks; the source's mtime and size or hash; the code object of ``compile()``), judged
  at the replace with no descriptor or mapping left on it; a temp the call leaves is removed when
  its scope ends and the call is answered with the refusal (:func:`exit_scope` returns it); the
  cache path itself is never opened for writing, removed, truncated, chmod-ed or renamed away;
  ``__pycache__`` folders beside ``.py`` files, and folders under ``sys.pycache_prefix`` as it was
  when the guards were installed (the live attribute moves nothing); and
  the file of a ``logging.FileHandler`` made outside any scope (process-wide, seen when made;
  embedded, nothing patched, one attached to a logger while no guarded call ran: :mod:`.logfiles`
  gives the rule), the file and mode it had when seen (a read that sets ``baseFilename`` or
  ``mode`` moves neither), with its rotations (``app.log.1``: renamed and removed by rotating
  handlers, named by the ``namer``, ``rotator`` and ``backupCount`` it had when the next guarded
  call began). A handler made in the scope is judged like any open; process-wide, one that
  opened nothing (``delay=True``) is judged when made, as if it opened its file in its mode then
  (embedded, nothing patched, its construction is not seen).
* Processes: ``subprocess``, ``os.system``, ``os.exec*``, ``os.spawn*``, ``os.posix_spawn*``,
  ``os.fork``/``forkpty``, ``pty.spawn`` (both levels); ``os.mkfifo``/``os.mknod`` and a bare
  ``_posixsubprocess.fork_exec``, which raise no audit event, process-wide only.
* The whole process, as ``os.chdir`` would: the environment (``os.putenv``/``os.unsetenv``, which
  ``os.environ`` calls first; both levels) and ``os.umask`` (no audit event: process-wide only).
* Hooks of the whole process set by assignment (``sys.excepthook`` and its kin,
  ``threading.excepthook``), the import system's lists changed other than by appending
  (``sys.meta_path``, ``sys.path_hooks``, ``sys.path``; ``sys.path_importer_cache`` replaced),
  and the locale left changed (process-wide only): no audit event, so compared around each step
  of the read's own code, undone and refused (both levels: :mod:`.assigned`).
* Other processes and the process's own state (:mod:`.process` lists them): a signal sent
  (``os.kill``, ``os.killpg``, ``signal.pthread_kill``), resource limits and the host name set,
  native code reached through ``ctypes`` (a library loaded, a function looked up), at both
  levels; the process's identity, priority, session and scheduling, its signal handlers and
  timers, the interpreter's limits, and POSIX shared memory and semaphores under ``/dev/shm``,
  which raise no audit event, process-wide only.
* The server's event loop (:mod:`.loops`, process-wide only): its task factory (the runtime's
  containment of tasks raising ``SystemExit``), debug mode, exception handler, default executor
  and signal handlers set, the loop stopped, closed or shut down, on a loop made outside the call;
  a reader or writer of a standard descriptor on any loop.
* The guards themselves: a guarded module's code run again (``importlib.reload(socket)``, its
  loader's ``exec_module``), which would re-make its classes and functions unguarded for every
  later request (:mod:`.imports`; the ``exec`` audit event, so both levels, though only the
  process-wide level has guards to lose). A first import, and another module's reload, pass.

Process-wide, each ``os`` function is wrapped under its ``posix`` name too (``os`` re-exports the
native module; one function, one wrapper): ``posix.mkfifo`` is ``os.mkfifo``, guarded.

A library that catches the refusal and fails its own way (asyncio's transports close the
connection, ``urllib`` wraps it in ``URLError``) does not hide it: :attr:`Scope.refused` keeps it
and the server answers with it.

Not covered: C extensions that write or connect without raising audit events (most database
drivers; what a ``sqlite3`` connection writes to a database that exists), a ``ctypes`` function
looked up before the read and called in it (Python 3.11 raises no event for the call),
bytes sent through
``_socket.socket``'s own methods (``os.write``, ``os.writev`` and ``os.sendfile`` on a socket,
under either name, are judged process-wide: :mod:`.lowlevel`), a version-less request line
(``POST /x``: servers that take one as HTTP/0.9 take GET only), data asyncio buffers while a socket is full
and sends later outside the call's context, writes through a file descriptor opened before the
scope (logging to an open handler), a symlink swapped between the check and the open by code
outside the scope, HTTP libraries other than those above, and work outside the call's context (see
above). A plugin is trusted code; this catches mistakes and the usual ways round them, it is not a
sandbox.

:func:`exempt` lets HTTP requests that change no served data through (an OAuth token POST); each
is logged at INFO and recorded in :attr:`Scope.exemptions`, which the core puts in the receipt.
In ``mode="warn"`` (an operator's migration switch per plugin) nothing is refused: each attempt is
logged at WARNING and recorded in :attr:`Scope.violations`.

Cost: the audit hook is installed once per process (hooks cannot be removed) and does one set
lookup for every audited event in the process, plus one ContextVar read for the few events it
judges; nothing else runs for the host's code unless the process-wide level is installed. Its
patches add one ContextVar read per request, per socket send, per ``os.open``, per thread
start and per thread-pool submit outside a scope (a Python call around the C one). In a scope,
bytes sent below a guarded client are scanned line by line after one ``fstat`` names the
connection (a few microseconds per send); the project's clients skip the scan. Each step of a
call's own code compares the hooks and import lists before and after it (about 9,000
instructions a step: :mod:`.assigned`). Entering and
leaving a scope is one ContextVar set/reset and a small object (embedded by default, plus a walk
of the loggers when the process goes from no guarded call running to one and back:
:mod:`.logfiles`); the scratch directory is made only when asked for.
``benchmarks/sideeffects.py`` measures it against a read without it, and a host socket's send
with and without an embedded composition.

Modules: :mod:`.scope` (the scope), :mod:`.judge` (one HTTP request), :mod:`.files` (the audit
hook: files, processes), :mod:`.clients` (HTTP library patches), :mod:`.wire` (socket and TLS
bytes), :mod:`.lowlevel` (descriptor sends, path races), :mod:`.threads` (threads a call
starts), :mod:`.imports` (patch on first import), :mod:`.logfiles` (the host's log files),
:mod:`.bytecode` (the import system's caches), :mod:`.saved` (references saved before install),
:mod:`.process` (other processes, the process's own state), :mod:`.assigned` (state set by
assignment), :mod:`.loops` (the server's event loop), :mod:`.writers` (C writers with no "open"
event), :mod:`.levels` (which of them are in
place).
"""

# What the core uses, re-exported (the package is private: no __all__).
from __future__ import annotations

from mcp_providers._sideeffects.assigned import in_scope as in_scope
from mcp_providers._sideeffects.assigned import stepped as stepped
from mcp_providers._sideeffects.assigned import watched_call as watched_call
from mcp_providers._sideeffects.judge import check_http as check_http
from mcp_providers._sideeffects.judge import judged_here as judged_here
from mcp_providers._sideeffects.judge import read_safe_mcp as read_safe_mcp
from mcp_providers._sideeffects.levels import enter_scope as enter_scope
from mcp_providers._sideeffects.levels import exit_scope as exit_scope
from mcp_providers._sideeffects.levels import install as install
from mcp_providers._sideeffects.levels import install_scoped as install_scoped
from mcp_providers._sideeffects.levels import process_wide as process_wide
from mcp_providers._sideeffects.levels import side_effect_scope as side_effect_scope
from mcp_providers._sideeffects.scope import RULE as RULE
from mcp_providers._sideeffects.scope import SAFE_METHODS as SAFE_METHODS
from mcp_providers._sideeffects.scope import Kind as Kind
from mcp_providers._sideeffects.scope import Mode as Mode
from mcp_providers._sideeffects.scope import Scope as Scope
from mcp_providers._sideeffects.scope import carried as carried
from mcp_providers._sideeffects.scope import current_scope as current_scope
from mcp_providers._sideeffects.scope import exempt as exempt
from mcp_providers._sideeffects.scope import log as log
from mcp_providers._sideeffects.scope import outside_scope as outside_scope
from mcp_providers._sideeffects.scope import scratch_dir as scratch_dir
from mcp_providers.errors import SideEffectRefused as SideEffectRefused
