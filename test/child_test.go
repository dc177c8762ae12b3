package test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// child is a process a test runs (`carddrift serve`, the SDK agent): its
// output in logs (stderr, and stdout line by line), exited closed once it
// has exited, err what cmd.Wait returned.
type child struct {
	cmd    *exec.Cmd
	name   string
	logs   *syncBuffer
	exited chan struct{}
	err    error
}

// startChild starts cmd and waits up to 20 s for the first stdout line ready
// accepts, which it returns; it fails the test if the process exits or stays
// silent first. When the test ends, the process is stopped (see stop) unless
// a cleanup registered later stopped it, and its output is logged if the
// test failed.
func startChild(t *testing.T, name string, cmd *exec.Cmd, ready func(line string) bool) (*child, string) {
	t.Helper()
	c := &child{cmd: cmd, name: name, logs: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = c.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		signaled := false
		for sc.Scan() {
			fmt.Fprintln(c.logs, sc.Text())
			if !signaled && ready(sc.Text()) {
				signaled = true
				first <- sc.Text()
			}
		}
		io.Copy(io.Discard, stdout)
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.stop(os.Kill, 0)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, c.logs.String())
		}
	})
	select {
	case line := <-first:
		return c, line
	case <-c.exited:
		t.Fatalf("%s exited before it was ready: %v\n%s", name, c.err, c.logs.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("%s not ready after 20s:\n%s", name, c.logs.String())
	}
	return nil, ""
}

// stop sends sig to the process unless it has exited, kills it if it has
// not exited after grace, and waits for it.
func (c *child) stop(sig os.Signal, grace time.Duration) {
	select {
	case <-c.exited:
		return
	default:
	}
	c.cmd.Process.Signal(sig)
	select {
	case <-c.exited:
	case <-time.After(grace):
		c.cmd.Process.Kill()
		<-c.exited
	}
}
