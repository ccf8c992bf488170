package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/batch"
	"github.com/parleyhq/parley/server/billing"
	"github.com/parleyhq/parley/server/models"
	"github.com/parleyhq/parley/server/scheduler"
	"github.com/parleyhq/parley/server/store"
)

// AdminHandler serves AdminService. The auth layer has already refused
// callers who are not admins.
type AdminHandler struct {
	parleyv1connect.UnimplementedAdminServiceHandler
	Auth      *auth.Authenticator
	Billing   *billing.Billing
	Scheduler *scheduler.Scheduler
	Usage     store.Usage
	Audit     store.Audit
	Pages     PageTokens
	// Logger receives the store errors behind internal errors (nil: discarded).
	Logger *slog.Logger
	// Catalog is the gateway's models, for ListServedModels.
	Catalog *models.Catalog
	// Batches lists and cancels every user's batches (nil: none kept).
	Batches *batch.Service
	// Feedback is people's ratings of answers, for GetFeedbackSummary (nil:
	// not kept).
	Feedback store.Feedback
}

// typed turns an error of the layers below into an API error: a
// *connect.Error as it is, the store's sentinels as not_found or
// invalid_argument, anything else as internal, logged here and never sent:
// a store's own words ("FOREIGN KEY constraint failed") are not the
// client's business.
func (h *AdminHandler) typed(ctx context.Context, what string, err error) error {
	var ce *connect.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFound(what)
	case errors.Is(err, store.ErrInvalidArgument), errors.Is(err, store.ErrInvalidCursor):
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("invalid %s", what))
	case ctx.Err() != nil:
		return connect.NewError(connect.CodeCanceled, context.Cause(ctx))
	}
	if h.Logger != nil {
		h.Logger.ErrorContext(ctx, "admin: store error", "what", what, "err", err)
	}
	return apierr.Internal()
}

// AdjustBalance adds to (or, negative, deducts from) a user's balance; it
// never takes the balance below zero.
func (h *AdminHandler) AdjustBalance(ctx context.Context, req *connect.Request[parleyv1.AdjustBalanceRequest]) (*connect.Response[parleyv1.AdjustBalanceResponse], error) {
	if req.Msg.GetDeltaNanos() == 0 {
		return nil, apierr.InvalidArgument("delta_nanos", "must not be zero")
	}
	reason := req.Msg.GetReason()
	if len(reason) > 500 {
		return nil, apierr.InvalidArgument("reason", "at most 500 bytes")
	}
	userID, err := h.userID(ctx, req.Msg.GetUserId(), req.Msg.GetEmail())
	if err != nil {
		return nil, err
	}
	p, _ := auth.FromContext(ctx)
	if reason == "" {
		reason = "admin adjustment by " + p.Email
	}
	balance, err := h.Billing.Adjust(ctx, userID, req.Msg.GetDeltaNanos(), reason)
	if err != nil {
		return nil, h.typed(ctx, "user", err)
	}
	h.Auth.RecordBalanceAdjusted(ctx, userID, p.UserID, req.Msg.GetDeltaNanos(), balance, reason, clientOf(req))
	return connect.NewResponse(&parleyv1.AdjustBalanceResponse{BalanceNanos: balance}), nil
}

// ListWorkers shows every worker this gateway schedules onto, by address.
func (h *AdminHandler) ListWorkers(context.Context, *connect.Request[parleyv1.ListWorkersRequest]) (*connect.Response[parleyv1.ListWorkersResponse], error) {
	res := &parleyv1.ListWorkersResponse{}
	for _, w := range h.Scheduler.Workers() {
		pw := &parleyv1.Worker{
			Address: w.Address, WorkerId: w.WorkerID, Models: w.Models, ConsecutiveFailures: int32(w.ConsecutiveFailures),
			Pool: w.Pool, AdmissionLimit: int32(w.AdmissionLimit),
			Load: &parleyv1.WorkerLoad{
				Running: int32(w.Load.Running), Waiting: int32(w.Load.Waiting), MaxBatch: int32(w.Load.MaxBatch),
				KvUsedTokens: w.Load.KVUsedTokens, KvCapacityTokens: w.Load.KVCapacityTokens,
			},
		}
		pw.State = workerState(w.State)
		if w.State == scheduler.StateEjected {
			pw.EjectedUntil = timestamppb.New(w.EjectedUntil)
		}
		res.Workers = append(res.Workers, pw)
	}
	slices.SortFunc(res.Workers, func(a, b *parleyv1.Worker) int { return strings.Compare(a.Address, b.Address) })
	return connect.NewResponse(res), nil
}

func workerState(s scheduler.State) parleyv1.WorkerState {
	switch s {
	case scheduler.StateReady:
		return parleyv1.WorkerState_WORKER_STATE_READY
	case scheduler.StateEjected:
		return parleyv1.WorkerState_WORKER_STATE_EJECTED
	case scheduler.StateConnecting:
		return parleyv1.WorkerState_WORKER_STATE_CONNECTING
	}
	return parleyv1.WorkerState_WORKER_STATE_UNSPECIFIED
}

