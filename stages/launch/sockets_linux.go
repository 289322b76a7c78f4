package launch

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/benchrun/benchrun/internal/procrun"
)

// listenInodes returns the inodes of the TCP sockets listening on port
// (any address, IPv4 and IPv6), from /proc/net/tcp and /proc/net/tcp6.
// ok is false when neither table can be read.
func listenInodes(port int) (inodes map[uint64]bool, ok bool) {
	inodes = map[uint64]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		ok = true
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fl := strings.Fields(sc.Text())
			if len(fl) < 10 || fl[3] != "0A" { // 0A: TCP_LISTEN
				continue
			}
			_, hexPort, found := strings.Cut(fl[1], ":")
			if !found {
				continue
			}
			if p, err := strconv.ParseUint(hexPort, 16, 16); err != nil || int(p) != port {
				continue
			}
			if ino, err := strconv.ParseUint(fl[9], 10, 64); err == nil && ino != 0 {
				inodes[ino] = true
			}
		}
		f.Close()
	}
	return inodes, ok
}

// holdsSocket reports whether pid has one of the socket inodes open.
func holdsSocket(pid int, inodes map[uint64]bool) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		link, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		if s, ok := strings.CutPrefix(link, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil && inodes[ino] {
				return true
			}
		}
	}
	return false
}

// portOwnership says who listens on port: owned when root or one of its
// descendants holds a listening socket on it; known is false when that
// cannot be told (no /proc, or no listening socket is visible, as behind
// a NAT rule), and then the caller trusts a TCP connect alone. holder names
// the process holding it when it is someone else's.
func portOwnership(root, port int) (owned, known bool, holder string) {
	inodes, ok := listenInodes(port)
	if !ok || len(inodes) == 0 {
		return false, false, ""
	}
	for _, pid := range append([]int{root}, procrun.Descendants(root)...) {
		if holdsSocket(pid, inodes) {
			return true, true, ""
		}
	}
	return false, true, socketHolder(inodes)
}

// portHolder names the process listening on port ("pid 4242 (python3 -m
// http.server 8000)"), or "" when it cannot be found (another user's
// process, say).
func portHolder(port int) string {
	inodes, ok := listenInodes(port)
	if !ok || len(inodes) == 0 {
		return ""
	}
	return socketHolder(inodes)
}

func socketHolder(inodes map[uint64]bool) string {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && holdsSocket(pid, inodes) {
			return describeProc(pid)
		}
	}
	return ""
}

// describeProc is "pid N (command line)", the command line cut to 120 bytes.
func describeProc(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	cmdline := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if cmdline == "" {
		c, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		cmdline = strings.TrimSpace(string(c))
	}
	if len(cmdline) > 120 {
		cmdline = cmdline[:120] + "…"
	}
	return fmt.Sprintf("pid %d (%s)", pid, cmdline)
}
