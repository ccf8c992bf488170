"""Python SDK for Parley.

The messages and Connect clients in the ``parley`` package are generated from
Parley's protos (grpcio-tools + protoc-gen-connect-python); the runtime is
connect-python from PyPI. This module adds a small sync (``Parley``) and async
(``AsyncParley``) wrapper: authentication by API key or session cookie, the
choice of protocol, streams as (async) iterators of GenerationEvents,
``tool_result`` / ``tool_calls`` for tool conversations, and ``retry_after`` for
resource_exhausted / unavailable errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType

from parley.v1 import (
    api_key_connect, attachment_connect, auth_connect, batch_connect, billing_connect, chat_connect,
    common_pb2, conversation_connect, errors_pb2, file_connect, memory_connect, model_connect, project_connect,
    vector_store_connect, webhook_connect,
)
from parley.v1.chat_pb2 import CompleteStreamRequest
from parley.v1.common_pb2 import GenerationEvent, Message, Part, Role, ToolCall, ToolResult

__all__ = [
    "Parley", "AsyncParley", "ConnectError", "Code", "prompt", "user_text", "tool_result", "tool_calls",
    "retry_after", "GenerationEvent", "Message", "Part", "Role", "ToolCall",
]

_PROTOCOLS = {"connect": ProtocolType.CONNECT, "grpc": ProtocolType.GRPC}


def user_text(text: str) -> Message:
    """A user message of one text part."""
    return Message(role=Role.ROLE_USER, parts=[Part(text=text)])


def prompt(model: str, text: str, **kw: Any) -> CompleteStreamRequest:
    """A CompleteStreamRequest with one user message."""
    return CompleteStreamRequest(model=model, messages=[user_text(text)], **kw)


def tool_result(tool_call_id: str, content: str) -> Message:
    """A tool message: the result (often JSON text) of the tool call ``tool_call_id``."""
    return Message(role=Role.ROLE_TOOL, parts=[Part(tool_result=ToolResult(tool_call_id=tool_call_id, content=content))])


def tool_calls(events: Iterable[GenerationEvent]) -> list[ToolCall]:
    """The tool calls of a streamed answer (choice 0), each assembled from its pieces by index."""
    calls: dict[int, ToolCall] = {}
    for ev in events:
        if ev.HasField("delta") and ev.delta.choice == 0:
            for d in ev.delta.tool_calls:
                c = calls.setdefault(d.index, ToolCall())
                c.id, c.name = d.id or c.id, d.name or c.name
                c.arguments += d.arguments
    return [calls[i] for i in sorted(calls)]


def retry_after(err: BaseException) -> float | None:
    """Seconds to wait before retrying, from the error's RetryInfo detail."""
    if not isinstance(err, ConnectError):
        return None
    for d in err.details:
        info = errors_pb2.RetryInfo()
        if d.Is(info.DESCRIPTOR):
            d.Unpack(info)
            return info.retry_delay.seconds + info.retry_delay.nanos / 1e9
    return None


class _Headers:
    """Calls the wrapped generated client with default headers."""

    def __init__(self, client: Any, headers: Mapping[str, str]):
        self._client, self._headers = client, headers

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._client, name)
        if not callable(fn):
            return fn

        def call(*args: Any, headers: Mapping[str, str] | None = None, **kw: Any) -> Any:
            return fn(*args, headers={**self._headers, **(headers or {})}, **kw)

        return call


def _headers(api_key: str | None, session: str | None) -> dict[str, str]:
    h: dict[str, str] = {}
    if api_key:
        h["authorization"] = f"Bearer {api_key}"
    if session:
        h["cookie"] = f"Session_id={session}"
    return h


