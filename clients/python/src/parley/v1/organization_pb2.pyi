import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from parley.v1 import admin_pb2 as _admin_pb2
from parley.v1 import api_key_pb2 as _api_key_pb2
from parley.v1 import billing_pb2 as _billing_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OrganizationRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ORGANIZATION_ROLE_UNSPECIFIED: _ClassVar[OrganizationRole]
    ORGANIZATION_ROLE_OWNER: _ClassVar[OrganizationRole]
    ORGANIZATION_ROLE_ADMIN: _ClassVar[OrganizationRole]
    ORGANIZATION_ROLE_MEMBER: _ClassVar[OrganizationRole]
    ORGANIZATION_ROLE_BILLING_READER: _ClassVar[OrganizationRole]

class TeamRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TEAM_ROLE_UNSPECIFIED: _ClassVar[TeamRole]
    TEAM_ROLE_ADMIN: _ClassVar[TeamRole]
    TEAM_ROLE_MEMBER: _ClassVar[TeamRole]

class BudgetScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUDGET_SCOPE_UNSPECIFIED: _ClassVar[BudgetScope]
    BUDGET_SCOPE_ORGANIZATION: _ClassVar[BudgetScope]
    BUDGET_SCOPE_TEAM: _ClassVar[BudgetScope]
    BUDGET_SCOPE_KEY: _ClassVar[BudgetScope]
    BUDGET_SCOPE_MEMBER: _ClassVar[BudgetScope]

class BudgetPeriod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUDGET_PERIOD_UNSPECIFIED: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_DAILY: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_WEEKLY: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_MONTHLY: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_TOTAL: _ClassVar[BudgetPeriod]

