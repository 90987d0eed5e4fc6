"""The one SSG registry: every SSG fact the documentation plugins serve is derived from here.

The catalog resource, the per-SSG template, the configuration templates, completion values, the
tools' enums and the prompts' completions all read :data:`SSGS`, so they cannot drift apart.

Sources:

- the first eight fields (``id`` .. ``bestFor``) and their vocabularies follow DocuMCP's
  ``documcp://ssgs/available`` (tosin2013/documcp ``src/index.ts``), so clients written against
  it keep working; the five DocuMCP rows are kept word for word;
- Astro with Starlight and VitePress are the additions DocuMCP planned (its issues #122, #123);
- configuration file names, commands, output folders and features come from each project's own
  documentation, linked in :attr:`SSG.docs_url`.
"""

from typing import Annotated, Any, Final, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

__all__ = [
    "AVAILABLE_FIELDS",
    "FEATURES",
    "SSG",
    "SSGS",
    "SSG_IDS",
    "BuildSpeed",
    "Catalog",
    "Complexity",
    "ConfigFormat",
    "Ecosystem",
    "Feature",
    "Language",
    "SSGId",
    "by_id",
    "mime_type",
    "require",
    "template_uri",
]

Complexity = Literal["low", "medium", "high"]
"""How much a newcomer must learn before the first useful site (DocuMCP used low and medium)."""
BuildSpeed = Literal["slow", "medium", "fast", "very-fast"]
"""Relative build time for a few hundred pages (DocuMCP used medium, fast and very-fast)."""
Ecosystem = Literal["emerging", "growing", "mature"]
"""Age and breadth of themes, plugins and answers online (DocuMCP used growing and mature)."""
Language = Literal["ruby", "go", "javascript", "typescript", "python"]
"""Language the generator and its plugins are written in (DocuMCP used all but typescript)."""
Feature = Literal["versioning", "i18n", "built-in-search", "blog", "github-pages-native"]
"""Capabilities available without third-party plugins:

- ``versioning``: several versions of the docs side by side;
- ``i18n``: translated pages with a language switcher;
- ``built-in-search``: client-side search with no external service;
- ``blog``: dated posts with feeds;
- ``github-pages-native``: GitHub Pages builds it with no workflow file.
"""
FEATURES: Final[tuple[Feature, ...]] = get_args(Feature)

ConfigFormat = Literal["yaml", "toml", "esm", "cjs"]
"""Format of an SSG's configuration file: YAML, TOML, an ECMAScript module or a CommonJS module."""

_MIME_TYPES: Final[dict[ConfigFormat, str]] = {
    # IANA-registered types: application/yaml (RFC 9512), application/toml (registered 2024),
    # text/javascript (RFC 9239, which marks application/javascript obsolete).
    "yaml": "application/yaml",
    "toml": "application/toml",
    "esm": "text/javascript",
    "cjs": "text/javascript",
}

AVAILABLE_FIELDS: Final[frozenset[str]] = frozenset(
    {"id", "name", "description", "language", "complexity", "build_speed", "ecosystem", "best_for"}
)
"""The fields ``documcp://ssgs/available`` serves: exactly DocuMCP's eight (python names)."""


