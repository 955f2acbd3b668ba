package store

import (
	"context"
	"log/slog"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore forwards etcd's zap logs at warn and above to berth's slog logger, so an
// embedded etcd logs in berth's format and stays quiet unless something is wrong. While
// the store closes, etcd reports its listeners closing as errors; those are demoted to
// debug then.
type slogCore struct {
	log     *slog.Logger
	closing *atomic.Bool
	attrs   []slog.Attr
}

// expectedWarnings are etcd warnings about choices berth makes on purpose for a
// single-member etcd on loopback, or passing states of a joining member; they would only
// alarm users.
var expectedWarnings = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
	// A member joining a cluster logs these once, before its first raft term is known.
	"Failed to detect schema version":  true,
	"failed to update storage version": true,
}

func newEtcdLogger(log *slog.Logger, closing *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{log: log.With("component", "etcd"), closing: closing})
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, closing: c.closing, attrs: append(c.attrs[:len(c.attrs):len(c.attrs)], toAttrs(fields)...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slog.LevelWarn
	if e.Level >= zapcore.ErrorLevel {
		level = slog.LevelError
	}
	if c.closing.Load() || expectedWarnings[e.Message] {
		level = slog.LevelDebug
	}
	attrs := append(c.attrs[:len(c.attrs):len(c.attrs)], toAttrs(fields)...)
	c.log.LogAttrs(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func toAttrs(fields []zapcore.Field) []slog.Attr {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	return attrs
}
