// Placeholder for the malformed-manifests campaign: fails until the real campaign replaces this file.
import type { Campaign } from './campaign.ts';

export const malformedManifests: Campaign = {
  name: 'malformed-manifests',
  run() {
    return Promise.resolve({ name: 'malformed-manifests', ok: false, figures: {}, failures: ['not implemented'] });
  },
};
