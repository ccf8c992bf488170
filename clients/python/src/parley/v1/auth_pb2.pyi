import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from parley.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SignUpPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIGN_UP_POLICY_UNSPECIFIED: _ClassVar[SignUpPolicy]
    SIGN_UP_POLICY_OPEN: _ClassVar[SignUpPolicy]
    SIGN_UP_POLICY_INVITE: _ClassVar[SignUpPolicy]
    SIGN_UP_POLICY_CLOSED: _ClassVar[SignUpPolicy]
SIGN_UP_POLICY_UNSPECIFIED: SignUpPolicy
SIGN_UP_POLICY_OPEN: SignUpPolicy
SIGN_UP_POLICY_INVITE: SignUpPolicy
SIGN_UP_POLICY_CLOSED: SignUpPolicy

class User(_message.Message):
    __slots__ = ("user_id", "email", "display_name", "tier", "admin", "created_at")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    email: str
    display_name: str
    tier: _common_pb2.Tier
    admin: bool
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, user_id: _Optional[str] = ..., email: _Optional[str] = ..., display_name: _Optional[str] = ..., tier: _Optional[_Union[_common_pb2.Tier, str]] = ..., admin: _Optional[bool] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SignUpRequest(_message.Message):
    __slots__ = ("email", "password", "display_name", "invitation_code")
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    INVITATION_CODE_FIELD_NUMBER: _ClassVar[int]
    email: str
    password: str
    display_name: str
    invitation_code: str
    def __init__(self, email: _Optional[str] = ..., password: _Optional[str] = ..., display_name: _Optional[str] = ..., invitation_code: _Optional[str] = ...) -> None: ...

class GetSignUpPolicyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSignUpPolicyResponse(_message.Message):
    __slots__ = ("policy", "sso_login_url", "sso_name")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    SSO_LOGIN_URL_FIELD_NUMBER: _ClassVar[int]
    SSO_NAME_FIELD_NUMBER: _ClassVar[int]
    policy: SignUpPolicy
    sso_login_url: str
    sso_name: str
    def __init__(self, policy: _Optional[_Union[SignUpPolicy, str]] = ..., sso_login_url: _Optional[str] = ..., sso_name: _Optional[str] = ...) -> None: ...

class SignUpResponse(_message.Message):
    __slots__ = ("user", "session_expires_at")
    USER_FIELD_NUMBER: _ClassVar[int]
    SESSION_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    user: User
    session_expires_at: _timestamp_pb2.Timestamp
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ..., session_expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LoginRequest(_message.Message):
    __slots__ = ("email", "password")
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    email: str
    password: str
    def __init__(self, email: _Optional[str] = ..., password: _Optional[str] = ...) -> None: ...

class LoginResponse(_message.Message):
    __slots__ = ("user", "session_expires_at")
    USER_FIELD_NUMBER: _ClassVar[int]
    SESSION_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    user: User
    session_expires_at: _timestamp_pb2.Timestamp
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ..., session_expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LogoutRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LogoutResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMeResponse(_message.Message):
    __slots__ = ("user", "channel", "api_key_id")
    USER_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    user: User
    channel: _common_pb2.AuthChannel
    api_key_id: str
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ..., channel: _Optional[_Union[_common_pb2.AuthChannel, str]] = ..., api_key_id: _Optional[str] = ...) -> None: ...
