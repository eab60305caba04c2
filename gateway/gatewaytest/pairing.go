package gatewaytest

import (
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

// createPairing calls CreatePairing and checks the error only.
func createPairing(t *testing.T, s gateway.Store, p gateway.Pairing, limit int, now time.Time) (gateway.Pairing, bool) {
	t.Helper()
	got, ok, err := s.CreatePairing(t.Context(), p, limit, now)
	if err != nil {
		t.Fatalf("CreatePairing(%s:%s): %v", p.Channel, p.UserID, err)
	}
	return got, ok
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
	got, ok := createPairing(t, s, p, 3, now)
	if !ok {
		t.Fatal("CreatePairing on an empty store: ok = false")
	}
	check(t, "stored pairing", got, p)

	// The same user asking again, later but before expiry, gets the same
	// code back, not a new one.
	later := now.Add(pairingTTL / 2)
	again := newPairing("telegram", "4242", later)
	got, ok = createPairing(t, s, again, 3, later)
	if !ok {
		t.Fatal("CreatePairing for a user with a pending code: ok = false")
	}
	check(t, "pairing of a user with a pending code", got, p)

	// Same user id on another channel is another user.
	other := newPairing("slack", "4242", later)
	if got, ok := createPairing(t, s, other, 3, later); !ok || got.Code != other.Code {
		t.Errorf("CreatePairing on another channel = %+v, %v; want the new code %s", got, ok, other.Code)
	}
	// A code is unique.
	taken := newPairing("discord", "77", later)
	taken.Code = p.Code
	if _, ok, err := s.CreatePairing(t.Context(), taken, 3, later); err == nil && ok {
		t.Error("CreatePairing with a code already taken stored it")
	}
}

func testPairingMax(t *testing.T, s gateway.Store) {
	now := base()
	const limit = 2
	p1, _ := createPairing(t, s, newPairing("telegram", "1", now), limit, now)
	p2, ok := createPairing(t, s, newPairing("telegram", "2", now), limit, now)
	if !ok {
		t.Fatal("second pending code refused with a limit of 2")
	}
	if _, ok := createPairing(t, s, newPairing("telegram", "3", now), limit, now); ok {
		t.Error("third pending code on a channel with a limit of 2 stored")
	}
	// A user who already has a code still gets it at the limit.
	if got, ok := createPairing(t, s, newPairing("telegram", "2", now), limit, now); !ok || got.Code != p2.Code {
		t.Errorf("CreatePairing for user 2 at the limit = %+v, %v; want code %s", got, ok, p2.Code)
	}
	// The limit is per channel.
	if _, ok := createPairing(t, s, newPairing("slack", "3", now), limit, now); !ok {
		t.Error("a code on another channel was refused")
	}
	// Approved codes are not pending: they free a place.
	if _, err := s.ApprovePairing(t.Context(), p1.Code, now); err != nil {
		t.Fatalf("ApprovePairing: %v", err)
	}
	if _, ok := createPairing(t, s, newPairing("telegram", "3", now), limit, now); !ok {
		t.Error("a code was refused after an approval freed a place")
	}
	// Expired codes are not pending either.
	after := now.Add(pairingTTL + time.Second)
	if _, ok := createPairing(t, s, newPairing("telegram", "4", after), limit, after); !ok {
		t.Error("a code was refused while the other pending codes had expired")
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
