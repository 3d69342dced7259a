/**
 * What acting needs from a policy, and what a policy hands back for one batch of agents
 * (upstream's ActionInfo and the outputs of TorchPolicy.get_action). Row i of every array belongs
 * to agent `agentIds[i]`.
 */
import { ActionTuple } from '../env/behavior-spec';
import { DecisionSteps } from '../env/steps';

/** Log probabilities of the actions taken (upstream's LogProbsTuple). */
export interface LogProbs {
  /** n x continuous action size */
  readonly continuous: Float32Array;
  /** n x number of discrete branches: the log probability of the choice made in each branch. */
  readonly discrete: Float32Array;
}

export interface ActionInfo {
  /** The actions as the policy sampled them: what training learns from. */
  readonly action: ActionTuple;
  /** The actions sent to the environment (continuous ones clipped when the policy clips). */
  readonly envAction: ActionTuple;
  readonly logProbs: LogProbs;
  /** The entropy of each agent's action distribution, reported as Policy/Entropy; absent when not computed. */
  readonly entropy?: Float32Array;
  /** The environment's agent ids, local to one worker. */
  readonly agentIds: Int32Array;
  /**
   * A policy with memory: each agent's memories after this decision (n x memory size; upstream's
   * memory_out), which its next decision starts from.
   */
  readonly memories?: Float32Array;
}

/** No decision: what the processor is given for the first step after a reset (upstream's ActionInfo.empty()). */
export const EMPTY_ACTION_INFO: ActionInfo = Object.freeze({
  action: { continuous: new Float32Array(0), discrete: new Int32Array(0) },
  envAction: { continuous: new Float32Array(0), discrete: new Int32Array(0) },
  logProbs: { continuous: new Float32Array(0), discrete: new Float32Array(0) },
  agentIds: new Int32Array(0),
});

/**
 * A policy that can act: one batched decision for the agents of one behavior. A policy with memory
 * keeps none itself: whoever follows the agents (the agent processor) hands each agent's memories
 * in and keeps those that come back, as upstream's policy keeps its memory_dict.
 */
export interface ActingPolicy {
  /** Values in each agent's memories; 0 for a policy without memory. */
  readonly memorySize: number;
  /** Decides for every row of `decision`; with memory, each from its row of `memories` (n x memorySize). */
  decide(decision: DecisionSteps, memories: Float32Array | null): ActionInfo;
}
