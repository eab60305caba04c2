package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/config"
	"github.com/switchboard-gw/switchboard/memfs"
	"github.com/switchboard-gw/switchboard/store"
)

// manifestName is the file describing a backup; the rest of a backup
// directory is laid out like a data directory, so restoring is copying it.
const manifestName = "backup.json"

func newBackupCmd(s *streams) *cobra.Command {
	var configFile string
	var force bool
	cmd := &cobra.Command{
		Use:   "backup DIR",
		Short: "Copy the database and the agents' memory into DIR, consistently, also while serve runs",
		Long: `Write a consistent copy of the data directory's database (sqlite VACUUM INTO:
one snapshot, taken without stopping writers) and of every agent's memory
repository (copied under the repository's lock, so no commit is half-copied)
into DIR, laid out like a data directory. DIR must be new or empty unless
--force is given; the copy is built beside it and put in place when complete.

Overflow files, the process-group registry and the queue's delivered records
older than a week are not needed to restore and are left out. The config file
is copied when it is $SWITCHBOARD_HOME/switchboard.toml.

Restore: stop serve, move the data directory aside and copy DIR in its place:
  mv "$SWITCHBOARD_HOME" "$SWITCHBOARD_HOME.old" && cp -a DIR "$SWITCHBOARD_HOME"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Only the data directory is needed: a backup from cron must
			// not fail because the channels' tokens are not in its
			// environment.
			paths, _, err := locateWith(configFile, os.LookupEnv)
			if err != nil {
				return err
			}
			m, err := runBackup(cmd.Context(), paths, args[0], force)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "Backed up %s to %s: the database (%d conversations)", m.Home, m.Dir, m.Conversations)
			if len(m.Memory) > 0 {
				fmt.Fprintf(s.out, " and the memory of %d agent(s)", len(m.Memory))
			}
			fmt.Fprintln(s.out, ".")
			fmt.Fprintf(s.out, "Restore: stop serve, then  mv %q %q && cp -a %q %q\n", m.Home, m.Home+".old", m.Dir, m.Home)
			return nil
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "config file (default: $SWITCHBOARD_CONFIG, else $SWITCHBOARD_HOME/switchboard.toml)")
	cmd.Flags().BoolVar(&force, "force", false, "replace DIR when it is not empty")
	return cmd
}

// backupManifest is backup.json.
type backupManifest struct {
	Home          string    `json:"home"`
	Dir           string    `json:"-"`
	Created       time.Time `json:"created"`
	Version       string    `json:"version"`
	Revision      string    `json:"revision,omitempty"`
	Schema        int       `json:"schemaVersion"`
	Conversations int       `json:"conversations"`
	Memory        []string  `json:"memory"` // agents whose memory repository was copied
	Config        bool      `json:"config"` // switchboard.toml was copied
}

// runBackup builds the backup in a fresh directory beside dst and moves it
// into place once complete.
func runBackup(ctx context.Context, paths config.Paths, dst string, force bool) (backupManifest, error) {
	dst, err := filepath.Abs(dst)
	if err != nil {
		return backupManifest{}, err
	}
	home := paths.Home
	if within(dst, home) {
		return backupManifest{}, fmt.Errorf("the backup directory %s is inside the data directory %s: choose a place outside it", dst, home)
	}
	if err := checkBackupTarget(dst, force); err != nil {
		return backupManifest{}, err
	}
	if _, err := os.Stat(filepath.Join(home, dbFileName)); err != nil {
		return backupManifest{}, fmt.Errorf("nothing to back up: %s has no database (%v); is SWITCHBOARD_HOME right?", home, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return backupManifest{}, fmt.Errorf("create %s: %w", filepath.Dir(dst), err)
	}
	tmp := dst + ".partial-" + randomSuffix()
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return backupManifest{}, fmt.Errorf("create %s: %w", tmp, err)
	}
	m, err := writeBackup(ctx, paths, tmp)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return backupManifest{}, err
	}
	if err := replaceDir(tmp, dst); err != nil {
		_ = os.RemoveAll(tmp)
		return backupManifest{}, err
	}
	m.Dir = dst
	return m, nil
}

// writeBackup fills dir. The database is copied first and the memory
// after: memory history only grows, so every memory revision the copied
// conversations name is in the copied repositories.
func writeBackup(ctx context.Context, paths config.Paths, dir string) (backupManifest, error) {
	home := paths.Home
	bi := readBuildInfo(version, buildTime, debug.ReadBuildInfo)
	m := backupManifest{Home: home, Created: time.Now().UTC(), Version: bi.Version, Revision: bi.Revision, Memory: []string{}}

	db, err := store.Open(ctx, filepath.Join(home, dbFileName))
	if err != nil {
		return m, err
	}
	defer db.Close()
	if err := db.Backup(ctx, filepath.Join(dir, dbFileName)); err != nil {
		return m, err
	}
	if m.Schema, err = db.SchemaVersion(ctx); err != nil {
		return m, err
	}
	// Count in the copy: the live database may have grown since.
	cp, err := store.Open(ctx, filepath.Join(dir, dbFileName))
	if err != nil {
		return m, fmt.Errorf("open the copied database: %w", err)
	}
	convs, err := cp.ConversationSummaries(ctx, "", 0)
	cerr := cp.Close()
	if err != nil {
		return m, err
	}
	if cerr != nil {
		return m, cerr
	}
	m.Conversations = len(convs)
	// Opening the copy put it in WAL mode; its -wal and -shm files are
	// gone after Close, but remove strays so the backup is one file.
	for _, suffix := range []string{"-wal", "-shm"} {
		_ = os.Remove(filepath.Join(dir, dbFileName+suffix))
	}

	memRoot := filepath.Join(home, "memory")
	ents, err := os.ReadDir(memRoot)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("read %s: %w", memRoot, err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		src := filepath.Join(memRoot, e.Name())
		if _, err := os.Stat(filepath.Join(src, ".git")); err != nil {
			continue // not a memory repository
		}
		if err := memfs.CopyRepo(ctx, src, filepath.Join(dir, "memory", e.Name())); err != nil {
			return m, err
		}
		m.Memory = append(m.Memory, e.Name())
	}

	if cf := filepath.Join(home, config.FileName); paths.ConfigFile == cf {
		if err := copyPrivateFile(cf, filepath.Join(dir, config.FileName)); err != nil {
			return m, fmt.Errorf("copy the config file: %w", err)
		}
		m.Config = true
	}
	f, err := os.OpenFile(filepath.Join(dir, manifestName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return m, err
	}
	if err := printJSON(f, m); err != nil {
		f.Close()
		return m, err
	}
	return m, f.Close()
}

// checkBackupTarget refuses a non-empty directory without force, and any
// existing file that is not a directory.
func checkBackupTarget(dst string, force bool) error {
	fi, err := os.Stat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory: choose a directory path for the backup", dst)
	}
	ents, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	if len(ents) > 0 && !force {
		return fmt.Errorf("%s is not empty: choose a new directory, or pass --force to replace its contents", dst)
	}
	return nil
}

// replaceDir puts the finished backup tmp at dst, removing what dst held
// only once tmp is in place.
func replaceDir(tmp, dst string) error {
	old := ""
	if _, err := os.Stat(dst); err == nil {
		old = dst + ".old-" + randomSuffix()
		if err := os.Rename(dst, old); err != nil {
			return fmt.Errorf("move the old %s aside: %w", dst, err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if old != "" {
			_ = os.Rename(old, dst)
		}
		return fmt.Errorf("put the backup in place at %s: %w", dst, err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("the backup is complete at %s, but removing the replaced copy %s failed: %w", dst, old, err)
		}
	}
	return nil
}

func copyPrivateFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
