//go:build go1.25

package differential

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/volume"
	volumetesting "k8s.io/kubernetes/pkg/volume/testing"
	volumetypes "k8s.io/kubernetes/pkg/volume/util/types"
	utilstrings "k8s.io/utils/strings"
)

// diskPlugin is upstream's FakeVolumePlugin whose unmounters each tear down their own pod
// volume directory. FakeVolumePlugin hands out one shared FakeVolume as every unmounter and
// NewUnmounter overwrites its VolName, so two unmounters made before either tears down (a
// reconstruction that finds two directories of one pod and disk) both remove the directory of
// the last one, and the other is found again at the next restart. A real plugin's unmounter
// removes its own directory, as the engine's fake does; the call counts stay upstream's.
// Its mounters, attachers and device mounters take the outcome steps' outcomes first.
type diskPlugin struct {
	*volumetesting.FakeVolumePlugin
	disk string
	o    *outcomes
}

func (p diskPlugin) NewUnmounter(volName string, podUID k8stypes.UID) (volume.Unmounter, error) {
	u, err := p.FakeVolumePlugin.NewUnmounter(volName, podUID)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(p.Host.GetPodVolumeDir(podUID, utilstrings.EscapeQualifiedName(p.PluginName), volName))
	return &diskUnmounter{FakeVolume: u.(*volumetesting.FakeVolume), path: path}, nil
}

// diskUnmounter is the shared FakeVolume (its call count, its TearDownAt) bound to one directory.
type diskUnmounter struct {
	*volumetesting.FakeVolume
	path string
}

func (u *diskUnmounter) GetPath() string { return u.path }

func (u *diskUnmounter) TearDown() error {
	if err := u.FakeVolume.TearDown(); err != nil {
		return err
	}
	return os.RemoveAll(u.path)
}

// outcomes are the plugin outcomes that outcome steps set for the next call of an operation on
// a disk (docs/differential.md): "final" fails it, "uncertain" fails it with an uncertain
// progress error, "hang" blocks it until the kubelet stops or the trace ends, "success" (or no
// outcome) passes it through to the fake plugin. An intercepted call does not reach the fake
// plugin, so it is not in the call counts.
type outcomes struct {
	sync.Mutex
	next    map[string]string
	release chan struct{}
}

func newOutcomes() *outcomes {
	return &outcomes{next: map[string]string{}, release: make(chan struct{})}
}

func (o *outcomes) set(disk, call, outcome string) {
	o.Lock()
	defer o.Unlock()
	o.next[disk+"|"+call] = outcome
}

// releaseHung makes every hung call return (with a final error).
func (o *outcomes) releaseHung() {
	o.Lock()
	defer o.Unlock()
	close(o.release)
	o.release = make(chan struct{})
}

// endTrace makes every hung call return, and every later one too: the channel stays closed, so
// a call that an operation started by the stopped reconciler makes after the trace's end does
// not hang on a fresh channel that nothing closes (the bubble could not end: "deadlock: main
// bubble goroutine has exited but blocked goroutines remain").
func (o *outcomes) endTrace() {
	o.Lock()
	defer o.Unlock()
	close(o.release)
}

// take consumes the outcome of the next call; nil means pass through.
func (o *outcomes) take(disk, call string) error {
	o.Lock()
	outcome := o.next[disk+"|"+call]
	delete(o.next, disk+"|"+call)
	release := o.release
	o.Unlock()
	switch outcome {
	case "final":
		return fmt.Errorf("fake %s final error", call)
	case "uncertain":
		return volumetypes.NewUncertainProgressError(fmt.Sprintf("fake %s uncertain error", call))
	case "hang":
		<-release
		return fmt.Errorf("fake %s released", call)
	}
	return nil
}

func (p diskPlugin) NewMounter(spec *volume.Spec, pod *v1.Pod) (volume.Mounter, error) {
	m, err := p.FakeVolumePlugin.NewMounter(spec, pod)
	if err != nil {
		return nil, err
	}
	return &outcomeVolume{FakeVolume: m.(*volumetesting.FakeVolume), disk: p.disk, o: p.o}, nil
}

func (p diskPlugin) NewAttacher() (volume.Attacher, error) {
	a, err := p.FakeVolumePlugin.NewAttacher()
	if err != nil {
		return nil, err
	}
	return &outcomeVolume{FakeVolume: a.(*volumetesting.FakeVolume), disk: p.disk, o: p.o}, nil
}

func (p diskPlugin) NewDeviceMounter() (volume.DeviceMounter, error) {
	return p.NewAttacher()
}

// outcomeVolume is the shared FakeVolume as a mounter, attacher and device mounter whose
// SetUp, Attach, MountDevice and VolumesAreAttached take the disk's next outcome first.
type outcomeVolume struct {
	*volumetesting.FakeVolume
	disk string
	o    *outcomes
}

func (v *outcomeVolume) SetUp(args volume.MounterArgs) error {
	if err := v.o.take(v.disk, "setUp"); err != nil {
		return err
	}
	return v.FakeVolume.SetUp(args)
}

func (v *outcomeVolume) Attach(spec *volume.Spec, node k8stypes.NodeName) (string, error) {
	if err := v.o.take(v.disk, "attach"); err != nil {
		return "", err
	}
	return v.FakeVolume.Attach(spec, node)
}

func (v *outcomeVolume) MountDevice(spec *volume.Spec, devicePath, deviceMountPath string, args volume.DeviceMounterArgs) error {
	if err := v.o.take(v.disk, "mountDevice"); err != nil {
		return err
	}
	return v.FakeVolume.MountDevice(spec, devicePath, deviceMountPath, args)
}

func (v *outcomeVolume) VolumesAreAttached(specs []*volume.Spec, node k8stypes.NodeName) (map[*volume.Spec]bool, error) {
	if err := v.o.take(v.disk, "volumesAreAttached"); err != nil {
		return nil, err
	}
	return v.FakeVolume.VolumesAreAttached(specs, node)
}
