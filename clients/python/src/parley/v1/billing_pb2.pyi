import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from parley.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LimitKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIMIT_KIND_UNSPECIFIED: _ClassVar[LimitKind]
    LIMIT_KIND_REQUESTS: _ClassVar[LimitKind]
    LIMIT_KIND_INPUT_TOKENS: _ClassVar[LimitKind]
    LIMIT_KIND_OUTPUT_TOKENS: _ClassVar[LimitKind]
    LIMIT_KIND_REQUEST_RATE: _ClassVar[LimitKind]
    LIMIT_KIND_BUDGET: _ClassVar[LimitKind]
    LIMIT_KIND_KEY_REQUEST_RATE: _ClassVar[LimitKind]
    LIMIT_KIND_KEY_TOKEN_RATE: _ClassVar[LimitKind]

class UsageGroupBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    USAGE_GROUP_BY_UNSPECIFIED: _ClassVar[UsageGroupBy]
    USAGE_GROUP_BY_DAY: _ClassVar[UsageGroupBy]
    USAGE_GROUP_BY_MODEL: _ClassVar[UsageGroupBy]
    USAGE_GROUP_BY_DAY_AND_MODEL: _ClassVar[UsageGroupBy]
LIMIT_KIND_UNSPECIFIED: LimitKind
LIMIT_KIND_REQUESTS: LimitKind
LIMIT_KIND_INPUT_TOKENS: LimitKind
LIMIT_KIND_OUTPUT_TOKENS: LimitKind
LIMIT_KIND_REQUEST_RATE: LimitKind
LIMIT_KIND_BUDGET: LimitKind
LIMIT_KIND_KEY_REQUEST_RATE: LimitKind
LIMIT_KIND_KEY_TOKEN_RATE: LimitKind
USAGE_GROUP_BY_UNSPECIFIED: UsageGroupBy
USAGE_GROUP_BY_DAY: UsageGroupBy
USAGE_GROUP_BY_MODEL: UsageGroupBy
USAGE_GROUP_BY_DAY_AND_MODEL: UsageGroupBy

class UsageRecord(_message.Message):
    __slots__ = ("request_id", "model", "usage", "cost_nanos", "finish_reason", "channel", "api_key_id", "created_at", "conversation_id", "user", "cache_hit", "user_id", "requested_model", "batch")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    COST_NANOS_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    CACHE_HIT_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    model: str
    usage: _common_pb2.Usage
    cost_nanos: int
    finish_reason: _common_pb2.FinishReason
    channel: _common_pb2.AuthChannel
    api_key_id: str
    created_at: _timestamp_pb2.Timestamp
    conversation_id: str
    user: str
    cache_hit: bool
    user_id: str
    requested_model: str
    batch: bool
    def __init__(self, request_id: _Optional[str] = ..., model: _Optional[str] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., cost_nanos: _Optional[int] = ..., finish_reason: _Optional[_Union[_common_pb2.FinishReason, str]] = ..., channel: _Optional[_Union[_common_pb2.AuthChannel, str]] = ..., api_key_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., conversation_id: _Optional[str] = ..., user: _Optional[str] = ..., cache_hit: _Optional[bool] = ..., user_id: _Optional[str] = ..., requested_model: _Optional[str] = ..., batch: _Optional[bool] = ...) -> None: ...

class LimitStatus(_message.Message):
    __slots__ = ("model", "kind", "limit", "used", "remaining", "window", "resets_at", "next_request_at", "next_request_amount")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    RESETS_AT_FIELD_NUMBER: _ClassVar[int]
    NEXT_REQUEST_AT_FIELD_NUMBER: _ClassVar[int]
    NEXT_REQUEST_AMOUNT_FIELD_NUMBER: _ClassVar[int]
    model: str
    kind: LimitKind
    limit: int
    used: int
    remaining: int
    window: _duration_pb2.Duration
    resets_at: _timestamp_pb2.Timestamp
    next_request_at: _timestamp_pb2.Timestamp
    next_request_amount: int
    def __init__(self, model: _Optional[str] = ..., kind: _Optional[_Union[LimitKind, str]] = ..., limit: _Optional[int] = ..., used: _Optional[int] = ..., remaining: _Optional[int] = ..., window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., resets_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_request_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_request_amount: _Optional[int] = ...) -> None: ...

class GetBalanceRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetBalanceResponse(_message.Message):
    __slots__ = ("balance_nanos", "reserved_nanos")
    BALANCE_NANOS_FIELD_NUMBER: _ClassVar[int]
    RESERVED_NANOS_FIELD_NUMBER: _ClassVar[int]
    balance_nanos: int
    reserved_nanos: int
    def __init__(self, balance_nanos: _Optional[int] = ..., reserved_nanos: _Optional[int] = ...) -> None: ...

class ListUsageRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "user")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    user: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., user: _Optional[str] = ...) -> None: ...

class ListUsageResponse(_message.Message):
    __slots__ = ("usage_records", "next_page_token")
    USAGE_RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    usage_records: _containers.RepeatedCompositeFieldContainer[UsageRecord]
    next_page_token: str
    def __init__(self, usage_records: _Optional[_Iterable[_Union[UsageRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetLimitsRequest(_message.Message):
    __slots__ = ("model", "input_tokens", "max_output_tokens")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    model: str
    input_tokens: int
    max_output_tokens: int
    def __init__(self, model: _Optional[str] = ..., input_tokens: _Optional[int] = ..., max_output_tokens: _Optional[int] = ...) -> None: ...

class GetLimitsResponse(_message.Message):
    __slots__ = ("tier", "limits")
    TIER_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    tier: _common_pb2.Tier
    limits: _containers.RepeatedCompositeFieldContainer[LimitStatus]
    def __init__(self, tier: _Optional[_Union[_common_pb2.Tier, str]] = ..., limits: _Optional[_Iterable[_Union[LimitStatus, _Mapping]]] = ...) -> None: ...

class GetUsageSummaryRequest(_message.Message):
    __slots__ = ("start_time", "end_time", "group_by", "utc_offset_minutes")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    UTC_OFFSET_MINUTES_FIELD_NUMBER: _ClassVar[int]
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    group_by: UsageGroupBy
    utc_offset_minutes: int
    def __init__(self, start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., group_by: _Optional[_Union[UsageGroupBy, str]] = ..., utc_offset_minutes: _Optional[int] = ...) -> None: ...

class GetUsageSummaryResponse(_message.Message):
    __slots__ = ("buckets", "total")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[UsageBucket]
    total: UsageBucket
    def __init__(self, buckets: _Optional[_Iterable[_Union[UsageBucket, _Mapping]]] = ..., total: _Optional[_Union[UsageBucket, _Mapping]] = ...) -> None: ...

class UsageBucket(_message.Message):
    __slots__ = ("day", "model", "requests", "prompt_tokens", "completion_tokens", "cached_tokens", "cost_nanos", "api_key_id", "team_id", "user_id")
    DAY_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_NANOS_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    day: str
    model: str
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_nanos: int
    api_key_id: str
    team_id: str
    user_id: str
    def __init__(self, day: _Optional[str] = ..., model: _Optional[str] = ..., requests: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., cached_tokens: _Optional[int] = ..., cost_nanos: _Optional[int] = ..., api_key_id: _Optional[str] = ..., team_id: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...
