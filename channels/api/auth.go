package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/switchboard-gw/switchboard/channels"
)

// caller is who presented a token.
type caller struct {
	name  string // token name: the bare user id on the channel
	admin bool
}

// who is the caller's qualified identity, "api:<name>".
func (c caller) who() string { return channels.QualifiedID(Name, c.name) }

func (c caller) user() channels.User { return channels.User{ID: c.name, Name: c.name} }

type callerKey struct{}

func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// authenticate finds the token of an "Authorization: Bearer <token>"
// header. Every configured token is compared (as SHA-256 digests, in
// constant time), so the time taken says nothing about which one matched
// or how much of it.
func (a *Adapter) authenticate(r *http.Request) (caller, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return caller{}, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	var found caller
	match := 0
	for _, t := range a.tokens {
		eq := subtle.ConstantTimeCompare(sum[:], t.digest[:])
		if eq == 1 {
			found = caller{name: t.name, admin: t.admin}
		}
		match |= eq
	}
	return found, match == 1
}

// requireToken answers 401 to a request without a valid token; nothing
// else runs for it.
func (a *Adapter) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := a.authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
			writeError(w, http.StatusUnauthorized, "unauthorized",
				"send Authorization: Bearer <token>, a token of [channels.api] tokens")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}
