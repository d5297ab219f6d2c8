/**
 * Plan-only rounds (docs/engine.md, "Plan-only mode"): instead of starting operations, a pass
 * runs the reconciler's decision phases over a projection of the actual world and hands every
 * operation to the planner, which applies its successful outcome to the projection; the phases
 * then run again ("step" 2, 3 …) until nothing new is planned. The kubelet has no such mode.
 */
import type { OperationPlanner } from '../../operationexecutor/planning-executor.ts';
import type { Logger } from '../../volume/logger.ts';
import type { UniqueVolumeName } from '../../volume/types.ts';
import type { ActualStateOfWorld } from '../cache/actual-state-of-world.ts';
import type { DecisionPhases } from './reconciler.ts';

/**
 * Bound on the projected passes of one planning round. The longest chains are attach → mount and
 * unmount → unmount device → detach; a round that still plans something new after this many
 * steps is cut short (and logged) rather than looping.
 */
const maxPlanningSteps = 8;

/** An operation of plan-only mode was asked of an engine that runs operations, or the reverse. */
export class PlanOnlyModeError extends Error {
  override readonly name = 'PlanOnlyModeError';
}

export function isPlanOnlyModeError(err: unknown): err is PlanOnlyModeError {
  return err instanceof PlanOnlyModeError;
}

export interface PlanningRound {
  planner: OperationPlanner;
  /** The live actual world: the round projects the volumes of `scope` out of it. */
  asw: ActualStateOfWorld;
  /** The volumes to re-plan; null: every volume. */
  scope: ReadonlySet<UniqueVolumeName> | null;
  readyToUnmount: boolean;
  phases: DecisionPhases;
  logger: Logger;
}

/**
 * One planning round. The round runs the usual decision phases over a projection of the
 * `scope`'s volumes, repeatedly: the planner applies each planned operation's success to the
 * projection between steps, so the next step plans what would follow it. Cleanup of volumes that
 * failed reconstruction is never planned (they are only reported).
 */
export function runPlanningRound(round: PlanningRound): void {
  const { planner, scope, readyToUnmount, phases } = round;
  const projection = round.asw.cloneVolumes(scope);
  const world = { asw: projection, executor: planner };
  planner.beginRound(projection, scope);
  // Step 1 examines the round's scope; each later step only the volumes the step before planned
  // something for, since no other volume's projection changed.
  let stepScope: ReadonlySet<UniqueVolumeName> | null = scope;
  for (let step = 1; ; step++) {
    // Nothing runs, so nothing is "unsettled": a volume is re-planned when it changes.
    const ignored = new Set<UniqueVolumeName>();
    if (readyToUnmount) phases.unmountVolumes(world, stepScope, ignored);
    phases.mountOrAttachVolumes(world, stepScope, ignored);
    if (readyToUnmount) phases.unmountDetachDevices(world, stepScope, ignored);
    stepScope = planner.endStep();
    if (stepScope.size === 0) break;
    if (step === maxPlanningSteps) {
      round.logger.error(`planning round still planning new operations after ${maxPlanningSteps} steps; the plan is cut short`);
      break;
    }
  }
  planner.endRound();
}
