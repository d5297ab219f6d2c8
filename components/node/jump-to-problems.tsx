import type { Problems } from '../../lib/dashboard/problems.ts';

/**
 * The first focusable control of the node page's content: a link to the first section with a
 * problem (its label lists them), or "No problems" as plain text. Always rendered, so the header
 * does not move when problems come and go.
 */
export function JumpToProblems({ problems }: { problems: Problems }) {
  return (
    <p className="jump-problems">
      {problems.href === null ? (
        <span className="muted small">{problems.label}</span>
      ) : (
        <a href={problems.href} className="jump-problems__link">
          {problems.label}
        </a>
      )}
    </p>
  );
}
