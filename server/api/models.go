package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/store"
)

// ModelHandler serves ModelService from the catalog.
type ModelHandler struct {
	Catalog *models.Catalog
}

// ListModels lists every model offered, in catalog order.
func (h *ModelHandler) ListModels(ctx context.Context, _ *connect.Request[parleyv1.ListModelsRequest]) (*connect.Response[parleyv1.ListModelsResponse], error) {
	res := &parleyv1.ListModelsResponse{}
	var allowed []string
	if p, ok := auth.FromContext(ctx); ok && p.Org != nil {
		allowed = p.Org.Models // an organisation's key lists what it may use
	}
	for _, m := range h.Catalog.Visible(allowed) {
		res.Models = append(res.Models, ModelToProto(m))
	}
	return connect.NewResponse(res), nil
}

// ModelToProto maps a catalog model to the API's.
func ModelToProto(m *models.Model) *parleyv1.Model {
	pm := &parleyv1.Model{
		Id: m.ID, DisplayName: m.DisplayName, Description: m.Description, Simulated: m.Simulated,
		ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens,
		InputPriceNanosPerMillion: m.InputPriceNanosPerMillion, OutputPriceNanosPerMillion: m.OutputPriceNanosPerMillion,
		Kind: parleyv1.ModelKind_MODEL_KIND_CHAT,
	}
	pm.BatchInputPriceNanosPerMillion, pm.BatchOutputPriceNanosPerMillion = m.BatchPrices()
	if m.Embeds() {
		pm.Kind, pm.EmbeddingDimensions = parleyv1.ModelKind_MODEL_KIND_EMBEDDING, int32(m.EmbeddingDimensions)
	}
	for _, mod := range m.Modalities {
		switch mod {
		case "text":
			pm.Modalities = append(pm.Modalities, parleyv1.Modality_MODALITY_TEXT)
		case "image":
			pm.Modalities = append(pm.Modalities, parleyv1.Modality_MODALITY_IMAGE)
		case "document":
			pm.Modalities = append(pm.Modalities, parleyv1.Modality_MODALITY_DOCUMENT)
		}
	}
	for _, c := range []struct {
		name  string
		proto parleyv1.Capability
	}{ // sorted by the enum's numbers
		{models.CapTools, parleyv1.Capability_CAPABILITY_TOOLS},
		{models.CapStructuredOutput, parleyv1.Capability_CAPABILITY_STRUCTURED_OUTPUT},
		{models.CapReasoning, parleyv1.Capability_CAPABILITY_REASONING},
	} {
		if m.Can(c.name) {
			pm.Capabilities = append(pm.Capabilities, c.proto)
		}
	}
	for _, tier := range []store.Tier{store.TierFree, store.TierPlus, store.TierPro, store.TierMax} {
		if l, ok := m.TierLimits[tier]; ok {
			pm.TierLimits = append(pm.TierLimits, &parleyv1.TierLimit{
				Tier: TierToProto(tier), RequestsPerWindow: l.Requests, InputTokensPerWindow: l.InputTokens,
				OutputTokensPerWindow: l.OutputTokens, Window: durationpb.New(l.Window),
			})
		}
	}
	return pm
}

// TierToProto maps a store tier to the API's.
func TierToProto(t store.Tier) parleyv1.Tier {
	switch t {
	case store.TierFree:
		return parleyv1.Tier_TIER_FREE
	case store.TierPlus:
		return parleyv1.Tier_TIER_PLUS
	case store.TierPro:
		return parleyv1.Tier_TIER_PRO
	case store.TierMax:
		return parleyv1.Tier_TIER_MAX
	}
	return parleyv1.Tier_TIER_UNSPECIFIED
}
