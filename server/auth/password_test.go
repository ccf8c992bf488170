package auth

import (
	"strings"
	"testing"
)

func TestPasswordRoundTrip(t *testing.T) {
	fast := PasswordParams{MemoryKiB: 64, Iterations: 1, Threads: 1}
	h, err := HashPassword("correct horse battery", fast)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash format: %s", h)
	}
	if ok, err := VerifyPassword("correct horse battery", h); !ok || err != nil {
		t.Fatalf("right password refused: %v %v", ok, err)
	}
	if ok, _ := VerifyPassword("correct horse batterY", h); ok {
		t.Fatal("wrong password accepted")
	}
	h2, _ := HashPassword("correct horse battery", fast)
	if h == h2 {
		t.Fatal("two hashes of one password share a salt")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=64,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=999999999,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=64,t=1,p=1$!!$AAAA"} {
		if _, err := VerifyPassword("x", bad); err == nil {
			t.Errorf("malformed hash %q accepted", bad)
		}
	}
}

func TestDefaultParamsMeetOWASP(t *testing.T) {
	p := DefaultPasswordParams
	// OWASP: m ≥ 19 MiB with t ≥ 2, p = 1 (or an equivalent trade-off).
	if p.MemoryKiB < 19*1024 || p.Iterations < 2 || p.Threads < 1 {
		t.Fatalf("below OWASP's minimum: %+v", p)
	}
}
