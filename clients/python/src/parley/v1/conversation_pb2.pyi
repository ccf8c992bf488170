import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from parley.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Rating(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RATING_UNSPECIFIED: _ClassVar[Rating]
    RATING_GOOD: _ClassVar[Rating]
    RATING_BAD: _ClassVar[Rating]

class ArchivedFilter(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ARCHIVED_FILTER_UNSPECIFIED: _ClassVar[ArchivedFilter]
    ARCHIVED_FILTER_ACTIVE: _ClassVar[ArchivedFilter]
    ARCHIVED_FILTER_ARCHIVED: _ClassVar[ArchivedFilter]
    ARCHIVED_FILTER_ALL: _ClassVar[ArchivedFilter]

class MessageStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MESSAGE_STATUS_UNSPECIFIED: _ClassVar[MessageStatus]
    MESSAGE_STATUS_COMPLETE: _ClassVar[MessageStatus]
    MESSAGE_STATUS_IN_PROGRESS: _ClassVar[MessageStatus]
    MESSAGE_STATUS_INTERRUPTED: _ClassVar[MessageStatus]

class ExportFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXPORT_FORMAT_UNSPECIFIED: _ClassVar[ExportFormat]
    EXPORT_FORMAT_MARKDOWN: _ClassVar[ExportFormat]
    EXPORT_FORMAT_JSON: _ClassVar[ExportFormat]
RATING_UNSPECIFIED: Rating
RATING_GOOD: Rating
RATING_BAD: Rating
ARCHIVED_FILTER_UNSPECIFIED: ArchivedFilter
ARCHIVED_FILTER_ACTIVE: ArchivedFilter
ARCHIVED_FILTER_ARCHIVED: ArchivedFilter
ARCHIVED_FILTER_ALL: ArchivedFilter
MESSAGE_STATUS_UNSPECIFIED: MessageStatus
MESSAGE_STATUS_COMPLETE: MessageStatus
MESSAGE_STATUS_IN_PROGRESS: MessageStatus
MESSAGE_STATUS_INTERRUPTED: MessageStatus
EXPORT_FORMAT_UNSPECIFIED: ExportFormat
EXPORT_FORMAT_MARKDOWN: ExportFormat
EXPORT_FORMAT_JSON: ExportFormat

class SavedPrompt(_message.Message):
    __slots__ = ("prompt_id", "name", "text", "update_time")
    PROMPT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    prompt_id: str
    name: str
    text: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, prompt_id: _Optional[str] = ..., name: _Optional[str] = ..., text: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListSavedPromptsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSavedPromptsResponse(_message.Message):
    __slots__ = ("prompts",)
    PROMPTS_FIELD_NUMBER: _ClassVar[int]
    prompts: _containers.RepeatedCompositeFieldContainer[SavedPrompt]
    def __init__(self, prompts: _Optional[_Iterable[_Union[SavedPrompt, _Mapping]]] = ...) -> None: ...

class SavePromptRequest(_message.Message):
    __slots__ = ("prompt_id", "name", "text")
    PROMPT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    prompt_id: str
    name: str
    text: str
    def __init__(self, prompt_id: _Optional[str] = ..., name: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class SavePromptResponse(_message.Message):
    __slots__ = ("prompt",)
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    prompt: SavedPrompt
    def __init__(self, prompt: _Optional[_Union[SavedPrompt, _Mapping]] = ...) -> None: ...

class DeleteSavedPromptRequest(_message.Message):
    __slots__ = ("prompt_id",)
    PROMPT_ID_FIELD_NUMBER: _ClassVar[int]
    prompt_id: str
    def __init__(self, prompt_id: _Optional[str] = ...) -> None: ...

class DeleteSavedPromptResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MessageFeedback(_message.Message):
    __slots__ = ("rating", "note", "update_time")
    RATING_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    rating: Rating
    note: str
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, rating: _Optional[_Union[Rating, str]] = ..., note: _Optional[str] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RateMessageRequest(_message.Message):
    __slots__ = ("conversation_id", "message_id", "rating", "note")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    message_id: str
    rating: Rating
    note: str
    def __init__(self, conversation_id: _Optional[str] = ..., message_id: _Optional[str] = ..., rating: _Optional[_Union[Rating, str]] = ..., note: _Optional[str] = ...) -> None: ...

class RateMessageResponse(_message.Message):
    __slots__ = ("feedback",)
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    feedback: MessageFeedback
    def __init__(self, feedback: _Optional[_Union[MessageFeedback, _Mapping]] = ...) -> None: ...

class Conversation(_message.Message):
    __slots__ = ("conversation_id", "title", "model", "archived", "created_at", "updated_at", "generating", "system_prompt", "current_message_id", "project_id", "title_generated", "pinned", "folder")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    GENERATING_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_GENERATED_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    FOLDER_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    title: str
    model: str
    archived: bool
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    generating: bool
    system_prompt: str
    current_message_id: str
    project_id: str
    title_generated: bool
    pinned: bool
    folder: str
    def __init__(self, conversation_id: _Optional[str] = ..., title: _Optional[str] = ..., model: _Optional[str] = ..., archived: _Optional[bool] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., generating: _Optional[bool] = ..., system_prompt: _Optional[str] = ..., current_message_id: _Optional[str] = ..., project_id: _Optional[str] = ..., title_generated: _Optional[bool] = ..., pinned: _Optional[bool] = ..., folder: _Optional[str] = ...) -> None: ...

class ConversationMessage(_message.Message):
    __slots__ = ("message_id", "conversation_id", "role", "parts", "model", "tokens", "finish_reason", "created_at", "parent_message_id", "sibling_index", "sibling_count", "sibling_message_ids", "status", "feedback")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    PARENT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SIBLING_INDEX_FIELD_NUMBER: _ClassVar[int]
    SIBLING_COUNT_FIELD_NUMBER: _ClassVar[int]
    SIBLING_MESSAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    conversation_id: str
    role: _common_pb2.Role
    parts: _containers.RepeatedCompositeFieldContainer[_common_pb2.Part]
    model: str
    tokens: int
    finish_reason: _common_pb2.FinishReason
    created_at: _timestamp_pb2.Timestamp
    parent_message_id: str
    sibling_index: int
    sibling_count: int
    sibling_message_ids: _containers.RepeatedScalarFieldContainer[str]
    status: MessageStatus
    feedback: MessageFeedback
    def __init__(self, message_id: _Optional[str] = ..., conversation_id: _Optional[str] = ..., role: _Optional[_Union[_common_pb2.Role, str]] = ..., parts: _Optional[_Iterable[_Union[_common_pb2.Part, _Mapping]]] = ..., model: _Optional[str] = ..., tokens: _Optional[int] = ..., finish_reason: _Optional[_Union[_common_pb2.FinishReason, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., parent_message_id: _Optional[str] = ..., sibling_index: _Optional[int] = ..., sibling_count: _Optional[int] = ..., sibling_message_ids: _Optional[_Iterable[str]] = ..., status: _Optional[_Union[MessageStatus, str]] = ..., feedback: _Optional[_Union[MessageFeedback, _Mapping]] = ...) -> None: ...

class CreateConversationRequest(_message.Message):
    __slots__ = ("title", "model", "system_prompt", "project_id")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    title: str
    model: str
    system_prompt: str
    project_id: str
    def __init__(self, title: _Optional[str] = ..., model: _Optional[str] = ..., system_prompt: _Optional[str] = ..., project_id: _Optional[str] = ...) -> None: ...

class CreateConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class ListConversationsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "archived", "project_id")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    archived: ArchivedFilter
    project_id: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., archived: _Optional[_Union[ArchivedFilter, str]] = ..., project_id: _Optional[str] = ...) -> None: ...

class ListConversationsResponse(_message.Message):
    __slots__ = ("conversations", "next_page_token")
    CONVERSATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    conversations: _containers.RepeatedCompositeFieldContainer[Conversation]
    next_page_token: str
    def __init__(self, conversations: _Optional[_Iterable[_Union[Conversation, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetConversationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class GetConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class ListMessagesRequest(_message.Message):
    __slots__ = ("conversation_id", "page_size", "page_token", "leaf_message_id", "make_current")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEAF_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MAKE_CURRENT_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    page_size: int
    page_token: str
    leaf_message_id: str
    make_current: bool
    def __init__(self, conversation_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., leaf_message_id: _Optional[str] = ..., make_current: _Optional[bool] = ...) -> None: ...

class ListMessagesResponse(_message.Message):
    __slots__ = ("messages", "next_page_token", "leaf_message_id")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEAF_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[ConversationMessage]
    next_page_token: str
    leaf_message_id: str
    def __init__(self, messages: _Optional[_Iterable[_Union[ConversationMessage, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., leaf_message_id: _Optional[str] = ...) -> None: ...

class UpdateConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "title", "archived", "system_prompt", "pinned", "folder")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    FOLDER_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    title: str
    archived: bool
    system_prompt: str
    pinned: bool
    folder: str
    def __init__(self, conversation_id: _Optional[str] = ..., title: _Optional[str] = ..., archived: _Optional[bool] = ..., system_prompt: _Optional[str] = ..., pinned: _Optional[bool] = ..., folder: _Optional[str] = ...) -> None: ...

class UpdateConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ...) -> None: ...

class DeleteConversationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class DeleteConversationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SendMessageRequest(_message.Message):
    __slots__ = ("conversation_id", "model", "parts", "max_output_tokens", "parent_message_id", "project_id", "temperature")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PARENT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_ID_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    model: str
    parts: _containers.RepeatedCompositeFieldContainer[_common_pb2.Part]
    max_output_tokens: int
    parent_message_id: str
    project_id: str
    temperature: float
    def __init__(self, conversation_id: _Optional[str] = ..., model: _Optional[str] = ..., parts: _Optional[_Iterable[_Union[_common_pb2.Part, _Mapping]]] = ..., max_output_tokens: _Optional[int] = ..., parent_message_id: _Optional[str] = ..., project_id: _Optional[str] = ..., temperature: _Optional[float] = ...) -> None: ...

class SendMessageResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _common_pb2.GenerationEvent
    def __init__(self, event: _Optional[_Union[_common_pb2.GenerationEvent, _Mapping]] = ...) -> None: ...

class StreamGenerationRequest(_message.Message):
    __slots__ = ("conversation_id", "after_seq")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    after_seq: int
    def __init__(self, conversation_id: _Optional[str] = ..., after_seq: _Optional[int] = ...) -> None: ...

class StreamGenerationResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _common_pb2.GenerationEvent
    def __init__(self, event: _Optional[_Union[_common_pb2.GenerationEvent, _Mapping]] = ...) -> None: ...

class CancelGenerationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class CancelGenerationResponse(_message.Message):
    __slots__ = ("cancelled",)
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    cancelled: bool
    def __init__(self, cancelled: _Optional[bool] = ...) -> None: ...

class SearchConversationsRequest(_message.Message):
    __slots__ = ("query", "page_size", "page_token")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    query: str
    page_size: int
    page_token: str
    def __init__(self, query: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class SearchConversationsResponse(_message.Message):
    __slots__ = ("results", "next_page_token")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ConversationSearchResult]
    next_page_token: str
    def __init__(self, results: _Optional[_Iterable[_Union[ConversationSearchResult, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ConversationSearchResult(_message.Message):
    __slots__ = ("conversation", "message_id", "snippet", "highlights")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    HIGHLIGHTS_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    message_id: str
    snippet: str
    highlights: _containers.RepeatedCompositeFieldContainer[TextRange]
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., message_id: _Optional[str] = ..., snippet: _Optional[str] = ..., highlights: _Optional[_Iterable[_Union[TextRange, _Mapping]]] = ...) -> None: ...

class TextRange(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class ShareConversationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class ShareConversationResponse(_message.Message):
    __slots__ = ("share_id", "path", "shared")
    SHARE_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    share_id: str
    path: str
    shared: SharedConversation
    def __init__(self, share_id: _Optional[str] = ..., path: _Optional[str] = ..., shared: _Optional[_Union[SharedConversation, _Mapping]] = ...) -> None: ...

class UnshareConversationRequest(_message.Message):
    __slots__ = ("conversation_id",)
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    def __init__(self, conversation_id: _Optional[str] = ...) -> None: ...

class UnshareConversationResponse(_message.Message):
    __slots__ = ("unshared",)
    UNSHARED_FIELD_NUMBER: _ClassVar[int]
    unshared: bool
    def __init__(self, unshared: _Optional[bool] = ...) -> None: ...

class GetSharedConversationRequest(_message.Message):
    __slots__ = ("share_id",)
    SHARE_ID_FIELD_NUMBER: _ClassVar[int]
    share_id: str
    def __init__(self, share_id: _Optional[str] = ...) -> None: ...

class GetSharedConversationResponse(_message.Message):
    __slots__ = ("shared",)
    SHARED_FIELD_NUMBER: _ClassVar[int]
    shared: SharedConversation
    def __init__(self, shared: _Optional[_Union[SharedConversation, _Mapping]] = ...) -> None: ...

class SharedConversation(_message.Message):
    __slots__ = ("share_id", "title", "model", "shared_at", "messages")
    SHARE_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SHARED_AT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    share_id: str
    title: str
    model: str
    shared_at: _timestamp_pb2.Timestamp
    messages: _containers.RepeatedCompositeFieldContainer[SharedMessage]
    def __init__(self, share_id: _Optional[str] = ..., title: _Optional[str] = ..., model: _Optional[str] = ..., shared_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[SharedMessage, _Mapping]]] = ...) -> None: ...

class SharedMessage(_message.Message):
    __slots__ = ("role", "text", "model", "created_at", "attachment_filenames")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENT_FILENAMES_FIELD_NUMBER: _ClassVar[int]
    role: _common_pb2.Role
    text: str
    model: str
    created_at: _timestamp_pb2.Timestamp
    attachment_filenames: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, role: _Optional[_Union[_common_pb2.Role, str]] = ..., text: _Optional[str] = ..., model: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attachment_filenames: _Optional[_Iterable[str]] = ...) -> None: ...

class ExportConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "format")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    format: ExportFormat
    def __init__(self, conversation_id: _Optional[str] = ..., format: _Optional[_Union[ExportFormat, str]] = ...) -> None: ...

class ExportConversationResponse(_message.Message):
    __slots__ = ("filename", "content_type", "content")
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    filename: str
    content_type: str
    content: bytes
    def __init__(self, filename: _Optional[str] = ..., content_type: _Optional[str] = ..., content: _Optional[bytes] = ...) -> None: ...

class ConversationExport(_message.Message):
    __slots__ = ("conversation", "messages", "exported_at")
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    EXPORTED_AT_FIELD_NUMBER: _ClassVar[int]
    conversation: Conversation
    messages: _containers.RepeatedCompositeFieldContainer[ConversationMessage]
    exported_at: _timestamp_pb2.Timestamp
    def __init__(self, conversation: _Optional[_Union[Conversation, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[ConversationMessage, _Mapping]]] = ..., exported_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RegenerateMessageRequest(_message.Message):
    __slots__ = ("conversation_id", "message_id", "model", "max_output_tokens", "temperature")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    message_id: str
    model: str
    max_output_tokens: int
    temperature: float
    def __init__(self, conversation_id: _Optional[str] = ..., message_id: _Optional[str] = ..., model: _Optional[str] = ..., max_output_tokens: _Optional[int] = ..., temperature: _Optional[float] = ...) -> None: ...

class ContinueMessageRequest(_message.Message):
    __slots__ = ("conversation_id", "message_id", "max_output_tokens", "temperature")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    message_id: str
    max_output_tokens: int
    temperature: float
    def __init__(self, conversation_id: _Optional[str] = ..., message_id: _Optional[str] = ..., max_output_tokens: _Optional[int] = ..., temperature: _Optional[float] = ...) -> None: ...

class ContinueMessageResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _common_pb2.GenerationEvent
    def __init__(self, event: _Optional[_Union[_common_pb2.GenerationEvent, _Mapping]] = ...) -> None: ...

class RegenerateMessageResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _common_pb2.GenerationEvent
    def __init__(self, event: _Optional[_Union[_common_pb2.GenerationEvent, _Mapping]] = ...) -> None: ...

class GetCustomInstructionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetCustomInstructionsResponse(_message.Message):
    __slots__ = ("instructions",)
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    instructions: str
    def __init__(self, instructions: _Optional[str] = ...) -> None: ...

class SetCustomInstructionsRequest(_message.Message):
    __slots__ = ("instructions",)
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    instructions: str
    def __init__(self, instructions: _Optional[str] = ...) -> None: ...

class SetCustomInstructionsResponse(_message.Message):
    __slots__ = ("instructions",)
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    instructions: str
    def __init__(self, instructions: _Optional[str] = ...) -> None: ...
