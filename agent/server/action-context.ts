/** What every operator action (resync, retry, unmount, orphan cleanup) runs with. */
import type { AgentRuntime } from '../runtime.ts';
import type { AuditRecorder } from './audit-log.ts';

export interface ActionContext {
  runtime: AgentRuntime;
  /**
   * Where the action's outcome is recorded. In the server this is the audit log bound to the
   * request's caller groups and the operator's note ({@link AuditLog.forRequest}); the action
   * supplies the rest of the entry.
   */
  audit: AuditRecorder;
  /** Who asked (the authenticator's caller), for the audit entry. */
  caller: string;
}
