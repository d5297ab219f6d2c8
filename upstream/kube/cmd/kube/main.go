// Command kube is a multi-call binary holding the pinned upstream control
// plane: etcd, kube-apiserver, kube-controller-manager and kubectl, and a
// kubelet without a container runtime (kubelet.go). Linking
// them into one executable links the packages they share (client-go,
// apimachinery, the apiserver library, gRPC, etcd's client) once, which
// saves both build time and disk.
//
// The component is chosen by the first argument (`kube kube-apiserver
// --flag…`) or, when the executable is invoked through a link named after a
// component, by that name (`kubectl get nodes`). Each component runs exactly
// as its upstream main does; daemons print one version line to stderr first.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	_ "time/tzdata" // CronJob time-zone support, as the upstream mains have

	etcdversion "go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream
	"k8s.io/component-base/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins, as upstream
)

// component runs one upstream main with its own arguments (without the
// component name) and returns the process exit code.
type component struct {
	daemon bool
	run    func(args []string) int
}

var components = map[string]component{
	"etcd": {daemon: true, run: func(args []string) int {
		// etcdmain.Main exits the process itself on error.
		etcdmain.Main(append([]string{"etcd"}, args...))
		return 0
	}},
	"kube-apiserver": {daemon: true, run: func(args []string) int {
		command := apiserver.NewAPIServerCommand()
		command.SetArgs(args)
		return cli.Run(command)
	}},
	"kube-controller-manager": {daemon: true, run: func(args []string) int {
		command := controllermanager.NewControllerManagerCommand()
		command.SetArgs(args)
		return cli.Run(command)
	}},
	// The upstream kubelet without a container runtime (kubelet.go).
	"kubelet": {daemon: true, run: runKubelet},
	"kubectl": {run: func(args []string) int {
		full := append([]string{"kubectl"}, args...)
		logs.GlogSetter(kubectlcmd.GetLogVerbosity(full)) //nolint:errcheck // as upstream
		command := kubectlcmd.NewDefaultKubectlCommand()
		command.SetArgs(args)
		if err := cli.RunNoErrOutput(command); err != nil {
			kubectlutil.CheckErr(err)
		}
		return 0
	}},
}

// versionLine is the line a daemon prints before it starts.
func versionLine(name string) string {
	if name == "etcd" {
		return fmt.Sprintf("%s version %s", name, etcdversion.Version)
	}
	info := version.Get()
	return fmt.Sprintf("%s version %s (%s, %s)", name, info.GitVersion, info.GoVersion, info.Platform)
}

func names() string {
	list := make([]string, 0, len(components))
	for name := range components {
		list = append(list, name)
	}
	sort.Strings(list)
	return strings.Join(list, ", ")
}

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if _, ok := components[name]; !ok {
		if len(args) == 0 {
			fmt.Fprintf(os.Stderr, "usage: %s COMPONENT [ARGS…]\ncomponents: %s\n", name, names())
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	c, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown component %q; components: %s\n", name, names())
		os.Exit(2)
	}
	if c.daemon {
		fmt.Fprintln(os.Stderr, versionLine(name))
	}
	os.Exit(c.run(args))
}
