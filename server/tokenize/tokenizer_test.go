package tokenize

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

func TestHelloWorld(t *testing.T) {
	tok := Default()
	got := tok.Encode("hello world")
	if want := []int{24912, 2375}; !slices.Equal(got, want) {
		t.Fatalf("Encode(hello world) = %v, want %v", got, want)
	}
	if n := tok.Count("hello world"); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
	if s := tok.Decode(got); s != "hello world" {
		t.Fatalf("Decode = %q", s)
	}
	if tok.Count("") != 0 || len(tok.Encode("")) != 0 {
		t.Fatal("empty text has tokens")
	}
}

func TestDecodeSpecialAndUnknown(t *testing.T) {
	tok := Default()
	if s := tok.Decode([]int{199999, -1, 1 << 30}); s != "<|endoftext|>" {
		t.Fatalf("Decode = %q", s)
	}
	// Text that spells a special token is ordinary text.
	if ids := tok.Encode("<|endoftext|>"); slices.Contains(ids, 199999) {
		t.Fatalf("Encode produced a special token: %v", ids)
	}
}

var (
	refOnce sync.Once
	ref     *tiktoken.Tiktoken
)

// reference is tiktoken-go itself, loaded from the same embedded file.
func reference(t testing.TB) *tiktoken.Tiktoken {
	refOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		enc, err := tiktoken.GetEncoding(Encoding)
		if err != nil {
			t.Fatal(err)
		}
		ref = enc
	})
	return ref
}

// corpus covers the pre-tokenizer's alternatives: contractions, case runs, numbers,
// punctuation with trailing newlines and slashes, every kind of whitespace run,
// marks, scripts without case, emoji and invalid UTF-8.
var corpus = []string{
	"hello world",
	"Hello, World! It's John's book; they're here, we've gone, I'm sure, you'll see, he'd go.",
	"IT'S DON'T WE'LL THEY'RE I'M YOU'VE HE'D 'S 'x '",
	"HTTPServer parseJSON XMLHttpRequest iPhone McDonald's ÉCOLE élève Straße ǅemal",
	"1 12 123 1234 12345 3.14159 1,000,000 ½ ⅓ Ⅻ ٣٤٥ १२३",
	"path/to/file.go\n// comment\r\n/* block */\n\n\n  x",
	"a  b   c    d\t\te\n \n  \n\tf  \r\n\r\n  ",
	"trailing spaces   ",
	"   leading spaces",
	"\u00a0nbsp\u2003em\u3000ideographic\u0085nel\u2028ls",
	"e\u0301 a\u0300\u0301b \u0301\u0302 1\u0301 .\u0301x",
	"日本語のテキストです。中文文本。한국어 텍스트.",
	"Привет, мир! Γειά σου Κόσμε. שלום עולם. مرحبا بالعالم",
	"emoji 😀👍🏽 👨‍👩‍👧 flags 🇫🇷 and symbols ∑∫√ ©®™",
	"code: func main() { fmt.Println(\"hi\") }\n\tif x != nil {\n\t\treturn x\n\t}\n",
	"!!!??? ... --- ___ *** ### @@@ $$$ %%% ^^^ &&& |||",
	" !x ?y .z  ,w",
	"<|endoftext|> <|endofprompt|>",
	"invalid \xff\xfe utf8 \xc3 end \xe2\x82",
	strings.Repeat(" ", 200) + "x" + strings.Repeat("-", 150) + strings.Repeat("\n", 80),
	strings.Repeat("abcdefghij", 40),
}

func TestMatchesTiktoken(t *testing.T) {
	tok, enc := Default(), reference(t)
	for _, s := range corpus {
		want := enc.Encode(s, nil, nil)
		if got := tok.Encode(s); !slices.Equal(got, want) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", s, got, want)
		}
		if got := tok.Count(s); got != len(want) {
			t.Errorf("Count(%q) = %d, want %d", s, got, len(want))
		}
		if utf8.ValidString(s) {
			if got := tok.Decode(want); got != s {
				t.Errorf("Decode(Encode(%q)) = %q", s, got)
			}
		}
	}
}

