from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Tier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIER_UNSPECIFIED: _ClassVar[Tier]
    TIER_FREE: _ClassVar[Tier]
    TIER_PLUS: _ClassVar[Tier]
    TIER_PRO: _ClassVar[Tier]
    TIER_MAX: _ClassVar[Tier]

class FinishReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINISH_REASON_UNSPECIFIED: _ClassVar[FinishReason]
    FINISH_REASON_STOP: _ClassVar[FinishReason]
    FINISH_REASON_LENGTH: _ClassVar[FinishReason]
    FINISH_REASON_CANCELLED: _ClassVar[FinishReason]
    FINISH_REASON_ERROR: _ClassVar[FinishReason]

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_SYSTEM: _ClassVar[Role]
    ROLE_USER: _ClassVar[Role]
    ROLE_ASSISTANT: _ClassVar[Role]

class AuthChannel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUTH_CHANNEL_UNSPECIFIED: _ClassVar[AuthChannel]
    AUTH_CHANNEL_SESSION: _ClassVar[AuthChannel]
    AUTH_CHANNEL_API_KEY: _ClassVar[AuthChannel]
TIER_UNSPECIFIED: Tier
TIER_FREE: Tier
TIER_PLUS: Tier
TIER_PRO: Tier
TIER_MAX: Tier
FINISH_REASON_UNSPECIFIED: FinishReason
FINISH_REASON_STOP: FinishReason
FINISH_REASON_LENGTH: FinishReason
FINISH_REASON_CANCELLED: FinishReason
FINISH_REASON_ERROR: FinishReason
ROLE_UNSPECIFIED: Role
ROLE_SYSTEM: Role
ROLE_USER: Role
ROLE_ASSISTANT: Role
AUTH_CHANNEL_UNSPECIFIED: AuthChannel
AUTH_CHANNEL_SESSION: AuthChannel
AUTH_CHANNEL_API_KEY: AuthChannel

class Usage(_message.Message):
    __slots__ = ("prompt_tokens", "completion_tokens", "cached_tokens", "estimated")
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_FIELD_NUMBER: _ClassVar[int]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    estimated: bool
    def __init__(self, prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., cached_tokens: _Optional[int] = ..., estimated: _Optional[bool] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("role", "parts")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    role: Role
    parts: _containers.RepeatedCompositeFieldContainer[Part]
    def __init__(self, role: _Optional[_Union[Role, str]] = ..., parts: _Optional[_Iterable[_Union[Part, _Mapping]]] = ...) -> None: ...

class Part(_message.Message):
    __slots__ = ("text", "attachment_id", "image", "document")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENT_ID_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    text: str
    attachment_id: str
    image: InlineImage
    document: InlineDocument
    def __init__(self, text: _Optional[str] = ..., attachment_id: _Optional[str] = ..., image: _Optional[_Union[InlineImage, _Mapping]] = ..., document: _Optional[_Union[InlineDocument, _Mapping]] = ...) -> None: ...

class InlineImage(_message.Message):
    __slots__ = ("data", "mime_type")
    DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    mime_type: str
    def __init__(self, data: _Optional[bytes] = ..., mime_type: _Optional[str] = ...) -> None: ...

class InlineDocument(_message.Message):
    __slots__ = ("data", "mime_type", "filename")
    DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    mime_type: str
    filename: str
    def __init__(self, data: _Optional[bytes] = ..., mime_type: _Optional[str] = ..., filename: _Optional[str] = ...) -> None: ...

class GenerationEvent(_message.Message):
    __slots__ = ("seq", "started", "delta", "finished")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    seq: int
    started: GenerationStarted
    delta: GenerationDelta
    finished: GenerationFinished
    def __init__(self, seq: _Optional[int] = ..., started: _Optional[_Union[GenerationStarted, _Mapping]] = ..., delta: _Optional[_Union[GenerationDelta, _Mapping]] = ..., finished: _Optional[_Union[GenerationFinished, _Mapping]] = ...) -> None: ...

class GenerationStarted(_message.Message):
    __slots__ = ("request_id", "conversation_id", "message_id", "model", "user_message_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    USER_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    conversation_id: str
    message_id: str
    model: str
    user_message_id: str
    def __init__(self, request_id: _Optional[str] = ..., conversation_id: _Optional[str] = ..., message_id: _Optional[str] = ..., model: _Optional[str] = ..., user_message_id: _Optional[str] = ...) -> None: ...

class GenerationDelta(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class GenerationFinished(_message.Message):
    __slots__ = ("finish_reason", "usage", "cost_nanos", "error_message")
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    COST_NANOS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    finish_reason: FinishReason
    usage: Usage
    cost_nanos: int
    error_message: str
    def __init__(self, finish_reason: _Optional[_Union[FinishReason, str]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., cost_nanos: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
