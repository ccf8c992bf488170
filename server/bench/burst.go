package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

// burst opens n streams at rate streams a second (each on its own
// goroutine, whether or not the earlier ones have their first token: the
// arrivals of many independent clients) and reads every answer to its end.
func (c *loadClient) burst(ctx context.Context, t streamTarget, body []byte, n int, rate float64) *streamStats {
	var (
		mu  sync.Mutex
		all streamStats
		wg  sync.WaitGroup
	)
	start := time.Now()
	for i := range n {
		if !sleep(ctx, time.Until(start.Add(time.Duration(float64(i)/rate*float64(time.Second))))) {
			break
		}
		wg.Go(func() {
			a := c.stream(ctx, t, body, nil, nil)
			mu.Lock()
			defer mu.Unlock()
			all.answers++
			if a.err != nil {
				all.errors++
				all.errs.add(a.err)
				if all.firstErr == "" {
					all.firstErr = a.err.Error()
				}
				return
			}
			all.ttft = append(all.ttft, a.ttft)
		})
	}
	wg.Wait()
	all.elapsed = time.Since(start)
	return &all
}

// busyProcs starts n processes that each spin on a CPU until stopped: the
// other work a box shares its cores with.
func busyProcs(n int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting a busy process: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// burstRun opens n streams at BurstRate a second, tokens BurstDelay apart,
// directly against a fresh mock and through each variant's fresh gateway
// (and worker), on a quiet box and, with BurstBusy set, beside that many
// spinning processes; it reports the time to first token and what each
// path adds to the direct one under the same load (medians of the trials).
func (r *relay) burstRun(ctx context.Context, n int) error {
	rate, delay := r.cfg.BurstRate, r.cfg.BurstDelay
	if rate <= 0 {
		rate = 1000
	}
	if delay <= 0 {
		delay = 100 * time.Millisecond
	}
	busy := []int{0}
	if r.cfg.BurstBusy > 0 {
		busy = append(busy, r.cfg.BurstBusy)
	}
	type cell struct{ samples []loadSample }
	variants := r.variants(ctx)
	names := append([]string{"direct"}, names(variants)...)
	results := make(map[int]map[string]*cell)
	for _, b := range busy {
		results[b] = make(map[string]*cell)
		for _, name := range names {
			results[b][name] = &cell{}
		}
	}
	for trial := range r.cfg.Trials {
		for _, b := range busy {
			for i, name := range names {
				var v *variant
				if i > 0 {
					v = variants[i-1]
				}
				r.progress("burst of %d streams at %.0f/s, %d busy processes, trial %d: %s", n, rate, b, trial+1, name)
				mock, t, err := r.startPath(ctx, v)
				if err != nil {
					return err
				}
				client := newLoadClient(n, 1)
				// Warm: the first requests of a process pay for its caches.
				r.count(client.load(ctx, t, t.body(pace(0, r.cfg.Tokens), r.cfg.Tokens), 16, 64))
				stop, err := busyProcs(b)
				if err != nil {
					return err
				}
				var gw0 float64
				if v != nil {
					gw0, _ = cpuSeconds(v.gateway.pid())
				}
				var profiles sync.WaitGroup
				if trial == 0 && r.cfg.ProfileDir != "" && v != nil {
					for _, dp := range []struct{ addr, name string }{{v.gDebug, "gateway"}, {v.wDebug, "worker"}} {
						if dp.addr == "" {
							continue
						}
						path := filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("burst%d-%s-busy%d-%s.pprof", n, profileName(v.name), b, dp.name))
						profiles.Go(func() {
							if err := fetchProfile(ctx, dp.addr, "profile", r.cfg.ProfileSeconds, path); err != nil {
								r.progress("profile of the %s: %v", dp.name, err)
							}
						})
					}
				}
				st := r.count(client.burst(ctx, t, t.body(pace(delay, r.cfg.Tokens), r.cfg.Tokens), n, rate))
				profiles.Wait()
				var gw1 float64
				if v != nil {
					gw1, _ = cpuSeconds(v.gateway.pid())
				}
				stop()
				client.close()
				c := results[b][name]
				c.samples = append(c.samples, loadSample{
					answers: st.answers, errors: st.errors, firstErr: st.firstErr, errs: st.errs,
					ttft50: percentile(st.ttft, 0.5), ttft99: percentile(st.ttft, 0.99), elapsed: st.elapsed,
					cpuGateway: (gw1 - gw0) / float64(max(st.answers-st.errors, 1)) * 1000,
				})
				if v != nil {
					v.stop()
				}
				mock.stop()
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	fmt.Fprintf(r.out, "burst: %d streams opened at %.0f a second, %d tokens %v apart each; medians of %d trials\n", n, rate, r.cfg.Tokens, delay, r.cfg.Trials)
	tw := tabwriter.NewWriter(r.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "busy processes\tpath\tok\terrors\tTTFT p50\tTTFT p99\tadded p50\tadded p99\tgateway CPU-s/1k streams\t")
	for _, b := range busy {
		direct := results[b]["direct"].samples
		for _, name := range names {
			c := results[b][name]
			for _, s := range c.samples {
				writeKinds(r.out, "  "+name+": ", s.errs.list(), s.errs.total, s.answers)
			}
			ok := medianOf(c.samples, func(x loadSample) int { return x.answers - x.errors })
			errs := medianOf(c.samples, func(x loadSample) int { return x.errors })
			if ok == 0 {
				fmt.Fprintf(tw, "%d\t%s\t0\t%d\t-\t-\t-\t-\t-\t\n", b, name, errs)
				continue
			}
			p50 := medianOf(c.samples, func(x loadSample) time.Duration { return x.ttft50 })
			p99 := medianOf(c.samples, func(x loadSample) time.Duration { return x.ttft99 })
			added50, added99, cpu := "", "", "-"
			if name != "direct" {
				// Each trial against the same trial's direct run.
				var a50, a99 []time.Duration
				for i, s := range c.samples {
					if i < len(direct) {
						a50 = append(a50, s.ttft50-direct[i].ttft50)
						a99 = append(a99, s.ttft99-direct[i].ttft99)
					}
				}
				added50, added99 = plusMS(percentile(a50, 0.5)), plusMS(percentile(a99, 0.5))
				cpu = strconv.FormatFloat(medianOf(c.samples, func(x loadSample) float64 { return x.cpuGateway }), 'f', 2, 64)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", b, name, ok, errs,
				fmtMS(p50), fmtMS(p99), added50, added99, cpu)
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(r.out)
	return nil
}

func fmtMS(d time.Duration) string  { return fmt.Sprintf("%.1fms", float64(d)/1e6) }
func plusMS(d time.Duration) string { return fmt.Sprintf("%+.1fms", float64(d)/1e6) }
