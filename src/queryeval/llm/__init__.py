"""The shared client family for OpenAI-compatible chat endpoints and JSON services, used by
the judge and by systems under test (a services module: it imports only config and itself).

Retries with backoff that honour Retry-After, an adaptive concurrency limit per endpoint,
a spend cap, a bounded on-disk reply cache safe under concurrent runs, identical requests
in flight asked once, and token and cost accounting kept per user (judge, each system).
Nothing here touches the network on import; `openai` and `httpx2` load on first call.
"""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from queryeval.llm._budget import SpendCap
from queryeval.llm._cache import DEFAULT_MAX_BYTES, ReplyCache, cache_bound, request_key
from queryeval.llm._calls import CallError, CallStats, RetryPolicy, is_retryable_status
from queryeval.llm._client import ChatClient, Reply, ToolCall, missing_key, policy_of
from queryeval.llm._http import HttpReply, JsonClient
from queryeval.llm._limiter import AdaptiveLimiter, Ticket
from queryeval.llm._retry import backoff_s, retry_after_s, retry_delay_s
from queryeval.llm._service import Answer, ChatService, ServiceStats, SpendCapReached
from queryeval.llm._tokens import (
    TOKENIZER_NOTE,
    estimate_prompt_tokens,
    estimate_tokens,
    spend_parts,
)

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "AdaptiveLimiter",
    "CallError",
    "ChatService",
    "ReplyCache",
    "RetryPolicy",
    "SpendCap",
    "SpendCapReached",
]
