package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/switchboard-gw/switchboard/config"
)

// modelEntry is one model of an OpenAI-compatible GET /models answer, with
// the capability fields some servers add (OpenRouter's
// supported_parameters, LM Studio's and others' capabilities).
type modelEntry struct {
	ID                  string          `json:"id"`
	SupportedParameters []string        `json:"supported_parameters"`
	Capabilities        json.RawMessage `json:"capabilities"`
}

// toolSupport says what a server states about a model's tool calling.
type toolSupport int

const (
	toolsUnknown toolSupport = iota
	toolsYes
	toolsNo
)

// tools reads the entry's capability fields.
func (m modelEntry) tools() toolSupport {
	if len(m.SupportedParameters) > 0 {
		if slices.Contains(m.SupportedParameters, "tools") {
			return toolsYes
		}
		return toolsNo
	}
	return capabilityTools(m.Capabilities)
}

// capabilityTools interprets a "capabilities" value: a list of names
// (Ollama, LM Studio: ["completion", "tools"]) or an object of flags
// ({"function_calling": true}).
func capabilityTools(raw json.RawMessage) toolSupport {
	if len(raw) == 0 || string(raw) == "null" {
		return toolsUnknown
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		if len(list) == 0 {
			return toolsUnknown
		}
		for _, c := range list {
			if c == "tools" || c == "tool_use" || c == "function_calling" {
				return toolsYes
			}
		}
		return toolsNo
	}
	var flags map[string]any
	if json.Unmarshal(raw, &flags) == nil {
		for _, k := range []string{"tools", "tool_use", "tool_calling", "function_calling"} {
			if b, ok := flags[k].(bool); ok {
				if b {
					return toolsYes
				}
				return toolsNo
			}
		}
	}
	return toolsUnknown
}

// modelTarget is one (provider, model) pair agents use.
type modelTarget struct {
	provider config.Provider
	model    string
	agents   []string
}

// modelTargets groups the agents by provider and effective model.
func modelTargets(cfg *config.Config) []modelTarget {
	var out []modelTarget
	for _, name := range agentNames(cfg) {
		ac := cfg.Agents[name]
		p, err := cfg.ProviderFor(ac)
		if err != nil {
			continue // config validation reports it
		}
		i := slices.IndexFunc(out, func(t modelTarget) bool { return t.provider.Name == p.Name && t.model == p.Model })
		if i < 0 {
			out = append(out, modelTarget{provider: p, model: p.Model})
			i = len(out) - 1
		}
		out[i].agents = append(out[i].agents, name)
	}
	return out
}

// checkModels checks every endpoint the agents use: reachable, the key
// accepted, the model listed, and tool calling where the server says.
func (d *doctor) checkModels(ctx context.Context, cfg *config.Config) []checkResult {
	var out []checkResult
	listed := map[string]modelsAnswer{} // by base URL + key
	for _, t := range modelTargets(cfg) {
		p := t.provider
		where := fmt.Sprintf("[providers.%s]", p.Name)
		if t.model == "" {
			out = append(out, checkResult{Check: "model", Status: statusFail,
				Message: fmt.Sprintf("no model is configured for %s (provider %s)", "agent "+joinAnd(t.agents), p.Name),
				Fix:     fmt.Sprintf("set model under %s (e.g. model = \"qwen3:8b\"), or SWITCHBOARD_MODEL without a [providers] table", where)})
			continue
		}
		key := p.BaseURL + "\x00" + p.APIKey
		ans, ok := listed[key]
		if !ok {
			ans = d.listModels(ctx, p.BaseURL, p.APIKey)
			listed[key] = ans
		}
		out = append(out, d.modelResult(ctx, t, ans))
	}
	return out
}

// modelsAnswer is the outcome of GET {base_url}/models.
type modelsAnswer struct {
	err    error // transport error
	status int
	models []modelEntry
	parsed bool
}

func (d *doctor) listModels(ctx context.Context, baseURL, apiKey string) modelsAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/models", nil)
	if err != nil {
		return modelsAnswer{err: err}
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return modelsAnswer{err: err}
	}
	defer resp.Body.Close()
	ans := modelsAnswer{status: resp.StatusCode}
	var body struct {
		Data []modelEntry `json:"data"`
	}
	if resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&body) == nil {
		ans.models, ans.parsed = body.Data, true
	}
	return ans
}

