package snowflaked

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCluster is a real cluster started by clients/testing/cluster.py (the
// harness every language's tests drive): ZooKeeper and two daemons, the
// binary from $SNOWFLAKED_BIN.
type testCluster struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	Servers []string `json:"servers"`
	CACert  string   `json:"cacert"`
	Error   string   `json:"error"`
	mu      sync.Mutex
}

func startCluster(args ...string) (*testCluster, error) {
	binary := os.Getenv("SNOWFLAKED_BIN")
	if binary == "" {
		return nil, fmt.Errorf("SNOWFLAKED_BIN: the snowflaked binary the tests run")
	}
	harness, _ := filepath.Abs(filepath.Join("..", "testing", "cluster.py"))
	cmd := exec.Command("/usr/bin/python3", append([]string{harness, "--binary", binary}, args...)...)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &testCluster{cmd: cmd, in: in, out: bufio.NewReader(stdout)}
	line, err := c.out.ReadString('\n')
	if err == nil {
		err = json.Unmarshal([]byte(line), c)
	}
	if err == nil && c.Error != "" {
		err = fmt.Errorf("the cluster did not start: %s", c.Error)
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// command sends one harness command ("kill 0", "zkstop", "seq create x").
func (c *testCluster) command(t *testing.T, line string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintln(c.in, line)
	answer, err := c.out.ReadString('\n')
	if err != nil || strings.TrimSpace(answer) != "ok" {
		t.Fatalf("%s: %q %v", line, answer, err)
	}
}

func (c *testCluster) close() {
	c.in.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		c.cmd.Process.Kill()
	}
}

var clusters = struct {
	sync.Mutex
	started map[string]*testCluster
}{started: map[string]*testCluster{}}

// cluster returns the shared cluster of that kind ("plain" or "tls"),
// started on first use; TestMain stops them.
func cluster(t testing.TB, kind string) *testCluster {
	t.Helper()
	clusters.Lock()
	defer clusters.Unlock()
	if c := clusters.started[kind]; c != nil {
		return c
	}
	args := []string{"--daemons", "2"}
	if kind == "tls" {
		args = append(args, "--tls")
	}
	c, err := startCluster(args...)
	if err != nil {
		t.Fatal(err)
	}
	clusters.started[kind] = c
	return c
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range clusters.started {
		c.close()
	}
	os.Exit(code)
}

// eventually polls probe until it is true, or fails the test after within.
func eventually(t *testing.T, within time.Duration, what string, probe func() bool) {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if probe() {
			return
		}
	}
	t.Fatalf("%s: not within %v", what, within)
}
