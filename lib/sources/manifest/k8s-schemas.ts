/**
 * Zod schemas for the Kubernetes objects a manifest directory may hold. Each schema's output is
 * assignable to the structural type of lib/volume/k8s-types.ts (checked with `satisfies`).
 *
 * Contracts:
 * - Unknown fields are stripped: consumers only ever see validated fields (fields of the real
 *   API that the volume manager does not read, such as `image` pull policies or `ports`, are
 *   accepted and dropped). A pod volume with an unknown key is the exception: its keys are
 *   volume sources, so an unknown key is reported as an unsupported source rather than dropped.
 * - The schemas expect input that went through `normalizeDocument` (manifest-document.ts):
 *   null-valued keys removed (null means "unset", as in the Kubernetes JSON decoder) and NUL
 *   already rejected in every string.
 * - Names that become path components (object names, pod volume names, container names, uids,
 *   CSI driver names, ConfigMap/Secret keys) and relative paths (subPath, item paths) are checked
 *   for path escapes first (see names.ts); CSI volume handles are only NUL-checked because the
 *   volume manager hashes them before using them in a path.
 * - Quantities (capacity, requests, limits, sizeLimit, divisor) must parse with `parseQuantity`
 *   and be non-negative; a YAML number (`cpu: 1`) is accepted and normalised to a string.
 */
import { z } from 'zod';
import type {
  ConfigMap,
  CSIDriver,
  PersistentVolume,
  PersistentVolumeClaim,
  PersistentVolumeClaimSpec,
  Pod,
  Secret,
  Volume,
} from '../../volume/k8s-types.ts';
import { isInvalidQuantityError, parseQuantity } from '../../volume/quantity.ts';
import {
  configKeyProblem,
  csiDriverNameProblem,
  descendingPathProblem,
  dns1123LabelProblem,
  dns1123SubdomainProblem,
  noBackstepsProblem,
  uidProblem,
  volumeItemPathProblem,
} from './names.ts';

// ---------------------------------------------------------------------------------------------
// Building blocks

/** A string checked by one of the names.ts rules. */
function checkedString(problem: (value: string) => string | undefined) {
  return z.string().superRefine((value, ctx) => {
    const found = problem(value);
    if (found !== undefined) ctx.addIssue({ code: 'custom', message: found });
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const dns1123Label = checkedString(dns1123LabelProblem);
const dns1123Subdomain = checkedString(dns1123SubdomainProblem);
const csiDriverName = checkedString(csiDriverNameProblem);
const uid = checkedString(uidProblem);
const nonEmptyString = z.string().min(1, { error: 'must not be empty' });
const absolutePath = checkedString((value) => {
  if (!value.startsWith('/')) return 'must be an absolute path';
  return noBackstepsProblem(value);
});
const hostPathString = checkedString((value) => (value === '' ? 'must not be empty' : noBackstepsProblem(value)));
const subPath = checkedString(descendingPathProblem);
const volumeItemPath = checkedString(volumeItemPathProblem);
const stringMap = z.record(z.string(), z.string());
const fileMode = z
  .number()
  .int({ error: 'must be an integer file mode' })
  .min(0, { error: 'must be a file mode between 0 and 0777' })
  .max(0o777, { error: 'must be a file mode between 0 and 0777' });

/** A resource quantity ("1Gi", "500m", 2): parses with `parseQuantity`, not negative. */
const quantity = z
  .union([z.string(), z.number().transform((n) => String(n))], {
    error: 'must be a quantity (a string such as "1Gi" or a number)',
  })
  .superRefine((value, ctx) => {
    try {
      if (parseQuantity(value) < 0) ctx.addIssue({ code: 'custom', message: 'must not be negative' });
    } catch (err) {
      if (!isInvalidQuantityError(err)) throw err;
      ctx.addIssue({ code: 'custom', message: `must be a quantity such as "1Gi" or "500m", got ${JSON.stringify(value)}` });
    }
  });

const resourceList = z.record(z.string(), quantity);

/** A resource list that must hold `storage` (PV capacity, PVC requests). */
const resourceListWithStorage = resourceList.superRefine((list, ctx) => {
  if (list.storage === undefined) ctx.addIssue({ code: 'custom', path: ['storage'], message: 'is required' });
});

/** ConfigMap/Secret data maps: keys are file names in a volume, so they are checked too. */
function keyedData<T extends z.ZodType<string>>(value: T) {
  return z.record(z.string(), value).superRefine((data, ctx) => {
    for (const key of Object.keys(data)) {
      const problem = configKeyProblem(key);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `key ${problem}` });
    }
  });
}

const base64 = z.string().superRefine((value, ctx) => {
  // Standard base64 with padding, as the API server's []byte decoding requires. The value is not
  // echoed: Secret data must not reach logs.
  if (value.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) {
    ctx.addIssue({ code: 'custom', message: 'must be base64-encoded' });
  }
});

/**
 * Rejects a value whose object keys (other than `ignored`) name zero, several or unsupported
 * members of `supported`, before the object schema runs. Used for unions that Kubernetes
 * encodes as "exactly one of these optional fields".
 */
function exactlyOneOf<T extends z.ZodType>(what: string, supported: readonly string[], ignored: readonly string[], schema: T) {
  return z.preprocess((raw, ctx) => {
    if (!isRecord(raw)) return raw;
    const present = Object.keys(raw).filter((key) => !ignored.includes(key));
    const unsupported = present.filter((key) => !supported.includes(key));
    if (unsupported.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `unsupported ${what} ${unsupported.join(', ')} (supported: ${supported.join(', ')})`,
      });
    } else if (present.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `must specify exactly one ${what} (found ${present.length === 0 ? 'none' : present.join(', ')})`,
      });
    }
    return raw;
  }, schema);
}

