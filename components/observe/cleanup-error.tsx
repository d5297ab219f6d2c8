import { ActionError } from '../dialogs/action-error.tsx';

/** A refusal (409 with every check, failed ones first), a 404 (not observe mode) or an unreachable agent. */
export function CleanupError({ error }: { error: Error }) {
  return <ActionError error={error} failedHeading="The cleanup request failed" refusedHeading="The agent refused (409); nothing was done" groupChecks />;
}
