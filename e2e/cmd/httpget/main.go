// Command httpget is the cluster test's scraper container: it GETs each
// URL of its arguments, retrying for up to a minute until it answers 200,
// prints the status line and the body to stdout (the container log), and
// exits 0 if every URL answered 200, 1 otherwise.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	client := &http.Client{Timeout: 5 * time.Second}
	failed := false
	for _, url := range os.Args[1:] {
		if err := get(client, url); err != nil {
			fmt.Println("GET", url, "failed:", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// get fetches url until it answers 200 (for up to a minute) and prints
// the answer, the body bounded to 1 MiB.
func get(client *http.Client, url string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		rsp, err := client.Get(url)
		if err == nil {
			body, rerr := io.ReadAll(io.LimitReader(rsp.Body, 1<<20))
			rsp.Body.Close()
			if rerr == nil && rsp.StatusCode == http.StatusOK {
				fmt.Println("GET", url, rsp.Status)
				fmt.Print(string(body))
				return nil
			}
			err = fmt.Errorf("status %s, read error %v", rsp.Status, rerr)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}
