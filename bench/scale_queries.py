"""The frozen recall set of `bench/scale.py`: target tools and the queries that should find them.

Written before reading the ranker (`src/mcp_code_mode/ranking.py`) and not tuned on it. The
big upstream (`bench/servers/big_server.py`) serves every target at every catalog size (the
first N targets when the catalog holds fewer than all of them); every other tool of the
catalog is a generated distractor, and no distractor pairs a target's noun with the verbs
listed in its `reserve` (a distractor that does the same job would make a wrong hit right).

A query's recall@5 is the share of its target tools among the first five hits; a query is
scored at a size only when all its targets are in that catalog.

`SHA256` is the sha256 of this file without its own line; `bench/scale.py` refuses to run
when they differ, so a change to the set shows up as a change of this line in review.
Stdlib only: the upstream imports it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["QUERIES", "SHA256", "TARGETS", "Query", "Target", "check_frozen", "file_digest"]

SHA256 = "967e07bc2c764a92aec8a1e11fad9909cc44626fb5d8c9ea4d8f2449740a4aed"


@dataclass(frozen=True, slots=True)
class Target:
    """A hand-written tool the queries look for.

    `params`: "name:type" ("!" when required; type `enum(a|b)` for an enum).
    `reserve`: "verb-class noun" pairs (noun `*`: any verb) no distractor may have.
    """

    name: str
    domain: str
    description: str
    params: tuple[str, ...]
    reserve: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    targets: tuple[str, ...]


TARGETS: tuple[Target, ...] = (
    Target(
        "create_invoice",
        "billing",
        "Create a draft invoice for a customer. Line items are priced in the customer's "
        "currency; the invoice stays a draft until it is finalized.",
        ("customer_id:string!", "line_items:array!", "due_date:string", "currency:string"),
        ("create invoice", "send invoice"),
    ),
    Target(
        "refund_payment",
        "payments",
        "Refund a captured card payment in full or in part. The money goes back to the "
        "original payment method.",
        (
            "payment_id:string!",
            "amount:number",
            "reason:enum(duplicate|fraudulent|requested_by_customer)",
        ),
        ("cancel payment", "cancel charge"),
    ),
    Target(
        "get_exchange_rate",
        "finance",
        "Current exchange rate between two currencies (ISO 4217 codes), updated every minute.",
        ("base:string!", "quote:string!"),
        ("* exchange_rate", "convert currency_conversion", "read currency_conversion"),
    ),
    Target(
        "post_channel_message",
        "chat",
        "Post a message to a chat channel, optionally as a reply in a thread.",
        ("channel:string!", "text:string!", "thread_ts:string"),
        ("send message", "create message", "send thread", "create thread"),
    ),
    Target(
        "schedule_meeting",
        "calendar",
        "Book a meeting on the shared calendar and send invitations to the attendees.",
        ("title:string!", "start:string!", "duration_minutes:integer", "attendees:array"),
        ("schedule meeting", "create meeting", "create event", "schedule event"),
    ),
    Target(
        "find_free_slots",
        "calendar",
        "Find time slots when all the given people are free within a date range.",
        ("attendees:array!", "from_date:string", "to_date:string", "min_minutes:integer"),
        ("* availability",),
    ),
    Target(
        "send_email",
        "email",
        "Send an email message from the connected mailbox.",
        ("to:array!", "subject:string!", "body:string!", "cc:array"),
        ("send email", "create email", "send draft"),
    ),
    Target(
        "search_inbox",
        "email",
        "Search the mailbox by sender, words in the subject, date or label; returns message "
        "headers.",
        ("query:string!", "label:string", "limit:integer"),
        ("search email", "list email", "search mailbox", "list mailbox"),
    ),
    Target(
        "create_issue",
        "issues",
        "Open a new issue (bug, task or story) in a project's tracker.",
        (
            "project_key:string!",
            "title:string!",
            "description:string",
            "issue_type:enum(bug|task|story)",
            "priority:string",
        ),
        ("create issue",),
    ),
    Target(
        "transition_issue",
        "issues",
        "Move an issue to another workflow state, e.g. from In Progress to Done.",
        ("issue_key:string!", "state:string!", "comment:string"),
        ("update issue", "close issue", "move issue", "reopen issue"),
    ),
    Target(
        "merge_pull_request",
        "code",
        "Merge an approved pull request into its base branch (merge commit, squash or rebase).",
        ("repo:string!", "number:integer!", "method:enum(merge|squash|rebase)"),
        ("merge pull_request", "close pull_request", "merge branch"),
    ),
    Target(
        "list_failed_pipelines",
        "ci",
        "List CI pipeline runs that failed on a branch, with the failing job and its log URL.",
        ("repo:string!", "branch:string", "since:string"),
        (
            "list pipeline",
            "search pipeline",
            "list build",
            "search build",
            "list workflow_run",
            "search workflow_run",
            "list job",
            "search job",
        ),
    ),
    Target(
        "rollback_deployment",
        "deploy",
        "Roll a service back to its previous release in an environment.",
        ("service:string!", "environment:enum(staging|production)!", "to_version:string"),
        ("restore deployment", "cancel deployment", "restore release", "cancel rollout"),
    ),
    Target(
        "get_host_cpu_usage",
        "monitoring",
        "CPU usage and load average time series for a host over a time window.",
        ("host:string!", "window_minutes:integer"),
        ("read metric", "search metric", "list metric"),
    ),
    Target(
        "acknowledge_alert",
        "monitoring",
        "Acknowledge a firing alert so that the on-call rotation stops paging.",
        ("alert_id:string!", "note:string"),
        ("close alert", "approve alert", "update alert", "lock alert"),
    ),
    Target(
        "run_sql_query",
        "database",
        "Run a read-only SQL query against the analytics warehouse and return the rows.",
        ("sql:string!", "max_rows:integer"),
        ("* query",),
    ),
    Target(
        "upload_file",
        "files",
        "Upload a file to cloud storage and return a shareable link to it.",
        ("path:string!", "folder:string", "public:boolean"),
        ("import file", "create file", "create share_link", "import upload_session"),
    ),
    Target(
        "share_document",
        "docs",
        "Share a document with people by email, as viewer, commenter or editor.",
        ("document_id:string!", "emails:array!", "role:enum(viewer|commenter|editor)"),
        ("share document", "assign document", "share spreadsheet", "share presentation"),
    ),
    Target(
        "translate_text",
        "language",
        "Translate text into another language; the source language is detected.",
        ("text:string!", "target_language:string!"),
        ("* translation",),
    ),
    Target(
        "get_weather_forecast",
        "weather",
        "Hourly and daily weather forecast for a place, up to 10 days ahead.",
        ("location:string!", "days:integer", "units:enum(metric|imperial)"),
        ("* forecast",),
    ),
    Target(
        "geocode_address",
        "maps",
        "Turn a street address into latitude and longitude.",
        ("address:string!",),
        ("* geocode", "search place", "read place"),
    ),
    Target(
        "get_driving_directions",
        "maps",
        "Turn-by-turn driving route between two places, with distance and travel time.",
        ("origin:string!", "destination:string!", "avoid_tolls:boolean"),
        ("* route", "* distance_matrix"),
    ),
    Target(
        "book_flight",
        "travel",
        "Book seats on a flight offer for one or more passengers.",
        ("offer_id:string!", "passengers:array!"),
        ("schedule flight", "create flight", "create booking", "schedule booking"),
    ),
    Target(
        "search_hotels",
        "travel",
        "Find hotel rooms available in a city for given check-in and check-out dates.",
        (
            "city:string!",
            "check_in:string!",
            "check_out:string!",
            "guests:integer",
            "max_price:number",
        ),
        ("search hotel", "list hotel"),
    ),
    Target(
        "create_shipment_label",
        "shipping",
        "Buy a shipping label for a parcel and get its tracking number.",
        ("to_address:string!", "weight_kg:number!", "from_address:string", "carrier:string"),
        ("* shipping_label", "create shipment", "create parcel"),
    ),
    Target(
        "track_package",
        "shipping",
        "Where a parcel is now: the carrier's tracking events for a tracking number.",
        ("tracking_number:string!", "carrier:string"),
        ("* tracking_event", "track parcel", "track shipment", "read parcel", "read shipment"),
    ),
    Target(
        "adjust_stock_level",
        "inventory",
        "Add or remove units of a product at a warehouse, recording the reason.",
        ("sku:string!", "warehouse:string!", "delta:integer!", "reason:string"),
        ("update stock_level", "create stock_level", "create cycle_count", "update product"),
    ),
    Target(
        "create_purchase_order",
        "procurement",
        "Raise a purchase order to a supplier for items to restock.",
        ("supplier_id:string!", "items:array!", "deliver_by:string"),
        ("create purchase_order", "send purchase_order", "create requisition"),
    ),
    Target(
        "request_time_off",
        "hr",
        "Submit a vacation or sick-leave request for approval by the manager.",
        (
            "employee_id:string!",
            "start_date:string!",
            "end_date:string!",
            "kind:enum(vacation|sick|unpaid)",
        ),
        ("* time_off",),
    ),
    Target(
        "get_payslip",
        "hr",
        "An employee's payslip for a month: gross pay, taxes, deductions and net pay.",
        ("employee_id:string!", "month:string!"),
        ("* payslip",),
    ),
    Target(
        "create_contact",
        "crm",
        "Add a person to the CRM with their company, email and phone.",
        ("name:string!", "email:string", "company:string", "phone:string"),
        ("create contact", "create lead"),
    ),
    Target(
        "update_deal_stage",
        "crm",
        "Move a sales deal to another pipeline stage (qualified, proposal, won, lost).",
        ("deal_id:string!", "stage:enum(qualified|proposal|won|lost)!"),
        (
            "update deal",
            "move deal",
            "close deal",
            "* pipeline_stage",
            "update opportunity",
            "close opportunity",
        ),
    ),
    Target(
        "escalate_ticket",
        "support",
        "Escalate a customer support ticket to the second-line team with a priority.",
        ("ticket_id:string!", "priority:enum(normal|high|urgent)", "reason:string"),
        ("assign ticket", "update ticket"),
    ),
    Target(
        "send_sms",
        "messaging",
        "Send a text message (SMS) to a phone number.",
        ("to:string!", "body:string!"),
        ("* sms",),
    ),
    Target(
        "reset_user_password",
        "identity",
        "Force a password reset for a user account and email them a reset link.",
        ("user_id:string!",),
        ("unlock user", "update user"),
    ),
    Target(
        "revoke_api_key",
        "identity",
        "Revoke an API key immediately; requests that use it fail from then on.",
        ("key_id:string!",),
        ("cancel api_key", "delete api_key", "lock api_key"),
    ),
    Target(
        "schedule_newsletter_campaign",
        "marketing",
        "Schedule an email campaign to a mailing list for a date and time.",
        ("list_id:string!", "subject:string!", "send_at:string!", "template_id:string"),
        (
            "schedule campaign",
            "send campaign",
            "create campaign",
            "* newsletter",
        ),
    ),
    Target(
        "summarize_web_page",
        "web",
        "Fetch a web page and return a short summary of its text.",
        ("url:string!", "max_words:integer"),
        ("summarize web_page", "summarize link_preview"),
    ),
    Target(
        "transcribe_audio",
        "media",
        "Transcribe the speech in an audio file into text with timestamps.",
        ("audio_url:string!", "language:string"),
        ("* transcript", "convert audio_file", "convert caption_track", "create caption_track"),
    ),
    Target(
        "add_todo",
        "tasks",
        "Add an item to a personal to-do list, with an optional due date.",
        ("text:string!", "due:string", "list:string"),
        ("create todo", "create checklist", "create task_list"),
    ),
    Target(
        "convert_units",
        "units",
        "Convert a value between units of length, mass, volume or temperature.",
        ("value:number!", "from_unit:string!", "to_unit:string!"),
        ("* unit_conversion", "convert measurement", "convert unit_system"),
    ),
    Target(
        "get_stock_quote",
        "markets",
        "Latest price and day change of a listed stock, by ticker symbol.",
        ("symbol:string!",),
        ("* stock_quote", "read ticker", "search ticker"),
    ),
)

QUERIES: tuple[Query, ...] = (
    Query("bill the customer for last month's consulting work", ("create_invoice",)),
    Query("give the money back for a duplicate card charge", ("refund_payment",)),
    Query("how many euros is one US dollar right now", ("get_exchange_rate",)),
    Query("post an update in the team channel", ("post_channel_message",)),
    Query("set up a meeting with Ana and Bo next Tuesday", ("schedule_meeting",)),
    Query("when are all three of us available this week", ("find_free_slots",)),
    Query("email the report to my manager", ("send_email",)),
    Query("find the message from the landlord about the lease", ("search_inbox",)),
    Query("file a bug about the login page crashing", ("create_issue",)),
    Query("mark PROJ-42 as done", ("transition_issue",)),
    Query("squash and merge the approved PR", ("merge_pull_request",)),
    Query("which CI runs broke on main", ("list_failed_pipelines",)),
    Query("undo the bad release of the payments service in production", ("rollback_deployment",)),
    Query("is the database host overloaded? show me its CPU", ("get_host_cpu_usage",)),
    Query("stop the pager for the disk space alert", ("acknowledge_alert",)),
    Query("run a SQL select on the warehouse", ("run_sql_query",)),
    Query("put this PDF in cloud storage and get a link", ("upload_file",)),
    Query("give Maria edit access to the design doc", ("share_document",)),
    Query("translate this paragraph into Japanese", ("translate_text",)),
    Query("will it rain in Lisbon this weekend", ("get_weather_forecast",)),
    Query("latitude and longitude of 10 Downing Street", ("geocode_address",)),
    Query("how long is the drive from Porto to Madrid", ("get_driving_directions",)),
    Query("book the cheapest flight offer for two passengers", ("book_flight",)),
    Query("a hotel in Berlin from 3 to 5 May under 150 a night", ("search_hotels",)),
    Query("print a shipping label for a 2 kg parcel", ("create_shipment_label",)),
    Query("where is my package, tracking number 1Z999", ("track_package",)),
    Query("we lost 5 units of SKU-991 in the warehouse, fix the count", ("adjust_stock_level",)),
    Query("order more stock from our supplier", ("create_purchase_order",)),
    Query("ask for vacation from July 1 to July 14", ("request_time_off",)),
    Query("show my salary slip for March", ("get_payslip",)),
    Query("add a new lead with their email to the CRM", ("create_contact",)),
    Query("we won the Acme deal, update the pipeline", ("update_deal_stage",)),
    Query("this customer complaint needs the second-line team urgently", ("escalate_ticket",)),
    Query("text the courier on their phone", ("send_sms",)),
    Query("user is locked out, send them a password reset link", ("reset_user_password",)),
    Query("an API key leaked, disable it now", ("revoke_api_key",)),
    Query("send the newsletter to subscribers on Friday at 9", ("schedule_newsletter_campaign",)),
    Query("tl;dr of the article at this URL", ("summarize_web_page",)),
    Query("turn the meeting recording into text", ("transcribe_audio",)),
    Query("remind me to buy milk, put it on my to-do list", ("add_todo",)),
    Query("convert 5 miles to kilometres", ("convert_units",)),
    Query("what is Apple's share price today", ("get_stock_quote",)),
    Query("payslip", ("get_payslip",)),
    Query("merge pull request", ("merge_pull_request",)),
    Query("sms", ("send_sms",)),
    Query(
        "find a time everyone is free and book the meeting",
        ("find_free_slots", "schedule_meeting"),
    ),
    Query("invoice the customer and email it to them", ("create_invoice", "send_email")),
    Query(
        "coordinates of the address and the weather there",
        ("geocode_address", "get_weather_forecast"),
    ),
    Query(
        "the deploy broke CI: roll it back and file a bug",
        ("rollback_deployment", "create_issue"),
    ),
    Query("track the parcel and text the customer where it is", ("track_package", "send_sms")),
)


def file_digest(path: Path | None = None) -> str:
    """sha256 of this file without the `SHA256 = ...` line."""
    lines = (path or Path(__file__)).read_bytes().splitlines(keepends=True)
    return hashlib.sha256(b"".join(x for x in lines if not x.startswith(b"SHA256 = "))).hexdigest()


def check_frozen() -> None:
    """Raise when the set changed since `SHA256` was recorded."""
    digest = file_digest()
    if digest != SHA256:
        raise RuntimeError(
            f"bench/scale_queries.py changed: sha256 {digest}, recorded {SHA256}. The recall "
            "set is frozen; if the change is deliberate, record the new digest (and say why)."
        )
