package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	parleyv1 "github.com/parleyhq/parley/gen/parley/v1"
	"github.com/parleyhq/parley/gen/parley/v1/parleyv1connect"
)

// modelsCmd lists a running gateway's models with the workers and pools
// serving each (AdminService.ListServedModels, as an admin's API key).
func modelsCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	gatewayURL := fs.String("gateway", "http://127.0.0.1:8080", "the gateway's base URL")
	apiKey := fs.String("api-key", os.Getenv("PARLEY_API_KEY"), "an admin user's API key (default $PARLEY_API_KEY)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *apiKey == "" {
		return errors.New("--api-key: an admin user's API key is required (parley admin create-key)")
	}
	c := parleyv1connect.NewAdminServiceClient(&http.Client{Timeout: 10 * time.Second}, strings.TrimRight(*gatewayURL, "/"))
	req := connect.NewRequest(&parleyv1.ListServedModelsRequest{})
	req.Header().Set("Authorization", "Bearer "+*apiKey)
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
			ws = append(ws, fmt.Sprintf("%s (%s, %s)", w.GetAddress(), w.GetPool(),
				strings.ToLower(strings.TrimPrefix(w.GetState().String(), "WORKER_STATE_"))))
		}
		if len(ws) == 0 {
			ws = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.GetId(),
			strings.ToLower(strings.TrimPrefix(m.GetState().String(), "SERVED_MODEL_STATE_")), price, strings.Join(ws, ", "))
	}
	return tw.Flush()
}
