package knowledge

import "testing"

func TestCheckChunking(t *testing.T) {
	for _, c := range []struct {
		size, overlap int
		ok            bool
	}{{800, 400, true}, {100, 0, true}, {4096, 2048, true}, {99, 0, false}, {4097, 0, false}, {800, 401, false}, {800, -1, false}} {
		if err := CheckChunking(c.size, c.overlap); (err == nil) != c.ok {
			t.Errorf("%d/%d: %v", c.size, c.overlap, err)
		}
	}
}
