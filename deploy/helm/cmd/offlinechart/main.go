// Command offlinechart writes a copy of a Helm chart that can be linted and
// rendered without a network: dependencies missing from charts/ and disabled
// by the chart's default values are left out of the copy's Chart.yaml.
//
//	go run ./cmd/offlinechart SRC DST
package main

import (
	"fmt"
	"os"
	"strings"

	helmchart "github.com/convstream/convstream/deploy/helm"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: offlinechart SRC DST")
		os.Exit(2)
	}
	dropped, err := helmchart.WriteOfflineCopy(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(dropped) > 0 {
		fmt.Fprintf(os.Stderr, "offlinechart: %s -> %s without the dependencies %s (absent, disabled by default)\n",
			os.Args[1], os.Args[2], strings.Join(dropped, ", "))
	}
}
