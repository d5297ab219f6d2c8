// Placeholder for the api-fuzz campaign: fails until the real campaign replaces this file.
import type { Campaign } from './campaign.ts';

export const apiFuzz: Campaign = {
  name: 'api-fuzz',
  run() {
    return Promise.resolve({ name: 'api-fuzz', ok: false, figures: {}, failures: ['not implemented'] });
  },
};
