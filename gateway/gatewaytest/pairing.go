package gatewaytest

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

const pairingTTL = time.Hour

func newPairing(channel, user string, now time.Time) gateway.Pairing {
	return gateway.Pairing{
		Code:     newID("code"),
		Channel:  channel,
		UserID:   user,
		UserName: "name of " + user,
		Location: channel + ":" + user,
		Created:  now,
		Expires:  now.Add(pairingTTL),
	}
}

// notifyEvery is the notice interval the contract tests pass.
const notifyEvery = time.Hour

// createPairing calls CreatePairing and checks the error only.
func createPairing(t *testing.T, s gateway.Store, p gateway.Pairing, limit int, now time.Time) (gateway.Pairing, bool) {
	t.Helper()
	got, notify, err := s.CreatePairing(t.Context(), p, limit, notifyEvery, now)
	if err != nil {
		t.Fatalf("CreatePairing(%s:%s): %v", p.Channel, p.UserID, err)
	}
	return got, notify
}

func paired(t *testing.T, s gateway.Store, channel, user string) bool {
	t.Helper()
	ok, err := s.Paired(t.Context(), channel, user)
	if err != nil {
		t.Fatalf("Paired(%s, %s): %v", channel, user, err)
	}
	return ok
}

func testPairingSameUser(t *testing.T, s gateway.Store) {
	now := base()
	p := newPairing("telegram", "4242", now)
	got, notify := createPairing(t, s, p, 3, now)
	if !notify {
		t.Fatal("CreatePairing on an empty store: notify = false")
	}
	check(t, "stored pairing", got, p)

	// The same user asking again, later but before expiry, gets the same
	// code back, not a new one — and no second message within the hour.
	later := now.Add(pairingTTL / 2)
	again := newPairing("telegram", "4242", later)
	got, notify = createPairing(t, s, again, 3, later)
	if notify {
		t.Error("CreatePairing for a user told half an hour ago: notify = true")
	}
	check(t, "pairing of a user with a pending code", got, p)

	// Same user id on another channel is another user.
	other := newPairing("slack", "4242", later)
	if got, notify := createPairing(t, s, other, 3, later); !notify || got.Code != other.Code {
		t.Errorf("CreatePairing on another channel = %+v, %v; want the new code %s", got, notify, other.Code)
	}
	// A code is unique.
	taken := newPairing("discord", "77", later)
	taken.Code = p.Code
	if _, notify, err := s.CreatePairing(t.Context(), taken, 3, notifyEvery, later); err == nil && notify {
		t.Error("CreatePairing with a code already taken stored it")
	}
}

func testPairingNotifyOncePerInterval(t *testing.T, s gateway.Store) {
	now := base()
	p, notify := createPairing(t, s, newPairing("telegram", "9", now), 3, now)
	if !notify {
		t.Fatal("first code: notify = false")
	}
	// A user writing every ten minutes is told once while the code lives.
	for m := 10; m < 60; m += 10 {
		at := now.Add(time.Duration(m) * time.Minute)
		if got, notify := createPairing(t, s, newPairing("telegram", "9", at), 3, at); notify || got.Code != p.Code {
			t.Errorf("after %d minutes: code %s notify %v; want %s and no message", m, got.Code, notify, p.Code)
		}
	}
	// Once the code has expired and the hour has passed, a new code is
	// sent.
	at := now.Add(pairingTTL + time.Minute)
	fresh := newPairing("telegram", "9", at)
	if got, notify := createPairing(t, s, fresh, 3, at); !notify || got.Code != fresh.Code {
		t.Errorf("after the hour: %+v, %v; want the new code %s, sent", got, notify, fresh.Code)
	}
	// A pending code whose notice is older than the interval is sent again.
	longTTL := newPairing("telegram", "10", now)
	longTTL.Expires = now.Add(3 * notifyEvery)
	createPairing(t, s, longTTL, 3, now)
	at = now.Add(notifyEvery + time.Minute)
	if got, notify := createPairing(t, s, newPairing("telegram", "10", at), 3, at); !notify || got.Code != longTTL.Code {
		t.Errorf("pending code after the interval: %+v, %v; want %s sent again", got, notify, longTTL.Code)
	}
}

