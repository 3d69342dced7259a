/**
 * The straightforward formulation of one PPO minibatch update: the networks built from tfjs ops
 * the usual way (row-major batches, torch-layout weights, x W^T + b), the loss written term by
 * term as in the paper, gradients by tfjs autodiff, tf.train.adam.
 *
 * PpoOptimizer computes the same thing much faster (hand-derived gradients, feature-major
 * activations, Adam in JavaScript). This version is its executable specification: the tests
 * check that both give the same gradients, and bench/ppo-update.ts measures both.
 * It uses the initial learning rate throughout (tf.train.adam fixes it at construction).
 */
import * as tf from '@tensorflow/tfjs';
import { ActorCritic } from '../../src/networks/actor-critic';
import { EPSILON, MASK_PENALTY } from '../../src/networks/distributions';
import { NORMALIZED_CLIP } from '../../src/networks/normalizer';
import { PpoMinibatch } from '../../src/trainers/ppo/loss';
import { PpoOptimizerSettings, PpoUpdateStats } from '../../src/trainers/ppo/optimizer';

export interface ReferenceLoss {
  readonly loss: tf.Scalar;
  readonly policyLoss: tf.Scalar;
  readonly valueLoss: tf.Scalar;
  readonly entropy: tf.Scalar;
}

export class ReferencePpoUpdate {
  /** One variable per parameter block of the model, by block name. */
  private readonly variables = new Map<string, tf.Variable>();
  private readonly optimizer: tf.Optimizer;

  constructor(
    readonly model: ActorCritic,
    readonly settings: PpoOptimizerSettings,
  ) {
    for (const block of model.blocks) {
      const size = block.shape.reduce((a, b) => a * b, 1);
      const values = model.parameters.slice(block.offset, block.offset + size);
      this.variables.set(block.name, tf.variable(tf.tensor(values, [...block.shape])));
    }
    this.optimizer = tf.train.adam(settings.hyperparameters.learning_rate, 0.9, 0.999, 1e-8);
  }

  /** The PPO loss of a minibatch, as tensors (differentiable with respect to the variables). */
  loss(batch: PpoMinibatch, epsilon: number, beta: number): ReferenceLoss {
    const model = this.model;
    const n = batch.count;
    const continuous = model.actionSpec.continuousSize;
    const branches = model.actionSpec.discreteBranches;
    const sharedCritic = model.options.sharedCritic;

    // Inputs: the observations side by side, normalized by the running statistics.
    let x: tf.Tensor = tf.concat(
      batch.observations.map((obs) => tf.tensor2d(obs, [n, obs.length / n])),
      1,
    );
    const normalizer = model.normalizer;
    if (normalizer !== null) {
      const std = tf.sqrt(tf.div(tf.tensor1d(Float32Array.from(normalizer.variance)), normalizer.steps));
      x = tf.clipByValue(tf.div(tf.sub(x, tf.tensor1d(Float32Array.from(normalizer.mean))), std), -NORMALIZED_CLIP, NORMALIZED_CLIP);
    }

    // Networks: Swish MLP bodies, then linear heads.
    const actorHidden = this.body('actor', x);
    const criticHidden = sharedCritic ? actorHidden : this.body('critic', x);
    const criticPrefix = sharedCritic ? 'actor' : 'critic';

    // Log probabilities of the taken actions, and entropies.
    const logProbColumns: tf.Tensor[] = [];
    const entropyTerms: tf.Tensor[] = [];
    if (continuous > 0) {
      const means = this.dense('actor.mu', actorHidden);
      const logStd = this.parameter('actor.log_sigma');
      const std = tf.exp(logStd);
      const variance = tf.square(std);
      const actions = tf.tensor2d(batch.continuousActions, [n, continuous]);
      logProbColumns.push(
        tf.sub(
          tf.sub(tf.neg(tf.div(tf.square(tf.sub(actions, means)), tf.add(tf.mul(2, variance), EPSILON))), tf.log(tf.add(std, EPSILON))),
          Math.log(Math.sqrt(2 * Math.PI)),
        ),
      );
      const dimensionEntropy = tf.mul(0.5, tf.log(tf.add(tf.mul(2 * Math.PI * Math.E, variance), EPSILON)));
      entropyTerms.push(tf.mul(tf.mean(dimensionEntropy), tf.ones([n])));
    }
    const maskWidth = branches.reduce((a, b) => a + b, 0);
    const masks = batch.actionMasks === null ? tf.ones([n, maskWidth]) : tf.tensor2d(Float32Array.from(batch.actionMasks), [n, maskWidth]);
    const chosen = tf.tensor2d(batch.discreteActions, [n, branches.length], 'int32');
    let firstColumn = 0;
    branches.forEach((size, b) => {
      const allowed = tf.slice(masks, [0, firstColumn], [n, size]);
      const logits = tf.sub(tf.mul(this.dense(`actor.branches.${b}`, actorHidden), allowed), tf.mul(MASK_PENALTY, tf.sub(1, allowed)));
      const probs = tf.softmax(logits);
      const oneHot = tf.oneHot(tf.squeeze(tf.slice(chosen, [0, b], [n, 1]), [1]), size);
      logProbColumns.push(tf.expandDims(tf.log(tf.add(tf.sum(tf.mul(probs, oneHot), 1), EPSILON)), 1));
      entropyTerms.push(tf.neg(tf.sum(tf.mul(probs, tf.log(tf.add(probs, EPSILON))), 1)));
      firstColumn += size;
    });
    const logProbs = tf.concat(logProbColumns, 1);
    const oldLogProbs = tf.concat(
      [
        ...(continuous > 0 ? [tf.tensor2d(batch.oldContinuousLogProbs, [n, continuous])] : []),
        ...(branches.length > 0 ? [tf.tensor2d(batch.oldDiscreteLogProbs, [n, branches.length])] : []),
      ],
      1,
    );

    // Clipped surrogate objective.
    const advantages = tf.expandDims(tf.tensor1d(batch.advantages), 1);
    const ratio = tf.exp(tf.sub(logProbs, oldLogProbs));
    const surrogate = tf.mul(ratio, advantages);
    const clippedSurrogate = tf.mul(tf.clipByValue(ratio, 1 - epsilon, 1 + epsilon), advantages);
    const policyLoss = tf.neg(tf.mean(tf.minimum(surrogate, clippedSurrogate))) as tf.Scalar;

    // Clipped value loss, averaged over the reward signals.
    const valueLosses = model.rewardSignals.map((name) => {
      const values = tf.squeeze(this.dense(`${criticPrefix}.value_heads.${name}`, criticHidden), [1]);
      const oldValues = tf.tensor1d(batch.oldValues[name]);
      const returns = tf.tensor1d(batch.returns[name]);
      const clippedValues = tf.add(oldValues, tf.clipByValue(tf.sub(values, oldValues), -epsilon, epsilon));
      return tf.mean(tf.maximum(tf.square(tf.sub(returns, values)), tf.square(tf.sub(returns, clippedValues))));
    });
    const valueLoss = tf.mean(tf.stack(valueLosses)) as tf.Scalar;

    const entropy = tf.mean(tf.addN(entropyTerms)) as tf.Scalar;
    const loss = tf.sub(tf.add(policyLoss, tf.mul(0.5, valueLoss)), tf.mul(beta, entropy)) as tf.Scalar;
    return { loss, policyLoss, valueLoss, entropy };
  }

