//go:build go1.25

package differential

import (
	"os"
	"path/filepath"

	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/volume"
	volumetesting "k8s.io/kubernetes/pkg/volume/testing"
	utilstrings "k8s.io/utils/strings"
)

// diskPlugin is upstream's FakeVolumePlugin whose unmounters each tear down their own pod
// volume directory. FakeVolumePlugin hands out one shared FakeVolume as every unmounter and
// NewUnmounter overwrites its VolName, so two unmounters made before either tears down (a
// reconstruction that finds two directories of one pod and disk) both remove the directory of
// the last one, and the other is found again at the next restart. A real plugin's unmounter
// removes its own directory, as the engine's fake does; the call counts stay upstream's.
type diskPlugin struct {
	*volumetesting.FakeVolumePlugin
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
