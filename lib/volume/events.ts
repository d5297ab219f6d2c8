/**
 * Event reasons of `pkg/kubelet/events` that the volume manager emits, and the recorder
 * interface the engine writes them to. The engine never talks to an API server: the agent
 * decides where events go (the snapshot's recent events, the Kubernetes Events API…).
 */

export const FailedMountVolume = 'FailedMount';
export const FailedMapVolume = 'FailedMapVolume';
export const FailedAttachVolume = 'FailedAttachVolume';
export const SuccessfulAttachVolume = 'SuccessfulAttachVolume';
export const FailedMountOnFilesystemMismatch = 'FailedMountOnFilesystemMismatch';
export const VolumeResizeFailed = 'VolumeResizeFailed';
export const FileSystemResizeFailed = 'FileSystemResizeFailed';
export const FileSystemResizeSuccessful = 'FileSystemResizeSuccessful';

export type EventType = 'Normal' | 'Warning';

/** The object an event is about. */
export interface InvolvedObject {
  kind: 'Pod' | 'PersistentVolumeClaim' | 'PersistentVolume' | 'Node';
  namespace?: string;
  name: string;
  uid?: string;
}

export interface EventRecorder {
  /**
   * Records an event about `object`. `volume`, the unique volume name the event is about (absent
   * for events about no one volume), is not part of a Kubernetes Event: the agent keeps it so
   * its views can group events per volume; a recorder posting Events may ignore it.
   */
  event(object: InvolvedObject, type: EventType, reason: string, message: string, volume?: string): void;
}

/** A recorder that drops every event. */
export const discardEvents: EventRecorder = { event: () => undefined };