func (d *doctor) modelResult(ctx context.Context, t modelTarget, ans modelsAnswer) checkResult {
	p := t.provider
	where := fmt.Sprintf("[providers.%s]", p.Name)
	r := checkResult{Check: "model", Status: statusFail}
	switch {
	case ans.err != nil:
		r.Message = fmt.Sprintf("cannot reach the model endpoint %s (%s)", p.BaseURL, transportProblem(ans.err))
		r.Fix = fmt.Sprintf("start the model server (a local Ollama: `ollama serve`), or set base_url under %s", where)
		return r
	case ans.status == http.StatusUnauthorized || ans.status == http.StatusForbidden:
		r.Message = fmt.Sprintf("%s refused the API key (%d %s)", p.BaseURL, ans.status, http.StatusText(ans.status))
		if p.APIKey == "" {
			r.Fix = fmt.Sprintf("the endpoint needs a key: set api_key = \"${OPENAI_API_KEY}\" under %s and export the key", where)
		} else {
			r.Fix = fmt.Sprintf("put a valid key in the variable api_key references under %s", where)
		}
		return r
	case ans.status != http.StatusOK || !ans.parsed:
		r.Status = statusWarn
		r.Message = fmt.Sprintf("%s answered %d to GET /models, so whether it serves %s is unknown", p.BaseURL, ans.status, t.model)
		r.Fix = fmt.Sprintf("check base_url under %s (OpenAI-compatible endpoints usually end in /v1)", where)
		return r
	}
	i := slices.IndexFunc(ans.models, func(m modelEntry) bool {
		return m.ID == t.model || !strings.Contains(t.model, ":") && m.ID == t.model+":latest"
	})
	if i < 0 {
		var ids []string
		for _, m := range ans.models {
			ids = append(ids, m.ID)
		}
		r.Message = fmt.Sprintf("%s does not list the model %s (it lists %s)", p.BaseURL, t.model, orDash(oneLine(strings.Join(ids, ", "), 120)))
		r.Fix = fmt.Sprintf("fetch it (Ollama: `ollama pull %s`), or set model under %s to one it lists", t.model, where)
		return r
	}
	tools := ans.models[i].tools()
	if tools == toolsUnknown {
		tools = d.ollamaTools(ctx, p, t.model)
	}
	switch tools {
	case toolsNo:
		r.Message = fmt.Sprintf("%s serves %s, but says the model cannot call tools, which agents need", p.BaseURL, t.model)
		r.Fix = fmt.Sprintf("choose a model with tool calling (e.g. qwen3, llama3.1) for model under %s", where)
		return r
	case toolsYes:
		r.Status, r.Message = statusOK, fmt.Sprintf("%s serves %s, with tool calling (provider %s)", p.BaseURL, t.model, p.Name)
	default:
		r.Status, r.Message = statusOK, fmt.Sprintf("%s serves %s (provider %s)", p.BaseURL, t.model, p.Name)
	}
	return r
}

// ollamaTools asks an Ollama server (base URL ending in /v1) for the
// model's capabilities with POST /api/show; other servers answer an error
// and the support stays unknown.
func (d *doctor) ollamaTools(ctx context.Context, p config.Provider, model string) toolSupport {
	root, ok := strings.CutSuffix(strings.TrimRight(p.BaseURL, "/"), "/v1")
	if !ok {
		return toolsUnknown
	}
	body, _ := json.Marshal(map[string]string{"model": model})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/api/show", bytes.NewReader(body))
	if err != nil {
		return toolsUnknown
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.http.Do(req)
	if err != nil {
		return toolsUnknown
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return toolsUnknown
	}
	var show struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&show) != nil {
		return toolsUnknown
	}
	return capabilityTools(show.Capabilities)
}

// transportProblem names a request failure briefly, without the URL
// (which the caller prints, and which must never carry a token).
func transportProblem(err error) string {
	msg := err.Error()
	for _, k := range []struct{ in, out string }{
		{"connection refused", "connection refused"},
		{"no such host", "no such host"},
		{"network is unreachable", "network is unreachable"},
		{"connection reset", "connection reset"},
		{"i/o timeout", "no answer in time"},
		{"deadline exceeded", "no answer in time"},
		{"Timeout exceeded", "no answer in time"},
		{"certificate", "TLS certificate not accepted"},
	} {
		if strings.Contains(msg, k.in) {
			return k.out
		}
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}