// ---------------------------------------------------------------------------------------------
// Metadata

const ownerReference = z.object({
  apiVersion: z.string().optional(),
  kind: nonEmptyString,
  name: nonEmptyString,
  uid,
  controller: z.boolean().optional(),
});

const metadataFields = {
  uid: uid.optional(),
  resourceVersion: z.string().optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  deletionTimestamp: z.string().optional(),
  ownerReferences: z.array(ownerReference).optional(),
};

/** Metadata of a namespaced object; the namespace defaults to "default" after validation. */
function namespacedMetadata() {
  return z.object({ name: dns1123Subdomain, namespace: dns1123Label.optional(), ...metadataFields });
}

/** Metadata of a cluster-scoped object: a namespace is an authoring error, not silently dropped. */
function clusterMetadata(name: z.ZodType<string>) {
  return z.object({
    name,
    namespace: z.undefined({ error: 'must not be set: the object is cluster-scoped' }).optional(),
    ...metadataFields,
  });
}

// ---------------------------------------------------------------------------------------------
// Shared PV/PVC pieces

const accessModes = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'] as const;
const accessModeList = z.array(z.enum(accessModes)).min(1, { error: 'must have at least one access mode' });
const volumeMode = z.enum(['Filesystem', 'Block']);

const persistentVolumeClaimSpec = z.object({
  accessModes: accessModeList,
  resources: z.object({ requests: resourceListWithStorage, limits: resourceList.optional() }),
  volumeName: dns1123Subdomain.optional(),
  storageClassName: z.string().optional(),
  volumeMode: volumeMode.optional(),
}) satisfies z.ZodType<PersistentVolumeClaimSpec>;

const seLinuxOptions = z.object({
  user: z.string().optional(),
  role: z.string().optional(),
  type: z.string().optional(),
  level: z.string().optional(),
});

// ---------------------------------------------------------------------------------------------
// Pod

const keyToPath = z.object({ key: nonEmptyString, path: volumeItemPath, mode: fileMode.optional() });

