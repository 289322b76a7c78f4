//go:build !linux

package launch

// Without /proc/net the owner of a listening socket is unknown: a TCP
// connect alone says the server is up, and a busy port is refused without
// naming its holder.
func portOwnership(root, port int) (owned, known bool, holder string) { return false, false, "" }

func portHolder(port int) string { return "" }
