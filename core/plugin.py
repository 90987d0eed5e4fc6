"""Write a plugin with decorators: everything a provider author imports is here.

::

    from mcp_providers.plugin import Plugin

    notes = Plugin("notes", prefixes=["notes://"])

    @notes.resource("notes://index")
    def index() -> dict:
        return {"notebooks": ["work", "home"]}

    @notes.template("notes://{notebook}/{note}")
    async def note(notebook: str, note: str) -> str:
        ...

    @notes.tool()
    def notes_search(query: str, limit: int = 10) -> list[str]:
        \"\"\"Search every note.\"\"\"

    notes.skill("skills/daily-review")   # a folder in the package: skill://notes/daily-review/SKILL.md

and in ``pyproject.toml``::

    [project.entry-points.mcp_providers]
    notes = "notes_plugin:notes"

A :class:`Plugin` answers the same hooks a hand-written plugin does (``settings_model``,
``register_resource_providers``, ``register_tool_providers``, ``register_prompt_providers``,
``register_skill_providers``), so nothing
downstream changes: every declaration it produces is checked by ``mcp-providers check`` (prefix
ownership, collisions, templates, side effects, static reads) and served through the same gate,
deadline, side-effect scope, budgets and receipts as a class provider.

Function parameters receive, by annotation or name:

- template variables (fixed resources take none), tool arguments or prompt arguments, by name,
  converted to the annotated type (``int``, ``Literal[...]``, a pydantic type ...);
- :class:`Context` (the caller, the policy, credentials, progress, elicitation), by annotation;
- the plugin's settings, by annotation with the settings model or by the name ``settings``.

Return values: ``str`` is text, ``bytes`` a blob, a ``dict``/``list``/pydantic model JSON, or the
class API's :class:`Content` / :class:`ToolResult` / :class:`Message` as they are. A plain
(non-``async``) function runs in a worker thread inside the same scope.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib.resources.abc import Traversable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from mcp_providers import _decorated as fx
from mcp_providers import policy
from mcp_providers._adapters import (
    Advice,
    Completer,
    PromptRenderer,
    Reader,
    ToolCaller,
    advice,
    declaring,
    doc_of,
    fixed_parameters,
    known,
    literal_values,
    prompt_links,
    resource_fields,
    spelled_defaults,
    takes_values_as_given,
    template_parameters,
    template_variables,
    tool_advice,
)
from mcp_providers.credentials import Upstream
from mcp_providers.errors import Denied, InvalidParams, NotFound, TooLarge, ToolFailure, UpstreamError
from mcp_providers.hookspecs import hookimpl
from mcp_providers.models import (
    Annotations,
    Effects,
    Freshness,
    Icon,
    Members,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    Tool,
)
from mcp_providers.policy import allowed
from mcp_providers.providers import (
    CompletionRequest,
    Content,
    Embed,
    Link,
    Message,
    PromptProvider,
    ReadRequest,
    ResourceProvider,
    ToolCall,
    ToolProvider,
    ToolResult,
)
from mcp_providers.skills import SkillFolders, SkillProvider, SkillSource

__all__ = [
    "Annotations",
    "Content",
    "Context",
    "Denied",
    "Effects",
    "Embed",
    "Freshness",
    "Icon",
    "InvalidParams",
    "Link",
    "Members",
    "Message",
    "NotFound",
    "Plugin",
    "SkillProvider",
    "SkillSource",
    "TooLarge",
    "ToolFailure",
    "ToolResult",
    "Upstream",
    "UpstreamError",
    "allowed",
]

Context = fx.Context
F = TypeVar("F", bound=Callable[..., Any])

Recorded = dict[str, tuple[Callable[..., Any], dict[str, Any]]]
"""Name, URI or URI template -> the decorated function and the decorator's fields."""
Completions = dict[tuple[str, str, str], Callable[..., Any]]
"""``(kind, name or URI template, variable)`` -> the function completing that variable."""
Completers = Callable[[str, str], Iterator[tuple[str, "Completer"]]]
"""``(kind, name or URI template)`` -> ``(variable, completer)`` pairs, bound to the plugin's settings."""


