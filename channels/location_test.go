package channels

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestLocationRoundTrip(t *testing.T) {
	tests := []struct {
		loc  Location
		want string
	}{
		{Location{Channel: "telegram", Account: "main", ChatID: "-100123", ThreadID: "42"}, "telegram:main:-100123:42"},
		{Location{Channel: "slack", Account: "T1", ChatID: "C1"}, "slack:T1:C1"},
		{Location{Channel: "web", ChatID: "sess:1%x"}, "web::sess%3A1%25x"},
		{Location{Channel: "acp", Account: "a\nb", ChatID: "c", ThreadID: "1713.000"}, "acp:a%0Ab:c:1713.000"},
	}
	for _, tc := range tests {
		if got := tc.loc.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.loc, got, tc.want)
		}
		back, err := ParseLocation(tc.want)
		if err != nil || back != tc.loc {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", tc.want, back, err, tc.loc)
		}
	}
	l := tests[0].loc
	if c := l.Chat(); c.ThreadID != "" || c.ChatID != l.ChatID {
		t.Errorf("Chat() = %+v", c)
	}
	if !(Location{}).IsZero() || l.IsZero() {
		t.Error("IsZero wrong")
	}
	ref := MessageRef{Location: l, ID: "7"}
	if ref.String() != "telegram:main:-100123:42#7" {
		t.Errorf("MessageRef.String() = %q", ref.String())
	}
}

func TestParseLocationErrors(t *testing.T) {
	for _, s := range []string{"", "telegram", "telegram:a", ":a:b", "t:a:", "t:a:b:", "t:a:b:c:d", "t:a:%zz", "t:a:%4"} {
		if l, err := ParseLocation(s); err == nil {
			t.Errorf("ParseLocation(%q) = %+v, want an error", s, l)
		}
	}
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"telegram:main:1:2", "web::a%3Ab", "x:y:z", "%", "a:b:%41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocation(s)
		if err != nil {
			return
		}
		back, err := ParseLocation(l.String())
		if err != nil || back != l {
			t.Fatalf("%q parsed to %+v, which prints as %q and parses to %+v, %v", s, l, l.String(), back, err)
		}
	})
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		in          string
		channel, id string
		ok          bool
	}{
		{"telegram:4242", "telegram", "4242", true},
		{"web:alice:x", "web", "alice:x", true},
		{"slack:U012ABCDEF", "slack", "U012ABCDEF", true},
		{"Telegram:1", "", "", false},
		{"telegram:", "", "", false},
		{":1", "", "", false},
		{"4242", "", "", false},
		{"1tg:1", "", "", false},
	}
	for _, tc := range tests {
		ch, id, err := ParseIdentity(tc.in)
		if (err == nil) != tc.ok || ch != tc.channel || id != tc.id {
			t.Errorf("ParseIdentity(%q) = %q, %q, %v", tc.in, ch, id, err)
		}
		if tc.ok && QualifiedID(ch, id) != tc.in {
			t.Errorf("QualifiedID(%q, %q) = %q", ch, id, QualifiedID(ch, id))
		}
	}
}

func TestErrors(t *testing.T) {
	base := errors.New("chat not found")
	perm := fmt.Errorf("send to %s: %w", "x", Permanent(base))
	rl := fmt.Errorf("send: %w", &RateLimitError{RetryAfter: 5 * time.Second, Err: errors.New("429")})
	tests := []struct {
		name      string
		err       error
		permanent bool
		retry     time.Duration
		limited   bool
	}{
		{"permanent", perm, true, 0, false},
		{"rate limit", rl, false, 5 * time.Second, true},
		{"transient", errors.New("connection reset"), false, 0, false},
		{"nil", nil, false, 0, false},
	}
	for _, tc := range tests {
		if IsPermanent(tc.err) != tc.permanent {
			t.Errorf("%s: IsPermanent = %v", tc.name, !tc.permanent)
		}
		d, ok := RetryAfter(tc.err)
		if ok != tc.limited || d != tc.retry {
			t.Errorf("%s: RetryAfter = %v, %v", tc.name, d, ok)
		}
	}
	if !errors.Is(perm, base) || perm.Error() != "send to x: chat not found" {
		t.Errorf("permanent error does not wrap: %v", perm)
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
	if !strings.Contains(rl.Error(), "retry after 5s") {
		t.Errorf("rate limit message: %q", rl.Error())
	}
}
