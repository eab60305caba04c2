package agentcore

import (
	"context"
	"math"
)

// The context budget counts the whole request — system prompt, tool
// schemas, messages — plus the output reserve, against the model's window
// (DESIGN §5, [beat]: letta-code counted messages only, so on a small
// window a "compacted" request still overflowed). The estimate needs no
// tokenizer: about four characters a token, corrected by the ratio of the
// provider's reported prompt tokens to our estimate of the same request.

const (
	charsPerToken = 4
	// Fixed costs of the wire format around each piece of content.
	messageOverheadChars  = 16
	partOverheadChars     = 8
	toolCallOverheadChars = 32
	toolSpecOverheadChars = 48
	imageChars            = 4000 // about 1,000 tokens, what providers charge for a small image
	// reservePercent of the window is kept free for estimate errors.
	reservePercent = 10
	// The calibration ratio is kept within these bounds, so one odd usage
	// report cannot make the budget absurd.
	minCalibration = 0.5
	maxCalibration = 2.0
	// Summary size bounds in tokens.
	minSummaryTokens = 256
	maxSummaryTokens = 4096
	// defaultOutputTokens is the output reserve when MaxOutputTokens is unset.
	defaultOutputTokens = 4096
)

// budget estimates request sizes for one conversation. It lives on a turn
// (or a /compact call) and is seeded from the conversation's last reported
// usage, so calibration survives restarts without shared state.
type budget struct {
	window   int // tokens; 0: unknown, no preflight check
	output   int // tokens reserved for the answer
	ratio    float64
	measured bool
	ready    bool
}

func newBudget(cfg Config) budget {
	out := cfg.MaxOutputTokens
	if out <= 0 {
		out = defaultOutputTokens
		if cfg.ContextWindow > 0 {
			out = min(out, cfg.ContextWindow/4)
		}
	}
	return budget{window: cfg.ContextWindow, output: out, ratio: 1, ready: true}
}

// tokens converts an estimated character count to calibrated tokens.
func (b *budget) tokens(chars int) int {
	return int(math.Ceil(float64(chars) / charsPerToken * b.ratio))
}

// chars converts tokens back to characters (for sizing text to a budget).
func (b *budget) chars(tokens int) int {
	return int(float64(tokens) * charsPerToken / b.ratio)
}

// limit is the most tokens a request plus its output reserve may take.
func (b *budget) limit() int {
	if b.window <= 0 {
		return math.MaxInt / 4
	}
	return b.window - b.window*reservePercent/100
}

// fixedTokens is the part of every request that compaction cannot shrink:
// system prompt, tool schemas and the output reserve.
func (b *budget) fixedTokens(system string, tools []ToolSpec) int {
	return b.tokens(len(system)+toolsChars(tools)) + b.output
}

// requestTokens estimates a whole request including the output reserve.
func (b *budget) requestTokens(system string, tools []ToolSpec, msgs []Message) int {
	return b.fixedTokens(system, tools) + b.tokens(messagesChars(msgs))
}

// summaryCap is the output cap of a summary given the room messages have.
func (b *budget) summaryCap(messageRoom int) int {
	return max(minSummaryTokens, min(maxSummaryTokens, messageRoom/4))
}

// observe calibrates the estimate with the prompt tokens the provider
// reported for a request of estChars estimated characters. The ratio rises
// at once (an underestimate overflows the window) and falls halfway.
func (b *budget) observe(estChars int, u Usage) {
	if !u.Reported || u.InputTokens <= 0 || estChars <= 0 {
		return
	}
	m := float64(u.InputTokens) / (float64(estChars) / charsPerToken)
	m = max(minCalibration, min(maxCalibration, m))
	switch {
	case !b.measured || m > b.ratio:
		b.ratio = m
	default:
		b.ratio = (b.ratio + m) / 2
	}
	b.measured = true
}

// overflowed records that the provider rejected a request of estChars
// characters as too long: the real size was at least the window minus the
// output reserve.
func (b *budget) overflowed(estChars int) {
	if b.window <= 0 || estChars <= 0 {
		return
	}
	need := float64(b.window-b.output) / (float64(estChars) / charsPerToken) * 1.1
	b.ratio = max(b.ratio*1.25, min(maxCalibration, need))
	b.ratio = min(maxCalibration, b.ratio)
	b.measured = true
}

func requestChars(req Request) int {
	return len(req.System) + toolsChars(req.Tools) + messagesChars(req.Messages)
}

func toolsChars(specs []ToolSpec) int {
	n := 0
	for _, s := range specs {
		n += toolSpecOverheadChars + len(s.Name) + len(s.Description) + len(s.Parameters)
	}
	return n
}

func messagesChars(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += messageChars(m)
	}
	return n
}

// messageChars estimates what one message costs on the wire. Reasoning is
// not sent back to providers, so it is not counted.
func messageChars(m Message) int {
	n := messageOverheadChars + len(m.ToolCallID)
	for _, p := range m.Parts {
		if p.Type == PartImage {
			n += imageChars
			continue
		}
		n += partOverheadChars + len(p.Text)
	}
	for _, c := range m.ToolCalls {
		n += toolCallOverheadChars + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return n
}

// fitsAnyway reports whether a request fits the window whatever the
// calibration turns out to be (the estimate at maxCalibration), or there
// is no window to fit.
func fitsAnyway(cfg Config, system string, tools []ToolSpec, msgs []Message) bool {
	b := newBudget(cfg)
	if b.window <= 0 {
		return true
	}
	b.ratio = maxCalibration
	return b.requestTokens(system, tools, msgs) <= b.limit()
}

// initBudget prepares the turn's budget once, seeded from the last step of
// the conversation whose request is still reconstructable: its assistant
// message is in view and no compaction happened since.
func (t *turn) initBudget(ctx context.Context, view []Message) {
	if t.bud.ready {
		return
	}
	t.bud = newBudget(t.a.cfg)
	// The newest run that reported usage calibrates the estimate; a few
	// recent ones are enough (runs of failed steps report none).
	runs, err := t.a.deps.Store.RecentRuns(ctx, t.conv.ID, 8)
	if err != nil {
		return
	}
	for _, r := range runs {
		if r.Usage.InputTokens <= 0 {
			continue
		}
		since := summarySeq(view)
		for j := 1; j < len(view); j++ {
			if view[j].Role == RoleAssistant && view[j].RunID == r.ID && view[j].Seq > since {
				req := Request{System: t.conv.SystemPrompt, Tools: t.a.deps.Tools.Specs(), Messages: view[:j]}
				t.bud.observe(requestChars(req), Usage{InputTokens: r.Usage.InputTokens, Reported: true})
				break
			}
		}
		return
	}
}
