'use client';

import { useState } from 'react';

/**
 * The fallback when the Clipboard API refuses: a frame whose embedder did not grant
 * `clipboard-write` (a runbook's `<iframe>` without `allow="clipboard-write"`), or a page served
 * over plain http. A selected, invisible textarea and the copy command, which browsers allow on
 * a click; focus goes back to where it was. False when the browser refuses that too.
 */
function copyBySelection(text: string): boolean {
  const previous = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const area = document.createElement('textarea');
  area.value = text;
  area.readOnly = true;
  area.setAttribute('aria-hidden', 'true');
  area.style.cssText = 'position:fixed;top:0;left:0;width:1px;height:1px;opacity:0;';
  document.body.append(area);
  area.select();
  try {
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the one clipboard write a frame without clipboard-write may make
    return document.execCommand('copy');
  } catch {
    return false;
  } finally {
    area.remove();
    previous?.focus();
  }
}

/**
 * Copies text to the clipboard; `getText` runs on click so it can read the latest state. Says
 * "Copied" (announced) for a moment, or why it failed. `accessibleName` (starting with `label`)
 * says what is copied when the label alone does not. `small`: the table-row variant, whose status
 * is laid over what follows instead of taking room (so nothing moves when it appears).
 */
export function CopyButton({ label, accessibleName, getText, small = false }: { label: string; accessibleName?: string; getText: () => string; small?: boolean }) {
  const [status, setStatus] = useState<string>('');
  const copy = async (): Promise<void> => {
    const text = getText();
    try {
      await navigator.clipboard.writeText(text);
      setStatus('Copied');
    } catch {
      setStatus(copyBySelection(text) ? 'Copied' : 'Copy failed: the browser refused clipboard access');
    }
    setTimeout(() => {
      setStatus('');
    }, 2_000);
  };
  return (
    <span className={small ? 'copy copy--small' : 'copy'}>
      <button type="button" className={small ? 'button button--small' : 'button'} aria-label={accessibleName} onClick={() => void copy()}>
        {label}
      </button>
      <span className="copy__status" role="status">
        {status}
      </span>
    </span>
  );
}
