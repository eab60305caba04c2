package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// TestStatsCountWrites checks the counters a load tool reads: each method
// call is one write, counted under its name; a refused write is a failure.
func TestStatsCountWrites(t *testing.T) {
	db := openTemp(t, filepath.Join(t.TempDir(), "s.db"))
	ctx := context.Background()
	base := db.Stats()
	if err := db.CreateConversation(ctx, agentcore.Conversation{ID: "c1", AgentID: "a"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := db.Append(ctx, "c1", agentcore.Message{Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Append(ctx, "no-such-conversation", agentcore.Message{Role: agentcore.RoleUser}); err == nil {
		t.Fatal("append to an unknown conversation succeeded")
	}
	st := db.Stats()
	if got := st.Writes - base.Writes; got != 4 {
		t.Errorf("Writes grew by %d, want 4", got)
	}
	if got := st.FailedWrites - base.FailedWrites; got != 1 {
		t.Errorf("FailedWrites grew by %d, want 1", got)
	}
	if st.Commits-base.Commits < 1 || st.Commits-base.Commits > 4 {
		t.Errorf("Commits grew by %d, want 1..4", st.Commits-base.Commits)
	}
	got := map[string]int64{"Append": st.ByMethod["Append"], "CreateConversation": st.ByMethod["CreateConversation"]}
	if diff := cmp.Diff(map[string]int64{"Append": 4, "CreateConversation": 1}, got); diff != "" {
		t.Errorf("ByMethod (-want +got):\n%s", diff)
	}
}

func TestSize(t *testing.T) {
	db := openTemp(t, filepath.Join(t.TempDir(), "s.db"))
	n, err := db.Size(context.Background())
	if err != nil || n <= 0 {
		t.Fatalf("Size = %d, %v", n, err)
	}
}
