/** A policy that acts with zeros, for runs where what the agents do does not matter. */
import type { BehaviorSpec } from '../../src/env/behavior-spec';
import type { DecisionSteps } from '../../src/env/steps';
import type { ActingPolicy, ActionInfo } from '../../src/trainers/action-info';

export class ZeroPolicy implements ActingPolicy {
  readonly memorySize = 0;

  constructor(private readonly spec: BehaviorSpec) {}

  decide(decision: DecisionSteps): ActionInfo {
    const n = decision.length;
    const continuous = new Float32Array(n * this.spec.actionSpec.continuousSize);
    const discrete = new Int32Array(n * this.spec.actionSpec.discreteSize);
    return {
      action: { continuous, discrete },
      envAction: { continuous, discrete },
      logProbs: { continuous: new Float32Array(continuous.length), discrete: new Float32Array(discrete.length) },
      agentIds: decision.agentId.slice(),
    };
  }
}
