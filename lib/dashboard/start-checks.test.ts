import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkSettingsAtStart } from './start-checks.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('checks at next start', () => {
  it('a malformed VOLUMESCOPE_CORS_ORIGINS stops the server (exit 1) with the entry named', () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    checkSettingsAtStart({ VOLUMESCOPE_CORS_ORIGINS: 'https://ok.example.com, https://headlamp.example.com/' });
    expect(exit).toHaveBeenCalledWith(1);
    expect(error.mock.calls[0]?.[0]).toBe('volumescope dashboard: VOLUMESCOPE_CORS_ORIGINS: "https://headlamp.example.com/" is not an origin as browsers send it (https://host[:port], lowercase, no path or trailing slash)');
  });

  it('valid or unset settings start normally', () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
    checkSettingsAtStart({});
    checkSettingsAtStart({ VOLUMESCOPE_CORS_ORIGINS: 'https://headlamp.example.com' });
    expect(exit).not.toHaveBeenCalled();
  });
});