// ListServedModels lists the catalog's models and those the workers serve,
// with their availability and the workers and pools serving each.
func (h *AdminHandler) ListServedModels(context.Context, *connect.Request[parleyv1.ListServedModelsRequest]) (*connect.Response[parleyv1.ListServedModelsResponse], error) {
	var servers []models.Server
	for _, w := range h.Scheduler.Workers() {
		servers = append(servers, models.Server{Address: w.Address, Pool: w.Pool, State: string(w.State),
			Up: w.State == scheduler.StateReady, Models: w.Models})
	}
	res := &parleyv1.ListServedModelsResponse{}
	for _, st := range h.Catalog.Availability(servers) {
		pm := &parleyv1.ServedModel{Id: st.ID, DefaultPrice: st.DefaultPrice}
		switch st.State {
		case models.StateAvailable:
			pm.State = parleyv1.ServedModelState_SERVED_MODEL_STATE_AVAILABLE
		case models.StateUnavailable:
			pm.State = parleyv1.ServedModelState_SERVED_MODEL_STATE_UNAVAILABLE
		case models.StateRefused:
			pm.State = parleyv1.ServedModelState_SERVED_MODEL_STATE_REFUSED
		}
		for _, sv := range st.Servers {
			pm.Workers = append(pm.Workers, &parleyv1.ServedModelWorker{Address: sv.Address, Pool: sv.Pool,
				State: workerState(scheduler.State(sv.State))})
		}
		res.Models = append(res.Models, pm)
	}
	return connect.NewResponse(res), nil
}

// ListUsage pages through one user's usage records, or every user's when the
// request names none, newest first, those of one end user when the request
// names one, with the emails of the page's accounts. An id that is no user's
// lists nothing: records outlive the accounts they belong to.
func (h *AdminHandler) ListUsage(ctx context.Context, req *connect.Request[parleyv1.AdminServiceListUsageRequest]) (*connect.Response[parleyv1.AdminServiceListUsageResponse], error) {
	p, _ := auth.FromContext(ctx)
	userID := req.Msg.GetUserId()
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	filter, err := usageFilter("end_user", req.Msg.GetEndUser())
	if err != nil {
		return nil, err
	}
	// The token is the admin's, bound to the account (none: every user's,
	// which no id encodes to) and the filter.
	list := usageList("admin_usage:"+base64.RawURLEncoding.EncodeToString([]byte(userID)), filter)
	cursor, err := h.Pages.Open(p.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	records, next, err := h.Usage.List(store.AllowStale(ctx), userID, filter, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, h.typed(ctx, "page_token", err)
	}
	emails := map[string]string{}
	looked := map[string]bool{}
	for _, r := range records {
		if looked[r.UserID] {
			continue
		}
		looked[r.UserID] = true
		u, err := h.Auth.UserByID(ctx, r.UserID)
		switch {
		case err == nil:
			emails[r.UserID] = u.Email
		case connect.CodeOf(err) == connect.CodeNotFound: // a deleted account: no email
		default:
			return nil, err
		}
	}
	return connect.NewResponse(&parleyv1.AdminServiceListUsageResponse{
		UsageRecords: UsageRecordsToProto(records), NextPageToken: h.Pages.Seal(p.UserID, list, next), UserEmails: emails,
	}), nil
}

// SetUserTier changes a user's tier; it is audited.
func (h *AdminHandler) SetUserTier(ctx context.Context, req *connect.Request[parleyv1.SetUserTierRequest]) (*connect.Response[parleyv1.SetUserTierResponse], error) {
	p, _ := auth.FromContext(ctx)
	tier, ok := TierFromProto(req.Msg.GetTier())
	if !ok {
		return nil, apierr.InvalidArgument("tier", "must be one of TIER_FREE, TIER_PLUS, TIER_PRO, TIER_MAX")
	}
	userID, err := h.userID(ctx, req.Msg.GetUserId(), req.Msg.GetEmail())
	if err != nil {
		return nil, err
	}
	u, err := h.Auth.SetUserTier(ctx, p, userID, tier, clientOf(req))
	if err != nil {
		return nil, h.typed(ctx, "user", err)
	}
	return connect.NewResponse(&parleyv1.SetUserTierResponse{User: UserToProto(u)}), nil
}

// userID resolves the "exactly one of user_id and email" of admin requests.
func (h *AdminHandler) userID(ctx context.Context, id, email string) (string, error) {
	switch {
	case id != "" && email != "":
		return "", apierr.InvalidArgument("user_id", "give user_id or email, not both")
	case id != "":
		// Looked up, so an unknown id is not_found here rather than a
		// store's constraint error further down.
		u, err := h.Auth.UserByID(ctx, id)
		if err != nil {
			return "", h.typed(ctx, "user", err)
		}
		return u.ID, nil
	case email == "":
		return "", apierr.InvalidArgument("user_id", "give user_id or email")
	}
	norm, err := validEmail(email)
	if err != nil {
		return "", err
	}
	u, err := h.Auth.UserByEmail(ctx, norm)
	if err != nil {
		return "", h.typed(ctx, "user", err)
	}
	return u.ID, nil
}

// TierFromProto maps the API's tier to the store's; false for unspecified
// or unknown values.
func TierFromProto(t parleyv1.Tier) (store.Tier, bool) {
	switch t {
	case parleyv1.Tier_TIER_FREE:
		return store.TierFree, true
	case parleyv1.Tier_TIER_PLUS:
		return store.TierPlus, true
	case parleyv1.Tier_TIER_PRO:
		return store.TierPro, true
	case parleyv1.Tier_TIER_MAX:
		return store.TierMax, true
	}
	return "", false
}