class SSG(BaseModel):
    """One static site generator.

    Serialized with ``by_alias=True``: the DocuMCP fields keep DocuMCP's camelCase names
    (``buildSpeed``, ``bestFor``); the additions are camelCase too (``configFile``, ``docsUrl`` ...).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    """Stable identifier used in URIs and tool arguments, e.g. ``"mkdocs"``."""
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    language: Language
    complexity: Complexity
    build_speed: BuildSpeed = Field(alias="buildSpeed")
    ecosystem: Ecosystem
    best_for: tuple[str, ...] = Field(alias="bestFor", min_length=1)
    """Free-form kebab-case tags, e.g. ``("documentation", "blogs")``."""

    features: tuple[Feature, ...] = ()
    """Capabilities available without third-party plugins (see :data:`Feature`)."""
    config_file: str = Field(alias="configFile", min_length=1)
    """Path of the configuration file relative to the project root, e.g. ``"mkdocs.yml"``."""
    config_format: ConfigFormat = Field(alias="configFormat")
    content_dir: str = Field(alias="contentDir", min_length=1)
    """Folder, relative to the project root, holding the Markdown pages of the docs."""
    output_dir: str = Field(alias="outputDir", min_length=1)
    """Folder the build writes the static site to, relative to the project root."""
    docs_url: str = Field(alias="docsUrl", pattern=r"^https://")
    """The project's own configuration reference."""
    install: tuple[str, ...] = Field(min_length=1)
    """Shell commands that install the generator, in order."""
    build: str = Field(min_length=1)
    """Shell command that builds the site into :attr:`output_dir`."""
    serve: str = Field(min_length=1)
    """Shell command that serves the site locally with live reload."""

    def available_entry(self) -> dict[str, Any]:
        """This SSG as one item of ``documcp://ssgs/available``: DocuMCP's eight fields only."""
        return self.model_dump(mode="json", by_alias=True, include=set(AVAILABLE_FIELDS))


class Catalog(BaseModel):
    """The body of ``documcp://ssgs/available``: ``{"ssgs": [{id, name, ..., bestFor}, ...]}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ssgs: tuple[SSG, ...]

    def body(self) -> dict[str, list[dict[str, Any]]]:
        """The JSON body, DocuMCP's shape exactly."""
        return {"ssgs": [s.available_entry() for s in self.ssgs]}


SSGS: Final[tuple[SSG, ...]] = (
    SSG(
        id="jekyll",
        name="Jekyll",
        description="Ruby-based SSG, great for GitHub Pages",
        language="ruby",
        complexity="low",
        build_speed="medium",
        ecosystem="mature",
        best_for=("blogs", "documentation", "simple-sites"),
        features=("blog", "github-pages-native"),
        config_file="_config.yml",
        config_format="yaml",
        content_dir=".",
        output_dir="_site",
        docs_url="https://jekyllrb.com/docs/configuration/",
        install=("gem install bundler jekyll", "bundle install"),
        build="bundle exec jekyll build",
        serve="bundle exec jekyll serve --livereload",
    ),
    SSG(
        id="hugo",
        name="Hugo",
        description="Go-based SSG, extremely fast builds",
        language="go",
        complexity="medium",
        build_speed="very-fast",
        ecosystem="mature",
        best_for=("documentation", "blogs", "large-sites"),
        features=("i18n", "blog"),
        config_file="hugo.toml",
        config_format="toml",
        content_dir="content/docs",
        output_dir="public",
        docs_url="https://gohugo.io/configuration/",
        install=(
            "CGO_ENABLED=1 go install -tags extended github.com/gohugoio/hugo@latest",
            "hugo mod init github.com/your-org/your-project",
            "npm install --save-dev autoprefixer postcss postcss-cli",
        ),
        build="hugo --minify",
        serve="hugo server",
    ),
    SSG(
        id="docusaurus",
        name="Docusaurus",
        description="React-based, optimized for technical documentation",
        language="javascript",
        complexity="medium",
        build_speed="medium",
        ecosystem="growing",
        best_for=("technical-documentation", "api-docs", "versioned-docs"),
        features=("versioning", "i18n", "blog"),
        config_file="website/docusaurus.config.js",
        config_format="esm",
        content_dir="website/docs",
        output_dir="website/build",
        docs_url="https://docusaurus.io/docs/api/docusaurus-config",
        install=("npx create-docusaurus@latest website classic",),
        build="npm --prefix website run build",
        serve="npm --prefix website run start",
    ),
    SSG(
        id="mkdocs",
        name="MkDocs",
        description="Python-based, simple and fast documentation",
        language="python",
        complexity="low",
        build_speed="fast",
        ecosystem="mature",
        best_for=("documentation", "technical-docs", "simple-setup"),
        features=("built-in-search", "blog"),
        config_file="mkdocs.yml",
        config_format="yaml",
        content_dir="docs",
        output_dir="site",
        docs_url="https://www.mkdocs.org/user-guide/configuration/",
        install=("pip install mkdocs-material",),
        build="mkdocs build --strict",
        serve="mkdocs serve",
    ),
    SSG(
        id="eleventy",
        name="Eleventy",
        description="JavaScript-based, simple and flexible",
        language="javascript",
        complexity="low",
        build_speed="fast",
        ecosystem="growing",
        best_for=("blogs", "documentation", "flexible-sites"),
        features=("i18n",),
        config_file="eleventy.config.mjs",
        config_format="esm",
        content_dir="src",
        output_dir="_site",
        docs_url="https://www.11ty.dev/docs/config/",
        install=("npm install --save-dev @11ty/eleventy markdown-it-anchor",),
        build="npx @11ty/eleventy",
        serve="npx @11ty/eleventy --serve",
    ),
    SSG(
        id="astro",
        name="Astro Starlight",
        description="Astro with the Starlight documentation theme: accessible, fast, search built in",
        language="javascript",
        complexity="low",
        build_speed="fast",
        ecosystem="growing",
        best_for=("technical-documentation", "documentation", "multilingual-docs"),
        features=("built-in-search", "i18n"),
        config_file="astro.config.mjs",
        config_format="esm",
        content_dir="src/content/docs",
        output_dir="dist",
        docs_url="https://starlight.astro.build/reference/configuration/",
        install=("npm create astro@latest -- --template starlight",),
        build="npm run build",
        serve="npm run dev",
    ),
    SSG(
        id="vitepress",
        name="VitePress",
        description="Vite- and Vue-based, minimal setup for technical documentation",
        language="javascript",
        complexity="low",
        build_speed="very-fast",
        ecosystem="growing",
        best_for=("technical-documentation", "api-docs", "simple-setup"),
        features=("built-in-search", "i18n"),
        config_file="docs/.vitepress/config.mjs",
        config_format="esm",
        content_dir="docs",
        output_dir="docs/.vitepress/dist",
        docs_url="https://vitepress.dev/reference/site-config",
        install=("npm add --save-dev vitepress",),
        build="npx vitepress build docs",
        serve="npx vitepress dev docs",
    ),
)

