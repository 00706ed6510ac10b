"""The agent's language model, made from the settings so that local servers work as written.

`make_lm` turns DSPY_* settings into a `dspy.LM`. For an OpenAI-compatible endpoint
(`openai/...` with DSPY_API_BASE) the output bound goes out as both `max_tokens` and
`max_completion_tokens`:
dspy's native route sends only the latter, which llama.cpp's server and others ignore, so a
weak model generated until its context was full. Such a server needs no key; litellm still
asks for one, so a placeholder is passed when none is set. `check_lm` makes one small call
and says plainly what is wrong (unreachable, refused key, unknown model) before a run starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
from typing import Any
from urllib.parse import parse_qsl, urlsplit

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch offline

import dspy
from dotenv import load_dotenv

from .agent_replies import ADAPTERS
from .config import CREDENTIAL_WORDS, GatewayConfig
from .encodable import clean_text, clip
from .errors import CodeModeError
from .settings import Settings, env_files, lm_call_limit_s

__all__ = [
    "LMNotConfigured",
    "LMUnreachable",
    "acheck_lm",
    "adapter_for",
    "check_lm",
    "lm_call_limit_s",
    "lm_error",
    "lm_timed_out",
    "make_lm",
    "tokens_used",
    "warm_up",
]

_PLACEHOLDER_KEY = "not-needed"  # what a local OpenAI-compatible server is sent as its key
_CHECK_TOKENS = 8
_CHECK_PROMPT = "Reply with the word OK."
# Environment variables that hold a provider's credentials (OPENAI_API_KEY, HF_TOKEN, ...).
_SECRET_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)
_SECRET_PARAMETER = re.compile(CREDENTIAL_WORDS, re.IGNORECASE)
_SHORTEST_SECRET = 8  # shorter values are words an error may hold anyway
_MAX_TOKENS_REPORTED = 10**12  # one call's token count, as an endpoint reports it


class LMNotConfigured(CodeModeError):
    """The agent needs an LM: set DSPY_LM (and a key or DSPY_API_BASE) in .env."""


class LMUnreachable(CodeModeError):
    """The configured LM did not answer a one-line check."""


def make_lm(settings: Settings) -> dspy.LM:
    """The LM named by DSPY_LM; raises LMNotConfigured when it is unset."""
    if not settings.dspy_lm:
        raise LMNotConfigured(
            "no LM configured: set DSPY_LM (a LiteLLM model string such as openai/gpt-4o-mini) "
            "and its key or DSPY_API_BASE in .env (see .env.example)"
        )
    # Provider keys (OPENAI_API_KEY, ...) may live in .env; LiteLLM reads the environment.
    # Workers and upstreams never see them: both start from explicit minimal environments.
    for dotenv in env_files(settings.servers_config):  # the first file wins (no override)
        load_dotenv(dotenv, override=False)
    options: dict[str, object] = {
        "temperature": settings.dspy_temperature,
        "max_tokens": settings.dspy_max_tokens,
        "num_retries": settings.dspy_num_retries,
        "timeout": settings.dspy_timeout_s,
        "cache": False,
    }
    if settings.dspy_api_base:
        options["api_base"] = settings.dspy_api_base
    if settings.dspy_api_base and settings.dspy_lm.startswith("openai/"):  # OpenAI-compatible
        options["engine"] = "litellm"  # sends max_tokens, which local servers honour ...
        options["extra_body"] = {"max_completion_tokens": settings.dspy_max_tokens}  # ... and this
        if not os.environ.get("OPENAI_API_KEY"):
            options["api_key"] = _PLACEHOLDER_KEY
    return dspy.LM(settings.dspy_lm, **options)


_warming = threading.Lock()
_warmed = False


def warm_up(lm: Any) -> None:
    """Load, without a request, what an LM's first call loads: litellm and the modules its
    first completion imports (3-6 s of CPU on a quiet machine, 15-22 s beside a busy one).
    The first `run_task` waited for it (7 s; 1.6 s beside the same load once warmed up).
    Once a process, for LMs on litellm's engine (`make_lm`'s for an OpenAI-compatible
    endpoint); litellm's `mock_response` answers without any connection."""
    global _warmed
    with _warming:
        if _warmed or getattr(lm, "engine", None) != "litellm":
            return
        _warmed = True
        with contextlib.suppress(Exception):  # a warm-up that fails leaves the first call cold
            import litellm

            message = {"role": "user", "content": _CHECK_PROMPT}
            litellm.completion(model=lm.model, messages=[message], mock_response="OK")


def adapter_for(settings: Settings) -> dspy.Adapter:
    """The reply format DSPY_ADAPTER names (`chat` or `json`), read leniently."""
    return ADAPTERS[settings.dspy_adapter]()


