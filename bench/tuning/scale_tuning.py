"""Tuning targets and queries for search at catalog size (issue 31), written by the ranker's
author: for tuning only, never to report.

Same shape as the frozen `bench/scale_queries.py` (whose queries were not read to write
these): hand-written target tools placed among the generated distractors of
`bench/servers/big_catalog.py`, with the verb-noun pairs no distractor may have. Targets
that the frozen set also has (common jobs: an email, an issue, a rollback, an SMS, a
parcel, a forecast) were left out, so the two sets share no target name.
"""

from __future__ import annotations

from bench.scale_queries import Query, Target

__all__ = ["QUERIES", "TARGETS"]

TARGETS: tuple[Target, ...] = (
    Target(
        "post_message",
        "chat",
        "Post a message to a channel or a thread as the bot user. Supports markdown and @mentions.",
        ("channel_id:string!", "text:string!", "thread_ts:string"),
        ("send message", "create message", "send direct_message"),
    ),
    Target(
        "add_reaction",
        "chat",
        "Add an emoji reaction to a message.",
        ("channel_id:string!", "message_ts:string!", "emoji:string!"),
        ("create reaction", "tag reaction"),
    ),
    Target(
        "find_free_slots",
        "calendar",
        "Find the times when all the given attendees are free within a date range.",
        ("attendees:array!", "start:string!", "end:string!", "duration_minutes:integer"),
        ("search availability", "read availability", "list availability"),
    ),
    Target(
        "create_event",
        "calendar",
        "Create a calendar event and invite attendees; the invitations are sent at once.",
        ("title:string!", "start_time:string!", "end_time:string!", "attendees:array"),
        ("create event", "schedule event", "create meeting", "schedule meeting"),
    ),
    Target(
        "merge_pull_request",
        "code",
        "Merge an approved pull request into its base branch (merge, squash or rebase).",
        ("repository:string!", "number:integer!", "method:enum(merge|squash|rebase)"),
        ("merge pull_request",),
    ),
    Target(
        "rerun_pipeline",
        "ci",
        "Run a failed pipeline again, from the start or from its failed jobs only.",
        ("pipeline_id:string!", "failed_only:boolean"),
    ),
    Target(
        "acknowledge_alert",
        "monitoring",
        "Acknowledge a firing alert so that on-call is not paged for it again.",
        ("alert_id:string!", "note:string"),
        ("approve alert",),
    ),
    Target(
        "run_sql",
        "database",
        "Run a read-only SQL statement against the warehouse and return the rows.",
        ("sql:string!", "limit:integer"),
        ("search query", "create query"),
    ),
    Target(
        "upload_file",
        "files",
        "Upload a local file into a folder of the cloud drive.",
        ("path:string!", "folder_id:string!", "overwrite:boolean"),
        ("create file", "import file", "create upload_session"),
    ),
    Target(
        "translate_text",
        "language",
        "Translate text into a target language; the source language is detected when not given.",
        ("text:string!", "target_language:string!", "source_language:string"),
        ("create translation", "convert translation"),
    ),
    Target(
        "get_directions",
        "maps",
        "Driving, walking or transit directions between two places, with distance and travel time.",
        ("origin:string!", "destination:string!", "mode:enum(driving|walking|transit)"),
        ("read route", "search route", "create route"),
    ),
    Target(
        "search_flights",
        "travel",
        "Search flights between two airports on given dates, cheapest first.",
        ("origin:string!", "destination:string!", "depart_date:string!", "return_date:string"),
        ("search flight", "list flight", "search fare", "list fare"),
    ),
    Target(
        "adjust_stock",
        "inventory",
        "Increase or decrease the on-hand quantity of a SKU at a warehouse, with a reason.",
        ("sku:string!", "warehouse_id:string!", "delta:integer!", "reason:string"),
        ("update stock_level", "set stock_level"),
    ),
    Target(
        "approve_time_off",
        "hr",
        "Approve an employee's pending time-off request.",
        ("request_id:string!",),
        ("approve time_off",),
    ),
    Target(
        "log_call",
        "crm",
        "Record a phone call with a contact (notes and outcome) on the contact's timeline.",
        ("contact_id:string!", "notes:string!", "outcome:string"),
        ("create activity",),
    ),
    Target(
        "escalate_ticket",
        "support",
        "Raise a ticket's priority and route it to the escalation team.",
        ("ticket_id:string!", "reason:string"),
    ),
    Target(
        "reset_password",
        "identity",
        "Send a user a password reset link, or set a temporary password.",
        ("user_id:string!", "temporary:boolean"),
    ),
    Target(
        "revoke_api_key",
        "identity",
        "Revoke an API key at once: calls made with it fail from then on.",
        ("key_id:string!",),
        ("delete api_key", "cancel api_key", "lock api_key"),
    ),
    Target(
        "unsubscribe_contact",
        "marketing",
        "Remove an email address from a mailing list and record the opt-out.",
        ("list_id:string!", "email:string!"),
    ),
    Target(
        "take_screenshot",
        "web",
        "Capture a screenshot of a web page at a given viewport size.",
        ("url:string!", "width:integer", "height:integer"),
        ("create screenshot", "download screenshot"),
    ),
    Target(
        "transcribe_audio",
        "media",
        "Turn the speech in an audio or video file into text, with timestamps.",
        ("file_url:string!", "language:string"),
        ("convert audio_file",),
    ),
    Target(
        "log_time",
        "tasks",
        "Log hours worked on a task, with a note.",
        ("task_id:string!", "hours:number!", "note:string"),
        ("create time_entry",),
    ),
    Target(
        "get_stock_price",
        "markets",
        "The latest price, change and volume of a stock ticker.",
        ("symbol:string!",),
        ("read stock_quote", "search stock_quote", "read ticker", "search ticker"),
    ),
    Target(
        "convert_currency",
        "units",
        "Convert an amount between two currencies at today's rate.",
        ("amount:number!", "from_currency:string!", "to_currency:string!"),
        ("convert currency_conversion", "create currency_conversion"),
    ),
    Target(
        "refund_charge",
        "payments",
        "Refund a charge, in full or in part, to the original payment method.",
        ("charge_id:string!", "amount:integer"),
        ("cancel charge",),
    ),
    Target(
        "pay_vendor_invoice",
        "procurement",
        "Pay an approved vendor invoice from a company bank account.",
        ("vendor_invoice_id:string!", "bank_account_id:string"),
    ),
    Target(
        "list_overdue_invoices",
        "billing",
        "Invoices past their due date and not yet paid, oldest first.",
        ("customer_id:string", "limit:integer"),
        ("list invoice", "search invoice"),
    ),
)

