package agentcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Compaction (DESIGN §5) keeps a conversation inside its model's window.
// Before each step the whole request is estimated (budget.go); when it
// would not fit, the oldest part of the view is summarized by the provider
// into a user-role summary message, and the view becomes [summary, kept…].
// The transcript stays whole (append-only), so Recall still finds what was
// evicted. The cut falls only before an assistant message, so a tool call
// is never separated from its result; the system prompt is recompiled
// (folding in memory committed since) and the context reminders are re-sent
// on the summary message.

// maxCompactRounds bounds compactions before one step.
const maxCompactRounds = 3

// nothingToCompact is the stop note of a compaction with nothing to evict.
const nothingToCompact = "nothing to compact: the conversation has no earlier messages in view"

// CompactResult says what a compaction did.
type CompactResult struct {
	ConversationID string
	// Compacted is false when there was nothing to compact.
	Compacted bool
	// Evicted is how many messages left the view; Kept how many stayed
	// verbatim after the summary.
	Evicted int
	Kept    int
	// SummaryID is the id of the summary message.
	SummaryID string
	// TokensBefore and TokensAfter estimate the whole request (system,
	// tools, messages and output reserve) before and after.
	TokensBefore int
	TokensAfter  int
	// Note is one line for people, e.g. "compacted 42 messages into a summary".
	Note string
}

type compactMode int

const (
	// compactToFit evicts the oldest messages until the request fits with
	// room to spare, keeping as much as fits verbatim.
	compactToFit compactMode = iota
	// compactAll evicts everything but a pending exchange (/compact).
	compactAll
)

// compactPlan is what one compaction will do.
type compactPlan struct {
	evict      []Message
	keep       []Message
	summaryCap int // output tokens for the summary
}

// Compact forces a compaction of a conversation's view (the /compact
// command). It takes the conversation's lease like Turn and returns ErrBusy
// while another worker holds it.
func (a *Agent) Compact(ctx context.Context, conversationID string) (CompactResult, error) {
	conv, ctx, release, err := a.hold(ctx, conversationID, a.deps.Store.AcquireLease)
	if err != nil {
		return CompactResult{}, err
	}
	defer release(true)
	t := &turn{
		a:    a.forConversation(ctx, conv.ID),
		conv: conv,
		id:   "compact-" + randomID(8),
		em:   newEmitter(Discard, a.deps.Env.Redactor.Redact, a.cfg.ID, conv.ID),
	}
	if err := t.ensurePrompt(ctx); err != nil {
		return CompactResult{}, err
	}
	view, err := t.loadView(ctx)
	if err != nil {
		return CompactResult{}, fmt.Errorf("load view of %s: %w", conv.ID, err)
	}
	t.initBudget(ctx, view)
	// Re-send the context as it was last stated: /compact has no input of
	// its own.
	t.in.Speaker, t.in.Origin = reminderLine(lastReminder(view, contextReminderID), "speaker: "), reminderLine(lastReminder(view, contextReminderID), "channel: ")
	res, stop, err := t.compact(ctx, view, compactAll)
	if err != nil {
		return res, err
	}
	// A prompt compiled just now is stored even when nothing was compacted.
	if _, err := t.flush(ctx); err != nil {
		return res, err
	}
	if !res.Compacted && stop == "" && ctx.Err() != nil {
		return res, fmt.Errorf("compact %s: %w", conv.ID, context.Cause(ctx))
	}
	if stop != "" {
		res.Note = stop
	}
	return res, nil
}

// forConversation returns a copy of the agent whose tool environment names
// the conversation (the Recall tool searches it).
func (a *Agent) forConversation(ctx context.Context, convID string) *Agent {
	// A failed read keeps the settings last read (they are a preference,
	// not an invariant); the turn still runs.
	_ = a.LoadSettings(ctx)
	c := *a
	c.cfg = a.Config() // with /mode and /model overrides, fixed for this turn
	c.deps.Env.ConversationID = convID
	return &c
}

