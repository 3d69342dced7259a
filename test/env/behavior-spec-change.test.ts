/**
 * An environment that re-sends a behavior's brain parameters with other actions in the middle of
 * a session: real gRPC on loopback, the engine side played by src/sims' client.
 */
import { memoryLogger } from '../../src/common/logger';
import { AgentInfoProto, BrainParametersProto, UnityOutputProto, allCapabilities } from '../../src/communicator/messages';
import { UnityEnvironment } from '../../src/env/unity-environment';
import { UnityClient } from '../../src/sims/unity-client';
import { freePort } from '../helpers/paths';

const agent: AgentInfoProto = { id: 1, reward: 0, observations: [{ shape: [3], float_data: { data: [0.1, 0.2, 0.3] } }] };

function stepWithBrain(brain: BrainParametersProto): UnityOutputProto {
  return {
    rl_initialization_output: { brain_parameters: [brain] },
    rl_output: { agentInfos: { Mover: { value: [agent] } } },
  };
}

it('says that a behavior\'s specification changed mid-run, old and new', async () => {
  const port = await freePort();
  const creating = UnityEnvironment.create({ basePort: port, timeoutWait: 5, logger: memoryLogger() });
  const peer = new UnityClient({ port, connectTimeoutSeconds: 5 });
  const handshake = peer.initialize({ name: 'Peer', communication_version: '1.5.0', capabilities: allCapabilities() });
  const env = await creating;
  try {
    const resetting = env.reset();
    await handshake;
    const continuousBrain = { brain_name: 'Mover', is_training: true, action_spec: { num_continuous_actions: 1 } };
    const firstAnswer = peer.exchange(stepWithBrain(continuousBrain));
    await resetting;
    expect(env.behaviorSpecs.get('Mover')!.actionSpec.continuousSize).toBe(1);

    // The same brain parameters again are no change.
    env.setActions('Mover', { continuous: [[0.5]] });
    const sameStep = env.step();
    await firstAnswer;
    const secondAnswer = peer.exchange(stepWithBrain(continuousBrain));
    await sameStep;

    env.setActions('Mover', { continuous: [[0.5]] });
    const changedStep = env.step();
    await secondAnswer;
    const discreteBrain = {
      brain_name: 'Mover',
      is_training: true,
      action_spec: { num_discrete_actions: 1, discrete_branch_sizes: [3] },
    };
    void peer.exchange(stepWithBrain(discreteBrain)).catch(() => undefined);
    await expect(changedStep).rejects.toThrow(
      'The specification of behavior Mover changed mid-run: it was observations [(3)], ' +
        'ActionSpec(continuous: 1, discrete branches: []), it is now observations [(3)], ' +
        'ActionSpec(continuous: 0, discrete branches: [3]).',
    );
  } finally {
    await env.close();
    await peer.close();
  }
});
