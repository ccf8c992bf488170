package postgres_test

import (
	"testing"

	"github.com/parleyhq/parley/server/store/storetest"
)

func TestSearch(t *testing.T)        { t.Parallel(); storetest.TestSearch(t, newStore) }
func TestShares(t *testing.T)        { t.Parallel(); storetest.TestShares(t, newStore) }
func TestVectorStores(t *testing.T)  { t.Parallel(); storetest.TestVectorStores(t, newStore) }
func TestUsageSummary(t *testing.T)  { t.Parallel(); storetest.TestUsageSummary(t, newStore) }
func TestUserDirectory(t *testing.T) { t.Parallel(); storetest.TestUserDirectory(t, newStore) }
