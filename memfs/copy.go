package memfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"
)

// CopyRepo copies the memory repository in src (work tree and .git) to
// dst, which must not exist yet or be an empty directory. It holds the
// repository's shared lock for the whole copy, the lock every reader
// takes, so no commit, revert or first commit (they hold the exclusive
// one) runs meanwhile in any process: the copied history and references
// are those of one moment. Uncommitted edits in the work tree are copied
// as they are; the next commit in the copy validates them as usual.
//
// Regular files keep their permission bits, symbolic links are copied as
// links, and anything else (sockets, devices) is skipped. The lock file
// itself is not copied.
func CopyRepo(ctx context.Context, src, dst string) error {
	src, err := filepath.Abs(src)
	if err != nil {
		return fmt.Errorf("copy memory %s: %w", src, err)
	}
	gitDir := filepath.Join(src, git.GitDirName)
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("copy memory %s: not a memory repository (no %s directory)", src, git.GitDirName)
	}
	if err := emptyOrMissing(dst); err != nil {
		return fmt.Errorf("copy memory %s to %s: %w", src, dst, err)
	}
	lockPath := filepath.Join(gitDir, lockFileName)
	f, err := flockFile(ctx, lockPath, false)
	if err != nil {
		return fmt.Errorf("copy memory %s: %w", src, err)
	}
	defer f.Close()
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if path == lockPath {
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(path, target, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copy memory %s to %s: %w", src, dst, err)
	}
	return nil
}

// emptyOrMissing reports an error unless dir does not exist or is an empty
// directory.
func emptyOrMissing(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return errors.New("the destination is not empty")
	}
	return nil
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
