package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeAtomic replaces path with content: a temporary file in the same
// directory, synced, then renamed over the target, so readers never see a
// half-written file. An existing file keeps its permission bits; a
// symlink is followed so the link itself survives. Parent directories are
// created. It reports whether the file existed and its previous size.
func writeAtomic(path string, content []byte) (existed bool, oldSize int64, err error) {
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	mode := fs.FileMode(0o644)
	switch fi, err := os.Stat(target); {
	case err == nil && fi.IsDir():
		return false, 0, errIsDir
	case err == nil:
		existed, oldSize, mode = true, fi.Size(), fi.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
	default:
		return false, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return existed, oldSize, fmt.Errorf("create directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return existed, oldSize, fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(content); err != nil {
		_ = tmp.Close()
		return existed, oldSize, fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return existed, oldSize, fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return existed, oldSize, fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return existed, oldSize, fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), target); err != nil {
		return existed, oldSize, fmt.Errorf("rename onto %s: %w", target, err)
	}
	return existed, oldSize, nil
}

// fileError turns an error opening or reading a file the model named into
// a message it can act on.
func fileError(display string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("File not found: %s. Check the path with Glob.", display)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("Permission denied: %s. The file cannot be read by the gateway's user.", display)
	default:
		return fmt.Sprintf("Cannot read %s: %v", display, err)
	}
}

// errIsDir is writeAtomic's error for a path that names a directory.
var errIsDir = errors.New("it is a directory; give a file path")
