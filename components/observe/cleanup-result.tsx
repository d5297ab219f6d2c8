import type { OrphanCleanupResponse } from '../../lib/api/actions.ts';
import { summarizeCleanupResult } from '../../lib/dashboard/observe-view.ts';
import { ChecksList } from '../dialogs/checks-list.tsx';

function PathList({ title, paths }: { title: string; paths: readonly string[] }) {
  if (paths.length === 0) return null;
  return (
    <>
      <p>
        <strong>{title}</strong>
      </p>
      <ul className="plain-list">
        {paths.map((p) => (
          <li key={p} className="break">
            <code>{p}</code>
          </li>
        ))}
      </ul>
    </>
  );
}

/** The agent's 200 answer: the plan of a dry run, or what was done. */
export function CleanupResult({ response }: { response: OrphanCleanupResponse }) {
  const summary = summarizeCleanupResult(response);
  const planned = response.outcome === 'planned';
  return (
    <div className={`result ${summary.tone === 'ok' ? 'result--ok' : 'result--bad'}`} role="status">
      <p>
        <span aria-hidden="true">{summary.icon} </span>
        {summary.headline}
      </p>
      <PathList title={planned ? 'Would unmount (deepest first):' : 'Unmounted:'} paths={response.unmounts} />
      <PathList title={planned ? 'Would remove (empty directories, children first):' : 'Removed (empty directories):'} paths={response.removals} />
      {response.kept.length > 0 ? (
        <>
          <p>
            <strong>Kept:</strong>
          </p>
          <ul className="plain-list">
            {response.kept.map((k) => (
              <li key={k.path} className="break">
                <code>{k.path}</code> — {k.reason}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {response.failures.length > 0 ? (
        <>
          <p>
            <strong>Failures:</strong>
          </p>
          <ul className="plain-list">
            {response.failures.map((f) => (
              <li key={`${f.step}|${f.path}`} className="break error-text">
                <span aria-hidden="true">✕ </span>
                {f.step} <code>{f.path}</code>: {f.message}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <ChecksList checks={response.checks} />
    </div>
  );
}
