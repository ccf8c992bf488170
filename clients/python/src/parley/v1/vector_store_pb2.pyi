import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VectorStoreStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VECTOR_STORE_STATUS_UNSPECIFIED: _ClassVar[VectorStoreStatus]
    VECTOR_STORE_STATUS_IN_PROGRESS: _ClassVar[VectorStoreStatus]
    VECTOR_STORE_STATUS_COMPLETED: _ClassVar[VectorStoreStatus]
    VECTOR_STORE_STATUS_EXPIRED: _ClassVar[VectorStoreStatus]

class VectorStoreFileStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VECTOR_STORE_FILE_STATUS_UNSPECIFIED: _ClassVar[VectorStoreFileStatus]
    VECTOR_STORE_FILE_STATUS_IN_PROGRESS: _ClassVar[VectorStoreFileStatus]
    VECTOR_STORE_FILE_STATUS_COMPLETED: _ClassVar[VectorStoreFileStatus]
    VECTOR_STORE_FILE_STATUS_FAILED: _ClassVar[VectorStoreFileStatus]
    VECTOR_STORE_FILE_STATUS_CANCELLED: _ClassVar[VectorStoreFileStatus]
VECTOR_STORE_STATUS_UNSPECIFIED: VectorStoreStatus
VECTOR_STORE_STATUS_IN_PROGRESS: VectorStoreStatus
VECTOR_STORE_STATUS_COMPLETED: VectorStoreStatus
VECTOR_STORE_STATUS_EXPIRED: VectorStoreStatus
VECTOR_STORE_FILE_STATUS_UNSPECIFIED: VectorStoreFileStatus
VECTOR_STORE_FILE_STATUS_IN_PROGRESS: VectorStoreFileStatus
VECTOR_STORE_FILE_STATUS_COMPLETED: VectorStoreFileStatus
VECTOR_STORE_FILE_STATUS_FAILED: VectorStoreFileStatus
VECTOR_STORE_FILE_STATUS_CANCELLED: VectorStoreFileStatus

class FileCounts(_message.Message):
    __slots__ = ("in_progress", "completed", "failed", "cancelled", "total")
    IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    in_progress: int
    completed: int
    failed: int
    cancelled: int
    total: int
    def __init__(self, in_progress: _Optional[int] = ..., completed: _Optional[int] = ..., failed: _Optional[int] = ..., cancelled: _Optional[int] = ..., total: _Optional[int] = ...) -> None: ...

class VectorStore(_message.Message):
    __slots__ = ("vector_store_id", "name", "metadata", "status", "file_counts", "usage_bytes", "embedding_model", "created_at", "last_active_at", "expires_after_days", "expires_at")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNTS_FIELD_NUMBER: _ClassVar[int]
    USAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVE_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AFTER_DAYS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    name: str
    metadata: _containers.ScalarMap[str, str]
    status: VectorStoreStatus
    file_counts: FileCounts
    usage_bytes: int
    embedding_model: str
    created_at: _timestamp_pb2.Timestamp
    last_active_at: _timestamp_pb2.Timestamp
    expires_after_days: int
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, vector_store_id: _Optional[str] = ..., name: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., status: _Optional[_Union[VectorStoreStatus, str]] = ..., file_counts: _Optional[_Union[FileCounts, _Mapping]] = ..., usage_bytes: _Optional[int] = ..., embedding_model: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_active_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_after_days: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Chunking(_message.Message):
    __slots__ = ("max_chunk_tokens", "overlap_tokens")
    MAX_CHUNK_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_TOKENS_FIELD_NUMBER: _ClassVar[int]
    max_chunk_tokens: int
    overlap_tokens: int
    def __init__(self, max_chunk_tokens: _Optional[int] = ..., overlap_tokens: _Optional[int] = ...) -> None: ...

