"""The runs page's HTML (contract §10): the run list and one run's page, rendered on the server.

Stdlib only. `render_list` draws a page of `RunSummary` rows with the filter form and a link to
older runs; `render_run` one run: its facts, error, token figures, its code with line numbers
and the failing line marked, a waterfall of its upstream calls (one row each in order, bars
placed by start and duration within the run, calls whose time overlaps another's marked
concurrent), each call's arguments, error, sizes and approval, and its output.

Every text is clipped, cleaned of control characters and lone surrogates and HTML-escaped where
it is written, so a page has a fixed size bound whatever a record holds. The page's one script
and one style sheet are fixed; `PAGE_HEADERS` allows them by hash in a Content-Security-Policy
that allows nothing else, so a text that escaping missed would still not run. What this does
not do: show more than `_MAX_CALLS_SHOWN` calls of one run (`mcp-code-mode runs ID --json` has
them all), or any run's secrets (they are left out before a run is stored).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import math
import re
from urllib.parse import quote

from ..encodable import clean_text
from .records import CallRecord, RunRecord, RunSummary, clip

__all__ = ["PAGE_HEADERS", "PAGE_SIZE", "render_list", "render_missing", "render_run"]

PAGE_SIZE = 50  # runs a list page shows
_MAX_CALLS_SHOWN = 500
_TEXT_CHARS = 20_000  # code, input, stdout, logs, result, error (as stored)
_CALL_CHARS = 500  # a call's arguments and error on the page (2,000 are stored)
_NAME_CHARS = 120  # ids, clients, servers, tools, error types, approvals, token names
_BAR_UNITS = 1000  # the waterfall's bars are drawn in a 0..1000 wide box
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Python counts as a line break

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#20232a;padding:.6em 1.2em}header a{color:#fff;text-decoration:none}
main{padding:1em 1.2em;max-width:1200px}h1{font-size:1.3em}h2{font-size:1.05em;margin-top:1.6em}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3em .6em;
border-bottom:1px solid #e3e3e3}.n{text-align:right;font-variant-numeric:tabular-nums}
td.ok,dd.ok{color:#17803d}td.failed,dd.failed,.call.failed .name{color:#b42318}
form{display:flex;gap:1em;align-items:end}
pre,ol.code{font:12px/1.45 ui-monospace,monospace;background:#fff;border:1px solid #e3e3e3;
padding:.6em;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere;max-height:32em}
ol.code{padding-left:4.5em}ol.code li::marker{color:#999}
ol.code li.failing{background:#fde7e7;outline:1px solid #f3b4b4}.why{color:#b42318}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dd{margin:0}
.call summary{display:grid;grid-template-columns:minmax(14em,24em) 1fr 7em;gap:.6em;
align-items:center;cursor:pointer;padding:.1em 0}.call>dl{margin:.3em 0 .9em 1.5em}
.call svg{width:100%;height:12px;background:#eef0f3}rect{fill:#3b82f6}
.concurrent rect{fill:#8b5cf6}.call.failed rect{fill:#dc2626}.axis{color:#777}
nav{margin-top:1em;display:flex;gap:1.5em}
"""
_SCRIPT = """for (const t of document.querySelectorAll("time[datetime]")) {
  const d = new Date(t.dateTime); if (!isNaN(d)) t.textContent = d.toLocaleString();
}"""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


