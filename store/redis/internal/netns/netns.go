//go:build linux

// Package netns builds small networks of Linux network namespaces for
// fault tests: namespaces joined through a bridge by veth pairs, links taken
// down and up, nftables rules, and sockets a Go process makes inside a
// namespace. It needs root and the ip command (iproute2); nft (nftables)
// and tc only for the faults that use them. Everything it makes lives in
// namespaces of its own: the host's network is never touched.
package netns

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// namePrefix starts the name of every namespace this package makes,
// followed by the making process's pid, so that Sweep can remove what a
// killed test left behind.
const namePrefix = "sluicefault-"

// subnet is the members' network, private to the namespaces.
const subnet = "10.77.0."

// Net is a bridge in a namespace of its own (the hub) and the namespaces
// linked to it, each by a veth pair, each with an address on one subnet.
// Every member knows every other's hardware address (permanent neighbour
// entries), so that a link taken down makes packets vanish rather than
// fail address resolution: connections hang, no error comes back.
type Net struct {
	id      string // the names' stem: prefix, pid, a random part
	hub     string
	mu      sync.Mutex
	members []*NS
}

// NS is a member of a Net: a namespace with one interface, eth0, on the
// Net's subnet.
type NS struct {
	Name string // the namespace's name (ip netns)
	IP   string // its address on the Net
	net  *Net
	port string // its link's end in the hub
	mac  string
	// fd is open on /var/run/netns/Name until the Net closes; dials and
	// listens hold mu for reading while they enter the namespace, Close
	// for writing, so that none enters a namespace by a closed (or
	// reused) descriptor.
	mu sync.RWMutex
	fd int
}

// Available reports why namespaces cannot be made here, or nil: it needs
// root, the ip command, and a namespace made and removed.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the ip command (iproute2) is not installed")
	}
	name := fmt.Sprintf("%s%d-probe", namePrefix, os.Getpid())
	if err := run("ip", "netns", "add", name); err != nil {
		return fmt.Errorf("making a network namespace: %w", err)
	}
	return run("ip", "netns", "del", name)
}

// New makes an empty Net: its hub namespace and bridge.
func New() (*Net, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	n := &Net{id: fmt.Sprintf("%s%d-%x", namePrefix, os.Getpid(), b)}
	n.hub = n.id + "-hub"
	if err := run("ip", "netns", "add", n.hub); err != nil {
		return nil, fmt.Errorf("netns: making the hub: %w", err)
	}
	for _, c := range [][]string{
		{"-n", n.hub, "link", "set", "lo", "up"},
		{"-n", n.hub, "link", "add", "br0", "type", "bridge"},
		{"-n", n.hub, "link", "set", "br0", "up"},
	} {
		if err := run("ip", c...); err != nil {
			_ = n.Close()
			return nil, fmt.Errorf("netns: making the bridge: %w", err)
		}
	}
	return n, nil
}

// Add makes a member namespace named after name, linked to the hub.
func (n *Net) Add(name string) (*NS, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := len(n.members) + 1
	if k > 200 {
		return nil, errors.New("netns: at most 200 members")
	}
	ns := &NS{
		Name: n.id + "-" + name,
		IP:   subnet + strconv.Itoa(k),
		net:  n,
		port: "p" + strconv.Itoa(k),
		mac:  fmt.Sprintf("02:77:00:00:00:%02x", k),
		fd:   -1,
	}
	if err := run("ip", "netns", "add", ns.Name); err != nil {
		return nil, fmt.Errorf("netns: adding %s: %w", name, err)
	}
	n.members = append(n.members, ns)
	cmds := [][]string{
		{"-n", ns.Name, "link", "set", "lo", "up"},
		{"-n", n.hub, "link", "add", ns.port, "type", "veth", "peer", "name", "eth0", "netns", ns.Name},
		{"-n", n.hub, "link", "set", ns.port, "master", "br0"},
		{"-n", n.hub, "link", "set", ns.port, "up"},
		{"-n", ns.Name, "link", "set", "eth0", "address", ns.mac},
		{"-n", ns.Name, "addr", "add", ns.IP + "/24", "dev", "eth0"},
		{"-n", ns.Name, "link", "set", "eth0", "up"},
	}
	for _, o := range n.members[:len(n.members)-1] {
		cmds = append(cmds,
			[]string{"-n", ns.Name, "neigh", "replace", o.IP, "lladdr", o.mac, "dev", "eth0", "nud", "permanent"},
			[]string{"-n", o.Name, "neigh", "replace", ns.IP, "lladdr", ns.mac, "dev", "eth0", "nud", "permanent"})
	}
	for _, c := range cmds {
		if err := run("ip", c...); err != nil {
			return nil, fmt.Errorf("netns: linking %s: %w", name, err)
		}
	}
	fd, err := syscall.Open("/var/run/netns/"+ns.Name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netns: opening %s: %w", ns.Name, err)
	}
	ns.mu.Lock()
	ns.fd = fd
	ns.mu.Unlock()
	return ns, nil
}

