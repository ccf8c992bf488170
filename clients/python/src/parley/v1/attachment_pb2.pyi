import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AttachmentStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ATTACHMENT_STATUS_UNSPECIFIED: _ClassVar[AttachmentStatus]
    ATTACHMENT_STATUS_UPLOADING: _ClassVar[AttachmentStatus]
    ATTACHMENT_STATUS_READY: _ClassVar[AttachmentStatus]
    ATTACHMENT_STATUS_FAILED: _ClassVar[AttachmentStatus]
ATTACHMENT_STATUS_UNSPECIFIED: AttachmentStatus
ATTACHMENT_STATUS_UPLOADING: AttachmentStatus
ATTACHMENT_STATUS_READY: AttachmentStatus
ATTACHMENT_STATUS_FAILED: AttachmentStatus

class Attachment(_message.Message):
    __slots__ = ("attachment_id", "filename", "mime_type", "size_bytes", "sha256", "status", "failure_reason", "width", "height", "created_at")
    ATTACHMENT_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_REASON_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    attachment_id: str
    filename: str
    mime_type: str
    size_bytes: int
    sha256: str
    status: AttachmentStatus
    failure_reason: str
    width: int
    height: int
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, attachment_id: _Optional[str] = ..., filename: _Optional[str] = ..., mime_type: _Optional[str] = ..., size_bytes: _Optional[int] = ..., sha256: _Optional[str] = ..., status: _Optional[_Union[AttachmentStatus, str]] = ..., failure_reason: _Optional[str] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateUploadRequest(_message.Message):
    __slots__ = ("filename", "mime_type", "size_bytes", "sha256")
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    filename: str
    mime_type: str
    size_bytes: int
    sha256: str
    def __init__(self, filename: _Optional[str] = ..., mime_type: _Optional[str] = ..., size_bytes: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class CreateUploadResponse(_message.Message):
    __slots__ = ("attachment_id", "upload_url", "method", "headers", "expires_at")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTACHMENT_ID_FIELD_NUMBER: _ClassVar[int]
    UPLOAD_URL_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    attachment_id: str
    upload_url: str
    method: str
    headers: _containers.ScalarMap[str, str]
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, attachment_id: _Optional[str] = ..., upload_url: _Optional[str] = ..., method: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CompleteUploadRequest(_message.Message):
    __slots__ = ("attachment_id",)
    ATTACHMENT_ID_FIELD_NUMBER: _ClassVar[int]
    attachment_id: str
    def __init__(self, attachment_id: _Optional[str] = ...) -> None: ...

class CompleteUploadResponse(_message.Message):
    __slots__ = ("attachment",)
    ATTACHMENT_FIELD_NUMBER: _ClassVar[int]
    attachment: Attachment
    def __init__(self, attachment: _Optional[_Union[Attachment, _Mapping]] = ...) -> None: ...

class GetAttachmentRequest(_message.Message):
    __slots__ = ("attachment_id",)
    ATTACHMENT_ID_FIELD_NUMBER: _ClassVar[int]
    attachment_id: str
    def __init__(self, attachment_id: _Optional[str] = ...) -> None: ...

class GetAttachmentResponse(_message.Message):
    __slots__ = ("attachment", "download_url", "download_expires_at")
    ATTACHMENT_FIELD_NUMBER: _ClassVar[int]
    DOWNLOAD_URL_FIELD_NUMBER: _ClassVar[int]
    DOWNLOAD_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    attachment: Attachment
    download_url: str
    download_expires_at: _timestamp_pb2.Timestamp
    def __init__(self, attachment: _Optional[_Union[Attachment, _Mapping]] = ..., download_url: _Optional[str] = ..., download_expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DeleteAttachmentRequest(_message.Message):
    __slots__ = ("attachment_id",)
    ATTACHMENT_ID_FIELD_NUMBER: _ClassVar[int]
    attachment_id: str
    def __init__(self, attachment_id: _Optional[str] = ...) -> None: ...

class DeleteAttachmentResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
