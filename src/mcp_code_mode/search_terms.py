"""The vocabulary of tool search: stop words, and words of one meaning folded to one term.

Lexical search misses a tool when the user's word is not the tool's word ("remove" vs
`delete_file`, "ticket" vs `create_issue`). Each `CONCEPTS` entry maps a head word to words
that mean the same in the language of tools and their users; the catalog and the query go
through the same folding (after stemming), so either side may use any of them. Single words
only. Keep entries general: a word belongs here when it means the head word in most tools,
not because one query needed it.
"""

from __future__ import annotations

import bm25s.stopwords

__all__ = ["CONCEPTS", "STOP_WORDS"]

# bm25s's English list, minus words that carry meaning in tool names ("now playing", "scale
# up", "log out", "list all").
STOP_WORDS = frozenset(bm25s.stopwords.STOPWORDS_EN_PLUS) - {
    "all",
    "down",
    "now",
    "off",
    "out",
    "up",
}

CONCEPTS: dict[str, tuple[str, ...]] = {
    # verbs
    "delete": (
        "remove",
        "erase",
        "trash",
        "destroy",
        "purge",
        "rm",
        "del",
        "wipe",
        "drop",
        "discard",
    ),
    "create": ("new", "make", "open", "start", "add", "insert", "compose"),
    "update": (
        "edit",
        "modify",
        "alter",
        "amend",
        "change",
        "adjust",
        "tweak",
        "postpone",
        "reschedule",
    ),
    "search": ("find", "lookup", "locate", "seek", "look"),
    "get": (
        "retrieve",
        "obtain",
        "view",
        "read",
        "show",
        "see",
        "display",
        "detail",
        "load",
        "check",
        "inspect",
    ),
    "list": ("enumerate", "browse", "overview"),
    "reply": ("answer", "respond", "response"),
    "share": ("grant",),
    "reset": ("undo", "unstage"),
    "navigate": ("goto", "visit", "go"),
    "fill": ("enter", "input"),
    "count": ("many", "tally", "number"),
    "aggregate": ("group", "sum", "total"),
    "upload": ("put", "store"),
    "download": ("export",),
    "cancel": ("terminate", "stop", "end", "abort", "halt"),
    "run": ("execute", "exec", "launch", "invoke", "trigger", "evaluate", "eval"),
    "send": ("deliver", "dispatch"),
    "merge": ("mr",),
    "pull": ("pr",),
    # nouns
    "issue": ("ticket", "bug"),
    "repository": ("repo",),
    "directory": ("folder", "dir", "subfolder", "subdirectory"),
    "comment": ("remark", "feedback"),
    "user": ("person", "people", "member", "teammate", "colleague"),
    "customer": ("client", "buyer", "shopper"),
    "payment": ("charge", "transaction"),
    "invoice": ("bill", "billing"),
    "subscription": ("plan", "membership"),
    "balance": ("funds",),
    "event": ("meeting", "appointment", "invite"),
    "screenshot": ("image", "picture", "capture", "screencap", "screengrab"),
    "url": ("http", "https", "website", "webpage", "site"),
    "dialog": ("popup", "modal"),
    "console": ("devtools",),
    "item": ("row", "record", "entry"),
    "relation": ("relationship", "connect", "relate", "link"),
    "forecast": ("rain", "snow", "precipitation", "storm", "sunny"),
    "elevation": ("altitude", "height"),
    "geocode": ("coordinates", "latitude", "longitude", "lat", "lng"),
    "track": ("song", "tune"),
    "news": ("headline",),
    "latest": ("newest", "recent", "current"),
    "task": ("todo", "chore"),
    "message": ("msg", "dm", "chat"),
    "log": ("logs", "output"),
    "error": ("exception", "crash", "failure", "fail"),
    "email": ("mail", "inbox"),
    "label": ("tag", "category"),
    "price": ("cost", "pricing"),
    "order": ("purchase",),
    "restart": ("reboot", "bounce"),
    "status": ("state", "health"),
    "distance": ("far", "mile", "kilometer", "km"),
    "direction": ("route", "itinerary"),
    "place": ("restaurant", "cafe", "venue", "nearby"),
    "volume": ("loud", "loudness"),
    "play": ("resume", "listen"),
    "timezone": ("tz", "zone"),
    "convert": ("conversion", "translate", "transform"),
    "checkout": ("switch",),
    "diff": ("difference", "compare", "delta"),
    "history": ("timeline", "past"),
    "favorite": ("star", "like", "bookmark"),
    "weather": ("temperature", "humidity", "wind"),
    "allow": ("permit", "permitted", "authorized"),
    "draft": ("unsent",),
    "filter": ("rule", "automatic", "automatically"),
    "hover": ("mouse", "mouseover"),
    "network": ("xhr", "ajax", "traffic"),
    "refund": ("reimburse", "reimbursement", "chargeback"),
    # product names people shorten
    "mongodb": ("mongo",),
    "postgres": ("postgresql", "psql"),
    "kubernetes": ("k8s", "kube", "kubectl"),
    "javascript": ("js",),
}
