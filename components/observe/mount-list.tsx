import type { OrphanPod } from '../../lib/api/observe.ts';

export interface MountListProps {
  /** Mount table entries (mountinfo) at or below a path. */
  readonly mounts: OrphanPod['mounts'];
  /** What is shown instead of an empty list. */
  readonly none: string;
}

/** Mount points with their filesystem type and source, one per line. */
export function MountList({ mounts, none }: MountListProps) {
  if (mounts.length === 0) return none;
  return (
    <ul className="plain-list">
      {mounts.map((m) => (
        <li key={m.mountPoint}>
          <code>{m.mountPoint}</code> <span className="muted">({m.fsType} from {m.source})</span>
        </li>
      ))}
    </ul>
  );
}
