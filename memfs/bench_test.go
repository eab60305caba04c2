package memfs

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchRepo makes a memory with 50 extra files of about 300 bytes.
func benchRepo(b *testing.B) *Repo {
	b.Helper()
	r := openTestRepo(b, b.TempDir(), Options{})
	for i := range 50 {
		line := fmt.Sprintf("- fact %d about the user's projects and preferences\n", i)
		writeFile(b, r, fmt.Sprintf("notes/topic%02d.md", i), strings.Repeat(line, 300/len(line)+1)[:300])
	}
	mustCommit(b, r, "50 files")
	return r
}

func BenchmarkCompile50Files(b *testing.B) {
	r := benchRepo(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := r.Compile(ctx)
		if err != nil || c.Files != 53 {
			b.Fatalf("Compile: %d files, %v", c.Files, err)
		}
	}
}

func BenchmarkCommitOneFile(b *testing.B) {
	r := benchRepo(b)
	ctx := context.Background()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		writeFile(b, r, "notes/topic07.md", fmt.Sprintf("changed %d\n", i))
		res, err := r.CommitWorkTree(ctx, "one file")
		if err != nil || !res.Changed {
			b.Fatalf("CommitWorkTree: %+v, %v", res, err)
		}
	}
}
