from google.protobuf import struct_pb2 as _struct_pb2
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
    FINISH_REASON_TOOL_CALLS: _ClassVar[FinishReason]

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_SYSTEM: _ClassVar[Role]
    ROLE_USER: _ClassVar[Role]
    ROLE_ASSISTANT: _ClassVar[Role]
    ROLE_TOOL: _ClassVar[Role]

class AuthChannel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUTH_CHANNEL_UNSPECIFIED: _ClassVar[AuthChannel]
    AUTH_CHANNEL_SESSION: _ClassVar[AuthChannel]
    AUTH_CHANNEL_API_KEY: _ClassVar[AuthChannel]

class ToolChoiceMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_CHOICE_MODE_UNSPECIFIED: _ClassVar[ToolChoiceMode]
    TOOL_CHOICE_MODE_AUTO: _ClassVar[ToolChoiceMode]
    TOOL_CHOICE_MODE_NONE: _ClassVar[ToolChoiceMode]
    TOOL_CHOICE_MODE_REQUIRED: _ClassVar[ToolChoiceMode]
    TOOL_CHOICE_MODE_FUNCTION: _ClassVar[ToolChoiceMode]

class ResponseFormatType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESPONSE_FORMAT_TYPE_UNSPECIFIED: _ClassVar[ResponseFormatType]
    RESPONSE_FORMAT_TYPE_TEXT: _ClassVar[ResponseFormatType]
    RESPONSE_FORMAT_TYPE_JSON_OBJECT: _ClassVar[ResponseFormatType]
    RESPONSE_FORMAT_TYPE_JSON_SCHEMA: _ClassVar[ResponseFormatType]
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
FINISH_REASON_TOOL_CALLS: FinishReason
ROLE_UNSPECIFIED: Role
ROLE_SYSTEM: Role
ROLE_USER: Role
ROLE_ASSISTANT: Role
ROLE_TOOL: Role
AUTH_CHANNEL_UNSPECIFIED: AuthChannel
AUTH_CHANNEL_SESSION: AuthChannel
AUTH_CHANNEL_API_KEY: AuthChannel
TOOL_CHOICE_MODE_UNSPECIFIED: ToolChoiceMode
TOOL_CHOICE_MODE_AUTO: ToolChoiceMode
TOOL_CHOICE_MODE_NONE: ToolChoiceMode
TOOL_CHOICE_MODE_REQUIRED: ToolChoiceMode
TOOL_CHOICE_MODE_FUNCTION: ToolChoiceMode
RESPONSE_FORMAT_TYPE_UNSPECIFIED: ResponseFormatType
RESPONSE_FORMAT_TYPE_TEXT: ResponseFormatType
RESPONSE_FORMAT_TYPE_JSON_OBJECT: ResponseFormatType
RESPONSE_FORMAT_TYPE_JSON_SCHEMA: ResponseFormatType

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
    __slots__ = ("text", "attachment_id", "image", "document", "tool_call", "tool_result", "citation")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENT_ID_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    CITATION_FIELD_NUMBER: _ClassVar[int]
    text: str
    attachment_id: str
    image: InlineImage
    document: InlineDocument
    tool_call: ToolCall
    tool_result: ToolResult
    citation: Citation
    def __init__(self, text: _Optional[str] = ..., attachment_id: _Optional[str] = ..., image: _Optional[_Union[InlineImage, _Mapping]] = ..., document: _Optional[_Union[InlineDocument, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., citation: _Optional[_Union[Citation, _Mapping]] = ...) -> None: ...

class Citation(_message.Message):
    __slots__ = ("number", "file_id", "filename", "quote", "score")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    QUOTE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    number: int
    file_id: str
    filename: str
    quote: str
    score: float
    def __init__(self, number: _Optional[int] = ..., file_id: _Optional[str] = ..., filename: _Optional[str] = ..., quote: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("tool_call_id", "content")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    content: str
    def __init__(self, tool_call_id: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ("name", "description", "parameters", "strict")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: _struct_pb2.Struct
    strict: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., strict: _Optional[bool] = ...) -> None: ...

class ToolChoice(_message.Message):
    __slots__ = ("mode", "function_name")
    MODE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    mode: ToolChoiceMode
    function_name: str
    def __init__(self, mode: _Optional[_Union[ToolChoiceMode, str]] = ..., function_name: _Optional[str] = ...) -> None: ...

class ResponseFormat(_message.Message):
    __slots__ = ("type", "name", "schema", "strict")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    type: ResponseFormatType
    name: str
    schema: _struct_pb2.Struct
    strict: bool
    def __init__(self, type: _Optional[_Union[ResponseFormatType, str]] = ..., name: _Optional[str] = ..., schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., strict: _Optional[bool] = ...) -> None: ...

class TokenLogprob(_message.Message):
    __slots__ = ("token", "logprob", "bytes", "top_logprobs")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    LOGPROB_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    token: str
    logprob: float
    bytes: bytes
    top_logprobs: _containers.RepeatedCompositeFieldContainer[TopLogprob]
    def __init__(self, token: _Optional[str] = ..., logprob: _Optional[float] = ..., bytes: _Optional[bytes] = ..., top_logprobs: _Optional[_Iterable[_Union[TopLogprob, _Mapping]]] = ...) -> None: ...

class TopLogprob(_message.Message):
    __slots__ = ("token", "logprob", "bytes")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    LOGPROB_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    token: str
    logprob: float
    bytes: bytes
    def __init__(self, token: _Optional[str] = ..., logprob: _Optional[float] = ..., bytes: _Optional[bytes] = ...) -> None: ...

class ToolCallDelta(_message.Message):
    __slots__ = ("index", "id", "name", "arguments")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    index: int
    id: str
    name: str
    arguments: str
    def __init__(self, index: _Optional[int] = ..., id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...

class ChoiceFinish(_message.Message):
    __slots__ = ("index", "finish_reason")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    index: int
    finish_reason: FinishReason
    def __init__(self, index: _Optional[int] = ..., finish_reason: _Optional[_Union[FinishReason, str]] = ...) -> None: ...

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
    __slots__ = ("request_id", "conversation_id", "message_id", "model", "user_message_id", "prompt_tokens", "memory_ids")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    USER_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_IDS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    conversation_id: str
    message_id: str
    model: str
    user_message_id: str
    prompt_tokens: int
    memory_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., conversation_id: _Optional[str] = ..., message_id: _Optional[str] = ..., model: _Optional[str] = ..., user_message_id: _Optional[str] = ..., prompt_tokens: _Optional[int] = ..., memory_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GenerationDelta(_message.Message):
    __slots__ = ("text", "choice", "tool_calls", "logprobs", "reasoning")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CHOICE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    text: str
    choice: int
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCallDelta]
    logprobs: _containers.RepeatedCompositeFieldContainer[TokenLogprob]
    reasoning: str
    def __init__(self, text: _Optional[str] = ..., choice: _Optional[int] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCallDelta, _Mapping]]] = ..., logprobs: _Optional[_Iterable[_Union[TokenLogprob, _Mapping]]] = ..., reasoning: _Optional[str] = ...) -> None: ...

class GenerationFinished(_message.Message):
    __slots__ = ("finish_reason", "usage", "cost_nanos", "error_message", "choices", "citations")
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    COST_NANOS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    finish_reason: FinishReason
    usage: Usage
    cost_nanos: int
    error_message: str
    choices: _containers.RepeatedCompositeFieldContainer[ChoiceFinish]
    citations: _containers.RepeatedCompositeFieldContainer[Citation]
    def __init__(self, finish_reason: _Optional[_Union[FinishReason, str]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., cost_nanos: _Optional[int] = ..., error_message: _Optional[str] = ..., choices: _Optional[_Iterable[_Union[ChoiceFinish, _Mapping]]] = ..., citations: _Optional[_Iterable[_Union[Citation, _Mapping]]] = ...) -> None: ...
