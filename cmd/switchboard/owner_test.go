package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestDeadOwner(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid // exited and reaped
	host, _ := os.Hostname()
	host = strings.ReplaceAll(host, ":", "_")
	ns := pidNamespace()
	for _, tc := range []struct {
		owner string
		want  bool
	}{
		{leaseOwner(), false}, // this process
		{fmt.Sprintf("%s:%d:%s:abc", host, dead, ns), true},
		{fmt.Sprintf("%s:%d:%s:abc", host, os.Getppid(), ns), false}, // alive
		{fmt.Sprintf("other-host:%d:%s:abc", dead, ns), false},       // another machine
		{fmt.Sprintf("%s:%d:4026531999:abc", host, dead), false},     // another pid namespace
		{fmt.Sprintf("%s:%d:abc", host, dead), false},                // an older owner format
		{"run-1234-xyz", false},
	} {
		if got := deadOwner(tc.owner); got != tc.want {
			t.Errorf("deadOwner(%q) = %v, want %v", tc.owner, got, tc.want)
		}
	}
}
