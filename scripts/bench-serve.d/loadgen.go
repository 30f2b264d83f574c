//go:build ignore

// loadgen plays many instances against `seedinit serve` from one network
// namespace: each instance asks from its own source address (one of the
// namespace's addresses, which a lease names), runs the OpenStack
// metadata service's full request sequence as seedinit's client does,
// checks it got its own seed, and posts its report. Replicas are tried
// in turn, the instance's own first: a replica that is gone (killed
// halfway by scripts/bench-serve) costs a retry on the other, never the
// seed.
//
//	go build -o loadgen scripts/bench-serve.d/loadgen.go
//	loadgen -plan FILE -urls http://A,http://B -workers 64 -out FILE
//
// The plan has one instance a line: SOURCE-ADDRESS NAME. The output has
// one line per request answered (`r LAYOUT-PATH MS`) and one per instance
// (`i NAME ok` or `i NAME fail WHY`); a progress line per instance goes
// to stdout, for the script to count.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

type instance struct{ addr, name string }

func main() {
	planFile := flag.String("plan", "", "SOURCE-ADDRESS NAME, one instance a line")
	urls := flag.String("urls", "", "the replicas' base URLs, comma-separated")
	workers := flag.Int("workers", 64, "instances in flight at once")
	outFile := flag.String("out", "", "where the figures go")
	flag.Parse()
	plan, err := readPlan(*planFile)
	if err != nil {
		fail(err)
	}
	replicas := strings.Split(*urls, ",")
	out, err := os.Create(*outFile)
	if err != nil {
		fail(err)
	}
	w := bufio.NewWriter(out)
	var mu sync.Mutex
	record := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteString(line)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				err := run(plan[i], replicas, i, record)
				if err != nil {
					record(fmt.Sprintf("i %s fail %s\n", plan[i].name, strings.ReplaceAll(err.Error(), "\n", " ")))
				} else {
					record(fmt.Sprintf("i %s ok\n", plan[i].name))
				}
				fmt.Println(plan[i].name)
			}
		}()
	}
	for i := range plan {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(w.Flush(), out.Close()); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(1)
}

func readPlan(name string) ([]instance, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var plan []instance
	for n, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || net.ParseIP(f[0]) == nil {
			return nil, fmt.Errorf("%s line %d: want SOURCE-ADDRESS NAME, got %q", name, n+1, line)
		}
		plan = append(plan, instance{f[0], f[1]})
	}
	return plan, nil
}

// run is one instance's boot as the server sees it: the versions, the
// parts of the newest, then the report.
func run(in instance, replicas []string, n int, record func(string)) error {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(in.addr)}, Timeout: 2 * time.Second}
	tr := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	first := n % len(replicas)
	ask := func(method, path string, body []byte) ([]byte, error) {
		var errs []error
		for try := range 2 * len(replicas) {
			base := replicas[(first+try)%len(replicas)]
			start := time.Now()
			req, _ := http.NewRequestWithContext(context.Background(), method, base+path, bytes.NewReader(body))
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := client.Do(req)
			if err != nil {
				errs = append(errs, err)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode >= 500 {
				err = fmt.Errorf("%s %s: %s", method, path, resp.Status)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("%s %s%s: %s: %s", method, base, path, resp.Status, strings.TrimSpace(string(got)))
			}
			record(fmt.Sprintf("r %s %.3f\n", path, float64(time.Since(start).Microseconds())/1000))
			return got, nil
		}
		return nil, fmt.Errorf("%s %s: every replica failed: %w", method, path, errors.Join(errs...))
	}
	if _, err := ask("GET", "/openstack", nil); err != nil {
		return err
	}
	md, err := ask("GET", "/openstack/latest/meta_data.json", nil)
	if err != nil {
		return err
	}
	var meta struct{ UUID, Name string }
	if err := json.Unmarshal(md, &meta); err != nil {
		return fmt.Errorf("meta_data.json: %w", err)
	}
	if meta.Name != in.name {
		return fmt.Errorf("asked as %s from %s, got %s's meta_data.json", in.name, in.addr, meta.Name)
	}
	for _, part := range []string{"user_data", "vendor_data.json", "vendor_data2.json", "network_data.json"} {
		body, err := ask("GET", "/openstack/latest/"+part, nil)
		if err != nil {
			return err
		}
		if part == "user_data" && !bytes.Contains(body, []byte(`hostname: "`+in.name+`"`)) {
			return fmt.Errorf("asked as %s, got a user_data that is not its own", in.name)
		}
	}
	_, err = ask("POST", "/report/"+in.name, []byte(`{"status": "done", "errors": []}`))
	return err
}
