/**
 * Who decides the actions of the agents that ask: the trainer over gRPC (RemoteBrain, as
 * Unity's RpcCommunicator with BehaviorType Default) or the agents' own heuristics
 * (HeuristicBrain, as BehaviorType HeuristicOnly).
 */
import { CommandProto, messageType } from '../../communicator/messages';
import { SideChannelManager } from '../../communicator/side-channels/side-channel-manager';
import { ActionSizes } from '../../communicator/wire/step-input';
import { AgentInfosToSend, ObservationToSend, encodeStepOutputMessage } from '../../communicator/wire/step-output';
import { UnityClient } from '../unity-client';
import { ActionBuffers, ObservationSpecDef, dimensionProperties, observationLength, visualShape } from './agent';
import { ActionsByBehavior, Brain, Decision, InfoBatch } from './academy';
import { compressVisualObservation } from './png';


export class HeuristicBrain implements Brain {
  async decide(batches: ReadonlyMap<string, InfoBatch>): Promise<Decision> {
    const actions = new Map<string, { continuous: Float32Array; discrete: Int32Array }>();
    for (const [name, batch] of batches) {
      const deciding = batch.decidingAgents();
      const c = batch.group.continuousSize;
      const d = batch.group.discreteSize;
      const continuous = new Float32Array(deciding.length * c);
      const discrete = new Int32Array(deciding.length * d);
      const buffer = new ActionBuffers(c, d);
      deciding.forEach((agent, row) => {
        buffer.clear();
        agent.heuristic(buffer);
        continuous.set(buffer.continuous, row * c);
        discrete.set(buffer.discrete, row * d);
      });
      actions.set(name, { continuous, discrete });
    }
    return { kind: 'actions', actions };
  }
}

/** The batch as the wire encoder takes it; images PNG-compressed when their spec says so. */
function agentInfosToSend(batch: InfoBatch): AgentInfosToSend {
  const specs = batch.group.template.behavior.observations;
  return {
    count: batch.count,
    id: batch.id,
    reward: batch.reward,
    done: batch.done,
    maxStepReached: batch.maxStepReached,
    groupId: batch.groupId,
    groupReward: batch.groupReward,
    actionMaskSize: batch.actionMaskSize,
    actionMask: batch.actionMask,
    observations: specs.map((spec, i) => observationToSend(spec, batch.observations[i], batch.count)),
  };
}

function observationToSend(spec: ObservationSpecDef, values: Float32Array, count: number): ObservationToSend {
  const described = { name: spec.name, dimensionProperties: dimensionProperties(spec), observationType: spec.observationType };
  if (spec.kind === 'vector') return { ...described, shape: spec.shape, floats: values };
  const shape = visualShape(spec);
  if (!spec.compressed) return { ...described, shape, floats: values };
  const size = observationLength(spec);
  const compressed = Array.from({ length: count }, (_, row) => compressVisualObservation(spec, values.subarray(row * size, (row + 1) * size)));
  const pngImages = compressed.map((image) => image.data);
  return { ...described, shape, pngImages, compressedChannelMapping: compressed[0]?.channelMapping };
}

export class RemoteBrain implements Brain {
  private readonly actionSizes = new Map<string, ActionSizes>();

  constructor(
    private readonly client: UnityClient,
    private readonly sideChannels: SideChannelManager,
  ) {}

  async decide(batches: ReadonlyMap<string, InfoBatch>): Promise<Decision> {
    const behaviors: Array<readonly [string, AgentInfosToSend]> = [];
    const announcements: object[] = [];
    for (const [name, batch] of batches) {
      if (batch.count === 0) continue;
      behaviors.push([name, agentInfosToSend(batch)]);
      const group = batch.group;
      if (!group.announced) {
        // Unity sends a behavior's brain parameters with the first step its agents appear in.
        group.announced = true;
        this.actionSizes.set(name, { continuous: group.continuousSize, discrete: group.discreteSize });
        announcements.push({
          brain_name: name,
          is_training: true,
          action_spec: {
            num_continuous_actions: group.continuousSize,
            num_discrete_actions: group.discreteSize,
            discrete_branch_sizes: [...group.template.behavior.discreteBranches],
          },
        });
      }
    }
    const initializationOutput =
      announcements.length > 0
        ? messageType('UnityRLInitializationOutputProto').encode({ brain_parameters: announcements }).finish()
        : undefined;
    const message = encodeStepOutputMessage({
      behaviors,
      sideChannel: this.sideChannels.generateSideChannelMessages(),
      initializationOutput,
    });
    const input = await this.client.exchangeStep(message, this.actionSizes);
    if (input === null) return { kind: 'quit' };
    return this.interpret(input.command, input.sideChannel, input.actions);
  }

  /** Applies the side channels of a trainer message and says what it asks. */
  interpret(command: CommandProto, sideChannel: Uint8Array, actions: ActionsByBehavior): Decision {
    if (sideChannel.length > 0) this.sideChannels.processSideChannelMessage(sideChannel);
    if (command === CommandProto.RESET) return { kind: 'reset' };
    if (command === CommandProto.QUIT) return { kind: 'quit' };
    return { kind: 'actions', actions };
  }
}
