// This file owns a sandbox Galera cluster: N mariadbd nodes from Debian's
// mariadb-server and galera-4 packages on loopback ports, each with its own
// group communication, state transfer and incremental transfer ports. The
// nodes run as the mysql user (rsync state transfer refuses root), so a
// node killed and started again rejoins by itself, from a donor.
//
// Invariant: a Cluster's nodes are named <Name>-1 .. <Name>-N under Dir,
// and node 1 is the one that bootstrapped the cluster; any node may be
// killed and started again while another is running.
package sandbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// galeraProvider is where Debian's galera-4 package puts the provider.
var galeraProvider = "/usr/lib/galera/libgalera_smm.so"

// wsrepOn is the my.cnf line that makes a server a Galera node.
const wsrepOn = "wsrep_on=ON"

// ErrGaleraNotFound is wrapped by the error of a missing galera-4 package.
var ErrGaleraNotFound = errors.New("Galera is not installed")

// CheckGalera reports whether a cluster can be started here.
func CheckGalera() error {
	if err := CheckInstalled(); err != nil {
		return err
	}
	if _, err := os.Stat(galeraProvider); err != nil {
		return fmt.Errorf("%w: %s is missing; install the Debian packages galera-4 and rsync (apt-get install galera-4 rsync)", ErrGaleraNotFound, galeraProvider)
	}
	if _, err := findProgram("rsync"); err != nil {
		return fmt.Errorf("%w: rsync is missing (apt-get install rsync)", ErrGaleraNotFound)
	}
	return nil
}

// ClusterConfig describes a sandbox Galera cluster.
type ClusterConfig struct {
	Name  string // "cluster": nodes cluster-1, cluster-2, ...
	Dir   string // base directory of the nodes
	Nodes int    // 0 = 3
	// GTIDMode sets wsrep_gtid_mode=ON with wsrep_gtid_domain_id
	// GTIDDomain: every node writes a transaction under the same GTID.
	GTIDMode   bool
	GTIDDomain uint32
	Durable    bool
	Extra      []string // extra my.cnf lines of every node
}

// Cluster is a running sandbox Galera cluster.
type Cluster struct {
	Config ClusterConfig
	Nodes  []*Server
	// gcomm are the group communication ports, by node.
	gcomm []int
}

// StartCluster bootstraps the cluster from node 1 and joins the others to
// it, or returns the one already running in Dir.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if err := CheckGalera(); err != nil {
		return nil, err
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Name == "" {
		cfg.Name = "cluster"
	}
	if cfg.GTIDDomain == 0 {
		cfg.GTIDDomain = 100
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox cluster %s: %w", cfg.Name, err)
	}
	cfg.Dir = dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox cluster %s: %w", cfg.Name, err)
	}
	c := &Cluster{Config: cfg}
	ports, err := c.ports()
	if err != nil {
		return nil, err
	}
	for i := range cfg.Nodes {
		c.gcomm = append(c.gcomm, ports[i][0])
	}
	for i := range cfg.Nodes {
		node, err := newServer(ServerConfig{
			Name: fmt.Sprintf("%s-%d", cfg.Name, i+1), Dir: dir, ServerID: uint32(ports[0][0]),
			Binlog: true, Durable: cfg.Durable, User: "mysql", Extra: c.nodeCnf(i, ports[i]), StartTimeout: 3 * time.Minute,
		})
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	for i, node := range c.Nodes {
		if node.Running() {
			continue
		}
		node.Config.NoAccounts = i > 0
		node.Config.Args = nil
		if i == 0 && !c.anyRunning() {
			node.Config.Args = []string{"--wsrep-new-cluster"}
			if err := markSafeToBootstrap(node.DataDir); err != nil {
				return nil, err
			}
		}
		if err := node.Start(ctx); err != nil {
			c.Kill()
			return nil, err
		}
		if err := c.WaitSynced(ctx, i); err != nil {
			c.Kill()
			return nil, err
		}
	}
	return c, nil
}

// ports are each node's loopback ports: group communication, incremental
// transfer, state transfer, and the client port of an earlier start (0 for
// a new cluster, which the server chooses).
func (c *Cluster) ports() ([][4]int, error) {
	out := make([][4]int, c.Config.Nodes)
	path := filepath.Join(c.Config.Dir, c.Config.Name+".ports")
	if b, err := os.ReadFile(path); err == nil {
		lines := strings.Fields(string(b))
		if len(lines) == c.Config.Nodes {
			for i, l := range lines {
				parts := strings.Split(l, ",")
				for j := 0; j < len(parts) && j < 4; j++ {
					out[i][j], _ = strconv.Atoi(parts[j])
				}
			}
			return out, nil
		}
	}
	taken := map[int]bool{}
	var lines []string
	for i := range out {
		for j := range 4 {
			for {
				p, err := freePort()
				if err != nil {
					return nil, fmt.Errorf("sandbox cluster %s: choosing a free loopback port: %w", c.Config.Name, err)
				}
				if !taken[p] {
					taken[p] = true
					out[i][j] = p
					break
				}
			}
		}
		lines = append(lines, fmt.Sprintf("%d,%d,%d,%d", out[i][0], out[i][1], out[i][2], out[i][3]))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("sandbox cluster %s: %w", c.Config.Name, err)
	}
	return out, nil
}