// TestMatchesTiktokenRandom compares against the library on random strings drawn
// from an alphabet that mixes every character kind.
func TestMatchesTiktokenRandom(t *testing.T) {
	tok, enc := Default(), reference(t)
	alphabet := []rune("aZé'sStTlLdDmMrReEvV 0123456789\t\n\r.,/-_!?\u00a0\u0301\u0300Ǆǅ日本ʰ😀٣Ⅻ\u2028\"#()[]{}")
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1000
	if testing.Short() {
		n = 300
	}
	for range n {
		r := make([]rune, rng.IntN(40))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(r)
		want := enc.Encode(s, nil, nil)
		if got := tok.Encode(s); !slices.Equal(got, want) {
			t.Fatalf("Encode(%q)\n got %v\nwant %v", s, got, want)
		}
	}
}

func FuzzMatchesTiktoken(f *testing.F) {
	for _, s := range corpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := reference(t).Encode(s, nil, nil)
		if got := Default().Encode(s); !slices.Equal(got, want) {
			t.Fatalf("Encode(%q)\n got %v\nwant %v", s, got, want)
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	tok := Default()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				s := corpus[i%len(corpus)]
				if tok.Count(s) != len(tok.Encode(s)) {
					t.Error("Count disagrees with Encode")
				}
			}
		})
	}
	wg.Wait()
}

func TestCountDoesNotAllocate(t *testing.T) {
	tok := Default()
	s := kilobyte()
	if n := testing.AllocsPerRun(100, func() { tok.Count(s) }); n != 0 {
		t.Fatalf("Count allocates %v times per call", n)
	}
}

// kilobyte is about 1 KB of ordinary English prose.
func kilobyte() string {
	const p = "Alice was beginning to get very tired of sitting by her sister on the bank, " +
		"and of having nothing to do: once or twice she had peeped into the book her sister " +
		"was reading, but it had no pictures or conversations in it, \"and what is the use of " +
		"a book,\" thought Alice \"without pictures or conversations?\" "
	s := strings.Repeat(p, 1+1024/len(p))
	return s[:1024]
}

func BenchmarkCount(b *testing.B) {
	tok := Default()
	s := kilobyte()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Count(s)
	}
}

func BenchmarkEncode(b *testing.B) {
	tok := Default()
	s := kilobyte()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(s)
	}
}

// BenchmarkTiktokenGo is the library this package replaces on the hot path, for
// comparison.
func BenchmarkTiktokenGo(b *testing.B) {
	enc := reference(b)
	s := kilobyte()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		enc.Encode(s, nil, nil)
	}
}

// TestLongPiecesMatchTiktoken checks the heap merge used for long runs
// without spaces against the library, on pieces just past the switch and
// far past it.
func TestLongPiecesMatchTiktoken(t *testing.T) {
	tok, enc := Default(), reference(t)
	rng := rand.New(rand.NewPCG(3, 4))
	letters := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789éü日本")
	for _, n := range []int{largePiece + 1, 300, 1000, 3000} {
		for range 5 {
			r := make([]rune, n)
			for i := range r {
				r[i] = letters[rng.IntN(len(letters))]
			}
			s := string(r)
			if got, want := tok.Encode(s), enc.Encode(s, nil, nil); !slices.Equal(got, want) {
				t.Fatalf("Encode of a %d-rune piece differs from tiktoken", n)
			}
		}
	}
	s := strings.Repeat("ab", 2000) + strings.Repeat(".", 700)
	if got, want := tok.Encode(s), enc.Encode(s, nil, nil); !slices.Equal(got, want) {
		t.Fatal("Encode of a repetitive run differs from tiktoken")
	}
}

// TestHugePieceIsNotQuadratic: 256 KiB without a space tokenizes in a
// fraction of a second, even under the race detector (the quadratic merge
// took minutes).
func TestHugePieceIsNotQuadratic(t *testing.T) {
	b := make([]byte, 256<<10)
	for i := range b {
		b[i] = 'a' + byte(i*7%26)
	}
	start := time.Now()
	n := Default().Count(string(b))
	if d := time.Since(start); d > 5*time.Second || n == 0 {
		t.Fatalf("%d tokens in %v", n, d)
	}
	t.Logf("256 KiB without spaces: %d tokens in %v", n, time.Since(start))
}
