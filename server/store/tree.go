package store

import "slices"

// Tree is a conversation's messages as the tree their ParentIDs make (the
// web channel's branches: an edited question or a regenerated answer is a
// sibling of the message it replaces). Build it from all of a
// conversation's messages, oldest first, as Messages.List returns them.
type Tree struct {
	msgs     []Message
	byID     map[string]int
	children map[string][]int // by parent ID ("" for the roots), oldest first
}

// NewTree indexes msgs (oldest first). A message whose parent is not among
// them (deleted) counts as a root.
func NewTree(msgs []Message) *Tree {
	t := &Tree{msgs: msgs, byID: make(map[string]int, len(msgs)), children: map[string][]int{}}
	for i, m := range msgs {
		t.byID[m.ID] = i
	}
	for i, m := range msgs {
		parent := m.ParentID
		if _, ok := t.byID[parent]; !ok || parent == m.ID {
			parent = ""
		}
		t.children[parent] = append(t.children[parent], i)
	}
	return t
}

// Len is the number of messages.
func (t *Tree) Len() int { return len(t.msgs) }

// Get returns the message id.
func (t *Tree) Get(id string) (Message, bool) {
	i, ok := t.byID[id]
	if !ok {
		return Message{}, false
	}
	return t.msgs[i], true
}

// Newest returns the ID of the newest message, or "" for an empty tree.
func (t *Tree) Newest() string {
	if len(t.msgs) == 0 {
		return ""
	}
	return t.msgs[len(t.msgs)-1].ID
}

// Path returns the messages from the root down to id (nil if id is not in
// the tree).
func (t *Tree) Path(id string) []Message {
	i, ok := t.byID[id]
	if !ok {
		return nil
	}
	return t.messages(t.path(i, make([]bool, len(t.msgs))))
}

// path returns the indices from the root down to i, marking them in seen;
// a cycle (bad data) ends the walk.
func (t *Tree) path(i int, seen []bool) []int {
	var rev []int
	for !seen[i] {
		seen[i] = true
		rev = append(rev, i)
		m := &t.msgs[i]
		j, ok := t.byID[m.ParentID]
		if !ok || m.ParentID == "" {
			break
		}
		i = j
	}
	slices.Reverse(rev)
	return rev
}

func (t *Tree) messages(idx []int) []Message {
	out := make([]Message, len(idx))
	for k, i := range idx {
		out[k] = t.msgs[i]
	}
	return out
}

// Branch returns the branch through id: its path from the root, then its
// newest child at each step down to a leaf. nil if id is not in the tree.
func (t *Tree) Branch(id string) []Message {
	i, ok := t.byID[id]
	if !ok {
		return nil
	}
	seen := make([]bool, len(t.msgs))
	idx := t.path(i, seen)
	for {
		kids := t.children[t.msgs[i].ID]
		if len(kids) == 0 {
			break
		}
		i = kids[len(kids)-1]
		if seen[i] {
			break
		}
		seen[i] = true
		idx = append(idx, i)
	}
	return t.messages(idx)
}

// Siblings returns the IDs of the messages with the same parent as id, id
// included, oldest first (nil if id is not in the tree).
func (t *Tree) Siblings(id string) []string {
	i, ok := t.byID[id]
	if !ok {
		return nil
	}
	parent := t.msgs[i].ParentID
	if _, ok := t.byID[parent]; !ok || parent == id {
		parent = ""
	}
	kids := t.children[parent]
	ids := make([]string, len(kids))
	for k, j := range kids {
		ids[k] = t.msgs[j].ID
	}
	return ids
}
