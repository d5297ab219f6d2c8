// The framing policy the e2e tests need baked into the dashboard build (Next evaluates headers()
// at build time): /embed/... may be framed by the dashboard itself and by the pretend runbook
// wiki on RUNBOOK_HOST, any port (the test serves it on a free one). e2e/global-setup.ts builds
// with it when the current build carries another value.
//
// `*.localhost` names resolve to the loopback address in Chromium without DNS, so the wiki and the
// foreign site are real local servers with their own origins. (A page Playwright fulfils itself
// counts as public to Chromium, whose local network access checks then block any local frame
// before the dashboard's policy is even consulted.)
// @ts-check

/** The host of the pretend runbook wiki that may frame the embeds. */
export const RUNBOOK_HOST = 'runbooks.localhost';

/** A host that may not frame anything. */
export const FOREIGN_HOST = 'elsewhere.localhost';

/** VOLUMESCOPE_FRAME_ANCESTORS for the e2e build. */
export const E2E_FRAME_ANCESTORS = `'self' http://${RUNBOOK_HOST}:*`;
