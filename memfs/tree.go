package memfs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// storeBlob writes data as a blob object.
func storeBlob(g *git.Repository, data []byte) (plumbing.Hash, error) {
	obj := g.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.Storer.SetEncodedObject(obj)
}

// treeNode is a directory while building trees.
type treeNode struct {
	files map[string]treeFile
	dirs  map[string]*treeNode
}

func newTreeNode() *treeNode {
	return &treeNode{files: map[string]treeFile{}, dirs: map[string]*treeNode{}}
}

// writeTree stores the tree objects for a flat map of files and returns the
// root tree's hash.
func writeTree(g *git.Repository, files map[string]treeFile) (plumbing.Hash, error) {
	root := newTreeNode()
	for p, f := range files {
		parts := strings.Split(p, "/")
		n := root
		for i, part := range parts[:len(parts)-1] {
			if _, clash := n.files[part]; clash {
				return plumbing.ZeroHash, fmt.Errorf("%s is both a file and a directory", strings.Join(parts[:i+1], "/"))
			}
			sub, ok := n.dirs[part]
			if !ok {
				sub = newTreeNode()
				n.dirs[part] = sub
			}
			n = sub
		}
		name := parts[len(parts)-1]
		if _, clash := n.dirs[name]; clash {
			return plumbing.ZeroHash, fmt.Errorf("%s is both a file and a directory", p)
		}
		n.files[name] = f
	}
	return storeTree(g, root)
}

// storeTree stores one node and its subtrees, entries in git's order
// (a directory sorts as if its name ended in "/").
func storeTree(g *git.Repository, n *treeNode) (plumbing.Hash, error) {
	entries := make([]object.TreeEntry, 0, len(n.files)+len(n.dirs))
	for name, sub := range n.dirs {
		h, err := storeTree(g, sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	for name, f := range n.files {
		entries = append(entries, object.TreeEntry{Name: name, Mode: f.mode, Hash: f.hash})
	}
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	obj := g.Storer.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.Storer.SetEncodedObject(obj)
}
