'use client';

import { createContext, useCallback, useContext, type ReactNode } from 'react';
import type { PublicUrlSetting } from '../../lib/dashboard/public-url.ts';

/** Unset (links on the page's origin) unless a server layout provides the setting. */
const PublicUrlContext = createContext<PublicUrlSetting>({ ok: true, base: null });

/**
 * Hands the server's `VOLUMESCOPE_PUBLIC_URL` setting (read per request by the node layouts) to
 * the views that build links for copied text. A malformed value is shown once, at the top, naming
 * the variable; links then fall back to the page's origin, so the incident view stays usable.
 */
export function PublicUrlProvider({ setting, children }: { setting: PublicUrlSetting; children: ReactNode }) {
  return (
    <PublicUrlContext.Provider value={setting}>
      {setting.ok ? null : (
        <p className="result result--bad" role="alert" data-testid="public-url-error">
          {setting.error}. Links in copied Markdown use this page’s origin until it is fixed.
        </p>
      )}
      {children}
    </PublicUrlContext.Provider>
  );
}

/**
 * The base URL for absolute links in copied text: the configured public URL, else the origin this
 * page was requested from. A function, called when the text is built (on click): the origin is
 * only known in the browser.
 */
export function usePublicBaseUrl(): () => string {
  const setting = useContext(PublicUrlContext);
  const base = setting.ok ? setting.base : null;
  return useCallback(() => base ?? window.location.origin, [base]);
}
