package main

import (
	"context"
	"log/slog"
	"sort"

	"github.com/switchboard-gw/switchboard/sandbox"
)

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

// redactingHandler scrubs known secrets from every log record.
type redactingHandler struct {
	next slog.Handler
	red  *sandbox.Redactor
}

func newRedactingHandler(next slog.Handler, red *sandbox.Redactor) slog.Handler {
	return &redactingHandler{next: next, red: red}
}

func (h *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.red.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.red.Redact(v.String()))
	case slog.KindGroup:
		var as []any
		for _, g := range v.Group() {
			as = append(as, h.attr(g))
		}
		return slog.Group(a.Key, as...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.red.Redact(err.Error()))
		}
		return slog.String(a.Key, h.red.Redact(v.String()))
	}
	return a
}

func (h *redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &redactingHandler{next: h.next.WithAttrs(red), red: h.red}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{next: h.next.WithGroup(name), red: h.red}
}
