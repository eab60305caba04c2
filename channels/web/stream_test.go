package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

func TestStopEndsStreams(t *testing.T) {
	a := newTestAdapter()
	srv := startServer(t, a, nil)
	c := srv.login(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Start(ctx, &fakeHandler{}) }()
	<-a.ready
	st := srv.openStream(t, c, "chat1", "")
	st.nextNamed("reset")
	cancel()
	<-errc
wait:
	for { // the server ends the stream
		select {
		case ev, ok := <-st.events:
			if !ok {
				break wait
			}
			t.Logf("event after stop: %s", ev.Name)
		case <-time.After(10 * time.Second):
			t.Fatal("the event stream outlived Start")
		}
	}
	// A page that reconnects is told the gateway stopped, so its
	// EventSource gives up instead of retrying.
	if status, _ := srv.do(t, c, "GET", "/api/chats/chat1/events", nil); status != http.StatusServiceUnavailable {
		t.Errorf("events after stop: %d, want 503", status)
	}
	if status, _ := srv.do(t, c, "POST", "/api/chats/chat1/messages", map[string]string{"id": "a", "text": "x"}); status != http.StatusServiceUnavailable {
		t.Errorf("message after stop: %d, want 503", status)
	}
}

func TestEventsSendEditResume(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	c := s.login(t)
	s.a.SetNotice("no model configured")
	st := s.openStream(t, c, "chat1", "")
	if ev := st.next(); ev.Name != "reset" {
		t.Fatalf("first event %q, want reset", ev.Name)
	}
	if ev := st.next(); ev.Name != "notice" || !strings.Contains(string(ev.Data), "no model configured") {
		t.Fatalf("second event %s %s, want the notice", ev.Name, ev.Data)
	}
	ref, err := s.a.Send(t.Context(), webLoc("chat1"), channels.TextMessage("Hel"))
	if err != nil {
		t.Fatal(err)
	}
	if ref.Location != webLoc("chat1") || ref.ID == "" {
		t.Errorf("ref %+v", ref)
	}
	if v := st.message(); v.ID != ref.ID || v.Parts[0].HTML != "<p>Hel</p>" || v.Role != channels.RoleAssistant {
		t.Errorf("send: %+v", v)
	}
	resumeAt := st.lastID
	if err := s.a.Edit(t.Context(), ref, channels.TextMessage("Hello **there**")); err != nil {
		t.Fatal(err)
	}
	if v := st.message(); v.ID != ref.ID || v.Parts[0].HTML != "<p>Hello <strong>there</strong></p>" {
		t.Errorf("edit: %+v", v)
	}
	if err := s.a.Typing(t.Context(), webLoc("chat1")); err != nil {
		t.Fatal(err)
	}
	st.nextNamed("typing")
	s.a.SetNotice("")
	if ev := st.nextNamed("notice"); string(ev.Data) != `{"text":""}` {
		t.Errorf("cleared notice: %s", ev.Data)
	}

	// Another chat's messages do not show here.
	if _, err := s.a.Send(t.Context(), webLoc("chat2"), channels.TextMessage("elsewhere")); err != nil {
		t.Fatal(err)
	}

	// A reconnect with Last-Event-ID gets only the edit, not a reset.
	again := s.openStream(t, c, "chat1", resumeAt)
	for {
		ev := again.next()
		if ev.Name == "reset" {
			t.Fatal("resumed stream was reset")
		}
		if ev.Name == "message" {
			if !strings.Contains(string(ev.Data), "there") {
				t.Errorf("resumed stream sends %s, want the edited message", ev.Data)
			}
			break
		}
	}
	// An id from another process starts over.
	fresh := s.openStream(t, c, "chat1", "otherepoch-5")
	if ev := fresh.next(); ev.Name != "reset" {
		t.Errorf("foreign id: first event %q, want reset", ev.Name)
	}
	if v := fresh.message(); v.ID != ref.ID {
		t.Errorf("replay: %+v", v)
	}

	// Edit of an unknown message and sends to other channels are permanent errors.
	err = s.a.Edit(t.Context(), channels.MessageRef{Location: webLoc("chat1"), ID: "m-nope"}, channels.TextMessage("x"))
	if !errors.Is(err, ErrMessageNotFound) || !channels.IsPermanent(err) {
		t.Errorf("edit unknown: %v", err)
	}
	if _, err := s.a.Send(t.Context(), channels.Location{Channel: "slack", ChatID: "C1"}, channels.TextMessage("x")); !channels.IsPermanent(err) {
		t.Errorf("send to slack location: %v", err)
	}
	bad := channels.Message{Parts: []channels.Part{channels.Buttons{Rows: [][]channels.Button{{{Label: "x"}}}}}}
	if _, err := s.a.Send(t.Context(), webLoc("chat1"), bad); !channels.IsPermanent(err) {
		t.Errorf("send invalid message: %v", err)
	}
}

func TestDeleteAndEphemeral(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	c := s.login(t)
	st := s.openStream(t, c, "chat1", "")
	ref, err := s.a.Send(t.Context(), webLoc("chat1"), channels.TextMessage("soon gone"))
	if err != nil {
		t.Fatal(err)
	}
	st.message()
	if err := s.a.Delete(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	if ev := st.nextNamed("delete"); !strings.Contains(string(ev.Data), ref.ID) {
		t.Errorf("delete event %s", ev.Data)
	}
	if err := s.a.Delete(t.Context(), ref); !errors.Is(err, ErrMessageNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if err := s.a.SendEphemeral(t.Context(), webLoc("chat1"), "owner", channels.TextMessage("only you")); err != nil {
		t.Fatal(err)
	}
	if v := st.message(); !v.Ephemeral {
		t.Errorf("ephemeral: %+v", v)
	}
	if err := s.a.SendEphemeral(t.Context(), webLoc("chat1"), "bob", channels.TextMessage("x")); !channels.IsPermanent(err) {
		t.Errorf("ephemeral to someone else: %v", err)
	}
	// A fresh page does not get the deleted message.
	fresh := s.openStream(t, c, "chat1", "")
	fresh.nextNamed("reset")
	if v := fresh.message(); v.ID == ref.ID {
		t.Errorf("fresh stream replays deleted message")
	}
}

// TestSlowSubscriberNeverBlocks: a page that stops reading costs Send
// nothing, and when it reads again it gets the current state.
func TestSlowSubscriberNeverBlocks(t *testing.T) {
	s := startServer(t, newTestAdapter(), &fakeHandler{})
	c := s.login(t)
	req, err := http.NewRequest("GET", s.srv.URL+"/api/chats/chat1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req) // never read: the socket buffers fill up
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	big := strings.Repeat("lorem ipsum ", 600)
	var last channels.MessageRef
	for i := range 3 * maxMessages {
		last, err = s.a.Send(t.Context(), webLoc("chat1"), channels.TextMessage(big))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := s.a.Edit(t.Context(), last, channels.TextMessage("final")); err != nil {
		t.Fatal(err)
	}
	st := s.openStream(t, c, "chat1", "")
	st.nextNamed("reset")
	n := 0
	for {
		v := st.message()
		n++
		if v.ID == last.ID {
			if v.Parts[0].HTML != "<p>final</p>" {
				t.Errorf("last message %q, want the edit", v.Parts[0].HTML)
			}
			break
		}
	}
	if n != maxMessages {
		t.Errorf("replayed %d messages, want the last %d", n, maxMessages)
	}
}
