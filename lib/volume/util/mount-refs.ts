/**
 * `util.HasMountRefs` (kubernetes/kubernetes pkg/volume/util/util.go@v1.34): whether a device
 * mount path is still referenced by a mount the kubelet does not manage.
 */

/** The part of every plugin directory below the kubelet root dir. */
const KUBERNETES_PLUGIN_PATH_PREFIX = '/plugins/kubernetes.io/';

/**
 * True when some reference does not contain the mount path's plugin suffix. A mount path looks
 * like `<root>/plugins/kubernetes.io/<plugin>/…`; the same directory seen through another path to
 * the root dir (`/home/somewhere/<root>/plugins/kubernetes.io/…`, or a bind mount of the root dir
 * elsewhere) is the kubelet's own and must not count, or UnmountDevice would be blocked forever.
 * So the path is searched from `/plugins/kubernetes.io/` on; a path without it is searched whole.
 * What counts is a reference such as `/data/local/some/manual/mount`, which unmounting would break.
 */
export function hasMountRefs(mountPath: string, mountRefs: readonly string[]): boolean {
  const i = mountPath.indexOf(KUBERNETES_PLUGIN_PATH_PREFIX);
  const pathToFind = i > -1 ? mountPath.slice(i) : mountPath;
  return mountRefs.some((ref) => !ref.includes(pathToFind));
}
