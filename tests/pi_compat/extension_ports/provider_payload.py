"""Port of Pi's ``examples/extensions/provider-payload.ts``: every provider payload and response
status/headers appended to ``<cwd>/.pi/provider-payload.log``."""

from __future__ import annotations

import json
import os
from typing import Any


def _append(ctx: Any, text: str) -> None:
    with open(os.path.join(ctx.cwd, ".pi", "provider-payload.log"), "a", encoding="utf-8") as log:
        log.write(text)


def register(pi: Any) -> None:
    def on_request(event: dict[str, Any], ctx: Any) -> None:
        _append(ctx, f"{json.dumps(event['payload'], indent=2, ensure_ascii=False)}\n\n")

    def on_response(event: dict[str, Any], ctx: Any) -> None:
        headers = json.dumps(event["headers"], separators=(",", ":"), ensure_ascii=False)
        _append(ctx, f"[{event['status']}] {headers}\n\n")

    pi.on("before_provider_request", on_request)
    pi.on("after_provider_response", on_response)
