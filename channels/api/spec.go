package api

import (
	_ "embed"
	"net/http"
)

// openapiSpec is the API's OpenAPI document, served at GET
// /v1/openapi.json; a test checks it against the route table.
//
//go:embed openapi.json
var openapiSpec []byte

func (a *Adapter) handleSpec(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiSpec)
}
