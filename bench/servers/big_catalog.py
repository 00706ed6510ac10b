"""The big upstream's catalog: the recall set's targets plus generated distractors.

`catalog(size, seed)` is the recall set's target tools (`bench/scale_queries.py`) plus
generated distractors: verb + noun (+ qualifier) names over 32 domains, in snake_case,
kebab-case or camelCase, descriptions of one to four sentences and one to seven parameters,
read-only or destructive hints where the verb says so. It is grouped by domain, so a slice
is the catalog of one plausible upstream; `layout()` says which slice each of several
upstreams serves. Stdlib only (the upstream process imports it).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.scale_queries import TARGETS, Target

__all__ = ["DOMAINS", "JSON", "QUALIFIERS", "VERBS", "Slice", "catalog", "layout"]

JSON = dict[str, Any]

DOMAINS: dict[str, str] = {
    "billing": "invoice credit_note subscription price_plan coupon tax_rate billing_account "
    "usage_record",
    "payments": "payment payout dispute charge card payment_link balance_transaction "
    "customer_balance",
    "finance": "exchange_rate ledger_entry budget expense_report journal cost_center "
    "cash_forecast account_statement",
    "chat": "channel message thread reaction user_group direct_message emoji pinned_item",
    "calendar": "event meeting calendar availability room_booking reminder attendee recurrence",
    "email": "email mailbox draft label attachment mail_filter signature contact_group",
    "issues": "issue sprint epic board comment worklog component release_version",
    "code": "repository pull_request branch commit tag code_review gist webhook",
    "ci": "pipeline build job artifact runner workflow_run test_report cache_entry",
    "deploy": "deployment release environment service config_map secret rollout feature_flag",
    "monitoring": "alert metric dashboard incident on_call_schedule uptime_check log_search slo",
    "database": "table query index backup schema migration replica connection_pool",
    "files": "file folder file_version storage_bucket share_link upload_session trash_item quota",
    "docs": "document page template wiki_space spreadsheet presentation doc_comment revision",
    "language": "translation glossary language_detection transcript subtitle text_summary "
    "spell_check tone_check",
    "weather": "forecast weather_alert air_quality observation radar_image climate_normal "
    "pollen_count uv_index",
    "maps": "place route geocode traffic_report map_tile elevation distance_matrix timezone",
    "travel": "flight hotel booking itinerary car_rental seat_map fare loyalty_account",
    "shipping": "shipment parcel shipping_label carrier_rate pickup customs_form tracking_event "
    "return_label",
    "inventory": "product stock_level warehouse sku bin_location stock_transfer cycle_count "
    "supplier",
    "procurement": "purchase_order vendor quote_request contract requisition goods_receipt "
    "vendor_invoice catalog_item",
    "hr": "employee time_off payslip position applicant onboarding_task performance_review "
    "benefit_plan",
    "crm": "contact company deal lead pipeline_stage activity opportunity account_note",
    "support": "ticket macro satisfaction_rating help_article sla_policy support_agent queue "
    "canned_reply",
    "messaging": "sms whatsapp_message push_notification phone_number voice_call short_link "
    "opt_out sender_id",
    "identity": "user role api_key session password_policy mfa_device audit_log access_token",
    "marketing": "campaign mailing_list newsletter segment landing_page ad_group utm_link audience",
    "web": "web_page sitemap screenshot link_preview rss_feed crawl_job robots_rule http_check",
    "media": "audio_file video image podcast_episode playlist thumbnail caption_track media_asset",
    "tasks": "todo project task_list checklist label_set time_entry milestone habit",
    "markets": "stock_quote ticker portfolio watchlist dividend earnings_report crypto_price "
    "market_index",
    "units": "unit_conversion currency_conversion measurement recipe_scale timezone_conversion "
    "number_format date_diff unit_system",
}

# verb -> (class, description template); {n} a noun, {ns} its plural, {d} the domain
VERBS: dict[str, tuple[str, str]] = {
    "get": ("read", "Get one {n} by id, with all of its fields."),
    "fetch": ("read", "Fetch a {n} together with its related records."),
    "show": ("read", "Show the details of a {n} as the {d} app displays them."),
    "describe": ("read", "Describe a {n}: its settings, owner and current state."),
    "list": ("list", "List {ns}, newest first."),
    "browse": ("list", "Browse {ns} page by page, grouped by owner."),
    "search": ("search", "Search {ns} by keyword and filters."),
    "find": ("search", "Find {ns} whose fields match the given values."),
    "lookup": ("search", "Look up a {n} by an external reference or code."),
    "create": ("create", "Create a {n}."),
    "add": ("create", "Add a {n} to the {d} workspace."),
    "register": ("create", "Register a new {n} so that other tools can refer to it."),
    "update": ("update", "Update fields of an existing {n}; fields left out are kept."),
    "edit": ("update", "Edit a {n} in place."),
    "set": ("update", "Set one property of a {n}."),
    "delete": ("delete", "Delete a {n}. This cannot be undone."),
    "remove": ("delete", "Remove a {n} from its parent."),
    "purge": ("delete", "Purge {ns} older than a cutoff date."),
    "archive": ("archive", "Archive a {n} so that it no longer shows in default listings."),
    "restore": ("restore", "Restore an archived or deleted {n}."),
    "export": ("export", "Export {ns} as CSV or JSON."),
    "download": ("export", "Download a {n} as a file."),
    "import": ("import", "Import {ns} from a CSV or JSON file."),
    "count": ("count", "Count {ns}, optionally grouped by a field."),
    "sync": ("sync", "Synchronise {ns} with the remote {d} system."),
    "refresh": ("sync", "Refresh the cached copy of a {n}."),
    "validate": ("validate", "Check a {n} for missing or inconsistent fields."),
    "verify": ("validate", "Verify that a {n} is still valid and reachable."),
    "assign": ("assign", "Assign a {n} to a user or a team."),
    "transfer": ("assign", "Transfer ownership of a {n} to another user."),
    "tag": ("tag", "Add or remove tags on a {n}."),
    "comment_on": ("comment", "Add a comment to a {n}."),
    "approve": ("approve", "Approve a pending {n}."),
    "reject": ("reject", "Reject a pending {n} with a reason."),
    "lock": ("lock", "Lock a {n} against further changes."),
    "unlock": ("unlock", "Unlock a {n} that was locked."),
    "clone": ("duplicate", "Make a copy of a {n} with a new id."),
    "move": ("move", "Move a {n} to another folder, project or owner."),
    "rename": ("rename", "Rename a {n}."),
    "share": ("share", "Share a {n} with other users."),
    "watch": ("watch", "Subscribe to changes of a {n}."),
    "summarize": ("summarize", "Summarize recent activity on a {n}."),
    "send": ("send", "Send a {n} to its recipients."),
    "notify": ("send", "Notify the owner of a {n}."),
    "schedule": ("schedule", "Schedule a {n} for a later date."),
    "cancel": ("cancel", "Cancel a {n} that has not completed yet."),
    "close": ("close", "Close a {n}."),
    "reopen": ("reopen", "Reopen a closed {n}."),
    "merge": ("merge", "Merge two {ns} into one."),
    "preview": ("preview", "Render a preview of a {n}."),
    "audit": ("audit", "List who changed a {n}, when and how."),
    "convert": ("convert", "Convert a {n} to another format."),
    "track": ("track", "Track the status history of a {n}."),
}
QUALIFIERS = (
    "batch",
    "bulk",
    "by_owner",
    "by_date",
    "recent",
    "draft",
    "v2",
    "details",
    "history",
    "stats",
    "status",
    "settings",
    "permissions",
    "metadata",
    "report",
)
EXTRA_SENTENCES = (
    "Requires the {d}:write scope.",
    "Requires the {d}:read scope.",
    "Rate limited to 10 requests per second per workspace.",
    "Returns at most 100 items per page; pass the cursor for the next page.",
    "Timestamps are ISO 8601 in UTC.",
    "Fails with NOT_FOUND when the {n} does not exist.",
    "The result includes the {n}'s id, which other {d} tools accept.",
    "Only workspace administrators may call this.",
    "Deleted {ns} are excluded unless include_deleted is true.",
    "Changes are recorded in the audit log.",
    "Amounts are in minor units of the currency (cents).",
    "Large results are truncated; narrow the filters to see more.",
    "Idempotent: calling it twice with the same key has no further effect.",
    "Works on {ns} owned by the calling user only.",
)
GENERIC_FIELDS = (
    "name:string",
    "title:string",
    "status:enum(active|paused|closed)",
    "owner_id:string",
    "tags:array",
    "due_date:string",
    "amount:number",
    "currency:string",
    "email:string",
    "description:string",
    "priority:enum(low|medium|high)",
    "start_time:string",
    "end_time:string",
    "url:string",
    "quantity:integer",
    "region:string",
    "language:string",
    "notes:string",
    "include_deleted:boolean",
    "format:enum(csv|json)",
    "team_id:string",
    "reason:string",
)


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _schema(params: list[str] | tuple[str, ...]) -> JSON:
    """JSON schema from "name:type" specs ("!" required; `enum(a|b)`)."""
    properties: JSON = {}
    required = []
    for spec in params:
        name, _, kind = spec.partition(":")
        if kind.endswith("!"):
            kind = kind[:-1]
            required.append(name)
        if kind.startswith("enum("):
            prop: JSON = {"type": "string", "enum": kind[5:-1].split("|")}
        elif kind == "array":
            prop = {"type": "array", "items": {"type": "string"}}
        else:
            prop = {"type": kind}
        prop["description"] = name.replace("_", " ").capitalize() + "."
        properties[name] = prop
    schema: JSON = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _target_tool(target: Target) -> JSON:
    return {
        "name": target.name,
        "description": target.description,
        "inputSchema": _schema(target.params),
        "_domain": target.domain,
    }


def _reserved() -> tuple[set[tuple[str, str]], set[str]]:
    pairs: set[tuple[str, str]] = set()
    nouns: set[str] = set()
    for target in TARGETS:
        for entry in target.reserve:
            verb_class, noun = entry.split()
            if verb_class == "*":
                nouns.add(noun)
            else:
                pairs.add((verb_class, noun))
    return pairs, nouns


_RESERVED = _reserved()


def _styled(words: list[str], style: int) -> str:
    if style == 0:
        return "-".join(words)
    if style == 1:
        return words[0] + "".join(w.capitalize() for w in words[1:])
    return "_".join(words)


def _distractor(rng: random.Random, domain: str, nouns: list[str]) -> tuple[str, str, JSON]:
    """(verb class, noun, tool) of one generated tool of `domain`."""
    noun = rng.choice(nouns)
    verb = rng.choice(list(VERBS))
    verb_class, template = VERBS[verb]
    words = [*verb.split("_"), *(_plural(noun) if verb_class == "list" else noun).split("_")]
    roll = rng.random()
    if roll < 0.35:
        words += rng.choice(QUALIFIERS).split("_")
    elif roll < 0.45:
        words.insert(0, domain)
    style = rng.choices((0, 1, 2), weights=(15, 15, 70))[0]
    fill = {"n": noun.replace("_", " "), "ns": _plural(noun).replace("_", " "), "d": domain}
    sentences = [template.format(**fill)]
    for extra in rng.sample(EXTRA_SENTENCES, rng.choice((0, 0, 1, 1, 2, 3))):
        sentences.append(extra.format(**fill))
    params = [f"{noun}_id:string!"] if verb_class not in ("list", "search", "create") else []
    if verb_class == "search":
        params.append("query:string!")
    if verb_class in ("list", "search"):
        params += ["limit:integer", "cursor:string"]
    low, high = (1, 6) if verb_class == "create" else (0, 4)
    params += rng.sample(GENERIC_FIELDS, rng.randint(low, high))
    if verb_class == "create" and not any(p.endswith("!") for p in params):
        params[0] += "!"
    tool: JSON = {
        "name": _styled(words, style),
        "description": " ".join(sentences),
        "inputSchema": _schema(params),
        "_domain": domain,
    }
    if verb_class in ("delete", "cancel"):
        tool["annotations"] = {"destructiveHint": True}
    elif verb_class in ("read", "list", "search", "count", "export", "preview", "audit"):
        tool["annotations"] = {"readOnlyHint": True}
    return verb_class, noun, tool


def _quotas(distractors: int, seed: int) -> dict[str, int]:
    """How many distractors each domain gets: uneven weights, largest remainder."""
    rng = random.Random(seed)
    weights = {d: rng.uniform(0.5, 1.5) for d in DOMAINS}
    total = sum(weights.values())
    exact = {d: distractors * w / total for d, w in weights.items()}
    quota = {d: int(x) for d, x in exact.items()}
    left = distractors - sum(quota.values())
    for domain in sorted(exact, key=lambda d: exact[d] - quota[d], reverse=True)[:left]:
        quota[domain] += 1
    return quota


def _domain_block(domain: str, targets: list[Target], quota: int, seed: int) -> list[JSON]:
    """A domain's targets and `quota` distractors, in a seeded order."""
    pairs, reserved_nouns = _RESERVED
    tools = [_target_tool(t) for t in targets]
    taken = {t.name for t in TARGETS}
    rng = random.Random(f"{seed}:{domain}")
    nouns = DOMAINS[domain].split()
    while len(tools) < len(targets) + quota:
        verb_class, noun, tool = _distractor(rng, domain, nouns)
        if noun in reserved_nouns or (verb_class, noun) in pairs or tool["name"] in taken:
            continue
        taken.add(tool["name"])
        tools.append(tool)
    rng.shuffle(tools)
    return tools