// nodeCnf are node i's Galera settings.
func (c *Cluster) nodeCnf(i int, ports [4]int) []string {
	var members []string
	for _, p := range c.gcomm {
		members = append(members, "127.0.0.1:"+strconv.Itoa(p))
	}
	lines := []string{
		wsrepOn,
		"wsrep_provider=" + galeraProvider,
		"wsrep_cluster_name=" + c.Config.Name,
		"wsrep_cluster_address=gcomm://" + strings.Join(members, ","),
		fmt.Sprintf("wsrep_node_name=%s-%d", c.Config.Name, i+1),
		fmt.Sprintf("wsrep_node_address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("wsrep_sst_receive_address=127.0.0.1:%d", ports[2]),
		fmt.Sprintf("wsrep_provider_options=gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d;gcache.size=128M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT4S", ports[0], ports[1]),
		"wsrep_sst_method=rsync",
		"binlog_format=ROW",
		"innodb_autoinc_lock_mode=2",
		// Each node logs its own writes outside the cluster in a domain of
		// its own; the cluster's are in GTIDDomain under wsrep_gtid_mode.
		fmt.Sprintf("gtid_domain_id=%d", int(c.Config.GTIDDomain)+i+1),
		// gtid_strict_mode would refuse a DDL the node logs under the
		// next number of a domain (total order isolation).
		"gtid_strict_mode=OFF",
		"innodb_buffer_pool_size=96M",
		// What a node copies to a joiner: a small redo log keeps it short.
		"innodb_log_file_size=48M",
		"max_connections=300",
	}
	lines = append(lines, fmt.Sprintf("wsrep_gtid_domain_id=%d", c.Config.GTIDDomain))
	if c.Config.GTIDMode {
		lines = append(lines, "wsrep_gtid_mode=ON")
	}
	return append(lines, c.Config.Extra...)
}

func (c *Cluster) anyRunning() bool {
	for _, n := range c.Nodes {
		if n.Running() {
			return true
		}
	}
	return false
}

// markSafeToBootstrap lets a node that was not the last to leave its
// cluster bootstrap it again (a sandbox's nodes are all stopped at once).
func markSafeToBootstrap(datadir string) error {
	path := filepath.Join(datadir, "grastate.dat")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(strings.Replace(string(b), "safe_to_bootstrap: 0", "safe_to_bootstrap: 1", 1)), 0o660)
}