const downwardAPIVolumeFile = z
  .object({
    path: volumeItemPath,
    fieldRef: z.object({ fieldPath: nonEmptyString, apiVersion: z.string().optional() }).optional(),
    resourceFieldRef: z
      .object({ containerName: z.string().optional(), resource: nonEmptyString, divisor: quantity.optional() })
      .optional(),
    mode: fileMode.optional(),
  })
  .superRefine((file, ctx) => {
    if ((file.fieldRef === undefined) === (file.resourceFieldRef === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'must specify exactly one of fieldRef and resourceFieldRef' });
    }
  });

const volumeProjectionSources = ['secret', 'configMap', 'downwardAPI', 'serviceAccountToken'] as const;
const volumeProjection = exactlyOneOf(
  'projection source',
  volumeProjectionSources,
  [],
  z.object({
    secret: z.object({ name: dns1123Subdomain.optional(), items: z.array(keyToPath).optional(), optional: z.boolean().optional() }).optional(),
    configMap: z.object({ name: dns1123Subdomain.optional(), items: z.array(keyToPath).optional(), optional: z.boolean().optional() }).optional(),
    downwardAPI: z.object({ items: z.array(downwardAPIVolumeFile).optional() }).optional(),
    serviceAccountToken: z
      .object({
        audience: z.string().optional(),
        // The API server's minimum token lifetime is 10 minutes.
        expirationSeconds: z.number().int().min(600, { error: 'must be at least 600 seconds' }).optional(),
        path: volumeItemPath,
      })
      .optional(),
  }),
);

const gcePersistentDisk = z.object({
  pdName: nonEmptyString,
  fsType: z.string().optional(),
  partition: z.number().int().min(0).optional(),
  readOnly: z.boolean().optional(),
});

const hostPathTypes = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'] as const;
const hostPathSource = z.object({ path: hostPathString, type: z.enum(hostPathTypes).optional() });

/** The volume sources a pod volume may use: the ones lib/volume/k8s-types.ts models. */
const podVolumeSources = [
  'emptyDir',
  'hostPath',
  'configMap',
  'secret',
  'projected',
  'downwardAPI',
  'persistentVolumeClaim',
  'ephemeral',
  'csi',
  'gcePersistentDisk',
] as const;

const volume = exactlyOneOf(
  'volume source',
  podVolumeSources,
  ['name'],
  z.object({
    name: dns1123Label,
    emptyDir: z.object({ medium: z.enum(['', 'Memory']).optional(), sizeLimit: quantity.optional() }).optional(),
    hostPath: hostPathSource.optional(),
    configMap: z
      .object({
        name: dns1123Subdomain.optional(),
        items: z.array(keyToPath).optional(),
        defaultMode: fileMode.optional(),
        optional: z.boolean().optional(),
      })
      .optional(),
    secret: z
      .object({
        secretName: dns1123Subdomain.optional(),
        items: z.array(keyToPath).optional(),
        defaultMode: fileMode.optional(),
        optional: z.boolean().optional(),
      })
      .optional(),
    projected: z.object({ sources: z.array(volumeProjection).optional(), defaultMode: fileMode.optional() }).optional(),
    downwardAPI: z.object({ items: z.array(downwardAPIVolumeFile).optional(), defaultMode: fileMode.optional() }).optional(),
    persistentVolumeClaim: z.object({ claimName: dns1123Subdomain, readOnly: z.boolean().optional() }).optional(),
    ephemeral: z
      .object({
        volumeClaimTemplate: z.object({
          metadata: z.object({ labels: stringMap.optional(), annotations: stringMap.optional() }).optional(),
          spec: persistentVolumeClaimSpec,
        }),
      })
      .optional(),
    csi: z
      .object({
        driver: csiDriverName,
        readOnly: z.boolean().optional(),
        fsType: z.string().optional(),
        volumeAttributes: stringMap.optional(),
        nodePublishSecretRef: z.object({ name: dns1123Subdomain }).optional(),
      })
      .optional(),
    gcePersistentDisk: gcePersistentDisk.optional(),
  }),
) satisfies z.ZodType<Volume>;