class Parley:
    """Synchronous client. ``protocol`` is "connect" (default) or "grpc"."""

    def __init__(self, base_url: str, *, api_key: str | None = None, session: str | None = None,
                 protocol: str = "connect", timeout_ms: int | None = None):
        kw = dict(protocol=_PROTOCOLS[protocol], timeout_ms=timeout_ms)
        h = _headers(api_key, session)
        self.auth = _Headers(auth_connect.AuthServiceClientSync(base_url, **kw), h)
        self.api_keys = _Headers(api_key_connect.ApiKeyServiceClientSync(base_url, **kw), h)
        self.models = _Headers(model_connect.ModelServiceClientSync(base_url, **kw), h)
        self.chat = _Headers(chat_connect.ChatServiceClientSync(base_url, **kw), h)
        self.conversations = _Headers(conversation_connect.ConversationServiceClientSync(base_url, **kw), h)
        self.attachments = _Headers(attachment_connect.AttachmentServiceClientSync(base_url, **kw), h)
        self.files = _Headers(file_connect.FileServiceClientSync(base_url, **kw), h)
        self.vector_stores = _Headers(vector_store_connect.VectorStoreServiceClientSync(base_url, **kw), h)
        self.projects = _Headers(project_connect.ProjectServiceClientSync(base_url, **kw), h)
        self.memories = _Headers(memory_connect.MemoryServiceClientSync(base_url, **kw), h)
        self.batches = _Headers(batch_connect.BatchServiceClientSync(base_url, **kw), h)
        self.webhooks = _Headers(webhook_connect.WebhookServiceClientSync(base_url, **kw), h)
        self.billing = _Headers(billing_connect.BillingServiceClientSync(base_url, **kw), h)

    def complete_stream(self, request: CompleteStreamRequest) -> Iterator[GenerationEvent]:
        """Streams an API-channel generation's events."""
        for res in self.chat.complete_stream(request):
            yield res.event

    def send_message(self, request: Any) -> Iterator[GenerationEvent]:
        """Adds a message to a conversation and streams the answer's events."""
        for res in self.conversations.send_message(request):
            yield res.event

    def stream_text(self, model: str, text: str, **kw: Any) -> Iterator[str]:
        """The answer (choice 0) to one prompt, piece by piece."""
        for ev in self.complete_stream(prompt(model, text, **kw)):
            if ev.HasField("delta") and ev.delta.choice == 0 and ev.delta.text:
                yield ev.delta.text


class AsyncParley:
    """Asynchronous client (asyncio). ``protocol`` is "connect" (default) or "grpc"."""

    def __init__(self, base_url: str, *, api_key: str | None = None, session: str | None = None,
                 protocol: str = "connect", timeout_ms: int | None = None):
        kw = dict(protocol=_PROTOCOLS[protocol], timeout_ms=timeout_ms)
        h = _headers(api_key, session)
        self.auth = _Headers(auth_connect.AuthServiceClient(base_url, **kw), h)
        self.api_keys = _Headers(api_key_connect.ApiKeyServiceClient(base_url, **kw), h)
        self.models = _Headers(model_connect.ModelServiceClient(base_url, **kw), h)
        self.chat = _Headers(chat_connect.ChatServiceClient(base_url, **kw), h)
        self.conversations = _Headers(conversation_connect.ConversationServiceClient(base_url, **kw), h)
        self.attachments = _Headers(attachment_connect.AttachmentServiceClient(base_url, **kw), h)
        self.files = _Headers(file_connect.FileServiceClient(base_url, **kw), h)
        self.vector_stores = _Headers(vector_store_connect.VectorStoreServiceClient(base_url, **kw), h)
        self.projects = _Headers(project_connect.ProjectServiceClient(base_url, **kw), h)
        self.memories = _Headers(memory_connect.MemoryServiceClient(base_url, **kw), h)
        self.batches = _Headers(batch_connect.BatchServiceClient(base_url, **kw), h)
        self.webhooks = _Headers(webhook_connect.WebhookServiceClient(base_url, **kw), h)
        self.billing = _Headers(billing_connect.BillingServiceClient(base_url, **kw), h)

    async def complete_stream(self, request: CompleteStreamRequest) -> AsyncIterator[GenerationEvent]:
        async for res in self.chat.complete_stream(request):
            yield res.event

    async def stream_text(self, model: str, text: str, **kw: Any) -> AsyncIterator[str]:
        async for ev in self.complete_stream(prompt(model, text, **kw)):
            if ev.HasField("delta") and ev.delta.choice == 0 and ev.delta.text:
                yield ev.delta.text