QUERIES: tuple[Query, ...] = (
    Query("tell the #ops channel the deploy is finished", ("post_message",)),
    Query("post a slack message to a channel", ("post_message",)),
    Query("put a thumbs up on that message", ("add_reaction",)),
    Query("react to a message with an emoji", ("add_reaction",)),
    Query("when are alice and bob both free next tuesday for half an hour", ("find_free_slots",)),
    Query("book a meeting with the design team on friday at 3pm", ("create_event",)),
    Query("create a calendar event with attendees", ("create_event",)),
    Query("squash and merge PR 42", ("merge_pull_request",)),
    Query("retry the failed jobs of the last build", ("rerun_pipeline",)),
    Query("re-run a ci pipeline", ("rerun_pipeline",)),
    Query("ack the disk space alert", ("acknowledge_alert",)),
    Query("how many users signed up last week? query the db", ("run_sql",)),
    Query("execute a sql statement", ("run_sql",)),
    Query("put report.pdf into the shared Finance folder", ("upload_file",)),
    Query("how do you say good morning in japanese", ("translate_text",)),
    Query("translate this paragraph to german", ("translate_text",)),
    Query("how long does it take to drive from Boston to NYC", ("get_directions",)),
    Query("cheapest flight from SFO to Tokyo in March", ("search_flights",)),
    Query(
        "we found 5 extra units of SKU-123 in the Berlin warehouse, fix the count",
        ("adjust_stock",),
    ),
    Query("ok Maria's vacation request", ("approve_time_off",)),
    Query("approve a pto request", ("approve_time_off",)),
    Query("note that I called John from Acme and he wants a demo", ("log_call",)),
    Query("this customer is furious, bump their ticket to tier 2", ("escalate_ticket",)),
    Query("bob is locked out of his account and forgot his password", ("reset_password",)),
    Query("kill the leaked api key ak_123", ("revoke_api_key",)),
    Query("take jane@example.com off the newsletter", ("unsubscribe_contact",)),
    Query("grab an image of how example.com looks on a phone", ("take_screenshot",)),
    Query("screenshot a url", ("take_screenshot",)),
    Query("get me the text of this podcast recording", ("transcribe_audio",)),
    Query("speech to text for an mp3", ("transcribe_audio",)),
    Query("I spent 2h on the onboarding redesign today, record it", ("log_time",)),
    Query("what's AAPL trading at", ("get_stock_price",)),
    Query("current share price of a company", ("get_stock_price",)),
    Query("how much is 250 euros in yen", ("convert_currency",)),
    Query("give the customer their money back for charge ch_5512", ("refund_charge",)),
    Query("settle the invoice we got from Staples", ("pay_vendor_invoice",)),
    Query("who still owes us money", ("list_overdue_invoices",)),
    Query("unpaid invoices past due", ("list_overdue_invoices",)),
    Query(
        "find a slot when the team is free and put the retro in the calendar",
        ("find_free_slots", "create_event"),
    ),
    Query(
        "revoke the leaked key and let #security know",
        ("revoke_api_key", "post_message"),
    ),
)
