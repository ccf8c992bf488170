package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// adminClient parses the flags of a command that asks a running gateway's
// AdminService, as an admin's API key, and returns the client and the key's
// header value.
func adminClient(name string, args []string, stdout io.Writer) (parleyv1connect.AdminServiceClient, string, error) {
	fs := newFlagSet(name)
	gatewayURL := fs.String("gateway", "http://127.0.0.1:8080", "the gateway's base URL")
	apiKey := fs.String("api-key", "", "an admin user's API key (or PARLEY_API_KEY)")
	if err := parseFlags(fs, nil, args, stdout); err != nil {
		return nil, "", err
	}
	if *apiKey == "" {
		return nil, "", errors.New("--api-key: an admin user's API key is required (parley admin create-key)")
	}
	c := parleyv1connect.NewAdminServiceClient(&http.Client{Timeout: 10 * time.Second}, strings.TrimRight(*gatewayURL, "/"))
	return c, "Bearer " + *apiKey, nil
}

// lower is an enum value's name without its prefix, in lower case.
func lower(name, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}

// workersCmd lists a running gateway's workers with their pools, states and
// load (AdminService.ListWorkers).
func workersCmd(ctx context.Context, args []string, stdout io.Writer) error {
	c, auth, err := adminClient("workers", args, stdout)
	if err != nil {
		return err
	}
	req := connect.NewRequest(&parleyv1.ListWorkersRequest{})
	req.Header().Set("Authorization", auth)
	res, err := c.ListWorkers(ctx, req)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tPOOL\tSTATE\tRUNNING\tWAITING\tMAX BATCH\tADMISSION LIMIT\tMODELS")
	for _, w := range res.Msg.GetWorkers() {
		l := w.GetLoad()
		limit := "-"
		if w.GetAdmissionLimit() > 0 {
			limit = fmt.Sprint(w.GetAdmissionLimit())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", w.GetAddress(), w.GetPool(), lower(w.GetState().String(), "WORKER_STATE_"),
			l.GetRunning(), l.GetWaiting(), l.GetMaxBatch(), limit, strings.Join(w.GetModels(), ","))
	}
	return tw.Flush()
}

// modelsCmd lists a running gateway's models with the workers and pools
// serving each (AdminService.ListServedModels, as an admin's API key).
func modelsCmd(ctx context.Context, args []string, stdout io.Writer) error {
	c, auth, err := adminClient("models", args, stdout)
	if err != nil {
		return err
	}
	req := connect.NewRequest(&parleyv1.ListServedModelsRequest{})
	req.Header().Set("Authorization", auth)
	res, err := c.ListServedModels(ctx, req)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSTATE\tPRICE\tWORKERS (POOL, STATE)")
	for _, m := range res.Msg.GetModels() {
		price := "catalog"
		switch {
		case m.GetDefaultPrice():
			price = "default"
		case m.GetState() == parleyv1.ServedModelState_SERVED_MODEL_STATE_REFUSED:
			price = "none"
		}
		var ws []string
		for _, w := range m.GetWorkers() {
			ws = append(ws, fmt.Sprintf("%s (%s, %s)", w.GetAddress(), w.GetPool(), lower(w.GetState().String(), "WORKER_STATE_")))
		}
		if len(ws) == 0 {
			ws = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.GetId(), lower(m.GetState().String(), "SERVED_MODEL_STATE_"), price, strings.Join(ws, ", "))
	}
	return tw.Flush()
}
