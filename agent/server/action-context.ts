/** What every operator action (resync, retry, unmount) runs with. */
import type { AgentRuntime } from '../runtime.ts';
import type { AuditLog } from './audit-log.ts';

export interface ActionContext {
  runtime: AgentRuntime;
  audit: AuditLog;
  /** Who asked (the authenticator's caller), for the audit entry. */
  caller: string;
}
