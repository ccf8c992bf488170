from parley.v1 import common_pb2 as _common_pb2
from parley.v1 import vector_store_pb2 as _vector_store_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BackgroundStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BACKGROUND_STATUS_UNSPECIFIED: _ClassVar[BackgroundStatus]
    BACKGROUND_STATUS_QUEUED: _ClassVar[BackgroundStatus]
    BACKGROUND_STATUS_IN_PROGRESS: _ClassVar[BackgroundStatus]
    BACKGROUND_STATUS_COMPLETED: _ClassVar[BackgroundStatus]
    BACKGROUND_STATUS_CANCELLED: _ClassVar[BackgroundStatus]
    BACKGROUND_STATUS_FAILED: _ClassVar[BackgroundStatus]
BACKGROUND_STATUS_UNSPECIFIED: BackgroundStatus
BACKGROUND_STATUS_QUEUED: BackgroundStatus
BACKGROUND_STATUS_IN_PROGRESS: BackgroundStatus
BACKGROUND_STATUS_COMPLETED: BackgroundStatus
BACKGROUND_STATUS_CANCELLED: BackgroundStatus
BACKGROUND_STATUS_FAILED: BackgroundStatus

class BackgroundGeneration(_message.Message):
    __slots__ = ("id", "status", "response", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: BackgroundStatus
    response: CompleteResponse
    error: str
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[BackgroundStatus, str]] = ..., response: _Optional[_Union[CompleteResponse, _Mapping]] = ..., error: _Optional[str] = ...) -> None: ...

class StartBackgroundRequest(_message.Message):
    __slots__ = ("request",)
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    request: CompleteRequest
    def __init__(self, request: _Optional[_Union[CompleteRequest, _Mapping]] = ...) -> None: ...

class StartBackgroundResponse(_message.Message):
    __slots__ = ("generation",)
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    generation: BackgroundGeneration
    def __init__(self, generation: _Optional[_Union[BackgroundGeneration, _Mapping]] = ...) -> None: ...

class GetBackgroundRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetBackgroundResponse(_message.Message):
    __slots__ = ("generation",)
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    generation: BackgroundGeneration
    def __init__(self, generation: _Optional[_Union[BackgroundGeneration, _Mapping]] = ...) -> None: ...

class CancelBackgroundRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class CancelBackgroundResponse(_message.Message):
    __slots__ = ("generation",)
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    generation: BackgroundGeneration
    def __init__(self, generation: _Optional[_Union[BackgroundGeneration, _Mapping]] = ...) -> None: ...

class FollowBackgroundRequest(_message.Message):
    __slots__ = ("id", "after_seq")
    ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    id: str
    after_seq: int
    def __init__(self, id: _Optional[str] = ..., after_seq: _Optional[int] = ...) -> None: ...

class FollowBackgroundResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _common_pb2.GenerationEvent
    def __init__(self, event: _Optional[_Union[_common_pb2.GenerationEvent, _Mapping]] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ("model", "messages", "max_output_tokens", "temperature", "top_p", "stop", "seed", "user", "tools", "tool_choice", "parallel_tool_calls", "response_format", "n", "logprobs", "top_logprobs", "file_search")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    FILE_SEARCH_FIELD_NUMBER: _ClassVar[int]
    model: str
    messages: _containers.RepeatedCompositeFieldContainer[_common_pb2.Message]
    max_output_tokens: int
    temperature: float
    top_p: float
    stop: _containers.RepeatedScalarFieldContainer[str]
    seed: int
    user: str
    tools: _containers.RepeatedCompositeFieldContainer[_common_pb2.Tool]
    tool_choice: _common_pb2.ToolChoice
    parallel_tool_calls: bool
    response_format: _common_pb2.ResponseFormat
    n: int
    logprobs: bool
    top_logprobs: int
    file_search: FileSearch
    def __init__(self, model: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[_common_pb2.Message, _Mapping]]] = ..., max_output_tokens: _Optional[int] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., stop: _Optional[_Iterable[str]] = ..., seed: _Optional[int] = ..., user: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[_common_pb2.Tool, _Mapping]]] = ..., tool_choice: _Optional[_Union[_common_pb2.ToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., n: _Optional[int] = ..., logprobs: _Optional[bool] = ..., top_logprobs: _Optional[int] = ..., file_search: _Optional[_Union[FileSearch, _Mapping]] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = ("request_id", "model", "message", "finish_reason", "usage", "cost_nanos", "choices")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    COST_NANOS_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    model: str
    message: _common_pb2.Message
    finish_reason: _common_pb2.FinishReason
    usage: _common_pb2.Usage
    cost_nanos: int
    choices: _containers.RepeatedCompositeFieldContainer[Choice]
    def __init__(self, request_id: _Optional[str] = ..., model: _Optional[str] = ..., message: _Optional[_Union[_common_pb2.Message, _Mapping]] = ..., finish_reason: _Optional[_Union[_common_pb2.FinishReason, str]] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., cost_nanos: _Optional[int] = ..., choices: _Optional[_Iterable[_Union[Choice, _Mapping]]] = ...) -> None: ...

class Choice(_message.Message):
    __slots__ = ("index", "message", "finish_reason", "logprobs")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    index: int
    message: _common_pb2.Message
    finish_reason: _common_pb2.FinishReason
    logprobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.TokenLogprob]
    def __init__(self, index: _Optional[int] = ..., message: _Optional[_Union[_common_pb2.Message, _Mapping]] = ..., finish_reason: _Optional[_Union[_common_pb2.FinishReason, str]] = ..., logprobs: _Optional[_Iterable[_Union[_common_pb2.TokenLogprob, _Mapping]]] = ...) -> None: ...

class CompleteStreamRequest(_message.Message):
    __slots__ = ("model", "messages", "max_output_tokens", "temperature", "top_p", "stop", "seed", "user", "tools", "tool_choice", "parallel_tool_calls", "response_format", "n", "logprobs", "top_logprobs", "file_search")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    FILE_SEARCH_FIELD_NUMBER: _ClassVar[int]
    model: str
    messages: _containers.RepeatedCompositeFieldContainer[_common_pb2.Message]
    max_output_tokens: int
    temperature: float
    top_p: float
    stop: _containers.RepeatedScalarFieldContainer[str]
    seed: int
    user: str
    tools: _containers.RepeatedCompositeFieldContainer[_common_pb2.Tool]
    tool_choice: _common_pb2.ToolChoice
    parallel_tool_calls: bool
    response_format: _common_pb2.ResponseFormat
    n: int
    logprobs: bool
    top_logprobs: int
    file_search: FileSearch
    def __init__(self, model: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[_common_pb2.Message, _Mapping]]] = ..., max_output_tokens: _Optional[int] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., stop: _Optional[_Iterable[str]] = ..., seed: _Optional[int] = ..., user: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[_common_pb2.Tool, _Mapping]]] = ..., tool_choice: _Optional[_Union[_common_pb2.ToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., n: _Optional[int] = ..., logprobs: _Optional[bool] = ..., top_logprobs: _Optional[int] = ..., file_search: _Optional[_Union[FileSearch, _Mapping]] = ...) -> None: ...

class CompleteStreamResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _common_pb2.GenerationEvent
    def __init__(self, event: _Optional[_Union[_common_pb2.GenerationEvent, _Mapping]] = ...) -> None: ...

class FileSearch(_message.Message):
    __slots__ = ("vector_store_ids", "max_num_results", "filter", "score_threshold")
    VECTOR_STORE_IDS_FIELD_NUMBER: _ClassVar[int]
    MAX_NUM_RESULTS_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    SCORE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    vector_store_ids: _containers.RepeatedScalarFieldContainer[str]
    max_num_results: int
    filter: _vector_store_pb2.AttributeFilter
    score_threshold: float
    def __init__(self, vector_store_ids: _Optional[_Iterable[str]] = ..., max_num_results: _Optional[int] = ..., filter: _Optional[_Union[_vector_store_pb2.AttributeFilter, _Mapping]] = ..., score_threshold: _Optional[float] = ...) -> None: ...
