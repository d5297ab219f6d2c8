import Link from 'next/link';
import type { DesiredVolumeSpec } from '../../lib/api/index.ts';
import { podHref } from '../../lib/dashboard/routes.ts';
import { mountAccess, type VolumeSpecView } from '../../lib/dashboard/volume-spec-view.ts';
import { EmptyState } from '../shared/empty-state.tsx';

function SpecFacts({ spec }: { spec: DesiredVolumeSpec }) {
  return (
    <dl className="facts-grid">
      <dt>source</dt>
      <dd>
        <code>{spec.sourceType === '' ? '(none)' : spec.sourceType}</code>
        {spec.source.length === 0 ? ' {}' : null}
      </dd>
      {spec.source.map((f) => (
        <FactRow key={f.path} term={`${spec.sourceType}.${f.path}`} value={f.value} />
      ))}
      {spec.claimName !== undefined ? <FactRow term="PersistentVolumeClaim" value={spec.claimName} /> : null}
      {spec.claimName !== undefined ? <FactRow term="→ PersistentVolume" value={spec.persistentVolumeName ?? '(not known to the agent)'} /> : null}
      {spec.volumeAttachment !== undefined ? <FactRow term="→ VolumeAttachment" value={spec.volumeAttachment} /> : null}
      {spec.csiDriver !== undefined ? <FactRow term="CSI driver" value={spec.csiDriver} /> : null}
      <dt>mounts</dt>
      <dd>
        {spec.mounts.length === 0 ? (
          'no container mounts it'
        ) : (
          <ul className="spec-mounts">
            {spec.mounts.map((m) => (
              <li key={`${m.container}|${m.mountPath}`}>
                <code>{m.container}</code>: <code className="break">{m.mountPath}</code>
                {m.subPath !== undefined ? (
                  <>
                    {' '}
                    (subPath <code>{m.subPath}</code>)
                  </>
                ) : null}
                , {mountAccess(m.readOnly)}
              </li>
            ))}
          </ul>
        )}
      </dd>
    </dl>
  );
}

function FactRow({ term, value }: { term: string; value: string }) {
  return (
    <>
      <dt>{term}</dt>
      <dd>
        <code className="break">{value}</code>
      </dd>
    </>
  );
}

/** The volume page's "Spec" section: the volume as each pod's spec writes it. */
export function VolumeSpecSection({ node, view }: { node: string; view: VolumeSpecView }) {
  if (view.pods.length === 0) return <EmptyState>No desired pod lists this volume: its pod spec is not known to the agent any more.</EmptyState>;
  return (
    <div className="volume-spec">
      {view.pods.map((p) => (
        <section key={`${p.podUid}|${p.volumeName}`} aria-label={`Spec of ${p.volumeName} in ${p.podName}`}>
          <p className="small">
            Pod <Link href={podHref(node, p.podUid)}>{p.podName}</Link>, volume <code>{p.volumeName}</code>
            {view.attachable === false ? <span className="muted"> · not attachable: no attach, no VolumeAttachment</span> : null}
          </p>
          {p.spec === null ? <EmptyState>The agent does not send the pod spec (it predates it).</EmptyState> : <SpecFacts spec={p.spec} />}
        </section>
      ))}
    </div>
  );
}
