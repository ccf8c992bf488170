package main

import (
	"slices"
	"strings"
	"testing"
)

// --postgres-read-urls over several clusters: K=URL names cluster K, a
// bare URL (whose query may hold "=") or a key=value DSN the first; a
// cluster out of range is refused, naming the flag.
func TestReadURLsByCluster(t *testing.T) {
	got, err := readURLsByCluster([]string{
		"postgres://r0@h/db?sslmode=disable", "1=postgres://r1@h/db?sslmode=disable", "0=postgres://r0b@h/db", "1=postgres://r1b@h/db",
		"host=r0c dbname=db",
	}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"postgres://r0@h/db?sslmode=disable", "postgres://r0b@h/db", "host=r0c dbname=db"}, {"postgres://r1@h/db?sslmode=disable", "postgres://r1b@h/db"}, nil}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"2=postgres://h/db", "99=postgres://h/db", "99999999999999999999=postgres://h/db"} {
		if _, err := readURLsByCluster([]string{bad}, 2); err == nil || !strings.Contains(err.Error(), "--postgres-read-urls") {
			t.Errorf("%s: %v, want a refusal naming --postgres-read-urls", bad, err)
		}
	}
}
