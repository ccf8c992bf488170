package chat

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/store"
)

// MemoriesInContext is the most saved memories one message is answered
// with.
const MemoriesInContext = 5

// MaxMemories bounds one user's saved memories; all of them fit in one
// read of the store.
const MaxMemories = 200

// stopWords are words too common to make a memory or a passage relevant.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about all also am an and any are as at be been but by can could d did do does for from
		had has have he her him his how i if in into is it its just ll m me my no not of on one or our re s she should so some
		t than that the their them then there they this to us ve very was we were what when where which who why will with
		would you your`) {
		stopWords[w] = true
	}
}

// RelevantMemories picks at most n of a user's memories for a message:
// those sharing the most distinctive words with it first (each shared word
// weighs its inverse document frequency among the memories, as in BM25),
// then the most recently changed. A handful of memories are thus all used,
// and of many, those about the message.
func RelevantMemories(message string, all []store.Memory, n int) []store.Memory {
	if n <= 0 || len(all) == 0 {
		return nil
	}
	query := map[string]bool{}
	for _, w := range store.QueryTerms(message) {
		if !stopWords[w] {
			query[w] = true
		}
	}
	terms := make([]map[string]int, len(all))
	df := map[string]int{}
	for i, m := range all {
		terms[i], _ = store.TermCounts(m.Text)
		for w := range terms[i] {
			if query[w] {
				df[w]++
			}
		}
	}
	type scored struct {
		m     store.Memory
		score float64
	}
	ranked := make([]scored, len(all))
	for i, m := range all {
		ranked[i].m = m
		for w := range terms[i] {
			if df[w] > 0 {
				ranked[i].score += math.Log(1 + float64(len(all))/float64(df[w]))
			}
		}
	}
	slices.SortStableFunc(ranked, func(x, y scored) int {
		if c := cmp.Compare(y.score, x.score); c != 0 {
			return c
		}
		if c := y.m.UpdatedAt.Compare(x.m.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(y.m.ID, x.m.ID)
	})
	out := make([]store.Memory, 0, min(n, len(ranked)))
	for _, r := range ranked[:min(n, len(ranked))] {
		out = append(out, r.m)
	}
	return out
}

// memories are the user's saved memories for a message of theirs, most
// relevant first: none where the store keeps none or the user turned
// memory off.
func (c *Core) memories(ctx context.Context, userID, message string) ([]store.Memory, error) {
	if c.Memories == nil {
		return nil, nil
	}
	on, err := c.Memories.Enabled(ctx, userID)
	if err != nil {
		return nil, apierr.Store(err)
	}
	if !on {
		return nil, nil
	}
	all, _, err := c.Memories.List(ctx, userID, store.PageRequest{Size: MaxMemories})
	if err != nil {
		return nil, apierr.Store(err)
	}
	return RelevantMemories(message, all, MemoriesInContext), nil
}

// memoryText is the part of the system message that gives the model the
// user's memories.
func memoryText(ms []store.Memory) string {
	if len(ms) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("The user asked you to remember these facts about them; use them where they help:")
	for _, m := range ms {
		b.WriteString("\n- ")
		b.WriteString(strings.TrimSpace(m.Text))
	}
	return b.String()
}

func memoryIDs(ms []store.Memory) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}