const container = z.object({
  name: dns1123Label,
  image: z.string().optional(),
  volumeMounts: z
    .array(
      z.object({
        name: dns1123Label,
        mountPath: nonEmptyString,
        readOnly: z.boolean().optional(),
        subPath: subPath.optional(),
      }),
    )
    .optional(),
  volumeDevices: z.array(z.object({ name: dns1123Label, devicePath: nonEmptyString })).optional(),
  resources: z.object({ limits: resourceList.optional(), requests: resourceList.optional() }).optional(),
  securityContext: z.object({ seLinuxOptions: seLinuxOptions.optional() }).optional(),
});

const podPhases = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'] as const;

const podSpec = z
  .object({
    nodeName: z.string().optional(),
    serviceAccountName: z.string().optional(),
    volumes: z.array(volume).optional(),
    containers: z.array(container).min(1, { error: 'must have at least one container' }),
    initContainers: z.array(container).optional(),
    ephemeralContainers: z.array(container).optional(),
    securityContext: z
      .object({
        seLinuxOptions: seLinuxOptions.optional(),
        fsGroup: z.number().int().optional(),
        runAsUser: z.number().int().optional(),
        supplementalGroups: z.array(z.number().int()).optional(),
        fsGroupChangePolicy: z.enum(['OnRootMismatch', 'Always']).optional(),
      })
      .optional(),
  })
  .superRefine((spec, ctx) => {
    // Cross-field rules of the API server's pod validation that the volume manager relies on:
    // volume names identify volumes (outer volume spec names), container names are unique
    // across all container lists, and every mount/device refers to a declared volume.
    const volumeNames = new Set<string>();
    (spec.volumes ?? []).forEach((v, i) => {
      if (volumeNames.has(v.name)) ctx.addIssue({ code: 'custom', path: ['volumes', i, 'name'], message: `duplicate volume name ${JSON.stringify(v.name)}` });
      volumeNames.add(v.name);
    });
    const containerNames = new Set<string>();
    const lists = [
      ['containers', spec.containers],
      ['initContainers', spec.initContainers ?? []],
      ['ephemeralContainers', spec.ephemeralContainers ?? []],
    ] as const;
    for (const [list, containers] of lists) {
      containers.forEach((c, i) => {
        if (containerNames.has(c.name)) ctx.addIssue({ code: 'custom', path: [list, i, 'name'], message: `duplicate container name ${JSON.stringify(c.name)}` });
        containerNames.add(c.name);
        (c.volumeMounts ?? []).forEach((m, j) => {
          if (!volumeNames.has(m.name)) ctx.addIssue({ code: 'custom', path: [list, i, 'volumeMounts', j, 'name'], message: `volume ${JSON.stringify(m.name)} not found in spec.volumes` });
        });
        (c.volumeDevices ?? []).forEach((d, j) => {
          if (!volumeNames.has(d.name)) ctx.addIssue({ code: 'custom', path: [list, i, 'volumeDevices', j, 'name'], message: `volume ${JSON.stringify(d.name)} not found in spec.volumes` });
        });
      });
    }
  });

export const podSchema = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('Pod'),
  metadata: namespacedMetadata(),
  spec: podSpec,
  status: z.object({ phase: z.enum(podPhases).optional() }).optional(),
}) satisfies z.ZodType<Pod>;

// ---------------------------------------------------------------------------------------------
// PersistentVolume

const secretReference = z.object({ name: dns1123Subdomain, namespace: dns1123Label.optional() });

/** The PV sources lib/volume/k8s-types.ts models; exactly one must be set. */
const persistentVolumeSources = ['csi', 'local', 'hostPath', 'gcePersistentDisk'] as const;

