/**
 * Hyperparameters that decay with the training step, as upstream's ModelUtils.DecayedValue:
 * 'constant' keeps the initial value; 'linear' goes in a straight line from the initial value at
 * step 0 to the minimum at max_steps, and stays there.
 */
import type { ScheduleType } from '../config/settings';

export function decayedValue(
  schedule: ScheduleType,
  initialValue: number,
  minValue: number,
  maxSteps: number,
  step: number,
): number {
  if (schedule === 'constant') return initialValue;
  if (maxSteps <= 0) return minValue;
  const progress = Math.min(step, maxSteps) / maxSteps;
  return (initialValue - minValue) * (1 - progress) + minValue;
}
