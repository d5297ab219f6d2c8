import type { ReactNode } from 'react';

export interface PanelProps {
  /** The section's anchor id (`#id` links, the table of contents); its heading is `<id>-title`. */
  readonly id: string;
  readonly title: string;
  /** Shown as `(n)` after the title; omitted when undefined. */
  readonly count?: number;
  readonly children: ReactNode;
  /** Controls at the right of the header (filters, toggles). */
  readonly actions?: ReactNode;
}

/** A titled section with an anchor id. */
export function Panel({ id, title, count, children, actions }: PanelProps) {
  return (
    <section className="panel" id={id} aria-labelledby={`${id}-title`}>
      <header className="panel__header">
        <h2 id={`${id}-title`}>
          {title}
          {count !== undefined ? <span className="panel__count"> ({count})</span> : null}
        </h2>
        {actions}
      </header>
      {children}
    </section>
  );
}