// fitContext compacts the view until the next request fits the window
// (bounded rounds). A non-nil result ends the turn: a message that cannot
// fit, a cancellation.
func (t *turn) fitContext(ctx context.Context) (*TurnResult, error) {
	for round := 0; ; round++ {
		view, err := t.loadView(ctx)
		if err != nil {
			return nil, fmt.Errorf("load view of %s: %w", t.conv.ID, err)
		}
		if !t.bud.ready && fitsAnyway(t.a.cfg, t.conv.SystemPrompt, t.a.deps.Tools.Specs(), view) {
			// Fits at the worst calibration: no need to read the runs
			// that calibrate the estimate (most turns of most
			// conversations).
			return nil, nil
		}
		t.initBudget(ctx, view)
		if t.bud.window <= 0 {
			return nil, nil
		}
		need := t.bud.requestTokens(t.conv.SystemPrompt, t.a.deps.Tools.Specs(), view)
		if need <= t.bud.limit() {
			return nil, nil
		}
		if round == maxCompactRounds {
			return &TurnResult{StopReason: StopError, Text: t.lastText, Error: fmt.Sprintf(
				"the conversation still needs about %d tokens after %d compactions, more than the model's context window of %d allows; start a new conversation",
				need, maxCompactRounds, t.bud.window)}, nil
		}
		_, stop, err := t.compact(ctx, view, compactToFit)
		if err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			res := t.cancelled(ctx)
			return &res, nil
		}
		if stop != "" {
			return &TurnResult{StopReason: StopError, Text: t.lastText, Error: stop}, nil
		}
	}
}

// recoverOverflow handles a provider's context-length error: the estimate
// cannot be trusted, so the calibration is raised and everything but the
// pending input is compacted. A nil result means the step may be retried.
func (t *turn) recoverOverflow(ctx context.Context, view []Message, estChars int, provErr error) (*TurnResult, error) {
	t.initBudget(ctx, view) // fitContext may have skipped it
	t.bud.overflowed(estChars)
	_, stop, err := t.compact(ctx, view, compactAll)
	if err != nil || stop != "" || ctx.Err() != nil {
		res := TurnResult{StopReason: StopError, Text: t.lastText, Error: UserMessage(provErr)}
		if stop != "" && stop != nothingToCompact {
			res.Error = stop
		}
		if ctx.Err() != nil {
			res = t.cancelled(ctx)
		}
		return &res, err
	}
	return t.fitContext(ctx)
}

// compact runs one compaction of view. stop, when set, says why nothing
// could be compacted (for people).
func (t *turn) compact(ctx context.Context, view []Message, mode compactMode) (CompactResult, string, error) {
	specs := t.a.deps.Tools.Specs()
	res := CompactResult{ConversationID: t.conv.ID, TokensBefore: t.bud.requestTokens(t.conv.SystemPrompt, specs, view)}
	plan, stop := t.planCompaction(view, specs, mode)
	if stop != "" {
		return res, stop, nil
	}
	summary, note := t.summarize(ctx, plan.evict, plan.summaryCap)
	if ctx.Err() != nil {
		return res, "", nil
	}
	prompt, rev, err := t.a.compilePrompt(ctx)
	if err != nil {
		return res, "", err
	}
	msg := Message{Role: RoleUser, Parts: append(
		[]Part{{Type: PartSummary, Text: summaryText(plan.evict, summary)}},
		t.contextReminders(ctx, view, true)...)}
	stored, err := t.append(context.WithoutCancel(ctx), msg)
	if err != nil {
		return res, "", err
	}
	ids := []string{stored[0].ID}
	for _, m := range plan.keep {
		ids = append(ids, m.ID)
	}
	wctx := context.WithoutCancel(ctx)
	t.viewOK = false
	if err := t.a.deps.Store.ReplaceView(wctx, t.conv.ID, ids); err != nil {
		return res, "", fmt.Errorf("replace view of %s: %w", t.conv.ID, err)
	}
	if err := t.a.deps.Store.SetSystemPrompt(wctx, t.conv.ID, prompt, rev); err != nil {
		return res, "", fmt.Errorf("store system prompt: %w", err)
	}
	t.conv.SystemPrompt, t.conv.PromptRevision = prompt, rev
	t.memoryNotified = rev

	after := append([]Message{stored[0]}, plan.keep...)
	res.Compacted = true
	res.Evicted = len(plan.evict)
	res.Kept = len(plan.keep)
	res.SummaryID = stored[0].ID
	res.TokensAfter = t.bud.requestTokens(prompt, specs, after)
	res.Note = fmt.Sprintf("compacted %d messages into a summary (request about %d → %d tokens)", res.Evicted, res.TokensBefore, res.TokensAfter)
	if note != "" {
		res.Note += "; " + note
	}
	t.em.newRun(t.id + "-compaction")
	t.em.emit(Event{Type: EventCompaction, RunID: t.id + "-compaction", UUID: res.SummaryID, Text: res.Note})
	return res, "", nil
}

