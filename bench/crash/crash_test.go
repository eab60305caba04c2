package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrashCampaign runs short campaigns against the binary built from
// this checkout: two fixed seeds and one random seed (printed, and taken
// from SWITCHBOARD_CRASH_SEED when set; SWITCHBOARD_CRASH_BIN names another
// binary to test), 7 kills over a minute each —
// about 20 kills and 4-5 minutes on 2 cores, the Telegram, Slack and
// Discord chats together. It takes minutes, so it runs
// only with SWITCHBOARD_CRASH=1 (CI sets it in its own step):
//
//	SWITCHBOARD_CRASH=1 go test -count=1 -run TestCrashCampaign -timeout 30m ./bench/crash/
func TestCrashCampaign(t *testing.T) {
	if os.Getenv("SWITCHBOARD_CRASH") != "1" {
		t.Skip("the crash campaign takes minutes: set SWITCHBOARD_CRASH=1 to run it")
	}
	random := rand.Uint64() % 1_000_000
	if s := os.Getenv("SWITCHBOARD_CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SWITCHBOARD_CRASH_SEED=%q is not a number", s)
		}
		random = n
	}
	t.Logf("random seed %d (reproduce with SWITCHBOARD_CRASH_SEED=%d, or go run ./bench/crash -seed %d -kills 7 -duration 1m)", random, random, random)
	// SWITCHBOARD_CRASH_PLATFORMS narrows the chats driven (default all
	// three).
	platforms := strings.Split(cmp.Or(os.Getenv("SWITCHBOARD_CRASH_PLATFORMS"), "telegram,slack,discord"), ",")
	t.Logf("platforms %v", platforms)
	bin := os.Getenv("SWITCHBOARD_CRASH_BIN") // a binary to test instead of this checkout's
	if bin == "" {
		var err error
		if bin, err = build(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	for _, seed := range []uint64{1, 2, random} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			var out bytes.Buffer
			opts := options{seed: seed, kills: 7, duration: time.Minute, bin: bin, dir: filepath.Join(t.TempDir(), "campaign"), platforms: platforms}
			ok, err := runCampaign(context.Background(), opts, &out)
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatalf("campaign (seed %d) could not run: %v", seed, err)
			}
			if !ok {
				t.Fatalf("campaign failed (seed %d): the problems and the events that led to them are above", seed)
			}
		})
	}
}
