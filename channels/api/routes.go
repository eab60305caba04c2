package api

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"

	"github.com/switchboard-gw/switchboard/channels"
)

// route is one operation of the API; the table drives the mux and is
// checked against the served OpenAPI spec.
type route struct {
	method, path string
	handle       http.HandlerFunc
}

func (a *Adapter) routeTable() []route {
	return []route{
		{"GET", "/v1/agents", a.handleAgents},
		{"POST", "/v1/conversations", a.handleCreateConversation},
		{"GET", "/v1/conversations", a.handleListConversations},
		{"GET", "/v1/conversations/{id}", a.handleGetConversation},
		{"GET", "/v1/conversations/{id}/messages", a.handleMessages},
		{"POST", "/v1/conversations/{id}/messages", a.handlePostMessage},
		{"GET", "/v1/conversations/{id}/stream", a.handleStream},
		{"POST", "/v1/conversations/{id}/cancel", a.handleCancel},
		{"GET", "/v1/approvals", a.handleApprovals},
		{"POST", "/v1/approvals/{id}", a.handleDecide},
		{"GET", "/v1/openapi.json", a.handleSpec},
	}
}

func (a *Adapter) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range a.routeTable() {
		mux.HandleFunc(rt.method+" "+rt.path, rt.handle)
	}
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such route: "+r.Method+" "+r.URL.Path+" (see GET /v1/openapi.json)")
	})
	return a.requireToken(mux)
}

// apiError is the body of every error answer.
type apiError struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Error: errorBody{Code: code, Message: msg}})
}

// readJSON decodes a bounded JSON request body into v, rejecting unknown
// fields and trailing data.
func (a *Adapter) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send Content-Type: application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, a.maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("data after the JSON object")
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "the body is larger than "+strconv.FormatInt(a.maxBody, 10)+" bytes")
			return false
		}
		writeError(w, http.StatusBadRequest, "bad_json", "bad JSON body: "+err.Error())
		return false
	}
	return true
}

// gateway returns the running gateway's handler, or answers 503.
func (a *Adapter) gateway(w http.ResponseWriter) channels.Handler {
	h := a.currentHandler()
	if h == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the gateway is not running; try again shortly")
	}
	return h
}

// ability returns the gateway's handler as T, or answers 501.
func ability[T any](a *Adapter, w http.ResponseWriter, what string) (T, bool) {
	var zero T
	h := a.gateway(w)
	if h == nil {
		return zero, false
	}
	t, ok := h.(T)
	if !ok {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this gateway cannot "+what)
		return zero, false
	}
	return t, true
}

// limitParam reads the limit query parameter: 1..max, default def.
func limitParam(w http.ResponseWriter, r *http.Request, def, max int) (int, bool) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		writeError(w, http.StatusBadRequest, "bad_limit", "limit must be 1.."+strconv.Itoa(max))
		return 0, false
	}
	return n, true
}
