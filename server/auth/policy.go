package auth

import (
	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// Access is what a procedure requires of its caller.
type Access int

// The access levels. The zero value is not one of them, so a procedure
// missing from Policy is denied.
const (
	// AccessPublic needs no credentials.
	AccessPublic Access = iota + 1
	// AccessSession needs a browser session (the cookie); API keys are refused.
	AccessSession
	// AccessAny needs a session or an API key.
	AccessAny
	// AccessAdmin needs a session or an API key of an admin user.
	AccessAdmin
)

// String returns the level's name for errors and logs.
func (a Access) String() string {
	switch a {
	case AccessPublic:
		return "public"
	case AccessSession:
		return "session"
	case AccessAny:
		return "any"
	case AccessAdmin:
		return "admin"
	}
	return "deny"
}

// Policy is the one table of who may call what, by Connect procedure. A
// procedure not listed is refused with permission_denied.
var Policy = map[string]Access{
	parleyv1connect.AuthServiceSignUpProcedure:          AccessPublic,
	parleyv1connect.AuthServiceLoginProcedure:           AccessPublic,
	parleyv1connect.AuthServiceGetSignUpPolicyProcedure: AccessPublic,
	parleyv1connect.AuthServiceLogoutProcedure:          AccessAny,
	parleyv1connect.AuthServiceGetMeProcedure:           AccessAny,

	// OrganizationService: a browser session, like ApiKeyService (an
	// organisation's own keys never manage it); the service checks roles.
	parleyv1connect.OrganizationServiceCreateOrganizationProcedure:           AccessSession,
	parleyv1connect.OrganizationServiceListOrganizationsProcedure:            AccessSession,
	parleyv1connect.OrganizationServiceGetOrganizationProcedure:              AccessSession,
	parleyv1connect.OrganizationServiceUpdateOrganizationProcedure:           AccessSession,
	parleyv1connect.OrganizationServiceAddMemberProcedure:                    AccessSession,
	parleyv1connect.OrganizationServiceRemoveMemberProcedure:                 AccessSession,
	parleyv1connect.OrganizationServiceListMembersProcedure:                  AccessSession,
	parleyv1connect.OrganizationServiceCreateOrganizationInvitationProcedure: AccessSession,
	parleyv1connect.OrganizationServiceListOrganizationInvitationsProcedure:  AccessSession,
	parleyv1connect.OrganizationServiceRevokeOrganizationInvitationProcedure: AccessSession,
	parleyv1connect.OrganizationServiceGetOrganizationInvitationProcedure:    AccessSession,
	parleyv1connect.OrganizationServiceAcceptOrganizationInvitationProcedure: AccessSession,
	parleyv1connect.OrganizationServiceCreateTeamProcedure:                   AccessSession,
	parleyv1connect.OrganizationServiceListTeamsProcedure:                    AccessSession,
	parleyv1connect.OrganizationServiceUpdateTeamProcedure:                   AccessSession,
	parleyv1connect.OrganizationServiceDeleteTeamProcedure:                   AccessSession,
	parleyv1connect.OrganizationServiceSetTeamMemberProcedure:                AccessSession,
	parleyv1connect.OrganizationServiceRemoveTeamMemberProcedure:             AccessSession,
	parleyv1connect.OrganizationServiceListTeamMembersProcedure:              AccessSession,
	parleyv1connect.OrganizationServiceSetBudgetProcedure:                    AccessSession,
	parleyv1connect.OrganizationServiceDeleteBudgetProcedure:                 AccessSession,
	parleyv1connect.OrganizationServiceListBudgetsProcedure:                  AccessSession,
	parleyv1connect.OrganizationServiceCreateOrganizationApiKeyProcedure:     AccessSession,
	parleyv1connect.OrganizationServiceListOrganizationApiKeysProcedure:      AccessSession,
	parleyv1connect.OrganizationServiceRevokeOrganizationApiKeyProcedure:     AccessSession,
	parleyv1connect.OrganizationServiceGetOrganizationUsageProcedure:         AccessSession,
	parleyv1connect.OrganizationServiceListOrganizationAuditEventsProcedure:  AccessSession,
	parleyv1connect.ApiKeyServiceCreateApiKeyProcedure:                       AccessSession,
	parleyv1connect.ApiKeyServiceListApiKeysProcedure:                        AccessSession,
	parleyv1connect.ApiKeyServiceRevokeApiKeyProcedure:                       AccessSession,

	parleyv1connect.ModelServiceListModelsProcedure: AccessAny,

	parleyv1connect.ChatServiceCompleteProcedure:         AccessAny,
	parleyv1connect.ChatServiceCompleteStreamProcedure:   AccessAny,
	parleyv1connect.ChatServiceStartBackgroundProcedure:  AccessAny,
	parleyv1connect.ChatServiceGetBackgroundProcedure:    AccessAny,
	parleyv1connect.ChatServiceCancelBackgroundProcedure: AccessAny,
	parleyv1connect.ChatServiceFollowBackgroundProcedure: AccessAny,

	parleyv1connect.EmbeddingServiceEmbedProcedure: AccessAny,

	parleyv1connect.ConversationServiceCreateConversationProcedure:    AccessAny,
	parleyv1connect.ConversationServiceListConversationsProcedure:     AccessAny,
	parleyv1connect.ConversationServiceGetConversationProcedure:       AccessAny,
	parleyv1connect.ConversationServiceListMessagesProcedure:          AccessAny,
	parleyv1connect.ConversationServiceUpdateConversationProcedure:    AccessAny,
	parleyv1connect.ConversationServiceDeleteConversationProcedure:    AccessAny,
	parleyv1connect.ConversationServiceSendMessageProcedure:           AccessAny,
	parleyv1connect.ConversationServiceStreamGenerationProcedure:      AccessAny,
	parleyv1connect.ConversationServiceCancelGenerationProcedure:      AccessAny,
	parleyv1connect.ConversationServiceRegenerateMessageProcedure:     AccessAny,
	parleyv1connect.ConversationServiceContinueMessageProcedure:       AccessAny,
	parleyv1connect.ConversationServiceGetCustomInstructionsProcedure: AccessAny,
	parleyv1connect.ConversationServiceSetCustomInstructionsProcedure: AccessAny,
	parleyv1connect.ConversationServiceSearchConversationsProcedure:   AccessAny,
	parleyv1connect.ConversationServiceShareConversationProcedure:     AccessAny,
	parleyv1connect.ConversationServiceUnshareConversationProcedure:   AccessAny,
	parleyv1connect.ConversationServiceGetSharedConversationProcedure: AccessPublic,
	parleyv1connect.ConversationServiceExportConversationProcedure:    AccessAny,
	parleyv1connect.ConversationServiceRateMessageProcedure:           AccessAny,
	parleyv1connect.ConversationServiceListSavedPromptsProcedure:      AccessAny,
	parleyv1connect.ConversationServiceSavePromptProcedure:            AccessAny,
	parleyv1connect.ConversationServiceDeleteSavedPromptProcedure:     AccessAny,

	parleyv1connect.AttachmentServiceCreateUploadProcedure:     AccessAny,
	parleyv1connect.AttachmentServiceCompleteUploadProcedure:   AccessAny,
	parleyv1connect.AttachmentServiceGetAttachmentProcedure:    AccessAny,
	parleyv1connect.AttachmentServiceDeleteAttachmentProcedure: AccessAny,

	parleyv1connect.FileServiceCreateFileProcedure:                   AccessAny,
	parleyv1connect.FileServiceListFilesProcedure:                    AccessAny,
	parleyv1connect.FileServiceGetFileProcedure:                      AccessAny,
	parleyv1connect.FileServiceGetFileContentProcedure:               AccessAny,
	parleyv1connect.FileServiceDeleteFileProcedure:                   AccessAny,
	parleyv1connect.VectorStoreServiceCreateVectorStoreProcedure:     AccessAny,
	parleyv1connect.VectorStoreServiceListVectorStoresProcedure:      AccessAny,
	parleyv1connect.VectorStoreServiceGetVectorStoreProcedure:        AccessAny,
	parleyv1connect.VectorStoreServiceUpdateVectorStoreProcedure:     AccessAny,
	parleyv1connect.VectorStoreServiceDeleteVectorStoreProcedure:     AccessAny,
	parleyv1connect.VectorStoreServiceAddFilesProcedure:              AccessAny,
	parleyv1connect.VectorStoreServiceListVectorStoreFilesProcedure:  AccessAny,
	parleyv1connect.VectorStoreServiceGetVectorStoreFileProcedure:    AccessAny,
	parleyv1connect.VectorStoreServiceUpdateVectorStoreFileProcedure: AccessAny,
	parleyv1connect.VectorStoreServiceRemoveFileProcedure:            AccessAny,
	parleyv1connect.VectorStoreServiceGetFileBatchProcedure:          AccessAny,
	parleyv1connect.VectorStoreServiceCancelFileBatchProcedure:       AccessAny,
	parleyv1connect.VectorStoreServiceSearchVectorStoresProcedure:    AccessAny,
	parleyv1connect.ProjectServiceCreateProjectProcedure:             AccessAny,
	parleyv1connect.ProjectServiceListProjectsProcedure:              AccessAny,
	parleyv1connect.ProjectServiceGetProjectProcedure:                AccessAny,
	parleyv1connect.ProjectServiceUpdateProjectProcedure:             AccessAny,
	parleyv1connect.ProjectServiceDeleteProjectProcedure:             AccessAny,
	parleyv1connect.MemoryServiceCreateMemoryProcedure:               AccessAny,
	parleyv1connect.MemoryServiceListMemoriesProcedure:               AccessAny,
	parleyv1connect.MemoryServiceUpdateMemoryProcedure:               AccessAny,
	parleyv1connect.MemoryServiceDeleteMemoryProcedure:               AccessAny,
	parleyv1connect.MemoryServiceGetMemorySettingsProcedure:          AccessAny,
	parleyv1connect.MemoryServiceUpdateMemorySettingsProcedure:       AccessAny,
	parleyv1connect.BatchServiceCreateBatchProcedure:                 AccessAny,
	parleyv1connect.BatchServiceGetBatchProcedure:                    AccessAny,
	parleyv1connect.BatchServiceListBatchesProcedure:                 AccessAny,
	parleyv1connect.BatchServiceCancelBatchProcedure:                 AccessAny,
	parleyv1connect.WebhookServiceCreateWebhookEndpointProcedure:     AccessAny,
	parleyv1connect.WebhookServiceListWebhookEndpointsProcedure:      AccessAny,
	parleyv1connect.WebhookServiceDeleteWebhookEndpointProcedure:     AccessAny,
	parleyv1connect.WebhookServiceListWebhookDeliveriesProcedure:     AccessAny,
	parleyv1connect.WebhookServiceRedeliverWebhookProcedure:          AccessAny,

	parleyv1connect.BillingServiceGetBalanceProcedure:      AccessAny,
	parleyv1connect.BillingServiceListUsageProcedure:       AccessAny,
	parleyv1connect.BillingServiceGetLimitsProcedure:       AccessAny,
	parleyv1connect.BillingServiceGetUsageSummaryProcedure: AccessAny,

	parleyv1connect.AdminServiceSetUserTierProcedure:        AccessAdmin,
	parleyv1connect.AdminServiceAdjustBalanceProcedure:      AccessAdmin,
	parleyv1connect.AdminServiceListWorkersProcedure:        AccessAdmin,
	parleyv1connect.AdminServiceListServedModelsProcedure:   AccessAdmin,
	parleyv1connect.AdminServiceListUsageProcedure:          AccessAdmin,
	parleyv1connect.AdminServiceGetFeedbackSummaryProcedure: AccessAdmin,
	parleyv1connect.AdminServiceSearchUsersProcedure:        AccessAdmin,
	parleyv1connect.AdminServiceSetUserAdminProcedure:       AccessAdmin,
	parleyv1connect.AdminServiceListAuditEventsProcedure:    AccessAdmin,
	parleyv1connect.AdminServiceCreateInvitationProcedure:   AccessAdmin,
	parleyv1connect.AdminServiceListInvitationsProcedure:    AccessAdmin,
	parleyv1connect.AdminServiceRevokeInvitationProcedure:   AccessAdmin,
	parleyv1connect.AdminServiceListOpenBatchesProcedure:    AccessAdmin,
	parleyv1connect.AdminServiceCancelBatchProcedure:        AccessAdmin,

	"/" + grpchealth.HealthV1ServiceName + "/Check":                       AccessPublic,
	"/" + grpchealth.HealthV1ServiceName + "/Watch":                       AccessPublic,
	"/" + grpcreflect.ReflectV1ServiceName + "/ServerReflectionInfo":      AccessPublic,
	"/" + grpcreflect.ReflectV1AlphaServiceName + "/ServerReflectionInfo": AccessPublic,
}

// accessOf returns the access a procedure requires; 0 (deny) when unknown.
func accessOf(spec connect.Spec) Access { return Policy[spec.Procedure] }