// planCompaction picks what to evict. In compactToFit it keeps the longest
// tail starting at an assistant message that leaves half the message room
// free; failing that, only the latest exchange with a smaller summary;
// failing that (and in compactAll), only the trailing user message or
// pending tool calls. stop says why no plan fits.
func (t *turn) planCompaction(view []Message, specs []ToolSpec, mode compactMode) (compactPlan, string) {
	b := &t.bud
	n := len(view)
	fixed := b.fixedTokens(t.conv.SystemPrompt, specs)
	limit := b.limit()
	if fixed+minSummaryTokens > limit {
		return compactPlan{}, fmt.Sprintf(
			"the system prompt and tool schemas (about %d tokens) plus the output reserve (%d tokens) leave no room for messages in the model's context window of %d tokens; use a model with a larger window, fewer tools or a smaller max_output_tokens",
			fixed-b.output, b.output, b.window)
	}
	suffix := make([]int, n+1)
	for k := n - 1; k >= 0; k-- {
		suffix[k] = suffix[k+1] + b.tokens(messageChars(view[k]))
	}
	room := limit - fixed
	summaryCap := b.summaryCap(room)
	plan := func(k, cap int) compactPlan {
		return compactPlan{evict: view[:k], keep: view[k:], summaryCap: cap}
	}
	if mode == compactToFit {
		goal := fixed + room/2
		for k := 1; k < n; k++ {
			if view[k].Role == RoleAssistant && fixed+summaryCap+suffix[k] <= goal {
				return plan(k, summaryCap), ""
			}
		}
		for k := n - 1; k >= 1; k-- {
			if view[k].Role != RoleAssistant {
				continue
			}
			if left := limit - fixed - suffix[k]; left >= minSummaryTokens {
				return plan(k, min(summaryCap, left)), ""
			}
			break
		}
	}
	keepFrom := n
	if asst, calls := unansweredCalls(view); len(calls) > 0 {
		for k := range view {
			if view[k].ID == asst.ID {
				keepFrom = k
			}
		}
	} else if n > 0 && view[n-1].Role == RoleUser && !isSummary(view[n-1]) {
		keepFrom = n - 1
	}
	if keepFrom == 0 {
		if mode == compactAll && suffix[0] <= room-minSummaryTokens {
			return compactPlan{}, nothingToCompact
		}
		return compactPlan{}, fmt.Sprintf(
			"the latest message is too big for the model's context window: about %d tokens, with %d left for messages after the system prompt, tool schemas and output reserve; send a shorter message or start a new conversation",
			suffix[0], room)
	}
	left := limit - fixed - suffix[keepFrom]
	if left < minSummaryTokens {
		return compactPlan{}, fmt.Sprintf(
			"the latest messages are too big for the model's context window: about %d tokens, with %d left for messages after the system prompt, tool schemas and output reserve; send a shorter message or start a new conversation",
			suffix[keepFrom], room)
	}
	return plan(keepFrom, min(summaryCap, left)), ""
}

// summaryInstruction is the system prompt of a summarization request.
const summaryInstruction = `You summarize an earlier part of a conversation between people and an AI agent that uses tools, so that the agent can go on without it. The part is given as a transcript. Write plain text, as short as the content allows, with these sections:
1. What happened: the requests and goals, what the agent did, decisions and results.
2. Identifiers, verbatim: file paths, names, ids, numbers, URLs, commands, error messages that may matter later.
3. Open threads: what is unfinished, pending questions, promises made.
4. Where to look it up: distinctive words and seq numbers to search the full transcript with the Recall tool.
Do not invent anything, do not continue the conversation, do not address anyone.`

