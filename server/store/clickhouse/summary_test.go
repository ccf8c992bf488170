package clickhouse_test

import (
	"testing"

	"github.com/parleyhq/parley/server/store/storetest"
)

func TestUsageSummary(t *testing.T) { t.Parallel(); storetest.TestUsageSummary(t, newStore) }
