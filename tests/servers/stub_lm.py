"""A loopback OpenAI-compatible chat-completions server with scripted replies, for agent tests."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPLIES_FILE = Path(__file__).parent.parent / "data" / "agent_replies" / "smollm2-135m.jsonl"


def recorded_replies() -> list[dict[str, Any]]:
    """SmolLM2-135M's real replies to the agent's prompts (see the folder's README)."""
    lines = REPLIES_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def reply_kind(body: dict[str, Any]) -> str:
    """`write_code` or `answer`, from the output fields a request's system message asks for."""
    system = body["messages"][0]["content"]
    asked = system.split("Your output fields are:", 1)[-1].split("All interactions", 1)[0]
    return "write_code" if "`code`" in asked else "answer"


class Replay:
    """Answers each request with a recorded reply of the kind it asks for, picked by a
    seeded RNG (repeatable runs); `transform(reply, rng)` makes variants."""

    def __init__(self, seed: int, transform: Callable[[str, random.Random], str] | None = None):
        self.rng = random.Random(seed)
        self.transform = transform or (lambda text, rng: text)
        self.replies = recorded_replies()

    def __call__(self, body: dict[str, Any]) -> str:
        wanted = reply_kind(body)
        reply = self.rng.choice([r for r in self.replies if r["kind"] == wanted])["reply"]
        return self.transform(reply, self.rng)


def chat_reply(**fields: Any) -> str:
    """A reply in dspy's ChatAdapter format: `[[ ## name ## ]]` sections, then completed."""
    parts = [f"[[ ## {name} ## ]]\n{value}" for name, value in fields.items()]
    return "\n\n".join([*parts, "[[ ## completed ## ]]"])


class StubLM:
    """Serves `replies` in order (or `replies(body)` for each request) on 127.0.0.1, as
    llama.cpp's server does: `max_tokens` cuts a reply (4 characters a token) and is the
    only bound honoured; records every request body. `misbehave`: "echo401" answers 401
    with the request's headers in the error (as some proxies' error pages do), "drip"
    sends its headers, then a byte every 0.3 s."""

    def __init__(
        self,
        replies: list[str] | Callable[[dict[str, Any]], str],
        misbehave: str | None = None,
    ) -> None:
        self.replies = replies if callable(replies) else list(replies)
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                if misbehave == "echo401":
                    self._send(401, {"error": {"message": f"refused: {dict(self.headers)}"}})
                    return
                if misbehave == "drip":
                    self._drip()
                    return
                text, finish = stub.reply(body), "stop"
                limit = body.get("max_tokens")
                if isinstance(limit, int) and len(text) > 4 * limit:
                    text, finish = text[: 4 * limit], "length"
                payload = {
                    "id": f"chatcmpl-{len(stub.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "stub"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": finish,
                            "message": {"role": "assistant", "content": text},
                        }
                    ],
                    "usage": {
                        "prompt_tokens": 100,
                        "completion_tokens": 20,
                        "total_tokens": 120,
                    },
                }
                self._send(200, payload)

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _drip(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                for _ in range(200):  # a minute at most
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:  # the client gave up
                        return
                    time.sleep(0.3)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.api_base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> str:
        if callable(self.replies):
            return self.replies(body)
        return self.replies.pop(0) if self.replies else chat_reply(answer="(no more replies)")


@contextmanager
def serve_stub(
    replies: list[str] | Callable[[dict[str, Any]], str], misbehave: str | None = None
) -> Iterator[StubLM]:
    stub = StubLM(replies, misbehave)
    thread = threading.Thread(target=stub.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.server.shutdown()
        stub.server.server_close()
        thread.join()
