package store

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// searchText is what Search finds a message by: its text parts, reminders
// and summaries, the names and arguments of its tool calls, and for a tool
// result the tool's name and output. Reasoning and images are left out.
func searchText(m agentcore.Message) string {
	var b strings.Builder
	add := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s)
	}
	if m.Role == agentcore.RoleTool {
		add(m.ToolName)
	}
	for _, p := range m.Parts {
		if p.Type != agentcore.PartImage {
			add(p.Text)
		}
	}
	for _, c := range m.ToolCalls {
		add(c.Name)
		add(c.Arguments)
	}
	return b.String()
}

// ftsTerms turns what a person or model typed into FTS5 terms that cannot
// be a syntax error: every whitespace-separated word becomes a quoted
// phrase (so "go-test", "a.b" or "NOT" are plain text), words without a
// letter or digit are dropped, and a trailing '*' keeps its prefix meaning.
func ftsTerms(query string) []string {
	var terms []string
	for _, w := range strings.Fields(query) {
		prefix := strings.HasSuffix(w, "*")
		w = strings.TrimRight(w, "*")
		if !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) {
			continue
		}
		t := `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		if prefix {
			t += "*"
		}
		terms = append(terms, t)
	}
	return terms
}

// Search runs a full-text query over the conversation's whole transcript
// (not only the in-context view). Hits are ranked by bm25, then newest
// first; each carries a snippet of about a dozen tokens with the matches in
// **bold**. All words must match; when that finds nothing, any word may.
// A query with no searchable word returns no hits and no error.
func (db *DB) Search(ctx context.Context, conversationID, query string, limit int) ([]agentcore.SearchHit, error) {
	if limit <= 0 {
		limit = 20
	}
	if err := db.conversationExists(ctx, conversationID); err != nil {
		return nil, fmt.Errorf("search conversation %s: %w", conversationID, err)
	}
	terms := ftsTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	hits, err := db.search(ctx, conversationID, strings.Join(terms, " "), limit)
	if err == nil && len(hits) == 0 && len(terms) > 1 {
		hits, err = db.search(ctx, conversationID, strings.Join(terms, " OR "), limit)
	}
	if err != nil {
		return nil, fmt.Errorf("search conversation %s for %q: %w", conversationID, query, err)
	}
	return hits, nil
}

func (db *DB) search(ctx context.Context, conversationID, match string, limit int) ([]agentcore.SearchHit, error) {
	// Rank first, then make snippets for the winners only: in one query
	// sqlite would compute snippet() for every match before sorting.
	rows, err := db.r.QueryContext(ctx, `WITH top AS (
			SELECT messages_fts.rowid AS pk, bm25(messages_fts) AS score, m.seq AS seq
			FROM messages_fts JOIN messages m ON m.pk = messages_fts.rowid
			WHERE messages_fts MATCH ?1 AND m.conversation_id = ?2
			ORDER BY score, seq DESC
			LIMIT ?3)
		SELECT m.id, m.seq, m.role, m.created, snippet(messages_fts, 0, '**', '**', '…', 12)
		FROM top
		JOIN messages_fts ON messages_fts.rowid = top.pk
		JOIN messages m ON m.pk = top.pk
		WHERE messages_fts MATCH ?1
		ORDER BY top.score, top.seq DESC`, match, conversationID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []agentcore.SearchHit
	for rows.Next() {
		var h agentcore.SearchHit
		var role string
		var created int64
		if err := rows.Scan(&h.MessageID, &h.Seq, &role, &created, &h.Snippet); err != nil {
			return nil, err
		}
		h.Role, h.Created = agentcore.Role(role), fromNanos(created)
		hits = append(hits, h)
	}
	return hits, rows.Err()
}
