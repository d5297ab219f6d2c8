//go:build go1.25

// Package differential plays differential-test traces (docs/differential.md) on the real
// kubelet volume manager parts of k8s.io/kubernetes: the desired and actual state of world,
// the reconciler, the operation executor with its nested pending operations and exponential
// backoff, and the fake volume plugin of pkg/volume/testing. It is the oracle the TypeScript
// engine is compared with (scripts/differential/).
//
// Every trace runs in a testing/synctest bubble: time.Now, timers and sleeps of every
// goroutine in it (the reconciler's wait.Until loop, the backoff windows of the operation
// table) run on the bubble's fake clock, which moves only when every goroutine is blocked.
// A trace therefore plays deterministically and at CPU speed, whatever durations it waits.
//
// Input: one trace (JSON) per line on stdin, or the file named by DIFFERENTIAL_TRACES.
// Output: one JSON line per step (the observable state after it), then {"end":true} per trace,
// on stdout, or the file named by DIFFERENTIAL_OUT.
package differential

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/reconciler"
	"k8s.io/kubernetes/pkg/volume"
	volumetesting "k8s.io/kubernetes/pkg/volume/testing"
	"k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/operationexecutor"
	"k8s.io/mount-utils"
)

const (
	nodeName = k8stypes.NodeName("mynodename")
	// The kubelet's reconciler period (volume_manager.go reconcilerLoopSleepPeriod).
	loopSleep = 100 * time.Millisecond
	// The kubelet's waitForAttachTimeout (volume_manager.go).
	waitForAttachTimeout = 10 * time.Minute
	// How long every step lets the reconciler run before the state is read: more than a
	// loop period, less than the first backoff window (500 ms), so a failed operation is
	// observed in its first window and never retried within the settle time.
	settle = 300 * time.Millisecond
	// Steps happen half a period after a pass: the loop's passes take no fake time, so they run
	// at exact multiples of loopSleep, and a step at such an instant would race the pass.
	phase = 50 * time.Millisecond
)

// Trace is one differential test case (docs/differential.md).
type Trace struct {
	Name string `json:"name,omitempty"`
	// ControllerAttach: the attach/detach controller attaches (controllerAttachDetachEnabled);
	// the node's status.volumesAttached comes from nodeStatus steps.
	ControllerAttach bool   `json:"controllerAttach,omitempty"`
	Steps            []Step `json:"steps"`
}