def catalog(size: int, seed: int = 0, *, start: int = 0, stop: int | None = None) -> list[JSON]:
    """Tools `start:stop` of a `size`-tool catalog: the first targets (all of them from 42
    tools up) and distractors, grouped by domain. Deterministic in (size, seed); only the
    domains the slice touches are generated. Each tool has a private `_domain` key."""
    stop = size if stop is None else min(stop, size)
    targets = list(TARGETS[: min(size, len(TARGETS))])
    quota = _quotas(size - len(targets), seed)
    tools: list[JSON] = []
    position = 0
    for domain in DOMAINS:
        mine = [t for t in targets if t.domain == domain]
        count = len(mine) + quota[domain]
        if position < stop and position + count > start:
            block = _domain_block(domain, mine, quota[domain], seed)
            tools += block[max(0, start - position) : stop - position]
        position += count
    return tools


class Slice:
    """What one upstream of a layout serves: its name, a description, and its tools."""

    __slots__ = ("count", "description", "name", "offset")

    def __init__(self, name: str, description: str, offset: int, count: int) -> None:
        self.name, self.description, self.offset, self.count = name, description, offset, count


def layout(size: int, upstreams: int, seed: int = 0) -> list[Slice]:
    """`size` tools spread evenly over `upstreams`, each named for its main domain."""
    tools = catalog(size, seed)
    slices = []
    for i in range(upstreams):
        start, end = i * size // upstreams, (i + 1) * size // upstreams
        part = tools[start:end]
        domains = list(dict.fromkeys(t["_domain"] for t in part))
        main = max(domains, key=lambda d: sum(t["_domain"] == d for t in part))
        description = f"{', '.join(domains)} tools ({len(part)})"
        slices.append(Slice(f"{main}_{i:03d}", description, start, end - start))
    return slices
