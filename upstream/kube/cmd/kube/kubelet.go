package main

// The kubelet component: the upstream v1.34 kubelet without a container
// runtime, for a node whose volumes are mounted for real. It is kubemark's
// hollow kubelet (k8s.io/kubernetes pkg/kubemark/hollow_kubelet.go@v1.34.4)
// with the parts that matter for volumes made real again:
//
//   - the real mounter (mount.New("")), host utils and subpath handling, where
//     the hollow kubelet has FakeMounter / FakeHostUtil / FakeSubpath;
//   - the real kubelet's volume plugin list (cmd/kubelet/app/plugins.go
//     ProbeVolumePlugins), where the hollow kubelet has a fake hostPath;
//   - the real event recorder (Events reach the API server);
//   - a fixed root dir, controller attach/detach on, and everything bound to
//     the address given, where the hollow kubelet uses a temporary root dir,
//     attach/detach by the kubelet and 0.0.0.0.
//
// What stays hollow, because no container runtime runs here: the CRI (the
// in-process fake runtime of k8s.io/cri-client/pkg/fake), the container
// manager (cm.NewStubContainerManager: no cgroups), cAdvisor (a fake with
// fixed machine info), probes and the OOM score adjuster. Pods therefore
// "run" as the fake runtime reports them; their volumes are the real thing.
//
// Run it as root in a private mount namespace (unshare -m): it mounts.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/mount-utils"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	probetest "k8s.io/kubernetes/pkg/kubelet/prober/testing"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	"k8s.io/kubernetes/pkg/kubemark"
	"k8s.io/kubernetes/pkg/util/oom"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
)

// kubeletOptions are the flags of the kubelet component.
type kubeletOptions struct {
	kubeconfig  string
	nodeName    string
	rootDir     string
	nodeIP      string
	address     string
	port        int
	healthzPort int
	maxPods     int
}

func parseKubeletFlags(args []string) (kubeletOptions, error) {
	o := kubeletOptions{}
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the node's identity (system:node:<name>)")
	fs.StringVar(&o.nodeName, "node-name", "", "the node's name")
	fs.StringVar(&o.rootDir, "root-dir", "", "the kubelet root dir (pods/, plugins/, plugins_registry/ below it)")
	fs.StringVar(&o.nodeIP, "node-ip", "", "the node's InternalIP; empty: the kubelet picks one (it refuses loopback addresses, so a loopback-only node reports none)")
	fs.StringVar(&o.address, "address", "127.0.0.1", "the address the kubelet server and healthz bind")
	fs.IntVar(&o.port, "port", 0, "the kubelet server's port (0: no server)")
	fs.IntVar(&o.healthzPort, "healthz-port", 0, "the healthz port (0: none)")
	fs.IntVar(&o.maxPods, "max-pods", 110, "pods the node takes")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(flagValueOf(klogFlags, "v"), "v", "log verbosity (klog)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for name, value := range map[string]string{"--kubeconfig": o.kubeconfig, "--node-name": o.nodeName, "--root-dir": o.rootDir} {
		if value == "" {
			return o, fmt.Errorf("%s is required", name)
		}
	}
	if !filepath.IsAbs(o.rootDir) {
		return o, fmt.Errorf("--root-dir %q: must be an absolute path", o.rootDir)
	}
	return o, nil
}

func flagValueOf(fs *flag.FlagSet, name string) flag.Value {
	return fs.Lookup(name).Value
}

func runKubelet(args []string) int {
	o, err := parseKubeletFlags(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelet: %v\n", err)
		return 2
	}
	if err := hollowKubelet(context.Background(), o); err != nil {
		fmt.Fprintf(os.Stderr, "kubelet: %v\n", err)
		return 1
	}
	return 0
}