// testPairingEvictsOldest: strangers cannot block pairing. At the limit a
// new user still gets a code; the oldest other user's code is evicted and
// no longer approves; the evicted user gets no new code within the hour.
func testPairingEvictsOldest(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	now := base()
	const limit = 3
	var strangers []gateway.Pairing
	for i := range limit {
		at := now.Add(time.Duration(i) * time.Second)
		p, notify := createPairing(t, s, newPairing("telegram", fmt.Sprint("stranger-", i), at), limit, at)
		if !notify {
			t.Fatalf("stranger %d: notify = false", i)
		}
		strangers = append(strangers, p)
	}
	at := now.Add(time.Minute)
	newcomer := newPairing("telegram", "real-user", at)
	got, notify := createPairing(t, s, newcomer, limit, at)
	if !notify || got.Code != newcomer.Code {
		t.Fatalf("a user after %d strangers: %+v, %v; want the new code %s, sent", limit, got, notify, newcomer.Code)
	}
	_, err := s.ApprovePairing(ctx, strangers[0].Code, at)
	wantNotFound(t, "ApprovePairing of the evicted oldest code", err)
	if _, err := s.ApprovePairing(ctx, newcomer.Code, at.Add(time.Second)); err != nil {
		t.Fatalf("the owner cannot approve the new user's code: %v", err)
	}
	if !paired(t, s, "telegram", "real-user") {
		t.Error("Paired after approval = false")
	}
	// The other strangers' codes were kept.
	if _, err := s.ApprovePairing(ctx, strangers[1].Code, at); err != nil {
		t.Errorf("ApprovePairing of a kept code: %v", err)
	}

	// A user with a pending code is never evicted by their own request
	// and keeps their code at the limit.
	if got, _ := createPairing(t, s, newPairing("telegram", "stranger-2", at), limit, at); got.Code != strangers[2].Code {
		t.Errorf("stranger 2 at the limit got %s, want their code %s", got.Code, strangers[2].Code)
	}
	// The evicted stranger writing again within the hour gets neither a
	// new code nor a message; after the hour they do.
	if got, notify := createPairing(t, s, newPairing("telegram", "stranger-0", at), limit, at); notify || got.Code != "" {
		t.Errorf("evicted stranger within the hour: %+v, %v; want nothing", got, notify)
	}
	later := now.Add(notifyEvery + time.Second)
	again := newPairing("telegram", "stranger-0", later)
	if got, notify := createPairing(t, s, again, limit, later); !notify || got.Code != again.Code {
		t.Errorf("evicted stranger after the hour: %+v, %v; want the new code %s, sent", got, notify, again.Code)
	}

	// The limit is per channel: slack keeps its own newest codes.
	for i := range limit + 1 {
		// Distinct times: which code is the oldest must not be a tie.
		ti := at.Add(time.Duration(i) * time.Millisecond)
		if _, notify := createPairing(t, s, newPairing("slack", fmt.Sprint("u", i), ti), limit, ti); !notify {
			t.Errorf("slack user %d: notify = false", i)
		}
	}
	for i := range limit {
		if _, err := s.ApprovePairing(ctx, newPairingCodeOf(t, s, "slack", fmt.Sprint("u", i+1), at), at); err != nil {
			t.Errorf("slack user %d: %v", i+1, err)
		}
	}
}

// newPairingCodeOf returns the pending code of a user, asking as that user
// (a user with a pending code gets it back).
func newPairingCodeOf(t *testing.T, s gateway.Store, channel, user string, now time.Time) string {
	t.Helper()
	got, _ := createPairing(t, s, newPairing(channel, user, now), 1000, now)
	if got.Code == "" {
		t.Fatalf("%s:%s has no pending code", channel, user)
	}
	return got.Code
}

