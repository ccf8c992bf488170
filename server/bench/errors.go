package bench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"connectrpc.com/connect"
)

// ErrorKind is one kind of failure and how many requests met it.
type ErrorKind struct {
	Kind    string // e.g. "HTTP 429", "rpc resource_exhausted", "network: dial"
	Count   int
	Example string // the first such error's message
}

// errorTally counts failed requests by kind.
type errorTally struct {
	total int
	kinds map[string]*ErrorKind
}

// httpStatusError is an answer with a status other than 200.
type httpStatusError struct {
	status int
	body   string
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

// kindOf names err's kind: the HTTP status, the RPC code, the network
// operation, or the message itself.
func kindOf(err error) string {
	var he *httpStatusError
	var ce *connect.Error
	var ne *net.OpError
	switch {
	case errors.As(err, &he):
		return fmt.Sprintf("HTTP %d", he.status)
	case errors.As(err, &ce):
		return "rpc " + ce.Code().String()
	case errors.As(err, &ne):
		return "network: " + ne.Op
	}
	s := err.Error()
	if i := strings.IndexAny(s, ":\n"); i > 0 {
		s = s[:i]
	}
	return s
}

func (t *errorTally) add(err error) {
	if err == nil {
		return
	}
	if t.kinds == nil {
		t.kinds = map[string]*ErrorKind{}
	}
	t.total++
	k := kindOf(err)
	if t.kinds[k] == nil {
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		t.kinds[k] = &ErrorKind{Kind: k, Example: msg}
	}
	t.kinds[k].Count++
}

func (t *errorTally) merge(o *errorTally) {
	if t.kinds == nil {
		t.kinds = map[string]*ErrorKind{}
	}
	t.total += o.total
	for k, v := range o.kinds {
		if t.kinds[k] == nil {
			t.kinds[k] = &ErrorKind{Kind: k, Example: v.Example}
		}
		t.kinds[k].Count += v.Count
	}
}

// list is the kinds, most frequent first.
func (t *errorTally) list() []ErrorKind {
	var out []ErrorKind
	for _, k := range t.kinds {
		out = append(out, *k)
	}
	slices.SortFunc(out, func(a, b ErrorKind) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

// writeKinds prints "errors: N of M requests failed" and one line per kind.
func writeKinds(w io.Writer, indent string, kinds []ErrorKind, errs, requests int) {
	if errs == 0 {
		return
	}
	fmt.Fprintf(w, "%serrors: %d of %d requests failed (%.1f%%), by kind:\n", indent, errs, requests, 100*float64(errs)/float64(max(requests, 1)))
	for _, k := range kinds {
		fmt.Fprintf(w, "%s  %6d  %s  (first: %s)\n", indent, k.Count, k.Kind, k.Example)
	}
}

// CheckErrors fails when more than maxRate of requests failed, naming the
// most frequent kind and, for refusals over a limit, what limits them.
func CheckErrors(kinds []ErrorKind, errs, requests int, maxRate float64) error {
	if errs == 0 || float64(errs) <= maxRate*float64(requests) {
		return nil
	}
	msg := fmt.Sprintf("%d of %d requests failed (%.1f%%), above --max-error-rate %g", errs, requests, 100*float64(errs)/float64(max(requests, 1)), maxRate)
	if len(kinds) > 0 {
		msg += fmt.Sprintf("; most were %s (%d)", kinds[0].Kind, kinds[0].Count)
		if k := kinds[0].Kind; k == "HTTP 429" || k == "rpc resource_exhausted" {
			msg += ": refused as over a limit — the gateway's request rate (parley serve --rate-limits; off to measure without it) or the account's tier"
		}
	}
	return errors.New(msg)
}
