"""A toy "model" for the model example: an OpenAI-compatible chat endpoint on 127.0.0.1 that
answers the SQL example's questions from `answers.yaml`, so `make demo` runs offline.

Like a real model it sometimes answers wrongly, and it corrects a query when the
refinement loop's feedback names the mistake: an answer may give `first` (the first reply)
and `fixed` (the reply once the feedback mentions `when`). Questions it does not know get
prose without a query. Standard library only.

    python examples/model/toy_model.py --port 8765
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

ANSWERS: dict[str, dict[str, str]] = yaml.safe_load(
    (Path(__file__).with_name("answers.yaml")).read_text(encoding="utf-8")
)


def reply_to(messages: list[dict[str, Any]]) -> str:
    """The toy model's reply to a conversation."""
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    question = users[0].rsplit("Question:", 1)[-1].strip() if users else ""
    answer = ANSWERS.get(question)
    if answer is None:
        return "I am not sure which tables hold that."
    feedback = " ".join(users[1:])
    sql = answer["fixed"] if "fixed" in answer and answer["when"] in feedback else answer["first"]
    return f"```sql\n{sql}\n```"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        text = reply_to(body.get("messages", []))
        prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
        data = json.dumps(
            {
                "id": "toy",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": len(text) // 4,
                    "total_tokens": prompt + len(text) // 4,
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def start(port: int = 0) -> ThreadingHTTPServer:
    """Serve on 127.0.0.1 (`port` 0: a free one) in a daemon thread; `server_address[1]` is
    the port."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    server = start(parser.parse_args().port)
    print(f"toy model on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    threading.Event().wait()
