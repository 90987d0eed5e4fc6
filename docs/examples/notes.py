"""A notes server as a plugin, declared with decorators (docs/plugin-authors.md)."""

from pydantic import BaseModel, Field

from mcp_providers.plugin import Icon, NotFound, Plugin

NOTES = {
    "work": {"standup": "Daily at 9:30 in room 4.", "roadmap": "Ship the notes plugin."},
    "home": {"groceries": "Milk, eggs, bread.", "plants": "Water the fern on Sundays."},
}
ICON = Icon(src="https://example.com/notes.png", mime_type="image/png", sizes=("48x48",))


class Settings(BaseModel):
    max_results: int = Field(10, ge=1, le=100, description="Most hits a search returns.")


class Hit(BaseModel):
    notebook: str
    note: str


class SearchOut(BaseModel):
    hits: list[Hit]


notes = Plugin("notes", prefixes=["notes://"], settings=Settings)


@notes.resource("notes://index", icons=[ICON])
def index() -> dict[str, list[str]]:
    """Every notebook and the notes in it."""
    return {book: sorted(pages) for book, pages in NOTES.items()}


@notes.template("notes://{notebook}/{note}", icons=[ICON])
async def note(notebook: str, note: str) -> str:
    """The text of one note."""
    if note not in NOTES.get(notebook, {}):
        raise NotFound(f"no note {note!r} in notebook {notebook!r}; notes://index lists them")
    return NOTES[notebook][note]


@note.complete("notebook")
def notebooks(notebook: str) -> list[str]:
    return [book for book in NOTES if book.startswith(notebook)]


@note.complete("note")
def note_names(note: str, notebook: str = "") -> list[str]:
    return [name for name in NOTES.get(notebook, {}) if name.startswith(note)]


@notes.tool(icons=[ICON])
def notes_search(query: str, settings: Settings) -> SearchOut:
    """Find the notes whose text contains `query` (case-insensitive)."""
    found = [(b, n) for b, pages in NOTES.items() for n, text in pages.items() if query.lower() in text.lower()]
    return SearchOut(hits=[Hit(notebook=b, note=n) for b, n in found[: settings.max_results]])
