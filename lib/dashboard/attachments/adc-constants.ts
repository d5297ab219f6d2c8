/**
 * Names and values of the attach/detach controller (kube-controller-manager) and of the objects
 * it reads, verbatim from upstream (operators grep them). Sources:
 * kubernetes/kubernetes pkg/controller/volume/attachdetach/attach_detach_controller.go and
 * reconciler/reconciler.go@v1.34, staging/src/k8s.io/api/core/v1/well_known_taints.go.
 */

/** `maxWaitForUnmountDuration` (6 minutes): after it, a volume of an unhealthy node is force-detached. */
export const maxWaitForUnmountDurationMs = 6 * 60_000;

/** `v1.TaintNodeOutOfService`: the ADC detaches without waiting for the unmount while it is set. */
export const TaintNodeOutOfService = 'node.kubernetes.io/out-of-service';

/** The value the non-graceful node shutdown documentation uses for the taint. */
export const OUT_OF_SERVICE_TAINT_VALUE = 'nodeshutdown';

/** `volumeutil.ControllerManagedAttachAnnotation`: the ADC attaches for a node only with it set to "true". */
export const ControllerManagedAttachAnnotation = 'volumes.kubernetes.io/controller-managed-attach-detach';

/** The namespace of the kubelets' node Leases. */
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/** The unique volume name prefix of CSI volumes (`kubernetes.io/csi/<driver>^<handle>`). */
export const CSI_PLUGIN_NAME = 'kubernetes.io/csi';

/** `kevents.FailedAttachVolume`: the reason of the ADC's Multi-Attach and attach failure events. */
export const FailedAttachVolume = 'FailedAttachVolume';

/** The ADC's Multi-Attach event when no pod on the other node uses the volume any more. */
export function multiAttachErrorMessage(volumeName: string): string {
  return `Multi-Attach error for volume ${JSON.stringify(volumeName)} Volume is already exclusively attached to one node and can't be attached to another`;
}

/**
 * The ADC's Multi-Attach event when pods on the other node still use the volume, as the pod in
 * `namespace` sees it: the names of the pods of its own namespace, a count of the others.
 */
export function multiAttachUsedByMessage(volumeName: string, localPodNames: readonly string[], otherNamespacePods: number): string {
  let msg: string;
  if (localPodNames.length > 0) {
    msg = `Volume is already used by pod(s) ${localPodNames.join(', ')}`;
    if (otherNamespacePods > 0) msg = `${msg} and ${otherNamespacePods} pod(s) in different namespaces`;
  } else {
    msg = `Volume is already used by ${otherNamespacePods} pod(s) in different namespaces`;
  }
  return `Multi-Attach error for volume ${JSON.stringify(volumeName)} ${msg}`;
}

/** The unique volume name the kubelet and the ADC use for a CSI volume. */
export function csiUniqueVolumeName(driver: string, volumeHandle: string): string {
  return `${CSI_PLUGIN_NAME}/${driver}^${volumeHandle}`;
}
