package postgres_test

import (
	"testing"

	"github.com/parleyhq/parley/server/store/storetest"
)

func TestInvitations(t *testing.T) { t.Parallel(); storetest.TestInvitations(t, newStore) }