class UsageGrouping(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    USAGE_GROUPING_UNSPECIFIED: _ClassVar[UsageGrouping]
    USAGE_GROUPING_KEY: _ClassVar[UsageGrouping]
    USAGE_GROUPING_TEAM: _ClassVar[UsageGrouping]
    USAGE_GROUPING_MEMBER: _ClassVar[UsageGrouping]
ORGANIZATION_ROLE_UNSPECIFIED: OrganizationRole
ORGANIZATION_ROLE_OWNER: OrganizationRole
ORGANIZATION_ROLE_ADMIN: OrganizationRole
ORGANIZATION_ROLE_MEMBER: OrganizationRole
ORGANIZATION_ROLE_BILLING_READER: OrganizationRole
TEAM_ROLE_UNSPECIFIED: TeamRole
TEAM_ROLE_ADMIN: TeamRole
TEAM_ROLE_MEMBER: TeamRole
BUDGET_SCOPE_UNSPECIFIED: BudgetScope
BUDGET_SCOPE_ORGANIZATION: BudgetScope
BUDGET_SCOPE_TEAM: BudgetScope
BUDGET_SCOPE_KEY: BudgetScope
BUDGET_SCOPE_MEMBER: BudgetScope
BUDGET_PERIOD_UNSPECIFIED: BudgetPeriod
BUDGET_PERIOD_DAILY: BudgetPeriod
BUDGET_PERIOD_WEEKLY: BudgetPeriod
BUDGET_PERIOD_MONTHLY: BudgetPeriod
BUDGET_PERIOD_TOTAL: BudgetPeriod
USAGE_GROUPING_UNSPECIFIED: UsageGrouping
USAGE_GROUPING_KEY: UsageGrouping
USAGE_GROUPING_TEAM: UsageGrouping
USAGE_GROUPING_MEMBER: UsageGrouping

class Organization(_message.Message):
    __slots__ = ("organization_id", "name", "time_zone", "created_at", "sso_domain")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    SSO_DOMAIN_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    name: str
    time_zone: str
    created_at: _timestamp_pb2.Timestamp
    sso_domain: str
    def __init__(self, organization_id: _Optional[str] = ..., name: _Optional[str] = ..., time_zone: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sso_domain: _Optional[str] = ...) -> None: ...

class Member(_message.Message):
    __slots__ = ("user_id", "email", "role", "created_at")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    email: str
    role: OrganizationRole
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, user_id: _Optional[str] = ..., email: _Optional[str] = ..., role: _Optional[_Union[OrganizationRole, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class OrganizationInvitation(_message.Message):
    __slots__ = ("invitation_id", "prefix", "role", "team_id", "team_role", "email", "max_uses", "uses", "created_by", "create_time", "expire_time", "revoke_time")
    INVITATION_ID_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ROLE_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    MAX_USES_FIELD_NUMBER: _ClassVar[int]
    USES_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    REVOKE_TIME_FIELD_NUMBER: _ClassVar[int]
    invitation_id: str
    prefix: str
    role: OrganizationRole
    team_id: str
    team_role: TeamRole
    email: str
    max_uses: int
    uses: int
    created_by: str
    create_time: _timestamp_pb2.Timestamp
    expire_time: _timestamp_pb2.Timestamp
    revoke_time: _timestamp_pb2.Timestamp
    def __init__(self, invitation_id: _Optional[str] = ..., prefix: _Optional[str] = ..., role: _Optional[_Union[OrganizationRole, str]] = ..., team_id: _Optional[str] = ..., team_role: _Optional[_Union[TeamRole, str]] = ..., email: _Optional[str] = ..., max_uses: _Optional[int] = ..., uses: _Optional[int] = ..., created_by: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoke_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateOrganizationInvitationRequest(_message.Message):
    __slots__ = ("organization_id", "role", "team_id", "team_role", "email", "max_uses", "ttl")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ROLE_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    MAX_USES_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    role: OrganizationRole
    team_id: str
    team_role: TeamRole
    email: str
    max_uses: int
    ttl: _duration_pb2.Duration
    def __init__(self, organization_id: _Optional[str] = ..., role: _Optional[_Union[OrganizationRole, str]] = ..., team_id: _Optional[str] = ..., team_role: _Optional[_Union[TeamRole, str]] = ..., email: _Optional[str] = ..., max_uses: _Optional[int] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class CreateOrganizationInvitationResponse(_message.Message):
    __slots__ = ("invitation", "code")
    INVITATION_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    invitation: OrganizationInvitation
    code: str
    def __init__(self, invitation: _Optional[_Union[OrganizationInvitation, _Mapping]] = ..., code: _Optional[str] = ...) -> None: ...

class ListOrganizationInvitationsRequest(_message.Message):
    __slots__ = ("organization_id",)
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    def __init__(self, organization_id: _Optional[str] = ...) -> None: ...

class ListOrganizationInvitationsResponse(_message.Message):
    __slots__ = ("invitations",)
    INVITATIONS_FIELD_NUMBER: _ClassVar[int]
    invitations: _containers.RepeatedCompositeFieldContainer[OrganizationInvitation]
    def __init__(self, invitations: _Optional[_Iterable[_Union[OrganizationInvitation, _Mapping]]] = ...) -> None: ...

class RevokeOrganizationInvitationRequest(_message.Message):
    __slots__ = ("organization_id", "invitation_id")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    INVITATION_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    invitation_id: str
    def __init__(self, organization_id: _Optional[str] = ..., invitation_id: _Optional[str] = ...) -> None: ...

class RevokeOrganizationInvitationResponse(_message.Message):
    __slots__ = ("invitation",)
    INVITATION_FIELD_NUMBER: _ClassVar[int]
    invitation: OrganizationInvitation
    def __init__(self, invitation: _Optional[_Union[OrganizationInvitation, _Mapping]] = ...) -> None: ...

class GetOrganizationInvitationRequest(_message.Message):
    __slots__ = ("code",)
    CODE_FIELD_NUMBER: _ClassVar[int]
    code: str
    def __init__(self, code: _Optional[str] = ...) -> None: ...

class GetOrganizationInvitationResponse(_message.Message):
    __slots__ = ("organization_id", "organization_name", "role", "team_name", "expire_time", "already_member")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    ORGANIZATION_NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TEAM_NAME_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    ALREADY_MEMBER_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    organization_name: str
    role: OrganizationRole
    team_name: str
    expire_time: _timestamp_pb2.Timestamp
    already_member: bool
    def __init__(self, organization_id: _Optional[str] = ..., organization_name: _Optional[str] = ..., role: _Optional[_Union[OrganizationRole, str]] = ..., team_name: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., already_member: _Optional[bool] = ...) -> None: ...

class AcceptOrganizationInvitationRequest(_message.Message):
    __slots__ = ("code",)
    CODE_FIELD_NUMBER: _ClassVar[int]
    code: str
    def __init__(self, code: _Optional[str] = ...) -> None: ...

class AcceptOrganizationInvitationResponse(_message.Message):
    __slots__ = ("membership",)
    MEMBERSHIP_FIELD_NUMBER: _ClassVar[int]
    membership: OrganizationMembership
    def __init__(self, membership: _Optional[_Union[OrganizationMembership, _Mapping]] = ...) -> None: ...

class Team(_message.Message):
    __slots__ = ("team_id", "name", "created_at", "sso_group")
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    SSO_GROUP_FIELD_NUMBER: _ClassVar[int]
    team_id: str
    name: str
    created_at: _timestamp_pb2.Timestamp
    sso_group: str
    def __init__(self, team_id: _Optional[str] = ..., name: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sso_group: _Optional[str] = ...) -> None: ...

class TeamMember(_message.Message):
    __slots__ = ("user_id", "email", "role")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    email: str
    role: TeamRole
    def __init__(self, user_id: _Optional[str] = ..., email: _Optional[str] = ..., role: _Optional[_Union[TeamRole, str]] = ...) -> None: ...

class Budget(_message.Message):
    __slots__ = ("budget_id", "scope", "scope_id", "period", "limit_nanos", "spent_nanos", "reserved_nanos", "period_start", "resets_at")
    BUDGET_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_ID_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    LIMIT_NANOS_FIELD_NUMBER: _ClassVar[int]
    SPENT_NANOS_FIELD_NUMBER: _ClassVar[int]
    RESERVED_NANOS_FIELD_NUMBER: _ClassVar[int]
    PERIOD_START_FIELD_NUMBER: _ClassVar[int]
    RESETS_AT_FIELD_NUMBER: _ClassVar[int]
    budget_id: str
    scope: BudgetScope
    scope_id: str
    period: BudgetPeriod
    limit_nanos: int
    spent_nanos: int
    reserved_nanos: int
    period_start: _timestamp_pb2.Timestamp
    resets_at: _timestamp_pb2.Timestamp
    def __init__(self, budget_id: _Optional[str] = ..., scope: _Optional[_Union[BudgetScope, str]] = ..., scope_id: _Optional[str] = ..., period: _Optional[_Union[BudgetPeriod, str]] = ..., limit_nanos: _Optional[int] = ..., spent_nanos: _Optional[int] = ..., reserved_nanos: _Optional[int] = ..., period_start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resets_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class OrganizationApiKey(_message.Message):
    __slots__ = ("api_key", "team_id", "created_by", "models", "allowed_ips", "requests_per_minute", "tokens_per_minute")
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_IPS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    team_id: str
    created_by: str
    models: _containers.RepeatedScalarFieldContainer[str]
    allowed_ips: _containers.RepeatedScalarFieldContainer[str]
    requests_per_minute: int
    tokens_per_minute: int
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ..., team_id: _Optional[str] = ..., created_by: _Optional[str] = ..., models: _Optional[_Iterable[str]] = ..., allowed_ips: _Optional[_Iterable[str]] = ..., requests_per_minute: _Optional[int] = ..., tokens_per_minute: _Optional[int] = ...) -> None: ...

class CreateOrganizationRequest(_message.Message):
    __slots__ = ("name", "time_zone")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    name: str
    time_zone: str
    def __init__(self, name: _Optional[str] = ..., time_zone: _Optional[str] = ...) -> None: ...

class CreateOrganizationResponse(_message.Message):
    __slots__ = ("organization",)
    ORGANIZATION_FIELD_NUMBER: _ClassVar[int]
    organization: Organization
    def __init__(self, organization: _Optional[_Union[Organization, _Mapping]] = ...) -> None: ...

class ListOrganizationsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListOrganizationsResponse(_message.Message):
    __slots__ = ("memberships",)
    MEMBERSHIPS_FIELD_NUMBER: _ClassVar[int]
    memberships: _containers.RepeatedCompositeFieldContainer[OrganizationMembership]
    def __init__(self, memberships: _Optional[_Iterable[_Union[OrganizationMembership, _Mapping]]] = ...) -> None: ...

class OrganizationMembership(_message.Message):
    __slots__ = ("organization", "role")
    ORGANIZATION_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    organization: Organization
    role: OrganizationRole
    def __init__(self, organization: _Optional[_Union[Organization, _Mapping]] = ..., role: _Optional[_Union[OrganizationRole, str]] = ...) -> None: ...

class GetOrganizationRequest(_message.Message):
    __slots__ = ("organization_id",)
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    def __init__(self, organization_id: _Optional[str] = ...) -> None: ...

class GetOrganizationResponse(_message.Message):
    __slots__ = ("organization", "role", "balance")
    ORGANIZATION_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    BALANCE_FIELD_NUMBER: _ClassVar[int]
    organization: Organization
    role: OrganizationRole
    balance: _billing_pb2.GetBalanceResponse
    def __init__(self, organization: _Optional[_Union[Organization, _Mapping]] = ..., role: _Optional[_Union[OrganizationRole, str]] = ..., balance: _Optional[_Union[_billing_pb2.GetBalanceResponse, _Mapping]] = ...) -> None: ...

class UpdateOrganizationRequest(_message.Message):
    __slots__ = ("organization_id", "name", "time_zone")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    name: str
    time_zone: str
    def __init__(self, organization_id: _Optional[str] = ..., name: _Optional[str] = ..., time_zone: _Optional[str] = ...) -> None: ...

class UpdateOrganizationResponse(_message.Message):
    __slots__ = ("organization",)
    ORGANIZATION_FIELD_NUMBER: _ClassVar[int]
    organization: Organization
    def __init__(self, organization: _Optional[_Union[Organization, _Mapping]] = ...) -> None: ...

class AddMemberRequest(_message.Message):
    __slots__ = ("organization_id", "email", "role")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    email: str
    role: OrganizationRole
    def __init__(self, organization_id: _Optional[str] = ..., email: _Optional[str] = ..., role: _Optional[_Union[OrganizationRole, str]] = ...) -> None: ...

class AddMemberResponse(_message.Message):
    __slots__ = ("member",)
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    member: Member
    def __init__(self, member: _Optional[_Union[Member, _Mapping]] = ...) -> None: ...

class RemoveMemberRequest(_message.Message):
    __slots__ = ("organization_id", "user_id")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    user_id: str
    def __init__(self, organization_id: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class RemoveMemberResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMembersRequest(_message.Message):
    __slots__ = ("organization_id",)
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    def __init__(self, organization_id: _Optional[str] = ...) -> None: ...

class ListMembersResponse(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[Member]
    def __init__(self, members: _Optional[_Iterable[_Union[Member, _Mapping]]] = ...) -> None: ...

class CreateTeamRequest(_message.Message):
    __slots__ = ("organization_id", "name", "sso_group")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SSO_GROUP_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    name: str
    sso_group: str
    def __init__(self, organization_id: _Optional[str] = ..., name: _Optional[str] = ..., sso_group: _Optional[str] = ...) -> None: ...

class CreateTeamResponse(_message.Message):
    __slots__ = ("team",)
    TEAM_FIELD_NUMBER: _ClassVar[int]
    team: Team
    def __init__(self, team: _Optional[_Union[Team, _Mapping]] = ...) -> None: ...

class ListTeamsRequest(_message.Message):
    __slots__ = ("organization_id",)
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    def __init__(self, organization_id: _Optional[str] = ...) -> None: ...

class ListTeamsResponse(_message.Message):
    __slots__ = ("teams",)
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    teams: _containers.RepeatedCompositeFieldContainer[Team]
    def __init__(self, teams: _Optional[_Iterable[_Union[Team, _Mapping]]] = ...) -> None: ...

class UpdateTeamRequest(_message.Message):
    __slots__ = ("organization_id", "team_id", "name", "sso_group")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SSO_GROUP_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    team_id: str
    name: str
    sso_group: str
    def __init__(self, organization_id: _Optional[str] = ..., team_id: _Optional[str] = ..., name: _Optional[str] = ..., sso_group: _Optional[str] = ...) -> None: ...

class UpdateTeamResponse(_message.Message):
    __slots__ = ("team",)
    TEAM_FIELD_NUMBER: _ClassVar[int]
    team: Team
    def __init__(self, team: _Optional[_Union[Team, _Mapping]] = ...) -> None: ...

class DeleteTeamRequest(_message.Message):
    __slots__ = ("organization_id", "team_id")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    team_id: str
    def __init__(self, organization_id: _Optional[str] = ..., team_id: _Optional[str] = ...) -> None: ...

class DeleteTeamResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetTeamMemberRequest(_message.Message):
    __slots__ = ("organization_id", "team_id", "user_id", "role")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    team_id: str
    user_id: str
    role: TeamRole
    def __init__(self, organization_id: _Optional[str] = ..., team_id: _Optional[str] = ..., user_id: _Optional[str] = ..., role: _Optional[_Union[TeamRole, str]] = ...) -> None: ...

class SetTeamMemberResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveTeamMemberRequest(_message.Message):
    __slots__ = ("organization_id", "team_id", "user_id")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    team_id: str
    user_id: str
    def __init__(self, organization_id: _Optional[str] = ..., team_id: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class RemoveTeamMemberResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTeamMembersRequest(_message.Message):
    __slots__ = ("organization_id", "team_id")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    team_id: str
    def __init__(self, organization_id: _Optional[str] = ..., team_id: _Optional[str] = ...) -> None: ...

class ListTeamMembersResponse(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[TeamMember]
    def __init__(self, members: _Optional[_Iterable[_Union[TeamMember, _Mapping]]] = ...) -> None: ...

class SetBudgetRequest(_message.Message):
    __slots__ = ("organization_id", "scope", "scope_id", "period", "limit_nanos")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_ID_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    LIMIT_NANOS_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    scope: BudgetScope
    scope_id: str
    period: BudgetPeriod
    limit_nanos: int
    def __init__(self, organization_id: _Optional[str] = ..., scope: _Optional[_Union[BudgetScope, str]] = ..., scope_id: _Optional[str] = ..., period: _Optional[_Union[BudgetPeriod, str]] = ..., limit_nanos: _Optional[int] = ...) -> None: ...

class SetBudgetResponse(_message.Message):
    __slots__ = ("budget",)
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    budget: Budget
    def __init__(self, budget: _Optional[_Union[Budget, _Mapping]] = ...) -> None: ...

class DeleteBudgetRequest(_message.Message):
    __slots__ = ("organization_id", "budget_id")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    BUDGET_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    budget_id: str
    def __init__(self, organization_id: _Optional[str] = ..., budget_id: _Optional[str] = ...) -> None: ...

class DeleteBudgetResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListBudgetsRequest(_message.Message):
    __slots__ = ("organization_id",)
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    def __init__(self, organization_id: _Optional[str] = ...) -> None: ...

class ListBudgetsResponse(_message.Message):
    __slots__ = ("budgets",)
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    budgets: _containers.RepeatedCompositeFieldContainer[Budget]
    def __init__(self, budgets: _Optional[_Iterable[_Union[Budget, _Mapping]]] = ...) -> None: ...

class CreateOrganizationApiKeyRequest(_message.Message):
    __slots__ = ("organization_id", "team_id", "name", "ttl", "models", "allowed_ips", "requests_per_minute", "tokens_per_minute", "budget_limit_nanos", "budget_period")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_IPS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_LIMIT_NANOS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_PERIOD_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    team_id: str
    name: str
    ttl: _duration_pb2.Duration
    models: _containers.RepeatedScalarFieldContainer[str]
    allowed_ips: _containers.RepeatedScalarFieldContainer[str]
    requests_per_minute: int
    tokens_per_minute: int
    budget_limit_nanos: int
    budget_period: BudgetPeriod
    def __init__(self, organization_id: _Optional[str] = ..., team_id: _Optional[str] = ..., name: _Optional[str] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., models: _Optional[_Iterable[str]] = ..., allowed_ips: _Optional[_Iterable[str]] = ..., requests_per_minute: _Optional[int] = ..., tokens_per_minute: _Optional[int] = ..., budget_limit_nanos: _Optional[int] = ..., budget_period: _Optional[_Union[BudgetPeriod, str]] = ...) -> None: ...

class CreateOrganizationApiKeyResponse(_message.Message):
    __slots__ = ("key", "secret", "budget")
    KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    key: OrganizationApiKey
    secret: str
    budget: Budget
    def __init__(self, key: _Optional[_Union[OrganizationApiKey, _Mapping]] = ..., secret: _Optional[str] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ...) -> None: ...

class ListOrganizationApiKeysRequest(_message.Message):
    __slots__ = ("organization_id", "team_id", "page_size", "page_token")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    team_id: str
    page_size: int
    page_token: str
    def __init__(self, organization_id: _Optional[str] = ..., team_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListOrganizationApiKeysResponse(_message.Message):
    __slots__ = ("keys", "next_page_token")
    KEYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[OrganizationApiKey]
    next_page_token: str
    def __init__(self, keys: _Optional[_Iterable[_Union[OrganizationApiKey, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RevokeOrganizationApiKeyRequest(_message.Message):
    __slots__ = ("organization_id", "key_id")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    key_id: str
    def __init__(self, organization_id: _Optional[str] = ..., key_id: _Optional[str] = ...) -> None: ...

class RevokeOrganizationApiKeyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetOrganizationUsageRequest(_message.Message):
    __slots__ = ("organization_id", "start_time", "end_time", "group_by", "team_id")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    TEAM_ID_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    group_by: UsageGrouping
    team_id: str
    def __init__(self, organization_id: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., group_by: _Optional[_Union[UsageGrouping, str]] = ..., team_id: _Optional[str] = ...) -> None: ...

class GetOrganizationUsageResponse(_message.Message):
    __slots__ = ("buckets", "total")
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    buckets: _containers.RepeatedCompositeFieldContainer[_billing_pb2.UsageBucket]
    total: _billing_pb2.UsageBucket
    def __init__(self, buckets: _Optional[_Iterable[_Union[_billing_pb2.UsageBucket, _Mapping]]] = ..., total: _Optional[_Union[_billing_pb2.UsageBucket, _Mapping]] = ...) -> None: ...

class ListOrganizationAuditEventsRequest(_message.Message):
    __slots__ = ("organization_id", "page_size", "page_token")
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    organization_id: str
    page_size: int
    page_token: str
    def __init__(self, organization_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListOrganizationAuditEventsResponse(_message.Message):
    __slots__ = ("events", "next_page_token")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_admin_pb2.AuditEvent]
    next_page_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[_admin_pb2.AuditEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
