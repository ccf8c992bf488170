package gateway

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// DecodeLimits bounds what decoding one request message may cost, for the
// Connect handlers: maxBytes of message, counted after decompression — a
// compressed message stops inflating one byte past it (Connect's own gzip
// would inflate a bomb to its end just to report its size) — and
// maxElements of messages, strings and JSON values, counted by a scan of
// the encoded bytes before they are unmarshalled, so a body of millions of
// tiny parts is refused before it becomes millions of objects.
func DecodeLimits(maxBytes int64, maxElements int) connect.HandlerOption {
	return connect.WithHandlerOptions(
		connect.WithReadMaxBytes(int(maxBytes)),
		connect.WithCompression("gzip",
			func() connect.Decompressor { return &limitedGzip{max: maxBytes} },
			func() connect.Compressor { return gzip.NewWriter(io.Discard) },
		),
		connect.WithCodec(protoCodec{maxElements}),
		connect.WithCodec(jsonCodec{"json", maxElements}),
		connect.WithCodec(jsonCodec{"json; charset=utf-8", maxElements}),
	)
}

// ErrInflated reports a compressed message that inflates past its limit.
var ErrInflated = errors.New("the message inflates past the size limit")

// limitedGzip is a gzip decompressor that never inflates past max+1 bytes
// (one more than allowed, so the caller sees the message is too large).
// Connect hands it the whole compressed message in memory, so it first
// inflates that into nothing, counting: a message that would inflate past
// max is refused before a byte of it is buffered.
type limitedGzip struct {
	gzip.Reader
	max, n int64
	err    error
}

func (d *limitedGzip) Reset(r io.Reader) error {
	d.n, d.err = 0, nil
	if buf, ok := r.(interface{ Bytes() []byte }); ok {
		if err := d.Reader.Reset(bytes.NewReader(buf.Bytes())); err != nil {
			return err
		}
		if n, _ := io.CopyN(io.Discard, &d.Reader, d.max+1); n > d.max {
			d.err = connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("the message inflates past %d bytes, the limit", d.max))
		}
	}
	return d.Reader.Reset(r)
}

func (d *limitedGzip) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	left := d.max + 1 - d.n
	if left <= 0 {
		return 0, ErrInflated
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := d.Reader.Read(p)
	d.n += int64(n)
	return n, err
}

// TooManyElements reports a request body with more elements (messages,
// strings, JSON objects and arrays) than allowed.
type TooManyElements struct{ Max int }

func (e *TooManyElements) Error() string {
	return fmt.Sprintf("the request has over %d elements (messages, strings, JSON objects and arrays), the limit of one request", e.Max)
}

type protoCodec struct{ max int }

func (protoCodec) Name() string { return "proto" }

func (protoCodec) Marshal(m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", m)
	}
	return proto.Marshal(pm)
}

func (c protoCodec) Unmarshal(data []byte, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", m)
	}
	left := c.max
	if err := countProto(data, pm.ProtoReflect().Descriptor(), 0, &left, c.max); err != nil {
		return err
	}
	return proto.Unmarshal(data, pm)
}

// countProto counts the messages and strings data would unmarshal into,
// walking its wire format by the descriptor without allocating. Malformed
// data is left for proto.Unmarshal to report.
func countProto(data []byte, md protoreflect.MessageDescriptor, depth int, left *int, max int) error {
	fields := md.Fields()
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil
		}
		data = data[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return nil
			}
			data = data[n:]
			if typ == protowire.StartGroupType {
				if *left--; *left < 0 {
					return &TooManyElements{max}
				}
			}
			continue
		}
		v, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return nil
		}
		data = data[n:]
		if *left--; *left < 0 {
			return &TooManyElements{max}
		}
		if fd := fields.ByNumber(num); fd != nil && fd.Kind() == protoreflect.MessageKind && depth < 100 {
			if err := countProto(v, fd.Message(), depth+1, left, max); err != nil {
				return err
			}
		}
	}
	return nil
}

type jsonCodec struct {
	name string
	max  int
}

func (c jsonCodec) Name() string { return c.name }

func (jsonCodec) Marshal(m any) ([]byte, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", m)
	}
	return protojson.Marshal(pm)
}

func (c jsonCodec) Unmarshal(data []byte, m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", m)
	}
	if len(data) == 0 {
		return errors.New("zero-length payload is not a valid JSON object")
	}
	var s JSONScan
	if _, err := s.Write(data, c.max); err != nil {
		return err
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(data, pm)
}

// JSONScan counts the elements of JSON text — objects, arrays and strings
// (keys included) — as it is written, in pieces.
type JSONScan struct {
	n          int
	inStr, esc bool
}

// Write scans p and fails once more than max elements have been seen.
func (s *JSONScan) Write(p []byte, max int) (int, error) {
	for i, c := range p {
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			s.n++
		case '{', '[':
			s.n++
		default:
			continue
		}
		if s.n > max {
			return i, &TooManyElements{max}
		}
	}
	return len(p), nil
}

// JSONElements bounds the elements of a JSON request body as it is read:
// the body's reader fails with a *TooManyElements past max, before the
// handler has unmarshalled anything. It is for the JSON surfaces that are
// not Connect handlers (/v1); put it inside their authentication.
func JSONElements(max int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil && r.Body != http.NoBody && max > 0 {
				r.Body = &jsonBody{ReadCloser: r.Body, max: max}
			}
			next.ServeHTTP(w, r)
		})
	}
}

type jsonBody struct {
	io.ReadCloser
	scan JSONScan
	max  int
	err  error
}

func (b *jsonBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.ReadCloser.Read(p)
	if _, serr := b.scan.Write(p[:n], b.max); serr != nil {
		b.err = serr
		return 0, serr
	}
	return n, err
}

// Then composes middleware: outer runs first, then inner.
func Then(outer, inner func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler { return outer(inner(h)) }
}
