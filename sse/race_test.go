//go:build race

package sse

// raceEnabled: the race detector drops some of what sync.Pool is given, at
// random, so a pooled buffer is sometimes allocated anew.
const raceEnabled = true
