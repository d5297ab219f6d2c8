/**
 * Per-volume serialisation: at most one operation per volume id in flight. A second call gets
 * ABORTED with the text the Kubernetes CSI sidecars and drivers use.
 */
export class VolumeLocks {
  private readonly held = new Set<string>();

  tryAcquire(volumeId: string): boolean {
    if (this.held.has(volumeId)) {
      return false;
    }
    this.held.add(volumeId);
    return true;
  }

  release(volumeId: string): void {
    this.held.delete(volumeId);
  }

  /** Volume ids with an operation in flight, sorted. */
  list(): string[] {
    return [...this.held].sort();
  }
}

export function operationExistsMessage(volumeId: string): string {
  return `an operation with the given Volume ID ${volumeId} already exists`;
}