class Declared(Generic[F]):
    """What a decorator returns: the function, still callable as written (for tests), plus
    :meth:`complete` on templates and prompts."""

    def __init__(self, function: F, completions: Completions, kind: str, key: str) -> None:
        functools.update_wrapper(self, function)
        self.function = function
        self._completions, self._kind, self._key = completions, kind, key

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def complete(self, variable: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorate the function that offers values for ``variable`` (a template variable or prompt
        argument). It receives what the user typed in the parameter named ``variable`` and the other
        variables already chosen in parameters of their names, and returns a list of ``str``::

            @note.complete("note")
            def note_names(note: str, notebook: str = "") -> list[str]:
                return [n for n in NOTES.get(notebook, {}) if n.startswith(note)]

        :raises ValueError: this is a fixed resource or a tool (they have nothing to complete).
        """
        if self._kind not in ("template", "prompt"):
            raise ValueError(f"{fx.describe(self.function)} is a {self._kind}; only templates and prompts complete")

        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            self._completions[(self._kind, self._key, variable)] = function
            return function

        return register


class Plugin:
    """A plugin declared by decorators. Name it in an entry point of the ``mcp_providers`` group.

    :param name: the provider name shown in ``plugins``, ``inspect`` and receipts, e.g. ``"notes"``.
    :param prefixes: the URI prefixes its resources live under, e.g. ``["notes://"]``; two plugins'
        prefixes may not overlap (``check`` refuses it).
    :param settings: the pydantic model of its ``[plugins.<entry point>]`` table, or ``None``.
    :param demo: a context manager factory yielding a settings table for ``mcp-providers demo``.
    """

    def __init__(
        self,
        name: str,
        *,
        prefixes: Sequence[str] = (),
        settings: type[BaseModel] | None = None,
        demo: Callable[[], contextlib.AbstractContextManager[dict[str, Any]]] | None = None,
    ) -> None:
        if isinstance(prefixes, str):
            prefixes = [prefixes]
        self.name = name
        self.prefixes = tuple(prefixes)
        self.settings = settings
        self._demo = demo
        self._resources: Recorded = {}
        self._templates: Recorded = {}
        self._tools: Recorded = {}
        self._prompts: Recorded = {}
        self._completions: Completions = {}
        self._skill_folders: dict[str, list[Traversable]] = {}
        self._skill_providers: list[Callable[..., SkillProvider]] = []

    def __repr__(self) -> str:
        return f"<Plugin {self.name!r}>"

    # -- decorators --------------------------------------------------------------------------

    def resource(self, uri: str, **fields: Any) -> Callable[[F], Declared[F]]:
        """Declare the function as the reader of the fixed resource ``uri``.

        :param fields: any :class:`~mcp_providers.models.Resource` field (``name``,
            ``mime_type``, ``description``, ``icons``, ``freshness``, ``annotations``, ``max_bytes``
            ...). ``name`` defaults to the function's name, ``description`` to its docstring,
            ``mime_type`` to what the return annotation implies.
        """
        return self._adding("resource", self._resources, uri, fields)

    def template(self, uri_template: str, **fields: Any) -> Callable[[F], Declared[F]]:
        """Declare the function as the reader of an RFC 6570 template; each variable is a parameter.

        :param fields: any :class:`~mcp_providers.models.ResourceTemplate` field, e.g.
            ``completions={"notebook": ("work", "home")}`` for static completion values.
        """
        return self._adding("template", self._templates, uri_template, fields)

    def tool(self, name: str | None = None, *, effects: Effects = "none", **fields: Any) -> Callable[[F], Declared[F]]:
        """Declare the function as a tool. Its parameters are the input schema, its docstring the
        description, its return annotation the output schema.

        :param name: the tool's name (default: the function's name).
        :param effects: ``"none"`` (read-only; writes are refused while it runs), ``"additive"`` or
            ``"destructive"``.
        :param fields: any other :class:`~mcp_providers.models.Tool` field (``title``, ``icons``,
            ``idempotent``, ``open_world``, ``task_support`` ...); ``output_model=`` overrides the
            one the return annotation implies (for a function returning ``ToolResult(output=...)``);
            ``argument_resources={"ssg": "docs://ssgs/{ssg}"}`` links a parameter (a ``Literal`` or
            ``Enum``) to the resources its values name, so each caller is offered only those it may read.
        """
        return self._adding("tool", self._tools, name, {"effects": effects, **fields})

    def prompt(self, name: str | None = None, **fields: Any) -> Callable[[F], Declared[F]]:
        """Declare the function as a prompt; its parameters are the prompt's arguments (required
        unless they have a default), its docstring the description.

        :param fields: ``title``, ``icons``, ``description``, and ``argument_resources``
            (argument -> the URI template its value names, e.g. ``{"ssg": "docs://ssgs/{ssg}"}``:
            ``prompts/get`` then refuses a value whose resource the caller may not read, and
            completion offers only readable ones; :attr:`PromptArgument.resource
            <mcp_providers.models.PromptArgument.resource>`).
        """
        return self._adding("prompt", self._prompts, name, fields)

    def skill(self, folder: str, *, package: str | None = None, prefix: str | None = None) -> None:
        """Serve the skill in ``folder``, shipped in the package (``importlib.resources``): its
        ``SKILL.md`` and every other file in it. The folder's name is the skill's name::

            notes.skill("skills/daily-review")   # skill://notes/daily-review/SKILL.md

        :param folder: ``/``-separated, relative to ``package``.
        :param package: the package holding it (default: the calling module's package).
        :param prefix: where the skill's root lies (default ``skill://<plugin name>/``); owned by
            this plugin, so it may not overlap another provider's prefix.
        """
        if package is None:
            frame = inspect.currentframe()  # this call's; its f_back is the calling module's
            caller = frame.f_back if frame is not None else None
            if caller is None:  # an interpreter without frames
                raise ValueError(f"skill({folder!r}): the calling module is unknown here; pass package='your_package'")
            package = caller.f_globals.get("__package__") or caller.f_globals["__name__"]
        node = importlib.resources.files(package)
        for part in folder.strip("/").split("/"):
            node = node / part
        self._skill_folders.setdefault(prefix or f"skill://{self.name}/", []).append(node)

    def skill_provider(self, factory: Callable[..., SkillProvider]) -> Callable[..., SkillProvider]:
        """Decorate a function (or class) making a :class:`SkillProvider` for skills that are not
        folders; it receives the plugin's settings by a parameter named ``settings``::

            @notes.skill_provider
            def runbooks(settings: NotesSettings) -> SkillProvider:
                return Runbooks(settings.runbooks)
        """
        self._skill_providers.append(factory)
        return factory

    def _adding(
        self, kind: str, into: dict[str, Any], key: object, fields: dict[str, Any]
    ) -> Callable[[F], Declared[F]]:
        if callable(key):  # used bare: @plugin.tool
            raise TypeError(f"use @{self.name}.{kind}() with parentheses")
        if key is not None and not isinstance(key, str):
            raise TypeError(f"@{self.name}.{kind}() takes a str name or a URI; got {type(key).__name__}")

        def decorate(function: F) -> Declared[F]:
            name = key if isinstance(key, str) else function.__name__
            if name in into:
                raise ValueError(f"{kind} {name!r} is declared twice in plugin {self.name!r}")
            into[name] = (function, fields)
            return Declared(function, self._completions, kind, name)

        return decorate

    # -- the hooks ---------------------------------------------------------------------------

    @hookimpl
    def settings_model(self) -> type[BaseModel] | None:
        return self.settings

    @hookimpl
    def register_resource_providers(self, settings: Any) -> list[ResourceProvider]:
        if not (self._resources or self._templates):
            return []
        completers = functools.partial(self._completer, settings=settings)
        return [_Resources(self, self._resources, self._templates, completers, settings)]

    @hookimpl
    def register_tool_providers(self, settings: Any) -> list[ToolProvider]:
        return [_Tools(self, self._tools, settings)] if self._tools else []

    @hookimpl
    def register_prompt_providers(self, settings: Any) -> list[PromptProvider]:
        completers = functools.partial(self._completer, settings=settings)
        return [_Prompts(self, self._prompts, completers, settings)] if self._prompts else []

    @hookimpl
    def register_skill_providers(self, settings: Any) -> list[SkillProvider]:
        out: list[SkillProvider] = []
        for i, (prefix, folders) in enumerate(self._skill_folders.items()):
            out.append(SkillFolders(f"{self.name}-skills" + (f"-{i + 1}" if i else ""), prefix, folders))
        for factory in self._skill_providers:
            wants = "settings" in inspect.signature(factory).parameters
            out.append(factory(settings) if wants else factory())
        return out

    @hookimpl
    def demo_settings(self) -> contextlib.AbstractContextManager[dict[str, Any]] | None:
        return self._demo() if self._demo is not None else None

    def _completer(self, kind: str, key: str, settings: Any) -> Iterator[tuple[str, Completer]]:
        for (k, owner, variable), function in self._completions.items():
            if k == kind and owner == key:
                yield variable, Completer(fx.signature(function, self.settings), variable, settings)


class _Resources(ResourceProvider):
    """The plugin's resources and templates (as it recorded them) as one resource provider."""

    def __init__(
        self, plugin: Plugin, resources: Recorded, templates: Recorded, completers: Completers, settings: Any
    ) -> None:
        self.name, self.prefixes = plugin.name, plugin.prefixes
        self.authored_as = plugin.name  # check warns when the entry point names it otherwise
        self._declared: list[Resource] = []
        self._templates: list[ResourceTemplate] = []
        self._readers: dict[str, Reader] = {}
        self._completers: dict[tuple[str, str], Completer] = {}
        self.authoring_advice: list[Advice] = []  # check's warnings (mcp_providers._host.advisories)
        for uri, (function, fields) in resources.items():
            sig = fx.signature(function, plugin.settings)
            fixed_parameters(sig, uri, plugin.name)
            self.authoring_advice += advice(sig, uri)
            with declaring(sig.where):
                self._declared.append(Resource(uri=uri, **resource_fields(function, sig, fields)))
            self._readers[uri] = Reader(sig, settings, {}, fields.get("mime_type"))
        for uri_template, (function, fields) in templates.items():
            sig = fx.signature(function, plugin.settings)
            template_parameters(sig, uri_template)
            self.authoring_advice += advice(sig, uri_template, template_variables(uri_template) or ())
            convert = {p.name: fx.converter(sig, p.name, one_spelling=True) for p in sig.values}
            with declaring(sig.where):
                self._templates.append(
                    ResourceTemplate(
                        uri_template=uri_template,
                        **{"defaults": spelled_defaults(sig, uri_template), **resource_fields(function, sig, fields)},
                    )
                )
            direct = takes_values_as_given(sig, uri_template, convert)
            self._readers[uri_template] = Reader(sig, settings, convert, fields.get("mime_type"), direct=direct)
            names = template_variables(uri_template)
            for variable, completer in known(completers("template", uri_template), names, f"template {uri_template!r}"):
                self._completers[(uri_template, variable)] = completer

    def resources(self) -> Sequence[Resource]:
        return self._declared

    def templates(self) -> Sequence[ResourceTemplate]:
        return self._templates

    async def read(self, request: ReadRequest) -> Content:
        declaration = request.resource
        key = declaration.uri if isinstance(declaration, Resource) else declaration.uri_template
        return await self._readers[key](request)

    async def complete(self, template: ResourceTemplate, request: CompletionRequest) -> Sequence[str]:
        completer = self._completers.get((template.uri_template, request.argument))
        if completer is None:
            return await super().complete(template, request)
        return await completer(request)


class _Tools(ToolProvider):
    """The plugin's tools (as it recorded them) as one tool provider."""

    def __init__(self, plugin: Plugin, tools: Recorded, settings: Any) -> None:
        self.name = f"{plugin.name}-tools"  # provider names are unique across kinds
        self.authored_as = plugin.name
        self._declared: list[Tool] = []
        self._calls: dict[str, ToolCaller] = {}
        self.authoring_advice: list[Advice] = []  # check's warnings (mcp_providers._host.advisories)
        for name, (function, fields) in tools.items():
            sig = fx.signature(function, plugin.settings)
            self.authoring_advice += tool_advice(sig, name, "output_model" in fields)
            description = fields.get("description") or doc_of(function)
            if not description:
                raise fx.DeclarationError(
                    f"{sig.where}: tool {name!r} has no description; give the function a docstring saying what it "
                    "does (the model reads it), or pass description="
                )
            if "output_model" in fields:  # e.g. a function returning ToolResult(output=..., links=...)
                model, wrapped = fields["output_model"], False
            else:
                model, wrapped = fx.output_model(sig, name)
            rest = {k: v for k, v in fields.items() if k not in ("description", "output_model")}
            with declaring(sig.where):
                self._declared.append(
                    Tool(
                        name=name,
                        description=description,
                        input_model=fx.input_model(sig, name),
                        output_model=model,
                        **rest,
                    )
                )
            self._calls[name] = ToolCaller(sig, settings, model, wrapped)

    def tools(self) -> Sequence[Tool]:
        return self._declared

    async def call(self, call: ToolCall) -> ToolResult:
        return await self._calls[call.tool.name](call)


class _Prompts(PromptProvider):
    """The plugin's prompts (as it recorded them) as one prompt provider."""

    def __init__(self, plugin: Plugin, prompts: Recorded, completers: Completers, settings: Any) -> None:
        self.name = f"{plugin.name}-prompts"
        self.authored_as = plugin.name
        self._declared: list[Prompt] = []
        self._renders: dict[str, PromptRenderer] = {}
        self._completers: dict[tuple[str, str], Completer] = {}
        self.authoring_advice: list[Advice] = []  # check's warnings (mcp_providers._host.advisories)
        self.argument_values: dict[tuple[str, str], tuple[str, ...]] = {}  # (prompt, argument) -> its Literal's
        for name, (function, fields) in prompts.items():
            sig = fx.signature(function, plugin.settings)
            self.argument_values.update(((name, a), v) for a, v in literal_values(sig).items())
            fx.text_values(sig, "prompt", name)
            self.authoring_advice += advice(sig, name, [p.name for p in sig.values])
            description = fields.get("description") or doc_of(function) or name
            links = prompt_links(sig.where, fields, [p.name for p in sig.values])
            rest = {k: v for k, v in fields.items() if k not in ("description", "argument_resources")}
            with declaring(sig.where):
                arguments = tuple(
                    PromptArgument(
                        name=p.name, required=p.default is inspect.Parameter.empty, resource=links.get(p.name)
                    )
                    for p in sig.values
                )
                self._declared.append(Prompt(name=name, description=description, arguments=arguments, **rest))
            self._renders[name] = PromptRenderer(sig, settings)
            names = [a.name for a in arguments]
            for variable, completer in known(completers("prompt", name), names, f"prompt {name!r}"):
                self._completers[(name, variable)] = completer

    def prompts(self) -> Sequence[Prompt]:
        return self._declared

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        render = self._renders[prompt.name]
        result = await render.call(render.bind(arguments, None, policy.principal()))
        return fx.to_messages(result, render.where)

    async def complete(self, prompt: Prompt, request: CompletionRequest) -> Sequence[str]:
        completer = self._completers.get((prompt.name, request.argument))
        if completer is None:
            return await super().complete(prompt, request)
        return await completer(request)
