'use client';

import { useEffect, useRef, useState, type ReactNode, type RefObject } from 'react';
import { ClockPausedContext } from '../../lib/dashboard/use-agent.ts';
import { StaleMark, useStaleStamp } from './stale-frame.tsx';

export interface PanelProps {
  /** The section's anchor id (`#id` links, the table of contents); its heading is `<id>-title`. */
  readonly id: string;
  readonly title: string;
  /** Shown as `(n)` after the title; omitted when undefined. */
  readonly count?: number;
  readonly children: ReactNode;
  /** Controls at the right of the header (filters, toggles). */
  readonly actions?: ReactNode;
  /**
   * A section below the fold of a large page: the browser skips its layout and paint while it is
   * off screen (`content-visibility: auto`), so a live update of the page does not lay out
   * hundreds of table rows nobody sees. Its popovers are in the top layer, so nothing is clipped.
   */
  readonly lazy?: boolean;
}

/**
 * True while the browser skips rendering the element (`content-visibility: auto` off screen),
 * from its `contentvisibilityautostatechange` events; always false when `lazy` is false or the
 * browser has no such event.
 */
function useSkipped(ref: RefObject<HTMLElement | null>, lazy: boolean): boolean {
  const [skipped, setSkipped] = useState(false);
  useEffect(() => {
    const element = ref.current;
    if (!lazy || element === null) return;
    const onChange = (e: Event): void => {
      if (e.target === element && 'skipped' in e && typeof e.skipped === 'boolean') setSkipped(e.skipped);
    };
    element.addEventListener('contentvisibilityautostatechange', onChange);
    return () => {
      element.removeEventListener('contentvisibilityautostatechange', onChange);
      setSkipped(false);
    };
  }, [ref, lazy]);
  return skipped;
}

/**
 * A titled section with an anchor id. On an agent's page (inside a `StaleProvider`) it is dimmed
 * and stamped "as of <time> (agent unreachable)" while the agent cannot be reached.
 */
export function Panel({ id, title, count, children, actions, lazy = false }: PanelProps) {
  const stamp = useStaleStamp();
  const ref = useRef<HTMLElement>(null);
  const skipped = useSkipped(ref, lazy);
  return (
    <section ref={ref} className={`panel${lazy ? ' panel--lazy' : ''}${stamp?.stale === true ? ' is-stale' : ''}`} id={id} aria-labelledby={`${id}-title`}>
      <StaleMark stamp={stamp} />
      <header className="panel__header">
        <h2 id={`${id}-title`}>
          {title}
          {count !== undefined ? <span className="panel__count"> ({count})</span> : null}
        </h2>
        {actions}
      </header>
      <ClockPausedContext value={skipped}>{children}</ClockPausedContext>
    </section>
  );
}