PAGE_HEADERS = {
    "content-security-policy": f"default-src 'none'; script-src {_sha256(_SCRIPT)}; "
    f"style-src {_sha256(_STYLE)}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


# ---------------------------------------------------------------- text and numbers


def _t(text: str, limit: int = _NAME_CHARS) -> str:
    """`text` clipped to `limit` characters, cleaned and escaped (for content and attributes)."""
    return html.escape(clean_text(clip(text, limit)), quote=True)


def _int(value: int) -> int:
    return min(max(int(value), -(2**63)), 2**63 - 1)  # a huge int would print huge


def _float(value: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else 0.0


def _ms(value: float) -> str:
    value = min(max(_float(value), -1e15), 1e15)
    return f"{value / 1000:,.2f} s" if abs(value) >= 1000 else f"{value:,.1f} ms"


def _when(epoch: float) -> str:
    try:
        moment = datetime.datetime.fromtimestamp(_float(epoch), datetime.UTC)
    except (OverflowError, ValueError, OSError):
        return "<time>?</time>"
    iso = moment.isoformat(timespec="seconds").replace("+00:00", "Z")
    return f'<time datetime="{iso}">{moment:%Y-%m-%d %H:%M:%S} UTC</time>'


def _run_href(run_id: str) -> str:
    return "/runs/" + html.escape(quote(clip(run_id, 1_000), safe=""), quote=True)


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{title}</title><style>{_STYLE}</style></head><body>"
        '<header><a href="/runs">mcp-code-mode runs</a></header>'
        f"<main>{body}</main><script>{_SCRIPT}</script></body></html>"
    )


# ---------------------------------------------------------------- the list


def render_list(
    runs: list[RunSummary], *, ok: bool | None, client: str | None, older: str | None
) -> str:
    """The list page: `runs` newest first, the filter form, and a link to `older` (the
    query string of the next page) when there is one."""
    rows = "".join(_summary_row(run) for run in runs[:PAGE_SIZE])
    body = _filter_form(ok, client)
    if rows:
        head = "".join(
            f'<th class="{"n" if n > 3 else ""}">{name}</th>'
            for n, name in enumerate(
                ("Started", "Client", "Kind", "Outcome", "Duration", "Calls", "Tokens saved")
            )
        )
        body += f'<table class="runs"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    else:
        body += '<p class="empty">No runs match.</p>'
    links = ['<a href="/runs">Newest</a>']
    if older is not None:
        links.append(f'<a rel="next" href="/runs?{html.escape(older)}">Older runs →</a>')
    return _page("Runs · mcp-code-mode", body + f"<nav>{''.join(links)}</nav>")


def _filter_form(ok: bool | None, client: str | None) -> str:
    chosen = {None: "", True: "ok", False: "failed"}[ok]
    options = "".join(
        f'<option value="{value}"{" selected" if value == chosen else ""}>{label}</option>'
        for value, label in (("", "all"), ("ok", "ok"), ("failed", "failed"))
    )
    return (
        '<form method="get" action="/runs">'
        f'<label>Outcome<br><select name="outcome">{options}</select></label>'
        f'<label>Client<br><input name="client" value="{_t(client or "")}"></label>'
        '<button type="submit">Filter</button></form><p></p>'
    )


def _summary_row(run: RunSummary) -> str:
    outcome = "ok" if run.ok else _t(run.error_type or "failed")
    failed = f" ({_int(run.failed_calls):,} failed)" if run.failed_calls else ""
    return (
        f'<tr class="run {"ok" if run.ok else "failed"}" data-id="{_t(run.id)}">'
        f'<td><a href="{_run_href(run.id)}">{_when(run.started)}</a></td>'
        f"<td>{_t(run.client) or '-'}</td><td>{_t(run.kind)}</td>"
        f'<td class="{"ok" if run.ok else "failed"}">{outcome}</td>'
        f'<td class="n">{_ms(run.duration_ms)}</td>'
        f'<td class="n">{_int(run.calls):,}{failed}</td>'
        f'<td class="n">{_int(run.tokens_saved):,}</td></tr>'
    )


# ---------------------------------------------------------------- one run


def render_run(run: RunRecord) -> str:
    """The page of one run: facts, error, tokens, code, calls, approvals, output."""
    sections = [f"<h1>Run <code>{_t(run.id)}</code></h1>", _facts(run)]
    if run.error:
        sections.append(f'<h2>Error</h2><pre class="error">{_t(run.error, _TEXT_CHARS)}</pre>')
    if run.tokens:
        sections.append(_tokens(run.tokens))
    sections.append(f"<h2>Code</h2>{_code(run)}")
    if run.calls:
        sections.append(_waterfall(run))
        sections.append(_approvals(run.calls[:_MAX_CALLS_SHOWN]))
    for label, text in (
        ("Input", run.input),
        ("Stdout", run.stdout),
        ("Logs", run.logs),
        ("Result", run.result),
    ):
        if text:
            shown = _t(text, _TEXT_CHARS)
            sections.append(f'<h2>{label}</h2><pre class="{label.lower()}">{shown}</pre>')
    return _page(f"Run {_t(run.id, 40)} · mcp-code-mode", "".join(sections))


def _facts(run: RunRecord) -> str:
    if run.ok:
        outcome = '<dd class="ok outcome">ok</dd>'
    else:
        line = f" at line {_int(run.error_line)}" if run.error_line is not None else ""
        outcome = f'<dd class="failed outcome">{_t(run.error_type or "failed")}{line}</dd>'
    failed = sum(not call.ok for call in run.calls)
    facts = (
        f"<dt>Kind</dt><dd>{_t(run.kind)}</dd><dt>Client</dt><dd>{_t(run.client) or '-'}</dd>"
        f"<dt>Started</dt><dd>{_when(run.started)}</dd>"
        f"<dt>Duration</dt><dd>{_ms((_float(run.ended) - _float(run.started)) * 1000)}</dd>"
        f"<dt>Outcome</dt>{outcome}"
        f"<dt>Calls</dt><dd>{len(run.calls):,}" + (f" ({failed:,} failed)" if failed else "")
    )
    return f'<dl class="facts">{facts}</dd></dl>'


def _tokens(tokens: dict[str, int]) -> str:
    saved = max(tokens.get("upstream_results", 0) - tokens.get("reply", 0), 0)
    shown = list(tokens.items())[:20]
    rows = "".join(f'<tr><th>{_t(k)}</th><td class="n">{_int(v):,}</td></tr>' for k, v in shown)
    rows += f'<tr><th>saved (upstream results - reply)</th><td class="n">{_int(saved):,}</td></tr>'
    return f'<h2>Tokens</h2><table class="tokens">{rows}</table>'


def _code(run: RunRecord) -> str:
    lines = _LINE_BREAK.split(clip(run.code, _TEXT_CHARS))
    if len(lines) > 1 and not lines[-1]:  # the code's last line break ends a line
        lines.pop()
    failing = None if run.ok or run.error_line is None else _int(run.error_line)
    items = []
    for number, line in enumerate(lines, 1):
        text = html.escape(clean_text(line)) or " "
        if number == failing:
            why = _t(run.error_type or "failed")
            items.append(
                f'<li class="failing" id="failing-line" data-line="{number}">{text}'
                f'<span class="why">  ← {why}</span></li>'
            )
        else:
            items.append(f"<li>{text}</li>")
    return f'<ol class="code">{"".join(items)}</ol>'


def _waterfall(run: RunRecord) -> str:
    calls = run.calls[:_MAX_CALLS_SHOWN]
    ends = [_float(c.started_ms) + max(_float(c.ms), 0.0) for c in calls]
    total = max([(_float(run.ended) - _float(run.started)) * 1000, *ends, 1e-3])
    together = _concurrent(calls)
    rows = "".join(_call_row(c, total, i in together) for i, c in enumerate(calls))
    more = len(run.calls) - len(calls)
    note = f'<p class="more">{more:,} more calls are not shown.</p>' if more > 0 else ""
    axis = f'<p class="axis">0 ms … {_ms(total)}</p>'
    return f'<h2>Calls</h2>{axis}<div class="waterfall">{rows}</div>{note}'


def _concurrent(calls: list[CallRecord]) -> set[int]:
    """The indexes of calls whose time overlaps another call's: O(n log n)."""
    spans = sorted(
        (_float(c.started_ms), _float(c.started_ms) + max(_float(c.ms), 0.0), i)
        for i, c in enumerate(calls)
    )
    found, latest_end = set(), -math.inf
    for k, (start, end, index) in enumerate(spans):
        follows = k + 1 < len(spans) and spans[k + 1][0] < end
        if latest_end > start or follows:
            found.add(index)
        latest_end = max(latest_end, end)
    return found


def _call_row(call: CallRecord, total_ms: float, concurrent: bool) -> str:
    start = min(max(_float(call.started_ms) / total_ms, 0.0), 1.0) * _BAR_UNITS
    width = max(min(max(_float(call.ms), 0.0) / total_ms * _BAR_UNITS, _BAR_UNITS - start), 2)
    state = "ok" if call.ok else "failed"
    kind = f"call {state}" + (" concurrent" if concurrent else "")
    name = f"{_t(call.server)}.{_t(call.tool)}"
    bar = (
        f'<svg viewBox="0 0 {_BAR_UNITS} 10" preserveAspectRatio="none" aria-hidden="true">'
        f'<rect x="{min(start, _BAR_UNITS - 2):.1f}" width="{width:.1f}" height="10"/></svg>'
    )
    details = (
        f"<dt>Started</dt><dd>+{_ms(call.started_ms)}</dd><dt>Took</dt><dd>{_ms(call.ms)}</dd>"
        f'<dt>Outcome</dt><dd class="{state}">'
        + ("ok" if call.ok else _t(call.error or "failed", _CALL_CHARS))
        + f"</dd><dt>Bytes</dt><dd>{_int(call.bytes_in):,} in, {_int(call.bytes_out):,} out</dd>"
        + (f"<dt>Approval</dt><dd>{_t(call.approval)}</dd>" if call.approval else "")
        + f'<dt>Arguments</dt><dd><pre class="arguments">{_t(call.arguments, _CALL_CHARS)}</pre>'
    )
    return (
        f'<details class="{kind}" data-order="{_int(call.order)}">'
        f'<summary><span class="name">#{_int(call.order)} {name}</span>{bar}'
        f'<span class="n">{_ms(call.ms)}</span></summary><dl>{details}</dd></dl></details>'
    )


def _approvals(calls: list[CallRecord]) -> str:
    items = "".join(
        f"<li>#{_int(c.order)} {_t(c.server)}.{_t(c.tool)}: {_t(c.approval)}</li>"
        for c in calls
        if c.approval
    )
    return f'<h2>Approvals</h2><ul class="approvals">{items}</ul>' if items else ""


def render_missing(run_id: str) -> str:
    """The page for a run the store does not keep."""
    body = f'<p class="empty">No run <code>{_t(run_id)}</code> is kept.</p>'
    return _page("Run not found · mcp-code-mode", body)