SSG_IDS: Final[tuple[str, ...]] = tuple(s.id for s in SSGS)
"""Every SSG id, in registry order (the order the catalog lists them)."""
_BY_ID: Final[dict[str, SSG]] = {s.id: s for s in SSGS}
if len(_BY_ID) != len(SSGS):  # pragma: no cover - guards edits to the table above
    raise ValueError(f"duplicate SSG ids in the registry: {SSG_IDS}")


def by_id(ssg_id: str) -> SSG | None:
    """The registry entry for ``ssg_id``, or ``None``."""
    return _BY_ID.get(ssg_id)


def require(ssg_id: str) -> SSG:
    """The registry entry for ``ssg_id``.

    :raises ValueError: the id is unknown; the message lists the known ids.
    """
    ssg = _BY_ID.get(ssg_id)
    if ssg is None:
        raise ValueError(f"unknown SSG {ssg_id!r}; expected one of: {', '.join(SSG_IDS)}")
    return ssg


def mime_type(ssg: SSG) -> str:
    """The registered MIME type of ``ssg``'s configuration template, e.g. ``application/yaml``."""
    return _MIME_TYPES[ssg.config_format]


def template_uri(ssg: SSG) -> str:
    """URI of ``ssg``'s configuration template, e.g. ``documcp://templates/hugo-config``."""
    return f"documcp://templates/{ssg.id}-config"


def _known(value: str) -> str:
    require(value)
    return value


SSGId = Annotated[
    str,
    AfterValidator(_known),
    WithJsonSchema({"type": "string", "enum": list(SSG_IDS), "description": "An SSG id from the registry."}),
]
"""A registry SSG id as a pydantic field type: validated against the registry, and its JSON Schema
is an ``enum`` of :data:`SSG_IDS`, so tool schemas follow the registry."""
