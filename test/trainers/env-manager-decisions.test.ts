/**
 * When the environment manager decides: as upstream's env managers, the actions on a step are
 * decided when the next step starts, after the trainers advanced on what that step brought, so a
 * policy a trainer publishes in between (an update) acts from the very next decision.
 */
import type { BehaviorSpec } from '../../src/env/behavior-spec';
import type { DecisionSteps } from '../../src/env/steps';
import { ActingPolicy, ActionInfo } from '../../src/trainers/action-info';
import { AgentManager } from '../../src/trainers/agent-processor';
import { EnvManager } from '../../src/trainers/env-manager';
import { builtinExecutable } from '../../src/sims/builtin';
import { envManagerOptions } from '../helpers/env-manager-options';
import { freePort } from '../helpers/paths';
import { ZeroPolicy } from '../helpers/zero-policy';

/** Acts with zeros and writes its name in `decisions` each time it decides. */
class NamedPolicy implements ActingPolicy {
  readonly memorySize = 0;
  private readonly zeros: ZeroPolicy;

  constructor(
    private readonly name: string,
    spec: BehaviorSpec,
    private readonly decisions: string[],
  ) {
    this.zeros = new ZeroPolicy(spec);
  }

  decide(decision: DecisionSteps): ActionInfo {
    this.decisions.push(this.name);
    return this.zeros.decide(decision);
  }
}

it('decides on a step with the policy published after that step came in', async () => {
  const decisions: string[] = [];
  let manager: AgentManager<ActingPolicy> | undefined;
  let spec: BehaviorSpec | undefined;
  const envManager = await EnvManager.launch(envManagerOptions({ executable: builtinExecutable('Basic'), basePort: await freePort() }), (name, behaviorSpec) => {
    spec = behaviorSpec;
    manager = new AgentManager<ActingPolicy>(behaviorSpec, { behaviorId: name, stats: { addStat: () => undefined, setStat: () => undefined }, threaded: false });
    manager.policyQueue.put(new NamedPolicy('first', behaviorSpec, decisions));
    return manager;
  });
  try {
    await envManager.reset();
    expect(decisions).toEqual([]);
    await envManager.step(); // the first policy decides on the reset's steps; the next ones come in
    // What a trainer's advance does after an update, between two steps.
    manager!.policyQueue.put(new NamedPolicy('updated', spec!, decisions));
    await envManager.step();
    expect(decisions).toEqual(['first', 'updated']);
  } finally {
    await envManager.close();
  }
}, 60_000);