def lm_error(exc: BaseException, lm: dspy.LM | None, limit: int) -> str:
    """What an LM call raised, one line of it as a person or the model may read it: the
    provider's credentials left out (an endpoint's error page may echo the request's
    `Authorization` header: outside attack 129), cleaned and clipped."""
    # Without the vendored client's "To fix" advice, another library's ("lm15 never retries
    # for you", "RouterConfig api_keys"): the gateway's settings are not those (attack 147).
    text = f"{type(exc).__name__}: {exc}".split("\n\n  To fix:", 1)[0].strip()
    secrets = _lm_secrets(lm)
    if secrets:
        text = GatewayConfig(servers={}, secrets=secrets).redact(text)
    return clip(clean_text(text), limit)


def _lm_secrets(lm: dspy.LM | None) -> tuple[tuple[str, str], ...]:
    """The credentials an LM call may send: provider keys in the environment (`.env`'s
    loaded by `make_lm`), the LM's own `api_key`, a password in its `api_base`."""
    found = {
        value: f"${{{name}}}"
        for name, value in os.environ.items()
        if _SECRET_NAME.search(name) and len(value) >= _SHORTEST_SECRET
    }
    options = {} if lm is None else lm.kwargs
    key, base = options.get("api_key"), options.get("api_base")
    if isinstance(key, str) and len(key) >= _SHORTEST_SECRET:
        found.setdefault(key, "(the LM's key)")
    for value in _url_credentials(base) if isinstance(base, str) else []:
        found.setdefault(value, "***")
    return tuple(found.items())


def _url_credentials(url: str) -> list[str]:
    """A URL's user part (a token alone, or a password) and the values of its parameters
    that name a key, token or password."""
    try:
        parts = urlsplit(url)
        found = [parts.password or parts.username or ""]
        found += [v for k, v in parse_qsl(parts.query) if _SECRET_PARAMETER.search(k)]
    except ValueError:  # not a URL urllib reads: nothing to find in it
        return []
    return [value for value in found if len(value) >= _SHORTEST_SECRET]


def check_lm(lm: dspy.LM) -> None:
    """One short call; raises LMUnreachable with what went wrong and what to check."""
    try:
        lm(_CHECK_PROMPT, **_check_bounds(lm))
    except Exception as exc:  # whatever the provider raised: told, not re-raised raw
        raise _unreachable(lm, lm_error(exc, lm, 600)) from None


async def acheck_lm(lm: dspy.LM, limit_s: float) -> None:
    """`check_lm` within `limit_s` in all: an endpoint sending a byte at a time passed every
    per-read timeout, and a check in a thread kept the process for as long (attack 129)."""
    try:
        async with asyncio.timeout(limit_s):
            await lm.acall(_CHECK_PROMPT, **_check_bounds(lm))
    except TimeoutError:
        raise _unreachable(lm, f"no answer within {limit_s:g} s, DSPY_TIMEOUT_S") from None
    except Exception as exc:  # whatever the provider raised: told, not re-raised raw
        raise _unreachable(lm, lm_error(exc, lm, 600)) from None


def _check_bounds(lm: dspy.LM) -> dict[str, Any]:
    """The check's few tokens, under both names where `make_lm` sends both (outside attack
    136: an endpoint that honours only `max_completion_tokens` was asked for DSPY_MAX_TOKENS)."""
    bounds: dict[str, Any] = {"max_tokens": _CHECK_TOKENS}
    extra = lm.kwargs.get("extra_body")
    if isinstance(extra, dict) and "max_completion_tokens" in extra:
        bounds["extra_body"] = {**extra, "max_completion_tokens": _CHECK_TOKENS}
    return bounds


def _unreachable(lm: dspy.LM, reason: str) -> LMUnreachable:
    return LMUnreachable(
        f"the LM {lm.model!r} did not answer a one-line check ({reason}); check DSPY_LM, "
        "DSPY_API_BASE (e.g. http://127.0.0.1:8080/v1 for a local server) and the "
        "provider's key in .env"
    )


def lm_timed_out(limit_s: float) -> str:
    """A model call cut at `limit_s` (`lm_call_limit_s`), as its step's error says it."""
    return f"the model did not answer within {limit_s:g} s (DSPY_TIMEOUT_S a try, DSPY_NUM_RETRIES)"


def tokens_used(usage: Any) -> dict[str, int]:
    """What an LM's calls used (`dspy.track_usage`), as `run_task` reports it."""
    prompt = completion = 0
    for entry in usage.get_total_tokens().values():
        prompt += _count(entry.get("prompt_tokens"))
        completion += _count(entry.get("completion_tokens"))
    return {"prompt": prompt, "completion": completion}


def _count(reported: Any) -> int:
    """A token count as the endpoint reported it, within reason: a 4,300-digit one made the
    result unprintable and lost the task's steps (outside attack 129)."""
    try:
        return min(max(int(reported or 0), 0), _MAX_TOKENS_REPORTED)
    except (TypeError, ValueError, OverflowError):
        return 0
