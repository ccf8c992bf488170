package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/webhook"
)

// WebhookHandler serves WebhookService over the webhook service
// (server/webhook).
type WebhookHandler struct {
	Webhooks *webhook.Service
	Pages    PageTokens
}

func endpointToProto(e store.WebhookEndpoint) *parleyv1.WebhookEndpoint {
	return &parleyv1.WebhookEndpoint{Id: e.ID, Url: e.URL, Events: e.Events, Description: e.Description, CreatedAt: timestamppb.New(e.CreatedAt)}
}

var deliveryStatuses = map[string]parleyv1.WebhookDeliveryStatus{
	store.DeliveryPending:   parleyv1.WebhookDeliveryStatus_WEBHOOK_DELIVERY_STATUS_PENDING,
	store.DeliveryDelivered: parleyv1.WebhookDeliveryStatus_WEBHOOK_DELIVERY_STATUS_DELIVERED,
	store.DeliveryFailed:    parleyv1.WebhookDeliveryStatus_WEBHOOK_DELIVERY_STATUS_FAILED,
}

func deliveryToProto(d store.WebhookDelivery) *parleyv1.WebhookDelivery {
	pd := &parleyv1.WebhookDelivery{Id: d.ID, EndpointId: d.EndpointID, Type: d.Type, Payload: d.Payload, Status: deliveryStatuses[d.Status],
		Attempts: int32(d.Attempts), LastStatusCode: int32(d.LastStatusCode), LastError: d.LastError, CreatedAt: timestamppb.New(d.CreatedAt),
		DeliveredAt: timeOrNil(d.DeliveredAt)}
	if d.Status == store.DeliveryPending {
		pd.NextAttemptAt = timestamppb.New(d.NextAttemptAt)
	}
	return pd
}

// CreateWebhookEndpoint adds one of the caller's endpoints.
func (h *WebhookHandler) CreateWebhookEndpoint(ctx context.Context, req *connect.Request[parleyv1.CreateWebhookEndpointRequest]) (*connect.Response[parleyv1.CreateWebhookEndpointResponse], error) {
	e, err := h.Webhooks.Create(ctx, webhook.NewEndpoint{URL: req.Msg.GetUrl(), Events: req.Msg.GetEvents(), Description: req.Msg.GetDescription()})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.CreateWebhookEndpointResponse{Endpoint: endpointToProto(e), Secret: e.Secret}), nil
}

// ListWebhookEndpoints lists the caller's endpoints.
func (h *WebhookHandler) ListWebhookEndpoints(ctx context.Context, _ *connect.Request[parleyv1.ListWebhookEndpointsRequest]) (*connect.Response[parleyv1.ListWebhookEndpointsResponse], error) {
	eps, err := h.Webhooks.List(ctx)
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListWebhookEndpointsResponse{}
	for _, e := range eps {
		res.Endpoints = append(res.Endpoints, endpointToProto(e))
	}
	return connect.NewResponse(res), nil
}

// DeleteWebhookEndpoint removes one of the caller's endpoints.
func (h *WebhookHandler) DeleteWebhookEndpoint(ctx context.Context, req *connect.Request[parleyv1.DeleteWebhookEndpointRequest]) (*connect.Response[parleyv1.DeleteWebhookEndpointResponse], error) {
	if err := h.Webhooks.Delete(ctx, req.Msg.GetEndpointId()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.DeleteWebhookEndpointResponse{}), nil
}

// ListWebhookDeliveries pages through the deliveries to an endpoint.
func (h *WebhookHandler) ListWebhookDeliveries(ctx context.Context, req *connect.Request[parleyv1.ListWebhookDeliveriesRequest]) (*connect.Response[parleyv1.ListWebhookDeliveriesResponse], error) {
	p, _ := auth.FromContext(ctx)
	size, err := PageSize(req.Msg.GetPageSize())
	if err != nil {
		return nil, err
	}
	list := "webhook-deliveries:" + req.Msg.GetEndpointId()
	cursor, err := h.Pages.Open(p.UserID, list, req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	ds, next, err := h.Webhooks.Deliveries(ctx, req.Msg.GetEndpointId(), store.PageRequest{Size: size, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	res := &parleyv1.ListWebhookDeliveriesResponse{NextPageToken: h.Pages.Seal(p.UserID, list, next)}
	for _, d := range ds {
		res.Deliveries = append(res.Deliveries, deliveryToProto(d))
	}
	return connect.NewResponse(res), nil
}

// RedeliverWebhook delivers one event again, now.
func (h *WebhookHandler) RedeliverWebhook(ctx context.Context, req *connect.Request[parleyv1.RedeliverWebhookRequest]) (*connect.Response[parleyv1.RedeliverWebhookResponse], error) {
	d, err := h.Webhooks.Redeliver(ctx, req.Msg.GetEndpointId(), req.Msg.GetDeliveryId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&parleyv1.RedeliverWebhookResponse{Delivery: deliveryToProto(d)}), nil
}
