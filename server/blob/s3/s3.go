// Package s3 is the scale-mode blob.Blobs: objects in an S3 bucket
// (minio-go/v7, any S3-compatible server: AWS, versitygw, SeaweedFS…),
// uploaded and downloaded by clients through presigned URLs, so blob bytes
// never pass through a gateway.
//
// A presigned PUT signs Content-Type and Content-Length, so the server
// refuses a body of another length or type; a presigned GET names the type
// to serve. Unlike the local store, S3 cannot make an upload URL single-use:
// a replayed PUT within its (short) expiry overwrites the same key, and the
// attachment service re-checks the bytes when the upload completes.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/parleyhq/parley/server/blob"
)

// Config says where the bucket is.
type Config struct {
	// Endpoint is the server's base URL, http://host:port or https://host.
	Endpoint string
	// Bucket is created if it does not exist.
	Bucket string
	// AccessKey and SecretKey are the credentials (from the environment:
	// PARLEY_S3_ACCESS_KEY, PARLEY_S3_SECRET_KEY).
	AccessKey, SecretKey string
	// Region defaults to us-east-1.
	Region string
}

// Store is a blob.Blobs in one S3 bucket.
type Store struct {
	c      *minio.Client
	bucket string
}

var _ blob.Blobs = (*Store)(nil)

// Open connects, checks the credentials and creates the bucket if missing.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("s3: endpoint %q: want http://host:port or https://host", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket given")
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       u.Scheme == "https",
		Region:       region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	s := &Store{c: c, bucket: cfg.Bucket}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3: bucket %s: %w", cfg.Bucket, err)
	}
	if !ok {
		if err := c.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: region}); err != nil {
			// Another gateway may have made it meanwhile.
			if ok, err2 := c.BucketExists(ctx, cfg.Bucket); err2 != nil || !ok {
				return nil, fmt.Errorf("s3: make bucket %s: %w", cfg.Bucket, err)
			}
		}
	}
	return s, nil
}

// Ping checks that the bucket answers, for /readyz.
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.c.BucketExists(ctx, s.bucket); err != nil {
		return fmt.Errorf("s3: %w", err)
	}
	return nil
}

func clampExpiry(expiry time.Duration) time.Duration {
	if expiry <= 0 || expiry > blob.MaxURLExpiry {
		return blob.MaxURLExpiry
	}
	// S3 presigns whole seconds.
	return max(expiry.Truncate(time.Second), time.Second)
}

// SignedUploadURL implements blob.Blobs: a presigned PUT whose signature
// covers Content-Type and Content-Length.
func (s *Store) SignedUploadURL(ctx context.Context, key string, size int64, mime string, expiry time.Duration) (blob.Upload, error) {
	if size < 0 {
		return blob.Upload{}, fmt.Errorf("s3: negative size %d", size)
	}
	expiry = clampExpiry(expiry)
	h := http.Header{}
	h.Set("Content-Type", mime)
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	u, err := s.c.PresignHeader(ctx, http.MethodPut, s.bucket, key, expiry, nil, h)
	if err != nil {
		return blob.Upload{}, fmt.Errorf("s3: presign PUT: %w", err)
	}
	return blob.Upload{
		URL:       u.String(),
		Method:    http.MethodPut,
		Headers:   map[string]string{"Content-Type": mime},
		ExpiresAt: time.Now().Add(expiry),
	}, nil
}

// SignedDownloadURL implements blob.Blobs: a presigned GET served as mime.
func (s *Store) SignedDownloadURL(ctx context.Context, key, mime string, expiry time.Duration) (string, time.Time, error) {
	expiry = clampExpiry(expiry)
	q := url.Values{}
	if mime != "" {
		q.Set("response-content-type", mime)
	}
	u, err := s.c.PresignedGetObject(ctx, s.bucket, key, expiry, q)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("s3: presign GET: %w", err)
	}
	return u.String(), time.Now().Add(expiry), nil
}

// Put implements blob.Blobs.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if _, err := s.c.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{}); err != nil {
		return fmt.Errorf("s3: put %s: %w", key, err)
	}
	return nil
}

// Get implements blob.Blobs.
func (s *Store) Get(ctx context.Context, key string) (blob.Object, error) {
	o, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, mapErr(err, key)
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		return nil, mapErr(err, key)
	}
	return &object{Object: o, size: st.Size}, nil
}

type object struct {
	*minio.Object
	size int64
}

func (o *object) Size() int64 { return o.size }

// Delete implements blob.Blobs; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(mapErr(err, key), blob.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("s3: delete %s: %w", key, err)
	}
	return nil
}

func mapErr(err error, key string) error {
	var er minio.ErrorResponse
	if errors.As(err, &er) && (er.Code == "NoSuchKey" || er.StatusCode == http.StatusNotFound) {
		return fmt.Errorf("%w: %s", blob.ErrNotFound, key)
	}
	return fmt.Errorf("s3: %s: %w", key, err)
}
