package memlive_test

import (
	"testing"

	"github.com/parleyhq/parley/server/store"
	"github.com/parleyhq/parley/server/store/memlive"
	"github.com/parleyhq/parley/server/store/storetest"
)

func TestGenerations(t *testing.T) {
	storetest.TestGenerations(t, func(*testing.T) store.Generations { return memlive.New() })
}
