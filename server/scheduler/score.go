package scheduler

// scorer rates each candidate of a job in [0,1], writing into out (one per
// candidate); the picker weighs the scores.
type scorer struct {
	name   string
	weight float64
	score  func(j *pickJob, cands []candidate, out []float64)
}

// affinityScore gives 1 to the candidate the job's affinity key hashes to by
// rendezvous (highest random weight) hashing, 0 to the others: the same key
// goes to the same worker while it stays a candidate, and when it does not,
// only its keys move.
func affinityScore(j *pickJob, cands []candidate, out []float64) {
	clear(out)
	if !j.hasKey {
		return
	}
	best, bestW := -1, uint64(0)
	for i := range cands {
		if w := mix64(j.key ^ cands[i].m.hash); best < 0 || w > bestW {
			best, bestW = i, w
		}
	}
	out[best] = 1
}

// loadScore gives each candidate its spare capacity as a fraction: 1 idle,
// 0 full.
func loadScore(_ *pickJob, cands []candidate, out []float64) {
	for i, c := range cands {
		if c.capacity <= 0 {
			out[i] = 0
			continue
		}
		out[i] = max(0, 1-float64(c.load)/float64(min(c.capacity, max(scoreSlots, c.load+1))))
	}
}

// mix64 is splitmix64's finalizer: a cheap, well-spread hash of a 64-bit value.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashString is 64-bit FNV-1a, inlined so hashing a key allocates nothing.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
