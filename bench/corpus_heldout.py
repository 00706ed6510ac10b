"""Held-out labelled queries for the benchmark tool corpus.

Written from the tool catalog (`bench.corpus_data.SERVERS`) alone, independently of the
corpus's own `QUERIES` and of the ranking code, so they can serve as a held-out test set.
Each query lists every (server, tool) pair that genuinely answers it.
"""

from __future__ import annotations

from bench.specs import Q, Query

HELDOUT: tuple[Query, ...] = (
    # filesystem
    Q("show me the first 20 lines of config.yaml on disk", ("filesystem", "read_file")),
    Q(
        "Before touching any files, which local folders am I permitted to work in?",
        ("filesystem", "list_allowed_directories"),
    ),
    Q(
        "rename report_draft.txt to report_final.txt in my local workspace",
        ("filesystem", "move_file"),
    ),
    # git
    Q("git unstage everything", ("git", "git_reset")),
    Q("turn this directory into a git repository", ("git", "git_init")),
    # github
    Q("approve the pull request on GitHub with an LGTM", ("github", "create_pull_request_review")),
    Q(
        "why did CI fail? pull the logs of the broken GitHub Actions job",
        ("github", "get_job_logs"),
    ),
    Q("newest published version of facebook/react on GitHub", ("github", "get_latest_release")),
    Q("bring my GitHub PR branch up to date with main", ("github", "update_pull_request_branch")),
    Q("are the CI checks green on PR #42 in GitHub?", ("github", "get_pull_request_status")),
    Q("look up a developer's GitHub account by their real name", ("github", "search_users")),
    Q("what's waiting for me in my GitHub inbox?", ("github", "list_notifications")),
    # gitlab
    Q("kick off the failed GitLab CI run again", ("gitlab", "retry_pipeline")),
    Q("print the console trace of a GitLab CI job", ("gitlab", "get_pipeline_job_output")),
    Q("leave review feedback on a GitLab merge request", ("gitlab", "create_merge_request_note")),
    Q("which GitLab projects can I access?", ("gitlab", "list_projects")),
    # jira
    Q("record 3 hours spent on ticket PROJ-42 in Jira", ("jira", "jira_add_worklog")),
    Q(
        "record in Jira that PROJ-3 blocks PROJ-7 so the dependency is visible",
        ("jira", "jira_create_issue_link"),
    ),
    Q("JQL open bugs assigned to me", ("jira", "jira_search")),
    Q("which statuses can PROJ-12 move to next in Jira?", ("jira", "jira_get_transitions")),
    # linear
    Q("what Linear tickets are on my plate right now", ("linear", "listMyIssues")),
    Q("show the current Linear sprint for the platform team", ("linear", "listCycles")),
    # gcal
    Q("accept the invite for Thursday's design review meeting", ("gcal", "respond-to-event")),
    Q(
        "when are Alice and Bob both available next week? check their calendars",
        ("gcal", "get-freebusy"),
    ),
    # gmail
    Q(
        "from now on, auto-label every incoming message from billing@vendor.com as Invoices",
        ("gmail", "create_filter"),
    ),
    Q(
        "save the PDF attached to that email to my downloads folder",
        ("gmail", "download_attachment"),
    ),
    Q("clear this email out of my inbox without deleting it", ("gmail", "archive_email")),
    # slack
    Q(
        "queue a Slack announcement to go out in #eng tomorrow at 9am",
        ("slack", "slack_schedule_message"),
    ),
    Q("thumbs-up that Slack message", ("slack", "slack_add_reaction")),
    Q(
        "update the description line shown at the top of the #support Slack channel",
        ("slack", "slack_set_channel_topic"),
    ),
    # postgres
    Q(
        "why is this query slow? show the Postgres execution plan with cost estimates",
        ("postgres", "explain_query"),
    ),
    Q(
        "check our Postgres database for bloated indexes and vacuum problems",
        ("postgres", "analyze_db_health"),
    ),
    # sqlite (and postgres: no service named)
    Q(
        "list the columns and data types of the orders table",
        ("sqlite", "describe_table"),
        ("postgres", "get_object_details"),
    ),
    # mongodb
    Q("how many documents in the users collection have status active", ("mongodb", "count")),
    Q(
        "group orders by customer and sum their totals with a Mongo pipeline",
        ("mongodb", "aggregate"),
    ),
    Q(
        "infer the fields and value types of a Mongo collection by sampling documents",
        ("mongodb", "collection-schema"),
    ),
    # playwright (and puppeteer where both fit)
    Q(
        "read the JavaScript console errors the page logged",
        ("playwright", "browser_console_messages"),
    ),
    Q(
        "which XHR calls did the page make after it loaded?",
        ("playwright", "browser_network_requests"),
    ),
    Q("export the current web page as a PDF document", ("playwright", "browser_pdf_save")),
    Q(
        "grab an image of what the browser is showing right now",
        ("playwright", "browser_take_screenshot"),
        ("puppeteer", "puppeteer_screenshot"),
    ),
    # puppeteer
    Q("using puppeteer, type my email into the login input", ("puppeteer", "puppeteer_fill")),
    # fetch
    Q("pull down this article URL and give me its text as markdown", ("fetch", "fetch")),
    # brave
    Q("latest headlines about the EU AI Act", ("brave", "brave_news_search")),
    # notion
    Q(
        "add a new row to our Notion content calendar database",
        ("notion", "notion_create_database_item"),
    ),
    Q(
        "filter the Notion tasks database for items whose status is Done",
        ("notion", "notion_query_database"),
    ),
    Q(
        "append a checklist paragraph to the bottom of a Notion page",
        ("notion", "notion_append_block_children"),
    ),
    # gdrive
    Q(
        "who has access to this Drive doc, and as editor or viewer?",
        ("gdrive", "gdrive_list_permissions"),
    ),
    Q("set cell B4 of the budget spreadsheet to 1200", ("gdrive", "gsheets_update_cell")),
    # stripe
    Q("Stripe funds available now", ("stripe", "retrieve_balance")),
    Q("give a customer their money back for a Stripe payment", ("stripe", "create_refund")),
    Q(
        "generate a shareable checkout link for the Pro plan in Stripe",
        ("stripe", "create_payment_link"),
    ),
    Q("submit evidence to fight a chargeback in Stripe", ("stripe", "update_dispute")),
    # s3
    Q(
        "temporary download link for a private S3 object that expires in an hour",
        ("s3", "generate_presigned_url"),
    ),
    Q("size and content type of an S3 object without downloading it", ("s3", "head_object")),
    # k8s
    Q("tail the logs of the crashing api pod", ("k8s", "pods_log")),
    Q("scale the web deployment to 5 replicas", ("k8s", "resources_scale")),
    Q("k8s node CPU usage", ("k8s", "nodes_top")),
    Q("remove the helm release named redis-cache", ("k8s", "helm_uninstall")),
    # docker
    Q("docker ps -a", ("docker", "list_containers")),
    Q("docker build ./app and tag it myapp:dev", ("docker", "build_image")),
    Q(
        "publish my locally built image myapp:1.2 to the container registry",
        ("docker", "push_image"),
    ),
    # sentry
    Q(
        "ask Sentry's AI for the root cause of this production error and a suggested fix",
        ("sentry", "analyze_issue_with_seer"),
    ),
    Q("mark the Sentry error as resolved", ("sentry", "update_issue")),
    Q("error counts per project over the last 24 hours in Sentry", ("sentry", "search_events")),
    # memory
    Q(
        "note another detail about Alice, who is already in my memory graph",
        ("memory", "add_observations"),
    ),
    Q("dump the knowledge graph", ("memory", "read_graph")),
    # weather
    Q("how polluted is the air in Delhi today?", ("weather", "get_air_quality")),
    # maps
    Q("what street address is at 40.7484, -73.9857?", ("maps", "maps_reverse_geocode")),
    # time
    Q("what time is it in Tokyo when it's 3pm in New York?", ("time", "convert_time")),
    # todoist
    Q("tick off 'buy groceries' in my Todoist", ("todoist", "todoist_complete_task")),
    Q("what personal tags do I have in Todoist?", ("todoist", "todoist_get_labels")),
    # trello
    Q("drag the 'Fix login' card over to the Done column in Trello", ("trello", "move_card")),
    Q("which Trello cards are assigned to me?", ("trello", "get_my_cards")),
    Q(
        "switch to the Marketing board in Trello so later commands use it",
        ("trello", "set_active_board"),
    ),
    # spotify
    Q("what song is playing on Spotify right now?", ("spotify", "getNowPlaying")),
    Q("turn the music down to 30%", ("spotify", "setVolume")),
    Q("queue up Bohemian Rhapsody to play after the current song", ("spotify", "addToQueue")),
    # shop
    Q("items about to sell out that we should restock", ("shop", "get_low_stock_products")),
    Q(
        "where is the package for order 1042? carrier and tracking number",
        ("shop", "get_shipment_tracking"),
    ),
    Q("monthly revenue and average order value for Q3", ("shop", "get_sales_report")),
)


def _check() -> None:
    """Assert the held-out set is well formed: 80 unique queries naming existing tools."""
    from bench.corpus_data import SERVERS

    known = {(s.name, t.name) for s in SERVERS for t in s.tools}
    assert len(HELDOUT) == 80, len(HELDOUT)
    texts = [q.text for q in HELDOUT]
    assert len(set(texts)) == len(texts), "duplicate query texts"
    for q in HELDOUT:
        assert q.expected, q.text
        for pair in q.expected:
            assert pair in known, (q.text, pair)
