package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// SessionStore keeps login sessions across restarts, so a phone that
// logged in once stays logged in when serve restarts. Sessions are stored
// by the SHA-256 of their cookie value, never the value itself. The store
// implements it; without one, sessions live in this process's memory.
type SessionStore interface {
	CreateWebSession(ctx context.Context, id string, expires time.Time) error
	// WebSession returns a session's expiry; ok is false when there is none.
	WebSession(ctx context.Context, id string) (expires time.Time, ok bool, err error)
	DeleteWebSession(ctx context.Context, id string) error
}

// sessionKey is what is stored for a cookie value.
func sessionKey(cookie string) string {
	sum := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(sum[:])
}

// storeSession records a new session in the store (best effort: the
// in-memory copy still works for this process).
func (a *Adapter) storeSession(id string, expires time.Time) {
	if a.sessionStore == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.sessionStore.CreateWebSession(ctx, sessionKey(id), expires); err != nil {
		a.log.Warn("store the web session; it lasts until restart", "err", err)
	}
}

// storedSession looks a cookie up in the store (a session from before a
// restart) and caches it.
func (a *Adapter) storedSession(id string) bool {
	if a.sessionStore == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	exp, ok, err := a.sessionStore.WebSession(ctx, sessionKey(id))
	if err != nil || !ok || time.Now().After(exp) {
		return false
	}
	a.mu.Lock()
	a.sessions[id] = exp
	a.mu.Unlock()
	return true
}

// forgetSession removes a session from the store (logout revokes it).
func (a *Adapter) forgetSession(id string) {
	if a.sessionStore == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.sessionStore.DeleteWebSession(ctx, sessionKey(id)); err != nil {
		a.log.Warn("revoke the web session", "err", err)
	}
}
