package web

import (
	"crypto/rand"
	"crypto/subtle"
	"html/template"
	"net/http"
	"net/url"
	"time"
)

// cookieName is the session cookie. Its value is a random session id; the
// store (SessionStore) keeps only its hash.
const cookieName = "switchboard_session"

// csrfHeader must be present on every POST to /api/: a cross-origin page
// cannot set it without a CORS preflight, which the API never grants.
const csrfHeader = "X-Switchboard"

// contentSecurityPolicy allows only this origin's files: no inline script or
// style, no frames, no plugins.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// validToken compares a presented token with the configured one in constant
// time (for equal lengths; the length itself is not secret). A one-time
// token is valid for one login.
func (a *Adapter) validToken(s string) bool {
	if subtle.ConstantTimeCompare([]byte(s), a.token) != 1 {
		return false
	}
	if !a.oneTime {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tokenUsed {
		return false
	}
	a.tokenUsed = true
	return true
}

// newSession records a session and sets its cookie.
func (a *Adapter) newSession(w http.ResponseWriter, r *http.Request) {
	id := rand.Text() + rand.Text()
	now := time.Now()
	a.mu.Lock()
	for sid, exp := range a.sessions {
		if now.After(exp) {
			delete(a.sessions, sid)
		}
	}
	for len(a.sessions) >= maxSessions {
		var oldest string
		for sid, exp := range a.sessions {
			if oldest == "" || exp.Before(a.sessions[oldest]) {
				oldest = sid
			}
		}
		delete(a.sessions, oldest)
	}
	a.sessions[id] = now.Add(sessionTTL)
	a.mu.Unlock()
	a.storeSession(id, now.Add(sessionTTL))
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    id,
		Path:     "/",
		MaxAge:   int(sessionTTL / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
}

// hasSession reports whether r carries the cookie of a live session.
func (a *Adapter) hasSession(r *http.Request) bool {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return false
	}
	a.mu.Lock()
	exp, ok := a.sessions[c.Value]
	if ok && time.Now().After(exp) {
		delete(a.sessions, c.Value)
		a.mu.Unlock()
		return false
	}
	a.mu.Unlock()
	return ok || a.storedSession(c.Value)
}

func (a *Adapter) endSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		a.mu.Lock()
		delete(a.sessions, c.Value)
		a.mu.Unlock()
		a.forgetSession(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// requireSession guards the API: 401 without a session; 403 for a POST
// without the CSRF header or from another origin.
func (a *Adapter) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if !a.hasSession(r) {
			apiError(w, http.StatusUnauthorized, "not logged in")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.Header.Get(csrfHeader) != "1" || !sameOrigin(r) {
				apiError(w, http.StatusForbidden, "missing "+csrfHeader+" header or foreign origin")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether r's Origin header, when present, names the
// host r was sent to.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>switchboard — log in</title>
<link rel="stylesheet" href="/static/app.css">
</head>
<body class="login">
<form class="login-box" method="post" action="/login">
<h1>switchboard</h1>
<p>Enter the token that <code>switchboard serve</code> printed when it started.</p>
{{if .}}<p class="login-error" role="alert">{{.}}</p>{{end}}
<input type="password" name="token" autocomplete="current-password" placeholder="token" autofocus required>
<button type="submit" class="primary">Log in</button>
</form>
</body>
</html>
`))

func (a *Adapter) showLogin(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := loginPage.Execute(w, msg); err != nil {
		a.log.Debug("write login page", "err", err)
	}
}

// handleLogin accepts the token from the login form.
func (a *Adapter) handleLogin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		a.showLogin(w, http.StatusForbidden, "Log in from this page.")
		return
	}
	if a.refuseIfBlocked(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil || !a.validToken(r.PostFormValue("token")) {
		a.logins.fail(clientKey(r))
		a.log.Info("web login refused", "remote", r.RemoteAddr)
		a.showLogin(w, http.StatusUnauthorized, "Wrong token.")
		return
	}
	a.logins.succeed(clientKey(r))
	a.newSession(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// handleIndex serves the page, the login form, or takes a ?token= link.
func (a *Adapter) handleIndex(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Has("token") {
		if a.refuseIfBlocked(w, r) {
			return
		}
		if !a.validToken(r.URL.Query().Get("token")) {
			a.logins.fail(clientKey(r))
			a.log.Info("web login link refused", "remote", r.RemoteAddr)
			a.showLogin(w, http.StatusUnauthorized, "Wrong token.")
			return
		}
		a.logins.succeed(clientKey(r))
		a.newSession(w, r)
		http.Redirect(w, r, "/", http.StatusSeeOther) // drop the token from the address bar
		return
	}
	if !a.hasSession(r) {
		a.showLogin(w, http.StatusOK, "")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	serveAsset(w, r, "index.html")
}

func (a *Adapter) handleLogout(w http.ResponseWriter, r *http.Request) {
	a.endSession(w, r)
	w.WriteHeader(http.StatusNoContent)
}
