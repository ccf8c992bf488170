package store

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
	var rev []Message
	seen := map[int]bool{}
	for !seen[i] { // a cycle (bad data) ends the walk
		seen[i] = true
		m := t.msgs[i]
		rev = append(rev, m)
		j, ok := t.byID[m.ParentID]
		if !ok || m.ParentID == "" {
			break
		}
		i = j
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev
}

// Branch returns the branch through id: its path from the root, then its
// newest child at each step down to a leaf. nil if id is not in the tree.
func (t *Tree) Branch(id string) []Message {
	path := t.Path(id)
	if path == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, m := range path {
		seen[m.ID] = true
	}
	for last := id; ; {
		kids := t.children[last]
		if len(kids) == 0 || len(path) > len(t.msgs) {
			return path
		}
		next := t.msgs[kids[len(kids)-1]]
		if seen[next.ID] {
			return path
		}
		seen[next.ID] = true
		path = append(path, next)
		last = next.ID
	}
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
