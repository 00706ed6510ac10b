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

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch offline

import dspy
from dotenv import load_dotenv

from .agent_replies import ADAPTERS
from .encodable import clean_text, clip
from .errors import CodeModeError
from .settings import Settings, env_files

__all__ = ["LMNotConfigured", "LMUnreachable", "adapter_for", "check_lm", "make_lm"]

_PLACEHOLDER_KEY = "not-needed"  # what a local OpenAI-compatible server is sent as its key
_CHECK_TOKENS = 8


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


def adapter_for(settings: Settings) -> dspy.Adapter:
    """The reply format DSPY_ADAPTER names (`chat` or `json`), read leniently."""
    return ADAPTERS[settings.dspy_adapter]()


def check_lm(lm: dspy.LM) -> None:
    """One short call; raises LMUnreachable with what went wrong and what to check."""
    try:
        lm("Reply with the word OK.", max_tokens=_CHECK_TOKENS)
    except Exception as exc:  # whatever the provider raised: told, not re-raised raw
        reason = clip(clean_text(f"{type(exc).__name__}: {exc}"), 600)
        raise LMUnreachable(
            f"the LM {lm.model!r} did not answer a one-line check ({reason}); check DSPY_LM, "
            "DSPY_API_BASE (e.g. http://127.0.0.1:8080/v1 for a local server) and the "
            "provider's key in .env"
        ) from None
