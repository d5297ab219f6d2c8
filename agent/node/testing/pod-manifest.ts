/** Test support: pod manifests for the manifest source of a real agent process. */

/** A volume source of a pod manifest (`emptyDir: {}`, `configMap: {name}`, …). */
export type VolumeSource = Record<string, unknown>;

/** A pod manifest (JSON is YAML) whose one container mounts every volume. */
export function podManifest(name: string, uid: string, volumes: Record<string, VolumeSource>, phase?: string): string {
  const names = Object.keys(volumes);
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: names.map((n) => ({ name: n, mountPath: `/mnt/${n}` })) }],
      volumes: names.map((n) => ({ name: n, ...volumes[n] })),
    },
    ...(phase === undefined ? {} : { status: { phase } }),
  });
}
