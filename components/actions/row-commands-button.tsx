'use client';

import { CopyButton } from '../shared/copy-button.tsx';

/**
 * One-click copy of the kubectl (and journalctl) commands for the row in view
 * (lib/dashboard/row-commands.ts). Its accessible name says which row: "Copy commands: volume
 * logs of pod e2e/stuck-0", "Copy commands: mount volume pgdata for pod default/db-0".
 */
export function RowCommandsButton({ target, getText }: { target: string; getText: () => string }) {
  return <CopyButton small label="Copy commands" accessibleName={`Copy commands: ${target}`} getText={getText} />;
}