// WaitSynced waits until node i is ready, synced and in the primary
// component, and holds the sandbox accounts.
func (c *Cluster) WaitSynced(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	node := c.Nodes[i]
	db, err := node.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	var last error
	for {
		state, err := status(ctx, db)
		if err == nil && state["wsrep_ready"] == "ON" && state["wsrep_local_state_comment"] == "Synced" && state["wsrep_cluster_status"] == "Primary" {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE user = ?", ApplierUser).Scan(&n); err == nil && n > 0 {
				return nil
			}
		}
		last = err
		if err == nil {
			last = fmt.Errorf("state %v", state)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox cluster node %s did not join its cluster (last: %v); error log %s ends with:\n%s", node.Config.Name, last, node.ErrorLog, node.startupLogs())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func status(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state_comment', 'wsrep_cluster_status', 'wsrep_cluster_size')")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// waitWsrepReady waits, on a Galera node, until wsrep has prepared it for
// application use: a node bootstrapping a cluster answers a ping before it
// takes statements (1047), the longer the more data it starts on. A server
// that is no Galera node returns at once.
func (s *Server) waitWsrepReady(ctx context.Context) error {
	if !slices.Contains(s.Config.Extra, wsrepOn) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	db, err := s.Open("")
	if err != nil {
		return fmt.Errorf("sandbox server %s: %w", s.Config.Name, err)
	}
	defer db.Close()
	var last error
	for {
		var name, value string
		last = db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_ready'").Scan(&name, &value)
		if last == nil && value == "ON" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox server %s: wsrep not ready within %s (wsrep_ready %q, last error %v); error log %s ends with:\n%s",
				s.Config.Name, startTimeout, value, last, s.ErrorLog, s.startupLogs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Restart starts node i again after a Kill or Stop and waits until it has
// rejoined the cluster (from a donor, by state transfer).
func (c *Cluster) Restart(ctx context.Context, i int) error {
	node := c.Nodes[i]
	node.Config.Args = nil
	node.Config.NoAccounts = true
	if _, running := node.runningPid(); !running {
		if err := endLeftovers(node); err != nil {
			return err
		}
		// As a service manager does for a node that crashed: the
		// position its storage holds, so that it joins by an
		// incremental transfer of what it missed, not a full copy.
		pos, err := recoverPosition(ctx, node)
		if err != nil {
			return err
		}
		if pos != "" {
			node.Config.Args = []string{"--wsrep-start-position=" + pos}
		}
	}
	if err := node.Start(ctx); err != nil {
		// A node whose state transfer failed exits; an operator ends
		// what the transfer left and starts it once more.
		if _, running := node.runningPid(); running || !strings.Contains(tailFile(node.ErrorLog, 200), "SST") {
			return err
		}
		if err := endLeftovers(node); err != nil {
			return err
		}
		// From what its storage says after the failed transfer (a full
		// transfer when it says nothing), not the position recovered
		// before it.
		node.Config.Args = nil
		if err2 := node.Start(ctx); err2 != nil {
			return fmt.Errorf("%w\n(and started once more: %v)", err, err2)
		}
	}
	return c.WaitSynced(ctx, i)
}

// endLeftovers ends, as a service manager ends what was left in the
// control group of a service that crashed, the state transfer processes a
// killed node left behind: the rsync daemon of a transfer to it holds the
// node's state transfer port, and the next transfer fails on it ("rsync or
// stunnel daemon terminated unexpectedly"). They are the processes whose
// command line names the node's data directory.
func endLeftovers(node *Server) error {
	dir := filepath.Clean(node.DataDir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil // no /proc to look in: nothing can be found
	}
	var left []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			if arg == dir || strings.Contains(arg, dir+"/") {
				left = append(left, pid)
				break
			}
		}
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(stopTimeout)
	for _, pid := range left {
		for processAlive(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("sandbox cluster node %s: state transfer process %d still running %s after SIGKILL", node.Config.Name, pid, stopTimeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// processAlive reports whether pid is a process that has not exited (a
// zombie has).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	at := strings.LastIndexByte(s, ')')
	return at < 0 || at+2 >= len(s) || s[at+2] != 'Z'
}

// recoverPosition runs node's server once with --wsrep-recover, which
// recovers its storage, logs the last position committed there and exits,
// and returns that position (uuid:seqno); "" when it has none.
func recoverPosition(ctx context.Context, node *Server) (string, error) {
	bin, err := findBinaries()
	if err != nil {
		return "", err
	}
	logPath := filepath.Join(node.home, "wsrep-recover.log")
	_ = os.Remove(logPath)
	args := []string{"--defaults-file=" + node.cnfPath, "--wsrep-recover", "--log-error=" + logPath}
	if os.Geteuid() == 0 {
		args = append(args, "--user="+node.runAs())
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin.mariadbd, args...)
	cmd.Dir = node.home
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("sandbox cluster node %s: mariadbd --wsrep-recover: %w\n%s\n%s", node.Config.Name, err, out, tailFile(logPath, 20))
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		return "", fmt.Errorf("sandbox cluster node %s: %w", node.Config.Name, err)
	}
	pos, _ := recoverPositionOf(string(b))
	return pos, nil
}

// recoverPositionOf reads the position a --wsrep-recover log says the
// storage recovered: "" (and false) when it says none, or -1.
func recoverPositionOf(log string) (string, bool) {
	const mark = "WSREP: Recovered position: "
	at := strings.LastIndex(log, mark)
	if at < 0 {
		return "", false
	}
	pos := strings.Fields(log[at+len(mark):])
	if len(pos) == 0 || strings.HasSuffix(pos[0], ":-1") {
		return "", false
	}
	return pos[0], true
}

// Isolate cuts node i off the other nodes' group communication (Galera's
// gmcast.isolate: every connection to its peers dropped, as a network cut
// would), or joins it back with isolate false. An isolated node leaves the
// primary component and answers client statements with 1047.
func (c *Cluster) Isolate(ctx context.Context, i int, isolate bool) error {
	v := 0
	if isolate {
		v = 1
	}
	return c.Nodes[i].Exec(ctx, fmt.Sprintf("SET GLOBAL wsrep_provider_options='gmcast.isolate=%d'", v))
}

// URLs are the nodes' mysql:// URLs for user, in node order.
func (c *Cluster) URLs(user, password string) []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.URL(user, password)
	}
	return out
}

// Kill ends every node with SIGKILL.
func (c *Cluster) Kill() {
	for _, n := range c.Nodes {
		_ = n.Kill()
	}
}