func testPairingEvictionKeepsLimit(t *testing.T, s gateway.Store) {
	// Many strangers in a row: the channel never holds more than the
	// limit, and the newest codes are the ones kept.
	ctx := t.Context()
	now := base()
	const limit, n = 4, 25
	var codes []string
	for i := range n {
		at := now.Add(time.Duration(i) * time.Second)
		p, _ := createPairing(t, s, newPairing("telegram", fmt.Sprint("s", i), at), limit, at)
		codes = append(codes, p.Code)
	}
	at := now.Add(n * time.Second)
	for i, code := range codes {
		_, err := s.ApprovePairing(ctx, code, at)
		if kept := i >= n-limit; kept != (err == nil) {
			t.Errorf("code %d of %d: approve err %v; want kept=%v", i, n, err, kept)
		}
	}
}

func testPairingExpired(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	now := base()
	p, _ := createPairing(t, s, newPairing("telegram", "4242", now), 3, now)

	// Expiry is judged by the now the caller passes; a code expires at
	// Expires.
	_, err := s.ApprovePairing(ctx, p.Code, p.Expires)
	wantNotFound(t, "ApprovePairing at the code's expiry", err)
	_, err = s.ApprovePairing(ctx, p.Code, p.Expires.Add(time.Hour))
	wantNotFound(t, "ApprovePairing after the code's expiry", err)
	if paired(t, s, "telegram", "4242") {
		t.Error("Paired after approving an expired code = true")
	}

	// After expiry the user gets a new code, not the expired one.
	later := p.Expires.Add(time.Minute)
	fresh := newPairing("telegram", "4242", later)
	got, ok := createPairing(t, s, fresh, 3, later)
	if !ok || got.Code != fresh.Code {
		t.Errorf("CreatePairing after expiry = %+v, %v; want the new code %s", got, ok, fresh.Code)
	}
	_, err = s.ApprovePairing(ctx, p.Code, later)
	wantNotFound(t, "ApprovePairing of the old code", err)
}

func testPairingApprove(t *testing.T, s gateway.Store) {
	ctx := t.Context()
	now := base()
	p, _ := createPairing(t, s, newPairing("telegram", "4242", now), 3, now)
	q, _ := createPairing(t, s, newPairing("telegram", "77", now), 3, now)
	if paired(t, s, "telegram", "4242") {
		t.Error("Paired before approval = true")
	}
	_, err := s.ApprovePairing(ctx, "no-such-code", now)
	wantNotFound(t, "ApprovePairing of an unknown code", err)

	got, err := s.ApprovePairing(ctx, p.Code, now.Add(time.Minute))
	if err != nil {
		t.Fatalf("ApprovePairing: %v", err)
	}
	want := p
	want.Approved = true
	check(t, "approved pairing", got, want)
	if !paired(t, s, "telegram", "4242") {
		t.Error("Paired after approval = false")
	}
	if paired(t, s, "telegram", "77") || paired(t, s, "slack", "4242") {
		t.Error("Paired is true for a user whose code was not approved")
	}
	_, err = s.ApprovePairing(ctx, p.Code, now.Add(2*time.Minute))
	wantNotFound(t, "ApprovePairing of an approved code", err)

	// A paired user asking again is not handed the approved code.
	again := newPairing("telegram", "4242", now)
	if got, ok := createPairing(t, s, again, 3, now.Add(3*time.Minute)); ok && got.Code == p.Code {
		t.Errorf("CreatePairing after approval returned the approved code %s", p.Code)
	}
	if _, err := s.ApprovePairing(ctx, q.Code, now.Add(time.Minute)); err != nil {
		t.Fatalf("ApprovePairing(second user): %v", err)
	}
	if !paired(t, s, "telegram", "77") {
		t.Error("Paired after the second approval = false")
	}
}