class VectorStoreFile(_message.Message):
    __slots__ = ("file_id", "vector_store_id", "status", "last_error", "attributes", "chunking", "usage_bytes", "batch_id", "created_at")
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHUNKING_FIELD_NUMBER: _ClassVar[int]
    USAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    file_id: str
    vector_store_id: str
    status: VectorStoreFileStatus
    last_error: str
    attributes: _struct_pb2.Struct
    chunking: Chunking
    usage_bytes: int
    batch_id: str
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, file_id: _Optional[str] = ..., vector_store_id: _Optional[str] = ..., status: _Optional[_Union[VectorStoreFileStatus, str]] = ..., last_error: _Optional[str] = ..., attributes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., chunking: _Optional[_Union[Chunking, _Mapping]] = ..., usage_bytes: _Optional[int] = ..., batch_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class FileBatch(_message.Message):
    __slots__ = ("batch_id", "vector_store_id", "status", "file_counts", "created_at")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNTS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    vector_store_id: str
    status: VectorStoreStatus
    file_counts: FileCounts
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, batch_id: _Optional[str] = ..., vector_store_id: _Optional[str] = ..., status: _Optional[_Union[VectorStoreStatus, str]] = ..., file_counts: _Optional[_Union[FileCounts, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class NewVectorStoreFile(_message.Message):
    __slots__ = ("file_id", "attributes", "chunking")
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHUNKING_FIELD_NUMBER: _ClassVar[int]
    file_id: str
    attributes: _struct_pb2.Struct
    chunking: Chunking
    def __init__(self, file_id: _Optional[str] = ..., attributes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., chunking: _Optional[_Union[Chunking, _Mapping]] = ...) -> None: ...

class CreateVectorStoreRequest(_message.Message):
    __slots__ = ("name", "metadata", "expires_after_days", "file_ids", "chunking")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AFTER_DAYS_FIELD_NUMBER: _ClassVar[int]
    FILE_IDS_FIELD_NUMBER: _ClassVar[int]
    CHUNKING_FIELD_NUMBER: _ClassVar[int]
    name: str
    metadata: _containers.ScalarMap[str, str]
    expires_after_days: int
    file_ids: _containers.RepeatedScalarFieldContainer[str]
    chunking: Chunking
    def __init__(self, name: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., expires_after_days: _Optional[int] = ..., file_ids: _Optional[_Iterable[str]] = ..., chunking: _Optional[_Union[Chunking, _Mapping]] = ...) -> None: ...

class CreateVectorStoreResponse(_message.Message):
    __slots__ = ("vector_store",)
    VECTOR_STORE_FIELD_NUMBER: _ClassVar[int]
    vector_store: VectorStore
    def __init__(self, vector_store: _Optional[_Union[VectorStore, _Mapping]] = ...) -> None: ...

class ListVectorStoresRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListVectorStoresResponse(_message.Message):
    __slots__ = ("vector_stores", "next_page_token")
    VECTOR_STORES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    vector_stores: _containers.RepeatedCompositeFieldContainer[VectorStore]
    next_page_token: str
    def __init__(self, vector_stores: _Optional[_Iterable[_Union[VectorStore, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetVectorStoreRequest(_message.Message):
    __slots__ = ("vector_store_id",)
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    def __init__(self, vector_store_id: _Optional[str] = ...) -> None: ...

class GetVectorStoreResponse(_message.Message):
    __slots__ = ("vector_store",)
    VECTOR_STORE_FIELD_NUMBER: _ClassVar[int]
    vector_store: VectorStore
    def __init__(self, vector_store: _Optional[_Union[VectorStore, _Mapping]] = ...) -> None: ...

class UpdateVectorStoreRequest(_message.Message):
    __slots__ = ("vector_store_id", "name", "metadata", "replace_metadata", "expires_after_days")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    REPLACE_METADATA_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AFTER_DAYS_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    name: str
    metadata: _containers.ScalarMap[str, str]
    replace_metadata: bool
    expires_after_days: int
    def __init__(self, vector_store_id: _Optional[str] = ..., name: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., replace_metadata: _Optional[bool] = ..., expires_after_days: _Optional[int] = ...) -> None: ...

class UpdateVectorStoreResponse(_message.Message):
    __slots__ = ("vector_store",)
    VECTOR_STORE_FIELD_NUMBER: _ClassVar[int]
    vector_store: VectorStore
    def __init__(self, vector_store: _Optional[_Union[VectorStore, _Mapping]] = ...) -> None: ...

class DeleteVectorStoreRequest(_message.Message):
    __slots__ = ("vector_store_id",)
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    def __init__(self, vector_store_id: _Optional[str] = ...) -> None: ...

class DeleteVectorStoreResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AddFilesRequest(_message.Message):
    __slots__ = ("vector_store_id", "files")
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    files: _containers.RepeatedCompositeFieldContainer[NewVectorStoreFile]
    def __init__(self, vector_store_id: _Optional[str] = ..., files: _Optional[_Iterable[_Union[NewVectorStoreFile, _Mapping]]] = ...) -> None: ...

class AddFilesResponse(_message.Message):
    __slots__ = ("batch", "files")
    BATCH_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    batch: FileBatch
    files: _containers.RepeatedCompositeFieldContainer[VectorStoreFile]
    def __init__(self, batch: _Optional[_Union[FileBatch, _Mapping]] = ..., files: _Optional[_Iterable[_Union[VectorStoreFile, _Mapping]]] = ...) -> None: ...

class ListVectorStoreFilesRequest(_message.Message):
    __slots__ = ("vector_store_id", "status", "batch_id", "page_size", "page_token")
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    status: VectorStoreFileStatus
    batch_id: str
    page_size: int
    page_token: str
    def __init__(self, vector_store_id: _Optional[str] = ..., status: _Optional[_Union[VectorStoreFileStatus, str]] = ..., batch_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListVectorStoreFilesResponse(_message.Message):
    __slots__ = ("files", "next_page_token")
    FILES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[VectorStoreFile]
    next_page_token: str
    def __init__(self, files: _Optional[_Iterable[_Union[VectorStoreFile, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetVectorStoreFileRequest(_message.Message):
    __slots__ = ("vector_store_id", "file_id")
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    file_id: str
    def __init__(self, vector_store_id: _Optional[str] = ..., file_id: _Optional[str] = ...) -> None: ...

class GetVectorStoreFileResponse(_message.Message):
    __slots__ = ("file",)
    FILE_FIELD_NUMBER: _ClassVar[int]
    file: VectorStoreFile
    def __init__(self, file: _Optional[_Union[VectorStoreFile, _Mapping]] = ...) -> None: ...

class UpdateVectorStoreFileRequest(_message.Message):
    __slots__ = ("vector_store_id", "file_id", "attributes")
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    file_id: str
    attributes: _struct_pb2.Struct
    def __init__(self, vector_store_id: _Optional[str] = ..., file_id: _Optional[str] = ..., attributes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class UpdateVectorStoreFileResponse(_message.Message):
    __slots__ = ("file",)
    FILE_FIELD_NUMBER: _ClassVar[int]
    file: VectorStoreFile
    def __init__(self, file: _Optional[_Union[VectorStoreFile, _Mapping]] = ...) -> None: ...

class RemoveFileRequest(_message.Message):
    __slots__ = ("vector_store_id", "file_id")
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    file_id: str
    def __init__(self, vector_store_id: _Optional[str] = ..., file_id: _Optional[str] = ...) -> None: ...

class RemoveFileResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetFileBatchRequest(_message.Message):
    __slots__ = ("vector_store_id", "batch_id")
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    batch_id: str
    def __init__(self, vector_store_id: _Optional[str] = ..., batch_id: _Optional[str] = ...) -> None: ...

class GetFileBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: FileBatch
    def __init__(self, batch: _Optional[_Union[FileBatch, _Mapping]] = ...) -> None: ...

class CancelFileBatchRequest(_message.Message):
    __slots__ = ("vector_store_id", "batch_id")
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    vector_store_id: str
    batch_id: str
    def __init__(self, vector_store_id: _Optional[str] = ..., batch_id: _Optional[str] = ...) -> None: ...

class CancelFileBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: FileBatch
    def __init__(self, batch: _Optional[_Union[FileBatch, _Mapping]] = ...) -> None: ...

class AttributeFilter(_message.Message):
    __slots__ = ("comparison", "compound")
    class ComparisonOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        COMPARISON_OP_UNSPECIFIED: _ClassVar[AttributeFilter.ComparisonOp]
        COMPARISON_OP_EQ: _ClassVar[AttributeFilter.ComparisonOp]
        COMPARISON_OP_NE: _ClassVar[AttributeFilter.ComparisonOp]
        COMPARISON_OP_GT: _ClassVar[AttributeFilter.ComparisonOp]
        COMPARISON_OP_GTE: _ClassVar[AttributeFilter.ComparisonOp]
        COMPARISON_OP_LT: _ClassVar[AttributeFilter.ComparisonOp]
        COMPARISON_OP_LTE: _ClassVar[AttributeFilter.ComparisonOp]
    COMPARISON_OP_UNSPECIFIED: AttributeFilter.ComparisonOp
    COMPARISON_OP_EQ: AttributeFilter.ComparisonOp
    COMPARISON_OP_NE: AttributeFilter.ComparisonOp
    COMPARISON_OP_GT: AttributeFilter.ComparisonOp
    COMPARISON_OP_GTE: AttributeFilter.ComparisonOp
    COMPARISON_OP_LT: AttributeFilter.ComparisonOp
    COMPARISON_OP_LTE: AttributeFilter.ComparisonOp
    class CompoundOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        COMPOUND_OP_UNSPECIFIED: _ClassVar[AttributeFilter.CompoundOp]
        COMPOUND_OP_AND: _ClassVar[AttributeFilter.CompoundOp]
        COMPOUND_OP_OR: _ClassVar[AttributeFilter.CompoundOp]
    COMPOUND_OP_UNSPECIFIED: AttributeFilter.CompoundOp
    COMPOUND_OP_AND: AttributeFilter.CompoundOp
    COMPOUND_OP_OR: AttributeFilter.CompoundOp
    class Comparison(_message.Message):
        __slots__ = ("op", "key", "value")
        OP_FIELD_NUMBER: _ClassVar[int]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        op: AttributeFilter.ComparisonOp
        key: str
        value: _struct_pb2.Value
        def __init__(self, op: _Optional[_Union[AttributeFilter.ComparisonOp, str]] = ..., key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    class CompoundFilter(_message.Message):
        __slots__ = ("op", "filters")
        OP_FIELD_NUMBER: _ClassVar[int]
        FILTERS_FIELD_NUMBER: _ClassVar[int]
        op: AttributeFilter.CompoundOp
        filters: _containers.RepeatedCompositeFieldContainer[AttributeFilter]
        def __init__(self, op: _Optional[_Union[AttributeFilter.CompoundOp, str]] = ..., filters: _Optional[_Iterable[_Union[AttributeFilter, _Mapping]]] = ...) -> None: ...
    COMPARISON_FIELD_NUMBER: _ClassVar[int]
    COMPOUND_FIELD_NUMBER: _ClassVar[int]
    comparison: AttributeFilter.Comparison
    compound: AttributeFilter.CompoundFilter
    def __init__(self, comparison: _Optional[_Union[AttributeFilter.Comparison, _Mapping]] = ..., compound: _Optional[_Union[AttributeFilter.CompoundFilter, _Mapping]] = ...) -> None: ...

class SearchVectorStoresRequest(_message.Message):
    __slots__ = ("vector_store_ids", "query", "max_num_results", "filter", "score_threshold", "embedding_weight", "text_weight")
    VECTOR_STORE_IDS_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    MAX_NUM_RESULTS_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    SCORE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    TEXT_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    vector_store_ids: _containers.RepeatedScalarFieldContainer[str]
    query: str
    max_num_results: int
    filter: AttributeFilter
    score_threshold: float
    embedding_weight: float
    text_weight: float
    def __init__(self, vector_store_ids: _Optional[_Iterable[str]] = ..., query: _Optional[str] = ..., max_num_results: _Optional[int] = ..., filter: _Optional[_Union[AttributeFilter, _Mapping]] = ..., score_threshold: _Optional[float] = ..., embedding_weight: _Optional[float] = ..., text_weight: _Optional[float] = ...) -> None: ...

class SearchResult(_message.Message):
    __slots__ = ("file_id", "filename", "vector_store_id", "score", "text", "attributes", "chunk_index")
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    VECTOR_STORE_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHUNK_INDEX_FIELD_NUMBER: _ClassVar[int]
    file_id: str
    filename: str
    vector_store_id: str
    score: float
    text: str
    attributes: _struct_pb2.Struct
    chunk_index: int
    def __init__(self, file_id: _Optional[str] = ..., filename: _Optional[str] = ..., vector_store_id: _Optional[str] = ..., score: _Optional[float] = ..., text: _Optional[str] = ..., attributes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., chunk_index: _Optional[int] = ...) -> None: ...

class SearchVectorStoresResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[SearchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[SearchResult, _Mapping]]] = ...) -> None: ...
