package memfs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestMain doubles as a helper process for the cross-process test: with
// MEMFS_HELPER_DIR set, it commits MEMFS_HELPER_ROUNDS rounds of its own
// file and prints each new revision.
func TestMain(m *testing.M) {
	if dir := os.Getenv("MEMFS_HELPER_DIR"); dir != "" {
		os.Exit(helperCommitter(dir, os.Getenv("MEMFS_HELPER_ID"), os.Getenv("MEMFS_HELPER_ROUNDS")))
	}
	os.Exit(m.Run())
}

func helperCommitter(dir, id, roundsText string) int {
	rounds, err := strconv.Atoi(roundsText)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad rounds:", err)
		return 2
	}
	revs, err := commitRounds(context.Background(), dir, id, rounds)
	for _, r := range revs {
		fmt.Println(r)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// commitRounds opens its own Repo on dir and, rounds times, rewrites
// notes/<id>.md and commits. It returns the revisions it created.
func commitRounds(ctx context.Context, dir, id string, rounds int) ([]string, error) {
	r, err := Open(ctx, dir, Options{AgentName: "worker " + id})
	if err != nil {
		return nil, err
	}
	var revs []string
	for i := range rounds {
		path := dir + "/notes/" + id + ".md"
		if err := os.MkdirAll(dir+"/notes", 0o755); err != nil {
			return revs, err
		}
		if err := os.WriteFile(path, []byte(fmt.Sprintf("%s round %d\n", id, i)), 0o644); err != nil {
			return revs, err
		}
		res, err := r.CommitWorkTree(ctx, fmt.Sprintf("%s round %d", id, i))
		if err != nil {
			return revs, fmt.Errorf("%s round %d: %w", id, i, err)
		}
		if res.Changed {
			revs = append(revs, res.Revision)
		}
	}
	return revs, nil
}

// checkHistory verifies that every revision in created is on HEAD's
// first-parent chain, that every commit can be shown, and that each
// worker's file holds its last round.
func checkHistory(t *testing.T, dir string, created []string, workers []string, rounds int) {
	t.Helper()
	ctx := context.Background()
	r := openTestRepo(t, dir, Options{})
	log, err := r.Log(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	onChain := map[string]bool{}
	for _, c := range log {
		onChain[c.Revision] = true
		if _, _, err := r.Show(ctx, c.Revision, 0); err != nil {
			t.Errorf("Show(%s): %v", c.Revision, err)
		}
	}
	for _, rev := range created {
		if !onChain[rev] {
			t.Errorf("commit %s was reported but is not in the history (lost by a racing writer)", rev)
		}
	}
	if len(log) != len(created)+1 {
		t.Errorf("history has %d commits; workers reported %d plus the first", len(log), len(created))
	}
	files := headMap(t, r)
	for _, id := range workers {
		if want := fmt.Sprintf("%s round %d\n", id, rounds-1); files["notes/"+id+".md"] != want {
			t.Errorf("notes/%s.md = %q, want %q", id, files["notes/"+id+".md"], want)
		}
	}
	if res := mustCommit(t, r, "final"); res.Changed {
		t.Errorf("work tree and HEAD differ after all workers finished: %v", res.Files)
	}
	if _, err := exec.LookPath("git"); err == nil {
		runGit(t, dir, "fsck", "--strict")
	}
}

func TestConcurrentCommitsInProcess(t *testing.T) {
	dir := t.TempDir()
	openTestRepo(t, dir, Options{})
	if err := os.Mkdir(dir+"/notes", 0o755); err != nil {
		t.Fatal(err)
	}
	const rounds = 5
	workers := []string{"w0", "w1", "w2", "w3", "w4", "w5"}
	// Two Repo values on the same directory, each shared by three goroutines.
	repos := []*Repo{openTestRepo(t, dir, Options{}), openTestRepo(t, dir, Options{})}
	var mu sync.Mutex
	var created []string
	var wg sync.WaitGroup
	for i, id := range workers {
		wg.Go(func() {
			r := repos[i%2]
			for round := range rounds {
				// No t.Fatal off the test goroutine: plain writes, errors reported.
				if err := os.WriteFile(r.Dir()+"/notes/"+id+".md", fmt.Appendf(nil, "%s round %d\n", id, round), 0o644); err != nil {
					t.Error(err)
					return
				}
				res, err := r.CommitWorkTree(context.Background(), id)
				if err != nil {
					t.Errorf("%s round %d: %v", id, round, err)
					return
				}
				if res.Changed {
					mu.Lock()
					created = append(created, res.Revision)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	checkHistory(t, dir, created, workers, rounds)
}

func TestConcurrentCommitsAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	openTestRepo(t, dir, Options{})
	const rounds = 8
	workers := []string{"p0", "p1", "p2"}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for _, id := range workers[1:] {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "MEMFS_HELPER_DIR="+dir, "MEMFS_HELPER_ID="+id, "MEMFS_HELPER_ROUNDS="+strconv.Itoa(rounds))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	created, err := commitRounds(context.Background(), dir, workers[0], rounds)
	if err != nil {
		t.Error(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %s: %v\n%s", workers[i+1], err, outs[i])
			continue
		}
		sc := bufio.NewScanner(outs[i])
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); len(line) == 40 {
				created = append(created, line)
			}
		}
	}
	checkHistory(t, dir, created, workers, rounds)
}