func hollowKubelet(ctx context.Context, o kubeletOptions) error {
	clientConfig, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}
	clientConfig.UserAgent = "kubelet (volumescope hollow)"
	client, err := clientset.NewForConfig(clientConfig)
	if err != nil {
		return err
	}

	f, c := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{NodeName: o.nodeName, KubeletPort: o.port, MaxPods: o.maxPods})
	// GetHollowKubeletConfig made a temporary root dir; this node has a fixed one.
	if err := os.RemoveAll(f.RootDirectory); err != nil {
		return err
	}
	f.RootDirectory = o.rootDir
	f.CertDirectory = filepath.Join(o.rootDir, "pki")
	f.NodeIP = o.nodeIP
	c.ProviderID = ""
	c.Address = o.address
	c.EnableServer = o.port != 0
	c.ReadOnlyPort = 0
	c.HealthzPort = int32(o.healthzPort)
	c.HealthzBindAddress = o.address
	c.EnableControllerAttachDetach = true
	c.StaticPodPath = ""
	c.PodLogsDir = filepath.Join(o.rootDir, "pod-logs")
	c.VolumePluginDir = filepath.Join(o.rootDir, "volume-plugins")
	c.KubeletCgroups = ""
	for _, dir := range []string{o.rootDir, c.PodLogsDir, c.VolumePluginDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}

	heartbeatConfig := *clientConfig
	heartbeatConfig.Timeout = c.NodeStatusUpdateFrequency.Duration
	heartbeatConfig.QPS = -1
	heartbeatClient, err := clientset.NewForConfig(&heartbeatConfig)
	if err != nil {
		return err
	}

	endpoint, err := fakeremote.GenerateEndpoint()
	if err != nil {
		return fmt.Errorf("fake CRI endpoint: %w", err)
	}
	fakeRuntime := fakeremote.NewFakeRemoteRuntime()
	if err := fakeRuntime.Start(endpoint); err != nil {
		return fmt.Errorf("fake CRI: %w", err)
	}
	defer fakeRuntime.Stop()
	logger := klog.Background()
	runtimeService, err := remote.NewRemoteRuntimeService(endpoint, 15*time.Second, noop.NewTracerProvider(), &logger)
	if err != nil {
		return fmt.Errorf("fake CRI runtime service: %w", err)
	}

	plugins, err := kubeletapp.ProbeVolumePlugins(ctx, utilfeature.DefaultFeatureGate)
	if err != nil {
		return fmt.Errorf("volume plugins: %w", err)
	}
	mounter := mount.New("")
	deps := &kubelet.Dependencies{
		KubeClient:      client,
		HeartbeatClient: heartbeatClient,
		// The hollow kubelet sets no EventClient, so its recorder only logs ("No api server
		// defined - no events will be sent to API server", cmd/kubelet/app/server.go
		// makeEventRecorder); the real kubelet sends its Events (FailedMount, …) with it.
		EventClient:               client.CoreV1(),
		ProbeManager:              probetest.FakeManager{},
		RemoteRuntimeService:      runtimeService,
		RemoteImageService:        fakeRuntime.ImageService,
		CAdvisorInterface:         &cadvisortest.Fake{NodeName: o.nodeName},
		OSInterface:               kubecontainer.RealOS{},
		ContainerManager:          cm.NewStubContainerManager(),
		VolumePlugins:             plugins,
		OOMAdjuster:               oom.NewFakeOOMAdjuster(),
		Mounter:                   mounter,
		Subpather:                 subpath.New(mounter),
		HostUtil:                  hostutil.NewHostUtil(),
		PodStartupLatencyTracker:  kubeletutil.NewPodStartupLatencyTracker(),
		NodeStartupLatencyTracker: kubeletutil.NewNodeStartupLatencyTracker(),
		TracerProvider:            noop.NewTracerProvider(),
	}
	server := &options.KubeletServer{KubeletFlags: *f, KubeletConfiguration: *c}
	if err := kubeletapp.RunKubelet(ctx, server, deps); err != nil {
		return fmt.Errorf("run kubelet: %w", err)
	}
	<-ctx.Done()
	return nil
}
