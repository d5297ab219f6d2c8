/**
 * Feature gates the volume manager consults, with their v1.30 defaults. SELinux gates only
 * matter on hosts with SELinux enabled (see {@link SELinuxLabelTranslator.seLinuxEnabled}).
 */
export interface FeatureGates {
  /** Beta and on by default since v1.28: `-o context` mounts for ReadWriteOncePod volumes. */
  SELinuxMountReadWriteOncePod: boolean;
  /** Alpha in v1.30: `-o context` mounts for every access mode. */
  SELinuxMount: boolean;
}

export const defaultFeatureGates: FeatureGates = {
  SELinuxMountReadWriteOncePod: true,
  SELinuxMount: false,
};
