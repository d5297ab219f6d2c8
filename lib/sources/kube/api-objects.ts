/**
 * Converting API server objects (as `@kubernetes/client-node` returns them) into the structural
 * shapes of lib/volume/k8s-types.ts.
 *
 * Contracts:
 * - Input is either a client-node model instance (LIST responses: `Date` timestamps) or raw
 *   watch JSON; both go through `toPlainJson`, so timestamps come out as RFC 3339 strings.
 * - Only the fields k8s-types models are kept; everything else is dropped (status conditions,
 *   managedFields, container ports…). The API server has validated the objects, so the schemas
 *   only check shapes (types), not the naming rules the manifest source enforces.
 * - A pod volume that does not fit the modelled shapes (an unmodelled source such as `nfs`, or
 *   an unmodelled value such as `emptyDir.medium: HugePages`) is kept as `{name}` with no source:
 *   the volume manager then reports it as unsupported for that pod while the pod's other volumes
 *   keep working. Such volumes are returned as `warnings`, not failures.
 * - Objects come out deeply frozen and with `apiVersion`/`kind` set (LIST items lack them).
 */
import { z } from 'zod';
import type {
  ConfigMap,
  CSIDriver,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  PersistentVolumeClaimSpec,
  Pod,
  Secret,
  Volume,
} from '../../volume/k8s-types.ts';
import { deepFreeze, isJsonObject, toPlainJson, withoutManagedFields } from './plain-json.ts';

/** The outcome of converting one API object. */
export type Conversion<T> =
  | { ok: true; object: T; warnings: string[] }
  | { ok: false; error: string };

// ---------------------------------------------------------------------------------------------
// Building blocks

