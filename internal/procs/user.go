package procs

import (
	"fmt"
	"os/user"
	"strconv"
)

// User is an OS account that processes can be run as.
type User struct {
	Name     string
	UID, GID uint32
	Home     string
}

// LookupUser resolves an OS user name.
func LookupUser(name string) (User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return User{}, fmt.Errorf("look up user %q: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return User{}, fmt.Errorf("user %q: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return User{}, fmt.Errorf("user %q: gid %q: %w", name, u.Gid, err)
	}
	return User{Name: name, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}, nil
}