// Close removes every namespace of the Net, and with them their links. The
// processes still running in them are the caller's to end first: a
// namespace lives on while a process is in it.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for _, ns := range n.members {
		ns.mu.Lock()
		if ns.fd >= 0 {
			_ = syscall.Close(ns.fd)
			ns.fd = -1
		}
		ns.mu.Unlock()
		if err := run("ip", "netns", "del", ns.Name); err != nil {
			errs = append(errs, err)
		}
	}
	n.members = nil
	if n.hub != "" {
		if err := run("ip", "netns", "del", n.hub); err != nil {
			errs = append(errs, err)
		}
		n.hub = ""
	}
	return errors.Join(errs...)
}

// Cut takes ns's link down at the hub: from then on every packet to or
// from ns vanishes, without a reset or an unreachable, until Mend.
func (n *Net) Cut(ns *NS) error {
	return run("ip", "-n", n.hub, "link", "set", ns.port, "down")
}

// Mend brings ns's link back up.
func (n *Net) Mend(ns *NS) error {
	return run("ip", "-n", n.hub, "link", "set", ns.port, "up")
}

// Command returns cmd to run name with args inside ns (ip netns exec): the
// process is name's own (ip execs it), so that its pid is name's.
func (ns *NS) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// CommandContext is Command, killed when ctx ends.
func (ns *NS) CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Dial dials addr from inside ns. The socket is made on a thread that
// enters ns and ends with the dial, so that no other goroutine ever runs in
// ns; the connection stays in ns.
func (ns *NS) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := ns.inside(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens on addr inside ns (see Dial).
func (ns *NS) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := ns.inside(func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// inside runs f on a goroutine of its own, locked to a thread that enters
// ns first. The goroutine ends without unlocking the thread, and Go ends a
// thread whose goroutine ends locked to it: no other goroutine runs in ns.
func (ns *NS) inside(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns.mu.RLock()
		if ns.fd < 0 {
			ns.mu.RUnlock()
			done <- fmt.Errorf("netns: %s is removed", ns.Name)
			return
		}
		_, _, errno := syscall.RawSyscall(sysSetns, uintptr(ns.fd), syscall.CLONE_NEWNET, 0)
		ns.mu.RUnlock()
		if errno != 0 {
			done <- fmt.Errorf("netns: entering %s: %w", ns.Name, errno)
			return
		}
		done <- f()
	}()
	return <-done
}

// Nft loads an nftables ruleset into ns (nft -f -).
func (ns *NS) Nft(rules string) error {
	cmd := ns.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("netns: nft in %s: %w: %s", ns.Name, err, bytes.TrimSpace(out))
	}
	return nil
}

// Run runs the command name with args inside ns and returns its error, with
// its output.
func (ns *NS) Run(name string, args ...string) error {
	if out, err := ns.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("netns: %s %s in %s: %w: %s", name, strings.Join(args, " "), ns.Name, err, bytes.TrimSpace(out))
	}
	return nil
}

// Probe reports why the command name with args, run in a scratch member of
// a scratch Net, fails, or nil: whether this kernel and these tools offer
// a fault (an nftables rule, a tc qdisc) before a test relies on it.
func Probe(name string, args ...string) error {
	n, err := New()
	if err != nil {
		return err
	}
	defer func() { _ = n.Close() }()
	ns, err := n.Add("probe")
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("%s is not installed", name)
	}
	return ns.Run(name, args...)
}

// ProbeNft is Probe for an nftables ruleset.
func ProbeNft(rules string) error {
	if _, err := exec.LookPath("nft"); err != nil {
		return errors.New("nft (nftables) is not installed")
	}
	n, err := New()
	if err != nil {
		return err
	}
	defer func() { _ = n.Close() }()
	ns, err := n.Add("probe")
	if err != nil {
		return err
	}
	return ns.Nft(rules)
}

// Sweep removes the namespaces this package made in processes that are no
// longer running (a test killed before its cleanup), killing what still
// runs in them, and returns how many it removed.
func Sweep() (int, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return 0, fmt.Errorf("netns: listing namespaces: %w", err)
	}
	removed := 0
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, namePrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		// The processes such a test started in its namespaces (servers)
		// outlive it, and keep the namespaces alive.
		if pids, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
			for _, f := range strings.Fields(string(pids)) {
				if p, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		if err := run("ip", "netns", "del", name); err == nil {
			removed++
		}
	}
	return removed, nil
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
