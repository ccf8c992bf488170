import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from parley.v1 import auth_pb2 as _auth_pb2
from parley.v1 import batch_pb2 as _batch_pb2
from parley.v1 import billing_pb2 as _billing_pb2
from parley.v1 import common_pb2 as _common_pb2
from parley.v1 import conversation_pb2 as _conversation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkerState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKER_STATE_UNSPECIFIED: _ClassVar[WorkerState]
    WORKER_STATE_READY: _ClassVar[WorkerState]
    WORKER_STATE_EJECTED: _ClassVar[WorkerState]
    WORKER_STATE_CONNECTING: _ClassVar[WorkerState]
    WORKER_STATE_DRAINING: _ClassVar[WorkerState]

class ServedModelState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVED_MODEL_STATE_UNSPECIFIED: _ClassVar[ServedModelState]
    SERVED_MODEL_STATE_AVAILABLE: _ClassVar[ServedModelState]
    SERVED_MODEL_STATE_UNAVAILABLE: _ClassVar[ServedModelState]
    SERVED_MODEL_STATE_REFUSED: _ClassVar[ServedModelState]
WORKER_STATE_UNSPECIFIED: WorkerState
WORKER_STATE_READY: WorkerState
WORKER_STATE_EJECTED: WorkerState
WORKER_STATE_CONNECTING: WorkerState
WORKER_STATE_DRAINING: WorkerState
SERVED_MODEL_STATE_UNSPECIFIED: ServedModelState
SERVED_MODEL_STATE_AVAILABLE: ServedModelState
SERVED_MODEL_STATE_UNAVAILABLE: ServedModelState
SERVED_MODEL_STATE_REFUSED: ServedModelState

class ListOpenBatchesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListOpenBatchesResponse(_message.Message):
    __slots__ = ("batches", "owner_emails")
    class OwnerEmailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    OWNER_EMAILS_FIELD_NUMBER: _ClassVar[int]
    batches: _containers.RepeatedCompositeFieldContainer[_batch_pb2.Batch]
    owner_emails: _containers.ScalarMap[str, str]
    def __init__(self, batches: _Optional[_Iterable[_Union[_batch_pb2.Batch, _Mapping]]] = ..., owner_emails: _Optional[_Mapping[str, str]] = ...) -> None: ...

class AdminServiceCancelBatchRequest(_message.Message):
    __slots__ = ("batch_id",)
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class AdminServiceCancelBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: _batch_pb2.Batch
    def __init__(self, batch: _Optional[_Union[_batch_pb2.Batch, _Mapping]] = ...) -> None: ...

class Worker(_message.Message):
    __slots__ = ("address", "models", "state", "load", "ejected_until", "consecutive_failures", "worker_id", "pool", "admission_limit")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LOAD_FIELD_NUMBER: _ClassVar[int]
    EJECTED_UNTIL_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    ADMISSION_LIMIT_FIELD_NUMBER: _ClassVar[int]
    address: str
    models: _containers.RepeatedScalarFieldContainer[str]
    state: WorkerState
    load: WorkerLoad
    ejected_until: _timestamp_pb2.Timestamp
    consecutive_failures: int
    worker_id: str
    pool: str
    admission_limit: int
    def __init__(self, address: _Optional[str] = ..., models: _Optional[_Iterable[str]] = ..., state: _Optional[_Union[WorkerState, str]] = ..., load: _Optional[_Union[WorkerLoad, _Mapping]] = ..., ejected_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., consecutive_failures: _Optional[int] = ..., worker_id: _Optional[str] = ..., pool: _Optional[str] = ..., admission_limit: _Optional[int] = ...) -> None: ...

class WorkerLoad(_message.Message):
    __slots__ = ("running", "waiting", "max_batch", "kv_used_tokens", "kv_capacity_tokens")
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_FIELD_NUMBER: _ClassVar[int]
    KV_USED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    KV_CAPACITY_TOKENS_FIELD_NUMBER: _ClassVar[int]
    running: int
    waiting: int
    max_batch: int
    kv_used_tokens: int
    kv_capacity_tokens: int
    def __init__(self, running: _Optional[int] = ..., waiting: _Optional[int] = ..., max_batch: _Optional[int] = ..., kv_used_tokens: _Optional[int] = ..., kv_capacity_tokens: _Optional[int] = ...) -> None: ...

class SetUserTierRequest(_message.Message):
    __slots__ = ("user_id", "email", "tier")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    email: str
    tier: _common_pb2.Tier
    def __init__(self, user_id: _Optional[str] = ..., email: _Optional[str] = ..., tier: _Optional[_Union[_common_pb2.Tier, str]] = ...) -> None: ...