// Step is one action of a trace.
type Step struct {
	Op      string      `json:"op"`
	Pod     string      `json:"pod,omitempty"`
	Volumes []VolumeRef `json:"volumes,omitempty"`
	Ms      int64       `json:"ms,omitempty"`
	InUse   []string    `json:"inUse,omitempty"`
	// Removed: the pods deleted while the kubelet is down (restart steps).
	Removed []string `json:"removed,omitempty"`
	// Attached: the disks node.status.volumesAttached lists (nodeStatus steps).
	Attached []string `json:"attached,omitempty"`
	// Disk, Call, Outcome: the plugin outcome of the next Call on Disk (outcome steps).
	Disk    string `json:"disk,omitempty"`
	Call    string `json:"call,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// VolumeRef is a pod volume: an inline GCE PD served by the fake plugin. Name is the pod
// volume name (spec.Name(), where the fake plugin's magic names act); Disk the PD name, which
// makes the unique volume name fake-plugin/<Disk>.
type VolumeRef struct {
	Name string `json:"name"`
	Disk string `json:"disk"`
}

// State is what is compared after every step.
type State struct {
	Step       int           `json:"step"`
	Volumes    []VolumeState `json:"volumes"`
	Desired    []DesiredPair `json:"desired"`
	Operations []Operation   `json:"operations"`
	Counts     Counts        `json:"counts"`
}

// VolumeState is one volume of the actual state of world.
type VolumeState struct {
	Volume     string            `json:"volume"`
	Attachable bool              `json:"attachable"`
	Device     string            `json:"device"`
	Pods       map[string]string `json:"pods"`
}

// DesiredPair is one (volume, pod) of the desired state of world.
type DesiredPair struct {
	Volume        string `json:"volume"`
	Pod           string `json:"pod"`
	ReportedInUse bool   `json:"reportedInUse"`
}

// Operation is one entry of the nested pending operations table.
type Operation struct {
	Volume              string `json:"volume"`
	Pod                 string `json:"pod"`
	Name                string `json:"name"`
	Pending             bool   `json:"pending"`
	DurationBeforeRetry string `json:"durationBeforeRetry"`
	LastError           string `json:"lastError"`
}

// Counts are the fake plugins' call counts, summed over every plugin and fake volume object.
type Counts struct {
	Attach        int `json:"attach"`
	WaitForAttach int `json:"waitForAttach"`
	MountDevice   int `json:"mountDevice"`
	SetUp         int `json:"setUp"`
	TearDown      int `json:"tearDown"`
	UnmountDevice int `json:"unmountDevice"`
	Detach        int `json:"detach"`
}

var out struct {
	sync.Mutex
	w *bufio.Writer
}

func TestDifferential(t *testing.T) {
	// Logs of the upstream code are noise here; errors reach the output through the table.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{"logtostderr": "false", "stderrthreshold": "FATAL", "v": "0"} {
		if err := fs.Set(name, value); err != nil {
			t.Fatal(err)
		}
	}
	klog.SetOutput(io.Discard)

	var in io.Reader = os.Stdin
	if p := os.Getenv("DIFFERENTIAL_TRACES"); p != "" {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		in = f
	}
	var w io.Writer = os.Stdout
	if p := os.Getenv("DIFFERENTIAL_OUT"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w = f
	}
	out.w = bufio.NewWriter(w)
	defer out.w.Flush()

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var tr Trace
		if err := json.Unmarshal(line, &tr); err != nil {
			emit(map[string]any{"error": err.Error()})
			emit(map[string]any{"end": true})
			continue
		}
		synctest.Test(t, func(t *testing.T) { play(t, tr) })
		emit(map[string]any{"end": true})
		out.w.Flush()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func emit(v any) {
	out.Lock()
	defer out.Unlock()
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	out.w.Write(b)
	out.w.WriteByte('\n')
}

type world struct {
	node             *nodeStatus
	plugins          []*volumetesting.FakeVolumePlugin
	pluginMgr        *volume.VolumePluginMgr
	kubeClient       *fake.Clientset
	controllerAttach bool
	podsDir          string
	dsw              cache.DesiredStateOfWorld
	asw              cache.ActualStateOfWorld
	oex              operationexecutor.OperationExecutor
	pods             map[string]*v1.Pod
	stop             chan struct{}
	outcomes         *outcomes
}

func play(t *testing.T, tr Trace) {
	logger := klog.Background()
	// One fake plugin per disk: upstream's FakeVolumePlugin hands out one shared FakeVolume
	// whose VolName each NewMounter overwrites, so its magic names act reliably only when a
	// plugin serves one volume (whose operations the table serialises).
	fakePlugins := []*volumetesting.FakeVolumePlugin{}
	outcomes := newOutcomes()
	plugins := []volume.VolumePlugin{}
	for _, disk := range disks(tr) {
		p := &volumetesting.FakeVolumePlugin{PluginName: "fake-plugin-" + disk}
		p.CanSupportFn = func(spec *volume.Spec) bool {
			return spec.Volume != nil && spec.Volume.GCEPersistentDisk != nil && spec.Volume.GCEPersistentDisk.PDName == disk
		}
		fakePlugins = append(fakePlugins, p)
		plugins = append(plugins, diskPlugin{FakeVolumePlugin: p, disk: disk, o: outcomes})
	}
	rootDir := t.TempDir()
	host := volumetesting.NewFakeKubeletVolumeHost(t, rootDir, nil, plugins)
	// The node lister of the volume host (GetAttachedVolumesFromNodeStatus, read before a
	// controller attach is verified) and the API serve the same node.
	node := &nodeStatus{withNode: func(n *v1.Node) { host.WithNode(n) }}
	node.set(nil)
	w := &world{
		node: node, plugins: fakePlugins, pluginMgr: host.GetPluginMgr(), kubeClient: newClient(node),
		controllerAttach: tr.ControllerAttach, podsDir: filepath.Join(rootDir, "pods"), pods: map[string]*v1.Pod{},
		outcomes: outcomes,
	}
	w.start(logger)
	time.Sleep(phase)

	for i, s := range tr.Steps {
		if err := w.apply(logger, s); err != nil {
			emit(map[string]any{"step": i, "error": err.Error()})
		}
		time.Sleep(settle)
		synctest.Wait()
		st := w.observe()
		st.Step = i
		emit(st)
	}
	// The bubble ends once every goroutine has exited: the reconciler loop on stop, running
	// operations when they finish, hung calls once released.
	close(w.stop)
	w.outcomes.endTrace()
}

// start makes new worlds, operation executor and reconciler (a kubelet start), puts the present
// pods in the desired state and runs the reconciler, which first reconstructs from the pods dir.
func (w *world) start(logger klog.Logger) {
	w.dsw = cache.NewDesiredStateOfWorld(w.pluginMgr, util.NewFakeSELinuxLabelTranslator())
	w.asw = cache.NewActualStateOfWorld(nodeName, w.pluginMgr)
	w.oex = operationexecutor.NewOperationExecutor(operationexecutor.NewOperationGenerator(
		w.kubeClient, w.pluginMgr, &record.FakeRecorder{}, volumetesting.NewBlockVolumePathHandler()))
	rc := reconciler.NewReconciler(w.kubeClient, w.controllerAttach, loopSleep, waitForAttachTimeout, nodeName,
		w.dsw, w.asw, func() bool { return true }, w.oex, mount.NewFakeMounter(nil),
		hostutil.NewFakeHostUtil(nil), w.pluginMgr, w.podsDir)
	for _, name := range sortedKeys(w.pods) {
		if err := w.addToDesired(logger, w.pods[name]); err != nil {
			emit(map[string]any{"error": err.Error()})
		}
	}
	w.stop = make(chan struct{})
	go rc.Run(context.Background(), w.stop)
}

func (w *world) addToDesired(logger klog.Logger, pod *v1.Pod) error {
	podName := util.GetUniquePodName(pod)
	for i := range pod.Spec.Volumes {
		spec := &volume.Spec{Volume: &pod.Spec.Volumes[i]}
		if _, err := w.dsw.AddPodToVolume(logger, podName, pod, spec, spec.Name(), "", nil); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]*v1.Pod) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (w *world) apply(logger klog.Logger, s Step) error {
	switch s.Op {
	case "addPod":
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: s.Pod, UID: k8stypes.UID(s.Pod + "uid"), Namespace: "default"},
		}
		for _, v := range s.Volumes {
			pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{
				Name:         v.Name,
				VolumeSource: v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: v.Disk}},
			})
		}
		w.pods[s.Pod] = pod
		return w.addToDesired(logger, pod)
	case "removePod":
		pod, ok := w.pods[s.Pod]
		if !ok {
			return fmt.Errorf("unknown pod %q", s.Pod)
		}
		podName := util.GetUniquePodName(pod)
		for _, v := range pod.Spec.Volumes {
			w.dsw.DeletePodFromVolume(podName, uniqueName(v.VolumeSource.GCEPersistentDisk.PDName))
		}
		delete(w.pods, s.Pod)
	case "advance":
		time.Sleep(time.Duration(s.Ms) * time.Millisecond)
	case "markInUse":
		names := make([]v1.UniqueVolumeName, 0, len(s.InUse))
		for _, n := range s.InUse {
			names = append(names, v1.UniqueVolumeName(n))
		}
		w.dsw.MarkVolumesReportedInUse(names)
	case "nodeStatus":
		w.node.set(s.Attached)
	case "outcome":
		w.outcomes.set(s.Disk, s.Call, s.Outcome)
	case "verifyAttachments":
		// The attach verification of the attach/detach controller's reconciler sync
		// (VerifyVolumesAreAttached), over the kubelet's actual state: upstream runs it in the
		// controller only; the engine runs it on the kubelet side (docs/engine.md).
		avs := []operationexecutor.AttachedVolume{}
		for _, av := range w.asw.GetAttachedVolumes() {
			avs = append(avs, av.AttachedVolume)
		}
		w.oex.VerifyVolumesAreAttached(map[k8stypes.NodeName][]operationexecutor.AttachedVolume{nodeName: avs}, w.asw)
	case "restart":
		// The kubelet stops (running operations finish: the fake plugin's calls take no
		// time) and starts again on the same pods dir and plugins, on the pass grid.
		// A hung call returns: the process it hung in is gone.
		close(w.stop)
		w.outcomes.releaseHung()
		synctest.Wait()
		time.Sleep(loopSleep - phase)
		for _, p := range s.Removed {
			delete(w.pods, p)
		}
		w.start(logger)
		time.Sleep(phase)
	default:
		return fmt.Errorf("unknown step %q", s.Op)
	}
	return nil
}

func (w *world) observe() State {
	st := State{Volumes: []VolumeState{}, Desired: []DesiredPair{}, Operations: []Operation{}}
	mounted := map[string]bool{}
	for _, m := range w.asw.GetMountedVolumes() {
		mounted[string(m.VolumeName)+"|"+string(m.PodName)] = true
	}
	pods := map[string]map[string]string{}
	for _, m := range w.asw.GetAllMountedVolumes() {
		v := string(m.VolumeName)
		if pods[v] == nil {
			pods[v] = map[string]string{}
		}
		state := "VolumeMountUncertain"
		if mounted[v+"|"+string(m.PodName)] {
			state = "VolumeMounted"
		}
		pods[v][string(m.PodName)] = state
	}
	for _, av := range w.asw.GetAttachedVolumes() {
		v := string(av.VolumeName)
		p := pods[v]
		if p == nil {
			p = map[string]string{}
		}
		st.Volumes = append(st.Volumes, VolumeState{Volume: v, Attachable: av.PluginIsAttachable, Device: string(av.DeviceMountState), Pods: p})
	}
	sort.Slice(st.Volumes, func(i, j int) bool { return st.Volumes[i].Volume < st.Volumes[j].Volume })
	for _, v := range w.dsw.GetVolumesToMount() {
		st.Desired = append(st.Desired, DesiredPair{Volume: string(v.VolumeName), Pod: string(v.PodName), ReportedInUse: v.ReportedInUse})
	}
	sort.Slice(st.Desired, func(i, j int) bool {
		if st.Desired[i].Volume != st.Desired[j].Volume {
			return st.Desired[i].Volume < st.Desired[j].Volume
		}
		return st.Desired[i].Pod < st.Desired[j].Pod
	})
	st.Operations = pendingOperations(w.oex)
	for _, p := range w.plugins {
		st.Counts.add(p)
	}
	return st
}

// pendingOperations reads the operation executor's nested pending operations table. The
// table has no accessor; it is read by reflection while every goroutine of the bubble is
// blocked (after synctest.Wait), so nothing writes it meanwhile.
func pendingOperations(oex operationexecutor.OperationExecutor) []Operation {
	table := reflect.ValueOf(oex).Elem().FieldByName("pendingOperations").Elem().Elem()
	ops := table.FieldByName("operations")
	res := []Operation{}
	for i := 0; i < ops.Len(); i++ {
		op := ops.Index(i)
		key := op.FieldByName("key")
		backoff := op.FieldByName("expBackoff")
		lastError := ""
		errField := backoff.FieldByName("lastError")
		if e := reflect.NewAt(errField.Type(), unsafe.Pointer(errField.UnsafeAddr())).Elem().Interface(); e != nil {
			lastError = e.(error).Error()
		}
		res = append(res, Operation{
			Volume:              key.FieldByName("volumeName").String(),
			Pod:                 key.FieldByName("podName").String(),
			Name:                op.FieldByName("operationName").String(),
			Pending:             op.FieldByName("operationPending").Bool(),
			DurationBeforeRetry: time.Duration(backoff.FieldByName("durationBeforeRetry").Int()).String(),
			LastError:           lastError,
		})
	}
	sort.SliceStable(res, func(i, j int) bool {
		a, b := res[i], res[j]
		if a.Volume != b.Volume {
			return a.Volume < b.Volume
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		// A full tie-break (the engine sorts by the same keys): entries equal in every field
		// are indistinguishable, so both sides emit one order.
		if a.Pending != b.Pending {
			return !a.Pending
		}
		if a.DurationBeforeRetry != b.DurationBeforeRetry {
			return a.DurationBeforeRetry < b.DurationBeforeRetry
		}
		return a.LastError < b.LastError
	})
	return res
}

func (c *Counts) add(p *volumetesting.FakeVolumePlugin) {
	for _, a := range p.GetAttachers() {
		c.Attach += a.GetAttachCallCount()
		c.WaitForAttach += a.GetWaitForAttachCallCount()
		c.MountDevice += a.GetMountDeviceCallCount()
	}
	for _, d := range p.GetDetachers() {
		c.UnmountDevice += d.GetUnmountDeviceCallCount()
		c.Detach += d.GetDetachCallCount()
	}
	for _, m := range p.GetMounters() {
		c.SetUp += m.GetSetUpCallCount()
	}
	for _, u := range p.GetUnmounters() {
		c.TearDown += u.GetTearDownCallCount()
	}
}

// disks lists the disks a trace names, sorted.
func disks(tr Trace) []string {
	seen := map[string]bool{}
	res := []string{}
	for _, s := range tr.Steps {
		for _, v := range s.Volumes {
			if !seen[v.Disk] {
				seen[v.Disk] = true
				res = append(res, v.Disk)
			}
		}
	}
	sort.Strings(res)
	return res
}

// uniqueName is the unique volume name of a disk: <its plugin>/<the PD name>.
func uniqueName(disk string) v1.UniqueVolumeName {
	return v1.UniqueVolumeName("fake-plugin-" + disk + "/" + disk)
}

// nodeStatus is the node object the fake API serves; nodeStatus steps change its attachments.
type nodeStatus struct {
	sync.Mutex
	withNode func(*v1.Node)
	attached []v1.AttachedVolume
}

func (n *nodeStatus) set(disks []string) {
	n.Lock()
	defer n.Unlock()
	n.attached = nil
	for _, d := range disks {
		n.attached = append(n.attached, v1.AttachedVolume{Name: uniqueName(d), DevicePath: "fake/path"})
	}
	n.withNode(n.getLocked())
}

func (n *nodeStatus) get() *v1.Node {
	n.Lock()
	defer n.Unlock()
	return n.getLocked()
}

func (n *nodeStatus) getLocked() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: string(nodeName)},
		Status:     v1.NodeStatus{VolumesAttached: append([]v1.AttachedVolume(nil), n.attached...)},
	}
}

func newClient(node *nodeStatus) *fake.Clientset {
	c := &fake.Clientset{}
	c.AddReactor("get", "nodes", func(core.Action) (bool, runtime.Object, error) {
		return true, node.get(), nil
	})
	c.AddReactor("*", "*", func(a core.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("no reaction implemented for %s", a)
	})
	return c
}
