import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BatchStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BATCH_STATUS_UNSPECIFIED: _ClassVar[BatchStatus]
    BATCH_STATUS_VALIDATING: _ClassVar[BatchStatus]
    BATCH_STATUS_IN_PROGRESS: _ClassVar[BatchStatus]
    BATCH_STATUS_FINALIZING: _ClassVar[BatchStatus]
    BATCH_STATUS_COMPLETED: _ClassVar[BatchStatus]
    BATCH_STATUS_FAILED: _ClassVar[BatchStatus]
    BATCH_STATUS_EXPIRED: _ClassVar[BatchStatus]
    BATCH_STATUS_CANCELLING: _ClassVar[BatchStatus]
    BATCH_STATUS_CANCELLED: _ClassVar[BatchStatus]
BATCH_STATUS_UNSPECIFIED: BatchStatus
BATCH_STATUS_VALIDATING: BatchStatus
BATCH_STATUS_IN_PROGRESS: BatchStatus
BATCH_STATUS_FINALIZING: BatchStatus
BATCH_STATUS_COMPLETED: BatchStatus
BATCH_STATUS_FAILED: BatchStatus
BATCH_STATUS_EXPIRED: BatchStatus
BATCH_STATUS_CANCELLING: BatchStatus
BATCH_STATUS_CANCELLED: BatchStatus

class Batch(_message.Message):
    __slots__ = ("id", "endpoint", "input_file_id", "completion_window", "status", "output_file_id", "error_file_id", "request_counts", "errors", "metadata", "created_at", "in_progress_at", "finalizing_at", "completed_at", "failed_at", "expired_at", "cancelling_at", "cancelled_at", "expires_at", "cost_nanos")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    INPUT_FILE_ID_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_WINDOW_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FILE_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FILE_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_COUNTS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_AT_FIELD_NUMBER: _ClassVar[int]
    FINALIZING_AT_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_AT_FIELD_NUMBER: _ClassVar[int]
    CANCELLING_AT_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    COST_NANOS_FIELD_NUMBER: _ClassVar[int]
    id: str
    endpoint: str
    input_file_id: str
    completion_window: str
    status: BatchStatus
    output_file_id: str
    error_file_id: str
    request_counts: BatchRequestCounts
    errors: _containers.RepeatedCompositeFieldContainer[BatchError]
    metadata: _containers.ScalarMap[str, str]
    created_at: _timestamp_pb2.Timestamp
    in_progress_at: _timestamp_pb2.Timestamp
    finalizing_at: _timestamp_pb2.Timestamp
    completed_at: _timestamp_pb2.Timestamp
    failed_at: _timestamp_pb2.Timestamp
    expired_at: _timestamp_pb2.Timestamp
    cancelling_at: _timestamp_pb2.Timestamp
    cancelled_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    cost_nanos: int
    def __init__(self, id: _Optional[str] = ..., endpoint: _Optional[str] = ..., input_file_id: _Optional[str] = ..., completion_window: _Optional[str] = ..., status: _Optional[_Union[BatchStatus, str]] = ..., output_file_id: _Optional[str] = ..., error_file_id: _Optional[str] = ..., request_counts: _Optional[_Union[BatchRequestCounts, _Mapping]] = ..., errors: _Optional[_Iterable[_Union[BatchError, _Mapping]]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., in_progress_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finalizing_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., completed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., failed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expired_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cancelling_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cancelled_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cost_nanos: _Optional[int] = ...) -> None: ...

class BatchRequestCounts(_message.Message):
    __slots__ = ("total", "completed", "failed")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    total: int
    completed: int
    failed: int
    def __init__(self, total: _Optional[int] = ..., completed: _Optional[int] = ..., failed: _Optional[int] = ...) -> None: ...

class BatchError(_message.Message):
    __slots__ = ("code", "message", "param", "line")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARAM_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    param: str
    line: int
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., param: _Optional[str] = ..., line: _Optional[int] = ...) -> None: ...

class CreateBatchRequest(_message.Message):
    __slots__ = ("input_file_id", "endpoint", "completion_window", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    INPUT_FILE_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_WINDOW_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, input_file_id: _Optional[str] = ..., endpoint: _Optional[str] = ..., completion_window: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CreateBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ...) -> None: ...

class GetBatchRequest(_message.Message):
    __slots__ = ("batch_id",)
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class GetBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ...) -> None: ...

class ListBatchesRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListBatchesResponse(_message.Message):
    __slots__ = ("batches", "next_page_token")
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    batches: _containers.RepeatedCompositeFieldContainer[Batch]
    next_page_token: str
    def __init__(self, batches: _Optional[_Iterable[_Union[Batch, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CancelBatchRequest(_message.Message):
    __slots__ = ("batch_id",)
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class CancelBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ...) -> None: ...
