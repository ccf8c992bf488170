package api

import (
	"context"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
)

// ApiKeyHandler serves ApiKeyService.
type ApiKeyHandler struct {
	Auth  *auth.Authenticator
	Pages PageTokens
}

var _ parleyv1connect.ApiKeyServiceHandler = (*ApiKeyHandler)(nil)

// CreateApiKey makes a key and returns its secret once.
func (h *ApiKeyHandler) CreateApiKey(ctx context.Context, req *connect.Request[parleyv1.CreateApiKeyRequest]) (*connect.Response[parleyv1.CreateApiKeyResponse], error) {
	p, _ := auth.FromContext(ctx)
	name := req.Msg.GetName()
	switch n := utf8.RuneCountInString(name); {
	case !utf8.ValidString(name):
		return nil, apierr.InvalidArgument("name", "is not valid UTF-8")
	case n == 0:
		return nil, apierr.InvalidArgument("name", "is required")
	case n > 100:
		return nil, apierr.InvalidArgument("name", "is longer than 100 characters")
	}
	var ttl = auth.MaxAPIKeyTTL
	if d := req.Msg.GetTtl(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, apierr.InvalidArgument("ttl", "is not a valid duration")
		}
		if ttl = d.AsDuration(); ttl <= 0 {
			return nil, apierr.InvalidArgument("ttl", "must be positive")
		}
	}
	cache, ok := responseCacheFromProto(req.Msg.GetResponseCache())
	if !ok {
		return nil, apierr.InvalidArgument("response_cache", "must be RESPONSE_CACHE_MODE_ON, _OFF or unspecified")
	}
	k, secret, err := h.Auth.CreateAPIKey(ctx, p, name, ttl, cache, clientOf(req))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateApiKeyResponse{ApiKey: APIKeyToProto(k), Secret: secret}), nil
}

// ListApiKeys pages through the caller's keys, newest first.
func (h *ApiKeyHandler) ListApiKeys(ctx context.Context, req *connect.Request[parleyv1.ListApiKeysRequest]) (*connect.Response[parleyv1.ListApiKeysResponse], error) {
	p, _ := auth.FromContext(ctx)
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	cursor, err := h.Pages.Open(p.UserID, "api_keys", req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	keys, next, err := h.Auth.ListAPIKeys(store.AllowStale(ctx), p, store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListApiKeysResponse{NextPageToken: h.Pages.Seal(p.UserID, "api_keys", next)}
	for _, k := range keys {
		res.ApiKeys = append(res.ApiKeys, APIKeyToProto(k))
	}
	return connect.NewResponse(res), nil
}

// RevokeApiKey revokes one of the caller's keys.
func (h *ApiKeyHandler) RevokeApiKey(ctx context.Context, req *connect.Request[parleyv1.RevokeApiKeyRequest]) (*connect.Response[parleyv1.RevokeApiKeyResponse], error) {
	p, _ := auth.FromContext(ctx)
	id := req.Msg.GetKeyId()
	if id == "" {
		return nil, apierr.InvalidArgument("key_id", "is required")
	}
	if len(id) > 64 || !utf8.ValidString(id) {
		return nil, apierr.NotFound("API key")
	}
	k, err := h.Auth.RevokeAPIKey(ctx, p, id, clientOf(req))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.RevokeApiKeyResponse{ApiKey: APIKeyToProto(k)}), nil
}

// APIKeyToProto maps a store key to the API's (never the secret or its hash).
func APIKeyToProto(k store.APIKey) *parleyv1.ApiKey {
	pk := &parleyv1.ApiKey{
		KeyId: k.ID, Name: k.Name, Prefix: k.Prefix,
		CreatedAt: timestamppb.New(k.CreatedAt), ExpiresAt: timestamppb.New(k.ExpiresAt),
		ResponseCache: responseCacheToProto[k.ResponseCache],
	}
	if !k.LastUsedAt.IsZero() {
		pk.LastUsedAt = timestamppb.New(k.LastUsedAt)
	}
	if !k.RevokedAt.IsZero() {
		pk.RevokedAt = timestamppb.New(k.RevokedAt)
	}
	return pk
}

// responseCacheToProto maps a key's stored response cache mode to the API's.
var responseCacheToProto = map[store.ResponseCacheMode]parleyv1.ResponseCacheMode{
	store.ResponseCacheDefault: parleyv1.ResponseCacheMode_RESPONSE_CACHE_MODE_UNSPECIFIED,
	store.ResponseCacheOn:      parleyv1.ResponseCacheMode_RESPONSE_CACHE_MODE_ON,
	store.ResponseCacheOff:     parleyv1.ResponseCacheMode_RESPONSE_CACHE_MODE_OFF,
}

// responseCacheFromProto maps the API's mode to the store's; false for a
// value outside the enum.
func responseCacheFromProto(m parleyv1.ResponseCacheMode) (store.ResponseCacheMode, bool) {
	for s, p := range responseCacheToProto {
		if p == m {
			return s, true
		}
	}
	return "", false
}
