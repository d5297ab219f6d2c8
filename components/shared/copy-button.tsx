'use client';

import { useState } from 'react';

/**
 * Copies text to the clipboard; `getText` runs on click so it can read the latest state. Says
 * "Copied" (announced) for a moment, or why it failed. `accessibleName` (starting with `label`)
 * says what is copied when the label alone does not.
 */
export function CopyButton({ label, accessibleName, getText }: { label: string; accessibleName?: string; getText: () => string }) {
  const [status, setStatus] = useState<string>('');
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(getText());
      setStatus('Copied');
    } catch {
      setStatus('Copy failed: the browser refused clipboard access');
    }
    setTimeout(() => {
      setStatus('');
    }, 2_000);
  };
  return (
    <span className="copy">
      <button type="button" className="button" aria-label={accessibleName} onClick={() => void copy()}>
        {label}
      </button>
      <span className="copy__status" role="status">
        {status}
      </span>
    </span>
  );
}