// summarize asks the provider for a summary of evicted messages. On failure
// it returns a mechanical digest and a note saying so; the transcript keeps
// the full text either way.
func (t *turn) summarize(ctx context.Context, evicted []Message, capTokens int) (string, string) {
	b := &t.bud
	textTokens := b.limit() - b.tokens(len(summaryInstruction)+256) - capTokens
	if b.window <= 0 {
		textTokens = 30000
	}
	var lastErr error
	for attempt := range 2 {
		req := Request{
			Model:  t.a.cfg.Model,
			System: summaryInstruction,
			Messages: []Message{{Role: RoleUser, Parts: []Part{{Type: PartText,
				Text: "<transcript>\n" + renderTranscript(evicted, max(2000, b.chars(textTokens>>attempt))) + "\n</transcript>\nWrite the summary now."}}}},
			MaxOutputTokens: capTokens,
			MaxStepOutput:   t.a.cfg.MaxStepOutput,
		}
		est := requestChars(req)
		resp, err := t.a.deps.Provider.Step(ctx, req, func(Delta) {})
		t.usage = t.usage.Add(resp.Usage)
		if err == nil {
			b.observe(est, resp.Usage)
			if s := strings.TrimSpace(resp.Text); s != "" {
				return s, ""
			}
			lastErr = errors.New("the model returned an empty summary")
			break
		}
		lastErr = err
		if ctx.Err() != nil || !IsContextLength(err) {
			break
		}
		b.overflowed(est)
	}
	digest := renderTranscript(evicted, b.chars(capTokens))
	return "(No summary could be written: " + UserMessage(lastErr) + ". An excerpt of the compacted messages follows.)\n" + digest,
		"the summary failed: " + UserMessage(lastErr)
}

// summaryText wraps a summary so the model knows what it is.
func summaryText(evicted []Message, summary string) string {
	var span string
	if len(evicted) > 0 {
		first, last := evicted[0], evicted[len(evicted)-1]
		span = fmt.Sprintf(", seq %d–%d, %s to %s", first.Seq, last.Seq,
			first.CreatedAt.UTC().Format("2006-01-02 15:04"), last.CreatedAt.UTC().Format("2006-01-02 15:04"))
	}
	return fmt.Sprintf("<conversation-summary>\nEarlier messages of this conversation (%d messages%s) were compacted into this summary to fit the context window. Their full text is still in the transcript: search it with the Recall tool.\n\n%s\n</conversation-summary>",
		len(evicted), span, summary)
}

// renderTranscript renders messages as plain text for the summarizer, at
// most maxChars: long tool results and arguments are cut head and tail,
// reminders are left out (their facts are current elsewhere), and when the
// whole is still too long its middle is cut.
func renderTranscript(msgs []Message, maxChars int) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "[seq %d · %s", m.Seq, m.Role)
		if m.Role == RoleTool {
			fmt.Fprintf(&b, " · result of %s", m.ToolName)
			if m.IsError {
				b.WriteString(" (error)")
			}
		}
		b.WriteString("]\n")
		for _, p := range m.Parts {
			switch p.Type {
			case PartText, PartSummary:
				b.WriteString(headTail(p.Text, 3000))
				b.WriteString("\n")
			case PartImage:
				b.WriteString("(an image)\n")
			}
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "→ calls %s %s\n", c.Name, headTail(c.Arguments, 600))
		}
	}
	return headTail(b.String(), maxChars)
}

// headTail cuts s to about n bytes, keeping its head and tail.
func headTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	note := fmt.Sprintf("\n[… %d characters cut …]\n", len(s)-n)
	keep := max(0, n-len(note))
	head := clip(s, keep*2/3)
	head = strings.TrimSuffix(head, "…")
	tailStart := len(s) - (keep - len(head))
	for tailStart < len(s) && !isRuneStart(s[tailStart]) {
		tailStart++
	}
	return head + note + s[tailStart:]
}
