// Package scheduler places generations on workers, inside every gateway (there
// is no central scheduler: each gateway schedules from the load its workers
// push). It reads as a pipeline, after the Gateway API Inference Extension:
//
//   - filters drop unfit workers: not serving the model, not connected, ejected
//     after failures, tried already, or full (filter.go);
//   - scorers rate the rest in [0,1]: prefix affinity by rendezvous hashing of
//     the job's affinity key, and spare capacity (score.go);
//   - a picker chooses: the highest weighted score, guarded as SGLang's
//     cache-aware router is — when the affinity target is loaded past an absolute
//     and a relative bound over the least loaded worker, the job spills to the
//     less loaded of two random workers instead (pick.go).
//
// When every worker is full a job waits in a bounded per-model queue ordered by
// priority (tier), then arrival; past the bound or the wait it is refused with
// unavailable and a retry-after (queue.go). It waits only for workers that are
// busy: with none for the model connected and in rotation (all down, ejected,
// or already tried by the job), it is refused at once, and the jobs queued are
// refused as the last such worker goes, so no caller holds its balance for a
// wait that cannot end well. A worker not yet connected is waited for during
// its first ConnectGrace only. A worker that fails before the first
// token is ejected with exponential back-off and the job retried on another, at
// most twice; after the first token the failure ends the generation
// (scheduler.go). Workers come from AddWorker and from addresses and DNS names
// re-resolved periodically (registry.go).
//
// Workers are grouped into ordered pools (a region's GPU cluster each; one
// pool, DefaultPool, unless configured). The pipeline runs over the pools in
// order: a job takes the first pool with a fit worker, and passes over a pool
// that cannot take it only when that pool is down for its model, or
// saturated — the job has waited SpillWait for it, which marks the pool
// saturated for SpillHold. So the primary is filled first and gets traffic
// back as soon as it has room or is up again (pool.go).
//
// A worker that reports no batch size is not capped at a guess: it is
// admitted to freely, held at what it runs while it reports requests
// waiting, and capped by an AIMD limit on its measured time to first token
// once that rises over its baseline and a one-token probe confirms that the
// worker queues rather than that the requests are slow by themselves
// (limit.go, member.go).
package scheduler