const persistentVolumeSpec = z
  .object({
    capacity: resourceListWithStorage,
    accessModes: accessModeList,
    volumeMode: volumeMode.optional(),
    claimRef: z
      .object({ namespace: dns1123Label.optional(), name: dns1123Subdomain.optional(), uid: uid.optional() })
      .optional(),
    mountOptions: z.array(z.string()).optional(),
    storageClassName: z.string().optional(),
    nodeAffinity: z
      .object({
        required: z
          .object({
            nodeSelectorTerms: z.array(
              z.object({
                matchExpressions: z
                  .array(
                    z.object({
                      key: nonEmptyString,
                      operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']),
                      values: z.array(z.string()).optional(),
                    }),
                  )
                  .optional(),
              }),
            ),
          })
          .optional(),
      })
      .optional(),
    csi: z
      .object({
        driver: csiDriverName,
        // Not a path component (hashed before use), so any non-empty string without NUL.
        volumeHandle: nonEmptyString,
        readOnly: z.boolean().optional(),
        fsType: z.string().optional(),
        volumeAttributes: stringMap.optional(),
        controllerPublishSecretRef: secretReference.optional(),
        nodeStageSecretRef: secretReference.optional(),
        nodePublishSecretRef: secretReference.optional(),
        controllerExpandSecretRef: secretReference.optional(),
        nodeExpandSecretRef: secretReference.optional(),
      })
      .optional(),
    local: z.object({ path: absolutePath, fsType: z.string().optional() }).optional(),
    hostPath: hostPathSource.optional(),
    gcePersistentDisk: gcePersistentDisk.optional(),
  })
  .superRefine((spec, ctx) => {
    const present = persistentVolumeSources.filter((key) => spec[key] !== undefined);
    if (present.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `must specify exactly one persistent volume source of ${persistentVolumeSources.join(', ')} (found ${present.length === 0 ? 'none' : present.join(', ')})`,
      });
    }
  });

export const persistentVolumeSchema = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('PersistentVolume'),
  metadata: clusterMetadata(dns1123Subdomain),
  spec: persistentVolumeSpec,
  status: z.object({ phase: z.string().optional() }).optional(),
}) satisfies z.ZodType<PersistentVolume>;

// ---------------------------------------------------------------------------------------------
// PersistentVolumeClaim, ConfigMap, Secret, CSIDriver

export const persistentVolumeClaimSchema = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('PersistentVolumeClaim'),
  metadata: namespacedMetadata(),
  spec: persistentVolumeClaimSpec,
  status: z
    .object({
      phase: z.enum(['Pending', 'Bound', 'Lost']).optional(),
      capacity: resourceList.optional(),
      accessModes: z.array(z.enum(accessModes)).optional(),
    })
    .optional(),
}) satisfies z.ZodType<PersistentVolumeClaim>;

export const configMapSchema = z
  .object({
    apiVersion: z.literal('v1'),
    kind: z.literal('ConfigMap'),
    metadata: namespacedMetadata(),
    data: keyedData(z.string()).optional(),
    binaryData: keyedData(base64).optional(),
  })
  .superRefine((cm, ctx) => {
    for (const key of Object.keys(cm.binaryData ?? {})) {
      if (cm.data !== undefined && Object.hasOwn(cm.data, key)) {
        ctx.addIssue({ code: 'custom', path: ['binaryData', key], message: 'duplicate of a key in data' });
      }
    }
  }) satisfies z.ZodType<ConfigMap>;

export const secretSchema = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('Secret'),
  metadata: namespacedMetadata(),
  type: z.string().optional(),
  data: keyedData(base64).optional(),
  stringData: keyedData(z.string()).optional(),
}) satisfies z.ZodType<Secret>;

export const csiDriverSchema = z.object({
  apiVersion: z.literal('storage.k8s.io/v1'),
  kind: z.literal('CSIDriver'),
  metadata: clusterMetadata(csiDriverName),
  spec: z.object({
    attachRequired: z.boolean().optional(),
    podInfoOnMount: z.boolean().optional(),
    volumeLifecycleModes: z.array(z.enum(['Persistent', 'Ephemeral'])).optional(),
    requiresRepublish: z.boolean().optional(),
  }),
}) satisfies z.ZodType<CSIDriver>;
