//go:build race

package worker_test

// raceEnabled: the race detector drops some of what sync.Pool is given, at
// random, so connect-go's and HTTP/2's pooled buffers are sometimes
// allocated anew.
const raceEnabled = true
