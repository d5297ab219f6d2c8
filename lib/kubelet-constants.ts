/**
 * Kubelet volume-manager constants, with their values and the reasons upstream gives for them,
 * so countdowns and timeouts shown anywhere in VolumeScope match what the kubelet does.
 */

/** `reconcilerLoopSleepPeriod`: time between the end of one reconciler pass and the next. */
export const reconcilerLoopSleepPeriodMs = 100;

/** `desiredStateOfWorldPopulatorLoopSleepPeriod`: how often the populator looks for pod changes. */
export const desiredStateOfWorldPopulatorLoopSleepPeriodMs = 100;

/**
 * `podAttachAndMountTimeout`: how long WaitForAttachAndMount waits. "Slightly offset from 2
 * minutes to make timeouts due to this constant recognizable."
 */
export const podAttachAndMountTimeoutMs = 2 * 60_000 + 3_000;

/** `podAttachAndMountRetryInterval`: poll interval of WaitForAttachAndMount / WaitForUnmount. */
export const podAttachAndMountRetryIntervalMs = 300;

/** `waitForAttachTimeout`: the timeout handed to an attacher's WaitForAttach. */
export const waitForAttachTimeoutMs = 10 * 60_000;

/** `initialDurationBeforeRetry`: the first backoff after a failed operation. */
export { initialDurationBeforeRetryMs } from './operationexecutor/exponential-backoff.ts';

/** `maxDurationBeforeRetry`: backoff cap, 2m2s ("slightly offset from 2 minutes"). */
export { maxDurationBeforeRetryMs } from './operationexecutor/exponential-backoff.ts';

/** `maxPodErrors`: distinct error strings kept per pod in the desired state. */
export { maxPodErrors } from './volumemanager/cache/desired-state-of-world.ts';

/** Directory names under the kubelet root (`config.DefaultKubelet*DirName`). */
export const DefaultKubeletPodsDirName = 'pods';
export const DefaultKubeletVolumesDirName = 'volumes';
export const DefaultKubeletVolumeDevicesDirName = 'volumeDevices';
export const DefaultKubeletPluginsDirName = 'plugins';
