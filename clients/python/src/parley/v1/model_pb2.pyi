import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from parley.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Modality(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODALITY_UNSPECIFIED: _ClassVar[Modality]
    MODALITY_TEXT: _ClassVar[Modality]
    MODALITY_IMAGE: _ClassVar[Modality]
    MODALITY_DOCUMENT: _ClassVar[Modality]

class ModelKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODEL_KIND_UNSPECIFIED: _ClassVar[ModelKind]
    MODEL_KIND_CHAT: _ClassVar[ModelKind]
    MODEL_KIND_EMBEDDING: _ClassVar[ModelKind]

class Capability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CAPABILITY_UNSPECIFIED: _ClassVar[Capability]
    CAPABILITY_TOOLS: _ClassVar[Capability]
    CAPABILITY_STRUCTURED_OUTPUT: _ClassVar[Capability]
    CAPABILITY_REASONING: _ClassVar[Capability]
MODALITY_UNSPECIFIED: Modality
MODALITY_TEXT: Modality
MODALITY_IMAGE: Modality
MODALITY_DOCUMENT: Modality
MODEL_KIND_UNSPECIFIED: ModelKind
MODEL_KIND_CHAT: ModelKind
MODEL_KIND_EMBEDDING: ModelKind
CAPABILITY_UNSPECIFIED: Capability
CAPABILITY_TOOLS: Capability
CAPABILITY_STRUCTURED_OUTPUT: Capability
CAPABILITY_REASONING: Capability

class Model(_message.Message):
    __slots__ = ("id", "display_name", "description", "context_window", "max_output_tokens", "input_price_nanos_per_million", "output_price_nanos_per_million", "modalities", "simulated", "tier_limits", "kind", "embedding_dimensions", "capabilities", "batch_input_price_nanos_per_million", "batch_output_price_nanos_per_million")
    ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    INPUT_PRICE_NANOS_PER_MILLION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PRICE_NANOS_PER_MILLION_FIELD_NUMBER: _ClassVar[int]
    MODALITIES_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_FIELD_NUMBER: _ClassVar[int]
    TIER_LIMITS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    BATCH_INPUT_PRICE_NANOS_PER_MILLION_FIELD_NUMBER: _ClassVar[int]
    BATCH_OUTPUT_PRICE_NANOS_PER_MILLION_FIELD_NUMBER: _ClassVar[int]
    id: str
    display_name: str
    description: str
    context_window: int
    max_output_tokens: int
    input_price_nanos_per_million: int
    output_price_nanos_per_million: int
    modalities: _containers.RepeatedScalarFieldContainer[Modality]
    simulated: bool
    tier_limits: _containers.RepeatedCompositeFieldContainer[TierLimit]
    kind: ModelKind
    embedding_dimensions: int
    capabilities: _containers.RepeatedScalarFieldContainer[Capability]
    batch_input_price_nanos_per_million: int
    batch_output_price_nanos_per_million: int
    def __init__(self, id: _Optional[str] = ..., display_name: _Optional[str] = ..., description: _Optional[str] = ..., context_window: _Optional[int] = ..., max_output_tokens: _Optional[int] = ..., input_price_nanos_per_million: _Optional[int] = ..., output_price_nanos_per_million: _Optional[int] = ..., modalities: _Optional[_Iterable[_Union[Modality, str]]] = ..., simulated: _Optional[bool] = ..., tier_limits: _Optional[_Iterable[_Union[TierLimit, _Mapping]]] = ..., kind: _Optional[_Union[ModelKind, str]] = ..., embedding_dimensions: _Optional[int] = ..., capabilities: _Optional[_Iterable[_Union[Capability, str]]] = ..., batch_input_price_nanos_per_million: _Optional[int] = ..., batch_output_price_nanos_per_million: _Optional[int] = ...) -> None: ...

class TierLimit(_message.Message):
    __slots__ = ("tier", "requests_per_window", "input_tokens_per_window", "output_tokens_per_window", "window")
    TIER_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_WINDOW_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_PER_WINDOW_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_PER_WINDOW_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    tier: _common_pb2.Tier
    requests_per_window: int
    input_tokens_per_window: int
    output_tokens_per_window: int
    window: _duration_pb2.Duration
    def __init__(self, tier: _Optional[_Union[_common_pb2.Tier, str]] = ..., requests_per_window: _Optional[int] = ..., input_tokens_per_window: _Optional[int] = ..., output_tokens_per_window: _Optional[int] = ..., window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ListModelsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListModelsResponse(_message.Message):
    __slots__ = ("models",)
    MODELS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[Model]
    def __init__(self, models: _Optional[_Iterable[_Union[Model, _Mapping]]] = ...) -> None: ...