class SetUserTierResponse(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: _auth_pb2.User
    def __init__(self, user: _Optional[_Union[_auth_pb2.User, _Mapping]] = ...) -> None: ...

class AdjustBalanceRequest(_message.Message):
    __slots__ = ("user_id", "email", "delta_nanos", "reason")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    DELTA_NANOS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    email: str
    delta_nanos: int
    reason: str
    def __init__(self, user_id: _Optional[str] = ..., email: _Optional[str] = ..., delta_nanos: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class AdjustBalanceResponse(_message.Message):
    __slots__ = ("balance_nanos",)
    BALANCE_NANOS_FIELD_NUMBER: _ClassVar[int]
    balance_nanos: int
    def __init__(self, balance_nanos: _Optional[int] = ...) -> None: ...

class ListWorkersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListWorkersResponse(_message.Message):
    __slots__ = ("workers",)
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    workers: _containers.RepeatedCompositeFieldContainer[Worker]
    def __init__(self, workers: _Optional[_Iterable[_Union[Worker, _Mapping]]] = ...) -> None: ...

class ListServedModelsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListServedModelsResponse(_message.Message):
    __slots__ = ("models",)
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ServedModel]
    def __init__(self, models: _Optional[_Iterable[_Union[ServedModel, _Mapping]]] = ...) -> None: ...

class ServedModel(_message.Message):
    __slots__ = ("id", "state", "default_price", "workers")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_PRICE_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    id: str
    state: ServedModelState
    default_price: bool
    workers: _containers.RepeatedCompositeFieldContainer[ServedModelWorker]
    def __init__(self, id: _Optional[str] = ..., state: _Optional[_Union[ServedModelState, str]] = ..., default_price: _Optional[bool] = ..., workers: _Optional[_Iterable[_Union[ServedModelWorker, _Mapping]]] = ...) -> None: ...

class ServedModelWorker(_message.Message):
    __slots__ = ("address", "pool", "state")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    address: str
    pool: str
    state: WorkerState
    def __init__(self, address: _Optional[str] = ..., pool: _Optional[str] = ..., state: _Optional[_Union[WorkerState, str]] = ...) -> None: ...

class AdminServiceListUsageRequest(_message.Message):
    __slots__ = ("user_id", "end_user", "page_size", "page_token")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    END_USER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    end_user: str
    page_size: int
    page_token: str
    def __init__(self, user_id: _Optional[str] = ..., end_user: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class AdminServiceListUsageResponse(_message.Message):
    __slots__ = ("usage_records", "next_page_token", "user_emails")
    class UserEmailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    USAGE_RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    USER_EMAILS_FIELD_NUMBER: _ClassVar[int]
    usage_records: _containers.RepeatedCompositeFieldContainer[_billing_pb2.UsageRecord]
    next_page_token: str
    user_emails: _containers.ScalarMap[str, str]
    def __init__(self, usage_records: _Optional[_Iterable[_Union[_billing_pb2.UsageRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., user_emails: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SearchUsersRequest(_message.Message):
    __slots__ = ("email_prefix", "page_size", "page_token")
    EMAIL_PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    email_prefix: str
    page_size: int
    page_token: str
    def __init__(self, email_prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class SearchUsersResponse(_message.Message):
    __slots__ = ("users", "next_page_token")
    USERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[AdminUser]
    next_page_token: str
    def __init__(self, users: _Optional[_Iterable[_Union[AdminUser, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class AdminUser(_message.Message):
    __slots__ = ("user", "balance_nanos", "reserved_nanos")
    USER_FIELD_NUMBER: _ClassVar[int]
    BALANCE_NANOS_FIELD_NUMBER: _ClassVar[int]
    RESERVED_NANOS_FIELD_NUMBER: _ClassVar[int]
    user: _auth_pb2.User
    balance_nanos: int
    reserved_nanos: int
    def __init__(self, user: _Optional[_Union[_auth_pb2.User, _Mapping]] = ..., balance_nanos: _Optional[int] = ..., reserved_nanos: _Optional[int] = ...) -> None: ...

class SetUserAdminRequest(_message.Message):
    __slots__ = ("user_id", "email", "admin")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    email: str
    admin: bool
    def __init__(self, user_id: _Optional[str] = ..., email: _Optional[str] = ..., admin: _Optional[bool] = ...) -> None: ...

class SetUserAdminResponse(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: _auth_pb2.User
    def __init__(self, user: _Optional[_Union[_auth_pb2.User, _Mapping]] = ...) -> None: ...

class ListAuditEventsRequest(_message.Message):
    __slots__ = ("user_id", "page_size", "page_token")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    page_size: int
    page_token: str
    def __init__(self, user_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListAuditEventsResponse(_message.Message):
    __slots__ = ("events", "next_page_token")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[AuditEvent]
    next_page_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[AuditEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class AuditEvent(_message.Message):
    __slots__ = ("event_id", "user_id", "kind", "ip", "user_agent", "detail", "at")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    IP_FIELD_NUMBER: _ClassVar[int]
    USER_AGENT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    user_id: str
    kind: str
    ip: str
    user_agent: str
    detail: str
    at: _timestamp_pb2.Timestamp
    def __init__(self, event_id: _Optional[str] = ..., user_id: _Optional[str] = ..., kind: _Optional[str] = ..., ip: _Optional[str] = ..., user_agent: _Optional[str] = ..., detail: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Invitation(_message.Message):
    __slots__ = ("invitation_id", "prefix", "note", "created_by", "created_at", "expires_at", "max_uses", "uses", "last_used_at", "revoked_at")
    INVITATION_ID_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    MAX_USES_FIELD_NUMBER: _ClassVar[int]
    USES_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    invitation_id: str
    prefix: str
    note: str
    created_by: str
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    max_uses: int
    uses: int
    last_used_at: _timestamp_pb2.Timestamp
    revoked_at: _timestamp_pb2.Timestamp
    def __init__(self, invitation_id: _Optional[str] = ..., prefix: _Optional[str] = ..., note: _Optional[str] = ..., created_by: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., max_uses: _Optional[int] = ..., uses: _Optional[int] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateInvitationRequest(_message.Message):
    __slots__ = ("max_uses", "ttl", "note")
    MAX_USES_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    max_uses: int
    ttl: _duration_pb2.Duration
    note: str
    def __init__(self, max_uses: _Optional[int] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., note: _Optional[str] = ...) -> None: ...

class CreateInvitationResponse(_message.Message):
    __slots__ = ("invitation", "code")
    INVITATION_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    invitation: Invitation
    code: str
    def __init__(self, invitation: _Optional[_Union[Invitation, _Mapping]] = ..., code: _Optional[str] = ...) -> None: ...

class ListInvitationsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListInvitationsResponse(_message.Message):
    __slots__ = ("invitations", "next_page_token")
    INVITATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    invitations: _containers.RepeatedCompositeFieldContainer[Invitation]
    next_page_token: str
    def __init__(self, invitations: _Optional[_Iterable[_Union[Invitation, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RevokeInvitationRequest(_message.Message):
    __slots__ = ("invitation_id",)
    INVITATION_ID_FIELD_NUMBER: _ClassVar[int]
    invitation_id: str
    def __init__(self, invitation_id: _Optional[str] = ...) -> None: ...

class RevokeInvitationResponse(_message.Message):
    __slots__ = ("invitation",)
    INVITATION_FIELD_NUMBER: _ClassVar[int]
    invitation: Invitation
    def __init__(self, invitation: _Optional[_Union[Invitation, _Mapping]] = ...) -> None: ...

class GetFeedbackSummaryRequest(_message.Message):
    __slots__ = ("start_time", "end_time")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    def __init__(self, start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ModelFeedback(_message.Message):
    __slots__ = ("model", "good", "bad")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    GOOD_FIELD_NUMBER: _ClassVar[int]
    BAD_FIELD_NUMBER: _ClassVar[int]
    model: str
    good: int
    bad: int
    def __init__(self, model: _Optional[str] = ..., good: _Optional[int] = ..., bad: _Optional[int] = ...) -> None: ...

class FeedbackNote(_message.Message):
    __slots__ = ("model", "rating", "note", "update_time")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    model: str
    rating: _conversation_pb2.Rating
    note: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, model: _Optional[str] = ..., rating: _Optional[_Union[_conversation_pb2.Rating, str]] = ..., note: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetFeedbackSummaryResponse(_message.Message):
    __slots__ = ("models", "notes")
    MODELS_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ModelFeedback]
    notes: _containers.RepeatedCompositeFieldContainer[FeedbackNote]
    def __init__(self, models: _Optional[_Iterable[_Union[ModelFeedback, _Mapping]]] = ..., notes: _Optional[_Iterable[_Union[FeedbackNote, _Mapping]]] = ...) -> None: ...
