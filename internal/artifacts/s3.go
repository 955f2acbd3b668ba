package artifacts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 keeps artifacts in a bucket of an S3-compatible store, through minio-go
// (docs/dependencies.md): an upload of unknown length goes in parts of s3PartSize, so
// a server holds at most one part of each upload in memory.
type S3 struct {
	c      *minio.Client
	bucket string
	prefix string
}

// ErrStore wraps the errors of the S3 store (its answers, or no answer).
var ErrStore = errors.New("the S3 store failed")

// s3PartSize is the part of a multipart upload, the memory an upload holds (S3's
// minimum is 5 MiB; 10,000 parts of 8 MiB hold 78 GiB, more than any bound berth sets);
// s3SingleMax the longest body sent in one PUT.
const (
	s3PartSize  = 8 << 20
	s3SingleMax = 1 << 20
)

// S3Config configures an S3 backend. AccessKey and SecretKey are read from berth
// secrets by the Router; they are never logged nor returned.
type S3Config struct {
	Endpoint, Bucket, Region, KeyPrefix string
	Insecure                            bool
	AccessKey, SecretKey                string
	// Transport is shared by the clients (NewTransport); nil: a guarded one.
	Transport http.RoundTripper
}

// NewS3 makes an S3 backend; it does not talk to the store yet.
func NewS3(cfg S3Config) (*S3, error) {
	tr := cfg.Transport
	if tr == nil {
		tr = NewTransport(false)
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       !cfg.Insecure,
		Region:       cfg.Region,
		Transport:    tr,
		BucketLookup: minio.BucketLookupAuto,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: s3 endpoint %s: %w", ErrStore, cfg.Endpoint, err)
	}
	prefix := cfg.KeyPrefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &S3{c: c, bucket: cfg.Bucket, prefix: prefix}, nil
}

// Put uploads r to the bucket, digesting it on the way; past max the upload fails
// and nothing is kept (a multipart upload is aborted). A body that ends within
// s3SingleMax goes in one PUT of known length (S3 wants one); a longer one in parts.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, max int64) (Info, error) {
	d := newDigester(r, max)
	head := make([]byte, s3SingleMax)
	n, err := io.ReadFull(d, head)
	opts := minio.PutObjectOptions{PartSize: s3PartSize, ContentType: "application/octet-stream",
		// UNSIGNED-PAYLOAD, not the aws-chunked streaming signature minio-go uses over
		// plain HTTP, which some S3-compatible stores store verbatim.
		DisableContentSha256: true}
	switch {
	case errors.Is(err, ErrTooLarge):
		return Info{}, err
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		_, err = s.c.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(head[:n]), int64(n), opts)
	case err != nil:
		return Info{}, fmt.Errorf("s3 put %s/%s: read: %w", s.bucket, s.prefix+key, err)
	default:
		_, err = s.c.PutObject(ctx, s.bucket, s.prefix+key, io.MultiReader(bytes.NewReader(head), d), -1, opts)
	}
	if errors.Is(err, ErrTooLarge) || d.n > max {
		return Info{}, &TooLargeError{Max: max}
	}
	if err != nil {
		return Info{}, fmt.Errorf("%w: s3 put %s/%s: %w", ErrStore, s.bucket, s.prefix+key, err)
	}
	return d.info(), nil
}

// Get opens the object at key.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	st, err := s.c.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		if notFound(err) {
			return nil, Info{}, fmt.Errorf("%w: no object %s in bucket %s", ErrNotFound, s.prefix+key, s.bucket)
		}
		return nil, Info{}, fmt.Errorf("%w: s3 stat %s/%s: %w", ErrStore, s.bucket, s.prefix+key, err)
	}
	obj, err := s.c.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, fmt.Errorf("%w: s3 get %s/%s: %w", ErrStore, s.bucket, s.prefix+key, err)
	}
	return obj, Info{Size: st.Size}, nil
}

// Delete removes the object at key (a missing one is no error).
func (s *S3) Delete(ctx context.Context, key string) error {
	err := s.c.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
	if err != nil && !notFound(err) {
		return fmt.Errorf("%w: s3 delete %s/%s: %w", ErrStore, s.bucket, s.prefix+key, err)
	}
	return nil
}

func notFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == "NoSuchKey" || code == "NotFound" || minio.ToErrorResponse(err).StatusCode == http.StatusNotFound
}
