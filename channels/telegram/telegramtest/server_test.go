package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

const testToken = "77:fake-token"

// getUpdates calls the fake like a client and returns the update ids.
func getUpdates(t *testing.T, s *Server, offset int64) []int64 {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"offset": offset, "timeout": 0})
	resp, err := http.Post(s.URL()+"/bot"+testToken+"/getUpdates", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		OK     bool `json:"ok"`
		Result []struct {
			UpdateID int64 `json:"update_id"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || !r.OK {
		t.Fatalf("getUpdates: ok=%v err=%v", r.OK, err)
	}
	ids := []int64{}
	for _, u := range r.Result {
		ids = append(ids, u.UpdateID)
	}
	return ids
}

// TestOffsetConfirmsBelowIt: an update is answered to every call until a
// call's offset passes it, as Telegram does; a client that restarts without
// an offset gets everything unconfirmed again, nothing confirmed.
func TestOffsetConfirmsBelowIt(t *testing.T) {
	s := New(t, testToken)
	for i := range 3 {
		s.AddMessage(100, 100, fmt.Sprint("m", i))
	}
	steps := []struct {
		offset int64
		want   []int64
	}{
		{0, []int64{1, 2, 3}},
		{0, []int64{1, 2, 3}}, // the client died before confirming: again
		{2, []int64{2, 3}},    // confirms 1
		{0, []int64{2, 3}},    // a restart does not bring 1 back
		{4, []int64{}},
		{0, []int64{}},
	}
	for i, st := range steps {
		if got := getUpdates(t, s, st.offset); !slices.Equal(got, st.want) {
			t.Fatalf("step %d: getUpdates(offset %d) = %v, want %v", i, st.offset, got, st.want)
		}
	}
	if s.Offset() != 4 {
		t.Fatalf("Offset() = %d, want 4", s.Offset())
	}
}

// TestRedeliveredUpdateUntilConfirmed: an acknowledged update added again
// (a platform retry) is answered until a later call confirms it, also to a
// client that restarted before confirming.
func TestRedeliveredUpdateUntilConfirmed(t *testing.T) {
	s := New(t, testToken)
	s.AddMessage(100, 100, "a")
	s.AddMessage(100, 100, "b")
	if got := getUpdates(t, s, 0); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("first poll = %v", got)
	}
	if got := getUpdates(t, s, 3); len(got) != 0 {
		t.Fatalf("after confirming = %v", got)
	}
	s.AddUpdate(json.RawMessage(`{"update_id": 1, "message": {"message_id": 9, "date": 1, "chat": {"id": 100, "type": "private"}, "from": {"id": 100, "is_bot": false, "first_name": "Ada"}, "text": "a"}}`))
	for i, offset := range []int64{3, 0} { // answered; the client dies; a restart gets it again
		if got := getUpdates(t, s, offset); !slices.Equal(got, []int64{1}) {
			t.Fatalf("poll %d (offset %d) = %v, want the retried update 1", i, offset, got)
		}
	}
	if got := getUpdates(t, s, 3); len(got) != 0 {
		t.Fatalf("a call after its delivery confirmed it, yet got %v", got)
	}
	if got := getUpdates(t, s, 0); len(got) != 0 {
		t.Fatalf("the confirmed retry came back: %v", got)
	}
}

// TestSendRecordsMessageID: a send's call names the message it created, and
// the message when it was sent; NewServer works without a test.
func TestSendRecordsMessageID(t *testing.T) {
	s := NewServer(testToken)
	defer s.Close()
	resp, err := http.Post(s.URL()+"/bot"+testToken+"/sendMessage", "application/json", bytes.NewReader([]byte(`{"chat_id": 100, "text": "hi"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	calls := s.CallsOf("sendMessage")
	msgs := s.Messages()
	if len(calls) != 1 || len(msgs) != 1 {
		t.Fatalf("calls %d, messages %d", len(calls), len(msgs))
	}
	if calls[0].MessageID == 0 || calls[0].MessageID != msgs[0].ID {
		t.Fatalf("call names message %d, the message is %d", calls[0].MessageID, msgs[0].ID)
	}
	if calls[0].Received.IsZero() || calls[0].Received.After(calls[0].At) {
		t.Fatalf("call received at %v, answered at %v", calls[0].Received, calls[0].At)
	}
	if msgs[0].Sent.IsZero() || msgs[0].Sent.After(calls[0].At) {
		t.Fatalf("message sent at %v, call recorded at %v", msgs[0].Sent, calls[0].At)
	}
	s.Close() // idempotent
}

// TestWaitCalls follows the record from a Seq without missing a call.
func TestWaitCalls(t *testing.T) {
	s := New(t, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan []Call, 1)
	go func() {
		calls, err := s.WaitCalls(ctx, 1)
		if err != nil {
			t.Error(err)
		}
		got <- calls
	}()
	getUpdates(t, s, 0) // call 1: not after 1
	getUpdates(t, s, 0) // call 2
	calls := <-got
	if len(calls) != 1 || calls[0].Seq != 2 {
		t.Fatalf("WaitCalls(after 1) = %+v, want call 2 only", calls)
	}
	short, stop := context.WithCancel(ctx)
	stop()
	if _, err := s.WaitCalls(short, 2); err == nil {
		t.Fatal("WaitCalls returned without new calls and with its context ended")
	}
}

// TestConcurrentUpdatesGetDistinctIDs: presses and messages added from
// several goroutines at once (the crash campaign's chats) each get their
// own update id, so a client that confirms as it goes receives every one.
// AddCallback used to read the next id and queue the update under two
// locks: a message added in between took the same id, and a client that
// had confirmed it never saw the press.
func TestConcurrentUpdatesGetDistinctIDs(t *testing.T) {
	s := New(t, testToken)
	const n = 200
	ids := make(chan int64, 2*n)
	start := make(chan struct{})
	done := make(chan struct{})
	for g := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			for i := range n {
				if g == 0 {
					ids <- s.AddCallback(101, 101, int64(i+1), fmt.Sprint("tok", i))
				} else {
					ids <- s.AddMessage(102, 102, fmt.Sprint("hello ", i))
				}
			}
		}()
	}
	close(start)
	<-done
	<-done
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("update id %d given twice", id)
		}
		seen[id] = true
	}
	var got []int64
	offset := int64(0)
	for len(got) < 2*n {
		batch := getUpdates(t, s, offset)
		if len(batch) == 0 {
			t.Fatalf("getUpdates from offset %d returned nothing after %d of %d updates", offset, len(got), 2*n)
		}
		got = append(got, batch...)
		offset = slices.Max(batch) + 1
	}
	if len(got) != 2*n || !slices.IsSorted(got) {
		t.Fatalf("a confirming client received %d updates (sorted %v), want %d in order", len(got), slices.IsSorted(got), 2*n)
	}
}
