"""Demo upstream: a small notes store plus read-only access to a few text files.

Run standalone with `python examples/servers/notes_server.py` (stdio).
"""

from __future__ import annotations

from pathlib import Path

from fastmcp import FastMCP

DATA_DIR = Path(__file__).resolve().parent.parent / "data"

mcp = FastMCP("notes")

_NOTES: dict[int, dict] = {
    1: {"id": 1, "text": "Call the supplier about the late shipment", "tags": ["work", "urgent"]},
    2: {"id": 2, "text": "Buy oat milk and coffee beans", "tags": ["home"]},
    3: {"id": 3, "text": "Quarterly review: EMEA revenue is up 12%", "tags": ["work"]},
}


@mcp.tool
def add_note(text: str, tags: list[str] = []) -> dict:  # noqa: B006 - schema default
    """Add a note with optional tags and return it."""
    note_id = max(_NOTES, default=0) + 1
    _NOTES[note_id] = {"id": note_id, "text": text, "tags": list(tags)}
    return _NOTES[note_id]


@mcp.tool
def list_notes(tag: str | None = None) -> list[dict]:
    """List all notes, or only those carrying `tag`."""
    return [n for n in _NOTES.values() if tag is None or tag in n["tags"]]


@mcp.tool(name="get-note")
def get_note(note_id: int) -> dict:
    """Get one note by id."""
    if note_id not in _NOTES:
        raise ValueError(f"no note with id {note_id}")
    return _NOTES[note_id]


@mcp.tool
def search_notes(query: str) -> list[dict]:
    """Find notes whose text contains the query (case-insensitive)."""
    q = query.lower()
    return [n for n in _NOTES.values() if q in n["text"].lower()]


@mcp.tool(annotations={"destructiveHint": True})  # asked about first (README "Approving writes")
def delete_note(note_id: int) -> bool:
    """Delete a note; returns whether it existed."""
    return _NOTES.pop(note_id, None) is not None


@mcp.tool(output_schema=None)
def list_files() -> str:
    """List the text files available to read_file, as a JSON array of names."""
    import json

    return json.dumps(sorted(p.name for p in DATA_DIR.glob("*.txt")))


@mcp.tool(output_schema=None)
def read_file(name: str) -> str:
    """Read one text file (plain text) by name, as listed by list_files."""
    path = (DATA_DIR / name).resolve()
    if path.parent != DATA_DIR or not path.is_file():
        raise ValueError(f"no file named {name!r}")
    return path.read_text(encoding="utf-8")


if __name__ == "__main__":
    mcp.run(show_banner=False)