const stringMap = z.record(z.string(), z.string());
/** The API server writes quantities as strings; a number is accepted and normalised. */
const quantity = z.union([z.string(), z.number().transform((n) => String(n))]);
const resourceList = z.record(z.string(), quantity);
const accessMode = z.enum(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod']);
const volumeMode = z.enum(['Filesystem', 'Block']);
const seLinuxOptions = z.object({
  user: z.string().optional(),
  role: z.string().optional(),
  type: z.string().optional(),
  level: z.string().optional(),
});

const metadata = z.object({
  name: z.string().min(1),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  deletionTimestamp: z.string().optional(),
  ownerReferences: z
    .array(
      z.object({
        apiVersion: z.string().optional(),
        kind: z.string(),
        name: z.string(),
        uid: z.string(),
        controller: z.boolean().optional(),
      }),
    )
    .optional(),
});

const persistentVolumeClaimSpec = z.object({
  accessModes: z.array(accessMode).optional(),
  resources: z.object({ requests: resourceList.optional(), limits: resourceList.optional() }).optional(),
  volumeName: z.string().optional(),
  storageClassName: z.string().optional(),
  volumeMode: volumeMode.optional(),
}) satisfies z.ZodType<PersistentVolumeClaimSpec>;

const gcePersistentDisk = z.object({
  pdName: z.string(),
  fsType: z.string().optional(),
  partition: z.number().int().optional(),
  readOnly: z.boolean().optional(),
});

// ---------------------------------------------------------------------------------------------
// Pod

const keyToPath = z.object({ key: z.string(), path: z.string(), mode: z.number().int().optional() });
const downwardAPIVolumeFile = z.object({
  path: z.string(),
  fieldRef: z.object({ fieldPath: z.string(), apiVersion: z.string().optional() }).optional(),
  resourceFieldRef: z.object({ containerName: z.string().optional(), resource: z.string(), divisor: quantity.optional() }).optional(),
  mode: z.number().int().optional(),
});
const configMapProjection = z.object({ name: z.string().optional(), items: z.array(keyToPath).optional(), optional: z.boolean().optional() });

/** One pod volume; unknown volume source keys are stripped (see the module contract). */
const volumeSchema = z.object({
  name: z.string().min(1),
  emptyDir: z.object({ medium: z.enum(['', 'Memory']).optional(), sizeLimit: quantity.optional() }).optional(),
  hostPath: z.object({ path: z.string(), type: z.string().optional() }).optional(),
  configMap: configMapProjection.extend({ defaultMode: z.number().int().optional() }).optional(),
  secret: z
    .object({
      secretName: z.string().optional(),
      items: z.array(keyToPath).optional(),
      defaultMode: z.number().int().optional(),
      optional: z.boolean().optional(),
    })
    .optional(),
  projected: z
    .object({
      sources: z
        .array(
          z.object({
            secret: configMapProjection.optional(),
            configMap: configMapProjection.optional(),
            downwardAPI: z.object({ items: z.array(downwardAPIVolumeFile).optional() }).optional(),
            serviceAccountToken: z
              .object({ audience: z.string().optional(), expirationSeconds: z.number().int().optional(), path: z.string() })
              .optional(),
          }),
        )
        .optional(),
      defaultMode: z.number().int().optional(),
    })
    .optional(),
  downwardAPI: z.object({ items: z.array(downwardAPIVolumeFile).optional(), defaultMode: z.number().int().optional() }).optional(),
  persistentVolumeClaim: z.object({ claimName: z.string(), readOnly: z.boolean().optional() }).optional(),
  ephemeral: z
    .object({
      volumeClaimTemplate: z
        .object({
          metadata: z.object({ labels: stringMap.optional(), annotations: stringMap.optional() }).optional(),
          spec: persistentVolumeClaimSpec,
        })
        .optional(),
    })
    .optional(),
  csi: z
    .object({
      driver: z.string(),
      readOnly: z.boolean().optional(),
      fsType: z.string().optional(),
      volumeAttributes: stringMap.optional(),
      nodePublishSecretRef: z.object({ name: z.string() }).optional(),
    })
    .optional(),
  gcePersistentDisk: gcePersistentDisk.optional(),
}) satisfies z.ZodType<Volume>;

const container = z.object({
  name: z.string(),
  image: z.string().optional(),
  volumeMounts: z
    .array(z.object({ name: z.string(), mountPath: z.string(), readOnly: z.boolean().optional(), subPath: z.string().optional() }))
    .optional(),
  volumeDevices: z.array(z.object({ name: z.string(), devicePath: z.string() })).optional(),
  resources: z.object({ limits: resourceList.optional(), requests: resourceList.optional() }).optional(),
  securityContext: z.object({ seLinuxOptions: seLinuxOptions.optional() }).optional(),
});

/** A pod with its volumes still unparsed: they are converted one by one (see convertPod). */
const podShell = z.object({
  metadata,
  spec: z.object({
    nodeName: z.string().optional(),
    serviceAccountName: z.string().optional(),
    volumes: z.array(z.unknown()).optional(),
    containers: z.array(container),
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
  }),
  status: z.object({ phase: z.enum(['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown']).optional() }).optional(),
});

// ---------------------------------------------------------------------------------------------
// Other kinds

const secretReference = z.object({ name: z.string(), namespace: z.string().optional() });

const persistentVolumeSchema = z.object({
  metadata,
  spec: z.object({
    capacity: resourceList.optional(),
    accessModes: z.array(accessMode).optional(),
    volumeMode: volumeMode.optional(),
    claimRef: z.object({ namespace: z.string().optional(), name: z.string().optional(), uid: z.string().optional() }).optional(),
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
                      key: z.string(),
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
        driver: z.string(),
        volumeHandle: z.string(),
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
    local: z.object({ path: z.string(), fsType: z.string().optional() }).optional(),
    hostPath: z.object({ path: z.string(), type: z.string().optional() }).optional(),
    gcePersistentDisk: gcePersistentDisk.optional(),
  }),
  status: z.object({ phase: z.string().optional() }).optional(),
});

const persistentVolumeClaimSchema = z.object({
  metadata,
  spec: persistentVolumeClaimSpec,
  status: z
    .object({
      phase: z.enum(['Pending', 'Bound', 'Lost']).optional(),
      capacity: resourceList.optional(),
      accessModes: z.array(accessMode).optional(),
    })
    .optional(),
});

const configMapSchema = z.object({ metadata, data: stringMap.optional(), binaryData: stringMap.optional() });

const secretSchema = z.object({ metadata, type: z.string().optional(), data: stringMap.optional() });

const csiDriverSchema = z.object({
  metadata,
  spec: z.object({
    attachRequired: z.boolean().optional(),
    podInfoOnMount: z.boolean().optional(),
    volumeLifecycleModes: z.array(z.string()).optional(),
    requiresRepublish: z.boolean().optional(),
  }),
});

const nodeSchema = z.object({
  metadata,
  status: z
    .object({
      volumesAttached: z.array(z.object({ name: z.string(), devicePath: z.string() })).optional(),
      volumesInUse: z.array(z.string()).optional(),
      // The size of memory-backed emptyDirs (lib/volume/plugins/util/memory-size.ts).
      allocatable: z.record(z.string(), z.string()).optional(),
      conditions: z
        .array(z.object({ type: z.string(), status: z.string(), reason: z.string().optional(), message: z.string().optional(), lastTransitionTime: z.string().optional() }))
        .optional(),
    })
    .optional(),
});

// ---------------------------------------------------------------------------------------------
// Conversion

function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.map(String).join('.')}: ${issue.message}`))
    .join('; ');
}

function convert<S extends z.ZodType, T>(
  schema: S,
  raw: unknown,
  build: (parsed: z.output<S>) => { object: T; warnings?: string[] },
): Conversion<T> {
  const parsed = schema.safeParse(toPlainJson(withoutManagedFields(raw)));
  if (!parsed.success) return { ok: false, error: formatIssues(parsed.error) };
  const { object, warnings = [] } = build(parsed.data);
  return { ok: true, object: deepFreeze(object), warnings };
}

/** The name of a raw volume entry, for messages; "" when it has none. */
function rawVolumeName(raw: unknown): string {
  return isJsonObject(raw) && typeof raw.name === 'string' ? raw.name : '';
}

export function convertPod(raw: unknown): Conversion<Pod> {
  return convert(podShell, raw, (shell) => {
    const warnings: string[] = [];
    const volumes: Volume[] = [];
    (shell.spec.volumes ?? []).forEach((rawVolume, i) => {
      const parsed = volumeSchema.safeParse(rawVolume);
      if (parsed.success) {
        const known = Object.keys(parsed.data).length > 1;
        const unknownKeys = isJsonObject(rawVolume) ? Object.keys(rawVolume).filter((k) => k !== 'name' && !(k in volumeSchema.shape)) : [];
        if (!known && unknownKeys.length > 0) warnings.push(`spec.volumes[${i}] (${parsed.data.name}): unsupported volume source ${unknownKeys.join(', ')}`);
        volumes.push(parsed.data);
        return;
      }
      const name = rawVolumeName(rawVolume);
      warnings.push(`spec.volumes[${i}] (${name}): ${formatIssues(parsed.error)}; the volume is kept without a source`);
      volumes.push({ name });
    });
    const { volumes: _raw, ...spec } = shell.spec;
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: shell.metadata,
      spec: shell.spec.volumes === undefined ? spec : { ...spec, volumes },
      ...(shell.status === undefined ? {} : { status: shell.status }),
    };
    return { object: pod, warnings };
  });
}

export function convertPersistentVolume(raw: unknown): Conversion<PersistentVolume> {
  return convert(persistentVolumeSchema, raw, (pv) => ({ object: { apiVersion: 'v1', kind: 'PersistentVolume', ...pv } }));
}

export function convertPersistentVolumeClaim(raw: unknown): Conversion<PersistentVolumeClaim> {
  return convert(persistentVolumeClaimSchema, raw, (pvc) => ({ object: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', ...pvc } }));
}

export function convertConfigMap(raw: unknown): Conversion<ConfigMap> {
  return convert(configMapSchema, raw, (cm) => ({ object: { apiVersion: 'v1', kind: 'ConfigMap', ...cm } }));
}

export function convertSecret(raw: unknown): Conversion<Secret> {
  return convert(secretSchema, raw, (secret) => ({ object: { apiVersion: 'v1', kind: 'Secret', ...secret } }));
}

export function convertCSIDriver(raw: unknown): Conversion<CSIDriver> {
  return convert(csiDriverSchema, raw, (driver) => ({ object: { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', ...driver } }));
}

export function convertNode(raw: unknown): Conversion<Node> {
  return convert(nodeSchema, raw, (node) => ({ object: node }));
}