  /** d loss / d parameters by tfjs autodiff, in the model's parameter layout. */
  gradient(batch: PpoMinibatch, epsilon: number, beta: number): Float32Array {
    const gradient = new Float32Array(this.model.parameters.length);
    tf.tidy(() => {
      const variables = [...this.variables.values()];
      const { grads } = tf.variableGrads(() => this.loss(batch, epsilon, beta).loss, variables);
      for (const block of this.model.blocks) {
        gradient.set(grads[(this.variables.get(block.name) as tf.Variable).name].dataSync(), block.offset);
      }
    });
    return gradient;
  }

  /** One update the straightforward way: the loss, tf.variableGrads, tf.train.adam. */
  update(batch: PpoMinibatch): PpoUpdateStats {
    const h = this.settings.hyperparameters;
    return tf.tidy(() => {
      // variableGrads disposes everything but the loss, so the parts are read inside.
      let policyLoss = 0;
      let valueLoss = 0;
      const { grads } = tf.variableGrads(() => {
        const parts = this.loss(batch, h.epsilon, h.beta);
        policyLoss = parts.policyLoss.dataSync()[0];
        valueLoss = parts.valueLoss.dataSync()[0];
        return parts.loss;
      }, [...this.variables.values()]);
      this.optimizer.applyGradients(grads);
      return {
        'Losses/Policy Loss': Math.abs(policyLoss),
        'Losses/Value Loss': valueLoss,
        'Policy/Learning Rate': h.learning_rate,
        'Policy/Epsilon': h.epsilon,
        'Policy/Beta': h.beta,
      };
    });
  }

  /** The current values of the variables, in the model's parameter layout. */
  parameters(): Float32Array {
    const values = new Float32Array(this.model.parameters.length);
    for (const block of this.model.blocks) {
      values.set((this.variables.get(block.name) as tf.Variable).dataSync(), block.offset);
    }
    return values;
  }

  dispose(): void {
    tf.dispose([...this.variables.values()]);
    this.optimizer.dispose();
  }

  private parameter(name: string): tf.Variable {
    return this.variables.get(name) as tf.Variable;
  }

  /** x W^T + b, with W output x input as torch stores it. */
  private dense(prefix: string, x: tf.Tensor): tf.Tensor {
    return tf.add(tf.matMul(x, this.parameter(`${prefix}.weight`), false, true), this.parameter(`${prefix}.bias`));
  }

  private body(prefix: string, x: tf.Tensor): tf.Tensor {
    let hidden = x;
    for (let l = 0; l < this.model.options.network.num_layers; l++) {
      const z = this.dense(`${prefix}.layers.${l}`, hidden);
      hidden = tf.mul(z, tf.sigmoid(z));
    }
    return hidden;
  }
}
