import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from parley.v1 import billing_pb2 as _billing_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RetryInfo(_message.Message):
    __slots__ = ("retry_delay",)
    RETRY_DELAY_FIELD_NUMBER: _ClassVar[int]
    retry_delay: _duration_pb2.Duration
    def __init__(self, retry_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class FieldViolation(_message.Message):
    __slots__ = ("field", "description")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    field: str
    description: str
    def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class LimitExceeded(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: _billing_pb2.LimitStatus
    def __init__(self, limit: _Optional[_Union[_billing_pb2.LimitStatus, _Mapping]] = ...) -> None: ...

class InsufficientBalance(_message.Message):
    __slots__ = ("available_nanos", "required_nanos")
    AVAILABLE_NANOS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_NANOS_FIELD_NUMBER: _ClassVar[int]
    available_nanos: int
    required_nanos: int
    def __init__(self, available_nanos: _Optional[int] = ..., required_nanos: _Optional[int] = ...) -> None: ...
