'use client';

import { useState } from 'react';
import { RECONSTRUCTION_FIRST_MS, restartBannerText, type AgentRestart } from '../../lib/dashboard/blind-view.ts';
import { useBefore } from '../hooks/use-agent-restart.ts';
import { timeOfDay } from '../shared/time-text.tsx';

/**
 * "The agent restarted at …; its previous run was up …", with a link to the reconstruction
 * section. It overlays the page (fixed, at the top), so it never pushes content, for
 * {@link RECONSTRUCTION_FIRST_MS} after the restart or until dismissed.
 */
export function RestartBanner({ restart }: { restart: AgentRestart | null }) {
  const [dismissed, setDismissed] = useState<number | null>(null);
  const shown = useBefore(restart === null ? 0 : restart.restartedAt + RECONSTRUCTION_FIRST_MS);
  // The live region is always there (empty when hidden), so a restart is announced.
  const visible = restart !== null && shown && dismissed !== restart.restartedAt;
  return (
    <div className="restart-banner-region" role="status" aria-live="polite">
      {visible ? (
        <div className="restart-banner" data-testid="restart-banner">
          <p suppressHydrationWarning>
            {restartBannerText(restart, timeOfDay)} <a href="#reconstruction">See what reconstruction found</a>
          </p>
          <button
            type="button"
            className="button button--small"
            onClick={() => {
              setDismissed(restart.restartedAt);
            }}
          >
            Dismiss
          </button>
        </div>
      ) : null}
    </div>
  );
}
